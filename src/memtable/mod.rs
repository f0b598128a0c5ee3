//! Memtables for LSM engines: the [`Memtable`] interface, four
//! implementations, and a small [`WritePath`] to measure them in.
//!
//! An LSM engine keeps its recent writes in a sorted in-memory table, the
//! memtable, and flushes it to a sorted file when it is full. Every write is
//! an *internal entry*: the user's key, a sequence number that orders writes,
//! and a kind (a value, or a tombstone recording a delete). The memtable keeps
//! every version: entries are ordered by user key ascending, then sequence
//! number descending, so the newest version of a key comes first, and a read
//! at a snapshot (a sequence number) sees the newest version not newer than
//! the snapshot.
//!
//! | type | structure | writers | readers during a write |
//! |---|---|---|---|
//! | [`ArtMemtable`] | [`FastArt`](crate::FastArt) over user keys, versions chained in a value arena | serialised by a lock | wait for at most one insert |
//! | [`ShardedArtMemtable`] | `ArtMemtable`'s tree and arena in 16 shards by a hash of the user key (but its last byte), a lock each | in parallel on different shards | wait only for an insert into the same shard; ranges and flushes merge the shards |
//! | [`SkipListMemtable`] | `crossbeam_skiplist::SkipMap` (lock-free) | concurrent, lock-free | never wait |
//! | [`VecMemtable`] | append to a vector, sort on freeze | serialised by a lock | wait for at most one append; reads scan the whole table |
//!
//! `SkipListMemtable` is the common baseline (what Rust LSM engines use
//! today); `ArtMemtable` is the one meant to take less memory and load faster;
//! `ShardedArtMemtable` trades some of its memory and flush speed for
//! writers and readers that seldom wait for each other;
//! `VecMemtable` is the write-only reference point (the cheapest possible
//! insert, reads that are only good enough for tests).
//!
//! # Example
//! ```
//! use memkv::memtable::{ArtMemtable, EntryCursor, Lookup, Memtable, MemtableRead, ValueKind, MAX_SEQNO};
//!
//! let mem = ArtMemtable::default();
//! mem.insert(b"apple", 1, ValueKind::Value, b"red");
//! mem.insert(b"apple", 3, ValueKind::Value, b"green");
//! mem.insert(b"pear", 2, ValueKind::Value, b"yellow");
//! mem.insert(b"pear", 4, ValueKind::Tombstone, b"");
//!
//! // Reads at a snapshot see the newest version not newer than it.
//! assert_eq!(mem.get(b"apple", 2), Lookup::Found(b"red".to_vec()));
//! assert_eq!(mem.get(b"apple", MAX_SEQNO), Lookup::Found(b"green".to_vec()));
//! assert_eq!(mem.get(b"pear", 3), Lookup::Found(b"yellow".to_vec()));
//! assert_eq!(mem.get(b"pear", 4), Lookup::Deleted);
//! assert_eq!(mem.get(b"plum", 4), Lookup::Absent);
//!
//! // A full memtable is frozen; its sorted entries feed a flush.
//! let frozen = mem.freeze();
//! let mut cursor = frozen.iter(MAX_SEQNO);
//! let mut order = Vec::new();
//! while let Some(e) = cursor.next_entry() {
//!     order.push((e.user_key.to_vec(), e.seqno));
//! }
//! assert_eq!(order, [(b"apple".to_vec(), 3), (b"apple".to_vec(), 1),
//!                    (b"pear".to_vec(), 4), (b"pear".to_vec(), 2)]);
//! ```
//!
//! # Reading without allocating
//! [`MemtableRead::get_with`] hands the value to a closure as a borrowed slice,
//! and cursors are lending ([`EntryCursor::next_entry`] borrows the entry from
//! the cursor), so neither a lookup nor a flush allocates per entry.
//! [`MemtableRead::get`] and [`EntryCursor::collect_entries`] are the
//! allocating conveniences.
//!
//! # Same key, same sequence number
//! An internal key is the pair (user key, sequence number). Inserting a pair
//! that is already present replaces its kind and value, as
//! `BTreeMap::insert` does. Engines never do it (every write gets a new
//! sequence number); it is defined so that every implementation behaves the
//! same.
//!
//! # Value storage
//! `ArtMemtable` and `VecMemtable` copy each entry's bytes into an append-only
//! arena of large chunks, so an entry costs no allocation of its own. Both
//! keep the arena behind the lock they need anyway (`ShardedArtMemtable`
//! one arena per shard, behind the shard's lock). `SkipListMemtable` is
//! lock-free, and an arena shared by lock-free writers would need `unsafe`
//! code; instead it keeps each entry's key and value together in *one* boxed
//! slice (one allocation per entry besides the skip-list node: fewer than the
//! three — node, key, value — of the usual `SkipMap<InternalKey, Value>`).
//!
//! # Measured
//! `memkv-bench --memtable --keys 600000` (the harness; see its README): 16-byte
//! keys, 100-byte values, bulk load through the [`WritePath`], medians of
//! three runs on a shared 2-core machine (throughputs there vary by ±30% from
//! run to run; memory is exact), 2026-11-27
//! (`harness/results/memtable-600000-value-prefetch.md`). Ratios are to
//! `SkipListMemtable`.
//!
//! | 600k entries | load/s | bytes/entry (overhead) | flush iteration/s | lookups/s | 1 writer + 1 reader: writes/s, reads/s |
//! |---|--:|--:|--:|--:|--:|
//! | random order: skip list | 0.77 M | 213.3 (97.3) | 4.5 M | 0.47 M | 0.61 M, 0.70 M |
//! | random order: ART | 4.6 M (6.0×) | 152.9 (36.9), 0.72× | 7.5 M (1.65×) | 2.8 M (5.9×) | 1.6 M (2.6×), 0.89 M (1.26×) |
//! | sequential: skip list | 3.3 M | 213.3 (97.3) | 19.1 M | 0.68 M | 3.5 M, 1.05 M |
//! | sequential: ART | 7.4 M (2.2×) | 146.8 (30.8), 0.69× | 24.7 M (1.29×) | 2.7 M (3.9×) | 1.3 M (0.37×), 1.26 M (1.20×) |
//!
//! Every entry carries 116 bytes of key and value and 8 of sequence number
//! and kind, so no memtable holding them can go below 124 bytes per entry:
//! the ART's overhead beyond the raw bytes is 0.38× the skip list's, but its
//! total is 0.7×, not lower. Its weak spot is one thread inserting flat
//! out while another reads, where they share a lock: which of the two
//! loses changes from run to run (here the writer, in sequential order;
//! see [`ArtMemtable`]).
//!
//! [`ShardedArtMemtable`] puts the same tables in 16 shards, a lock each.
//! At 3 M entries (medians of three runs, 2026-11-30,
//! `harness/results/memtable-3000000-sharded-1130.md`), one writer beside
//! one reader, ratios to the skip list in the same runs:
//!
//! | 3 M entries | bytes/entry | flush iteration/s | lookups/s | 1 writer + 1 reader: writes/s, reads/s |
//! |---|--:|--:|--:|--:|
//! | random order: ART | 142.6 (0.67×) | 7.89 M (2.05×) | 2.08 M (7.28×) | 1.03 M (2.89×), 0.38 M (0.96×) |
//! | random order: sharded ART | 157.2 (0.74×) | 6.09 M (1.59×) | 1.72 M (6.02×) | 1.36 M (3.81×), 1.03 M (2.63×) |
//! | sequential: ART | 141.9 (0.67×) | 23.7 M (1.30×) | 2.05 M (5.33×) | 1.27 M (0.39×), 0.76 M (1.38×) |
//! | sequential: sharded ART | 151.7 (0.71×) | 10.3 M (0.57×) | 1.81 M (4.71×) | 4.57 M (1.39×), 1.06 M (1.93×) |
//!
//! Neither side of the sharded memtable falls under the lock-free skip
//! list's rate (over three random-order runs its reader got 2.7–2.9× and
//! its writer 1.3–3.1× `ArtMemtable`'s, beside each other), and two
//! writers insert side by side. Its ordered reads merge the 16 shards,
//! which costs a quarter of the flush rate in random order and more than
//! half in sequential order. Counter keys (an auto-increment id or a
//! timestamp, inserted in order) cost it little: its hash leaves out a
//! key's last byte, so runs of 256 stay in one shard. At 3 M of them (two
//! invocations of two runs each, `harness/results/memtable-3000000-counter-1130.md`)
//! it loaded 10.0–10.2 M entries/s against `ArtMemtable`'s 10.4–10.5 M and
//! flushed 21.7–22.0 M against 33.4–34.0 M, in 131.7 against 130.0
//! bytes/entry; hashing the whole key had given 6.2–6.4 M, 11.0–11.2 M and
//! 144.4.

mod arena;
mod art;
mod buffered;
mod key;
mod sharded;
mod skiplist;
mod vec;
mod write_path;

use std::ops::RangeBounds;

pub use self::art::{ArtCursor, ArtMemtable, FrozenArtCursor, FrozenArtMemtable};
pub use self::buffered::BufferedCursor;
pub use self::sharded::{
    FrozenShardedArtCursor, FrozenShardedArtMemtable, ShardedArtCursor, ShardedArtMemtable,
};
pub use self::skiplist::{FrozenSkipListMemtable, SkipListCursor, SkipListMemtable};
pub use self::vec::{FrozenVecCursor, FrozenVecMemtable, VecMemtable};
pub use self::write_path::{WritePath, WritePathOptions, WritePathStats};

/// The largest sequence number: they are 56-bit, so that a sequence number
/// and a [`ValueKind`] pack into one `u64` (as in RocksDB and LevelDB).
///
/// As a snapshot, any number at or above it sees every entry.
pub const MAX_SEQNO: u64 = (1 << 56) - 1;

/// What an internal entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ValueKind {
    /// A delete: the key has no value as of this entry's sequence number.
    Tombstone = 0,
    /// A put: the entry's value is the key's value.
    Value = 1,
}

impl ValueKind {
    #[inline]
    pub(crate) fn from_bit(bit: u64) -> ValueKind {
        if bit & 1 == 1 {
            ValueKind::Value
        } else {
            ValueKind::Tombstone
        }
    }
}

/// The answer of a point lookup at a snapshot: a value, a delete, or nothing
/// (the key has no entry visible at the snapshot, so older layers decide).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lookup<V> {
    /// The newest visible entry is a value.
    Found(V),
    /// The newest visible entry is a tombstone: the key is deleted, and older
    /// layers must not be consulted.
    Deleted,
    /// No visible entry: look in older layers.
    Absent,
}

impl<V> Lookup<V> {
    /// Applies `f` to a found value.
    ///
    /// ```
    /// use memkv::memtable::Lookup;
    ///
    /// assert_eq!(Lookup::Found(b"red".as_slice()).map(<[u8]>::len), Lookup::Found(3));
    /// assert_eq!(Lookup::<&[u8]>::Deleted.map(<[u8]>::len), Lookup::Deleted);
    /// assert_eq!(Lookup::<&[u8]>::Absent.map(<[u8]>::len), Lookup::Absent);
    /// ```
    #[inline]
    pub fn map<U>(self, f: impl FnOnce(V) -> U) -> Lookup<U> {
        match self {
            Lookup::Found(v) => Lookup::Found(f(v)),
            Lookup::Deleted => Lookup::Deleted,
            Lookup::Absent => Lookup::Absent,
        }
    }

    /// The value, if one was found (`None` for both a delete and absence).
    ///
    /// ```
    /// use memkv::memtable::{Lookup, Memtable, MemtableRead, SkipListMemtable, ValueKind};
    ///
    /// let mem = SkipListMemtable::default();
    /// mem.insert(b"k", 1, ValueKind::Value, b"v");
    /// mem.insert(b"k", 2, ValueKind::Tombstone, b"");
    /// assert_eq!(mem.get(b"k", 1).found(), Some(b"v".to_vec()));
    /// assert_eq!(mem.get(b"k", 2).found(), None); // deleted
    /// assert_eq!(mem.get(b"x", 2).found(), None); // absent
    /// ```
    #[inline]
    pub fn found(self) -> Option<V> {
        match self {
            Lookup::Found(v) => Some(v),
            _ => None,
        }
    }

    /// Whether this layer decided the lookup (found or deleted), so older
    /// layers need not be asked.
    ///
    /// ```
    /// use memkv::memtable::{ArtMemtable, Memtable, MemtableRead, ValueKind};
    ///
    /// let mem = ArtMemtable::default();
    /// mem.insert(b"k", 5, ValueKind::Tombstone, b"");
    /// assert!(mem.get(b"k", 5).is_decided()); // deleted here: stop
    /// assert!(!mem.get(b"k", 4).is_decided()); // not visible yet: ask older layers
    /// assert!(!mem.get(b"other", 5).is_decided());
    /// ```
    #[inline]
    pub fn is_decided(&self) -> bool {
        !matches!(self, Lookup::Absent)
    }
}

/// One internal entry, borrowed from a memtable or a cursor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EntryRef<'a> {
    /// The user's key.
    pub user_key: &'a [u8],
    /// The sequence number (at most [`MAX_SEQNO`]).
    pub seqno: u64,
    /// A value or a tombstone.
    pub kind: ValueKind,
    /// The value bytes (for a tombstone: whatever was inserted with it,
    /// usually nothing).
    pub value: &'a [u8],
}

impl EntryRef<'_> {
    /// An owned copy.
    ///
    /// ```
    /// use memkv::memtable::{Entry, EntryRef, ValueKind};
    ///
    /// let value = vec![1, 2, 3];
    /// let borrowed = EntryRef { user_key: b"k", seqno: 7, kind: ValueKind::Value, value: &value };
    /// let owned: Entry = borrowed.to_entry();
    /// drop(value); // the copy does not borrow it
    /// assert_eq!(owned.user_key, b"k");
    /// assert_eq!((owned.seqno, owned.kind, owned.value), (7, ValueKind::Value, vec![1, 2, 3]));
    /// ```
    pub fn to_entry(&self) -> Entry {
        Entry {
            user_key: self.user_key.to_vec(),
            seqno: self.seqno,
            kind: self.kind,
            value: self.value.to_vec(),
        }
    }
}

/// One internal entry, owned.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Entry {
    /// The user's key.
    pub user_key: Vec<u8>,
    /// The sequence number.
    pub seqno: u64,
    /// A value or a tombstone.
    pub kind: ValueKind,
    /// The value bytes.
    pub value: Vec<u8>,
}

/// A lending cursor over internal entries in order: user key ascending, then
/// sequence number descending.
///
/// Not an [`Iterator`], because each entry is borrowed from the cursor (its
/// key may live in a buffer the cursor reuses), which is what lets a flush
/// run without an allocation per entry:
///
/// ```
/// use memkv::memtable::{EntryCursor, Memtable, MemtableRead, SkipListMemtable, ValueKind, MAX_SEQNO};
///
/// let mem = SkipListMemtable::default();
/// mem.insert(b"b", 1, ValueKind::Value, b"x");
/// mem.insert(b"a", 2, ValueKind::Value, b"y");
/// let mut cursor = mem.iter(MAX_SEQNO);
/// let mut bytes = 0;
/// while let Some(entry) = cursor.next_entry() {
///     bytes += entry.user_key.len() + entry.value.len();
/// }
/// assert_eq!(bytes, 4);
/// ```
pub trait EntryCursor {
    /// The next entry, or `None` at the end (and on every call after it).
    fn next_entry(&mut self) -> Option<EntryRef<'_>>;

    /// Every remaining entry, copied out (allocates per entry; for tests and
    /// small reads).
    fn collect_entries(mut self) -> Vec<Entry>
    where
        Self: Sized,
    {
        let mut out = Vec::new();
        while let Some(e) = self.next_entry() {
            out.push(e.to_entry());
        }
        out
    }
}

/// The read side of a memtable, shared by active and frozen memtables.
///
/// `Send + Sync`: readers on any number of threads, concurrently with each
/// other (and, for an active [`Memtable`], with its writer).
pub trait MemtableRead: Send + Sync {
    /// The cursor returned by [`MemtableRead::range`].
    type Cursor<'a>: EntryCursor
    where
        Self: 'a;

    /// Looks up the newest version of `user_key` with a sequence number at
    /// most `snapshot`, and passes the answer to `f` with the value borrowed
    /// (no allocation).
    ///
    /// `f` may run with the memtable's read lock held ([`ArtMemtable`],
    /// [`ShardedArtMemtable`] (a shard's) and [`VecMemtable`] lend the value
    /// from under it), so it must not call
    /// the same memtable: a write from `f` waits for the lock forever, and
    /// so may a read, behind a writer that waits for this one. Copy what
    /// `f` needs out (or use [`get`](Self::get)) and call afterwards.
    ///
    /// ```
    /// use memkv::memtable::{ArtMemtable, Lookup, Memtable, MemtableRead, ValueKind};
    ///
    /// let mem = ArtMemtable::default();
    /// mem.insert(b"k", 1, ValueKind::Value, b"hello");
    /// // Compared where it lies, not copied out.
    /// assert!(mem.get_with(b"k", 1, |l| l == Lookup::Found(&b"hello"[..])));
    /// assert_eq!(mem.get_with(b"k", 1, |l| l.map(<[u8]>::len)), Lookup::Found(5));
    /// ```
    fn get_with<R>(
        &self,
        user_key: impl AsRef<[u8]>,
        snapshot: u64,
        f: impl FnOnce(Lookup<&[u8]>) -> R,
    ) -> R;

    /// Like [`MemtableRead::get_with`], with the value copied out.
    fn get(&self, user_key: impl AsRef<[u8]>, snapshot: u64) -> Lookup<Vec<u8>> {
        self.get_with(user_key, snapshot, |l| l.map(<[u8]>::to_vec))
    }

    /// The entries whose user keys lie in `range` and whose sequence numbers
    /// are at most `snapshot` (every version of each key, newest first).
    ///
    /// `range` is over user keys: `..`, or a pair of `Bound<&[u8]>` (a
    /// range of byte-string literals, such as `b"a"..b"b"`, is over arrays,
    /// not slices, so it needs the pair):
    ///
    /// ```
    /// use std::ops::Bound::{Excluded, Included};
    /// use memkv::memtable::{EntryCursor, Memtable, MemtableRead, SkipListMemtable, ValueKind};
    ///
    /// let mem = SkipListMemtable::default();
    /// for (seqno, key) in [b"a", b"b", b"c"].into_iter().enumerate() {
    ///     mem.insert(key, seqno as u64 + 1, ValueKind::Value, b"v");
    /// }
    /// let bounds: (_, _) = (Included(&b"a"[..]), Excluded(&b"c"[..]));
    /// let keys: Vec<Vec<u8>> = (mem.range(bounds, 10).collect_entries())
    ///     .into_iter()
    ///     .map(|e| e.user_key)
    ///     .collect();
    /// assert_eq!(keys, [b"a".to_vec(), b"b".to_vec()]);
    /// ```
    fn range<'a>(&'a self, range: impl RangeBounds<[u8]>, snapshot: u64) -> Self::Cursor<'a>;

    /// All entries with sequence numbers at most `snapshot`, in order.
    fn iter(&self, snapshot: u64) -> Self::Cursor<'_> {
        self.range(.., snapshot)
    }

    /// The number of internal entries (every version counts).
    fn len(&self) -> usize;

    /// Whether there is no entry.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes held, approximately, for deciding when to flush. Each
    /// implementation documents what it counts; it is O(1).
    fn approximate_memory_usage(&self) -> usize;
}

/// An active memtable: inserts through a shared reference, and a
/// [`freeze`](Memtable::freeze) into an immutable one for the flush.
///
/// Every implementation is `Sync`, so an insert may run while other threads
/// read. Whether inserts from several threads run in parallel or one after
/// the other is the implementation's (see the table in the [module
/// docs](self)); all are correct with concurrent writers.
///
/// An engine is written once against the trait, and any memtable plugs in:
///
/// ```
/// use memkv::memtable::{
///     ArtMemtable, EntryCursor, Memtable, MemtableRead, SkipListMemtable, ValueKind, MAX_SEQNO,
/// };
///
/// /// Freezes `mem` and lists its entries as a flush writes them.
/// fn flush<M: Memtable>(mem: M) -> Vec<(Vec<u8>, u64)> {
///     let frozen = mem.freeze();
///     let mut cursor = frozen.iter(MAX_SEQNO);
///     let mut run = Vec::new();
///     while let Some(e) = cursor.next_entry() {
///         run.push((e.user_key.to_vec(), e.seqno));
///     }
///     run
/// }
///
/// fn load<M: Memtable>() -> M {
///     let mem = M::default();
///     mem.insert(b"b", 1, ValueKind::Value, b"x");
///     mem.insert(b"a", 2, ValueKind::Value, b"y");
///     mem.insert(b"b", 3, ValueKind::Tombstone, b"");
///     mem
/// }
///
/// let expected = [(b"a".to_vec(), 2), (b"b".to_vec(), 3), (b"b".to_vec(), 1)];
/// assert_eq!(flush(load::<ArtMemtable>()), expected);
/// assert_eq!(flush(load::<SkipListMemtable>()), expected);
/// ```
pub trait Memtable: MemtableRead + Default {
    /// The immutable memtable [`freeze`](Memtable::freeze) turns this into.
    type Frozen: MemtableRead;

    /// Inserts an internal entry; an entry with the same user key and
    /// sequence number is replaced.
    ///
    /// Keys and values are anything that is bytes (`&[u8]`, `&str`, arrays,
    /// `Vec<u8>`, …), as the maps take their keys.
    ///
    /// # Panics
    /// If `seqno` is above [`MAX_SEQNO`], or the key and value do not
    /// [`fit`](Memtable::fits), before anything changes.
    fn insert(
        &self,
        user_key: impl AsRef<[u8]>,
        seqno: u64,
        kind: ValueKind,
        value: impl AsRef<[u8]>,
    );

    /// Inserts `entries` in order, with the same result as inserting each in
    /// turn: how an engine applies a write batch. An implementation may look
    /// the keys up together first ([`ArtMemtable`] does, so that their cache
    /// misses overlap); readers see the entries arrive one by one.
    ///
    /// # Panics
    /// As [`insert`](Memtable::insert), at the first entry it rejects; the
    /// entries before it are in.
    ///
    /// ```
    /// use memkv::memtable::{ArtMemtable, EntryRef, Lookup, Memtable, MemtableRead, ValueKind};
    ///
    /// let mem = ArtMemtable::default();
    /// mem.insert_batch(&[
    ///     EntryRef { user_key: b"a", seqno: 5, kind: ValueKind::Value, value: b"1" },
    ///     EntryRef { user_key: b"b", seqno: 6, kind: ValueKind::Tombstone, value: b"" },
    ///     EntryRef { user_key: b"a", seqno: 7, kind: ValueKind::Value, value: b"2" },
    /// ]);
    /// assert_eq!(mem.len(), 3);
    /// assert_eq!(mem.get(b"a", 6), Lookup::Found(b"1".to_vec()));
    /// assert_eq!(mem.get(b"a", 7), Lookup::Found(b"2".to_vec()));
    /// assert_eq!(mem.get(b"b", 7), Lookup::Deleted);
    /// ```
    fn insert_batch(&self, entries: &[EntryRef<'_>]) {
        for e in entries {
            self.insert(e.user_key, e.seqno, e.kind, e.value);
        }
    }

    /// Turns the memtable into its immutable form, whose sorted cursor feeds
    /// a flush.
    fn freeze(self) -> Self::Frozen;

    /// Whether [`insert`](Memtable::insert) takes an entry of this key and
    /// value, rather than panicking on their size. A caller with keys or
    /// values from outside asks first; [`WritePath`] does, and refuses the
    /// write with an error.
    ///
    /// Each memtable keeps an entry in records of under 4 GiB:
    /// * by default, the key and the value each under 4 GiB;
    /// * [`ArtMemtable`] and [`ShardedArtMemtable`]: a key of any length
    ///   (in the tree), and a value under 4 GiB − 21 bytes (a record also
    ///   holds a header and a link);
    /// * [`VecMemtable`]: the key and value together under 4 GiB, less a
    ///   header of 10 to 18 bytes;
    /// * [`SkipListMemtable`]: the key, each of its zero bytes written twice,
    ///   under 4 GiB − 10 bytes, and the value under 4 GiB.
    ///
    /// ```
    /// use memkv::memtable::{ArtMemtable, Memtable, SkipListMemtable, VecMemtable};
    ///
    /// assert!(ArtMemtable::fits(b"color", b"red"));
    /// assert!(VecMemtable::fits(b"", b""));
    /// assert!(SkipListMemtable::fits(b"\0\0", b"zeros"));
    /// ```
    fn fits(user_key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> bool {
        let (user_key, value) = (user_key.as_ref(), value.as_ref());
        under_4_gib(user_key.len() as u64) && under_4_gib(value.len() as u64)
    }
}

/// Whether a length fits the `u32` that records and run files keep it in.
#[inline]
pub(crate) fn under_4_gib(len: u64) -> bool {
    len <= u64::from(u32::MAX)
}

/// Checks an insert's sequence number.
#[inline]
#[track_caller]
pub(crate) fn check_seqno(seqno: u64) {
    assert!(
        seqno <= MAX_SEQNO,
        "sequence number {seqno} is above MAX_SEQNO ({MAX_SEQNO})"
    );
}

/// A range over user keys with owned bounds.
#[derive(Clone, Debug)]
pub(crate) struct OwnedRange {
    pub(crate) start: std::ops::Bound<Vec<u8>>,
    pub(crate) end: std::ops::Bound<Vec<u8>>,
}

impl OwnedRange {
    pub(crate) fn new(range: &impl RangeBounds<[u8]>) -> Self {
        OwnedRange {
            start: range.start_bound().map(<[u8]>::to_vec),
            end: range.end_bound().map(<[u8]>::to_vec),
        }
    }

    /// Whether `key` lies below the end bound.
    #[inline]
    pub(crate) fn before_end(&self, key: &[u8]) -> bool {
        crate::keys::before_end(key, crate::keys::as_slice(&self.end))
    }
}
