//! Lookups over the fst's bytes, many at once.
//!
//! A lookup follows one node per key byte, each node's address read from
//! the one before: a chain of dependent loads. [`get_one`] walks it one
//! node after another (as the fst crate's `get` does); [`get_each`] runs
//! many lookups side by side ([`interleave`]): whenever a lookup's next node
//! lies in another cache line, it prefetches it and waits its next turn.
//! Nodes of one chain are usually written side by side, so a lookup takes
//! several steps per turn.
//!
//! Where a key runs on alone below the last branch, the fst is a chain of
//! one-byte nodes, and a step compares up to eight of them with the key at
//! once ([`chain_run`]). Over the 100 k-path sample, from where the jump
//! table leaves a walk (byte 16 on average), that takes a lookup's 47.5
//! steps down to 20.2; the walk alone (no value read), alternating rounds
//! of 100 k (sample) or 1 M (full dataset) random lookups in one process,
//! 2026-11-27: 1.72–1.83 → 2.00–2.15 M lookups/s over the sample, whose
//! fst fits the caches, and 709–752 → 738–797 k/s over the full Debian
//! paths (every one of six rounds faster, median +3.6%), where misses
//! dominate.

use super::fst_node::{CommonCodes, NodeView, common_codes, eight_bytes_to, single_transition};
use crate::art::raw::prefetch;
use crate::lanes::interleave;

/// Where a walk stands: at the node at this address, with this many key
/// bytes matched and this output gathered.
pub(super) type State = (u64, usize, u64);

/// Where a lookup stands after a step.
enum Step {
    /// At the node at this address, with this many key bytes matched and
    /// this output gathered.
    Down(u64, usize, u64),
    /// Over: the key's output (its ordinal), or absent.
    Done(Option<u64>),
}

/// A step of the lookup of `key` in the fst `data`: at the node at `addr`,
/// `depth` bytes matched, `output` gathered so far. Down a chain of
/// one-byte nodes it takes up to eight key bytes at once ([`chain_run`]),
/// otherwise one.
#[inline]
fn step(
    data: &[u8],
    codes: &CommonCodes,
    key: &[u8],
    addr: u64,
    depth: usize,
    output: u64,
) -> Step {
    let run = chain_run(data, codes, key, addr, depth);
    if run > 0 {
        return Step::Down(addr - run as u64, depth + run, output);
    }
    step_one(data, codes, key, addr, depth, output)
}

/// One step of the lookup of `key` (one key byte, one node).
#[inline]
fn step_one(
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
            Step::Down(t.addr, depth + 1, output + t.output)
        } else {
            Step::Done(None)
        };
    }
    let node = NodeView::branching(data, addr);
    match node.find(data, byte) {
        Some(i) => {
            let t = node.transition(data, i);
            Step::Down(t.addr, depth + 1, output + t.output)
        }
        None => Step::Done(None),
    }
}

/// One step of the walk along `key` that finds the keys which are prefixes
/// of it, at the node `state` names: the key ending here, as its length and
/// output (ordinal), if this node is final, and where the walk goes on.
/// A walk for all of them starts at the root, not where the jump table
/// says: a table slot skips the nodes above it, whose keys may be prefixes
/// too. (A search for the longest starts at the slot, and walks from the
/// root only if nothing below it matched.)
#[inline]
pub(super) fn prefix_step(
    data: &[u8],
    key: &[u8],
    (addr, depth, output): State,
) -> (Option<(usize, u64)>, Option<State>) {
    let codes = common_codes();
    if single_transition(data, addr, codes).is_some() {
        // Not final, and neither is any node a chain run passes (they are
        // all one-transition nodes): the run may take several at once.
        let next = match step(data, codes, key, addr, depth, output) {
            Step::Down(next, matched, gathered) => Some((next, matched, gathered)),
            Step::Done(_) => None,
        };
        return (None, next);
    }
    let node = NodeView::branching(data, addr);
    let found = node.is_final.then_some((depth, output + node.final_output));
    let next = key.get(depth).and_then(|&byte| {
        let t = node.transition(data, node.find(data, byte)?);
        Some((t.addr, depth + 1, output + t.output))
    });
    (found, next)
}

/// How many of the key's next bytes (up to eight, from `depth`) the chain
/// of one-byte nodes starting at `addr` matches. Such a node is a single
/// state byte, `11` and the input's common code: one transition, no
/// output, to the node written just before it (at the address below).
/// Where keys run on alone (a directory's last file names, a path's
/// extension), the fst is such chains, and comparing the bytes below
/// `addr` with the state bytes the key's own bytes would make takes a run
/// of them in one comparison. A byte without a code stops the run (its
/// node takes two bytes), and so does the key's end (the comparison's
/// unfilled bytes are 0, the state byte of a node of more than 63
/// transitions).
#[inline(always)]
fn chain_run(data: &[u8], codes: &CommonCodes, key: &[u8], addr: u64, depth: usize) -> usize {
    // Most steps that are not in a chain end here, for one load.
    if data
        .get(addr as usize)
        .is_none_or(|&state| state >> 6 != 0b11 || state & 0b11_1111 == 0)
    {
        return 0;
    }
    let (Some(nodes), Some(rest)) = (eight_bytes_to(data, addr), key.get(depth..)) else {
        return 0;
    };
    // The state byte of the node at `addr - i` is the `(7 - i)`th of
    // `nodes`, little-endian, and should be the one for `rest[i]`.
    let mut want = 0u64;
    let mut coded = 0;
    for (i, &byte) in rest.iter().take(8).enumerate() {
        let code = codes.code[usize::from(byte)];
        if code == 0 {
            break;
        }
        want |= u64::from(0b1100_0000 | code) << (8 * (7 - i));
        coded = i + 1;
    }
    let same = ((nodes ^ want).leading_zeros() / 8) as usize;
    same.min(coded)
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
            Step::Down(next, matched, gathered) => {
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
                (addr, depth, output) = (next, matched, gathered)
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
                Step::Down(next, matched, gathered) => {
                    let same_line = next / 64 == *addr / 64;
                    (*addr, *depth, *output) = (next, matched, gathered);
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
        match step_one(data, codes, key, addr, depth, output) {
            Step::Down(next, matched, gathered) => {
                (addr, depth, output) = (next, matched, gathered)
            }
            Step::Done(_) => return None,
        }
    }
    Some((addr, depth, output))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FrozenLayer;
    use proptest::prelude::*;

    /// The layer of `keys` (sorted and deduplicated here), values their
    /// ordinals.
    fn layer_of(mut keys: Vec<Vec<u8>>) -> FrozenLayer<u64> {
        keys.sort();
        keys.dedup();
        FrozenLayer::from_sorted_iter(keys.iter().enumerate().map(|(i, k)| (k, i as u64))).unwrap()
    }

    /// Walks `key` from the root by `step` and checks each stop against
    /// the walk by `step_one`, which matches one byte at a time: the same
    /// node and output at the same depth, and the same answer. Returns
    /// the answer and the most bytes one `step` took.
    fn walk_both(layer: &FrozenLayer<u64>, key: &[u8]) -> (Option<u64>, usize) {
        let (data, root, codes) = (
            layer.fst.as_bytes(),
            layer.fst.root().addr(),
            common_codes(),
        );
        // The walk by single bytes: (node, output) at each depth.
        let mut single = Vec::new();
        let (mut addr, mut depth, mut output) = (root as u64, 0, 0);
        let answer = loop {
            single.push((addr, output));
            match step_one(data, codes, key, addr, depth, output) {
                Step::Down(next, matched, gathered) => {
                    assert_eq!(matched, depth + 1);
                    (addr, depth, output) = (next, matched, gathered);
                }
                Step::Done(answer) => break answer,
            }
        };
        let (mut addr, mut depth, mut output, mut longest) = (root as u64, 0, 0, 0);
        loop {
            match step(data, codes, key, addr, depth, output) {
                Step::Down(next, matched, gathered) => {
                    assert!(matched > depth, "a step matches at least one byte");
                    longest = longest.max(matched - depth);
                    assert_eq!(single.get(matched), Some(&(next, gathered)), "key {key:?}");
                    (addr, depth, output) = (next, matched, gathered);
                }
                Step::Done(found) => {
                    assert_eq!(depth, single.len() - 1, "key {key:?}");
                    assert_eq!(found, answer, "key {key:?}");
                    return (found, longest);
                }
            }
        }
    }

    /// The keys looked up for `keys`: each, and variants of each that are
    /// absent or present elsewhere (every prefix, longer, a byte changed).
    fn probes(keys: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut probes = Vec::new();
        for key in keys {
            probes.extend((0..=key.len()).map(|len| key[..len].to_vec()));
            probes.push([&key[..], b"x"].concat());
            for at in [key.len() / 3, key.len().saturating_sub(1)] {
                if let Some(&byte) = key.get(at) {
                    let mut changed = key.clone();
                    changed[at] = byte.wrapping_add(1);
                    probes.push(changed);
                }
            }
        }
        probes
    }

    #[test]
    fn chains_are_taken_eight_bytes_at_a_time_and_stop_at_uncommon_bytes() {
        // In order, so that each key's value is its index.
        let keys: Vec<Vec<u8>> = [
            &b"usr/lib/\xFFodd/\x00name.so"[..],
            b"usr/share/doc/libexample/changelog.Debian.gz",
            b"usr/share/doc/libexample/copyright",
        ]
        .map(<[u8]>::to_vec)
        .into();
        let layer = layer_of(keys.clone());
        for (i, key) in keys.iter().enumerate() {
            let (found, longest) = walk_both(&layer, key);
            assert_eq!(found, Some(i as u64));
            if i > 0 {
                assert_eq!(
                    longest, 8,
                    "the unique tails run on for more than eight bytes"
                );
            }
        }
        // Walked one byte at a time, the bytes with no common code take a
        // node of two bytes each: a run never starts at one.
        let (data, codes) = (layer.fst.as_bytes(), common_codes());
        let odd = &keys[0];
        let at = odd.iter().position(|&b| b == 0xFF).unwrap();
        assert_eq!(codes.code[0xFF], 0);
        let (mut addr, mut depth, mut output) = (layer.fst.root().addr() as u64, 0, 0);
        while depth < at {
            let Step::Down(next, matched, gathered) =
                step_one(data, codes, odd, addr, depth, output)
            else {
                panic!("the key is present");
            };
            (addr, depth, output) = (next, matched, gathered);
        }
        assert_eq!(chain_run(data, codes, odd, addr, depth), 0);
    }

    #[test]
    fn a_run_ends_with_the_key_even_where_the_next_state_byte_is_zero() {
        // A node of more than 63 transitions, not final, has the state
        // byte 0 (its count follows), which is also what an unfilled byte
        // of the run's comparison holds: a run must not match past the key.
        let mut keys: Vec<Vec<u8>> = (0..100u8)
            .map(|b| [&b"qabc"[..], &[b], b"z"].concat())
            .collect();
        keys.push(b"r".to_vec());
        let layer = layer_of(keys);
        let (data, codes) = (layer.fst.as_bytes(), common_codes());
        let Step::Down(chain, 1, _) =
            step_one(data, codes, b"qabc", layer.fst.root().addr() as u64, 0, 0)
        else {
            panic!("the root has a transition on q");
        };
        assert_eq!(
            data[chain as usize - 3],
            0,
            "the wide node follows the chain"
        );
        assert_eq!(chain_run(data, codes, b"qabc", chain, 1), 3);
        assert_eq!(walk_both(&layer, b"qabc").0, None);
        assert_eq!(walk_both(&layer, b"qabc\x07z").0, Some(7));
    }

    fn key() -> impl Strategy<Value = Vec<u8>> {
        let dirs = prop::sample::select(vec![&b""[..], b"usr/share/doc/", b"usr/lib/\x00\xFF/"]);
        let tail = prop::collection::vec(
            prop_oneof![
                6 => prop::sample::select(b"abcde/.".to_vec()),
                1 => prop::sample::select(vec![0x00u8, 0x80, 0xFF]),
            ],
            0..30,
        );
        (dirs, tail).prop_map(|(dir, tail)| [dir, &tail[..]].concat())
    }

    proptest! {
        /// Over keys of common and uncommon bytes, long shared prefixes and
        /// long unique tails, a walk that takes chains in runs stops at
        /// the nodes the byte-by-byte walk passes through, with the same
        /// outputs, and finds the same answers.
        #[test]
        fn runs_agree_with_single_steps(keys in prop::collection::vec(key(), 1..120)) {
            let layer = layer_of(keys.clone());
            for probe in probes(&keys) {
                let (found, _) = walk_both(&layer, &probe);
                prop_assert_eq!(found.is_some(), keys.contains(&probe));
            }
        }
    }
}
