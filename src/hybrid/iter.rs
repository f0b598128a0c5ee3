//! The merged view of several layers, in key order: a streaming k-way merge
//! where the newest layer wins and tombstones hide older entries.
//!
//! An iterator must not borrow the map: writers go on while it runs, and a
//! merge may replace the layers it reads. So it owns `Arc`s of the immutable
//! layers (sealed deltas and base) and a copy of the fresh delta's entries in
//! its range, taken when it was created. Neither the fst stream of a
//! [`FrozenLayer`](crate::FrozenLayer) nor a [`FastArt`](crate::FastArt) iterator can be stored
//! next to the `Arc` that owns its layer (that would be a self-referential
//! struct), so each layer is read in **batches**: a short-lived stream copies
//! the next few hundred entries after the last key seen into a buffer, and is
//! dropped. Re-opening a stream costs one descent from the root (a few
//! hundred nanoseconds), spread over the batch; batches start small (so that
//! `first_key_value` or a short prefix scan copies little) and double up to
//! [`MAX_BATCH`].

use std::collections::VecDeque;
use std::fmt;
use std::iter::FusedIterator;
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;

use fst::Automaton;

use super::base::Part;
use super::layers::{Delta, KeyBounds, Layers};
use crate::FrozenValue;
use crate::keys::as_slice;
use crate::search::{Guard, Pruner, Unguarded};

/// Entries in a layer's first batch.
const FIRST_BATCH: usize = 16;
/// The largest batch.
pub(crate) const MAX_BATCH: usize = 1024;

/// Entries copied out of one layer: keys end to end, values (or tombstones)
/// beside them.
#[derive(Clone)]
pub(crate) struct Batch<V> {
    keys: Vec<u8>,
    /// `ends[i]` is where key `i` ends in `keys`.
    ends: Vec<usize>,
    /// `None` is a tombstone, or a value already handed out.
    values: Vec<Option<V>>,
}

impl<V> Batch<V> {
    pub(crate) fn new() -> Self {
        Batch {
            keys: Vec::new(),
            ends: Vec::new(),
            values: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, key: &[u8], value: Option<V>) {
        self.keys.extend_from_slice(key);
        self.ends.push(self.keys.len());
        self.values.push(value);
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    fn clear(&mut self) {
        self.keys.clear();
        self.ends.clear();
        self.values.clear();
    }

    #[inline]
    fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.keys[start..self.ends[i]]
    }

    /// Heap bytes held.
    pub(crate) fn memory_usage(&self) -> usize {
        self.keys.capacity()
            + self.ends.capacity() * size_of::<usize>()
            + self.values.capacity() * size_of::<Option<V>>()
    }
}

/// Where a source's batches come from.
enum Feed<V: FrozenValue> {
    /// Nothing: the first batch was all there is (the fresh delta's copy).
    Fixed,
    Delta(Arc<Delta<V>>),
    /// The base's parts from the one being read on. A part is dropped once
    /// read, so that a merge frees the old base's parts as it passes them.
    Base {
        parts: VecDeque<Part<V>>,
        /// Parts read to the end, still at the front of `parts`: an iterator
        /// keeps them until its next refill, since a walk from the back
        /// started meanwhile needs the parts of the batch in hand
        /// ([`Source::reversed`]).
        spent: usize,
        /// Whether to keep them: not for a merge, which never reads
        /// backwards, and whose peak memory an old part held a batch longer
        /// raises (16.6 → 17.0 B/key in a merge of the full dataset).
        keep_spent: bool,
    },
}

/// Which way an iterator, or one of its ends, goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Increasing keys.
    Forward,
    /// Decreasing keys.
    Backward,
}

/// One layer being merged.
struct Source<V: FrozenValue> {
    feed: Feed<V>,
    batch: Batch<V>,
    /// The next entry of `batch`.
    pos: usize,
    /// Whether the layer has nothing after `batch`.
    exhausted: bool,
    /// Which way the batches go: `batch` holds its keys in this order.
    direction: Direction,
    /// Where the next batch starts.
    from: Resume,
    /// The key `from` refers to.
    resume: Vec<u8>,
    next_batch: usize,
}

/// Where a source's next batch starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Resume {
    /// At the iterator's start bound (its end bound, going backward).
    Start,
    /// Past `resume`, the last key fetched.
    After,
    /// At `resume` (after an [`Iter::skip_to`]).
    At,
}

impl<V: FrozenValue + Clone> Source<V> {
    fn new(feed: Feed<V>, batch: Batch<V>, direction: Direction) -> Self {
        let fixed = matches!(feed, Feed::Fixed);
        Source {
            feed,
            batch,
            pos: 0,
            exhausted: fixed,
            direction,
            from: Resume::Start,
            resume: Vec::new(),
            next_batch: FIRST_BATCH,
        }
    }

    /// Makes sure `batch[pos]` exists, fetching the next batch if needed;
    /// false when the layer has no more entries in range.
    #[inline]
    fn ensure_head<G: Guard>(
        &mut self,
        start: &Bound<Vec<u8>>,
        end: &Bound<Vec<u8>>,
        guard: &mut G,
    ) -> bool {
        if self.pos < self.batch.len() {
            return true;
        }
        if self.exhausted {
            return false;
        }
        self.refill(start, end, guard);
        self.pos < self.batch.len()
    }

    /// Fetches the next batch: with a guard that prunes (a search, which
    /// reads forward only), of the entries it lets through only.
    #[cold]
    fn refill<G: Guard>(&mut self, start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>, guard: &mut G) {
        debug_assert!(
            !G::PRUNES || self.direction == Direction::Forward,
            "searches read forward"
        );
        if let Some(last) = self.batch.len().checked_sub(1) {
            self.resume.clear();
            self.resume.extend_from_slice(self.batch.key(last));
            self.from = Resume::After;
        }
        self.batch.clear();
        self.pos = 0;
        let past = match self.from {
            Resume::Start => None,
            Resume::After => Some(Bound::Excluded(self.resume.as_slice())),
            Resume::At => Some(Bound::Included(self.resume.as_slice())),
        };
        let bounds = match self.direction {
            Direction::Forward => (past.unwrap_or(as_slice(start)), as_slice(end)),
            Direction::Backward => (as_slice(start), past.unwrap_or(as_slice(end))),
        };
        let want = self.next_batch;
        self.next_batch = (want * 2).min(MAX_BATCH);
        let batch = &mut self.batch;
        // Stops after `want` entries; true when the layer ran dry first.
        let complete = match &mut self.feed {
            Feed::Fixed => true,
            Feed::Delta(delta) => {
                let mut full = false;
                let push = |key: &[u8], slot: Option<&V>| {
                    if batch.len() == want {
                        full = true;
                        return ControlFlow::Break(());
                    }
                    batch.push(key, slot.cloned());
                    ControlFlow::Continue(())
                };
                if G::PRUNES {
                    delta.visit_guarded(bounds, guard, push);
                } else {
                    delta.visit_in(bounds, self.direction, push);
                }
                !full
            }
            Feed::Base {
                parts,
                spent,
                keep_spent,
            } => match self.direction {
                Direction::Forward => {
                    fill_forward(parts, spent, *keep_spent, bounds, batch, want, guard)
                }
                Direction::Backward => fill_backward(parts, bounds, batch, want),
            },
        };
        self.exhausted = complete;
    }

    #[inline]
    fn head(&self) -> &[u8] {
        self.batch.key(self.pos)
    }

    /// A source that reads the same layer from the back, for an iterator's
    /// other end, with no batch fetched yet. (The entries behind this
    /// source's position are not the other end's business: it stops where
    /// the two ends meet.)
    fn reversed(&self) -> Self {
        let feed = match &self.feed {
            Feed::Fixed => {
                // The fresh delta's copy cannot be fetched again: reverse it.
                let mut batch = Batch::new();
                for i in (0..self.batch.len()).rev() {
                    batch.push(self.batch.key(i), self.batch.values[i].clone());
                }
                return Source::new(Feed::Fixed, batch, Direction::Backward);
            }
            Feed::Delta(delta) => Feed::Delta(Arc::clone(delta)),
            Feed::Base { parts, .. } => Feed::Base {
                parts: parts.clone(),
                spent: 0,
                keep_spent: false,
            },
        };
        Source::new(feed, Batch::new(), Direction::Backward)
    }
}

/// Fills `batch` with up to `want` of the parts' entries within `bounds`
/// that `guard` lets through, from the front; true when the parts ran dry
/// first. Parts read to the end are dropped, or with `keep_spent` counted
/// in `spent` and dropped at the next call.
fn fill_forward<V: FrozenValue, G: Guard>(
    parts: &mut VecDeque<Part<V>>,
    spent: &mut usize,
    keep_spent: bool,
    bounds: KeyBounds<'_>,
    batch: &mut Batch<V>,
    want: usize,
    guard: &mut G,
) -> bool {
    parts.drain(..*spent);
    *spent = 0;
    loop {
        let Some(part) = parts.get(*spent) else {
            return true;
        };
        let mut entries = part.range(bounds.0, bounds.1);
        while let Some((key, value)) = entries.next_entry_guarded(guard) {
            batch.push(key, Some(value));
            if batch.len() == want {
                return false;
            }
        }
        // The part has nothing more in range: on to the next, if the range
        // goes on past it.
        if !part.next_within(bounds.1) {
            parts.truncate(*spent + 1);
            return true;
        }
        if keep_spent {
            *spent += 1;
        } else {
            parts.pop_front();
        }
    }
}

/// Fills `batch` with up to `want` of the parts' entries within `bounds`,
/// from the back; true when the parts ran dry first.
fn fill_backward<V: FrozenValue>(
    parts: &mut VecDeque<Part<V>>,
    bounds: KeyBounds<'_>,
    batch: &mut Batch<V>,
    want: usize,
) -> bool {
    loop {
        let Some(part) = parts.back() else {
            return true;
        };
        if !part.starts_after(bounds.1) {
            let mut entries = part.range(bounds.0, bounds.1);
            while let Some((key, value)) = entries.next_back_entry() {
                batch.push(key, Some(value));
                if batch.len() == want {
                    return false;
                }
            }
        }
        if !part.previous_within(bounds.0) {
            parts.clear();
            return true;
        }
        parts.pop_back();
    }
}

/// The entries of a [`HybridMap`](super::HybridMap) in increasing key order:
/// all of them ([`iter`](super::HybridMap::iter)), a
/// [`range`](super::HybridMap::range) or a
/// [`prefix`](super::HybridMap::prefix).
///
/// The iterator is a **snapshot**: it sees the map as it was when the
/// iterator was created, whatever is written or merged afterwards. It does
/// not borrow the map (it may outlive it, and be sent to another thread).
///
/// Creating it copies the entries of the map's small mutable delta that lie
/// in the range (see the [module documentation](super#iterators) for the
/// cost); the large frozen base is streamed in batches of up to a thousand
/// entries, so memory stays small whatever the range.
///
/// Two ways to consume it, as with the other memkv iterators: as an
/// [`Iterator`] of `(Vec<u8>, V)` (one allocation per key), or with
/// [`next_entry`](Self::next_entry), which lends the key and allocates only
/// once per batch.
///
/// It runs from both ends ([`DoubleEndedIterator`],
/// [`next_back_entry`](Self::next_back_entry)); the walk from the back
/// starts at the first call from that end, over the same snapshot.
///
/// Its [`size_hint`](Iterator::size_hint) is exact over the whole map
/// (`iter`, `range(..)`, `prefix("")`) when no delta holds an entry, fresh or
/// sealed (`stats().delta_entries == 0`, as right after a merge); otherwise
/// it bounds what is left from the entries each layer has left, and for a
/// narrower range or prefix its lower bound is 0.
///
/// ```
/// let map: memkv::HybridMap<u64> = (0..100u32).map(|i| (i.to_be_bytes(), 1)).collect();
/// map.freeze()?;
/// let mut entries = map.iter();
/// assert_eq!(entries.size_hint(), (100, Some(100)));
/// entries.next();
/// entries.next_back();
/// assert_eq!(entries.size_hint(), (98, Some(98)));
/// map.remove(7u32.to_be_bytes()); // a tombstone over the base
/// let (lower, upper) = map.iter().size_hint();
/// assert!(lower <= 99 && upper >= Some(99));
/// # Ok::<(), memkv::Error>(())
/// ```
pub struct Iter<V: FrozenValue> {
    /// Newest first: ties go to the lower index.
    front: Vec<Source<V>>,
    /// The same layers read from the back, once asked for.
    back: Option<Vec<Source<V>>>,
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    /// Where the entries taken last from each end are: (source, batch
    /// index). An end's batches change only when that end moves on, so the
    /// other end can compare against its key.
    front_last: Option<(usize, usize)>,
    back_last: Option<(usize, usize)>,
    /// The ends have met, or the range ran out.
    done: bool,
    /// How many entries the layers held in range and how many the ends
    /// have passed, for [`Iterator::size_hint`].
    tally: Tally,
}

/// Counts behind an [`Iter`]'s size hint.
///
/// Every entry the merge yields passes at least one layer entry, and the
/// two ends never pass the same one (each stops before the other's last
/// key), so the layer entries not yet passed bound what is left from above.
/// From below: the base's keys are distinct, and each delta entry (a
/// tombstone, or a value over a base key) takes at most one of them out of
/// the output.
#[derive(Clone, Copy, Debug)]
struct Tally {
    /// Base entries in range: exact for the whole key space, at most this
    /// many for a narrower range (whole parts are counted, not clipped).
    base: usize,
    exact_base: bool,
    /// Delta entries (values and tombstones) in range, at most this many.
    deltas: usize,
    base_passed: usize,
    deltas_passed: usize,
    /// False once [`Iter::skip_to`] has skipped entries unseen.
    counting: bool,
}

impl Tally {
    /// Counts a passed entry of source `index` of `sources`; the base is the
    /// last source.
    #[inline]
    fn pass(&mut self, index: usize, sources: usize) {
        if index + 1 == sources {
            self.base_passed += 1;
        } else {
            self.deltas_passed += 1;
        }
    }

    fn hint(&self) -> (usize, Option<usize>) {
        if !self.counting {
            return (0, None);
        }
        // Debug builds check the counts, so that the model tests catch a
        // miscount; release builds saturate, as a hint must not panic there.
        debug_assert!(self.base_passed <= self.base && self.deltas_passed <= self.deltas);
        let base = self.base.saturating_sub(self.base_passed);
        let deltas = self.deltas.saturating_sub(self.deltas_passed);
        let lower = if self.exact_base {
            base.saturating_sub(deltas)
        } else {
            0
        };
        (lower, base.checked_add(deltas))
    }
}

impl<V: FrozenValue + Clone> Iter<V> {
    /// A merge of `fresh` (entries already in range, or none), the sealed
    /// deltas and the base of `layers`, over `start..end`.
    pub(crate) fn new(
        fresh: Option<Batch<V>>,
        layers: &Layers<V>,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
    ) -> Self {
        let mut sources = Vec::with_capacity(layers.deltas.len() + 2);
        let mut deltas = 0;
        if let Some(batch) = fresh {
            deltas += batch.len();
            sources.push(Source::new(Feed::Fixed, batch, Direction::Forward));
        }
        for delta in &layers.deltas {
            // All of a sealed delta: counting its entries in range would
            // cost a walk over them.
            deltas += delta.len();
            let feed = Feed::Delta(Arc::clone(delta));
            sources.push(Source::new(feed, Batch::new(), Direction::Forward));
        }
        let parts: VecDeque<Part<V>> = layers
            .base
            .parts()
            .iter()
            .skip_while(|part| part.ends_before(as_slice(&start)))
            .cloned()
            .collect();
        let whole_from_start = match &start {
            Bound::Unbounded => true,
            Bound::Included(key) => key.is_empty(),
            Bound::Excluded(_) => false,
        };
        let tally = Tally {
            base: (parts.iter())
                .take_while(|part| !part.starts_after(as_slice(&end)))
                .map(|part| part.keys)
                .sum(),
            exact_base: whole_from_start && matches!(end, Bound::Unbounded),
            deltas,
            base_passed: 0,
            deltas_passed: 0,
            counting: true,
        };
        let feed = Feed::Base {
            parts,
            spent: 0,
            keep_spent: true,
        };
        sources.push(Source::new(feed, Batch::new(), Direction::Forward));
        Iter {
            front: sources,
            back: None,
            start,
            end,
            front_last: None,
            back_last: None,
            done: false,
            tally,
        }
    }

    /// Sets the iterator up for a merge, which reads everything, forward
    /// only: every batch at its largest size, and base parts dropped as soon
    /// as read.
    pub(crate) fn for_merge(mut self) -> Self {
        for source in &mut self.front {
            source.next_batch = MAX_BATCH;
            if let Feed::Base { keep_spent, .. } = &mut source.feed {
                *keep_spent = false;
            }
        }
        self
    }

    /// The next entry, its key borrowed from the iterator (valid until the
    /// next call).
    ///
    /// ```
    /// let map: memkv::HybridMap<u64> = [("a", 1), ("b", 2)].into_iter().collect();
    /// let mut entries = map.iter();
    /// let mut total = 0;
    /// while let Some((key, value)) = entries.next_entry() {
    ///     total += key.len() as u64 * value;
    /// }
    /// assert_eq!(total, 3);
    /// ```
    pub fn next_entry(&mut self) -> Option<(&[u8], V)> {
        self.next_entry_guarded(&mut Unguarded)
    }

    /// The next entry whose key `guard` lets the layers' walks reach and
    /// matches, as [`next_entry`](Self::next_entry) lends it. A search
    /// calls it with the same guard throughout, and reads forward only.
    #[inline]
    pub(crate) fn next_entry_guarded<G: Guard>(&mut self, guard: &mut G) -> Option<(&[u8], V)> {
        if self.done {
            return None;
        }
        let limit = last_key(self.back.as_deref(), self.back_last);
        let Some((source, index, value)) = step(
            &mut self.front,
            (&self.start, &self.end),
            Direction::Forward,
            limit,
            &mut self.tally,
            guard,
        ) else {
            self.done = true;
            return None;
        };
        self.front_last = Some((source, index));
        Some((self.front[source].batch.key(index), value))
    }

    /// The next entry from the back, its key borrowed from the iterator
    /// (valid until the next call).
    ///
    /// ```
    /// let map: memkv::HybridMap<u64> = [("a", 1), ("b", 2), ("c", 3)].into_iter().collect();
    /// // The last key before "c": a floor query.
    /// let mut below = map.range(..b"c".as_slice());
    /// assert_eq!(below.next_back_entry(), Some((&b"b"[..], 2)));
    /// ```
    pub fn next_back_entry(&mut self) -> Option<(&[u8], V)> {
        debug_assert!(
            !self.front.iter().any(|s| matches!(
                s.feed,
                Feed::Base {
                    keep_spent: false,
                    ..
                }
            )),
            "a merge's iterator reads forward only"
        );
        if self.done {
            return None;
        }
        let front = &self.front;
        let back = self
            .back
            .get_or_insert_with(|| front.iter().map(Source::reversed).collect());
        let limit = last_key(Some(&self.front), self.front_last);
        let Some((source, index, value)) = step(
            back,
            (&self.start, &self.end),
            Direction::Backward,
            limit,
            &mut self.tally,
            &mut Unguarded,
        ) else {
            self.done = true;
            return None;
        };
        self.back_last = Some((source, index));
        Some((back[source].batch.key(index), value))
    }

    /// Skips the entries before `key`, reading none of those not yet
    /// fetched (for a merge that puts an old part in place as it is).
    pub(crate) fn skip_to(&mut self, key: &[u8]) {
        debug_assert!(self.back.is_none(), "merges read forward only");
        self.tally.counting = false;
        for source in &mut self.front {
            while source.pos < source.batch.len() && source.head() < key {
                source.pos += 1;
            }
            if source.pos == source.batch.len() && !source.exhausted {
                // The next batch starts at `key`.
                source.batch.clear();
                source.pos = 0;
                source.resume.clear();
                source.resume.extend_from_slice(key);
                source.from = Resume::At;
            }
        }
    }

    /// Heap bytes held by the iterator's buffers: a batch of entries per
    /// layer at each end it has been read from. Batches start small and
    /// grow as the iteration goes on, up to a bound, so a long scan holds a
    /// fixed amount however many entries it passes.
    ///
    /// ```
    /// let map: memkv::HybridMap<u64> = (0..10_000u32).map(|i| (i.to_be_bytes(), 1)).collect();
    /// let mut entries = map.iter();
    /// assert_eq!(entries.by_ref().take(10).count(), 10);
    /// let early = entries.memory_usage();
    /// assert!(early > 0);
    /// assert_eq!(entries.by_ref().count(), 9_990);
    /// assert!(entries.memory_usage() >= early);
    /// assert!(entries.memory_usage() < 1 << 20);
    /// ```
    pub fn memory_usage(&self) -> usize {
        (self.front.iter())
            .chain(self.back.iter().flatten())
            .map(|s| s.batch.memory_usage() + s.resume.capacity())
            .sum()
    }
}

impl<V: FrozenValue + Clone> Iterator for Iter<V> {
    type Item = (Vec<u8>, V);

    #[inline]
    fn next(&mut self) -> Option<(Vec<u8>, V)> {
        self.next_entry().map(|(key, value)| (key.to_vec(), value))
    }

    /// Exact over the whole map when no delta, fresh or sealed, holds an
    /// entry (as after a merge), so that `collect` allocates once; otherwise
    /// bounds from the entries each layer has left.
    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            (0, Some(0))
        } else {
            self.tally.hint()
        }
    }
}

impl<V: FrozenValue + Clone> DoubleEndedIterator for Iter<V> {
    #[inline]
    fn next_back(&mut self) -> Option<(Vec<u8>, V)> {
        self.next_back_entry()
            .map(|(key, value)| (key.to_vec(), value))
    }
}

impl<V: FrozenValue + Clone> FusedIterator for Iter<V> {}

/// The keys of a [`HybridMap`](super::HybridMap) in order, a snapshot; see
/// [`keys`](super::HybridMap::keys). The values are still read along (the
/// merge needs them to tell tombstones apart).
#[derive(Debug)]
pub struct Keys<V: FrozenValue> {
    inner: Iter<V>,
}

impl<V: FrozenValue + Clone> Keys<V> {
    pub(crate) fn new(inner: Iter<V>) -> Self {
        Keys { inner }
    }

    /// The next key, borrowed from the iterator (valid until the next
    /// call).
    ///
    /// ```
    /// let map: memkv::HybridMap<u64> = [("b", 2), ("a", 1)].into_iter().collect();
    /// let mut keys = map.keys();
    /// assert_eq!(keys.next_key(), Some(&b"a"[..]));
    /// assert_eq!(keys.next_key(), Some(&b"b"[..]));
    /// assert_eq!(keys.next_key(), None);
    /// ```
    pub fn next_key(&mut self) -> Option<&[u8]> {
        self.inner.next_entry().map(|(key, _)| key)
    }
}

impl<V: FrozenValue + Clone> Iterator for Keys<V> {
    type Item = Vec<u8>;

    #[inline]
    fn next(&mut self) -> Option<Vec<u8>> {
        self.next_key().map(<[u8]>::to_vec)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<V: FrozenValue + Clone> DoubleEndedIterator for Keys<V> {
    #[inline]
    fn next_back(&mut self) -> Option<Vec<u8>> {
        self.inner.next_back_entry().map(|(key, _)| key.to_vec())
    }
}

impl<V: FrozenValue + Clone> FusedIterator for Keys<V> {}

/// The values of a [`HybridMap`](super::HybridMap) in key order, a
/// snapshot; see [`values`](super::HybridMap::values). Allocates no key per
/// entry.
#[derive(Debug)]
pub struct Values<V: FrozenValue> {
    inner: Iter<V>,
}

impl<V: FrozenValue + Clone> Values<V> {
    pub(crate) fn new(inner: Iter<V>) -> Self {
        Values { inner }
    }
}

impl<V: FrozenValue + Clone> Iterator for Values<V> {
    type Item = V;

    #[inline]
    fn next(&mut self) -> Option<V> {
        self.inner.next_entry().map(|(_, value)| value)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<V: FrozenValue + Clone> DoubleEndedIterator for Values<V> {
    #[inline]
    fn next_back(&mut self) -> Option<V> {
        self.inner.next_back_entry().map(|(_, value)| value)
    }
}

impl<V: FrozenValue + Clone> FusedIterator for Values<V> {}

impl<V: FrozenValue> fmt::Debug for Iter<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter")
            .field("layers", &self.front.len())
            .finish_non_exhaustive()
    }
}

/// The key of the entry at `at` in `sources`, if any.
fn last_key<V: FrozenValue>(
    sources: Option<&[Source<V>]>,
    at: Option<(usize, usize)>,
) -> Option<&[u8]> {
    let (source, index) = at?;
    Some(sources?[source].batch.key(index))
}

/// Takes the next entry of the merged `sources` going `direction`: the
/// nearest head wins, the newest layer on a tie, and a tombstone hides the
/// key. Returns where the entry is (source, batch index) and its value;
/// `None` once the range runs out or the entry would reach `limit`, the
/// other end's last key.
fn step<V: FrozenValue + Clone, G: Guard>(
    sources: &mut [Source<V>],
    (start, end): (&Bound<Vec<u8>>, &Bound<Vec<u8>>),
    direction: Direction,
    limit: Option<&[u8]>,
    tally: &mut Tally,
    guard: &mut G,
) -> Option<(usize, usize, V)> {
    let nearer = |a: &[u8], b: &[u8]| match direction {
        Direction::Forward => a < b,
        Direction::Backward => a > b,
    };
    loop {
        let mut best: Option<usize> = None;
        for i in 0..sources.len() {
            if !sources[i].ensure_head(start, end, guard) {
                continue;
            }
            // Strictly nearer: on equal keys the newer (earlier) source
            // stays the best.
            if best.is_none_or(|b| nearer(sources[i].head(), sources[b].head())) {
                best = Some(i);
            }
        }
        let winner = best?;
        let count = sources.len();
        let (newer, older) = sources.split_at_mut(winner + 1);
        let source = &mut newer[winner];
        let key = source.head();
        // The other end has taken this key, and all beyond it.
        if limit.is_some_and(|limit| !nearer(key, limit)) {
            return None;
        }
        // Older layers' entries for the same key are hidden: skip them.
        for (i, other) in older.iter_mut().enumerate() {
            if other.pos < other.batch.len() && other.head() == key {
                other.pos += 1;
                tally.pass(winner + 1 + i, count);
            }
        }
        let index = source.pos;
        source.pos += 1;
        tally.pass(winner, count);
        // A tombstone (`None`) hides the key: go on to the next.
        if let Some(value) = source.batch.values[index].take() {
            return Some((winner, index, value));
        }
    }
}

/// The entries of a [`HybridMap`](super::HybridMap) whose keys are
/// prefixes of a given key, shortest first: a snapshot; see
/// [`prefixes_of`](super::HybridMap::prefixes_of). Each key is a slice of
/// the key asked about.
#[derive(Clone, Debug)]
pub struct PrefixesOf<'k, V> {
    entries: std::vec::IntoIter<(&'k [u8], V)>,
}

impl<'k, V> PrefixesOf<'k, V> {
    pub(crate) fn new(entries: Vec<(&'k [u8], V)>) -> Self {
        PrefixesOf {
            entries: entries.into_iter(),
        }
    }
}

impl<'k, V> Iterator for PrefixesOf<'k, V> {
    type Item = (&'k [u8], V);

    #[inline]
    fn next(&mut self) -> Option<(&'k [u8], V)> {
        self.entries.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl<V> DoubleEndedIterator for PrefixesOf<'_, V> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        self.entries.next_back()
    }
}

impl<V> ExactSizeIterator for PrefixesOf<'_, V> {}
impl<V> FusedIterator for PrefixesOf<'_, V> {}

/// The entries whose keys an automaton accepts, in key order, from a
/// snapshot taken when the search began; see
/// [`HybridMap::search`](super::HybridMap::search).
pub struct Search<V: FrozenValue, A: Automaton> {
    /// A snapshot whose copy of the fresh delta holds the entries `pruner`
    /// let through; its other layers' walks ask `pruner` as they go.
    entries: Iter<V>,
    pruner: Pruner<A>,
    done: bool,
}

impl<V: FrozenValue + Clone, A: Automaton> Search<V, A> {
    pub(crate) fn new(entries: Iter<V>, pruner: Pruner<A>) -> Self {
        Search {
            entries,
            pruner,
            done: false,
        }
    }

    /// The next entry, its key borrowed from the search (valid until the
    /// next call).
    ///
    /// ```
    /// use memkv::frozen::automaton::{Automaton, Str};
    ///
    /// let map: memkv::HybridMap<u32> = [("usr/bin", 1), ("usr/lib", 2), ("var", 3)].into_iter().collect();
    /// let mut under_usr = map.search(Str::new("usr/").starts_with());
    /// let mut total = 0;
    /// while let Some((_, value)) = under_usr.next_entry() {
    ///     total += value;
    /// }
    /// assert_eq!(total, 3);
    /// ```
    pub fn next_entry(&mut self) -> Option<(&[u8], V)> {
        if self.done {
            return None;
        }
        let entry = self.entries.next_entry_guarded(&mut self.pruner);
        self.done = entry.is_none();
        entry
    }
}

impl<V: FrozenValue + Clone, A: Automaton> Iterator for Search<V, A> {
    type Item = (Vec<u8>, V);

    fn next(&mut self) -> Option<Self::Item> {
        self.next_entry().map(|(key, value)| (key.to_vec(), value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self.done {
            true => (0, Some(0)),
            false => (0, self.entries.size_hint().1),
        }
    }
}

impl<V: FrozenValue + Clone, A: Automaton> FusedIterator for Search<V, A> {}

impl<V: FrozenValue, A: Automaton> fmt::Debug for Search<V, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Search")
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}
