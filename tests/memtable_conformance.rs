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
    SkipListMemtable, ValueKind, VecMemtable,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

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
fn check_reads<R: MemtableRead>(mem: &R, model: &Model, universe: &[Vec<u8>], exact_len: bool) {
    if exact_len {
        assert_eq!(mem.len(), model.len());
    } else {
        assert!(mem.len() >= model.len());
    }
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
    for lo in &all {
        for hi in all.iter().step_by(3) {
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

/// Keys from a four-letter alphabet with the bytes that break naive
/// encodings (0x00, 0x01, 0xFF), so keys are often prefixes of each other.
fn key_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![0x00u8, 0x01, b'a', 0xFF]), 0..4)
}

fn op_strategy() -> impl Strategy<Value = Op> {
    (
        key_strategy(),
        prop_oneof![0..12u64, Just(MAX_SEQNO)],
        prop_oneof![3 => Just(ValueKind::Value), 1 => Just(ValueKind::Tombstone)],
        prop::collection::vec(any::<u8>(), 0..6),
    )
        .prop_map(|(key, seqno, kind, value)| Op {
            key,
            seqno,
            kind,
            value,
        })
}

fn check_model<M: Memtable>() {
    let mut runner = TestRunner::new(Config {
        cases: 96,
        ..Config::default()
    });
    // `batch`: 0 inserts one by one, otherwise in write batches of that
    // many entries (more than the 16 ArtMemtable looks up at once).
    let strategy = (
        prop::collection::vec(op_strategy(), 0..40),
        prop::collection::vec(key_strategy(), 0..4),
        prop_oneof![Just(0usize), 1..24usize],
    );
    runner
        .run(&strategy, |(ops, extra, batch)| {
            let mem = M::default();
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
            check_reads(&mem, &model, &universe, false);
            let frozen = mem.freeze();
            check_reads(&frozen, &model, &universe, true);
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
    let used = mem.approximate_memory_usage();
    assert!(used > 0);
    let frozen = mem.freeze();
    assert_eq!(frozen.iter(MAX_SEQNO).collect_entries(), all);
    assert!(frozen.approximate_memory_usage() > 0);
    for ((k, _), _) in model.iter().step_by(17) {
        assert_eq!(frozen.get(k, n), model_get(&model, k, n));
    }
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
                    &(i % KEYS).to_be_bytes(),
                    i,
                    ValueKind::Value,
                    &i.to_le_bytes(),
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
                        assert_eq!(mem.get(&j.to_be_bytes(), s), want, "key {j} at {s}");
                    }
                    if rounds % 8 == 0 {
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

fn rejects_seqno_above_max<M: Memtable>() {
    M::default().insert(b"k", MAX_SEQNO + 1, ValueKind::Value, b"");
}

fn memory_grows_with_entries<M: Memtable>() {
    let mem = M::default();
    assert!(mem.is_empty());
    let mut last = mem.approximate_memory_usage();
    for i in 0..5000u32 {
        mem.insert(
            &i.to_be_bytes(),
            u64::from(i) + 1,
            ValueKind::Value,
            &[7; 100],
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
            fn readers_during_writes() {
                concurrent_readers_with_one_writer::<$ty>($n);
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
        }
    )*};
}

conformance! {
    skiplist => SkipListMemtable, concurrent: 20_000;
    art => ArtMemtable, concurrent: 20_000;
    // Its reads scan everything: a smaller run.
    vec => VecMemtable, concurrent: 1_500;
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
