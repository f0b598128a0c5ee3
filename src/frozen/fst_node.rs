//! Reading the nodes of an fst (the fst crate's format, version 3; see
//! [`fst_builder`](super::fst_builder) for the layout), for the builder's
//! node cache and for [`Walker`](super::iter::Walker)'s fast ordered walk.
//!
//! Every read is a checked slice index: a malformed fst (which the layer's
//! checksum keeps out) can make these panic, never read out of bounds.
//! [`NodeView::checked`] decodes a node only after checking it, for the
//! structural check of a whole fst (`verify`).

use std::sync::OnceLock;

/// The empty final node: no bytes, and no transitions.
pub(super) const EMPTY_ADDRESS: u64 = 0;
/// More transitions than this get a 256-byte index (fst format version ≥ 2).
pub(super) const TRANS_INDEX_THRESHOLD: usize = 32;
/// An fst's bytes before its first node: format version and type.
pub(super) const FST_HEADER_LEN: usize = 16;
/// An fst's bytes after its last node: key count, root address, checksum.
pub(super) const FST_FOOTER_LEN: usize = 20;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Transition {
    pub(super) input: u8,
    pub(super) output: u64,
    pub(super) addr: u64,
}

/// A node's header, decoded once; its transitions are read by index.
#[derive(Clone, Copy, Debug)]
pub(super) struct NodeView {
    pub(super) is_final: bool,
    pub(super) final_output: u64,
    pub(super) len: usize,
    /// A one-transition node's transition, decoded with the header.
    single: Transition,
    /// Where a many-transition node's fields start (see `fst_builder`).
    first_byte: usize,
    inputs_at: usize,
    deltas_at: usize,
    outputs_at: usize,
    tsize: u8,
    osize: u8,
}

/// The transition of the node at `addr` if it is a non-final node with one
/// transition (most nodes are), without decoding a whole [`NodeView`].
#[inline(always)]
pub(super) fn single_transition(data: &[u8], addr: u64, codes: &CommonCodes) -> Option<Transition> {
    if addr == EMPTY_ADDRESS {
        return None;
    }
    let addr = addr as usize;
    let state = data[addr];
    let input = |code: u8| match codes.input_of(code) {
        Some(input) => (input, 0),
        None => (data[addr - 1], 1),
    };
    match state >> 6 {
        0b11 => {
            let (input, len) = input(state & 0b11_1111);
            Some(Transition {
                input,
                output: 0,
                addr: (addr - len - 1) as u64,
            })
        }
        0b10 => {
            let (input, len) = input(state & 0b11_1111);
            let sizes = data[addr - len - 1];
            let (tsize, osize) = (usize::from(sizes >> 4), usize::from(sizes & 0xF));
            let delta_at = addr - len - 1 - tsize;
            let output_at = delta_at - osize;
            Some(Transition {
                input,
                output: unpack_uint(data, output_at, osize),
                addr: undelta(output_at, unpack_uint(data, delta_at, tsize)),
            })
        }
        _ => None,
    }
}

/// The eight bytes of `data` that end at `addr`, little-endian: the byte
/// at `addr` (a node's state byte) is the most significant, the byte below
/// it (the next node's, in a chain of one-byte nodes) the next. `None`
/// where fewer than eight bytes end there.
#[inline(always)]
pub(super) fn eight_bytes_to(data: &[u8], addr: u64) -> Option<u64> {
    let addr = usize::try_from(addr).ok()?;
    let bytes = data.get(addr.checked_sub(7)?..=addr)?;
    Some(u64::from_le_bytes(bytes.try_into().expect("eight bytes")))
}

/// How many one-byte nodes (a state byte of `11` and a common code: one
/// transition, no output, to the node just below) the eight bytes `x`
/// that end at a node's address (as [`eight_bytes_to`] reads them) start
/// with, from the top down.
#[inline(always)]
pub(super) fn one_byte_nodes(x: u64) -> usize {
    const LANES: u64 = 0x0101_0101_0101_0101;
    // Bit 0 of each byte lane: the top two bits are 11 and the code (the
    // low six) is not 0; code + 63 reaches bit 6 only then, and stays
    // inside its lane.
    let code_set = ((x & (0x3F * LANES)) + 0x3F * LANES) >> 6;
    let one_byte = (x >> 7) & (x >> 6) & code_set & LANES;
    // The byte at the address is lane 7: count from the top down.
    ((!one_byte & LANES).leading_zeros() / 8) as usize
}

/// Follows the chain of one-transition nodes from `addr` (none if `addr`
/// branches or is final), appending each input to `key` and adding each
/// output to `output`; returns the address of the node the chain ends at.
///
/// Most of a chain is one-byte nodes: a state byte of `11` and the input's
/// common code, one transition, no output, to the node just below. Those
/// are read eight at a time (one word, tested lane by lane with
/// arithmetic), and decoded through the code table: the ordered walks'
/// keys grow a run at a time instead of a byte.
#[inline(always)]
pub(super) fn follow_chain(
    data: &[u8],
    mut addr: u64,
    codes: &CommonCodes,
    key: &mut Vec<u8>,
    output: &mut u64,
) -> u64 {
    while let Some(x) = eight_bytes_to(data, addr) {
        let run = one_byte_nodes(x);
        for i in 0..run {
            let code = (x >> (8 * (7 - i))) as u8 & 0x3F;
            key.push(codes.input[usize::from(code - 1)]);
        }
        addr -= run as u64;
        if run < 8 {
            break;
        }
    }
    while let Some(t) = single_transition(data, addr, codes) {
        key.push(t.input);
        addr = t.addr;
        *output += t.output;
    }
    addr
}

impl NodeView {
    const BLANK: NodeView = NodeView {
        is_final: false,
        final_output: 0,
        len: 1,
        single: Transition {
            input: 0,
            output: 0,
            addr: 0,
        },
        first_byte: 0,
        inputs_at: 0,
        deltas_at: 0,
        outputs_at: 0,
        tsize: 0,
        osize: 0,
    };

    /// The node whose last byte is at `addr` in `data` (the whole fst).
    #[inline]
    pub(super) fn new(data: &[u8], addr: u64, codes: &CommonCodes) -> NodeView {
        match single_transition(data, addr, codes) {
            Some(single) => NodeView {
                single,
                ..NodeView::BLANK
            },
            None => Self::branching(data, addr),
        }
    }

    /// The node at `addr`, which [`single_transition`] said is not a
    /// non-final one-transition node: the empty final node, or one with any
    /// number of transitions.
    ///
    /// Always inlined: the walks' loops call it once per branching node,
    /// and left to itself the compiler sometimes does not (criterion
    /// `iterate/hybrid` 4-7% slower in a build where it stayed a call).
    #[inline(always)]
    pub(super) fn branching(data: &[u8], addr: u64) -> NodeView {
        let mut node = NodeView::BLANK;
        if addr == EMPTY_ADDRESS {
            node.is_final = true;
            node.len = 0;
            return node;
        }
        let addr = addr as usize;
        let state = data[addr];
        // Any number of transitions, or final.
        let (len, count_len) = match state & 0b11_1111 {
            0 => match data[addr - 1] {
                1 => (256, 1),
                n => (usize::from(n), 1),
            },
            n => (usize::from(n), 0),
        };
        let sizes = data[addr - count_len - 1];
        let (tsize, osize) = (usize::from(sizes >> 4), usize::from(sizes & 0xF));
        let index = if len > TRANS_INDEX_THRESHOLD { 256 } else { 0 };
        node.len = len;
        node.is_final = state & 0b0100_0000 != 0;
        node.inputs_at = addr - count_len - 1 - index - len;
        node.deltas_at = node.inputs_at - len * tsize;
        node.outputs_at = node.deltas_at - len * osize;
        let final_len = if node.is_final { osize } else { 0 };
        node.first_byte = node.outputs_at - final_len;
        node.final_output = unpack_uint(data, node.first_byte, final_len);
        node.tsize = tsize as u8;
        node.osize = osize as u8;
        if len == 1 {
            node.single = node.read(data, 0);
        }
        node
    }

    /// The node at `addr`, decoded only after checking that [`new`](Self::new)
    /// and the fst crate's reader decode it alike, within bounds and without
    /// a panic: its bytes lie between the fst's header and footer, its
    /// packed sizes are ones the fst crate reads, its inputs increase, its index
    /// (if any) agrees with them, every transition leads to the empty node
    /// or to a node that ends below this one's first byte (so no walk goes
    /// round in circles). `Err` says what is wrong.
    pub(super) fn checked(data: &[u8], addr: u64, codes: &CommonCodes) -> Result<NodeView, String> {
        if addr == EMPTY_ADDRESS {
            return Ok(Self::branching(data, addr));
        }
        let nodes = FST_HEADER_LEN..data.len().saturating_sub(FST_FOOTER_LEN);
        let fail = |what: &str| format!("node {addr}: {what}");
        let at = usize::try_from(addr)
            .ok()
            .filter(|at| nodes.contains(at))
            .ok_or_else(|| fail(&format!("outside the fst's nodes, bytes {nodes:?}")))?;
        // Node bytes below the state byte: reads stay within them.
        let room = at - FST_HEADER_LEN;
        let below = |k: usize| match k <= room {
            true => Ok(data[at - k]),
            false => Err(fail("runs past the first node")),
        };
        // The fst crate reads a transition's address in 1 to 8 bytes, and
        // an output in 0 to 8; `tsize` 0 is fine only with no transitions.
        let sizes = |byte: u8, len: usize| match (usize::from(byte >> 4), usize::from(byte & 0xF)) {
            (t, o) if t <= 8 && o <= 8 && (t > 0 || len == 0) => Ok((t, o)),
            (t, o) => Err(fail(&format!("packed sizes {t} and {o} bytes"))),
        };
        let state = data[at];
        if state >> 6 == 0b11 && state & 0b11_1111 != 0 && at > FST_HEADER_LEN {
            // Most nodes: one byte, to the node just below.
            return Ok(Self::new(data, addr, codes));
        }
        let input_len = usize::from(codes.input_of(state & 0b11_1111).is_none());
        // The node's length in bytes.
        let size = match state >> 6 {
            0b11 => 1 + input_len,
            0b10 => {
                let (tsize, osize) = sizes(below(input_len + 1)?, 1)?;
                2 + input_len + tsize + osize
            }
            _ => {
                let (len, count_len) = match state & 0b11_1111 {
                    0 => match below(1)? {
                        1 => (256, 1),
                        n => (usize::from(n), 1),
                    },
                    n => (usize::from(n), 0),
                };
                let (tsize, osize) = sizes(below(count_len + 1)?, len)?;
                let is_final = state & 0b0100_0000 != 0;
                let index = if len > TRANS_INDEX_THRESHOLD { 256 } else { 0 };
                let final_len = if is_final { osize } else { 0 };
                2 + count_len + index + len * (1 + tsize + osize) + final_len
            }
        };
        if size - 1 > room {
            return Err(fail("runs past the first node"));
        }
        let first_byte = (at + 1 - size) as u64;
        let node = Self::new(data, addr, codes);
        let mut previous = None;
        for i in 0..node.len {
            // A delta leads below the node's first byte, or wraps round to
            // an address past the fst: the range refuses that, and the
            // header.
            let t = node.transition(data, i);
            if t.addr != EMPTY_ADDRESS && !(FST_HEADER_LEN as u64..first_byte).contains(&t.addr) {
                return Err(fail(&format!(
                    "a transition to {}, not below the node",
                    t.addr
                )));
            }
            if previous >= Some(t.input) {
                return Err(fail("inputs out of order"));
            }
            previous = Some(t.input);
        }
        if node.len > TRANS_INDEX_THRESHOLD {
            // Each input's entry names its transition, and no other entry
            // names one (the inputs differ).
            let index = &data[node.inputs_at + node.len..][..256];
            let named = index.iter().filter(|&&i| usize::from(i) < node.len);
            let agrees = (0..node.len).all(|i| {
                let input = node.transition(data, i).input;
                usize::from(index[usize::from(input)]) == i
            });
            if !agrees || named.count() != node.len {
                return Err(fail("its index disagrees with its inputs"));
            }
        }
        Ok(node)
    }

    /// How many transitions have an input below `input`, and the one on
    /// `input` if there is one (for a seek along a key).
    pub(super) fn split_at(&self, data: &[u8], input: u8) -> (usize, Option<Transition>) {
        let mut below = 0;
        while below < self.len && self.transition(data, below).input < input {
            below += 1;
        }
        let on = (below < self.len)
            .then(|| self.transition(data, below))
            .filter(|t| t.input == input);
        (below, on)
    }

    /// The index of the transition on `input`, if there is one.
    pub(super) fn find(&self, data: &[u8], input: u8) -> Option<usize> {
        if self.len == 1 {
            return (self.single.input == input).then_some(0);
        }
        // Inputs are stored last transition first.
        let inputs = &data[self.inputs_at..self.inputs_at + self.len];
        let back = inputs.iter().position(|&b| b == input)?;
        Some(self.len - 1 - back)
    }

    /// Transition `i` (in increasing input order), `i < len`.
    #[inline]
    pub(super) fn transition(&self, data: &[u8], i: usize) -> Transition {
        if self.len == 1 {
            self.single
        } else {
            self.read(data, i)
        }
    }

    fn read(&self, data: &[u8], i: usize) -> Transition {
        // Fields are stored last transition first.
        let back = self.len - 1 - i;
        let (tsize, osize) = (usize::from(self.tsize), usize::from(self.osize));
        Transition {
            input: data[self.inputs_at + back],
            output: unpack_uint(data, self.outputs_at + back * osize, osize),
            addr: undelta(
                self.first_byte,
                unpack_uint(data, self.deltas_at + back * tsize, tsize),
            ),
        }
    }
}

fn undelta(first_byte: usize, delta: u64) -> u64 {
    if delta == EMPTY_ADDRESS {
        EMPTY_ADDRESS
    } else {
        // Wrapping: in a malformed fst, an address that `checked` refuses
        // (and an index panic in an unchecked walk), not an overflow.
        (first_byte as u64).wrapping_sub(delta)
    }
}

/// The little-endian integer of `size` (0 to 8) bytes at `at`.
#[inline]
fn unpack_uint(data: &[u8], at: usize, size: usize) -> u64 {
    debug_assert!(size <= 8);
    // One 8-byte load, masked: the fst's 20-byte footer follows every node,
    // so inside a well-formed fst the 8 bytes are always there.
    if let Some(word) = data.get(at..at + 8) {
        let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        return if size == 0 {
            0
        } else {
            word & (u64::MAX >> (64 - 8 * size))
        };
    }
    let mut le = [0u8; 8];
    le[..size].copy_from_slice(&data[at..at + size]);
    u64::from_le_bytes(le)
}

/// The fst format's codes for common input bytes.
pub(super) struct CommonCodes {
    /// `code[byte]`: 1..=63, or 0 if the byte has no code.
    pub(super) code: [u8; 256],
    /// `input[code - 1]` for codes 1..=63.
    input: [u8; 63],
}

impl CommonCodes {
    #[inline]
    fn input_of(&self, code: u8) -> Option<u8> {
        (code != 0).then(|| self.input[usize::from(code - 1)])
    }
}

/// The code table, read once from the fst crate's own output: the fst of the
/// single key `[b]` is a one-transition root whose state byte holds `b`'s
/// code. (The crate keeps its table private; this keeps us in step with it.)
pub(super) fn common_codes() -> &'static CommonCodes {
    static CODES: OnceLock<CommonCodes> = OnceLock::new();
    CODES.get_or_init(|| {
        let mut codes = CommonCodes {
            code: [0; 256],
            input: [0; 63],
        };
        for byte in 0..=255u8 {
            let mut builder = fst::raw::Builder::memory();
            builder
                .add([byte])
                .expect("a single key in memory always builds");
            let bytes = builder.into_inner().expect("writing to a Vec cannot fail");
            let fst = fst::raw::Fst::new(bytes).expect("the fst crate reads its own output");
            let state = fst.as_bytes()[fst.root().addr()];
            assert_eq!(state >> 6, 0b10, "the fst crate's format changed");
            let code = state & 0b11_1111;
            codes.code[usize::from(byte)] = code;
            if code != 0 {
                codes.input[usize::from(code - 1)] = byte;
            }
        }
        codes
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frozen::fst_builder::FstBuilder;
    use proptest::prelude::*;
    use std::collections::HashSet;

    #[test]
    fn codes_cover_63_bytes() {
        let codes = common_codes();
        assert_eq!(codes.code.iter().filter(|&&c| c != 0).count(), 63);
        for (i, &input) in codes.input.iter().enumerate() {
            assert_eq!(usize::from(codes.code[usize::from(input)]), i + 1);
            assert_eq!(codes.input_of(i as u8 + 1), Some(input));
        }
        assert_eq!(codes.input_of(0), None);
    }

    /// The word arithmetic counts what a byte-at-a-time test counts: from
    /// the top lane down, the bytes with the state bits `11` and a code
    /// other than 0. (The walks answer the same with any count that is not
    /// too high, so only this test sees a count too low.)
    #[test]
    fn one_byte_nodes_counts_as_bytes_are_tested() {
        let one_byte = |b: u8| b >> 6 == 0b11 && b & 0x3F != 0;
        let by_bytes = |x: u64| x.to_be_bytes().iter().take_while(|&&b| one_byte(b)).count();
        let mut words = Vec::new();
        // Every byte value in every lane, the lanes above it one-byte nodes
        // (0xC1) and the lanes below it any of 0x00, 0xC0, 0xFF.
        for lane in 0..8 {
            for byte in 0..=255u64 {
                for below in [0x00u64, 0xC0, 0xFF] {
                    let above = !(u64::MAX >> (8 * lane)) & 0xC1C1_C1C1_C1C1_C1C1;
                    let below_lanes = u64::MAX.checked_shr(8 * (lane + 1)).unwrap_or(0);
                    let below = (below * 0x0101_0101_0101_0101) & below_lanes;
                    words.push(above | byte << (56 - 8 * lane) | below);
                }
            }
        }
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..10_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Mostly state bytes of 11, so that runs are long.
            words.push(state | (0xC0C0_C0C0_C0C0_C0C0 & (state << 1)));
        }
        for x in words {
            assert_eq!(one_byte_nodes(x), by_bytes(x), "{x:#018x}");
        }
    }

    /// Every node the fst crate's own builder writes reads back as the fst
    /// crate reads it.
    #[test]
    fn nodes_read_as_the_fst_crate_reads_them() {
        let mut keys: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b, b'x']).collect();
        keys.extend((0..70u8).map(|b| vec![b'q', b, 0xFF]));
        keys.extend((0..5u8).map(|b| vec![b'q', 0xF0, b]));
        // 32 transitions, the most without an index, each to its own node.
        keys.extend((0..32u8).map(|b| vec![b'r', b'r', b, b'-', b]));
        keys.sort();
        let mut builder = fst::raw::Builder::memory();
        for (i, key) in keys.iter().enumerate() {
            builder.insert(key, (i as u64) << (i % 60)).unwrap();
        }
        let fst = fst::raw::Fst::new(builder.into_inner().unwrap()).unwrap();
        let data = fst.as_bytes();
        let mut todo = vec![fst.root().addr()];
        let mut seen = 0;
        while let Some(addr) = todo.pop() {
            let theirs = fst.node(addr);
            let ours = NodeView::new(data, addr as u64, common_codes());
            let checked = NodeView::checked(data, addr as u64, common_codes()).unwrap();
            assert_eq!(format!("{checked:?}"), format!("{ours:?}"));
            assert_eq!(ours.is_final, theirs.is_final());
            assert_eq!(ours.final_output, theirs.final_output().value());
            assert_eq!(ours.len, theirs.len());
            if ours.len > 1 {
                // Inputs found through the index (more than 32 transitions),
                // in the list of inputs, or not at all.
                for byte in 0..=255u8 {
                    assert_eq!(ours.find(data, byte), theirs.find_input(byte), "{byte}");
                }
            }
            for (i, t) in theirs.transitions().enumerate() {
                let mine = ours.transition(data, i);
                assert_eq!(
                    (mine.input, mine.output, mine.addr as usize),
                    (t.inp, t.out.value(), t.addr)
                );
                todo.push(t.addr);
            }
            seen += 1;
        }
        assert!(seen > 300);
    }

    /// The fst crate finds the transitions of a node of more than 32
    /// through its index: `checked` refuses a node whose index names a
    /// transition other than the one on that input.
    #[test]
    fn checked_refuses_an_index_that_disagrees_with_the_inputs() {
        let mut builder = fst::raw::Builder::memory();
        for (i, byte) in (b'0'..b'0' + 40).enumerate() {
            builder.insert([byte], i as u64).unwrap();
        }
        let fst = fst::raw::Fst::new(builder.into_inner().unwrap()).unwrap();
        let (data, root, codes) = (fst.as_bytes(), fst.root().addr() as u64, common_codes());
        let node = NodeView::checked(data, root, codes).unwrap();
        assert_eq!(node.len, 40);
        let index = node.inputs_at + node.len;
        for byte in 0..256 {
            let mut bad = data.to_vec();
            bad[index + byte] = match usize::from(data[index + byte]) {
                i if i < 40 => ((i + 1) % 40) as u8,
                _ => 0,
            };
            let refused = NodeView::checked(&bad, root, codes).unwrap_err();
            assert!(refused.contains("index"), "{byte}: {refused}");
            // Any entry from the transition count up means "none", as the
            // fst crate reads it.
            if usize::from(data[index + byte]) >= 40 {
                bad[index + byte] = 40;
                assert!(NodeView::checked(&bad, root, codes).is_ok(), "{byte}");
            }
        }
    }

    /// Every node of up to four bytes (state byte, two below it from a set
    /// of telling values, one more), with none to a few hundred bytes of
    /// the fst below its state byte: `checked` refuses it or decodes it
    /// without a panic, and what it passes stays within the fst's nodes,
    /// with every transition below the node's bytes. A node that claims
    /// more bytes than lie below it must be refused before it is decoded,
    /// or the decoding reads before the start of the bytes; a one-byte
    /// node at the fst's first byte leads into the header.
    #[test]
    fn checked_refuses_nodes_that_run_past_the_first_byte() {
        let telling = [0x00, 0x01, 0x02, 0x11, 0x18, 0x21, 0x81, 0x88, 0x91, 0xFF];
        let codes = common_codes();
        // Bytes below the state byte: fewer than the node's three, and
        // rooms that a node with an index (33 transitions and more) needs
        // and does not, with and without the index.
        for room in [0usize, 1, 2, 3, 4, 5, 6, 103, 303] {
            for state in 0..=255u8 {
                for &b1 in &telling {
                    for &b2 in &telling {
                        let mut data = vec![0u8; FST_HEADER_LEN + room.saturating_sub(3)];
                        data.extend(&[0x11, b2, b1][3 - room.min(3)..]);
                        data.push(state);
                        data.extend([0u8; FST_FOOTER_LEN]);
                        let at = FST_HEADER_LEN + room;
                        let Ok(node) = NodeView::checked(&data, at as u64, codes) else {
                            continue;
                        };
                        for i in 0..node.len {
                            let t = node.transition(&data, i);
                            assert!(
                                t.addr == EMPTY_ADDRESS
                                    || (FST_HEADER_LEN as u64..at as u64).contains(&t.addr),
                                "{state:#x} {b1:#x} {b2:#x} after {room}: {t:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// An 8-byte delta wraps round to any address at all, this node's own
    /// bytes and the bytes above it included: `checked` refuses every
    /// transition that does not lead below the node's first byte. One to
    /// the node's state byte is a loop, on which a walk would never end.
    #[test]
    fn checked_refuses_a_transition_into_the_node_or_above_it() {
        let codes = common_codes();
        let below = 5;
        // Two transitions, not final, 8-byte deltas and no outputs:
        // deltas, inputs, sizes and state, 20 bytes.
        let mut data = vec![0u8; FST_HEADER_LEN + below];
        data.extend([0u8; 16]);
        data.extend([b'b', b'a', 0x80, 2]);
        data.extend([0u8; FST_FOOTER_LEN]);
        let at = FST_HEADER_LEN + below + 19;
        let first_byte = FST_HEADER_LEN + below;
        let node = NodeView::checked(&data, at as u64, codes).unwrap();
        assert_eq!(
            (node.len, node.first_byte, node.deltas_at),
            (2, first_byte, first_byte)
        );
        // Transition 0 (stored second) leads to the byte just below.
        data[first_byte + 8..][..8].copy_from_slice(&1u64.to_le_bytes());
        // (A delta of 0 names the empty node: no delta leads to the
        // first byte itself.)
        for target in (first_byte - 1..data.len() + 8).filter(|&t| t != first_byte) {
            let delta = (first_byte as u64).wrapping_sub(target as u64);
            data[first_byte..][..8].copy_from_slice(&delta.to_le_bytes());
            let read = NodeView::new(&data, at as u64, codes).transition(&data, 1);
            assert_eq!(read.addr, target as u64);
            match NodeView::checked(&data, at as u64, codes) {
                Ok(_) => assert_eq!(target, first_byte - 1),
                Err(refused) => {
                    assert!(target >= first_byte, "{target}: {refused}");
                    assert!(refused.contains("not below the node"), "{refused}");
                }
            }
        }
    }

    /// What `follow_chain` does, one transition at a time.
    fn follow_slowly(
        data: &[u8],
        mut addr: u64,
        codes: &CommonCodes,
        key: &mut Vec<u8>,
        output: &mut u64,
    ) -> u64 {
        while let Some(t) = single_transition(data, addr, codes) {
            key.push(t.input);
            addr = t.addr;
            *output += t.output;
        }
        addr
    }

    /// Checks `follow_chain` from every node of `fst` against
    /// `follow_slowly`; returns how many bytes the chains took in all.
    fn check_chains(fst: &fst::raw::Fst<Vec<u8>>) -> Result<usize, TestCaseError> {
        let (data, codes) = (fst.as_bytes(), common_codes());
        let (mut todo, mut seen, mut taken) = (vec![fst.root().addr()], HashSet::new(), 0);
        while let Some(addr) = todo.pop() {
            if !seen.insert(addr) {
                continue;
            }
            let (mut fast_key, mut fast_output) = (b"k".to_vec(), 1);
            let (mut slow_key, mut slow_output) = (b"k".to_vec(), 1);
            let fast = follow_chain(data, addr as u64, codes, &mut fast_key, &mut fast_output);
            let slow = follow_slowly(data, addr as u64, codes, &mut slow_key, &mut slow_output);
            prop_assert_eq!(
                (fast, &fast_key, fast_output),
                (slow, &slow_key, slow_output),
                "from {}",
                addr
            );
            taken += slow_key.len() - 1;
            todo.extend(fst.node(addr).transitions().map(|t| t.addr));
        }
        Ok(taken)
    }

    /// Keys whose fst nodes end chains in every way: common and uncommon
    /// bytes (one- and two-byte nodes), keys that end inside others'
    /// chains (final nodes), and branches right below a chain.
    fn chain_key() -> impl Strategy<Value = Vec<u8>> {
        let dirs = prop::sample::select(vec![&b""[..], b"usr/share/doc/", b"usr/lib/\x00\xFF/"]);
        let tail = prop::collection::vec(
            prop_oneof![
                8 => prop::sample::select(b"abcdefgh/.-_0123".to_vec()),
                1 => 0u8..=0xFD,
            ],
            0..40,
        );
        (dirs, tail).prop_map(|(dir, tail)| [dir, &tail[..]].concat())
    }

    /// A chain of one-byte nodes that ends at a final node with two
    /// transitions whose outputs take two bytes: below its state byte
    /// (`01`, then 2) lies its sizes byte, with bit 1 set. A chain's
    /// reading that tested a lane's top bit in the wrong byte would take
    /// that node for one more byte of the chain.
    #[test]
    fn a_chain_stops_at_a_final_branching_node() {
        let mut keys = vec![b"zq/chain".to_vec(), b"zq/chainb".to_vec()];
        keys.extend((0..300).map(|i| format!("zq/chaina{i:03}").into_bytes()));
        keys.sort();
        let mut builder = FstBuilder::new(Vec::new());
        for (i, key) in keys.iter().enumerate() {
            builder.insert(key, i as u64).unwrap();
        }
        let fst = fst::raw::Fst::new(builder.finish()).unwrap();
        let (data, codes) = (fst.as_bytes(), common_codes());
        // The chain from the root's one transition reaches the final node.
        let (mut key, mut output) = (Vec::new(), 0);
        let end = follow_chain(data, fst.root().addr() as u64, codes, &mut key, &mut output);
        assert_eq!(key, b"zq/chain");
        let node = fst.node(end as usize);
        assert!(node.is_final() && node.len() == 2);
        assert_eq!(
            data[end as usize] >> 6,
            0b01,
            "final, transitions counted in the state"
        );
        assert_eq!(
            data[end as usize - 1] & 0b10,
            0b10,
            "outputs of two or three bytes"
        );
        check_chains(&fst).unwrap();
    }

    proptest! {
        /// A chain's eight-at-a-time reading takes the bytes, outputs and
        /// end node that single transitions do, from every node of fsts
        /// written by our builder (ordinal outputs) and by the fst crate's
        /// (outputs on one-transition nodes too).
        #[test]
        fn chains_follow_as_single_transitions_do(
            keys in prop::collection::btree_set(chain_key(), 0..80),
        ) {
            // The only key under 0xFE: its tail is a chain of 14 transitions.
            let mut keys = keys;
            keys.insert(b"\xFEchain/abc\x00\xFFdef".to_vec());
            let mut ours = FstBuilder::new(Vec::new());
            let mut theirs = fst::raw::Builder::memory();
            for (i, key) in keys.iter().enumerate() {
                ours.insert(key, i as u64).unwrap();
                // Under one root transition, which then carries the least
                // output, of six bytes: the one place a minimal fst has a
                // one-transition node with an output.
                let output = (1 << 40) | ((i as u64) << (i % 40));
                theirs.insert([b"r", &key[..]].concat(), output).unwrap();
            }
            let ours = fst::raw::Fst::new(ours.finish()).unwrap();
            let theirs = fst::raw::Fst::new(theirs.into_inner().unwrap()).unwrap();
            let taken = check_chains(&ours)? + check_chains(&theirs)?;
            // Not vacuous: at least the fixed key's chain, from each fst.
            prop_assert!(taken >= 2 * 14, "{}", taken);
        }
    }
}
