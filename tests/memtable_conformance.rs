//! One conformance suite, run for every memtable implementation: a model
//! test against a `BTreeMap` of internal keys (active and frozen), snapshot
//! reads, tombstones, ordering of keys that are prefixes of others, cursors
//! across internal batch boundaries, and readers running while a writer
//! inserts.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use memkv::memtable::{
    ArtMemtable, Entry, EntryCursor, EntryRef, Lookup, MAX_SEQNO, Memtable, MemtableRead,
    ShardedArtMemtable, SkipListMemtable, ValueKind, VecMemtable,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

#[path = "common/radix_keys.rs"]
mod radix_keys;
// Keys that stress a radix tree, as the map tests' do: prefix chains, the
// empty key, 0x00 and 0xFF, long shared prefixes around the tree's 254-byte
// inline limit, and wide fan-out under one prefix.
use radix_keys::radix_key as key_strategy;

/// Internal key → (kind, value); `Reverse` puts newer versions first.
type Model = BTreeMap<(Vec<u8>, Reverse<u64>), (ValueKind, Vec<u8>)>;

fn model_get(model: &Model, key: &[u8], snapshot: u64) -> Lookup<Vec<u8>> {
    let from = (key.to_vec(), Reverse(snapshot));
    match model.range(from..).next() {
        Some(((k, _), (kind, v))) if k.as_slice() == key => match kind {
            ValueKind::Value => Lookup::Found(v.clone()),
            ValueKind::Tombstone => Lookup::Deleted,
        },
        _ => Lookup::Absent,
    }
}

fn model_range(model: &Model, lo: Bound<&[u8]>, hi: Bound<&[u8]>, snapshot: u64) -> Vec<Entry> {
    model
        .iter()
        .filter(|((k, s), _)| (lo, hi).contains(k.as_slice()) && s.0 <= snapshot)
        .map(|((k, s), (kind, v))| Entry {
            user_key: k.clone(),
            seqno: s.0,
            kind: *kind,
            value: v.clone(),
        })
        .collect()
}

/// Every read of `mem` agrees with `model`, at every interesting snapshot,
/// for every key of `universe` and every pair of bounds drawn from it.
fn check_reads<R: MemtableRead>(mem: &R, model: &Model, universe: &[Vec<u8>]) {
    // Exact for active memtables too: a pair inserted again replaces the
    // one before (the vector memtable counted both until frozen, which an
    // `>=` here let pass).
    assert_eq!(mem.len(), model.len());
    assert_eq!(mem.is_empty(), model.is_empty());
    let mut snapshots: Vec<u64> = model.keys().map(|(_, s)| s.0).collect();
    snapshots.extend([0, MAX_SEQNO, u64::MAX]);
    snapshots.extend(model.keys().map(|(_, s)| s.0.saturating_sub(1)));
    snapshots.sort_unstable();
    snapshots.dedup();
    for &snap in &snapshots {
        for k in universe {
            assert_eq!(
                mem.get(k, snap),
                model_get(model, k, snap),
                "get {k:?} at {snap}"
            );
            // The borrowed form says the same.
            let same = mem.get_with(k, snap, |l| l.map(<[u8]>::to_vec));
            assert_eq!(same, model_get(model, k, snap));
        }
        assert_eq!(
            mem.iter(snap).collect_entries(),
            model_range(model, Bound::Unbounded, Bound::Unbounded, snap),
            "iter at {snap}"
        );
    }
    let bounds = |k: &[u8]| [Bound::Included(k.to_vec()), Bound::Excluded(k.to_vec())];
    let mut all: Vec<Bound<Vec<u8>>> = universe.iter().flat_map(|k| bounds(k)).collect();
    all.push(Bound::Unbounded);
    // Every pair for a few keys; for many (a wide fan-out), a sample that
    // still starts and ends everywhere.
    let (lo_step, hi_step) = (all.len().div_ceil(40), all.len().div_ceil(12).max(3));
    for lo in all.iter().step_by(lo_step) {
        for hi in all.iter().skip(lo_step / 2).step_by(hi_step) {
            for snap in [snapshots[snapshots.len() / 2], MAX_SEQNO] {
                let (lo, hi) = (
                    lo.as_ref().map(Vec::as_slice),
                    hi.as_ref().map(Vec::as_slice),
                );
                assert_eq!(
                    mem.range((lo, hi), snap).collect_entries(),
                    model_range(model, lo, hi, snap),
                    "range {lo:?}..{hi:?} at {snap}"
                );
            }
        }
    }
}

#[derive(Clone, Debug)]
struct Op {
    key: Vec<u8>,
    seqno: u64,
    kind: ValueKind,
    value: Vec<u8>,
}

impl Op {
    fn entry(&self) -> EntryRef<'_> {
        EntryRef {
            user_key: &self.key,
            seqno: self.seqno,
            kind: self.kind,
            value: &self.value,
        }
    }
}

/// An op's key: mostly one of a small pool drawn per case, so that the
/// versions and tombstones of a key pile up and interact; sometimes a fresh
/// one.
#[derive(Clone, Debug)]
enum KeyPick {
    Pool(prop::sample::Index),
    Fresh(Vec<u8>),
}

fn op_strategy() -> impl Strategy<Value = (KeyPick, u64, ValueKind, Vec<u8>)> {
    (
        prop_oneof![
            3 => any::<prop::sample::Index>().prop_map(KeyPick::Pool),
            1 => key_strategy().prop_map(KeyPick::Fresh),
        ],
        // Few distinct sequence numbers, so that internal keys repeat
        // (replacing an entry) and versions arrive out of order; and the
        // largest ones.
        prop_oneof![6 => 0..12u64, 1 => MAX_SEQNO - 2..=MAX_SEQNO],
        prop_oneof![2 => Just(ValueKind::Value), 1 => Just(ValueKind::Tombstone)],
        // Values around 128 bytes, where their length takes a second byte.
        prop_oneof![
            5 => prop::collection::vec(any::<u8>(), 0..6),
            1 => prop::collection::vec(any::<u8>(), 120..136),
        ],
    )
}

/// A random case: the ops, keys read but never written, and how the ops are
/// inserted.
#[derive(Clone, Debug)]
struct Case {
    ops: Vec<Op>,
    extra: Vec<Vec<u8>>,
    /// 0 inserts one by one, otherwise in write batches of that many entries
    /// (more than the 16 ArtMemtable looks up at once).
    batch: usize,
}

fn case_strategy() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(key_strategy(), 1..8),
        prop::collection::vec(op_strategy(), 0..64),
        // Sometimes 17 to 80 keys `w/<byte>` (a node of 48 or 256 children),
        // inserted among the ops.
        prop_oneof![
            3 => Just(Vec::new()),
            1 => prop::collection::btree_set(any::<u8>(), 17..80)
                .prop_map(|s| s.into_iter().collect::<Vec<u8>>()),
        ],
        any::<prop::sample::Index>(),
        prop::collection::vec(key_strategy(), 0..4),
        prop_oneof![Just(0usize), 1..24usize],
    )
        .prop_map(|(pool, picks, wide, at, extra, batch)| {
            let mut ops: Vec<Op> = (picks.into_iter())
                .map(|(pick, seqno, kind, value)| Op {
                    key: match pick {
                        KeyPick::Pool(i) => i.get(&pool).clone(),
                        KeyPick::Fresh(k) => k,
                    },
                    seqno,
                    kind,
                    value,
                })
                .collect();
            let at = at.index(ops.len() + 1);
            let wide = wide.into_iter().map(|b| Op {
                key: vec![b'w', b'/', b],
                seqno: u64::from(b % 12),
                kind: if b % 5 == 0 {
                    ValueKind::Tombstone
                } else {
                    ValueKind::Value
                },
                value: vec![b],
            });
            ops.splice(at..at, wide);
            Case { ops, extra, batch }
        })
}

fn check_model<M: Memtable>() {
    check_model_with(M::default);
}

/// [`check_model`] on memtables made by `make`.
fn check_model_with<M: Memtable>(make: impl Fn() -> M) {
    // At most 96 cases, fewer if PROPTEST_CASES says so.
    let mut runner = TestRunner::new(Config {
        cases: Config::default().cases.min(96),
        ..Config::default()
    });
    runner
        .run(&case_strategy(), |Case { ops, extra, batch }| {
            let mem = make();
            let mut model = Model::new();
            if batch == 0 {
                for op in &ops {
                    mem.insert(&op.key, op.seqno, op.kind, &op.value);
                }
            } else {
                for chunk in ops.chunks(batch) {
                    mem.insert_batch(&chunk.iter().map(Op::entry).collect::<Vec<_>>());
                }
            }
            for op in &ops {
                model.insert(
                    (op.key.clone(), Reverse(op.seqno)),
                    (op.kind, op.value.clone()),
                );
            }
            let mut universe: Vec<Vec<u8>> = ops.iter().map(|o| o.key.clone()).collect();
            universe.extend(extra);
            universe.sort();
            universe.dedup();
            check_reads(&mem, &model, &universe);
            let frozen = mem.freeze();
            check_reads(&frozen, &model, &universe);
            Ok(())
        })
        .unwrap();
}

fn snapshots_and_tombstones<M: Memtable>() {
    let mem = M::default();
    mem.insert(b"k", 10, ValueKind::Value, b"v10");
    mem.insert(b"k", 20, ValueKind::Tombstone, b"");
    mem.insert(b"k", 30, ValueKind::Value, b"v30");
    // Out of order: an older version arrives last.
    mem.insert(b"k", 5, ValueKind::Value, b"v5");
    mem.insert(b"j", 15, ValueKind::Tombstone, b"");
    let expect = |snap, want: Lookup<&[u8]>| {
        assert_eq!(mem.get(b"k", snap), want.map(<[u8]>::to_vec), "at {snap}");
    };
    expect(4, Lookup::Absent);
    expect(5, Lookup::Found(b"v5"));
    expect(9, Lookup::Found(b"v5"));
    expect(10, Lookup::Found(b"v10"));
    expect(19, Lookup::Found(b"v10"));
    expect(20, Lookup::Deleted);
    expect(29, Lookup::Deleted);
    expect(30, Lookup::Found(b"v30"));
    expect(u64::MAX, Lookup::Found(b"v30"));
    assert_eq!(mem.get(b"j", 14), Lookup::Absent);
    assert_eq!(mem.get(b"j", 15), Lookup::Deleted);
    assert_eq!(mem.get(b"", MAX_SEQNO), Lookup::Absent);
    // What a reader of several layers asks of an answer: a value, or
    // whether to ask the older layers.
    for (snap, found, decided) in [
        (4, None, false),
        (9, Some(&b"v5"[..]), true),
        (25, None, true),
    ] {
        let lookup = mem.get(b"k", snap);
        assert_eq!(lookup.is_decided(), decided, "at {snap}");
        assert_eq!(lookup.found().as_deref(), found, "at {snap}");
    }
    let seqnos: Vec<u64> = mem
        .iter(MAX_SEQNO)
        .collect_entries()
        .iter()
        .map(|e| e.seqno)
        .collect();
    assert_eq!(seqnos, [15, 30, 20, 10, 5]);
    // Replacing an internal key keeps one entry with the new contents.
    mem.insert(b"k", 20, ValueKind::Value, b"v20");
    assert_eq!(mem.get(b"k", 25), Lookup::Found(b"v20".to_vec()));
    let frozen = mem.freeze();
    assert_eq!(frozen.len(), 5);
    assert_eq!(frozen.get(b"k", 25), Lookup::Found(b"v20".to_vec()));
    let kinds: Vec<ValueKind> = frozen
        .iter(MAX_SEQNO)
        .collect_entries()
        .iter()
        .map(|e| e.kind)
        .collect();
    use ValueKind::*;
    assert_eq!(kinds, [Tombstone, Value, Value, Value, Value]);
}

fn prefix_keys_order_by_user_key_first<M: Memtable>() {
    // Each key is a prefix of the next; sequence numbers run against the
    // key order, so an encoding that let them decide would fail.
    let keys: [&[u8]; 6] = [b"", b"\x00", b"\x00\x00", b"\x00\x01", b"a", b"a\x00"];
    let mem = M::default();
    for (i, k) in keys.iter().enumerate() {
        mem.insert(k, 100 - i as u64, ValueKind::Value, k);
        mem.insert(k, 1 + i as u64, ValueKind::Value, b"old");
    }
    let check = |got: Vec<Entry>| {
        let order: Vec<(Vec<u8>, u64)> = got.into_iter().map(|e| (e.user_key, e.seqno)).collect();
        let want: Vec<(Vec<u8>, u64)> = keys
            .iter()
            .enumerate()
            .flat_map(|(i, k)| [(k.to_vec(), 100 - i as u64), (k.to_vec(), 1 + i as u64)])
            .collect();
        assert_eq!(order, want);
    };
    check(mem.iter(MAX_SEQNO).collect_entries());
    for k in keys {
        assert_eq!(mem.get(k, MAX_SEQNO), Lookup::Found(k.to_vec()));
    }
    // Bounds on a key cover all its versions and nothing of its extensions.
    let got = mem
        .range(
            (Bound::Excluded(&b"\x00"[..]), Bound::Included(&b"a"[..])),
            MAX_SEQNO,
        )
        .collect_entries();
    let keys_seen: Vec<Vec<u8>> = got.into_iter().map(|e| e.user_key).collect();
    assert_eq!(
        keys_seen,
        [
            b"\x00\x00".to_vec(),
            b"\x00\x00".to_vec(),
            b"\x00\x01".to_vec(),
            b"\x00\x01".to_vec(),
            b"a".to_vec(),
            b"a".to_vec()
        ]
    );
    check(mem.freeze().iter(MAX_SEQNO).collect_entries());
}

/// Enough entries and versions to cross every implementation's internal
/// batches and chunks, compared with the model.
fn many_entries<M: Memtable>(n: u64) {
    let mem = M::default();
    let mut model = Model::new();
    for i in 0..n {
        // Keys repeat (several versions each), some arrive out of order.
        let k = (i * 7919 % (n / 3)).to_be_bytes().to_vec();
        let seqno = if i % 11 == 0 { n * 2 - i } else { i + 1 };
        let kind = if i % 13 == 0 {
            ValueKind::Tombstone
        } else {
            ValueKind::Value
        };
        let value = vec![i as u8; (i % 150) as usize];
        mem.insert(&k, seqno, kind, &value);
        model.insert((k, Reverse(seqno)), (kind, value));
    }
    let all = model_range(&model, Bound::Unbounded, Bound::Unbounded, MAX_SEQNO);
    assert_eq!(mem.iter(MAX_SEQNO).collect_entries(), all);
    assert_eq!(
        mem.iter(n / 2).collect_entries(),
        model_range(&model, Bound::Unbounded, Bound::Unbounded, n / 2)
    );
    // An old snapshot sees two entries scattered among a thousand keys.
    assert_eq!(
        mem.iter(2).collect_entries(),
        model_range(&model, Bound::Unbounded, Bound::Unbounded, 2)
    );
    let lo = (n / 10).to_be_bytes();
    let hi = (n / 5).to_be_bytes();
    let want = model_range(&model, Bound::Included(&lo), Bound::Excluded(&hi), n);
    assert_eq!(
        mem.range((Bound::Included(&lo[..]), Bound::Excluded(&hi[..])), n)
            .collect_entries(),
        want
    );
    // Both forms hold at least the value bytes (the keys may be shared).
    let values: usize = all.iter().map(|e| e.value.len()).sum();
    let used = mem.approximate_memory_usage();
    assert!(used >= values, "{used} bytes for {values} bytes of values");
    let frozen = mem.freeze();
    assert_eq!(frozen.iter(MAX_SEQNO).collect_entries(), all);
    let kept = frozen.approximate_memory_usage();
    assert!(kept >= values, "{kept} bytes for {values} bytes of values");
    for ((k, _), _) in model.iter().step_by(17) {
        assert_eq!(frozen.get(k, n), model_get(&model, k, n));
    }
}

/// How many old versions (sequence numbers below [`NEW`]) key `i` of
/// [`old_snapshot_scan`] has, by region of the key order, and what an
/// `ArtMemtable` cursor (a batch stops at 256 entries copied or 1024 keys
/// visited) does there at the snapshot that sees every old version:
///
/// | keys | old versions | batches stop on |
/// |---|---|---|
/// | 0..2000 | one key in 97 | keys visited, a dozen to a few dozen entries copied |
/// | 2000..2600 | every key, a third twice | entries copied |
/// | 2600..5100 | none | keys visited, nothing copied in one of them |
/// | 5100..6200 | one key in 7, twice | keys visited, then the end |
///
/// (Five batches stop on keys visited in the full scan.) Every key also has
/// newer versions, invisible there.
fn old_versions(i: u32) -> u32 {
    match i {
        0..2000 => u32::from(i % 97 == 5),
        2000..2600 => 1 + u32::from(i.is_multiple_of(3)),
        2600..5100 => 0,
        _ => 2 * u32::from(i % 7 == 3),
    }
}

type OwnedBounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

fn as_slices(r: &OwnedBounds) -> (Bound<&[u8]>, Bound<&[u8]>) {
    (
        r.0.as_ref().map(Vec::as_slice),
        r.1.as_ref().map(Vec::as_slice),
    )
}

/// Keys of [`old_snapshot_scan`].
const OLD_SCAN_KEYS: u32 = 6200;
/// The first sequence number of the newer versions (the old ones count up
/// from 1).
const NEW: u64 = 1_000_000;

/// Key `i` (ordered as `i`); some keys have a zero byte or a long tail.
fn old_scan_key(i: u32) -> Vec<u8> {
    let mut k = b"t/".to_vec();
    k.extend_from_slice(&i.to_be_bytes());
    match i % 5 {
        0 => k.push(0x00),
        1 => k.extend_from_slice(&[0xFF; 20]),
        _ => {}
    }
    k
}

/// A scan at an old snapshot over thousands of keys whose versions are
/// mostly newer than it: the keys it visits far outnumber the entries it
/// returns, so a cursor that bounds its work by keys visited (as
/// `ArtMemtable`'s does, at 1024 keys per batch) stops batches without
/// having copied anything, several times per scan, and must resume after
/// each. Compared with the model at several snapshots and ranges, active and
/// frozen.
fn old_snapshot_scan<M: Memtable>() {
    let mem = M::default();
    let mut model = Model::new();
    let (mut old_seqno, mut new_seqno) = (0, NEW);
    let mut insert = |k: &[u8], seqno: u64, kind: ValueKind, value: &[u8]| {
        mem.insert(k, seqno, kind, value);
        model.insert((k.to_vec(), Reverse(seqno)), (kind, value.to_vec()));
    };
    // A permutation of the keys (7919 is prime to 6200), so that the tree
    // isn't built in order.
    for i in (0..OLD_SCAN_KEYS).map(|j| j * 7919 % OLD_SCAN_KEYS) {
        let k = old_scan_key(i);
        let mut old = Vec::new();
        for v in 0..old_versions(i) {
            old_seqno += 1 + u64::from(v);
            assert!(old_seqno < NEW);
            let kind = if (i + v) % 4 == 0 {
                ValueKind::Tombstone
            } else {
                ValueKind::Value
            };
            old.push((old_seqno, kind, format!("old {i} {v}").into_bytes()));
        }
        // Every key has one to three newer versions, a few of them
        // tombstones.
        let new: Vec<_> = (0..1 + i % 3)
            .map(|v| {
                new_seqno += 1;
                let kind = if (i + v) % 6 == 1 {
                    ValueKind::Tombstone
                } else {
                    ValueKind::Value
                };
                (new_seqno, kind, vec![v as u8; (i % 40) as usize])
            })
            .collect();
        // Half the keys get their old versions after the newer ones (the
        // out-of-order insert).
        let (first, second) = if i % 2 == 0 { (old, new) } else { (new, old) };
        for (seqno, kind, value) in first.into_iter().chain(second) {
            insert(&k, seqno, kind, &value);
        }
    }
    assert!(old_seqno > 1000, "{old_seqno}");
    let key = old_scan_key;
    let snapshots = [0, 1, old_seqno / 2, old_seqno, NEW + 5000, MAX_SEQNO];
    let ranges: [OwnedBounds; 7] = [
        (Bound::Unbounded, Bound::Unbounded),
        (Bound::Excluded(key(100)), Bound::Unbounded),
        (Bound::Included(key(1500)), Bound::Excluded(key(5900))),
        // Exactly 1024 keys: a batch cut on the last one.
        (Bound::Included(key(5)), Bound::Excluded(key(1029))),
        (Bound::Included(key(5)), Bound::Included(key(1029))),
        // Only keys with nothing old.
        (Bound::Included(key(2600)), Bound::Excluded(key(5100))),
        (Bound::Unbounded, Bound::Included(key(5200))),
    ];
    let wanted: Vec<(usize, u64, Vec<Entry>)> = (ranges.iter().enumerate())
        .flat_map(|(i, r)| snapshots.map(|snap| (i, r, snap)))
        .map(|(i, r, snap)| {
            let (lo, hi) = as_slices(r);
            (i, snap, model_range(&model, lo, hi, snap))
        })
        .collect();
    let at_old = &wanted[snapshots.iter().position(|&s| s == old_seqno).unwrap()];
    assert!(at_old.2.len() > 1000, "{}", at_old.2.len());
    type Scan<'a> = dyn Fn((Bound<&[u8]>, Bound<&[u8]>), u64) -> Vec<Entry> + 'a;
    let check = |scan: &Scan<'_>| {
        for (i, snap, want) in &wanted {
            let got = scan(as_slices(&ranges[*i]), *snap);
            assert!(
                got == *want,
                "range {:?} at {snap}: {} entries, want {} (first difference at {:?})",
                ranges[*i],
                got.len(),
                want.len(),
                got.iter().zip(want).position(|(a, b)| a != b),
            );
        }
    };
    check(&|r, snap| mem.range(r, snap).collect_entries());
    for i in (0..OLD_SCAN_KEYS).step_by(61) {
        for snap in [old_seqno, MAX_SEQNO] {
            assert_eq!(mem.get(key(i), snap), model_get(&model, &key(i), snap));
        }
    }
    let frozen = mem.freeze();
    assert_eq!(frozen.len(), model.len());
    check(&|r, snap| frozen.range(r, snap).collect_entries());
}

/// Writer op `i` (1-based) writes key `i % KEYS` with value `i` at sequence
/// number `i`: at snapshot `s` key `j` holds the largest such `i <= s`.
const KEYS: u64 = 97;

fn expected_at(j: u64, s: u64) -> Option<u64> {
    let i = if s >= j {
        j + (s - j) / KEYS * KEYS
    } else {
        return None;
    };
    (i >= 1).then_some(i)
}

fn concurrent_readers_with_one_writer<M: Memtable + 'static>(n: u64) {
    let mem = Arc::new(M::default());
    let visible = Arc::new(AtomicU64::new(0));
    let writer = {
        let (mem, visible) = (Arc::clone(&mem), Arc::clone(&visible));
        std::thread::spawn(move || {
            for i in 1..=n {
                mem.insert(
                    (i % KEYS).to_be_bytes(),
                    i,
                    ValueKind::Value,
                    i.to_le_bytes(),
                );
                // Published only after the insert, as engines do.
                visible.store(i, Ordering::Release);
            }
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (mem, visible) = (Arc::clone(&mem), Arc::clone(&visible));
            std::thread::spawn(move || {
                let mut rounds = 0u64;
                loop {
                    let s = visible.load(Ordering::Acquire);
                    for j in (r..KEYS).step_by(7) {
                        let want = match expected_at(j, s) {
                            Some(i) => Lookup::Found(i.to_le_bytes().to_vec()),
                            None => Lookup::Absent,
                        };
                        assert_eq!(mem.get(j.to_be_bytes(), s), want, "key {j} at {s}");
                    }
                    if rounds.is_multiple_of(8) {
                        // A full scan at the snapshot sees exactly the writes
                        // up to it, even while more arrive.
                        let mut cursor = mem.iter(s);
                        let mut count = 0;
                        let mut last: Option<(Vec<u8>, u64)> = None;
                        while let Some(e) = cursor.next_entry() {
                            assert!(e.seqno <= s);
                            assert_eq!(e.value, e.seqno.to_le_bytes());
                            if let Some((k, q)) = &last {
                                assert!(
                                    (k.as_slice(), Reverse(*q)) < (e.user_key, Reverse(e.seqno))
                                );
                            }
                            last = Some((e.user_key.to_vec(), e.seqno));
                            count += 1;
                        }
                        assert_eq!(count, s, "scan at {s}");
                    }
                    rounds += 1;
                    if s == n {
                        return rounds;
                    }
                }
            })
        })
        .collect();
    writer.join().unwrap();
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert_eq!(mem.len() as u64, n);
}

/// A range of user keys, borrowed.
type Bounds<'a> = (Bound<&'a [u8]>, Bound<&'a [u8]>);

/// A drained cursor stays drained: `None`, and `None` again (the frozen
/// ART cursor indexed its emptied batch and panicked until 2026-11-27).
fn cursors_stay_at_the_end<M: Memtable>() {
    fn drain_then_poll<R: MemtableRead>(mem: &R, expected: usize) {
        let ranges: [Bounds<'_>; 3] = [
            (Bound::Unbounded, Bound::Unbounded),
            (Bound::Included(&b"b"[..]), Bound::Unbounded),
            (Bound::Unbounded, Bound::Excluded(&b"b"[..])),
        ];
        for (i, (lo, hi)) in ranges.into_iter().enumerate() {
            let mut cursor = mem.range((lo, hi), MAX_SEQNO);
            let mut seen = 0;
            while cursor.next_entry().is_some() {
                seen += 1;
            }
            assert!(i > 0 || seen == expected, "{seen} of {expected}");
            for _ in 0..3 {
                assert!(cursor.next_entry().is_none(), "range {i}");
            }
        }
    }
    let mem = M::default();
    drain_then_poll(&mem, 0);
    for (seqno, key) in [&b"a"[..], b"b", b"b", b"c"].into_iter().enumerate() {
        mem.insert(key, seqno as u64 + 1, ValueKind::Value, b"v");
    }
    drain_then_poll(&mem, 4);
    drain_then_poll(&mem.freeze(), 4);
}

fn rejects_seqno_above_max<M: Memtable>() {
    M::default().insert(b"k", MAX_SEQNO + 1, ValueKind::Value, b"");
}

fn memory_grows_with_entries<M: Memtable>() {
    let mem = M::default();
    assert!(mem.is_empty());
    let mut last = mem.approximate_memory_usage();
    for i in 0..5000u32 {
        mem.insert(
            i.to_be_bytes(),
            u64::from(i) + 1,
            ValueKind::Value,
            [7; 100],
        );
        let now = mem.approximate_memory_usage();
        assert!(now >= last);
        last = now;
    }
    // At least the raw bytes: 4-byte keys, 8 bytes of sequence number and
    // kind, 100-byte values.
    assert!(last >= 5000 * 112, "{last}");
    assert_eq!(mem.len(), 5000);
}

/// `fits` says yes to ordinary entries, and no to a value longer than any
/// memtable's records (4 GiB: zeroed pages, allocated lazily; a 32-bit
/// target cannot hold it).
fn fits_ordinary_entries_only<M: Memtable>() {
    assert!(M::fits(b"", b""));
    assert!(M::fits(b"a\0\xff", [7; 1000]));
    #[cfg(target_pointer_width = "64")]
    assert!(!M::fits(b"k", vec![0u8; 1 << 32]));
}

macro_rules! conformance {
    ($($module:ident => $ty:ty, concurrent: $n:expr;)*) => {$(
        mod $module {
            use super::*;

            #[test]
            fn model_against_btreemap() {
                check_model::<$ty>();
            }

            #[test]
            fn snapshot_reads_and_tombstones() {
                snapshots_and_tombstones::<$ty>();
            }

            #[test]
            fn prefix_keys() {
                prefix_keys_order_by_user_key_first::<$ty>();
            }

            #[test]
            fn many_entries_cross_batches() {
                many_entries::<$ty>(3000);
            }

            #[test]
            fn old_snapshot_scan_skips_newer_versions() {
                old_snapshot_scan::<$ty>();
            }

            #[test]
            #[cfg_attr(target_os = "wasi", ignore = "needs threads")]
            fn readers_during_writes() {
                concurrent_readers_with_one_writer::<$ty>($n);
            }

            #[test]
            fn drained_cursors_stay_drained() {
                cursors_stay_at_the_end::<$ty>();
            }

            #[test]
            #[should_panic(expected = "above MAX_SEQNO")]
            fn seqno_limit() {
                rejects_seqno_above_max::<$ty>();
            }

            #[test]
            fn memory_usage() {
                memory_grows_with_entries::<$ty>();
            }

            #[test]
            fn fits() {
                fits_ordinary_entries_only::<$ty>();
            }
        }
    )*};
}

conformance! {
    skiplist => SkipListMemtable, concurrent: 20_000;
    art => ArtMemtable, concurrent: 20_000;
    sharded => ShardedArtMemtable, concurrent: 20_000;
    // Its reads scan everything: a smaller run.
    vec => VecMemtable, concurrent: 1_500;
}

/// The model on sharded memtables with fewer shards than the default's 16:
/// one (nothing to merge), and two and three, where most shards hold
/// several of a case's keys and a shard count is not a power of two.
#[test]
fn sharded_model_with_one_two_and_three_shards() {
    for shards in 1..=3 {
        check_model_with(|| ShardedArtMemtable::with_shards(shards));
    }
}

/// Write batches into an `ArtMemtable` past the size where it looks each
/// batch's keys up before inserting them (16 MiB of tree), with keys written
/// twice: the same entries as the model.
#[test]
fn art_write_batches_past_the_lookup_size() {
    let keys = 350_000u64;
    let key = |i: u64| {
        let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        [x.to_be_bytes(), x.rotate_left(17).to_be_bytes()].concat()
    };
    // Every key once, then a tenth of them again with newer entries.
    let writes: Vec<(Vec<u8>, u64)> = (0..keys)
        .chain((0..keys).step_by(10))
        .zip(1..)
        .map(|(i, seqno)| (key(i), seqno))
        .collect();
    let mem = ArtMemtable::default();
    for chunk in writes.chunks(100) {
        let batch: Vec<EntryRef<'_>> = (chunk.iter())
            .map(|(k, seqno)| EntryRef {
                user_key: k,
                seqno: *seqno,
                kind: ValueKind::Value,
                value: &k[..*seqno as usize % 4],
            })
            .collect();
        mem.insert_batch(&batch);
    }
    assert!(
        mem.approximate_memory_usage() > 16 << 20,
        "past the lookup size"
    );
    let mut model = Model::new();
    for (k, seqno) in writes {
        let value = k[..seqno as usize % 4].to_vec();
        model.insert((k, Reverse(seqno)), (ValueKind::Value, value));
    }
    assert_eq!(mem.len(), model.len());
    let all = model_range(&model, Bound::Unbounded, Bound::Unbounded, MAX_SEQNO);
    assert_eq!(mem.iter(MAX_SEQNO).collect_entries(), all);
}

/// Each memtable's `fits` at its limits (see `Memtable::fits`), on zeroed
/// pages allocated lazily (only the skip list's reads them, to count its
/// zero bytes): one byte under says yes, the limit no.
#[test]
#[cfg(target_pointer_width = "64")]
#[cfg_attr(
    target_arch = "s390x",
    ignore = "reads 2 GiB, at a tenth of the speed under qemu"
)]
fn fits_at_each_memtables_limits() {
    let zeros = |len: usize| vec![0u8; len];
    let max = u32::MAX as usize;
    // A value under 4 GiB − 21 bytes, and a key of any length.
    assert!(ArtMemtable::fits(b"k", zeros(max - 21)));
    assert!(!ArtMemtable::fits(b"k", zeros(max - 20)));
    assert!(ShardedArtMemtable::fits(zeros(max + 1), b"v"));
    assert!(!ShardedArtMemtable::fits(b"k", zeros(max - 20)));
    // Key and value together: 8 bytes of head and 5 for each length here.
    let half = 1usize << 31;
    assert!(VecMemtable::fits(zeros(half), zeros(half - 19)));
    assert!(!VecMemtable::fits(zeros(half), zeros(half - 18)));
    assert!(VecMemtable::fits(b"", zeros(max - 8 - 1 - 5)));
    assert!(!VecMemtable::fits(b"", zeros(max - 8 - 1 - 5 + 1)));
    // Zero bytes count twice in the skip list's keys, plus 10 bytes.
    assert!(SkipListMemtable::fits(zeros(half - 6), b"v"));
    assert!(!SkipListMemtable::fits(zeros(half - 5), b"v"));
    assert!(SkipListMemtable::fits(b"k", zeros(max)));
    assert!(!SkipListMemtable::fits(b"k", zeros(max + 1)));
}

/// What `fits` says is what `insert` does, at the limits that count the
/// bytes of both or each byte: the entry that fits goes in, the one a byte
/// longer panics and changes nothing. Needs 5 GiB, and minutes outside a
/// release build: `cargo test --release --test memtable_conformance -- --ignored`.
#[test]
#[cfg(target_pointer_width = "64")]
#[ignore = "needs 5 GiB of memory; slow outside release builds"]
fn insert_takes_what_fits_and_nothing_longer() {
    fn at_limit<M: Memtable>(key: &[u8], value: &[u8], longer_key: &[u8], longer_value: &[u8]) {
        assert!(M::fits(key, value) && !M::fits(longer_key, longer_value));
        let mem = M::default();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            mem.insert(longer_key, 2, ValueKind::Value, longer_value)
        }));
        assert!(result.is_err(), "an entry that does not fit panics");
        assert!(mem.is_empty());
        mem.insert(key, 1, ValueKind::Value, value);
        assert_eq!(mem.len(), 1);
    }
    let half = 1usize << 31;
    let (key, value) = (vec![0u8; half], vec![0u8; half - 18]);
    at_limit::<VecMemtable>(&key, &value[1..], &key, &value);
    drop((key, value));
    let key = vec![0u8; half - 5];
    at_limit::<SkipListMemtable>(&key[1..], b"v", &key, b"v");
}
