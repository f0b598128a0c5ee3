//! `FrozenLayer::search` with the fst crate's Levenshtein automaton, which
//! the `levenshtein` feature turns on; CI runs this file with it
//! (`cargo test --features levenshtein --test frozen_levenshtein`).
#![cfg(feature = "levenshtein")]

use std::collections::BTreeMap;

use memkv::FrozenLayer;
use memkv::frozen::automaton::{Automaton, Levenshtein, Str};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;

/// The edit distance of `a` and `b` in Unicode scalar values, as the fst
/// crate's automaton counts it (one row at a time).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substituted = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

fn word() -> impl Strategy<Value = String> {
    vec(prop::sample::select(vec!['a', 'b', 'c', '/', 'é']), 0..7)
        .prop_map(|chars| chars.into_iter().collect())
}

proptest! {
    #[test]
    fn search_finds_the_keys_within_the_distance(
        model in btree_map(word(), any::<u32>(), 0..60),
        query in word(),
        max in 0u32..3,
    ) {
        let layer = FrozenLayer::from_sorted_iter(model.iter().map(|(k, v)| (k, *v))).unwrap();
        let automaton = Levenshtein::new(&query, max).unwrap();
        let found: BTreeMap<String, u32> = layer
            .search(&automaton)
            .map(|(k, v)| (String::from_utf8(k).unwrap(), v))
            .collect();
        let want: BTreeMap<String, u32> = model
            .iter()
            .filter(|(k, _)| distance(k, &query) <= max as usize)
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        prop_assert_eq!(found, want);

        // Combined with another automaton: within the distance and
        // starting with "a".
        let both = automaton.intersection(Str::new("a").starts_with());
        let found: Vec<Vec<u8>> = layer.search(both).map(|(k, _)| k).collect();
        let want: Vec<Vec<u8>> = model
            .keys()
            .filter(|k| k.starts_with('a') && distance(k, &query) <= max as usize)
            .map(|k| k.clone().into_bytes())
            .collect();
        prop_assert_eq!(found, want);
    }
}

/// The fst crate's automaton misses some matches among multi-byte
/// characters (BurntSushi/fst issues 38 and 160), and the docs say so. The
/// layer answers as the fst crate's own `Set` does; if a new fst release
/// finds these keys, this fails, and the docs' warning should go.
#[test]
fn multibyte_matches_the_fst_crate_misses_are_missed_alike() {
    use fst::IntoStreamer;

    let keys = ["a\u{783}", "\u{782}", "\u{783}", "\u{784}", "\u{7F8}"];
    let layer = FrozenLayer::from_sorted_iter(keys.iter().map(|k| (*k, ()))).unwrap();
    let found: Vec<String> = (layer.search(Levenshtein::new("\u{783}", 1).unwrap()))
        .map(|(k, _)| String::from_utf8(k).unwrap())
        .collect();
    let set = fst::Set::from_iter(keys).unwrap();
    let by_fst = (set.search(Levenshtein::new("\u{783}", 1).unwrap()))
        .into_stream()
        .into_strs()
        .unwrap();
    assert_eq!(found, by_fst);
    let within_one: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|k| distance(k, "\u{783}") <= 1)
        .collect();
    assert_eq!(within_one.len(), 5, "every key is within 1");
    assert_eq!(
        found,
        ["a\u{783}", "\u{783}", "\u{7F8}"],
        "the known misses"
    );
}
