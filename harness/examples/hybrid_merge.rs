//! One background merge of a `memkv::HybridMap`, with lookups going on:
//! how long the merge takes, how much memory it needs, and how slow the
//! slowest lookup made meanwhile was.
//!
//! ```sh
//! cargo run --release -p memkv-bench --example hybrid_merge                       # the embedded 100k sample
//! cargo run --release -p memkv-bench --example hybrid_merge -- --dataset data/debian-paths.txt
//! ```
//!
//! The base is built directly from the sorted keys (each with its line
//! number as the value) and split into the parts a merge makes (by a first
//! merge, not measured: a map that has merged before, as in steady use);
//! then `--delta-share` of the keys, picked at random, are updated through
//! `insert` (they go to the delta); then `merge_in_background` starts the
//! merge and this thread looks up random keys until it ends, timing each
//! lookup. Memory (jemalloc `stats.allocated`, less what was allocated
//! before the map) is sampled every 1,000 lookups.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use memkv::{FrozenLayer, HybridConfig, HybridMap};

mod common;
use common::allocated;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// One background merge with lookups going on (see the source's header).
#[derive(Debug, Parser)]
struct Args {
    /// One key per line (default: the embedded 100k Debian sample).
    #[arg(long)]
    dataset: Option<PathBuf>,
    /// Share of the keys updated in the delta before the merge.
    #[arg(long, default_value_t = 0.1)]
    delta_share: f64,
    /// HybridConfig::part_keys (default: the library's).
    #[arg(long)]
    part_keys: Option<usize>,
}

fn main() {
    let args = Args::parse();
    let data = common::dataset_bytes(args.dataset.as_deref()).expect("reading the dataset");
    let entries = common::sorted_entries(&data);
    let keys: Vec<&[u8]> = entries.iter().map(|(key, _)| *key).collect();
    let n = keys.len();
    let before = allocated();
    let base = FrozenLayer::from_sorted_iter(entries.iter().copied()).expect("building the base");
    let mut config = HybridConfig::new().manual();
    if let Some(keys) = args.part_keys {
        config = config.part_keys(keys);
    }
    let map: HybridMap<u64> = HybridMap::from_frozen(base, config);
    // The first merge splits the one layer into parts.
    map.insert(keys[0], 0);
    map.freeze().expect("splitting the base");
    let split = map.stats();
    let base_bytes = split.base_bytes;
    let mut rng = 0x6d656d6b76000006u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let updates = (n as f64 * args.delta_share) as usize;
    for _ in 0..updates {
        let i = (next() % n as u64) as usize;
        map.insert(keys[i], i as u64 + 1);
    }
    let stats = map.stats();
    let idle = allocated() - before;
    println!(
        "{n} keys; base {:.2} B/key in {} parts; delta {} entries, {:.2} B/key of the map; total {:.2} B/key",
        base_bytes as f64 / n as f64,
        split.base_parts,
        stats.delta_entries,
        stats.delta_bytes as f64 / n as f64,
        idle as f64 / n as f64
    );

    let started = Instant::now();
    map.merge_in_background();
    let (mut lookups, mut worst, mut total) = (0u64, Duration::ZERO, Duration::ZERO);
    let mut slow = 0u64; // over 100 µs
    let mut peak = idle;
    while map.stats().merges == split.merges {
        for _ in 0..1000 {
            let i = (next() % n as u64) as usize;
            let t = Instant::now();
            let value = black_box(map.get(black_box(keys[i])));
            let d = t.elapsed();
            assert!(value.is_some());
            worst = worst.max(d);
            total += d;
            slow += u64::from(d > Duration::from_micros(100));
            lookups += 1;
        }
        peak = peak.max(allocated() - before);
        if started.elapsed() > Duration::from_secs(600) {
            panic!("the merge took over 10 minutes");
        }
    }
    let elapsed = started.elapsed();
    let stats = map.stats();
    println!(
        "merge: {:?} to build ({:.0} keys/s), {elapsed:?} until seen done; {} failed",
        stats.last_merge_duration.unwrap_or_default(),
        n as f64 / stats.last_merge_duration.unwrap_or_default().as_secs_f64(),
        stats.failed_merges
    );
    println!(
        "memory: {:.2} B/key before, peak {:.2} B/key during, {:.2} B/key after",
        idle as f64 / n as f64,
        peak as f64 / n as f64,
        (allocated() - before) as f64 / n as f64
    );
    println!(
        "lookups during the merge: {lookups}, mean {:?}, {slow} over 100 µs, slowest {worst:?}",
        total / lookups.max(1) as u32
    );
}
