//! FastArt against a `BTreeMap` model: random operation sequences over keys
//! that stress a radix tree, with the internal invariant checker after every
//! step.

use std::collections::BTreeMap;
use std::ops::Bound;

use memkv::FastArt;
use memkv::art::Entry;
use proptest::prelude::*;

mod common;
#[path = "common/dfa.rs"]
mod dfa;
#[path = "common/hints.rs"]
mod hints;
#[path = "common/radix_keys.rs"]
mod radix_keys;

// Keys that collide, share prefixes and hit layout boundaries.
use radix_keys::radix_key as key;

type Model = BTreeMap<Vec<u8>, u32>;

/// Entries for `extend`: more than the 16 it takes at a time, keys often
/// repeated within the batch.
fn entries() -> impl Strategy<Value = Vec<(Vec<u8>, u32)>> {
    prop::collection::vec((key(), any::<u32>()), 0..40)
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        Just(Bound::Unbounded),
        key().prop_map(Bound::Included),
        key().prop_map(Bound::Excluded),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Insert(Vec<u8>, u32),
    Remove(Vec<u8>),
    Get(Vec<u8>),
    /// Some keys, present ones among them, looked up at once.
    GetMany(Vec<Vec<u8>>, Vec<prop::sample::Index>),
    /// Entries, some with stored keys or repeated keys, added by `extend`.
    Extend(Vec<(Vec<u8>, u32)>, Vec<prop::sample::Index>),
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>, Vec<bool>),
    /// Both bounds at one key (a stored one, picked by the index, or the
    /// given key if none is stored), each included or not: one entry or none.
    RangeAt(Vec<u8>, prop::sample::Index, bool, bool, Vec<bool>),
    Prefix(Vec<u8>, Vec<bool>),
    /// A stored key (picked by the first index; the given key if none is
    /// stored), cut at a length picked by the second: long prefixes that
    /// end inside node prefixes and leaf suffixes.
    /// With a third index, one byte of the cut key is changed: a prefix
    /// that leaves the tree part-way down a long node prefix.
    PrefixOfStored(
        Vec<u8>,
        prop::sample::Index,
        prop::sample::Index,
        Option<prop::sample::Index>,
    ),
    /// `prefixes_of` and `longest_prefix_of` a key, or (with an index, if
    /// any is stored) of a stored key with the key appended: queries with
    /// stored keys all along their path.
    PrefixesOf(Vec<u8>, Option<prop::sample::Index>),
    /// `longest_prefix_of_many` over keys (more than the 16 it walks at
    /// once), each run on past a stored key if an index is given.
    LongestMany(Vec<(Vec<u8>, Option<prop::sample::Index>)>),
    Iterate(Vec<bool>),
    EntryIncrement(Vec<u8>),
    /// Replaces the value through an occupied entry, or inserts.
    EntryReplace(Vec<u8>, u32),
    /// Removes through an occupied entry.
    EntryRemove(Vec<u8>),
    GetMut(Vec<u8>, u32),
    TryInsert(Vec<u8>, u32),
    RemoveEntry(Vec<u8>),
    /// Keeps the entries whose value, xor the seed, is not a multiple of
    /// three, adding the seed to the values kept.
    Retain(u32),
    /// `extract_if` over a range: takes the entries whose value, xor the
    /// seed, is a multiple of three, adding the seed to the values of those
    /// it passes over; dropped after as many as given (all if none).
    ExtractIf(Bound<Vec<u8>>, Bound<Vec<u8>>, u32, Option<usize>),
    /// `search` with a random automaton, read by `next` or `next_entry`.
    Search(dfa::Dfa, bool),
    /// Adds to every value through `iter_mut` (or `values_mut`).
    AddToAll(u32, bool),
    /// Adds to the values of a range through `range_mut`, taking from the
    /// front and the back as the sides say.
    AddToRange(Bound<Vec<u8>>, Bound<Vec<u8>>, u32, Vec<bool>),
    /// Through `first_entry` (or `last_entry` if true): removes the entry,
    /// or (if false) adds one to its value.
    EdgeEntry(bool, bool),
    /// Inserts `w/<b>` for every byte (a full Node256), then removes those
    /// the mask does not keep, back down through the smaller kinds.
    Fill256(Vec<bool>),
    PopFirst,
    PopLast,
    /// `split_off` at the key or (with an index, if any is stored) a stored
    /// key; both halves are checked, then joined again by `append`, into
    /// the first half or (if true) the second.
    SplitOff(Vec<u8>, Option<prop::sample::Index>, bool),
    /// A second map of these entries, appended.
    Append(Vec<(Vec<u8>, u32)>),
    Clear,
    Compact,
}

fn op() -> impl Strategy<Value = Op> {
    let sides = || prop::collection::vec(any::<bool>(), 0..8);
    prop_oneof![
        10 => (key(), any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
        6 => key().prop_map(Op::Remove),
        3 => key().prop_map(Op::Get),
        1 => (prop::collection::vec(key(), 0..40), prop::collection::vec(any::<prop::sample::Index>(), 0..40))
            .prop_map(|(keys, present)| Op::GetMany(keys, present)),
        1 => (entries(), prop::collection::vec(any::<prop::sample::Index>(), 0..8))
            .prop_map(|(entries, present)| Op::Extend(entries, present)),
        2 => (bound(), bound(), sides()).prop_map(|(a, b, s)| Op::Range(a, b, s)),
        1 => (key(), any::<prop::sample::Index>(), any::<bool>(), any::<bool>(), sides())
            .prop_map(|(k, pick, lo, hi, s)| Op::RangeAt(k, pick, lo, hi, s)),
        2 => (prop::collection::vec(prop::sample::select(vec![0x00u8, b'a', b'p', b'w', b'/', 0xFF]), 0..4), sides())
            .prop_map(|(p, s)| Op::Prefix(p, s)),
        2 => (key(), any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<Option<prop::sample::Index>>())
            .prop_map(|(k, pick, cut, change)| Op::PrefixOfStored(k, pick, cut, change)),
        2 => (key(), prop::option::of(any::<prop::sample::Index>()))
            .prop_map(|(k, pick)| Op::PrefixesOf(k, pick)),
        1 => prop::collection::vec((key(), prop::option::of(any::<prop::sample::Index>())), 0..40)
            .prop_map(Op::LongestMany),
        1 => sides().prop_map(Op::Iterate),
        2 => key().prop_map(Op::EntryIncrement),
        1 => (key(), any::<u32>()).prop_map(|(k, v)| Op::EntryReplace(k, v)),
        1 => key().prop_map(Op::EntryRemove),
        1 => (key(), any::<u32>()).prop_map(|(k, v)| Op::GetMut(k, v)),
        1 => (key(), any::<u32>()).prop_map(|(k, v)| Op::TryInsert(k, v)),
        1 => key().prop_map(Op::RemoveEntry),
        1 => any::<u32>().prop_map(Op::Retain),
        2 => (dfa::dfa(), any::<bool>()).prop_map(|(dfa, lend)| Op::Search(dfa, lend)),
        2 => (bound(), bound(), any::<u32>(), prop::option::of(0usize..6))
            .prop_map(|(lo, hi, seed, take)| Op::ExtractIf(lo, hi, seed, take)),
        1 => (any::<u32>(), any::<bool>()).prop_map(|(v, values)| Op::AddToAll(v, values)),
        1 => (bound(), bound(), any::<u32>(), sides()).prop_map(|(a, b, v, s)| Op::AddToRange(a, b, v, s)),
        1 => (any::<bool>(), any::<bool>()).prop_map(|(last, remove)| Op::EdgeEntry(last, remove)),
        1 => prop::collection::vec(any::<bool>(), 256).prop_map(Op::Fill256),
        1 => Just(Op::PopFirst),
        1 => Just(Op::PopLast),
        2 => (key(), prop::option::of(any::<prop::sample::Index>()), any::<bool>())
            .prop_map(|(k, stored, into_second)| Op::SplitOff(k, stored, into_second)),
        1 => entries().prop_map(Op::Append),
        1 => Just(Op::Clear),
        1 => Just(Op::Compact),
    ]
}

fn in_range(k: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let above = match lo {
        Bound::Included(b) => k >= b.as_slice(),
        Bound::Excluded(b) => k > b.as_slice(),
        Bound::Unbounded => true,
    };
    let below = match hi {
        Bound::Included(b) => k <= b.as_slice(),
        Bound::Excluded(b) => k < b.as_slice(),
        Bound::Unbounded => true,
    };
    above && below
}

/// Drains a double-ended iterator taking from the front or the back as
/// `sides` says (cycled; true = back), and reassembles the sequence.
fn drain_both_ends<T>(mut next: impl FnMut(bool) -> Option<T>, sides: &[bool]) -> Vec<T> {
    let (mut front, mut back) = (Vec::new(), Vec::new());
    for i in 0.. {
        let from_back = !sides.is_empty() && sides[i % sides.len()];
        match next(from_back) {
            Some(e) if from_back => back.push(e),
            Some(e) => front.push(e),
            None => break,
        }
    }
    // Once exhausted, both ends stay exhausted.
    assert!(next(false).is_none() && next(true).is_none());
    front.extend(back.into_iter().rev());
    front
}

/// Drains `it` from the ends `sides` picks, checking its exact length before
/// every step, and returns the items in key order.
fn drain_exact<I>(mut it: I, sides: &[bool]) -> Vec<I::Item>
where
    I: DoubleEndedIterator + ExactSizeIterator,
{
    let mut left = it.len();
    let items = drain_both_ends(
        |back| {
            assert_eq!(it.len(), left);
            let item = if back { it.next_back() } else { it.next() };
            left -= usize::from(item.is_some());
            item
        },
        sides,
    );
    assert_eq!(it.len(), 0);
    items
}

/// Collects `it`, checking that its size hint, before each step and at the
/// end, bounds the items still to come.
fn collect_checking_hints<I: Iterator>(mut it: I) -> Vec<I::Item> {
    let mut hints = vec![it.size_hint()];
    let mut items = Vec::new();
    while let Some(item) = it.next() {
        items.push(item);
        hints.push(it.size_hint());
    }
    for (taken, hint) in hints.into_iter().enumerate() {
        let left = items.len() - taken;
        assert!(
            hints::bounds(hint, left, false),
            "size hint {hint:?} with {left} left"
        );
    }
    items
}

/// The stored key `pick` selects, or `key` if none is stored.
fn stored_or<'a>(model: &'a Model, pick: &prop::sample::Index, key: &'a [u8]) -> &'a [u8] {
    let stored: Vec<&[u8]> = model.keys().map(Vec::as_slice).collect();
    if stored.is_empty() {
        key
    } else {
        pick.get::<&[u8]>(&stored)
    }
}

/// Checks `range` from both ends (as `sides` says) against the model.
fn check_range(
    map: &FastArt<u32>,
    model: &Model,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
    sides: &[bool],
) {
    let want: Vec<_> = model
        .iter()
        .filter(|(k, _)| in_range(k, lo, hi))
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    let mut it = map.range::<Vec<u8>, _>((lo.clone(), hi.clone()));
    assert!(hints::bounds(it.size_hint(), want.len(), false));
    let got = drain_both_ends(
        |back| {
            let e = if back {
                it.next_back_entry()
            } else {
                it.next_entry()
            };
            e.map(|(k, v)| (k.to_vec(), *v))
        },
        sides,
    );
    assert_eq!(got, want, "range {lo:?}..{hi:?} sides {sides:?}");
}

fn apply(map: &mut FastArt<u32>, model: &mut Model, op: &Op) {
    match op {
        Op::Insert(k, v) => assert_eq!(
            map.insert(k, *v),
            model.insert(k.clone(), *v),
            "insert {k:?}"
        ),
        Op::Remove(k) => assert_eq!(map.remove(k), model.remove(k), "remove {k:?}"),
        Op::Get(k) => {
            assert_eq!(map.get(k), model.get(k), "get {k:?}");
            assert_eq!(map.get_key_value(k), model.get_key_value(k));
            assert_eq!(map.contains_key(k), model.contains_key(k));
        }
        Op::GetMany(keys, present) => {
            // More keys than the lookups under way at once.
            let keys = common::with_stored_keys(keys, present, model);
            let want: Vec<_> = keys.iter().map(|k| model.get(k)).collect();
            assert_eq!(map.get_many(&keys), want, "get_many {keys:?}");
        }
        Op::Extend(entries, present) => {
            let keys: Vec<_> = entries.iter().map(|(k, _)| k.clone()).collect();
            let keys = common::with_stored_keys(&keys, present, model);
            let entries: Vec<_> = keys
                .into_iter()
                .zip(entries.iter().map(|(_, v)| *v).cycle())
                .collect();
            map.extend(entries.iter().map(|(k, v)| (k, *v)));
            model.extend(entries);
        }
        Op::Range(lo, hi, sides) => check_range(map, model, lo, hi, sides),
        Op::RangeAt(k, pick, lo_included, hi_included, sides) => {
            let key = stored_or(model, pick, k).to_vec();
            let bound = |included: bool| {
                if included {
                    Bound::Included(key.clone())
                } else {
                    Bound::Excluded(key.clone())
                }
            };
            let (lo, hi) = (bound(*lo_included), bound(*hi_included));
            check_range(map, model, &lo, &hi, sides);
        }
        Op::Prefix(p, sides) => {
            let want: Vec<_> = model
                .iter()
                .filter(|(k, _)| k.starts_with(p))
                .map(|(k, v)| (k.clone(), *v))
                .collect();
            let mut it = map.prefix(p);
            let got = drain_both_ends(
                |back| if back { it.next_back() } else { it.next() }.map(|(k, v)| (k, *v)),
                sides,
            );
            assert_eq!(got, want, "prefix {p:?}");
        }
        Op::PrefixOfStored(k, pick, cut, change) => {
            let key = stored_or(model, pick, k);
            let mut p = key[..cut.index(key.len() + 1)].to_vec();
            if let Some(at) = change
                && !p.is_empty()
            {
                let at = at.index(p.len());
                p[at] ^= 1;
            }
            let p = p.as_slice();
            let want: Vec<_> = model
                .iter()
                .filter(|(k, _)| k.starts_with(p))
                .map(|(k, v)| (k.clone(), *v))
                .collect();
            let got: Vec<_> = map.prefix(p).map(|(k, v)| (k, *v)).collect();
            assert_eq!(got, want, "prefix {p:?}");
        }
        Op::PrefixesOf(k, pick) => {
            let query = match pick {
                Some(pick) => [stored_or(model, pick, k), k].concat(),
                None => k.clone(),
            };
            let want: Vec<_> = model
                .iter()
                .filter(|(k, _)| query.starts_with(k))
                .map(|(k, v)| (k.as_slice(), *v))
                .collect();
            let got: Vec<_> = collect_checking_hints(map.prefixes_of(&query))
                .into_iter()
                .map(|(k, v)| (k, *v))
                .collect();
            assert_eq!(got, want, "prefixes of {query:?}");
            let longest = map.longest_prefix_of(&query).map(|(k, v)| (k, *v));
            assert_eq!(longest, want.last().copied(), "longest prefix of {query:?}");
        }
        Op::LongestMany(queries) => {
            let queries: Vec<Vec<u8>> = queries
                .iter()
                .map(|(k, pick)| match pick {
                    Some(pick) => [stored_or(model, pick, k), k].concat(),
                    None => k.clone(),
                })
                .collect();
            let got = map.longest_prefix_of_many(&queries);
            assert_eq!(got.len(), queries.len());
            for (query, got) in queries.iter().zip(got) {
                let want = (0..=query.len())
                    .rev()
                    .find_map(|len| model.get(&query[..len]).map(|v| (&query[..len], *v)));
                assert_eq!(
                    got.map(|(k, v)| (k, *v)),
                    want,
                    "longest prefix of {query:?}"
                );
            }
        }
        Op::Iterate(sides) => {
            // Every view, from either end; `drain_exact` checks each one's
            // length at every step.
            let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
            let keys: Vec<_> = model.keys().cloned().collect();
            let values: Vec<_> = model.values().copied().collect();
            let got: Vec<_> = drain_exact(map.iter(), sides)
                .into_iter()
                .map(|(k, v)| (k, *v))
                .collect();
            assert_eq!(got, want);
            assert_eq!(drain_exact(map.keys(), sides), keys);
            let got: Vec<_> = drain_exact(map.values(), sides)
                .into_iter()
                .copied()
                .collect();
            assert_eq!(got, values);
            let got: Vec<_> = drain_exact(map.values_mut(), sides)
                .into_iter()
                .map(|v| *v)
                .collect();
            assert_eq!(got, values);
            assert_eq!(drain_exact(map.clone().into_iter(), sides), want);
            assert_eq!(drain_exact(map.clone().into_keys(), sides), keys);
            assert_eq!(drain_exact(map.clone().into_values(), sides), values);
            // The lending views: keys borrowed from the iterator.
            let mut it = map.keys();
            let got = drain_both_ends(
                |back| {
                    let k = if back {
                        it.next_back_key()
                    } else {
                        it.next_key()
                    };
                    k.map(<[u8]>::to_vec)
                },
                sides,
            );
            assert_eq!(got, keys);
            let mut it = map.clone().into_keys();
            let got = drain_both_ends(
                |back| {
                    if back {
                        it.next_back()
                    } else {
                        it.next_key().map(<[u8]>::to_vec)
                    }
                },
                sides,
            );
            assert_eq!(got, keys);
            let mut it = map.clone().into_keys();
            let got = drain_both_ends(
                |back| {
                    if back {
                        it.next_back_key().map(<[u8]>::to_vec)
                    } else {
                        it.next()
                    }
                },
                sides,
            );
            assert_eq!(got, keys);
            let mut it = map.clone().into_iter();
            let got = drain_both_ends(
                |back| {
                    let e = if back {
                        it.next_back_entry()
                    } else {
                        it.next_entry()
                    };
                    e.map(|(k, v)| (k.to_vec(), v))
                },
                sides,
            );
            assert_eq!(got, want);
        }
        Op::EntryIncrement(k) => {
            let v = map
                .entry(k.as_slice())
                .and_modify(|v| *v = v.wrapping_add(1))
                .or_insert(7);
            let m = model
                .entry(k.clone())
                .and_modify(|v| *v = v.wrapping_add(1))
                .or_insert(7);
            assert_eq!(v, m);
        }
        Op::EntryReplace(k, v) => {
            let got = match map.entry(k.as_slice()) {
                Entry::Occupied(mut e) => Some(e.insert(*v)),
                Entry::Vacant(e) => {
                    e.insert(*v);
                    None
                }
            };
            assert_eq!(got, model.insert(k.clone(), *v), "entry replace {k:?}");
        }
        Op::EntryRemove(k) => {
            let got = match map.entry(k.as_slice()) {
                Entry::Occupied(e) => Some(e.remove_entry()),
                Entry::Vacant(_) => None,
            };
            let want = model.remove_entry(k);
            assert_eq!(
                got.map(|(k, v)| (k.to_vec(), v)),
                want,
                "entry remove {k:?}"
            );
        }
        Op::GetMut(k, add) => {
            let got = map.get_mut(k).map(|v| {
                *v = v.wrapping_add(*add);
                *v
            });
            let want = model.get_mut(k).map(|v| {
                *v = v.wrapping_add(*add);
                *v
            });
            assert_eq!(got, want, "get_mut {k:?}");
        }
        Op::TryInsert(k, v) => assert_eq!(
            map.try_insert(k, *v).expect("far from the limit"),
            model.insert(k.clone(), *v),
            "try_insert {k:?}"
        ),
        Op::RemoveEntry(k) => assert_eq!(
            map.remove_entry(k.as_slice()).map(|(k, v)| (k.to_vec(), v)),
            model.remove_entry(k),
            "remove_entry {k:?}"
        ),
        Op::Retain(seed) => {
            let mut seen = Vec::new();
            map.retain(|k, v| {
                seen.push(k.to_vec());
                *v = v.wrapping_add(*seed);
                (v.wrapping_sub(*seed) ^ seed) % 3 != 0
            });
            // Each entry once, in key order.
            assert!(seen.iter().eq(model.keys()));
            model.retain(|_, v| {
                *v = v.wrapping_add(*seed);
                (v.wrapping_sub(*seed) ^ seed) % 3 != 0
            });
            assert!(
                map.iter()
                    .map(|(k, v)| (k, *v))
                    .eq(model.iter().map(|(k, v)| (k.clone(), *v)))
            );
        }
        Op::Search(dfa, lend) => {
            let expected: Vec<(Vec<u8>, u32)> = (model.iter())
                .filter(|(k, _)| dfa::accepts(dfa, k))
                .map(|(k, v)| (k.clone(), *v))
                .collect();
            let mut found = Vec::new();
            let mut search = map.search(dfa.clone());
            if *lend {
                while let Some((k, v)) = search.next_entry() {
                    found.push((k.to_vec(), *v));
                }
            } else {
                let all = collect_checking_hints(search.by_ref());
                found.extend(all.into_iter().map(|(k, v)| (k, *v)));
            }
            assert!(search.next().is_none(), "search yields after its end");
            assert_eq!(found, expected, "search {dfa:?}");
        }
        Op::ExtractIf(lo, hi, seed, take) => {
            let take = take.unwrap_or(usize::MAX);
            let picks = |v: &mut u32| {
                let picked = (*v ^ seed).is_multiple_of(3);
                if !picked {
                    *v = v.wrapping_add(*seed);
                }
                picked
            };
            let mut seen = Vec::new();
            let mut it = map.extract_if::<Vec<u8>, _, _>((lo.clone(), hi.clone()), |k, v| {
                seen.push(k.to_vec());
                picks(v)
            });
            let len = model.len();
            let (mut taken, mut hints) = (Vec::new(), Vec::new());
            while taken.len() < take {
                hints.push(it.size_hint());
                match it.next() {
                    Some(entry) => taken.push(entry),
                    None => {
                        assert!(it.next().is_none(), "extract_if yields after its end");
                        break;
                    }
                }
            }
            drop(it);
            // The model: the range in order, up to the last entry taken.
            let mut expected = Vec::new();
            let mut expected_seen = Vec::new();
            let in_it: Vec<Vec<u8>> = model
                .keys()
                .filter(|k| in_range(k, lo, hi))
                .cloned()
                .collect();
            for k in in_it {
                if expected.len() == take {
                    break;
                }
                expected_seen.push(k.clone());
                if picks(model.get_mut(&k).unwrap()) {
                    let v = model.remove(&k).unwrap();
                    expected.push((k, v));
                }
            }
            assert_eq!(taken, expected, "extract_if {lo:?}..{hi:?} taking {take}");
            // Before step i, the entries it and later steps yielded are left.
            for (i, &(least, most)) in hints.iter().enumerate() {
                let left = taken.len() - i;
                assert!(least <= left && most.is_some_and(|most| left <= most && most <= len - i));
            }
            assert_eq!(
                seen, expected_seen,
                "extract_if's predicate saw other entries"
            );
        }
        Op::AddToAll(add, values_only) => {
            if *values_only {
                map.values_mut().for_each(|v| *v = v.wrapping_add(*add));
            } else {
                let mut it = map.iter_mut();
                let mut left = model.len();
                assert_eq!(it.len(), left);
                // From both ends: each value once; the length exact throughout.
                while let Some((k, v)) = if it.len().is_multiple_of(2) {
                    it.next()
                } else {
                    it.next_back()
                } {
                    left -= 1;
                    assert_eq!(it.len(), left);
                    *v = v.wrapping_add(*add ^ k.len() as u32);
                }
                assert_eq!(left, 0);
            }
            for (k, v) in model.iter_mut() {
                let add = if *values_only {
                    *add
                } else {
                    *add ^ k.len() as u32
                };
                *v = v.wrapping_add(add);
            }
        }
        Op::AddToRange(lo, hi, add, sides) => {
            let mut it = map.range_mut::<Vec<u8>, _>((lo.clone(), hi.clone()));
            let n = model.keys().filter(|k| in_range(k, lo, hi)).count();
            assert!(hints::bounds(it.size_hint(), n, false));
            let mut seen = Vec::new();
            for i in 0.. {
                let back = !sides.is_empty() && sides[i % sides.len()];
                let Some((k, v)) = (if back { it.next_back() } else { it.next() }) else {
                    break;
                };
                *v = v.wrapping_add(*add ^ k.len() as u32);
                seen.push(k);
            }
            seen.sort();
            let mut want = Vec::new();
            for (k, v) in model.iter_mut().filter(|(k, _)| in_range(k, lo, hi)) {
                *v = v.wrapping_add(*add ^ k.len() as u32);
                want.push(k.clone());
            }
            // Each entry of the range once, from whichever end.
            assert_eq!(seen, want, "range_mut {lo:?}..{hi:?}");
        }
        Op::EdgeEntry(last, remove) => {
            let entry = if *last {
                map.last_entry()
            } else {
                map.first_entry()
            };
            let want = if *last {
                model.last_entry()
            } else {
                model.first_entry()
            };
            match (entry, want) {
                (None, None) => {}
                (Some(e), Some(w)) if *remove => {
                    assert_eq!(
                        e.remove_entry(),
                        w.remove_entry(),
                        "edge entry, last: {last}"
                    );
                }
                (Some(mut e), Some(mut w)) => {
                    assert_eq!(
                        (e.key(), e.get()),
                        (w.key(), w.get()),
                        "edge entry, last: {last}"
                    );
                    *e.get_mut() = e.get().wrapping_add(1);
                    *w.get_mut() = w.get().wrapping_add(1);
                }
                (e, w) => panic!(
                    "edge entry, last: {last}: {:?} against {:?}",
                    e.map(|e| e.remove_entry()),
                    w.map(|w| w.remove_entry())
                ),
            }
        }
        Op::Fill256(keep) => {
            // Checked when full and when thinned, not after every step (too
            // slow under valgrind).
            for b in 0..=255u8 {
                let k = vec![b'w', b'/', b];
                assert_eq!(map.insert(&k, u32::from(b)), model.insert(k, u32::from(b)));
            }
            assert!(map.stats().node256 > 0, "a full node");
            map.check_invariants().expect("full Node256");
            for (b, keep) in (0..=255u8).zip(keep) {
                if !keep {
                    let k = [b'w', b'/', b];
                    assert_eq!(map.remove(k), model.remove(&k[..]));
                }
            }
        }
        Op::PopFirst => {
            let first = model.first_key_value().map(|(k, v)| (k.clone(), v));
            assert_eq!(map.first_key_value(), first);
            assert_eq!(map.pop_first(), model.pop_first());
        }
        Op::PopLast => {
            let last = model.last_key_value().map(|(k, v)| (k.clone(), v));
            assert_eq!(map.last_key_value(), last);
            assert_eq!(map.pop_last(), model.pop_last());
        }
        Op::SplitOff(key, stored, into_second) => {
            let key = match stored {
                Some(pick) if !model.is_empty() => {
                    pick.get(&model.keys().collect::<Vec<_>>()).to_vec()
                }
                _ => key.clone(),
            };
            let mut second = map.split_off(&key);
            let model_second = model.split_off(&key);
            for (half, want) in [(&*map, &*model), (&second, &model_second)] {
                half.check_invariants().expect("a half after split_off");
                assert_eq!(half.len(), want.len());
                assert!(half.iter().eq(want.iter().map(|(k, v)| (k.clone(), v))));
            }
            if *into_second {
                second.append(map);
                *map = second;
            } else {
                map.append(&mut second);
            }
            model.extend(model_second);
        }
        Op::Append(entries) => {
            let mut other: FastArt<u32> = entries.iter().map(|(k, v)| (k, *v)).collect();
            map.append(&mut other);
            assert!(other.is_empty());
            model.extend(entries.iter().cloned());
        }
        Op::Clear => {
            map.clear();
            model.clear();
        }
        Op::Compact => {
            let before = map.memory_usage();
            map.compact();
            // Compaction only ever gives memory back (up to the chunk-size
            // rounding of the fresh arenas).
            assert!(
                map.memory_usage() <= before + 4096,
                "{} -> {}",
                before,
                map.memory_usage()
            );
        }
    }
    assert_eq!(map.len(), model.len());
    if let Err(e) = map.check_invariants() {
        panic!("invariant broken after {op:?}: {e}");
    }
}

proptest! {
    // 256 cases by default; PROPTEST_CASES overrides (CI lowers it under valgrind).
    #![proptest_config(ProptestConfig::default())]

    #[test]
    fn matches_btreemap(ops in prop::collection::vec(op(), 1..200)) {
        let mut map = FastArt::new();
        let mut model = Model::new();
        for op in &ops {
            apply(&mut map, &mut model, op);
        }
        // Final full comparison, and the owned iterator.
        let all: Vec<_> = map.into_iter().collect();
        let want: Vec<_> = model.into_iter().collect();
        prop_assert_eq!(all, want);
    }

    /// Many inserts, then removes of a random subset: deep trees, and every
    /// shrink and collapse path.
    #[test]
    fn bulk_insert_then_remove(keys in prop::collection::vec(key(), 1..600), remove_mask in prop::collection::vec(any::<bool>(), 600)) {
        let mut map = FastArt::new();
        let mut model = Model::new();
        for (i, k) in keys.iter().enumerate() {
            apply(&mut map, &mut model, &Op::Insert(k.clone(), i as u32));
        }
        for (k, remove) in keys.iter().zip(&remove_mask) {
            if *remove {
                apply(&mut map, &mut model, &Op::Remove(k.clone()));
            }
        }
        apply(&mut map, &mut model, &Op::Iterate(vec![false, true, true]));
        for k in &keys {
            apply(&mut map, &mut model, &Op::Remove(k.clone()));
        }
        prop_assert!(map.is_empty());
    }
}

fn hash_of(value: &impl std::hash::Hash) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(value)
}

proptest! {
    /// Comparison, hashing, indexing and the consuming iterators agree with
    /// `BTreeMap`'s on two maps over overlapping keys.
    #[test]
    fn traits_and_owned_iterators_match_btreemap(
        a in prop::collection::vec((key(), 0..3u32), 0..40),
        b in prop::collection::vec((key(), 0..3u32), 0..40),
        shared in 0..40usize,
        how in 0..3u8,
        sides in prop::collection::vec(any::<bool>(), 0..8),
    ) {
        // `b` is one of: `a`'s entries inserted in the opposite order (an
        // equal map built differently); `a` with one value changed (the
        // same keys); or a copy of `a`'s first entries and then others, so
        // that the maps often share a long run before they differ.
        let a_model: Model = a.iter().cloned().collect();
        let same = how == 0;
        let changed = shared % a_model.len().max(1);
        let b: Vec<_> = match how {
            0 => a_model.into_iter().rev().collect(),
            1 => a_model
                .into_iter()
                .enumerate()
                .map(|(i, (k, v))| (k, v + u32::from(i == changed)))
                .collect(),
            _ => a.iter().take(shared).cloned().chain(b).collect(),
        };
        let (model_a, model_b): (Model, Model) = (a.iter().cloned().collect(), b.iter().cloned().collect());
        let (map_a, map_b): (FastArt<u32>, FastArt<u32>) = (a.into_iter().collect(), b.into_iter().collect());

        prop_assert_eq!(map_a.cmp(&map_b), model_a.cmp(&model_b));
        prop_assert_eq!(map_a.partial_cmp(&map_b), model_a.partial_cmp(&model_b));
        prop_assert_eq!(map_a == map_b, model_a == model_b);
        prop_assert_eq!(map_a == map_b, same || model_a == model_b);
        if map_a == map_b {
            prop_assert_eq!(hash_of(&map_a), hash_of(&map_b));
        } else {
            // Unequal maps: a collision of the 64-bit hash on these few
            // inputs would mean keys or values are left out of it.
            prop_assert_ne!(hash_of(&map_a), hash_of(&map_b));
        }
        for (k, v) in &model_a {
            prop_assert_eq!(map_a[k], *v);
        }

        prop_assert_eq!(map_b.clone().into_keys().collect::<Vec<_>>(), model_b.keys().cloned().collect::<Vec<_>>());
        prop_assert_eq!(map_b.clone().into_values().rev().collect::<Vec<_>>(), model_b.values().rev().copied().collect::<Vec<_>>());
        let mut it = map_b.into_iter();
        let mut expected_len = model_b.len();
        let got = drain_both_ends(
            |back| {
                assert_eq!(it.len(), expected_len);
                let e = if back { it.next_back() } else { it.next() };
                expected_len = expected_len.saturating_sub(1);
                e
            },
            &sides,
        );
        prop_assert_eq!(got, model_b.into_iter().collect::<Vec<_>>());
    }
}

/// Values this large make a map of a thousand keys bigger than the caches,
/// where `extend` looks each batch up before inserting it.
type Big = (u32, [u8; 16 << 10]);

proptest! {
    // An eighth of the cases (each builds a map past the caches), but at
    // least one: with PROPTEST_CASES below 8 it would otherwise test nothing.
    #![proptest_config(ProptestConfig { cases: (ProptestConfig::default().cases / 8).max(1), ..ProptestConfig::default() })]

    /// `extend` on a map past the size where it batches: the same result as
    /// inserting each entry in turn.
    #[test]
    fn extend_of_a_large_map_matches_btreemap(batches in prop::collection::vec((entries(), prop::collection::vec(any::<prop::sample::Index>(), 0..8)), 1..6)) {
        let mut map: FastArt<Big> = (0..1100u32).map(|i| (format!("w/{i}"), (i, [0; 16 << 10]))).collect();
        let mut model: Model = (0..1100u32).map(|i| (format!("w/{i}").into_bytes(), i)).collect();
        prop_assert!(map.memory_usage() > 16 << 20, "past the batching size");
        for (entries, present) in &batches {
            let keys: Vec<_> = entries.iter().map(|(k, _)| k.clone()).collect();
            let keys = common::with_stored_keys(&keys, present, &model);
            let entries: Vec<_> = keys.into_iter().zip(entries.iter().map(|(_, v)| *v).cycle()).collect();
            map.extend(entries.iter().map(|(k, v)| (k, (*v, [0; 16 << 10]))));
            model.extend(entries);
            prop_assert_eq!(map.len(), model.len());
            if let Err(e) = map.check_invariants() {
                panic!("invariant broken after extend: {e}");
            }
        }
        let all: Vec<_> = map.iter().map(|(k, v)| (k, v.0)).collect();
        let want: Vec<_> = model.into_iter().collect();
        prop_assert_eq!(all, want);
    }
}

/// A node grows through every kind to 256 children and shrinks back down to
/// a single key, checked at each step.
#[test]
fn node_grows_to_256_and_shrinks_back() {
    let mut map = FastArt::new();
    let mut model = Model::new();
    // Interleaved order so growth is not just appends.
    let order: Vec<u8> = (0..=255u8).map(|i| i.wrapping_mul(167)).collect();
    for (i, &b) in order.iter().enumerate() {
        apply(&mut map, &mut model, &Op::Insert(vec![b'n', b], i as u32));
        let s = map.stats();
        let want = match i + 1 {
            1 => (0, 0, 0, 0), // a single leaf at the root
            2..=4 => (1, 0, 0, 0),
            5..=16 => (0, 1, 0, 0),
            17..=48 => (0, 0, 1, 0),
            _ => (0, 0, 0, 1),
        };
        assert_eq!(
            (s.node4, s.node16, s.node48, s.node256),
            want,
            "after {} children",
            i + 1
        );
    }
    apply(&mut map, &mut model, &Op::Insert(b"n".to_vec(), 999)); // a terminal too
    for (i, &b) in order.iter().enumerate() {
        apply(&mut map, &mut model, &Op::Remove(vec![b'n', b]));
        let left = 255 - i;
        let s = map.stats();
        let kinds = (s.node4, s.node16, s.node48, s.node256);
        let want = match left {
            0 => (0, 0, 0, 0), // the terminal's leaf, alone at the root
            1..=4 => (1, 0, 0, 0),
            5..=12 => (0, 1, 0, 0),
            13..=36 => (0, 0, 1, 0),
            _ => (0, 0, 0, 1),
        };
        assert_eq!(kinds, want, "with {left} children left");
    }
    assert_eq!(map.len(), 1);
    assert_eq!(map.get("n"), Some(&999));
}

/// `or_default` and the entries' `Debug`, which the operations above leave
/// out.
#[test]
fn entry_or_default_and_debug() {
    let mut map: FastArt<u32> = FastArt::new();
    *map.entry(&b"a\xff"[..]).or_default() += 5;
    *map.entry(&b"a\xff"[..]).or_default() += 1;
    assert_eq!(map.get(b"a\xff"), Some(&6));
    assert_eq!(map.entry("b").or_default(), &0);
    assert_eq!(map.len(), 2);
    assert_eq!(
        format!("{:?}", map.entry(&b"a\xff"[..])),
        r#"Entry(OccupiedEntry { key: b"a\xff", value: 6 })"#
    );
    assert_eq!(
        format!("{:?}", map.entry("c")),
        r#"Entry(VacantEntry(b"c"))"#
    );
}

/// Keys that are prefixes of each other, the empty key, and 0x00 bytes, all
/// present at once: the classic ART failure.
#[test]
fn prefix_keys_and_zero_bytes_coexist() {
    let keys: Vec<&[u8]> = vec![
        b"",
        b"a",
        b"ab",
        b"abc",
        b"abc\x00",
        b"abc\x00\x00",
        b"\x00",
        b"\x00\x00",
        b"\xff",
        b"\xff\xff",
    ];
    let map: FastArt<usize> = keys.iter().enumerate().map(|(i, k)| (*k, i)).collect();
    map.check_invariants().unwrap();
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(map.get(k), Some(&i), "{k:?}");
    }
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(map.keys().collect::<Vec<_>>(), sorted);
    assert_eq!(map.prefix("ab").count(), 4);
    assert_eq!(map.prefix("").count(), keys.len());
}

/// Keys of a mebibyte, sharing most of their bytes.
#[test]
fn very_long_keys() {
    let base: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8).collect();
    let mut keys = vec![base.clone()];
    for cut in [0, 1, 254, 255, 1 << 19, (1 << 20) - 1] {
        let mut k = base.clone();
        k[cut] ^= 0x80;
        keys.push(k);
        keys.push(base[..cut].to_vec());
    }
    let mut map = FastArt::new();
    for (i, k) in keys.iter().enumerate() {
        map.insert(k, i);
    }
    map.check_invariants().unwrap();
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(map.get(k), Some(&i));
    }
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(map.keys().collect::<Vec<_>>(), sorted);
    for k in &keys {
        assert!(map.remove(k).is_some());
        map.check_invariants().unwrap();
    }
    assert!(map.is_empty());
}

/// `retain` removes what it rejects a batch at a time (64 KiB of keys or
/// 4,096 keys), resuming its walk after each: across batches of many short
/// keys, of a few long ones and of one key each, every entry is judged once,
/// in order, and the map ends as the model does.
#[test]
fn retain_in_batches_matches_the_model() {
    fn check(key: impl Fn(u32) -> Vec<u8>, count: u32, every: u32) {
        let mut map: FastArt<u32> = (0..count).map(|i| (key(i), i)).collect();
        let mut model: BTreeMap<Vec<u8>, u32> = (0..count).map(|i| (key(i), i)).collect();
        let mut seen = Vec::new();
        map.retain(|k, v| {
            seen.push(k.to_vec());
            *v += 1;
            (*v - 1) % every != 0
        });
        assert!(seen.iter().eq(model.keys()), "each entry once, in order");
        model.retain(|_, v| {
            *v += 1;
            (*v - 1) % every != 0
        });
        map.check_invariants().unwrap();
        assert_eq!(map.len(), model.len());
        assert!(map.iter().map(|(k, v)| (k, *v)).eq(model.into_iter()));
    }
    let short = |i: u32| format!("k{:05}", i * 7919 % 20_000).into_bytes();
    let padded = |pad: u8, len: usize| {
        move |i: u32| {
            let mut k = vec![pad; len];
            k.extend_from_slice(&i.to_be_bytes());
            k
        }
    };
    // Rejected: 10,000 short keys (two full batches by count and a part),
    // 4,096 exactly (a full batch, then a walk that finds nothing), 667 of
    // 1 KiB (batches by bytes) and 9 of 70 KB (one key a batch).
    check(short, 20_000, 2);
    check(short, 8_192, 2);
    check(padded(0xFF, 1000), 2_000, 3);
    check(padded(0, 70_000), 18, 2);
}

/// `FastArt<V>` and its iterators are `Send`/`Sync` when `V` is (checked at
/// compile time).
#[test]
fn send_and_sync_follow_the_value_type() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<FastArt<u64>>();
    send_sync::<FastArt<Vec<u8>>>();
    send_sync::<memkv::art::Iter<'static, String>>();
    send_sync::<memkv::art::IntoIter<String>>();
    // Like std's, the mutable iterators and entries need only `V: Send` to
    // be sent.
    fn send<T: Send>() {}
    send::<memkv::art::IterMut<'static, std::cell::Cell<u8>>>();
    send::<memkv::art::ValuesMut<'static, std::cell::Cell<u8>>>();
    send::<memkv::art::RangeMut<'static, std::cell::Cell<u8>>>();
    send::<memkv::art::OccupiedEntry<'static, &str, std::cell::Cell<u8>>>();
    send_sync::<memkv::art::OccupiedEntry<'static, &str, u8>>();
}

/// Automatic compaction: the insert after the map has doubled since the
/// last compaction (and holds at least 65,536 keys) compacts it first, so
/// the reference an entry hands back points into the new layout; with it
/// off, nothing is compacted. `extend` leaves it to the next insert.
#[test]
fn auto_compaction_runs_before_the_insert_that_triggers_it() {
    const MIN: u32 = 1 << 16;
    let key = |i: u32| format!("usr/share/doc/pkg{:05}/file{}", i % 7919, i);
    for auto in [true, false] {
        let mut map = FastArt::new();
        map.set_auto_compact(auto);
        for i in 0..MIN {
            map.insert(key(i), i);
        }
        assert_eq!(map.stats().added_since_compact, MIN as usize);
        // This insert is the one that compacts (when on): the reference it
        // returns must be to the value in the compacted tree.
        let value = map.entry(key(MIN)).or_insert(0);
        *value = MIN;
        let expected = if auto { 1 } else { MIN as usize + 1 };
        assert_eq!(map.stats().added_since_compact, expected, "auto = {auto}");
        // Replacing a value adds no key; the next doubling is far off.
        map.insert(key(0), 0);
        map.insert(key(MIN + 1), MIN + 1);
        assert_eq!(map.stats().added_since_compact, expected + 1);
        map.check_invariants().unwrap();
        assert_eq!(map.len(), MIN as usize + 2);
        for i in 0..MIN + 2 {
            assert_eq!(map.get(key(i)), Some(&i), "key {i}, auto = {auto}");
        }
    }
    // `extend` does not compact along the way; the next insert does.
    let mut map: FastArt<u32> = (0..MIN + 1).map(|i| (key(i), i)).collect();
    assert_eq!(map.stats().added_since_compact, MIN as usize + 1);
    map.insert(key(MIN), MIN);
    assert_eq!(map.stats().added_since_compact, 0);
    // A clone of a large map is compacted once, when built.
    assert_eq!(map.clone().stats().added_since_compact, 0);
    map.set_auto_compact(false);
    assert_eq!(map.clone().stats().added_since_compact, MIN as usize + 1);
}

/// The automatic-compaction setting belongs to a map, whichever way its
/// entries move: `split_off` gives the new map the same setting (whether
/// all, some or none of the entries move), `append` leaves each map its own.
#[test]
fn split_off_and_append_keep_each_maps_auto_compact_setting() {
    let entries = || [("a", 1), ("b", 2), ("c", 3)].into_iter();
    for on in [true, false] {
        for at in ["", "b", "z"] {
            let mut map: FastArt<u8> = entries().collect();
            map.set_auto_compact(on);
            let tail = map.split_off(at);
            assert_eq!(
                (map.auto_compact(), tail.auto_compact()),
                (on, on),
                "at {at:?}"
            );
        }
        for into_empty in [true, false] {
            let mut map: FastArt<u8> = if into_empty {
                FastArt::new()
            } else {
                entries().take(1).collect()
            };
            map.set_auto_compact(on);
            let mut other: FastArt<u8> = entries().collect();
            other.set_auto_compact(!on);
            map.append(&mut other);
            assert_eq!(map.len(), 3);
            assert!(other.is_empty());
            assert_eq!(
                (map.auto_compact(), other.auto_compact()),
                (on, !on),
                "into an empty map: {into_empty}"
            );
        }
    }
}

/// A search reads the keys its automaton can still match, and skips the
/// rest a dead end at a time: over 20,000 keys under 100 directories, one
/// directory's worth of keys and a few bytes per other directory.
#[test]
fn search_skips_what_cannot_match() {
    use memkv::frozen::automaton::{Automaton, Str};
    let map: FastArt<u32> = (0..20_000u32)
        .map(|i| (format!("dir{:03}/file{i:05}", i % 100), i))
        .collect();
    let bytes = std::cell::Cell::new(0);
    let under = dfa::Counting {
        inner: Str::new("dir042/").starts_with(),
        bytes: &bytes,
    };
    assert_eq!(map.search(under).count(), 200);
    // The first of the 200 keys whole (16 bytes), then of each the bytes
    // after those it shares with the one before (at most 5 of "file00042"),
    // and up to 7 bytes for the first key of each other directory (or
    // past them).
    assert!(
        bytes.get() <= 16 + 199 * 5 + 100 * 7,
        "{} bytes fed",
        bytes.get()
    );
    // Nothing can match from the start: not one byte is read.
    bytes.set(0);
    let never = dfa::Counting {
        inner: memkv::frozen::automaton::AlwaysMatch.complement(),
        bytes: &bytes,
    };
    assert_eq!(map.search(never).count(), 0);
    assert_eq!(bytes.get(), 0);
}

/// The size hints of the walks that cannot know their length: as tight as
/// what they know allows.
#[test]
fn size_hints_of_searches_and_prefix_walks() {
    use memkv::frozen::automaton::{Automaton, Str};
    let mut map: FastArt<u32> = ["", "a", "ab", "abc", "b", "bc", "bcd"]
        .into_iter()
        .zip(0..)
        .collect();
    // One entry per length of the key, at most: "", "a", "ab", "abc".
    let mut prefixes = map.prefixes_of("abcd");
    assert_eq!(prefixes.size_hint(), (0, Some(5)));
    prefixes.next();
    assert_eq!(prefixes.size_hint(), (0, Some(4)), "after \"\"");
    prefixes.next();
    assert_eq!(prefixes.size_hint(), (0, Some(3)), "after \"a\"");
    prefixes.nth(1);
    assert_eq!(
        prefixes.size_hint(),
        (0, Some(0)),
        "the walk ended at a leaf"
    );
    assert_eq!(prefixes.next(), None);
    // ... and no more than the map holds.
    assert_eq!(map.prefixes_of(&[b'a'; 20]).size_hint(), (0, Some(7)));
    let mut search = map.search(Str::new("b").starts_with());
    assert_eq!(search.size_hint(), (0, Some(7)));
    assert_eq!(search.by_ref().count(), 3);
    assert_eq!(search.size_hint(), (0, Some(0)));
    assert_eq!(format!("{search:?}"), "Search { done: true, .. }");

    let mut extract = map.extract_if(&b"b"[..].., |_, v| *v % 2 == 0);
    assert_eq!(
        format!("{extract:?}"),
        r#"ExtractIf { from: Included(b"b"), to: Unbounded, done: false, .. }"#
    );
    assert_eq!(extract.next(), Some((b"b".to_vec(), 4)));
    drop(extract);
    assert_eq!(map.len(), 6);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// `search` over maps of trie-stressing keys, with random automata,
    /// prefixes of stored keys (whose states match whatever follows), and
    /// the two combined.
    #[test]
    fn search_matches_the_model(
        entries in prop::collection::btree_map(key(), any::<u32>(), 0..200),
        automaton in dfa::dfa(),
        kind in any::<u8>(),
        pick in any::<prop::sample::Index>(),
        cut in 0usize..8,
    ) {
        let keys: Vec<Vec<u8>> = entries.keys().cloned().collect();
        let query = dfa::Query::new(kind, automaton, &keys, pick, cut);
        let mut map: FastArt<u32> = entries.iter().map(|(k, v)| (k.clone(), *v)).collect();
        let want: Vec<(Vec<u8>, u32)> = (entries.iter())
            .filter(|(k, _)| dfa::with_query!(&query, |a| dfa::accepts(&a, k)))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        for compacted in [false, true] {
            // A compacted map's walk loads its regions and prefetches
            // nothing ahead.
            if compacted {
                map.compact();
            }
            let got: Vec<(Vec<u8>, u32)> =
                dfa::with_query!(&query, |a| map.search(a).map(|(k, v)| (k, *v)).collect::<Vec<_>>());
            prop_assert_eq!(&got, &want, "compacted: {}, {:?}", compacted, query);
        }
        // The frozen layer's search answers alike, and so does the fst
        // crate's own stream, whose rules the searches follow.
        let layer = memkv::FrozenLayer::from_sorted_iter(entries.iter().map(|(k, v)| (k, *v))).unwrap();
        let frozen: Vec<(Vec<u8>, u32)> =
            dfa::with_query!(&query, |a| layer.search(a).collect::<Vec<_>>());
        prop_assert_eq!(&frozen, &want, "the frozen layer, {:?}", query);
        let set = fst::Set::from_iter(entries.keys()).unwrap();
        let streamed: Vec<Vec<u8>> =
            dfa::with_query!(&query, |a| fst::IntoStreamer::into_stream(set.search(a)).into_bytes());
        prop_assert!(streamed.iter().eq(want.iter().map(|(k, _)| k)), "the fst crate, {:?}", query);
    }
}
