//! Helpers shared by the model tests.

use std::collections::BTreeMap;

use proptest::sample::Index;

/// `keys` (random, mostly absent) with keys of `model` picked by `present`
/// interleaved at the front: a batch of lookups that hit and miss.
pub(crate) fn with_stored_keys<V>(
    keys: &[Vec<u8>],
    present: &[Index],
    model: &BTreeMap<Vec<u8>, V>,
) -> Vec<Vec<u8>> {
    let stored: Vec<&Vec<u8>> = model.keys().collect();
    let mut keys = keys.to_vec();
    if !stored.is_empty() {
        for (i, pick) in present.iter().enumerate() {
            keys.insert(i.min(keys.len()), pick.get(&stored).to_vec());
        }
    }
    keys
}
