//! `FastArt::retain` on a large map, one way per process: how long it takes
//! and how much memory it needs beyond the map's own.
//!
//! ```sh
//! cargo run --release -p memkv-bench --example retain                      # the embedded 100k sample
//! cargo run --release -p memkv-bench --example retain -- --collect-first --dataset data/debian-paths.txt
//! ```
//!
//! Every key of the dataset (in dataset order, its line number as the value)
//! goes into a `FastArt<u64>`; then the entries with an even line number
//! (half of them, scattered over the key order) are removed:
//!
//! * by `retain`, which removes what it rejects a batch at a time;
//! * with `--collect-first`, by collecting the keys to remove in a
//!   `Vec<Vec<u8>>` and removing them after the walk (what `retain` did
//!   until 2026-11-30).
//!
//! Memory (jemalloc `stats.allocated`, less what the map and the keys held
//! before) is sampled every millisecond by a second thread, for the peak.
//! Every key is then looked up: present with its line number if odd,
//! absent if even.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use clap::Parser;
use memkv::FastArt;

mod common;
use common::allocated;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Remove half of a large map's entries (see the source's header).
#[derive(Debug, Parser)]
struct Args {
    /// One key per line (default: the embedded 100k Debian sample).
    #[arg(long)]
    dataset: Option<PathBuf>,
    /// Collect the keys to remove first, then remove them.
    #[arg(long)]
    collect_first: bool,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("retain: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let text = common::dataset_bytes(args.dataset.as_deref())?;
    let keys = common::distinct_keys(&text);
    if keys.is_empty() {
        return Err("the dataset has no keys".into());
    }
    let mut map: FastArt<u64> = keys.iter().zip(0..).collect();
    let removed = |line: u64| line.is_multiple_of(2);

    let before = allocated();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || {
            let mut peak = 0u64;
            while !stop.load(Ordering::Relaxed) {
                peak = peak.max(allocated().saturating_sub(before));
                thread::sleep(Duration::from_millis(1));
            }
            peak
        })
    };
    let started = Instant::now();
    if args.collect_first {
        let doomed: Vec<Vec<u8>> = map
            .iter()
            .filter(|&(_, &line)| removed(line))
            .map(|(key, _)| key)
            .collect();
        for key in doomed {
            map.remove(key);
        }
    } else {
        map.retain(|_, &mut line| !removed(line));
    }
    let took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let peak = sampler.join().map_err(|_| "the sampler panicked")?;

    let wrong = keys
        .iter()
        .zip(0..)
        .filter(|&(key, line)| map.get(key) != (!removed(line)).then_some(&line))
        .count();
    let how = if args.collect_first {
        "collect, then remove"
    } else {
        "retain"
    };
    println!(
        "{how}: {} of {} keys left in {:.3?}; peak {:.1} MB beyond the map ({:.1} bytes/key); {wrong} wrong",
        map.len(),
        keys.len(),
        took,
        peak as f64 / 1e6,
        peak as f64 / keys.len() as f64,
    );
    if wrong > 0 || map.len() != keys.len() / 2 {
        return Err("the map is not as it should be".into());
    }
    Ok(())
}
