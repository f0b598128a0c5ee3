//! HybridMap against a `BTreeMap` model: random interleavings of inserts,
//! removes, lookups, scans, clears and merges (synchronous, background,
//! automatic by the policy, and failed ones that leave sealed deltas), over
//! keys that stress tries.

use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::panic::{self, AssertUnwindSafe};

use memkv::frozen::{FrozenValue, IntColumn};
use memkv::{HybridConfig, HybridMap};
use proptest::prelude::*;

mod common;
#[path = "common/dfa.rs"]
mod dfa;
#[path = "common/hints.rs"]
mod hints;

/// The map's values: `u64`s whose encoding panics while [`FAIL_MERGES`] is
/// set on the encoding thread. That is how the model makes a merge fail
/// half-way ([`failing_freeze`]): its delta stays sealed, read, and stacks
/// on those of earlier failures until a merge succeeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Val(u64);

thread_local! {
    /// Only the test's own thread sets it, and only for one `freeze`: the
    /// merges on the map's merge thread never fail.
    static FAIL_MERGES: Cell<bool> = const { Cell::new(false) };
}

impl FrozenValue for Val {
    const TYPE_NAME: &'static str = "Val";
    type Column = IntColumn;
    fn encode(&self) -> u64 {
        assert!(!FAIL_MERGES.get(), "a merge made to fail");
        self.0
    }
    fn decode(encoded: u64) -> Self {
        Val(encoded)
    }
}

/// `freeze`, with encoding failing in this thread (where `freeze` merges);
/// whether the merge failed (it does not if it encodes nothing).
fn failing_freeze(map: &HybridMap<Val>) -> bool {
    if cfg!(panic = "abort") {
        // Nothing catches the panic here (WASI): merges only succeed.
        map.freeze().unwrap();
        return false;
    }
    FAIL_MERGES.set(true);
    let result = panic::catch_unwind(AssertUnwindSafe(|| map.freeze()));
    FAIL_MERGES.set(false);
    match result {
        Ok(result) => {
            result.unwrap();
            false
        }
        Err(payload) => {
            let message = payload.downcast_ref::<String>().map(String::as_str);
            let message = message.or(payload.downcast_ref::<&str>().copied());
            assert_eq!(message, Some("a merge made to fail"));
            true
        }
    }
}

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
    /// Blind writes: their entries stay pending until `len` (or a merge,
    /// or a write that looks below) settles them.
    Put(Vec<u8>, u64),
    Delete(Vec<u8>),
    /// `len` and `is_empty`, which settle pending entries: asked only now
    /// and then, so that pending entries meet the other operations.
    Len,
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
    /// `search` with a random automaton, read by `next` or `next_entry`,
    /// with a write halfway that the search, a snapshot, must not see.
    Search(dfa::Dfa, bool, (Vec<u8>, u64)),
    /// `prefixes_of` and `longest_prefix_of` the key or (if the index is
    /// there and the map is not empty) a stored key with the key appended.
    PrefixesOf(Vec<u8>, Option<prop::sample::Index>),
    Iterate,
    Edges,
    /// `pop_first` (`true`) or `pop_last`.
    Pop(bool),
    /// One use of the entry API, on the key or (if the index is there and
    /// the map is not empty) a stored key.
    Entry(Vec<u8>, Option<prop::sample::Index>, u64, EntryUse),
    /// `retain`, keeping the entries for which `(value + key length) % 3`
    /// differs from the number.
    Retain(u64),
    Freeze,
    Background,
    /// A `freeze` made to fail: its delta stays sealed.
    FailedFreeze,
    Clear(BeforeClear),
    /// Goes on with a clone of the map; the original must keep what it
    /// had, whatever happens to the clone.
    CloneMap,
}

/// What an [`Op::Entry`] does with its entry.
#[derive(Clone, Debug)]
enum EntryUse {
    OrInsert,
    /// `and_modify` (add the value), then `or_insert`.
    Count,
    OrInsertWithKey,
    /// Drops the entry after looking: no write.
    Look,
    /// If occupied: `insert`, then `remove` through the same entry (a key
    /// in the base must end up hidden by a tombstone, not uncovered).
    InsertThenRemove,
    /// If occupied: `remove_entry`.
    Remove,
    /// If vacant: `insert`.
    InsertIfVacant,
}

/// What happens just before a `clear`, besides the earlier ops.
#[derive(Clone, Debug)]
enum BeforeClear {
    Nothing,
    /// A background merge is asked for: `clear` may come before it starts,
    /// while it runs (and waits for it), or after it.
    Background,
    /// A failed merge, then a write: a sealed delta under a fresh delta
    /// with a write in it.
    FailedMerge(Vec<u8>, u64),
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
        1 => Just(Op::FailedFreeze),
        // Rarely, so that maps still grow.
        1 => prop_oneof![
            Just(BeforeClear::Nothing),
            Just(BeforeClear::Background),
            (key(), any::<u64>()).prop_map(|(k, v)| BeforeClear::FailedMerge(k, v)),
        ]
        .prop_map(Op::Clear),
    ]
}

fn op_without_merges() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (key(), any::<u64>()).prop_map(|(k, v)| Op::Insert(k, v)),
        6 => key().prop_map(Op::Remove),
        8 => (key(), any::<u64>()).prop_map(|(k, v)| Op::Put(k, v)),
        5 => key().prop_map(Op::Delete),
        3 => Just(Op::Len),
        4 => key().prop_map(Op::Get),
        1 => (prop::collection::vec(key(), 0..24), prop::collection::vec(any::<prop::sample::Index>(), 0..24))
            .prop_map(|(keys, present)| Op::GetMany(keys, present)),
        1 => (prop::collection::vec((key(), any::<u64>()), 0..30), prop::collection::vec(any::<prop::sample::Index>(), 0..8), 1..12usize)
            .prop_map(|(entries, present, repeats)| Op::Extend(entries, present, repeats)),
        2 => (bound(), bound(), prop::collection::vec(any::<bool>(), 0..24), (key(), any::<u64>()))
            .prop_map(|(a, b, ends, write)| Op::Range(a, b, ends, write)),
        2 => key().prop_map(Op::Prefix),
        2 => (dfa::dfa(), any::<bool>(), (key(), any::<u64>()))
            .prop_map(|(dfa, lend, write)| Op::Search(dfa, lend, write)),
        2 => (key(), prop::option::of(any::<prop::sample::Index>()))
            .prop_map(|(k, stored)| Op::PrefixesOf(k, stored)),
        1 => Just(Op::Iterate),
        2 => Just(Op::Edges),
        2 => any::<bool>().prop_map(Op::Pop),
        4 => (key(), prop::option::of(any::<prop::sample::Index>()), any::<u64>(), prop_oneof![
            Just(EntryUse::OrInsert),
            Just(EntryUse::Count),
            Just(EntryUse::OrInsertWithKey),
            Just(EntryUse::Look),
            Just(EntryUse::InsertThenRemove),
            Just(EntryUse::Remove),
            Just(EntryUse::InsertIfVacant),
        ]).prop_map(|(k, stored, v, how)| Op::Entry(k, stored, v, how)),
        1 => (0..4u64).prop_map(Op::Retain),
        1 => Just(Op::CloneMap),
    ]
}

fn model_range(
    model: &BTreeMap<Vec<u8>, Val>,
    start: &Bound<Vec<u8>>,
    end: &Bound<Vec<u8>>,
) -> Vec<(Vec<u8>, Val)> {
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

/// Checks that a size hint bounds the `left` entries still to come, with
/// an upper bound if `bounded`.
fn check_hint(
    hint: (usize, Option<usize>),
    left: usize,
    bounded: bool,
) -> Result<(), TestCaseError> {
    prop_assert!(
        hints::bounds(hint, left, bounded),
        "{} left, hint {:?}",
        left,
        hint
    );
    Ok(())
}

/// Runs `ops` on a map with `config`, whose merges build parts of
/// `part_keys` keys, and on the model.
fn run(config: HybridConfig, part_keys: usize, ops: Vec<Op>) -> Result<(), TestCaseError> {
    run_from(
        config.part_keys(part_keys).build(),
        BTreeMap::new(),
        part_keys,
        ops,
    )
}

/// Runs `ops` on `map`, whose merges build parts of `part_keys` keys, and on
/// `model`, which holds what `map` holds.
fn run_from(
    mut map: HybridMap<Val>,
    mut model: BTreeMap<Vec<u8>, Val>,
    part_keys: usize,
    ops: Vec<Op>,
) -> Result<(), TestCaseError> {
    let mut failed_merges = 0;
    // Maps left behind by `Op::CloneMap`, with what they held.
    let mut originals = Vec::new();
    for op in ops {
        match op {
            Op::Insert(k, v) => prop_assert_eq!(map.insert(&k, Val(v)), model.insert(k, Val(v))),
            // Keys of odd length go through `remove_entry`.
            Op::Remove(k) if k.len() % 2 == 1 => {
                prop_assert_eq!(map.remove_entry(&k), model.remove_entry(&k))
            }
            Op::Remove(k) => prop_assert_eq!(map.remove(&k), model.remove(&k)),
            Op::Put(k, v) => {
                map.put(&k, Val(v));
                model.insert(k, Val(v));
            }
            Op::Delete(k) => {
                map.delete(&k);
                model.remove(&k);
            }
            Op::Len => {
                prop_assert_eq!(map.len(), model.len());
                prop_assert_eq!(map.is_empty(), model.is_empty());
                prop_assert_eq!(map.stats().delta_pending, 0);
            }
            Op::Get(k) => {
                prop_assert_eq!(map.get(&k), model.get(&k).copied());
                prop_assert_eq!(map.contains_key(&k), model.contains_key(&k));
                prop_assert_eq!(map.get_key_value(&k), model.get(&k).map(|v| (&k, *v)));
            }
            Op::GetMany(keys, present) => {
                let keys = common::with_stored_keys(&keys, &present, &model);
                let want: Vec<Option<Val>> = keys.iter().map(|k| model.get(k).copied()).collect();
                prop_assert_eq!(map.get_many(&keys), want);
            }
            Op::Extend(entries, present, repeats) => {
                let keys: Vec<_> = entries.iter().map(|(k, _)| k.clone()).collect();
                let keys = common::with_stored_keys(&keys, &present, &model);
                let values = entries.iter().map(|(_, v)| *v).chain([7]).cycle();
                let once: Vec<_> = keys.into_iter().zip(values).collect();
                let all: Vec<(Vec<u8>, Val)> = (0..repeats as u64)
                    .flat_map(|r| {
                        once.iter()
                            .map(move |(k, v)| (k.clone(), Val(v.wrapping_add(r))))
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
                        let value = Val(value);
                        prop_assert_eq!(map.insert(&key, value), model.insert(key.clone(), value));
                    }
                    check_hint(both.size_hint(), expected.len(), true)?;
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
            Op::Search(dfa, lend, (k, v)) => {
                let want: Vec<_> = (model.iter())
                    .filter(|(k, _)| dfa::accepts(&dfa, k))
                    .map(|(k, v)| (k.clone(), *v))
                    .collect();
                let mut search = map.search(dfa.clone());
                let mut got = Vec::new();
                let mut written = false;
                loop {
                    // A search that skips may lose its upper bound.
                    check_hint(search.size_hint(), want.len() - got.len(), false)?;
                    if !written && got.len() == want.len() / 2 {
                        // Not seen by the search: it reads a snapshot.
                        map.insert(&k, Val(v));
                        model.insert(k.clone(), Val(v));
                        written = true;
                    }
                    let entry = match lend {
                        true => search.next_entry().map(|(k, v)| (k.to_vec(), v)),
                        false => search.next(),
                    };
                    match entry {
                        Some(entry) => got.push(entry),
                        None => break,
                    }
                }
                prop_assert!(search.next().is_none(), "search yields after its end");
                prop_assert_eq!(got, want, "search {:?}", dfa);
            }
            Op::PrefixesOf(k, stored) => {
                let query = match stored {
                    Some(pick) if !model.is_empty() => {
                        let keys: Vec<&Vec<u8>> = model.keys().collect();
                        [pick.get(&keys).as_slice(), &k].concat()
                    }
                    _ => k,
                };
                let want: Vec<(&[u8], Val)> = (0..=query.len())
                    .filter_map(|len| model.get(&query[..len]).map(|v| (&query[..len], *v)))
                    .collect();
                let got: Vec<_> = map.prefixes_of(&query).collect();
                prop_assert_eq!(&got, &want, "prefixes of {:?}", query);
                prop_assert_eq!(map.prefixes_of(&query).len(), want.len());
                prop_assert!(map.prefixes_of(&query).rev().eq(want.iter().rev().copied()));
                prop_assert_eq!(map.longest_prefix_of(&query), want.last().copied());
            }
            Op::Iterate => {
                // The lending way, too, checking the size hint at each step:
                // exact when no delta entry can hide or add one.
                let stats = map.stats();
                let exact = stats.delta_entries == 0 && stats.sealed_deltas == 0;
                let mut got = Vec::new();
                let mut it = map.iter();
                loop {
                    let left = model.len() - got.len();
                    check_hint(it.size_hint(), left, true)?;
                    if exact {
                        prop_assert_eq!(it.size_hint(), (left, Some(left)));
                    }
                    let Some((k, v)) = it.next_entry() else { break };
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
                // Not compared with `iter`'s: a merge in the background may
                // end between two snapshots, and the later one's is exact.
                check_hint(map.keys().size_hint(), model.len(), true)?;
                check_hint(map.values().size_hint(), model.len(), true)?;
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
            Op::Pop(first) => {
                let (got, want) = if first {
                    (map.pop_first(), model.pop_first())
                } else {
                    (map.pop_last(), model.pop_last())
                };
                prop_assert_eq!(got, want);
            }
            Op::Entry(key, stored, value, how) => {
                let key = match stored {
                    Some(pick) if !model.is_empty() => {
                        pick.get(&model.keys().collect::<Vec<_>>()).to_vec()
                    }
                    _ => key,
                };
                entry_use(&map, &mut model, key, value, how)?;
            }
            Op::Retain(rule) => {
                let keep = |key: &[u8], value: &Val| (value.0 % 3 + key.len() as u64) % 3 != rule;
                let mut asked = 0;
                map.retain(|key, value| {
                    asked += 1;
                    keep(key, value)
                });
                // Asked once per entry: no other thread wrote meanwhile.
                prop_assert_eq!(asked, model.len());
                model.retain(|key, value| keep(key, value));
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
            Op::FailedFreeze => {
                if failing_freeze(&map) {
                    failed_merges += 1;
                }
                // Merges in the background never fail.
                prop_assert_eq!(map.stats().failed_merges, failed_merges);
            }
            Op::CloneMap => {
                let copy = map.clone();
                prop_assert_eq!(copy.len(), model.len());
                // A clone counts its own merges.
                prop_assert_eq!(copy.stats().merges, 0);
                failed_merges = 0;
                originals.push((std::mem::replace(&mut map, copy), model.clone()));
            }
            Op::Clear(before) => {
                match before {
                    BeforeClear::Nothing => {}
                    BeforeClear::Background => map.merge_in_background(),
                    BeforeClear::FailedMerge(k, v) => {
                        if failing_freeze(&map) {
                            failed_merges += 1;
                        }
                        prop_assert_eq!(map.insert(&k, Val(v)), model.insert(k, Val(v)));
                    }
                }
                map.clear();
                let cleared = std::mem::take(&mut model);
                // A merge asked for before may run now, but finds nothing.
                let stats = map.stats();
                prop_assert_eq!(
                    (
                        stats.len,
                        stats.base_keys,
                        stats.delta_entries,
                        stats.sealed_deltas
                    ),
                    (0, 0, 0, 0)
                );
                prop_assert_eq!(map.iter().next(), None);
                prop_assert_eq!(map.iter().next_back(), None);
                prop_assert_eq!(map.first_key_value(), None);
                prop_assert_eq!(map.last_key_value(), None);
                for k in cleared.keys() {
                    prop_assert_eq!(map.get(k), None);
                    prop_assert!(!map.contains_key(k));
                }
                let keys: Vec<_> = cleared.into_keys().collect();
                prop_assert!(map.get_many(&keys).iter().all(Option::is_none));
            }
        }
    }
    prop_assert_eq!(map.len(), model.len());
    for (original, held) in originals {
        prop_assert_eq!(original.len(), held.len());
        let got: Vec<_> = original.iter().collect();
        prop_assert_eq!(got, held.into_iter().collect::<Vec<_>>());
    }
    // Whatever the merges did meanwhile, a final full comparison.
    let got: Vec<_> = map.iter().collect();
    let want: Vec<_> = model.into_iter().collect();
    prop_assert_eq!(&got, &want);
    map.freeze().unwrap();
    let stats = map.stats();
    prop_assert_eq!(stats.failed_merges, failed_merges);
    prop_assert_eq!(stats.last_merge_at.is_some(), stats.merges > 0);
    // The owned iterator outlives the map it came from.
    prop_assert_eq!(map.into_iter().collect::<Vec<_>>(), want);
    Ok(())
}

/// Runs one [`Op::Entry`] on the map and the model.
fn entry_use(
    map: &HybridMap<Val>,
    model: &mut BTreeMap<Vec<u8>, Val>,
    key: Vec<u8>,
    value: u64,
    how: EntryUse,
) -> Result<(), TestCaseError> {
    use memkv::hybrid::Entry;
    use std::collections::btree_map;

    let entry = map.entry(&key);
    prop_assert_eq!(*entry.key(), &key);
    let model_entry = model.entry(key.clone());
    prop_assert_eq!(
        matches!(entry, Entry::Occupied(_)),
        matches!(model_entry, btree_map::Entry::Occupied(_))
    );
    match how {
        EntryUse::OrInsert => {
            prop_assert_eq!(
                entry.or_insert(Val(value)),
                *model_entry.or_insert(Val(value))
            );
        }
        EntryUse::Count => {
            let add = |v: &mut Val| v.0 = v.0.wrapping_add(value);
            let got = entry.and_modify(add).or_insert(Val(value));
            prop_assert_eq!(got, *model_entry.and_modify(add).or_insert(Val(value)));
        }
        EntryUse::OrInsertWithKey => {
            let got = entry.or_insert_with_key(|k| Val(k.len() as u64));
            prop_assert_eq!(got, *model_entry.or_insert(Val(key.len() as u64)));
        }
        EntryUse::Look => {
            if let (Entry::Occupied(got), btree_map::Entry::Occupied(want)) = (&entry, &model_entry)
            {
                prop_assert_eq!(got.get(), want.get());
            }
            // Releases the lock (the map is read below).
            drop(entry);
        }
        EntryUse::InsertThenRemove => {
            if let (Entry::Occupied(mut got), btree_map::Entry::Occupied(mut want)) =
                (entry, model_entry)
            {
                prop_assert_eq!(got.insert(Val(value)), want.insert(Val(value)));
                prop_assert_eq!(got.get(), want.get());
                prop_assert_eq!(got.remove(), want.remove());
            }
        }
        EntryUse::Remove => {
            if let (Entry::Occupied(got), btree_map::Entry::Occupied(want)) = (entry, model_entry) {
                let (k, v) = got.remove_entry();
                prop_assert_eq!((k.clone(), v), want.remove_entry());
            }
        }
        EntryUse::InsertIfVacant => {
            if let (Entry::Vacant(got), btree_map::Entry::Vacant(want)) = (entry, model_entry) {
                prop_assert_eq!(got.insert(Val(value)), *want.insert(Val(value)));
            }
        }
    }
    // The entry's lock is released: the map reads as the model.
    prop_assert_eq!(map.get(&key), model.get(&key).copied());
    prop_assert_eq!(map.contains_key(&key), model.contains_key(&key));
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
    // At most 200 cases, fewer if PROPTEST_CASES says so.
    #![proptest_config(ProptestConfig { cases: ProptestConfig::default().cases.min(200), ..ProptestConfig::default() })]

    /// Merges only when asked, synchronously or in the background, into
    /// parts of 1 to 4 keys (at 1, a merge cut empty parts until
    /// 2026-11-27).
    #[test]
    fn manual_merges(ops in prop::collection::vec(op(), 0..80), part_keys in 1..5usize) {
        run(HybridConfig::new().manual(), part_keys, ops)?;
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

    /// A map built in one go (entries with repeated keys, later ones
    /// winning) by `collect` (merged into a base at once from 4,096 keys),
    /// by `HybridConfig::build_from` with small parts (merged from 16
    /// keys; from 128 entries on, built straight into parts while they come
    /// in key order, else gathered in shares on one to four threads), or with the
    /// manual policy (left in the delta), then used.
    #[test]
    fn maps_built_in_one_go(
        entries in prop::collection::vec((key(), any::<u64>()), 0..300),
        filler in 0usize..6000,
        how in 0..3u8,
        threads in 1..5usize,
        order in 0..4u8,
        ops in prop::collection::vec(op(), 0..40),
    ) {
        // Distinct keys, enough to cross the merge threshold in most cases,
        // interleaved with the generated ones; then all in key order (a
        // later entry for a key still after an earlier one), the first
        // half in key order, each key once in order followed by the last
        // one and the generated ones again, or as they are.
        let filler = (0..filler).map(|i| (format!("usr/lib/{:02}/{i}", i % 37).into_bytes(), i as u64));
        let mut all: Vec<(Vec<u8>, u64)> = filler.collect();
        for (i, entry) in entries.iter().enumerate() {
            all.insert((i * 17).min(all.len()), entry.clone());
        }
        match order {
            0 => all.sort_by(|a, b| a.0.cmp(&b.0)),
            1 => {
                let half = all.len() / 2;
                all[..half].sort_by(|a, b| a.0.cmp(&b.0));
            }
            // Each key once, in order, then the last key again, and the
            // generated entries again: keys already written.
            2 => {
                let once: BTreeMap<Vec<u8>, u64> = all.drain(..).collect();
                all.extend(once);
                if let Some((key, value)) = all.last().cloned() {
                    all.push((key, value ^ 1));
                }
                all.extend(entries);
            }
            _ => {}
        }
        // Built straight into parts while in order, then by `extend`.
        let broke_off = how == 1 && !all.windows(2).all(|pair| pair[0].0 < pair[1].0);
        let model: BTreeMap<Vec<u8>, Val> = all.iter().map(|(k, v)| (k.clone(), Val(*v))).collect();
        let entries = all.into_iter().map(|(k, v)| (k, Val(v)));
        let (map, part_keys, merges_from): (HybridMap<Val>, _, _) = match how {
            0 => (entries.collect(), HybridConfig::DEFAULT_PART_KEYS, 4096),
            1 => {
                let config = HybridConfig::new().min_delta_keys(16).part_keys(64).build_threads(threads);
                (config.build_from(entries), 64, 16)
            }
            _ => (HybridConfig::new().manual().part_keys(64).build_from(entries), 64, usize::MAX),
        };
        let stats = map.stats();
        prop_assert_eq!(stats.len, model.len());
        prop_assert_eq!(stats.failed_merges, 0);
        if model.len() >= merges_from && broke_off {
            prop_assert!(stats.merges >= 1);
        } else if model.len() >= merges_from {
            prop_assert_eq!(stats.merges, 1);
            prop_assert_eq!((stats.base_keys, stats.delta_entries), (model.len(), 0));
            prop_assert!(stats.base_parts >= model.len() / (2 * part_keys));
        } else {
            prop_assert_eq!((stats.merges, stats.base_keys, stats.delta_entries), (0, 0, model.len()));
        }
        let got: Vec<_> = map.iter().collect();
        prop_assert_eq!(got, model.iter().map(|(k, v)| (k.clone(), *v)).collect::<Vec<_>>());
        run_from(map, model, part_keys, ops)?;
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
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn extend_interrupted_by_a_panicking_iterator_keeps_what_it_wrote() {
    let key = |i: u64| format!("usr/lib/{:03}/{i}", i % 7).into_bytes();
    let mut map: HybridMap<u64> = (0..1000).map(|i| (key(i), i)).collect();
    map.freeze().unwrap();
    let mut want: BTreeMap<Vec<u8>, u64> = (0..1000).map(|i| (key(i), i)).collect();
    // Updates of base keys and new keys, alternating; the panic comes in
    // the third batch.
    let entry = |n: u64| {
        (
            key(if n.is_multiple_of(2) { n } else { 5000 + n }),
            10_000 + n,
        )
    };
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

/// The longest prefix when the base and the deltas each hold some of a key's
/// prefixes: the longer one wins wherever it lies, and a tombstone hides
/// the base's without hiding a shorter one.
#[test]
fn the_longest_prefix_is_taken_across_layers() {
    let map: HybridMap<u8> = HybridConfig::new().manual().build();
    map.insert("a", 1);
    map.insert("abcd", 4);
    map.freeze().unwrap();
    map.insert("ab", 2); // in the delta, between two base keys
    assert_eq!(map.longest_prefix_of("abc"), Some((&b"ab"[..], 2)));
    assert_eq!(map.longest_prefix_of("abcde"), Some((&b"abcd"[..], 4)));
    map.remove("abcd"); // a tombstone over the base
    assert_eq!(map.longest_prefix_of("abcde"), Some((&b"ab"[..], 2)));
    map.remove("ab");
    assert_eq!(map.longest_prefix_of("abcde"), Some((&b"a"[..], 1)));
    assert_eq!(map.longest_prefix_of("b"), None);
}

/// Two maps are equal when they hold the same entries, however these are
/// spread over base and deltas; `From` an array builds one.
#[test]
fn maps_equal_by_their_entries() {
    let built = HybridMap::from([("a", 1u8), ("b", 2), ("c", 3)]);
    assert_eq!(built.len(), 3);
    let layered: HybridMap<u8> = HybridConfig::new().manual().build();
    layered.insert("b", 2);
    layered.insert("c", 3);
    layered.insert("d", 4);
    layered.freeze().unwrap();
    layered.insert("a", 1);
    assert!(built != layered, "one has d");
    layered.remove("d");
    assert!(built == layered);
    layered.insert("c", 30);
    assert!(built != layered, "a value differs");
    layered.insert("c", 3);
    layered.insert("e", 5);
    // Either side may be the one whose walk ends first.
    assert!(built != layered, "one is longer");
    assert!(layered != built, "one is longer");
    assert!(HybridMap::<u8>::new() == HybridMap::new());
}

/// `clear` over every kind of layer: a base in parts, two sealed deltas
/// (left by failed merges) with tombstones and updates, and unmerged writes
/// in the fresh delta. Then nothing is left, and the map works on.
#[test]
#[cfg_attr(panic = "abort", ignore = "fails merges by a panic")]
fn clear_empties_every_layer() {
    fn key(i: u64) -> Vec<u8> {
        format!("usr/lib/{i:03}").into_bytes()
    }
    let map: HybridMap<Val> = HybridConfig::new().manual().part_keys(8).build();
    for i in 0..100 {
        map.insert(key(i), Val(i));
    }
    map.freeze().unwrap();
    // Sealed delta 1: tombstones over the base, updates of base keys.
    for i in (1..100).step_by(4) {
        assert_eq!(map.insert(key(i), Val(i + 1000)), Some(Val(i)));
    }
    for i in (0..100).step_by(4) {
        assert_eq!(map.remove(key(i)), Some(Val(i)));
    }
    assert!(failing_freeze(&map));
    // Sealed delta 2: new keys, a tombstone over the base, an update over
    // sealed delta 1.
    for i in 100..120 {
        assert_eq!(map.insert(key(i), Val(i)), None);
    }
    assert_eq!(map.remove(key(2)), Some(Val(2)));
    assert_eq!(map.insert(key(1), Val(2001)), Some(Val(1001)));
    assert!(failing_freeze(&map));
    // The fresh delta: writes over both sealed deltas and the base.
    assert_eq!(map.insert(key(5), Val(3005)), Some(Val(1005))); // over sealed delta 1
    assert_eq!(map.insert(key(4), Val(3004)), None); // over a sealed tombstone
    assert_eq!(map.remove(key(3)), Some(Val(3))); // a tombstone over the base
    assert_eq!(map.remove(key(101)), Some(Val(101))); // over sealed delta 2
    assert_eq!(map.insert(key(200), Val(200)), None); // only in the fresh delta
    let stats = map.stats();
    assert_eq!(
        (stats.sealed_deltas, stats.base_keys),
        (2, 100),
        "{stats:?}"
    );
    assert_eq!((stats.merges, stats.failed_merges), (1, 2), "{stats:?}");
    assert_eq!(stats.delta_tombstones, 25 + 1 + 2, "{stats:?}");
    // 100 in the base, 25 removed; 20 new, 3 removed, 2 (re)inserted.
    assert_eq!(map.len(), 100 - 25 + 20 - 3 + 2);

    map.clear();
    let stats = map.stats();
    assert_eq!(
        (
            stats.len,
            stats.base_keys,
            stats.base_parts,
            stats.delta_entries,
            stats.delta_tombstones,
            stats.sealed_deltas
        ),
        (0, 0, 1, 0, 0, 0),
        "{stats:?}"
    );
    assert!(map.is_empty());
    assert_eq!(map.iter().next(), None);
    assert_eq!(map.iter().next_back(), None);
    assert_eq!(map.keys().count(), 0);
    assert_eq!(map.range(key(0)..key(50)).count(), 0);
    assert_eq!(map.prefix("usr/").count(), 0);
    assert_eq!((map.first_key_value(), map.last_key_value()), (None, None));
    for i in 0..=200 {
        assert_eq!(map.get(key(i)), None, "key {i}");
        assert!(!map.contains_key(key(i)), "key {i}");
    }
    let keys: Vec<_> = (0..=200).map(key).collect();
    assert!(map.get_many(&keys).iter().all(Option::is_none));

    // New writes see none of the old values, and need no tombstones.
    assert_eq!(map.insert(key(1), Val(1)), None); // was in every layer
    assert_eq!(map.insert(key(200), Val(2)), None); // was in the fresh delta
    assert_eq!(map.remove(key(6)), None); // was in the base
    assert_eq!(map.remove(key(200)), Some(Val(2)));
    assert_eq!(map.insert(key(300), Val(3)), None);
    let stats = map.stats();
    assert_eq!(
        (stats.len, stats.delta_entries, stats.delta_tombstones),
        (2, 2, 0)
    );
    let want = vec![(key(1), Val(1)), (key(300), Val(3))];
    assert_eq!(map.iter().collect::<Vec<_>>(), want);
    // A merge works, over the new keys only.
    map.freeze().unwrap();
    let stats = map.stats();
    assert_eq!(
        (stats.base_keys, stats.delta_entries, stats.sealed_deltas),
        (2, 0, 0),
        "{stats:?}"
    );
    assert_eq!((stats.merges, stats.failed_merges), (2, 2));
    assert_eq!(map.iter().collect::<Vec<_>>(), want);
    assert_eq!(map.get(key(6)), None);
    assert_eq!(map.len(), 2);
    // Again, over a base alone, and over an empty map.
    map.clear();
    assert_eq!(
        (map.len(), map.iter().count(), map.get(key(1))),
        (0, 0, None)
    );
    map.clear();
    assert!(map.is_empty());
}

/// Blind writes by the thousand: `len` settles them in several batches,
/// and a merge counts those it seals in several too.
#[test]
fn many_blind_writes_are_counted_in_batches() {
    let key = |i: u64| format!("usr/share/doc/pkg{i:05}/copyright");
    let map: HybridMap<Val> = HybridConfig::new().manual().build();
    let mut model = BTreeMap::new();
    for i in (0..20_000).step_by(2) {
        map.insert(key(i), Val(i));
        model.insert(key(i).into_bytes(), Val(i));
    }
    map.freeze().unwrap();
    // Odd keys are new, even ones in the base; every third write removes.
    let write = |i: u64, map: &HybridMap<Val>, model: &mut BTreeMap<Vec<u8>, Val>| {
        if i.is_multiple_of(3) {
            map.delete(key(i));
            model.remove(key(i).as_bytes());
        } else {
            map.put(key(i), Val(i + 1));
            model.insert(key(i).into_bytes(), Val(i + 1));
        }
    };
    for i in 0..6_000 {
        write(i, &map, &mut model);
    }
    assert_eq!(map.stats().delta_pending, 6_000);
    assert_eq!(map.len(), model.len(), "settled by len");
    assert_eq!(map.stats().delta_pending, 0);
    for i in 6_000..16_000 {
        write(i, &map, &mut model);
    }
    // Sealed with 10,000 pending entries, counted by the merge.
    map.freeze().unwrap();
    assert_eq!(map.stats().len, model.len());
    assert_eq!(map.len(), model.len(), "counted by the merge");
    let got: Vec<_> = map.iter().collect();
    assert_eq!(got, model.into_iter().collect::<Vec<_>>());
}

/// A search reads the keys its automaton can still match and skips the rest
/// a dead end at a time, in the base and the delta alike: over 20,000 keys
/// under 100 directories, merged, then every tenth key written again into
/// the delta.
#[test]
fn search_skips_what_cannot_match() {
    use memkv::frozen::automaton::{Automaton, Str};
    let key = |i: u32| format!("dir{:03}/file{i:05}", i % 100);
    let map: HybridMap<u64> = (0..20_000u32).map(|i| (key(i), u64::from(i))).collect();
    map.freeze().unwrap();
    for i in (0..20_000u32).step_by(10) {
        map.insert(key(i), u64::from(i) + 1);
    }
    let bytes = Cell::new(0);
    let under = dfa::Counting {
        inner: Str::new("dir042/").starts_with(),
        bytes: &bytes,
    };
    let found: Vec<(Vec<u8>, u64)> = map.search(under).collect();
    let want: Vec<(Vec<u8>, u64)> = (0..20_000u32)
        .filter(|i| i % 100 == 42)
        .map(|i| (key(i).into_bytes(), u64::from(i) + u64::from(i % 10 == 0)))
        .collect::<BTreeMap<_, _>>()
        .into_iter()
        .collect();
    assert_eq!(found, want);
    // As for FastArt (tests/art_model.rs): the 200 keys, each from where it
    // parts from the one before, and a few bytes per other directory.
    assert!(
        bytes.get() <= 16 + 199 * 5 + 100 * 7,
        "{} bytes fed",
        bytes.get()
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// `search` over a map with a merged base and a delta of writes and
    /// removals, with random automata, prefixes of stored keys (whose
    /// states match whatever follows), and the two combined.
    #[test]
    fn search_matches_the_model(
        base in prop::collection::btree_map(key(), any::<u64>(), 0..120),
        writes in prop::collection::vec((key(), prop::option::of(any::<u64>())), 0..60),
        automaton in dfa::dfa(),
        kind in any::<u8>(),
        pick in any::<prop::sample::Index>(),
        cut in 0usize..8,
    ) {
        let map: HybridMap<Val> = base.iter().map(|(k, v)| (k.clone(), Val(*v))).collect();
        map.freeze().unwrap();
        let mut model: BTreeMap<Vec<u8>, u64> = base;
        for (k, v) in writes {
            match v {
                Some(v) => {
                    map.insert(&k, Val(v));
                    model.insert(k, v);
                }
                None => {
                    map.remove(&k);
                    model.remove(&k);
                }
            }
        }
        let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
        let query = dfa::Query::new(kind, automaton, &keys, pick, cut);
        let want: Vec<(Vec<u8>, u64)> = (model.iter())
            .filter(|(k, _)| dfa::with_query!(&query, |a| dfa::accepts(&a, k)))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        let got: Vec<(Vec<u8>, u64)> =
            dfa::with_query!(&query, |a| map.search(a).map(|(k, v)| (k, v.0)).collect::<Vec<_>>());
        prop_assert_eq!(got, want, "{:?}", query);
    }
}

/// The size hint narrows as each layer's entries are passed: once the
/// delta's are, what is left is the base's, and the hint is exact again.
#[test]
fn the_size_hint_narrows_as_the_layers_are_passed() {
    let map: HybridMap<u64> = HybridConfig::new().manual().build();
    for i in 0..100u64 {
        map.insert(format!("k{i:03}"), i);
    }
    map.freeze().unwrap();
    // Ten new keys, all before the base's.
    for i in 0..10u64 {
        map.insert(format!("a{i}"), i);
    }
    let mut entries = map.iter();
    assert_eq!(entries.size_hint(), (90, Some(110)));
    entries.by_ref().take(10).for_each(drop);
    assert_eq!(entries.size_hint(), (100, Some(100)));
    entries.next_back();
    assert_eq!(entries.size_hint(), (99, Some(99)));

    // A search knows no lower bound, and no more than the entries left.
    use memkv::frozen::automaton::{Automaton, Str};
    let mut search = map.search(Str::new("a").starts_with());
    assert_eq!(search.size_hint(), (0, Some(110)));
    assert_eq!(format!("{search:?}"), "Search { done: false, .. }");
    assert_eq!(search.by_ref().count(), 10);
    assert_eq!(search.size_hint(), (0, Some(0)));
}
