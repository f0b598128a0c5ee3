//! Compaction: copying the tree into fresh arenas laid out for reading.
//!
//! Inserts in random order scatter nodes and leaves over the arenas, and
//! every node that gains a child moves to a new block. A lookup then misses
//! the cache at nearly every level (about 20 on the Debian paths, each
//! waiting for the one before), and an ordered walk jumps across the whole
//! arena for every key. Compaction copies the tree in two passes:
//!
//! 1. **Leaves in key order**, one depth-first walk, which also lists the
//!    inner nodes in the order it meets them, with the keys below each. An
//!    ordered walk then reads the leaves as one stream.
//! 2. **Nodes in clusters.** A cluster is a connected top part of a subtree
//!    packed into one 1 KiB *region* (16 cache lines, aligned): starting
//!    from its root, it takes the child node under which the most keys lie,
//!    then the next heaviest of all the children seen so far, while they
//!    fit (a node larger than a region is a cluster of its own, outside
//!    any). The clusters are chosen from the list, not from the old
//!    nodes, which lie anywhere; each cluster's nodes are then requested
//!    together and copied. A lookup entering a region loads all of it at once
//!    ([`RawArt::get`]), so the levels of a path inside one cluster cost one
//!    wait instead of one each. Small clusters (the bottom of the tree) share
//!    regions, so the packing costs little memory; what a region leaves
//!    unused goes to the free lists, for later inserts. A tree small enough
//!    for the caches ([`CLUSTER_ABOVE_BYTES`]) is copied node by node.
//!
//! The free lists of the old arenas are gone afterwards. It costs two passes
//! over the tree, with old and new copies alive together until it ends.

use std::collections::BinaryHeap;
use std::ptr;

use super::arena::{Arena, BlockIdx, REGION_UNITS, UNIT};
use super::leaf::Leaf;
use super::node::write_ref;
use super::{RawArt, block, is_leaf, leaf_ref, node_ref, prefetch};

/// Units in a cache line.
const LINE: usize = 64 / UNIT;

/// Cache lines in a region.
const LINES: usize = REGION_UNITS / LINE;

/// Bytes in a region: lookups load a region whole when they enter it.
pub(crate) const REGION_BYTES: usize = REGION_UNITS * UNIT;

/// An inner node of the old tree, as the first pass lists them.
///
/// The second pass chooses clusters from this list instead of from the old
/// nodes: choosing from those waited for a miss at every node taken, since
/// its children's weights are known only once it is read (29% of
/// compaction's profile on the Debian paths). The entries of a node's children
/// that are nodes lie together, so that each node taken reads one group,
/// which was requested when the node became a candidate. 16 bytes per node
/// (the table of weights by unit this replaced took about 13).
#[derive(Clone, Copy, Default)]
struct Entry {
    /// The node, in the old arena.
    old: u32,
    /// The keys below it.
    weight: u32,
    /// The index of its first child's entry.
    first: u32,
    /// Bits 0-11: byte offset of the slot in its parent that refers to it
    /// (0 for the root; nodes are at most 2 KiB). Bits 12-21: its size in
    /// units (at most 256). Bits 22-31: its children that are nodes (at
    /// most 256).
    shape: u32,
}

impl Entry {
    /// The entry of a node found in its parent at byte offset `slot`, the
    /// rest filled in when the walk leaves it.
    fn found(old: u32, slot: usize) -> Entry {
        debug_assert!(slot < 1 << 12);
        Entry {
            old,
            shape: slot as u32,
            ..Entry::default()
        }
    }

    fn slot(self) -> usize {
        self.shape as usize & 0xfff
    }

    fn units(self) -> usize {
        (self.shape >> 12) as usize & 0x3ff
    }

    /// The indices of its children's entries, in key order.
    fn children(self) -> std::ops::Range<usize> {
        let first = self.first as usize;
        first..first + (self.shape >> 22) as usize
    }
}

/// Where a region has room: the units taken in each of its lines (a line
/// holds 8), in bytes, so that the copies the packing makes of it are small.
#[derive(Clone, Copy, Default)]
struct RegionFill([u8; LINES]);

impl RegionFill {
    /// Takes room for a block of `units`, keeping the arena's line rule (a
    /// block of up to a line lies within one, a longer one starts at one);
    /// returns its offset in units.
    fn take(&mut self, units: usize) -> Option<usize> {
        if units <= LINE {
            let line = self.first_line_with_room(units)?;
            let offset = line * LINE + usize::from(self.0[line]);
            self.0[line] += units as u8;
            return Some(offset);
        }
        let lines = units.div_ceil(LINE);
        let start = (0..(LINES + 1).checked_sub(lines)?)
            .find(|&first| self.0[first..first + lines].iter().all(|&taken| taken == 0))?;
        self.0[start..start + lines].fill(LINE as u8);
        self.0[start + lines - 1] = (units - (lines - 1) * LINE) as u8;
        Some(start * LINE)
    }

    /// The first line with room for `units` (1..=8), found for all lines
    /// at once: compaction asks this of many regions for every small
    /// cluster. A byte's top bit is set where `taken + 119 + units` reaches
    /// 128, that is where the line lacks room; no byte carries into the
    /// next (at most 8 + 127).
    fn first_line_with_room(self, units: usize) -> Option<usize> {
        debug_assert!((1..=LINE).contains(&units));
        const ONES: u128 = u128::MAX / 255;
        let lacking = (u128::from_le_bytes(self.0) + ONES * (119 + units as u128)) & (ONES << 7);
        let with_room = !lacking & (ONES << 7);
        (with_room != 0).then(|| with_room.trailing_zeros() as usize / 8)
    }

    /// Whether no line has room for the smallest node (two units: a
    /// node has at least two entries).
    fn is_full(self) -> bool {
        self.first_line_with_room(2).is_none()
    }

    /// Units taken in all lines.
    fn taken_units(self) -> usize {
        // Each half's bytes summed into its top byte (at most 64: no carry).
        const ONES: u64 = u64::MAX / 255;
        let bytes = u128::from_le_bytes(self.0);
        let half_sum = |half: u64| (half.wrapping_mul(ONES) >> 56) as usize;
        half_sum(bytes as u64) + half_sum((bytes >> 64) as u64)
    }

    /// Gives what the region at `region` left unused to the free lists.
    ///
    /// # Safety
    /// `region` must come from `arena.alloc_region()`, with exactly the
    /// units this fill says are taken in live blocks.
    unsafe fn release(self, arena: &mut Arena, region: BlockIdx) {
        for (line, &taken) in self.0.iter().enumerate() {
            let taken = usize::from(taken);
            if taken < LINE {
                // SAFETY: the caller's contract: these units of the region are
                // in no block; the piece lies within one line.
                unsafe { arena.free(region.plus(line * LINE + taken), LINE - taken) };
            }
        }
    }
}

/// A node chosen for a cluster, or left out of one.
#[derive(Clone, Copy)]
struct Placed {
    /// The node's entry.
    entry: u32,
    /// The cluster entry of its parent, or `NO_PARENT` for the cluster's root.
    parent: u16,
    /// Byte offset of the slot in the parent that refers to it (a parent
    /// in a cluster fits a region, so this is under 1024).
    slot: u16,
    /// Its size in units, and its offset in the region (both unused for
    /// nodes left out).
    units: usize,
    offset: usize,
}

impl Placed {
    /// The candidate, not placed yet.
    fn of(candidate: &Candidate) -> Placed {
        Placed {
            entry: candidate.entry,
            parent: candidate.parent,
            slot: candidate.slot,
            units: 0,
            offset: 0,
        }
    }
}

/// A cluster holds at most 64 nodes (a region has 128 units, a node at
/// least 2), so its entries' indices never reach this.
const NO_PARENT: u16 = u16::MAX;

/// Below this many bytes of nodes, a tree is copied node by node, depth
/// first, without clusters: it sits in the CPU caches, where they gain
/// nothing, and the room their regions leave would be a large share of it
/// (a few hundred keys grew from 9.2 to 13.4 KB).
const CLUSTER_ABOVE_BYTES: usize = 64 << 10;

/// How many regions with room are kept open for small clusters.
const OPEN_REGIONS: usize = 16;

/// A cluster's candidates, heaviest first (ties: first seen). The rank
/// holds the weight in its high half and the order seen, inverted, in its
/// low half: one compare decides, and the heap moves 16-byte entries
/// (40-byte ones took a sixth of compaction's time in heap operations).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Candidate {
    rank: u64,
    entry: u32,
    parent: u16,
    slot: u16,
}

impl Candidate {
    fn rank(weight: u32, order: u32) -> u64 {
        u64::from(weight) << 32 | u64::from(u32::MAX - order)
    }
}

/// Leaves the first pass finds before it moves them: it reads each leaf
/// a batch after finding it, when the prefetch of its parent's children
/// has long arrived, instead of waiting for it at once.
const LEAF_BATCH: usize = 256;

/// Moves a batch of leaves, in order, from `old` into fresh blocks of
/// `new`, and points their slots at the copies; empties the batch.
///
/// # Safety
/// Each entry must be a live leaf of `old` and the slot that refers to it
/// (the tree's root or a slot of a live node). The old blocks hold only
/// moved-out bytes afterwards: nothing may drop their contents.
unsafe fn move_leaves<V>(old: &Arena, new: &mut Arena, batch: &mut Vec<(u32, *mut u8)>) {
    /// How far ahead leaves are prefetched (children of a Node48 or 256
    /// were not prefetched with their parent).
    const AHEAD: usize = 8;
    for (i, &(r, slot)) in batch.iter().enumerate() {
        if let Some(&(ahead, _)) = batch.get(i + AHEAD) {
            // SAFETY: the caller's contract: a live leaf of `old`.
            prefetch(unsafe { old.ptr(block(ahead)) });
        }
        // SAFETY: the caller's contract: a live leaf of `stored_units`; the
        // new block is fresh. The bytes move the value and the suffix field
        // (with any out-of-line part) to the copy; `slot` refers to it.
        unsafe {
            let from = old.ptr(block(r));
            let units = Leaf::<V>::stored_units(from);
            let idx = new.alloc_fresh(units);
            ptr::copy_nonoverlapping(from, new.ptr(idx), units * UNIT);
            write_ref(slot, leaf_ref(idx));
        }
    }
    batch.clear();
}

/// The node list and reused buffers of one compaction.
struct Packer<'e> {
    entries: &'e [Entry],
    candidates: BinaryHeap<Candidate>,
    /// The cluster: the nodes taken, parents first, and the children left
    /// out (roots of later clusters).
    taken: Vec<Placed>,
    left: Vec<Placed>,
}

impl<V> RawArt<V> {
    /// Re-lays the whole tree out for reading (see the module docs).
    pub(crate) fn compact(&mut self) {
        self.grown = 0;
        self.len_at_compact = self.len;
        if self.root == 0 {
            // Nothing is live (the keys were removed): give every chunk
            // back, as `clear` does.
            self.release_arenas();
            return;
        }
        let entries = self.compact_leaves();
        // `compact_leaves` allocates them fresh, in key order.
        self.leaves_in_order = true;
        self.clustered = self.compact_nodes(&entries);
    }

    /// Pass 1: copies the leaves into a fresh arena in key order, rewriting
    /// the slots of the (old) nodes that refer to them, and returns the
    /// list of the inner nodes (see [`Entry`]).
    fn compact_leaves(&mut self) -> Vec<Entry> {
        /// Aborts if the copy unwinds half-way: the old nodes would refer to
        /// leaves in an arena about to be freed. Only running out of index
        /// space (or a failing allocation, where an allocation error hook
        /// unwinds instead of aborting) could unwind it: the new arena is
        /// planned to hold the live
        /// leaves, in full chunks that leave at most a block's worth unused
        /// at their ends, so it needs no more than the old one did (which
        /// held the same leaves and more), short of a chunk at the 16 GiB
        /// limit; nothing else here panics.
        struct AbortOnUnwind;
        impl Drop for AbortOnUnwind {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    std::process::abort();
                }
            }
        }

        /// A node's entry is known from its parent's visit. Leaving a node
        /// fills in its entry at once: a large subtree between entering and
        /// leaving would push the entry out of the cache.
        enum Visit {
            Enter(u32, *mut u8, u32),
            Leave { entry: u32, first: u32, shape: u32 },
        }

        let guard = AbortOnUnwind;
        let mut leaves = Arena::new();
        leaves.plan(self.leaves.live_units());
        // An average node is about 3.3 units.
        let mut entries = Vec::with_capacity(self.nodes.live_units() / 3);
        entries.push(Entry::found(self.root, 0));
        // Keys counted so far below each node on the walk's path; the bottom
        // entry collects the root's.
        let mut counts = vec![0u32];
        let mut stack = vec![Visit::Enter(self.root, (&raw mut self.root).cast(), 0)];
        let mut slots = Vec::new();
        let mut batch = Vec::with_capacity(LEAF_BATCH);
        while let Some(visit) = stack.pop() {
            match visit {
                Visit::Enter(r, slot, _) if is_leaf(r) => {
                    batch.push((r, slot));
                    if batch.len() == LEAF_BATCH {
                        // SAFETY: the batch holds live leaves, in key order,
                        // with their slots: the root or slots of live old nodes.
                        unsafe { move_leaves::<V>(&self.leaves, &mut leaves, &mut batch) };
                    }
                    *counts.last_mut().expect("the bottom entry stays") += 1;
                }
                Visit::Enter(r, _, entry) => {
                    let node = self.node(r);
                    // Its children are visited next (the first at once, the
                    // others after its subtree): start loading them now.
                    self.prefetch_children(node);
                    counts.push(0);
                    slots.clear();
                    node.child_slots(&mut slots);
                    // Its children's entries, together.
                    let first = entries.len();
                    let base = self.ptr(r) as usize;
                    entries.extend(
                        slots
                            .iter()
                            .filter(|&&(c, _)| !is_leaf(c))
                            .map(|&(c, s)| Entry::found(c, s as usize - base)),
                    );
                    let (units, children) = (node.units(), entries.len() - first);
                    debug_assert!(units < 1 << 10 && children < 1 << 10);
                    stack.push(Visit::Leave {
                        entry,
                        first: first as u32,
                        shape: (units as u32) << 12 | (children as u32) << 22,
                    });
                    // Reversed, so that the terminal and then the smallest
                    // edge come off the stack first: key order.
                    let mut next = entries.len() as u32;
                    stack.extend(slots.iter().rev().map(|&(c, s)| {
                        if !is_leaf(c) {
                            next -= 1;
                        }
                        Visit::Enter(c, s, next)
                    }));
                }
                Visit::Leave {
                    entry,
                    first,
                    shape,
                } => {
                    let below = counts.pop().expect("pushed on entering");
                    let this = &mut entries[entry as usize];
                    this.weight = below;
                    this.first = first;
                    this.shape |= shape;
                    *counts.last_mut().expect("the bottom entry stays") += below;
                }
            }
        }
        // SAFETY: as above.
        unsafe { move_leaves::<V>(&self.leaves, &mut leaves, &mut batch) };
        // The old arena now holds only moved-out bytes: dropping it frees its
        // chunks and nothing else.
        self.leaves = leaves;
        drop(guard);
        entries
    }

    /// Pass 2: copies the nodes into a fresh arena in clusters (see the
    /// module docs), or for a small tree one by one; returns whether it made
    /// clusters. The old nodes stay as they are until the swap at the end,
    /// so the tree is whole if this unwinds.
    fn compact_nodes(&mut self, entries: &[Entry]) -> bool {
        let mut root = self.root;
        if is_leaf(root) {
            // No node is live (one key is left): free the nodes' chunks.
            self.nodes.reset();
            return false;
        }
        let mut nodes = Arena::line_aware();
        let node_units = self.nodes.live_units();
        let cluster = node_units * UNIT >= CLUSTER_ABOVE_BYTES;
        // What is live now, and for clusters some more for the room regions
        // leave unused (most of it is filled by small clusters).
        nodes.plan(node_units + if cluster { node_units / 16 } else { 0 });
        let mut packer = Packer {
            entries,
            candidates: BinaryHeap::new(),
            taken: Vec::new(),
            left: Vec::new(),
        };
        // Regions with room left, the latest last: a cluster smaller than a
        // region goes into the latest one that takes all of it.
        let mut open: Vec<(BlockIdx, RegionFill)> = Vec::new();
        // Cluster roots still to copy: (the node's entry, slot in the new
        // tree that will refer to its copy). Slots point into blocks of the
        // new arena, which never move, or at `root`.
        let mut roots: Vec<(usize, *mut u8)> = vec![(0, (&raw mut root).cast())];
        let mut copies: Vec<*mut u8> = Vec::new();
        while let Some((entry, slot)) = roots.pop() {
            let r = entries[entry].old;
            let units = entries[entry].units();
            if units > REGION_UNITS || !cluster {
                // A node larger than a region is a cluster of its own; in a
                // small tree, every node is.
                let idx = nodes.alloc(units);
                // SAFETY: a live node moved bytewise (its prefix field and
                // child references included) into a fresh block.
                let copy = unsafe {
                    ptr::copy_nonoverlapping(self.ptr(r), nodes.ptr(idx), units * UNIT);
                    nodes.ptr(idx)
                };
                // SAFETY: `slot` is `root` or a child slot of a copy in the
                // new arena, whose blocks never move.
                unsafe { write_ref(slot, node_ref(idx)) };
                // The copy's slots lie where the old node's did. Reversed, to
                // be popped in key order.
                roots.extend(
                    entries[entry]
                        .children()
                        .rev()
                        .map(|child| (child, copy.wrapping_add(entries[child].slot()))),
                );
                continue;
            }
            let fresh = plan_cluster(&mut packer, entry);
            // A whole subtree smaller than a region goes into the latest open
            // region with room for it; anything else into a fresh region.
            let fits = |mut fill: RegionFill| {
                let mut room = |placed: &Placed| fill.take(placed.units).is_some();
                packer.taken.iter().all(&mut room)
            };
            let shared = if packer.left.is_empty() {
                open.iter().rposition(|&(_, fill)| {
                    fill.taken_units() + fresh.taken_units() <= REGION_UNITS && fits(fill)
                })
            } else {
                None
            };
            let at = match shared {
                Some(at) => {
                    let fill = &mut open[at].1;
                    for placed in &mut packer.taken {
                        placed.offset = fill.take(placed.units).expect("checked by `fits`");
                    }
                    at
                }
                None => {
                    if open.len() == OPEN_REGIONS {
                        let (region, fill) = open.remove(0);
                        // SAFETY: the region's untaken units are in no block.
                        unsafe { fill.release(&mut nodes, region) };
                    }
                    open.push((nodes.alloc_region(), fresh));
                    open.len() - 1
                }
            };
            let (region, fill) = open[at];
            if fill.taken_units() + 2 > REGION_UNITS {
                // Full: no node is smaller than two units.
                open.remove(at);
                // SAFETY: as above.
                unsafe { fill.release(&mut nodes, region) };
            }
            // The cluster's old nodes lie anywhere: ask for all of them
            // before copying the first (a node of up to a line lies in one,
            // a longer one starts at one).
            for placed in &packer.taken {
                let old = self.ptr(entries[placed.entry as usize].old);
                for line in (0..placed.units * UNIT).step_by(64) {
                    prefetch(old.wrapping_add(line));
                }
            }
            copies.clear();
            for placed in &packer.taken {
                let idx = region.plus(placed.offset);
                let old = self.ptr(entries[placed.entry as usize].old);
                // SAFETY: a live node of `units` units moved bytewise into
                // the region, at units `RegionFill::take` gave to it alone.
                let copy = unsafe {
                    ptr::copy_nonoverlapping(old, nodes.ptr(idx), placed.units * UNIT);
                    nodes.ptr(idx)
                };
                let slot = match placed.parent {
                    NO_PARENT => slot,
                    // The parent entry comes first: taken top-down.
                    parent => copies[usize::from(parent)].wrapping_add(usize::from(placed.slot)),
                };
                // SAFETY: the cluster root's slot (as above), or the child
                // slot at offset `placed.slot` of its parent's copy, copied
                // just before it in this region.
                unsafe { write_ref(slot, node_ref(idx)) };
                copies.push(copy);
            }
            // Left out: roots of later clusters, visited in about key order
            // (the parents top-down, each one's slots in order).
            let left = &mut packer.left;
            left.sort_unstable_by_key(|placed| (placed.parent, placed.slot));
            roots.extend(left.iter().rev().map(|placed| {
                let parent = copies[usize::from(placed.parent)];
                (
                    placed.entry as usize,
                    parent.wrapping_add(usize::from(placed.slot)),
                )
            }));
        }
        for (region, fill) in open {
            // SAFETY: the region's untaken units are in no block.
            unsafe { fill.release(&mut nodes, region) };
        }
        // The old arena now holds only moved-out bytes: dropping it frees its
        // chunks and nothing else.
        self.nodes = nodes;
        self.root = root;
        cluster
    }
}

/// Chooses the cluster rooted at the node of entry `root` for a fresh region
/// (see the module docs), into `packer.taken` with offsets and
/// `packer.left`; returns the region's fill with it. Reads only the entries.
fn plan_cluster(packer: &mut Packer<'_>, root: usize) -> RegionFill {
    let mut fill = RegionFill::default();
    let (entries, taken, left) = (packer.entries, &mut packer.taken, &mut packer.left);
    taken.clear();
    left.clear();
    packer.candidates.clear();
    let mut order = 0;
    // The root first: no rank is larger.
    packer.candidates.push(Candidate {
        rank: u64::MAX,
        entry: root as u32,
        parent: NO_PARENT,
        slot: 0,
    });
    while let Some(candidate) = packer.candidates.pop() {
        if fill.is_full() {
            // The rest are left out too, in any order (the caller sorts
            // them): no need to pop them one by one.
            left.push(Placed::of(&candidate));
            left.extend(packer.candidates.drain().map(|c| Placed::of(&c)));
            break;
        }
        let mut placed = Placed::of(&candidate);
        placed.units = entries[candidate.entry as usize].units();
        let Some(offset) = fill.take(placed.units) else {
            left.push(placed);
            continue;
        };
        placed.offset = offset;
        debug_assert!(taken.len() < usize::from(NO_PARENT));
        let index = taken.len() as u16;
        taken.push(placed);
        for child in entries[candidate.entry as usize].children() {
            order += 1;
            let entry = entries[child];
            // Read if it is taken: request its children's entries now.
            prefetch(entries.as_ptr().wrapping_add(entry.first as usize).cast());
            debug_assert!(entry.slot() < REGION_BYTES);
            packer.candidates.push(Candidate {
                rank: Candidate::rank(entry.weight, order),
                entry: child as u32,
                parent: index,
                slot: entry.slot() as u16,
            });
        }
    }
    fill
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed xorshift sequence: each call gives a number below `m`.
    fn below(mut state: u64) -> impl FnMut(u64) -> u64 {
        move |m| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        }
    }

    /// Paths shaped like a package archive's: directories of varied depth
    /// and fan-out, so the tree has long chains and wide nodes.
    fn paths(n: usize) -> Vec<Vec<u8>> {
        let mut next = below(0x2545_f491_4f6c_dd1d);
        (0..n)
            .map(|_| {
                let mut path = String::from("usr");
                for _ in 0..2 + next(5) {
                    path += &format!("/d{}", next(12));
                }
                path += &format!("/file{}.gz", next(1000));
                path.into_bytes()
            })
            .collect()
    }

    /// The regions a lookup of each key enters, on average, and the nodes it
    /// visits.
    fn regions_and_levels(art: &RawArt<u32>) -> (f64, f64) {
        let (mut regions, mut levels, mut leaves) = (0, 0, 0);
        let mut stack = vec![(art.root, 0usize, 0usize, usize::MAX)];
        let mut slots = Vec::new();
        while let Some((r, entered, depth, region)) = stack.pop() {
            if is_leaf(r) {
                (regions, levels, leaves) = (regions + entered, levels + depth, leaves + 1);
                continue;
            }
            let here = art.ptr(r) as usize / REGION_BYTES;
            let entered = entered + usize::from(here != region);
            slots.clear();
            art.node(r).child_slots(&mut slots);
            stack.extend(slots.iter().map(|&(c, _)| (c, entered, depth + 1, here)));
        }
        (
            regions as f64 / leaves as f64,
            levels as f64 / leaves as f64,
        )
    }

    #[test]
    fn compaction_packs_paths_into_few_regions() {
        let keys = paths(20_000);
        let mut art = RawArt::new();
        for (i, key) in keys.iter().enumerate() {
            art.insert(key, i as u32);
        }
        let before = art.memory_usage();
        let (scattered, levels) = regions_and_levels(&art);
        art.compact();
        assert!(art.clustered);
        art.check().unwrap();
        let (clustered, same_levels) = regions_and_levels(&art);
        assert_eq!(levels, same_levels);
        assert!(
            scattered > 0.8 * levels && clustered < 0.5 * levels,
            "{levels:.1} levels: {scattered:.1} regions as inserted, {clustered:.1} compacted"
        );
        assert!(
            art.memory_usage() <= before,
            "{} > {before} bytes",
            art.memory_usage()
        );
        let model: std::collections::BTreeMap<_, _> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k, i as u32))
            .collect();
        for (key, &value) in &model {
            // SAFETY: a live value; the tree is not changed while it is read.
            assert_eq!(art.get(key).map(|v| unsafe { *v }), Some(value));
        }
    }

    /// The keys below `r`.
    fn keys_below(art: &RawArt<u32>, r: u32) -> usize {
        if is_leaf(r) {
            return 1;
        }
        let mut slots = Vec::new();
        art.node(r).child_slots(&mut slots);
        slots.iter().map(|&(c, _)| keys_below(art, c)).sum()
    }

    /// The packing rule itself: a node's children are offered heaviest
    /// first, and a region's room only shrinks, so a lighter child in its
    /// parent's region means every heavier child no larger than it is there
    /// too.
    #[test]
    fn clusters_take_the_heaviest_children_first() {
        let mut art = RawArt::new();
        for (i, key) in paths(20_000).iter().enumerate() {
            art.insert(key, i as u32);
        }
        art.compact();
        assert!(art.clustered);
        let region = |r: u32| art.ptr(r) as usize / REGION_BYTES;
        let (mut checked, mut stack, mut slots) = (0, vec![art.root], Vec::new());
        while let Some(r) = stack.pop() {
            slots.clear();
            art.node(r).child_slots(&mut slots);
            let children: Vec<(usize, usize, bool)> = (slots.iter())
                .filter(|&&(c, _)| !is_leaf(c))
                .map(|&(c, _)| {
                    (
                        keys_below(&art, c),
                        art.node(c).units(),
                        region(c) == region(r),
                    )
                })
                .collect();
            for &(light, light_units, light_in) in &children {
                for &(heavy, heavy_units, heavy_in) in &children {
                    if light_in && heavy > light && heavy_units <= light_units {
                        assert!(
                            heavy_in,
                            "a child of {heavy} keys left out for one of {light}"
                        );
                        checked += 1;
                    }
                }
            }
            stack.extend(slots.iter().map(|&(c, _)| c).filter(|&c| !is_leaf(c)));
        }
        assert!(checked > 100, "only {checked} pairs checked");
    }

    /// A tree that fits the caches is copied without clusters, into no more
    /// memory than it had.
    #[test]
    fn small_trees_are_copied_without_clusters() {
        for n in [1, 2, 100, 1000] {
            let keys = paths(n);
            let mut art = RawArt::new();
            for (i, key) in keys.iter().enumerate() {
                art.insert(key, i as u32);
            }
            let before = art.memory_usage();
            art.compact();
            assert!(!art.clustered);
            art.check().unwrap();
            assert!(
                art.memory_usage() <= before,
                "{n} keys: {before} -> {}",
                art.memory_usage()
            );
            for key in &keys {
                assert!(art.get(key).is_some());
            }
        }
    }

    #[test]
    fn compaction_copies_nodes_larger_than_a_region() {
        // A Node256 at the root and one below it, each child with a small
        // subtree, and a Node48: the wide nodes are clusters of their own.
        let mut keys = Vec::new();
        for byte in 0..=255u8 {
            for tail in [&b""[..], b"/a", b"/b"] {
                keys.push([&[byte][..], tail].concat());
                keys.push([&b"wide/"[..], &[byte], tail].concat());
            }
            if byte < 40 {
                keys.push([&b"mid/"[..], &[byte]].concat());
            }
        }
        // Enough others for the tree to be clustered at all.
        keys.extend(paths(10_000).into_iter().map(|p| [&b"z/"[..], &p].concat()));
        keys.sort();
        keys.dedup();
        let mut art = RawArt::new();
        for (i, key) in keys.iter().enumerate() {
            art.insert(key, i as u32);
        }
        assert!(art.node(art.root).units() > REGION_UNITS);
        art.compact();
        assert!(art.clustered);
        art.check().unwrap();
        for (i, key) in keys.iter().enumerate() {
            // SAFETY: a live value; the tree is not changed while it is read.
            assert_eq!(art.get(key).map(|v| unsafe { *v }), Some(i as u32));
        }
    }

    /// `child_slots` reads each kind's layout directly; it must give what
    /// the ordered positions (`next_at`, through `children`) give, in the
    /// same order, with each slot holding its child.
    #[test]
    fn child_slots_agree_with_ordered_positions() {
        use super::super::node::{Kind, read_ref};
        let mut keys = vec![b"wide".to_vec(), b"mid".to_vec()];
        for byte in 0..=255u8 {
            keys.push([&b"wide"[..], &[byte]].concat());
            if byte % 8 == 0 {
                keys.push([&b"mid"[..], &[byte]].concat());
            }
            if byte % 23 == 0 {
                keys.push([&b"few"[..], &[byte], b"x"].concat());
                keys.push([&b"few"[..], &[byte], b"y"].concat());
            }
        }
        let mut art = RawArt::new();
        for (i, key) in keys.iter().enumerate() {
            art.insert(key, i as u32);
        }
        let (mut kinds, mut stack) = ([0; 4], vec![art.root]);
        let (mut slots, mut children) = (Vec::new(), Vec::new());
        while let Some(r) = stack.pop() {
            let node = art.node(r);
            kinds[node.kind() as usize] += 1;
            slots.clear();
            node.child_slots(&mut slots);
            children.clear();
            node.children(&mut children);
            let expected: Vec<u32> = (node.has_terminal().then(|| node.terminal()))
                .into_iter()
                .chain(children.iter().map(|&(_, c)| c))
                .collect();
            let found: Vec<u32> = slots.iter().map(|&(c, _)| c).collect();
            assert_eq!(found, expected, "a {:?}", node.kind());
            for &(c, slot) in &slots {
                // SAFETY: `child_slots` gave a slot of the live node.
                assert_eq!(unsafe { read_ref(slot) }, c);
            }
            stack.extend(expected.into_iter().filter(|&c| !is_leaf(c)));
        }
        for kind in [Kind::Node4, Kind::Node16, Kind::Node48, Kind::Node256] {
            assert!(kinds[kind as usize] > 0, "no {kind:?} in the tree");
        }
    }

    /// The packing's bit tricks and searches against the plain loops they
    /// stand for, over fills built by random takes (blocks of one line and
    /// longer).
    #[test]
    fn region_fill_finds_room_as_a_plain_search_does() {
        let mut next = below(0x9e37_79b9_7f4a_7c15);
        let (mut found, mut full) = (0, 0);
        for _ in 0..2_000 {
            let mut fill = RegionFill::default();
            for _ in 0..next(60) {
                let units = 1 + next(20) as usize;
                let lines = fill.0.map(usize::from);
                let plain = if units <= LINE {
                    lines.iter().position(|&taken| taken + units <= LINE)
                } else {
                    // The first run of empty lines long enough, up to the last.
                    let n = units.div_ceil(LINE);
                    (0..=LINES - n).find(|&first| lines[first..first + n].iter().all(|&t| t == 0))
                };
                if units <= LINE {
                    assert_eq!(
                        fill.first_line_with_room(units),
                        plain,
                        "{units} in {lines:?}"
                    );
                }
                if let Some(offset) = fill.take(units) {
                    found += 1;
                    assert_eq!(fill.taken_units(), lines.iter().sum::<usize>() + units);
                    assert_eq!(Some(offset / LINE), plain, "{units} in {lines:?}");
                } else {
                    assert_eq!(plain, None, "{units} in {lines:?}");
                }
                let lines = fill.0.map(usize::from);
                assert_eq!(fill.taken_units(), lines.iter().sum::<usize>());
                let plain_full = lines.iter().all(|&taken| taken + 2 > LINE);
                assert_eq!(fill.is_full(), plain_full, "{lines:?}");
                full += usize::from(plain_full);
            }
        }
        assert!(
            found > 10_000 && full > 1_000,
            "{found} blocks taken, {full} fills full"
        );
    }
}
