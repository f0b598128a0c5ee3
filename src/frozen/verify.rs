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
//!   names a value in the column, and the fst crate's reverse lookup (by
//!   ordinal) finds its key.
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
                let ordinal = output.checked_add(node.final_output).ok_or_else(overflow)?;
                if ordinal != keys {
                    return Err(format!(
                        "key {keys} in order has ordinal {ordinal} (at node {addr})"
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
