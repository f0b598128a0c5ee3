//! `crossbeam_skiplist::SkipMap<Box<[u8]>, u64>`.

use std::ops::Bound;

use crossbeam_skiplist::SkipMap;

use super::{BuildInput, Structure, prefix_end};

/// A lock-free concurrent skip list with boxed keys, used from one thread.
#[derive(Debug)]
pub(crate) struct Skip(SkipMap<Box<[u8]>, u64>);

impl Structure for Skip {
    fn build(input: &BuildInput<'_>) -> Result<Self, String> {
        let map = SkipMap::new();
        for (key, value) in input.entries() {
            map.insert(Box::from(key), value);
        }
        Ok(Skip(map))
    }

    fn len(&self) -> Option<usize> {
        Some(self.0.len())
    }

    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(key).map(|e| *e.value())
    }

    fn for_each(&self, mut f: impl FnMut(&[u8], u64)) {
        for e in self.0.iter() {
            f(e.key(), *e.value());
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

    fn notes(&self) -> Vec<String> {
        vec!["reads pin an epoch and count references per entry".into()]
    }
}

fn scan(
    map: &SkipMap<Box<[u8]>, u64>,
    r: (Bound<&[u8]>, Bound<&[u8]>),
    mut f: impl FnMut(&[u8], u64),
) {
    for e in map.range::<[u8], _>(r) {
        f(e.key(), *e.value());
    }
}
