//! `memkv::FastArt<u64>`: as it comes (compacting itself as it grows), with
//! `compact()` after the build, and with automatic compaction off.

use std::ops::Bound;

use memkv::FastArt;

use super::{BuildInput, Structure};

/// How a [`FastArtMap`] is built.
pub(crate) mod mode {
    /// As `FastArt::new()` comes: it compacts itself each time it doubles.
    pub(crate) const DEFAULT: u8 = 0;
    /// And `compact()` at the end of the build (its time counts in the
    /// insert rate), as after a bulk load.
    pub(crate) const COMPACT: u8 = 1;
    /// With automatic compaction off: the layout random inserts leave.
    pub(crate) const NO_AUTO: u8 = 2;
}

/// memkv's adaptive radix tree, built as [`mode`] `MODE` says.
#[derive(Debug)]
pub(crate) struct FastArtMap<const MODE: u8>(FastArt<u64>);

impl<const MODE: u8> FastArtMap<MODE> {
    const COMPACT: bool = MODE == mode::COMPACT;

    fn empty() -> FastArt<u64> {
        let mut map = FastArt::new();
        map.set_auto_compact(MODE != mode::NO_AUTO);
        map
    }
}

impl<const MODE: u8> Structure for FastArtMap<MODE> {
    fn build(input: &BuildInput<'_>) -> Result<Self, String> {
        let mut map = Self::empty();
        for (key, value) in input.entries() {
            input.inserted(key, map.insert(key, value).is_none());
        }
        if Self::COMPACT {
            map.compact();
        }
        Ok(FastArtMap(map))
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

    const BATCHED: bool = true;

    const BATCHED_BUILD: bool = true;

    // `Extend` looks up 16 entries side by side before inserting them.
    fn build_batched(input: &BuildInput<'_>) -> Result<Self, String> {
        let mut map = Self::empty();
        map.extend(input.entries());
        if Self::COMPACT {
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
