//! Value columns: a frozen layer's values, stored apart from its keys and
//! indexed by key ordinal (the fst maps each key to its position in key
//! order, `0..len`).
//!
//! Two column layouts exist, and every value type picks one through
//! [`FrozenValue::Column`]:
//!
//! * [`IntColumn`]: integers, bit-packed frame-of-reference (see `packed.rs`):
//!   each value takes `bits(max - min)` bits. `()` takes 0 bits, a `bool` 1.
//! * [`BytesColumn`]: byte strings, as the packed end offset of each value
//!   followed by all values' bytes end to end:
//!
//! ```text
//! section: | offsets_len: u64 | packed end offsets (offsets_len bytes) | blob |
//! ```
//!
//! Value `i` is `blob[end(i - 1)..end(i)]` (with `end(-1) = 0`).

use std::fmt;
use std::io::{self, Write};

use super::packed::{PackedBuilder, PackedReader, read_u64};
use crate::{Error, Result};

/// A value type that a [`FrozenLayer`](super::FrozenLayer) can store.
///
/// A value is turned into the [encoded](ValueColumn::Encoded) form of its
/// column on the way in and rebuilt from it on the way out. Because a packed
/// column holds no `V` in memory, lookups return values **by value**, freshly
/// decoded, rather than `&V`.
///
/// Implemented for the unsigned and signed integers up to 64 bits (`usize`
/// and `isize` too), `bool`, `()` (a set: the column takes no space),
/// `Vec<u8>` / `Box<[u8]>` and `String` / `Box<str>`. Your
/// own types can be stored by mapping them onto one of the two columns:
///
/// ```
/// use memkv::frozen::{FrozenValue, IntColumn};
///
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// struct FileId(u32);
///
/// impl FrozenValue for FileId {
///     const TYPE_NAME: &'static str = "FileId";
///     type Column = IntColumn;
///     fn encode(&self) -> u64 {
///         u64::from(self.0)
///     }
///     fn decode(encoded: u64) -> Self {
///         FileId(encoded as u32)
///     }
/// }
///
/// let layer = memkv::FrozenLayer::from_sorted_iter([("a", FileId(7)), ("b", FileId(9))])?;
/// assert_eq!(layer.get("b"), Some(FileId(9)));
/// # Ok::<(), memkv::Error>(())
/// ```
pub trait FrozenValue: Sized {
    /// The name recorded in saved files, so that a file of one value type is
    /// not opened as another ([`Error::ValueTypeMismatch`]). At most 16 bytes;
    /// two types share a name exactly when their encodings are interchangeable
    /// (as `Vec<u8>` and `Box<[u8]>` do).
    const TYPE_NAME: &'static str;

    /// The column layout that stores this type.
    type Column: ValueColumn;

    /// Turns a value into its stored form.
    fn encode(&self) -> <Self::Column as ValueColumn>::Encoded<'_>;

    /// Rebuilds a value from its stored form.
    ///
    /// Only forms produced by [`encode`](Self::encode) reach this, unless a
    /// corrupt file was opened without verification; it must not panic then
    /// either (truncating is fine: the value is garbage anyway).
    fn decode(encoded: <Self::Column as ValueColumn>::Encoded<'_>) -> Self;
}

/// The stored form of a `V`, borrowed from a layer: `&[u8]` for byte strings
/// and strings, `u64` for integers, `bool` and `()`. What [`FrozenLayer::get_encoded`] and
/// [`Iter::next_encoded`] hand out instead of a decoded copy.
///
/// [`FrozenLayer::get_encoded`]: super::FrozenLayer::get_encoded
/// [`Iter::next_encoded`]: super::Iter::next_encoded
pub type Encoded<'a, V> = <<V as FrozenValue>::Column as ValueColumn>::Encoded<'a>;

mod sealed {
    /// Keeps [`ValueColumn`](super::ValueColumn) implemented only here: the
    /// file format knows exactly these layouts.
    pub trait Sealed {}
    impl Sealed for super::IntColumn {}
    impl Sealed for super::BytesColumn {}
}

/// A column layout: [`IntColumn`] or [`BytesColumn`]. Sealed.
///
/// The hidden items are the layout's machinery, used by the layer and its
/// builder; they are not part of the stable API.
pub trait ValueColumn: sealed::Sealed {
    /// What a value is stored as: `u64` for [`IntColumn`], `&[u8]` for
    /// [`BytesColumn`].
    type Encoded<'a>;

    /// Accumulates a column while a layer is built. `Send + Sync` so that a
    /// `FrozenLayerBuilder<V>` of any value type can move between threads.
    #[doc(hidden)]
    type Builder: fmt::Debug + Default + Send + Sync;

    /// The parameters of a stored column (not its bytes, which stay in the
    /// layer's storage). `Send + Sync` so that a `FrozenLayer<V>` of any
    /// value type can be shared between threads (as `HybridMap` does).
    #[doc(hidden)]
    type Reader: Clone + fmt::Debug + Send + Sync;

    /// Appends the value of the next key.
    #[doc(hidden)]
    fn push(builder: &mut Self::Builder, value: Self::Encoded<'_>);

    /// Heap bytes held by a builder.
    #[doc(hidden)]
    fn builder_heap_bytes(builder: &Self::Builder) -> usize;

    /// Writes the finished column section; returns its length in bytes.
    #[doc(hidden)]
    fn write_column<W: Write>(builder: Self::Builder, out: &mut W) -> io::Result<u64>;

    /// Reads a column section of `count` values, checking its shape (O(1)).
    #[doc(hidden)]
    fn open(section: &[u8], count: u64) -> Result<Self::Reader>;

    /// Checks a column's contents in full (O(n)); `open` must have succeeded.
    #[doc(hidden)]
    fn verify(reader: &Self::Reader, section: &[u8]) -> Result<()>;

    /// The stored form of value `ordinal` (< count).
    #[doc(hidden)]
    fn get<'a>(reader: &Self::Reader, section: &'a [u8], ordinal: u64) -> Self::Encoded<'a>;

    /// A hint to load where value `ordinal` is read from (any `ordinal`).
    #[doc(hidden)]
    fn prefetch(reader: &Self::Reader, section: &[u8], ordinal: u64);
}

/// The integer column: values as `u64`, bit-packed to the width of their
/// range (`bits(max - min)` bits each, plus 16 bytes per column).
///
/// An encoding should preserve order where it can (as `i64`'s does, by
/// flipping the sign bit), so that values close to each other pack tightly.
#[derive(Debug)]
pub enum IntColumn {}

/// The byte-string column: one packed end offset per value (of
/// `bits(total bytes)` bits) and the values' bytes end to end.
#[derive(Debug)]
pub enum BytesColumn {}

impl ValueColumn for IntColumn {
    type Encoded<'a> = u64;
    type Builder = PackedBuilder;
    type Reader = PackedReader;

    fn push(builder: &mut PackedBuilder, value: u64) {
        builder.push(value);
    }

    fn builder_heap_bytes(builder: &PackedBuilder) -> usize {
        builder.heap_bytes()
    }

    fn write_column<W: Write>(builder: PackedBuilder, out: &mut W) -> io::Result<u64> {
        builder.write_to(out)
    }

    fn open(section: &[u8], count: u64) -> Result<PackedReader> {
        PackedReader::open(section, count)
    }

    fn verify(_reader: &PackedReader, _section: &[u8]) -> Result<()> {
        // Every bit pattern of the right length is a valid packed column.
        Ok(())
    }

    #[inline]
    fn get(reader: &PackedReader, section: &[u8], ordinal: u64) -> u64 {
        reader.get(section, ordinal)
    }

    #[inline]
    fn prefetch(reader: &PackedReader, section: &[u8], ordinal: u64) {
        reader.prefetch(section, ordinal);
    }
}

/// Builds a [`BytesColumn`]: end offsets and the bytes themselves.
#[derive(Debug, Default)]
pub struct BytesBuilder {
    ends: PackedBuilder,
    blob: Vec<u8>,
}

/// A stored [`BytesColumn`]: where its offsets and blob start.
#[derive(Clone, Debug)]
pub struct BytesReader {
    ends: PackedReader,
    /// Byte range of the packed offsets within the column section.
    ends_start: usize,
    ends_end: usize,
}

impl BytesReader {
    fn ends<'a>(&self, section: &'a [u8]) -> &'a [u8] {
        &section[self.ends_start..self.ends_end]
    }
}

impl ValueColumn for BytesColumn {
    type Encoded<'a> = &'a [u8];
    type Builder = BytesBuilder;
    type Reader = BytesReader;

    fn push(builder: &mut BytesBuilder, value: &[u8]) {
        builder.blob.extend_from_slice(value);
        builder.ends.push(builder.blob.len() as u64);
    }

    fn builder_heap_bytes(builder: &BytesBuilder) -> usize {
        builder.ends.heap_bytes() + builder.blob.capacity()
    }

    fn write_column<W: Write>(builder: BytesBuilder, out: &mut W) -> io::Result<u64> {
        // The offsets' length goes first, so write them to a buffer; they are
        // small next to the blob.
        let mut ends = Vec::new();
        builder.ends.write_to(&mut ends)?;
        out.write_all(&(ends.len() as u64).to_le_bytes())?;
        out.write_all(&ends)?;
        out.write_all(&builder.blob)?;
        Ok((8 + ends.len() + builder.blob.len()) as u64)
    }

    fn open(section: &[u8], count: u64) -> Result<BytesReader> {
        if section.len() < 8 {
            return Err(Error::Corrupt {
                reason: format!(
                    "byte-string column of {} bytes has no offsets length",
                    section.len()
                ),
            });
        }
        let ends_len = read_u64(section, 0);
        let ends_end = usize::try_from(ends_len)
            .ok()
            .and_then(|len| len.checked_add(8))
            .filter(|&end| end <= section.len())
            .ok_or_else(|| Error::Corrupt {
                reason: format!(
                    "byte-string column claims {ends_len} bytes of offsets but is {} bytes long",
                    section.len()
                ),
            })?;
        let ends = PackedReader::open(&section[8..ends_end], count)?;
        Ok(BytesReader {
            ends,
            ends_start: 8,
            ends_end,
        })
    }

    fn verify(reader: &BytesReader, section: &[u8]) -> Result<()> {
        let ends = reader.ends(section);
        let blob_len = (section.len() - reader.ends_end) as u64;
        let mut previous = 0;
        // Equal ends take no bits, so a few bytes can claim 2^64 of them:
        // checking one checks them all, where walking them would not end.
        let distinct = match reader.ends.is_constant() {
            true => reader.ends.len().min(1),
            false => reader.ends.len(),
        };
        for ordinal in 0..distinct {
            let end = reader.ends.get(ends, ordinal);
            if end < previous || end > blob_len {
                return Err(Error::Corrupt {
                    reason: format!(
                        "byte-string value {ordinal} ends at {end}, outside {previous}..={blob_len}"
                    ),
                });
            }
            previous = end;
        }
        if previous != blob_len {
            return Err(Error::Corrupt {
                reason: format!(
                    "byte-string values end at {previous}, but the blob is {blob_len} bytes"
                ),
            });
        }
        Ok(())
    }

    #[inline]
    fn get<'a>(reader: &BytesReader, section: &'a [u8], ordinal: u64) -> &'a [u8] {
        let ends = reader.ends(section);
        let end = reader.ends.get(ends, ordinal);
        let start = if ordinal == 0 {
            0
        } else {
            reader.ends.get(ends, ordinal - 1)
        };
        let blob = &section[reader.ends_end..];
        // Offsets are checked by `verify`; on an unverified corrupt file, an
        // empty value beats a panic.
        usize::try_from(start)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(start, end)| blob.get(start..end))
            .unwrap_or_default()
    }

    #[inline]
    fn prefetch(reader: &BytesReader, section: &[u8], ordinal: u64) {
        // The end offsets only: where the bytes are is known only from them.
        reader.ends.prefetch(reader.ends(section), ordinal);
    }
}

/// Unsigned integers: stored as is.
macro_rules! unsigned_value {
    ($($ty:ty),*) => {$(
        impl FrozenValue for $ty {
            const TYPE_NAME: &'static str = stringify!($ty);
            type Column = IntColumn;
            #[inline]
            fn encode(&self) -> u64 {
                u64::from(*self)
            }
            #[inline]
            fn decode(encoded: u64) -> Self {
                // Only a corrupt file holds a wider value; truncate it.
                encoded as $ty
            }
        }
    )*};
}
unsigned_value!(u8, u16, u32, u64);

// `usize` and `isize` go through the 64-bit encodings: no target has wider.
const _: () = assert!(usize::BITS <= u64::BITS);

/// Named with its width (`usize64` where `usize` has 64 bits): a file of
/// `usize` values saved on a 64-bit target may hold values a 32-bit one
/// cannot represent, so it does not open there
/// ([`Error::ValueTypeMismatch`]) rather than truncate them. Store `u64` for
/// files that move between targets.
impl FrozenValue for usize {
    const TYPE_NAME: &'static str = match usize::BITS {
        64 => "usize64",
        32 => "usize32",
        _ => "usize16",
    };
    type Column = IntColumn;
    #[inline]
    fn encode(&self) -> u64 {
        *self as u64
    }
    #[inline]
    fn decode(encoded: u64) -> Self {
        // Only a corrupt file holds a wider value; truncate it.
        encoded as usize
    }
}

/// Signed integers: the sign bit flipped, which maps them onto `u64` in
/// order, so that values around zero pack as tightly as small unsigned ones.
macro_rules! signed_value {
    ($($ty:ty),*) => {$(
        impl FrozenValue for $ty {
            const TYPE_NAME: &'static str = stringify!($ty);
            type Column = IntColumn;
            #[inline]
            fn encode(&self) -> u64 {
                (i64::from(*self) as u64) ^ (1 << 63)
            }
            #[inline]
            fn decode(encoded: u64) -> Self {
                ((encoded ^ (1 << 63)) as i64) as $ty
            }
        }
    )*};
}
signed_value!(i8, i16, i32, i64);

/// As `i64`, under a name with its width (see `usize`).
impl FrozenValue for isize {
    const TYPE_NAME: &'static str = match isize::BITS {
        64 => "isize64",
        32 => "isize32",
        _ => "isize16",
    };
    type Column = IntColumn;
    #[inline]
    fn encode(&self) -> u64 {
        (*self as i64).encode()
    }
    #[inline]
    fn decode(encoded: u64) -> Self {
        i64::decode(encoded) as isize
    }
}

impl FrozenValue for bool {
    const TYPE_NAME: &'static str = "bool";
    type Column = IntColumn;
    #[inline]
    fn encode(&self) -> u64 {
        u64::from(*self)
    }
    #[inline]
    fn decode(encoded: u64) -> Self {
        encoded != 0
    }
}

/// `()` makes a layer a set: the column is 16 bytes whatever the key count.
impl FrozenValue for () {
    const TYPE_NAME: &'static str = "()";
    type Column = IntColumn;
    #[inline]
    fn encode(&self) -> u64 {
        0
    }
    #[inline]
    fn decode(_: u64) -> Self {}
}

impl FrozenValue for Vec<u8> {
    const TYPE_NAME: &'static str = "bytes";
    type Column = BytesColumn;
    #[inline]
    fn encode(&self) -> &[u8] {
        self
    }
    #[inline]
    fn decode(encoded: &[u8]) -> Self {
        encoded.to_vec()
    }
}

impl FrozenValue for Box<[u8]> {
    const TYPE_NAME: &'static str = "bytes";
    type Column = BytesColumn;
    #[inline]
    fn encode(&self) -> &[u8] {
        self
    }
    #[inline]
    fn decode(encoded: &[u8]) -> Self {
        encoded.into()
    }
}

/// Stored as its UTF-8 bytes, under a name of its own: a file of byte
/// strings need not hold UTF-8, so it does not open as one of strings.
impl FrozenValue for String {
    const TYPE_NAME: &'static str = "string";
    type Column = BytesColumn;
    #[inline]
    fn encode(&self) -> &[u8] {
        self.as_bytes()
    }
    #[inline]
    fn decode(encoded: &[u8]) -> Self {
        // Only a corrupt file holds invalid UTF-8; replace it, never panic.
        String::from_utf8_lossy(encoded).into_owned()
    }
}

impl FrozenValue for Box<str> {
    const TYPE_NAME: &'static str = "string";
    type Column = BytesColumn;
    #[inline]
    fn encode(&self) -> &[u8] {
        self.as_bytes()
    }
    #[inline]
    fn decode(encoded: &[u8]) -> Self {
        String::decode(encoded).into_boxed_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column_of<V: FrozenValue>(values: &[V]) -> (Vec<u8>, <V::Column as ValueColumn>::Reader) {
        let mut builder = <V::Column as ValueColumn>::Builder::default();
        for v in values {
            V::Column::push(&mut builder, v.encode());
        }
        let mut section = Vec::new();
        let len = V::Column::write_column(builder, &mut section).unwrap();
        assert_eq!(len, section.len() as u64);
        let reader = V::Column::open(&section, values.len() as u64).unwrap();
        V::Column::verify(&reader, &section).unwrap();
        (section, reader)
    }

    fn round_trip<V: FrozenValue + PartialEq + fmt::Debug>(values: &[V]) -> usize {
        let (section, reader) = column_of(values);
        for (ordinal, v) in values.iter().enumerate() {
            let got = V::decode(V::Column::get(&reader, &section, ordinal as u64));
            assert_eq!(&got, v, "value {ordinal}");
        }
        section.len()
    }

    #[test]
    fn integers_round_trip_at_their_extremes() {
        round_trip(&[0u8, 255, 17]);
        round_trip(&[0u16, u16::MAX]);
        round_trip(&[u32::MAX, 0, 1]);
        round_trip(&[u64::MAX, 0, 1 << 63]);
        round_trip(&[i8::MIN, -1, 0, i8::MAX]);
        round_trip(&[i16::MIN, i16::MAX]);
        round_trip(&[i32::MIN, 0, i32::MAX]);
        round_trip(&[i64::MIN, -1, 0, 1, i64::MAX]);
        round_trip(&[true, false, true]);
        round_trip(&[usize::MAX, 0, 1]);
        round_trip(&[isize::MIN, -1, 0, isize::MAX]);
    }

    #[test]
    fn small_signed_values_pack_small() {
        // -8..8 is 16 values: 4 bits each, not 64.
        let values: Vec<i64> = (-8..8).collect();
        assert_eq!(round_trip(&values), 16 + 8);
    }

    #[test]
    fn unit_column_has_no_words() {
        assert_eq!(round_trip(&[(); 10_000]), 16);
    }

    #[test]
    fn byte_strings_round_trip() {
        let values: Vec<Vec<u8>> = vec![
            vec![],
            b"a".to_vec(),
            vec![],
            vec![0xFF; 3000],
            b"xyz".to_vec(),
        ];
        round_trip(&values);
        let boxed: Vec<Box<[u8]>> = values
            .iter()
            .map(|v| v.clone().into_boxed_slice())
            .collect();
        round_trip(&boxed);
        round_trip::<Vec<u8>>(&[]);
        round_trip(&["".to_string(), "grüße".to_string()]);
        round_trip::<Box<str>>(&["ü".into(), "".into()]);
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn machine_integers_are_named_with_their_width() {
        // So that a 32-bit reader refuses a 64-bit writer's file.
        assert_eq!((usize::TYPE_NAME, isize::TYPE_NAME), ("usize64", "isize64"));
    }

    #[test]
    fn a_string_of_invalid_utf8_decodes_without_panicking() {
        // Only a corrupt file gets here; the value is garbage, not a panic.
        assert_eq!(String::decode(&[0xFF, b'a']), "\u{FFFD}a");
        assert_eq!(&*<Box<str>>::decode(&[0xC3]), "\u{FFFD}");
    }

    #[test]
    fn byte_string_offsets_are_verified() {
        let (mut section, _) = column_of(&[b"ab".to_vec(), b"cd".to_vec()]);
        // The blob is the last 4 bytes; cutting one makes the offsets overrun.
        section.pop();
        let reader = BytesColumn::open(&section, 2).unwrap();
        assert!(matches!(
            BytesColumn::verify(&reader, &section),
            Err(Error::Corrupt { .. })
        ));
        // Reading the damaged value must not panic.
        assert_eq!(BytesColumn::get(&reader, &section, 1), b"");
        // An offsets length past the end is caught when opening.
        let mut bad = section.clone();
        bad[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(BytesColumn::open(&bad, 2).is_err());
    }

    #[test]
    fn equal_offsets_are_verified_without_walking_them() {
        // One value "ab": a single end, 2, stored as the base with no bits
        // per value, so the same bytes open for any count (found by the
        // `frozen_file` fuzz target: a 128-byte file claiming 2^40 keys
        // kept `from_bytes` busy for hours).
        let (section, _) = column_of(&[b"ab".to_vec()]);
        let reader = BytesColumn::open(&section, u64::MAX).unwrap();
        BytesColumn::verify(&reader, &section).unwrap();
        // An end past the blob is refused at any count.
        let short = &section[..section.len() - 1];
        for count in [1, u64::MAX] {
            let reader = BytesColumn::open(short, count).unwrap();
            assert!(matches!(
                BytesColumn::verify(&reader, short),
                Err(Error::Corrupt { .. })
            ));
        }
    }
}
