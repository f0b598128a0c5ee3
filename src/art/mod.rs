//! [`FastArt`]: the mutable layer, an adaptive radix tree.
//!
//! An ordered map from byte strings to values, built to hold very many keys
//! in less memory than the keys themselves. On the 7.3 million Debian file
//! paths (63.5 bytes each on average) a `FastArt<u64>` holds every key and
//! value in well under the 63.5 bytes/key of the raw keys (see DESIGN.md for
//! the measurement), where a `BTreeMap<Box<[u8]>, u64>` takes 115.
//!
//! How: the path from the root spells most of each key (sorted neighbours in
//! that dataset share 52 bytes), so inner nodes hold their complete
//! compressed prefixes and a leaf keeps only the bytes below its parent; all
//! blocks live in a slab arena with exact 8-byte-granular sizes and are named
//! by 32-bit references. DESIGN.md draws every layout with byte counts.
//!
//! # Keys
//! Any byte string is a key: the empty key, keys containing `0x00` or `0xFF`,
//! keys that are prefixes of other keys, and keys of any length (bytes past
//! 254 below a node are stored out of line). Nothing is rejected or truncated.
//!
//! # Limits
//! A map keeps its nodes and its leaves in two arenas, each of which
//! addresses 16 GiB; the leaves' fills first, at about 800 million Debian
//! paths. [`FastArt::insert`] panics past that, like `Vec` past its
//! capacity; [`FastArt::try_insert`] returns an [`InsertError`] instead,
//! holding [`Error::CapacityExceeded`] and the value. A
//! [`remove`](FastArt::remove) that rebuilds a node or leaf (a node that
//! shrinks, or a leaf that takes over its parent's prefix when the parent is
//! left with one child) allocates the new block before freeing the old, so
//! in an arena full to its last unit it panics too, the map unchanged.
//! Failing system allocations abort, as in the standard collections. (Where
//! an allocation error hook makes them unwind instead, on nightly Rust, an
//! insert or remove leaves every key in place: each allocates all it needs
//! before it changes the tree.)
//!
//! # Iteration without allocation
//! Keys are not stored whole, so iterators assemble each key in a buffer they
//! reuse. The standard [`Iterator`] impls yield an owned `Vec<u8>` per entry
//! (one allocation each); for the fast path the iterators over entries also
//! have lending methods, `next_entry` and `next_back_entry`, that return the
//! key as a slice borrowed from the iterator and allocate nothing once their
//! buffers have grown ([`Keys`] and [`IntoKeys`] have `next_key` and
//! `next_back_key`):
//!
//! ```
//! use memkv::FastArt;
//!
//! let map: FastArt<u32> =
//!     [("usr/bin/ls", 1), ("usr/bin/cp", 2), ("etc/passwd", 3)].into_iter().collect();
//! let mut it = map.prefix("usr/");
//! let mut shown = String::new();
//! while let Some((key, value)) = it.next_entry() {
//!     shown += &format!("{}={value} ", String::from_utf8_lossy(key));
//! }
//! assert_eq!(shown, "usr/bin/cp=2 usr/bin/ls=1 ");
//! ```
//!
//! Random inserts scatter entries over memory, so an ordered walk of a map
//! as inserted would wait for a cache miss at nearly every entry. Iterators
//! therefore walk up to 64 entries ahead of the one they return (starting
//! with one and doubling, so that short scans stay short) and prefetch
//! them, and their misses overlap. After [`FastArt::compact`] the entries
//! lie in key order and are read as they are reached, as are those of a map
//! under 32 MiB, which mostly stays in cache.

mod entry;
mod iter;
pub(crate) mod raw;

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::mem;
use std::ops::{Bound, Index, RangeBounds};

use fst::Automaton;

use crate::Error;
use crate::fmt::ByteStr;
use crate::keys::owned_bound;
use crate::lanes::LANES;

pub use self::entry::{Entry, OccupiedEntry, VacantEntry};
pub use self::iter::{
    ExtractIf, IntoIter, IntoKeys, IntoValues, Iter, IterMut, Keys, PrefixesOf, Range, RangeMut,
    Search, Values, ValuesMut,
};

pub(crate) use self::iter::Guarded;
use self::raw::{RawArt, RawIter};

/// A memory-efficient ordered map from byte-string keys to values: an
/// adaptive radix tree.
///
/// The API follows [`BTreeMap`](std::collections::BTreeMap): keys are taken as
/// `impl AsRef<[u8]>` (so `&str`, `String`, `&[u8]`, `Vec<u8>` and byte
/// literals all work) and ordered by their bytes.
///
/// # Examples
/// ```
/// use memkv::FastArt;
///
/// let mut map = FastArt::new();
/// map.insert("usr/bin/ls", 10);
/// map.insert("usr/bin/cp", 20);
/// assert_eq!(map.insert("usr/bin/ls", 11), Some(10));
///
/// assert_eq!(map.get("usr/bin/ls"), Some(&11));
/// assert_eq!(map.get("usr/bin"), None);
///
/// let keys: Vec<Vec<u8>> = map.keys().collect();
/// assert_eq!(keys, [b"usr/bin/cp".to_vec(), b"usr/bin/ls".to_vec()]);
///
/// assert_eq!(map.remove("usr/bin/cp"), Some(20));
/// assert_eq!(map.len(), 1);
/// ```
///
/// # Automatic compaction
///
/// Inserts in random order scatter the tree's nodes over memory, so that a
/// lookup in a large map waits for memory at nearly every level.
/// [`compact`](FastArt::compact) lays the tree out again for reading, and
/// by default the map does so itself, the way a `Vec` grows: once as many
/// keys have been added since the last compaction as the map held then (and
/// at least 65,536), the next [`insert`](FastArt::insert) (or `try_insert`,
/// or an entry's insert) compacts the map first. Like a `Vec`'s growth,
/// that costs a constant amount per insert over time, and here less than
/// it gains back: building a map of 7.3 M Debian paths by `insert` went
/// 12% faster, compactions included, and then looking its keys up 23% and
/// iterating 21% (medians of three runs of the benchmark harness). But the
/// one insert that compacts takes time in proportion to the map (0.2–0.3
/// µs per key, depending on how scattered it is: about a second at 4 M
/// keys inserted in random order) and briefly needs about 2.2
/// times its memory. Where one slow insert matters more than throughput,
/// turn it off with [`set_auto_compact`](FastArt::set_auto_compact).
/// [`extend`](Extend::extend) and `collect` never compact along the way
/// (call `compact` after a bulk load).
pub struct FastArt<V> {
    raw: RawArt<V>,
    /// Whether inserts compact the map as it grows (see the type's docs).
    auto_compact: bool,
}

/// Automatic compaction leaves maps with fewer keys alone: they are small
/// enough that their layout matters little.
const AUTO_COMPACT_MIN_KEYS: usize = 1 << 16;

/// A failed [`FastArt::try_insert`]: the reason and the value, handed back.
#[derive(Debug)]
pub struct InsertError<V> {
    error: Error,
    value: V,
}

impl<V> InsertError<V> {
    /// Why the insert failed.
    ///
    /// ```
    /// use memkv::{Error, FastArt};
    ///
    /// let mut map = FastArt::new();
    /// match map.try_insert("k", 1) {
    ///     Ok(old) => assert_eq!(old, None),
    ///     // Only at the 16 GiB limit (see `FastArt::try_insert`).
    ///     Err(refused) => assert!(matches!(refused.error(), Error::CapacityExceeded { .. })),
    /// }
    /// ```
    pub fn error(&self) -> &Error {
        &self.error
    }

    /// The value that was not inserted.
    ///
    /// ```
    /// let mut map = memkv::FastArt::new();
    /// // A map that is full hands the value back, so it can go elsewhere.
    /// let mut elsewhere = Vec::new();
    /// match map.try_insert("k", String::from("v")) {
    ///     Ok(_) => {}
    ///     Err(refused) => elsewhere.push(refused.into_value()),
    /// }
    /// assert_eq!(map.len() + elsewhere.len(), 1);
    /// ```
    pub fn into_value(self) -> V {
        self.value
    }
}

impl<V: fmt::Debug> fmt::Display for InsertError<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "insert failed: {}", self.error)
    }
}

impl<V: fmt::Debug> std::error::Error for InsertError<V> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// What a [`FastArt`] holds, by node kind; see [`FastArt::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ArtStats {
    /// Entries (leaves).
    pub len: usize,
    /// Inner nodes of each kind.
    pub node4: usize,
    /// See `node4`.
    pub node16: usize,
    /// See `node4`.
    pub node48: usize,
    /// See `node4`.
    pub node256: usize,
    /// Arena bytes in leaves (values and key suffixes).
    pub leaf_bytes: usize,
    /// Arena bytes in inner nodes.
    pub node_bytes: usize,
    /// Arena bytes held but not in use (free blocks and the unused tail).
    pub free_bytes: usize,
    /// Heap bytes outside the arena: long prefixes and suffixes, boxed values.
    pub out_of_line_bytes: usize,
    /// Inner nodes on the longest path from the root to a leaf.
    pub max_depth: usize,
    /// Inner nodes on the path to a leaf, on average over all leaves: about
    /// the cache misses of a lookup in a tree larger than the cache.
    pub mean_depth: f64,
    /// Keys added since the map was last compacted (by
    /// [`compact`](FastArt::compact) or
    /// [automatically](FastArt#automatic-compaction)), or since it was empty.
    pub added_since_compact: usize,
}

impl<V> FastArt<V> {
    /// An empty map. Allocates nothing until the first insert.
    ///
    /// ```
    /// let map: memkv::FastArt<u32> = memkv::FastArt::new();
    /// assert!(map.is_empty());
    /// assert_eq!(map.memory_usage(), 0);
    /// ```
    pub fn new() -> Self {
        FastArt {
            raw: RawArt::new(),
            auto_compact: true,
        }
    }

    /// An empty map with automatic compaction off, for trees behind a lock
    /// that readers wait on: a compacting insert would stall every reader.
    pub(crate) fn without_auto_compact() -> Self {
        let mut map = FastArt::new();
        map.auto_compact = false;
        map
    }

    /// An empty map with this one's settings.
    fn empty_like(&self) -> Self {
        FastArt {
            raw: RawArt::new(),
            auto_compact: self.auto_compact,
        }
    }

    /// Takes every entry out, leaving this map empty with its settings.
    fn take_entries(&mut self) -> Self {
        let empty = self.empty_like();
        mem::replace(self, empty)
    }

    /// Turns [automatic compaction](FastArt#automatic-compaction) on (the
    /// default) or off. [`split_off`](Self::split_off) gives the new map the
    /// same setting; [`append`](Self::append) leaves each map its own.
    ///
    /// ```
    /// let mut map = memkv::FastArt::new();
    /// map.set_auto_compact(false);
    /// assert!(!map.auto_compact());
    /// map.insert("k", 1);
    /// ```
    pub fn set_auto_compact(&mut self, on: bool) {
        self.auto_compact = on;
    }

    /// Whether inserts compact the map as it grows; see
    /// [`set_auto_compact`](FastArt::set_auto_compact).
    ///
    /// ```
    /// let mut map: memkv::FastArt<u8> = memkv::FastArt::new();
    /// assert!(map.auto_compact()); // on by default
    /// map.set_auto_compact(false);
    /// assert!(!map.auto_compact());
    /// ```
    pub fn auto_compact(&self) -> bool {
        self.auto_compact
    }

    /// Compacts the map if automatic compaction is on and the map has grown
    /// enough since the last time. Called before an insert, never during
    /// one: compaction moves every leaf.
    #[inline]
    fn compact_if_due(&mut self) {
        let (grown, then) = self.raw.growth_since_compact();
        if self.auto_compact && grown >= then.max(AUTO_COMPACT_MIN_KEYS) {
            self.raw.compact();
        }
    }

    /// The number of entries.
    ///
    /// ```
    /// let mut map = memkv::FastArt::new();
    /// map.insert("a", 1);
    /// map.insert("a", 2);
    /// map.insert("b", 3);
    /// assert_eq!(map.len(), 2);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether the map is empty.
    ///
    /// ```
    /// let mut map = memkv::FastArt::new();
    /// assert!(map.is_empty());
    /// map.insert("", 1); // the empty key is a key like any other
    /// assert!(!map.is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.raw.len() == 0
    }

    /// Removes every entry and frees all memory.
    ///
    /// If a value's `Drop` panics, the other values are still dropped and the
    /// map is left empty.
    ///
    /// ```
    /// let mut map: memkv::FastArt<u8> = [("a", 1), ("b", 2)].into_iter().collect();
    /// map.clear();
    /// assert!(map.is_empty());
    /// assert_eq!(map.memory_usage(), 0);
    /// ```
    pub fn clear(&mut self) {
        self.raw.clear();
    }

    /// The value stored under `key`.
    ///
    /// ```
    /// let mut map = memkv::FastArt::new();
    /// map.insert(b"\x00\xff", 1);
    /// assert_eq!(map.get(b"\x00\xff"), Some(&1));
    /// assert_eq!(map.get(b"\x00"), None);
    /// ```
    #[inline]
    pub fn get(&self, key: impl AsRef<[u8]>) -> Option<&V> {
        // SAFETY: the pointer names a live value; `&self` keeps the tree from
        // changing for the returned lifetime.
        self.raw.get(key.as_ref()).map(|v| unsafe { &*v })
    }

    /// The values stored under each of `keys`, in the order of `keys`: the
    /// same answers as calling [`get`](Self::get) for each, faster when
    /// there are many.
    ///
    /// A lookup in a large tree waits on one cache miss per level, each
    /// depending on the one before. This runs up to 16 lookups side by side,
    /// each prefetching the node it will read next, so their misses overlap
    /// instead of queueing. Worth it from a few dozen keys on, on a map much
    /// larger than the CPU caches; the result is one allocation per call.
    ///
    /// ```
    /// use memkv::FastArt;
    ///
    /// let map: FastArt<u32> = [("usr/bin/ls", 1), ("usr/bin/cat", 2)].into_iter().collect();
    /// let found = map.get_many(&["usr/bin/cat", "usr/bin/vi", "usr/bin/ls"]);
    /// assert_eq!(found, [Some(&2), None, Some(&1)]);
    /// ```
    pub fn get_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<Option<&V>> {
        let mut values = vec![None; keys.len()];
        self.raw.get_each(
            keys.len(),
            |i| keys[i].as_ref(),
            |index, value| {
                // SAFETY: the pointer names a live value; `&self` keeps the tree
                // from changing for the returned lifetime.
                values[index] = value.map(|v| unsafe { &*v });
            },
        );
        values
    }

    /// Brings the nodes on the paths of keys `0..count` (`key(i)` is the
    /// `i`th) into the cache, looking them up side by side as
    /// [`get_many`](Self::get_many) does, so that writes to them that follow
    /// find their paths there. Does nothing for a map small enough to sit in
    /// the caches (see [`PREFETCH_PATHS_ABOVE`]).
    pub(crate) fn prefetch_paths<'k>(&self, count: usize, key: impl Fn(usize) -> &'k [u8]) {
        if self.memory_usage() >= PREFETCH_PATHS_ABOVE {
            self.raw.get_each(count, key, |_, _| {});
        }
    }

    /// [`prefetch_paths`](Self::prefetch_paths) from [`WALK_TOWARD_ABOVE`] on.
    pub(crate) fn prefetch_paths_toward<'k>(&self, count: usize, key: impl Fn(usize) -> &'k [u8]) {
        if self.memory_usage() >= WALK_TOWARD_ABOVE {
            self.raw.get_each(count, key, |_, _| {});
        }
    }

    /// A walk toward `key` to run beside other work: each call of the
    /// closure takes it one node down, prefetching the next (`false` once it
    /// is over, and from then on), so that an insert or removal of `key`
    /// that follows finds its path in the cache. Over at once for a map
    /// small enough to sit in the caches nearest the core (see
    /// [`WALK_TOWARD_ABOVE`]).
    pub(crate) fn path_toward<'a>(&'a self, key: &'a [u8]) -> impl FnMut() -> bool + 'a {
        let mut at = (self.raw.root(), 0);
        let mut going = self.memory_usage() >= WALK_TOWARD_ABOVE;
        move || {
            going = going && self.raw.step_toward(key, &mut at);
            going
        }
    }

    /// The key-value pair stored under `key`. The key comes back as given:
    /// the map does not store keys whole, so it has no key of its own to
    /// lend.
    ///
    /// ```
    /// let map: memkv::FastArt<u8> = [("a", 1)].into_iter().collect();
    /// assert_eq!(map.get_key_value("a"), Some(("a", &1)));
    /// ```
    pub fn get_key_value<K: AsRef<[u8]>>(&self, key: K) -> Option<(K, &V)> {
        let value = self.get(key.as_ref())?;
        Some((key, value))
    }

    /// A mutable reference to the value stored under `key`.
    ///
    /// ```
    /// let mut map: memkv::FastArt<Vec<u8>> = [("a", vec![1])].into_iter().collect();
    /// map.get_mut("a").unwrap().push(2);
    /// assert_eq!(map["a"], [1, 2]);
    /// ```
    #[inline]
    pub fn get_mut(&mut self, key: impl AsRef<[u8]>) -> Option<&mut V> {
        // SAFETY: a live value; `&mut self` makes the reference exclusive.
        self.raw.get(key.as_ref()).map(|v| unsafe { &mut *v })
    }

    /// Whether `key` is in the map.
    ///
    /// ```
    /// let map: memkv::FastArt<u8> = [("usr/bin", 1)].into_iter().collect();
    /// assert!(map.contains_key("usr/bin"));
    /// assert!(!map.contains_key("usr")); // a prefix of a key is not a key
    /// ```
    #[inline]
    pub fn contains_key(&self, key: impl AsRef<[u8]>) -> bool {
        self.raw.get(key.as_ref()).is_some()
    }

    /// Inserts a value; returns the value previously stored under `key`.
    ///
    /// # Panics
    /// If the map's nodes or its leaves already fill their 16 GiB arena
    /// (see [`FastArt::try_insert`]).
    ///
    /// ```
    /// let mut map = memkv::FastArt::new();
    /// assert_eq!(map.insert(b"k", 1), None);
    /// assert_eq!(map.insert("k", 2), Some(1));
    /// assert_eq!(map["k"], 2);
    /// ```
    #[inline]
    pub fn insert(&mut self, key: impl AsRef<[u8]>, value: V) -> Option<V> {
        self.compact_if_due();
        self.insert_in_place(key.as_ref(), value)
    }

    /// Inserts a value, or hands it back with an error instead of panicking
    /// when the map cannot grow.
    ///
    /// Unlike the unstable `HashMap::try_insert`, this replaces an existing
    /// value just as [`FastArt::insert`] does: only the failure mode differs.
    ///
    /// ```
    /// let mut map = memkv::FastArt::new();
    /// assert_eq!(map.try_insert("k", 1).unwrap(), None);
    /// assert_eq!(map.try_insert("k", 2).unwrap(), Some(1));
    /// ```
    pub fn try_insert(
        &mut self,
        key: impl AsRef<[u8]>,
        value: V,
    ) -> Result<Option<V>, InsertError<V>> {
        self.compact_if_due();
        self.try_insert_in_place(key.as_ref(), value)
    }

    /// `try_insert` without automatic compaction, for `extend`: a bulk load
    /// is better compacted once, at its end, than at each doubling on the
    /// way (see the type's docs).
    fn try_insert_in_place(&mut self, key: &[u8], value: V) -> Result<Option<V>, InsertError<V>> {
        if !self.raw.has_room_for_insert() {
            // A replacement allocates nothing: only a new key needs room.
            if let Some(old) = self.get_mut(key) {
                return Ok(Some(mem::replace(old, value)));
            }
            let error = Error::CapacityExceeded {
                bytes: self.memory_usage(),
            };
            return Err(InsertError { error, value });
        }
        Ok(self.raw.insert(key, value).0)
    }

    /// `insert` without automatic compaction (see `try_insert_in_place`).
    fn insert_in_place(&mut self, key: &[u8], value: V) -> Option<V> {
        match self.try_insert_in_place(key, value) {
            Ok(old) => old,
            Err(e) => panic!("{}", e.error),
        }
    }

    /// Removes `key`; returns its value. Removing the last key frees all
    /// the map's memory, as [`clear`](Self::clear) does; the space of other
    /// removals is reused by later inserts, or given back by
    /// [`compact`](Self::compact).
    ///
    /// ```
    /// let mut map: memkv::FastArt<u8> = [("a", 1)].into_iter().collect();
    /// assert_eq!(map.remove("a"), Some(1));
    /// assert_eq!(map.remove("a"), None);
    /// assert!(map.is_empty());
    /// assert_eq!(map.memory_usage(), 0);
    /// ```
    #[inline]
    pub fn remove(&mut self, key: impl AsRef<[u8]>) -> Option<V> {
        self.raw.remove(key.as_ref())
    }

    /// Removes `key`; returns the key (as given) and its value.
    ///
    /// ```
    /// let mut map: memkv::FastArt<u8> = [("a", 1)].into_iter().collect();
    /// assert_eq!(map.remove_entry(b"a".to_vec()), Some((b"a".to_vec(), 1)));
    /// assert!(map.is_empty());
    /// ```
    pub fn remove_entry<K: AsRef<[u8]>>(&mut self, key: K) -> Option<(K, V)> {
        let value = self.remove(key.as_ref())?;
        Some((key, value))
    }

    /// Keeps only the entries for which `keep` returns true. `keep` sees
    /// each entry once, in key order, and may change its value.
    ///
    /// The walk removes what `keep` rejects a batch at a time (64 KiB of
    /// keys, or 4,096 keys), so a `retain` that empties a large map never
    /// holds a copy of every key it removes. If `keep` panics, the entries it rejected
    /// since the last batch stay in the map.
    ///
    /// ```
    /// let mut map: memkv::FastArt<u32> = (0..10u32).map(|i| (i.to_string(), i)).collect();
    /// map.retain(|key, value| {
    ///     *value *= 10;
    ///     key != b"3"
    /// });
    /// assert_eq!(map.len(), 9);
    /// assert_eq!(map.get("4"), Some(&40));
    /// ```
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8], &mut V) -> bool) {
        // The rejected keys of a batch, end to end; the tree cannot change
        // under the walk, so they are removed once it stops.
        const BATCH_BYTES: usize = 64 << 10;
        const BATCH_KEYS: usize = 4096;
        let mut doomed = Vec::new();
        let mut ends = Vec::new();
        let mut after: Option<Vec<u8>> = None;
        loop {
            let start = after.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            let mut walk = self.range_mut::<[u8], _>((start, Bound::Unbounded));
            let mut full = false;
            while let Some((key, value)) = walk.next_entry() {
                if !keep(key, value) {
                    doomed.extend_from_slice(key);
                    ends.push(doomed.len());
                    full = doomed.len() >= BATCH_BYTES || ends.len() == BATCH_KEYS;
                    if full {
                        break;
                    }
                }
            }
            let mut begin = 0;
            for &end in &ends {
                self.remove(&doomed[begin..end]);
                begin = end;
            }
            if !full {
                return;
            }
            // The walk goes on after the last key removed: every key before
            // it has been judged.
            let last = ends.len().checked_sub(2).map_or(0, |i| ends[i]);
            after = Some(doomed[last..].to_vec());
            doomed.clear();
            ends.clear();
        }
    }

    /// Removes the entries in `range` for which `pred` returns true, and
    /// yields them, in key order, as `BTreeMap::extract_if` does. `pred`
    /// sees each entry of the range at most once and may change the values
    /// of those it keeps; if it panics, the iterator yields nothing more.
    /// An inverted range yields nothing (std's panics), as with
    /// [`range`](Self::range).
    ///
    /// The iterator is lazy: entries after the last one it yielded stay
    /// unseen, and in the map, if it is dropped early. Each entry removed
    /// costs a descent to find the next match from where the last one was
    /// and one to remove it (the keys passed over between them cost a step
    /// each), plus its key, copied into the `Vec` yielded.
    ///
    /// ```
    /// let mut map: memkv::FastArt<u32> = (0..8u32).map(|i| (format!("k{i}"), i)).collect();
    /// let evens: Vec<(Vec<u8>, u32)> = map.extract_if::<str, _, _>(.., |_, v| *v % 2 == 0).collect();
    /// assert_eq!(evens.len(), 4);
    /// assert_eq!(map.len(), 4);
    ///
    /// // Only within a range, and only as far as it is read.
    /// let mut low = map.extract_if("k0".."k5", |_, _| true);
    /// assert_eq!(low.next(), Some((b"k1".to_vec(), 1)));
    /// drop(low);
    /// assert_eq!(map.keys().collect::<Vec<_>>(), [b"k3".to_vec(), b"k5".to_vec(), b"k7".to_vec()]);
    /// ```
    pub fn extract_if<T, R, F>(&mut self, range: R, pred: F) -> ExtractIf<'_, V, F>
    where
        T: AsRef<[u8]> + ?Sized,
        R: RangeBounds<T>,
        F: FnMut(&[u8], &mut V) -> bool,
    {
        ExtractIf::new(
            self,
            owned_bound(range.start_bound()),
            owned_bound(range.end_bound()),
            pred,
        )
    }

    /// The entry for `key`, for in-place manipulation.
    ///
    /// ```
    /// let mut counts = memkv::FastArt::new();
    /// for word in ["a", "b", "a"] {
    ///     *counts.entry(word).or_insert(0) += 1;
    /// }
    /// assert_eq!(counts.get("a"), Some(&2));
    /// ```
    pub fn entry<K: AsRef<[u8]>>(&mut self, key: K) -> Entry<'_, K, V> {
        match self.raw.get(key.as_ref()) {
            Some(value) => Entry::Occupied(OccupiedEntry::new(self, key, value)),
            None => Entry::Vacant(VacantEntry::new(self, key)),
        }
    }

    /// All entries in key order. See the [module docs](self) for the lending
    /// `next_entry`, which does not allocate a key per entry.
    ///
    /// ```
    /// let map: memkv::FastArt<u8> = [("b", 2), ("ab", 3), ("a", 1)].into_iter().collect();
    /// let entries: Vec<(Vec<u8>, &u8)> = map.iter().collect();
    /// assert_eq!(entries, [(b"a".to_vec(), &1), (b"ab".to_vec(), &3), (b"b".to_vec(), &2)]);
    /// ```
    pub fn iter(&self) -> Iter<'_, V> {
        Iter::new(&self.raw, RawIter::all(&self.raw))
    }

    /// All entries in key order, values mutable.
    ///
    /// ```
    /// let mut map: memkv::FastArt<u32> = [("a", 1), ("b", 2)].into_iter().collect();
    /// for (key, value) in map.iter_mut() {
    ///     *value += key.len() as u32;
    /// }
    /// assert_eq!(map.values().copied().collect::<Vec<_>>(), [2, 3]);
    /// ```
    pub fn iter_mut(&mut self) -> IterMut<'_, V> {
        let raw = RawIter::all(&self.raw);
        IterMut::new(&mut self.raw, raw)
    }

    /// All keys in order.
    ///
    /// ```
    /// let map: memkv::FastArt<u8> = [("b", 1), ("a", 2), ("Z", 3)].into_iter().collect();
    /// let keys: Vec<Vec<u8>> = map.keys().collect();
    /// assert_eq!(keys, [b"Z".to_vec(), b"a".to_vec(), b"b".to_vec()]); // byte order
    /// ```
    pub fn keys(&self) -> Keys<'_, V> {
        Keys::new(self.iter())
    }

    /// All values in key order.
    ///
    /// ```
    /// let map: memkv::FastArt<u8> = [("b", 2), ("a", 1)].into_iter().collect();
    /// assert_eq!(map.values().collect::<Vec<_>>(), [&1, &2]);
    /// ```
    pub fn values(&self) -> Values<'_, V> {
        Values::new(self.iter())
    }

    /// All values in key order, mutable.
    ///
    /// ```
    /// let mut map: memkv::FastArt<u32> = [("a", 1), ("b", 2)].into_iter().collect();
    /// map.values_mut().for_each(|value| *value *= 3);
    /// assert_eq!(map["b"], 6);
    /// ```
    pub fn values_mut(&mut self) -> ValuesMut<'_, V> {
        ValuesMut::new(self.iter_mut())
    }

    /// The keys in order, consuming the map.
    ///
    /// ```
    /// let map: memkv::FastArt<u8> = [("b", 2), ("a", 1)].into_iter().collect();
    /// assert_eq!(map.into_keys().collect::<Vec<_>>(), [b"a".to_vec(), b"b".to_vec()]);
    /// ```
    pub fn into_keys(self) -> IntoKeys<V> {
        IntoKeys::new(self.into_iter())
    }

    /// The values in key order, consuming the map.
    ///
    /// ```
    /// let map: memkv::FastArt<String> = [("b", "two".into()), ("a", "one".into())].into_iter().collect();
    /// assert_eq!(map.into_values().collect::<Vec<_>>(), ["one", "two"]);
    /// ```
    pub fn into_values(self) -> IntoValues<V> {
        IntoValues::new(self.into_iter())
    }

    /// The entries whose keys lie in `range`, in key order.
    ///
    /// Unlike `BTreeMap::range`, an inverted or empty range yields nothing
    /// instead of panicking.
    ///
    /// The bounds may be any bytes: `"b"..`, `"a"..="c"`,
    /// `&b"a"[..]..=&b"b"[..]`, `Vec<u8>`s. Where Rust can read the bounds'
    /// type more than one way, name it: `..` as `range::<[u8], _>(..)` (or
    /// call `iter`), a range of byte-string literals, which is over arrays,
    /// as `range::<[u8; 1], _>(b"a"..b"b")`, and a pair of `Bound`s as
    /// `range::<[u8], _>((lower, upper))` (`::<str, _>` for `&str` bounds).
    ///
    /// ```
    /// let map: memkv::FastArt<u8> = [("a", 1), ("b", 2), ("c", 3)].into_iter().collect();
    /// let keys: Vec<_> = map.range("b"..).map(|(k, _)| k).collect();
    /// assert_eq!(keys, [b"b".to_vec(), b"c".to_vec()]);
    /// let none = map.range::<[u8], _>((std::ops::Bound::Excluded(&b"c"[..]), std::ops::Bound::Unbounded));
    /// assert_eq!(none.count(), 0);
    /// assert_eq!(map.range::<[u8; 1], _>(b"a"..b"c").count(), 2);
    /// assert_eq!(map.range::<[u8], _>(..).count(), 3);
    /// let (lower, upper) = (std::ops::Bound::Included("a"), std::ops::Bound::Excluded("c"));
    /// assert_eq!(map.range::<str, _>((lower, upper)).count(), 2);
    /// ```
    pub fn range<T, R>(&self, range: R) -> Range<'_, V>
    where
        T: AsRef<[u8]> + ?Sized,
        R: RangeBounds<T>,
    {
        Range::new(&self.raw, self.raw_range(range))
    }

    /// The entries whose keys lie in `range`, in key order, values mutable;
    /// an inverted or empty range yields nothing, as in
    /// [`range`](Self::range).
    ///
    /// ```
    /// let mut map: memkv::FastArt<u8> = [("a", 1), ("b", 2), ("c", 3)].into_iter().collect();
    /// for (_, value) in map.range_mut("b"..) {
    ///     *value *= 10;
    /// }
    /// assert_eq!(map.values().copied().collect::<Vec<_>>(), [1, 20, 30]);
    /// ```
    pub fn range_mut<T, R>(&mut self, range: R) -> RangeMut<'_, V>
    where
        T: AsRef<[u8]> + ?Sized,
        R: RangeBounds<T>,
    {
        let raw = self.raw_range(range);
        RangeMut::new(&mut self.raw, raw)
    }

    /// A raw iterator over the keys in `range`.
    fn raw_range<T: AsRef<[u8]> + ?Sized>(&self, range: impl RangeBounds<T>) -> RawIter {
        RawIter::range(
            &self.raw,
            owned_bound(range.start_bound()),
            owned_bound(range.end_bound()),
        )
    }

    /// The entries whose keys `automaton` accepts, in key order: the same
    /// automata as [`FrozenLayer::search`](crate::FrozenLayer::search)
    /// takes ([`frozen::automaton`](crate::frozen::automaton): prefixes,
    /// subsequences, with the `levenshtein` feature edit distances, and
    /// their combinations).
    ///
    /// The walk feeds each node's key to the automaton as it enters the
    /// node, from where that key parts from the one fed before it. When the
    /// bytes so far leave the automaton unable to match (its `can_match`),
    /// the walk leaves the node's subtree unvisited: it reads the nodes and
    /// keys the automaton can still match, plus the node or leaf at each
    /// dead end. It walks in place, not ahead as [`iter`](Self::iter) does
    /// (a guarded walk cannot know which leaves it will take). Answers are the fst
    /// crate's streams' for the same automaton, but that a state whose
    /// `will_always_match` is true is trusted (see
    /// [`FrozenLayer::search`](crate::FrozenLayer::search)).
    ///
    /// ```
    /// use memkv::frozen::automaton::{Automaton, Str, Subsequence};
    ///
    /// let map: memkv::FastArt<u32> =
    ///     [("usr/bin/cat", 1), ("usr/lib/cat.so", 2), ("var/cache", 3)].into_iter().collect();
    /// assert_eq!(map.search(Str::new("usr/").starts_with()).count(), 2);
    /// let fuzzy: Vec<u32> = map.search(Subsequence::new("uca")).map(|(_, v)| *v).collect();
    /// assert_eq!(fuzzy, [1, 2]);
    /// ```
    pub fn search<A: Automaton>(&self, automaton: A) -> Search<'_, V, A> {
        Search::new(self, automaton)
    }

    /// The entries whose keys start with `prefix`, in key order.
    ///
    /// ```
    /// let map: memkv::FastArt<u8> = [("ab", 1), ("abc", 2), ("b", 3)].into_iter().collect();
    /// assert_eq!(map.prefix("ab").count(), 2);
    /// ```
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Range<'_, V> {
        let raw = match self.raw.prefix_root(prefix.as_ref()) {
            Some((root, base)) => RawIter::subtree(root, base),
            None => RawIter::subtree(0, Vec::new()),
        };
        Range::new(&self.raw, raw)
    }

    /// The entries whose keys are prefixes of `key` (`key` itself
    /// included), shortest first: the inverse of [`prefix`](Self::prefix),
    /// as a router or a rule table asks it ("which of my paths cover this
    /// file?").
    ///
    /// One walk down `key`'s path finds them all, since each lies on that
    /// path. The keys yielded are slices of `key`, which is therefore
    /// borrowed, not taken by value; nothing is allocated.
    ///
    /// ```
    /// let map: memkv::FastArt<&str> =
    ///     [("usr/", "system"), ("usr/share/doc/", "docs"), ("usr/bin/", "programs")]
    ///         .into_iter()
    ///         .collect();
    /// let covering: Vec<_> = map.prefixes_of("usr/share/doc/bash/README").collect();
    /// assert_eq!(covering, [(&b"usr/"[..], &"system"), (&b"usr/share/doc/"[..], &"docs")]);
    /// assert_eq!(map.prefixes_of("etc/passwd").count(), 0);
    /// ```
    pub fn prefixes_of<'k, K: AsRef<[u8]> + ?Sized>(&self, key: &'k K) -> PrefixesOf<'_, 'k, V> {
        PrefixesOf::new(&self.raw, key.as_ref())
    }

    /// The entry whose key is the longest prefix of `key` (`key` itself, if
    /// present): the most specific match, as a longest-prefix-match
    /// router finds it. The key returned is a slice of `key`.
    ///
    /// ```
    /// let map: memkv::FastArt<u32> = [("", 0), ("a", 1), ("abc", 3)].into_iter().collect();
    /// assert_eq!(map.longest_prefix_of("abcd"), Some((&b"abc"[..], &3)));
    /// assert_eq!(map.longest_prefix_of("ab"), Some((&b"a"[..], &1)));
    /// assert_eq!(map.longest_prefix_of("x"), Some((&b""[..], &0)));
    /// ```
    pub fn longest_prefix_of<'k, K: AsRef<[u8]> + ?Sized>(
        &self,
        key: &'k K,
    ) -> Option<(&'k [u8], &V)> {
        self.prefixes_of(key).last()
    }

    /// The longest stored prefix of each of `keys`, in the order of `keys`:
    /// the same answers as calling [`longest_prefix_of`](Self::longest_prefix_of)
    /// for each, faster when there are many.
    ///
    /// As [`get_many`](Self::get_many) does for lookups, this keeps up to 16
    /// walks under way, each prefetching the node it reads next, so that
    /// their cache misses overlap: worth it from a few dozen keys on, on a
    /// map much larger than the CPU caches. The result is one allocation
    /// per call.
    ///
    /// ```
    /// let rules: memkv::FastArt<&str> = [("usr/", "system"), ("usr/share/doc/", "docs")].into_iter().collect();
    /// let paths = ["usr/share/doc/bash/README", "etc/passwd", "usr/bin/ls"];
    /// let found = rules.longest_prefix_of_many(&paths);
    /// assert_eq!(found, [Some((&b"usr/share/doc/"[..], &"docs")), None, Some((&b"usr/"[..], &"system"))]);
    /// ```
    pub fn longest_prefix_of_many<'k, K: AsRef<[u8]>>(
        &self,
        keys: &'k [K],
    ) -> Vec<Option<(&'k [u8], &V)>> {
        let mut matches = vec![None; keys.len()];
        self.raw.longest_prefix_each(
            keys.len(),
            |i| keys[i].as_ref(),
            |index, found| {
                matches[index] = found.map(|(len, leaf)| {
                    // SAFETY: a live leaf's value; `&self` keeps the tree
                    // from changing for the returned lifetime.
                    let value = unsafe { &*self.raw.leaf_value(leaf) };
                    (&keys[index].as_ref()[..len], value)
                });
            },
        );
        matches
    }

    /// The first entry in key order. The key is assembled into a new
    /// `Vec` (keys are not stored whole).
    ///
    /// ```
    /// let map: memkv::FastArt<u8> = [("b", 2), ("a", 1), ("c", 3)].into_iter().collect();
    /// assert_eq!(map.first_key_value(), Some((b"a".to_vec(), &1)));
    /// assert_eq!(map.last_key_value(), Some((b"c".to_vec(), &3)));
    /// ```
    pub fn first_key_value(&self) -> Option<(Vec<u8>, &V)> {
        self.iter().next()
    }

    /// The last entry in key order; see
    /// [`first_key_value`](Self::first_key_value).
    ///
    /// ```
    /// let mut map = memkv::FastArt::new();
    /// assert_eq!(map.last_key_value(), None);
    /// map.insert("ab", 2);
    /// map.insert("a", 1);
    /// assert_eq!(map.last_key_value(), Some((b"ab".to_vec(), &2)));
    /// ```
    pub fn last_key_value(&self) -> Option<(Vec<u8>, &V)> {
        self.iter().next_back()
    }

    /// The entry of the first key, for in-place manipulation. Its key is
    /// assembled into a new `Vec`, as in
    /// [`first_key_value`](Self::first_key_value).
    ///
    /// ```
    /// let mut map: memkv::FastArt<u8> = [("a", 1), ("b", 2)].into_iter().collect();
    /// if let Some(mut first) = map.first_entry() {
    ///     *first.get_mut() += 10;
    /// }
    /// map.last_entry().unwrap().remove();
    /// assert_eq!(map.iter().collect::<Vec<_>>(), [(b"a".to_vec(), &11)]);
    /// ```
    pub fn first_entry(&mut self) -> Option<OccupiedEntry<'_, Vec<u8>, V>> {
        let key = self.iter().next()?.0;
        self.occupied(key)
    }

    /// The entry of the last key; see [`first_entry`](Self::first_entry).
    ///
    /// ```
    /// let mut map: memkv::FastArt<u8> = [("a", 1), ("b", 2)].into_iter().collect();
    /// if let Some(mut last) = map.last_entry() {
    ///     assert_eq!(last.key(), b"b");
    ///     *last.get_mut() += 10;
    /// }
    /// assert_eq!(map["b"], 12);
    /// ```
    pub fn last_entry(&mut self) -> Option<OccupiedEntry<'_, Vec<u8>, V>> {
        let key = self.iter().next_back()?.0;
        self.occupied(key)
    }

    fn occupied(&mut self, key: Vec<u8>) -> Option<OccupiedEntry<'_, Vec<u8>, V>> {
        let value = self.raw.get(&key)?;
        Some(OccupiedEntry::new(self, key, value))
    }

    /// Removes and returns the first entry in key order.
    ///
    /// ```
    /// let mut map: memkv::FastArt<u8> = [("b", 2), ("a", 1)].into_iter().collect();
    /// assert_eq!(map.pop_first(), Some((b"a".to_vec(), 1)));
    /// assert_eq!(map.pop_last(), Some((b"b".to_vec(), 2)));
    /// assert_eq!(map.pop_last(), None);
    /// ```
    pub fn pop_first(&mut self) -> Option<(Vec<u8>, V)> {
        let key = self.iter().next()?.0;
        let value = self.remove(&key)?;
        Some((key, value))
    }

    /// Removes and returns the last entry in key order.
    ///
    /// ```
    /// let mut map: memkv::FastArt<u8> = [("a", 1), ("b", 2)].into_iter().collect();
    /// assert_eq!(map.pop_last(), Some((b"b".to_vec(), 2)));
    /// assert_eq!(map.pop_last(), Some((b"a".to_vec(), 1)));
    /// assert_eq!(map.pop_last(), None);
    /// assert!(map.is_empty());
    /// ```
    pub fn pop_last(&mut self) -> Option<(Vec<u8>, V)> {
        let key = self.iter().next_back()?.0;
        let value = self.remove(&key)?;
        Some((key, value))
    }

    /// Moves every entry of `other` into this map, leaving `other` empty. An
    /// entry of `other` replaces one with the same key here, as in
    /// [`BTreeMap::append`](std::collections::BTreeMap::append).
    ///
    /// Into an empty map this is a swap. Otherwise it costs one insert per
    /// entry of `other` (batched, as [`extend`](Self::extend) does): the
    /// nodes live in each map's own arena, so a tree cannot take over
    /// another's nodes as they are.
    ///
    /// ```
    /// let mut a: memkv::FastArt<u8> = [("a", 1), ("b", 2)].into_iter().collect();
    /// let mut b: memkv::FastArt<u8> = [("b", 20), ("c", 30)].into_iter().collect();
    /// a.append(&mut b);
    /// assert!(b.is_empty());
    /// assert_eq!(a.values().copied().collect::<Vec<_>>(), [1, 20, 30]);
    /// ```
    pub fn append(&mut self, other: &mut FastArt<V>) {
        let other = other.take_entries();
        if self.is_empty() {
            self.raw = other.raw;
        } else {
            self.extend(other);
        }
    }

    /// Splits the map in two at `key`: returns the entries whose keys are
    /// `key` or after it, and keeps those before, as
    /// [`BTreeMap::split_off`](std::collections::BTreeMap::split_off).
    ///
    /// Costs a removal and an insert per entry moved, except when every
    /// entry moves (the map is handed over whole) or none does.
    ///
    /// ```
    /// let mut a: memkv::FastArt<u8> = [("a", 1), ("ab", 2), ("b", 3)].into_iter().collect();
    /// let b = a.split_off("ab");
    /// assert_eq!(a.keys().collect::<Vec<_>>(), [b"a".to_vec()]);
    /// assert_eq!(b.keys().collect::<Vec<_>>(), [b"ab".to_vec(), b"b".to_vec()]);
    /// ```
    pub fn split_off(&mut self, key: impl AsRef<[u8]>) -> FastArt<V> {
        let key = key.as_ref();
        let mut tail = self.empty_like();
        match self.keys().next() {
            None => return tail,
            Some(first) if first.as_slice() >= key => return self.take_entries(),
            Some(_) => {}
        }
        // From the back, so each step finds its entry by one descent.
        while let Some(last) = self.last_entry()
            && last.key().as_slice() >= key
        {
            let (moved, value) = last.remove_entry();
            tail.insert(moved, value);
        }
        tail
    }

    /// Re-lays the map out in memory for reading, and frees the space that
    /// removals and node growth left unused (the regions below leave a
    /// little room of their own: on the Debian paths the map went from 35.3
    /// to 35.7 bytes per key; a map small enough for the CPU caches is
    /// copied without them, and grows by no more than a line or two of
    /// rounding).
    ///
    /// Keys inserted in random order end up scattered over memory, so a
    /// lookup touches a new cache line at nearly every level and an ordered
    /// walk jumps across memory for every key. After `compact`, leaves lie in
    /// key order, and the nodes a lookup is most likely to walk through next
    /// lie together in 1 KiB regions that [`get`](FastArt::get) loads whole:
    /// on the Debian paths (7.3M keys) ordered iteration gets 1.7–2.4× faster
    /// and lookups 1.5–1.7× (the benchmark harness's latest runs). Inserts
    /// and removals that follow load the regions the same way (about 1.8×
    /// faster than on the map as inserted, same keys); the nodes they
    /// create land outside the regions. A growing map is compacted
    /// [automatically](FastArt#automatic-compaction) each time it doubles;
    /// call `compact` after a bulk load that ends far from such a point, as
    /// you would `shrink_to_fit`.
    ///
    /// It walks the whole map twice (about 1.2–1.4 seconds per 7 million
    /// keys) and holds the old and the new copy until it returns, with a
    /// list of the nodes (16 bytes each), so it briefly needs about 2.2
    /// times the map's memory. Entries, values and their order are unchanged.
    ///
    /// ```
    /// let mut map: memkv::FastArt<u32> = (0..1000u32).map(|i| (i.to_string(), i)).collect();
    /// map.compact();
    /// assert_eq!(map.get("500"), Some(&500));
    /// ```
    pub fn compact(&mut self) {
        self.raw.compact();
    }

    /// Heap bytes held by the map: the arena's chunks (free space in them
    /// included), its chunk table, and out-of-line long key parts and boxed
    /// values.
    ///
    /// This is exactly what the map asked the allocator for. It leaves out
    /// memory that values own themselves (a `String`'s buffer) and the
    /// `FastArt` struct itself. Arena chunks are large allocations, so the
    /// allocator adds no rounding to them; out-of-line parts (rare: only
    /// strings over 254 bytes) may be rounded up by the allocator.
    ///
    /// ```
    /// let mut map = memkv::FastArt::new();
    /// assert_eq!(map.memory_usage(), 0);
    /// map.insert("usr/share/doc/memkv/README", 1u64);
    /// assert!(map.memory_usage() > 0);
    /// map.clear();
    /// assert_eq!(map.memory_usage(), 0);
    /// ```
    pub fn memory_usage(&self) -> usize {
        self.raw.memory_usage()
    }

    /// Node counts and byte totals by kind, walking the whole tree.
    ///
    /// ```
    /// let map: memkv::FastArt<u64> = [("ab", 1), ("ac", 2), ("b", 3)].into_iter().collect();
    /// let stats = map.stats();
    /// assert_eq!((stats.len, stats.node4, stats.max_depth), (3, 2, 2));
    /// ```
    pub fn stats(&self) -> ArtStats {
        let s = self.raw.stats();
        ArtStats {
            len: s.leaves,
            node4: s.nodes[0],
            node16: s.nodes[1],
            node48: s.nodes[2],
            node256: s.nodes[3],
            leaf_bytes: s.leaf_bytes,
            node_bytes: s.node_bytes,
            free_bytes: s.free_bytes,
            out_of_line_bytes: s.out_of_line_bytes,
            max_depth: s.max_depth,
            mean_depth: s.depth_sum as f64 / s.leaves.max(1) as f64,
            added_since_compact: self.raw.growth_since_compact().0,
        }
    }

    /// Verifies the tree's internal invariants; for tests.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        self.raw.check()
    }
}

impl<V> Default for FastArt<V> {
    fn default() -> Self {
        FastArt::new()
    }
}

impl<V: Clone> Clone for FastArt<V> {
    fn clone(&self) -> Self {
        // One compaction at the end rather than one at every doubling.
        let mut map = FastArt::without_auto_compact();
        let mut it = self.iter();
        while let Some((key, value)) = it.next_entry() {
            map.insert(key, value.clone());
        }
        map.auto_compact = self.auto_compact;
        if map.auto_compact && map.len() >= AUTO_COMPACT_MIN_KEYS {
            map.compact();
        }
        map
    }
}

impl<V: fmt::Debug> fmt::Debug for FastArt<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        let mut it = self.iter();
        while let Some((key, value)) = it.next_entry() {
            map.entry(&ByteStr(key), value);
        }
        map.finish()
    }
}

impl<V: PartialEq> PartialEq for FastArt<V> {
    fn eq(&self, other: &Self) -> bool {
        if self.len() != other.len() {
            return false;
        }
        let (mut a, mut b) = (self.iter(), other.iter());
        while let (Some(x), Some(y)) = (a.next_entry(), b.next_entry()) {
            if x != y {
                return false;
            }
        }
        true
    }
}

impl<V: Eq> Eq for FastArt<V> {}

/// Maps compare as the sequences of their entries in key order, as
/// `BTreeMap`s do.
impl<V: PartialOrd> PartialOrd for FastArt<V> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        let (mut a, mut b) = (self.iter(), other.iter());
        loop {
            match (a.next_entry(), b.next_entry()) {
                (None, None) => return Some(Ordering::Equal),
                (None, Some(_)) => return Some(Ordering::Less),
                (Some(_), None) => return Some(Ordering::Greater),
                (Some(x), Some(y)) => match x.partial_cmp(&y) {
                    Some(Ordering::Equal) => {}
                    unequal => return unequal,
                },
            }
        }
    }
}

impl<V: Ord> Ord for FastArt<V> {
    fn cmp(&self, other: &Self) -> Ordering {
        let (mut a, mut b) = (self.iter(), other.iter());
        loop {
            match (a.next_entry(), b.next_entry()) {
                (None, None) => return Ordering::Equal,
                (None, Some(_)) => return Ordering::Less,
                (Some(_), None) => return Ordering::Greater,
                (Some(x), Some(y)) => match x.cmp(&y) {
                    Ordering::Equal => {}
                    unequal => return unequal,
                },
            }
        }
    }
}

/// Hashes the length, then every key and value in key order (equal maps
/// hash alike, as `Eq` requires).
impl<V: Hash> Hash for FastArt<V> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.len());
        let mut it = self.iter();
        while let Some(entry) = it.next_entry() {
            entry.hash(state);
        }
    }
}

/// `map[key]`: the value stored under `key`.
///
/// # Panics
/// If `key` is not in the map.
///
/// ```
/// let map: memkv::FastArt<u8> = [("a", 1)].into_iter().collect();
/// assert_eq!(map["a"], 1);
/// ```
impl<K: AsRef<[u8]>, V> Index<K> for FastArt<V> {
    type Output = V;

    fn index(&self, key: K) -> &V {
        self.get(key).expect("key not in the FastArt")
    }
}

/// ```
/// let map = memkv::FastArt::from([("a", 1), ("b", 2)]);
/// assert_eq!(map.len(), 2);
/// ```
impl<K: AsRef<[u8]>, V, const N: usize> From<[(K, V); N]> for FastArt<V> {
    fn from(entries: [(K, V); N]) -> Self {
        entries.into_iter().collect()
    }
}

impl<K: AsRef<[u8]>, V> FromIterator<(K, V)> for FastArt<V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut map = FastArt::new();
        map.extend(iter);
        map
    }
}

/// Above this size a tree is well past the caches (about 4 MB of them are
/// ours on the measuring machine), and `extend` looks a batch's keys up
/// before inserting them. Below it the lookups mostly add work: over the
/// 100 k-path sample (5 MB) they made `extend` 0.5–1.0× `insert` (without:
/// 0.96–1.12×, noise); the first 16 MiB of a large load are a small part.
const PREFETCH_PATHS_ABOVE: usize = 16 << 20;

/// Above this size [`FastArt::path_toward`] walks. Its steps cost little
/// beside a lookup that waits for memory anyway, unlike `extend`'s lookups
/// (above), which add a whole descent to each insert. A `HybridMap` delta
/// is mostly below 16 MiB (it is merged at 6% of the base): with that
/// threshold its writes gained 1–4% (noise), with this one 14–17% (the
/// mixed workload over the full Debian paths, alternating runs).
const WALK_TOWARD_ABOVE: usize = 1 << 20;

impl<K: AsRef<[u8]>, V> Extend<(K, V)> for FastArt<V> {
    /// Inserts every entry, with the same result as calling
    /// [`insert`](FastArt::insert) for each in turn: a later entry replaces
    /// an earlier one with the same key.
    ///
    /// Faster than that loop on a map well past the CPU caches (16 MiB):
    /// entries are taken 16 at a time and their lookups run side by side
    /// first, as in [`get_many`](FastArt::get_many), so the inserts then find
    /// their paths in the cache (over 7.3 M paths, 1.85–1.93× the rate of
    /// `insert` in one process, 1.3–2.1× in the benchmark harness's full
    /// runs).
    /// If the iterator or a replaced value's `Drop` panics, the entries
    /// taken but not yet inserted (at most 15) are dropped; every entry
    /// inserted before stays.
    ///
    /// Unlike `insert`, it does not [compact](FastArt#automatic-compaction)
    /// the map as it grows: a bulk load is better compacted once, at its
    /// end, by calling [`compact`](FastArt::compact). If you do not, the
    /// next `insert` compacts the map when one is due.
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        let mut iter = iter.into_iter();
        let mut batch: Vec<(K, V)> = Vec::new();
        loop {
            if self.memory_usage() < PREFETCH_PATHS_ABOVE {
                let Some((key, value)) = iter.next() else {
                    return;
                };
                self.insert_in_place(key.as_ref(), value);
                continue;
            }
            batch.extend(iter.by_ref().take(LANES));
            if batch.is_empty() {
                return;
            }
            self.prefetch_paths(batch.len(), |i| batch[i].0.as_ref());
            for (key, value) in batch.drain(..) {
                self.insert_in_place(key.as_ref(), value);
            }
        }
    }
}

impl<'a, V> IntoIterator for &'a FastArt<V> {
    type Item = (Vec<u8>, &'a V);
    type IntoIter = Iter<'a, V>;

    fn into_iter(self) -> Iter<'a, V> {
        self.iter()
    }
}

impl<'a, V> IntoIterator for &'a mut FastArt<V> {
    type Item = (Vec<u8>, &'a mut V);
    type IntoIter = IterMut<'a, V>;

    fn into_iter(self) -> IterMut<'a, V> {
        self.iter_mut()
    }
}

impl<V> IntoIterator for FastArt<V> {
    type Item = (Vec<u8>, V);
    type IntoIter = IntoIter<V>;

    fn into_iter(self) -> IntoIter<V> {
        IntoIter::new(self.raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(i: u32) -> String {
        format!("usr/share/doc/pkg{}/file{i}", i % 13)
    }

    #[test]
    fn path_toward_walks_a_large_map_to_the_key_and_stays_over() {
        let small: FastArt<u32> = (0..100).map(|i| (path(i), i)).collect();
        let mut walk = small.path_toward(b"usr/share/doc/pkg1/file1");
        assert!(!walk(), "a map in the caches is not walked");
        // Values of 1 KiB take the map past the size at which it walks.
        let large: FastArt<(u32, [u8; 1 << 10])> =
            (0..1100).map(|i| (path(i), (i, [0; 1 << 10]))).collect();
        assert!(large.memory_usage() > WALK_TOWARD_ABOVE);
        let depth = large.stats().max_depth;
        for key in [
            path(7),
            path(1099),
            "usr/share/doc/pkg3/x".into(),
            String::new(),
        ] {
            let mut walk = large.path_toward(key.as_bytes());
            let mut steps = 0;
            while walk() {
                steps += 1;
                assert!(steps <= depth, "{key}: a walk longer than the tree is deep");
            }
            assert!(!walk() && !walk(), "{key}: a walk over stays over");
            if !key.is_empty() && key != "usr/share/doc/pkg3/x" {
                assert!(steps >= 2, "{key}: {steps} steps to a stored key");
            }
        }
    }

    #[test]
    fn stats_average_the_depth_and_debug_shows_the_entries() {
        // The root's Node4 holds "b\n" and a Node4 for "ab" and "ac".
        let map = FastArt::from([("ab", 1), ("ac", 2), ("b\n", 3)]);
        let stats = map.stats();
        assert_eq!((stats.len, stats.node4, stats.max_depth), (3, 2, 2));
        assert_eq!(stats.mean_depth, (2 + 2 + 1) as f64 / 3.0);
        assert_eq!(FastArt::<u8>::new().stats().mean_depth, 0.0);
        assert_eq!(format!("{map:?}"), r#"{b"ab": 1, b"ac": 2, b"b\n": 3}"#);
    }

    /// Fills a map whose node and leaf arenas may hold only so many chunks,
    /// until `try_insert` refuses; returns the map and the keys it took.
    fn filled(node_chunks: usize, leaf_chunks: usize) -> (FastArt<u64>, u32) {
        let mut map = FastArt::new();
        map.raw.limit_chunks(node_chunks, leaf_chunks);
        let mut taken = 0;
        loop {
            match map.try_insert(path(taken), u64::from(taken)) {
                Ok(old) => assert_eq!(old, None, "distinct keys"),
                Err(refused) => {
                    assert!(matches!(refused.error(), Error::CapacityExceeded { .. }));
                    let reason = refused.error().to_string();
                    assert_eq!(refused.to_string(), format!("insert failed: {reason}"));
                    let source = std::error::Error::source(&refused).map(|e| e.to_string());
                    assert_eq!(source, Some(reason));
                    assert_eq!(
                        refused.into_value(),
                        u64::from(taken),
                        "the value handed back"
                    );
                    return (map, taken);
                }
            }
            taken += 1;
            assert!(taken < 100_000, "the limit was never reached");
        }
    }

    /// At the arenas' limit `try_insert` hands the value back and changes
    /// nothing; the map reads and removes as before, and takes inserts again
    /// once removals and a compaction have made room.
    #[test]
    fn try_insert_at_the_limit_changes_nothing() {
        // Either arena may be the one that runs out.
        for (node_chunks, leaf_chunks) in [(6, 6), (6, 1000), (1000, 6)] {
            at_the_limit(node_chunks, leaf_chunks);
        }
    }

    fn at_the_limit(node_chunks: usize, leaf_chunks: usize) {
        let (mut map, taken) = filled(node_chunks, leaf_chunks);
        assert!(taken > 0);
        assert_eq!(map.len(), taken as usize);
        map.check_invariants().unwrap();
        assert_eq!(map.get(path(taken)), None);
        for i in 0..taken {
            assert_eq!(map.get(path(i)), Some(&u64::from(i)), "key {i}");
        }
        let bytes = map.memory_usage();
        assert!(map.try_insert(path(taken), 0).is_err(), "still full");
        assert_eq!(map.memory_usage(), bytes);
        // A key already there takes its new value: that needs no room.
        assert_eq!(map.try_insert(path(0), 70).ok(), Some(Some(0)));
        assert_eq!(map.insert(path(0), 0), Some(70));
        assert_eq!(map.memory_usage(), bytes);

        for i in (0..taken).step_by(2) {
            assert_eq!(map.remove(path(i)), Some(u64::from(i)));
        }
        map.check_invariants().unwrap();
        map.compact();
        // The compacted arenas are new: the same limit again.
        map.raw.limit_chunks(node_chunks, leaf_chunks);
        assert_eq!(map.try_insert(path(taken), 7).unwrap(), None);
        assert_eq!(map.len(), taken as usize / 2 + 1);
        map.check_invariants().unwrap();
    }
}
