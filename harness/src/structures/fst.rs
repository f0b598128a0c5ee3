//! A bare `fst::Map`, the lower bound for a frozen layer's size.

use fst::{IntoStreamer, Map, MapBuilder, Streamer};

use super::{BuildInput, BuildOrder, Structure, prefix_end};

/// A finite state transducer over the sorted keys, built in memory.
#[derive(Debug)]
pub(crate) struct FstMap(Map<Vec<u8>>);

impl Structure for FstMap {
    const BUILD_ORDER: BuildOrder = BuildOrder::Sorted;

    fn build(input: &BuildInput<'_>) -> Result<Self, String> {
        let mut builder = MapBuilder::memory();
        for (key, value) in input.entries() {
            builder
                .insert(key, value)
                .map_err(|e| format!("fst build: {e}"))?;
        }
        let mut bytes = builder
            .into_inner()
            .map_err(|e| format!("fst build: {e}"))?;
        // The builder's buffer grew by doubling: a user keeps only the fst
        // (as FrozenLayer does), so the row counts only its bytes.
        bytes.shrink_to_fit();
        Map::new(bytes)
            .map(FstMap)
            .map_err(|e| format!("fst open: {e}"))
    }

    fn len(&self) -> Option<usize> {
        Some(self.0.len())
    }

    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(key)
    }

    fn for_each(&self, f: impl FnMut(&[u8], u64)) {
        drain(self.0.stream(), f);
    }

    // A range up to the prefix's successor: cheaper than running the
    // `Str::starts_with` automaton, and the same result.
    fn prefix(&self, prefix: &[u8], f: impl FnMut(&[u8], u64)) {
        let range = self.0.range().ge(prefix);
        match prefix_end(prefix) {
            Some(end) => drain(range.lt(end).into_stream(), f),
            None => drain(range.into_stream(), f),
        }
    }

    fn range(&self, start: &[u8], end: &[u8], f: impl FnMut(&[u8], u64)) {
        drain(self.0.range().ge(start).lt(end).into_stream(), f);
    }

    fn memory_usage(&self) -> Option<usize> {
        Some(self.0.as_fst().size())
    }

    fn notes(&self) -> Vec<String> {
        vec!["bulk build from sorted keys (sort not timed)".into()]
    }
}

fn drain<S>(mut stream: S, mut f: impl FnMut(&[u8], u64))
where
    S: for<'a> Streamer<'a, Item = (&'a [u8], u64)>,
{
    while let Some((k, v)) = stream.next() {
        f(k, v);
    }
}
