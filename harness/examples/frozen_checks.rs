//! What each check of a saved `FrozenLayer` costs, against an iteration of
//! the layer: `open` (the checksum), `open_unverified`, `verify` and
//! `verify_structure` (the walk that refuses forged files), in
//! alternating rounds in one process, with the file in the page cache.
//!
//! ```sh
//! cargo run --release -p memkv-bench --example frozen_checks                      # the 100k sample
//! cargo run --release -p memkv-bench --example frozen_checks -- --dataset data/debian-paths.txt
//! ```
//!
//! The layer is built from the dataset's distinct lines (values: line
//! numbers), saved to a temporary directory and mapped. Every check must
//! pass; one untimed iteration must yield each key with its value, and
//! the timed ones the same count, key bytes and sum of values.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use memkv::FrozenLayer;

mod common;

/// The costs of a layer's checks (see the source's header).
#[derive(Debug, Parser)]
struct Args {
    /// One key per line; the committed 100k sample if not given.
    #[arg(long)]
    dataset: Option<PathBuf>,
    /// Rounds of every check, alternating.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let data = common::dataset_bytes(args.dataset.as_deref())?;
    let entries = common::sorted_entries(&data);
    let layer = FrozenLayer::from_sorted_iter(entries.iter().copied())?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("layer.memkv");
    layer.save(&path)?;
    drop(layer);
    println!(
        "{} keys, {} bytes of layer",
        entries.len(),
        std::fs::metadata(&path)?.len()
    );

    let names = [
        "open",
        "open_unverified",
        "verify",
        "verify_structure",
        "iterate",
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); names.len()];
    let mapped = FrozenLayer::<u64>::open(&path)?;
    // Every entry, once, untimed; the timed iterations are checked by
    // their totals.
    let mut iter = mapped.iter();
    let mut wrong = 0usize;
    for (key, value) in &entries {
        wrong += usize::from(iter.next_entry() != Some((*key, *value)));
    }
    wrong += usize::from(iter.next_entry().is_some());
    if wrong > 0 {
        return Err(format!("iteration: {wrong} entries wrong or extra").into());
    }
    let totals = |entries: &mut dyn FnMut() -> Option<(usize, u64)>| {
        let (mut count, mut key_bytes, mut values) = (0usize, 0usize, 0u64);
        while let Some((key_len, value)) = entries() {
            count += 1;
            key_bytes += key_len;
            values = values.wrapping_add(value);
        }
        (count, key_bytes, values)
    };
    let mut expected = entries.iter();
    let expected = totals(&mut || expected.next().map(|(k, v)| (k.len(), *v)));
    for _ in 0..args.rounds {
        let start = Instant::now();
        let opened = FrozenLayer::<u64>::open(&path)?;
        times[0].push(start.elapsed());
        drop(opened);
        let start = Instant::now();
        let opened = FrozenLayer::<u64>::open_unverified(&path)?;
        times[1].push(start.elapsed());
        drop(opened);
        let start = Instant::now();
        mapped.verify()?;
        times[2].push(start.elapsed());
        let start = Instant::now();
        mapped.verify_structure()?;
        times[3].push(start.elapsed());
        let start = Instant::now();
        let mut iter = mapped.iter();
        let got = totals(&mut || iter.next_entry().map(|(k, v)| (k.len(), v)));
        times[4].push(start.elapsed());
        if got != expected {
            return Err(format!("iteration: {got:?} entries, key bytes and values").into());
        }
    }
    let median = |t: &mut Vec<Duration>| {
        t.sort();
        t[t.len() / 2]
    };
    let iterate = median(&mut times[4].clone());
    println!("| check | median of {} | range | ÷ iterate |", args.rounds);
    println!("|---|--:|--:|--:|");
    for (name, t) in names.iter().zip(&mut times) {
        let m = median(t);
        println!(
            "| `{name}` | {m:.2?} | {:.2?}–{:.2?} | {:.3} |",
            t[0],
            t[t.len() - 1],
            m.as_secs_f64() / iterate.as_secs_f64()
        );
    }
    Ok(())
}
