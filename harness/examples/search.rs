//! Automaton searches (`search`) over every structure that has one: the
//! frozen layer and the fst crate's map walk their fsts, asking the
//! automaton at each node (the frozen layer after each chain of
//! one-transition nodes, the fst crate at each byte); `FastArt` and
//! `HybridMap` feed it their keys in order and seek past the prefixes it
//! cannot match; `BTreeMap`, which has no such query, feeds it every key
//! (what a user of it would write), stopping at the first byte after which
//! it cannot match.
//!
//! ```sh
//! cargo run --release -p memkv-bench --example search                     # the embedded 100k sample
//! cargo run --release -p memkv-bench --example search -- --dataset data/debian-paths.txt
//! ```
//!
//! All structures hold the dataset's distinct keys valued with their line
//! numbers; the hybrid map is merged and then has every 16th key written
//! again (value + 1) into its delta, so that its searches merge two layers.
//! The structures run each query in alternating rounds in one process;
//! every answer's count and a digest of its keys and values are checked
//! against a run of the automaton over every key.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use fst::{IntoStreamer, Streamer};
use memkv::frozen::automaton::{Automaton, Str, Subsequence};
use memkv::{FastArt, FrozenLayer, HybridMap};

mod common;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Automaton searches in alternating rounds (see the source's header).
#[derive(Debug, Parser)]
struct Args {
    /// One key per line (default: the embedded 100k Debian sample).
    #[arg(long)]
    dataset: Option<PathBuf>,
    /// Rounds of each structure, alternating.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// Build the `FastArt` by inserting the keys one at a time in the
    /// dataset's (shuffled) order, as the main harness does, rather than
    /// from the sorted keys: its leaves then lie scattered.
    #[arg(long)]
    as_inserted: bool,
}

const NAMES: [&str; 5] = ["fastart", "frozen", "hybrid", "btreemap", "fst"];
#[cfg(not(feature = "levenshtein"))]
const QUERIES: &[&str] = &[
    "prefix usr/share/doc/",
    "usr/lib/ ∩ subsequence python3",
    "etc/ ∪ bin/ ∪ sbin/",
    "subsequence gtk4doc",
];
/// With the `levenshtein` feature, two edit-distance queries too (their
/// automata are built once, outside the timed rounds).
#[cfg(feature = "levenshtein")]
const QUERIES: &[&str] = &[
    "prefix usr/share/doc/",
    "usr/lib/ ∩ subsequence python3",
    "etc/ ∪ bin/ ∪ sbin/",
    "subsequence gtk4doc",
    "within 1 of usr/share/doc/hasktags/copyright",
    "within 2 of usr/bin/clang",
];

/// The structures searched, built from the same entries.
struct Maps {
    fastart: FastArt<u64>,
    frozen: FrozenLayer<u64>,
    hybrid: HybridMap<u64>,
    btree: BTreeMap<Box<[u8]>, u64>,
    fst: fst::Map<Vec<u8>>,
}

/// Runs query `q` through `f`, with its automaton (each a different type).
macro_rules! with_query {
    ($q:expr, $f:expr) => {
        match $q {
            0 => $f(Str::new("usr/share/doc/").starts_with()),
            1 => $f(Str::new("usr/lib/")
                .starts_with()
                .intersection(Subsequence::new("python3"))),
            2 => $f(Str::new("etc/")
                .starts_with()
                .union(Str::new("bin/").starts_with())
                .union(Str::new("sbin/").starts_with())),
            3 => $f(Subsequence::new("gtk4doc")),
            #[cfg(feature = "levenshtein")]
            4 => $f(&*levenshtein::NEAR_README),
            #[cfg(feature = "levenshtein")]
            5 => $f(&*levenshtein::NEAR_PYTHON),
            _ => unreachable!("no query {}", $q),
        }
    };
}

/// The edit-distance automata, built once (each takes milliseconds).
#[cfg(feature = "levenshtein")]
mod levenshtein {
    use std::sync::LazyLock;

    use memkv::frozen::automaton::Levenshtein;

    pub(crate) static NEAR_README: LazyLock<Levenshtein> = LazyLock::new(|| {
        Levenshtein::new("usr/share/doc/hasktags/copyright", 1).expect("a small automaton")
    });
    pub(crate) static NEAR_PYTHON: LazyLock<Levenshtein> =
        LazyLock::new(|| Levenshtein::new("usr/bin/clang", 2).expect("a small automaton"));
}

/// One search of `structure` with `automaton`, every entry digested.
fn run<A: Automaton>(maps: &Maps, structure: usize, automaton: A) -> Digest {
    let mut digest = Digest::default();
    match structure {
        0 => {
            let mut found = maps.fastart.search(automaton);
            while let Some((key, &value)) = found.next_entry() {
                digest.add(key, value);
            }
        }
        1 => {
            let mut found = maps.frozen.search(automaton);
            while let Some((key, value)) = found.next_entry() {
                digest.add(key, value);
            }
        }
        2 => {
            let mut found = maps.hybrid.search(automaton);
            while let Some((key, value)) = found.next_entry() {
                digest.add(key, value);
            }
        }
        3 => {
            for (key, &value) in &maps.btree {
                if accepts(&automaton, key) {
                    digest.add(key, value);
                }
            }
        }
        _ => {
            let mut found = maps.fst.search(automaton).into_stream();
            while let Some((key, value)) = found.next() {
                digest.add(key, value);
            }
        }
    }
    digest
}

/// Whether `automaton` accepts `key`, fed byte by byte.
fn accepts(automaton: &impl Automaton, key: &[u8]) -> bool {
    let mut state = automaton.start();
    for &byte in key {
        if !automaton.can_match(&state) {
            return false;
        }
        state = automaton.accept(&state, byte);
    }
    automaton.is_match(&state)
}

/// A count of entries and a digest of their keys' lengths and values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Digest {
    entries: u64,
    sum: u64,
}

impl Digest {
    fn add(&mut self, key: &[u8], value: u64) {
        self.entries += 1;
        self.sum = self
            .sum
            .wrapping_mul(31)
            .wrapping_add(value ^ key.len() as u64);
    }
}

fn main() {
    let args = Args::parse();
    let data = common::dataset_bytes(args.dataset.as_deref()).expect("reading the dataset");
    let entries = common::sorted_entries(&data);
    assert!(!entries.is_empty(), "the dataset has no keys");
    // The hybrid map's values: every 16th key's written again, plus one.
    let hybrid_value = |line: u64| line + u64::from(line.is_multiple_of(16));

    let hybrid: HybridMap<u64> = entries.iter().copied().collect();
    hybrid.freeze().expect("the merge");
    for &(key, line) in &entries {
        if line.is_multiple_of(16) {
            hybrid.insert(key, line + 1);
        }
    }
    let maps = Maps {
        fastart: match args.as_inserted {
            true => {
                let mut map = FastArt::new();
                for (key, line) in common::distinct_keys(&data).into_iter().zip(0..) {
                    map.insert(key, line);
                }
                map
            }
            false => entries.iter().copied().collect(),
        },
        frozen: FrozenLayer::from_sorted_iter(entries.iter().copied()).expect("sorted, distinct"),
        hybrid,
        btree: entries.iter().map(|&(k, v)| (k.into(), v)).collect(),
        fst: fst::Map::from_iter(entries.iter().copied()).expect("sorted, distinct"),
    };
    println!("{} keys", entries.len());

    // What each query must find, by the automaton over every key.
    let expected: Vec<[Digest; 2]> = (0..QUERIES.len())
        .map(|q| {
            let expect = |automaton: &dyn Fn(&[u8]) -> bool| {
                let (mut plain, mut hybrid) = (Digest::default(), Digest::default());
                for &(key, line) in &entries {
                    if automaton(key) {
                        plain.add(key, line);
                        hybrid.add(key, hybrid_value(line));
                    }
                }
                [plain, hybrid]
            };
            with_query!(q, |a| expect(&|key: &[u8]| accepts(&a, key)))
        })
        .collect();

    // ns per query, [query][structure][round].
    let mut times = vec![vec![Vec::new(); NAMES.len()]; QUERIES.len()];
    for round in 0..args.rounds {
        for (q, name) in QUERIES.iter().enumerate() {
            let mut line = Vec::new();
            for (structure, structure_name) in NAMES.iter().enumerate() {
                let start = Instant::now();
                let digest = with_query!(q, |a| run(&maps, structure, a));
                let ns = start.elapsed().as_nanos() as f64;
                let want = expected[q][usize::from(structure == 2)];
                assert_eq!(
                    black_box(digest),
                    want,
                    "{structure_name}: {name}: another answer"
                );
                times[q][structure].push(ns);
                line.push(format!("{structure_name} {:.1}", ns / 1e6));
            }
            println!("round {round}, {name} (ms): {}", line.join(", "));
        }
    }
    let median = |values: &[f64]| {
        let mut values = values.to_vec();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    println!(
        "medians over {} rounds, every entry checked (count and digest of keys and values); ms a query and, in brackets, the speed against the frozen layer's:",
        args.rounds
    );
    println!("| query | entries | {} |", NAMES.join(" | "));
    println!("|---|--:|{}", "--:|".repeat(NAMES.len()));
    for (q, name) in QUERIES.iter().enumerate() {
        let cells: Vec<String> = (0..NAMES.len())
            .map(|s| {
                let ratios: Vec<f64> = (0..args.rounds as usize)
                    .map(|r| times[q][1][r] / times[q][s][r])
                    .collect();
                format!(
                    "{:.1} ({:.2}×)",
                    median(&times[q][s]) / 1e6,
                    median(&ratios)
                )
            })
            .collect();
        println!(
            "| {name} | {} | {} |",
            expected[q][0].entries,
            cells.join(" | ")
        );
    }
}
