//! Building a `memkv::HybridMap` from empty, four ways, one per process:
//! how long each takes and how much memory it needs on the way.
//!
//! ```sh
//! cargo run --release -p memkv-bench --example hybrid_build -- --how collect   # the embedded 100k sample
//! cargo run --release -p memkv-bench --example hybrid_build -- --how extend --dataset data/debian-paths.txt
//! ```
//!
//! Every key of the dataset (in dataset order, its line number as the value)
//! goes into a new map with the default policy by `--how`:
//!
//! * `insert`: one `insert` at a time;
//! * `extend`: `Extend` on a new map (old values looked up 256 at a time);
//! * `put`: one blind `put` at a time (no old value looked up);
//! * `collect`: `FromIterator` (the entries gathered in a `FastArt`, then
//!   one merge, its parts built on `--build-threads` threads).
//!
//! Then `freeze` merges what is left and `len` settles what the blind writes
//! left pending; both are timed with the build. Memory (jemalloc
//! `stats.allocated`, less what was allocated before) is sampled every 5 ms
//! by a second thread, for the peak; the merge thread's CPU shows in the
//! process's CPU time. Every key is then looked up and its value checked.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use memkv::{HybridConfig, HybridMap};

mod common;
use common::allocated;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum How {
    Insert,
    Extend,
    Put,
    Collect,
}

/// Builds a hybrid map from empty (see the source's header).
#[derive(Debug, Parser)]
struct Args {
    /// How the entries go in.
    #[arg(long, value_enum)]
    how: How,
    /// One key per line (default: the embedded 100k Debian sample).
    #[arg(long)]
    dataset: Option<PathBuf>,
    /// `HybridConfig::build_threads` for the map (default: the library's).
    #[arg(long)]
    build_threads: Option<usize>,
    /// `HybridConfig::key_ratio` for the map (default: the library's).
    #[arg(long)]
    key_ratio: Option<f64>,
    /// Also print the memory allocated, in bytes per key, every this many
    /// milliseconds (to stderr), to see when the peak comes.
    #[arg(long)]
    memory_trace_ms: Option<u64>,
}

fn main() {
    let args = Args::parse();
    let data = common::dataset_bytes(args.dataset.as_deref()).expect("reading the dataset");
    let keys = common::distinct_keys(&data);
    let entries = || keys.iter().enumerate().map(|(i, key)| (*key, i as u64));

    let before = allocated();
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let done = Arc::clone(&done);
        let trace = args.memory_trace_ms.map(Duration::from_millis);
        let n = keys.len().max(1) as f64;
        thread::spawn(move || {
            let mut peak = 0;
            let started = Instant::now();
            let mut traced = started;
            while !done.load(Ordering::Relaxed) {
                let now = allocated();
                peak = peak.max(now);
                if trace.is_some_and(|every| traced.elapsed() >= every) {
                    traced = Instant::now();
                    let per_key = now.saturating_sub(before) as f64 / n;
                    eprintln!(
                        "{:>7.2} s {per_key:>6.1} B/key",
                        started.elapsed().as_secs_f64()
                    );
                }
                thread::sleep(Duration::from_millis(5));
            }
            peak
        })
    };
    let mut config = HybridConfig::new();
    if let Some(threads) = args.build_threads {
        config = config.build_threads(threads);
    }
    if let Some(ratio) = args.key_ratio {
        config = config.key_ratio(ratio);
    }
    let cpu = common::cpu_seconds("/proc/self/stat");
    let started = Instant::now();
    let map: HybridMap<u64> = match args.how {
        How::Insert => {
            let map = config.build();
            for (key, value) in entries() {
                map.insert(key, value);
            }
            map
        }
        How::Extend => {
            let mut map = config.build();
            map.extend(entries());
            map
        }
        How::Put => {
            let map = config.build();
            for (key, value) in entries() {
                map.put(key, value);
            }
            map
        }
        // `collect` is `build_from` with the default policy.
        How::Collect => config.build_from(entries()),
    };
    let written = started.elapsed();
    map.freeze().expect("the last merge");
    let len = map.len();
    let total = started.elapsed();
    let cpu = common::cpu_seconds("/proc/self/stat") - cpu;
    done.store(true, Ordering::Relaxed);
    let peak = sampler.join().expect("the sampler").saturating_sub(before);
    let end = allocated().saturating_sub(before);

    let wrong = entries()
        .filter(|&(key, value)| map.get(key) != Some(value))
        .count();
    let n = keys.len();
    let per_key = |bytes: u64| bytes as f64 / n as f64;
    println!(
        "{:?}: {n} keys in {total:.2?} ({:.0} keys/s; the writes {written:.2?}, then freeze and len); \
         CPU {cpu:.1} s; memory peak {:.1} B/key, end {:.1} B/key ({:.1} by memory_usage); \
         {} merges, the last {:.2?}; len {len}, {wrong} of {n} lookups wrong",
        args.how,
        n as f64 / total.as_secs_f64(),
        per_key(peak),
        per_key(end),
        per_key(map.memory_usage() as u64),
        map.stats().merges,
        map.stats().last_merge_duration.unwrap_or_default(),
    );
    assert_eq!((len, wrong), (n, 0), "every key, with its value");
}
