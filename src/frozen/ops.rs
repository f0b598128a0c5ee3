//! Set operations over several streams of frozen entries: union,
//! intersection, difference and symmetric difference, merged in key order
//! as they are read, without collecting either side.
//!
//! Each stream is an [`Iter`] (a whole layer, a range or a prefix) or a
//! [`Search`] (the entries an automaton accepts, read by the same walk,
//! which leaves out the subtrees the automaton cannot match). The
//! union and the symmetric difference keep the streams in a binary heap
//! ordered by their current keys; the intersection and the difference skip
//! ahead instead: a stream still behind the key it must reach after eight
//! steps walks down to it from the root rather than
//! stepping through every key in between, so that intersecting a small
//! layer with a large one reads, per key of the small one, at most ten
//! entries of the large one and one walk from the root.

use std::fmt;
use std::iter::FusedIterator;
use std::mem;
use std::panic::{RefUnwindSafe, UnwindSafe};

use fst::Automaton;

use super::column::{Encoded, FrozenValue};
use super::iter::{Iter, Search};
use crate::search::{AnyPruner, Guard};

/// Steps a lagging stream takes one entry at a time before it seeks: a
/// step costs a few nodes, a seek a walk from the root (about a lookup), so
/// streams that interleave closely only step.
const STEPS_BEFORE_SEEK: usize = 8;

/// One value of an entry that a set operation yields, with the position of
/// the stream it came from, in the order the streams were added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IndexedValue<V> {
    /// The stream's position in the [`OpBuilder`], from 0.
    pub index: usize,
    /// The value that stream holds for the key.
    pub value: V,
}

/// Combines streams of frozen entries (whole layers, ranges, prefixes, or
/// searches through [`add_search`](Self::add_search)) into their [`union`](Self::union),
/// [`intersection`](Self::intersection),
/// [`difference`](Self::difference) or
/// [`symmetric_difference`](Self::symmetric_difference), as the fst crate's
/// `OpBuilder` does for its maps.
///
/// Each entry of the result is a key and the values the streams that hold
/// it have for it, tagged with the stream's position
/// ([`IndexedValue`]), in the order the streams were added.
///
/// ```
/// use memkv::FrozenLayer;
/// use memkv::frozen::{IndexedValue, OpBuilder};
///
/// let monday = FrozenLayer::from_sorted_iter([("a.html", 1u64), ("b.html", 2)])?;
/// let tuesday = FrozenLayer::from_sorted_iter([("b.html", 3u64), ("c.html", 4)])?;
///
/// let seen_both: Vec<_> = OpBuilder::new().add(&monday).add(&tuesday).intersection().collect();
/// assert_eq!(
///     seen_both,
///     [(
///         b"b.html".to_vec(),
///         vec![IndexedValue { index: 0, value: 2 }, IndexedValue { index: 1, value: 3 }],
///     )]
/// );
///
/// // Ranges and prefixes are streams too.
/// let gone: Vec<_> = monday.op().add(tuesday.prefix("b")).difference().map(|(key, _)| key).collect();
/// assert_eq!(gone, [b"a.html".to_vec()]);
/// # Ok::<(), memkv::Error>(())
/// ```
pub struct OpBuilder<'a, V: FrozenValue> {
    streams: Vec<Stream<'a, V>>,
}

impl<'a, V: FrozenValue> OpBuilder<'a, V> {
    /// A builder with no streams yet.
    pub fn new() -> Self {
        OpBuilder {
            streams: Vec::new(),
        }
    }

    /// Adds a stream: a layer (`&layer`), or one of its
    /// [`range`](super::FrozenLayer::range)s or
    /// [`prefix`](super::FrozenLayer::prefix)es. A stream partly read
    /// goes on from where it is.
    // The fst crate's name for it, which its users know; not `ops::Add`.
    #[allow(clippy::should_implement_trait)]
    pub fn add(mut self, stream: impl IntoIterator<IntoIter = Iter<'a, V>>) -> Self {
        self.push(stream);
        self
    }

    /// Adds a stream, as [`add`](Self::add) does, to a builder held by
    /// reference.
    pub fn push(&mut self, stream: impl IntoIterator<IntoIter = Iter<'a, V>>) {
        self.streams.push(Stream {
            entries: stream.into_iter(),
            pruner: None,
        });
    }

    /// Adds a [`search`](super::FrozenLayer::search) as a stream: the
    /// operation reads the entries its automaton accepts, from where the
    /// search is, and its walk leaves out the subtrees the automaton cannot
    /// match (the fst crate's `OpBuilder` takes its searches as it takes
    /// any stream).
    ///
    /// The operations can be cloned, so the automaton must be `Clone` (the
    /// fst crate's are but for `Levenshtein`; a reference to an automaton
    /// is); it and its states must be `Send`, `Sync` and unwind-safe, as
    /// the operations are.
    ///
    /// ```
    /// use memkv::FrozenLayer;
    /// use memkv::frozen::OpBuilder;
    /// use memkv::frozen::automaton::Subsequence;
    ///
    /// let today = FrozenLayer::from_sorted_iter([("bin/cat", 1u64), ("bin/cp", 2), ("bin/scp", 3)])?;
    /// let yesterday = FrozenLayer::from_sorted_iter([("bin/cp", 2u64)])?;
    /// // New today, with a "c" and later a "p" in their paths.
    /// let new: Vec<Vec<u8>> = OpBuilder::new()
    ///     .add_search(today.search(Subsequence::new("cp")))
    ///     .add(&yesterday)
    ///     .difference()
    ///     .map(|(key, _)| key)
    ///     .collect();
    /// assert_eq!(new, [b"bin/scp".to_vec()]);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn add_search<A>(mut self, search: Search<'a, V, A>) -> Self
    where
        A: Automaton + Clone + Send + Sync + UnwindSafe + RefUnwindSafe + 'a,
        A::State: Send + Sync + UnwindSafe + RefUnwindSafe + 'a,
    {
        self.push_search(search);
        self
    }

    /// Adds a search, as [`add_search`](Self::add_search) does, to a
    /// builder held by reference.
    pub fn push_search<A>(&mut self, search: Search<'a, V, A>)
    where
        A: Automaton + Clone + Send + Sync + UnwindSafe + RefUnwindSafe + 'a,
        A::State: Send + Sync + UnwindSafe + RefUnwindSafe + 'a,
    {
        let (entries, pruner) = search.into_parts();
        let pruner: Box<dyn AnyPruner + 'a> = Box::new(pruner);
        self.streams.push(Stream {
            entries,
            pruner: Some(pruner),
        });
    }

    /// The number of streams added.
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    /// Whether no stream has been added.
    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// Every key in any stream, with the values of every stream that holds
    /// it.
    pub fn union(self) -> Union<'a, V> {
        Union::new(Streams::new(self.streams))
    }

    /// The keys in every stream, with the values of each. With no streams,
    /// nothing.
    pub fn intersection(self) -> Intersection<'a, V> {
        let streams = Streams::new(self.streams);
        let done = streams.heads.is_empty() || streams.heads.iter().any(Option::is_none);
        Intersection { streams, done }
    }

    /// The keys of the first stream that no other stream holds, with the
    /// first stream's value.
    pub fn difference(self) -> Difference<'a, V> {
        Difference {
            streams: Streams::new(self.streams),
        }
    }

    /// The keys held by an odd number of the streams (for two streams: by
    /// exactly one), with their values, as the fst crate defines it.
    pub fn symmetric_difference(self) -> SymmetricDifference<'a, V> {
        SymmetricDifference {
            union: Union::new(Streams::new(self.streams)),
        }
    }
}

impl<V: FrozenValue> Default for OpBuilder<'_, V> {
    fn default() -> Self {
        OpBuilder::new()
    }
}

impl<V: FrozenValue> Clone for OpBuilder<'_, V> {
    fn clone(&self) -> Self {
        OpBuilder {
            streams: self.streams.clone(),
        }
    }
}

impl<'a, V: FrozenValue, I: IntoIterator<IntoIter = Iter<'a, V>>> Extend<I> for OpBuilder<'a, V> {
    fn extend<T: IntoIterator<Item = I>>(&mut self, streams: T) {
        for stream in streams {
            self.push(stream);
        }
    }
}

impl<'a, V: FrozenValue, I: IntoIterator<IntoIter = Iter<'a, V>>> FromIterator<I>
    for OpBuilder<'a, V>
{
    fn from_iter<T: IntoIterator<Item = I>>(streams: T) -> Self {
        let mut builder = OpBuilder::new();
        builder.extend(streams);
        builder
    }
}

impl<V: FrozenValue> fmt::Debug for OpBuilder<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpBuilder")
            .field("streams", &self.streams.len())
            .finish()
    }
}

/// One input of an operation: a walk, and for a search the pruner it asks.
struct Stream<'a, V: FrozenValue> {
    entries: Iter<'a, V>,
    pruner: Option<Box<dyn AnyPruner + 'a>>,
}

impl<V: FrozenValue> Stream<'_, V> {
    /// The ordinal of the next entry, whose key is then the walk's.
    #[inline]
    fn next_ordinal(&mut self) -> Option<u64> {
        let Some(pruner) = &mut self.pruner else {
            return self.entries.next_ordinal().map(|(_, ordinal)| ordinal);
        };
        loop {
            let (_, ordinal) = self.entries.next_ordinal_guarded(&mut **pruner)?;
            // Through `Guard`, as the walk asks `reach`: one way in to the
            // type-erased pruner (a mutation run found the other untested).
            if Guard::matches(&**pruner) {
                return Some(ordinal);
            }
        }
    }
}

/// Where [`Stream::step_toward`] stopped.
enum Step {
    /// At the next entry, with this ordinal.
    Entry(u64),
    /// At the stream's end.
    End,
    /// Still behind the target after walking as many keys as the budget
    /// allowed: time to seek.
    Spent,
}

impl<V: FrozenValue> Stream<'_, V> {
    /// Moves to the next entry, as [`next_ordinal`](Self::next_ordinal)
    /// does, taking one from `budget` for each key the walk passes short of
    /// `target`. A search's walk passes the keys its automaton rejects too,
    /// so that a search whose matches lie far apart seeks as soon as a
    /// plain stream would, rather than walking to the target.
    fn step_toward(&mut self, target: &[u8], budget: &mut usize) -> Step {
        let Some(pruner) = &mut self.pruner else {
            *budget = budget.saturating_sub(1);
            return match self.entries.next_ordinal() {
                Some((_, ordinal)) => Step::Entry(ordinal),
                None => Step::End,
            };
        };
        loop {
            let Some((key, ordinal)) = self.entries.next_ordinal_guarded(&mut **pruner) else {
                return Step::End;
            };
            if Guard::matches(&**pruner) {
                return Step::Entry(ordinal);
            }
            // Past the target, the next match is the answer: no seek.
            if key < target {
                *budget = budget.saturating_sub(1);
                if *budget == 0 {
                    return Step::Spent;
                }
            }
        }
    }
}

impl<V: FrozenValue> Clone for Stream<'_, V> {
    fn clone(&self) -> Self {
        Stream {
            entries: self.entries.clone(),
            pruner: self.pruner.as_ref().map(|pruner| pruner.clone_box()),
        }
    }
}

/// The streams of an operation, each one entry ahead: its current key is in
/// its walk's buffer and its ordinal in `heads`.
struct Streams<'a, V: FrozenValue> {
    streams: Vec<Stream<'a, V>>,
    /// The ordinal of each stream's current entry; `None` once it has run
    /// out (it is then never read again).
    heads: Vec<Option<u64>>,
    /// The key of the entry yielded last (a copy: the streams move on).
    key: Vec<u8>,
    /// Where its values are: (stream, ordinal).
    taken: Vec<(usize, u64)>,
    /// Its values, decoded for [`Union::next_entry`] and the like.
    values: Vec<IndexedValue<V>>,
}

impl<'a, V: FrozenValue> Streams<'a, V> {
    fn new(mut streams: Vec<Stream<'a, V>>) -> Self {
        let heads = streams.iter_mut().map(Stream::next_ordinal).collect();
        Streams {
            streams,
            heads,
            key: Vec::new(),
            taken: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Stream `i`'s current key; only while it has one.
    #[inline]
    fn key(&self, i: usize) -> &[u8] {
        debug_assert!(self.heads[i].is_some());
        self.streams[i].entries.front_key()
    }

    /// Moves stream `i` to its next entry; false if it has run out.
    #[inline]
    fn advance(&mut self, i: usize) -> bool {
        self.heads[i] = self.streams[i].next_ordinal();
        self.heads[i].is_some()
    }

    /// Moves stream `i`, which has a current key, to its first entry at or
    /// after `self.key`; false if it runs out first.
    fn catch_up(&mut self, i: usize) -> bool {
        let mut budget = STEPS_BEFORE_SEEK;
        while self.key(i) < self.key.as_slice() {
            let step = match budget {
                0 => Step::Spent,
                _ => self.streams[i].step_toward(&self.key, &mut budget),
            };
            match step {
                Step::Entry(ordinal) => self.heads[i] = Some(ordinal),
                Step::End => {
                    self.heads[i] = None;
                    return false;
                }
                Step::Spent => {
                    self.streams[i].entries.seek_front(&self.key);
                    return self.advance(i);
                }
            }
        }
        true
    }

    /// Makes stream `i`'s current key the one to yield.
    #[inline]
    fn take_key(&mut self, i: usize) {
        self.key.clear();
        self.key
            .extend_from_slice(self.streams[i].entries.front_key());
    }

    /// Adds stream `i`'s current value to those to yield.
    #[inline]
    fn take_value(&mut self, i: usize) {
        let ordinal = self.heads[i].expect("a stream with a current entry");
        self.taken.push((i, ordinal));
    }

    /// The values to yield, in their stored form.
    fn encoded(&self) -> impl ExactSizeIterator<Item = IndexedValue<Encoded<'a, V>>> + '_ {
        (self.taken.iter()).map(|&(index, ordinal)| IndexedValue {
            index,
            value: self.streams[index].entries.layer().encoded_at(ordinal),
        })
    }

    /// The values to yield, decoded.
    fn decoded(&self) -> impl ExactSizeIterator<Item = IndexedValue<V>> + '_ {
        (self.encoded()).map(|encoded| IndexedValue {
            index: encoded.index,
            value: V::decode(encoded.value),
        })
    }

    /// Whether stream `a`'s current entry comes before stream `b`'s: by key,
    /// then by position, so that equal keys come out in the order the
    /// streams were added.
    #[inline]
    fn before(&self, a: usize, b: usize) -> bool {
        (self.key(a), a) < (self.key(b), b)
    }

    /// Bounds on the entries of stream `i` not yet taken, its current one
    /// included.
    fn left(&self, i: usize) -> (usize, Option<usize>) {
        if self.heads[i].is_none() {
            return (0, Some(0));
        }
        let stream = &self.streams[i];
        let (low, high) = stream.entries.size_hint();
        // A search may accept none of the keys left.
        let low = if stream.pruner.is_some() { 0 } else { low };
        (
            low.saturating_add(1),
            high.and_then(|high| high.checked_add(1)),
        )
    }

    /// The entry to yield, its values decoded into `values`.
    fn entry(&mut self) -> (&[u8], &[IndexedValue<V>]) {
        let mut values = mem::take(&mut self.values);
        values.clear();
        values.extend(self.decoded());
        self.values = values;
        (&self.key, &self.values)
    }

    /// The entry to yield, its values in their stored form.
    fn encoded_entry(
        &self,
    ) -> (
        &[u8],
        impl ExactSizeIterator<Item = IndexedValue<Encoded<'a, V>>> + '_,
    ) {
        (&self.key, self.encoded())
    }
}

/// A binary min-heap of stream positions, ordered by the streams' current
/// entries ([`Streams::before`]), which it cannot hold itself: the keys live
/// in the streams' buffers.
#[derive(Clone)]
struct Heap {
    order: Vec<usize>,
}

impl Heap {
    /// The streams that have a current entry.
    fn new<V: FrozenValue>(streams: &Streams<'_, V>) -> Self {
        let order: Vec<usize> = (0..streams.heads.len())
            .filter(|&i| streams.heads[i].is_some())
            .collect();
        let mut heap = Heap { order };
        for at in (0..heap.order.len() / 2).rev() {
            heap.sift_down(streams, at);
        }
        heap
    }

    #[inline]
    fn first(&self) -> Option<usize> {
        self.order.first().copied()
    }

    /// Puts the first stream back in its place after it moved on, or drops it
    /// if it ran out.
    fn replace_first<V: FrozenValue>(&mut self, streams: &Streams<'_, V>, live: bool) {
        if !live {
            self.order.swap_remove(0);
        }
        if !self.order.is_empty() {
            self.sift_down(streams, 0);
        }
    }

    fn sift_down<V: FrozenValue>(&mut self, streams: &Streams<'_, V>, mut at: usize) {
        let order = &mut self.order;
        loop {
            let (left, right) = (2 * at + 1, 2 * at + 2);
            let mut least = at;
            if left < order.len() && streams.before(order[left], order[least]) {
                least = left;
            }
            if right < order.len() && streams.before(order[right], order[least]) {
                least = right;
            }
            if least == at {
                return;
            }
            order.swap(at, least);
            at = least;
        }
    }
}

/// Every key of any of an [`OpBuilder`]'s streams, in order, with the values
/// of each stream that holds it: see [`OpBuilder::union`].
///
/// Yields `(Vec<u8>, Vec<IndexedValue<V>>)` as an [`Iterator`], or lends
/// the key and values through [`next_entry`](Self::next_entry), which
/// allocates nothing per entry for integer values (a byte-string value is
/// still decoded into its own `Vec`), or through
/// [`next_encoded`](Self::next_encoded), which lends byte strings too:
///
/// ```
/// use memkv::FrozenLayer;
///
/// let a = FrozenLayer::from_sorted_iter([("k", "from a".to_string())])?;
/// let b = FrozenLayer::from_sorted_iter([("k", "from b".to_string())])?;
/// let mut union = a.op().add(&b).union();
/// let (key, values) = union.next_encoded().unwrap();
/// assert_eq!(key, b"k");
/// let bytes: Vec<&[u8]> = values.map(|v| v.value).collect();
/// assert_eq!(bytes, [&b"from a"[..], &b"from b"[..]]);
/// # Ok::<(), memkv::Error>(())
/// ```
pub struct Union<'a, V: FrozenValue> {
    streams: Streams<'a, V>,
    heap: Heap,
}

impl<'a, V: FrozenValue> Union<'a, V> {
    fn new(streams: Streams<'a, V>) -> Self {
        let heap = Heap::new(&streams);
        Union { streams, heap }
    }

    /// Takes the smallest current key and every stream's value for it, and
    /// moves those streams on.
    fn step(&mut self) -> bool {
        let streams = &mut self.streams;
        let Some(first) = self.heap.first() else {
            return false;
        };
        streams.take_key(first);
        streams.taken.clear();
        while let Some(first) = self.heap.first() {
            if streams.key(first) != streams.key.as_slice() {
                break;
            }
            streams.take_value(first);
            let live = streams.advance(first);
            self.heap.replace_first(streams, live);
        }
        true
    }
}

/// The keys of every one of an [`OpBuilder`]'s streams, in order, with each
/// stream's value: see [`OpBuilder::intersection`].
///
/// Yields `(Vec<u8>, Vec<IndexedValue<V>>)` as an [`Iterator`], or lends
/// the key and values through [`next_entry`](Self::next_entry), which
/// allocates nothing per entry for integer values (a byte-string value is
/// still decoded into its own `Vec`), or through
/// [`next_encoded`](Self::next_encoded), which lends byte strings too.
pub struct Intersection<'a, V: FrozenValue> {
    streams: Streams<'a, V>,
    /// Whether a stream has run out: nothing more can be in all of them.
    done: bool,
}

impl<'a, V: FrozenValue> Intersection<'a, V> {
    /// Leapfrogs the streams until all agree on a key: each in turn catches
    /// up with the largest key seen, which moves whenever one overshoots.
    fn step(&mut self) -> bool {
        if self.done {
            return false;
        }
        let streams = &mut self.streams;
        let count = streams.heads.len();
        let largest = (1..count).fold(0, |largest, i| {
            if streams.key(i) > streams.key(largest) {
                i
            } else {
                largest
            }
        });
        streams.take_key(largest);
        let (mut agreed, mut i) = (1, largest);
        while agreed < count {
            i = (i + 1) % count;
            if !streams.catch_up(i) {
                self.done = true;
                return false;
            }
            if streams.key(i) == streams.key.as_slice() {
                agreed += 1;
            } else {
                streams.take_key(i);
                agreed = 1;
            }
        }
        streams.taken.clear();
        for i in 0..count {
            streams.take_value(i);
            if !streams.advance(i) {
                self.done = true;
            }
        }
        true
    }
}

/// The keys of an [`OpBuilder`]'s first stream that none of the others
/// holds, in order, with the first stream's value: see
/// [`OpBuilder::difference`].
///
/// Yields `(Vec<u8>, Vec<IndexedValue<V>>)` as an [`Iterator`], or lends
/// the key and values through [`next_entry`](Self::next_entry), which
/// allocates nothing per entry for integer values (a byte-string value is
/// still decoded into its own `Vec`), or through
/// [`next_encoded`](Self::next_encoded), which lends byte strings too.
pub struct Difference<'a, V: FrozenValue> {
    streams: Streams<'a, V>,
}

impl<'a, V: FrozenValue> Difference<'a, V> {
    /// Takes the first stream's keys in turn until one that no other stream
    /// holds, each other stream catching up with it.
    fn step(&mut self) -> bool {
        let streams = &mut self.streams;
        while streams.heads.first().is_some_and(Option::is_some) {
            streams.take_key(0);
            let mut held = false;
            for i in 1..streams.heads.len() {
                if streams.heads[i].is_some()
                    && streams.catch_up(i)
                    && streams.key(i) == streams.key.as_slice()
                {
                    held = true;
                    break;
                }
            }
            if !held {
                streams.taken.clear();
                streams.take_value(0);
            }
            streams.advance(0);
            if !held {
                return true;
            }
        }
        false
    }
}

/// The keys held by an odd number of an [`OpBuilder`]'s streams, in order,
/// with their values: see [`OpBuilder::symmetric_difference`].
///
/// Yields `(Vec<u8>, Vec<IndexedValue<V>>)` as an [`Iterator`], or lends
/// the key and values through [`next_entry`](Self::next_entry), which
/// allocates nothing per entry for integer values (a byte-string value is
/// still decoded into its own `Vec`), or through
/// [`next_encoded`](Self::next_encoded), which lends byte strings too.
pub struct SymmetricDifference<'a, V: FrozenValue> {
    union: Union<'a, V>,
}

impl<'a, V: FrozenValue> SymmetricDifference<'a, V> {
    fn step(&mut self) -> bool {
        while self.union.step() {
            if self.union.streams.taken.len() % 2 == 1 {
                return true;
            }
        }
        false
    }
}

/// The lending methods and the iterator, size hint, `Debug` and
/// `FusedIterator` impls the four operations share, given where each keeps
/// its streams.
macro_rules! set_operation {
    ($name:ident, $($streams:ident).+, |$op:ident| $size_hint:expr) => {
        impl<'a, V: FrozenValue> $name<'a, V> {
            /// The next key and its values, lent until the next call.
            pub fn next_entry(&mut self) -> Option<(&[u8], &[IndexedValue<V>])> {
                self.step().then(|| self.$($streams).+.entry())
            }

            /// The next key and its values in their stored form (a byte
            /// string's bytes, borrowed from the layer), lent until the next
            /// call: nothing allocated per entry, whatever the value type.
            pub fn next_encoded(
                &mut self,
            ) -> Option<(
                &[u8],
                impl ExactSizeIterator<Item = IndexedValue<Encoded<'a, V>>> + '_,
            )> {
                self.step().then(|| self.$($streams).+.encoded_entry())
            }
        }

        impl<V: FrozenValue> Iterator for $name<'_, V> {
            type Item = (Vec<u8>, Vec<IndexedValue<V>>);

            fn next(&mut self) -> Option<Self::Item> {
                if !self.step() {
                    return None;
                }
                let streams = &self.$($streams).+;
                Some((streams.key.clone(), streams.decoded().collect()))
            }

            fn size_hint(&self) -> (usize, Option<usize>) {
                let $op = self;
                $size_hint
            }
        }

        // Once the operation has ended (the intersection when any stream
        // ran out, the difference when the first did, the union and the
        // symmetric difference when all did) every later call finds the
        // same.
        impl<V: FrozenValue> FusedIterator for $name<'_, V> {}

        impl<V: FrozenValue> fmt::Debug for $name<'_, V> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("streams", &self.$($streams).+.heads.len())
                    .finish_non_exhaustive()
            }
        }
    };
}

/// At most every entry left of every stream; at least those of the stream
/// with the most (each key once).
fn union_bounds<V: FrozenValue>(streams: &Streams<'_, V>) -> (usize, Option<usize>) {
    (0..streams.heads.len())
        .map(|i| streams.left(i))
        .fold((0, Some(0)), |(low, high), (l, h)| {
            (
                low.max(l),
                high.zip(h).and_then(|(high, h)| high.checked_add(h)),
            )
        })
}

set_operation!(Union, streams, |op| union_bounds(&op.streams));
set_operation!(SymmetricDifference, union.streams, |op| (
    0,
    union_bounds(&op.union.streams).1
));
set_operation!(Intersection, streams, |op| {
    if op.done {
        (0, Some(0))
    } else {
        let streams = &op.streams;
        let high = (0..streams.heads.len())
            .filter_map(|i| streams.left(i).1)
            .min();
        (0, high)
    }
});
set_operation!(
    Difference,
    streams,
    |op| match op.streams.heads.is_empty() {
        true => (0, Some(0)),
        false => (0, op.streams.left(0).1),
    }
);

impl<V: FrozenValue> Clone for Streams<'_, V> {
    fn clone(&self) -> Self {
        Streams {
            streams: self.streams.clone(),
            heads: self.heads.clone(),
            key: self.key.clone(),
            taken: self.taken.clone(),
            // Scratch space, filled again for each entry lent.
            values: Vec::new(),
        }
    }
}

impl<V: FrozenValue> Clone for Union<'_, V> {
    fn clone(&self) -> Self {
        Union {
            streams: self.streams.clone(),
            heap: self.heap.clone(),
        }
    }
}

impl<V: FrozenValue> Clone for Intersection<'_, V> {
    fn clone(&self) -> Self {
        Intersection {
            streams: self.streams.clone(),
            done: self.done,
        }
    }
}

impl<V: FrozenValue> Clone for Difference<'_, V> {
    fn clone(&self) -> Self {
        Difference {
            streams: self.streams.clone(),
        }
    }
}

impl<V: FrozenValue> Clone for SymmetricDifference<'_, V> {
    fn clone(&self) -> Self {
        SymmetricDifference {
            union: self.union.clone(),
        }
    }
}
