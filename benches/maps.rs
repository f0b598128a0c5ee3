//! Get, insert and iterate on the first 20,000 keys of the committed Debian
//! paths sample, for memkv's structures and the two std-like baselines, so a
//! change's effect on speed shows before it lands:
//!
//! ```text
//! cargo bench --bench maps                  # all
//! cargo bench --bench maps -- get/fastart   # one
//! ```
//!
//! For memory per key, whole datasets and the other crates, use the harness:
//! `cargo run --release -p memkv-bench`.

use std::collections::BTreeMap;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use memkv::{FastArt, FrozenLayer};

/// The sample the harness embeds too.
const SAMPLE: &[u8] = include_bytes!("../data/debian-paths-100k.txt");
/// Enough keys for several tree levels, few enough for quick runs.
const KEYS: usize = 20_000;

/// Keys with their values.
type Entries = Vec<(&'static [u8], u64)>;

/// The first `KEYS` keys of the sample (distinct, unsorted), each with its
/// line number as value; and the same sorted by key.
fn data() -> (Entries, Entries) {
    let entries: Vec<(&[u8], u64)> = SAMPLE
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .take(KEYS)
        .zip(1..)
        .collect();
    let mut sorted = entries.clone();
    sorted.sort_unstable();
    (entries, sorted)
}

/// A lookup order different from the insert order (a fixed stride through
/// the keys, coprime to their number).
fn lookup_order(n: usize) -> Vec<usize> {
    (0..n).map(|i| (i * 7919) % n).collect()
}

fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Elements(KEYS as u64));
    g
}

fn insert(c: &mut Criterion) {
    let (entries, sorted) = data();
    let mut g = group(c, "insert");
    g.bench_function("fastart", |b| {
        b.iter_with_large_drop(|| {
            let mut m = FastArt::new();
            for &(k, v) in &entries {
                m.insert(k, v);
            }
            m
        })
    });
    g.bench_function("btreemap", |b| {
        b.iter_with_large_drop(|| {
            let mut m = BTreeMap::<Box<[u8]>, u64>::new();
            for &(k, v) in &entries {
                m.insert(k.into(), v);
            }
            m
        })
    });
    g.bench_function("hashbrown", |b| {
        b.iter_with_large_drop(|| {
            let mut m = hashbrown::HashMap::<Box<[u8]>, u64>::new();
            for &(k, v) in &entries {
                m.insert(k.into(), v);
            }
            m
        })
    });
    // A bulk build from sorted input (the sort is not part of it).
    g.bench_function("frozen", |b| {
        b.iter_with_large_drop(|| FrozenLayer::from_sorted_iter(sorted.iter().copied()).unwrap())
    });
    g.finish();
}

fn get(c: &mut Criterion) {
    let (entries, sorted) = data();
    let order = lookup_order(entries.len());
    let fastart: FastArt<u64> = entries.iter().copied().collect();
    let btree: BTreeMap<Box<[u8]>, u64> = entries.iter().map(|&(k, v)| (k.into(), v)).collect();
    let hash: hashbrown::HashMap<Box<[u8]>, u64> =
        entries.iter().map(|&(k, v)| (k.into(), v)).collect();
    let frozen = FrozenLayer::from_sorted_iter(sorted.iter().copied()).unwrap();

    let mut g = group(c, "get");
    // Each closure sums the values so that no lookup can be skipped.
    g.bench_function("fastart", |b| {
        b.iter(|| {
            order
                .iter()
                .map(|&i| *fastart.get(entries[i].0).unwrap())
                .sum::<u64>()
        })
    });
    g.bench_function("btreemap", |b| {
        b.iter(|| {
            order
                .iter()
                .map(|&i| *btree.get(entries[i].0).unwrap())
                .sum::<u64>()
        })
    });
    g.bench_function("hashbrown", |b| {
        b.iter(|| {
            order
                .iter()
                .map(|&i| *hash.get(entries[i].0).unwrap())
                .sum::<u64>()
        })
    });
    g.bench_function("frozen", |b| {
        b.iter(|| {
            order
                .iter()
                .map(|&i| frozen.get(entries[i].0).unwrap())
                .sum::<u64>()
        })
    });
    g.finish();
}

/// Mixes an entry into a checksum.
fn fold(acc: u64, key: &[u8], value: u64) -> u64 {
    acc.wrapping_mul(31) ^ value ^ u64::from(key.last().copied().unwrap_or(0))
}

fn iterate(c: &mut Criterion) {
    let (entries, sorted) = data();
    let fastart: FastArt<u64> = entries.iter().copied().collect();
    let btree: BTreeMap<Box<[u8]>, u64> = entries.iter().map(|&(k, v)| (k.into(), v)).collect();
    let frozen = FrozenLayer::from_sorted_iter(sorted.iter().copied()).unwrap();

    // In key order, through each structure's non-allocating way; the key's
    // last byte is read so that it must be produced (for a BTreeMap, fetched
    // through its box), as the harness does. (hashbrown is unordered.)
    let mut g = group(c, "iterate");
    g.bench_function("fastart", |b| {
        b.iter(|| {
            let (mut it, mut acc) = (fastart.iter(), 0u64);
            while let Some((k, v)) = it.next_entry() {
                acc = fold(acc, k, *v);
            }
            acc
        })
    });
    g.bench_function("btreemap", |b| {
        b.iter(|| btree.iter().fold(0u64, |acc, (k, v)| fold(acc, k, *v)))
    });
    g.bench_function("frozen", |b| {
        b.iter(|| {
            let (mut it, mut acc) = (frozen.iter(), 0u64);
            while let Some((k, v)) = it.next_entry() {
                acc = fold(acc, k, v);
            }
            acc
        })
    });
    g.finish();
}

criterion_group!(benches, insert, get, iterate);
criterion_main!(benches);
