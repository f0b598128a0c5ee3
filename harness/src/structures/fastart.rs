//! `memkv::FastArt<u64>`, as inserted and after `compact()`.

use std::ops::Bound;

use memkv::FastArt;

use super::{BuildInput, Structure};

/// memkv's adaptive radix tree; with `COMPACT`, `compact()` runs at the end
/// of the build (and its time counts in the insert rate), as after a bulk
/// load.
#[derive(Debug)]
pub(crate) struct FastArtMap<const COMPACT: bool>(FastArt<u64>);

impl<const COMPACT: bool> Structure for FastArtMap<COMPACT> {
    fn build(input: &BuildInput<'_>) -> Result<Self, String> {
        let mut map = FastArt::new();
        for (key, value) in input.entries() {
            map.insert(key, value);
        }
        if COMPACT {
            map.compact();
        }
        Ok(FastArtMap(map))
    }

    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(key).copied()
    }

    const BATCHED: bool = true;

    const BATCHED_BUILD: bool = true;

    // `Extend` looks up 16 entries side by side before inserting them.
    fn build_batched(input: &BuildInput<'_>) -> Result<Self, String> {
        let mut map: FastArt<u64> = input.entries().collect();
        if COMPACT {
            map.compact();
        }
        Ok(FastArtMap(map))
    }

    fn get_batch(&self, keys: &[&[u8]], out: &mut Vec<Option<u64>>) {
        out.clear();
        out.extend(self.0.get_many(keys).into_iter().map(|v| v.copied()));
    }

    // The lending `next_entry` lends the key from the iterator's buffer:
    // no allocation per entry, unlike `Iterator::next`.
    fn for_each(&self, mut f: impl FnMut(&[u8], u64)) {
        let mut it = self.0.iter();
        while let Some((k, v)) = it.next_entry() {
            f(k, *v);
        }
    }

    fn prefix(&self, prefix: &[u8], mut f: impl FnMut(&[u8], u64)) {
        let mut it = self.0.prefix(prefix);
        while let Some((k, v)) = it.next_entry() {
            f(k, *v);
        }
    }

    fn range(&self, start: &[u8], end: &[u8], mut f: impl FnMut(&[u8], u64)) {
        let mut it = self
            .0
            .range::<[u8], _>((Bound::Included(start), Bound::Excluded(end)));
        while let Some((k, v)) = it.next_entry() {
            f(k, *v);
        }
    }

    fn memory_usage(&self) -> Option<usize> {
        Some(self.0.memory_usage())
    }
}
