//! Finding a key byte among a Node4's or Node16's sorted keys.

/// Index of `byte` among `keys[..count]` (ascending), scanning: the portable
/// fallback of [`find16`], and the reference the faster searches are tested
/// against.
#[cfg(any(test, not(target_arch = "x86_64")))]
///
/// # Safety
/// `keys` must be valid for reads of `count` bytes.
#[inline(always)]
pub(crate) unsafe fn find_scalar(keys: *const u8, count: usize, byte: u8) -> Option<usize> {
    for i in 0..count {
        // SAFETY: i < count, per the contract.
        let k = unsafe { *keys.add(i) };
        if k >= byte {
            return (k == byte).then_some(i);
        }
    }
    None
}

/// Index of `byte` among `keys[..count]` (`count <= 4`), without branches:
/// the four key bytes are compared at once in a 32-bit word.
///
/// # Safety
/// `keys` must be valid for reads of 4 bytes. This holds for every Node4:
/// it has at least one child (invariant 3), so its keys are followed by at
/// least 4 bytes of child references.
#[inline(always)]
pub(crate) unsafe fn find4(keys: *const u8, count: usize, byte: u8) -> Option<usize> {
    debug_assert!(count <= 4);
    // SAFETY: 4 readable bytes per the contract.
    let word = u32::from_le_bytes(unsafe { keys.cast::<[u8; 4]>().read_unaligned() });
    let diff = word ^ (u32::from(byte) * 0x0101_0101);
    // The lowest byte of `diff` that is zero sets the lowest flag exactly
    // (the borrow can only raise false flags above a true one).
    let zero = diff.wrapping_sub(0x0101_0101) & !diff & 0x8080_8080;
    let i = (zero.trailing_zeros() / 8) as usize;
    (i < count).then_some(i)
}

/// Whether two equally long byte strings are equal.
///
/// Prefixes and suffixes are mostly a few bytes long, where a call to
/// `memcmp` costs more than the comparison: up to 16 bytes are compared with
/// two overlapping loads.
#[inline(always)]
pub(crate) fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len();
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"));
    let half = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().expect("4 bytes"));
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => (half(a, 0) ^ half(b, 0)) | (half(a, n - 4) ^ half(b, n - 4)) == 0,
        8..=16 => (word(a, 0) ^ word(b, 0)) | (word(a, n - 8) ^ word(b, n - 8)) == 0,
        _ => a == b,
    }
}

/// Whether `key` starts with `prefix`.
#[inline(always)]
pub(crate) fn starts_with(key: &[u8], prefix: &[u8]) -> bool {
    key.len() >= prefix.len() && bytes_eq(&key[..prefix.len()], prefix)
}

/// Index of `byte` among `keys[..count]` with one 16-byte SSE2 compare.
///
/// # Safety
/// `keys` must be valid for reads of 16 bytes (a Node16's keys are followed
/// by at least 20 bytes of child references in the same block, so this holds
/// for every sparse node with 4 or more children), and `count <= 16`.
#[inline(always)]
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn find16(keys: *const u8, count: usize, byte: u8) -> Option<usize> {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    debug_assert!(count <= 16);
    // SAFETY: SSE2 is part of the x86_64 baseline; 16 readable bytes per the
    // contract; loadu has no alignment requirement.
    let mask = unsafe {
        let haystack = _mm_loadu_si128(keys.cast::<__m128i>());
        _mm_movemask_epi8(_mm_cmpeq_epi8(haystack, _mm_set1_epi8(byte as i8))) as u32
    };
    // Bytes past `count` belong to the child references: mask them out.
    let mask = mask & ((1u32 << count) - 1);
    (mask != 0).then(|| mask.trailing_zeros() as usize)
}

/// Index of `byte` among `keys[..count]` (portable fallback).
///
/// # Safety
/// As for the x86_64 version.
#[inline(always)]
#[cfg(not(target_arch = "x86_64"))]
pub(crate) unsafe fn find16(keys: *const u8, count: usize, byte: u8) -> Option<usize> {
    // SAFETY: forwarded contract (count readable bytes).
    unsafe { find_scalar(keys, count, byte) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_eq_agrees_with_slice_equality() {
        let a: Vec<u8> = (0..40).collect();
        for n in 0..40 {
            for flip in 0..n {
                let mut b = a[..n].to_vec();
                assert!(bytes_eq(&a[..n], &b));
                b[flip] ^= 1;
                assert!(!bytes_eq(&a[..n], &b), "n {n} flip {flip}");
            }
        }
    }

    /// All searches agree with a plain `position` for every count, key set
    /// and probe, including bytes 0x00 and 0xFF and garbage after the keys.
    #[test]
    fn simd_and_scalar_agree_with_the_model() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for count in 0..=16usize {
            for _ in 0..200 {
                let mut keys: Vec<u8> = Vec::new();
                while keys.len() < count {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let b = match seed >> 61 {
                        0 => 0x00,
                        1 => 0xFF,
                        _ => (seed >> 40) as u8,
                    };
                    if !keys.contains(&b) {
                        keys.push(b);
                    }
                }
                keys.sort_unstable();
                // Fill the rest of the 16 readable bytes with probes that must
                // not be reported.
                let mut buf = keys.clone();
                buf.resize(16, keys.first().copied().unwrap_or(0x41));
                for probe in 0..=255u8 {
                    let want = keys.iter().position(|&k| k == probe);
                    // SAFETY: `buf` holds 16 bytes, `count` of them keys.
                    unsafe {
                        if count <= 4 {
                            assert_eq!(
                                find4(buf.as_ptr(), count, probe),
                                want,
                                "keys {keys:?} probe {probe}"
                            );
                        }
                        assert_eq!(find_scalar(buf.as_ptr(), count, probe), want);
                        assert_eq!(
                            find16(buf.as_ptr(), count, probe),
                            want,
                            "keys {keys:?} probe {probe}"
                        );
                    }
                }
            }
        }
    }
}
