//! Lookups over the fst's bytes, many at once.
//!
//! A lookup follows one node per key byte, each node's address read from
//! the one before: a chain of dependent loads. [`get_one`] walks it one
//! node after another (as the fst crate's `get` does); [`get_each`] runs
//! many lookups side by side ([`interleave`]): whenever a lookup's next node
//! lies in another cache line, it prefetches it and waits its next turn.
//! Nodes of one chain are usually written side by side, so a lookup takes
//! several steps per turn.

use super::fst_node::{CommonCodes, NodeView, common_codes, single_transition};
use crate::art::raw::prefetch;
use crate::lanes::interleave;

/// Where a walk stands: at the node at this address, with this many key
/// bytes matched and this output gathered.
pub(super) type State = (u64, usize, u64);

/// Where a lookup stands after one step.
enum Step {
    /// At the node at this address, with this output gathered.
    Down(u64, u64),
    /// Over: the key's output (its ordinal), or absent.
    Done(Option<u64>),
}

/// One step of the lookup of `key` in the fst `data`: at the node at `addr`,
/// `depth` bytes matched, `output` gathered so far.
#[inline]
fn step(
    data: &[u8],
    codes: &CommonCodes,
    key: &[u8],
    addr: u64,
    depth: usize,
    output: u64,
) -> Step {
    let Some(&byte) = key.get(depth) else {
        let node = NodeView::new(data, addr, codes);
        return Step::Done(node.is_final.then(|| output + node.final_output));
    };
    if let Some(t) = single_transition(data, addr, codes) {
        return if t.input == byte {
            Step::Down(t.addr, output + t.output)
        } else {
            Step::Done(None)
        };
    }
    let node = NodeView::branching(data, addr);
    match node.find(data, byte) {
        Some(i) => {
            let t = node.transition(data, i);
            Step::Down(t.addr, output + t.output)
        }
        None => Step::Done(None),
    }
}

/// Looks `key` up in the fst `data` whose root is at `root`: its output
/// (ordinal), or `None`.
///
/// The walk of the fst crate's `get`, with the steps of [`get_each`]
/// (which read a node with one transition, most nodes of a path's chain,
/// without decoding it whole: no faster on its own) and one addition:
/// entering a node in another cache line, it prefetches the line before
/// too, since a node's fields precede the byte its address points at, so
/// a node that straddles two lines waits for one miss, not two in turn.
/// On the full Debian paths, random order, 18 rounds of each program
/// alternating: median 461 k → 483 k lookups/s, every round of the new
/// walk above the old's median but one. Prefetching the second line below
/// as well, where a chain continues: medians 622–637 k → 685–694 k/s
/// (+9–10%, three runs of 6–8 alternating rounds of 1 M lookups; a third
/// or fourth line below, or the line above, added nothing). Batched
/// lookups ([`get_each`]) did not gain from it (946 k against 944 k/s):
/// their other lanes already cover the wait.
pub(super) fn get_one(data: &[u8], start: State, key: &[u8]) -> Option<u64> {
    get_one_beside(data, start, key, |_| {}, || false, &mut false)
}

/// [`get_one`], calling `beside` each time the walk enters another cache
/// line while `*going`, which turns `false` when `beside` returns `false`.
/// While it is going, the line entered is prefetched too, so that its miss
/// runs during `beside`'s work.
///
/// Each time the walk enters another line it also calls `near` with the
/// output gathered so far: the key's ordinal, if it is present, unless a
/// later transition adds to it. Ordinals are added at branches, so once
/// the walk is in the chain of a key's own suffix (its last few lines) the
/// output is final, and a `near` that prefetches the value column at it
/// (as `FrozenLayer::get` does) overlaps the column's miss with the rest
/// of the walk instead of waiting for it after. On the full Debian paths,
/// random order, `u64` values, two runs of 7 alternating rounds of 1 M
/// lookups: medians 847 → 934 k and 893 → 1,035 k lookups/s (+10%, +16%),
/// every round above the other setting's best; calling it also where the
/// output grows within a line did no better (1,013 k).
#[inline]
pub(super) fn get_one_beside(
    data: &[u8],
    start: State,
    key: &[u8],
    mut near: impl FnMut(u64),
    mut beside: impl FnMut() -> bool,
    going: &mut bool,
) -> Option<u64> {
    let codes = common_codes();
    let (mut addr, mut depth, mut output) = start;
    loop {
        match step(data, codes, key, addr, depth, output) {
            Step::Down(next, gathered) => {
                if next / 64 != addr / 64 {
                    // A hint only: `prefetch` never faults, even outside
                    // `data`.
                    let at = data.as_ptr().wrapping_add(next as usize);
                    // Chains run down the addresses (a one-transition node
                    // usually points at the node just before it), so the
                    // line after the one below is next but one.
                    prefetch(at.wrapping_sub(64));
                    prefetch(at.wrapping_sub(128));
                    // Past the last branch the output seldom grows: let
                    // the caller fetch what it will read at that ordinal.
                    near(gathered);
                    if *going {
                        prefetch(at);
                        *going = beside();
                    }
                }
                (addr, depth, output) = (next, depth + 1, gathered)
            }
            Step::Done(ordinal) => return ordinal,
        }
    }
}

/// Looks up every key of `keys` in the fst `data`, each from where
/// `start` says its walk starts, handing `found` each key's index and
/// output (ordinal), in no particular order.
pub(super) fn get_each<K: AsRef<[u8]>>(
    data: &[u8],
    start: impl Fn(&[u8]) -> State,
    keys: &[K],
    found: impl FnMut(usize, Option<u64>),
) {
    let codes = common_codes();
    // A lane's first turn finds where its walk starts.
    const UNSTARTED: State = (0, usize::MAX, 0);
    let advance = |i: usize, state: &mut State| {
        let key = keys[i].as_ref();
        if *state == UNSTARTED {
            *state = start(key);
        }
        let (addr, depth, output) = state;
        // Steps within one cache line cost no miss: take them now.
        loop {
            match step(data, codes, key, *addr, *depth, *output) {
                Step::Down(next, gathered) => {
                    let same_line = next / 64 == *addr / 64;
                    (*addr, *depth, *output) = (next, *depth + 1, gathered);
                    if !same_line {
                        // A node's fields precede its last byte.
                        let at = data.as_ptr().wrapping_add(next as usize);
                        prefetch(at);
                        prefetch(at.wrapping_sub(64));
                        return None;
                    }
                }
                Step::Done(ordinal) => return Some(ordinal),
            }
        }
    };
    interleave(keys.len(), UNSTARTED, advance, found);
}

/// The walk of `key` from `root` until `to` bytes are matched: where it
/// stands then, or `None` if it ends before.
#[cfg(test)]
pub(super) fn descend(data: &[u8], root: u64, key: &[u8], to: usize) -> Option<State> {
    let codes = common_codes();
    let (mut addr, mut depth, mut output) = (root, 0, 0);
    while depth < to {
        match step(data, codes, key, addr, depth, output) {
            Step::Down(next, gathered) => (addr, depth, output) = (next, depth + 1, gathered),
            Step::Done(_) => return None,
        }
    }
    Some((addr, depth, output))
}
