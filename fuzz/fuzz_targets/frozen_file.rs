//! Layer files with valid checksums and any contents. `from_bytes` and
//! `verify_structure` must never panic; a file both accept must answer
//! every query without a panic, and its answers must agree with each
//! other (as `tests/frozen_forged.rs` checks for its forgeries).
//!
//! The input is resealed (its last four bytes made the CRC-32 of the rest),
//! so the fuzzer gets past the checksum to the structure behind it. Start
//! it from valid layers: `cargo run --manifest-path fuzz/Cargo.toml
//! --example seeds` writes them into `fuzz/corpus/frozen_file`.

#![no_main]

use std::fmt::Debug;

use libfuzzer_sys::fuzz_target;
use memkv::frozen::automaton::{Automaton, Str};
use memkv::{FrozenLayer, FrozenValue};

/// Layers claiming more keys than this are not queried: a valid file can
/// claim 2^63 keys in a few hundred bytes, and a walk over them all never
/// ends (the docs say to look at `len` first).
const MAX_KEYS: usize = 2_000;

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    if let Some(body) = bytes.len().checked_sub(4) {
        let crc = crc32fast::hash(&bytes[..body]);
        bytes[body..].copy_from_slice(&crc.to_le_bytes());
    }
    check::<u64>(bytes.clone());
    check::<Vec<u8>>(bytes);
});

fn check<V: FrozenValue + Clone + PartialEq + Debug>(bytes: Vec<u8>) {
    let Ok(layer) = FrozenLayer::<V>::from_bytes(bytes) else {
        return;
    };
    if layer.len() > MAX_KEYS || layer.verify_structure().is_err() {
        return;
    }
    query_everything(&layer);
}

/// Every kind of query, and the checks that the answers agree.
fn query_everything<V: FrozenValue + Clone + PartialEq + Debug>(layer: &FrozenLayer<V>) {
    let entries: Vec<(Vec<u8>, V)> = layer.iter().collect();
    assert_eq!(entries.len(), layer.len());
    assert!(entries.windows(2).all(|w| w[0].0 < w[1].0));
    let mut backwards: Vec<_> = layer.iter().rev().collect();
    backwards.reverse();
    assert_eq!(backwards, entries);
    for (ordinal, (key, value)) in entries.iter().enumerate() {
        assert_eq!(layer.get(key).as_ref(), Some(value));
        assert_eq!(layer.rank(key), Some(ordinal));
        assert_eq!(
            layer.nth(ordinal).as_ref(),
            Some(&(key.clone(), value.clone()))
        );
    }
    assert_eq!(layer.nth(layer.len()), None);
    assert_eq!(layer.first_key_value().as_ref(), entries.first());
    assert_eq!(layer.last_key_value().as_ref(), entries.last());

    // Keys to look up: each key, and neighbours that are absent or hold
    // it as a prefix.
    let mut probes: Vec<Vec<u8>> = vec![Vec::new(), vec![0xFF; 3]];
    for (key, _) in entries.iter().take(200) {
        probes.push(key.clone());
        probes.push([&key[..], b"\x00"].concat());
        if let Some((_, shorter)) = key.split_last() {
            probes.push(shorter.to_vec());
        }
    }
    let many = layer.get_many(&probes);
    for (probe, got) in probes.iter().zip(many) {
        let found = entries.binary_search_by(|(key, _)| key.cmp(probe));
        assert_eq!(got.as_ref(), found.ok().map(|i| &entries[i].1));
        assert_eq!(layer.get(probe), got);
        assert_eq!(layer.contains_key(probe), got.is_some());
        let covering: Vec<Vec<u8>> = layer
            .prefixes_of(probe)
            .map(|(key, _)| key.to_vec())
            .collect();
        let want: Vec<Vec<u8>> = entries
            .iter()
            .filter(|(key, _)| probe.starts_with(key))
            .map(|(key, _)| key.clone())
            .collect();
        assert_eq!(covering, want);
        let longest = layer.longest_prefix_of(probe).map(|(key, _)| key.to_vec());
        assert_eq!(longest.as_ref(), want.last());
    }
    for pair in probes.chunks(2).take(40) {
        let (a, b) = (&pair[0], pair.last().unwrap());
        let inside = |key: &Vec<u8>| a <= key && key < b;
        let want: Vec<_> = entries
            .iter()
            .filter(|(key, _)| inside(key))
            .cloned()
            .collect();
        assert_eq!(layer.range(&a[..]..&b[..]).collect::<Vec<_>>(), want);
        let mut back: Vec<_> = layer.range(&a[..]..&b[..]).rev().collect();
        back.reverse();
        assert_eq!(back, want);
        let under: Vec<_> = entries
            .iter()
            .filter(|(key, _)| key.starts_with(a))
            .cloned()
            .collect();
        assert_eq!(layer.prefix(a).collect::<Vec<_>>(), under);
        if let Ok(text) = std::str::from_utf8(a) {
            let found: Vec<Vec<u8>> = layer
                .search(Str::new(text).starts_with())
                .map(|(key, _)| key)
                .collect();
            let want: Vec<Vec<u8>> = under.into_iter().map(|(key, _)| key).collect();
            assert_eq!(found, want);
        }
    }
}
