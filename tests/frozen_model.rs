//! Model tests: a FrozenLayer must answer every query exactly as a
//! `BTreeMap<Vec<u8>, u64>` holding the same entries, over keys chosen to
//! stress tries (empty keys, 0x00 and 0xFF bytes, shared prefixes, prefix
//! chains, keys over 1 KiB).

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;

use memkv::FrozenLayer;
use memkv::frozen::automaton::Automaton;
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;

#[path = "common/hints.rs"]
mod hints;
#[path = "common/scratch.rs"]
mod scratch;

type Model = BTreeMap<Vec<u8>, u64>;

/// Keys over a tiny alphabet including 0x00 and 0xFF: lots of shared
/// prefixes, empty keys, and keys that are prefixes of others.
fn small_alphabet_key() -> impl Strategy<Value = Vec<u8>> {
    vec(
        prop_oneof![Just(0x00u8), Just(b'a'), Just(b'b'), Just(0xFF)],
        0..6,
    )
}

/// Keys over 1 KiB that share most of their bytes.
fn long_key() -> impl Strategy<Value = Vec<u8>> {
    (1024usize..1100, small_alphabet_key()).prop_map(|(len, tail)| {
        let mut key: Vec<u8> = (0..len).map(|i| b"usr/share/doc/"[i % 14]).collect();
        key.extend(tail);
        key
    })
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => small_alphabet_key(),
        2 => vec(any::<u8>(), 0..12),
        1 => long_key(),
    ]
}

/// Values of very different ranges, so packed widths vary from 0 to 64 bits.
fn value() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        0u64..4,
        (u64::MAX - 3)..=u64::MAX,
        1_000_000u64..1_000_100
    ]
}

/// A model map, plus every prefix of one short key (a prefix chain: "",
/// "a", "ab", ...). Long keys get their shared prefixes from `long_key`.
fn model() -> impl Strategy<Value = Model> {
    let chain = prop_oneof![small_alphabet_key(), vec(any::<u8>(), 0..10)];
    (btree_map(key(), value(), 0..48), chain, value()).prop_map(|(mut map, chain, v)| {
        for end in 0..=chain.len() {
            map.insert(chain[..end].to_vec(), v.wrapping_add(end as u64));
        }
        map
    })
}

/// Models large enough for a jump table (see `src/frozen/jump.rs`):
/// 300 to 1,500 keys under one to three stems of 4 to 30 bytes (paths,
/// runs of 0x00 or 0xFF, random bytes), each followed by a tail over a tiny
/// alphabet, plus every prefix of one stem's key, so that keys shorter than
/// the table's prefixes, as long as them and longer all occur.
fn jump_model() -> impl Strategy<Value = Model> {
    let stem = prop_oneof![
        Just(b"usr/share/doc/".to_vec()),
        Just(b"usr/share/locale/de/LC_MESSAGES/".to_vec()),
        Just(vec![0x00; 7]),
        Just(vec![0xFF; 26]),
        vec(any::<u8>(), 4..30),
    ];
    let tail = vec(
        prop_oneof![Just(0x00u8), Just(b'a'), Just(b'b'), Just(0xFF)],
        0..7,
    );
    let entries = vec((0usize..3, tail, value()), 300..1500);
    (vec(stem, 1..4), entries, value()).prop_map(|(stems, entries, v)| {
        let mut map = Model::new();
        for (stem, tail, value) in entries {
            map.insert(
                [stems[stem % stems.len()].as_slice(), &tail].concat(),
                value,
            );
        }
        let chain = [stems[0].as_slice(), b"ab\xFF\x00ab"].concat();
        for end in 0..=chain.len() {
            map.insert(chain[..end].to_vec(), v.wrapping_add(end as u64));
        }
        map
    })
}

/// The depth of `layer`'s jump table, from its `Debug` form (0: none).
fn jump_depth(layer: &FrozenLayer<u64>) -> usize {
    let debug = format!("{layer:?}");
    let at = debug.find("jump_depth: ").expect("Debug shows the depth") + 12;
    let digits = debug[at..].split(|c: char| !c.is_ascii_digit()).next();
    digits.unwrap().parse().unwrap()
}

/// Near misses of each key: one byte changed in each of its first 25.
fn changed_bytes(model: &Model) -> Vec<Vec<u8>> {
    let mut probes = Vec::new();
    for key in model.keys().step_by(7) {
        for at in 0..key.len().min(25) {
            let mut other = key.clone();
            other[at] ^= 0x01;
            probes.push(other);
        }
    }
    probes
}

/// Keys to look up: present ones, near misses around them, and random ones.
fn probes(model: &Model, random: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut probes = random.to_vec();
    for key in model.keys() {
        probes.push(key.clone());
        let mut longer = key.clone();
        longer.push(0);
        probes.push(longer);
        if let Some((_, shorter)) = key.split_last() {
            probes.push(shorter.to_vec());
        }
    }
    probes
}

fn bound_strategy() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        key().prop_map(Bound::Included),
        key().prop_map(Bound::Excluded),
        Just(Bound::Unbounded),
    ]
}

fn in_range(key: &[u8], start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> bool {
    let after_start = match start {
        Bound::Included(s) => key >= s.as_slice(),
        Bound::Excluded(s) => key > s.as_slice(),
        Bound::Unbounded => true,
    };
    let before_end = match end {
        Bound::Included(e) => key <= e.as_slice(),
        Bound::Excluded(e) => key < e.as_slice(),
        Bound::Unbounded => true,
    };
    after_start && before_end
}

fn as_slice_bound(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    bound.as_ref().map(Vec::as_slice)
}

/// Every query of `layer` against `model`.
fn assert_matches_model(layer: &FrozenLayer<u64>, model: &Model, probes: &[Vec<u8>]) {
    // Every layer built is one the structural check passes.
    layer.verify_structure().unwrap();
    assert_eq!(layer.len(), model.len());
    assert_eq!(layer.is_empty(), model.is_empty());

    // Iteration, both ways of consuming it.
    let entries: Vec<(Vec<u8>, u64)> = layer.iter().collect();
    let expected: Vec<(Vec<u8>, u64)> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
    assert_eq!(entries, expected);
    let mut lending = layer.iter();
    let mut model_entries = model.iter();
    while let Some((key, value)) = lending.next_entry() {
        assert_eq!(
            Some((key, value)),
            model_entries.next().map(|(k, v)| (k.as_slice(), *v))
        );
    }
    assert_eq!(model_entries.next(), None);
    // With the values in their stored form (a `u64`'s is itself).
    let mut encoded = layer.iter();
    let mut model_entries = model.iter();
    while let Some((key, value)) = encoded.next_encoded() {
        assert_eq!(
            Some((key, value)),
            model_entries.next().map(|(k, v)| (k.as_slice(), *v))
        );
    }
    assert_eq!(model_entries.next(), None);
    // Backwards, both ways too.
    let backwards: Vec<(Vec<u8>, u64)> = layer.iter().rev().collect();
    assert!(backwards.iter().eq(expected.iter().rev()));
    let mut lending = layer.iter();
    let mut model_entries = model.iter();
    while let Some((key, value)) = lending.next_back_entry() {
        assert_eq!(
            Some((key, value)),
            model_entries.next_back().map(|(k, v)| (k.as_slice(), *v))
        );
    }
    assert_eq!(model_entries.next_back(), None);
    // Lent from both ends, alternating, until they meet.
    let mut lending = layer.iter();
    let mut model_entries = model.iter();
    for turn in 0.. {
        let (got, want) = if turn % 2 == 0 {
            (lending.next_encoded(), model_entries.next())
        } else {
            (lending.next_back_encoded(), model_entries.next_back())
        };
        assert_eq!(got, want.map(|(k, v)| (k.as_slice(), *v)));
        if got.is_none() {
            break;
        }
    }
    assert_eq!(lending.next_encoded(), None);
    assert_eq!(lending.next_back_encoded(), None);
    // A clone taken part-way goes on from the same place, apart from the
    // walk it was cloned from (both ends begun).
    let mut it = layer.iter();
    let (first, last) = (it.next(), it.next_back());
    let copy = it.clone();
    let rest: Vec<_> = it.collect();
    let inner = if expected.len() >= 2 {
        &expected[1..expected.len() - 1]
    } else {
        &[][..]
    };
    assert_eq!(rest, inner);
    assert_eq!(
        copy.rev().collect::<Vec<_>>(),
        inner.iter().rev().cloned().collect::<Vec<_>>()
    );
    assert_eq!(
        (first.is_some(), last.is_some()),
        (!expected.is_empty(), expected.len() >= 2)
    );
    // A walk of the whole layer knows exactly how many entries are left.
    let left = expected.len().saturating_sub(1);
    let mut keys = layer.keys();
    keys.next();
    assert_eq!(keys.size_hint(), (left, Some(left)));
    assert!(keys.clone().eq(keys));
    let mut values = layer.values();
    values.next_back();
    assert_eq!(values.size_hint(), (left, Some(left)));
    assert!(values.clone().eq(values));
    // Keys and values apart, from both ends, meeting in the middle too.
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    let values: Vec<u64> = model.values().copied().collect();
    assert_eq!(layer.keys().collect::<Vec<_>>(), keys);
    assert!(layer.keys().rev().eq(keys.iter().rev().cloned()));
    assert_eq!(layer.values().collect::<Vec<_>>(), values);
    assert!(layer.values().rev().eq(values.iter().rev().copied()));
    let (mut lending, mut taken) = (layer.keys(), Vec::new());
    while let Some(key) = lending.next_key() {
        taken.push(key.to_vec());
        if let Some(last) = lending.next_back() {
            taken.push(last);
        }
    }
    taken.sort();
    assert_eq!(taken, keys);

    // Point queries, rank and nth; all probes at once, too.
    let want: Vec<Option<u64>> = probes.iter().map(|p| model.get(p).copied()).collect();
    assert_eq!(layer.get_many(probes), want, "get_many {probes:?}");
    for probe in probes {
        assert_eq!(layer.get(probe), model.get(probe).copied(), "get {probe:?}");
        assert_eq!(layer.get_encoded(probe), model.get(probe).copied());
        assert_eq!(layer.contains_key(probe), model.contains_key(probe));
        let expected_rank = model
            .contains_key(probe)
            .then(|| model.range(..probe.clone()).count());
        assert_eq!(layer.rank(probe), expected_rank, "rank {probe:?}");
    }
    // The stored keys that are prefixes of each probe, and of the probe
    // run on past a stored key.
    for probe in probes {
        for tail in [&b""[..], b"\x00", b"a\xFF"] {
            let query = [probe.as_slice(), tail].concat();
            let want: Vec<(&[u8], u64)> = (0..=query.len())
                .filter_map(|len| model.get(&query[..len]).map(|v| (&query[..len], *v)))
                .collect();
            let got: Vec<_> = layer.prefixes_of(&query).collect();
            assert_eq!(got, want, "prefixes of {query:?}");
            let mut lent = layer.prefixes_of(&query);
            for (taken, entry) in want.iter().enumerate() {
                assert!(hints::bounds(lent.size_hint(), want.len() - taken, false));
                assert!(lent.clone().eq(want[taken..].iter().copied()));
                assert_eq!(lent.next_encoded(), Some(*entry));
            }
            assert_eq!(lent.next_encoded(), None);
            assert_eq!(layer.longest_prefix_of(&query), want.last().copied());
        }
    }
    for (ordinal, entry) in expected.iter().enumerate() {
        assert_eq!(layer.nth(ordinal).as_ref(), Some(entry), "nth {ordinal}");
    }
    assert_eq!(layer.nth(model.len()), None);
    assert_eq!(layer.nth(usize::MAX), None);
    assert_eq!(layer.first_key_value(), expected.first().cloned());
    assert_eq!(layer.last_key_value(), expected.last().cloned());

    // Prefixes.
    for probe in probes.iter().take(20) {
        let got: Vec<(Vec<u8>, u64)> = layer.prefix(probe).collect();
        let want: Vec<(Vec<u8>, u64)> = expected
            .iter()
            .filter(|(k, _)| k.starts_with(probe))
            .cloned()
            .collect();
        assert_eq!(got, want, "prefix {probe:?}");
        let backwards: Vec<(Vec<u8>, u64)> = layer.prefix(probe).rev().collect();
        assert!(
            backwards.iter().eq(want.iter().rev()),
            "prefix {probe:?} backwards"
        );

        // The same through an automaton, whose size hint bounds what is
        // left by the keys after the last one found.
        let mut search = layer.search(StartsWith(probe));
        let mut found = 0;
        loop {
            let after = match found {
                0 => model.len(),
                n => model
                    .range::<Vec<u8>, _>((Bound::Excluded(&want[n - 1].0), Bound::Unbounded))
                    .count(),
            };
            assert_eq!(search.size_hint(), (0, Some(after)), "search {probe:?}");
            // Alternately copied and lent, which must agree.
            let entry = match found % 2 {
                0 => search.next(),
                _ => (search.next_encoded()).map(|(key, value)| (key.to_vec(), value)),
            };
            let Some(entry) = entry else { break };
            assert_eq!(Some(&entry), want.get(found), "search {probe:?}");
            found += 1;
        }
        assert_eq!(found, want.len(), "search {probe:?}");
    }
}

/// Keys that start with the given bytes: the fst crate's `Str` takes only
/// UTF-8. The state counts the bytes matched, `None` after a mismatch.
struct StartsWith<'a>(&'a [u8]);

impl Automaton for StartsWith<'_> {
    type State = Option<usize>;

    fn start(&self) -> Option<usize> {
        Some(0)
    }

    fn is_match(&self, matched: &Option<usize>) -> bool {
        *matched == Some(self.0.len())
    }

    fn can_match(&self, matched: &Option<usize>) -> bool {
        matched.is_some()
    }

    fn accept(&self, matched: &Option<usize>, byte: u8) -> Option<usize> {
        match *matched {
            Some(n) if n == self.0.len() => Some(n),
            Some(n) if self.0[n] == byte => Some(n + 1),
            _ => None,
        }
    }
}

/// A range forwards, backwards, and taken from both ends as `ends` says
/// (`true`: the front), until the ends meet.
fn assert_range_matches(
    layer: &FrozenLayer<u64>,
    model: &Model,
    start: &Bound<Vec<u8>>,
    end: &Bound<Vec<u8>>,
    ends: &[bool],
) {
    let range = || layer.range::<[u8], _>((as_slice_bound(start), as_slice_bound(end)));
    let got: Vec<(Vec<u8>, u64)> = range().collect();
    let want: Vec<(Vec<u8>, u64)> = model
        .iter()
        .filter(|(k, _)| in_range(k, start, end))
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    assert_eq!(got, want, "range {start:?}..{end:?}");
    let backwards: Vec<(Vec<u8>, u64)> = range().rev().collect();
    assert!(
        backwards.iter().eq(want.iter().rev()),
        "range {start:?}..{end:?} backwards: {backwards:?}"
    );

    let mut both = range();
    let mut expected: VecDeque<&(Vec<u8>, u64)> = want.iter().collect();
    for &front in ends
        .iter()
        .chain(std::iter::repeat_n(&true, want.len() + 1))
    {
        // The size hint bounds what is left, exactly when nothing bounds the
        // walk (ordinals count it).
        let (left, hint) = (expected.len(), both.size_hint());
        assert!(
            hints::bounds(hint, left, true),
            "range {start:?}..{end:?}: {left} left, hint {hint:?}"
        );
        if matches!((start, end), (Bound::Unbounded, Bound::Unbounded)) {
            assert_eq!(hint, (left, Some(left)), "whole layer");
        }
        let (got, want) = if front {
            (both.next(), expected.pop_front())
        } else {
            (both.next_back(), expected.pop_back())
        };
        assert_eq!(
            got.as_ref(),
            want,
            "range {start:?}..{end:?} from both ends {ends:?}"
        );
    }
    assert_eq!(both.next_back(), None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn queries_match_the_model(model in model(), random in vec(key(), 0..8)) {
        let layer = FrozenLayer::from_sorted_iter(model.iter().map(|(k, v)| (k, *v))).unwrap();
        assert_matches_model(&layer, &model, &probes(&model, &random));
    }

    #[test]
    fn ranges_match_the_model(
        model in model(),
        bounds in vec((bound_strategy(), bound_strategy()), 1..8),
        ends in vec(any::<bool>(), 0..24),
    ) {
        let layer = FrozenLayer::from_sorted_iter(model.iter().map(|(k, v)| (k, *v))).unwrap();
        for (start, end) in &bounds {
            assert_range_matches(&layer, &model, start, end, &ends);
        }
        // Bounds on present keys, in both orders (so inverted ranges too) and
        // all four inclusive/exclusive combinations.
        let keys: Vec<&Vec<u8>> = model.keys().collect();
        for pair in keys.windows(2).take(6) {
            for (a, b) in [(pair[0], pair[1]), (pair[1], pair[0]), (pair[0], pair[0])] {
                for start in [Bound::Included(a.clone()), Bound::Excluded(a.clone())] {
                    for end in [Bound::Included(b.clone()), Bound::Excluded(b.clone())] {
                        assert_range_matches(&layer, &model, &start, &end, &ends);
                    }
                }
            }
        }
    }

    #[test]
    fn unsorted_input_keeps_the_last_value(entries in vec((key(), value()), 0..64)) {
        let mut model = Model::new();
        for (k, v) in &entries {
            model.insert(k.clone(), *v);
        }
        let layer = FrozenLayer::from_unsorted_iter(entries).unwrap();
        assert_matches_model(&layer, &model, &probes(&model, &[]));
    }

    #[test]
    fn layers_are_equal_when_their_entries_are(
        a in model(),
        change in (key(), prop::option::of(value())),
        changed in any::<bool>(),
    ) {
        let mut b = a.clone();
        if changed {
            match change.1 {
                Some(v) => b.insert(change.0, v),
                None => b.remove(&change.0),
            };
        }
        let layer = |m: &Model| FrozenLayer::from_sorted_iter(m.iter().map(|(k, v)| (k, *v))).unwrap();
        let (x, y) = (layer(&a), layer(&b));
        prop_assert_eq!(x == y, a == b);
        prop_assert_eq!(y == x, a == b);
        prop_assert!(x == x.clone());
    }

    #[test]
    fn bytes_round_trip(model in model(), random in vec(key(), 0..4)) {
        let layer = FrozenLayer::from_sorted_iter(model.iter().map(|(k, v)| (k, *v))).unwrap();
        let copy = FrozenLayer::<u64>::from_bytes(layer.as_bytes().to_vec()).unwrap();
        assert_eq!(copy.as_bytes(), layer.as_bytes());
        assert_matches_model(&copy, &model, &probes(&model, &random));
    }
}

proptest! {
    // Models of hundreds of keys: fewer cases.
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Lookups that start where the jump table says answer as the model,
    /// present keys and absent ones, on the built layer and on its bytes
    /// read back (which checks every slot).
    #[test]
    fn jump_table_lookups_match_the_model(model in jump_model(), random in vec(key(), 0..4)) {
        let layer = FrozenLayer::from_sorted_iter(model.iter().map(|(k, v)| (k, *v))).unwrap();
        prop_assert!(jump_depth(&layer) >= 4, "{layer:?}");
        let mut probes = probes(&model, &random);
        probes.extend(changed_bytes(&model));
        assert_matches_model(&layer, &model, &probes);
        let copy = FrozenLayer::<u64>::from_bytes(layer.as_bytes().to_vec()).unwrap();
        let want: Vec<Option<u64>> = probes.iter().map(|p| model.get(p).copied()).collect();
        prop_assert_eq!(copy.get_many(&probes), want);
    }
}

proptest! {
    // Each case writes, fsyncs and maps a file: fewer cases.
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn save_open_round_trip(model in model(), random in vec(key(), 0..4)) {
        let layer = FrozenLayer::from_sorted_iter(model.iter().map(|(k, v)| (k, *v))).unwrap();
        let dir = scratch::dir();
        let path = dir.path().join("layer.memkv");
        layer.save(&path).unwrap();
        let opened = FrozenLayer::<u64>::open(&path).unwrap();
        if cfg!(target_os = "wasi") {
            // No file mappings there: `open` read the file into memory.
            assert_eq!(opened.mapped_bytes(), 0);
            assert!(opened.memory_usage() >= layer.as_bytes().len());
        } else {
            assert_eq!(opened.mapped_bytes(), layer.as_bytes().len());
            assert_eq!(opened.memory_usage(), 0);
        }
        assert_matches_model(&opened, &model, &probes(&model, &random));
        opened.verify().unwrap();
    }
}

/// `prefixes_of`'s size hint (at most one entry per length of the key still
/// to walk, and no more than the layer holds) and `Debug`.
#[test]
fn prefixes_of_size_hints() {
    let keys = ["", "a", "ab", "abc", "b", "bc", "bcd"];
    let layer = FrozenLayer::from_sorted_iter(keys.into_iter().zip(0u64..)).unwrap();
    let mut prefixes = layer.prefixes_of("abcd");
    assert_eq!(prefixes.size_hint(), (0, Some(5)));
    assert_eq!(prefixes.next(), Some((&b""[..], 0)));
    assert_eq!(prefixes.size_hint(), (0, Some(4)), "after \"\"");
    prefixes.next();
    assert_eq!(prefixes.size_hint(), (0, Some(3)), "after \"a\"");
    assert_eq!(prefixes.nth(1), Some((&b"abc"[..], 3)));
    assert_eq!(
        prefixes.size_hint(),
        (0, Some(0)),
        "no key goes on from \"abc\""
    );
    assert_eq!(prefixes.next(), None);
    assert_eq!(
        format!("{prefixes:?}"),
        r#"PrefixesOf { key: b"abcd", at: None, .. }"#
    );
    assert_eq!(layer.prefixes_of(&[b'a'; 20]).size_hint(), (0, Some(7)));
}

#[test]
fn keys_and_values_debug() {
    let layer = FrozenLayer::from_sorted_iter([("a", 1u64)]).unwrap();
    let (keys, values) = (
        format!("{:?}", layer.keys()),
        format!("{:?}", layer.values()),
    );
    assert!(keys.starts_with("Keys(Iter {"), "{keys}");
    assert!(values.starts_with("Values(Iter {"), "{values}");
}

/// Byte-string values, through the same kinds of keys.
mod byte_values {
    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn byte_values_match_the_model(model in btree_map(key(), vec(any::<u8>(), 0..40), 0..40)) {
            let layer = FrozenLayer::<Vec<u8>>::from_sorted_iter(model.clone()).unwrap();
            let copy = FrozenLayer::<Vec<u8>>::from_bytes(layer.as_bytes().to_vec()).unwrap();
            for layer in [&layer, &copy] {
                layer.verify_structure().unwrap();
                let entries: Vec<(Vec<u8>, Vec<u8>)> = layer.iter().collect();
                let expected: Vec<(Vec<u8>, Vec<u8>)> = model.clone().into_iter().collect();
                assert_eq!(entries, expected);
                for (k, v) in &model {
                    assert_eq!(layer.get(k).as_ref(), Some(v));
                }
            }
        }
    }
}
