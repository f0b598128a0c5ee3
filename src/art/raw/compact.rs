//! Compaction: copying the tree into fresh arenas in key order.
//!
//! Inserts in random order scatter nodes and leaves over the arenas, and
//! every node that gains a child moves to a new block. A lookup then touches
//! a new cache line at nearly every level, and an ordered walk jumps across
//! the whole arena for every key. Copying the tree depth-first puts each node
//! next to its first child and all leaves in key order: on the Debian paths
//! ordered iteration gets about 4× faster and lookups 5–19%, and the free
//! lists are gone. It costs one pass over the tree, with old and new copies
//! alive together until it ends.

use std::ptr;

use super::arena::{Arena, UNIT};
use super::leaf::Leaf;
use super::node::{Node, write_ref};
use super::{RawArt, is_leaf, leaf_ref, node_ref};

impl<V> RawArt<V> {
    /// Re-lays the whole tree out in depth-first key order (see the module
    /// docs).
    pub(crate) fn compact(&mut self) {
        if self.root == 0 {
            return;
        }
        let mut nodes = Arena::line_aware();
        let mut leaves = Arena::new();
        // The copies need what is live now, and nodes a little for the gaps
        // that keep them within cache lines (most are refilled by smaller
        // nodes).
        let node_units = self.nodes.live_units();
        nodes.plan(node_units + node_units / 64);
        leaves.plan(self.leaves.live_units());
        let mut root = 0u32;
        // (reference in the old arenas, slot in the new tree that will hold
        // its copy). Slots point into blocks of the new arenas, which never
        // move, or at `root`.
        let mut stack: Vec<(u32, *mut u8)> = vec![(self.root, (&raw mut root).cast())];
        let mut slots = Vec::new();
        while let Some((r, slot)) = stack.pop() {
            let old = self.ptr(r);
            if is_leaf(r) {
                // SAFETY: invariants 1-2: a live leaf of `stored_units`; the
                // new block is fresh. The bytes move the value and the suffix
                // field (with any out-of-line part) to the copy; the old block
                // is freed below without dropping anything.
                unsafe {
                    let units = Leaf::<V>::stored_units(old);
                    let idx = leaves.alloc(units);
                    ptr::copy_nonoverlapping(old, leaves.ptr(idx), units * UNIT);
                    write_ref(slot, leaf_ref(idx));
                }
                continue;
            }
            let node = self.node(r);
            // Its children are visited next (the first at once, the others
            // after its subtree): start loading them now.
            self.prefetch_children(node);
            let units = node.units();
            let idx = nodes.alloc(units);
            // SAFETY: as for leaves: a live node moved bytewise (its prefix
            // field and child references included) into a fresh block.
            let copy = unsafe {
                ptr::copy_nonoverlapping(old, nodes.ptr(idx), units * UNIT);
                Node::from_ptr(nodes.ptr(idx))
            };
            write_ref(slot, node_ref(idx));
            // The copy still holds the old references; each is replaced when
            // its child is copied. Pushed in reverse so that the terminal and
            // then the smallest edge come off the stack first.
            slots.clear();
            copy.child_slots(&mut slots);
            stack.extend(slots.iter().rev().copied());
        }
        // The old arenas now hold only moved-out bytes: dropping them frees
        // their chunks and nothing else.
        self.nodes = nodes;
        self.leaves = leaves;
        self.root = root;
    }
}
