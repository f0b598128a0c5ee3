//! `memkv::HybridMap<u64>`: FastArt deltas over a FrozenLayer base.

use std::ops::Bound;

use memkv::{HybridConfig, HybridMap};

use super::{BuildInput, Structure};

/// The hybrid map with the default merge policy.
#[derive(Debug)]
pub(crate) struct Hybrid {
    map: HybridMap<u64>,
}

impl Hybrid {
    /// `map` after one more merge, so that the reads measure the steady,
    /// fully merged state; the error of any merge that failed on the way.
    fn merged(map: HybridMap<u64>) -> Result<Self, String> {
        map.freeze().map_err(|e| format!("HybridMap freeze: {e}"))?;
        if let Some(error) = map.stats().last_error {
            return Err(format!("HybridMap merge: {error}"));
        }
        Ok(Hybrid { map })
    }
}

impl Structure for Hybrid {
    // Built like the mutable maps: one `insert` per key in dataset order,
    // with background merges as the default policy triggers them, then one
    // `freeze`.
    fn build(input: &BuildInput<'_>) -> Result<Self, String> {
        let map = HybridConfig::new().build();
        for (key, value) in input.entries() {
            input.inserted(key, map.insert(key, value).is_none());
        }
        Hybrid::merged(map)
    }

    const BATCHED_BUILD: bool = true;

    // `extend` looks up 256 entries' old values side by side, then writes
    // them one by one.
    fn build_batched(input: &BuildInput<'_>) -> Result<Self, String> {
        let mut map = HybridConfig::new().build();
        map.extend(input.entries());
        Hybrid::merged(map)
    }

    fn len(&self) -> Option<usize> {
        Some(self.map.len())
    }

    const REPLACES: bool = true;

    fn replace(&mut self, key: &[u8], value: u64) -> Option<u64> {
        self.map.insert(key, value)
    }

    fn get(&self, key: &[u8]) -> Option<u64> {
        self.map.get(key)
    }

    const BATCHED: bool = true;

    fn get_batch(&self, keys: &[&[u8]], out: &mut Vec<Option<u64>>) {
        *out = self.map.get_many(keys);
    }

    // The lending `next_entry`: the keys are copied once per batch, not
    // allocated per entry.
    fn for_each(&self, mut f: impl FnMut(&[u8], u64)) {
        let mut it = self.map.iter();
        while let Some((k, v)) = it.next_entry() {
            f(k, v);
        }
    }

    fn prefix(&self, prefix: &[u8], mut f: impl FnMut(&[u8], u64)) {
        let mut it = self.map.prefix(prefix);
        while let Some((k, v)) = it.next_entry() {
            f(k, v);
        }
    }

    fn range(&self, start: &[u8], end: &[u8], mut f: impl FnMut(&[u8], u64)) {
        let mut it = self
            .map
            .range::<[u8], _>((Bound::Included(start), Bound::Excluded(end)));
        while let Some((k, v)) = it.next_entry() {
            f(k, v);
        }
    }

    fn memory_usage(&self) -> Option<usize> {
        Some(self.map.memory_usage())
    }

    fn notes(&self) -> Vec<String> {
        vec![
            "build = inserts in dataset order, background merges by the default policy, then \
             freeze(): reads hit the merged base (mixed workload: examples/hybrid_mixed.rs)"
                .into(),
        ]
    }
}
