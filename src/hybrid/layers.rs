//! The layers of a hybrid map and how a key is resolved through them.
//!
//! # Invariants
//!
//! A map is, from newest to oldest:
//!
//! 1. the **fresh delta**, a mutable [`Delta`] behind the map's `RwLock`,
//!    which takes every write;
//! 2. zero or more **sealed deltas**, immutable [`Delta`]s in
//!    [`Layers::deltas`], newest first. A merge seals the fresh delta (moves
//!    it here, under the fresh delta's write lock) and merges the sealed
//!    deltas into a new base. There is more than one only after a merge
//!    failed: the failed merge's delta stays here, readable, and the next
//!    merge seals the fresh delta on top of it and merges both;
//! 3. the **base**, frozen layers for consecutive ranges of keys (see
//!    [`Base`]).
//!
//! A delta entry is `Some(value)` (an insert) or `None` (a **tombstone**: the
//! key was removed). The first layer that holds a key decides: its value, or
//! absence for a tombstone. So:
//!
//! * a tombstone is only needed, and only written, when an older layer holds
//!   a value for the key; a key whose only value is in the fresh delta is
//!   removed from it outright;
//! * merging (sealed deltas + base → new base) drops tombstones and the
//!   values they hide, and keeps the newest value of every other key. The new
//!   base therefore answers every key exactly as the sealed deltas and old
//!   base did together, which is why a merge's end can swap the layers
//!   without the fresh delta's lock: before and after, readers see the same
//!   map. The same holds for each part of the new base, over its range of
//!   keys, so a merge puts each part in place as soon as it is built (the
//!   sealed deltas stay above it until the merge ends, and agree with it).
//!
//! [`Layers`] is immutable and shared through an `Arc` (in an `ArcSwap`), so
//! a reader or an iterator that holds one sees a fixed set of older layers
//! however many merges begin or end meanwhile.

use std::fmt;
use std::sync::Arc;

use super::base::Base;
use super::filter::{KeyFilter, key_hash};
use crate::{FastArt, FrozenLayer, FrozenValue};

/// A delta: changes over the layers below it. `None` is a tombstone.
///
/// Invariant: every key in `art` has been added to `filter` since the filter
/// was last built, so a key the filter rules out is not in `art`. Writes go
/// through [`Delta::put`] and [`Delta::remove`], which keep it.
pub(crate) struct Delta<V> {
    art: FastArt<Option<V>>,
    filter: KeyFilter,
    /// How many of `art`'s entries are tombstones.
    tombstones: usize,
}

impl<V> Delta<V> {
    /// An empty delta whose filter is sized for about `keys` keys (it grows
    /// if more come).
    pub(crate) fn with_capacity(keys: usize) -> Self {
        Delta {
            art: FastArt::new(),
            filter: KeyFilter::with_capacity(keys),
            tombstones: 0,
        }
    }

    /// The entries: values and tombstones.
    #[inline]
    pub(crate) fn art(&self) -> &FastArt<Option<V>> {
        &self.art
    }

    /// How many entries are tombstones.
    #[inline]
    pub(crate) fn tombstones(&self) -> usize {
        self.tombstones
    }

    /// Heap bytes: the tree and the filter.
    pub(crate) fn memory_usage(&self) -> usize {
        self.art.memory_usage() + self.filter.memory_usage()
    }

    /// What this layer says about `key` (whose [`key_hash`] is `hash`):
    /// `None` if it says nothing, `Some(None)` if the key is removed,
    /// `Some(Some(v))` if it has `v`.
    #[inline]
    pub(crate) fn lookup(&self, key: &[u8], hash: u64) -> Option<&Option<V>> {
        if !self.filter.may_contain(hash) {
            return None;
        }
        self.art.get(key)
    }

    /// Writes a value (`Some`) or a tombstone (`None`) for `key`; returns
    /// the entry it replaced.
    pub(crate) fn put(&mut self, key: &[u8], hash: u64, slot: Option<V>) -> Option<Option<V>> {
        let tombstone = slot.is_none();
        let old = self.art.insert(key, slot);
        match old {
            None => {
                self.filter.add(hash);
                if self.filter.is_full() {
                    self.rebuild_filter();
                }
            }
            Some(None) => self.tombstones -= 1,
            Some(Some(_)) => {}
        }
        if tombstone {
            self.tombstones += 1;
        }
        old
    }

    /// Removes `key`'s entry outright; returns it.
    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<Option<V>> {
        // The filter keeps the key's bits: a false positive, never a miss.
        let old = self.art.remove(key);
        if let Some(None) = old {
            self.tombstones -= 1;
        }
        old
    }

    /// Rebuilds the filter for twice the keys it holds now: the delta grew
    /// past what its filter was sized for (merges falling behind, or a
    /// manual policy).
    #[cold]
    fn rebuild_filter(&mut self) {
        let mut filter = KeyFilter::with_capacity(2 * self.art.len());
        let mut entries = self.art.iter();
        while let Some((key, _)) = entries.next_entry() {
            filter.add(key_hash(key));
        }
        self.filter = filter;
    }
}

impl<V> fmt::Debug for Delta<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delta")
            .field("entries", &self.art.len())
            .field("tombstones", &self.tombstones)
            .field("filter", &self.filter)
            .finish()
    }
}

/// The immutable layers under the fresh delta: sealed deltas (newest first)
/// and the base.
pub(crate) struct Layers<V: FrozenValue> {
    pub(crate) deltas: Vec<Arc<Delta<V>>>,
    pub(crate) base: Base<V>,
    /// Counts seals. A writer that looked a key up in the older layers
    /// before taking the fresh delta's lock compares it to know whether its
    /// answer still holds (a seal moves the fresh delta's entries down here;
    /// a merge's end changes nothing a lookup can see).
    pub(crate) seals: u64,
}

impl<V: FrozenValue> Layers<V> {
    pub(crate) fn new(base: FrozenLayer<V>) -> Self {
        Layers {
            deltas: Vec::new(),
            base: Base::whole(base),
            seals: 0,
        }
    }

    /// The value of `key` (whose [`key_hash`] is `hash`) in these layers.
    #[inline]
    pub(crate) fn get(&self, key: &[u8], hash: u64) -> Option<V>
    where
        V: Clone,
    {
        for delta in &self.deltas {
            if let Some(slot) = delta.lookup(key, hash) {
                return slot.clone();
            }
        }
        self.base.get(key)
    }

    /// Whether `key` (whose [`key_hash`] is `hash`) has a value in these
    /// layers.
    #[inline]
    pub(crate) fn contains_key(&self, key: &[u8], hash: u64) -> bool {
        for delta in &self.deltas {
            if let Some(slot) = delta.lookup(key, hash) {
                return slot.is_some();
            }
        }
        self.base.contains_key(key)
    }

    /// Entries (values and tombstones) in the sealed deltas.
    pub(crate) fn delta_entries(&self) -> usize {
        self.deltas.iter().map(|d| d.art.len()).sum()
    }

    /// Tombstones in the sealed deltas.
    pub(crate) fn delta_tombstones(&self) -> usize {
        self.deltas.iter().map(|d| d.tombstones).sum()
    }

    /// Heap bytes of the sealed deltas.
    pub(crate) fn delta_bytes(&self) -> usize {
        self.deltas.iter().map(|d| d.memory_usage()).sum()
    }
}

impl<V: FrozenValue> fmt::Debug for Layers<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Layers")
            .field("deltas", &self.deltas)
            .field("base", &self.base)
            .field("seals", &self.seals)
            .finish()
    }
}
