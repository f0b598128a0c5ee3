//! The jump table: where a lookup's walk stands after the first `depth`
//! bytes of its key, found by one hash probe instead of `depth` steps down
//! the fst.
//!
//! Every lookup walks the top of the fst, one node per key byte, and on
//! keys that share long prefixes (paths, URLs) that top is deep: a Debian
//! path passes two dozen nodes, in several cache lines, before its walk
//! reaches the part that tells it from its neighbours. The table holds, for
//! the `depth`-byte prefixes that at least [`MIN_KEYS`] keys start with,
//! the node the walk reaches there and the output gathered on the way. A
//! lookup of a key at least `depth` bytes long probes it once and, if its
//! prefix is there, walks on from that node; otherwise it walks from the
//! root, as without a table. The table is a shortcut, never an answer: a
//! prefix missing from it says nothing about the key.
//!
//! The table holds at most one prefix per [`KEYS_PER_SLOT`] keys, in
//! slots of 32 bytes kept at most 0.8 full, so it costs at most 40 / 128
//! bytes per key, plus a spare slot, a 16-byte footer and up to 63 bytes of
//! alignment (about 1 byte per key in a layer of 128 keys, under 0.5 from
//! about 550): at each length, the prefixes of the most keys would get the
//! slots. `depth` (from [`MIN_DEPTH`] to [`MAX_DEPTH`])
//! is the length whose slots save the most steps over all the layer's
//! keys (the keys under them, times the length), among lengths whose slots
//! hold at least a [`MIN_SHARE`]th of the keys: the other keys pay for a
//! probe that does not shorten their walk. A layer with no such length
//! (random keys, whose top nodes are wide, not deep; small layers) has no
//! table.
//!
//! On the 7.3 M Debian paths the table holds 19,009 prefixes of 24 bytes,
//! which 92% of the keys start with: 0.76 MB, 0.10 bytes per key, for
//! lookups 29-33% faster (both layers mapped, alternating in one process;
//! DESIGN.md gives the other layouts tried).
//!
//! # Section layout
//!
//! The table is a section of the layer file (format version 2), between the
//! value column and the trailer; it may be empty (no table). All integers
//! are little-endian.
//!
//! ```text
//! size        field
//! P           zero padding, so that the slots start at a multiple of 64
//!             bytes from the start of the file (P < 64)
//! 32 × N      slots, an open-addressing hash table with linear probing:
//!   24          the prefix, its `depth` bytes then zeros
//!    4          the address of the node reached (u32); u32::MAX: empty slot
//!    4          the output gathered on the way (u32)
//! 16          footer: depth (u8), P (u8), 6 zero bytes, N (u64)
//! ```
//!
//! A prefix's home slot is `(hash × N) >> 64` (the high half of the 128-bit
//! product), with [`hash`] over the prefix's three little-endian words. A
//! table always has an empty slot (N > the number of prefixes), which ends
//! a probe for an absent prefix. Layers whose fst is 4 GiB or more, or that
//! hold 2^32 keys or more, have no table (addresses and outputs are u32).

use std::cmp::Reverse;
use std::io::{self, Write};
use std::ops::Range;

use super::fst_node::{NodeView, common_codes};
use super::lookup::State;
use crate::{Error, Result};

/// The deepest prefix a table holds: three 8-byte words.
pub(super) const MAX_DEPTH: usize = 24;
/// Tables shallower than this are not built.
pub(super) const MIN_DEPTH: usize = 4;
/// A prefix gets a slot only if at least this many keys start with it.
pub(super) const MIN_KEYS: u64 = 16;
/// At most one prefix in the table per this many keys of the layer.
pub(super) const KEYS_PER_SLOT: u64 = 128;
/// A table is built only if its prefixes hold at least a this-th of the
/// layer's keys: the others pay for a probe that does not shorten their
/// walk.
pub(super) const MIN_SHARE: u64 = 4;
/// The search for the table's length looks no deeper than a length with
/// this many times more candidate prefixes than slots.
pub(super) const SEARCH_WIDTH: usize = 4;
const SLOT_LEN: usize = 32;
const FOOTER_LEN: usize = 16;
const ALIGN: usize = 64;
/// The address field of an empty slot.
const EMPTY: u32 = u32::MAX;

/// A layer's jump table: where its slots are in the layer's bytes.
///
/// Invariant (checked by [`parse`](Self::parse)): `slots` lies inside the
/// bytes the table was parsed from and holds `slot_count` whole slots;
/// `depth` is 0 (no table) or in `MIN_DEPTH..=MAX_DEPTH`. Slot contents
/// are trusted like the fst's own bytes: the layer's checksum guards them,
/// and a damaged slot can make a lookup wrong or panic (a checked index),
/// never read out of bounds. [`check_slots`](Self::check_slots) checks
/// them against the fst, for `verify_structure`.
#[derive(Clone, Debug, Default)]
pub(super) struct JumpTable {
    slots: Range<usize>,
    slot_count: usize,
    depth: usize,
}

impl JumpTable {
    /// Reads the table of the section at `section` of `bytes` (empty: no
    /// table), checking its structure in O(1).
    pub(super) fn parse(bytes: &[u8], section: Range<usize>) -> Result<JumpTable> {
        if section.is_empty() {
            return Ok(JumpTable::default());
        }
        let corrupt = |what: String| Error::Corrupt {
            reason: format!("jump table section of {} bytes: {what}", section.len()),
        };
        if section.len() < FOOTER_LEN {
            return Err(corrupt("shorter than its footer".to_owned()));
        }
        let footer = &bytes[section.end - FOOTER_LEN..section.end];
        let (depth, padding) = (usize::from(footer[0]), usize::from(footer[1]));
        let slot_count = u64::from_le_bytes(footer[8..16].try_into().expect("8 bytes"));
        if !(MIN_DEPTH..=MAX_DEPTH).contains(&depth) {
            return Err(corrupt(format!("depth {depth}")));
        }
        if footer[2..8] != [0; 6]
            || padding >= ALIGN
            || padding > section.len() - FOOTER_LEN
            || !(section.start + padding).is_multiple_of(ALIGN)
        {
            return Err(corrupt(format!(
                "padding {padding} at offset {}",
                section.start
            )));
        }
        let slots_len = (section.len() - FOOTER_LEN - padding) as u64;
        if slot_count == 0 || slot_count.checked_mul(SLOT_LEN as u64) != Some(slots_len) {
            return Err(corrupt(format!("{slot_count} slots of {SLOT_LEN} bytes")));
        }
        let start = section.start + padding;
        Ok(JumpTable {
            slots: start..section.end - FOOTER_LEN,
            slot_count: slot_count as usize,
            depth,
        })
    }

    /// Checks every slot of a parsed table against the layer: each address
    /// inside the fst of `fst_len` bytes, each output below `key_count`, no
    /// prefix longer than the depth, an empty slot somewhere. O(slots).
    pub(super) fn verify(&self, bytes: &[u8], fst_len: usize, key_count: u64) -> Result<()> {
        if self.depth == 0 {
            return Ok(());
        }
        let mut has_empty = false;
        for i in 0..self.slot_count {
            let slot = Slot::read(bytes, self.slots.start + i * SLOT_LEN);
            if slot.addr == EMPTY {
                has_empty = true;
                continue;
            }
            let past_prefix = slot.prefix[..].iter().flat_map(|w| w.to_le_bytes());
            let prefix_ok = past_prefix.skip(self.depth).all(|b| b == 0);
            if !prefix_ok || slot.addr as usize >= fst_len || u64::from(slot.output) >= key_count {
                return Err(Error::Corrupt {
                    reason: format!(
                        "jump table slot {i} points at node {} with output {} in an fst of {fst_len} \
                         bytes and {key_count} keys",
                        slot.addr, slot.output
                    ),
                });
            }
        }
        if !has_empty {
            return Err(Error::Corrupt {
                reason: "the jump table has no empty slot".to_owned(),
            });
        }
        Ok(())
    }

    /// Checks that every slot holds where the walk down its prefix, from
    /// the root at `root` of the fst `fst`, stands: the node and the output.
    /// The fst must have passed `verify::check_fst`, which makes that walk
    /// safe; with the slots checked, a lookup that starts at one is too.
    pub(super) fn check_slots(&self, bytes: &[u8], fst: &[u8], root: u64) -> Result<(), String> {
        let codes = common_codes();
        for i in 0..self.slot_count {
            let slot = Slot::read(bytes, self.slots.start + i * SLOT_LEN);
            if slot.addr == EMPTY {
                continue;
            }
            let prefix = slot.prefix.iter().flat_map(|w| w.to_le_bytes());
            let (mut addr, mut output) = (root, 0u64);
            for byte in prefix.take(self.depth) {
                let node = NodeView::new(fst, addr, codes);
                let Some(at) = node.find(fst, byte) else {
                    return Err(format!("jump table slot {i} holds a prefix no key has"));
                };
                let t = node.transition(fst, at);
                (addr, output) = (t.addr, output + t.output);
            }
            if (addr, output) != (u64::from(slot.addr), u64::from(slot.output)) {
                return Err(format!(
                    "jump table slot {i} says node {} and output {}, its prefix leads to node \
                     {addr} and output {output}",
                    slot.addr, slot.output
                ));
            }
        }
        Ok(())
    }

    /// The prefix length the table holds; 0 without a table.
    pub(super) fn depth(&self) -> usize {
        self.depth
    }

    /// Where the walk for `key` may start instead of the root, from the
    /// table in the layer's `bytes`: the node its first `depth` bytes lead
    /// to, with `depth` and the output gathered on the way. `None`: walk
    /// from the root (the key is short, or its prefix has no slot).
    #[inline]
    pub(super) fn start(&self, bytes: &[u8], key: &[u8]) -> Option<State> {
        if self.depth == 0 || key.len() < self.depth {
            return None;
        }
        let prefix = prefix_words(&key[..self.depth]);
        let mut i = home(hash(&prefix), self.slot_count);
        // Bounded, so that a damaged table without an empty slot ends too.
        for _ in 0..self.slot_count {
            let slot = Slot::read(bytes, self.slots.start + i * SLOT_LEN);
            if slot.addr == EMPTY {
                return None;
            }
            if slot.prefix == prefix {
                return Some((u64::from(slot.addr), self.depth, u64::from(slot.output)));
            }
            i += 1;
            if i == self.slot_count {
                i = 0;
            }
        }
        None
    }
}

/// One slot, decoded.
struct Slot {
    prefix: [u64; 3],
    addr: u32,
    output: u32,
}

impl Slot {
    #[inline]
    fn read(bytes: &[u8], at: usize) -> Slot {
        let slot: &[u8; SLOT_LEN] = bytes[at..at + SLOT_LEN].try_into().expect("32 bytes");
        let word = |i: usize| u64::from_le_bytes(slot[i * 8..i * 8 + 8].try_into().expect("8"));
        let tail = word(3);
        Slot {
            prefix: [word(0), word(1), word(2)],
            addr: tail as u32,
            output: (tail >> 32) as u32,
        }
    }
}

/// `prefix` (at most [`MAX_DEPTH`] bytes) as three little-endian words,
/// zero-padded.
#[inline]
fn prefix_words(prefix: &[u8]) -> [u64; 3] {
    debug_assert!(prefix.len() <= MAX_DEPTH);
    let mut words = [0u64; 3];
    for (word, chunk) in words.iter_mut().zip(prefix.chunks(8)) {
        let mut le = [0u8; 8];
        le[..chunk.len()].copy_from_slice(chunk);
        *word = u64::from_le_bytes(le);
    }
    words
}

/// The hash of a prefix's words. Part of the file format: a table written
/// with one hash is read with the same.
#[inline]
fn hash(words: &[u64; 3]) -> u64 {
    let mut h: u64 = 0x243F_6A88_85A3_08D3;
    for &word in words {
        h = (h ^ word).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^= h >> 32;
    }
    h.wrapping_mul(0xD6E8_FEB8_6659_FD93)
}

/// The home slot of a hash in a table of `slot_count` slots.
#[inline]
fn home(hash: u64, slot_count: usize) -> usize {
    ((u128::from(hash) * slot_count as u128) >> 64) as usize
}

/// A table built for an fst, not yet written.
#[derive(Debug)]
pub(super) struct Built {
    depth: usize,
    /// Slot bytes, `SLOT_LEN` each.
    slots: Vec<u8>,
}

/// A prefix met on the way down, with the keys that start with it: the
/// ordinals `first..end`.
#[derive(Clone, Copy)]
struct Prefix {
    bytes: [u8; MAX_DEPTH],
    addr: u64,
    first: u64,
    end: u64,
}

impl Prefix {
    fn keys(&self) -> u64 {
        self.end.saturating_sub(self.first)
    }
}

/// The fst's prefixes one byte longer than those of `level` (of `depth`
/// bytes) that at least `MIN_KEYS` keys start with.
fn longer(fst: &[u8], level: &[Prefix], depth: usize) -> Vec<Prefix> {
    let codes = common_codes();
    let mut next = Vec::new();
    for parent in level {
        let node = NodeView::new(fst, parent.addr, codes);
        // The output gathered on the way to a prefix is the ordinal of its
        // first key (the fst builder moves each output as near the root as
        // the keys below let it), so a prefix's keys run from there to
        // where its next sibling's start, or its parent's end. Last child
        // first: its keys end where the parent's do.
        let mut end = parent.end;
        for i in (0..node.len).rev() {
            let t = node.transition(fst, i);
            let first = parent.first + t.output;
            let mut child = Prefix {
                addr: t.addr,
                first,
                end,
                ..*parent
            };
            child.bytes[depth] = t.input;
            if child.keys() >= MIN_KEYS {
                next.push(child);
            }
            end = first;
        }
    }
    next
}

impl Built {
    /// Builds the table for the fst `fst` (its bytes, footer included), or
    /// `None` when the layer should have none (see the module docs).
    pub(super) fn for_fst(fst: &[u8]) -> Option<Built> {
        // The fst's footer: key count, root address, checksum.
        let footer = fst.len().checked_sub(20)?;
        let field = |at: usize| u64::from_le_bytes(fst[at..at + 8].try_into().expect("8 bytes"));
        let (key_count, root) = (field(footer), field(footer + 8));
        let most = (key_count / KEYS_PER_SLOT) as usize;
        if key_count >= u64::from(u32::MAX) || fst.len() >= EMPTY as usize || most == 0 {
            return None;
        }
        // Breadth first, one length at a time, the prefixes of `MIN_KEYS`
        // keys or more; at each length the `most` of the most keys would
        // get the slots.
        let mut level = vec![Prefix {
            bytes: [0; MAX_DEPTH],
            addr: root,
            first: 0,
            end: key_count,
        }];
        let (mut best, mut best_score) = (None, 0);
        for depth in 1..=MAX_DEPTH {
            level = longer(fst, &level, depth - 1);
            // Stop where prefixes grow too many to keep the search's memory
            // a few times the table's.
            if level.is_empty() || level.len() > SEARCH_WIDTH * most {
                break;
            }
            if depth < MIN_DEPTH {
                continue;
            }
            let mut kept = level.clone();
            if kept.len() > most {
                kept.select_nth_unstable_by_key(most, |p| Reverse(p.keys()));
                kept.truncate(most);
            }
            // The walk steps saved, summed over the keys.
            let covered: u64 = kept.iter().map(Prefix::keys).sum();
            let score = covered * depth as u64;
            if covered * MIN_SHARE >= key_count && score >= best_score {
                (best, best_score) = (Some((kept, depth)), score);
            }
        }
        let (prefixes, depth) = best?;
        // Load at most 0.8: probes stay short, and a slot stays empty.
        let slot_count = prefixes.len() + prefixes.len() / 4 + 1;
        let mut slots = vec![0u8; slot_count * SLOT_LEN];
        for slot in slots.chunks_exact_mut(SLOT_LEN) {
            slot[24..28].copy_from_slice(&EMPTY.to_le_bytes());
        }
        for prefix in prefixes {
            let words = prefix_words(&prefix.bytes[..depth]);
            let mut i = home(hash(&words), slot_count);
            while slots[i * SLOT_LEN + 24..i * SLOT_LEN + 28] != EMPTY.to_le_bytes() {
                i = (i + 1) % slot_count;
            }
            let slot = &mut slots[i * SLOT_LEN..(i + 1) * SLOT_LEN];
            for (w, word) in words.iter().enumerate() {
                slot[w * 8..w * 8 + 8].copy_from_slice(&word.to_le_bytes());
            }
            // Both fit: the fst is under 4 GiB and the keys under 2^32.
            slot[24..28].copy_from_slice(&(prefix.addr as u32).to_le_bytes());
            slot[28..32].copy_from_slice(&(prefix.first as u32).to_le_bytes());
        }
        Some(Built { depth, slots })
    }

    /// Bytes the section will take at most, wherever it starts.
    pub(super) fn max_len(&self) -> usize {
        ALIGN - 1 + self.slots.len() + FOOTER_LEN
    }

    /// Writes the section to `out`, which is at offset `at` of the file.
    /// Returns its length.
    pub(super) fn write<W: Write>(&self, out: &mut W, at: u64) -> io::Result<u64> {
        let padding = (ALIGN - (at % ALIGN as u64) as usize) % ALIGN;
        out.write_all(&[0u8; ALIGN][..padding])?;
        out.write_all(&self.slots)?;
        let mut footer = [0u8; FOOTER_LEN];
        footer[0] = self.depth as u8;
        footer[1] = padding as u8;
        footer[8..16].copy_from_slice(&((self.slots.len() / SLOT_LEN) as u64).to_le_bytes());
        out.write_all(&footer)?;
        Ok((padding + self.slots.len() + FOOTER_LEN) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FrozenLayer;
    use crate::frozen::lookup;

    fn layer_of(keys: &mut Vec<Vec<u8>>) -> FrozenLayer<u64> {
        keys.sort();
        keys.dedup();
        FrozenLayer::from_sorted_iter(keys.iter().enumerate().map(|(i, k)| (k, i as u64))).unwrap()
    }

    /// Paths under a few directories, with 0x00 and 0xFF in them: under
    /// each, packages of 16 to 40 files sharing all but their last bytes,
    /// so that some prefixes of every length have enough keys for a slot
    /// and others do not; and every prefix of one key.
    fn paths() -> Vec<Vec<u8>> {
        let dirs: [&[u8]; 4] = [
            b"usr/share/doc/",
            b"usr/share/locale/de/LC_MESSAGES/",
            b"\x00\x00\x00\x00\x00\x00",
            b"\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x00",
        ];
        let mut keys = Vec::new();
        for (d, dir) in dirs.iter().enumerate() {
            for package in 0..60u32 {
                let name = match package % 3 {
                    0 => format!("{d}p{package:03}/"),
                    _ => format!("{d}p{package:03}/a-file-with-a-long-name-"),
                };
                for file in 0..(16 + package * 7 % 25) {
                    keys.push([*dir, name.as_bytes(), format!("{file}").as_bytes()].concat());
                }
            }
        }
        let chain = b"usr/share/locale/de/LC_MESSAGES/1p001/a-file-with-a-long-name-1";
        keys.extend((0..=chain.len()).map(|end| chain[..end].to_vec()));
        keys
    }

    /// Every key's table start is where walking its first `depth` bytes
    /// from the root leads, and lookups through the table find what the
    /// keys hold.
    #[test]
    fn a_start_is_where_the_walk_would_be() {
        let mut keys = paths();
        let layer = layer_of(&mut keys);
        let table = &layer.jump;
        assert!(table.depth() >= MIN_DEPTH, "depth {}", table.depth());
        let mut probes = keys.clone();
        // Near misses of every fifth key (fewer probes: the tests also run
        // under valgrind): one byte changed at each position of the
        // prefix, one byte more and one less.
        for key in keys.iter().step_by(5) {
            for at in 0..key.len().min(MAX_DEPTH + 1) {
                let mut other = key.clone();
                other[at] = other[at].wrapping_add(1);
                probes.push(other);
            }
            probes.push([key.as_slice(), b"\x00"].concat());
            probes.push(key[..key.len().saturating_sub(1)].to_vec());
        }
        let (data, root) = (layer.fst.as_bytes(), layer.fst.root().addr() as u64);
        let (mut jumped, mut jumped_absent) = (0, 0);
        for probe in &probes {
            let expected = keys.binary_search(probe).ok().map(|i| i as u64);
            if let Some(start) = table.start(layer.as_bytes(), probe) {
                let walked = lookup::descend(data, root, probe, table.depth());
                assert_eq!(Some(start), walked, "{probe:?}");
                jumped += 1;
                jumped_absent += usize::from(expected.is_none());
            }
            assert_eq!(layer.get(probe), expected, "{probe:?}");
            assert_eq!(layer.rank(probe).map(|i| i as u64), expected, "{probe:?}");
        }
        // Many lookups jumped, of present keys and of absent ones.
        assert!(
            jumped - jumped_absent > keys.len() / 4,
            "{jumped} of {}",
            keys.len()
        );
        assert!(jumped_absent > keys.len() / 20, "{jumped_absent}");
        // A key exactly as long as the table's prefixes jumps too.
        let longest = keys.iter().max_by_key(|k| k.len()).unwrap();
        let exact = &longest[..table.depth()];
        assert!(table.start(layer.as_bytes(), exact).is_some(), "{exact:?}");
        let expected: Vec<_> = (probes.iter())
            .map(|p| keys.binary_search(p).ok().map(|i| i as u64))
            .collect();
        assert_eq!(layer.get_many(&probes), expected);
    }

    /// The prefixes in the table's occupied slots, with their outputs.
    fn held(layer: &FrozenLayer<u64>) -> Vec<(Vec<u8>, u64)> {
        let table = &layer.jump;
        (0..table.slot_count)
            .map(|i| Slot::read(layer.as_bytes(), table.slots.start + i * SLOT_LEN))
            .filter(|slot| slot.addr != EMPTY)
            .map(|slot| {
                let bytes: Vec<u8> = slot.prefix.iter().flat_map(|w| w.to_le_bytes()).collect();
                (bytes[..table.depth].to_vec(), u64::from(slot.output))
            })
            .collect()
    }

    /// The table holds the prefixes of its length with the most keys, at
    /// least `MIN_KEYS` each and at most one per `KEYS_PER_SLOT` keys, each
    /// with its first key's ordinal; its length saves the most steps.
    #[test]
    fn the_table_holds_the_prefixes_of_most_keys_at_the_best_length() {
        let mut keys = paths();
        let layer = layer_of(&mut keys);
        let depth = layer.jump.depth();
        let most = keys.len() / KEYS_PER_SLOT as usize;
        // (prefix, first ordinal, keys) for prefixes of `d` bytes with a
        // slot's worth of keys, most keys first.
        let groups = |d: usize| {
            let mut groups: Vec<(&[u8], usize, u64)> = Vec::new();
            for (ordinal, key) in keys.iter().enumerate().filter(|(_, k)| k.len() >= d) {
                match groups.last_mut() {
                    Some((prefix, _, count)) if *prefix == &key[..d] => *count += 1,
                    _ => groups.push((&key[..d], ordinal, 1)),
                }
            }
            groups.retain(|&(_, _, count)| count >= MIN_KEYS);
            groups.sort_by_key(|&(_, _, count)| Reverse(count));
            // The build's search would stop at a wider length.
            assert!(groups.len() <= SEARCH_WIDTH * most, "length {d}");
            groups
        };
        let kept = |d: usize| groups(d).iter().take(most).map(|g| g.2).sum::<u64>();
        for d in MIN_DEPTH..=MAX_DEPTH {
            assert!(
                kept(d) * d as u64 <= kept(depth) * depth as u64,
                "{d} beats {depth}"
            );
        }
        let candidates = groups(depth);
        // More candidates than slots: the cut is tested too.
        assert!(
            candidates.len() > most && most > 10,
            "{} {most}",
            candidates.len()
        );
        assert_eq!(layer.jump.slot_count, most + most / 4 + 1);
        let held = held(&layer);
        assert_eq!(held.len(), most);
        // Those with a slot have at least as many keys as those without,
        // and the slot gives their first key's ordinal.
        let (mut least_in, mut most_out) = (u64::MAX, 0);
        for (prefix, first, count) in candidates {
            match held.iter().find(|(p, _)| p == prefix) {
                Some((_, output)) => {
                    assert_eq!(*output, first as u64);
                    least_in = least_in.min(count);
                }
                None => most_out = most_out.max(count),
            }
        }
        assert!(least_in >= most_out, "{least_in} < {most_out}");
    }

    /// 256 keys have room for two slots; three prefixes qualify, and the
    /// two of the most keys get them.
    #[test]
    fn the_slots_go_to_the_prefixes_of_the_most_keys() {
        let mut keys: Vec<Vec<u8>> = [("aaaa/", 100), ("bbbb/", 66), ("cccc/", 90)]
            .into_iter()
            .flat_map(|(dir, files)| (0..files).map(move |i| format!("{dir}{i}").into_bytes()))
            .collect();
        let layer = layer_of(&mut keys);
        assert_eq!(layer.jump.depth(), 5);
        assert_eq!(layer.jump.slot_count, 3);
        let prefixes: Vec<Vec<u8>> = held(&layer).into_iter().map(|(p, _)| p).collect();
        assert!(prefixes.contains(&b"aaaa/".to_vec()) && prefixes.contains(&b"cccc/".to_vec()));
        assert_eq!(layer.jump.start(layer.as_bytes(), b"bbbb/1"), None);
        assert_eq!(layer.get("bbbb/1"), Some(101));
    }

    /// With slots to spare, a prefix of exactly `MIN_KEYS` keys gets one
    /// and a prefix of one key fewer does not.
    #[test]
    fn a_prefix_needs_min_keys_keys_for_a_slot() {
        // One large directory, so that the slots hold a quarter of the
        // keys, and four directories of each size; all nine prefixes are
        // 9 bytes, and none of 10 bytes has MIN_KEYS keys but the large
        // directory's, whose ten would save fewer steps.
        let dir = |first: char, files: u64| {
            (0..files).map(move |i| format!("{first}-group-/{i}").into_bytes())
        };
        let full = ['A', 'B', 'C', 'D'];
        let short = ['a', 'b', 'c', 'd'];
        let mut keys: Vec<Vec<u8>> = (dir('Z', 1000))
            .chain(full.iter().flat_map(|&c| dir(c, MIN_KEYS)))
            .chain(short.iter().flat_map(|&c| dir(c, MIN_KEYS - 1)))
            .collect();
        let layer = layer_of(&mut keys);
        assert_eq!(layer.jump.depth(), 9);
        let mut prefixes: Vec<Vec<u8>> = held(&layer).into_iter().map(|(p, _)| p).collect();
        prefixes.sort();
        let expected: Vec<Vec<u8>> = (full.iter().chain(&['Z']))
            .map(|c| format!("{c}-group-/").into_bytes())
            .collect();
        assert_eq!(prefixes, expected);
        let bytes = layer.as_bytes();
        assert!(layer.jump.start(bytes, b"A-group-/3").is_some());
        assert_eq!(layer.jump.start(bytes, b"a-group-/3"), None);
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(layer.get(key), Some(i as u64));
        }
    }

    #[test]
    fn layers_whose_prefixes_are_short_or_rare_have_no_table() {
        // Random keys: only their first byte or two have many keys each.
        let mut state = 1u64;
        let mut random: Vec<Vec<u8>> = (0..20_000)
            .map(|_| {
                (0..16)
                    .map(|_| {
                        state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                        (state >> 56) as u8
                    })
                    .collect()
            })
            .collect();
        assert_eq!(layer_of(&mut random).jump.depth(), 0);
        // Fewer keys than one slot's worth.
        let mut few: Vec<Vec<u8>> = (0..127)
            .map(|i| format!("same/prefix/{i}").into())
            .collect();
        assert_eq!(layer_of(&mut few).jump.depth(), 0);
        // Keys of three bytes at most: no prefix of four.
        let mut short: Vec<Vec<u8>> = (0..4096u32)
            .map(|i| i.to_be_bytes()[1..].to_vec())
            .collect();
        assert_eq!(layer_of(&mut short).jump.depth(), 0);
        // One key more, and the shared prefix has its slot.
        let mut enough: Vec<Vec<u8>> = (0..128)
            .map(|i| format!("same/prefix/{i}").into())
            .collect();
        assert_eq!(layer_of(&mut enough).jump.depth(), "same/prefix/".len());
        // A shared prefix, but of a fifth of the keys only: no table.
        let mut sparse: Vec<Vec<u8>> = (0..4000u32)
            .map(|i| match i % 5 {
                0 => format!("shared/prefix/{i}").into(),
                _ => i.wrapping_mul(2_654_435_761).to_be_bytes().to_vec(),
            })
            .collect();
        assert_eq!(layer_of(&mut sparse).jump.depth(), 0);
        // A quarter of them: a table.
        let mut quarter: Vec<Vec<u8>> = (0..4000u32)
            .map(|i| match i % 4 {
                0 => format!("shared/prefix/{i}").into(),
                _ => i.wrapping_mul(2_654_435_761).to_be_bytes().to_vec(),
            })
            .collect();
        assert_eq!(layer_of(&mut quarter).jump.depth(), "shared/prefix/".len());
    }

    /// Where the search for the table's length starts and stops: it takes
    /// prefixes of `MIN_DEPTH` bytes, and it stops, table or not, at the
    /// first length with more than `SEARCH_WIDTH` times as many candidate
    /// prefixes as slots (which bounds its memory), even where a longer
    /// length would have served.
    #[test]
    fn the_search_starts_at_min_depth_and_stops_where_it_grows_too_wide() {
        // `groups` prefixes of 4 bytes with `per_group` keys each, whose
        // fifth bytes differ, then `long` keys under one 24-byte prefix.
        let keys_of = |groups: u32, per_group: u8, long: u32| {
            let mut keys = Vec::new();
            for g in 0..groups {
                keys.extend((0..per_group).map(|i| [format!("{g:03}/").as_bytes(), &[i]].concat()));
            }
            keys.extend((0..long).map(|i| format!("{}{i:04}", "z".repeat(MAX_DEPTH)).into_bytes()));
            keys
        };
        // 64 groups of 40: the best length is 4, the shortest there is.
        let mut four = keys_of(64, 40, 0);
        assert_eq!(layer_of(&mut four).jump.depth(), MIN_DEPTH);
        // 2,560 keys, so 20 slots and a search at most 80 prefixes wide.
        // 100 groups of 16 and "zzz": 101 prefixes of 3 bytes end the
        // search before the 24-byte prefix of 960 keys is reached.
        let mut wide = keys_of(100, 16, 960);
        assert_eq!(wide.len() as u64 / KEYS_PER_SLOT * SEARCH_WIDTH as u64, 80);
        assert_eq!(layer_of(&mut wide).jump.depth(), 0);
        // 79 groups and "zzz": 80 prefixes, not too many; the long prefix
        // gets its slot.
        let mut narrow = keys_of(79, 16, 1300);
        assert_eq!(
            narrow.len() as u64 / KEYS_PER_SLOT * SEARCH_WIDTH as u64,
            80
        );
        assert_eq!(layer_of(&mut narrow).jump.depth(), MAX_DEPTH);
    }

    /// Layers of `u32::MAX` keys or more have no table: a slot's output is
    /// a `u32`. (The same layer with its true count has one.)
    #[test]
    fn a_layer_of_too_many_keys_has_no_table() {
        let mut keys: Vec<Vec<u8>> = (0..128)
            .map(|i| format!("same/prefix/{i}").into())
            .collect();
        let layer = layer_of(&mut keys);
        let mut fst = layer.fst.as_bytes().to_vec();
        assert!(Built::for_fst(&fst).is_some());
        let count_at = fst.len() - 20;
        fst[count_at..count_at + 8].copy_from_slice(&u64::from(u32::MAX).to_le_bytes());
        assert!(Built::for_fst(&fst).is_none());
    }

    /// A footer whose padding is longer than the section leaves room for
    /// is an error, not an overflow.
    #[test]
    fn padding_past_the_section_is_corrupt() {
        // The section is 20 bytes at offset 54: its footer claims 10 bytes
        // of padding (aligned: 54 + 10 = 64) but only 4 precede it.
        let mut bytes = vec![0u8; 74];
        let footer = &mut bytes[58..];
        footer[0] = MAX_DEPTH as u8;
        footer[1] = 10;
        footer[8..].copy_from_slice(&1u64.to_le_bytes());
        let err = JumpTable::parse(&bytes, 54..74).unwrap_err();
        assert!(err.to_string().contains("padding"), "{err}");
    }

    /// A footer whose slot count disagrees with the room its section
    /// leaves for slots is an error, whichever way it is off: a lookup
    /// would hash into the wrong number of slots, and `verify` read past
    /// them.
    #[test]
    fn a_slot_count_that_does_not_fill_the_section_is_corrupt() {
        let section_of = |count: u64| {
            // Room for two slots, then the footer; no padding.
            let mut bytes = vec![0u8; 2 * SLOT_LEN + FOOTER_LEN];
            let footer = &mut bytes[2 * SLOT_LEN..];
            footer[0] = MAX_DEPTH as u8;
            footer[8..].copy_from_slice(&count.to_le_bytes());
            bytes
        };
        for count in [0, 1, 3, u64::MAX / 16 + 1] {
            let bytes = section_of(count);
            let err = JumpTable::parse(&bytes, 0..bytes.len()).unwrap_err();
            assert!(err.to_string().contains("slots of"), "{count}: {err}");
        }
        let bytes = section_of(2);
        let table = JumpTable::parse(&bytes, 0..bytes.len()).unwrap();
        assert_eq!((table.slot_count, table.slots), (2, 0..2 * SLOT_LEN));
    }

    /// The hash and the home slot are part of the file format: a table is
    /// probed with the functions it was written with. A change would pass
    /// every other test (the table is a shortcut, so answers stay right)
    /// while the lookups of every file already written missed its table.
    /// The values were worked out apart from this code, from the format's
    /// description.
    #[test]
    fn the_hash_and_home_slots_are_the_formats() {
        let cases: [(&[u8], u64, usize); 3] = [
            (b"usr/share/doc/", 0xf50a_484f_b2d9_f3ac, 957),
            (b"usr/share/locale/de/LC_M", 0x83de_f8a2_c5af_61bd, 515),
            (b"", 0x4349_97da_1c0d_472e, 262),
        ];
        for (prefix, want, home_in_1000) in cases {
            let h = hash(&prefix_words(prefix));
            assert_eq!(h, want, "{prefix:?}");
            assert_eq!(home(h, 1000), home_in_1000, "{prefix:?}");
        }
        assert_eq!((home(0, 7), home(u64::MAX, 7)), (0, 6));
    }

    #[test]
    fn a_table_reads_back_as_written_wherever_it_starts() {
        let mut keys = paths();
        let layer = layer_of(&mut keys);
        let built = Built::for_fst(layer.fst.as_bytes()).unwrap();
        for at in [0u64, 1, 63, 64, 100] {
            let mut section = vec![0xEEu8; at as usize];
            let len = built.write(&mut section, at).unwrap() as usize;
            assert_eq!(section.len(), at as usize + len);
            // The room a build reserves: enough, and no more than the
            // worst start (one byte past a multiple of 64) takes.
            assert!(len <= built.max_len());
            assert_eq!(len == built.max_len(), at % ALIGN as u64 == 1, "at {at}");
            let table = JumpTable::parse(&section, at as usize..section.len()).unwrap();
            assert_eq!(table.depth(), built.depth);
            assert_eq!(table.slots.start % ALIGN, 0);
            assert_eq!(&section[table.slots.clone()], built.slots.as_slice());
            (table.verify(&section, layer.fst.as_bytes().len(), keys.len() as u64)).unwrap();
        }
    }
}
