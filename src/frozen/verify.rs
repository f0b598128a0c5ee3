//! The structural check of a layer's fst: a walk down every key's path.
//!
//! The checksum catches damage, not a file made on purpose (or by a buggy
//! writer) with a valid checksum over inconsistent contents. Our readers and
//! the fst crate's trust the fst's nodes; on such a file they may panic (a
//! checked index), give wrong answers, or walk without end (64 nodes, each
//! with two transitions to the one below, spell 2^64 keys). [`check_fst`]
//! proves what they rely on instead:
//!
//! - every node on the way decodes within bounds ([`NodeView::checked`]),
//!   so no read panics;
//! - every transition leads to a node below the one it leaves, and every
//!   node is final or has a transition, so every walk ends, and ends at a
//!   key;
//! - the outputs gathered on the way to the keys, in order, are 0, 1, 2, …
//!   up to the layer's key count, so every ordinal a walk can produce
//!   names a value in the column;
//! - they are placed as the builders place them: each transition's brings
//!   the sum to the ordinal of the first key below it, and final outputs
//!   are 0. The fst crate's reverse lookup (`nth`) needs that: it takes
//!   the last transition whose sum is at most the ordinal sought, and stops
//!   at a final node only when nothing is left to find. Sums that come out
//!   right elsewhere on the path passed an earlier draft of this check and
//!   sent `nth` to the wrong key (found by a review).
//!
//! The walk visits each node once per path from the root to it, as an
//! ordered iteration does, and stops at the first key past the count: it
//! costs one iteration of the layer, whatever the bytes.

use super::fst_node::{
    FST_FOOTER_LEN, FST_HEADER_LEN, NodeView, common_codes, eight_bytes_to, one_byte_nodes,
};

/// The fst format version our node reader reads (a 256-byte index past 32
/// transitions, a checksum in the footer).
const FST_VERSION: u64 = 3;

/// A node with more than one transition that the walk has gone down from
/// and will come back to.
struct Fork {
    addr: u64,
    /// The next transition to take.
    next: usize,
    /// The output gathered on the way to the node.
    output: u64,
}

/// Whether a transition of the node at `addr`, which brings the output
/// gathered to `output`, leads to keys numbered from `output` on: the next
/// key in order is key `keys`.
fn placed(addr: u64, output: u64, keys: u64) -> Result<(), String> {
    match output == keys {
        true => Ok(()),
        false => Err(format!(
            "a transition of node {addr} brings the output to {output}, but the first key \
             below it is key {keys}"
        )),
    }
}

/// Checks the fst `data` as the module docs say, and returns its root's
/// address; `Err` describes the first fault found.
pub(super) fn check_fst(data: &[u8], key_count: u64) -> Result<u64, String> {
    if data.len() < FST_HEADER_LEN + FST_FOOTER_LEN {
        return Err(format!("{} bytes, too short for an fst", data.len()));
    }
    let word = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes"));
    // Read here: the fst crate's `root()` decodes the node, unchecked.
    let (version, root) = (word(0), word(data.len() - 12));
    if version != FST_VERSION {
        return Err(format!("fst format version {version}, not {FST_VERSION}"));
    }
    let codes = common_codes();
    let nodes_end = (data.len() - FST_FOOTER_LEN) as u64;
    let overflow = || "outputs that overflow".to_owned();
    let mut keys = 0u64;
    let mut forks: Vec<Fork> = Vec::new();
    let (mut addr, mut output) = (root, 0u64);
    loop {
        // Down the first transitions to a node without any.
        loop {
            // Chains of one-byte nodes, eight at a time: all such a node
            // needs is to lie above the header (its transition leads to
            // the byte below); `checked` reports one that does not.
            while addr < nodes_end {
                let Some(x) = eight_bytes_to(data, addr) else {
                    break;
                };
                let above = addr.saturating_sub(FST_HEADER_LEN as u64) as usize;
                let run = one_byte_nodes(x).min(above);
                addr -= run as u64;
                if run < 8 {
                    break;
                }
            }
            let node = NodeView::checked(data, addr, codes)?;
            if node.is_final {
                // Its key's ordinal is the output gathered, `keys` (see
                // `placed`), with nothing added here.
                if node.final_output != 0 {
                    return Err(format!(
                        "node {addr} is final with output {}, where the builders put 0",
                        node.final_output
                    ));
                }
                keys += 1;
                if keys > key_count {
                    return Err(format!("more keys than the {key_count} the layer holds"));
                }
            }
            if node.len == 0 {
                // Only the empty fst's root is not final and has no
                // transition: elsewhere, a path to no key.
                if !node.is_final && (addr != root || key_count != 0) {
                    return Err(format!("node {addr} is a dead end: no key below it"));
                }
                break;
            }
            if node.len > 1 {
                forks.push(Fork {
                    addr,
                    next: 1,
                    output,
                });
            }
            let t = node.transition(data, 0);
            output = output.checked_add(t.output).ok_or_else(overflow)?;
            placed(addr, output, keys)?;
            addr = t.addr;
        }
        // Back up to the last fork with a transition not yet taken.
        let Some(fork) = forks.last_mut() else {
            break;
        };
        // Checked when the walk went down from it.
        let node = NodeView::new(data, fork.addr, codes);
        let t = node.transition(data, fork.next);
        output = fork.output.checked_add(t.output).ok_or_else(overflow)?;
        placed(fork.addr, output, keys)?;
        addr = t.addr;
        fork.next += 1;
        if fork.next == node.len {
            forks.pop();
        }
    }
    if keys != key_count {
        return Err(format!("{keys} keys, not the {key_count} the layer holds"));
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An fst of `nodes` (written from address 16 on) with its root at
    /// `root`, saying it holds `keys` keys.
    fn fst_of(nodes: &[u8], root: u64, keys: u64) -> Vec<u8> {
        let mut data = FST_VERSION.to_le_bytes().to_vec();
        data.extend(0u64.to_le_bytes());
        data.extend(nodes);
        data.extend(keys.to_le_bytes());
        data.extend(root.to_le_bytes());
        data.extend([0; 4]);
        data
    }

    /// A node of two transitions, on `a` and `b`, both to the node just
    /// below it, no outputs: six bytes.
    const TWO_WAYS_DOWN: [u8; 6] = [1, 1, b'b', b'a', 0x10, 0x02];
    /// A final node without transitions, in the general form: three bytes.
    const FINAL: [u8; 3] = [0x00, 0x00, 0x40];
    /// A node neither final nor with a transition: three bytes.
    const DEAD_END: [u8; 3] = [0x00, 0x00, 0x00];

    /// `bottom` at address 16, with `levels` nodes of two ways down above.
    fn ladder(bottom: [u8; 3], levels: usize) -> (Vec<u8>, u64) {
        let mut nodes = bottom.to_vec();
        for _ in 0..levels {
            nodes.extend(TWO_WAYS_DOWN);
        }
        let root = (FST_HEADER_LEN + nodes.len() - 1) as u64;
        (nodes, root)
    }

    /// A ladder of `levels` over a final node whose keys are numbered
    /// right: at level `k` (from 1 at the bottom), the way on `b` skips the
    /// 2^(k-1) keys on `a`. Each node has 8-byte outputs (`b`'s first).
    fn numbered_ladder(levels: u32) -> (Vec<u8>, u64) {
        let mut nodes = FINAL.to_vec();
        for k in 1..=levels {
            nodes.extend((1u64 << (k - 1)).to_le_bytes());
            nodes.extend(0u64.to_le_bytes());
            nodes.extend([1, 1, b'b', b'a', 0x18, 0x02]);
        }
        let root = (FST_HEADER_LEN + nodes.len() - 1) as u64;
        (nodes, root)
    }

    #[test]
    fn keys_numbered_wrong_are_refused() {
        // Two levels: the keys "aa", "ab", "ba", "bb" all lead to the
        // final node, with no outputs, so they all have ordinal 0.
        let (nodes, root) = ladder(FINAL, 0);
        assert_eq!(check_fst(&fst_of(&nodes, root, 1), 1), Ok(root));
        let (nodes, root) = ladder(FINAL, 2);
        let refused = check_fst(&fst_of(&nodes, root, 4), 4).unwrap_err();
        assert!(refused.contains("first key below it is key 1"), "{refused}");
    }

    /// Numbered right, but not as the builders number, which the fst
    /// crate's reverse lookup relies on (`nth` went to the wrong key).
    #[test]
    fn outputs_placed_otherwise_are_refused() {
        // A final node with a 1-byte output of 1, and over it a node whose
        // `a` leads to the empty final node and `b` to it, both without
        // output: `b`'s ordinal 1 is its final output.
        let nodes = [0x01, 0x01, 0x00, 0x40, 0x01, 0x00, b'b', b'a', 0x10, 0x02];
        let refused = check_fst(&fst_of(&nodes, 25, 2), 2).unwrap_err();
        assert!(
            refused.contains("node 25 brings the output to 0"),
            "{refused}"
        );
        // The 1 on the transition below `b` instead.
        let nodes = [
            0x01, 0x00, 0x11, b'x', 0x80, 0x01, 0x00, b'b', b'a', 0x10, 0x02,
        ];
        let refused = check_fst(&fst_of(&nodes, 26, 2), 2).unwrap_err();
        assert!(
            refused.contains("node 26 brings the output to 0"),
            "{refused}"
        );
        // One key, `b`, whose final node adds 1 to its ordinal 0.
        let nodes = [0x01, 0x01, 0x00, 0x40, 0x01, b'b', 0x10, 0x01];
        let refused = check_fst(&fst_of(&nodes, 23, 1), 1).unwrap_err();
        assert!(
            refused.contains("node 19 is final with output 1"),
            "{refused}"
        );
        let nodes = [0x00, 0x00, 0x40, 0x01, b'b', 0x10, 0x01];
        assert_eq!(check_fst(&fst_of(&nodes, 22, 1), 1), Ok(22));
    }

    /// A root in the footer is refused, even where the footer's bytes read
    /// as a chain of one-byte nodes down into the nodes: the chains' fast
    /// path stops where the nodes end, as `NodeView::checked` does.
    #[test]
    fn a_root_in_the_footer_is_refused() {
        let root = (FST_HEADER_LEN + FINAL.len() - 1) as u64;
        let mut data = fst_of(&FINAL, root, 1);
        assert_eq!(check_fst(&data, 1), Ok(root));
        // The footer's key count (unchecked here) as eight one-byte nodes,
        // and the root on the top one: a chain down to the final node.
        let count = FST_HEADER_LEN + FINAL.len();
        data[count..count + 8].fill(0xC1);
        let at = data.len() - 12;
        data[at..at + 8].copy_from_slice(&(count as u64 + 7).to_le_bytes());
        let refused = check_fst(&data, 1).unwrap_err();
        assert!(refused.contains("outside the fst's nodes"), "{refused}");
    }

    /// 64 levels spell 2^64 keys in 400 bytes: the walk stops at the first
    /// key past the count, not at the end of them.
    #[test]
    fn an_exponential_fst_is_refused_at_once() {
        let (nodes, root) = numbered_ladder(3);
        assert_eq!(check_fst(&fst_of(&nodes, root, 8), 8), Ok(root));
        let (nodes, root) = numbered_ladder(64);
        let refused = check_fst(&fst_of(&nodes, root, 1000), 1000).unwrap_err();
        assert!(refused.contains("more keys than the 1000"), "{refused}");
        // Numbered wrong, it is refused for that first.
        let (nodes, root) = ladder(FINAL, 64);
        let refused = check_fst(&fst_of(&nodes, root, 1), 1).unwrap_err();
        assert!(refused.contains("first key below it is key 1"), "{refused}");
    }

    /// A dead end below the root, even in an fst of no keys: without the
    /// check, a ladder over one would be a walk of 2^64 steps that finds
    /// nothing.
    #[test]
    fn a_dead_end_is_refused() {
        let (nodes, root) = ladder(DEAD_END, 1);
        let refused = check_fst(&fst_of(&nodes, root, 0), 0).unwrap_err();
        assert!(refused.contains("dead end"), "{refused}");
        // At the root of an fst of no keys, it is the empty fst.
        let (nodes, root) = ladder(DEAD_END, 0);
        assert_eq!(check_fst(&fst_of(&nodes, root, 0), 0), Ok(root));
        let refused = check_fst(&fst_of(&nodes, root, 1), 1).unwrap_err();
        assert!(refused.contains("dead end"), "{refused}");
    }
}
