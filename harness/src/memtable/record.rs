//! The record one child reports for one memtable and insert order (the
//! `--memtable --json` output), and the median over several runs.

use serde::{Deserialize, Serialize};

use crate::record::{combine_remarks, median_of};

/// One memtable implementation measured with one insert order.
///
/// The first fields are the documented `--memtable --json` schema; the rest
/// are extras. `Option` fields are `null` when the measurement did not
/// happen (an error before it, or "n/a" for the implementation).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct MemtableRecord {
    /// Implementation name, as on the command line (`memtable-art`, …).
    pub(crate) structure: String,
    /// Entries written.
    pub(crate) keys: u64,
    /// Insert order: "random", "sequential" or "counter".
    pub(crate) order: String,
    /// Puts per second through the write path (freezes, stalls and the
    /// flusher's competition for the CPU included).
    pub(crate) load_ops_per_s: Option<f64>,
    /// Key and value bytes per second of that load, in MiB (2^20 bytes).
    pub(crate) load_mib_per_s: Option<f64>,
    /// jemalloc `stats.allocated` growth per entry while one memtable holds
    /// every entry (no flush).
    pub(crate) memtable_bytes_per_entry: Option<f64>,
    /// Entries per second of a full iteration of the frozen memtable, as a
    /// flush reads it.
    pub(crate) flush_iter_keys_per_s: Option<f64>,
    /// Point lookups per second against the full memtable.
    pub(crate) lookup_ops_per_s: Option<f64>,
    /// Lookups that found the expected value.
    pub(crate) correct_lookups: Option<u64>,
    /// Lookups done.
    pub(crate) lookups: Option<u64>,
    /// Why it could not be measured (fully); `null` when it ran.
    pub(crate) error: Option<String>,

    /// The protocol version that produced this record.
    pub(crate) protocol: u32,
    /// Always "memtable".
    pub(crate) workload: String,
    /// Runs (child processes) this record is the median of.
    pub(crate) runs: u32,
    /// Bytes per key and per value.
    pub(crate) key_len: u64,
    /// See `key_len`.
    pub(crate) value_len: u64,
    /// Whether the write path flushed inline (`--inline-flush`): each run
    /// written by the put that filled its memtable, not by a flusher thread.
    #[serde(default)]
    pub(crate) inline_flush: bool,
    /// Memtables frozen during the load.
    pub(crate) freezes: Option<u64>,
    /// Run files written by the end of the load (more may follow).
    pub(crate) flushes: Option<u64>,
    /// Puts that waited for the flusher.
    pub(crate) stalls: Option<u64>,
    /// Milliseconds puts spent waiting for the flusher.
    pub(crate) stall_ms: Option<f64>,
    /// Write-path reads checked after the load (memtables and run files).
    pub(crate) write_path_reads: Option<u64>,
    /// Of those, the ones that returned the expected value.
    pub(crate) write_path_correct: Option<u64>,
    /// The same load through `WritePath::write_batch`, in write batches of
    /// `WRITE_BATCH` entries: entries per second.
    pub(crate) batched_load_ops_per_s: Option<f64>,
    /// Keys read back through that write path after its load.
    pub(crate) batched_load_reads: Option<u64>,
    /// Of those, the ones that returned the expected value.
    pub(crate) batched_load_correct: Option<u64>,
    /// jemalloc `stats.allocated` growth while one memtable takes every
    /// entry.
    pub(crate) memtable_allocated_bytes: Option<u64>,
    /// `memtable_bytes_per_entry` minus the key and value bytes.
    pub(crate) memtable_overhead_per_entry: Option<f64>,
    /// The memtable's `approximate_memory_usage()` when full.
    pub(crate) self_reported_bytes: Option<u64>,
    /// Inserts per second straight into the memtable (the memory build: no
    /// write path, no flush).
    pub(crate) memtable_insert_ops_per_s: Option<f64>,
    /// Inserts per second straight into a second memtable through
    /// `insert_batch`, in write batches of `WRITE_BATCH` entries.
    pub(crate) batched_insert_ops_per_s: Option<f64>,
    /// Reads of that memtable (spread over the keys) after its build.
    pub(crate) batched_check_reads: Option<u64>,
    /// Of those, the ones that returned the expected value.
    pub(crate) batched_check_correct: Option<u64>,
    /// Milliseconds `freeze()` took on the full memtable.
    pub(crate) freeze_ms: Option<f64>,
    /// Entries the flush iteration yielded.
    pub(crate) flush_iter_keys: Option<u64>,
    /// Flush-iteration entries that differed from the sorted data.
    pub(crate) flush_iter_mismatches: Option<u64>,
    /// "active" or "frozen": which memtable the lookups ran against.
    pub(crate) lookup_target: String,
    /// One writer and one reader at once: the writer's inserts per second.
    pub(crate) concurrent_write_ops_per_s: Option<f64>,
    /// The reader's lookups per second meanwhile.
    pub(crate) concurrent_read_ops_per_s: Option<f64>,
    /// The reader's lookups.
    pub(crate) concurrent_reads: Option<u64>,
    /// Of those, the ones that found the expected value.
    pub(crate) concurrent_correct_reads: Option<u64>,
    /// Whether every check made was passed, over all runs; `null` when
    /// none was made (an error came first). Set when the runs are combined.
    #[serde(default)]
    pub(crate) all_correct: Option<bool>,
    /// Of `runs`, how many ended in an error (then `error` is the first).
    #[serde(default)]
    pub(crate) failed_runs: u32,
    /// The first few wrong results, described.
    pub(crate) failures: Vec<String>,
    /// Facts needed to read the row.
    pub(crate) notes: Vec<String>,
}

impl MemtableRecord {
    /// Whether every check made was passed, or `None` when none was made.
    pub(crate) fn checks_passed(&self) -> Option<bool> {
        let made = self.lookups.is_some()
            || self.write_path_reads.is_some()
            || self.flush_iter_mismatches.is_some()
            || !self.failures.is_empty();
        made.then(|| {
            self.correct_lookups == self.lookups
                && self.flush_iter_mismatches.unwrap_or(0) == 0
                && self.write_path_correct == self.write_path_reads
                && self.batched_load_correct == self.batched_load_reads
                && self.concurrent_correct_reads == self.concurrent_reads
                && self.batched_check_correct == self.batched_check_reads
                && self.failures.is_empty()
        })
    }

    /// Whether this record fails the run: every implementation here is
    /// memkv's, so any error or wrong answer does.
    pub(crate) fn fails_the_run(&self) -> bool {
        self.error.is_some() || self.all_correct != Some(true)
    }
}

/// Folds the records of several runs into one: the median of each
/// measurement, the worst of each check, the first error.
pub(crate) fn combine(runs: &[MemtableRecord]) -> MemtableRecord {
    let Some(first) = runs.first() else {
        return MemtableRecord::default();
    };
    // What every run measures alike (sizes, counts, the lookup target)
    // comes from a run that got through: a crashed run has none of it.
    let mut out = runs
        .iter()
        .find(|r| r.error.is_none())
        .unwrap_or(first)
        .clone();
    out.runs = runs.len() as u32;
    let med = |get: fn(&MemtableRecord) -> Option<f64>| median_of(runs, get);
    out.load_ops_per_s = med(|r| r.load_ops_per_s);
    out.load_mib_per_s = med(|r| r.load_mib_per_s);
    out.batched_load_ops_per_s = med(|r| r.batched_load_ops_per_s);
    out.memtable_bytes_per_entry = med(|r| r.memtable_bytes_per_entry);
    out.memtable_overhead_per_entry = med(|r| r.memtable_overhead_per_entry);
    out.memtable_allocated_bytes =
        med(|r| r.memtable_allocated_bytes.map(|x| x as f64)).map(|x| x.round() as u64);
    out.self_reported_bytes =
        med(|r| r.self_reported_bytes.map(|x| x as f64)).map(|x| x.round() as u64);
    out.memtable_insert_ops_per_s = med(|r| r.memtable_insert_ops_per_s);
    out.batched_insert_ops_per_s = med(|r| r.batched_insert_ops_per_s);
    out.flush_iter_keys_per_s = med(|r| r.flush_iter_keys_per_s);
    out.freeze_ms = med(|r| r.freeze_ms);
    out.lookup_ops_per_s = med(|r| r.lookup_ops_per_s);
    out.concurrent_write_ops_per_s = med(|r| r.concurrent_write_ops_per_s);
    out.concurrent_read_ops_per_s = med(|r| r.concurrent_read_ops_per_s);
    out.stall_ms = med(|r| r.stall_ms);
    out.stalls = med(|r| r.stalls.map(|x| x as f64)).map(|x| x.round() as u64);
    out.freezes = med(|r| r.freezes.map(|x| x as f64)).map(|x| x.round() as u64);
    out.flushes = med(|r| r.flushes.map(|x| x as f64)).map(|x| x.round() as u64);
    // Checks: the worst run counts.
    out.correct_lookups = runs.iter().filter_map(|r| r.correct_lookups).min();
    out.lookups = runs.iter().filter_map(|r| r.lookups).max();
    out.write_path_correct = runs.iter().filter_map(|r| r.write_path_correct).min();
    out.write_path_reads = runs.iter().filter_map(|r| r.write_path_reads).max();
    out.batched_load_correct = runs.iter().filter_map(|r| r.batched_load_correct).min();
    out.batched_load_reads = runs.iter().filter_map(|r| r.batched_load_reads).max();
    out.batched_check_correct = runs.iter().filter_map(|r| r.batched_check_correct).min();
    out.batched_check_reads = runs.iter().filter_map(|r| r.batched_check_reads).max();
    out.flush_iter_mismatches = runs.iter().filter_map(|r| r.flush_iter_mismatches).max();
    // Reader counts vary per run: keep the worst run's pair.
    if let Some(worst) = runs
        .iter()
        .filter(|r| r.concurrent_reads.is_some())
        .min_by_key(|r| {
            r.concurrent_correct_reads.unwrap_or(0) as i64 - r.concurrent_reads.unwrap_or(0) as i64
        })
    {
        out.concurrent_reads = worst.concurrent_reads;
        out.concurrent_correct_reads = worst.concurrent_correct_reads;
    }
    (out.error, out.failures, out.notes) =
        combine_remarks(runs, |r| (&r.error, &r.failures, &r.notes));
    out.failed_runs = runs.iter().filter(|r| r.error.is_some()).count() as u32;
    let checked: Vec<bool> = (runs.iter())
        .filter_map(MemtableRecord::checks_passed)
        .collect();
    out.all_correct = (!checked.is_empty()).then(|| checked.iter().all(|&ok| ok));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_check_alone_decides() {
        let passing = MemtableRecord {
            lookups: Some(10),
            correct_lookups: Some(10),
            ..Default::default()
        };
        assert_eq!(MemtableRecord::default().checks_passed(), None);
        assert_eq!(passing.checks_passed(), Some(true), "lookups alone");
        for (i, alone) in [
            MemtableRecord {
                write_path_reads: Some(5),
                write_path_correct: Some(5),
                ..Default::default()
            },
            MemtableRecord {
                flush_iter_mismatches: Some(0),
                ..Default::default()
            },
        ]
        .into_iter()
        .enumerate()
        {
            assert_eq!(alone.checks_passed(), Some(true), "check {i} alone");
        }
        let failing = [
            MemtableRecord {
                correct_lookups: Some(9),
                ..passing.clone()
            },
            MemtableRecord {
                flush_iter_mismatches: Some(1),
                ..passing.clone()
            },
            MemtableRecord {
                write_path_reads: Some(5),
                write_path_correct: Some(4),
                ..passing.clone()
            },
            MemtableRecord {
                batched_load_reads: Some(5),
                batched_load_correct: Some(4),
                ..passing.clone()
            },
            MemtableRecord {
                concurrent_reads: Some(5),
                concurrent_correct_reads: Some(4),
                ..passing.clone()
            },
            MemtableRecord {
                batched_check_reads: Some(5),
                batched_check_correct: Some(4),
                ..passing.clone()
            },
            MemtableRecord {
                failures: vec!["x".into()],
                ..passing.clone()
            },
        ];
        for (i, r) in failing.into_iter().enumerate() {
            assert_eq!(r.checks_passed(), Some(false), "check {i}");
        }
    }

    /// What all runs share comes from a run that got through, not from a
    /// first run that crashed; counts of the load are medians, as the stalls
    /// beside them in the notes are.
    #[test]
    fn combine_takes_shared_fields_from_a_run_that_got_through() {
        let ok = |freezes: u64| MemtableRecord {
            structure: "memtable-art".into(),
            key_len: 16,
            value_len: 100,
            flush_iter_keys: Some(3000),
            lookup_target: "the frozen memtable".into(),
            freezes: Some(freezes),
            flushes: Some(freezes),
            stalls: Some(freezes),
            flush_iter_keys_per_s: Some(5e6),
            ..Default::default()
        };
        let crashed = MemtableRecord {
            structure: "memtable-art".into(),
            error: Some("killed by signal 9".into()),
            ..Default::default()
        };
        let c = combine(&[crashed, ok(4), ok(6), ok(5)]);
        assert_eq!((c.key_len, c.value_len), (16, 100));
        assert_eq!(c.flush_iter_keys, Some(3000));
        assert_eq!(c.lookup_target, "the frozen memtable");
        assert_eq!(
            (c.freezes, c.flushes, c.stalls),
            (Some(5), Some(5), Some(5))
        );
        assert_eq!((c.runs, c.failed_runs), (4, 1));
        assert!(c.error.is_some());
    }

    #[test]
    fn json_has_the_documented_fields() {
        let r = MemtableRecord {
            structure: "memtable-art".into(),
            keys: 3,
            order: "random".into(),
            ..Default::default()
        };
        let v = serde_json::to_value(&r).unwrap();
        let obj = v.as_object().unwrap();
        for field in [
            "structure",
            "keys",
            "order",
            "load_ops_per_s",
            "load_mib_per_s",
            "memtable_bytes_per_entry",
            "flush_iter_keys_per_s",
            "lookup_ops_per_s",
            "correct_lookups",
            "lookups",
            "error",
        ] {
            assert!(obj.contains_key(field), "missing {field}");
        }
        assert!(obj["error"].is_null());
        let back: MemtableRecord = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn combine_takes_medians_and_worst_checks() {
        let run = |load: f64, correct: u64, reads: (u64, u64)| MemtableRecord {
            structure: "x".into(),
            load_ops_per_s: Some(load),
            correct_lookups: Some(correct),
            lookups: Some(10),
            concurrent_reads: Some(reads.0),
            concurrent_correct_reads: Some(reads.1),
            ..Default::default()
        };
        let c = combine(&[
            run(3.0, 10, (50, 50)),
            run(1.0, 9, (40, 39)),
            run(2.0, 10, (60, 60)),
        ]);
        assert_eq!(c.runs, 3);
        assert_eq!(c.load_ops_per_s, Some(2.0));
        assert_eq!(c.correct_lookups, Some(9));
        assert_eq!(
            (c.concurrent_reads, c.concurrent_correct_reads),
            (Some(40), Some(39))
        );
        assert_eq!(c.all_correct, Some(false));
    }
}
