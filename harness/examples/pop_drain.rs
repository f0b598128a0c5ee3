//! Draining a frozen `memkv::HybridMap` by pops: how the cost of a pop
//! changes as the tombstones left by earlier pops pile up at the ends.
//!
//! ```sh
//! cargo run --release -p memkv-bench --example pop_drain                 # the embedded 100k sample
//! cargo run --release -p memkv-bench --example pop_drain -- --peek       # first/last_key_value + remove
//! cargo run --release -p memkv-bench --example pop_drain -- --dataset data/debian-paths.txt
//! ```
//!
//! The keys (each with its line number as the value) go into a map with
//! the manual policy and are frozen into the base; then pops from
//! alternate ends (`pop_first`, `pop_last`, ...; with `--peek`,
//! `first_key_value` or `last_key_value` and a `remove` of the key found)
//! take every entry, each checked against the keys, while the time per
//! tenth of the drain and the slowest single pop are recorded. A linear drain has tenths of about
//! equal time; one that steps over the tombstones of earlier pops grows
//! with each tenth.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use memkv::{HybridConfig, HybridMap};

mod common;

/// Drain a frozen map by pops (see the source's header).
#[derive(Debug, Parser)]
struct Args {
    /// One key per line (default: the embedded 100k Debian sample).
    #[arg(long)]
    dataset: Option<PathBuf>,
    /// Look the end up and remove its key, instead of popping it.
    #[arg(long)]
    peek: bool,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("pop_drain: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let text = common::dataset_bytes(args.dataset.as_deref())?;
    let mut keys: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|k| !k.is_empty())
        .collect();
    if keys.is_empty() {
        return Err("the dataset has no keys".into());
    }
    let map: HybridMap<u64> = HybridConfig::new().manual().build();
    for (line, key) in keys.iter().enumerate() {
        map.insert(key, line as u64);
    }
    map.freeze()?;
    let by_line = keys.clone();
    keys.sort_unstable();
    keys.dedup();
    let total = keys.len();
    let how = if args.peek {
        "looking up and removing"
    } else {
        "popping"
    };
    println!("{total} keys frozen; {how} from alternate ends");

    let (mut front, mut back) = (0, total);
    let mut slowest = Duration::ZERO;
    let mut wrong = 0usize;
    let tenth = total.div_ceil(10);
    let started = Instant::now();
    let mut tenth_started = started;
    for popped in 0..total {
        let before = Instant::now();
        let from_front = popped % 2 == 0;
        let entry = match (args.peek, from_front) {
            (false, true) => map.pop_first(),
            (false, false) => map.pop_last(),
            (true, _) => {
                let end = if from_front {
                    map.first_key_value()
                } else {
                    map.last_key_value()
                };
                end.filter(|(key, line)| map.remove(key) == Some(*line))
            }
        };
        slowest = slowest.max(before.elapsed());
        let expected = if from_front {
            front += 1;
            keys[front - 1]
        } else {
            back -= 1;
            keys[back]
        };
        match entry {
            Some((key, line))
                if key == expected && by_line.get(line as usize) == Some(&expected) => {}
            _ => wrong += 1,
        }
        if (popped + 1) % tenth == 0 || popped + 1 == total {
            let now = Instant::now();
            println!(
                "pops {:>9}..{:<9} {:>10.3?} ({:.2} µs/pop)",
                popped + 1 - ((popped % tenth) + 1),
                popped + 1,
                now - tenth_started,
                (now - tenth_started).as_secs_f64() * 1e6 / ((popped % tenth) + 1) as f64,
            );
            tenth_started = now;
        }
    }
    let left = map.len();
    println!(
        "{total} pops in {:.3?}, slowest {:.3?}; {wrong} wrong entries; {left} left",
        started.elapsed(),
        slowest
    );
    if wrong > 0 || left > 0 || map.pop_first().is_some() {
        return Err("the drain went wrong".into());
    }
    Ok(())
}
