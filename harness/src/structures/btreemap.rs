//! `std::collections::BTreeMap<Box<[u8]>, u64>`, the baseline.

use std::collections::BTreeMap;
use std::ops::Bound;

use super::{BuildInput, Structure, prefix_end};

/// The standard library's B-tree with boxed keys (one allocation per key).
#[derive(Debug)]
pub(crate) struct BTree(BTreeMap<Box<[u8]>, u64>);

impl Structure for BTree {
    fn build(input: &BuildInput<'_>) -> Result<Self, String> {
        let mut map = BTreeMap::new();
        for (key, value) in input.entries() {
            input.inserted(key, map.insert(Box::from(key), value).is_none());
        }
        Ok(BTree(map))
    }

    fn len(&self) -> Option<usize> {
        Some(self.0.len())
    }

    const REPLACES: bool = true;

    fn replace(&mut self, key: &[u8], value: u64) -> Option<u64> {
        self.0.insert(Box::from(key), value)
    }

    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(key).copied()
    }

    fn for_each(&self, mut f: impl FnMut(&[u8], u64)) {
        for (k, v) in &self.0 {
            f(k, *v);
        }
    }

    fn prefix(&self, prefix: &[u8], f: impl FnMut(&[u8], u64)) {
        let end = prefix_end(prefix);
        let end = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        scan(&self.0, (Bound::Included(prefix), end), f);
    }

    fn range(&self, start: &[u8], end: &[u8], f: impl FnMut(&[u8], u64)) {
        scan(&self.0, (Bound::Included(start), Bound::Excluded(end)), f);
    }
}

fn scan(
    map: &BTreeMap<Box<[u8]>, u64>,
    r: (Bound<&[u8]>, Bound<&[u8]>),
    mut f: impl FnMut(&[u8], u64),
) {
    for (k, v) in map.range::<[u8], _>(r) {
        f(k, *v);
    }
}
