//! Streams over a frozen layer's entries, in key order.

use std::fmt;
use std::ops::Bound;

use fst::Streamer;
use fst::automaton::{AlwaysMatch, Automaton};

use super::FrozenLayer;
use super::column::FrozenValue;
use super::fst_node::{CommonCodes, NodeView, common_codes, single_transition};
use crate::keys::{as_slice, before_end, owned_bound};

/// Entries of a [`FrozenLayer`] in increasing key order: all of them
/// ([`iter`](FrozenLayer::iter)), a [`range`](FrozenLayer::range), a
/// [`prefix`](FrozenLayer::prefix), or those an automaton accepts
/// ([`search`](FrozenLayer::search)).
///
/// This is a stream over the fst: it walks the transducer once, keeping the
/// current key in a buffer, and decodes each value from the column by the
/// key's ordinal. [`iter`](FrozenLayer::iter), [`range`](FrozenLayer::range)
/// and [`prefix`](FrozenLayer::prefix) walk the fst's bytes themselves (a
/// depth-first walk that decodes each node's header once and keeps no frame
/// for single-transition nodes, 2–3× the fst crate's general stream);
/// [`search`](FrozenLayer::search) runs the fst crate's automaton stream.
/// Two ways to consume it:
///
/// * as an [`Iterator`] of `(Vec<u8>, V)`: convenient, but the key is copied
///   into a fresh `Vec` for every entry (one allocation each);
/// * with [`next_entry`](Self::next_entry), which lends the key from the
///   stream's buffer and allocates nothing.
///
/// Streams run forward only: the fst crate has no reverse stream.
pub struct Iter<'a, V: FrozenValue, A: Automaton = AlwaysMatch> {
    source: Source<'a, A>,
    layer: &'a FrozenLayer<V>,
}

enum Source<'a, A: Automaton> {
    Walk(Walker<'a>),
    Stream(fst::raw::Stream<'a, A>),
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
            source: Source::Walk(Walker::new(data, root, start, end)),
            layer,
        }
    }
}

impl<'a, V: FrozenValue, A: Automaton> Iter<'a, V, A> {
    pub(crate) fn new(stream: fst::raw::Stream<'a, A>, layer: &'a FrozenLayer<V>) -> Self {
        Iter {
            source: Source::Stream(stream),
            layer,
        }
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
        let (key, ordinal) = match &mut self.source {
            Source::Walk(walker) => walker.next()?,
            Source::Stream(stream) => stream.next().map(|(key, out)| (key, out.value()))?,
        };
        Some((key, self.layer.value_at(ordinal)))
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

/// A depth-first walk over an fst's keys in a range, in order, with their
/// outputs.
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
            let mut next = 0;
            while next < node.len && node.transition(self.data, next).input < byte {
                next += 1;
            }
            let on_path = (next < node.len)
                .then(|| node.transition(self.data, next))
                .filter(|t| t.input == byte);
            let later = next + usize::from(on_path.is_some());
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

    /// The next key and its output.
    #[inline]
    pub(crate) fn next(&mut self) -> Option<(&[u8], u64)> {
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
            while let Some(t) = single_transition(self.data, addr, self.codes) {
                self.key.push(t.input);
                addr = t.addr;
                output += t.output;
            }
            let node = NodeView::branching(self.data, addr);
            if node.len > 0 {
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
