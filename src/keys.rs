//! Helpers on byte-string keys and bounds, shared by the layers.

use std::ops::Bound;

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
