//! The four memtables against a model of internal entries, over random
//! inserts (values and tombstones, sequence numbers in any order, the same
//! key and number again), batches, snapshot lookups and ranges, and the
//! frozen forms at the end.

#![no_main]

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::ops::Bound;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use memkv::memtable::{
    ArtMemtable, Entry, EntryCursor, EntryRef, Lookup, Memtable, MemtableRead, ShardedArtMemtable,
    SkipListMemtable, ValueKind, VecMemtable,
};
use memkv_fuzz::Key;

#[derive(Arbitrary, Debug)]
enum MemOp {
    Insert(Key, u8, bool, Vec<u8>),
    Batch(Vec<(Key, u8, bool, Vec<u8>)>),
    Get(Key, u8),
    Range(Key, Key, u8),
}

/// Internal entries in memtable order: user key ascending, sequence number
/// descending.
type Model = BTreeMap<(Vec<u8>, Reverse<u64>), (ValueKind, Vec<u8>)>;

fn kind(tombstone: bool) -> ValueKind {
    if tombstone {
        ValueKind::Tombstone
    } else {
        ValueKind::Value
    }
}

fn entry_ref<'a>(key: &'a [u8], seqno: u8, tombstone: bool, value: &'a [u8]) -> EntryRef<'a> {
    EntryRef {
        user_key: key,
        seqno: u64::from(seqno),
        kind: kind(tombstone),
        value,
    }
}

/// Writes `e` into the model as a memtable stores it (the same key and
/// sequence number again replaces the entry).
fn record(model: &mut Model, e: &EntryRef<'_>) {
    model.insert(
        (e.user_key.to_vec(), Reverse(e.seqno)),
        (e.kind, e.value.to_vec()),
    );
}

fn lookup(model: &Model, key: &[u8], snapshot: u64) -> Lookup<Vec<u8>> {
    let from = (key.to_vec(), Reverse(snapshot));
    match model.range(from..).next() {
        Some(((k, _), (ValueKind::Value, value))) if k == key => Lookup::Found(value.clone()),
        Some(((k, _), (ValueKind::Tombstone, _))) if k == key => Lookup::Deleted,
        _ => Lookup::Absent,
    }
}

/// The model's entries from `start` to `end` (excluded; `None`: no end).
fn entries(model: &Model, start: &[u8], end: Option<&[u8]>, snapshot: u64) -> Vec<Entry> {
    model
        .iter()
        .filter(|((key, Reverse(seqno)), _)| {
            start <= &key[..] && end.is_none_or(|end| &key[..] < end) && *seqno <= snapshot
        })
        .map(|((key, Reverse(seqno)), (kind, value))| Entry {
            user_key: key.clone(),
            seqno: *seqno,
            kind: *kind,
            value: value.clone(),
        })
        .collect()
}

fn check_reads<M: MemtableRead>(mem: &M, model: &Model, op: &MemOp) {
    match op {
        MemOp::Get(key, snapshot) => {
            let key = key.bytes();
            assert_eq!(
                mem.get(&key, u64::from(*snapshot)),
                lookup(model, &key, u64::from(*snapshot))
            );
        }
        MemOp::Range(start, end, snapshot) => {
            let (start, end) = (start.bytes(), end.bytes());
            if start > end {
                return;
            }
            let bounds = (Bound::Included(&start[..]), Bound::Excluded(&end[..]));
            let got = mem.range(bounds, u64::from(*snapshot)).collect_entries();
            assert_eq!(
                got,
                entries(model, &start, Some(&end), u64::from(*snapshot))
            );
        }
        _ => {}
    }
}

fn run<M: Memtable>(ops: &[MemOp]) {
    let mem = M::default();
    let mut model = Model::new();
    for op in ops {
        match op {
            MemOp::Insert(key, seqno, tombstone, value) => {
                let key = key.bytes();
                let e = entry_ref(&key, *seqno, *tombstone, value);
                mem.insert(e.user_key, e.seqno, e.kind, e.value);
                record(&mut model, &e);
            }
            MemOp::Batch(batch) => {
                let keys: Vec<Vec<u8>> = batch.iter().map(|(key, ..)| key.bytes()).collect();
                let refs: Vec<EntryRef<'_>> = batch
                    .iter()
                    .zip(&keys)
                    .map(|((_, seqno, tombstone, value), key)| {
                        entry_ref(key, *seqno, *tombstone, value)
                    })
                    .collect();
                mem.insert_batch(&refs);
                for e in &refs {
                    record(&mut model, e);
                }
            }
            reads => check_reads(&mem, &model, reads),
        }
        assert_eq!(mem.len(), model.len());
    }
    assert_eq!(
        mem.iter(u64::MAX).collect_entries(),
        entries(&model, b"", None, u64::MAX)
    );
    let frozen = mem.freeze();
    assert_eq!(frozen.len(), model.len());
    for op in ops {
        check_reads(&frozen, &model, op);
    }
}

fuzz_target!(|ops: Vec<MemOp>| {
    run::<ArtMemtable>(&ops);
    run::<ShardedArtMemtable>(&ops);
    run::<SkipListMemtable>(&ops);
    run::<VecMemtable>(&ops);
});
