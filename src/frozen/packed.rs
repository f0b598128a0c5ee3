//! Bit-packed arrays of integers: the storage under every value column.
//!
//! An array of `n` integers is stored frame-of-reference: one `base` (the
//! smallest value) and, for each value, `value - base` in `width` bits, where
//! `width` is the number of bits of `max - min`. Values are laid end to end
//! in little-endian `u64` words, so value `i` occupies bits
//! `i * width .. (i + 1) * width` and may straddle two words.
//!
//! ```text
//! section: | base: u64 | width: u32 | reserved: u32 | words: ceil(n * width / 64) x u64 |
//! ```
//!
//! All integers are little-endian. A width of 0 (all values equal, or no
//! values) stores no words at all: a column of `()` costs 16 bytes in total.
//!
//! The builder streams: it learns the range as values arrive, and when a value
//! falls outside what the current `base`/`width` can hold, it repacks what it
//! has into a roomier layout. Each repack at least doubles the span the layout
//! covers, so there are at most ~128 of them over any input and, in practice,
//! about `log2(max - min)`; the builder's memory stays within one bit per value
//! of the final column (plus one transient copy while repacking). `finish`
//! repacks once more, into the tightest layout, if the working one has slack.

use std::fmt;
use std::io::{self, Write};

use crate::{Error, Result};

/// Bytes before the packed words: base (8), width (4), reserved (4).
const SECTION_HEADER_LEN: usize = 16;

/// Number of bits needed to write `x` (0 for 0).
fn bits_needed(x: u64) -> u32 {
    u64::BITS - x.leading_zeros()
}

/// The mask of the low `width` bits.
fn low_mask(width: u32) -> u64 {
    if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// Number of `u64` words holding `len` values of `width` bits, or `None` if
/// that does not fit in a `usize`.
fn word_count(len: u64, width: u32) -> Option<usize> {
    let bits = u128::from(len) * u128::from(width);
    usize::try_from(bits.div_ceil(64)).ok()
}

/// Reads value `index` of `width` bits (`1..=64`) from words given by `word`.
#[inline]
fn unpack(word: impl Fn(usize) -> u64, index: u64, width: u32) -> u64 {
    let bit = index * u64::from(width);
    // `index < len` and `len * width` fits the section (checked when opening),
    // so the word index fits a usize.
    let first = (bit / 64) as usize;
    let shift = (bit % 64) as u32;
    let low = word(first) >> shift;
    let value = if shift + width > 64 {
        // Straddles two words; `shift > 0` here, so the shift below is < 64.
        low | (word(first + 1) << (64 - shift))
    } else {
        low
    };
    value & low_mask(width)
}

/// Writes `delta` (already known to fit `width` bits, `width >= 1`) as value
/// `index` into `words`, which are zero past the last value written.
#[inline]
fn pack(words: &mut [u64], index: u64, width: u32, delta: u64) {
    let bit = index * u64::from(width);
    let first = (bit / 64) as usize;
    let shift = (bit % 64) as u32;
    words[first] |= delta << shift;
    if shift + width > 64 {
        words[first + 1] |= delta >> (64 - shift);
    }
}

/// A growing bit-packed array; see the module documentation.
///
/// Invariant: every value pushed so far is `base + d` for a `d` stored in
/// `width` bits, and `min`/`max` are the exact extremes (when `len > 0`).
#[derive(Default)]
pub struct PackedBuilder {
    words: Vec<u64>,
    len: u64,
    base: u64,
    width: u32,
    min: u64,
    max: u64,
}

impl fmt::Debug for PackedBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PackedBuilder")
            .field("len", &self.len)
            .field("base", &self.base)
            .field("width", &self.width)
            .finish_non_exhaustive()
    }
}

impl PackedBuilder {
    /// Appends `value`.
    pub(crate) fn push(&mut self, value: u64) {
        if self.len == 0 {
            self.base = value;
            self.min = value;
            self.max = value;
        }
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        if value < self.base || bits_needed(value - self.base) > self.width {
            self.grow_for(value);
        }
        let index = self.len;
        self.len += 1;
        if self.width > 0 {
            let needed = word_count(self.len, self.width).expect("a column in memory fits a usize");
            if needed > self.words.len() {
                self.words.push(0);
            }
            pack(&mut self.words, index, self.width, value - self.base);
        }
    }

    /// Repacks into a layout that holds `value` (already folded into
    /// `min`/`max`) and everything pushed before it.
    #[cold]
    fn grow_for(&mut self, value: u64) {
        let base = if value < self.base {
            // Leave as much room below as the range is wide, so that a
            // descending run repacks O(log range) times rather than per value.
            self.min.saturating_sub(self.max - self.min)
        } else {
            self.base
        };
        let width = bits_needed(self.max - base);
        self.relayout(base, width);
    }

    /// Re-encodes the values pushed so far with a new base and width, which
    /// must hold all of them.
    fn relayout(&mut self, base: u64, width: u32) {
        let count = word_count(self.len, width).expect("a column in memory fits a usize");
        let mut words = vec![0u64; count];
        if width > 0 {
            for index in 0..self.len {
                pack(&mut words, index, width, self.get(index) - base);
            }
        }
        self.words = words;
        self.base = base;
        self.width = width;
    }

    /// Value `index` (< len) as stored so far.
    fn get(&self, index: u64) -> u64 {
        if self.width == 0 {
            return self.base;
        }
        self.base + unpack(|i| self.words[i], index, self.width)
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.words.capacity() * size_of::<u64>()
    }

    /// Repacks to the tightest layout (`base = min`, `width = bits(max - min)`)
    /// and writes the section; returns the number of bytes written.
    pub(crate) fn write_to<W: Write>(mut self, out: &mut W) -> io::Result<u64> {
        if self.len > 0 {
            let width = bits_needed(self.max - self.min);
            if (self.base, self.width) != (self.min, width) {
                self.relayout(self.min, width);
            }
        }
        let mut header = [0u8; SECTION_HEADER_LEN];
        header[..8].copy_from_slice(&self.base.to_le_bytes());
        header[8..12].copy_from_slice(&self.width.to_le_bytes());
        out.write_all(&header)?;
        // Convert in chunks so a large column does not need a second,
        // byte-sized copy of itself.
        let mut chunk = Vec::with_capacity(8 * 1024);
        for words in self.words.chunks(1024) {
            chunk.clear();
            for word in words {
                chunk.extend_from_slice(&word.to_le_bytes());
            }
            out.write_all(&chunk)?;
        }
        Ok((SECTION_HEADER_LEN + self.words.len() * size_of::<u64>()) as u64)
    }
}

/// A bit-packed array inside a byte section; holds only its parameters, the
/// bytes are passed to every call (they live in the layer's storage).
#[derive(Clone, Copy, Debug)]
pub struct PackedReader {
    base: u64,
    width: u32,
    len: u64,
}

impl PackedReader {
    /// Reads the parameters of a section holding `len` values and checks that
    /// the section is exactly as long as they say.
    pub(crate) fn open(section: &[u8], len: u64) -> Result<PackedReader> {
        let corrupt = |reason: String| Error::Corrupt { reason };
        if section.len() < SECTION_HEADER_LEN {
            return Err(corrupt(format!(
                "packed integer section of {} bytes is shorter than its {SECTION_HEADER_LEN}-byte header",
                section.len()
            )));
        }
        let base = read_u64(section, 0);
        let width = u32::from_le_bytes(section[8..12].try_into().expect("4 bytes"));
        if width > 64 {
            return Err(corrupt(format!(
                "packed integer width {width} is more than 64 bits"
            )));
        }
        let expected = word_count(len, width)
            .and_then(|words| words.checked_mul(size_of::<u64>()))
            .and_then(|bytes| bytes.checked_add(SECTION_HEADER_LEN));
        if expected != Some(section.len()) {
            return Err(corrupt(format!(
                "packed integer section is {} bytes, but {len} values of {width} bits need {}",
                section.len(),
                expected.map_or_else(|| "more than fits in memory".to_owned(), |n| n.to_string())
            )));
        }
        Ok(PackedReader { base, width, len })
    }

    /// Value `index`, which must be `< len` (checked by the callers).
    #[inline]
    pub(crate) fn get(&self, section: &[u8], index: u64) -> u64 {
        debug_assert!(index < self.len);
        if self.width == 0 {
            return self.base;
        }
        let words = &section[SECTION_HEADER_LEN..];
        // Wrapping: a valid column never wraps (deltas are at most max - min),
        // and a corrupt one must not panic.
        self.base
            .wrapping_add(unpack(|i| read_u64(words, i * 8), index, self.width))
    }

    /// A hint to load the word holding value `index` (any `index`: a
    /// prefetch never faults).
    #[inline]
    pub(crate) fn prefetch(&self, section: &[u8], index: u64) {
        if self.width == 0 {
            // No words: `get` reads nothing.
            return;
        }
        let word = (index.wrapping_mul(u64::from(self.width)) / 64) as usize;
        let at = (section.as_ptr())
            .wrapping_add(SECTION_HEADER_LEN)
            .wrapping_add(word.wrapping_mul(8));
        crate::art::raw::prefetch(at);
    }

    /// Number of values.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Whether every value is the same (`base`): the section then holds no
    /// bits per value, so its length says nothing about how many there are.
    pub(crate) fn is_constant(&self) -> bool {
        self.width == 0
    }
}

/// The little-endian `u64` at byte `offset` of `bytes`.
#[inline]
pub(crate) fn read_u64(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset..offset + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(values: &[u64]) -> (Vec<u64>, u32) {
        let mut builder = PackedBuilder::default();
        for &v in values {
            builder.push(v);
        }
        assert_eq!(builder.len, values.len() as u64);
        let mut section = Vec::new();
        let written = builder.write_to(&mut section).unwrap();
        assert_eq!(written, section.len() as u64);
        let reader = PackedReader::open(&section, values.len() as u64).unwrap();
        let got = (0..reader.len()).map(|i| reader.get(&section, i)).collect();
        (got, reader.width)
    }

    #[test]
    fn round_trips_and_is_tight() {
        let cases: Vec<(Vec<u64>, u32)> = vec![
            (vec![], 0),
            (vec![7], 0),
            (vec![5, 5, 5], 0),
            (vec![0, 1, 2, 3], 2),
            (vec![1000, 999, 998, 990, 1001], 4),
            (vec![u64::MAX, 0, u64::MAX / 2], 64),
            (vec![u64::MAX - 3, u64::MAX], 2),
            ((0..1000).rev().collect(), 10),
            ((0..1000).map(|i| i * 0x1234_5678_9abc).collect(), 55),
        ];
        for (values, width) in cases {
            let (got, got_width) = round_trip(&values);
            assert_eq!(got, values);
            assert_eq!(
                got_width,
                width,
                "width for {} values from {:?}",
                values.len(),
                values.first()
            );
        }
    }

    #[test]
    fn descending_input_repacks_logarithmically() {
        // Counts repacks indirectly: the working width never exceeds the
        // final width by more than one bit, whatever the order.
        let mut builder = PackedBuilder::default();
        for v in (0..100_000u64).rev() {
            builder.push(v + 1_000_000);
            assert!(builder.width <= bits_needed(builder.max - builder.min) + 1);
        }
    }

    #[test]
    fn debug_shows_the_working_layout() {
        let mut builder = PackedBuilder::default();
        for v in [7, 5, 9] {
            builder.push(v);
        }
        // 5 came below the first base, so the base moved down by the range
        // seen so far (7 - 5) to leave room below.
        assert_eq!(
            format!("{builder:?}"),
            "PackedBuilder { len: 3, base: 3, width: 3, .. }"
        );
    }

    #[test]
    fn rejects_sections_of_the_wrong_length() {
        let mut section = Vec::new();
        let mut builder = PackedBuilder::default();
        for v in 0..100 {
            builder.push(v);
        }
        builder.write_to(&mut section).unwrap();
        assert!(PackedReader::open(&section, 100).is_ok());
        assert!(PackedReader::open(&section, 101).is_err());
        assert!(PackedReader::open(&section[..section.len() - 1], 100).is_err());
        assert!(PackedReader::open(&section[..10], 0).is_err());
        let mut wide = section.clone();
        wide[8] = 65;
        assert!(PackedReader::open(&wide, 100).is_err());
        assert!(PackedReader::open(&section, u64::MAX).is_err());
    }
}
