//! Set operations over frozen layers, against the fst crate's: the union,
//! intersection, difference and symmetric difference of two large layers
//! that share a third of their keys, the intersection and difference of a
//! small layer with a large one, where memkv's streams seek past what the
//! small one lacks, and of a search (the keys of one large layer with the
//! subsequence `python3`) with the other large layer.
//!
//! ```sh
//! cargo run --release -p memkv-bench --example frozen_ops                     # the embedded 100k sample
//! cargo run --release -p memkv-bench --example frozen_ops -- --dataset data/debian-paths.txt
//! ```
//!
//! Layers, from the dataset's distinct keys, each valued with its line
//! number (differently per layer, so that a value from the wrong layer
//! shows): `a` and `b` hold the keys whose hashes put them in 6 of 10
//! (each its own hash: they share 36% of the keys), `small` one key in
//! 1,000. Both libraries build the same layers (memkv's `FrozenLayer`, the
//! fst crate's `Map` with the values as outputs) and run each operation in
//! alternating rounds in one process, reading every entry the operation
//! yields through its lending interface. Each result's count and a digest
//! of its keys and values are checked against what the operation must
//! yield, computed from the hashes.

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use fst::Streamer;
use memkv::FrozenLayer;
use memkv::frozen::automaton::Subsequence;

mod common;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Set operations in alternating rounds (see the source's header).
#[derive(Debug, Parser)]
struct Args {
    /// One key per line (default: the embedded 100k Debian sample).
    #[arg(long)]
    dataset: Option<PathBuf>,
    /// Rounds of each library, alternating.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
}

/// What an operation's two streams are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Inputs {
    AB,
    SmallA,
    /// `a`'s keys with the subsequence [`SUBSEQUENCE`] (a search), and `b`.
    SearchB,
}

/// The subsequence of the [`Inputs::SearchB`] operations.
const SUBSEQUENCE: &str = "python3";

/// An operation: its name, its streams, and whether it yields a key, given
/// which of the two streams hold it.
type Op = (&'static str, Inputs, fn(bool, bool) -> bool);

/// The operations, in the order of a round.
const OPS: [Op; 8] = [
    ("a ∪ b", Inputs::AB, |a, b| a || b),
    ("a ∩ b", Inputs::AB, |a, b| a && b),
    ("a − b", Inputs::AB, |a, b| a && !b),
    ("a △ b", Inputs::AB, |a, b| a != b),
    ("small ∩ a", Inputs::SmallA, |small, a| small && a),
    ("small − a", Inputs::SmallA, |small, a| small && !a),
    ("a[python3] ∩ b", Inputs::SearchB, |a, b| a && b),
    ("a[python3] − b", Inputs::SearchB, |a, b| a && !b),
];

/// Whether `key` holds the bytes of `needle` in order.
fn has_subsequence(key: &[u8], needle: &[u8]) -> bool {
    let mut rest = needle;
    for &byte in key {
        match rest.split_first() {
            Some((&first, tail)) if first == byte => rest = tail,
            Some(_) => {}
            None => break,
        }
    }
    rest.is_empty()
}

/// What an operation yielded: entries, and a digest of their keys' lengths
/// and of each value with its stream's position.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Digest {
    entries: u64,
    sum: u64,
}

impl Digest {
    fn add(&mut self, key: &[u8], values: impl Iterator<Item = (usize, u64)>) {
        self.entries += 1;
        self.sum = self.sum.wrapping_add(key.len() as u64);
        for (index, value) in values {
            self.sum = (self.sum.wrapping_mul(31)).wrapping_add(value ^ (index as u64) << 40);
        }
    }
}

/// Which layers hold a key, by hashes of its bytes.
struct Membership(BuildHasherDefault<DefaultHasher>);

impl Membership {
    fn in_a(&self, key: &[u8]) -> bool {
        self.0.hash_one((1u8, key)) % 10 < 6
    }
    fn in_b(&self, key: &[u8]) -> bool {
        self.0.hash_one((2u8, key)) % 10 < 6
    }
    fn in_small(&self, key: &[u8]) -> bool {
        self.0.hash_one((3u8, key)).is_multiple_of(1000)
    }
}

/// Each layer's value for a key: its line number, made distinct per layer.
fn value(layer: u64, line: u64) -> u64 {
    line ^ (layer << 32)
}

fn main() {
    let args = Args::parse();
    let data = common::dataset_bytes(args.dataset.as_deref()).expect("reading the dataset");
    let entries = common::sorted_entries(&data);
    assert!(!entries.is_empty(), "the dataset has no keys");
    let member = Membership(BuildHasherDefault::default());
    let layer_of = |which: u64, keep: &dyn Fn(&[u8]) -> bool| {
        let kept = entries.iter().filter(|(key, _)| keep(key));
        let pairs: Vec<(&[u8], u64)> = kept.map(|&(key, line)| (key, value(which, line))).collect();
        let frozen =
            FrozenLayer::from_sorted_iter(pairs.iter().copied()).expect("sorted, distinct");
        let fst = fst::Map::from_iter(pairs.iter().copied()).expect("sorted, distinct");
        (frozen, fst)
    };
    let (a, fst_a) = layer_of(0, &|key| member.in_a(key));
    let (b, fst_b) = layer_of(1, &|key| member.in_b(key));
    let (small, fst_small) = layer_of(2, &|key| member.in_small(key));
    println!(
        "{} keys: a {}, b {}, small {}; memkv layers {} + {} + {} B, the fst crate's maps {} + {} + {} B",
        entries.len(),
        a.len(),
        b.len(),
        small.len(),
        a.as_bytes().len(),
        b.as_bytes().len(),
        small.as_bytes().len(),
        fst_a.as_fst().size(),
        fst_b.as_fst().size(),
        fst_small.as_fst().size(),
    );

    // What each operation must yield, from the hashes.
    let expected: Vec<Digest> = OPS
        .iter()
        .map(|&(_, inputs, keeps)| {
            let mut digest = Digest::default();
            for &(key, line) in &entries {
                let (first, second) = match inputs {
                    Inputs::AB => (member.in_a(key), member.in_b(key)),
                    Inputs::SmallA => (member.in_small(key), member.in_a(key)),
                    Inputs::SearchB => (
                        member.in_a(key) && has_subsequence(key, SUBSEQUENCE.as_bytes()),
                        member.in_b(key),
                    ),
                };
                if !keeps(first, second) {
                    continue;
                }
                let layers: [u64; 2] = match inputs {
                    Inputs::SmallA => [2, 0],
                    Inputs::AB | Inputs::SearchB => [0, 1],
                };
                // Every stream holding a kept key gives its value (for the
                // differences, only the first holds one).
                let held = [first, second];
                let values = (0..2)
                    .filter(|&i| held[i])
                    .map(|i| (i, value(layers[i], line)));
                digest.add(key, values);
            }
            digest
        })
        .collect();

    let run_memkv = |op: usize| {
        let builder = match OPS[op].1 {
            Inputs::AB => a.op().add(&b),
            Inputs::SmallA => small.op().add(&a),
            Inputs::SearchB => memkv::frozen::OpBuilder::new()
                .add_search(a.search(Subsequence::new(SUBSEQUENCE)))
                .add(&b),
        };
        let mut digest = Digest::default();
        macro_rules! drain {
            ($stream:expr) => {{
                let mut stream = $stream;
                while let Some((key, values)) = stream.next_entry() {
                    digest.add(key, values.iter().map(|v| (v.index, v.value)));
                }
            }};
        }
        match op {
            0 => drain!(builder.union()),
            1 | 4 | 6 => drain!(builder.intersection()),
            2 | 5 | 7 => drain!(builder.difference()),
            _ => drain!(builder.symmetric_difference()),
        }
        digest
    };
    let run_fst = |op: usize| {
        let builder = match OPS[op].1 {
            Inputs::AB => fst_a.op().add(&fst_b),
            Inputs::SmallA => fst_small.op().add(&fst_a),
            Inputs::SearchB => fst::map::OpBuilder::new()
                .add(fst_a.search(Subsequence::new(SUBSEQUENCE)))
                .add(&fst_b),
        };
        let mut digest = Digest::default();
        macro_rules! drain {
            ($stream:expr) => {{
                let mut stream = $stream;
                while let Some((key, values)) = stream.next() {
                    // The fst crate gives a key's values in the order its
                    // heap met them; sort them by stream as memkv gives them.
                    let mut values: Vec<(usize, u64)> =
                        values.iter().map(|v| (v.index, v.value)).collect();
                    values.sort_unstable();
                    digest.add(key, values.into_iter());
                }
            }};
        }
        match op {
            0 => drain!(builder.union()),
            1 | 4 | 6 => drain!(builder.intersection()),
            2 | 5 | 7 => drain!(builder.difference()),
            _ => drain!(builder.symmetric_difference()),
        }
        digest
    };

    // ns per operation, [op][library][round].
    let mut times = vec![[Vec::new(), Vec::new()]; OPS.len()];
    for round in 0..args.rounds {
        let mut line = Vec::new();
        for (op, &(name, _, _)) in OPS.iter().enumerate() {
            for library in 0..2 {
                let start = Instant::now();
                let digest = if library == 0 {
                    run_memkv(op)
                } else {
                    run_fst(op)
                };
                let ns = start.elapsed().as_nanos() as f64;
                let library_name = ["memkv", "fst"][library];
                assert_eq!(
                    black_box(digest),
                    expected[op],
                    "{library_name}: {name} yielded something else"
                );
                times[op][library].push(ns);
            }
            line.push(format!(
                "{name} {:.1}/{:.1} ms",
                times[op][0][round as usize] / 1e6,
                times[op][1][round as usize] / 1e6
            ));
        }
        println!("round {round} (memkv/fst): {}", line.join(", "));
    }
    println!(
        "medians over {} rounds, every entry checked (count and digest of keys and values):",
        args.rounds
    );
    println!("| operation | entries | memkv | fst crate | memkv's speed, × the fst crate's |");
    println!("|---|--:|--:|--:|--:|");
    let median = |values: &[f64]| {
        let mut values = values.to_vec();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    for (op, &(name, _, _)) in OPS.iter().enumerate() {
        let ratios: Vec<f64> = (0..args.rounds as usize)
            .map(|r| times[op][1][r] / times[op][0][r])
            .collect();
        println!(
            "| {name} | {} | {:.1} ms | {:.1} ms | {:.2}× |",
            expected[op].entries,
            median(&times[op][0]) / 1e6,
            median(&times[op][1]) / 1e6,
            median(&ratios)
        );
    }
}
