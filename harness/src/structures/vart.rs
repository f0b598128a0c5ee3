//! The `vart` crate (0.11): `Tree<VariableSizeKey, u64>`, a versioned
//! (multi-version, copy-on-write) ART.

use vart::VariableSizeKey;
use vart::art::Tree;

use super::{BuildInput, Structure, prefix_end};

/// vart's persistent tree; every insert is a new version.
pub(crate) struct Vart(Tree<VariableSizeKey, u64>);

impl std::fmt::Debug for Vart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Vart")
    }
}

impl Structure for Vart {
    // The checked `insert` (versions must increase; each insert gets the next
    // one), as its documentation recommends over `insert_unchecked`.
    fn build(input: &BuildInput<'_>) -> Result<Self, String> {
        let mut map = Tree::new();
        for (version, (key, value)) in (1u64..).zip(input.entries()) {
            map.insert(&VariableSizeKey::from_slice(key), value, version, 0)
                .map_err(|e| format!("vart insert: {e}"))?;
        }
        Ok(Vart(map))
    }

    fn len(&self) -> Option<usize> {
        Some(self.0.len())
    }

    fn get(&self, key: &[u8]) -> Option<u64> {
        // Version 0 = the latest.
        self.0.get_by_slice(key, 0).map(|(v, _, _)| v)
    }

    fn for_each(&self, mut f: impl FnMut(&[u8], u64)) {
        for (k, v, _, _) in self.0.iter() {
            f(k, *v);
        }
    }

    fn prefix(&self, prefix: &[u8], mut f: impl FnMut(&[u8], u64)) {
        let start = VariableSizeKey::from_slice(prefix);
        match prefix_end(prefix) {
            Some(end) => {
                for (k, v, _, _) in self.0.range(start..VariableSizeKey::from_slice(&end)) {
                    f(k, *v);
                }
            }
            None => {
                for (k, v, _, _) in self.0.range(start..) {
                    f(k, *v);
                }
            }
        }
    }

    fn range(&self, start: &[u8], end: &[u8], mut f: impl FnMut(&[u8], u64)) {
        let r = VariableSizeKey::from_slice(start)..VariableSizeKey::from_slice(end);
        for (k, v, _, _) in self.0.range(r) {
            f(k, *v);
        }
    }

    fn notes(&self) -> Vec<String> {
        vec!["versioned: each value carries a version and a timestamp".into()]
    }
}
