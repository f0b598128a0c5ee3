//! HybridMap against a `BTreeMap` model: random interleavings of inserts,
//! removes, lookups, scans and merges (synchronous, background, and
//! automatic by the policy), over keys that stress tries.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;

use memkv::{HybridConfig, HybridMap};
use proptest::prelude::*;

mod common;

/// Keys over a tiny alphabet with the trie-hostile bytes, so that prefixes,
/// shared paths and the empty key come up often; now and then a long key
/// (over 254 bytes, stored out of line in FastArt).
fn key() -> impl Strategy<Value = Vec<u8>> {
    let short = prop::collection::vec(
        prop::sample::select(vec![0x00u8, 0x01, b'a', b'b', 0xFF]),
        0..5,
    );
    prop_oneof![
        8 => short,
        1 => (300usize..310, prop::sample::select(vec![b'a', 0xFF])).prop_map(|(len, last)| {
            let mut key = vec![b'a'; len];
            key.push(last);
            key
        }),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Insert(Vec<u8>, u64),
    Remove(Vec<u8>),
    Get(Vec<u8>),
    /// Some keys, present ones among them, looked up at once.
    GetMany(Vec<Vec<u8>>, Vec<prop::sample::Index>),
    /// Entries, some with stored keys, added by `extend` `repeats` times
    /// over (each time with other values): more than the 256 it looks up
    /// at once, and keys repeated across its batches.
    Extend(Vec<(Vec<u8>, u64)>, Vec<prop::sample::Index>, usize),
    /// A range forwards, backwards, then from both ends as the flags say
    /// (`true`: the front), with a write to the map halfway that the
    /// iterator, a snapshot, must not see.
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>, Vec<bool>, (Vec<u8>, u64)),
    Prefix(Vec<u8>),
    Iterate,
    Edges,
    Freeze,
    Background,
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        key().prop_map(Bound::Included),
        key().prop_map(Bound::Excluded),
        Just(Bound::Unbounded),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        29 => op_without_merges(),
        2 => Just(Op::Freeze),
        2 => Just(Op::Background),
    ]
}

fn op_without_merges() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (key(), any::<u64>()).prop_map(|(k, v)| Op::Insert(k, v)),
        6 => key().prop_map(Op::Remove),
        4 => key().prop_map(Op::Get),
        1 => (prop::collection::vec(key(), 0..24), prop::collection::vec(any::<prop::sample::Index>(), 0..24))
            .prop_map(|(keys, present)| Op::GetMany(keys, present)),
        1 => (prop::collection::vec((key(), any::<u64>()), 0..30), prop::collection::vec(any::<prop::sample::Index>(), 0..8), 1..12usize)
            .prop_map(|(entries, present, repeats)| Op::Extend(entries, present, repeats)),
        2 => (bound(), bound(), prop::collection::vec(any::<bool>(), 0..24), (key(), any::<u64>()))
            .prop_map(|(a, b, ends, write)| Op::Range(a, b, ends, write)),
        2 => key().prop_map(Op::Prefix),
        1 => Just(Op::Iterate),
        2 => Just(Op::Edges),
    ]
}

fn model_range(
    model: &BTreeMap<Vec<u8>, u64>,
    start: &Bound<Vec<u8>>,
    end: &Bound<Vec<u8>>,
) -> Vec<(Vec<u8>, u64)> {
    // BTreeMap::range panics on inverted ranges; the map yields nothing.
    model
        .iter()
        .filter(|(k, _)| {
            let above = match start {
                Bound::Included(s) => *k >= s,
                Bound::Excluded(s) => *k > s,
                Bound::Unbounded => true,
            };
            let below = match end {
                Bound::Included(e) => *k <= e,
                Bound::Excluded(e) => *k < e,
                Bound::Unbounded => true,
            };
            above && below
        })
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

/// Runs `ops` on a map with `config`, whose merges build parts of
/// `part_keys` keys, and on the model.
fn run(config: HybridConfig, part_keys: usize, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut map: HybridMap<u64> = config.part_keys(part_keys).build();
    let mut model = BTreeMap::new();
    for op in ops {
        match op {
            Op::Insert(k, v) => prop_assert_eq!(map.insert(&k, v), model.insert(k, v)),
            Op::Remove(k) => prop_assert_eq!(map.remove(&k), model.remove(&k)),
            Op::Get(k) => {
                prop_assert_eq!(map.get(&k), model.get(&k).copied());
                prop_assert_eq!(map.contains_key(&k), model.contains_key(&k));
                prop_assert_eq!(map.get_key_value(&k), model.get(&k).map(|v| (&k, *v)));
            }
            Op::GetMany(keys, present) => {
                let keys = common::with_stored_keys(&keys, &present, &model);
                let want: Vec<Option<u64>> = keys.iter().map(|k| model.get(k).copied()).collect();
                prop_assert_eq!(map.get_many(&keys), want);
            }
            Op::Extend(entries, present, repeats) => {
                let keys: Vec<_> = entries.iter().map(|(k, _)| k.clone()).collect();
                let keys = common::with_stored_keys(&keys, &present, &model);
                let values = entries.iter().map(|(_, v)| *v).chain([7]).cycle();
                let once: Vec<_> = keys.into_iter().zip(values).collect();
                let all: Vec<(Vec<u8>, u64)> = (0..repeats as u64)
                    .flat_map(|r| {
                        once.iter()
                            .map(move |(k, v)| (k.clone(), v.wrapping_add(r)))
                    })
                    .collect();
                if repeats % 2 == 0 {
                    map.extend(all.iter().map(|(k, v)| (k, *v)));
                } else {
                    // The shared-reference `Extend`, as threads use it.
                    let mut shared = &map;
                    shared.extend(all.iter().map(|(k, v)| (k, *v)));
                }
                model.extend(all);
            }
            Op::Range(start, end, ends, (key, value)) => {
                let range = || map.range::<[u8], _>((as_ref(&start), as_ref(&end)));
                let want = model_range(&model, &start, &end);
                prop_assert_eq!(range().collect::<Vec<_>>(), want.clone());
                let backwards: Vec<_> = range().rev().collect();
                prop_assert!(backwards.iter().eq(want.iter().rev()));
                let mut both = range();
                let mut expected: VecDeque<_> = want.into_iter().collect();
                let rest = std::iter::repeat_n(&true, expected.len() + 1);
                for (i, &front) in ends.iter().chain(rest).enumerate() {
                    if i == ends.len() / 2 {
                        prop_assert_eq!(map.insert(&key, value), model.insert(key.clone(), value));
                    }
                    let (got, want) = if front {
                        (both.next(), expected.pop_front())
                    } else {
                        (both.next_back(), expected.pop_back())
                    };
                    prop_assert_eq!(got, want);
                }
            }
            Op::Prefix(p) => {
                let got: Vec<_> = map.prefix(&p).collect();
                let want: Vec<_> = model
                    .iter()
                    .filter(|(k, _)| k.starts_with(&p))
                    .map(|(k, v)| (k.clone(), *v))
                    .collect();
                let backwards: Vec<_> = map.prefix(&p).rev().collect();
                prop_assert!(backwards.iter().eq(want.iter().rev()));
                prop_assert_eq!(got, want);
            }
            Op::Iterate => {
                // The lending way, too.
                let mut got = Vec::new();
                let mut it = map.iter();
                while let Some((k, v)) = it.next_entry() {
                    got.push((k.to_vec(), v));
                }
                let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
                prop_assert_eq!(&got, &want);
                let mut it = map.iter();
                got.clear();
                while let Some((k, v)) = it.next_back_entry() {
                    got.push((k.to_vec(), v));
                }
                prop_assert!(got.iter().eq(want.iter().rev()));
                prop_assert!(map.keys().eq(model.keys().cloned()));
                prop_assert!(map.keys().rev().eq(model.keys().rev().cloned()));
                prop_assert!(map.values().eq(model.values().copied()));
                prop_assert!(map.values().rev().eq(model.values().rev().copied()));
            }
            Op::Edges => {
                let first = model.first_key_value().map(|(k, v)| (k.clone(), *v));
                let last = model.last_key_value().map(|(k, v)| (k.clone(), *v));
                prop_assert_eq!(map.first_key_value(), first);
                prop_assert_eq!(map.last_key_value(), last);
            }
            Op::Freeze => {
                map.freeze().unwrap();
                let stats = map.stats();
                // No other thread writes: everything is in the base now,
                // unless a background merge sealed it first and we merged
                // what little came after.
                prop_assert_eq!(stats.sealed_deltas, 0);
                prop_assert_eq!(stats.base_keys, model.len());
                prop_assert_eq!(stats.delta_entries, 0);
                // Parts hold between half and twice about `part_keys`
                // keys (the last may be smaller).
                let len = model.len();
                prop_assert!(stats.base_parts >= len.div_ceil(2 * part_keys).max(1));
                prop_assert!(stats.base_parts <= 1 + 4 * len / part_keys);
            }
            Op::Background => map.merge_in_background(),
        }
        prop_assert_eq!(map.len(), model.len());
        prop_assert_eq!(map.is_empty(), model.is_empty());
    }
    // Whatever the merges did meanwhile, a final full comparison.
    let got: Vec<_> = map.iter().collect();
    let want: Vec<_> = model.into_iter().collect();
    prop_assert_eq!(&got, &want);
    map.freeze().unwrap();
    let stats = map.stats();
    prop_assert_eq!(stats.failed_merges, 0);
    prop_assert_eq!(stats.last_merge_at.is_some(), stats.merges > 0);
    // The owned iterator outlives the map it came from.
    prop_assert_eq!(map.into_iter().collect::<Vec<_>>(), want);
    Ok(())
}

fn as_ref(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Merges only when asked, synchronously or in the background.
    #[test]
    fn manual_merges(ops in prop::collection::vec(op(), 0..80)) {
        run(HybridConfig::new().manual(), 4, ops)?;
    }

    /// The policy merges in the background every few writes, so reads and
    /// writes interleave with running merges.
    #[test]
    fn frequent_background_merges(ops in prop::collection::vec(op(), 0..80)) {
        run(HybridConfig::new().min_delta_keys(3).key_ratio(0.2), 2, ops)?;
    }

    /// Long runs of writes with no merge: the fresh delta outgrows the key
    /// filter it started with (sized for 64 keys here) and rebuilds it, more
    /// than once; then one merge.
    #[test]
    fn a_delta_outgrows_its_filter(
        ops in prop::collection::vec(op_without_merges(), 300..600),
        more in prop::collection::vec(op(), 0..40),
    ) {
        let ops = ops.into_iter().chain([Op::Freeze]).chain(more).collect();
        run(HybridConfig::new().manual().min_delta_keys(0), 64, ops)?;
    }

    /// The policy merges inline, in the writing thread.
    #[test]
    fn inline_merges(ops in prop::collection::vec(op(), 0..80)) {
        run(HybridConfig::new().min_delta_keys(2).key_ratio(0.3).background(false), HybridConfig::DEFAULT_PART_KEYS, ops)?;
    }
}

#[test]
fn trie_hostile_keys_survive_merges() {
    let keys: Vec<Vec<u8>> = vec![
        vec![],
        vec![0x00],
        vec![0x00, 0x00],
        vec![0xFF],
        vec![0xFF, 0xFF, 0xFF],
        b"a".to_vec(),
        b"ab".to_vec(),
        b"abc".to_vec(),
        vec![b'a'; 1000],
        [vec![b'a'; 1000], vec![0x00]].concat(),
    ];
    let map = HybridMap::new();
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(map.insert(k, i as u64), None);
    }
    map.freeze().unwrap();
    // Tombstones over the base for every other key, then re-insert one.
    for k in keys.iter().step_by(2) {
        assert!(map.remove(k).is_some());
    }
    assert_eq!(map.insert(&keys[0], 99), None);
    let mut want: BTreeMap<Vec<u8>, u64> = keys
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(i, k)| (k.clone(), i as u64))
        .collect();
    want.insert(vec![], 99);
    let check = |map: &HybridMap<u64>| {
        assert_eq!(map.iter().collect::<BTreeMap<_, _>>(), want);
        assert_eq!(map.len(), want.len());
        assert_eq!(map.first_key_value(), Some((vec![], 99)));
        assert_eq!(map.last_key_value(), Some((vec![0xFF], 3)));
        assert_eq!(map.prefix([b'a'; 3]).count(), 1);
    };
    check(&map);
    let stats = map.stats();
    assert_eq!((stats.delta_tombstones, stats.base_keys), (4, keys.len()));
    map.freeze().unwrap();
    check(&map);
    assert_eq!(map.stats().base_keys, want.len());
}

/// A panic in the iterator `extend` reads leaves the map valid, with every
/// entry of the batches written before it (256 entries each) and none of
/// the batch it was reading.
#[test]
fn extend_interrupted_by_a_panicking_iterator_keeps_what_it_wrote() {
    let key = |i: u64| format!("usr/lib/{:03}/{i}", i % 7).into_bytes();
    let mut map: HybridMap<u64> = (0..1000).map(|i| (key(i), i)).collect();
    map.freeze().unwrap();
    let mut want: BTreeMap<Vec<u8>, u64> = (0..1000).map(|i| (key(i), i)).collect();
    // Updates of base keys and new keys, alternating; the panic comes in
    // the third batch.
    let entry = |n: u64| (key(if n % 2 == 0 { n } else { 5000 + n }), 10_000 + n);
    let entries = (0..600).map(|n| {
        assert!(n != 520, "the iterator panics");
        entry(n)
    });
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| map.extend(entries)));
    assert!(result.is_err());
    want.extend((0..512).map(entry));
    assert_eq!(map.len(), want.len());
    assert_eq!(map.iter().collect::<BTreeMap<_, _>>(), want);
    map.freeze().unwrap();
    assert_eq!(map.iter().collect::<BTreeMap<_, _>>(), want);
}
