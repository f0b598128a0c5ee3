//! Get, insert, iterate, longest-prefix matching, set operations and automaton searches on the first 20,000 keys
//! of the committed Debian paths sample, for memkv's structures and the two
//! std-like baselines, so a change's effect on speed shows before it lands. The `HybridMap` reads go
//! through a delta: every 16th key updated after a merge ([`hybrid`]).
//!
//! ```text
//! cargo bench --bench maps                  # all
//! cargo bench --bench maps -- get/fastart   # one
//! ```
//!
//! For memory per key, whole datasets and the other crates, use the harness:
//! `cargo run --release -p memkv-bench`.

use std::collections::BTreeMap;
use std::ops::Bound;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use fst::Streamer;
use memkv::{FastArt, FrozenLayer, HybridMap};

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

/// A `HybridMap` of `entries`, merged, then every 16th key updated (to
/// its value plus one): the reads consult the fresh delta's filter, and a
/// sixteenth of them its tree, before the base.
fn hybrid(entries: &Entries) -> HybridMap<u64> {
    let map: HybridMap<u64> = entries.iter().copied().collect();
    map.freeze().unwrap();
    for &(k, v) in entries.iter().step_by(16) {
        map.insert(k, v + 1);
    }
    map
}

/// The value `hybrid(entries)` holds for the entry at `i`.
fn hybrid_value(entries: &Entries, i: usize) -> u64 {
    entries[i].1 + u64::from(i.is_multiple_of(16))
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
    // Inserts one by one, each looking for the key's old value below the
    // delta; the default policy merges in the background meanwhile.
    g.bench_function("hybrid", |b| {
        b.iter_with_large_drop(|| {
            let m = HybridMap::new();
            for &(k, v) in &entries {
                m.insert(k, v);
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
    let hybrid = hybrid(&entries);
    // Checked once here, so that the timed loop below measures right answers.
    assert!(
        (0..entries.len()).all(|i| hybrid.get(entries[i].0) == Some(hybrid_value(&entries, i)))
    );

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
    g.bench_function("hybrid", |b| {
        b.iter(|| {
            order
                .iter()
                .map(|&i| hybrid.get(entries[i].0).unwrap())
                .sum::<u64>()
        })
    });
    g.finish();
}

/// The directory of a path, with its slash: the longest prefix of the path
/// in the rule table that [`longest_prefix`] builds.
fn directory(path: &[u8]) -> &[u8] {
    &path[..path.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1)]
}

/// The longest key in `map` that is a prefix of `key`, by `BTreeMap`'s own
/// means: the greatest key at or before `key` either is a prefix of it, or
/// shares some first bytes with it, beyond which no prefix of `key` can be
/// stored; look again at or before those.
fn btree_longest_prefix<'k>(
    map: &BTreeMap<Box<[u8]>, u64>,
    key: &'k [u8],
) -> Option<(&'k [u8], u64)> {
    let mut query = key;
    loop {
        let bounds = (Bound::Unbounded, Bound::Included(query));
        let (stored, &value) = map.range::<[u8], _>(bounds).next_back()?;
        if query.starts_with(stored) {
            return Some((&key[..stored.len()], value));
        }
        let shared = stored.iter().zip(query).take_while(|(a, b)| a == b).count();
        query = &query[..shared];
    }
}

/// Longest-prefix matching, as a rule table asks it: a table of the
/// directories of the first `KEYS` sample paths (every directory on their
/// paths, `usr/`, `usr/share/`, …), and each path looked up for the most
/// specific directory that holds it. A hash map can only try each length
/// in turn, longest first.
fn longest_prefix(c: &mut Criterion) {
    let (entries, _) = data();
    let mut dirs: Vec<&[u8]> = Vec::new();
    for &(path, _) in &entries {
        for (i, &b) in path.iter().enumerate() {
            if b == b'/' {
                dirs.push(&path[..=i]);
            }
        }
    }
    dirs.sort_unstable();
    dirs.dedup();
    let table: Vec<(&[u8], u64)> = dirs.iter().copied().zip(1..).collect();
    let fastart: FastArt<u64> = table.iter().copied().collect();
    let btree: BTreeMap<Box<[u8]>, u64> = table.iter().map(|&(k, v)| (k.into(), v)).collect();
    let hash: hashbrown::HashMap<Box<[u8]>, u64> =
        table.iter().map(|&(k, v)| (k.into(), v)).collect();
    let frozen = FrozenLayer::from_sorted_iter(table.iter().copied()).unwrap();
    let hybrid: HybridMap<u64> = table.iter().copied().collect();
    hybrid.freeze().unwrap();
    let hash_longest = |key: &[u8]| {
        (0..=key.len())
            .rev()
            .find_map(|len| hash.get(&key[..len]).copied())
    };
    // Checked once here, so that the timed loops measure right answers.
    let want = |path: &[u8]| btree.get(directory(path)).copied();
    for &(path, _) in &entries {
        let expected = want(path);
        assert_eq!(
            fastart.longest_prefix_of(path).map(|(k, v)| (k, *v)),
            expected.map(|v| (directory(path), v))
        );
        assert_eq!(frozen.longest_prefix_of(path).map(|(_, v)| v), expected);
        assert_eq!(hybrid.longest_prefix_of(path).map(|(_, v)| v), expected);
        assert_eq!(btree_longest_prefix(&btree, path).map(|(_, v)| v), expected);
        assert_eq!(hash_longest(path), expected);
    }

    let mut g = group(c, "longest_prefix");
    // Each closure sums the values found so that no lookup can be skipped.
    g.bench_function("fastart", |b| {
        b.iter(|| {
            entries
                .iter()
                .filter_map(|&(k, _)| fastart.longest_prefix_of(k).map(|(_, v)| *v))
                .sum::<u64>()
        })
    });
    g.bench_function("btreemap", |b| {
        b.iter(|| {
            entries
                .iter()
                .filter_map(|&(k, _)| btree_longest_prefix(&btree, k).map(|(_, v)| v))
                .sum::<u64>()
        })
    });
    g.bench_function("hashbrown", |b| {
        b.iter(|| {
            entries
                .iter()
                .filter_map(|&(k, _)| hash_longest(k))
                .sum::<u64>()
        })
    });
    g.bench_function("frozen", |b| {
        b.iter(|| {
            entries
                .iter()
                .filter_map(|&(k, _)| frozen.longest_prefix_of(k).map(|(_, v)| v))
                .sum::<u64>()
        })
    });
    g.bench_function("hybrid", |b| {
        b.iter(|| {
            entries
                .iter()
                .filter_map(|&(k, _)| hybrid.longest_prefix_of(k).map(|(_, v)| v))
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
    let hybrid = hybrid(&entries);

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
    // A streaming merge of the delta and the base.
    g.bench_function("hybrid", |b| {
        b.iter(|| {
            let (mut it, mut acc) = (hybrid.iter(), 0u64);
            while let Some((k, v)) = it.next_entry() {
                acc = fold(acc, k, v);
            }
            acc
        })
    });
    g.finish();
}

/// Set operations over two frozen layers of the sample's first keys, each
/// holding those whose line number falls in 6 of 10 (a different 6 each:
/// they share about a third), and one holding a key in 200, intersected
/// with a large one; memkv's `OpBuilder` beside the fst crate's over maps of
/// the same entries. Throughput counts the keys of the two inputs.
fn set_ops(c: &mut Criterion) {
    let (_, sorted) = data();
    let pick = |keep: fn(u64) -> bool| -> Entries {
        sorted.iter().copied().filter(|&(_, v)| keep(v)).collect()
    };
    let a = pick(|v| v % 10 < 6);
    let b = pick(|v| (v / 10) % 10 < 6);
    let small = pick(|v| v % 200 == 7);
    let frozen =
        |entries: &Entries| FrozenLayer::from_sorted_iter(entries.iter().copied()).unwrap();
    let fst_map = |entries: &Entries| fst::Map::from_iter(entries.iter().copied()).unwrap();
    let (frozen_a, frozen_b, frozen_small) = (frozen(&a), frozen(&b), frozen(&small));
    let (fst_a, fst_b, fst_small) = (fst_map(&a), fst_map(&b), fst_map(&small));
    // Checked once here, so that the timed loops measure right answers.
    let both = a
        .iter()
        .filter(|(k, _)| b.binary_search_by_key(k, |&(k, _)| k).is_ok())
        .count();
    assert_eq!(frozen_a.op().add(&frozen_b).intersection().count(), both);
    let mut fst_both = fst_a.op().add(&fst_b).intersection();
    let mut fst_count = 0;
    while fst_both.next().is_some() {
        fst_count += 1;
    }
    assert_eq!(fst_count, both);
    let in_a = small
        .iter()
        .filter(|(k, _)| a.binary_search_by_key(k, |&(k, _)| k).is_ok())
        .count();
    assert_eq!(
        frozen_small.op().add(&frozen_a).intersection().count(),
        in_a
    );

    let mut g = c.benchmark_group("set_ops");
    g.throughput(Throughput::Elements((a.len() + b.len()) as u64));
    // Each closure folds every entry yielded into a checksum.
    g.bench_function("union/frozen", |bench| {
        bench.iter(|| {
            let (mut union, mut acc) = (frozen_a.op().add(&frozen_b).union(), 0u64);
            while let Some((k, values)) = union.next_entry() {
                acc = fold(acc, k, values[0].value);
            }
            acc
        })
    });
    g.bench_function("union/fst", |bench| {
        bench.iter(|| {
            let (mut union, mut acc) = (fst_a.op().add(&fst_b).union(), 0u64);
            while let Some((k, values)) = union.next() {
                acc = fold(acc, k, values[0].value);
            }
            acc
        })
    });
    g.throughput(Throughput::Elements((small.len() + a.len()) as u64));
    g.bench_function("small_intersection/frozen", |bench| {
        bench.iter(|| {
            let (mut both, mut acc) = (frozen_small.op().add(&frozen_a).intersection(), 0u64);
            while let Some((k, values)) = both.next_entry() {
                acc = fold(acc, k, values[0].value);
            }
            acc
        })
    });
    g.bench_function("small_intersection/fst", |bench| {
        bench.iter(|| {
            let (mut both, mut acc) = (fst_small.op().add(&fst_a).intersection(), 0u64);
            while let Some((k, values)) = both.next() {
                acc = fold(acc, k, values[0].value);
            }
            acc
        })
    });
    g.finish();
}

/// Automaton searches over the sample's first keys: a prefix every key of
/// a directory shares, and a subsequence every key must be fed to; memkv's
/// three maps beside the fst crate's stream over a map of the same entries.
/// Throughput counts the keys of the map.
fn search(c: &mut Criterion) {
    use memkv::frozen::automaton::{Automaton, Str, Subsequence};
    let (entries, sorted) = data();
    let fastart: FastArt<u64> = entries.iter().copied().collect();
    let frozen = FrozenLayer::from_sorted_iter(sorted.iter().copied()).unwrap();
    let hybrid = hybrid(&entries);
    let fst_map = fst::Map::from_iter(sorted.iter().copied()).unwrap();
    let under_doc = || Str::new("usr/share/doc/").starts_with();
    let scattered = || Subsequence::new("libz");
    // Checked once here, so that the timed loops measure right answers.
    for count in [
        frozen.search(under_doc()).count(),
        fastart.search(under_doc()).count(),
        hybrid.search(under_doc()).count(),
    ] {
        assert_eq!(
            count,
            sorted
                .iter()
                .filter(|(k, _)| k.starts_with(b"usr/share/doc/"))
                .count()
        );
    }
    assert_eq!(
        frozen.search(scattered()).count(),
        fastart.search(scattered()).count()
    );

    let mut g = group(c, "search");
    // Each closure folds every entry found into a checksum.
    macro_rules! bench {
        ($name:expr, $automaton:expr) => {
            g.bench_function(concat!($name, "/fastart"), |b| {
                b.iter(|| {
                    let (mut found, mut acc) = (fastart.search($automaton), 0u64);
                    while let Some((k, v)) = found.next_entry() {
                        acc = fold(acc, k, *v);
                    }
                    acc
                })
            });
            g.bench_function(concat!($name, "/frozen"), |b| {
                b.iter(|| {
                    let (mut found, mut acc) = (frozen.search($automaton), 0u64);
                    while let Some((k, v)) = found.next_entry() {
                        acc = fold(acc, k, v);
                    }
                    acc
                })
            });
            g.bench_function(concat!($name, "/hybrid"), |b| {
                b.iter(|| {
                    let (mut found, mut acc) = (hybrid.search($automaton), 0u64);
                    while let Some((k, v)) = found.next_entry() {
                        acc = fold(acc, k, v);
                    }
                    acc
                })
            });
            g.bench_function(concat!($name, "/fst"), |b| {
                b.iter(|| {
                    let mut found = fst::IntoStreamer::into_stream(fst_map.search($automaton));
                    let mut acc = 0u64;
                    while let Some((k, v)) = found.next() {
                        acc = fold(acc, k, v);
                    }
                    acc
                })
            });
        };
    }
    bench!("prefix", under_doc());
    bench!("subsequence", scattered());
    g.finish();
}

criterion_group!(
    benches,
    insert,
    get,
    iterate,
    longest_prefix,
    set_ops,
    search
);
criterion_main!(benches);
