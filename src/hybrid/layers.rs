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
//! A delta entry is a value (an insert) or a **tombstone** (the key was
//! removed). The first layer that holds a key decides: its value, or
//! absence for a tombstone. So:
//!
//! * an entry of the fresh delta is **settled** (the map knows whether the
//!   layers below hold its key, and has counted it in `len`) or **pending**
//!   (written by a blind write, [`put`](super::HybridMap::put) or
//!   [`delete`](super::HybridMap::delete), which does not look below). A
//!   pending entry answers reads as a settled one does; only `len` needs to
//!   know what lies below it. `len` and any write with its own lookup below
//!   settle the fresh delta's; a sealed delta keeps its own, and **the merge
//!   that sealed it counts them** ([`Layers::count_pending`]) before it
//!   builds anything, against the layers then below it, which its parts
//!   have not replaced yet. Otherwise merges read pending entries as any;
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
use std::mem;
use std::ops::{Bound, ControlFlow};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use super::base::Base;
use super::filter::{KeyFilter, key_hash};
use super::iter::Direction;
use crate::art::Guarded;
use crate::keys::before_end;
use crate::search::{Guard, Unguarded};
use crate::{FastArt, FrozenLayer, FrozenValue};

/// A delta: changes over the layers below it, as values and tombstones.
///
/// Tombstones live in a tree of their own rather than as `None` in a
/// `FastArt<Option<V>>`: a `u64` value then takes 8 bytes in its leaf, not
/// 16, and a tombstone none. On the Debian paths that is about an eighth of
/// a delta's bytes (its keys' suffixes are most of the rest).
///
/// `pending` holds the entries of blind writes (values and tombstones,
/// `None`) until they are settled: whether the layers below hold the key is
/// not known yet (see the module's invariants). A pending `u64` takes 16
/// bytes in its leaf, not 8; `len` moves pending entries to the settled
/// trees, and a merge drops the whole delta.
///
/// Invariants: no key is in more than one of `values`, `tombstones` and
/// `pending`; every key in any has been added to `filter` since the filter
/// was last built (or the filter rules nothing out), so a key the filter
/// rules out is in none. Writes go
/// through [`Delta::put`], [`Delta::put_pending`], [`Delta::settle`] and
/// [`Delta::remove`], which keep both.
///
/// In the fresh delta, `ends` holds what is known to be empty at the map's
/// ends: no layer has a live entry at or before `ends[First]`, nor at or
/// after `ends[Last]`. [`Delta::put`] forgets a bound a new value crosses;
/// tombstones and removals leave them true. Searches for an end, which may
/// hold only the read lock, move them on (through the mutex): with the
/// fresh delta locked, for read or write, no write comes between what they
/// found and what they record.
pub(crate) struct Delta<V> {
    values: FastArt<V>,
    tombstones: FastArt<()>,
    pending: FastArt<Option<V>>,
    /// How many of `pending` are tombstones.
    pending_tombstones: usize,
    /// Once sealed: the change the pending entries make to the map's count
    /// of keys (see [`Layers::count_pending`]).
    pending_change: OnceLock<isize>,
    filter: KeyFilter,
    ends: Mutex<[Option<Box<[u8]>>; 2]>,
}

/// One end of a map's key order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Edge {
    First,
    Last,
}

/// Byte bounds on a delta's keys.
pub(crate) type KeyBounds<'a> = (Bound<&'a [u8]>, Bound<&'a [u8]>);

impl<V> Delta<V> {
    /// An empty delta whose filter is sized for about `keys` keys (it grows
    /// if more come).
    pub(crate) fn with_capacity(keys: usize) -> Self {
        // Readers wait on the fresh delta's lock; merges replace deltas
        // long before their layout would matter.
        Delta {
            values: FastArt::without_auto_compact(),
            tombstones: FastArt::without_auto_compact(),
            pending: FastArt::without_auto_compact(),
            pending_tombstones: 0,
            pending_change: OnceLock::new(),
            filter: KeyFilter::with_capacity(keys),
            ends: Mutex::new([None, None]),
        }
    }

    /// A delta of `values`, settled, as over layers that hold none of their
    /// keys: a map built in one go. With `filtered` false its filter lets
    /// every key through, which saves a pass over the keys (2.6 s for 7.3 M
    /// paths) and costs lookups only a descent into the tree for keys it
    /// does not hold: for a delta merged at once (`HybridMap::build_from`).
    pub(crate) fn of_values(mut values: FastArt<V>, filtered: bool) -> Self {
        values.set_auto_compact(false);
        let mut delta = Delta {
            values,
            filter: KeyFilter::pass_all(),
            ..Delta::with_capacity(0)
        };
        if filtered {
            delta.filter = delta.filter_of_keys(delta.len());
        }
        delta
    }

    /// A key such that no layer has a live entry at or beyond it towards
    /// `edge`, if one is known: where a search for that end may start, past
    /// the tombstones that earlier searches stepped over. Only the fresh
    /// delta's is kept up.
    pub(crate) fn empty_end(&self, edge: Edge) -> Option<Vec<u8>> {
        self.lock_ends()[edge as usize]
            .as_deref()
            .map(<[u8]>::to_vec)
    }

    /// Records that no layer has a live entry at or beyond `key` towards
    /// `edge`, unless a known end reaches further already. The caller holds
    /// the fresh delta's lock (read or write) and found it so under it.
    pub(crate) fn note_empty_end(&self, edge: Edge, key: &[u8]) {
        let mut ends = self.lock_ends();
        let end = &mut ends[edge as usize];
        let further = match (end.as_deref(), edge) {
            (None, _) => true,
            (Some(known), Edge::First) => key > known,
            (Some(known), Edge::Last) => key < known,
        };
        if further {
            *end = Some(key.into());
        }
    }

    fn lock_ends(&self) -> MutexGuard<'_, [Option<Box<[u8]>>; 2]> {
        // No code that can panic runs under this lock.
        self.ends.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands what is known about the empty ends on to `next`, the fresh
    /// delta that replaces this one at a seal (which moves entries down
    /// and changes no key's value).
    pub(crate) fn pass_empty_ends(&mut self, next: &mut Delta<V>) {
        *next.ends.get_mut().unwrap_or_else(PoisonError::into_inner) =
            mem::take(self.ends.get_mut().unwrap_or_else(PoisonError::into_inner));
    }

    /// Entries: values and tombstones, settled or pending.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.values.len() + self.tombstones.len() + self.pending.len()
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many entries are tombstones.
    #[inline]
    pub(crate) fn tombstones(&self) -> usize {
        self.tombstones.len() + self.pending_tombstones
    }

    /// How many entries are pending: written blind, not yet settled.
    #[inline]
    pub(crate) fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Heap bytes: the three trees, the filter and the empty ends' keys.
    pub(crate) fn memory_usage(&self) -> usize {
        let ends: usize = self.lock_ends().iter().flatten().map(|key| key.len()).sum();
        self.values.memory_usage()
            + self.tombstones.memory_usage()
            + self.pending.memory_usage()
            + self.filter.memory_usage()
            + ends
    }

    /// What this layer says about `key` (whose [`key_hash`] is `hash`):
    /// `None` if it says nothing, `Some(None)` if the key is removed,
    /// `Some(Some(v))` if it has `v`.
    #[inline]
    pub(crate) fn lookup(&self, key: &[u8], hash: u64) -> Option<Option<&V>> {
        // An empty delta (after a merge, or `open`) says nothing without
        // reading its filter, a block sized for the delta to come: a
        // likely miss on the way to the base.
        if self.is_empty() || !self.filter.may_contain(hash) {
            return None;
        }
        if let Some(value) = self.values.get(key) {
            return Some(Some(value));
        }
        // Before the settled tombstones: where blind writes are used, most
        // entries are pending; where they are not, this tree is empty.
        if let Some(slot) = self.pending.get(key) {
            return Some(slot.as_ref());
        }
        self.tombstones.contains_key(key).then_some(None)
    }

    /// What this layer says about each prefix of `key`: `say(len, slot)`
    /// for each key `key[..len]` it holds, `slot` as in
    /// [`lookup`](Self::lookup). A length may come more than once, in the
    /// order `lookup` consults the trees: the first word counts.
    pub(crate) fn prefixes_of(&self, key: &[u8], mut say: impl FnMut(usize, Option<&V>)) {
        if self.is_empty() {
            return;
        }
        for (prefix, value) in self.values.prefixes_of(key) {
            say(prefix.len(), Some(value));
        }
        for (prefix, slot) in self.pending.prefixes_of(key) {
            say(prefix.len(), slot.as_ref());
        }
        for (prefix, ()) in self.tombstones.prefixes_of(key) {
            say(prefix.len(), None);
        }
    }

    /// Asks the CPU to load the filter block that a lookup of a key with
    /// this hash reads first.
    #[inline]
    pub(crate) fn prefetch_filter(&self, hash: u64) {
        if !self.is_empty() {
            self.filter.prefetch(hash);
        }
    }

    /// Whether the filter lets a key with this hash through.
    #[cfg(test)]
    pub(crate) fn filter_passes(&self, hash: u64) -> bool {
        self.filter.may_contain(hash)
    }

    /// Keys its filter was sized for.
    #[cfg(test)]
    pub(crate) fn filter_capacity(&self) -> usize {
        self.filter.capacity()
    }

    /// Whether `key` has a settled entry here (a value or a tombstone whose
    /// standing over the layers below is known).
    #[inline]
    pub(crate) fn has_settled(&self, key: &[u8], hash: u64) -> bool {
        self.filter.may_contain(hash)
            && (self.values.contains_key(key) || self.tombstones.contains_key(key))
    }

    /// A walk toward where [`put`](Self::put) will write `key` (its filter
    /// block, then its path in the tree of values), one node per call, to
    /// run beside the lookup of the key in the older layers; see
    /// [`FastArt::path_toward`].
    pub(crate) fn path_toward<'a>(&'a self, key: &'a [u8], hash: u64) -> impl FnMut() -> bool + 'a {
        self.filter.prefetch(hash);
        self.values.path_toward(key)
    }

    /// Brings the paths of `keys` in the tree of values into the cache,
    /// looking them up side by side, for the writes that follow.
    pub(crate) fn prefetch_paths(&self, keys: &[&[u8]]) {
        self.values.prefetch_paths_toward(keys.len(), |i| keys[i]);
    }

    /// Writes a settled value (`Some`) or tombstone (`None`) for `key`,
    /// which has no pending entry ([`settle`](Self::settle) it first);
    /// returns the entry it replaced.
    pub(crate) fn put(&mut self, key: &[u8], hash: u64, slot: Option<V>) -> Option<Option<V>> {
        // A key the filter rules out is in neither tree: no need to look
        // in the other one (most writes are of keys new to the delta).
        let known = self.filter.may_contain(hash);
        debug_assert!(!known || !self.pending.contains_key(key), "settle first");
        let old = match slot {
            Some(value) => {
                self.forget_ends_crossed_by(key);
                match self.values.insert(key, value) {
                    Some(old) => Some(Some(old)),
                    None if known => self.tombstones.remove(key).map(|()| None),
                    None => None,
                }
            }
            None => match self.tombstones.insert(key, ()) {
                Some(()) => Some(None),
                None if known => self.values.remove(key).map(Some),
                None => None,
            },
        };
        if old.is_none() {
            self.filter.add(hash);
            if self.filter.is_full() {
                self.rebuild_filter();
            }
        }
        old
    }

    /// Writes a pending value (`Some`) or tombstone (`None`) for `key`, which
    /// has no settled entry: a blind write, which does not know whether the
    /// layers below hold the key. Returns the pending entry it replaced.
    pub(crate) fn put_pending(
        &mut self,
        key: &[u8],
        hash: u64,
        slot: Option<V>,
    ) -> Option<Option<V>> {
        debug_assert!(
            !self.has_settled(key, hash),
            "a settled key is written settled"
        );
        if slot.is_some() {
            self.forget_ends_crossed_by(key);
        } else {
            self.pending_tombstones += 1;
        }
        let old = self.pending.insert(key, slot);
        match &old {
            Some(None) => self.pending_tombstones -= 1,
            Some(Some(_)) => {}
            None => {
                self.filter.add(hash);
                if self.filter.is_full() {
                    self.rebuild_filter();
                }
            }
        }
        old
    }

    /// Settles `key`'s pending entry, if it has one, now that whether the
    /// layers below hold the key (`below`) is known: a value or a tombstone
    /// that hides something becomes settled, a tombstone over nothing goes.
    /// Returns the change to the map's count of settled keys: +1 for a
    /// value over nothing (a key new to the map), -1 for a tombstone over a
    /// value, 0 otherwise.
    pub(crate) fn settle(&mut self, key: &[u8], hash: u64, below: bool) -> isize {
        if self.pending.is_empty() || !self.filter.may_contain(hash) {
            return 0;
        }
        match self.pending.remove(key) {
            None => 0,
            Some(Some(value)) => {
                self.values.insert(key, value);
                isize::from(!below)
            }
            Some(None) => {
                self.pending_tombstones -= 1;
                if below {
                    self.tombstones.insert(key, ());
                    -1
                } else {
                    0
                }
            }
        }
    }

    /// Up to `max` pending entries after `after` (from the first if
    /// `None`), in order: each key, and whether it is a value (not a
    /// tombstone). In batches, so that settling or counting many pending
    /// entries never copies all their keys at once.
    pub(crate) fn pending_batch(&self, after: Option<&[u8]>, max: usize) -> Vec<(Vec<u8>, bool)> {
        let start = after.map_or(Bound::Unbounded, Bound::Excluded);
        let mut entries = self.pending.range::<[u8], _>((start, Bound::Unbounded));
        let mut batch = Vec::with_capacity(max.min(self.pending.len()));
        while batch.len() < max
            && let Some((key, slot)) = entries.next_entry()
        {
            batch.push((key.to_vec(), slot.is_some()));
        }
        batch
    }

    /// A live entry for `key` is being written: an empty end that reaches
    /// past it no longer is.
    #[inline]
    fn forget_ends_crossed_by(&mut self, key: &[u8]) {
        let [first, last] = self.ends.get_mut().unwrap_or_else(PoisonError::into_inner);
        if first.as_deref().is_some_and(|end| key <= end) {
            *first = None;
        }
        if last.as_deref().is_some_and(|end| key >= end) {
            *last = None;
        }
    }

    /// Removes `key`'s settled entry outright; returns it.
    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<Option<V>> {
        // The filter keeps the key's bits: a false positive, never a miss.
        debug_assert!(!self.pending.contains_key(key), "settle first");
        match self.values.remove(key) {
            Some(value) => Some(Some(value)),
            None => self.tombstones.remove(key).map(|()| None),
        }
    }

    /// Hands `visit` the entries within `bounds` in key order (`None` for a
    /// tombstone) until it breaks.
    pub(crate) fn visit(
        &self,
        bounds: KeyBounds<'_>,
        visit: impl FnMut(&[u8], Option<&V>) -> ControlFlow<()>,
    ) {
        self.visit_in(bounds, Direction::Forward, visit);
    }

    /// [`visit`](Self::visit), in increasing or decreasing key order.
    pub(crate) fn visit_in(
        &self,
        bounds: KeyBounds<'_>,
        direction: Direction,
        mut visit: impl FnMut(&[u8], Option<&V>) -> ControlFlow<()>,
    ) {
        let backward = direction == Direction::Backward;
        let trees = (
            Ordered::new(&self.values, bounds, backward),
            Ordered::new(&self.tombstones, bounds, backward),
            Ordered::new(&self.pending, bounds, backward),
        );
        merge_trees(trees, &mut Unguarded, backward, &mut visit);
    }

    /// [`visit`](Self::visit) in increasing key order, of the entries
    /// within `bounds` whose keys `guard` lets its walks reach and matches:
    /// each tree's walk leaves the subtrees the guard rules out unvisited.
    pub(crate) fn visit_guarded<G: Guard>(
        &self,
        bounds: KeyBounds<'_>,
        guard: &mut G,
        mut visit: impl FnMut(&[u8], Option<&V>) -> ControlFlow<()>,
    ) {
        let trees = (
            Guarded::new(&self.values, bounds.0),
            Guarded::new(&self.tombstones, bounds.0),
            Guarded::new(&self.pending, bounds.0),
        );
        merge_trees(trees, guard, false, |key, slot| {
            match before_end(key, bounds.1) {
                true => visit(key, slot),
                false => ControlFlow::Break(()),
            }
        });
    }

    /// The first (or, if `last`, the last) entry within `bounds`, handed to
    /// `offer`.
    pub(crate) fn edge(
        &self,
        bounds: KeyBounds<'_>,
        last: bool,
        offer: impl FnOnce(&[u8], Option<&V>),
    ) {
        let mut offer = Some(offer);
        let direction = if last {
            Direction::Backward
        } else {
            Direction::Forward
        };
        self.visit_in(bounds, direction, |key, slot| {
            if let Some(offer) = offer.take() {
                offer(key, slot);
            }
            ControlFlow::Break(())
        });
    }

    /// Rebuilds the filter for twice the keys it holds now: the delta grew
    /// past what its filter was sized for (merges falling behind, or a
    /// manual policy).
    #[cold]
    fn rebuild_filter(&mut self) {
        self.filter = self.filter_of_keys(2 * self.len());
    }

    /// A filter sized for `capacity` keys holding every key of this delta.
    fn filter_of_keys(&self, capacity: usize) -> KeyFilter {
        let mut filter = KeyFilter::with_capacity(capacity);
        self.visit((Bound::Unbounded, Bound::Unbounded), |key, _| {
            filter.add(key_hash(key));
            ControlFlow::Continue(())
        });
        filter
    }
}

impl<V: Clone> Clone for Delta<V> {
    fn clone(&self) -> Self {
        Delta {
            values: self.values.clone(),
            tombstones: self.tombstones.clone(),
            pending: self.pending.clone(),
            pending_tombstones: self.pending_tombstones,
            pending_change: self.pending_change.clone(),
            filter: self.filter.clone(),
            ends: Mutex::new(self.lock_ends().clone()),
        }
    }
}

impl<V> fmt::Debug for Delta<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delta")
            .field("values", &self.values.len())
            .field("tombstones", &self.tombstones.len())
            .field("pending", &self.pending.len())
            .field("filter", &self.filter)
            .finish()
    }
}

/// One of a delta's trees, read in key order.
trait TreeWalk<'a, T: 'a> {
    /// The next entry, its key borrowed from the walk; a guarded walk asks
    /// `guard`, a plain one does not.
    fn next_entry<G: Guard>(&mut self, guard: &mut G) -> Option<(&[u8], &'a T)>;
}

/// A range of a tree, from the front or from the back.
struct Ordered<'a, T> {
    range: crate::art::Range<'a, T>,
    backward: bool,
}

impl<'a, T> Ordered<'a, T> {
    fn new(tree: &'a FastArt<T>, bounds: KeyBounds<'_>, backward: bool) -> Self {
        Ordered {
            range: tree.range::<[u8], _>(bounds),
            backward,
        }
    }
}

impl<'a, T> TreeWalk<'a, T> for Ordered<'a, T> {
    #[inline]
    fn next_entry<G: Guard>(&mut self, _: &mut G) -> Option<(&[u8], &'a T)> {
        if self.backward {
            self.range.next_back_entry()
        } else {
            self.range.next_entry()
        }
    }
}

impl<'a, T> TreeWalk<'a, T> for Guarded<'a, T> {
    #[inline]
    fn next_entry<G: Guard>(&mut self, guard: &mut G) -> Option<(&[u8], &'a T)> {
        Guarded::next_entry(self, guard)
    }
}

/// Hands `visit` the entries of a delta's three trees (values, tombstones,
/// blind writes), merged into one key order (decreasing if `backward`),
/// until it breaks.
fn merge_trees<'a, V: 'a, G: Guard>(
    (mut values, mut tombstones, mut pending): (
        impl TreeWalk<'a, V>,
        impl TreeWalk<'a, ()>,
        impl TreeWalk<'a, Option<V>>,
    ),
    guard: &mut G,
    backward: bool,
    mut visit: impl FnMut(&[u8], Option<&V>) -> ControlFlow<()>,
) {
    let mut value = values.next_entry(guard);
    let mut tombstone = tombstones.next_entry(guard);
    let mut blind = pending.next_entry(guard);
    loop {
        // The trees hold no key in common, so the nearest head is next.
        let heads = [
            value.map(|e| e.0),
            tombstone.map(|e| e.0),
            blind.map(|e| e.0),
        ];
        let mut next = None;
        for (tree, key) in heads.iter().enumerate() {
            if let Some(key) = key
                && next.is_none_or(|best: (usize, &[u8])| (*key < best.1) != backward)
            {
                next = Some((tree, *key));
            }
        }
        let flow = match next {
            None => return,
            Some((0, key)) => {
                let flow = visit(key, value.map(|e| e.1));
                value = values.next_entry(guard);
                flow
            }
            Some((1, key)) => {
                let flow = visit(key, None);
                tombstone = tombstones.next_entry(guard);
                flow
            }
            Some((_, key)) => {
                let flow = visit(key, blind.and_then(|e| e.1.as_ref()));
                blind = pending.next_entry(guard);
                flow
            }
        };
        if flow.is_break() {
            return;
        }
    }
}

/// How many pending entries of a sealed delta [`Layers::count_pending`]
/// copies and looks up at a time.
const COUNT_BATCH: usize = 4096;

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

    /// Asks the CPU to load the filter blocks of the sealed deltas that a
    /// lookup of a key with this hash reads.
    #[inline]
    pub(crate) fn prefetch_filters(&self, hash: u64) {
        for delta in &self.deltas {
            delta.prefetch_filter(hash);
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
                return slot.cloned();
            }
        }
        self.base.get(key)
    }

    /// What the sealed deltas say about each prefix of `key`, newest
    /// first, as [`Delta::prefixes_of`] does: the first word on a length
    /// counts.
    pub(crate) fn deltas_prefixes_of(&self, key: &[u8], mut say: impl FnMut(usize, Option<&V>)) {
        for delta in &self.deltas {
            delta.prefixes_of(key, &mut say);
        }
    }

    /// [`get`](Self::get), calling `beside` between the base lookup's steps
    /// whenever that lookup waits for memory (see
    /// [`FrozenLayer::get_beside`]).
    pub(crate) fn get_beside(
        &self,
        key: &[u8],
        hash: u64,
        beside: &mut dyn FnMut() -> bool,
    ) -> Option<V>
    where
        V: Clone,
    {
        for delta in &self.deltas {
            if let Some(slot) = delta.lookup(key, hash) {
                return slot.cloned();
            }
        }
        self.base.get_beside(key, beside)
    }

    /// The values of the keys at `undecided` of `keys` (whose hashes are
    /// `hashes`), into `values` at the same indices.
    pub(crate) fn get_many_into<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
        hashes: &[u64],
        undecided: Vec<usize>,
        values: &mut [Option<V>],
    ) where
        V: Clone,
    {
        let undecided =
            self.decide_in_deltas(0, keys, hashes, undecided, values, |slot| slot.cloned());
        self.base.get_many_into(keys, undecided, values);
    }

    /// Whether each of `keys` (whose hashes are `hashes`) has a value in
    /// the layers from the sealed delta at `first` down (those below the
    /// deltas before it): the batched lookup of
    /// [`get_many_into`](Self::get_many_into), with no value cloned or
    /// decoded.
    pub(crate) fn contains_many_below(
        &self,
        first: usize,
        keys: &[&[u8]],
        hashes: &[u64],
    ) -> Vec<bool> {
        let mut present = vec![false; keys.len()];
        let all = (0..keys.len()).collect();
        let undecided = self.decide_in_deltas(first, keys, hashes, all, &mut present, |slot| {
            slot.is_some()
        });
        self.base.contains_many_into(keys, undecided, &mut present);
        present
    }

    /// Looks the keys at `undecided` of `keys` up in the sealed deltas from
    /// the one at `first` on: the first with an entry for a key decides it
    /// (`decided` makes the answer, into `out` at the key's index). Returns
    /// the keys none decides, for the base.
    fn decide_in_deltas<K: AsRef<[u8]>, T>(
        &self,
        first: usize,
        keys: &[K],
        hashes: &[u64],
        mut undecided: Vec<usize>,
        out: &mut [T],
        decided: impl Fn(Option<&V>) -> T,
    ) -> Vec<usize> {
        for delta in &self.deltas[first..] {
            undecided.retain(|&i| match delta.lookup(keys[i].as_ref(), hashes[i]) {
                Some(slot) => {
                    out[i] = decided(slot);
                    false
                }
                None => true,
            });
        }
        undecided
    }

    /// The change that the sealed deltas' pending entries make to the count
    /// of keys in these layers: +1 for each value over a key absent below it,
    /// -1 for each tombstone over a present one. Each sealed delta's share is
    /// counted once, against the layers below it (one batch of lookups), and
    /// kept; a merge counts them before it puts any part in place, since a
    /// new part answers for the sealed deltas too. A caller that comes
    /// while another counts waits for it.
    pub(crate) fn count_pending(&self) -> isize {
        (0..self.deltas.len())
            .map(|i| {
                let delta = &self.deltas[i];
                if delta.pending.is_empty() {
                    return 0;
                }
                *delta.pending_change.get_or_init(|| {
                    let mut change = 0;
                    let mut after = None;
                    loop {
                        let batch = delta.pending_batch(after.as_deref(), COUNT_BATCH);
                        let Some((last, _)) = batch.last() else {
                            return change;
                        };
                        after = Some(last.clone());
                        change += self.count_batch(i, &batch);
                    }
                })
            })
            .sum()
    }

    /// What `entries`, pending in the sealed delta at `delta` (keys with
    /// whether each is a value), change in the count of keys of the layers
    /// below it.
    fn count_batch(&self, delta: usize, entries: &[(Vec<u8>, bool)]) -> isize {
        let keys: Vec<&[u8]> = entries.iter().map(|(key, _)| &key[..]).collect();
        let hashes: Vec<u64> = keys.iter().map(|key| key_hash(key)).collect();
        let below = self.contains_many_below(delta + 1, &keys, &hashes);
        entries
            .iter()
            .zip(below)
            .map(|((_, is_value), below)| match (is_value, below) {
                (true, false) => 1,
                (false, true) => -1,
                _ => 0,
            })
            .sum()
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
        self.deltas.iter().map(|d| d.len()).sum()
    }

    /// Tombstones in the sealed deltas.
    pub(crate) fn delta_tombstones(&self) -> usize {
        self.deltas.iter().map(|d| d.tombstones()).sum()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delta_that_outgrows_its_filter_still_finds_every_entry() {
        // Sized for 64 keys: 1,000 values and 200 tombstones rebuild the
        // filter several times, from both trees.
        let mut delta = Delta::<u64>::with_capacity(1);
        let key = |i: u64| format!("usr/share/doc/pkg{i:04}");
        for i in 0..1000 {
            delta.put(key(i).as_bytes(), key_hash(key(i).as_bytes()), Some(i));
        }
        for i in 1000..1200 {
            delta.put(key(i).as_bytes(), key_hash(key(i).as_bytes()), None);
        }
        assert_eq!((delta.len(), delta.tombstones()), (1200, 200));
        for i in 0..1200 {
            let found = delta.lookup(key(i).as_bytes(), key_hash(key(i).as_bytes()));
            let want = (i < 1000).then_some(&i);
            assert_eq!(found, Some(want), "key {i}");
        }
        // Rebuilt for its keys, the filter still rules out most others.
        let passed = (0..10_000)
            .filter(|i| {
                delta
                    .filter
                    .may_contain(key_hash(format!("absent/{i}").as_bytes()))
            })
            .count();
        assert!(
            passed < 500,
            "{passed} of 10,000 absent keys pass the filter"
        );
    }

    #[test]
    fn memory_counts_the_trees_the_filter_and_the_ends() {
        let mut delta = Delta::<u64>::with_capacity(100);
        for i in 0..100u64 {
            let key = format!("k{i:03}");
            delta.put(
                key.as_bytes(),
                key_hash(key.as_bytes()),
                (i % 3 != 0).then_some(i),
            );
        }
        delta.put_pending(b"p1", key_hash(b"p1"), Some(1));
        delta.put_pending(b"p2", key_hash(b"p2"), None);
        let parts = delta.values.memory_usage()
            + delta.tombstones.memory_usage()
            + delta.pending.memory_usage()
            + delta.filter.memory_usage();
        assert!(delta.values.memory_usage() > 0 && delta.tombstones.memory_usage() > 0);
        assert!(delta.pending.memory_usage() > 0);
        assert_eq!(delta.memory_usage(), parts);
        delta.note_empty_end(Edge::First, b"aaaa");
        delta.note_empty_end(Edge::Last, b"zzzzzz");
        assert_eq!(delta.memory_usage(), parts + 4 + 6);
        assert_eq!(
            format!("{delta:?}"),
            format!(
                "Delta {{ values: 66, tombstones: 34, pending: 2, filter: {:?} }}",
                delta.filter
            )
        );
        // The sealed deltas' bytes add up.
        let layers = Layers {
            deltas: vec![Arc::new(delta.clone()), Arc::new(Delta::with_capacity(1))],
            ..Layers::new(FrozenLayer::from_sorted_iter([("a", 1u64)]).unwrap())
        };
        let empty = Delta::<u64>::with_capacity(1).memory_usage();
        assert_eq!(layers.delta_bytes(), parts + 10 + empty);
        let shown = format!("{layers:?}");
        assert!(
            shown.starts_with("Layers { deltas: [Delta { values: 66")
                && shown.ends_with(&format!("base: {:?}, seals: 0 }}", layers.base)),
            "{shown}"
        );
    }

    /// An empty end only ever moves further towards its edge: a search
    /// that found less than is known leaves it.
    #[test]
    fn empty_ends_only_move_outwards() {
        let delta = Delta::<u64>::with_capacity(1);
        assert_eq!(delta.empty_end(Edge::First), None);
        for (key, end) in [("c", "c"), ("b", "c"), ("d", "d"), ("d", "d")] {
            delta.note_empty_end(Edge::First, key.as_bytes());
            assert_eq!(delta.empty_end(Edge::First).unwrap(), end.as_bytes());
        }
        for (key, end) in [("w", "w"), ("x", "w"), ("v", "v"), ("v", "v")] {
            delta.note_empty_end(Edge::Last, key.as_bytes());
            assert_eq!(delta.empty_end(Edge::Last).unwrap(), end.as_bytes());
        }
        assert_eq!(delta.empty_end(Edge::First).unwrap(), b"d");
    }

    /// Values, tombstones and pending entries come out of the three trees
    /// in one key order, both ways; settling moves each pending entry to
    /// where its standing over the layers below puts it.
    #[test]
    fn pending_entries_merge_into_order_and_settle() {
        let mut delta = Delta::<u64>::with_capacity(4);
        let put = |delta: &mut Delta<u64>, key: &str, slot: Option<u64>, pending: bool| {
            let (key, hash) = (key.as_bytes(), key_hash(key.as_bytes()));
            if pending {
                delta.put_pending(key, hash, slot);
            } else {
                delta.put(key, hash, slot);
            }
        };
        put(&mut delta, "a", Some(1), false);
        put(&mut delta, "b", None, true);
        put(&mut delta, "c", Some(3), true);
        put(&mut delta, "d", None, false);
        put(&mut delta, "e", Some(5), true);
        put(&mut delta, "f", None, true);
        // A pending entry replaced by another: a value, then a tombstone.
        assert_eq!(delta.put_pending(b"e", key_hash(b"e"), None), Some(Some(5)));
        assert_eq!(delta.put_pending(b"e", key_hash(b"e"), Some(6)), Some(None));
        let entries = |delta: &Delta<u64>, direction| {
            let mut out = Vec::new();
            delta.visit_in((Bound::Unbounded, Bound::Unbounded), direction, |k, v| {
                out.push((String::from_utf8(k.to_vec()).unwrap(), v.copied()));
                ControlFlow::Continue(())
            });
            out
        };
        let forward = entries(&delta, Direction::Forward);
        let want: Vec<_> = [("a", Some(1)), ("b", None), ("c", Some(3)), ("d", None)]
            .into_iter()
            .chain([("e", Some(6)), ("f", None)])
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert_eq!(forward, want);
        let mut backward = entries(&delta, Direction::Backward);
        backward.reverse();
        assert_eq!(backward, want);
        let mut first = None;
        delta.edge((Bound::Excluded(b"a"), Bound::Unbounded), false, |k, v| {
            first = Some((k.to_vec(), v.copied()))
        });
        assert_eq!(first, Some((b"b".to_vec(), None)));
        assert_eq!(
            (delta.len(), delta.tombstones(), delta.pending()),
            (6, 3, 4)
        );
        assert_eq!(delta.lookup(b"c", key_hash(b"c")), Some(Some(&3)));
        // Pending entries in batches: at most `max`, after the key given.
        let batch = |after: Option<&[u8]>, max| -> Vec<(String, bool)> {
            (delta.pending_batch(after, max).into_iter())
                .map(|(k, is_value)| (String::from_utf8(k).unwrap(), is_value))
                .collect()
        };
        assert_eq!(batch(None, 2), [("b".into(), false), ("c".into(), true)]);
        assert_eq!(
            batch(Some(b"c"), 5),
            [("e".into(), true), ("f".into(), false)]
        );
        assert!(
            delta.has_settled(b"a", key_hash(b"a")) && !delta.has_settled(b"c", key_hash(b"c"))
        );
        // Settled: "b" hides a key below (-1), "c" is new (+1), "e" is not,
        // "f" hides nothing and goes; a settled key or an absent one: 0.
        let changes: Vec<isize> = [
            ("b", true),
            ("c", false),
            ("e", true),
            ("f", false),
            ("a", false),
            ("z", true),
        ]
        .iter()
        .map(|(k, below)| delta.settle(k.as_bytes(), key_hash(k.as_bytes()), *below))
        .collect();
        assert_eq!(changes, [-1, 1, 0, 0, 0, 0]);
        assert_eq!(
            (delta.len(), delta.tombstones(), delta.pending()),
            (5, 2, 0)
        );
        assert_eq!(delta.lookup(b"f", key_hash(b"f")), None);
        assert!(delta.has_settled(b"c", key_hash(b"c")) && delta.has_settled(b"b", key_hash(b"b")));
    }

    #[test]
    fn deltas_never_compact_under_their_lock() {
        let delta = Delta::<u64>::with_capacity(1);
        assert!(!delta.values.auto_compact() && !delta.tombstones.auto_compact());
        assert!(!delta.clone().values.auto_compact());
    }
}
