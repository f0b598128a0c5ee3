//! Lookups over the fst's bytes, many at once.
//!
//! A lookup follows one node per key byte, each node's address read from
//! the one before: a chain of dependent loads, which the fst crate's `get`
//! (used for single lookups) walks one after another. [`get_each`] keeps
//! [`LANES`] lookups under way and, whenever a lookup's next node lies in
//! another cache line, prefetches it and moves on to the next lookup, so
//! that the misses of different lookups overlap. Nodes of one chain are
//! usually written side by side, so a lookup takes several steps per turn.

use super::fst_node::{CommonCodes, NodeView, common_codes, single_transition};
use crate::art::raw::prefetch;

/// Lookups under way at once (as in FastArt's `get_many`).
const LANES: usize = 16;

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

/// Looks up every key of `keys` in the fst `data` whose root is at `root`,
/// handing `found` each key's index and output (ordinal), in no particular
/// order.
pub(super) fn get_each<K: AsRef<[u8]>>(
    data: &[u8],
    root: u64,
    keys: &[K],
    mut found: impl FnMut(usize, Option<u64>),
) {
    #[derive(Clone, Copy, Default)]
    struct Lane {
        index: usize,
        addr: u64,
        depth: usize,
        output: u64,
    }
    let codes = common_codes();
    let start = |index| Lane {
        index,
        addr: root,
        depth: 0,
        output: 0,
    };
    let mut lanes = [Lane::default(); LANES];
    let mut active = keys.len().min(LANES);
    for (index, lane) in lanes[..active].iter_mut().enumerate() {
        *lane = start(index);
    }
    let mut next = active;
    while active > 0 {
        let mut i = 0;
        while i < active {
            let lane = &mut lanes[i];
            let key = keys[lane.index].as_ref();
            // Steps within one cache line cost no miss: take them now.
            let outcome = loop {
                match step(data, codes, key, lane.addr, lane.depth, lane.output) {
                    Step::Down(addr, output) => {
                        let same_line = addr / 64 == lane.addr / 64;
                        (lane.addr, lane.depth, lane.output) = (addr, lane.depth + 1, output);
                        if !same_line {
                            prefetch(data.as_ptr().wrapping_add(addr as usize));
                            prefetch(data.as_ptr().wrapping_add(addr as usize).wrapping_sub(64));
                            break None;
                        }
                    }
                    Step::Done(output) => break Some(output),
                }
            };
            let Some(output) = outcome else {
                i += 1;
                continue;
            };
            found(lane.index, output);
            if next < keys.len() {
                *lane = start(next);
                next += 1;
                i += 1;
            } else {
                // The last lane takes this one's place.
                active -= 1;
                lanes[i] = lanes[active];
            }
        }
    }
}
