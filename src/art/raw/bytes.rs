//! Byte strings stored inside blocks: node prefixes and leaf suffixes.
//!
//! ```text
//!  inline (len <= 254):   | len: u8 | bytes[len] |                       1 + len bytes
//!  out of line:           | 0xFF    | ptr: *u8 (8) | len: usize (8) |    17 bytes
//! ```
//!
//! Nearly every prefix and suffix is short (on the Debian paths: 3.7 and 8.0
//! bytes on average), so one length byte is all they pay. Longer strings go to
//! their own heap allocation (a `Box<[u8]>` whose raw parts are stored
//! unaligned) so that blocks stay under the arena's maximum size and keys of
//! any length work.
//!
//! A field owns its out-of-line allocation: copying a field's bytes moves that
//! ownership, and exactly one copy may later be passed to [`free`].

use std::ptr;
use std::slice;

/// The longest string stored inline.
pub(crate) const INLINE_MAX: usize = 254;

const OUT_OF_LINE: u8 = 0xFF;

/// Size of an out-of-line field.
const OUT_OF_LINE_SIZE: usize = 1 + size_of::<usize>() * 2;

/// Bytes a field holding `len` bytes takes inside its block.
#[inline]
pub(crate) const fn field_size(len: usize) -> usize {
    if len <= INLINE_MAX {
        1 + len
    } else {
        OUT_OF_LINE_SIZE
    }
}

/// Reads the field at `field`.
///
/// # Safety
/// `field` must point to a field written by [`write`](fn@write) (or moved by copying)
/// whose owner is still live; the returned slice must not outlive it.
#[inline(always)]
pub(crate) unsafe fn read<'a>(field: *const u8) -> &'a [u8] {
    // SAFETY: the caller guarantees a valid field: a length byte followed by
    // that many bytes, or the raw parts of a live boxed slice.
    unsafe {
        let tag = *field;
        if tag != OUT_OF_LINE {
            slice::from_raw_parts(field.add(1), tag as usize)
        } else {
            let data = field.add(1).cast::<*const u8>().read_unaligned();
            let len = field
                .add(1 + size_of::<usize>())
                .cast::<usize>()
                .read_unaligned();
            slice::from_raw_parts(data, len)
        }
    }
}

/// Size in bytes of the field at `field` (its length byte included).
///
/// # Safety
/// As for [`read`].
#[inline(always)]
pub(crate) unsafe fn stored_size(field: *const u8) -> usize {
    // SAFETY: the caller guarantees a valid field.
    let tag = unsafe { *field };
    if tag != OUT_OF_LINE {
        1 + tag as usize
    } else {
        OUT_OF_LINE_SIZE
    }
}

/// Writes the concatenation of `parts` as a field at `dst`, which must have
/// room for `field_size(total)` bytes. Returns the heap bytes allocated for it
/// (0 when inline).
///
/// The parts may point anywhere except into the destination range.
///
/// # Safety
/// `dst` must be valid for writes of `field_size(sum of part lengths)` bytes
/// and must not overlap any part.
#[inline]
pub(crate) unsafe fn write(dst: *mut u8, parts: &[&[u8]]) -> usize {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    if len <= INLINE_MAX {
        // SAFETY: room for 1 + len bytes, per the contract; no overlap.
        unsafe {
            *dst = len as u8;
            let mut at = dst.add(1);
            for part in parts {
                ptr::copy_nonoverlapping(part.as_ptr(), at, part.len());
                at = at.add(part.len());
            }
        }
        0
    } else {
        let boxed: Box<[u8]> = parts.concat().into_boxed_slice();
        let data = Box::into_raw(boxed).cast::<u8>();
        // SAFETY: room for OUT_OF_LINE_SIZE bytes, per the contract.
        unsafe {
            *dst = OUT_OF_LINE;
            dst.add(1).cast::<*mut u8>().write_unaligned(data);
            dst.add(1 + size_of::<usize>())
                .cast::<usize>()
                .write_unaligned(len);
        }
        len
    }
}

/// Frees the out-of-line allocation of the field at `field`, if it has one.
/// Returns the heap bytes released.
///
/// # Safety
/// `field` must be a valid field that owns its allocation (see the module
/// docs), and no copy of it may be read or freed afterwards.
#[inline]
pub(crate) unsafe fn free(field: *mut u8) -> usize {
    // SAFETY: a valid field, per the contract.
    unsafe {
        if *field != OUT_OF_LINE {
            return 0;
        }
        let data = field.add(1).cast::<*mut u8>().read_unaligned();
        let len = field
            .add(1 + size_of::<usize>())
            .cast::<usize>()
            .read_unaligned();
        // The raw parts came from `Box::into_raw` of a `Box<[u8]>` of `len` bytes.
        drop(Box::from_raw(ptr::slice_from_raw_parts_mut(data, len)));
        len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_and_out_of_line_round_trip() {
        for len in [0, 1, 100, INLINE_MAX, INLINE_MAX + 1, 100_000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let (a, b) = data.split_at(len / 3);
            let mut buf = vec![0u8; field_size(len)];
            // SAFETY: `buf` has room for the field; `data` does not overlap it.
            let heap = unsafe { write(buf.as_mut_ptr(), &[a, b]) };
            assert_eq!(heap, if len > INLINE_MAX { len } else { 0 });
            // SAFETY: written just above.
            unsafe {
                assert_eq!(read(buf.as_ptr()), &data[..]);
                assert_eq!(stored_size(buf.as_ptr()), field_size(len));
                assert_eq!(free(buf.as_mut_ptr()), heap);
            }
        }
    }
}
