//! The raw adaptive radix tree under [`FastArt`](crate::FastArt).
//!
//! # Structure
//! A tree of inner nodes ([`node`]) and leaves ([`leaf`]), all allocated from
//! one [`Arena`] and named by 32-bit *references*:
//!
//! ```text
//!  reference (u32) = block index << 1 | is_leaf        0 = no reference
//! ```
//!
//! A key is spelled by the path from the root: each inner node contributes its
//! prefix and then one edge byte to the child taken; a leaf contributes its
//! suffix. A leaf in a node's *terminal* slot is reached without an edge byte,
//! and has an empty suffix. The depth of a node or leaf is the number of key
//! bytes spelled before it.
//!
//! # Invariants
//! Everything in this module relies on these; [`RawArt::check`] verifies them.
//! 1. `root` is 0 exactly when `len` is 0; otherwise it and every reference
//!    stored in a node names a live block of the arena, of the kind its tag
//!    says, reachable from exactly one slot.
//! 2. The size of every live block equals the size computed from its contents
//!    (`Node::units`, `Leaf::stored_units`), so blocks are freed with the size
//!    they were allocated with.
//! 3. A node's child count suits its kind (`Kind::allows`), Node4/Node16 keys
//!    are strictly ascending, Node48 slots are dense and indexed exactly once,
//!    and Node256 counts its non-zero slots.
//! 4. Every inner node holds at least two entries (children plus terminal):
//!    a node left with one is merged into its parent's slot.
//! 5. A terminal leaf has an empty suffix.
//! 6. `len` is the number of leaves, each holding one live value; keys spelled
//!    by distinct leaves are distinct.
//! 7. `heap_extra` is the sum of the out-of-line string lengths and boxed value
//!    sizes of all live blocks.
//! 8. If `leaves_in_order`, the leaves' references ascend in key order. Only
//!    the walk's prefetching relies on it, not memory safety.
//!
//! Only operations on `&mut self` change the tree, so a pointer obtained from
//! `&self` (a value, a key slice) stays valid for that borrow.

mod arena;
mod bytes;
mod compact;
mod cursor;
mod leaf;
mod node;
mod search;

use std::marker::PhantomData;
use std::mem;
use std::ptr;

use self::arena::{Arena, BlockIdx, UNIT};
use self::leaf::Leaf;
use self::node::{Kind, Node, PrefixSource, Spec, read_ref, write_ref};
use self::search::{bytes_eq, starts_with};
use crate::keys::common_prefix;
use crate::lanes::interleave;

pub(crate) use self::cursor::{Cursor, RawIter};

/// Whether a reference names a leaf.
#[inline(always)]
pub(crate) fn is_leaf(r: u32) -> bool {
    r & 1 == 1
}

#[inline(always)]
fn block(r: u32) -> BlockIdx {
    BlockIdx(r >> 1)
}

#[inline(always)]
fn leaf_ref(idx: BlockIdx) -> u32 {
    (idx.0 << 1) | 1
}

#[inline(always)]
fn node_ref(idx: BlockIdx) -> u32 {
    idx.0 << 1
}

/// A hint to load the cache line at `p`.
#[inline(always)]
pub(crate) fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of the x86_64 baseline, and a prefetch is only a
    // hint: it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Where a lookup stands after one step.
enum Step<V> {
    /// Go on at this reference, this many key bytes matched.
    Down(u32, usize),
    /// The lookup is over: the value's place, or none.
    Done(Option<*mut V>),
}

/// One step of the walk for the keys that are prefixes of a key (see
/// [`RawArt::prefix_step`]).
pub(crate) struct PrefixStep {
    /// The leaf met at this step whose key is the key's first `len` bytes,
    /// as `(len, leaf)`.
    pub(crate) found: Option<(usize, u32)>,
    /// Where the walk goes on: a block and the key bytes spelled above it.
    pub(crate) next: Option<(u32, usize)>,
}

/// What to do to a node's children when rebuilding it.
#[derive(Clone, Copy, Debug)]
enum ChildChange {
    None,
    Insert(u8, u32),
    Remove(u8),
}

/// Counts of what a tree holds; see [`crate::art::ArtStats`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RawStats {
    pub(crate) leaves: usize,
    pub(crate) nodes: [usize; 4],
    pub(crate) leaf_bytes: usize,
    pub(crate) node_bytes: usize,
    pub(crate) free_bytes: usize,
    pub(crate) out_of_line_bytes: usize,
    pub(crate) max_depth: usize,
    pub(crate) depth_sum: usize,
}

/// The tree. See the module docs for its invariants.
pub(crate) struct RawArt<V> {
    /// Inner nodes and leaves live apart so that the nodes, which every
    /// lookup walks, share cache lines only with each other.
    nodes: Arena,
    leaves: Arena,
    root: u32,
    len: usize,
    heap_extra: usize,
    /// Reused by node rebuilds so they do not allocate.
    scratch: Vec<(u8, u32)>,
    /// Whether the nodes lie in clusters ([`RawArt::compact`]), so that a
    /// lookup entering a region loads all of it.
    clustered: bool,
    /// Leaves added since the last compaction (or since the tree was
    /// empty), and how many there were then: the auto-compaction policy's
    /// measure of how far the layout has drifted.
    grown: usize,
    len_at_compact: usize,
    /// Whether the leaves lie in the leaf arena in key order, as compaction
    /// leaves them and until a new leaf is added.
    leaves_in_order: bool,
    _values: PhantomData<V>,
}

impl<V> RawArt<V> {
    pub(crate) fn new() -> Self {
        RawArt {
            nodes: Arena::line_aware(),
            leaves: Arena::new(),
            root: 0,
            len: 0,
            heap_extra: 0,
            scratch: Vec::new(),
            clustered: false,
            grown: 0,
            len_at_compact: 0,
            leaves_in_order: false,
            _values: PhantomData,
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn root(&self) -> u32 {
        self.root
    }

    /// Heap bytes held by the tree.
    pub(crate) fn memory_usage(&self) -> usize {
        self.nodes.heap_bytes()
            + self.leaves.heap_bytes()
            + self.heap_extra
            + self.scratch.capacity() * size_of::<(u8, u32)>()
    }

    /// The address of the block `r` names.
    ///
    /// This and the other methods that take a reference `r` are safe
    /// functions by this module's convention, not by their types: each
    /// caller passes a reference it read from the tree (the root, or a slot
    /// of a live node) or just made, which invariant 1 makes a live block of
    /// the kind its tag says. A wrong `r` is a bug of this module; the
    /// checker and the model tests look for the states that would lead to
    /// one.
    #[inline(always)]
    fn ptr(&self, r: u32) -> *mut u8 {
        // SAFETY: invariant 1, for a reference read from the tree (see above):
        // references stored in the tree name live blocks.
        unsafe {
            if is_leaf(r) {
                self.leaves.ptr(block(r))
            } else {
                self.nodes.ptr(block(r))
            }
        }
    }

    #[inline(always)]
    pub(crate) fn node(&self, r: u32) -> Node {
        debug_assert!(r != 0 && !is_leaf(r));
        // SAFETY: invariant 1, for a reference read from the tree (see
        // `ptr`): `r` names a live node block.
        unsafe { Node::from_ptr(self.ptr(r)) }
    }

    /// The suffix stored in leaf `r`; valid while the tree is borrowed.
    #[inline(always)]
    pub(crate) fn leaf_suffix(&self, r: u32) -> &[u8] {
        debug_assert!(is_leaf(r));
        // SAFETY: invariant 1: `r` names a live leaf.
        unsafe { Leaf::<V>::suffix(self.ptr(r)) }
    }

    /// The suffix stored in leaf `r`, not tied to a borrow of the tree: for
    /// changes that read a leaf while allocating. Valid until the leaf is freed.
    #[inline(always)]
    fn suffix_of<'x>(&self, r: u32) -> &'x [u8] {
        debug_assert!(is_leaf(r));
        // SAFETY: invariant 1: `r` names a live leaf; callers drop the slice
        // before freeing it (the arena never moves blocks).
        unsafe { Leaf::<V>::suffix(self.ptr(r)) }
    }

    /// Asks the CPU to start loading the children of a Node4 or Node16.
    ///
    /// An ordered walk visits them next; their blocks are scattered over the
    /// arena, and issuing the misses together lets them overlap instead of
    /// waiting for each in turn.
    #[inline]
    pub(crate) fn prefetch_children(&self, node: Node) {
        for child in node.sparse_children() {
            self.prefetch_ref(child);
        }
    }

    /// Prefetches the block of `r`, a node or a leaf.
    #[inline(always)]
    pub(crate) fn prefetch_ref(&self, r: u32) {
        prefetch(self.ptr(r));
    }

    /// The value of leaf `r`.
    #[inline(always)]
    pub(crate) fn leaf_value(&self, r: u32) -> *mut V {
        debug_assert!(is_leaf(r));
        // SAFETY: invariants 1 and 6: a live leaf holds a live value.
        unsafe { Leaf::<V>::value(self.ptr(r)) }
    }

    /// Moves the value out of leaf `r`, leaving the leaf without one.
    ///
    /// # Safety
    /// The caller must have the tree to itself, as if through `&mut`: no
    /// reference to this value alive and no other thread reading the tree
    /// (it takes `&self` only so that a walk can go on past the leaf). The
    /// leaf's value must not be used again: the tree may afterwards only be
    /// freed with [`RawArt::forget_values_and_clear`].
    #[inline]
    pub(crate) unsafe fn take_value(&self, r: u32) -> V {
        // SAFETY: a live leaf with a live value (invariant 6), taken once per
        // the contract.
        unsafe { Leaf::<V>::take_value(self.ptr(r)) }
    }

    /// The subtree holding exactly the keys that start with `prefix`, and the
    /// key bytes spelled above it.
    pub(crate) fn prefix_root(&self, prefix: &[u8]) -> Option<(u32, Vec<u8>)> {
        let mut r = self.root;
        let mut base = Vec::new();
        loop {
            let rest = &prefix[base.len()..];
            if r == 0 {
                return None;
            }
            if rest.is_empty() {
                return Some((r, base));
            }
            if is_leaf(r) {
                return self.leaf_suffix(r).starts_with(rest).then_some((r, base));
            }
            let node = self.node(r);
            let own = node.prefix();
            let m = own.len().min(rest.len());
            if own[..m] != rest[..m] {
                return None;
            }
            if rest.len() <= own.len() {
                return Some((r, base));
            }
            base.extend_from_slice(own);
            let byte = prefix[base.len()];
            let child = node.find(byte);
            if child.is_null() {
                return None;
            }
            base.push(byte);
            // SAFETY: `find` returned a child slot of the live node `r`.
            r = unsafe { read_ref(child) };
        }
    }

    /// The value stored under `key`.
    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<*mut V> {
        let (mut r, mut depth) = (self.root, 0);
        // The region the walk is in, in a compacted tree.
        let mut region = usize::MAX;
        loop {
            match self.lookup_step(key, r, depth) {
                Step::Down(child, below) => {
                    self.enter_region(&mut region, child);
                    (r, depth) = (child, below);
                }
                Step::Done(value) => return value,
            }
        }
    }

    /// On a step down to `to` in a lookup, insert, removal or ordered walk:
    /// if the tree is compacted and `to` is a node outside `region`, asks the
    /// CPU to load all of its region (see `compact.rs`), so that the levels
    /// of the cluster below cost one wait together.
    #[inline(always)]
    pub(crate) fn enter_region(&self, region: &mut usize, to: u32) {
        if !self.clustered || to == 0 || is_leaf(to) {
            return;
        }
        let to = self.ptr(to);
        let here = to as usize / compact::REGION_BYTES;
        if here == *region {
            return;
        }
        *region = here;
        let start = to.wrapping_sub(to as usize % compact::REGION_BYTES);
        for line in (0..compact::REGION_BYTES).step_by(64) {
            prefetch(start.wrapping_add(line));
        }
    }

    /// Looks up keys `0..count` (`key(i)` is the `i`th), handing `found`
    /// each key's index and result, in no particular order.
    ///
    /// The lookups run side by side ([`interleave`]): each takes one step
    /// down per turn and prefetches the block it will read next.
    pub(crate) fn get_each<'k>(
        &self,
        count: usize,
        key: impl Fn(usize) -> &'k [u8],
        found: impl FnMut(usize, Option<*mut V>),
    ) {
        let advance =
            |i: usize, (r, depth): &mut (u32, usize)| match self.lookup_step(key(i), *r, *depth) {
                Step::Down(child, below) => {
                    prefetch(self.ptr(child));
                    (*r, *depth) = (child, below);
                    None
                }
                Step::Done(value) => Some(value),
            };
        interleave(count, (self.root, 0), advance, found);
    }

    /// Takes the lookup of `key` one node further from `at` (the root and
    /// 0 bytes matched to begin with), prefetching the block it reaches, so
    /// that a write of `key` that follows finds its path in the cache.
    /// `false` once the lookup is over.
    #[inline]
    pub(crate) fn step_toward(&self, key: &[u8], at: &mut (u32, usize)) -> bool {
        match self.lookup_step(key, at.0, at.1) {
            Step::Down(child, below) => {
                prefetch(self.ptr(child));
                *at = (child, below);
                true
            }
            Step::Done(_) => false,
        }
    }

    /// One step of a lookup of `key` at `r`, the first `depth` bytes of
    /// `key` matched on the way: the answer, or the child to go on at.
    #[inline(always)]
    fn lookup_step(&self, key: &[u8], r: u32, depth: usize) -> Step<V> {
        if r == 0 {
            return Step::Done(None);
        }
        let rest = &key[depth..];
        if is_leaf(r) {
            let suffix = self.leaf_suffix(r);
            let hit = suffix.len() == rest.len() && bytes_eq(suffix, rest);
            return Step::Done(hit.then(|| self.leaf_value(r)));
        }
        let node = self.node(r);
        let Some(matched) = node.match_prefix(rest) else {
            return Step::Done(None);
        };
        let depth = depth + matched;
        if depth == key.len() {
            // Invariant 5: the terminal's suffix is empty, so it matches.
            let t = node.terminal();
            return Step::Done((t != 0).then(|| self.leaf_value(t)));
        }
        let slot = node.find(key[depth]);
        if slot.is_null() {
            return Step::Done(None);
        }
        // SAFETY: `find` returned a child slot of the live node `r`.
        Step::Down(unsafe { read_ref(slot) }, depth + 1)
    }

    /// One step of the walk along `key` that finds the keys which are
    /// prefixes of it, at `r` with the first `depth` bytes of `key` spelled.
    /// Such keys lie on `key`'s own path, each in a node's terminal slot or
    /// as the leaf the path ends at, so the walk meets them shortest first.
    #[inline]
    pub(crate) fn prefix_step(&self, key: &[u8], r: u32, depth: usize) -> PrefixStep {
        let rest = &key[depth..];
        if is_leaf(r) {
            let suffix = self.leaf_suffix(r);
            let found = starts_with(rest, suffix).then_some((depth + suffix.len(), r));
            return PrefixStep { found, next: None };
        }
        let node = self.node(r);
        // A prefix of `key` below this node would spell all of its prefix.
        let Some(matched) = node.match_prefix(rest) else {
            return PrefixStep {
                found: None,
                next: None,
            };
        };
        let depth = depth + matched;
        // Invariant 5: a terminal leaf spells exactly the bytes so far.
        let t = node.terminal();
        let found = (t != 0).then_some((depth, t));
        let slot = match key.get(depth) {
            Some(&byte) => node.find(byte),
            None => ptr::null_mut(),
        };
        let next = (!slot.is_null()).then(|| {
            // SAFETY: `find` returned a child slot of the live node `r`.
            (unsafe { read_ref(slot) }, depth + 1)
        });
        PrefixStep { found, next }
    }

    /// The longest key that is a prefix of each of keys `0..count` (`key(i)`
    /// is the `i`th), handing `found` each key's index and its match, as
    /// `(len, leaf)`, in no particular order.
    ///
    /// The walks run side by side as [`get_each`](Self::get_each)'s lookups
    /// do: one [`prefix_step`](Self::prefix_step) per turn, prefetching the
    /// block the walk reads next.
    pub(crate) fn longest_prefix_each<'k>(
        &self,
        count: usize,
        key: impl Fn(usize) -> &'k [u8],
        found: impl FnMut(usize, Option<(usize, u32)>),
    ) {
        // A walk: where it stands (0 once it is over) and its longest match.
        type Walk = (u32, usize, Option<(usize, u32)>);
        let advance = |i: usize, (r, depth, longest): &mut Walk| {
            if *r == 0 {
                return Some(*longest);
            }
            let step = self.prefix_step(key(i), *r, *depth);
            if step.found.is_some() {
                *longest = step.found;
            }
            let Some((next, below)) = step.next else {
                return Some(*longest);
            };
            prefetch(self.ptr(next));
            (*r, *depth) = (next, below);
            None
        };
        interleave(count, (self.root, 0, None), advance, found);
    }

    /// Leaves added since the last compaction, and the number of leaves
    /// then (0 and 0 for a tree never compacted, counting from empty).
    pub(crate) fn growth_since_compact(&self) -> (usize, usize) {
        (self.grown, self.len_at_compact)
    }

    /// Whether the leaves lie in the arena in key order, so that an ordered
    /// walk reads them as a stream (see `cursor.rs`).
    #[inline]
    pub(crate) fn leaves_in_order(&self) -> bool {
        self.leaves_in_order
    }

    /// Whether one more insert is certain to find arena room (an insert
    /// allocates at most three blocks).
    pub(crate) fn has_room_for_insert(&self) -> bool {
        self.nodes.has_room_for(2) && self.leaves.has_room_for(2)
    }

    /// Lowers the chunks the arenas may hold (see [`Arena::limit_chunks`]).
    #[cfg(test)]
    pub(crate) fn limit_chunks(&mut self, nodes: usize, leaves: usize) {
        self.nodes.limit_chunks(nodes);
        self.leaves.limit_chunks(leaves);
    }

    /// Inserts or replaces; returns the old value and a pointer to the value
    /// now stored under `key`.
    pub(crate) fn insert(&mut self, key: &[u8], value: V) -> (Option<V>, *mut V) {
        // The slot holding the reference being looked at: the root, or a slot
        // inside a node. Node blocks never move while we hold the pointer: the
        // arena does not move blocks, and only the node being changed is freed.
        let mut slot: *mut u8 = (&raw mut self.root).cast();
        let mut depth = 0;
        let mut region = usize::MAX;
        loop {
            // SAFETY: `slot` is the root or a child slot of a live node (see
            // above), and so is every slot written below.
            let r = unsafe { read_ref(slot) };
            let rest = &key[depth..];
            self.enter_region(&mut region, r);
            if r == 0 {
                // Invariant 1: only an empty tree has an empty slot.
                let leaf = self.new_leaf(&[rest], value);
                // SAFETY: as for the read above.
                unsafe { write_ref(slot, leaf) };
                return self.finish_insert(leaf);
            }
            if is_leaf(r) {
                let suffix = self.suffix_of(r);
                if suffix == rest {
                    let v = self.leaf_value(r);
                    // SAFETY: invariant 6: a live value, exclusively ours.
                    return (Some(mem::replace(unsafe { &mut *v }, value)), v);
                }
                // Lazy expansion ends here: both keys get a node at this depth
                // spelling their common part.
                let common = common_prefix(suffix, rest);
                let new_leaf = self.new_leaf(&[rest.get(common + 1..).unwrap_or_default()], value);
                let old_edge = suffix.get(common).copied();
                // The old leaf keeps what lies below its edge, in a copy:
                // every block an insert needs is allocated before anything
                // in the tree changes, so that an allocation that fails
                // leaves every reachable block as it was (the blocks already
                // taken are lost, and the new value is not dropped). A
                // failing allocation aborts, as in the standard collections,
                // unless an allocation error hook unwinds.
                let old_leaf = self.copy_leaf(r, &[suffix.get(common + 1..).unwrap_or_default()]);
                let node = self.new_fork(
                    &rest[..common],
                    (old_edge, old_leaf),
                    (rest.get(common).copied(), new_leaf),
                );
                self.free_copied_leaf(r);
                // SAFETY: as for the read above; the node holding `slot` did
                // not change.
                unsafe { write_ref(slot, node) };
                return self.finish_insert(new_leaf);
            }
            let node = self.node(r);
            let prefix = node.prefix();
            let common = common_prefix(prefix, rest);
            if common < prefix.len() {
                // The key leaves the node's prefix: fork above the node.
                let new_leaf = self.new_leaf(&[rest.get(common + 1..).unwrap_or_default()], value);
                let old_edge = prefix[common];
                // As for a leaf above: allocate, then free.
                let lower =
                    self.copy_node(r, Some(&[&prefix[common + 1..]]), None, ChildChange::None);
                let fork = self.new_fork(
                    &rest[..common],
                    (Some(old_edge), lower),
                    (rest.get(common).copied(), new_leaf),
                );
                self.free_copied_node(r, true);
                // SAFETY: as for the read above; `r`, now freed, was the node
                // below `slot`, not the one holding it.
                unsafe { write_ref(slot, fork) };
                return self.finish_insert(new_leaf);
            }
            depth += prefix.len();
            if depth == key.len() {
                let t = node.terminal();
                if t != 0 {
                    let v = self.leaf_value(t);
                    // SAFETY: invariant 6: a live value, exclusively ours.
                    return (Some(mem::replace(unsafe { &mut *v }, value)), v);
                }
                let leaf = self.new_leaf(&[], value);
                let grown = self.rebuild_node(r, None, Some(leaf), ChildChange::None);
                // SAFETY: as for the read above (`r` was below `slot`).
                unsafe { write_ref(slot, grown) };
                return self.finish_insert(leaf);
            }
            let byte = key[depth];
            let child = node.find(byte);
            if child.is_null() {
                let leaf = self.new_leaf(&[&key[depth + 1..]], value);
                let grown = self.add_child(r, byte, leaf);
                // SAFETY: as for the read above (`r` was below `slot`).
                unsafe { write_ref(slot, grown) };
                return self.finish_insert(leaf);
            }
            slot = child;
            depth += 1;
        }
    }

    /// Counts the new `leaf`, which the caller has just linked in, and
    /// returns the place of its value.
    ///
    /// The caller writes the slot itself: it may be `root`, and a write
    /// through a pointer to `self.root` while `&mut self` is lent to this
    /// call would be a write that `&mut` forbids (Miri reports it).
    #[inline]
    fn finish_insert(&mut self, leaf: u32) -> (Option<V>, *mut V) {
        self.len += 1;
        self.grown += 1;
        (None, self.leaf_value(leaf))
    }

    /// A new Node4 at a fork: entries `a` and `b` with distinct edges, where
    /// an edge of `None` is the terminal.
    fn new_fork(&mut self, prefix: &[u8], a: (Option<u8>, u32), b: (Option<u8>, u32)) -> u32 {
        let (terminal, children) = match (a, b) {
            ((None, t), (Some(e), c)) | ((Some(e), c), (None, t)) => (t, [(e, c), (0, 0)]),
            ((Some(x), cx), (Some(y), cy)) => {
                debug_assert_ne!(x, y);
                (
                    0,
                    if x < y {
                        [(x, cx), (y, cy)]
                    } else {
                        [(y, cy), (x, cx)]
                    },
                )
            }
            ((None, _), (None, _)) => unreachable!("two keys end at the same depth only if equal"),
        };
        let n = if terminal == 0 { 2 } else { 1 };
        self.build_node(&Spec {
            kind: Kind::Node4,
            prefix: PrefixSource::New(&[prefix]),
            terminal,
            children: &children[..n],
        })
    }

    /// A block for a leaf with a suffix of `len` bytes, wherever the arena
    /// has room: which breaks the key order compaction left.
    fn alloc_leaf(&mut self, len: usize) -> BlockIdx {
        self.leaves_in_order = false;
        self.leaves.alloc(Leaf::<V>::units(len))
    }

    fn new_leaf(&mut self, suffix: &[&[u8]], value: V) -> u32 {
        let len = suffix.iter().map(|p| p.len()).sum();
        let idx = self.alloc_leaf(len);
        // SAFETY: a fresh block of `units(len)` units: room for the value and
        // a field of `len` bytes; the parts come from elsewhere.
        unsafe {
            let p = self.leaves.ptr(idx);
            Leaf::write_value(p, value);
            self.heap_extra +=
                bytes::write(Leaf::<V>::suffix_field(p), suffix) + Leaf::<V>::BOXED_VALUE_BYTES;
        }
        leaf_ref(idx)
    }

    /// Moves leaf `r`'s value into a new leaf with suffix `suffix` (which may
    /// borrow from the old leaf) and frees the old one.
    fn rebuild_leaf(&mut self, r: u32, suffix: &[&[u8]]) -> u32 {
        let new = self.copy_leaf(r, suffix);
        self.free_copied_leaf(r);
        new
    }

    /// A new leaf with leaf `r`'s value, copied bytewise, and suffix
    /// `suffix` (which may borrow from `r`). Until [`free_copied_leaf`]
    /// frees `r`, both hold the value: only one may stay in the tree.
    ///
    /// [`free_copied_leaf`]: Self::free_copied_leaf
    fn copy_leaf(&mut self, r: u32, suffix: &[&[u8]]) -> u32 {
        let old = self.ptr(r);
        let len = suffix.iter().map(|p| p.len()).sum();
        let idx = self.alloc_leaf(len);
        // SAFETY: invariant 1: `old` is a live leaf; the new block is fresh
        // and distinct from it, with room for the value and the new suffix.
        unsafe {
            let new = self.leaves.ptr(idx);
            std::ptr::copy_nonoverlapping(old, new, Leaf::<V>::VALUE_BYTES);
            self.heap_extra += bytes::write(Leaf::<V>::suffix_field(new), suffix);
        }
        leaf_ref(idx)
    }

    /// Frees leaf `r`, whose value a [`copy_leaf`](Self::copy_leaf) holds
    /// now, without dropping the value.
    fn free_copied_leaf(&mut self, r: u32) {
        let old = self.ptr(r);
        // SAFETY: invariants 1-2: `old` is a live leaf of `stored_units`
        // units; its value lives on in the copy, so it is not dropped.
        unsafe {
            let old_units = Leaf::<V>::stored_units(old);
            self.heap_extra -= bytes::free(Leaf::<V>::suffix_field(old));
            self.leaves.free(block(r), old_units);
        }
    }

    fn build_node(&mut self, spec: &Spec<'_>) -> u32 {
        let idx = self.nodes.alloc(spec.bytes().div_ceil(UNIT));
        // SAFETY: a fresh block of the spec's size; sources are live elsewhere.
        self.heap_extra += unsafe { spec.write(self.nodes.ptr(idx)) };
        node_ref(idx)
    }

    /// Rebuilds node `r` with a new prefix (or its own, moved), a new terminal
    /// (`Some(0)` removes it) and a change of children, choosing the kind for
    /// the new child count. Frees the old block and returns the new reference.
    fn rebuild_node(
        &mut self,
        r: u32,
        prefix: Option<&[&[u8]]>,
        terminal: Option<u32>,
        change: ChildChange,
    ) -> u32 {
        let new = self.copy_node(r, prefix, terminal, change);
        self.free_copied_node(r, prefix.is_some());
        new
    }

    /// [`rebuild_node`](Self::rebuild_node)'s new node, without freeing the
    /// old one: until [`free_copied_node`](Self::free_copied_node) does,
    /// both name the same children (and, with `prefix` `None`, the same
    /// prefix allocation), and only one may stay in the tree.
    fn copy_node(
        &mut self,
        r: u32,
        prefix: Option<&[&[u8]]>,
        terminal: Option<u32>,
        change: ChildChange,
    ) -> u32 {
        let node = self.node(r);
        let mut children = mem::take(&mut self.scratch);
        children.clear();
        node.children(&mut children);
        match change {
            ChildChange::None => {}
            ChildChange::Insert(byte, child) => {
                let at = children.partition_point(|&(b, _)| b < byte);
                children.insert(at, (byte, child));
            }
            ChildChange::Remove(byte) => children.retain(|&(b, _)| b != byte),
        }
        let spec = Spec {
            kind: Kind::for_count(children.len(), node.kind()),
            prefix: match prefix {
                Some(parts) => PrefixSource::New(parts),
                None => PrefixSource::Move(node.prefix_field()),
            },
            terminal: terminal.unwrap_or_else(|| node.terminal()),
            children: &children,
        };
        let new = self.build_node(&spec);
        self.scratch = children;
        new
    }

    /// Frees node `r`, which a [`copy_node`](Self::copy_node) replaces, and
    /// its prefix's allocation if the copy was given a new prefix
    /// (`new_prefix`) rather than this one's, moved.
    fn free_copied_node(&mut self, r: u32, new_prefix: bool) {
        let node = self.node(r);
        // SAFETY: invariant 2: the old node is live with `units()` units. Its
        // prefix field is freed only if it was not moved into the copy.
        unsafe {
            let units = node.units();
            if new_prefix {
                self.heap_extra -= bytes::free(node.prefix_field());
            }
            self.nodes.free(block(r), units);
        }
    }

    /// Adds a child on `byte` (which node `r` does not have); returns the
    /// node's reference, new if it had to move.
    fn add_child(&mut self, r: u32, byte: u8, child: u32) -> u32 {
        let node = self.node(r);
        let count = node.count();
        match node.kind() {
            // SAFETY: a Node48 with room, no child on `byte` (checked by the caller).
            Kind::Node48 if count < node::NODE48_MAX => unsafe { node.node48_insert(byte, child) },
            // SAFETY: a Node256; `byte` is free.
            Kind::Node256 => unsafe { node.node256_set(byte, child) },
            Kind::Node4 | Kind::Node16
                if count < node::NODE16_MAX && self.same_units_with(node, 1) =>
            {
                // SAFETY: sparse, room for one more child in the same block.
                unsafe { node.sparse_insert(byte, child) }
            }
            _ => return self.rebuild_node(r, None, None, ChildChange::Insert(byte, child)),
        }
        r
    }

    /// Whether a sparse node keeps its unit count with `delta` more children.
    #[inline]
    fn same_units_with(&self, node: Node, delta: isize) -> bool {
        let grown = node.bytes() as isize + 5 * delta;
        (grown as usize).div_ceil(UNIT) == node.units()
    }

    /// Removes `key`; returns its value.
    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<V> {
        let mut slot: *mut u8 = (&raw mut self.root).cast();
        let mut depth = 0;
        // The slot of the node that holds `slot`, and the edge taken (None:
        // the terminal). None while `slot` is the root.
        let mut parent: Option<(*mut u8, Option<u8>)> = None;
        let mut region = usize::MAX;
        loop {
            // SAFETY: `slot` is the root or a terminal or child slot of a
            // live node, and nothing is freed until the walk ends.
            let r = unsafe { read_ref(slot) };
            if r == 0 {
                return None;
            }
            self.enter_region(&mut region, r);
            if is_leaf(r) {
                if self.leaf_suffix(r) != &key[depth..] {
                    return None;
                }
                // Unlink first: that may allocate (a rebuilt node), and if it
                // panics the tree must still hold the leaf.
                match parent {
                    None => self.root = 0,
                    Some((node_slot, edge)) => {
                        // SAFETY: the slot the walk read the parent from:
                        // the root or a slot of the grandparent, which
                        // `remove_entry` does not change.
                        let node = unsafe { read_ref(node_slot) };
                        let replacement = self.remove_entry(node, edge);
                        // SAFETY: as above.
                        unsafe { write_ref(node_slot, replacement) };
                    }
                }
                self.len -= 1;
                let value = self.free_leaf(r);
                if self.len == 0 {
                    // As BTreeMap does: a map emptied by removals holds no
                    // memory, not the chunks of its largest size.
                    self.release_arenas();
                }
                return Some(value);
            }
            let node = self.node(r);
            let prefix = node.prefix();
            let rest = &key[depth..];
            if !starts_with(rest, prefix) {
                return None;
            }
            depth += prefix.len();
            if depth == key.len() {
                if !node.has_terminal() {
                    return None;
                }
                parent = Some((slot, None));
                slot = node.terminal_slot();
                continue;
            }
            let child = node.find(key[depth]);
            if child.is_null() {
                return None;
            }
            parent = Some((slot, Some(key[depth])));
            slot = child;
            depth += 1;
        }
    }

    /// Gives every chunk back and forgets the layout's history. Only for an
    /// empty tree: every index into the arenas becomes invalid.
    pub(crate) fn release_arenas(&mut self) {
        debug_assert!(self.root == 0 && self.len == 0 && self.heap_extra == 0);
        self.nodes.reset();
        self.leaves.reset();
        self.scratch = Vec::new();
        self.clustered = false;
        self.grown = 0;
        self.len_at_compact = 0;
        self.leaves_in_order = false;
    }

    /// Frees leaf `r` and returns its value.
    fn free_leaf(&mut self, r: u32) -> V {
        let p = self.ptr(r);
        // SAFETY: invariants 1, 2, 6: a live leaf with a live value; it is
        // unlinked by the caller and never used again.
        unsafe {
            let units = Leaf::<V>::stored_units(p);
            self.heap_extra -=
                bytes::free(Leaf::<V>::suffix_field(p)) + Leaf::<V>::BOXED_VALUE_BYTES;
            let value = Leaf::<V>::take_value(p);
            self.leaves.free(block(r), units);
            value
        }
    }

    /// Takes the entry on `edge` (None: the terminal) out of node `r`, leaving
    /// the removed leaf itself alone. Returns what the node's slot should hold.
    fn remove_entry(&mut self, r: u32, edge: Option<u8>) -> u32 {
        let node = self.node(r);
        let count = node.count();
        let entries = count + usize::from(node.has_terminal());
        if entries == 2 {
            // Invariant 4: one entry left, so the node merges into its slot.
            return self.collapse(r, edge);
        }
        let Some(byte) = edge else {
            return self.rebuild_node(r, None, Some(0), ChildChange::None);
        };
        match node.kind() {
            // SAFETY: a Node48 with a child on `byte`, staying above its shrink point.
            Kind::Node48 if count - 1 > node::NODE48_SHRINK => unsafe { node.node48_remove(byte) },
            // SAFETY: a Node256 with a child on `byte`, staying above its shrink point.
            Kind::Node256 if count - 1 > node::NODE256_SHRINK => unsafe {
                node.node256_set(byte, 0)
            },
            Kind::Node4 | Kind::Node16 if count >= 2 && self.same_units_with(node, -1) => {
                // SAFETY: sparse with a child on `byte` and one to keep; the
                // block keeps its unit count.
                unsafe { node.sparse_remove(byte) }
            }
            _ => return self.rebuild_node(r, None, None, ChildChange::Remove(byte)),
        }
        r
    }

    /// Replaces node `r`, which is left with a single entry after removing the
    /// one on `removed`, by that entry with the node's prefix (and edge)
    /// prepended to it.
    fn collapse(&mut self, r: u32, removed: Option<u8>) -> u32 {
        let node = self.node(r);
        let prefix = node.prefix();
        let (edge, child) = match removed {
            Some(_) if node.has_terminal() => (None, node.terminal()),
            _ => {
                let mut pos = 1;
                loop {
                    let slot = node
                        .next_at(pos)
                        .expect("a node with two entries has the other one");
                    if slot.edge != removed {
                        break (slot.edge, slot.child);
                    }
                    pos = slot.pos + 1;
                }
            }
        };
        let edge_bytes = edge.map(|b| [b]);
        let edge_bytes: &[u8] = edge_bytes.as_ref().map_or(&[], |b| &b[..]);
        let merged = if is_leaf(child) {
            let suffix = self.suffix_of(child);
            self.rebuild_leaf(child, &[prefix, edge_bytes, suffix])
        } else {
            let child_prefix = self.node(child).prefix();
            self.rebuild_node(
                child,
                Some(&[prefix, edge_bytes, child_prefix]),
                None,
                ChildChange::None,
            )
        };
        // SAFETY: invariant 2; the node is unlinked by the caller, its prefix
        // was copied above.
        unsafe {
            let units = node.units();
            self.heap_extra -= bytes::free(node.prefix_field());
            self.nodes.free(block(r), units);
        }
        merged
    }

    /// Drops every value and frees everything; the tree is empty afterwards.
    /// A panicking `V::drop` does not stop the others from being dropped, and
    /// nothing leaks (a second panic aborts, as in the standard collections).
    pub(crate) fn clear(&mut self) {
        let mut teardown = Teardown {
            art: self,
            stack: Vec::new(),
            drop_values: true,
            finished: false,
        };
        teardown.run();
    }

    /// Frees everything without dropping values (they were moved out).
    pub(crate) fn forget_values_and_clear(&mut self) {
        let mut teardown = Teardown {
            art: self,
            stack: Vec::new(),
            drop_values: false,
            finished: false,
        };
        teardown.run();
    }

    /// Counts nodes and bytes by kind.
    pub(crate) fn stats(&self) -> RawStats {
        let mut stats = RawStats::default();
        let mut children = Vec::new();
        let mut stack = vec![(self.root, 0usize)];
        while let Some((r, depth)) = stack.pop() {
            if r == 0 {
                continue;
            }
            stats.max_depth = stats.max_depth.max(depth);
            if is_leaf(r) {
                stats.leaves += 1;
                stats.depth_sum += depth;
                // SAFETY: invariant 1: a live leaf.
                stats.leaf_bytes += unsafe { Leaf::<V>::stored_units(self.ptr(r)) } * UNIT;
                continue;
            }
            let node = self.node(r);
            stats.nodes[node.kind() as usize] += 1;
            stats.node_bytes += node.units() * UNIT;
            stack.push((node.terminal(), depth + 1));
            children.clear();
            node.children(&mut children);
            stack.extend(children.iter().map(|&(_, c)| (c, depth + 1)));
        }
        stats.free_bytes = [&self.nodes, &self.leaves]
            .iter()
            .map(|a| (a.free_units() + a.untouched_units()) * UNIT)
            .sum();
        stats.out_of_line_bytes = self.heap_extra;
        stats
    }

    /// Verifies the invariants; returns the first violation found.
    pub(crate) fn check(&self) -> Result<(), String> {
        if (self.root == 0) != (self.len == 0) {
            return Err(format!("root {} with len {}", self.root, self.len));
        }
        let mut leaves = 0;
        let (mut node_units, mut leaf_units) = (0, 0);
        let mut heap = 0;
        let mut children = Vec::new();
        let mut stack = vec![(self.root, false)];
        while let Some((r, terminal)) = stack.pop() {
            if r == 0 {
                continue;
            }
            if is_leaf(r) {
                leaves += 1;
                let p = self.ptr(r);
                // SAFETY: invariant 1 (being checked: a broken tree may fault
                // here, which a test reports all the same).
                leaf_units += unsafe { Leaf::<V>::stored_units(p) };
                let suffix = self.leaf_suffix(r);
                heap += if suffix.len() > bytes::INLINE_MAX {
                    suffix.len()
                } else {
                    0
                } + Leaf::<V>::BOXED_VALUE_BYTES;
                if terminal && !suffix.is_empty() {
                    return Err(format!("terminal leaf {r} has suffix {suffix:?}"));
                }
                continue;
            }
            let node = self.node(r);
            let (kind, count) = (node.kind(), node.count());
            node_units += node.units();
            let prefix = node.prefix();
            heap += if prefix.len() > bytes::INLINE_MAX {
                prefix.len()
            } else {
                0
            };
            if !kind.allows(count) {
                return Err(format!("node {r}: {kind:?} with {count} children"));
            }
            if count + usize::from(node.has_terminal()) < 2 {
                return Err(format!("node {r} has a single entry"));
            }
            if node.has_terminal() {
                if !is_leaf(node.terminal()) {
                    return Err(format!(
                        "node {r}: terminal {} is not a leaf",
                        node.terminal()
                    ));
                }
                stack.push((node.terminal(), true));
            }
            children.clear();
            node.children(&mut children);
            if children.len() != count {
                return Err(format!(
                    "node {r}: count {count} but {} children",
                    children.len()
                ));
            }
            if children.windows(2).any(|w| w[0].0 >= w[1].0) {
                return Err(format!("node {r}: edges not ascending {children:?}"));
            }
            if let Some(&(b, _)) = children
                .iter()
                .find(|&&(b, c)| c == 0 || node.find(b).is_null())
            {
                return Err(format!(
                    "node {r}: edge {b} has no child or cannot be found"
                ));
            }
            if kind == Kind::Node48 {
                node.check_node48_slots()
                    .map_err(|e| format!("node {r}: {e}"))?;
            }
            stack.extend(children.iter().map(|&(_, c)| (c, false)));
        }
        if leaves != self.len {
            return Err(format!("{leaves} leaves but len {}", self.len));
        }
        if heap != self.heap_extra {
            return Err(format!(
                "out-of-line bytes {heap} but counted {}",
                self.heap_extra
            ));
        }
        if self.leaves_in_order {
            // Compaction hands out leaf blocks in key order from fresh
            // chunks, so their references ascend in key order.
            let mut cursor = cursor::Cursor::front(self.root, &[]);
            let mut last = 0;
            while let Some(leaf) = cursor.next(self) {
                if leaf <= last {
                    return Err(format!(
                        "leaves said to be in key order, but leaf {leaf} follows {last}"
                    ));
                }
                last = leaf;
            }
        }
        for (arena, units, what) in [
            (&self.nodes, node_units, "node"),
            (&self.leaves, leaf_units, "leaf"),
        ] {
            if arena.free_units() != arena.walk_free_units() {
                return Err(format!(
                    "{what} arena: counts {} free units, its free lists hold {}",
                    arena.free_units(),
                    arena.walk_free_units()
                ));
            }
            let accounted = units + arena.free_units() + arena.untouched_units();
            if accounted != arena.total_units() {
                return Err(format!(
                    "{what} arena: {units} live + {} free + {} untouched units != {} \
                     (a block leaked or is double-counted)",
                    arena.free_units(),
                    arena.untouched_units(),
                    arena.total_units()
                ));
            }
        }
        Ok(())
    }
}

impl<V> std::fmt::Debug for RawArt<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawArt")
            .field("len", &self.len)
            .field("nodes", &self.nodes)
            .field("leaves", &self.leaves)
            .finish_non_exhaustive()
    }
}

/// Walks the tree freeing out-of-line strings and (maybe) dropping values,
/// then resets the arena. If a value's drop panics, `Drop` finishes the walk.
struct Teardown<'a, V> {
    art: &'a mut RawArt<V>,
    stack: Vec<u32>,
    drop_values: bool,
    /// Whether `run` got to its end (a value's drop may panic on the way).
    finished: bool,
}

impl<V> Teardown<'_, V> {
    fn run(&mut self) {
        let needs_walk = self.art.heap_extra > 0 || (self.drop_values && mem::needs_drop::<V>());
        if needs_walk && self.art.root != 0 {
            self.stack.push(mem::replace(&mut self.art.root, 0));
        }
        self.art.root = 0;
        let mut children = Vec::new();
        while let Some(r) = self.stack.pop() {
            let p = self.art.ptr(r);
            if is_leaf(r) {
                // SAFETY: invariant 1: each leaf is reached once (from its one
                // slot) and popped before its value is dropped, so a panic in
                // the drop cannot lead to a second drop.
                unsafe {
                    bytes::free(Leaf::<V>::suffix_field(p));
                    if self.drop_values {
                        Leaf::<V>::drop_value(p);
                    }
                }
            } else {
                let node = self.art.node(r);
                children.clear();
                node.children(&mut children);
                self.stack.extend(children.iter().map(|&(_, c)| c));
                if node.has_terminal() {
                    self.stack.push(node.terminal());
                }
                // SAFETY: the node's prefix field is live and freed once.
                unsafe { bytes::free(node.prefix_field()) };
            }
        }
        self.art.len = 0;
        self.art.heap_extra = 0;
        self.art.release_arenas();
        self.finished = true;
    }
}

impl<V> Drop for Teardown<'_, V> {
    fn drop(&mut self) {
        // Only after a panic in a value's drop: finish the walk, if that was
        // not its last leaf, and in any case reset the books, which `run`
        // does after the walk.
        if !self.finished {
            self.run();
        }
    }
}

impl<V> Drop for RawArt<V> {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_prefix_counts_equal_leading_bytes() {
        let a = b"usr/share/doc/libfoo/changelog.gz";
        for n in 0..=a.len() {
            let mut b = a.to_vec();
            if n < b.len() {
                b[n] ^= 0x40;
            }
            assert_eq!(common_prefix(a, &b), n);
            assert_eq!(common_prefix(&a[..n], a), n);
        }
    }

    /// `stats` walks the tree; its counts must agree with a shape worked out
    /// by hand and its byte totals with the arenas' own books.
    #[test]
    fn stats_agree_with_the_shape_and_the_arenas() {
        let mut art = RawArt::new();
        // A root Node4 on 'a' and 'b' (depth 0); below 'a' a Node4 on 'b' and
        // 'c' whose terminal is "a" (depth 1); four leaves, three at depth 2.
        for (i, key) in [&b"a"[..], b"ab", b"ac", b"b"].into_iter().enumerate() {
            art.insert(key, i as u64);
        }
        let s = art.stats();
        assert_eq!(s.leaves, 4);
        assert_eq!(s.nodes, [2, 0, 0, 0]);
        assert_eq!((s.max_depth, s.depth_sum), (2, 7));
        let debug = format!("{art:?}");
        assert!(
            debug.starts_with("RawArt { len: 4, nodes: Arena {"),
            "{debug}"
        );
        assert!(debug.contains("chunk_bytes"), "{debug}");

        // Every node kind, and suffixes long enough to live out of line.
        for i in 0..3000u32 {
            let long = if i % 100 == 0 {
                "x".repeat(300)
            } else {
                String::new()
            };
            let key = format!("{}/{}{long}", i % 300, i);
            art.insert(key.as_bytes(), u64::from(i));
        }
        for b in 0..=255u8 {
            art.insert(&[b'z', b], 0);
        }
        for b in 0..30u8 {
            art.insert(&[b'y', b], 0);
        }
        art.check().unwrap();
        let s = art.stats();
        assert_eq!(s.leaves, art.len());
        assert!(s.nodes.iter().all(|&n| n > 0), "every kind: {:?}", s.nodes);
        assert_eq!(s.leaf_bytes, art.leaves.live_units() * UNIT);
        assert_eq!(s.node_bytes, art.nodes.live_units() * UNIT);
        let total = (art.leaves.total_units() + art.nodes.total_units()) * UNIT;
        assert_eq!(s.leaf_bytes + s.node_bytes + s.free_bytes, total);
        assert!(s.free_bytes > 0, "growth leaves untouched units");
        assert!(s.out_of_line_bytes >= 30 * 300);
    }
}
