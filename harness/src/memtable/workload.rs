//! The memtable workload, run inside a child process for one implementation
//! and one insert order.
//!
//! 1. **load**: every entry `put` through a [`WritePath`] with the default
//!    options (64 MiB memtables, two at most, one flusher thread writing run
//!    files to a temporary directory; with `--inline-flush`, none: each put
//!    that fills a memtable writes its run), timed until the last put returns;
//!    then keys are read back through the write path (untimed: every key,
//!    up to 100,000; 20,000 for `memtable-vec`) and the flusher is waited for. Then the same again through
//!    `write_batch`, [`WRITE_BATCH`] entries per batch, into a fresh
//!    directory.
//! 2. **build**: one memtable takes every entry directly (no write path, no
//!    freeze at 64 MiB), measuring jemalloc's `stats.allocated` before and
//!    after: the memory of a memtable of the size under test.
//! 3. **lookup**: every key in a shuffled order, each value compared with
//!    the expected bytes inside the timed loop.
//! 4. **flush**: `freeze()`, timed, then one timed pass of the frozen
//!    memtable's cursor reading each entry's key, sequence number and the
//!    first and last byte of its value (what a flush's writer touches),
//!    then an untimed pass checked against the sorted keys and values.
//! 5. **concurrent**: a new memtable, one thread inserting every entry while
//!    this thread looks up random keys already inserted, checking each value,
//!    until the writer is done: both rates.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use memkv::memtable::{
    EntryCursor, EntryRef, Lookup, MAX_SEQNO, Memtable, MemtableRead, ValueKind, WritePath,
    WritePathOptions,
};

use super::Order;
use super::record::MemtableRecord;
use crate::dataset::{Dataset, Keys, LSM_VALUE_LEN, lsm_value};
use crate::measure::{Snapshot, per_second, phase};
use crate::rng::{SEED_LOOKUP, SplitMix64};

/// Wrong results described per record.
const MAX_FAILURES: usize = 3;
/// The table id of the `counter` order's keys.
const COUNTER_TABLE: u32 = 1;
/// Keys read back through the write path after a load, at most: every key
/// of the default 100,000, spread over the rest. A key in the oldest of a
/// few run files costs a read of each (some microseconds apiece), so three
/// million would take most of a minute per load.
const WRITE_PATH_READS: usize = 100_000;
/// The same for a memtable whose active reads scan every entry
/// ([`Subject::ACTIVE_READS`] false): 100,000 of them over 100,000 entries
/// took a minute.
const SCANNING_WRITE_PATH_READS: usize = 20_000;
/// Entries per `insert_batch` call in the batched build: a write batch.
pub(crate) const WRITE_BATCH: usize = 64;

/// What the harness needs to know about an implementation beyond the trait.
pub(crate) trait Subject: Memtable + 'static {
    /// Whether reads of the *active* memtable are fast enough to measure
    /// (else lookups run against the frozen memtable, and the
    /// one-writer-one-reader phase is skipped).
    const ACTIVE_READS: bool = true;
}

impl Subject for memkv::SkipListMemtable {}
impl Subject for memkv::ArtMemtable {}
impl Subject for memkv::ShardedArtMemtable {}
impl Subject for memkv::VecMemtable {
    const ACTIVE_READS: bool = false;
}

/// The entries and the orders they are used in. Entry `i` is the `i`th
/// inserted: keys and values are laid out in insert order, so that reading
/// them costs the same in both orders.
#[derive(Debug)]
pub(crate) struct Workload {
    /// Entry `i`'s key is `keys.get(i)`.
    keys: Keys,
    /// `values[i * LSM_VALUE_LEN..][..LSM_VALUE_LEN]` is entry `i`'s value.
    values: Vec<u8>,
    /// Entry indices sorted by key.
    sorted: Vec<u32>,
    /// Entry indices in a fixed-seed shuffle.
    lookup: Vec<u32>,
}

impl Workload {
    /// The `lsm` synthetic keys (16 bytes: a 4-byte table id out of 16, then
    /// 12 random bytes) with their 100-byte values, inserted in generation
    /// order (`random`) or sorted (`sequential`); or, for `counter`, the
    /// same values under counter keys of one table, in order.
    pub(crate) fn new(dataset: Dataset, order: Order) -> Self {
        let n = dataset.len();
        let ds_keys = &dataset.keys;
        let by_key = || {
            let mut by_key: Vec<u32> = (0..n as u32).collect();
            by_key.sort_unstable_by(|&a, &b| ds_keys.get(a as usize).cmp(ds_keys.get(b as usize)));
            by_key
        };
        let in_order = || (0..n as u32).collect::<Vec<u32>>();
        // Dataset entries in insert order, and entries (by insert order) in
        // key order.
        let (insert, sorted) = match order {
            Order::Random => (in_order(), by_key()),
            Order::Sequential => (by_key(), in_order()),
            Order::Counter => (in_order(), in_order()),
        };
        let keys = match order {
            Order::Counter => Keys::counters(n, COUNTER_TABLE),
            Order::Random | Order::Sequential => ds_keys.gather(&insert),
        };
        let mut values = vec![0u8; n * LSM_VALUE_LEN];
        let mut buf = [0u8; LSM_VALUE_LEN];
        for (&d, chunk) in insert.iter().zip(values.chunks_exact_mut(LSM_VALUE_LEN)) {
            lsm_value(dataset.values[d as usize], &mut buf);
            chunk.copy_from_slice(&buf);
        }
        let mut lookup: Vec<u32> = (0..n as u32).collect();
        SplitMix64::new(SEED_LOOKUP).shuffle(&mut lookup);
        Workload {
            keys,
            values,
            sorted,
            lookup,
        }
    }

    /// Entries.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// Entries in insert order.
    fn insert_order(&self) -> std::ops::Range<u32> {
        0..self.len() as u32
    }

    #[inline]
    fn key(&self, i: u32) -> &[u8] {
        self.keys.get(i as usize)
    }

    #[inline]
    fn value(&self, i: u32) -> &[u8] {
        &self.values[i as usize * LSM_VALUE_LEN..][..LSM_VALUE_LEN]
    }

    /// Key and value bytes of every entry.
    fn raw_bytes(&self) -> usize {
        self.keys.total_bytes() + self.values.len()
    }
}

/// Folds an entry into a checksum reading its key's last byte and its
/// value's first and last bytes, so the timed pass can't skip them.
#[inline]
fn fold(acc: u64, key: &[u8], seqno: u64, value: &[u8]) -> u64 {
    let last = |s: &[u8]| u64::from(s.last().copied().unwrap_or(0));
    let first = u64::from(value.first().copied().unwrap_or(0));
    acc.wrapping_mul(31)
        ^ key.len() as u64
        ^ last(key)
        ^ seqno
        ^ value.len() as u64
        ^ first
        ^ last(value)
}

/// Measures implementation `M` on `w` into `rec`.
pub(crate) fn run<M: Subject>(w: &Workload, rec: &mut MemtableRecord) {
    let n = w.len();
    rec.key_len = (w.keys.total_bytes() / n.max(1)) as u64;
    rec.value_len = LSM_VALUE_LEN as u64;
    if let Err(e) = load::<M>(w, rec) {
        rec.error = Some(format!("write path: {e}"));
        return;
    }

    phase("build");
    let before = Snapshot::take();
    let start = Instant::now();
    let mem = M::default();
    for (seqno, i) in (1..).zip(w.insert_order()) {
        mem.insert(w.key(i), seqno, ValueKind::Value, w.value(i));
    }
    let elapsed = start.elapsed();
    let after = Snapshot::take();
    let allocated = after.allocated.saturating_sub(before.allocated);
    rec.memtable_allocated_bytes = Some(allocated);
    rec.memtable_bytes_per_entry = Some(allocated as f64 / n as f64);
    rec.memtable_overhead_per_entry = Some((allocated as f64 - w.raw_bytes() as f64) / n as f64);
    rec.self_reported_bytes = Some(mem.approximate_memory_usage() as u64);
    rec.memtable_insert_ops_per_s = Some(per_second(n, elapsed));

    let frozen = if M::ACTIVE_READS {
        lookups(w, &mem, rec);
        rec.lookup_target = "active".into();
        freeze(mem, rec)
    } else {
        let frozen = freeze(mem, rec);
        lookups(w, &frozen, rec);
        rec.lookup_target = "frozen".into();
        rec.notes.push(
            "lookups against the frozen (sorted) memtable: the active one scans every entry".into(),
        );
        frozen
    };
    flush_iteration(w, &frozen, rec);
    phase("drop");
    drop(frozen);

    batched_build::<M>(w, rec);

    if M::ACTIVE_READS {
        concurrent::<M>(w, rec);
    } else {
        rec.notes
            .push("no writer+reader run: reads of the active memtable are O(n)".into());
    }
}

/// Builds a second memtable straight through `insert_batch`, in write
/// batches of [`WRITE_BATCH`] entries, then reads every key back.
fn batched_build<M: Subject>(w: &Workload, rec: &mut MemtableRecord) {
    phase("build, batched");
    let order: Vec<u32> = w.insert_order().collect();
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    let start = Instant::now();
    let mem = M::default();
    for (chunk, first) in order.chunks(WRITE_BATCH).zip((1..).step_by(WRITE_BATCH)) {
        batch.clear();
        batch.extend(chunk.iter().zip(first..).map(|(&i, seqno)| EntryRef {
            user_key: w.key(i),
            seqno,
            kind: ValueKind::Value,
            value: w.value(i),
        }));
        mem.insert_batch(&batch);
    }
    rec.batched_insert_ops_per_s = Some(per_second(w.len(), start.elapsed()));
    let frozen;
    let reader: &dyn Fn(&[u8]) -> Option<Vec<u8>> = if M::ACTIVE_READS {
        &|key| mem.get(key, MAX_SEQNO).found()
    } else {
        frozen = mem.freeze();
        &|key| frozen.get(key, MAX_SEQNO).found()
    };
    let (mut reads, mut correct) = (0u64, 0u64);
    for &i in &w.lookup {
        reads += 1;
        if reader(w.key(i)).as_deref() == Some(w.value(i)) {
            correct += 1;
        } else if rec.failures.len() < MAX_FAILURES {
            rec.failures.push(format!(
                "batched build get {}: wrong or missing",
                w.key(i).escape_ascii()
            ));
        }
    }
    rec.batched_check_reads = Some(reads);
    rec.batched_check_correct = Some(correct);
}

/// Phase 1: the bulk load through the write path.
fn load<M: Subject>(w: &Workload, rec: &mut MemtableRecord) -> std::io::Result<()> {
    phase("load");
    let dir = tempfile::tempdir()?;
    let db: WritePath<M> = WritePath::open(write_path_options(dir.path(), rec))?;
    let start = Instant::now();
    for i in w.insert_order() {
        db.put(w.key(i), w.value(i))?;
    }
    let elapsed = start.elapsed();
    let stats = db.stats();
    rec.load_ops_per_s = Some(per_second(w.len(), elapsed));
    rec.load_mib_per_s = Some(w.raw_bytes() as f64 / (1 << 20) as f64 / elapsed.as_secs_f64());
    rec.freezes = Some(stats.freezes);
    rec.flushes = Some(stats.flushes);
    rec.stalls = Some(stats.stalls);
    rec.stall_ms = Some(stats.stall_time.as_secs_f64() * 1e3);

    phase("load-check");
    let (reads, correct) = read_back(w, &db, rec, "write path")?;
    rec.write_path_reads = Some(reads);
    rec.write_path_correct = Some(correct);
    db.close()?;
    drop(dir);

    phase("load, batched");
    let dir = tempfile::tempdir()?;
    let db: WritePath<M> = WritePath::open(write_path_options(dir.path(), rec))?;
    let order: Vec<u32> = w.insert_order().collect();
    let mut batch: Vec<(&[u8], Option<&[u8]>)> = Vec::with_capacity(WRITE_BATCH);
    let start = Instant::now();
    for chunk in order.chunks(WRITE_BATCH) {
        batch.clear();
        batch.extend(chunk.iter().map(|&i| (w.key(i), Some(w.value(i)))));
        db.write_batch(&batch)?;
    }
    rec.batched_load_ops_per_s = Some(per_second(w.len(), start.elapsed()));
    let (reads, correct) = read_back(w, &db, rec, "batched write path")?;
    rec.batched_load_reads = Some(reads);
    rec.batched_load_correct = Some(correct);
    db.close()?;
    Ok(())
}

/// The default options, with runs in `dir`, flushed as `rec` says.
fn write_path_options(dir: &std::path::Path, rec: &MemtableRecord) -> WritePathOptions {
    let mut options = WritePathOptions::new(dir);
    options.background_flush = !rec.inline_flush;
    options
}

/// Reads keys spread over the workload back through `db`, checking each
/// value: (reads, correct). Wrong ones are described under `what`.
fn read_back<M: Subject>(
    w: &Workload,
    db: &WritePath<M>,
    rec: &mut MemtableRecord,
    what: &str,
) -> std::io::Result<(u64, u64)> {
    let most = if M::ACTIVE_READS {
        WRITE_PATH_READS
    } else {
        SCANNING_WRITE_PATH_READS
    };
    let (mut reads, mut correct) = (0u64, 0u64);
    for i in spread_over(w.len(), most).map(|j| w.lookup[j]) {
        reads += 1;
        match db.get(w.key(i))? {
            Some(v) if v == w.value(i) => correct += 1,
            got => {
                if rec.failures.len() < MAX_FAILURES {
                    rec.failures.push(format!(
                        "{what} get {}: {}",
                        w.key(i).escape_ascii(),
                        if got.is_some() {
                            "wrong value"
                        } else {
                            "missing"
                        }
                    ));
                }
            }
        }
    }
    Ok((reads, correct))
}

/// `most` positions of `0..n` spread evenly, in order (all of them if
/// there are fewer).
fn spread_over(n: usize, most: usize) -> impl Iterator<Item = usize> {
    let taken = n.min(most);
    (0..taken).map(move |j| j * n / taken)
}

/// Phase 3: every key, shuffled, values checked.
fn lookups(w: &Workload, mem: &impl MemtableRead, rec: &mut MemtableRecord) {
    phase("lookup");
    // Keys and values copied in lookup order first (untimed), so that the
    // timed loop reads them front to back, as requests bring their keys; as
    // the main harness does, and for the same reason (see `measure.rs`).
    let keys = w.keys.gather(&w.lookup);
    let mut values = Vec::with_capacity(w.values.len());
    for &i in &w.lookup {
        values.extend_from_slice(w.value(i));
    }
    let mut correct = 0u64;
    let mut wrong = Vec::new();
    let start = Instant::now();
    for (j, want) in values.chunks_exact(LSM_VALUE_LEN).enumerate() {
        if mem.get_with(
            keys.get(j),
            MAX_SEQNO,
            |l| matches!(l, Lookup::Found(v) if v == want),
        ) {
            correct += 1;
        } else if wrong.len() < MAX_FAILURES {
            wrong.push(w.lookup[j]);
        }
    }
    let elapsed = start.elapsed();
    drop((keys, values));
    rec.lookup_ops_per_s = Some(per_second(w.len(), elapsed));
    rec.lookups = Some(w.len() as u64);
    rec.correct_lookups = Some(correct);
    for i in wrong {
        let got = mem.get(w.key(i), MAX_SEQNO).map(|v| v.len());
        rec.failures.push(format!(
            "lookup {}: {got:?} (value length), expected {} bytes",
            w.key(i).escape_ascii(),
            LSM_VALUE_LEN
        ));
    }
}

fn freeze<M: Subject>(mem: M, rec: &mut MemtableRecord) -> M::Frozen {
    phase("freeze");
    let start = Instant::now();
    let frozen = mem.freeze();
    rec.freeze_ms = Some(start.elapsed().as_secs_f64() * 1e3);
    frozen
}

/// Phase 4: the flush's sorted read, timed, then checked.
fn flush_iteration(w: &Workload, frozen: &impl MemtableRead, rec: &mut MemtableRecord) {
    phase("flush");
    let (mut acc, mut count) = (0u64, 0usize);
    let start = Instant::now();
    let mut cursor = frozen.iter(MAX_SEQNO);
    while let Some(e) = cursor.next_entry() {
        acc = fold(acc, e.user_key, e.seqno, e.value);
        count += 1;
    }
    let elapsed = start.elapsed();
    black_box(acc);
    rec.flush_iter_keys_per_s = Some(per_second(count, elapsed));
    rec.flush_iter_keys = Some(count as u64);

    let mut mismatches = (count as u64).abs_diff(w.len() as u64);
    let mut cursor = frozen.iter(MAX_SEQNO);
    for &i in &w.sorted {
        let Some(e) = cursor.next_entry() else { break };
        if e.user_key != w.key(i) || e.value != w.value(i) || e.kind != ValueKind::Value {
            mismatches += 1;
            if rec.failures.len() < 2 * MAX_FAILURES {
                rec.failures.push(format!(
                    "flush iteration: got {}, expected {}",
                    e.user_key.escape_ascii(),
                    w.key(i).escape_ascii()
                ));
            }
        }
    }
    rec.flush_iter_mismatches = Some(mismatches);
}

/// Phase 5: one writer thread and one reader (this thread) at once.
fn concurrent<M: Subject>(w: &Workload, rec: &mut MemtableRecord) {
    phase("concurrent");
    let n = w.len();
    let mem = Arc::new(M::default());
    let inserted = Arc::new(AtomicUsize::new(0));
    // After its first entry the writer waits for the reader's first read,
    // so that the two overlap however small the table (at 2,000 entries
    // the writer used to finish before the reader woke).
    let first_read = Arc::new(AtomicBool::new(false));
    let (reads, correct, read_secs, write_secs) = std::thread::scope(|s| {
        let writer = {
            let (mem, inserted, first_read) = (
                Arc::clone(&mem),
                Arc::clone(&inserted),
                Arc::clone(&first_read),
            );
            s.spawn(move || {
                let start = Instant::now();
                for (seqno, i) in (1..).zip(w.insert_order()) {
                    mem.insert(w.key(i), seqno, ValueKind::Value, w.value(i));
                    inserted.store(i as usize + 1, Ordering::Release);
                    // With one entry there is nothing to overlap.
                    while i == 0 && n > 1 && !first_read.load(Ordering::Acquire) {
                        std::thread::yield_now();
                    }
                }
                start.elapsed().as_secs_f64()
            })
        };
        let mut rng = SplitMix64::new(SEED_LOOKUP ^ 0x5eed);
        let (mut reads, mut correct) = (0u64, 0u64);
        let start = Instant::now();
        loop {
            let done = inserted.load(Ordering::Acquire);
            if done == n {
                break;
            }
            if done == 0 {
                std::hint::spin_loop();
                continue;
            }
            // A key inserted before `done` was published: it must be there.
            let i = rng.below(done as u64) as u32;
            let want = w.value(i);
            reads += 1;
            if reads == 1 {
                first_read.store(true, Ordering::Release);
            }
            if mem.get_with(
                w.key(i),
                MAX_SEQNO,
                |l| matches!(l, Lookup::Found(v) if v == want),
            ) {
                correct += 1;
            }
        }
        let read_secs = start.elapsed().as_secs_f64();
        let write_secs = writer.join().expect("the writer does not panic");
        (reads, correct, read_secs, write_secs)
    });
    rec.concurrent_write_ops_per_s = Some(n as f64 / write_secs.max(1e-9));
    if reads == 0 {
        // Nothing was read while the writes ran: no rate, and no check
        // made (rather than 0/0, which would read as passed).
        rec.notes.push(format!(
            "1W+1R: the writer inserted all {n} entries before the reader's first read"
        ));
        return;
    }
    rec.concurrent_read_ops_per_s = Some(reads as f64 / read_secs.max(1e-9));
    rec.concurrent_reads = Some(reads);
    rec.concurrent_correct_reads = Some(correct);
    if correct < reads {
        rec.failures.push(format!(
            "concurrent reads: {} of {reads} wrong",
            reads - correct
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_backs_take_as_many_keys_as_they_say() {
        for (n, most) in [
            (5, 10),
            (10, 10),
            (100_001, 100_000),
            (3_000_000, 100_000),
            (7, 3),
        ] {
            let picked: Vec<usize> = spread_over(n, most).collect();
            assert_eq!(picked.len(), n.min(most), "{n} {most}");
            assert!(picked.windows(2).all(|w| w[0] < w[1]), "distinct, in order");
            assert!(picked.iter().all(|&i| i < n));
            if n > most {
                // Spread to the end, not bunched at the start.
                assert!(*picked.last().unwrap() >= n - n / most - 1, "{n} {most}");
            }
        }
    }
}
