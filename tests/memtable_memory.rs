//! What each memtable's `approximate_memory_usage` says against the bytes
//! its thread allocated, counted by this binary's allocator. A write path
//! switches memtables by that figure, so a wrong one flushes too early or
//! holds too much. The ART and vector memtables report exactly what they
//! hold; the skip list adds an average node size per entry, which must stay
//! close to what its nodes take.

#[path = "common/counting.rs"]
mod counting;

use counting::held;
use memkv::memtable::{
    ArtMemtable, Memtable, MemtableRead, ShardedArtMemtable, SkipListMemtable, ValueKind,
    VecMemtable,
};

/// Entries with short keys and values, so that any per-entry overhead
/// miscounted is a large part of the whole. Keys repeat (several versions),
/// some with zero bytes (escaped by the skip list), some tombstones.
fn fill(mem: &impl Memtable, n: u32, mut check: impl FnMut(u32)) {
    for i in 0..n {
        let key = (u64::from(i % (n / 3)) * 2_654_435_761 % 1_000_003) as u32;
        let kind = if i % 9 == 0 {
            ValueKind::Tombstone
        } else {
            ValueKind::Value
        };
        let len = if kind == ValueKind::Value { i % 21 } else { 0 };
        // The value is dropped before `check` counts what is held.
        mem.insert(
            key.to_be_bytes(),
            u64::from(i) + 1,
            kind,
            vec![i as u8; len as usize],
        );
        check(i);
    }
}

/// Builds `M` from nothing and checks, as it grows and once frozen, that
/// the figure is exactly the bytes held.
fn exact<M: Memtable>() {
    let before = held();
    let mem = M::default();
    let holds = |what: &str, figure: usize, i: u32| {
        assert_eq!(
            held() - before,
            figure as isize,
            "{what} after {} entries",
            i + 1
        );
    };
    fill(&mem, 30_000, |i| {
        if i % 997 == 0 {
            holds("active", mem.approximate_memory_usage(), i);
        }
    });
    holds("active", mem.approximate_memory_usage(), 29_999);
    let frozen = mem.freeze();
    holds("frozen", frozen.approximate_memory_usage(), 29_999);
    assert_eq!(frozen.len(), 30_000);
}

#[test]
fn art_memtable_reports_what_it_holds() {
    exact::<ArtMemtable>();
}

#[test]
fn sharded_art_memtable_reports_what_it_holds() {
    exact::<ShardedArtMemtable>();
}

#[test]
fn vec_memtable_reports_what_it_holds() {
    exact::<VecMemtable>();
}

#[test]
fn the_skip_lists_estimate_is_close() {
    // The first skip list of a thread also sets up the thread's epoch
    // state, which lives as long as the thread: paid for here.
    fill(&SkipListMemtable::default(), 3, |_| {});
    let before = held();
    let mem = SkipListMemtable::default();
    fill(&mem, 30_000, |_| {});
    let (estimate, held) = (
        mem.approximate_memory_usage() as f64,
        (held() - before) as f64,
    );
    // Entries average about 70 bytes; 3% is 2 bytes of an entry.
    assert!(
        (estimate / held - 1.0).abs() < 0.03,
        "estimated {estimate} bytes, holds {held}"
    );
    let frozen = mem.freeze();
    assert_eq!(frozen.approximate_memory_usage() as f64, estimate);
}
