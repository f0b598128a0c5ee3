//! [`ShardedArtMemtable`]: [`ArtMemtable`](super::ArtMemtable)'s tree and
//! arena, split by a hash of the user key into shards, each behind its own
//! lock.
//!
//! ```text
//!  user key ──hash──► shard i of n ──► RwLock<FastArt<Ref> + arena>
//!  cursor:  n shard walks ──► a heap of their next keys ──► one ordered stream
//! ```
//!
//! # Why shards
//! `ArtMemtable` keeps one lock, and one lock between two busy threads
//! passes about 2 M operations a second here however the two split them
//! (its module docs have the runs). A thread inserting flat out and one
//! reading then wait for each other. Shards give each of them its own lock
//! most of the time: with `n` shards, a lookup meets the writer's shard one
//! time in `n`. The lock words sit on cache lines of their own, so threads
//! on different shards do not pass lines back and forth either.
//!
//! # What it costs
//! Order is lost across shards, so every ordered read merges them: a range
//! or a flush seeks once in each of the `n` trees and keeps a heap of the
//! `n` next keys. Point lookups and inserts pay a hash of the key (a few
//! nanoseconds against a descent's cache misses). Each shard's arena has a
//! partly filled last chunk, up to 256 KiB: `n` of them where a memtable
//! has one. The shards' first chunks are `n` times smaller, so a small
//! memtable does not hold `n` times more.
//!
//! # Invariant the merge relies on
//! A user key lives in exactly one shard, the one its hash names, for the
//! memtable's life and in its frozen form. So the shards' streams never
//! share a key, and each holds all versions of its keys: merging by user
//! key alone gives (user key ascending, sequence number descending).

use std::cmp::Ordering as KeyOrder;
use std::fmt;
use std::hash::BuildHasher;
use std::ops::RangeBounds;

use super::arena::FIRST_CHUNK;
use super::art::{ArtMemtable, Batches, FrozenArtCursor, Tables};
use super::{EntryCursor, EntryRef, Lookup, Memtable, MemtableRead, OwnedRange, ValueKind};

/// Entries a cursor copies out of each shard in its first batch; later
/// batches double, as the scan proves long. A short range then copies
/// `n × 16` entries, not `n` full batches.
const FIRST_BATCH: usize = 16;

/// Which of `shards` holds `key`: a fixed hash of all of the key but its
/// last byte, the same for a memtable and its frozen form, mapped onto
/// `0..shards` by a multiply (no modulo).
///
/// Leaving the last byte out keeps keys that differ only there together:
/// runs of counter keys (big-endian ids, timestamps) then fill one shard's
/// 256-way node instead of sixteen shards' 16-way ones, and a walk takes
/// them from one shard in a row: 3 M counter keys load 1.6× and flush 2×
/// faster so, in 9% less memory. Random keys see no difference (DESIGN,
/// "The sharded memtable").
#[inline]
fn shard_of(key: &[u8], shards: usize) -> usize {
    if shards == 1 {
        return 0;
    }
    let head = &key[..key.len().saturating_sub(1)];
    let hash = foldhash::fast::FixedState::with_seed(0x6d65_6d6b_765f_7368).hash_one(head);
    ((u128::from(hash) * shards as u128) >> 64) as usize
}

/// One shard: an [`ArtMemtable`] (its tables behind its lock, and the
/// figures read without it), aligned to 128 bytes (two cache lines, as the
/// adjacent-line prefetcher fetches them) so that no two shards' locks
/// share a line.
#[derive(Debug)]
#[repr(align(128))]
struct Shard(ArtMemtable);

/// An LSM memtable on [`FastArt`](crate::FastArt), like
/// [`ArtMemtable`](super::ArtMemtable), split into shards by a hash of the
/// user key, each with its own lock: threads writing and reading different
/// keys seldom wait for each other, and writers on different shards run in
/// parallel.
///
/// Take it over `ArtMemtable` when one thread writes flat out while others
/// look keys up; take `ArtMemtable` when ordered reads dominate. Every range
/// (and the flush) merges the shards: it seeks in each of the `n` trees and
/// keeps a heap of their next keys, so a short range costs about `n` seeks
/// (see the [module docs](crate::memtable) for measurements).
/// The hash leaves out a key's last byte, so keys that differ only there
/// share a shard: runs of counter keys (big-endian ids, timestamps) stay
/// dense in one tree. The hash is fixed, so keys chosen to collide only put
/// the memtable back to one lock's speed.
///
/// Write batches are inserted one by one: a batch spreads over the shards,
/// and looking each shard's few keys up side by side first, as
/// `ArtMemtable` does with a whole batch, made batched loads through the
/// [`WritePath`](super::WritePath) slower (3.92 M entries/s against 4.81 M
/// without, medians of three harness runs each at 3 M entries; batches
/// straight into the memtable gained 8%).
///
/// [`approximate_memory_usage`](MemtableRead::approximate_memory_usage) is
/// exactly the heap bytes held: each shard's tree and arena, and the shards
/// themselves (512 bytes each on 64-bit targets: 8 KiB for the default 16).
///
/// ```
/// use memkv::memtable::{EntryCursor, Lookup, Memtable, MemtableRead, ShardedArtMemtable, ValueKind, MAX_SEQNO};
///
/// let mem = ShardedArtMemtable::with_shards(4);
/// for (seqno, key) in ["pear", "fig", "apple", "kiwi"].into_iter().enumerate() {
///     mem.insert(key, seqno as u64 + 1, ValueKind::Value, b"v");
/// }
/// assert_eq!(mem.get(b"fig", MAX_SEQNO), Lookup::Found(b"v".to_vec()));
/// // Ordered across shards.
/// let keys: Vec<Vec<u8>> = mem.iter(MAX_SEQNO).collect_entries().into_iter().map(|e| e.user_key).collect();
/// assert_eq!(keys, [b"apple".to_vec(), b"fig".to_vec(), b"kiwi".to_vec(), b"pear".to_vec()]);
/// ```
pub struct ShardedArtMemtable {
    shards: Box<[Shard]>,
}

impl ShardedArtMemtable {
    /// Shards of [`ShardedArtMemtable::default`].
    pub const DEFAULT_SHARDS: usize = 16;

    /// The most shards [`ShardedArtMemtable::with_shards`] makes.
    pub const MAX_SHARDS: usize = 1024;

    /// An empty memtable of `shards` shards, clamped to
    /// `1..=`[`MAX_SHARDS`](Self::MAX_SHARDS).
    ///
    /// ```
    /// use memkv::memtable::ShardedArtMemtable;
    ///
    /// assert_eq!(ShardedArtMemtable::with_shards(8).shards(), 8);
    /// assert_eq!(ShardedArtMemtable::with_shards(0).shards(), 1);
    /// assert_eq!(ShardedArtMemtable::with_shards(usize::MAX).shards(), ShardedArtMemtable::MAX_SHARDS);
    /// ```
    pub fn with_shards(shards: usize) -> Self {
        let n = shards.clamp(1, Self::MAX_SHARDS);
        // The shards' first arena chunks together hold what one memtable's
        // would (4 KiB), so a small memtable does not hold `n` times more.
        let first_chunk = FIRST_CHUNK / n;
        ShardedArtMemtable {
            shards: (0..n)
                .map(|_| Shard(ArtMemtable::with_first_chunk(first_chunk)))
                .collect(),
        }
    }

    /// The number of shards.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    #[inline]
    fn shard(&self, key: &[u8]) -> &Shard {
        &self.shards[shard_of(key, self.shards.len())]
    }

    /// Heap bytes of the shards themselves.
    fn shards_bytes(&self) -> usize {
        std::mem::size_of_val::<[Shard]>(&self.shards)
    }
}

impl Default for ShardedArtMemtable {
    /// [`DEFAULT_SHARDS`](Self::DEFAULT_SHARDS) shards.
    fn default() -> Self {
        ShardedArtMemtable::with_shards(Self::DEFAULT_SHARDS)
    }
}

// By hand: a derived `Debug` would print every shard's tree and arena.
impl fmt::Debug for ShardedArtMemtable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedArtMemtable")
            .field("shards", &self.shards())
            .field("len", &self.len())
            .field("memory", &self.approximate_memory_usage())
            .finish()
    }
}

impl MemtableRead for ShardedArtMemtable {
    type Cursor<'a> = ShardedArtCursor<'a>;

    #[inline]
    fn get_with<R>(
        &self,
        user_key: impl AsRef<[u8]>,
        snapshot: u64,
        f: impl FnOnce(Lookup<&[u8]>) -> R,
    ) -> R {
        let user_key = user_key.as_ref();
        self.shard(user_key).0.get_with(user_key, snapshot, f)
    }

    fn range<'a>(&'a self, range: impl RangeBounds<[u8]>, snapshot: u64) -> ShardedArtCursor<'a> {
        let range = OwnedRange::new(&range);
        let walks = self.shards.iter().map(|shard| ShardWalk {
            memtable: self,
            shard,
            batches: Batches::new(range.clone(), snapshot, FIRST_BATCH),
        });
        ShardedArtCursor {
            merge: Merge::new(walks.collect()),
        }
    }

    fn len(&self) -> usize {
        (self.shards.iter()).map(|s| s.0.len()).sum()
    }

    fn approximate_memory_usage(&self) -> usize {
        let held: usize = (self.shards.iter())
            .map(|s| s.0.approximate_memory_usage())
            .sum();
        held + self.shards_bytes()
    }
}

impl Memtable for ShardedArtMemtable {
    type Frozen = FrozenShardedArtMemtable;

    /// As [`ArtMemtable`]'s: each shard is one.
    fn fits(user_key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> bool {
        ArtMemtable::fits(user_key, value)
    }

    fn insert(
        &self,
        user_key: impl AsRef<[u8]>,
        seqno: u64,
        kind: ValueKind,
        value: impl AsRef<[u8]>,
    ) {
        let user_key = user_key.as_ref();
        self.shard(user_key).0.insert(user_key, seqno, kind, value);
    }

    fn freeze(self) -> FrozenShardedArtMemtable {
        let shards: Box<[Tables]> = (self.shards.into_vec().into_iter())
            .map(|s| s.0.into_tables())
            .collect();
        FrozenShardedArtMemtable {
            len: shards.iter().map(Tables::len).sum(),
            memory: shards.iter().map(Tables::memory_usage).sum::<usize>()
                + std::mem::size_of_val::<[Tables]>(&shards),
            shards,
        }
    }
}

/// A frozen [`ShardedArtMemtable`]: the shards' trees and arenas, read
/// without a lock.
pub struct FrozenShardedArtMemtable {
    shards: Box<[Tables]>,
    len: usize,
    memory: usize,
}

// By hand, as for the active memtable.
impl fmt::Debug for FrozenShardedArtMemtable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrozenShardedArtMemtable")
            .field("shards", &self.shards.len())
            .field("len", &self.len)
            .field("memory", &self.memory)
            .finish()
    }
}

impl MemtableRead for FrozenShardedArtMemtable {
    type Cursor<'a> = FrozenShardedArtCursor<'a>;

    #[inline]
    fn get_with<R>(
        &self,
        user_key: impl AsRef<[u8]>,
        snapshot: u64,
        f: impl FnOnce(Lookup<&[u8]>) -> R,
    ) -> R {
        let user_key = user_key.as_ref();
        f(self.shards[shard_of(user_key, self.shards.len())].get(user_key, snapshot))
    }

    fn range<'a>(
        &'a self,
        range: impl RangeBounds<[u8]>,
        snapshot: u64,
    ) -> FrozenShardedArtCursor<'a> {
        let bounds = (range.start_bound(), range.end_bound());
        // Each shard's walk competes for the cache with all the others.
        let all: usize = self.shards.iter().map(Tables::memory_usage).sum();
        let walks =
            (self.shards.iter()).map(|t| t.cursor(bounds, snapshot, all - t.memory_usage()));
        FrozenShardedArtCursor {
            merge: Merge::new(walks.collect()),
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn approximate_memory_usage(&self) -> usize {
        self.memory
    }
}

/// A cursor over an active [`ShardedArtMemtable`]: one walk per shard, each
/// copying batches of entries under its shard's read lock as
/// [`ArtCursor`](super::ArtCursor) does (16 entries first, doubling up to a
/// few hundred), merged into key order.
///
/// Entries inserted meanwhile with sequence numbers at most the cursor's
/// snapshot may or may not be seen, as with `ArtCursor`.
pub struct ShardedArtCursor<'a> {
    merge: Merge<ShardWalk<'a>>,
}

/// A cursor over a [`FrozenShardedArtMemtable`]: a
/// [`FrozenArtCursor`] per shard, merged into key order. Allocates nothing
/// per entry.
pub struct FrozenShardedArtCursor<'a> {
    merge: Merge<FrozenArtCursor<'a>>,
}

impl fmt::Debug for ShardedArtCursor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedArtCursor")
            .field("shards", &self.merge.walks.len())
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for FrozenShardedArtCursor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrozenShardedArtCursor")
            .field("shards", &self.merge.walks.len())
            .finish_non_exhaustive()
    }
}

impl EntryCursor for ShardedArtCursor<'_> {
    #[inline]
    fn next_entry(&mut self) -> Option<EntryRef<'_>> {
        self.merge.next_entry()
    }
}

impl EntryCursor for FrozenShardedArtCursor<'_> {
    #[inline]
    fn next_entry(&mut self) -> Option<EntryRef<'_>> {
        self.merge.next_entry()
    }
}

/// One shard's ordered stream of entries, whose next entry can be looked at
/// before it is taken.
trait Walk {
    /// Moves to the next entry (the first, on the first call).
    fn step(&mut self);

    /// The entry stepped to; `None` before the first step and at the end.
    fn peek(&self) -> Option<EntryRef<'_>>;
}

/// A walk over an active shard.
struct ShardWalk<'a> {
    memtable: &'a ShardedArtMemtable,
    shard: &'a Shard,
    batches: Batches,
}

impl Walk for ShardWalk<'_> {
    #[inline]
    fn step(&mut self) {
        // Before the first step the buffer is empty, and skipping in it
        // does nothing.
        self.batches.buf().skip();
        if self.batches.buf().is_drained() {
            // The other shards' trees and arenas, as last published.
            let alongside = (self.memtable.approximate_memory_usage())
                .saturating_sub(self.shard.0.approximate_memory_usage());
            self.batches.refill(self.shard.0.tables(), alongside);
        }
    }

    #[inline]
    fn peek(&self) -> Option<EntryRef<'_>> {
        self.batches.peek()
    }
}

impl Walk for FrozenArtCursor<'_> {
    #[inline]
    fn step(&mut self) {
        FrozenArtCursor::step(self);
    }

    #[inline]
    fn peek(&self) -> Option<EntryRef<'_>> {
        FrozenArtCursor::peek(self)
    }
}

/// Merges walks whose keys are disjoint (see the module's invariant) into
/// key order: a binary min-heap of the walks that have an entry, by their
/// next entry's user key.
struct Merge<W> {
    walks: Vec<W>,
    /// The walks not ended, as a min-heap by key: each with its next key's
    /// first sixteen bytes (big-endian, zero-padded), which decide most
    /// comparisons without reading the keys.
    heap: Vec<(u128, usize)>,
    started: bool,
}

/// The first sixteen bytes of `key` as a number that orders as they do
/// (sixteen, not eight: keys often open with a table or tenant id and
/// zeros); keys with equal prefixes (such as `a` and `a\0`) need their
/// bytes compared.
#[inline]
fn key_prefix(key: &[u8]) -> u128 {
    let mut bytes = [0u8; 16];
    let n = key.len().min(16);
    bytes[..n].copy_from_slice(&key[..n]);
    u128::from_be_bytes(bytes)
}

impl<W: Walk> Merge<W> {
    fn new(walks: Vec<W>) -> Self {
        Merge {
            heap: Vec::with_capacity(walks.len()),
            walks,
            started: false,
        }
    }

    /// The next key of walk `i`, if it has one.
    #[inline]
    fn key(&self, i: usize) -> Option<&[u8]> {
        self.walks[i].peek().map(|e| e.user_key)
    }

    /// Whether heap entry `a` sorts before heap entry `b`.
    #[inline]
    fn less(&self, a: (u128, usize), b: (u128, usize)) -> bool {
        match a.0.cmp(&b.0) {
            KeyOrder::Equal => self.key(a.1) < self.key(b.1),
            order => order == KeyOrder::Less,
        }
    }

    /// Restores the heap below `at`, whose walk's key may have grown.
    fn sift_down(&mut self, mut at: usize) {
        let n = self.heap.len();
        loop {
            let left = 2 * at + 1;
            if left >= n {
                return;
            }
            let right = left + 1;
            let child = if right < n && self.less(self.heap[right], self.heap[left]) {
                right
            } else {
                left
            };
            if !self.less(self.heap[child], self.heap[at]) {
                return;
            }
            self.heap.swap(at, child);
            at = child;
        }
    }

    #[inline]
    fn next_entry(&mut self) -> Option<EntryRef<'_>> {
        if !self.started {
            self.started = true;
            for w in &mut self.walks {
                w.step();
            }
            self.heap = (0..self.walks.len())
                .filter_map(|i| Some((key_prefix(self.key(i)?), i)))
                .collect();
            for at in (0..self.heap.len() / 2).rev() {
                self.sift_down(at);
            }
        } else if let Some(&(_, top)) = self.heap.first() {
            // Older versions of the same key come next from the same walk,
            // and stay on top: no other walk has the key.
            self.walks[top].step();
            match self.key(top).map(key_prefix) {
                Some(prefix) => self.heap[0].0 = prefix,
                None => {
                    self.heap.swap_remove(0);
                }
            }
            self.sift_down(0);
        }
        let &(_, top) = self.heap.first()?;
        self.walks[top].peek()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_spread_over_every_shard_and_stay_put() {
        // The last byte is left out of the hash: the same for every key here.
        let keys: Vec<Vec<u8>> = (0u32..4000)
            .map(|i| [&i.to_be_bytes()[..], b"/"].concat())
            .collect();
        for shards in [1, 2, 3, 16, 100] {
            let mut counts = vec![0usize; shards];
            for k in &keys {
                let s = shard_of(k, shards);
                assert_eq!(s, shard_of(k, shards), "the same shard every time");
                counts[s] += 1;
            }
            let fair = keys.len() / shards;
            assert!(
                counts.iter().all(|&c| c > fair / 2 && c < fair * 2),
                "{shards} shards: {counts:?}"
            );
        }
    }

    /// Keys that differ only in their last byte share a shard, so a run of
    /// counter keys fills one shard's node; the runs still spread.
    #[test]
    fn keys_differing_only_in_their_last_byte_share_a_shard() {
        let shards = 16;
        let mut used = vec![false; shards];
        for run in 0u64..64 {
            let first = shard_of(&(run << 8).to_be_bytes(), shards);
            for low in 1..256 {
                let key = ((run << 8) | low).to_be_bytes();
                assert_eq!(shard_of(&key, shards), first, "run {run}, {low}");
            }
            used[first] = true;
        }
        assert!(used.iter().filter(|&&u| u).count() >= 12, "{used:?}");
        // One-byte keys and the empty key have nothing else to hash.
        assert!((0..=255u8).all(|b| shard_of(&[b], shards) == shard_of(b"", shards)));
    }

    /// The shards' first arena chunks add up to one memtable's.
    #[test]
    fn first_chunks_share_one_memtables_size() {
        for (shards, first) in [
            (1, FIRST_CHUNK),
            (3, FIRST_CHUNK / 3),
            (16, FIRST_CHUNK / 16),
        ] {
            let mem = ShardedArtMemtable::with_shards(shards);
            for s in mem.shards.iter() {
                let t = s.0.tables().read().unwrap();
                assert_eq!(t.arena().first_chunk(), first, "{shards} shards");
            }
        }
    }

    /// The heap's key prefixes order as their keys do, but for keys equal
    /// in their first sixteen bytes once padded with zeros, which the heap
    /// then compares whole.
    #[test]
    fn key_prefixes_order_as_keys() {
        let keys: [&[u8]; 8] = [
            b"",
            b"\0",
            b"a",
            b"a\0\x01",
            b"ab",
            b"abcdefgh",
            b"abcdefgh\0\0\0\0\0\0\0\x01",
            b"b",
        ];
        for pair in keys.windows(2) {
            let (a, b) = (key_prefix(pair[0]), key_prefix(pair[1]));
            assert!(a <= b, "{pair:?}");
        }
        assert!(key_prefix(b"a") < key_prefix(b"b"));
        assert!(key_prefix(b"abcdefg\xff") < key_prefix(b"abcdefh"));
        assert!(key_prefix(b"abcdefgh1") < key_prefix(b"abcdefgh2"));
        assert_eq!(key_prefix(b"a"), key_prefix(b"a\0"));
        assert_eq!(
            key_prefix(b"0123456789abcdef1"),
            key_prefix(b"0123456789abcdef2")
        );
        assert_eq!(key_prefix(&[0xff; 16]), u128::MAX);
    }

    #[test]
    fn shards_sit_on_lines_of_their_own() {
        assert_eq!(std::mem::align_of::<Shard>(), 128);
        assert_eq!(std::mem::size_of::<Shard>() % 128, 0);
    }

    #[test]
    fn cursors_debug_briefly() {
        let mem = ShardedArtMemtable::with_shards(3);
        mem.insert(vec![7u8; 1000], 1, ValueKind::Value, vec![9u8; 1000]);
        for s in [
            format!("{mem:?}"),
            format!("{:?}", mem.iter(1)),
            format!("{:?}", mem.freeze()),
        ] {
            assert!(s.len() < 200 && s.contains("shards: 3"), "{s}");
        }
    }

    /// The first batch of each shard is small, so a short range copies a
    /// few entries per shard, not hundreds.
    #[test]
    fn a_short_range_copies_little() {
        let mem = ShardedArtMemtable::with_shards(4);
        for i in 0u32..10_000 {
            mem.insert(i.to_be_bytes(), u64::from(i) + 1, ValueKind::Value, b"v");
        }
        let mut cursor = mem.iter(u64::MAX >> 8);
        assert_eq!(
            cursor.next_entry().map(|e| e.user_key.to_vec()),
            Some(vec![0; 4])
        );
        let copied: usize = (cursor.merge.walks.iter())
            .map(|w| w.batches.copied())
            .sum();
        assert_eq!(copied, 4 * FIRST_BATCH);
    }
}
