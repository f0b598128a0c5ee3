//! Helpers on byte-string keys and bounds, shared by the layers.

use std::ops::Bound;

/// Length of the common prefix of two byte strings.
#[inline]
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    // Eight bytes at a time: prefixes and suffixes are short, but the keys
    // they are compared against share long runs.
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().expect("8 bytes"));
        let y = u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if x != y {
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// The smallest byte string greater than every string starting with
/// `prefix`, or `None` if there is none (`prefix` is empty or all `0xFF`):
/// the exclusive end of a prefix scan.
pub(crate) fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut end = prefix[..=last].to_vec();
    end[last] += 1;
    Some(end)
}

/// A bound over any byte-string-like type, as an owned bound over bytes.
pub(crate) fn owned_bound<T: AsRef<[u8]> + ?Sized>(bound: Bound<&T>) -> Bound<Vec<u8>> {
    match bound {
        Bound::Included(key) => Bound::Included(key.as_ref().to_vec()),
        Bound::Excluded(key) => Bound::Excluded(key.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// An owned bound, borrowed.
#[inline]
pub(crate) fn as_slice(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    bound.as_ref().map(Vec::as_slice)
}

/// Whether `key` lies below the upper bound `end`.
#[inline]
pub(crate) fn before_end(key: &[u8], end: Bound<&[u8]>) -> bool {
    match end {
        Bound::Included(end) => key <= end,
        Bound::Excluded(end) => key < end,
        Bound::Unbounded => true,
    }
}

/// Whether `key` lies above the lower bound `start`.
#[inline]
pub(crate) fn after_start(key: &[u8], start: Bound<&[u8]>) -> bool {
    match start {
        Bound::Included(start) => key >= start,
        Bound::Excluded(start) => key > start,
        Bound::Unbounded => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_successor_skips_trailing_ff() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\xFF\xFF"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xFF"), None);
        assert_eq!(prefix_successor(b""), None);
    }
}
