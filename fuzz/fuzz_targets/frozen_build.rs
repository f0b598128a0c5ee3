//! Layers built from any entries: the sorted builder refuses entries out
//! of order (naming the keys) and builds the rest; the unsorted one keeps
//! each key's last value. Every layer built answers as a `BTreeMap` model,
//! passes `verify_structure`, and reads back from its bytes the same.

#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use memkv::{Error, FrozenLayer};
use memkv_fuzz::Key;

fuzz_target!(|entries: Vec<(Key, u64, bool)>| {
    let entries: Vec<(Vec<u8>, u64)> = entries
        .into_iter()
        .map(|(key, value, wide)| {
            // Values small or spread over all 64 bits, for the column's packing.
            (key.bytes(), if wide { value } else { value % 16 })
        })
        .collect();
    let mut model = BTreeMap::new();
    for (key, value) in &entries {
        model.insert(key.clone(), *value);
    }

    let sorted = FrozenLayer::from_sorted_iter(entries.iter().map(|(k, v)| (k, *v)));
    let first_disorder = entries.windows(2).find(|w| w[0].0 >= w[1].0);
    match (sorted, first_disorder) {
        (Ok(layer), None) => check(&layer, &model),
        (Err(Error::OutOfOrder { previous, got }), Some(w)) => {
            assert!(w[0].0 > w[1].0);
            assert_eq!((previous, got), (w[0].0.clone(), w[1].0.clone()));
        }
        (Err(Error::DuplicateKey { key }), Some(w)) => {
            assert_eq!(w[0].0, w[1].0);
            assert_eq!(key, w[0].0);
        }
        (other, disorder) => {
            panic!("sorted build: {other:?}, first pair out of order: {disorder:?}")
        }
    }
    let layer = FrozenLayer::from_unsorted_iter(entries.iter().map(|(k, v)| (k, *v))).unwrap();
    check(&layer, &model);

    let bytes: Vec<(Vec<u8>, Vec<u8>)> = model
        .iter()
        .map(|(k, v)| (k.clone(), v.to_le_bytes()[..(*v % 9) as usize].to_vec()))
        .collect();
    let layer = FrozenLayer::from_sorted_iter(bytes.iter().cloned()).unwrap();
    layer.verify_structure().unwrap();
    assert!(layer.iter().eq(bytes.iter().cloned()));
    for (key, value) in &bytes {
        assert_eq!(layer.get(key).as_ref(), Some(value));
    }
});

fn check(layer: &FrozenLayer<u64>, model: &BTreeMap<Vec<u8>, u64>) {
    layer.verify_structure().unwrap();
    assert_eq!(layer.len(), model.len());
    assert!(layer.iter().eq(model.iter().map(|(k, v)| (k.clone(), *v))));
    assert!(
        layer
            .iter()
            .rev()
            .eq(model.iter().rev().map(|(k, v)| (k.clone(), *v)))
    );
    for (ordinal, (key, value)) in model.iter().enumerate() {
        assert_eq!(layer.get(key), Some(*value));
        assert_eq!(layer.rank(key), Some(ordinal));
        let absent = [&key[..], b"\x00"].concat();
        assert_eq!(layer.get(&absent), model.get(&absent).copied());
    }
    let copy = FrozenLayer::<u64>::from_bytes(layer.as_bytes().to_vec()).unwrap();
    copy.verify_structure().unwrap();
    assert!(copy == *layer);
}
