//! `memkv::FrozenLayer<u64>`: memkv's fst-backed immutable layer.

use std::ops::Bound;

use memkv::{FrozenLayer, FrozenLayerBuilder};

use super::{BuildInput, BuildOrder, Structure};

/// The layer, built in memory from the sorted keys.
#[derive(Debug)]
pub(crate) struct Frozen(FrozenLayer<u64>);

impl Structure for Frozen {
    const BUILD_ORDER: BuildOrder = BuildOrder::Sorted;

    fn build(input: &BuildInput<'_>) -> Result<Self, String> {
        let mut builder = FrozenLayerBuilder::memory();
        for (key, value) in input.entries() {
            builder
                .insert(key, value)
                .map_err(|e| format!("FrozenLayer build: {e}"))?;
        }
        builder
            .into_layer()
            .map(Frozen)
            .map_err(|e| format!("FrozenLayer build: {e}"))
    }

    fn len(&self) -> Option<usize> {
        Some(self.0.len())
    }

    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(key)
    }

    const BATCHED: bool = true;

    fn get_batch(&self, keys: &[&[u8]], out: &mut Vec<Option<u64>>) {
        *out = self.0.get_many(keys);
    }

    // The lending `next_entry` lends the key from the stream: no allocation
    // per entry.
    fn for_each(&self, mut f: impl FnMut(&[u8], u64)) {
        let mut it = self.0.iter();
        while let Some((k, v)) = it.next_entry() {
            f(k, v);
        }
    }

    fn prefix(&self, prefix: &[u8], mut f: impl FnMut(&[u8], u64)) {
        let mut it = self.0.prefix(prefix);
        while let Some((k, v)) = it.next_entry() {
            f(k, v);
        }
    }

    fn range(&self, start: &[u8], end: &[u8], mut f: impl FnMut(&[u8], u64)) {
        let mut it = self
            .0
            .range::<[u8], _>((Bound::Included(start), Bound::Excluded(end)));
        while let Some((k, v)) = it.next_entry() {
            f(k, v);
        }
    }

    fn memory_usage(&self) -> Option<usize> {
        Some(self.0.memory_usage())
    }

    fn notes(&self) -> Vec<String> {
        vec!["bulk build from sorted keys (sort not timed)".into()]
    }
}
