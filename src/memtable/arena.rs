//! An append-only byte arena: entry bytes are copied into large chunks and
//! named by a 64-bit reference, so an entry costs no allocation of its own.
//!
//! ```text
//!  Ref (u64):  | chunk index: 32 bits | byte offset in the chunk: 32 bits |
//! ```
//!
//! Invariants:
//! 1. A chunk is a `Vec<u8>` whose capacity is fixed when it is created; it is
//!    only ever appended to within that capacity, so it never reallocates and
//!    its bytes never move. (Nothing here relies on that for soundness — all
//!    access goes through safe slicing — but it keeps appends O(1).)
//! 2. A record never straddles two chunks: a record longer than the room
//!    left starts a new chunk, sized for it when it is larger than
//!    [`MAX_CHUNK`].
//! 3. Chunk sizes double from the first chunk's ([`FIRST_CHUNK`], or less
//!    for the arenas of a sharded memtable) to [`MAX_CHUNK`], so a small
//!    memtable holds kilobytes, and a large one wastes at most the tail of its
//!    last chunk plus the few bytes at the end of each full chunk that did not
//!    fit the next record.
//!
//! The arena is not synchronised: its owners keep it behind their own lock
//! (the memtables that use it are `RwLock`-protected).

/// Bytes in the first chunk.
pub(crate) const FIRST_CHUNK: usize = 4 << 10;
/// Bytes in a full-size chunk (a jemalloc size class: no rounding).
const MAX_CHUNK: usize = 256 << 10;

/// Names a position in the arena: `chunk << 32 | offset`.
pub(crate) type Ref = u64;

/// An append-only sequence of byte chunks.
#[derive(Debug)]
pub(crate) struct Arena {
    chunks: Vec<Vec<u8>>,
    /// Bytes held by the chunks (their capacities).
    capacity: usize,
    /// Bytes in the first chunk: [`FIRST_CHUNK`] unless made smaller.
    first_chunk: usize,
}

impl Default for Arena {
    fn default() -> Self {
        Arena::with_first_chunk(FIRST_CHUNK)
    }
}

#[inline]
fn split(r: Ref) -> (usize, usize) {
    ((r >> 32) as usize, (r & 0xFFFF_FFFF) as usize)
}

impl Arena {
    /// An empty arena whose first chunk will hold `bytes` (at least 64, at
    /// most [`MAX_CHUNK`]): smaller for the many arenas of a sharded
    /// memtable, which would otherwise hold a first chunk each.
    pub(crate) fn with_first_chunk(bytes: usize) -> Self {
        Arena {
            chunks: Vec::new(),
            capacity: 0,
            first_chunk: bytes.clamp(64, MAX_CHUNK),
        }
    }

    /// Bytes the first chunk holds (or will).
    #[cfg(test)]
    pub(crate) fn first_chunk(&self) -> usize {
        self.first_chunk
    }

    /// Copies `parts`, concatenated, into the arena as one record.
    ///
    /// # Panics
    /// If the record is 4 GiB or longer.
    pub(crate) fn append(&mut self, parts: &[&[u8]]) -> Ref {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        assert!(
            u32::try_from(len).is_ok(),
            "memtable entry of {len} bytes: entries must be under 4 GiB"
        );
        let fits = self
            .chunks
            .last()
            .is_some_and(|c| c.capacity() - c.len() >= len);
        if !fits {
            let size = match self.chunks.last() {
                None => self.first_chunk,
                Some(c) => (c.capacity() * 2).min(MAX_CHUNK),
            };
            // A chunk left empty by `rollback`, too small for this record,
            // is replaced rather than left behind.
            if self.chunks.last().is_some_and(|c| c.is_empty()) {
                let c = self.chunks.pop().expect("checked non-empty");
                self.capacity -= c.capacity();
            }
            let chunk = Vec::with_capacity(size.max(len));
            self.capacity += chunk.capacity();
            self.chunks.push(chunk);
        }
        let index = self.chunks.len() - 1;
        let chunk = &mut self.chunks[index];
        let offset = chunk.len();
        for p in parts {
            chunk.extend_from_slice(p);
        }
        ((index as u64) << 32) | offset as u64
    }

    /// The bytes from `r` to the end of its chunk (a record parses itself
    /// from the front of this).
    #[inline]
    pub(crate) fn from(&self, r: Ref) -> &[u8] {
        let (chunk, offset) = split(r);
        &self.chunks[chunk][offset..]
    }

    /// Overwrites bytes at `r` (which must lie inside one written record).
    pub(crate) fn patch(&mut self, r: Ref, bytes: &[u8]) {
        let (chunk, offset) = split(r);
        self.chunks[chunk][offset..offset + bytes.len()].copy_from_slice(bytes);
    }

    /// Removes the record at `r`, which must be the last one appended, so
    /// that the next append reuses its space.
    pub(crate) fn rollback(&mut self, r: Ref) {
        let (chunk, offset) = split(r);
        debug_assert_eq!(chunk, self.chunks.len() - 1, "only the last record");
        self.chunks[chunk].truncate(offset);
    }

    /// Heap bytes held: every chunk's capacity, and the chunk table.
    pub(crate) fn memory_usage(&self) -> usize {
        self.capacity + self.chunks.capacity() * size_of::<Vec<u8>>()
    }
}

/// Appends `x` to `out` as LEB128 (7 bits per byte, low bits first).
#[inline]
pub(crate) fn put_varint(out: &mut [u8; 5], mut x: u32) -> &[u8] {
    let mut n = 0;
    while x >= 0x80 {
        out[n] = (x as u8) | 0x80;
        x >>= 7;
        n += 1;
    }
    out[n] = x as u8;
    &out[..=n]
}

/// Reads a LEB128 `u32` from the front of `bytes`: the value and its length.
#[inline]
pub(crate) fn get_varint(bytes: &[u8]) -> (u32, usize) {
    let (mut x, mut shift) = (0u32, 0);
    for (i, &b) in bytes.iter().enumerate().take(5) {
        x |= u32::from(b & 0x7F) << shift;
        if b < 0x80 {
            return (x, i + 1);
        }
        shift += 7;
    }
    panic!("corrupt memtable arena: unterminated length")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_across_chunks() {
        let mut a = Arena::default();
        let mut refs = Vec::new();
        for i in 0..2000u32 {
            let body = vec![i as u8; (i % 300) as usize];
            refs.push((a.append(&[&i.to_le_bytes(), &body]), body));
        }
        // A record larger than a full chunk gets a chunk of its own.
        let big = vec![7u8; MAX_CHUNK + 10];
        let rb = a.append(&[&big]);
        for (i, (r, body)) in refs.iter().enumerate() {
            let b = a.from(*r);
            assert_eq!(&b[..4], &(i as u32).to_le_bytes());
            assert_eq!(&b[4..4 + body.len()], &body[..]);
        }
        assert_eq!(&a.from(rb)[..big.len()], &big[..]);
        assert!(a.memory_usage() >= 2000 * 150 + big.len());
    }

    #[test]
    fn rollback_reuses_space_and_patch_overwrites() {
        let mut a = Arena::default();
        let r1 = a.append(&[b"abc"]);
        let r2 = a.append(&[b"def"]);
        a.rollback(r2);
        let r3 = a.append(&[b"xyz!"]);
        assert_eq!(r2, r3);
        a.patch(r1 + 1, b"B");
        assert_eq!(&a.from(r1)[..7], b"aBcxyz!");
    }

    /// The sum the arena keeps, computed afresh.
    fn held(a: &Arena) -> usize {
        let chunks: usize = a.chunks.iter().map(|c| c.capacity()).sum();
        chunks + a.chunks.capacity() * size_of::<Vec<u8>>()
    }

    #[test]
    fn chunks_double_up_to_the_full_size() {
        let mut a = Arena::default();
        assert_eq!(a.memory_usage(), 0);
        while a.chunks.len() < 10 {
            a.append(&[&[1; 1000]]);
            assert_eq!(a.memory_usage(), held(&a));
        }
        let sizes: Vec<usize> = a.chunks.iter().map(|c| c.capacity()).collect();
        let kib = |k: usize| k << 10;
        let expected = [4, 8, 16, 32, 64, 128, 256, 256, 256, 256].map(kib);
        assert_eq!(sizes, expected);
        // Each full chunk is left with less room than a record.
        for c in &a.chunks[..9] {
            assert!(c.capacity() - c.len() < 1000);
        }
    }

    #[test]
    fn a_smaller_first_chunk_doubles_from_its_size() {
        let mut a = Arena::with_first_chunk(256);
        while a.chunks.len() < 6 {
            a.append(&[&[1; 100]]);
        }
        let sizes: Vec<usize> = a.chunks.iter().map(|c| c.capacity()).collect();
        assert_eq!(sizes, [256, 512, 1024, 2048, 4096, 8192]);
        assert_eq!(Arena::with_first_chunk(0).first_chunk, 64);
        assert_eq!(Arena::with_first_chunk(usize::MAX).first_chunk, MAX_CHUNK);
    }

    #[test]
    fn a_chunk_emptied_by_rollback_is_replaced_and_uncounted() {
        let mut a = Arena::default();
        a.append(&[&[1; 4000]]);
        // Opens the second chunk (8 KiB), which the rollback empties.
        let r = a.append(&[&[2; 100]]);
        a.rollback(r);
        assert_eq!(a.chunks.len(), 2);
        // Too large for it: a chunk of the record's size takes its place.
        let r = a.append(&[&[3; 20_000]]);
        assert_eq!(a.chunks.len(), 2);
        assert_eq!(a.chunks[1].capacity(), 20_000);
        assert_eq!(a.memory_usage(), held(&a));
        assert_eq!(&a.from(r)[..3], &[3; 3]);
    }

    #[test]
    fn varints_round_trip() {
        let mut buf = [0u8; 5];
        for x in [0, 1, 127, 128, 300, 16_383, 16_384, u32::MAX] {
            let enc = put_varint(&mut buf, x).to_vec();
            assert_eq!(get_varint(&enc), (x, enc.len()));
        }
    }
}
