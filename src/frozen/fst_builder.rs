//! A builder that writes the `fst` crate's format (version 3), read back by
//! the fst crate itself, with a larger and leaner cache of compiled nodes.
//!
//! # Why not `fst::raw::Builder`
//!
//! An fst shares suffixes by compiling each finished node only if no equal
//! node was compiled before. The fst crate finds equal nodes in a fixed cache
//! of 10,000 × 2 nodes (each a heap `Vec` of transitions, cloned in), which is
//! not configurable. On the 7.3 M Debian paths that cache misses most of the
//! repeated suffixes (`/changelog.Debian.gz`, locale and Python file names):
//! the fst of ordinals is 7.79 bytes/key with it, 6.53 with a cache ten times
//! larger (measured by patching the crate; its build got 30% slower, as its
//! cells are heap `Vec`s). Here a cache entry is 8 bytes — half of the
//! node's hash and its address — and equality is decided by decoding the
//! candidate from the bytes already written, so a cache of 2^20 entries
//! costs 8 MiB while building and nothing after. With it the whole
//! `FrozenLayer<u64>` of the Debian paths is 9.06 bytes/key (10.67 with
//! `fst::raw::Builder`), built 3× faster.
//!
//! What remains costly is a cache miss per new node registered; those are
//! prefetched and registered together at the next key, so that a key's chain
//! of new nodes waits for about one miss.
//!
//! The output is the fst crate's format, byte for byte in its rules (node
//! encodings, packed sizes, common-input codes, the masked CRC32C footer), so
//! that [`fst::raw::Fst::new`] reads it and [`fst::raw::Fst::verify`] accepts
//! it; the tests check both against the fst crate's own reader on random and
//! trie-hostile key sets.
//!
//! # Format, as written here (read backwards from a node's last byte)
//!
//! ```text
//! header     | version = 3 (u64 LE) | type = 0 (u64 LE) |
//! nodes      one of, each ending in a state byte:
//!   one transition, to the node written just before, no output:
//!              | input (unless common) | 11 cccccc |
//!   one transition:
//!              | output (o bytes) | delta (t bytes) | t<<4 | o | input (unless common) | 10 cccccc |
//!   any transitions (n), or final:
//!              | final output (o) | outputs (n × o) | deltas (n × t) | inputs (n) |
//!              | index [u8; 256] (n > 32) | t<<4 | o | n (unless in state) | 0 f nnnnnn |
//! footer     | keys (u64 LE) | root address (u64 LE) | masked CRC32C of all before (u32 LE) |
//! ```
//!
//! Per-transition fields are written last transition first. A node's address
//! is its last byte; a transition's delta is the node's first byte minus the
//! target's address (0 for the empty final node, which has address 0 and
//! takes no bytes). `cccccc` is the input's code among the 63 most common
//! bytes (0: not common, the byte follows), a table the fst crate keeps
//! private: [`common_codes`] reads it back from fst's own builder.

use super::fst_node::{
    CommonCodes, EMPTY_ADDRESS, NodeView, TRANS_INDEX_THRESHOLD, Transition, common_codes,
};
use crate::art::raw::prefetch;

/// The fst crate's format version that this writes.
const VERSION: u64 = 3;
/// "No node yet": never a real address (the header occupies it).
const NONE_ADDRESS: u64 = 1;
/// Cache buckets (8 entries of 8 bytes each, one cache line) to start
/// with, and at most: the cache doubles while the fst grows, keeping one
/// bucket per 512 bytes written, up to 8 MiB. (Debian paths, whole layer,
/// with 4 entries of 16 bytes per bucket and one bucket per 256 bytes:
/// 9.50 bytes/key with at most 2^14 buckets, 9.16 with 2^16, 9.09 with 2^18.)
///
/// The first size is for keys whose repeated tails need more entries than
/// their share of the bytes, such as unique ids each followed by one of a
/// few hundred suffixes (`the_first_cache_holds_recurring_tails`). Once
/// such a bucket overflows, every miss writes a node and its ancestors
/// again, and they evict more: that fst came out 4.3× as large with 256
/// buckets at first as with 4,096. On the Debian paths, 4,096 took 0.3%
/// off a whole layer (9.064 → 9.040 bytes/key) and 0.6% off the parts a
/// merge writes, for 256 KiB per builder.
const MIN_BUCKETS: usize = 1 << 12;
const MAX_BUCKETS: usize = 1 << 17;
const BYTES_PER_BUCKET: usize = 512;
/// Entries per bucket.
const WAYS: usize = 8;
/// From this capacity on the output buffer grows by a quarter at a time.
const GENTLE_GROWTH_FROM: usize = 1 << 20;

/// Why a key was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum KeyError {
    OutOfOrder { previous: Vec<u8>, got: Vec<u8> },
    Duplicate { got: Vec<u8> },
}

/// A node being assembled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct NodeSpec {
    is_final: bool,
    final_output: u64,
    transitions: Vec<Transition>,
}

impl NodeSpec {
    fn reset(&mut self, is_final: bool) {
        self.is_final = is_final;
        self.final_output = 0;
        self.transitions.clear();
    }

    fn hash(&self) -> u64 {
        const K: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut h = (u64::from(self.is_final) ^ self.final_output.rotate_left(7)).wrapping_mul(K);
        for t in &self.transitions {
            h = (h.rotate_left(23) ^ u64::from(t.input)).wrapping_mul(K);
            h = (h.rotate_left(23) ^ t.output).wrapping_mul(K);
            h = (h.rotate_left(23) ^ t.addr).wrapping_mul(K);
        }
        // The cache takes the top 32 bits as the node's tag (the
        // multiplications mix those most; the tag's low bits pick its
        // bucket). A slot is empty when its address is 0, so any tag may be
        // cached.
        h ^ (h >> 29)
    }
}

/// One entry of the path of the last key: a node still open to new
/// transitions, and the transition to the next entry (not yet compiled).
#[derive(Debug, Default)]
struct Unfinished {
    node: NodeSpec,
    last: Option<(u8, u64)>,
}

impl Unfinished {
    /// Closes the pending transition now that its target is at `addr`.
    fn close_last(&mut self, addr: u64) {
        if let Some((input, output)) = self.last.take() {
            self.node.transitions.push(Transition {
                input,
                output,
                addr,
            });
        }
    }

    /// Adds `prefix` to every output leaving this node (outputs are pushed
    /// down the path when a new key's output is smaller).
    fn add_output_prefix(&mut self, prefix: u64) {
        if self.node.is_final {
            self.node.final_output += prefix;
        }
        for t in &mut self.node.transitions {
            t.output += prefix;
        }
        if let Some((_, output)) = &mut self.last {
            *output += prefix;
        }
    }
}

/// Compiled nodes whose hashes fall in one bucket, most recently used
/// first. An entry is the high half of the node's hash (whose low bits pick
/// the bucket, so that growing the cache can move it) and the node's
/// address; address 0 (never a cached node's: see [`Output::compile`])
/// marks an empty entry. Nodes past 4 GiB of fst are not cached.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Bucket {
    tags: [u32; WAYS],
    addrs: [u32; WAYS],
}

/// The bytes written so far and what is needed to write more.
struct Output {
    /// The prefix, then the fst so far.
    buf: Vec<u8>,
    /// Where the fst starts in `buf`: addresses count from here.
    base: usize,
    /// Address (last byte) of the node written last.
    last_addr: u64,
    /// Compiled nodes by hash, most recently used first in each bucket.
    registry: Vec<Bucket>,
    /// Entries for `registry` (bucket, tag, address) whose buckets were
    /// prefetched, to be added by [`flush`](Self::flush): a chain of new
    /// nodes then waits for one cache miss, not one per node.
    pending: Vec<(usize, u32, u64)>,
    /// Bits of the node hash used: all but in tests, which weaken the hash
    /// so that equal hashes of unequal nodes are common and the decoding
    /// comparison must tell them apart.
    hash_mask: u64,
    codes: &'static CommonCodes,
}

/// Builds an fst mapping keys (in strictly increasing order) to `u64`s, in
/// memory.
pub(crate) struct FstBuilder {
    out: Output,
    /// The path of the last key: `stack[..depth]` are live; entries beyond
    /// keep their allocations for reuse.
    stack: Vec<Unfinished>,
    depth: usize,
    last_key: Option<Vec<u8>>,
    len: u64,
}

impl FstBuilder {
    /// A builder that appends the fst to `prefix` (so that a layer's header
    /// and fst can share one buffer, with no copy at the end).
    pub(crate) fn new(prefix: Vec<u8>) -> Self {
        let base = prefix.len();
        let mut buf = prefix;
        buf.reserve(1 << 12);
        buf.extend_from_slice(&VERSION.to_le_bytes());
        buf.extend_from_slice(&0u64.to_le_bytes());
        let mut builder = FstBuilder {
            out: Output {
                buf,
                base,
                last_addr: NONE_ADDRESS,
                registry: vec![Bucket::default(); MIN_BUCKETS],
                pending: Vec::new(),
                hash_mask: u64::MAX,
                codes: common_codes(),
            },
            stack: Vec::new(),
            depth: 0,
            last_key: None,
            len: 0,
        };
        builder.push(false, None);
        builder
    }

    /// Bytes of fst written so far (the open path of the last key aside),
    /// not counting the prefix.
    pub(crate) fn bytes_written(&self) -> usize {
        self.out.buf.len() - self.out.base
    }

    /// Heap bytes held: the output buffer and the node cache.
    pub(crate) fn memory_usage(&self) -> usize {
        self.out.buf.capacity() + self.out.registry.len() * size_of::<Bucket>()
    }

    /// Adds `key` with `output`. A refused key leaves the builder unchanged.
    pub(crate) fn insert(&mut self, key: &[u8], output: u64) -> Result<(), KeyError> {
        match &mut self.last_key {
            Some(last) => {
                if key == last.as_slice() {
                    return Err(KeyError::Duplicate { got: key.to_vec() });
                }
                if key < last.as_slice() {
                    return Err(KeyError::OutOfOrder {
                        previous: last.clone(),
                        got: key.to_vec(),
                    });
                }
                last.clear();
                last.extend_from_slice(key);
            }
            None => self.last_key = Some(key.to_vec()),
        }
        self.len += 1;
        if key.is_empty() {
            // Only ever the first key.
            let root = &mut self.stack[0].node;
            root.is_final = true;
            root.final_output = output;
            return Ok(());
        }
        let (shared, output) = self.share_prefix(key, output);
        // The key is greater than the last one, so it does not end inside
        // the shared path.
        debug_assert!(shared < key.len());
        self.compile_from(shared);
        self.add_suffix(&key[shared..], output);
        Ok(())
    }

    /// Finishes the fst and returns the prefix followed by the fst.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        self.compile_from(0);
        self.out.flush();
        debug_assert_eq!(self.depth, 1);
        let root = self.out.compile(&self.stack[0].node, false).0;
        let Output { mut buf, base, .. } = self.out;
        buf.extend_from_slice(&self.len.to_le_bytes());
        buf.extend_from_slice(&root.to_le_bytes());
        let sum = crc32c::crc32c(&buf[base..]);
        let masked = (sum.rotate_right(15)).wrapping_add(0xa282_ead8);
        buf.extend_from_slice(&masked.to_le_bytes());
        buf
    }

    fn push(&mut self, is_final: bool, last: Option<(u8, u64)>) {
        if self.depth == self.stack.len() {
            self.stack.push(Unfinished::default());
        }
        let entry = &mut self.stack[self.depth];
        entry.node.reset(is_final);
        entry.last = last;
        self.depth += 1;
    }

    /// Walks the part of the last key's path that `key` shares, moving
    /// outputs so that each transition carries what all keys through it have
    /// in common. Returns the shared length and what is left of `output`.
    fn share_prefix(&mut self, key: &[u8], mut output: u64) -> (usize, u64) {
        let mut i = 0;
        while i < key.len() {
            let excess = match &mut self.stack[i].last {
                Some((input, out)) if *input == key[i] => {
                    let common = (*out).min(output);
                    let excess = *out - common;
                    output -= common;
                    *out = common;
                    excess
                }
                _ => break,
            };
            i += 1;
            if excess != 0 {
                self.stack[i].add_output_prefix(excess);
            }
        }
        (i, output)
    }

    /// Compiles the path's nodes below depth `keep`, deepest first, closing
    /// each parent's pending transition.
    fn compile_from(&mut self, keep: usize) {
        self.out.flush();
        let mut addr = NONE_ADDRESS;
        let mut child_is_new = false;
        while keep + 1 < self.depth {
            self.depth -= 1;
            let entry = &mut self.stack[self.depth];
            if addr != NONE_ADDRESS {
                entry.close_last(addr);
            }
            // A node whose child was just written for the first time cannot
            // equal any node written before: skip the cache lookup.
            (addr, child_is_new) = self.out.compile(&entry.node, child_is_new);
        }
        if addr != NONE_ADDRESS {
            self.stack[self.depth - 1].close_last(addr);
        }
    }

    fn add_suffix(&mut self, suffix: &[u8], output: u64) {
        let top = &mut self.stack[self.depth - 1];
        debug_assert!(top.last.is_none());
        top.last = Some((suffix[0], output));
        for &input in &suffix[1..] {
            self.push(false, Some((input, 0)));
        }
        self.push(true, None);
    }
}

impl Output {
    /// The address of a node equal to `node`: one written before, or this
    /// one, written now. Also says whether it was written now.
    fn compile(&mut self, node: &NodeSpec, surely_new: bool) -> (u64, bool) {
        if node.is_final && node.transitions.is_empty() && node.final_output == 0 {
            return (EMPTY_ADDRESS, false);
        }
        let tag = ((node.hash() & self.hash_mask) >> 32) as u32;
        let bucket = tag as usize & (self.registry.len() - 1);
        if !surely_new {
            for slot in 0..WAYS {
                let entry = &self.registry[bucket];
                let (cached, addr) = (entry.tags[slot], u64::from(entry.addrs[slot]));
                // A tag has about 15 bits the bucket does not fix: the
                // comparison of the encoded node decides.
                if cached == tag && addr != 0 && self.equals(addr, node) {
                    self.promote(bucket, slot, tag, addr);
                    return (addr, false);
                }
            }
        }
        let addr = self.write(node);
        if surely_new {
            // Nothing below needs the entry before the next flush: no node
            // of this chain is looked up after one was new.
            prefetch(self.registry[bucket].tags.as_ptr().cast());
            self.pending.push((bucket, tag, addr));
        } else {
            // The lookup just loaded this bucket.
            self.promote(bucket, WAYS - 1, tag, addr);
        }
        (addr, true)
    }

    /// Adds the pending entries to the cache, and grows it if the fst has
    /// outgrown it.
    fn flush(&mut self) {
        for i in 0..self.pending.len() {
            let (bucket, tag, addr) = self.pending[i];
            self.promote(bucket, WAYS - 1, tag, addr);
        }
        self.pending.clear();
        if self.buf.len() - self.base > self.registry.len() * BYTES_PER_BUCKET
            && self.registry.len() < MAX_BUCKETS
        {
            self.grow_registry();
        }
    }

    /// Doubles the cache, keeping every entry (each bucket's entries split
    /// between two buckets, in the same order).
    #[cold]
    fn grow_registry(&mut self) {
        let old = std::mem::take(&mut self.registry);
        self.registry = vec![Bucket::default(); old.len() * 2];
        for bucket in &old {
            for slot in (0..WAYS).rev() {
                let (tag, addr) = (bucket.tags[slot], bucket.addrs[slot]);
                if addr != 0 {
                    let index = tag as usize & (self.registry.len() - 1);
                    self.promote(index, WAYS - 1, tag, u64::from(addr));
                }
            }
        }
    }

    /// Puts (hash, addr) first in its bucket, shifting down the entries
    /// before `slot` (and dropping the one at `slot`).
    fn promote(&mut self, bucket: usize, slot: usize, tag: u32, addr: u64) {
        let Ok(addr) = u32::try_from(addr) else {
            return; // past 4 GiB: not cached (the fst is only less shared)
        };
        let b = &mut self.registry[bucket];
        b.tags.copy_within(0..slot, 1);
        b.addrs.copy_within(0..slot, 1);
        b.tags[0] = tag;
        b.addrs[0] = addr;
    }

    /// Makes room for at least `bytes` more: past a megabyte, a quarter
    /// more, not the doubling of a `Vec`. A large buffer is most of a
    /// merge's memory, and a doubling holds the old buffer and one twice its
    /// size (three times what is written) while it copies.
    #[cold]
    fn grow(&mut self, bytes: usize) {
        let capacity = self.buf.capacity();
        let step = if capacity < GENTLE_GROWTH_FROM {
            capacity
        } else {
            capacity / 4
        };
        self.buf.reserve_exact(step.max(bytes));
    }

    /// Whether the node at `addr` (written by [`write`](Self::write)) is
    /// `node`.
    fn equals(&self, addr: u64, node: &NodeSpec) -> bool {
        let fst = &self.buf[self.base..];
        let cached = NodeView::new(fst, addr, self.codes);
        cached.is_final == node.is_final
            && cached.final_output == node.final_output
            && cached.len == node.transitions.len()
            && (node.transitions.iter().enumerate()).all(|(i, t)| cached.transition(fst, i) == *t)
    }

    fn write(&mut self, node: &NodeSpec) -> u64 {
        // At most: the state byte, the sizes, the count, the index, and
        // per transition an input, an address delta and an output.
        let largest = 8 + 256 + 17 * node.transitions.len() + 8;
        if self.buf.capacity() - self.buf.len() < largest {
            self.grow(largest);
        }
        let start = (self.buf.len() - self.base) as u64;
        let buf = &mut self.buf;
        match node.transitions.as_slice() {
            [t] if !node.is_final => {
                let code = self.codes.code[usize::from(t.input)];
                if t.addr == self.last_addr && t.output == 0 {
                    if code == 0 {
                        buf.push(t.input);
                    }
                    buf.push(0b11_000000 | code);
                } else {
                    let osize = if t.output == 0 {
                        0
                    } else {
                        pack_size(t.output)
                    };
                    pack_uint(buf, t.output, osize);
                    let tsize = pack_size(delta(start, t.addr));
                    pack_uint(buf, delta(start, t.addr), tsize);
                    buf.push(tsize << 4 | osize);
                    if code == 0 {
                        buf.push(t.input);
                    }
                    buf.push(0b10_000000 | code);
                }
            }
            transitions => {
                let n = transitions.len();
                debug_assert!(n <= 256);
                let mut tsize = 0;
                let mut osize = pack_size(node.final_output);
                let mut any_outputs = node.final_output != 0;
                for t in transitions {
                    tsize = tsize.max(pack_size(delta(start, t.addr)));
                    osize = osize.max(pack_size(t.output));
                    any_outputs |= t.output != 0;
                }
                if !any_outputs {
                    osize = 0;
                }
                if any_outputs {
                    if node.is_final {
                        pack_uint(buf, node.final_output, osize);
                    }
                    for t in transitions.iter().rev() {
                        pack_uint(buf, t.output, osize);
                    }
                }
                for t in transitions.iter().rev() {
                    pack_uint(buf, delta(start, t.addr), tsize);
                }
                buf.extend(transitions.iter().rev().map(|t| t.input));
                if n > TRANS_INDEX_THRESHOLD {
                    let mut index = [255u8; 256];
                    for (i, t) in transitions.iter().enumerate() {
                        index[usize::from(t.input)] = i as u8;
                    }
                    buf.extend_from_slice(&index);
                }
                buf.push(tsize << 4 | osize);
                let in_state = if n <= 0b11_1111 { n as u8 } else { 0 };
                if in_state == 0 {
                    // 256 does not fit a byte; 1 is never written here (a
                    // single transition fits the state byte), so it means 256.
                    buf.push(if n == 256 { 1 } else { n as u8 });
                }
                buf.push(u8::from(node.is_final) << 6 | in_state);
            }
        }
        self.last_addr = (self.buf.len() - self.base) as u64 - 1;
        self.last_addr
    }
}

fn delta(node_start: u64, target: u64) -> u64 {
    if target == EMPTY_ADDRESS {
        EMPTY_ADDRESS
    } else {
        node_start - target
    }
}

/// Bytes needed for `n`: 1 to 8 (1 for 0).
fn pack_size(n: u64) -> u8 {
    (8 - (n.leading_zeros() / 8) as u8).max(1)
}

fn pack_uint(buf: &mut Vec<u8>, n: u64, size: u8) {
    buf.extend_from_slice(&n.to_le_bytes()[..usize::from(size)]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(entries: &[(Vec<u8>, u64)]) -> fst::Map<Vec<u8>> {
        build_with(entries, u64::MAX)
    }

    fn build_with(entries: &[(Vec<u8>, u64)], hash_mask: u64) -> fst::Map<Vec<u8>> {
        let mut builder = FstBuilder::new(Vec::new());
        builder.out.hash_mask = hash_mask;
        build_in(builder, entries)
    }

    /// Builds `entries` with `builder`, set up as a test needs it.
    fn build_in(mut builder: FstBuilder, entries: &[(Vec<u8>, u64)]) -> fst::Map<Vec<u8>> {
        for (key, value) in entries {
            builder.insert(key, *value).unwrap();
        }
        let bytes = builder.finish();
        let map = fst::Map::new(bytes).expect("the fst crate reads it");
        map.as_fst().verify().expect("the checksum is right");
        map
    }

    fn check(entries: &[(Vec<u8>, u64)]) {
        check_with(entries, u64::MAX);
        // One tag for every node, in one bucket: every lookup compares
        // nodes.
        check_with(entries, 0b110);
    }

    fn check_with(entries: &[(Vec<u8>, u64)], hash_mask: u64) {
        let map = build_with(entries, hash_mask);
        assert_eq!(map.len(), entries.len());
        for (key, value) in entries {
            assert_eq!(map.get(key), Some(*value), "key {key:?}");
        }
        use fst::{IntoStreamer, Streamer};
        let mut stream = map.into_stream();
        let mut seen = Vec::new();
        while let Some((key, value)) = stream.next() {
            seen.push((key.to_vec(), value));
        }
        assert_eq!(seen, entries);
    }

    #[test]
    fn empty_and_single_keys() {
        check(&[]);
        check(&[(vec![], 0)]);
        check(&[(vec![], 7)]);
        check(&[(vec![], 0), (vec![0], 1)]);
        check(&[(b"a".to_vec(), u64::MAX)]);
    }

    #[test]
    fn wide_nodes_and_large_outputs() {
        // 256 children of the root, then 64 and 40 under "x": the explicit
        // counts, the 256-byte index, and 8-byte outputs.
        let mut entries: Vec<(Vec<u8>, u64)> =
            (0..=255u8).map(|b| (vec![b], u64::from(b) << 56)).collect();
        entries.extend((0..64u8).map(|b| (vec![b'x', b, b'y'], u64::from(b) * 1000)));
        entries.extend((0..40u8).map(|b| (vec![b'z', b], u64::MAX - u64::from(b))));
        entries.sort();
        check(&entries);
    }

    #[test]
    fn suffixes_are_shared() {
        let words = ["alpha", "beta", "gamma", "delta"];
        let mut entries = Vec::new();
        for dir in 0..500 {
            for word in words {
                entries.push(format!("/usr/share/{dir:04}/{word}.gz").into_bytes());
            }
        }
        entries.sort();
        let entries: Vec<(Vec<u8>, u64)> = entries.into_iter().map(|k| (k, 0)).collect();
        let mut theirs = fst::raw::Builder::memory();
        for (key, _) in &entries {
            theirs.add(key).unwrap();
        }
        let theirs = theirs.into_inner().unwrap();
        let ours = build(&entries);
        assert!(ours.as_fst().as_bytes().len() <= theirs.len());
        check(&entries);
    }

    fn key() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        prop_oneof![
            8 => prop::collection::vec(prop::sample::select(vec![0x00u8, 0x01, b'a', b'b', 0xFF]), 0..6),
            1 => prop::collection::vec(any::<u8>(), 0..40),
        ]
    }

    proptest::proptest! {
        /// Whatever the keys and outputs, the fst crate reads back exactly
        /// what went in, by lookup and by stream, and the checksum holds.
        #[test]
        fn the_fst_crate_reads_it_back(
            keys in proptest::collection::btree_map(key(), proptest::prelude::any::<u64>(), 0..300),
            ordinals: bool,
        ) {
            let entries: Vec<(Vec<u8>, u64)> = keys
                .into_iter()
                .enumerate()
                .map(|(i, (k, v))| (k, if ordinals { i as u64 } else { v >> (v % 64) }))
                .collect();
            check(&entries);
        }
    }

    /// A node's fields, with each transition's target as a choice among
    /// the nodes written before it (see `node_round_trip`).
    type NodeFields = (bool, u64, Vec<(u8, u64, u8)>);

    fn node_fields() -> impl proptest::strategy::Strategy<Value = NodeFields> {
        use proptest::prelude::*;
        let output = || {
            prop_oneof![
                2 => Just(0u64),
                1 => any::<u64>().prop_map(|v| v >> (v % 64)),
            ]
        };
        let count = prop_oneof![4 => 0..=3usize, 1 => 30..=70usize, 1 => 250..=256usize];
        let transitions = count.prop_flat_map(move |n| {
            (
                prop::sample::subsequence((0..=255u8).collect::<Vec<_>>(), n),
                prop::collection::vec((output(), any::<u8>()), n),
            )
                .prop_map(|(inputs, rest)| {
                    let fields = inputs.into_iter().zip(rest);
                    fields
                        .map(|(input, (out, target))| (input, out, target))
                        .collect()
                })
        });
        (any::<bool>(), output(), transitions)
    }

    proptest::proptest! {
        /// Every node encoding the writer produces (one transition to the
        /// node just written or elsewhere, with an output or none; many
        /// transitions, with and without the 256-byte index and the count
        /// byte; final or not, with a final output or none) reads back as
        /// written, through the fst crate's reader, ours, and the cache's
        /// comparison. Node shapes a minimal fst of ordinals never has (an
        /// output on a one-transition node) are written too: the format
        /// allows them, and the readers must not depend on their absence.
        #[test]
        fn node_round_trip(nodes in proptest::collection::vec(node_fields(), 1..12)) {
            let mut builder = FstBuilder::new(Vec::new());
            let mut written: Vec<(u64, NodeSpec)> = Vec::new();
            for (is_final, final_output, fields) in nodes {
                let transitions = fields
                    .into_iter()
                    .map(|(input, output, target)| Transition {
                        input,
                        output,
                        addr: match (target, written.last()) {
                            (0..64, _) | (_, None) => EMPTY_ADDRESS,
                            (64..160, Some(&(last, _))) => last,
                            _ => written[usize::from(target) % written.len()].0,
                        },
                    })
                    .collect::<Vec<_>>();
                // A final node without transitions or output is the empty
                // node, which `compile` never writes.
                let is_final = is_final || transitions.is_empty();
                let final_output = if is_final && transitions.is_empty() {
                    final_output.max(1)
                } else if is_final {
                    final_output
                } else {
                    0
                };
                let node = NodeSpec { is_final, final_output, transitions };
                let addr = builder.out.write(&node);
                proptest::prop_assert!(builder.out.equals(addr, &node));
                written.push((addr, node));
            }
            let bytes = builder.finish();
            let fst = fst::raw::Fst::new(bytes).unwrap();
            fst.verify().unwrap();
            let data = fst.as_bytes();
            for (addr, node) in &written {
                let theirs = fst.node(*addr as usize);
                let theirs = NodeSpec {
                    is_final: theirs.is_final(),
                    final_output: theirs.final_output().value(),
                    transitions: theirs
                        .transitions()
                        .map(|t| Transition { input: t.inp, output: t.out.value(), addr: t.addr as u64 })
                        .collect(),
                };
                proptest::prop_assert_eq!(&theirs, node);
                let ours = NodeView::new(data, *addr, common_codes());
                let ours = NodeSpec {
                    is_final: ours.is_final,
                    final_output: ours.final_output,
                    transitions: (0..ours.len).map(|i| ours.transition(data, i)).collect(),
                };
                proptest::prop_assert_eq!(&ours, node);
            }
        }
    }

    #[test]
    fn the_fst_follows_a_prefix() {
        let mut builder = FstBuilder::new(b"header".to_vec());
        for (i, key) in ["a", "ab", "b"].iter().enumerate() {
            builder.insert(key.as_bytes(), i as u64).unwrap();
        }
        let bytes = builder.finish();
        assert_eq!(&bytes[..6], b"header");
        let map = fst::Map::new(bytes[6..].to_vec()).unwrap();
        map.as_fst().verify().unwrap();
        assert_eq!(
            (map.get("a"), map.get("ab"), map.get("b")),
            (Some(0), Some(1), Some(2))
        );
    }

    /// Keys whose last eight bytes are one of `tails` strings: a tail's
    /// nodes are shared only if the cache still holds them when the tail
    /// comes round again, `tails` keys later on average.
    fn recurring_tails(keys: u64, tails: u64) -> Vec<(Vec<u8>, u64)> {
        let tail = |t: u64| -> Vec<u8> {
            let mut x = (t + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            (0..8)
                .map(|_| {
                    x ^= x >> 31;
                    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
                    b'a' + (x % 26) as u8
                })
                .collect()
        };
        (0..keys)
            .map(|i| {
                let mut key = format!("{i:07}/").into_bytes();
                key.extend(tail(i.wrapping_mul(0x2545_f491_4f6c_dd1d) % tails));
                (key, i)
            })
            .collect()
    }

    fn fst_len(builder: FstBuilder, entries: &[(Vec<u8>, u64)]) -> usize {
        let map = build_in(builder, entries);
        assert_eq!(map.len(), entries.len());
        map.as_fst().as_bytes().len()
    }

    /// Keys that each end in one of 400 tails: the 3,600 nodes of the
    /// tails recur 400 keys apart, and are shared only if the cache still
    /// holds them then. A cache of the first size holds them, as one of the
    /// largest size does. (With 256 buckets at first, as before, this fst
    /// was 4.3 times as large: the tails' nodes overflowed their buckets,
    /// each miss wrote a node and its ancestors again, and those evicted
    /// more. A weak hash that fills some buckets would do the same.)
    #[test]
    fn the_first_cache_holds_recurring_tails() {
        let entries = recurring_tails(60_000, 400);
        let growing = fst_len(FstBuilder::new(Vec::new()), &entries);
        let mut largest = FstBuilder::new(Vec::new());
        largest.out.registry = vec![Bucket::default(); MAX_BUCKETS];
        let largest = fst_len(largest, &entries);
        // The same keys' prefixes with tails that seldom repeat.
        let unshared = fst_len(
            FstBuilder::new(Vec::new()),
            &recurring_tails(60_000, 1 << 40),
        );
        assert!(3 * largest < unshared, "{largest} vs {unshared}");
        assert_eq!(growing, largest);
    }

    /// Keys in order with random tails, and their ordinals: an fst about
    /// as large as the keys.
    fn random_keys(n: u64) -> impl Iterator<Item = (Vec<u8>, u64)> {
        let mut x = 1u64;
        (0..n).map(move |i| {
            x = x.wrapping_mul(0x5851_f42d_4c95_7f2d).wrapping_add(1);
            ([i.to_be_bytes(), x.to_le_bytes()].concat(), i)
        })
    }

    /// The cache keeps one bucket per 512 bytes of fst, from its first size
    /// up to 2^17 buckets, and grows no faster: a small builder stays
    /// small. Past a megabyte the output buffer grows by a quarter at a
    /// time, not by doubling: a merge's memory is mostly this buffer.
    #[test]
    fn the_cache_and_the_buffer_grow_with_the_fst() {
        // A megabyte before the fst, which neither counts.
        let mut builder = FstBuilder::new(vec![0; 1 << 20]);
        let mut most_spare: f64 = 0.0;
        let mut reallocations = 0;
        for (i, (key, value)) in random_keys(250_000).enumerate() {
            let before = builder.out.buf.capacity();
            builder.insert(&key, value).unwrap();
            let (len, capacity) = (builder.out.buf.len(), builder.out.buf.capacity());
            reallocations += usize::from(capacity != before);
            if len > 2 * GENTLE_GROWTH_FROM {
                most_spare = most_spare.max(capacity as f64 / len as f64);
            }
            if i % 1000 == 0 {
                let (buckets, written) = (builder.out.registry.len(), builder.bytes_written());
                // Grown only when the fst outgrew half of it ...
                assert!(buckets == MIN_BUCKETS || written > buckets / 2 * BYTES_PER_BUCKET);
                // ... and grown far enough, but for the key just added.
                assert!(
                    written <= buckets * BYTES_PER_BUCKET + 4096,
                    "{written} bytes, {buckets} buckets"
                );
            }
        }
        assert!(builder.bytes_written() > 3 * GENTLE_GROWTH_FROM);
        assert!(builder.out.registry.len() > 2 * MIN_BUCKETS);
        assert!(
            (1.0..1.26).contains(&most_spare),
            "capacity up to {most_spare:.2}× the bytes"
        );
        // A quarter at a time, not a node's worth: from 1 to 5 MiB, 8 steps.
        assert!(reallocations <= 10, "{reallocations} reallocations");
    }

    /// The cache stops growing at 2^17 buckets (8 MiB), whatever the fst.
    #[test]
    fn the_cache_stops_at_its_largest() {
        let mut out = FstBuilder::new(Vec::new()).out;
        out.registry = vec![Bucket::default(); MAX_BUCKETS / 2];
        // 64 MiB of "fst", zeroed pages that are never touched.
        out.buf = vec![0; 2 * MAX_BUCKETS * BYTES_PER_BUCKET];
        out.flush();
        assert_eq!(out.registry.len(), MAX_BUCKETS);
        out.flush();
        assert_eq!(out.registry.len(), MAX_BUCKETS);
    }

    /// Growing the cache keeps every entry, in its order, in the bucket
    /// its tag picks among twice as many.
    #[test]
    fn growing_the_cache_keeps_its_entries() {
        let mut out = FstBuilder::new(Vec::new()).out;
        let buckets = out.registry.len();
        // Three tags in each of the first half of the buckets: two stay
        // together when it grows, one moves.
        let mut entries = Vec::new();
        for j in 0..buckets / 2 {
            for k in 0..3 {
                let (tag, addr) = ((j + k * buckets) as u32, 100 + entries.len() as u64);
                out.promote(j, WAYS - 1, tag, addr);
                entries.push((tag, addr));
            }
        }
        out.grow_registry();
        assert_eq!(out.registry.len(), 2 * buckets);
        let mut found = 0;
        for (index, bucket) in out.registry.iter().enumerate() {
            let live: Vec<(u32, u64)> = (0..WAYS)
                .filter(|&slot| bucket.addrs[slot] != 0)
                .map(|slot| (bucket.tags[slot], u64::from(bucket.addrs[slot])))
                .collect();
            // Most recent first, as they were added.
            let mut expected: Vec<(u32, u64)> = entries
                .iter()
                .copied()
                .filter(|&(tag, _)| tag as usize % (2 * buckets) == index)
                .collect();
            expected.reverse();
            assert_eq!(live, expected, "bucket {index}");
            found += live.len();
        }
        assert_eq!(found, entries.len());
    }

    /// The accounting counts the fst (not the prefix before it) and the
    /// node cache.
    #[test]
    fn bytes_written_and_memory_usage() {
        let mut builder = FstBuilder::new(vec![7; 100]);
        // The fst's header: version and type.
        assert_eq!(builder.bytes_written(), 16);
        let cache = MIN_BUCKETS * size_of::<Bucket>();
        assert_eq!(cache, 256 << 10);
        assert!(builder.memory_usage() >= cache + 116);
        for (key, value) in recurring_tails(1000, 10) {
            builder.insert(&key, value).unwrap();
        }
        let usage = builder.memory_usage();
        assert!(usage >= cache + 100 + builder.bytes_written());
        assert!(usage <= cache + 2 * (100 + builder.bytes_written()) + 4096);
    }

    #[test]
    fn bad_keys_are_refused_and_change_nothing() {
        let mut builder = FstBuilder::new(Vec::new());
        builder.insert(b"b", 1).unwrap();
        assert_eq!(
            builder.insert(b"a", 2),
            Err(KeyError::OutOfOrder {
                previous: b"b".to_vec(),
                got: b"a".to_vec()
            })
        );
        assert_eq!(
            builder.insert(b"b", 3),
            Err(KeyError::Duplicate { got: b"b".to_vec() })
        );
        builder.insert(b"c", 4).unwrap();
        let map = fst::Map::new(builder.finish()).unwrap();
        assert_eq!(map.len(), 2);
        assert_eq!((map.get("b"), map.get("c")), (Some(1), Some(4)));
    }
}
