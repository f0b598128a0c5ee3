//! The merged view of several layers, in key order: a streaming k-way merge
//! where the newest layer wins and tombstones hide older entries.
//!
//! An iterator must not borrow the map: writers go on while it runs, and a
//! merge may replace the layers it reads. So it owns `Arc`s of the immutable
//! layers (sealed deltas and base) and a copy of the fresh delta's entries in
//! its range, taken when it was created. Neither the fst stream of a
//! [`FrozenLayer`] nor a [`FastArt`](crate::FastArt) iterator can be stored
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

use super::base::Part;
use super::layers::{Delta, Layers};
use crate::FrozenValue;
use crate::keys::as_slice;

/// Entries in a layer's first batch.
const FIRST_BATCH: usize = 16;
/// The largest batch.
pub(crate) const MAX_BATCH: usize = 1024;

/// Entries copied out of one layer: keys end to end, values (or tombstones)
/// beside them.
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
    Base(VecDeque<Part<V>>),
}

/// One layer being merged.
struct Source<V: FrozenValue> {
    feed: Feed<V>,
    batch: Batch<V>,
    /// The next entry of `batch`.
    pos: usize,
    /// Whether the layer has nothing after `batch`.
    exhausted: bool,
    /// Where the next batch starts.
    from: Resume,
    /// The key `from` refers to.
    resume: Vec<u8>,
    next_batch: usize,
}

/// Where a source's next batch starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Resume {
    /// At the iterator's start bound.
    Start,
    /// After `resume`, the last key fetched.
    After,
    /// At `resume` (after an [`Iter::skip_to`]).
    At,
}

impl<V: FrozenValue + Clone> Source<V> {
    fn new(feed: Feed<V>, batch: Batch<V>) -> Self {
        let fixed = matches!(feed, Feed::Fixed);
        Source {
            feed,
            batch,
            pos: 0,
            exhausted: fixed,
            from: Resume::Start,
            resume: Vec::new(),
            next_batch: FIRST_BATCH,
        }
    }

    /// Makes sure `batch[pos]` exists, fetching the next batch if needed;
    /// false when the layer has no more entries in range.
    #[inline]
    fn ensure_head(&mut self, start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> bool {
        if self.pos < self.batch.len() {
            return true;
        }
        if self.exhausted {
            return false;
        }
        self.refill(start, end);
        self.pos < self.batch.len()
    }

    #[cold]
    fn refill(&mut self, start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) {
        if let Some(last) = self.batch.len().checked_sub(1) {
            self.resume.clear();
            self.resume.extend_from_slice(self.batch.key(last));
            self.from = Resume::After;
        }
        self.batch.clear();
        self.pos = 0;
        let lower = match self.from {
            Resume::Start => as_slice(start),
            Resume::After => Bound::Excluded(self.resume.as_slice()),
            Resume::At => Bound::Included(self.resume.as_slice()),
        };
        let bounds = (lower, as_slice(end));
        let want = self.next_batch;
        self.next_batch = (want * 2).min(MAX_BATCH);
        let batch = &mut self.batch;
        // Stops after `want` entries; true when the layer ran dry first.
        let complete = match &mut self.feed {
            Feed::Fixed => true,
            Feed::Delta(delta) => {
                let mut full = false;
                delta.visit(bounds, |key, slot| {
                    if batch.len() == want {
                        full = true;
                        return ControlFlow::Break(());
                    }
                    batch.push(key, slot.cloned());
                    ControlFlow::Continue(())
                });
                !full
            }
            Feed::Base(parts) => loop {
                let Some(part) = parts.front() else {
                    break true;
                };
                let mut entries = part.range(bounds.0, bounds.1);
                let mut full = false;
                while let Some((key, value)) = entries.next_entry() {
                    batch.push(key, Some(value));
                    if batch.len() == want {
                        full = true;
                        break;
                    }
                }
                if full {
                    break false;
                }
                // The part has nothing more in range: on to the next, if
                // the range goes on past it.
                let more = part.next_within(bounds.1);
                parts.pop_front();
                if !more {
                    parts.clear();
                    break true;
                }
            },
        };
        self.exhausted = complete;
    }

    #[inline]
    fn head(&self) -> &[u8] {
        self.batch.key(self.pos)
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
/// Like [`FrozenLayer`](crate::FrozenLayer)'s streams it runs forward only
/// (the fst has no reverse stream);
/// [`last_key_value`](super::HybridMap::last_key_value) finds the last entry
/// without one.
pub struct Iter<V: FrozenValue> {
    /// Newest first: ties go to the lower index.
    sources: Vec<Source<V>>,
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
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
        if let Some(batch) = fresh {
            sources.push(Source::new(Feed::Fixed, batch));
        }
        for delta in &layers.deltas {
            sources.push(Source::new(Feed::Delta(Arc::clone(delta)), Batch::new()));
        }
        let parts = layers
            .base
            .parts()
            .iter()
            .skip_while(|part| part.ends_before(as_slice(&start)))
            .cloned()
            .collect();
        sources.push(Source::new(Feed::Base(parts), Batch::new()));
        Iter {
            sources,
            start,
            end,
        }
    }

    /// Starts every batch at its largest size (for merges, which read
    /// everything).
    pub(crate) fn with_large_batches(mut self) -> Self {
        for source in &mut self.sources {
            source.next_batch = MAX_BATCH;
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
        let (winner, index, value) = loop {
            let (start, end) = (&self.start, &self.end);
            let mut best: Option<usize> = None;
            for i in 0..self.sources.len() {
                if !self.sources[i].ensure_head(start, end) {
                    continue;
                }
                // Strictly smaller: on equal keys the newer (earlier) source
                // stays the best.
                if best.is_none_or(|b| self.sources[i].head() < self.sources[b].head()) {
                    best = Some(i);
                }
            }
            let winner = best?;
            // Older layers' entries for the same key are hidden: skip them.
            let (newer, older) = self.sources.split_at_mut(winner + 1);
            let source = &mut newer[winner];
            let key = source.head();
            for other in older {
                if other.pos < other.batch.len() && other.head() == key {
                    other.pos += 1;
                }
            }
            let index = source.pos;
            source.pos += 1;
            // A tombstone (`None`) hides the key: go on to the next.
            if let Some(value) = source.batch.values[index].take() {
                break (winner, index, value);
            }
        };
        Some((self.sources[winner].batch.key(index), value))
    }

    /// Skips the entries before `key`, reading none of those not yet
    /// fetched (for a merge that puts an old part in place as it is).
    pub(crate) fn skip_to(&mut self, key: &[u8]) {
        for source in &mut self.sources {
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

    /// Heap bytes held by the iterator's buffers.
    pub fn memory_usage(&self) -> usize {
        self.sources
            .iter()
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
}

impl<V: FrozenValue + Clone> FusedIterator for Iter<V> {}

impl<V: FrozenValue> fmt::Debug for Iter<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter")
            .field("layers", &self.sources.len())
            .finish_non_exhaustive()
    }
}
