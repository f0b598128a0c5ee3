//! The steady mixed workload of issue 5, for `memkv::HybridMap` against
//! `memkv::FastArt` (and, for scale, `BTreeMap`):
//!
//! ```sh
//! cargo run --release -p memkv-bench --example hybrid_mixed                  # the embedded 100k sample
//! cargo run --release -p memkv-bench --example hybrid_mixed -- --dataset data/debian-paths.txt --ops 5000000
//! cargo run --release -p memkv-bench --example hybrid_mixed -- --key-ratio 0.05 --structures hybrid
//! ```
//!
//! 1. **Load**: the first 90% of the keys (dataset order) are inserted one by
//!    one; the hybrid map then freezes (merges everything), so the run starts
//!    from its steady state. The last 10% are keys the workload will add.
//! 2. **Run** `--ops` operations on keys drawn uniformly from the whole
//!    dataset (fixed seed): `--write-share` of them writes (9 in 10 an insert
//!    or update, 1 in 10 a remove, so that about 90% of the keys stay
//!    present), the rest lookups. The hybrid map merges in the background by
//!    its policy meanwhile (flags below). The workload uses no old value;
//!    with `--blind-writes` the hybrid map writes by `put` and `delete`,
//!    which do not look for one. The `len` at the end, which counts the
//!    blind writes not yet counted (the lookups they left out), is timed and
//!    charged to the writes, and checked against the keys written; the
//!    memory samples divide by the workload's own count of present keys, not
//!    by `len`, which would do that work outside the clock.
//!
//! Reported per structure: keys at the end; memory (jemalloc
//! `stats.allocated` minus the same before the load, so the dataset itself is
//! not counted) as bytes per present key, averaged over samples taken every
//! 10,000 operations, at its peak, and at the end; lookup and write
//! throughput (operations over the time spent in them by the workload
//! thread; each key's bytes are read before its operation's clock
//! starts); for the hybrid map also writes per second **charging the merge
//! thread's CPU time to the writes** (the honest "merges included" figure
//! on a machine whose cores are all busy), the merges run, their duration,
//! and lookup latency (mean, percentiles, and the lookups of 64 µs or more,
//! which waited for something else) split by whether a merge was
//! running (polled every 256 operations); the layers at the end and at the
//! memory peak.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use memkv::{FastArt, HybridConfig, HybridMap};

mod common;
use common::allocated;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The steady mixed workload of issue 5 (see the source's header).
#[derive(Debug, Parser)]
struct Args {
    /// One key per line (default: the embedded 100k Debian sample).
    #[arg(long)]
    dataset: Option<PathBuf>,
    /// Only the first N keys.
    #[arg(long)]
    limit: Option<usize>,
    /// Operations in the run.
    #[arg(long, default_value_t = 2_000_000)]
    ops: u64,
    /// Share of the operations that write.
    #[arg(long, default_value_t = 0.1)]
    write_share: f64,
    /// Structures: hybrid, fastart, btreemap.
    #[arg(long, value_delimiter = ',', default_value = "hybrid,fastart")]
    structures: Vec<String>,
    /// HybridConfig::key_ratio (default: the library's).
    #[arg(long)]
    key_ratio: Option<f64>,
    /// HybridConfig::min_delta_keys.
    #[arg(long)]
    min_delta_keys: Option<usize>,
    /// HybridConfig::byte_budget, in bytes.
    #[arg(long)]
    byte_budget: Option<usize>,
    /// HybridConfig::part_keys.
    #[arg(long)]
    part_keys: Option<usize>,
    /// The hybrid map's writes through the blind `put` and `delete` (the
    /// workload uses no old value) instead of `insert` and `remove`, which
    /// look the key up in the base for the old value they return.
    #[arg(long)]
    blind_writes: bool,
}

/// What the workload needs of a map.
trait Map {
    fn insert(&mut self, key: &[u8], value: u64);
    fn remove(&mut self, key: &[u8]);
    fn get(&self, key: &[u8]) -> Option<u64>;
    /// Exact: for the hybrid map this settles its blind writes (see
    /// `HybridMap::put`), the lookups they left out, so its time is charged
    /// to the writes.
    fn len(&self) -> usize;
    /// Whether a merge is running (hybrid only).
    fn merging(&self) -> bool {
        false
    }
    fn settle(&mut self) {}
}

/// The hybrid map, writing blind (`put`, `delete`) if `blind`.
struct Hybrid {
    map: HybridMap<u64>,
    blind: bool,
}

impl Map for Hybrid {
    fn insert(&mut self, key: &[u8], value: u64) {
        if self.blind {
            self.map.put(key, value);
        } else {
            self.map.insert(key, value);
        }
    }
    fn remove(&mut self, key: &[u8]) {
        if self.blind {
            self.map.delete(key);
        } else {
            self.map.remove(key);
        }
    }
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.map.get(key)
    }
    fn len(&self) -> usize {
        self.map.len()
    }
    fn merging(&self) -> bool {
        // One load, not a whole `stats`.
        self.map.is_merging()
    }
    fn settle(&mut self) {
        self.map.freeze().expect("freeze");
    }
}

impl Map for FastArt<u64> {
    fn insert(&mut self, key: &[u8], value: u64) {
        FastArt::insert(self, key, value);
    }
    fn remove(&mut self, key: &[u8]) {
        FastArt::remove(self, key);
    }
    fn get(&self, key: &[u8]) -> Option<u64> {
        FastArt::get(self, key).copied()
    }
    fn len(&self) -> usize {
        FastArt::len(self)
    }
}

impl Map for BTreeMap<Box<[u8]>, u64> {
    fn insert(&mut self, key: &[u8], value: u64) {
        BTreeMap::insert(self, key.into(), value);
    }
    fn remove(&mut self, key: &[u8]) {
        BTreeMap::remove(self, key);
    }
    fn get(&self, key: &[u8]) -> Option<u64> {
        BTreeMap::get(self, key).copied()
    }
    fn len(&self) -> usize {
        BTreeMap::len(self)
    }
}

/// CPU seconds of this process and of the calling thread, from /proc
/// (utime + stime, in clock ticks of 1/100 s).
fn cpu_seconds() -> (f64, f64) {
    (
        common::cpu_seconds("/proc/self/stat"),
        common::cpu_seconds("/proc/thread-self/stat"),
    )
}

struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

/// Lookup latencies in log2 buckets of nanoseconds.
#[derive(Default)]
struct Latency {
    buckets: [u64; 32],
    count: u64,
    total: Duration,
    max: Duration,
    /// Lookups of [`SLOW`] or more, and their time in all: stalls, not the
    /// lookups' own work.
    slow: u64,
    slow_total: Duration,
}

/// A lookup this long waited for something else (a page fault, a freed
/// layer's pages going back to the system, the scheduler).
const SLOW: Duration = Duration::from_micros(64);

impl Latency {
    fn record(&mut self, d: Duration) {
        let ns = d.as_nanos().max(1) as u64;
        self.buckets[(63 - ns.leading_zeros()) as usize] += 1;
        self.count += 1;
        self.total += d;
        self.max = self.max.max(d);
        if d >= SLOW {
            self.slow += 1;
            self.slow_total += d;
        }
    }
    /// The upper edge of the bucket holding quantile `q`.
    fn quantile(&self, q: f64) -> String {
        let target = (q * self.count as f64).ceil() as u64;
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= target && n > 0 {
                return format!("<{:?}", Duration::from_nanos(1 << (i + 1)));
            }
        }
        "-".into()
    }
    fn line(&self) -> String {
        if self.count == 0 {
            return "no lookups".into();
        }
        format!(
            "{} lookups: mean {:?} p50 {} p99 {} p99.9 {} max {:?}; {} of {SLOW:?} or more, {:.1?} in all",
            self.count,
            Duration::from_nanos((self.total.as_nanos() / u128::from(self.count)) as u64),
            self.quantile(0.5),
            self.quantile(0.99),
            self.quantile(0.999),
            self.max,
            self.slow,
            self.slow_total
        )
    }
}

/// Reads the first and last byte of `key`, which brings all of it into the
/// cache when it spans at most two lines (any key of up to 65 bytes: most).
fn touch(key: &[u8]) -> u8 {
    key.first().copied().unwrap_or(0) ^ key.last().copied().unwrap_or(0)
}

fn run<M: Map>(
    name: &str,
    mut map: M,
    keys: &[&[u8]],
    args: &Args,
    describe: impl Fn(&M) -> String,
) {
    let loaded = keys.len() * 9 / 10;
    // Which keys are in the map, and how many: the memory samples divide by
    // this, not by `len`, which would settle the hybrid map's blind writes
    // outside the clock. Allocated before the memory is first measured.
    let mut present: Vec<bool> = (0..keys.len()).map(|i| i < loaded).collect();
    let mut present_keys = loaded;
    let before = allocated();
    let started = Instant::now();
    for (i, key) in keys[..loaded].iter().enumerate() {
        map.insert(key, i as u64);
    }
    map.settle();
    let load_time = started.elapsed();
    let load_bytes = allocated().saturating_sub(before);
    println!(
        "{name}: loaded {loaded} keys in {load_time:.2?} ({:.0} keys/s); {:.1} B/key after the load",
        loaded as f64 / load_time.as_secs_f64(),
        load_bytes as f64 / map.len() as f64
    );

    let mut rng = SplitMix(0x6d656d6b76000005);
    let (mut gets, mut writes) = (0u64, 0u64);
    let (mut get_time, mut write_time) = (Duration::ZERO, Duration::ZERO);
    let (mut idle, mut merging) = (Latency::default(), Latency::default());
    let (mut samples, mut sum_per_key, mut peak_per_key) = (0u64, 0f64, 0f64);
    let mut in_merge = false;
    let mut peak_state = String::new();
    let cpu_before = cpu_seconds();
    let wall = Instant::now();
    let mut found = 0u64;
    for op in 0..args.ops {
        if op % 256 == 0 {
            in_merge = map.merging();
        }
        if op % 10_000 == 0 {
            let per_key = allocated().saturating_sub(before) as f64 / present_keys.max(1) as f64;
            samples += 1;
            sum_per_key += per_key;
            if per_key > peak_per_key {
                peak_per_key = per_key;
                // `describe` takes `stats`, which, just after a seal, may
                // count the merge's blind writes for it: charged to them.
                let t = Instant::now();
                peak_state = describe(&map);
                write_time += t.elapsed();
            }
        }
        let index = rng.below(keys.len());
        let key = keys[index];
        // Read the key before the clock starts, as a request brings its key
        // in cache: drawn from all over the dataset, it would otherwise cost
        // a cache miss inside every timed call, the same for each map.
        black_box(touch(key));
        if rng.chance(args.write_share) {
            let remove = rng.chance(0.1);
            let t = Instant::now();
            if remove {
                map.remove(key);
            } else {
                map.insert(key, op);
            }
            write_time += t.elapsed();
            writes += 1;
            if present[index] == remove {
                present[index] = !remove;
                present_keys = if remove {
                    present_keys - 1
                } else {
                    present_keys + 1
                };
            }
        } else {
            let t = Instant::now();
            let value = black_box(map.get(black_box(key)));
            let d = t.elapsed();
            get_time += d;
            gets += 1;
            found += u64::from(value.is_some());
            if in_merge { &mut merging } else { &mut idle }.record(d);
        }
    }
    // The blind writes' deferred lookups, settled: charged to the writes.
    let t = Instant::now();
    let len = map.len();
    let settle_time = t.elapsed();
    write_time += settle_time;
    let wall = wall.elapsed();
    let cpu_after = cpu_seconds();
    assert_eq!(len, present_keys, "{name}: len() against the keys written");
    let end_per_key = allocated().saturating_sub(before) as f64 / len.max(1) as f64;
    // CPU of every other thread (the merge thread) during the run.
    let other_cpu = ((cpu_after.0 - cpu_before.0) - (cpu_after.1 - cpu_before.1)).max(0.0);
    println!(
        "{name}: {} ops in {wall:.2?}; {len} keys at the end, as written ({found} of {gets} \
         lookups found); the last len() took {settle_time:.2?}",
        args.ops,
    );
    println!(
        "{name}: memory per key: mean {:.1} B, peak {:.1} B, end {:.1} B",
        sum_per_key / samples.max(1) as f64,
        peak_per_key,
        end_per_key
    );
    println!(
        "{name}: lookups {:.0}/s, writes {:.0}/s (workload thread's time); \
         other threads' CPU {other_cpu:.2} s → writes {:.0}/s with it charged to them",
        gets as f64 / get_time.as_secs_f64(),
        writes as f64 / write_time.as_secs_f64(),
        writes as f64 / (write_time.as_secs_f64() + other_cpu)
    );
    println!("{name}: latency with no merge running: {}", idle.line());
    println!("{name}: latency while a merge ran:    {}", merging.line());
    println!("{name}: at the end: {}", describe(&map));
    println!("{name}: at the peak: {peak_state}");
    println!();
}

fn main() {
    let args = Args::parse();
    let data = common::dataset_bytes(args.dataset.as_deref()).expect("reading the dataset");
    let mut keys = common::distinct_keys(&data);
    keys.truncate(args.limit.unwrap_or(usize::MAX));
    println!(
        "{} keys, {} ops, {:.0}% writes",
        keys.len(),
        args.ops,
        args.write_share * 100.0
    );
    for name in &args.structures {
        match name.as_str() {
            "hybrid" => {
                let mut config = HybridConfig::new();
                if let Some(r) = args.key_ratio {
                    config = config.key_ratio(r);
                }
                if let Some(n) = args.min_delta_keys {
                    config = config.min_delta_keys(n);
                }
                if let Some(keys) = args.part_keys {
                    config = config.part_keys(keys);
                }
                if let Some(b) = args.byte_budget {
                    config = config.byte_budget(b);
                }
                let writes = if args.blind_writes {
                    "put/delete"
                } else {
                    "insert/remove"
                };
                println!("hybrid: {config:?}, writes by {writes}");
                let map = Hybrid {
                    map: config.build::<u64>(),
                    blind: args.blind_writes,
                };
                run("hybrid", map, &keys, &args, |hybrid| {
                    let s = hybrid.map.stats();
                    format!(
                        "{} merges (last {:?} for {} keys), {} failed; base {} keys / {} B \
                         in {} parts, delta {} entries / {} B, building {} B",
                        s.merges,
                        s.last_merge_duration,
                        s.last_merge_keys,
                        s.failed_merges,
                        s.base_keys,
                        s.base_bytes,
                        s.base_parts,
                        s.delta_entries,
                        s.delta_bytes,
                        s.building_bytes
                    )
                })
            }
            "fastart" => run("fastart", FastArt::<u64>::new(), &keys, &args, |map| {
                format!("memory_usage {} B", map.memory_usage())
            }),
            "btreemap" => run("btreemap", BTreeMap::new(), &keys, &args, |_| String::new()),
            other => eprintln!("unknown structure {other:?}"),
        }
    }
}
