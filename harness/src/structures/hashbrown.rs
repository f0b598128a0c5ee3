//! `hashbrown::HashMap<Box<[u8]>, u64>`: the unordered reference point.

use hashbrown::HashMap;

use super::{BuildInput, Structure};

/// A SwissTable hash map with boxed keys and hashbrown's default hasher.
#[derive(Debug)]
pub(crate) struct Hash(HashMap<Box<[u8]>, u64>);

impl Structure for Hash {
    const ORDERED: bool = false;

    // Grown from empty like the other structures (no `with_capacity`), so the
    // build includes its rehashes and the memory its load factor at this size.
    fn build(input: &BuildInput<'_>) -> Result<Self, String> {
        let mut map = HashMap::new();
        for (key, value) in input.entries() {
            input.inserted(key, map.insert(Box::from(key), value).is_none());
        }
        Ok(Hash(map))
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

    // Never called: `ORDERED` is false, the harness reports "n/a".
    fn for_each(&self, _: impl FnMut(&[u8], u64)) {}
    fn prefix(&self, _: &[u8], _: impl FnMut(&[u8], u64)) {}
    fn range(&self, _: &[u8], _: &[u8], _: impl FnMut(&[u8], u64)) {}

    fn memory_usage(&self) -> Option<usize> {
        // The table alone; the boxed keys are separate allocations.
        Some(self.0.allocation_size())
    }

    fn notes(&self) -> Vec<String> {
        vec![
            "unordered: no iteration or scans".into(),
            "self-reported = table only, not the boxed keys".into(),
        ]
    }
}
