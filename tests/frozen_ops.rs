//! Model tests of the set operations over frozen layers (`OpBuilder`): each
//! of union, intersection, difference and symmetric difference must yield
//! exactly what the same operation over `BTreeMap`s of the streams' entries
//! gives, for whole layers, ranges, prefixes and streams partly read from
//! either end, over keys that stress a trie.

use std::collections::BTreeMap;
use std::ops::Bound;

use memkv::FrozenLayer;
use memkv::frozen::{IndexedValue, Iter, OpBuilder};
use proptest::collection::{btree_map, btree_set, vec};
use proptest::prelude::*;

#[allow(dead_code)] // `Counting` counts bytes for other tests
#[path = "common/dfa.rs"]
mod dfa;
#[path = "common/hints.rs"]
mod hints;
#[path = "common/radix_keys.rs"]
mod radix_keys;

use radix_keys::radix_key;

type Model = BTreeMap<Vec<u8>, u64>;
type Entries = Vec<(Vec<u8>, Vec<IndexedValue<u64>>)>;

/// How a stream is cut from its layer before it is added.
#[derive(Clone, Debug)]
enum Cut {
    Whole,
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>),
    Prefix(Vec<u8>),
}

#[derive(Clone, Debug)]
struct Stream {
    layer: Model,
    cut: Cut,
    /// Entries read from the front and from the back before the stream is
    /// added.
    skip_front: usize,
    skip_back: usize,
    /// A search of the whole layer with this automaton instead of `cut`
    /// (read from the front only: `skip_back` does not apply).
    search: Option<dfa::Query>,
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        Just(Bound::Unbounded),
        radix_key().prop_map(Bound::Included),
        radix_key().prop_map(Bound::Excluded),
    ]
}

fn cut() -> impl Strategy<Value = Cut> {
    prop_oneof![
        3 => Just(Cut::Whole),
        1 => (bound(), bound()).prop_map(|(start, end)| Cut::Range(start, end)),
        1 => radix_key().prop_map(|key| Cut::Prefix(key.into_iter().take(2).collect())),
    ]
}

/// Streams over layers drawn from one pool of keys, so that they overlap:
/// each layer takes a random share of the pool (from none to all of it), so
/// that one layer may be far larger than another and its stream must skip
/// ahead by seeking.
fn streams() -> impl Strategy<Value = Vec<Stream>> {
    let pool = btree_set(radix_key(), 0..300).prop_map(|keys| keys.into_iter().collect::<Vec<_>>());
    (pool, 0usize..6).prop_flat_map(|(pool, count)| {
        let size = pool.len();
        let stream = (
            prop_oneof![Just(1u32), Just(2), Just(10), Just(100)],
            vec(any::<(u32, u64)>(), size),
            cut(),
            prop_oneof![3 => Just(0usize), 1 => 0usize..20],
            prop_oneof![3 => Just(0usize), 1 => 0usize..20],
            prop::option::weighted(
                0.3,
                (
                    any::<u8>(),
                    dfa::dfa(),
                    any::<prop::sample::Index>(),
                    0usize..8,
                ),
            ),
        );
        vec(stream, count).prop_map(move |streams| {
            (streams.into_iter())
                .map(|(density, draws, cut, skip_front, skip_back, search)| {
                    // Keep a key with chance `density` per cent.
                    let layer: Model = (pool.iter().zip(draws))
                        .filter(|(_, (draw, _))| draw % 100 < density)
                        .map(|(key, (_, value))| (key.clone(), value))
                        .collect();
                    let keys: Vec<Vec<u8>> = layer.keys().cloned().collect();
                    let search = search.map(|(kind, automaton, pick, cut)| {
                        dfa::Query::new(kind, automaton, &keys, pick, cut)
                    });
                    Stream {
                        layer,
                        cut,
                        skip_front,
                        skip_back,
                        search,
                    }
                })
                .collect()
        })
    })
}

/// The stream's entries as `OpBuilder` will see them.
fn model_entries(stream: &Stream) -> Vec<(Vec<u8>, u64)> {
    let all = stream
        .layer
        .iter()
        .map(|(key, &value)| (key.clone(), value));
    if let Some(query) = &stream.search {
        return (all.filter(|(key, _)| dfa::with_query!(query, |a| dfa::accepts(&a, key))))
            .skip(stream.skip_front)
            .collect();
    }
    let cut: Vec<_> = match &stream.cut {
        Cut::Whole => all.collect(),
        Cut::Range(start, end) => all
            .filter(|(key, _)| within(key, start.as_ref(), end.as_ref()))
            .collect(),
        Cut::Prefix(prefix) => all.filter(|(key, _)| key.starts_with(prefix)).collect(),
    };
    let front = stream.skip_front.min(cut.len());
    let back = stream.skip_back.min(cut.len() - front);
    cut[front..cut.len() - back].to_vec()
}

fn within(key: &[u8], start: Bound<&Vec<u8>>, end: Bound<&Vec<u8>>) -> bool {
    let after = match start {
        Bound::Included(start) => key >= start.as_slice(),
        Bound::Excluded(start) => key > start.as_slice(),
        Bound::Unbounded => true,
    };
    let before = match end {
        Bound::Included(end) => key <= end.as_slice(),
        Bound::Excluded(end) => key < end.as_slice(),
        Bound::Unbounded => true,
    };
    after && before
}

/// The stream cut from a built layer, read as the model says.
fn open_stream<'a>(layer: &'a FrozenLayer<u64>, stream: &Stream) -> Iter<'a, u64> {
    let mut iter = match &stream.cut {
        Cut::Whole => layer.iter(),
        Cut::Range(start, end) => layer.range::<[u8], _>((
            start.as_ref().map(Vec::as_slice),
            end.as_ref().map(Vec::as_slice),
        )),
        Cut::Prefix(prefix) => layer.prefix(prefix),
    };
    for _ in 0..stream.skip_front {
        iter.next_entry();
    }
    for _ in 0..stream.skip_back {
        iter.next_back_entry();
    }
    iter
}

/// Every key of the streams with the values of those holding it, in the
/// order the streams come.
fn model_union(streams: &[Stream]) -> BTreeMap<Vec<u8>, Vec<IndexedValue<u64>>> {
    let mut union: BTreeMap<Vec<u8>, Vec<IndexedValue<u64>>> = BTreeMap::new();
    for (index, stream) in streams.iter().enumerate() {
        for (key, value) in model_entries(stream) {
            union
                .entry(key)
                .or_default()
                .push(IndexedValue { index, value });
        }
    }
    union
}

/// Drains an operation both ways a caller may: as an iterator, checking its
/// size hint at every step, and by `next_entry` on a clone.
fn drain<I>(mut op: I, lend: impl FnOnce(&mut I) -> Entries) -> Entries
where
    I: Iterator<Item = (Vec<u8>, Vec<IndexedValue<u64>>)> + Clone,
{
    let lent = lend(&mut op.clone());
    let mut entries = Vec::new();
    loop {
        let left = op.clone().count();
        assert!(
            hints::bounds(op.size_hint(), left, false),
            "size hint {:?} with {left} entries left",
            op.size_hint()
        );
        match op.next() {
            Some(entry) => entries.push(entry),
            None => break,
        }
    }
    assert!(
        op.next().is_none(),
        "an operation yields again after its end"
    );
    assert_eq!(lent, entries, "next_entry lends what the iterator yields");
    entries
}

/// Drains an operation through `next_entry`, and a clone of it through
/// `next_encoded` (for `u64` values the stored form is the value), which
/// must agree.
macro_rules! lend_all {
    () => {
        |op| {
            let mut encoded = op.clone();
            let mut entries = Vec::new();
            while let Some((key, values)) = op.next_entry() {
                entries.push((key.to_vec(), values.to_vec()));
            }
            let mut stored = Vec::new();
            while let Some((key, values)) = encoded.next_encoded() {
                assert_eq!(values.len(), values.size_hint().0);
                stored.push((key.to_vec(), values.collect::<Vec<_>>()));
            }
            assert_eq!(stored, entries, "next_encoded lends what next_entry lends");
            entries
        }
    };
}

fn check(streams: &[Stream]) {
    let layers: Vec<FrozenLayer<u64>> = (streams.iter())
        .map(|stream| FrozenLayer::from_sorted_iter(stream.layer.clone()).unwrap())
        .collect();
    let mut builder = OpBuilder::new();
    for (layer, stream) in layers.iter().zip(streams) {
        match &stream.search {
            Some(query) => dfa::with_query!(query, |a| {
                let mut search = layer.search(a);
                for _ in 0..stream.skip_front {
                    search.next_entry();
                }
                builder.push_search(search);
            }),
            None => builder.push(open_stream(layer, stream)),
        }
    }
    assert_eq!(builder.len(), streams.len());
    let union = model_union(streams);
    let count = streams.len();

    let expected: Entries = union.clone().into_iter().collect();
    assert_eq!(
        drain(builder.clone().union(), lend_all!()),
        expected,
        "union"
    );

    let expected: Entries = (union.clone().into_iter())
        .filter(|(_, values)| count > 0 && values.len() == count)
        .collect();
    assert_eq!(
        drain(builder.clone().intersection(), lend_all!()),
        expected,
        "intersection"
    );

    let expected: Entries = (union.clone().into_iter())
        .filter(|(_, values)| values.len() == 1 && values[0].index == 0)
        .collect();
    assert_eq!(
        drain(builder.clone().difference(), lend_all!()),
        expected,
        "difference"
    );

    let expected: Entries = (union.into_iter())
        .filter(|(_, values)| values.len() % 2 == 1)
        .collect();
    assert_eq!(
        drain(builder.symmetric_difference(), lend_all!()),
        expected,
        "symmetric difference"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn set_operations_match_the_model(streams in streams()) {
        check(&streams);
    }

    /// One stream of every key (or of many) against small ones: the large
    /// stream must seek past long runs of keys the others lack.
    #[test]
    fn a_large_stream_seeks_past_what_the_small_ones_lack(
        large in btree_map(radix_key(), any::<u64>(), 100..600),
        picks in vec((any::<prop::sample::Index>(), any::<u64>(), any::<bool>()), 0..12),
        extra in btree_map(radix_key(), any::<u64>(), 0..4),
        large_first in any::<bool>(),
    ) {
        let keys: Vec<&Vec<u8>> = large.keys().collect();
        let mut small: Model = extra;
        for (pick, value, take) in picks {
            if take {
                small.insert(keys[pick.index(keys.len())].clone(), value);
            }
        }
        let whole = |layer: Model| Stream { layer, cut: Cut::Whole, skip_front: 0, skip_back: 0, search: None };
        let (a, b) = (whole(large), whole(small));
        let streams = if large_first { [a, b] } else { [b, a] };
        check(&streams);
    }
}

/// A search stream seeks as a plain stream does: behind the key it must
/// reach, it walks at most a few keys its automaton rejects before it walks
/// down from the root. The automaton here accepts two keys of 20,000 and
/// never rules a subtree out; the bytes it is fed count its work (reading
/// the whole layer feeds it tens of thousands).
#[test]
fn a_sparse_search_seeks_as_a_plain_stream_does() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use memkv::frozen::automaton::Automaton;

    #[derive(Clone)]
    struct Two {
        keys: [&'static [u8]; 2],
        fed: Arc<AtomicUsize>,
    }
    impl Automaton for Two {
        type State = Vec<u8>;
        fn start(&self) -> Vec<u8> {
            Vec::new()
        }
        fn is_match(&self, state: &Vec<u8>) -> bool {
            self.keys.contains(&state.as_slice())
        }
        fn accept(&self, state: &Vec<u8>, byte: u8) -> Vec<u8> {
            self.fed.fetch_add(1, Ordering::Relaxed);
            let mut next = state.clone();
            next.push(byte);
            next
        }
    }

    let large =
        FrozenLayer::from_sorted_iter((0..20_000u64).map(|i| (format!("k{i:06}"), i))).unwrap();
    let small = FrozenLayer::from_sorted_iter([("k019999", 7u64)]).unwrap();
    let fed = Arc::new(AtomicUsize::new(0));
    let two = Two {
        keys: [b"k000000", b"k019999"],
        fed: Arc::clone(&fed),
    };
    let both: Vec<Vec<u8>> = OpBuilder::new()
        .add(&small)
        .add_search(large.search(two.clone()))
        .intersection()
        .map(|(key, _)| key)
        .collect();
    assert_eq!(both, [b"k019999".to_vec()]);
    assert!(
        fed.load(Ordering::Relaxed) < 200,
        "{} bytes fed",
        fed.load(Ordering::Relaxed)
    );

    // The difference catches up the same way.
    fed.store(0, Ordering::Relaxed);
    let only_small = OpBuilder::new()
        .add(&small)
        .add_search(large.search(two))
        .difference()
        .count();
    assert_eq!(only_small, 0);
    assert!(
        fed.load(Ordering::Relaxed) < 200,
        "{} bytes fed",
        fed.load(Ordering::Relaxed)
    );
}

#[test]
fn no_streams_yield_nothing() {
    let none = OpBuilder::<u64>::new();
    assert!(none.is_empty());
    assert_eq!(none.clone().union().count(), 0);
    assert_eq!(none.clone().intersection().count(), 0);
    assert_eq!(none.clone().difference().count(), 0);
    assert_eq!(none.clone().symmetric_difference().count(), 0);
    assert_eq!(none.union().size_hint(), (0, Some(0)));
}

/// A builder collected from streams, or extended with more, holds them in
/// order: the values say which stream they came from.
#[test]
fn a_builder_collects_and_extends_streams() {
    let a = FrozenLayer::from_sorted_iter([("a", 1u64), ("b", 2)]).unwrap();
    let b = FrozenLayer::from_sorted_iter([("b", 3u64), ("c", 4)]).unwrap();
    let mut builder: OpBuilder<u64> = [&a, &b].into_iter().collect();
    assert_eq!((builder.len(), builder.is_empty()), (2, false));
    builder.extend([b.range(&b"c"[..]..)]);
    assert_eq!(builder.len(), 3);
    assert_eq!(format!("{builder:?}"), "OpBuilder { streams: 3 }");
    let at = |index, value| IndexedValue { index, value };
    let union: Entries = builder.union().collect();
    assert_eq!(
        union,
        [
            (b"a".to_vec(), vec![at(0, 1)]),
            (b"b".to_vec(), vec![at(0, 2), at(1, 3)]),
            (b"c".to_vec(), vec![at(1, 4), at(2, 4)]),
        ]
    );
}

/// The size hints are as tight as the streams' lengths allow: a union has
/// at least the longest stream's entries and at most all of them, the
/// others at most the shortest's (intersection) or the first's.
#[test]
fn size_hints_bound_closely() {
    let long =
        FrozenLayer::from_sorted_iter((0..1000u64).map(|i| (format!("k{i:05}"), i))).unwrap();
    let short =
        FrozenLayer::from_sorted_iter((0..600u64).map(|i| (format!("j{i:05}"), i))).unwrap();
    let op = || OpBuilder::new().add(&long).add(&short);
    assert_eq!(op().union().size_hint(), (1000, Some(1600)));
    assert_eq!(op().symmetric_difference().size_hint(), (0, Some(1600)));
    assert_eq!(op().intersection().size_hint(), (0, Some(600)));
    assert_eq!(op().difference().size_hint(), (0, Some(1000)));
    let mut union = op().union();
    union.by_ref().take(650).for_each(drop); // the 600 j-keys, then 50 k-keys
    assert_eq!(union.size_hint(), (950, Some(950)));
    // A search has found its first match; it may match none of the rest.
    use memkv::frozen::automaton::{Automaton, Str};
    let searched = OpBuilder::new()
        .add_search(long.search(Str::new("k").starts_with()))
        .union();
    assert_eq!(searched.size_hint(), (1, Some(1000)));
}

/// A layer with itself: every operation sees each key in every stream.
#[test]
fn a_layer_with_itself() {
    let layer =
        FrozenLayer::from_sorted_iter((0..1000u64).map(|i| (format!("k{i:05}"), i))).unwrap();
    assert_eq!(layer.op().add(&layer).union().count(), 1000);
    assert_eq!(layer.op().add(&layer).intersection().count(), 1000);
    assert_eq!(layer.op().add(&layer).difference().count(), 0);
    assert_eq!(layer.op().add(&layer).symmetric_difference().count(), 0);
    assert_eq!(
        layer
            .op()
            .add(&layer)
            .add(&layer)
            .symmetric_difference()
            .count(),
        1000
    );
    let (key, values) = layer.op().add(&layer).union().nth(7).unwrap();
    assert_eq!(key, b"k00007");
    assert_eq!(
        values,
        [
            IndexedValue { index: 0, value: 7 },
            IndexedValue { index: 1, value: 7 }
        ]
    );
}

/// Byte-string values come out of each layer as their own.
#[test]
fn byte_string_values() {
    let a = FrozenLayer::from_sorted_iter([("x", b"from a".to_vec()), ("y", b"only a".to_vec())])
        .unwrap();
    let b = FrozenLayer::from_sorted_iter([("x", b"from b".to_vec())]).unwrap();
    let union: Vec<_> = a.op().add(&b).union().collect();
    assert_eq!(
        union,
        [
            (
                b"x".to_vec(),
                vec![
                    IndexedValue {
                        index: 0,
                        value: b"from a".to_vec()
                    },
                    IndexedValue {
                        index: 1,
                        value: b"from b".to_vec()
                    },
                ]
            ),
            (
                b"y".to_vec(),
                vec![IndexedValue {
                    index: 0,
                    value: b"only a".to_vec()
                }]
            ),
        ]
    );
    // Stored forms: the bytes, borrowed from the layers.
    let mut both = a.op().add(&b).intersection();
    let (key, values) = both.next_encoded().unwrap();
    assert_eq!(key, b"x");
    let values: Vec<(usize, &[u8])> = values.map(|v| (v.index, v.value)).collect();
    assert_eq!(values, [(0, &b"from a"[..]), (1, &b"from b"[..])]);
    assert!(both.next_encoded().is_none());
    let only_a: Vec<_> = a.op().add(&b).difference().collect();
    assert_eq!(
        only_a,
        [(
            b"y".to_vec(),
            vec![IndexedValue {
                index: 0,
                value: b"only a".to_vec()
            }]
        )]
    );
}
