//! What a `memkv::HybridMap` lookup costs over the `FrozenLayer` lookup it
//! ends in: both structures over the same keys and values in one process,
//! looked up in alternating rounds, so the ratio is not swayed by this
//! machine's drift from one process to the next.
//!
//! ```sh
//! cargo run --release -p memkv-bench --example hybrid_overhead                     # the embedded 100k sample
//! cargo run --release -p memkv-bench --example hybrid_overhead -- --dataset data/debian-paths.txt
//! cargo run --release -p memkv-bench --example hybrid_overhead -- --update-every 16  # with a delta
//! cargo run --release -p memkv-bench --example hybrid_overhead -- --threads 2        # readers on two cores
//! ```
//!
//! The frozen layer is built from the sorted keys. The hybrid map is built
//! by `collect` (or `--build insert`: one `insert` at a time, with the
//! merges its policy starts), then merged; `--update-every K` then writes
//! every K-th key again with its value plus one, into the fresh delta.
//! Each round looks up the first `--lookups` keys in the dataset's line
//! order (shuffled by its script), read from a copy laid out in that
//! order, and checks every value. With `--threads T`, T threads look up at
//! once, each all the keys from its own starting point, which shows what
//! readers on several cores pay for the hybrid map's shared lock.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use memkv::{FrozenLayer, HybridMap};

mod common;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// How the hybrid map is built.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Build {
    /// `collect`: built in one go, split among threads.
    Collect,
    /// One `insert` at a time, merges started by the default policy.
    Insert,
}

/// Hybrid against frozen lookups, alternating (see the source's header).
#[derive(Debug, Parser)]
struct Args {
    /// One key per line (default: the embedded 100k Debian sample).
    #[arg(long)]
    dataset: Option<PathBuf>,
    /// Lookups per round (at most the number of keys).
    #[arg(long, default_value_t = 2_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    lookups: u64,
    /// Rounds of each structure, alternating.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// How the hybrid map is built.
    #[arg(long, value_enum, default_value_t = Build::Collect)]
    build: Build,
    /// After the merge, write every K-th key again (its value plus one), so
    /// that lookups meet a delta; 0 leaves the delta empty.
    #[arg(long, default_value_t = 0)]
    update_every: usize,
    /// Threads looking up at once, each every key of the round; times are
    /// per lookup of all the threads together.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    threads: u32,
}

fn main() {
    let args = Args::parse();
    let data = common::dataset_bytes(args.dataset.as_deref()).expect("reading the dataset");
    let entries = common::sorted_entries(&data);
    let n = entries.len();
    assert!(n > 0, "the dataset has no keys");
    let frozen = FrozenLayer::from_sorted_iter(entries.iter().copied()).expect("sorted, distinct");
    // The dataset's line order (its script shuffled it with a fixed seed),
    // as indices into `entries`: the hybrid map is built in it, and the
    // lookups follow it.
    let mut by_line: Vec<usize> = (0..n).collect();
    by_line.sort_unstable_by_key(|&i| entries[i].1);
    let in_line_order = by_line.iter().map(|&i| entries[i]);
    let hybrid: HybridMap<u64> = match args.build {
        Build::Collect => in_line_order.collect(),
        Build::Insert => {
            let map = HybridMap::new();
            for (key, line) in in_line_order {
                map.insert(key, line);
            }
            map
        }
    };
    hybrid.freeze().expect("the merge");
    let updated = |i: usize| args.update_every > 0 && i.is_multiple_of(args.update_every);
    for (i, &(key, line)) in entries.iter().enumerate() {
        if updated(i) {
            hybrid.insert(key, line + 1);
        }
    }
    let stats = hybrid.stats();
    println!(
        "{n} keys; hybrid: {} base parts, {} delta entries, {} B in deltas; build {:?}",
        stats.base_parts, stats.delta_entries, stats.delta_bytes, args.build
    );

    // The first keys in line order, copied in that order so that reading
    // them costs no miss of the harness's own.
    let lookups = usize::try_from(args.lookups).unwrap_or(usize::MAX).min(n);
    let order = &by_line[..lookups];
    let mut bytes = Vec::new();
    let mut ends = vec![0];
    for &i in order {
        bytes.extend_from_slice(entries[i].0);
        ends.push(bytes.len());
    }
    let expected = |i: usize| entries[i].1 + u64::from(updated(i));

    // One pass over the lookups by one thread: how many values were wrong.
    let pass = |which: usize, offset: usize| {
        let mut wrong = 0usize;
        for step in 0..lookups {
            let j = step + offset - if step + offset >= lookups { lookups } else { 0 };
            let i = order[j];
            let key = &bytes[ends[j]..ends[j + 1]];
            let (value, want) = if which == 0 {
                (frozen.get(key), entries[i].1)
            } else {
                (hybrid.get(key), expected(i))
            };
            wrong += usize::from(value != Some(want));
        }
        wrong
    };
    let threads = args.threads as usize;
    let mut ratios = Vec::new();
    for round in 0..args.rounds {
        let mut ns = [0.0; 2];
        for (which, time) in ns.iter_mut().enumerate() {
            let start = Instant::now();
            // Each thread starts at its own place in the keys, so that the
            // threads do not walk the same paths at the same time.
            let wrong: usize = std::thread::scope(|scope| {
                let workers: Vec<_> = (0..threads)
                    .map(|t| scope.spawn(move || pass(which, t * lookups / threads)))
                    .collect();
                workers
                    .into_iter()
                    .map(|w| w.join().expect("a lookup thread"))
                    .sum()
            });
            *time = start.elapsed().as_nanos() as f64 / (lookups * threads) as f64;
            assert_eq!(black_box(wrong), 0, "wrong values looked up");
        }
        ratios.push(ns[1] / ns[0]);
        println!(
            "round {round}: frozen {:.0} ns, hybrid {:.0} ns a lookup: hybrid/frozen time {:.3}",
            ns[0],
            ns[1],
            ns[1] / ns[0]
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "median hybrid/frozen time: {:.3} ({lookups} lookups a round, every value checked)",
        ratios[ratios.len() / 2]
    );
}
