//! The `subms-adaptive-radix-tree` crate (0.10): `Art<u64>`, with its
//! `range-scan` feature for ordered reads.

use subms_adaptive_radix_tree::{Art, Bound, range};

use super::{BuildInput, Structure, prefix_end};

/// subms's ART.
pub(crate) struct Subms(Art<u64>);

impl std::fmt::Debug for Subms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Subms")
    }
}

/// The crate's only ordered read, `range`, returns a `Vec` of owned keys.
fn scan(map: &Art<u64>, from: Bound<'_>, to: Bound<'_>, mut f: impl FnMut(&[u8], u64)) {
    for (k, v) in range(map, from, to) {
        f(&k, *v);
    }
}

impl Structure for Subms {
    fn build(input: &BuildInput<'_>) -> Result<Self, String> {
        let mut map = Art::new();
        for (key, value) in input.entries() {
            input.inserted(key, map.insert(key, value).is_none());
        }
        Ok(Subms(map))
    }

    fn len(&self) -> Option<usize> {
        Some(self.0.len())
    }

    const REPLACES: bool = true;

    fn replace(&mut self, key: &[u8], value: u64) -> Option<u64> {
        self.0.insert(key, value)
    }

    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(key).copied()
    }

    fn for_each(&self, f: impl FnMut(&[u8], u64)) {
        scan(&self.0, Bound::Unbounded, Bound::Unbounded, f);
    }

    fn prefix(&self, prefix: &[u8], f: impl FnMut(&[u8], u64)) {
        match prefix_end(prefix) {
            Some(end) => scan(&self.0, Bound::Included(prefix), Bound::Excluded(&end), f),
            None => scan(&self.0, Bound::Included(prefix), Bound::Unbounded, f),
        }
    }

    fn range(&self, start: &[u8], end: &[u8], f: impl FnMut(&[u8], u64)) {
        scan(&self.0, Bound::Included(start), Bound::Excluded(end), f);
    }

    fn notes(&self) -> Vec<String> {
        vec!["ordered reads collect owned keys into a Vec first (crate API)".into()]
    }
}
