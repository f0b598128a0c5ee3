//! The measurements, run inside a child process for one structure.
//!
//! Order: the keys are loaded and the orders prepared first (not counted);
//! then memory and time of the build; then lookups in a shuffled order, a
//! full ordered iteration, prefix scans and range scans. Each read phase is
//! timed over a pass that only consumes the results, and checked by a
//! second, untimed pass against the sorted dataset, so the check's cost does
//! not blur the comparison (lookups are the exception: comparing the
//! returned value is part of the timed loop, it costs one compare).

use std::hint::black_box;
use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::dataset::{Dataset, LSM_VALUE_LEN, lsm_value};
use crate::record::Record;
use crate::rng::{SEED_LOOKUP, SplitMix64};
use crate::structures::{BuildInput, BuildOrder, InsertAnswers, Structure};

/// How many wrong results are described in a record.
const MAX_FAILURES: usize = 3;
/// Probe points for scans, evenly spread over the sorted keys.
pub(crate) const PROBES: usize = 8;
/// Keys per call of a batched lookup.
pub(crate) const LOOKUP_BATCH: usize = 1024;
/// Prefix scans: two prefix lengths per probe.
pub(crate) const PREFIX_SCANS: usize = 2 * PROBES;

/// The phase the child is in, for error messages (a panic's) and progress.
static PHASE: Mutex<&'static str> = Mutex::new("start");

/// Announces a phase: the parent reads these lines from the child's stderr
/// to show progress; the panic hook reads it to say where a panic happened.
pub(crate) fn phase(name: &'static str) {
    *PHASE.lock().unwrap_or_else(|e| e.into_inner()) = name;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}{name}", crate::child::PHASE_PREFIX);
}

/// The current phase.
pub(crate) fn current_phase() -> &'static str {
    *PHASE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A prefix scan: the prefix, and the run of the sorted keys it should
/// yield (`start..end` in `Prepared::sorted`).
type PrefixScan = (Vec<u8>, usize, usize);
/// A range scan `[lo, hi)`, and the run of the sorted keys it should yield.
type RangeScan = (Vec<u8>, Vec<u8>, usize, usize);

/// A dataset with the orders and probes every structure is measured with.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The keys and values.
    pub(crate) dataset: Dataset,
    /// `0..n`: the dataset order.
    dataset_order: Vec<u32>,
    /// Key indices sorted by key bytes.
    sorted: Vec<u32>,
    /// Key indices in a fixed-seed shuffle, for lookups.
    lookup_order: Vec<u32>,
    /// Prefix scans: the prefix and the range of `sorted` it should yield.
    prefixes: Vec<PrefixScan>,
    /// Range scans `[start, end)`, with the range of `sorted` they should
    /// yield.
    ranges: Vec<RangeScan>,
    /// Scans checked but not timed, whose bounds are not keys (see
    /// [`between_keys`]): prefixes, then ranges, as above.
    unkeyed_prefixes: Vec<PrefixScan>,
    unkeyed_ranges: Vec<RangeScan>,
    /// [`Dataset::fingerprint`].
    fingerprint: String,
    any_nul: bool,
}

impl Prepared {
    /// Sorts and shuffles the keys and picks the scans.
    pub(crate) fn new(dataset: Dataset) -> Self {
        let n = dataset.len();
        let keys = &dataset.keys;
        let dataset_order: Vec<u32> = (0..n as u32).collect();
        let mut sorted = dataset_order.clone();
        sorted.sort_unstable_by(|&a, &b| keys.get(a as usize).cmp(keys.get(b as usize)));
        let mut lookup_order = dataset_order.clone();
        SplitMix64::new(SEED_LOOKUP).shuffle(&mut lookup_order);

        let key_at = |pos: usize| keys.get(sorted[pos] as usize);
        let probes: Vec<usize> = (0..PROBES)
            .map(|j| (2 * j + 1) * n / (2 * PROBES))
            .collect();
        // Prefixes: a third and two thirds of each probe key, so that both
        // wide and narrow subtrees are scanned.
        let mut prefixes = Vec::new();
        for &pos in &probes {
            let key = key_at(pos);
            for len in [key.len() / 3, 2 * key.len() / 3] {
                let prefix = key[..len.max(1)].to_vec();
                let start = sorted.partition_point(|&i| keys.get(i as usize) < prefix.as_slice());
                let end = sorted.partition_point(|&i| {
                    let k = keys.get(i as usize);
                    k < prefix.as_slice() || k.starts_with(&prefix)
                });
                prefixes.push((prefix, start, end));
            }
        }
        // Ranges: from a probe key to the key 1% of the dataset further.
        let span = (n / 100).max(1);
        let ranges = probes
            .iter()
            .map(|&pos| {
                let end = (pos + span).min(n - 1);
                (key_at(pos).to_vec(), key_at(end).to_vec(), pos, end)
            })
            .collect();
        let (unkeyed_prefixes, unkeyed_ranges) = between_keys(&dataset, &sorted, &probes, span);
        let any_nul = keys.any_nul();
        let fingerprint = dataset.fingerprint();
        Prepared {
            dataset,
            dataset_order,
            sorted,
            lookup_order,
            prefixes,
            ranges,
            unkeyed_prefixes,
            unkeyed_ranges,
            fingerprint,
            any_nul,
        }
    }

    /// The fields every record of this dataset shares.
    pub(crate) fn base_record(&self, structure: &str) -> Record {
        Record {
            structure: structure.to_string(),
            dataset: self.dataset.name.clone(),
            keys: self.dataset.len() as u64,
            raw_key_bytes: self.dataset.keys.total_bytes() as u64,
            raw_value_bytes: self.dataset.raw_value_bytes() as u64,
            dataset_fingerprint: Some(self.fingerprint.clone()),
            protocol: crate::record::PROTOCOL,
            workload: "map".into(),
            runs: 1,
            ..Default::default()
        }
    }
}

/// Memory counters at one moment.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Snapshot {
    /// jemalloc `stats.allocated`.
    pub(crate) allocated: u64,
    /// This thread's bytes allocated minus bytes freed, over its lifetime.
    pub(crate) thread_net: i64,
    /// Resident set size, from /proc/self/statm.
    pub(crate) rss: Option<u64>,
}

impl Snapshot {
    /// Reads the counters now.
    pub(crate) fn take() -> Self {
        use tikv_jemalloc_ctl::{Access, AsName, epoch, stats, thread};
        // Blocks freed into a thread cache still count as allocated in
        // `stats.allocated`, and a build then reuses them without the
        // statistic moving. Disabling this thread's cache flushes it; it is
        // re-enabled at once.
        let tcache = b"thread.tcache.enabled\0".name();
        if tcache.write(false).is_ok() {
            let _ = tcache.write(true);
        }
        // jemalloc's statistics are cached; advancing the epoch refreshes them.
        let _ = epoch::advance();
        let allocated = stats::allocated::read().map_or(0, |x| x as u64);
        // Other threads' caches cannot be flushed from here: their bytes
        // (every arena's, 4096 = all) are taken off instead. A hybrid map's
        // merge thread, not yet gone when its build returned, held 1.0-1.3 MB
        // there in 3 of 20 runs on the sample, read as the map's.
        let cached: Result<usize, _> = b"stats.arenas.4096.tcache_bytes\0".name().read();
        let allocated = allocated.saturating_sub(cached.map_or(0, |x| x as u64));
        let thread_net = match (thread::allocatedp::read(), thread::deallocatedp::read()) {
            (Ok(a), Ok(d)) => a.get() as i64 - d.get() as i64,
            _ => 0,
        };
        Snapshot {
            allocated,
            thread_net,
            rss: rss_bytes(),
        }
    }
}

/// Resident set size: pages from /proc/self/statm times the page size.
fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page_size())
}

/// The page size, from the auxiliary vector's AT_PAGESZ (no libc call).
fn page_size() -> u64 {
    const AT_PAGESZ: u64 = 6;
    if let Ok(auxv) = std::fs::read("/proc/self/auxv") {
        for pair in auxv.chunks_exact(16) {
            let key = u64::from_ne_bytes(pair[..8].try_into().unwrap_or_default());
            if key == AT_PAGESZ {
                return u64::from_ne_bytes(pair[8..].try_into().unwrap_or_default());
            }
        }
    }
    4096
}

pub(crate) fn per_second(count: usize, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64().max(1e-9)
}

/// Scans whose bounds are not keys, around the probe keys `k`, with `e`
/// the key 1% further on. Probes take turns, so that the slowest peers'
/// checks grow by a third, not by two: the even ones the prefix `k` + 0x01
/// (usually matching nothing) and the range [`k` + 0x01, `e` shortened by
/// a byte), the odd ones the prefix of `k`'s first half + 0xFF (whose
/// successor carries into the byte before) and the range [`k` shortened,
/// `e` + 0x01). A bound that is a key is grown or shortened again until it
/// is not; a range whose bounds would cross is left out (some maps panic
/// on one). Each comes with the run of `sorted` it should yield.
fn between_keys(
    ds: &Dataset,
    sorted: &[u32],
    probes: &[usize],
    span: usize,
) -> (Vec<PrefixScan>, Vec<RangeScan>) {
    let key = |i: u32| ds.keys.get(i as usize);
    let below = |probe: &[u8]| keys_below(ds, sorted, probe);
    let known = |probe: &[u8]| is_key(ds, sorted, probe);
    let after = |k: &[u8]| {
        let mut out = k.to_vec();
        out.push(1);
        while known(&out) {
            out.push(1);
        }
        out
    };
    let before = |k: &[u8]| {
        let mut out = k.to_vec();
        loop {
            out.pop()?;
            if !known(&out) {
                return Some(out);
            }
        }
    };
    let n = sorted.len();
    let (mut prefixes, mut ranges) = (Vec::new(), Vec::new());
    for (j, &pos) in probes.iter().enumerate() {
        let (k, e) = (key(sorted[pos]), key(sorted[(pos + span).min(n - 1)]));
        let (prefix, lo, hi) = if j % 2 == 0 {
            let lo = after(k);
            (lo.clone(), Some(lo), before(e))
        } else {
            let half = [&k[..k.len() / 2], &[0xFF]].concat();
            (half, before(k), Some(after(e)))
        };
        let start = below(&prefix);
        let end = start + sorted[start..].partition_point(|&i| key(i).starts_with(&prefix));
        prefixes.push((prefix, start, end));
        if let (Some(lo), Some(hi)) = (lo, hi)
            && lo < hi
        {
            let (start, end) = (below(&lo), below(&hi));
            ranges.push((lo, hi, start, end));
        }
    }
    (prefixes, ranges)
}

/// Keys the map must not hold: every eighth key in sorted order with a
/// 0x01 byte appended, unless that is a key too.
fn absent_keys(p: &Prepared) -> Vec<Vec<u8>> {
    let ds = &p.dataset;
    (p.sorted.iter().step_by(8))
        .map(|&i| [ds.keys.get(i as usize), &[1]].concat())
        .filter(|probe| !is_key(ds, &p.sorted, probe))
        .collect()
}

/// How many keys of `ds` sort before `probe` (`sorted` orders them).
fn keys_below(ds: &Dataset, sorted: &[u32], probe: &[u8]) -> usize {
    sorted.partition_point(|&i| ds.keys.get(i as usize) < probe)
}

/// Whether `probe` is a key of `ds` (`sorted` orders them).
fn is_key(ds: &Dataset, sorted: &[u32], probe: &[u8]) -> bool {
    (sorted.get(keys_below(ds, sorted, probe))).is_some_and(|&i| ds.keys.get(i as usize) == probe)
}

/// Whether the answer `got` for `key`, which is not a key, was nothing;
/// else records it as a failure of `what`.
fn answered_absent(what: &str, key: &[u8], got: Option<u64>, rec: &mut Record) -> bool {
    let Some(got) = got else { return true };
    if rec.failures.len() < MAX_FAILURES {
        rec.failures.push(format!(
            "{what}: {} (not a key) returned {got}, expected nothing",
            show(key)
        ));
    }
    false
}

/// A key for a failure message: escaped, shortened.
fn show(key: &[u8]) -> String {
    let s = key.escape_ascii().to_string();
    if s.len() > 80 {
        format!("{}…", &s[..80])
    } else {
        s
    }
}

/// Compares a stream of entries with the expected run of sorted keys, as a
/// merge: an entry the stream skips is one mismatch ("missing"), an entry it
/// should not have yielded is one ("unexpected"), and so is a right key with
/// a wrong value, so one skipped entry doesn't turn the rest into mismatches.
struct Checker<'a> {
    what: String,
    prepared: &'a Prepared,
    expected: &'a [u32],
    pos: usize,
    mismatches: u64,
    failures: Vec<String>,
}

impl<'a> Checker<'a> {
    fn new(what: String, prepared: &'a Prepared, expected: &'a [u32]) -> Self {
        Checker {
            what,
            prepared,
            expected,
            pos: 0,
            mismatches: 0,
            failures: Vec::new(),
        }
    }

    fn fail(&mut self, msg: impl FnOnce() -> String) {
        self.mismatches += 1;
        if self.failures.len() < MAX_FAILURES {
            self.failures.push(format!("{}: {}", self.what, msg()));
        }
    }

    fn check(&mut self, key: &[u8], value: u64) {
        let ds = &self.prepared.dataset;
        while let Some(&i) = self.expected.get(self.pos) {
            let (want_key, want_value) = (ds.keys.get(i as usize), ds.values[i as usize]);
            match key.cmp(want_key) {
                std::cmp::Ordering::Equal => {
                    if value != want_value {
                        self.fail(|| format!("{} = {value}, expected {want_value}", show(key)));
                    }
                    self.pos += 1;
                    return;
                }
                std::cmp::Ordering::Greater => {
                    self.fail(|| {
                        format!("missing {} (next yielded: {})", show(want_key), show(key))
                    });
                    self.pos += 1;
                }
                std::cmp::Ordering::Less => break,
            }
        }
        let after = match self.pos.checked_sub(1).and_then(|p| self.expected.get(p)) {
            Some(&i) => format!("after {}", show(ds.keys.get(i as usize))),
            None => "before the first expected key".into(),
        };
        self.fail(|| format!("unexpected {} = {value} ({after})", show(key)));
    }

    /// Mismatches, counting the expected entries never yielded; and the
    /// failure descriptions.
    fn finish(mut self) -> (u64, Vec<String>) {
        if self.pos < self.expected.len() {
            let missing = (self.expected.len() - self.pos) as u64;
            let pos = self.pos;
            self.fail(|| format!("{missing} expected entries missing after {pos} matched"));
            self.mismatches += missing - 1;
        }
        (self.mismatches, self.failures)
    }
}

/// Folds an entry into a checksum that reads the key's last byte, so the
/// timed passes can't skip dereferencing the keys.
#[inline]
fn fold(acc: u64, key: &[u8], value: u64) -> u64 {
    acc.wrapping_mul(31) ^ value ^ key.len() as u64 ^ u64::from(key.last().copied().unwrap_or(0))
}

/// The `lsm` dataset's values in one out-of-line log (100 bytes per key),
/// so they are part of the memory total but identical for every structure.
fn value_log(ds: &Dataset) -> Vec<u8> {
    if ds.value_len == 0 {
        return Vec::new();
    }
    let mut log = vec![0u8; ds.raw_value_bytes()];
    let mut buf = [0u8; LSM_VALUE_LEN];
    for (chunk, &line) in log.chunks_exact_mut(LSM_VALUE_LEN).zip(&ds.values) {
        lsm_value(line, &mut buf);
        chunk.copy_from_slice(&buf);
    }
    log
}

/// Measures structure `S` on `p` into `rec`. A failed build ends with
/// `rec.error` set; a panic is caught by the caller, with `rec` holding the
/// phases measured before it.
pub(crate) fn run<S: Structure>(p: &Prepared, rec: &mut Record) {
    let ds = &p.dataset;
    let n = ds.len();
    // Every build reads its input front to back, as from a file: the
    // dataset as it is, or a copy laid out in sorted order (made before the
    // build, untimed and outside the memory measured), so that a sorted
    // build measures the builder and not a gather from all over the dataset.
    let mut sorted_copy = None;
    let input = match S::BUILD_ORDER {
        BuildOrder::Dataset => {
            rec.build_input = "dataset order".into();
            dataset_input(p)
        }
        BuildOrder::Sorted => {
            rec.build_input = "sorted (sort not timed)".into();
            let (keys, values) = sorted_copy.insert((
                ds.keys.gather(&p.sorted),
                p.sorted
                    .iter()
                    .map(|&i| ds.values[i as usize])
                    .collect::<Vec<_>>(),
            ));
            BuildInput {
                keys,
                values,
                order: &p.dataset_order,
                any_nul: p.any_nul,
                answers: InsertAnswers::default(),
            }
        }
    };

    phase("build");
    let before = Snapshot::take();
    let log = value_log(ds);
    let start = Instant::now();
    let built = S::build(&input);
    let elapsed = start.elapsed();
    let after = Snapshot::take();
    check_insert_answers(&input.answers, rec);
    // The sorted copy served the build only (`input`, which borrows it, is
    // not used again).
    drop(sorted_copy);
    let mut map = match built {
        Ok(map) => map,
        Err(e) => {
            rec.error = Some(e);
            return;
        }
    };
    let allocated = after.allocated.saturating_sub(before.allocated);
    rec.allocated_bytes = Some(allocated);
    rec.thread_allocated_bytes = Some(after.thread_net - before.thread_net);
    rec.rss_bytes = match (before.rss, after.rss) {
        (Some(b), Some(a)) => Some(a as i64 - b as i64),
        _ => None,
    };
    rec.bytes_per_key = Some(allocated as f64 / n as f64);
    let raw = (ds.keys.total_bytes() + ds.raw_value_bytes()) as f64;
    rec.overhead_per_key = Some((allocated as f64 - raw) / n as f64);
    rec.insert_ops_per_s = Some(per_second(n, elapsed));
    rec.self_reported_bytes = map.memory_usage().map(|x| x as u64);
    rec.notes.extend(map.notes());
    if let Some(len) = map.len() {
        rec.len_reported = Some(len as u64);
        if len != n {
            rec.failures
                .push(format!("len() = {len} after a build of {n} distinct keys"));
        }
    }

    phase("lookup");
    // The keys to look up and their values, copied in lookup order (untimed,
    // outside the memory measured), so that the timed loops read them front
    // to back, as a stream of requests brings them. Read from the dataset's
    // own store at random, each key cost two cache misses in turn (its
    // offset, then its bytes) before the lookup could start: the same time
    // for every structure, added to each, which pulled the ratios toward 1.
    let lookup_keys = ds.keys.gather(&p.lookup_order);
    let lookup_values: Vec<u64> = (p.lookup_order.iter())
        .map(|&i| ds.values[i as usize])
        .collect();
    let mut correct = 0u64;
    let mut wrong = Vec::new();
    let start = Instant::now();
    for (j, &value) in lookup_values.iter().enumerate() {
        if map.get(lookup_keys.get(j)) == Some(value) {
            correct += 1;
        } else if wrong.len() < MAX_FAILURES {
            wrong.push(p.lookup_order[j] as usize);
        }
    }
    let elapsed = start.elapsed();
    rec.lookup_ops_per_s = Some(per_second(n, elapsed));
    // Keys not in the map, untimed: every eighth key in sorted order with a
    // 0x01 byte appended (0x00 would end the key for C-string maps), where
    // that is not a key too. Each must be answered `None`: a map that
    // answers for a key it does not hold passes every timed lookup.
    let absent = absent_keys(p);
    let mut absent_correct = 0u64;
    for key in &absent {
        absent_correct += u64::from(answered_absent("lookup", key, map.get(key), rec));
    }
    rec.correct_lookups = Some(correct + absent_correct);
    rec.lookups = Some((n + absent.len()) as u64);
    for i in wrong {
        let got = map.get(ds.keys.get(i));
        rec.failures.push(format!(
            "lookup: {} returned {got:?}, expected {}",
            show(ds.keys.get(i)),
            ds.values[i]
        ));
    }

    if S::BATCHED {
        phase("lookup, batched");
        let mut correct = 0u64;
        let mut wrong = Vec::new();
        let mut keys = Vec::with_capacity(LOOKUP_BATCH);
        let mut values = Vec::with_capacity(LOOKUP_BATCH);
        let start = Instant::now();
        for (first, batch) in (0..n)
            .step_by(LOOKUP_BATCH)
            .zip(p.lookup_order.chunks(LOOKUP_BATCH))
        {
            keys.clear();
            keys.extend((first..first + batch.len()).map(|j| lookup_keys.get(j)));
            map.get_batch(&keys, &mut values);
            for ((got, want), &i) in values.iter().zip(&lookup_values[first..]).zip(batch) {
                if *got == Some(*want) {
                    correct += 1;
                } else if wrong.len() < MAX_FAILURES {
                    wrong.push((i as usize, *got));
                }
            }
        }
        let elapsed = start.elapsed();
        rec.batched_lookup_ops_per_s = Some(per_second(n, elapsed));
        // The absent keys too, untimed, a batch at a time.
        for batch in absent.chunks(LOOKUP_BATCH) {
            keys.clear();
            keys.extend(batch.iter().map(Vec::as_slice));
            map.get_batch(&keys, &mut values);
            for (&got, key) in values.iter().zip(batch) {
                correct += u64::from(answered_absent("batched lookup", key, got, rec));
            }
        }
        rec.correct_batched_lookups = Some(correct);
        for (i, got) in wrong {
            rec.failures.push(format!(
                "batched lookup: {} returned {got:?}, expected {}",
                show(ds.keys.get(i)),
                ds.values[i]
            ));
        }
    }
    drop((lookup_keys, lookup_values));

    if S::ORDERED {
        phase("iterate");
        let (mut acc, mut count) = (0u64, 0usize);
        let start = Instant::now();
        map.for_each(|k, v| {
            acc = fold(acc, k, v);
            count += 1;
        });
        let elapsed = start.elapsed();
        black_box(acc);
        rec.iter_keys_per_s = Some(per_second(count, elapsed));
        rec.iter_keys = Some(count as u64);
        rec.iter_mismatches = Some(check_in_order(&map, p, "iteration", rec));

        phase("scan");
        let (mut acc, mut count) = (0u64, 0usize);
        let start = Instant::now();
        for (prefix, _, _) in &p.prefixes {
            map.prefix(prefix, |k, v| {
                acc = fold(acc, k, v);
                count += 1;
            });
        }
        let prefix_time = start.elapsed();
        rec.prefix_keys_per_s = Some(per_second(count, prefix_time));
        rec.prefix_scans_per_s = Some(per_second(p.prefixes.len(), prefix_time));
        let (mut count, start) = (0usize, Instant::now());
        for (lo, hi, _, _) in &p.ranges {
            map.range(lo, hi, |k, v| {
                acc = fold(acc, k, v);
                count += 1;
            });
        }
        let range_time = start.elapsed();
        black_box(acc);
        rec.range_keys_per_s = Some(per_second(count, range_time));
        rec.range_scans_per_s = Some(per_second(p.ranges.len(), range_time));

        let (mut expected, mut mismatches) = (0u64, 0u64);
        for (prefix, lo, hi) in p.prefixes.iter().chain(&p.unkeyed_prefixes) {
            let mut check =
                Checker::new(format!("prefix {}", show(prefix)), p, &p.sorted[*lo..*hi]);
            map.prefix(prefix, |k, v| check.check(k, v));
            let (m, f) = check.finish();
            expected += (hi - lo) as u64;
            mismatches += m;
            rec.failures.extend(f);
        }
        for (start, end, lo, hi) in p.ranges.iter().chain(&p.unkeyed_ranges) {
            let what = format!("range [{}, {})", show(start), show(end));
            let mut check = Checker::new(what, p, &p.sorted[*lo..*hi]);
            map.range(start, end, |k, v| check.check(k, v));
            let (m, f) = check.finish();
            expected += (hi - lo) as u64;
            mismatches += m;
            rec.failures.extend(f);
        }
        rec.scan_keys = Some(expected);
        rec.scan_mismatches = Some(mismatches);
        rec.failures.truncate(3 * MAX_FAILURES);
    }
    if S::REPLACES {
        phase("replace");
        check_replace(&mut map, p, rec);
    }
    phase("drop");
    drop(map);
    if S::BATCHED_BUILD {
        batched_build::<S>(p, rec);
    }
    drop(log);
}

/// Takes the build's insert answers into `rec`: each insert was of a new
/// key, so an answer that the key was there is wrong.
fn check_insert_answers(answers: &InsertAnswers, rec: &mut Record) {
    let checked = answers.checked.get();
    let wrong = answers.wrong.get();
    if checked == 0 && wrong == 0 {
        return; // The structure's insert gives no answer.
    }
    rec.insert_answers = Some(checked);
    rec.wrong_insert_answers = Some(wrong);
    if let Some(key) = answers.first_wrong.borrow().as_deref() {
        rec.failures.push(format!(
            "insert: {wrong} of {checked} inserts of new keys answered that the key was there, first {}",
            show(key)
        ));
    }
}

/// Untimed, after every other check: sets every eighth key, in lookup
/// order, to a new value through the structure's insert. Each insert must
/// answer with the value it replaced, and then `get` must return the new
/// one, and `len` must not change.
fn check_replace<S: Structure>(map: &mut S, p: &Prepared, rec: &mut Record) {
    let ds = &p.dataset;
    let mut wrong = 0u64;
    let mut checked = 0u64;
    for &i in p.lookup_order.iter().step_by(8) {
        let (key, old) = (ds.keys.get(i as usize), ds.values[i as usize]);
        let new = !old;
        let answer = map.replace(key, new);
        let after = map.get(key);
        checked += 1;
        if answer != Some(old) || after != Some(new) {
            wrong += 1;
            if wrong <= MAX_FAILURES as u64 {
                rec.failures.push(format!(
                    "replace: {} answered {answer:?} (expected Some({old})), then get returned {after:?} (expected Some({new}))",
                    show(key)
                ));
            }
        }
    }
    if let Some(len) = map.len().filter(|&len| len != ds.len()) {
        rec.failures.push(format!(
            "len() = {len} after replacing values of {checked} keys of {}",
            ds.len()
        ));
    }
    *rec.insert_answers.get_or_insert(0) += checked;
    *rec.wrong_insert_answers.get_or_insert(0) += wrong;
}

/// Reads `map` in order against the sorted dataset: the mismatches, and
/// the first few described in `rec.failures`.
fn check_in_order<S: Structure>(map: &S, p: &Prepared, what: &str, rec: &mut Record) -> u64 {
    let mut check = Checker::new(what.into(), p, &p.sorted);
    map.for_each(|k, v| check.check(k, v));
    let (mismatches, failures) = check.finish();
    rec.failures.extend(failures);
    mismatches
}

/// The dataset's keys, to insert in dataset order.
fn dataset_input(p: &Prepared) -> BuildInput<'_> {
    BuildInput {
        keys: &p.dataset.keys,
        values: &p.dataset.values,
        order: &p.dataset_order,
        any_nul: p.any_nul,
        answers: InsertAnswers::default(),
    }
}

/// Builds `S` a second time through its batched insert, from the keys in
/// dataset order (random), and checks the map by reading it in order.
fn batched_build<S: Structure>(p: &Prepared, rec: &mut Record) {
    phase("build, batched");
    let ds = &p.dataset;
    let start = Instant::now();
    let built = S::build_batched(&dataset_input(p));
    let elapsed = start.elapsed();
    let map = match built {
        Ok(map) => map,
        Err(e) => {
            rec.failures.push(format!("batched build: {e}"));
            return;
        }
    };
    rec.batched_insert_ops_per_s = Some(per_second(ds.len(), elapsed));
    rec.batched_build_mismatches = Some(check_in_order(&map, p, "batched build", rec));
    phase("drop");
    drop(map);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{LoadOptions, Source, SyntheticKind, load};
    use crate::structures::REGISTRY;

    fn prepared(source: Source) -> Prepared {
        Prepared::new(
            load(
                &source,
                LoadOptions {
                    limit: Some(3000),
                    keep_cr: false,
                },
                &mut |_| {},
            )
            .unwrap(),
        )
    }

    /// The reference structures (std, hashbrown, crossbeam, fst: mature,
    /// widely used) pass every check on a slice of the sample and on keys
    /// with zero bytes, so a mismatch elsewhere is the structure's, not the
    /// harness's. Every other structure must at least run to the end.
    #[test]
    fn reference_structures_pass_every_check() {
        const REFERENCE: &[&str] = &["btreemap", "hashbrown", "skipmap", "fst"];
        for source in [
            Source::Sample,
            Source::Synthetic {
                kind: SyntheticKind::SeqU64,
                keys: 3000,
            },
            Source::Synthetic {
                kind: SyntheticKind::Lsm,
                keys: 500,
            },
        ] {
            let p = prepared(source);
            for entry in REGISTRY.iter().filter(|e| !e.hidden) {
                let mut rec = p.base_record(entry.name);
                (entry.run)(&p, &mut rec);
                if let Some(e) = &rec.error {
                    assert!(e.starts_with("not yet available"), "{}: {e}", entry.name);
                    continue;
                }
                // Tests run in parallel, so the global `stats.allocated` moves
                // with other tests; the per-thread counter doesn't.
                assert!(rec.thread_allocated_bytes.unwrap() > 0, "{}", entry.name);
                // Every key, and the keys made absent.
                let absent = absent_keys(&p).len();
                assert!(absent > p.dataset.len() / 9, "{absent} absent keys");
                assert_eq!(rec.lookups, Some((p.dataset.len() + absent) as u64));
                // An answer per insert of the build, and per key replaced,
                // each right, where the structure's insert gives them.
                let n = p.dataset.len();
                let answers = match entry.name {
                    "skipmap" | "vart" | "frozen" | "fst" => None,
                    "art-tree" => Some(n),
                    _ => Some(n + n.div_ceil(8)),
                };
                assert_eq!(
                    rec.insert_answers,
                    answers.map(|a| a as u64),
                    "{}",
                    entry.name
                );
                if answers.is_some() {
                    assert_eq!(rec.wrong_insert_answers, Some(0), "{}", entry.name);
                }
                if REFERENCE.contains(&entry.name) {
                    assert_eq!(
                        rec.checks_passed(),
                        Some(true),
                        "{}: {:?}",
                        entry.name,
                        rec.failures
                    );
                }
            }
        }
    }

    /// Absent keys are never keys, not even where a key followed by 0x01
    /// is one.
    #[test]
    fn absent_keys_are_not_keys() {
        let p = prepared(Source::Sample);
        let keys: std::collections::HashSet<&[u8]> = p.dataset.keys.iter().collect();
        let absent = absent_keys(&p);
        assert!(!absent.is_empty());
        assert!(absent.iter().all(|key| !keys.contains(key.as_slice())));
    }

    #[test]
    fn scans_expect_what_the_sorted_keys_say() {
        let p = prepared(Source::Sample);
        assert_eq!(p.prefixes.len(), PREFIX_SCANS);
        for (prefix, lo, hi) in &p.prefixes {
            assert!(
                lo < hi,
                "a probe key's own prefix matches at least the probe"
            );
            for &i in &p.sorted[*lo..*hi] {
                assert!(p.dataset.keys.get(i as usize).starts_with(prefix));
            }
        }
        for (start, end, lo, hi) in &p.ranges {
            assert_eq!(hi - lo, 30);
            assert!(start < end);
        }
    }

    /// Checks `p`'s unkeyed scans against a brute-force count over its
    /// keys; returns how many of the prefixes match keys, and how many
    /// keys each range holds.
    fn check_unkeyed_scans(p: &Prepared) -> (usize, Vec<usize>) {
        let keys: Vec<&[u8]> = p.dataset.keys.iter().collect();
        let is_key = |k: &[u8]| keys.contains(&k);
        let n = keys.len();
        assert_eq!(p.unkeyed_prefixes.len(), PROBES);
        let mut matching = 0;
        for (j, (prefix, lo, hi)) in p.unkeyed_prefixes.iter().enumerate() {
            let count = keys.iter().filter(|k| k.starts_with(prefix)).count();
            assert_eq!(hi - lo, count, "{}", prefix.escape_ascii());
            matching += usize::from(count > 0);
            // The probes take turns: key + 0x01 (grown until it is not a
            // key), then the key's first half + 0xFF.
            let probe = keys[p.sorted[(2 * j + 1) * n / (2 * PROBES)] as usize];
            let (stem, last) = prefix.split_at(prefix.len() - 1);
            if j % 2 == 0 {
                assert!(stem.starts_with(probe) && last == [1] && !is_key(prefix));
            } else {
                assert_eq!((stem, last), (&probe[..probe.len() / 2], &[0xFF][..]));
            }
        }
        let mut counts = Vec::new();
        for (start, end, lo, hi) in &p.unkeyed_ranges {
            assert!(start < end && !is_key(start) && !is_key(end));
            let count = (keys.iter())
                .filter(|k| start.as_slice() <= **k && **k < end.as_slice())
                .count();
            assert_eq!(hi - lo, count);
            counts.push(count);
        }
        (matching, counts)
    }

    #[test]
    fn unkeyed_scans_expect_what_a_brute_force_count_says() {
        let p = prepared(Source::Sample);
        let (_, ranges) = check_unkeyed_scans(&p);
        assert!(ranges.len() >= PROBES - 1, "{ranges:?}");
        // About the 1% of the keys from each probe on.
        let span = p.dataset.len() / 100;
        assert!(
            (ranges.iter()).all(|&n| span / 2 <= n && n <= 2 * span + 2),
            "{ranges:?}"
        );
    }

    /// Keys whose neighbours a bound must step around: each key `k` has
    /// `k` + 0x01 and `k` + 0x01 0x01 beside it, and `k` shortened by a
    /// byte is a key too; keys with 0xFF after the first half of others
    /// give the 0xFF prefixes something to match.
    #[test]
    fn unkeyed_bounds_step_around_keys() {
        let mut data = Vec::new();
        for i in 0..400 {
            let key = format!("key{i:04}");
            for tail in [&b""[..], b"\x01", b"\x01\x01"] {
                data.extend_from_slice(key.as_bytes());
                data.extend_from_slice(tail);
                data.push(b'\n');
            }
            data.extend_from_slice(format!("key{:03}\n", i / 10).as_bytes());
        }
        for stem in ["key", "key0"] {
            data.extend_from_slice(stem.as_bytes());
            data.extend_from_slice(b"\xffz\n");
        }
        let path = std::env::temp_dir().join(format!("memkv-bench-unkeyed-{}", std::process::id()));
        std::fs::write(&path, &data).unwrap();
        let loaded = load(
            &Source::File(path.clone()),
            LoadOptions::default(),
            &mut |_| {},
        );
        std::fs::remove_file(&path).ok();
        let p = Prepared::new(loaded.unwrap());
        let (matching, ranges) = check_unkeyed_scans(&p);
        assert!(
            matching >= PROBES / 2,
            "the 0xFF prefixes match keys: {matching}"
        );
        assert!(!ranges.is_empty());
    }

    #[test]
    fn checker_counts_wrong_missing_and_unexpected_entries() {
        let p = prepared(Source::Synthetic {
            kind: SyntheticKind::SeqU64,
            keys: 5,
        });
        let key = |i: usize| p.dataset.keys.get(i);
        let check = |expected: &[u32], stream: &[(usize, u64)]| {
            let mut c = Checker::new("t".into(), &p, expected);
            for &(k, v) in stream {
                c.check(key(k), v);
            }
            c.finish()
        };
        // Keys 0..5 have values 1..=5 (seq-u64 is already sorted).
        let all = &p.sorted[..];
        assert_eq!(check(all, &[(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]).0, 0);
        assert_eq!(
            check(all, &[(0, 1), (1, 99), (2, 3), (3, 4), (4, 5)]).0,
            1,
            "wrong value"
        );
        assert_eq!(
            check(all, &[(0, 1), (2, 3), (3, 4), (4, 5)]).0,
            1,
            "one skipped"
        );
        assert_eq!(
            check(all, &[(0, 1), (1, 2)]).0,
            3,
            "three missing at the end"
        );
        assert_eq!(
            check(&all[2..4], &[(0, 1), (1, 2), (2, 3), (3, 4)]).0,
            2,
            "two before the range"
        );
        assert_eq!(
            check(&all[..2], &[(0, 1), (1, 2), (2, 3)]).0,
            1,
            "one after the range"
        );
        let (_, failures) = check(&all[..2], &[(1, 2), (0, 1)]);
        assert_eq!(failures.len(), 2, "{failures:?}");
    }
}
