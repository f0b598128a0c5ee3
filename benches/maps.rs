//! Get, insert, iterate, longest-prefix matching, set operations and automaton searches on the first 20,000 keys
//! of the committed Debian paths sample, for memkv's structures and the two
//! std-like baselines, so a change's effect on speed shows before it lands. The `HybridMap` reads go
//! through a delta: every 16th key updated after a merge ([`hybrid`]); its rule table in
//! [`longest_prefix`] is merged whole. Every build and every lookup's answer is checked exactly
//! once before timing, and each timed iteration checks what it read (lookups by the sum of the values
//! found, walks, set operations and searches by a checksum of the entries in order), so a
//! structure that answers wrong fails the bench instead of being timed.
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

/// The entries `hybrid(entries)` holds, sorted by key.
fn hybrid_sorted(entries: &Entries) -> Entries {
    let mut held: Entries = (entries.iter().enumerate())
        .map(|(i, &(k, _))| (k, hybrid_value(entries, i)))
        .collect();
    held.sort_unstable();
    held
}

fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Elements(KEYS as u64));
    g
}

fn insert(c: &mut Criterion) {
    let (entries, sorted) = data();
    // Each build is checked once, before it is timed: every key holds its
    // value, and nothing else is held.
    let holds_entries = |len: usize, get: &dyn Fn(&[u8]) -> Option<u64>| {
        assert_eq!(len, entries.len());
        assert!(entries.iter().all(|&(k, v)| get(k) == Some(v)));
    };
    let fastart_build = || {
        let mut m = FastArt::new();
        for &(k, v) in &entries {
            m.insert(k, v);
        }
        m
    };
    let built = fastart_build();
    holds_entries(built.len(), &|k| built.get(k).copied());
    let btree_build = || {
        let mut m = BTreeMap::<Box<[u8]>, u64>::new();
        for &(k, v) in &entries {
            m.insert(k.into(), v);
        }
        m
    };
    let built = btree_build();
    holds_entries(built.len(), &|k| built.get(k).copied());
    let hash_build = || {
        let mut m = hashbrown::HashMap::<Box<[u8]>, u64>::new();
        for &(k, v) in &entries {
            m.insert(k.into(), v);
        }
        m
    };
    let built = hash_build();
    holds_entries(built.len(), &|k| built.get(k).copied());
    // Inserts one by one, each looking for the key's old value below the
    // delta; the default policy merges in the background meanwhile, and the
    // closing `freeze` waits for those merges and merges the rest, so that
    // their work is timed too (and no merge runs on into the next build).
    let hybrid_build = || {
        let m = HybridMap::new();
        for &(k, v) in &entries {
            m.insert(k, v);
        }
        m.freeze().unwrap();
        m
    };
    let built = hybrid_build();
    holds_entries(built.len(), &|k| built.get(k));
    // A bulk build from sorted input (the sort is not part of it).
    let frozen_build = || FrozenLayer::from_sorted_iter(sorted.iter().copied()).unwrap();
    let built = frozen_build();
    holds_entries(built.len(), &|k| built.get(k));

    let mut g = group(c, "insert");
    g.bench_function("fastart", |b| b.iter_with_large_drop(fastart_build));
    g.bench_function("btreemap", |b| b.iter_with_large_drop(btree_build));
    g.bench_function("hashbrown", |b| b.iter_with_large_drop(hash_build));
    g.bench_function("hybrid", |b| b.iter_with_large_drop(hybrid_build));
    g.bench_function("frozen", |b| b.iter_with_large_drop(frozen_build));
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

    // Each answer checked once, exactly; the timed loops check sums.
    let line = |i: usize| entries[i].1;
    let hybrid_line = |i: usize| hybrid_value(&entries, i);
    let every_answer = |get: &dyn Fn(&[u8]) -> Option<u64>, want: &dyn Fn(usize) -> u64| {
        assert!(order.iter().all(|&i| get(entries[i].0) == Some(want(i))));
        order.iter().map(|&i| want(i)).fold(0, u64::wrapping_add)
    };
    let want = every_answer(&|k| fastart.get(k).copied(), &line);
    every_answer(&|k| btree.get(k).copied(), &line);
    every_answer(&|k| hash.get(k).copied(), &line);
    every_answer(&|k| frozen.get(k), &line);
    let want_hybrid = every_answer(&|k| hybrid.get(k), &hybrid_line);

    let mut g = group(c, "get");
    g.bench_function("fastart", |b| {
        b.iter(|| right_answers(&entries, &order, |k| fastart.get(k).copied(), want))
    });
    g.bench_function("btreemap", |b| {
        b.iter(|| right_answers(&entries, &order, |k| btree.get(k).copied(), want))
    });
    g.bench_function("hashbrown", |b| {
        b.iter(|| right_answers(&entries, &order, |k| hash.get(k).copied(), want))
    });
    g.bench_function("frozen", |b| {
        b.iter(|| right_answers(&entries, &order, |k| frozen.get(k), want))
    });
    g.bench_function("hybrid", |b| {
        b.iter(|| right_answers(&entries, &order, |k| hybrid.get(k), want_hybrid))
    });
    g.finish();
}

/// Looks up the key of each entry in `order` and sums the answers, which
/// must come to `want`: every lookup is made, and a missing key or a wrong
/// value fails the bench. (The sum cannot tell two values swapped between
/// keys; [`get`] checks each answer exactly, once, before timing. A compare
/// per lookup, or a sum weighted by place, cost hashbrown's 19 ns lookups
/// 4–12% more; this, 0–5% over the unchecked sum before it, in alternating
/// runs that vary by 5% themselves.) Generic, so that each map's `get` is
/// inlined into the loop, as a caller's would be.
fn right_answers(
    entries: &Entries,
    order: &[usize],
    get: impl Fn(&[u8]) -> Option<u64>,
    want: u64,
) -> u64 {
    let sum = (order.iter())
        .map(|&i| get(entries[i].0).expect("every key is held"))
        .fold(0, u64::wrapping_add);
    checked(sum, want)
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

    let want_sum: u64 = entries.iter().filter_map(|&(path, _)| want(path)).sum();

    let mut g = group(c, "longest_prefix");
    // Each closure sums the values found, checked, so that no lookup can be
    // skipped and a wrong one fails the bench.
    g.bench_function("fastart", |b| {
        b.iter(|| {
            let sum = entries
                .iter()
                .filter_map(|&(k, _)| fastart.longest_prefix_of(k).map(|(_, v)| *v))
                .sum::<u64>();
            checked(sum, want_sum)
        })
    });
    g.bench_function("btreemap", |b| {
        b.iter(|| {
            let sum = entries
                .iter()
                .filter_map(|&(k, _)| btree_longest_prefix(&btree, k).map(|(_, v)| v))
                .sum::<u64>();
            checked(sum, want_sum)
        })
    });
    g.bench_function("hashbrown", |b| {
        b.iter(|| {
            let sum = entries
                .iter()
                .filter_map(|&(k, _)| hash_longest(k))
                .sum::<u64>();
            checked(sum, want_sum)
        })
    });
    g.bench_function("frozen", |b| {
        b.iter(|| {
            let sum = entries
                .iter()
                .filter_map(|&(k, _)| frozen.longest_prefix_of(k).map(|(_, v)| v))
                .sum::<u64>();
            checked(sum, want_sum)
        })
    });
    g.bench_function("hybrid", |b| {
        b.iter(|| {
            let sum = entries
                .iter()
                .filter_map(|&(k, _)| hybrid.longest_prefix_of(k).map(|(_, v)| v))
                .sum::<u64>();
            checked(sum, want_sum)
        })
    });
    g.finish();
}

/// Mixes an entry into a checksum.
fn fold(acc: u64, key: &[u8], value: u64) -> u64 {
    acc.wrapping_mul(31) ^ value ^ u64::from(key.last().copied().unwrap_or(0))
}

/// The checksum of `entries`, in their order, as the timed loops fold
/// what they read.
fn checksum<'a>(entries: impl IntoIterator<Item = &'a (&'static [u8], u64)>) -> u64 {
    (entries.into_iter()).fold(0, |acc, &(k, v)| fold(acc, k, v))
}

/// `acc`, after checking that it is `want`: the timed loops compare once
/// per iteration, so that every entry they read is checked.
fn checked(acc: u64, want: u64) -> u64 {
    assert_eq!(acc, want, "wrong entries");
    acc
}

fn iterate(c: &mut Criterion) {
    let (entries, sorted) = data();
    let fastart: FastArt<u64> = entries.iter().copied().collect();
    let btree: BTreeMap<Box<[u8]>, u64> = entries.iter().map(|&(k, v)| (k.into(), v)).collect();
    let frozen = FrozenLayer::from_sorted_iter(sorted.iter().copied()).unwrap();
    let hybrid = hybrid(&entries);
    let (want, want_hybrid) = (checksum(&sorted), checksum(&hybrid_sorted(&entries)));

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
            checked(acc, want)
        })
    });
    g.bench_function("btreemap", |b| {
        b.iter(|| checked(btree.iter().fold(0, |acc, (k, v)| fold(acc, k, *v)), want))
    });
    g.bench_function("frozen", |b| {
        b.iter(|| {
            let (mut it, mut acc) = (frozen.iter(), 0u64);
            while let Some((k, v)) = it.next_entry() {
                acc = fold(acc, k, v);
            }
            checked(acc, want)
        })
    });
    // A streaming merge of the delta and the base.
    g.bench_function("hybrid", |b| {
        b.iter(|| {
            let (mut it, mut acc) = (hybrid.iter(), 0u64);
            while let Some((k, v)) = it.next_entry() {
                acc = fold(acc, k, v);
            }
            checked(acc, want_hybrid)
        })
    });
    g.finish();
}

/// Set operations over two frozen layers of the sample's first keys, each
/// holding those whose line number falls in 6 of 10 (a different 6 each:
/// they share about a third), and one holding a key in 100 (half of them in
/// the first large one), intersected with that one; memkv's `OpBuilder`
/// beside the fst crate's over maps of the same entries. Throughput counts
/// the keys of the two inputs.
fn set_ops(c: &mut Criterion) {
    let (_, sorted) = data();
    let in_a = |v: u64| v % 10 < 6;
    let in_b = |v: u64| (v / 10) % 10 < 6;
    let in_small = |v: u64| matches!(v % 200, 3 | 108);
    let pick = |keep: &dyn Fn(u64) -> bool| -> Entries {
        sorted.iter().copied().filter(|&(_, v)| keep(v)).collect()
    };
    let (a, b, small) = (pick(&in_a), pick(&in_b), pick(&in_small));
    let frozen =
        |entries: &Entries| FrozenLayer::from_sorted_iter(entries.iter().copied()).unwrap();
    let fst_map = |entries: &Entries| fst::Map::from_iter(entries.iter().copied()).unwrap();
    let (frozen_a, frozen_b, frozen_small) = (frozen(&a), frozen(&b), frozen(&small));
    let (fst_a, fst_b, fst_small) = (fst_map(&a), fst_map(&b), fst_map(&small));
    // What each operation yields, as the loops fold it (every input holds a
    // key's line number as its value).
    let want_union = checksum(sorted.iter().filter(|&&(_, v)| in_a(v) || in_b(v)));
    let want_small = checksum(sorted.iter().filter(|&&(_, v)| in_small(v) && in_a(v)));
    assert_ne!(want_small, 0, "the small layer meets the large one");

    let mut g = c.benchmark_group("set_ops");
    g.throughput(Throughput::Elements((a.len() + b.len()) as u64));
    // Each closure folds every entry yielded into a checksum, checked.
    g.bench_function("union/frozen", |bench| {
        bench.iter(|| {
            let (mut union, mut acc) = (frozen_a.op().add(&frozen_b).union(), 0u64);
            while let Some((k, values)) = union.next_entry() {
                acc = fold(acc, k, values[0].value);
            }
            checked(acc, want_union)
        })
    });
    g.bench_function("union/fst", |bench| {
        bench.iter(|| {
            let (mut union, mut acc) = (fst_a.op().add(&fst_b).union(), 0u64);
            while let Some((k, values)) = union.next() {
                acc = fold(acc, k, values[0].value);
            }
            checked(acc, want_union)
        })
    });
    g.throughput(Throughput::Elements((small.len() + a.len()) as u64));
    g.bench_function("small_intersection/frozen", |bench| {
        bench.iter(|| {
            let (mut both, mut acc) = (frozen_small.op().add(&frozen_a).intersection(), 0u64);
            while let Some((k, values)) = both.next_entry() {
                acc = fold(acc, k, values[0].value);
            }
            checked(acc, want_small)
        })
    });
    g.bench_function("small_intersection/fst", |bench| {
        bench.iter(|| {
            let (mut both, mut acc) = (fst_small.op().add(&fst_a).intersection(), 0u64);
            while let Some((k, values)) = both.next() {
                acc = fold(acc, k, values[0].value);
            }
            checked(acc, want_small)
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
    // What each search finds, by a plain filter, as the loops fold it.
    let held_by_hybrid = hybrid_sorted(&entries);
    let found = |entries: &Entries, query: &dyn Fn(&[u8]) -> bool| {
        checksum(entries.iter().filter(|(k, _)| query(k)))
    };
    let prefixed = |k: &[u8]| k.starts_with(b"usr/share/doc/");
    let has_libz = |k: &[u8]| {
        let mut rest = k.iter();
        b"libz".iter().all(|c| rest.any(|b| b == c))
    };
    let want_prefix = (found(&sorted, &prefixed), found(&held_by_hybrid, &prefixed));
    let want_subsequence = (found(&sorted, &has_libz), found(&held_by_hybrid, &has_libz));

    let mut g = group(c, "search");
    // Each closure folds every entry found into a checksum, checked against
    // the plain filter's.
    macro_rules! bench {
        ($name:expr, $automaton:expr, $want:expr) => {
            g.bench_function(concat!($name, "/fastart"), |b| {
                b.iter(|| {
                    let (mut found, mut acc) = (fastart.search($automaton), 0u64);
                    while let Some((k, v)) = found.next_entry() {
                        acc = fold(acc, k, *v);
                    }
                    checked(acc, $want.0)
                })
            });
            g.bench_function(concat!($name, "/frozen"), |b| {
                b.iter(|| {
                    let (mut found, mut acc) = (frozen.search($automaton), 0u64);
                    while let Some((k, v)) = found.next_entry() {
                        acc = fold(acc, k, v);
                    }
                    checked(acc, $want.0)
                })
            });
            g.bench_function(concat!($name, "/hybrid"), |b| {
                b.iter(|| {
                    let (mut found, mut acc) = (hybrid.search($automaton), 0u64);
                    while let Some((k, v)) = found.next_entry() {
                        acc = fold(acc, k, v);
                    }
                    checked(acc, $want.1)
                })
            });
            g.bench_function(concat!($name, "/fst"), |b| {
                b.iter(|| {
                    let mut found = fst::IntoStreamer::into_stream(fst_map.search($automaton));
                    let mut acc = 0u64;
                    while let Some((k, v)) = found.next() {
                        acc = fold(acc, k, v);
                    }
                    checked(acc, $want.0)
                })
            });
        };
    }
    bench!("prefix", under_doc(), want_prefix);
    bench!("subsequence", scattered(), want_subsequence);
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
