//! The `rart` crate (0.11): `AdaptiveRadixTree<VectorKey, u64>`.

use std::cell::RefCell;
use std::ops::Bound;

use rart::keys::KeyTrait;
use rart::{AdaptiveRadixTree, VectorKey};

use super::{BuildInput, Structure};

/// rart's single-threaded ART with heap-allocated variable-length keys.
pub(crate) struct Rart {
    map: AdaptiveRadixTree<VectorKey, u64>,
    /// rart's lending visitors hand out a key in segments; the adapter
    /// reassembles it here (reused, so no allocation per entry).
    scratch: RefCell<Vec<u8>>,
}

impl std::fmt::Debug for Rart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Rart")
    }
}

impl Rart {
    fn visit(&self, f: &mut impl FnMut(&[u8], u64), view: rart::LendingKeyView<'_, '_>, v: u64) {
        let mut buf = self.scratch.borrow_mut();
        buf.clear();
        view.write_into(&mut buf);
        f(&buf, v);
    }
}

impl Structure for Rart {
    // Raw bytes, not `From<&str>` (which appends a NUL): the keys may hold
    // any byte, and rart handles keys that are prefixes of others.
    fn build(input: &BuildInput<'_>) -> Result<Self, String> {
        let mut map = AdaptiveRadixTree::new();
        for (key, value) in input.entries() {
            let old = map.insert_k(&VectorKey::new_from_slice(key), value);
            input.inserted(key, old.is_none());
        }
        Ok(Rart {
            map,
            scratch: RefCell::new(Vec::new()),
        })
    }

    fn len(&self) -> Option<usize> {
        Some(self.map.len())
    }

    const REPLACES: bool = true;

    fn replace(&mut self, key: &[u8], value: u64) -> Option<u64> {
        self.map.insert_k(&VectorKey::new_from_slice(key), value)
    }

    fn get(&self, key: &[u8]) -> Option<u64> {
        self.map.get_bytes(key).copied()
    }

    fn for_each(&self, mut f: impl FnMut(&[u8], u64)) {
        self.map
            .for_each_view(|view, v| self.visit(&mut f, view, *v));
    }

    fn prefix(&self, prefix: &[u8], mut f: impl FnMut(&[u8], u64)) {
        let prefix = VectorKey::new_from_slice(prefix);
        self.map
            .prefix_for_each_view_k(&prefix, |view, v| self.visit(&mut f, view, *v));
    }

    fn range(&self, start: &[u8], end: &[u8], mut f: impl FnMut(&[u8], u64)) {
        let r = (
            Bound::Included(VectorKey::new_from_slice(start)),
            Bound::Excluded(VectorKey::new_from_slice(end)),
        );
        self.map
            .for_each_range_view(r, |view, v| self.visit(&mut f, view, *v));
    }

    fn notes(&self) -> Vec<String> {
        vec!["iteration via the lending visitors, key segments copied into one buffer".into()]
    }
}
