//! Streams over a frozen layer's entries, in key order.

use std::fmt;

use fst::Streamer;
use fst::automaton::{AlwaysMatch, Automaton};

use super::FrozenLayer;
use super::column::FrozenValue;

/// Entries of a [`FrozenLayer`] in increasing key order: all of them
/// ([`iter`](FrozenLayer::iter)), a [`range`](FrozenLayer::range), a
/// [`prefix`](FrozenLayer::prefix), or those an automaton accepts
/// ([`search`](FrozenLayer::search)).
///
/// This is a stream over the fst: it walks the transducer once, keeping the
/// current key in a buffer, and decodes each value from the column by the
/// key's ordinal. Two ways to consume it:
///
/// * as an [`Iterator`] of `(Vec<u8>, V)`: convenient, but the key is copied
///   into a fresh `Vec` for every entry (one allocation each);
/// * with [`next_entry`](Self::next_entry), which lends the key from the
///   stream's buffer and allocates nothing.
///
/// Streams run forward only: the fst crate has no reverse stream.
pub struct Iter<'a, V: FrozenValue, A: Automaton = AlwaysMatch> {
    stream: fst::raw::Stream<'a, A>,
    layer: &'a FrozenLayer<V>,
}

impl<'a, V: FrozenValue, A: Automaton> Iter<'a, V, A> {
    pub(crate) fn new(stream: fst::raw::Stream<'a, A>, layer: &'a FrozenLayer<V>) -> Self {
        Iter { stream, layer }
    }

    /// The next entry, with the key borrowed from the stream (valid until the
    /// next call), without allocating.
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
        let (key, ordinal) = self.stream.next()?;
        Some((key, self.layer.value_at(ordinal.value())))
    }
}

impl<V: FrozenValue, A: Automaton> Iterator for Iter<'_, V, A> {
    type Item = (Vec<u8>, V);

    #[inline]
    fn next(&mut self) -> Option<(Vec<u8>, V)> {
        self.next_entry().map(|(key, value)| (key.to_vec(), value))
    }
}

impl<V: FrozenValue, A: Automaton> fmt::Debug for Iter<'_, V, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter")
            .field("layer", self.layer)
            .finish_non_exhaustive()
    }
}
