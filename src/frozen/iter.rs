//! Streams over a frozen layer's entries, in key order.

use std::fmt;
use std::iter::FusedIterator;
use std::ops::Bound;

use fst::automaton::Automaton;

use super::column::{Encoded, FrozenValue};
use super::fst_node::{CommonCodes, NodeView, common_codes, follow_chain};
use super::{FrozenLayer, lookup};
use crate::keys::{after_start, as_slice, before_end, owned_bound};
use crate::search::{Guard, Pruner, Reach, Unguarded};

/// Entries of a [`FrozenLayer`] in key order: all of them
/// ([`iter`](FrozenLayer::iter)), a [`range`](FrozenLayer::range) or a
/// [`prefix`](FrozenLayer::prefix); from the front, the back, or both.
///
/// This is a walk over the fst's bytes (a depth-first walk that decodes each
/// node's header once and keeps no frame for single-transition nodes, 2–3×
/// the fst crate's general stream), keeping the current key in a buffer; each
/// value is decoded from the column by the key's ordinal. The walk from the
/// back starts at the first [`next_back`](DoubleEndedIterator::next_back);
/// the two ends stop where they meet (the ordinals tell), which also makes
/// the size hint exact over the whole layer (so `collect` allocates once)
/// and an upper bound over a range. Three ways to consume it:
///
/// * as an [`Iterator`] (and [`DoubleEndedIterator`]) of `(Vec<u8>, V)`:
///   convenient, but the key is copied into a fresh `Vec` for every entry
///   (one allocation each);
/// * with [`next_entry`](Self::next_entry) and
///   [`next_back_entry`](Self::next_back_entry), which lend the key from the
///   walk's buffer instead (the buffer grows to the longest key met, and the
///   first step from the back sets that walk up), so that a scan of integer
///   values allocates nothing per entry; a byte-string value is still
///   decoded into its own `Vec`;
/// * with [`next_encoded`](Self::next_encoded) and
///   [`next_back_encoded`](Self::next_back_encoded), which also lend the value
///   in its stored form (a byte string's bytes), so that a scan of byte or
///   string values allocates nothing per entry either.
pub struct Iter<'a, V: FrozenValue> {
    front: Walker<'a>,
    /// The walk from the back, once asked for.
    back: Option<BackWalker<'a>>,
    /// Where the range starts and the fst's root: what a walk from the back
    /// needs to begin.
    start: Bound<Vec<u8>>,
    root: u64,
    /// Ordinals of the entries taken last from each end.
    front_last: Option<u64>,
    back_last: Option<u64>,
    /// Whether the walk covers the whole layer (no bounds): the ordinals
    /// between the ends then count the entries left exactly.
    whole: bool,
    layer: &'a FrozenLayer<V>,
}

impl<'a, V: FrozenValue> Iter<'a, V> {
    /// The entries in `start..end`, by a walk over the fst's bytes.
    pub(crate) fn walk(
        data: &'a [u8],
        root: u64,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        layer: &'a FrozenLayer<V>,
    ) -> Self {
        Iter {
            front: Walker::new(data, root, start, end),
            back: None,
            whole: matches!((start, end), (Bound::Unbounded, Bound::Unbounded)),
            start: owned_bound(start),
            root,
            front_last: None,
            back_last: None,
            layer,
        }
    }

    /// The entries left: exact for a walk of the whole layer; for a range,
    /// at most the ordinals between the ends.
    fn left(&self) -> (usize, Option<usize>) {
        let from = self.front_last.map_or(0, |ordinal| ordinal + 1);
        let to = self.back_last.unwrap_or(self.layer.len() as u64);
        let between = to.saturating_sub(from) as usize;
        (if self.whole { between } else { 0 }, Some(between))
    }

    /// The next entry, with the key borrowed from the walk (valid until the
    /// next call), without allocating for the key.
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_sorted_iter([("a", 1u64), ("b", 2)])?;
    /// let mut entries = layer.iter();
    /// let mut total = 0;
    /// while let Some((key, value)) = entries.next_entry() {
    ///     total += key.len() as u64 * value;
    /// }
    /// assert_eq!(total, 3);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    #[inline]
    pub fn next_entry(&mut self) -> Option<(&[u8], V)> {
        (self.next_encoded()).map(|(key, encoded)| (key, V::decode(encoded)))
    }

    /// The next entry with the key borrowed from the walk (valid until the
    /// next call) and the value in its stored form, borrowed from the layer:
    /// a scan of byte-string or string values that allocates nothing per
    /// entry (see
    /// [`FrozenLayer::get_encoded`]).
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_sorted_iter([("a", b"xy".to_vec()), ("b", b"z".to_vec())])?;
    /// let mut entries = layer.iter();
    /// let mut bytes = 0;
    /// while let Some((key, value)) = entries.next_encoded() {
    ///     bytes += key.len() + value.len();
    /// }
    /// assert_eq!(bytes, 5);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    #[inline]
    pub fn next_encoded(&mut self) -> Option<(&[u8], Encoded<'a, V>)> {
        let layer = self.layer;
        (self.next_ordinal()).map(|(key, ordinal)| (key, layer.encoded_at(ordinal)))
    }

    /// The next key and its ordinal (its value's place in the column).
    #[inline]
    pub(super) fn next_ordinal(&mut self) -> Option<(&[u8], u64)> {
        self.next_ordinal_guarded(&mut Unguarded)
    }

    /// The next entry whose key `guard` lets the walk reach and
    /// [matches](Guard::matches), as [`next_entry`](Self::next_entry) lends
    /// it.
    #[inline]
    pub(crate) fn next_entry_guarded<G: Guard + ?Sized>(
        &mut self,
        guard: &mut G,
    ) -> Option<(&[u8], V)> {
        let layer = self.layer;
        loop {
            let (_, ordinal) = self.next_ordinal_guarded(guard)?;
            if guard.matches() {
                return Some((self.front_key(), V::decode(layer.encoded_at(ordinal))));
            }
        }
    }

    /// The next key `guard` lets the walk reach, and its ordinal.
    #[inline]
    pub(super) fn next_ordinal_guarded<G: Guard + ?Sized>(
        &mut self,
        guard: &mut G,
    ) -> Option<(&[u8], u64)> {
        let (key, ordinal) = self.front.next_guarded(guard)?;
        // Ordinals increase with the keys: at the back's last entry, the
        // two ends have met.
        if self.back_last.is_some_and(|back| ordinal >= back) {
            return None;
        }
        self.front_last = Some(ordinal);
        Some((key, ordinal))
    }

    /// The previous entry from the back, with the key borrowed from the walk
    /// (valid until the next call), without allocating for the key (the
    /// first call sets the walk from the back up).
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_sorted_iter([("a", 1u64), ("b", 2), ("c", 3)])?;
    /// // The last key before "c": a floor query.
    /// let mut below = layer.range(..b"c".as_slice());
    /// assert_eq!(below.next_back_entry(), Some((&b"b"[..], 2)));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn next_back_entry(&mut self) -> Option<(&[u8], V)> {
        (self.next_back_encoded()).map(|(key, encoded)| (key, V::decode(encoded)))
    }

    /// The previous entry from the back, as [`next_encoded`](Self::next_encoded)
    /// lends them from the front.
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_sorted_iter([("a", b"xy".to_vec()), ("b", b"z".to_vec())])?;
    /// let mut entries = layer.iter();
    /// assert_eq!(entries.next_back_encoded(), Some((&b"b"[..], &b"z"[..])));
    /// assert_eq!(entries.next_encoded(), Some((&b"a"[..], &b"xy"[..])));
    /// assert_eq!(entries.next_back_encoded(), None); // the ends have met
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn next_back_encoded(&mut self) -> Option<(&[u8], Encoded<'a, V>)> {
        let layer = self.layer;
        (self.next_back_ordinal()).map(|(key, ordinal)| (key, layer.encoded_at(ordinal)))
    }

    /// The key taken last from the front (valid after
    /// [`next_ordinal`](Self::next_ordinal) returned it).
    #[inline]
    pub(super) fn front_key(&self) -> &[u8] {
        &self.front.key
    }

    /// The layer walked.
    #[inline]
    pub(super) fn layer(&self) -> &'a FrozenLayer<V> {
        self.layer
    }

    /// Moves the front on so that the next entry from it is the first at or
    /// after `target`: a walk down from the root, for skipping many entries
    /// at once. `target` must come after the key taken last from the front;
    /// the range's end and a walk from the back still bound what follows.
    pub(super) fn seek_front(&mut self, target: &[u8]) {
        self.front.reseek(self.root, target);
    }

    /// The previous key from the back and its ordinal.
    fn next_back_ordinal(&mut self) -> Option<(&[u8], u64)> {
        let back = match &mut self.back {
            Some(back) => back,
            back @ None => back.insert(BackWalker::new(
                self.front.data,
                self.root,
                as_slice(&self.start),
                as_slice(&self.front.end),
            )),
        };
        let (key, ordinal) = back.next()?;
        if self.front_last.is_some_and(|front| ordinal <= front) {
            return None;
        }
        self.back_last = Some(ordinal);
        Some((key, ordinal))
    }
}

impl<V: FrozenValue> Iterator for Iter<'_, V> {
    type Item = (Vec<u8>, V);

    #[inline]
    fn next(&mut self) -> Option<(Vec<u8>, V)> {
        self.next_entry().map(|(key, value)| (key.to_vec(), value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.left()
    }
}

impl<V: FrozenValue> DoubleEndedIterator for Iter<'_, V> {
    fn next_back(&mut self) -> Option<(Vec<u8>, V)> {
        self.next_back_entry()
            .map(|(key, value)| (key.to_vec(), value))
    }
}

// Once an end has met the other, or run out, every later call finds the
// same: the ordinals only move apart from the meeting point.
impl<V: FrozenValue> FusedIterator for Iter<'_, V> {}

/// The entries of a [`FrozenLayer`] whose keys are prefixes of a given key,
/// shortest first; see [`prefixes_of`](FrozenLayer::prefixes_of).
///
/// One walk down the fst along that key finds them all; each key yielded
/// is a slice of the key asked about, so none is copied.
/// [`next_encoded`](Self::next_encoded) lends the value in its stored form
/// as well.
pub struct PrefixesOf<'a, 'k, V: FrozenValue> {
    layer: &'a FrozenLayer<V>,
    key: &'k [u8],
    /// Where the walk goes on; `None` once it has ended.
    at: Option<lookup::State>,
    /// The walk ends at the first node this many key bytes down or more.
    until: usize,
}

impl<'a, 'k, V: FrozenValue> PrefixesOf<'a, 'k, V> {
    /// The walk along `key` from `start` (the root, for all its prefixes),
    /// for the prefixes shorter than `until` bytes.
    pub(crate) fn new(
        layer: &'a FrozenLayer<V>,
        key: &'k [u8],
        start: lookup::State,
        until: usize,
    ) -> Self {
        PrefixesOf {
            layer,
            key,
            at: Some(start),
            until,
        }
    }

    /// The next entry, its value lent in its stored form (a byte string's
    /// bytes from the layer) instead of decoded.
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_sorted_iter([("a", b"x".to_vec()), ("ab", b"y".to_vec())])?;
    /// let mut covering = layer.prefixes_of("abc");
    /// assert_eq!(covering.next_encoded(), Some((&b"a"[..], &b"x"[..])));
    /// assert_eq!(covering.next_encoded(), Some((&b"ab"[..], &b"y"[..])));
    /// assert_eq!(covering.next_encoded(), None);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn next_encoded(&mut self) -> Option<(&'k [u8], Encoded<'a, V>)> {
        let data = self.layer.fst.as_bytes();
        while let Some(state) = self.at.take_if(|&mut (_, depth, _)| depth < self.until) {
            let (found, next) = lookup::prefix_step(data, self.key, state);
            self.at = next;
            if let Some((len, ordinal)) = found {
                return Some((&self.key[..len], self.layer.encoded_at(ordinal)));
            }
        }
        None
    }
}

impl<'k, V: FrozenValue> Iterator for PrefixesOf<'_, 'k, V> {
    type Item = (&'k [u8], V);

    #[inline]
    fn next(&mut self) -> Option<(&'k [u8], V)> {
        self.next_encoded()
            .map(|(key, value)| (key, V::decode(value)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // At most one entry per length still to come.
        let left = match self.at {
            Some((_, depth, _)) => self.key.len() - depth + 1,
            None => 0,
        };
        (0, Some(left.min(self.layer.len())))
    }
}

impl<V: FrozenValue> FusedIterator for PrefixesOf<'_, '_, V> {}

impl<V: FrozenValue> fmt::Debug for PrefixesOf<'_, '_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrefixesOf")
            .field("key", &crate::fmt::ByteStr(self.key))
            .field("at", &self.at)
            .finish_non_exhaustive()
    }
}

/// The keys of a [`FrozenLayer`] in order; see
/// [`keys`](FrozenLayer::keys). Reads no value; lends each key with
/// [`next_key`](Self::next_key), or copies it as an [`Iterator`].
pub struct Keys<'a, V: FrozenValue> {
    inner: Iter<'a, V>,
}

impl<'a, V: FrozenValue> Keys<'a, V> {
    pub(crate) fn new(inner: Iter<'a, V>) -> Self {
        Keys { inner }
    }

    /// The next key, borrowed from the walk (valid until the next call),
    /// without allocating for it.
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_sorted_iter([("a", 1u8), ("bc", 2)])?;
    /// let mut keys = layer.keys();
    /// let mut bytes = 0;
    /// while let Some(key) = keys.next_key() {
    ///     bytes += key.len();
    /// }
    /// assert_eq!(bytes, 3);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    #[inline]
    pub fn next_key(&mut self) -> Option<&[u8]> {
        self.inner.next_ordinal().map(|(key, _)| key)
    }
}

impl<V: FrozenValue> Iterator for Keys<'_, V> {
    type Item = Vec<u8>;

    #[inline]
    fn next(&mut self) -> Option<Vec<u8>> {
        self.next_key().map(<[u8]>::to_vec)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.left()
    }
}

impl<V: FrozenValue> DoubleEndedIterator for Keys<'_, V> {
    fn next_back(&mut self) -> Option<Vec<u8>> {
        (self.inner.next_back_ordinal()).map(|(key, _)| key.to_vec())
    }
}

impl<V: FrozenValue> FusedIterator for Keys<'_, V> {}

impl<V: FrozenValue> fmt::Debug for Keys<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Keys").field(&self.inner).finish()
    }
}

/// The values of a [`FrozenLayer`] in key order; see
/// [`values`](FrozenLayer::values). Copies no key.
pub struct Values<'a, V: FrozenValue> {
    inner: Iter<'a, V>,
}

impl<'a, V: FrozenValue> Values<'a, V> {
    pub(crate) fn new(inner: Iter<'a, V>) -> Self {
        Values { inner }
    }
}

impl<V: FrozenValue> Iterator for Values<'_, V> {
    type Item = V;

    #[inline]
    fn next(&mut self) -> Option<V> {
        self.inner.next_entry().map(|(_, value)| value)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.left()
    }
}

impl<V: FrozenValue> DoubleEndedIterator for Values<'_, V> {
    fn next_back(&mut self) -> Option<V> {
        self.inner.next_back_entry().map(|(_, value)| value)
    }
}

impl<V: FrozenValue> FusedIterator for Values<'_, V> {}

impl<V: FrozenValue> fmt::Debug for Values<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Values").field(&self.inner).finish()
    }
}

impl<V: FrozenValue> fmt::Debug for Iter<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter")
            .field("layer", self.layer)
            .finish_non_exhaustive()
    }
}

/// Entries of a [`FrozenLayer`] whose keys an automaton accepts, in
/// increasing key order: see [`search`](FrozenLayer::search).
///
/// This is [`Iter`]'s walk over the fst's bytes, forward only, each node's
/// key fed to the automaton from where it parts from the key before it:
/// where the automaton cannot match below a node, the walk does not go
/// there. As with [`Iter`], [`next_entry`](Self::next_entry) lends each
/// key instead of copying it, and [`next_encoded`](Self::next_encoded) the
/// value too. Its size hint is at most the keys after the last one found.
pub struct Search<'a, V: FrozenValue, A: Automaton> {
    entries: Iter<'a, V>,
    pruner: Pruner<A>,
}

impl<'a, V: FrozenValue, A: Automaton> Search<'a, V, A> {
    pub(crate) fn new(entries: Iter<'a, V>, automaton: A) -> Self {
        Search {
            entries,
            pruner: Pruner::new(automaton),
        }
    }

    /// The walk and the pruner it asks.
    pub(super) fn into_parts(self) -> (Iter<'a, V>, Pruner<A>) {
        (self.entries, self.pruner)
    }

    /// The next entry, with the key borrowed from the search (valid until
    /// the next call), without allocating for the key.
    ///
    /// ```
    /// use memkv::frozen::automaton::{Automaton, Str};
    ///
    /// let layer =
    ///     memkv::FrozenLayer::from_sorted_iter([("usr/bin", 1u64), ("usr/lib", 2), ("var", 4)])?;
    /// let mut under_usr = layer.search(Str::new("usr/").starts_with());
    /// let mut total = 0;
    /// while let Some((key, value)) = under_usr.next_entry() {
    ///     assert!(key.starts_with(b"usr/"));
    ///     total += value;
    /// }
    /// assert_eq!(total, 3);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    #[inline]
    pub fn next_entry(&mut self) -> Option<(&[u8], V)> {
        (self.next_encoded()).map(|(key, encoded)| (key, V::decode(encoded)))
    }

    /// The next entry with the value in its stored form, borrowed from the
    /// layer, as [`Iter::next_encoded`] lends it.
    ///
    /// ```
    /// use memkv::frozen::automaton::{Automaton, Str};
    ///
    /// let layer = memkv::FrozenLayer::from_sorted_iter([("a", "one".to_string()), ("b", "two".into())])?;
    /// let mut found = layer.search(Str::new("b"));
    /// assert_eq!(found.next_encoded(), Some((&b"b"[..], &b"two"[..])));
    /// assert_eq!(found.next_encoded(), None);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    #[inline]
    pub fn next_encoded(&mut self) -> Option<(&[u8], Encoded<'a, V>)> {
        let layer = self.entries.layer();
        (self.next_ordinal()).map(|(key, ordinal)| (key, layer.encoded_at(ordinal)))
    }

    /// The next key the automaton accepts and its ordinal.
    fn next_ordinal(&mut self) -> Option<(&[u8], u64)> {
        loop {
            // The walk has asked the automaton about each node on the way,
            // this key's included.
            let (_, ordinal) = self.entries.next_ordinal_guarded(&mut self.pruner)?;
            if self.pruner.matches() {
                return Some((self.entries.front_key(), ordinal));
            }
        }
    }
}

impl<V: FrozenValue, A: Automaton> Iterator for Search<'_, V, A> {
    type Item = (Vec<u8>, V);

    #[inline]
    fn next(&mut self) -> Option<(Vec<u8>, V)> {
        self.next_entry().map(|(key, value)| (key.to_vec(), value))
    }

    /// At most the keys after the last one found; the automaton may accept
    /// none of them.
    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, self.entries.size_hint().1)
    }
}

// The walk, once run out, stays so.
impl<V: FrozenValue, A: Automaton> FusedIterator for Search<'_, V, A> {}

impl<V: FrozenValue, A: Automaton> fmt::Debug for Search<'_, V, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Search")
            .field("layer", self.entries.layer())
            .finish_non_exhaustive()
    }
}

/// A depth-first walk over an fst's keys in a range, in order, with their
/// outputs.
#[derive(Clone)]
pub(crate) struct Walker<'a> {
    data: &'a [u8],
    codes: &'static CommonCodes,
    /// Nodes with transitions left to take, innermost last.
    stack: Vec<Frame>,
    /// The key of the node reached last.
    key: Vec<u8>,
    /// A node reached but not yet entered: its address and the output
    /// gathered on the way.
    reached: Option<(u64, u64)>,
    /// Where the walk stops.
    end: Bound<Vec<u8>>,
}

#[derive(Clone)]
struct Frame {
    node: NodeView,
    /// The next transition to take.
    next: usize,
    /// The output gathered up to the node.
    output: u64,
    /// The node's key length.
    depth: usize,
}

impl<'a> Walker<'a> {
    /// A walk over the keys in `start..end` of the fst in `data` whose root
    /// is at `root`.
    pub(crate) fn new(data: &'a [u8], root: u64, start: Bound<&[u8]>, end: Bound<&[u8]>) -> Self {
        let mut walker = Walker {
            data,
            codes: common_codes(),
            stack: Vec::new(),
            key: Vec::new(),
            reached: None,
            end: owned_bound(end),
        };
        match start {
            Bound::Unbounded => walker.reached = Some((root, 0)),
            Bound::Included(key) => walker.seek(root, key, true),
            Bound::Excluded(key) => walker.seek(root, key, false),
        }
        walker
    }

    /// Sets the walk up to go on from the first key after `target` (or at
    /// it, if `inclusive`): descends along `target`, leaving a frame for the
    /// larger transitions of each node on the way, as if the walk had just
    /// passed `target`.
    fn seek(&mut self, root: u64, target: &[u8], inclusive: bool) {
        let (mut addr, mut output) = (root, 0);
        for (depth, &byte) in target.iter().enumerate() {
            // The node's own key is a proper prefix of `target`, so smaller:
            // its final output, if any, is not in range.
            let node = NodeView::new(self.data, addr, self.codes);
            let (below, on_path) = node.split_at(self.data, byte);
            let later = below + usize::from(on_path.is_some());
            if later < node.len {
                self.stack.push(Frame {
                    node,
                    next: later,
                    output,
                    depth,
                });
            }
            // No key continues along `target`: the walk goes on from the
            // frames (their keys are prefixes of the key buffer).
            let Some(t) = on_path else {
                return;
            };
            self.key.push(byte);
            addr = t.addr;
            output += t.output;
        }
        if inclusive {
            self.reached = Some((addr, output));
        } else {
            // `target` itself is out, the keys below it are in.
            let node = NodeView::new(self.data, addr, self.codes);
            if node.len > 0 {
                self.stack.push(Frame {
                    node,
                    next: 0,
                    output,
                    depth: target.len(),
                });
            }
        }
    }

    /// Drops the frames of the nodes at depth `len` and below: the keys
    /// left under the first `len` bytes of the current key. (Each frame
    /// holds the transitions still to take from a node whose key is that
    /// long; those of shallower nodes lead elsewhere.)
    fn skip_under(&mut self, len: usize) {
        while self.stack.last().is_some_and(|frame| frame.depth >= len) {
            self.stack.pop();
        }
    }

    /// Starts the walk again from the root at the first key at or after
    /// `target`, keeping its buffers.
    fn reseek(&mut self, root: u64, target: &[u8]) {
        self.stack.clear();
        self.key.clear();
        self.reached = None;
        self.seek(root, target, true);
    }

    /// The next key and its output, among those `guard` lets the walk
    /// reach.
    #[inline]
    pub(crate) fn next_guarded<G: Guard + ?Sized>(
        &mut self,
        guard: &mut G,
    ) -> Option<(&[u8], u64)> {
        loop {
            let (mut addr, mut output) = match self.reached.take() {
                Some(reached) => reached,
                None => {
                    let frame = self.stack.last_mut()?;
                    let t = frame.node.transition(self.data, frame.next);
                    frame.next += 1;
                    let (output, depth) = (frame.output + t.output, frame.depth);
                    if frame.next == frame.node.len {
                        self.stack.pop();
                    }
                    self.key.truncate(depth);
                    self.key.push(t.input);
                    (t.addr, output)
                }
            };
            // Chains of one-transition nodes (most nodes) need no frame:
            // there is nothing to come back to.
            addr = follow_chain(self.data, addr, self.codes, &mut self.key, &mut output);
            let descend = match guard.reach(&self.key) {
                Reach::Below => true,
                Reach::Here => false,
                Reach::Out(len) => {
                    // Nothing under the first `len` bytes, this node
                    // included: on with the frames above them.
                    self.skip_under(len);
                    continue;
                }
            };
            let node = NodeView::branching(self.data, addr);
            if node.len > 0 && descend {
                let depth = self.key.len();
                self.stack.push(Frame {
                    node,
                    next: 0,
                    output,
                    depth,
                });
            }
            if node.is_final {
                if !before_end(&self.key, as_slice(&self.end)) {
                    // Keys only grow from here.
                    self.stack.clear();
                    return None;
                }
                return Some((&self.key, output + node.final_output));
            }
        }
    }
}

/// A depth-first walk over an fst's keys in a range, in decreasing order,
/// with their outputs: [`Walker`] backwards. A node's own key comes after
/// its subtree's (it is a prefix of them), so a node keeps its frame until
/// its transitions are all taken, even with only one.
#[derive(Clone)]
pub(crate) struct BackWalker<'a> {
    data: &'a [u8],
    codes: &'static CommonCodes,
    /// Nodes whose smaller transitions, or own key, are still to come,
    /// innermost last. `Frame::next` counts the transitions left.
    stack: Vec<Frame>,
    key: Vec<u8>,
    /// A node reached but not yet descended to its largest key.
    reached: Option<(u64, u64)>,
    /// Where the walk stops.
    start: Bound<Vec<u8>>,
}

impl<'a> BackWalker<'a> {
    /// A walk down from the last key in `start..end` of the fst in `data`
    /// whose root is at `root`.
    pub(crate) fn new(data: &'a [u8], root: u64, start: Bound<&[u8]>, end: Bound<&[u8]>) -> Self {
        let mut walker = BackWalker {
            data,
            codes: common_codes(),
            stack: Vec::new(),
            key: Vec::new(),
            reached: None,
            start: owned_bound(start),
        };
        match end {
            Bound::Unbounded => walker.reached = Some((root, 0)),
            Bound::Included(key) => walker.seek(root, key, true),
            Bound::Excluded(key) => walker.seek(root, key, false),
        }
        walker
    }

    /// Sets the walk up to go on from the last key before `target` (or at
    /// it, if `inclusive`): descends along `target`, leaving a frame for the
    /// smaller transitions (and the own key, a prefix of `target`) of each
    /// node on the way.
    fn seek(&mut self, root: u64, target: &[u8], inclusive: bool) {
        let (mut addr, mut output) = (root, 0);
        for (depth, &byte) in target.iter().enumerate() {
            let node = NodeView::new(self.data, addr, self.codes);
            let (smaller, on_path) = node.split_at(self.data, byte);
            if smaller > 0 || node.is_final {
                self.stack.push(Frame {
                    node,
                    next: smaller,
                    output,
                    depth,
                });
            }
            let Some(t) = on_path else {
                return;
            };
            self.key.push(byte);
            addr = t.addr;
            output += t.output;
        }
        if inclusive {
            // `target` itself, if it is a key; everything below it is larger.
            let node = NodeView::new(self.data, addr, self.codes);
            if node.is_final {
                self.stack.push(Frame {
                    node,
                    next: 0,
                    output,
                    depth: target.len(),
                });
            }
        }
    }

    /// The previous key and its output.
    pub(crate) fn next(&mut self) -> Option<(&[u8], u64)> {
        loop {
            if let Some((mut addr, mut output)) = self.reached.take() {
                // Down to the largest key below: the last transition each time.
                loop {
                    addr = follow_chain(self.data, addr, self.codes, &mut self.key, &mut output);
                    let node = NodeView::branching(self.data, addr);
                    let last = node.len.checked_sub(1);
                    self.stack.push(Frame {
                        node,
                        next: last.unwrap_or(0),
                        output,
                        depth: self.key.len(),
                    });
                    let Some(last) = last else {
                        break;
                    };
                    let t = node.transition(self.data, last);
                    self.key.push(t.input);
                    addr = t.addr;
                    output += t.output;
                }
            }
            let frame = self.stack.last_mut()?;
            self.key.truncate(frame.depth);
            if frame.next > 0 {
                frame.next -= 1;
                let t = frame.node.transition(self.data, frame.next);
                self.key.push(t.input);
                self.reached = Some((t.addr, frame.output + t.output));
                continue;
            }
            let frame = self.stack.pop().expect("the frame just seen");
            if !frame.node.is_final {
                continue;
            }
            if !after_start(&self.key, as_slice(&self.start)) {
                // Keys only shrink from here.
                self.stack.clear();
                return None;
            }
            return Some((&self.key, frame.output + frame.node.final_output));
        }
    }
}

// By hand, not derived: a derive would ask `V: Clone`, and these hold no
// value, only a walk's place and a borrow of the layer. A clone goes on
// from the same place, each walk apart.
impl<V: FrozenValue> Clone for Iter<'_, V> {
    fn clone(&self) -> Self {
        Iter {
            front: self.front.clone(),
            back: self.back.clone(),
            start: self.start.clone(),
            ..*self
        }
    }
}

impl<V: FrozenValue> Clone for Keys<'_, V> {
    fn clone(&self) -> Self {
        Keys {
            inner: self.inner.clone(),
        }
    }
}

impl<V: FrozenValue> Clone for Values<'_, V> {
    fn clone(&self) -> Self {
        Values {
            inner: self.inner.clone(),
        }
    }
}

impl<V: FrozenValue> Clone for PrefixesOf<'_, '_, V> {
    fn clone(&self) -> Self {
        PrefixesOf { ..*self }
    }
}
