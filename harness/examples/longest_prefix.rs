//! Longest-prefix matching, as a rule table asks it: which of my
//! directories holds this file? The table holds the directories on the
//! dataset's paths (`usr/`, `usr/share/`, …, each with its slash; with
//! `--keep-one-in K` one in K of them, chosen by a hash of its bytes), and
//! each path is looked up for the longest directory in the table that is a
//! prefix of it.
//!
//! ```sh
//! cargo run --release -p memkv-bench --example longest_prefix                     # the embedded 100k sample
//! cargo run --release -p memkv-bench --example longest_prefix -- --dataset data/debian-paths.txt
//! ```
//!
//! All six tables live in one process and are looked up in alternating
//! rounds, so that their ratios are not swayed by this machine's drift from
//! one process to the next; each build's growth of jemalloc's
//! `stats.allocated` is its memory. memkv's maps answer with
//! `longest_prefix_of`; `BTreeMap` with its own means (the greatest key at
//! or before the path either is a prefix of it, or shares some first bytes
//! with it, beyond which no prefix can be stored: look again at or before
//! those); `hashbrown`, which has no order, by trying each length in turn,
//! longest first; the fst crate's `Map`, which has no such query either, by
//! a walk of its raw nodes along the path. `fastart-many` is the same
//! `FastArt` asked through `longest_prefix_of_many`, 256 paths a call.
//! Every answer is checked against the expected directory.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::hint::black_box;
use std::ops::Bound;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use memkv::{FastArt, FrozenLayer, HybridMap};

mod common;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Longest-prefix matching in alternating rounds (see the source's header).
#[derive(Debug, Parser)]
struct Args {
    /// One key per line (default: the embedded 100k Debian sample).
    #[arg(long)]
    dataset: Option<PathBuf>,
    /// Paths looked up per round (at most the number of paths).
    #[arg(long, default_value_t = 2_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    lookups: u64,
    /// Rounds of each structure, alternating.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// Keep one directory in K in the table, so that the longest match is
    /// often further up than the path's own directory.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    keep_one_in: u64,
}

/// The structures, in the order of a round.
const NAMES: [&str; 7] = [
    "fastart",
    "frozen",
    "hybrid",
    "btreemap",
    "hashbrown",
    "fst",
    "fastart-many",
];
/// Where `FastArt::longest_prefix_of_many` stands in [`NAMES`]: it is
/// given the paths in batches of [`BATCH`].
const MANY: usize = 6;
/// Paths per call of `longest_prefix_of_many`.
const BATCH: usize = 256;
/// Where `BTreeMap`, the baseline of the ratios, stands in [`NAMES`].
const BTREE: usize = 3;

/// The longest key in `map` that is a prefix of `key`, by `BTreeMap`'s own
/// means (see the source's header); its length and value.
fn btree_longest_prefix(map: &BTreeMap<Box<[u8]>, u64>, key: &[u8]) -> Option<(usize, u64)> {
    let mut query = key;
    loop {
        let bounds = (Bound::Unbounded, Bound::Included(query));
        let (stored, &value) = map.range::<[u8], _>(bounds).next_back()?;
        if query.starts_with(stored) {
            return Some((stored.len(), value));
        }
        let shared = stored.iter().zip(query).take_while(|(a, b)| a == b).count();
        query = &query[..shared];
    }
}

/// The longest key in `map` that is a prefix of `key`, by a walk of the
/// fst crate's own nodes along `key` (its `Map` has no such query): the
/// last final node met, with its output.
fn fst_longest_prefix(map: &fst::Map<Vec<u8>>, key: &[u8]) -> Option<(usize, u64)> {
    let raw = map.as_fst();
    let mut node = raw.root();
    let mut output = fst::raw::Output::zero();
    let mut longest = None;
    for (depth, &byte) in key.iter().enumerate() {
        if node.is_final() {
            longest = Some((depth, output.cat(node.final_output()).value()));
        }
        let Some(i) = node.find_input(byte) else {
            return longest;
        };
        let transition = node.transition(i);
        output = output.cat(transition.out);
        node = raw.node(transition.addr);
    }
    if node.is_final() {
        longest = Some((key.len(), output.cat(node.final_output()).value()));
    }
    longest
}

fn main() {
    let args = Args::parse();
    let data = common::dataset_bytes(args.dataset.as_deref()).expect("reading the dataset");
    let paths = common::distinct_keys(&data);
    assert!(!paths.is_empty(), "the dataset has no keys");
    let hasher = BuildHasherDefault::<DefaultHasher>::default();
    let kept = |dir: &[u8]| hasher.hash_one(dir) % args.keep_one_in == 0;
    let mut dirs: Vec<&[u8]> = paths
        .iter()
        .flat_map(|path| {
            let slashes = path.iter().enumerate().filter(|&(_, &b)| b == b'/');
            slashes.map(|(i, _)| &path[..=i])
        })
        .filter(|dir| kept(dir))
        .collect();
    // Each directory's value is its number in the order the (shuffled)
    // paths first name it: in key order they look random, as a rule's id
    // would, where the directory's rank would favour the fst crate's map,
    // which stores outputs along its paths.
    let mut values: HashMap<&[u8], u64> = HashMap::new();
    dirs.retain(|&dir| {
        let next = values.len() as u64;
        *values.entry(dir).or_insert(next) == next
    });
    dirs.sort_unstable();
    let table: Vec<(&[u8], u64)> = dirs.iter().map(|&dir| (dir, values[dir])).collect();
    // What each path's answer must be: its longest kept directory.
    let expected = |path: &[u8]| {
        let slashes = path.iter().enumerate().filter(|&(_, &b)| b == b'/');
        let mut found = None;
        for (i, _) in slashes {
            if let Some(&value) = values.get(&path[..=i]) {
                found = Some((i + 1, value));
            }
        }
        found
    };

    let mut bytes = [0u64; NAMES.len()];
    let mut before = common::allocated();
    let mut built = |i: usize| {
        let now = common::allocated();
        bytes[i] = now.saturating_sub(before);
        before = now;
    };
    let fastart: FastArt<u64> = table.iter().copied().collect();
    built(0);
    let frozen = FrozenLayer::from_sorted_iter(table.iter().copied()).expect("sorted, distinct");
    built(1);
    let hybrid: HybridMap<u64> = table.iter().copied().collect();
    hybrid.freeze().expect("the merge");
    built(2);
    let btree: BTreeMap<Box<[u8]>, u64> = table.iter().map(|&(k, v)| (k.into(), v)).collect();
    built(3);
    let hash: hashbrown::HashMap<Box<[u8]>, u64> =
        table.iter().map(|&(k, v)| (k.into(), v)).collect();
    built(4);
    let fst = fst::Map::from_iter(table.iter().copied()).expect("sorted, distinct");
    built(5);
    let raw: usize = table.iter().map(|(k, _)| k.len()).sum();
    println!(
        "{} paths, {} directories in the table ({raw} key bytes, {:.1} a key)",
        paths.len(),
        table.len(),
        raw as f64 / table.len().max(1) as f64
    );
    bytes[MANY] = bytes[0];
    for (name, bytes) in NAMES.iter().zip(bytes) {
        println!(
            "  {name}: {:.1} bytes/directory",
            bytes as f64 / table.len().max(1) as f64
        );
    }
    // A cross-check of the allocator's count by the sizes the two frozen
    // structures report themselves.
    println!(
        "  (own sizes: frozen {} B, fst {} B)",
        frozen.as_bytes().len(),
        fst.as_fst().size()
    );

    // The paths in the dataset's line order (its script shuffled them with
    // a fixed seed), copied end to end so that reading them costs no miss
    // of this program's own.
    let lookups = usize::try_from(args.lookups)
        .unwrap_or(usize::MAX)
        .min(paths.len());
    let mut keys = Vec::new();
    let mut ends = vec![0];
    let mut want = Vec::with_capacity(lookups);
    for path in &paths[..lookups] {
        keys.extend_from_slice(path);
        ends.push(keys.len());
        want.push(expected(path));
    }
    let hash_longest = |key: &[u8]| {
        (0..=key.len())
            .rev()
            .find_map(|len| hash.get(&key[..len]).map(|&v| (len, v)))
    };
    let answer = |which: usize, key: &[u8]| match which {
        0 => fastart.longest_prefix_of(key).map(|(k, v)| (k.len(), *v)),
        1 => frozen.longest_prefix_of(key).map(|(k, v)| (k.len(), v)),
        2 => hybrid.longest_prefix_of(key).map(|(k, v)| (k.len(), v)),
        3 => btree_longest_prefix(&btree, key),
        4 => hash_longest(key),
        _ => fst_longest_prefix(&fst, key),
    };

    let mut per_round: Vec<[f64; NAMES.len()]> = Vec::new();
    for round in 0..args.rounds {
        let mut ns = [0.0; NAMES.len()];
        for (which, time) in ns.iter_mut().enumerate() {
            let start = Instant::now();
            let mut wrong = 0usize;
            if which == MANY {
                let mut batch: Vec<&[u8]> = Vec::with_capacity(BATCH);
                for first in (0..lookups).step_by(BATCH) {
                    let last = (first + BATCH).min(lookups);
                    batch.clear();
                    batch.extend((first..last).map(|j| &keys[ends[j]..ends[j + 1]]));
                    let found = fastart.longest_prefix_of_many(&batch);
                    for (j, found) in (first..last).zip(found) {
                        wrong += usize::from(found.map(|(k, v)| (k.len(), *v)) != want[j]);
                    }
                }
            } else {
                for j in 0..lookups {
                    let key = &keys[ends[j]..ends[j + 1]];
                    wrong += usize::from(answer(which, key) != want[j]);
                }
            }
            *time = start.elapsed().as_nanos() as f64 / lookups as f64;
            assert_eq!(black_box(wrong), 0, "{}: wrong answers", NAMES[which]);
        }
        let line: Vec<String> = NAMES
            .iter()
            .zip(ns)
            .map(|(name, ns)| format!("{name} {ns:.0}"))
            .collect();
        println!("round {round}: ns a lookup: {}", line.join(", "));
        per_round.push(ns);
    }
    println!(
        "median throughput against BTreeMap's, over {} rounds ({lookups} lookups each, every answer checked):",
        args.rounds
    );
    for (which, name) in NAMES.iter().enumerate() {
        let mut ratios: Vec<f64> = per_round.iter().map(|ns| ns[BTREE] / ns[which]).collect();
        ratios.sort_by(f64::total_cmp);
        let mut times: Vec<f64> = per_round.iter().map(|ns| ns[which]).collect();
        times.sort_by(f64::total_cmp);
        println!(
            "  {name}: {:.2}x ({:.0} ns a lookup)",
            ratios[ratios.len() / 2],
            times[times.len() / 2]
        );
    }
}
