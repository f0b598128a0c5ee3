//! The `art-tree` crate (0.2): `Art<ByteString, u64>`.

use std::borrow::Borrow;

use art_tree::{Art, ByteString};

use super::{BuildInput, Structure, prefix_end};

/// art-tree's ART with its byte-string key type.
pub(crate) struct ArtTree(Art<ByteString, u64>);

impl std::fmt::Debug for ArtTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ArtTree")
    }
}

impl Structure for ArtTree {
    fn build(input: &BuildInput<'_>) -> Result<Self, String> {
        let mut map = Art::new();
        for (key, value) in input.entries() {
            input.inserted(key, map.insert(ByteString::new(key), value));
        }
        Ok(ArtTree(map))
    }

    // `Art::get` takes `&K`: the crate has no lookup by `&[u8]`, so each
    // lookup copies the key into a `ByteString` (an allocation).
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(&ByteString::new(key)).copied()
    }

    fn for_each(&self, mut f: impl FnMut(&[u8], u64)) {
        for (k, v) in self.0.iter() {
            f(k.borrow(), *v);
        }
    }

    fn prefix(&self, prefix: &[u8], mut f: impl FnMut(&[u8], u64)) {
        let start = ByteString::new(prefix);
        let visit = |(k, v): (&ByteString, &u64)| f(k.borrow(), *v);
        match prefix_end(prefix) {
            Some(end) => self.0.range(start..ByteString::new(&end)).for_each(visit),
            None => self.0.range(start..).for_each(visit),
        }
    }

    fn range(&self, start: &[u8], end: &[u8], mut f: impl FnMut(&[u8], u64)) {
        for (k, v) in self.0.range(ByteString::new(start)..ByteString::new(end)) {
            f(k.borrow(), *v);
        }
    }

    fn notes(&self) -> Vec<String> {
        vec!["each lookup allocates a ByteString copy of the key (crate API)".into()]
    }
}
