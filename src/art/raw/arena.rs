//! A slab arena handing out 8-byte-granular blocks named by 32-bit indices.
//!
//! Every node and leaf of the tree lives in one of the arena's chunks. Three
//! things make it worth having instead of calling the global allocator per
//! block:
//!
//! * **Exact sizes.** Blocks are sized in 8-byte units, so a 17-byte leaf takes
//!   24 bytes, not the 32 of jemalloc's size classes (on the Debian paths this
//!   alone is several bytes per key).
//! * **32-bit references.** A block is named by a `u32` [`BlockIdx`] instead of
//!   a 64-bit pointer, which halves the child arrays of every inner node.
//! * **No per-block header.** The tree always knows the size of a block it
//!   frees (it is computed from the block's contents), so the arena keeps no
//!   size word per block.
//!
//! ```text
//!  BlockIdx (31 bits used):  | chunk: 13 bits | unit offset in chunk: 18 bits |
//!  address = chunks[chunk] + offset * 8
//! ```
//!
//! Chunks never move once allocated, so a pointer into a block stays valid
//! until that block is freed, even while other blocks are allocated. Each new
//! chunk is an eighth of what the arena already holds, from 512 bytes up to
//! [`CHUNK_UNITS`] (2 MiB, one huge page), so a small map does not hold
//! megabytes and at most about an eighth of a growing arena sits unused; every
//! chunk still owns a full slot of the index space, which costs nothing but
//! index bits.
//!
//! Freed blocks go to a singly linked free list per size (the link is a
//! `BlockIdx` stored in the freed block's first four bytes) and are reused by
//! the next allocation of exactly that size. Memory goes back to the system
//! only when the arena is dropped or cleared.
//!
//! For compaction the arena also hands out *regions* ([`Arena::alloc_region`]):
//! [`REGION_UNITS`] fresh units at an address aligned to their size, which the
//! caller carves into blocks so that a reader can load a group of blocks
//! with one burst of prefetches.

use std::alloc::{self, Layout};
use std::ptr::NonNull;

/// The arena's allocation granule in bytes. Blocks are aligned to it.
pub(crate) const UNIT: usize = 8;

/// Units in a 64-byte cache line.
const LINE_UNITS: usize = 64 / UNIT;

/// Units in a region (1 KiB, 16 cache lines): see [`Arena::alloc_region`].
/// Larger regions cover more levels of a lookup's path per wait, but each
/// costs more lines to load; 1 KiB measured best (DESIGN.md, Compaction).
pub(crate) const REGION_UNITS: usize = 128;

/// The largest block the arena hands out, in units (2 KiB). Callers keep their
/// blocks below it by storing long byte strings out of line.
pub(crate) const MAX_BLOCK_UNITS: usize = 256;

/// log2 of the units in a full-size chunk.
const CHUNK_SHIFT: u32 = 18;

/// Units in a full-size chunk (2 MiB: one huge page, see `advise_huge_pages`).
pub(crate) const CHUNK_UNITS: usize = 1 << CHUNK_SHIFT;

/// Units in the smallest chunk (512 bytes); see `Arena::next_chunk_units`.
const FIRST_CHUNK_UNITS: usize = 64;

/// Block indices use 31 bits, leaving the low bit of a tree reference for the
/// leaf tag.
const INDEX_BITS: u32 = 31;

/// How many chunks the index space has room for: 8192 chunks of 2 MiB, so an
/// arena holds at most 16 GiB.
pub(crate) const MAX_CHUNKS: usize = 1 << (INDEX_BITS - CHUNK_SHIFT);

const _: () = assert!(FIRST_CHUNK_UNITS.is_power_of_two() && FIRST_CHUNK_UNITS <= CHUNK_UNITS);
const _: () = assert!(MAX_BLOCK_UNITS < CHUNK_UNITS && CHUNK_SHIFT < INDEX_BITS);
const _: () = assert!(REGION_UNITS.is_power_of_two() && REGION_UNITS.is_multiple_of(LINE_UNITS));
const _: () = assert!(REGION_UNITS <= MAX_BLOCK_UNITS);
const _: () = assert!(MAX_CHUNKS << CHUNK_SHIFT == 1 << INDEX_BITS);

/// Names a block: chunk number and unit offset, packed as described in the
/// module docs. `BlockIdx(0)` is never handed out (unit 0 of chunk 0 is
/// reserved), so 0 can mean "none" in free lists and tree slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct BlockIdx(pub(crate) u32);

impl BlockIdx {
    #[inline]
    fn chunk(self) -> usize {
        (self.0 >> CHUNK_SHIFT) as usize
    }

    #[inline]
    fn offset_bytes(self) -> usize {
        (self.0 as usize & (CHUNK_UNITS - 1)) * UNIT
    }

    /// The index `units` further on in the same chunk: a block carved out of
    /// a region (see [`Arena::alloc_region`]), `units` below its end.
    #[inline]
    pub(crate) fn plus(self, units: usize) -> BlockIdx {
        BlockIdx(self.0 + units as u32)
    }
}

/// The arena. See the module docs.
///
/// # Invariants
/// 1. `chunks[i]` was allocated with `chunk_layout(i)` (zeroed) and is freed
///    only in `Drop`/`reset`; chunks never move.
/// 2. Units `[0, used)` of the last chunk and all units of earlier chunks are
///    either inside a live block or inside a block on a free list; units
///    `[used, capacity)` of the last chunk are untouched.
/// 3. Every index on `free[n]` names a free block of exactly `n` units, and its
///    first 4 bytes hold the next index of that list (0 ends it). `free` is
///    empty exactly while there are no chunks, then holds a head for every
///    size `0..=MAX_BLOCK_UNITS`.
/// 4. Unit 0 of chunk 0 belongs to no block.
/// 5. `free_units` is the sum of the sizes of the blocks on the free lists
///    (only statistics and compaction's plans rely on it, not memory safety).
pub(crate) struct Arena {
    chunks: Vec<NonNull<u8>>,
    /// Units in each chunk.
    chunk_units: Vec<u32>,
    /// Units handed out (to blocks or free lists) in the last chunk.
    used: usize,
    /// Heads of the free lists, indexed by block size in units; allocated
    /// with the first chunk, so that an empty map allocates nothing.
    free: Vec<u32>,
    /// Units in the blocks on all free lists: kept as they change, because
    /// walking the lists misses the cache at every block (compaction asks
    /// for the live units of an arena holding millions of free blocks).
    free_units: usize,
    /// Bytes of all chunks together.
    chunk_bytes: usize,
    /// Whether blocks avoid crossing cache lines (see [`Arena::line_aware`]).
    line_aware: bool,
    /// Units still expected (see [`Arena::plan`]); 0 when growing freely.
    planned: usize,
    /// Chunks the arena may hold: [`MAX_CHUNKS`], fewer in tests that reach
    /// the limit.
    max_chunks: usize,
    /// Divides the arena's size to give the next chunk's when growing freely:
    /// 8 normally, 64 after a plan ran out (the plan was a close fit, so what
    /// follows is likely small).
    growth_divisor: usize,
}

// SAFETY: the arena exclusively owns its chunks; it is plain memory with no
// thread affinity. Whether the *contents* may cross threads is decided by the
// tree that stores values in it (see `RawArt`).
unsafe impl Send for Arena {}
// SAFETY: `&Arena` only gives out raw pointers; reading through them is
// governed by the tree's own `Sync` bound.
unsafe impl Sync for Arena {}

impl Arena {
    pub(crate) fn new() -> Arena {
        Arena {
            chunks: Vec::new(),
            chunk_units: Vec::new(),
            used: 0,
            free: Vec::new(),
            free_units: 0,
            chunk_bytes: 0,
            line_aware: false,
            planned: 0,
            max_chunks: MAX_CHUNKS,
            growth_divisor: 8,
        }
    }

    /// Lowers the number of chunks the arena may hold, so that a test can
    /// reach the limit.
    #[cfg(test)]
    pub(crate) fn limit_chunks(&mut self, chunks: usize) {
        self.max_chunks = chunks.min(MAX_CHUNKS);
    }

    /// Says that about `units` units will be allocated next, so that chunks
    /// are sized to hold them (full chunks, then the rest) instead of growing
    /// by eighths and leaving a tail unused.
    pub(crate) fn plan(&mut self, units: usize) {
        // Each chunk may end in a tail too short for the block that follows
        // (a small plan, whose tails are short, gets a share of itself: a
        // sixty-fourth; an eighth made small maps grow by compaction).
        let chunks = units / CHUNK_UNITS + 8;
        self.planned = units + (chunks * LINE_UNITS * 4).min(units / 64);
        self.growth_divisor = 64;
    }

    /// Units in blocks that are handed out (neither free nor untouched).
    pub(crate) fn live_units(&self) -> usize {
        self.total_units() - self.free_units() - self.untouched_units()
    }

    /// An arena whose blocks never cross a 64-byte cache line needlessly: a
    /// block of up to 64 bytes lies within one line, a larger one starts at a
    /// line. Reading a node then costs one cache miss, not two in a row (the
    /// second would be for the child reference at the node's end). The gaps
    /// this leaves go to the free lists, where smaller blocks reuse them.
    pub(crate) fn line_aware() -> Arena {
        let mut arena = Arena::new();
        arena.line_aware = true;
        arena
    }

    /// Units for the next chunk, which must hold a block of `need` units.
    ///
    /// Growing freely: an eighth of what the arena holds, so that at most
    /// about an eighth lies unused at the end of a small arena, up to a full
    /// 2 MiB chunk. Following a [`Arena::plan`]: chunks that cover the plan
    /// closely, then slow growth.
    ///
    /// Sizes are rounded to a quarter of their power of two (as 48, 56, 64,
    /// 80 KiB): allocators serve such sizes exactly (jemalloc's large size
    /// classes are these), so what `heap_bytes` reports is what is held.
    fn next_chunk_units(&mut self, need: usize) -> usize {
        let class_step = |units: usize| (units.next_power_of_two() / 4).max(LINE_UNITS);
        // Chunk 0 reserves its first unit, and in a line-aware arena a block
        // over a line then starts at the next line: so that a new chunk
        // always fits the block that asked for it (`has_room_for`).
        let need = need
            + if self.chunks.is_empty() && self.line_aware {
                LINE_UNITS
            } else {
                1
            };
        if self.planned >= need.max(FIRST_CHUNK_UNITS) {
            // The largest size class within the plan: each step leaves at
            // most a fifth of it, so a few chunks cover it closely.
            let want = self.planned.min(CHUNK_UNITS);
            let step = class_step(want + 1) / 2;
            let units = (want / step * step).max(need.next_multiple_of(LINE_UNITS));
            self.planned = self.planned.saturating_sub(units);
            return units;
        }
        // The plan's small rest, or free growth.
        let units = if self.planned > 0 {
            self.planned.max(need)
        } else {
            (self.chunk_bytes / UNIT / self.growth_divisor)
                .max(need)
                .max(FIRST_CHUNK_UNITS)
        };
        self.planned = 0;
        units.next_multiple_of(class_step(units)).min(CHUNK_UNITS)
    }

    fn chunk_layout(units: usize) -> Layout {
        let size = units * UNIT;
        // Full-size chunks are aligned to their size so that each can be one
        // huge page.
        let align = if size == CHUNK_UNITS * UNIT {
            size
        } else {
            LINE_UNITS * UNIT
        };
        // Cannot fail: sizes of at most 2 MiB, power-of-two alignments.
        Layout::from_size_align(size, align).expect("chunk layout")
    }

    /// Whether `blocks` more allocations of up to [`MAX_BLOCK_UNITS`] each are
    /// certain to succeed without exhausting the index space. Checked before
    /// a tree operation starts so that it never fails half-way.
    pub(crate) fn has_room_for(&self, blocks: usize) -> bool {
        // A new chunk always fits the block that asked for it.
        self.untouched_units() >= blocks * MAX_BLOCK_UNITS
            || self.chunks.len() + blocks <= self.max_chunks
    }

    /// Allocates a block of `units` units (1..=[`MAX_BLOCK_UNITS`]).
    ///
    /// The block's contents are unspecified but initialized bytes. Panics if the
    /// index space is exhausted (callers check [`Arena::has_room_for`] first);
    /// aborts through `handle_alloc_error` if the system allocator fails, as the
    /// standard collections do.
    #[inline]
    pub(crate) fn alloc(&mut self, units: usize) -> BlockIdx {
        debug_assert!((1..=MAX_BLOCK_UNITS).contains(&units));
        // No list yet means no chunk yet: `bump` makes the first.
        let head = self.free.get(units).copied().unwrap_or(0);
        if head != 0 {
            let idx = BlockIdx(head);
            // SAFETY: invariant 3: `head` names a free block whose first 4 bytes
            // hold the next index.
            self.free[units] = unsafe { self.ptr(idx).cast::<u32>().read_unaligned() };
            self.free_units -= units;
            return idx;
        }
        self.bump(units)
    }

    /// Like [`Arena::alloc`], but always from the untouched tail, never
    /// from a free list: successive calls return ascending indices (a new
    /// chunk's indices lie above the old ones'), so blocks allocated in key
    /// order lie in memory in key order.
    pub(crate) fn alloc_fresh(&mut self, units: usize) -> BlockIdx {
        debug_assert!((1..=MAX_BLOCK_UNITS).contains(&units));
        self.bump(units)
    }

    #[inline]
    fn bump(&mut self, units: usize) -> BlockIdx {
        loop {
            while self.untouched_units() < units {
                self.new_chunk(units);
            }
            let in_line = self.used % LINE_UNITS;
            if !self.line_aware
                || in_line == 0
                || (units <= LINE_UNITS && in_line + units <= LINE_UNITS)
            {
                break;
            }
            // Skip to the next line; the gap lies within one line, so it is a
            // valid free block for smaller sizes.
            let gap = LINE_UNITS - in_line;
            let idx = BlockIdx((((self.chunks.len() - 1) << CHUNK_SHIFT) | self.used) as u32);
            self.used += gap;
            // SAFETY: the gap was never handed out (invariant 2).
            unsafe { self.free(idx, gap) };
        }
        let chunk = self.chunks.len() - 1;
        let idx = BlockIdx(((chunk << CHUNK_SHIFT) | self.used) as u32);
        self.used += units;
        idx
    }

    /// Hands out [`REGION_UNITS`] fresh units whose first byte lies at a
    /// multiple of the region size in memory, for the caller to carve into
    /// blocks (`idx.plus(offset)`): a group of blocks a reader can ask the
    /// CPU to load all at once. Every unit of it must end up in a live
    /// block or be passed to [`Arena::free`] (within one line, in a
    /// line-aware arena, if shorter than a line).
    pub(crate) fn alloc_region(&mut self) -> BlockIdx {
        const REGION_BYTES: usize = REGION_UNITS * UNIT;
        loop {
            if let Some(&chunk) = self.chunks.last() {
                // Chunks are only line-aligned: align the address, not the
                // offset.
                let at = chunk.as_ptr() as usize + self.used * UNIT;
                let gap = (at.next_multiple_of(REGION_BYTES) - at) / UNIT;
                if self.untouched_units() >= gap + REGION_UNITS {
                    self.free_untouched(gap);
                    return self.bump(REGION_UNITS);
                }
            }
            // Room for the region whatever the new chunk's alignment.
            self.new_chunk(2 * REGION_UNITS);
        }
    }

    /// Frees the next `units` untouched units of the last chunk, in pieces
    /// that keep the line rule: the rest of the current line, then the rest.
    fn free_untouched(&mut self, mut units: usize) {
        let last = self.chunks.len() - 1;
        while units > 0 {
            let in_line = self.used % LINE_UNITS;
            let piece = if self.line_aware && in_line != 0 {
                units.min(LINE_UNITS - in_line)
            } else {
                units.min(MAX_BLOCK_UNITS)
            };
            let idx = BlockIdx(((last << CHUNK_SHIFT) | self.used) as u32);
            self.used += piece;
            units -= piece;
            // SAFETY: the units were never handed out (invariant 2); the piece
            // is 1..=MAX_BLOCK_UNITS units long.
            unsafe { self.free(idx, piece) };
        }
    }

    #[cold]
    fn new_chunk(&mut self, need: usize) {
        // Whatever is left of the current chunk goes to the free lists, so no
        // unit is lost.
        if self.chunks.is_empty() {
            self.free = vec![0; MAX_BLOCK_UNITS + 1];
        } else {
            self.free_untouched(self.untouched_units());
        }
        let i = self.chunks.len();
        assert!(
            i < self.max_chunks,
            "memkv arena exhausted: the tree holds 16 GiB"
        );
        let units = self.next_chunk_units(need);
        let layout = Self::chunk_layout(units);
        // SAFETY: the layout has non-zero size.
        let ptr = unsafe { alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(ptr) else {
            alloc::handle_alloc_error(layout)
        };
        if layout.size() == CHUNK_UNITS * UNIT {
            // Before the first write: pages touched before the advice stay small.
            advise_huge_pages(ptr, layout.size());
        }
        // SAFETY: a fresh allocation of `layout.size()` bytes. Zeroed so that
        // every byte of the arena is initialized from the start.
        unsafe { ptr.as_ptr().write_bytes(0, layout.size()) };
        self.chunks.push(ptr);
        self.chunk_units.push(units as u32);
        self.chunk_bytes += layout.size();
        // Unit 0 of chunk 0 stays unused so that index 0 means "none".
        self.used = usize::from(i == 0);
    }

    /// Returns a block to its free list.
    ///
    /// # Safety
    /// `idx` must name a live block of exactly `units` units from this arena,
    /// or `units` units never handed out (from the untouched tail or a
    /// region), and nothing may use them afterwards. In a line-aware arena
    /// a piece of up to 8 units must lie within one line, a longer one start
    /// at a line: the free lists hand pieces out again as they are.
    #[inline]
    pub(crate) unsafe fn free(&mut self, idx: BlockIdx, units: usize) {
        debug_assert!((1..=MAX_BLOCK_UNITS).contains(&units));
        // SAFETY: the caller passes a live block of ours; a block is at least
        // one unit (8 bytes), room for the 4-byte link.
        unsafe {
            self.ptr(idx)
                .cast::<u32>()
                .write_unaligned(self.free[units])
        };
        self.free[units] = idx.0;
        self.free_units += units;
    }

    /// The address of a block.
    ///
    /// # Safety
    /// `idx` must name units of this arena: returned by `alloc`, or carved
    /// from a region or the untouched tail (the block may have been freed
    /// since; the address is still inside a chunk), and the arena not
    /// [`reset`](Self::reset) since, which gives every chunk back.
    #[inline(always)]
    pub(crate) unsafe fn ptr(&self, idx: BlockIdx) -> *mut u8 {
        debug_assert!(idx.chunk() < self.chunks.len());
        // SAFETY: indices come from `alloc`, so the chunk exists (invariant 1)
        // and the offset is inside it.
        unsafe {
            self.chunks
                .get_unchecked(idx.chunk())
                .as_ptr()
                .add(idx.offset_bytes())
        }
    }

    /// Frees every chunk; all indices become invalid.
    pub(crate) fn reset(&mut self) {
        for (chunk, units) in self.chunks.drain(..).zip(self.chunk_units.drain(..)) {
            // SAFETY: invariant 1: allocated with exactly this layout.
            unsafe { alloc::dealloc(chunk.as_ptr(), Self::chunk_layout(units as usize)) };
        }
        self.chunks = Vec::new();
        self.chunk_units = Vec::new();
        self.used = 0;
        self.free = Vec::new();
        self.free_units = 0;
        self.chunk_bytes = 0;
        // Grown again from nothing, as a new arena: slow growth after a
        // plan would take hundreds of small chunks to reach full ones.
        self.planned = 0;
        self.growth_divisor = 8;
    }

    /// Heap bytes held: chunks, the chunk table and the free-list heads.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.chunk_bytes
            + self.chunks.capacity() * size_of::<NonNull<u8>>()
            + self.chunk_units.capacity() * size_of::<u32>()
            + self.free.capacity() * size_of::<u32>()
    }

    /// Units available to blocks: all chunk units but the reserved unit 0.
    pub(crate) fn total_units(&self) -> usize {
        self.chunk_units.iter().map(|&u| u as usize).sum::<usize>()
            - usize::from(!self.chunks.is_empty())
    }

    /// Units never handed out (the tail of the last chunk).
    pub(crate) fn untouched_units(&self) -> usize {
        self.chunk_units
            .last()
            .map_or(0, |&u| u as usize - self.used)
    }

    /// Units on the free lists.
    pub(crate) fn free_units(&self) -> usize {
        self.free_units
    }

    /// Units on the free lists, counted by walking every list: for checks
    /// of [`Arena::free_units`] and of the lists themselves.
    pub(crate) fn walk_free_units(&self) -> usize {
        let mut total = 0;
        for (units, &head) in self.free.iter().enumerate() {
            let mut next = head;
            while next != 0 {
                total += units;
                // SAFETY: invariant 3.
                next = unsafe { self.ptr(BlockIdx(next)).cast::<u32>().read_unaligned() };
            }
        }
        total
    }
}

/// Asks the kernel to back a full-size chunk with a transparent huge page.
///
/// Lookups touch a handful of nodes scattered over hundreds of megabytes; with
/// 4 KiB pages nearly every one of them also misses the TLB. With 2 MiB pages
/// the whole arena of a 7-million-key map fits the TLB. This is advice only:
/// where the kernel declines (THP disabled), nothing changes.
/// Not under Miri, which cannot call `madvise`: advice changes no contents,
/// so the checked code is the same without it.
#[cfg(all(target_os = "linux", not(miri)))]
fn advise_huge_pages(chunk: NonNull<u8>, len: usize) {
    // SAFETY: the range is a live allocation of ours, aligned to 2 MiB;
    // MADV_HUGEPAGE changes no contents and cannot invalidate it.
    unsafe {
        libc::madvise(chunk.as_ptr().cast(), len, libc::MADV_HUGEPAGE);
    }
}

#[cfg(any(not(target_os = "linux"), miri))]
fn advise_huge_pages(_chunk: NonNull<u8>, _len: usize) {}

impl Drop for Arena {
    fn drop(&mut self) {
        self.reset();
    }
}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena")
            .field("chunks", &self.chunks.len())
            .field("chunk_bytes", &self.chunk_bytes)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `has_room_for` promises that a new chunk fits the block that asks
    /// for it, also the first chunk of a line-aware arena, whose reserved
    /// unit 0 pushes a block over a line to unit 8 (a review's finding: a
    /// first block of 57-63 units needed a second chunk).
    #[test]
    fn the_first_chunk_fits_its_first_block() {
        for units in 1..=MAX_BLOCK_UNITS {
            for mut arena in [Arena::new(), Arena::line_aware()] {
                arena.limit_chunks(1);
                assert!(arena.has_room_for(1));
                let idx = arena.alloc(units);
                assert_eq!(idx.chunk(), 0, "{units} units");
            }
        }
    }

    #[test]
    fn blocks_do_not_overlap_and_are_reused_by_size() {
        let mut arena = Arena::new();
        let mut blocks = Vec::new();
        for i in 0..10_000usize {
            let units = 1 + i % 40;
            let idx = arena.alloc(units);
            assert_ne!(idx.0, 0, "index 0 is reserved");
            // SAFETY: a fresh block of `units` units.
            unsafe { std::ptr::write_bytes(arena.ptr(idx), (i % 251) as u8, units * UNIT) };
            blocks.push((idx, units, (i % 251) as u8));
        }
        for &(idx, units, byte) in &blocks {
            // SAFETY: live blocks written above.
            let bytes = unsafe { std::slice::from_raw_parts(arena.ptr(idx), units * UNIT) };
            assert!(
                bytes.iter().all(|&b| b == byte),
                "a block was overwritten by another"
            );
        }
        let accounted = blocks.iter().map(|b| b.1).sum::<usize>()
            + arena.free_units()
            + arena.untouched_units();
        assert_eq!(accounted, arena.total_units());
        assert_eq!(arena.free_units(), arena.walk_free_units());
        let (idx, units, _) = blocks[123];
        // SAFETY: live block of that size, not used again.
        unsafe { arena.free(idx, units) };
        assert_eq!(arena.free_units(), arena.walk_free_units());
        assert_eq!(
            arena.alloc(units),
            idx,
            "a freed block is reused by the next allocation of its size"
        );
    }

    #[test]
    fn regions_are_aligned_in_memory_and_their_gaps_are_free() {
        let mut arena = Arena::line_aware();
        let mut live = 0;
        for i in 0..200usize {
            // Blocks of odd sizes in between leave the next region unaligned.
            let units = 1 + i % 7;
            arena.alloc(units);
            live += units;
            let region = arena.alloc_region();
            // SAFETY: a region just handed out.
            let at = unsafe { arena.ptr(region) } as usize;
            assert_eq!(at % (REGION_UNITS * UNIT), 0, "region {i} at {at:#x}");
            // Keep one unit at its end, free the rest in line pieces.
            for line in 0..REGION_UNITS / LINE_UNITS - 1 {
                // SAFETY: units of the region, in no block.
                unsafe { arena.free(region.plus(line * LINE_UNITS), LINE_UNITS) };
            }
            // SAFETY: as above; the last line but its last unit.
            unsafe { arena.free(region.plus(REGION_UNITS - LINE_UNITS), LINE_UNITS - 1) };
            live += 1;
        }
        assert_eq!(arena.free_units(), arena.walk_free_units());
        assert_eq!(
            live + arena.free_units() + arena.untouched_units(),
            arena.total_units(),
            "every unit is live, free or untouched"
        );
    }

    /// `has_room_for` promises exactly what a new chunk per block, or the
    /// untouched tail once no chunk may be added, can deliver.
    #[test]
    fn room_is_promised_where_it_exists() {
        let limit = 6;
        let mut arena = Arena::new();
        arena.limit_chunks(limit);
        arena.alloc(1);
        loop {
            // With nothing untouched, only new chunks count.
            while arena.untouched_units() > 0 {
                arena.alloc(1);
            }
            let spare = limit - arena.chunks.len();
            assert!(arena.has_room_for(spare), "{} chunks", arena.chunks.len());
            assert!(!arena.has_room_for(spare + 1));
            if spare == 0 {
                break;
            }
            arena.alloc(1);
        }

        // At the limit only the untouched tail counts, block by block.
        let mut arena = Arena::new();
        arena.plan(4 * MAX_BLOCK_UNITS);
        arena.limit_chunks(1);
        arena.alloc(1);
        assert!(arena.untouched_units() > 3 * MAX_BLOCK_UNITS);
        while arena.untouched_units() > 0 {
            for blocks in 1..=3 {
                assert_eq!(
                    arena.has_room_for(blocks),
                    arena.untouched_units() >= blocks * MAX_BLOCK_UNITS,
                    "{blocks} blocks, {} units untouched",
                    arena.untouched_units()
                );
            }
            arena.alloc(1);
        }
    }

    /// In a line-aware arena a block that fits in a line lies within one,
    /// a larger one starts at a line, and blocks skip ahead only when the
    /// current line cannot take them.
    #[test]
    fn line_aware_blocks_keep_to_their_lines() {
        let line = LINE_UNITS * UNIT;
        let mut arena = Arena::line_aware();
        // Unit 0 is reserved: 1..4 and 4..7 share the first line, 8..12
        // starts the next.
        let a = arena.alloc(3);
        assert_eq!(arena.alloc(3), a.plus(3));
        assert_eq!(arena.alloc(4), a.plus(7));
        let mut live = Vec::new();
        for i in 0..20_000usize {
            let units = 1 + (i * 7) % 40;
            let idx = arena.alloc(units);
            // SAFETY: a block just handed out.
            let at = unsafe { arena.ptr(idx) } as usize;
            if units <= LINE_UNITS {
                assert_eq!(
                    at / line,
                    (at + units * UNIT - 1) / line,
                    "{units} units at {at:#x}"
                );
            } else {
                assert_eq!(at % line, 0, "{units} units at {at:#x}");
            }
            live.push((idx, units));
            if i % 3 == 0 {
                let (idx, units) = live.swap_remove(i % live.len());
                // SAFETY: a live block of that size, not used again.
                unsafe { arena.free(idx, units) };
            }
        }
    }

    /// A plan is covered by few chunks with little left over, the full ones
    /// aligned to their size (one huge page each).
    #[test]
    fn planned_chunks_cover_the_plan_closely() {
        let planned = 3 * CHUNK_UNITS + 12_345;
        let mut arena = Arena::new();
        arena.plan(planned);
        let mut live = 0;
        while live < planned {
            arena.alloc(MAX_BLOCK_UNITS);
            live += MAX_BLOCK_UNITS;
        }
        assert!(arena.chunks.len() <= 6, "{} chunks", arena.chunks.len());
        assert!(
            arena.total_units() <= planned + planned / 256,
            "{} units for a plan of {planned}",
            arena.total_units()
        );
        let full = CHUNK_UNITS * UNIT;
        for (chunk, &units) in arena.chunks.iter().zip(&arena.chunk_units) {
            if units as usize == CHUNK_UNITS {
                assert_eq!(chunk.as_ptr() as usize % full, 0, "a full chunk is aligned");
            }
        }
        assert_eq!(arena.chunk_units[..3], [CHUNK_UNITS as u32; 3]);
    }

    /// Unplanned growth adds an eighth of what the arena holds at a time,
    /// so the number of chunks grows with the logarithm of its size (51 to
    /// reach 8 MiB; chunks sized to the block that asks would take some
    /// 3,000).
    #[test]
    fn growth_takes_few_chunks() {
        let mut arena = Arena::new();
        while arena.total_units() < 4 * CHUNK_UNITS {
            arena.alloc(MAX_BLOCK_UNITS);
        }
        assert!(arena.chunks.len() <= 64, "{} chunks", arena.chunks.len());
    }

    /// A reset arena grows again as a new one does: it kept the slow
    /// growth that follows a plan, and took hundreds of chunks to reach
    /// full ones (2026-11-27, a review).
    #[test]
    fn a_reset_arena_grows_as_a_new_one() {
        let mut arena = Arena::new();
        arena.plan(3 * LINE_UNITS);
        arena.alloc(2);
        arena.reset();
        while arena.total_units() < 4 * CHUNK_UNITS {
            arena.alloc(MAX_BLOCK_UNITS);
        }
        assert!(arena.chunks.len() <= 64, "{} chunks", arena.chunks.len());
    }

    #[test]
    fn small_arenas_stay_small() {
        let mut arena = Arena::new();
        arena.alloc(2);
        assert!(
            arena.heap_bytes() < 4096,
            "{} bytes for one block",
            arena.heap_bytes()
        );
    }
}
