//! The record one child reports for one structure, which is also the
//! `--json` output, and the median over several runs.

use serde::{Deserialize, Serialize};

/// Version of the parent/child protocol (the record's shape and the child's
/// arguments); a child and parent of different versions refuse each other.
pub(crate) const PROTOCOL: u32 = 1;

/// One structure measured on one dataset.
///
/// The first fields are the documented `--json` schema; the rest are extras
/// (allowed by it). `Option` fields are `null` when the measurement did not
/// happen (an error before it, or "n/a" for the structure).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Record {
    /// Structure name, as on the command line.
    pub(crate) structure: String,
    /// Dataset name.
    pub(crate) dataset: String,
    /// Number of distinct keys.
    pub(crate) keys: u64,
    /// Sum of the key lengths.
    pub(crate) raw_key_bytes: u64,
    /// jemalloc `stats.allocated` after the build minus before it.
    pub(crate) allocated_bytes: Option<u64>,
    /// Resident set size after the build minus before it (a cross-check; it
    /// can be lower when the build reuses pages freed earlier).
    pub(crate) rss_bytes: Option<i64>,
    /// `allocated_bytes / keys`.
    pub(crate) bytes_per_key: Option<f64>,
    /// `(allocated_bytes - raw_key_bytes - raw_value_bytes) / keys`.
    pub(crate) overhead_per_key: Option<f64>,
    /// Keys inserted per second (for bulk-built structures: keys per second
    /// of the build from sorted input, see `build_input`).
    pub(crate) insert_ops_per_s: Option<f64>,
    /// Lookups per second, in a shuffled order, values checked.
    pub(crate) lookup_ops_per_s: Option<f64>,
    /// Keys per second of a full ordered iteration (`null` if unordered).
    pub(crate) iter_keys_per_s: Option<f64>,
    /// Lookups that returned the expected value.
    pub(crate) correct_lookups: Option<u64>,
    /// Lookups done.
    pub(crate) lookups: Option<u64>,
    /// Why the structure could not be measured (fully), `null` when it ran.
    pub(crate) error: Option<String>,

    /// The protocol version that produced this record.
    pub(crate) protocol: u32,
    /// What was measured: "map" (a future "memtable" workload gets its own).
    pub(crate) workload: String,
    /// Runs (child processes) this record is the median of.
    pub(crate) runs: u32,
    /// "dataset order", or "sorted" for bulk builds (sort not timed).
    pub(crate) build_input: String,
    /// Bytes of values stored out of line (the `lsm` dataset), else 0.
    pub(crate) raw_value_bytes: u64,
    /// The structure's own `memory_usage()`-style figure, where it has one.
    pub(crate) self_reported_bytes: Option<u64>,
    /// Net bytes allocated by the building thread (jemalloc's per-thread
    /// counters): exact even while freed blocks sit in the thread cache,
    /// which `stats.allocated` counts as allocated.
    pub(crate) thread_allocated_bytes: Option<i64>,
    /// Keys per second over the prefix scans.
    pub(crate) prefix_keys_per_s: Option<f64>,
    /// Prefix scans per second (each scan from its seek to its last key).
    pub(crate) prefix_scans_per_s: Option<f64>,
    /// Keys per second over the range scans.
    pub(crate) range_keys_per_s: Option<f64>,
    /// Range scans per second.
    pub(crate) range_scans_per_s: Option<f64>,
    /// Entries the full iteration yielded.
    pub(crate) iter_keys: Option<u64>,
    /// Positions where the iteration differed from the sorted dataset, plus
    /// the difference in count.
    pub(crate) iter_mismatches: Option<u64>,
    /// Entries the scans should yield, over all scans.
    pub(crate) scan_keys: Option<u64>,
    /// Scan results that differed from the sorted dataset (as for iteration).
    pub(crate) scan_mismatches: Option<u64>,
    /// Lookups per second through the structure's batched lookup (for
    /// FastArt, `get_many`), same keys and order as `lookup_ops_per_s`;
    /// `null` for structures without one.
    pub(crate) batched_lookup_ops_per_s: Option<f64>,
    /// Batched lookups that returned the expected value (of `lookups`).
    pub(crate) correct_batched_lookups: Option<u64>,
    /// Inserts per second through the structure's batched insert (for
    /// FastArt, `extend`), a second build after the first map is dropped;
    /// `null` for structures without one.
    pub(crate) batched_insert_ops_per_s: Option<f64>,
    /// Entries of the batched build's map, read in order, that differed from
    /// the sorted dataset (as for `iter_mismatches`).
    pub(crate) batched_build_mismatches: Option<u64>,
    /// The structure's own count of its entries after the build (`len()`),
    /// checked against `keys`; `null` for structures without one.
    #[serde(default)]
    pub(crate) len_reported: Option<u64>,
    /// Answers of the structure's insert checked: one per key of the build
    /// (each must say the key was new), and one per key whose value was
    /// replaced afterwards (each must give the value replaced); `null` where
    /// the insert answers neither.
    #[serde(default)]
    pub(crate) insert_answers: Option<u64>,
    /// Of `insert_answers`, how many were wrong.
    #[serde(default)]
    pub(crate) wrong_insert_answers: Option<u64>,
    /// Whether every check made was passed: lookups (batched too), the
    /// iteration, the scans, the batched build, `len` and the inserts'
    /// answers; `null` when none was made (an error came first). Set when
    /// the runs are combined.
    #[serde(default)]
    pub(crate) all_correct: Option<bool>,
    /// Of `runs`, how many ended in an error (then `error` is the first).
    #[serde(default)]
    pub(crate) failed_runs: u32,
    /// A hash of the keys and values the child measured, in dataset order,
    /// which the parent compares with its own: a dataset file changed
    /// while the harness ran is an error, not a silent mix.
    #[serde(default)]
    pub(crate) dataset_fingerprint: Option<String>,
    /// The first few wrong results, described.
    pub(crate) failures: Vec<String>,
    /// Facts needed to read the row.
    pub(crate) notes: Vec<String>,
}

impl Record {
    /// Whether every check made was passed (see [`Record::all_correct`]),
    /// or `None` when none was made.
    pub(crate) fn checks_passed(&self) -> Option<bool> {
        let made = self.lookups.is_some()
            || self.iter_mismatches.is_some()
            || self.batched_build_mismatches.is_some()
            || self.len_reported.is_some()
            || self.insert_answers.is_some()
            || !self.failures.is_empty();
        made.then(|| {
            self.correct_lookups == self.lookups
                && (self.correct_batched_lookups).is_none_or(|c| Some(c) == self.lookups)
                && self.batched_build_mismatches.unwrap_or(0) == 0
                && self.iter_mismatches.unwrap_or(0) == 0
                && self.scan_mismatches.unwrap_or(0) == 0
                && self.len_reported.is_none_or(|len| len == self.keys)
                && self.wrong_insert_answers.unwrap_or(0) == 0
                // Every failure described is a wrong result (or a batched
                // build that failed), whichever counter it comes with.
                && self.failures.is_empty()
        })
    }

    /// Whether the structure ended in an error or answered wrong (or
    /// checked nothing), in some run. For one of memkv's own structures
    /// that fails the run; a peer's is a finding (see `report::verdict`).
    pub(crate) fn failed(&self) -> bool {
        self.error.is_some() || self.all_correct != Some(true)
    }
}

/// What went wrong in a row, for the verdict: from whether it has an error
/// and its `all_correct`.
pub(crate) fn what_went_wrong(error: bool, all_correct: Option<bool>) -> &'static str {
    match (error, all_correct) {
        (true, Some(false)) => "an error and wrong answers",
        (true, _) => "an error",
        (false, Some(false)) => "wrong answers",
        (false, None) => "nothing checked",
        (false, Some(true)) => "nothing",
    }
}

/// Median of `xs` (the mean of the middle two for an even count), `None` if
/// empty.
pub(crate) fn median(xs: &mut [f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let mid = xs.len() / 2;
    Some(if xs.len() % 2 == 1 {
        xs[mid]
    } else {
        (xs[mid - 1] + xs[mid]) / 2.0
    })
}

/// Folds the records of several runs of one structure into one: the median
/// of each measurement, the worst of each check, and the first error.
pub(crate) fn combine(runs: &[Record]) -> Record {
    let Some(first) = runs.first() else {
        return Record::default();
    };
    let mut out = first.clone();
    out.runs = runs.len() as u32;
    // A run whose child crashed has a record the parent wrote, without
    // what the child says of the data: take that from a run that has it.
    out.dataset_fingerprint = runs.iter().find_map(|r| r.dataset_fingerprint.clone());
    if let Some(r) = runs.iter().find(|r| !r.build_input.is_empty()) {
        out.build_input = r.build_input.clone();
    }
    out.iter_keys = runs.iter().find_map(|r| r.iter_keys);
    out.scan_keys = runs.iter().find_map(|r| r.scan_keys);
    let med = |get: fn(&Record) -> Option<f64>| median_of(runs, get);
    out.allocated_bytes = med(|r| r.allocated_bytes.map(|x| x as f64)).map(|x| x.round() as u64);
    out.rss_bytes = med(|r| r.rss_bytes.map(|x| x as f64)).map(|x| x.round() as i64);
    out.thread_allocated_bytes =
        med(|r| r.thread_allocated_bytes.map(|x| x as f64)).map(|x| x.round() as i64);
    out.self_reported_bytes =
        med(|r| r.self_reported_bytes.map(|x| x as f64)).map(|x| x.round() as u64);
    out.bytes_per_key = med(|r| r.bytes_per_key);
    out.overhead_per_key = med(|r| r.overhead_per_key);
    out.insert_ops_per_s = med(|r| r.insert_ops_per_s);
    out.lookup_ops_per_s = med(|r| r.lookup_ops_per_s);
    out.batched_lookup_ops_per_s = med(|r| r.batched_lookup_ops_per_s);
    out.batched_insert_ops_per_s = med(|r| r.batched_insert_ops_per_s);
    out.iter_keys_per_s = med(|r| r.iter_keys_per_s);
    out.prefix_keys_per_s = med(|r| r.prefix_keys_per_s);
    out.range_keys_per_s = med(|r| r.range_keys_per_s);
    out.prefix_scans_per_s = med(|r| r.prefix_scans_per_s);
    out.range_scans_per_s = med(|r| r.range_scans_per_s);
    // Checks: the worst run counts.
    out.correct_lookups = runs.iter().filter_map(|r| r.correct_lookups).min();
    out.correct_batched_lookups = runs.iter().filter_map(|r| r.correct_batched_lookups).min();
    out.lookups = runs.iter().filter_map(|r| r.lookups).max();
    out.iter_mismatches = runs.iter().filter_map(|r| r.iter_mismatches).max();
    out.batched_build_mismatches = (runs.iter())
        .filter_map(|r| r.batched_build_mismatches)
        .max();
    out.scan_mismatches = runs.iter().filter_map(|r| r.scan_mismatches).max();
    // The length furthest from the keys (all runs see the same keys).
    out.len_reported = (runs.iter())
        .filter_map(|r| r.len_reported)
        .max_by_key(|len| len.abs_diff(first.keys));
    out.insert_answers = runs.iter().filter_map(|r| r.insert_answers).max();
    out.wrong_insert_answers = runs.iter().filter_map(|r| r.wrong_insert_answers).max();
    (out.error, out.failures, out.notes) =
        combine_remarks(runs, |r| (&r.error, &r.failures, &r.notes));
    out.failed_runs = runs.iter().filter(|r| r.error.is_some()).count() as u32;
    // A run that checked nothing (it failed first) does not make the
    // others' checks pass or fail.
    let checked: Vec<bool> = runs.iter().filter_map(Record::checks_passed).collect();
    out.all_correct = (!checked.is_empty()).then(|| checked.iter().all(|&ok| ok));
    out
}

/// The median of `get` over the runs that have a value for it.
pub(crate) fn median_of<R>(runs: &[R], get: impl Fn(&R) -> Option<f64>) -> Option<f64> {
    let mut xs: Vec<f64> = runs.iter().filter_map(get).collect();
    median(&mut xs)
}

/// What the runs of one structure say beside their numbers, folded into one
/// record's: the first error (saying how many runs failed, when there were
/// several: the medians then come partly from runs that did not), the
/// failures of the first run that has any (each run lists the same checks,
/// so one run's list shows what failed), and every distinct note once, in
/// the order the runs give them.
pub(crate) fn combine_remarks<R>(
    runs: &[R],
    remarks: impl Fn(&R) -> (&Option<String>, &Vec<String>, &Vec<String>),
) -> (Option<String>, Vec<String>, Vec<String>) {
    let failed = runs.iter().filter(|r| remarks(r).0.is_some()).count();
    let error = (runs.iter().enumerate())
        .find_map(|(i, r)| Some((i, remarks(r).0.as_ref()?)))
        .map(|(i, error)| match runs.len() {
            1 => error.clone(),
            n => format!("{failed} of {n} runs failed; run {}: {error}", i + 1),
        });
    let failures = (runs.iter())
        .map(|r| remarks(r).1)
        .find(|f| !f.is_empty())
        .cloned()
        .unwrap_or_default();
    let mut notes: Vec<String> = Vec::new();
    for n in runs.iter().flat_map(|r| remarks(r).2) {
        if !notes.contains(n) {
            notes.push(n.clone());
        }
    }
    (error, failures, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0]), Some(3.0));
        assert_eq!(median(&mut [5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn json_has_the_documented_fields() {
        let r = Record {
            structure: "btreemap".into(),
            keys: 3,
            ..Default::default()
        };
        let v = serde_json::to_value(&r).unwrap();
        let obj = v.as_object().unwrap();
        for field in [
            "structure",
            "dataset",
            "keys",
            "raw_key_bytes",
            "allocated_bytes",
            "rss_bytes",
            "bytes_per_key",
            "overhead_per_key",
            "insert_ops_per_s",
            "lookup_ops_per_s",
            "iter_keys_per_s",
            "correct_lookups",
            "lookups",
            "error",
        ] {
            assert!(obj.contains_key(field), "missing {field}");
        }
        // Not measured = null, and "it ran" = a null error.
        assert!(obj["error"].is_null());
        assert!(obj["iter_keys_per_s"].is_null());
        assert_eq!(obj["keys"], 3);
        let back: Record = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn combine_remarks_keeps_the_first_error_and_failures_and_each_note_once() {
        let run = |err: Option<&str>, failures: &[&str], notes: &[&str]| Record {
            error: err.map(String::from),
            failures: failures.iter().map(|s| s.to_string()).collect(),
            notes: notes.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let runs = [
            run(None, &[], &["a"]),
            run(Some("first"), &["x", "y"], &["b", "a"]),
            run(Some("second"), &["z"], &["c", "b"]),
        ];
        let (error, failures, notes) =
            combine_remarks(&runs, |r| (&r.error, &r.failures, &r.notes));
        assert_eq!(error.as_deref(), Some("2 of 3 runs failed; run 2: first"));
        let (alone, _, _) = combine_remarks(&runs[1..2], |r| (&r.error, &r.failures, &r.notes));
        assert_eq!(alone.as_deref(), Some("first"));
        assert_eq!(failures, ["x", "y"]);
        assert_eq!(notes, ["a", "b", "c"]);
        assert_eq!(median_of(&runs, |_| None), None);
        assert_eq!(median_of(&[1.0, 5.0, 2.0], |x| Some(*x)), Some(2.0));
    }

    #[test]
    fn each_check_alone_decides() {
        let passing = Record {
            keys: 10,
            lookups: Some(10),
            correct_lookups: Some(10),
            ..Default::default()
        };
        assert_eq!(Record::default().checks_passed(), None, "nothing checked");
        assert_eq!(passing.checks_passed(), Some(true), "lookups alone");
        let only = |r: Record| r.checks_passed();
        assert_eq!(
            only(Record {
                iter_mismatches: Some(0),
                ..Default::default()
            }),
            Some(true),
            "iteration alone"
        );
        assert_eq!(
            only(Record {
                failures: vec!["x".into()],
                ..Default::default()
            }),
            Some(false),
            "a failure alone"
        );
        assert_eq!(
            only(Record {
                insert_answers: Some(3),
                wrong_insert_answers: Some(0),
                ..Default::default()
            }),
            Some(true),
            "insert answers alone"
        );
        let failing = [
            Record {
                correct_lookups: Some(9),
                ..passing.clone()
            },
            Record {
                correct_batched_lookups: Some(9),
                ..passing.clone()
            },
            Record {
                batched_build_mismatches: Some(1),
                ..passing.clone()
            },
            Record {
                iter_mismatches: Some(1),
                ..passing.clone()
            },
            Record {
                scan_mismatches: Some(1),
                ..passing.clone()
            },
            Record {
                len_reported: Some(11),
                ..passing.clone()
            },
            Record {
                insert_answers: Some(10),
                wrong_insert_answers: Some(1),
                ..passing.clone()
            },
        ];
        for (i, r) in failing.into_iter().enumerate() {
            assert_eq!(r.checks_passed(), Some(false), "check {i}");
        }
        let right = Record {
            correct_batched_lookups: Some(10),
            batched_build_mismatches: Some(0),
            scan_mismatches: Some(0),
            len_reported: Some(10),
            insert_answers: Some(10),
            wrong_insert_answers: Some(0),
            ..passing
        };
        assert_eq!(right.checks_passed(), Some(true));
    }

    #[test]
    fn combine_keeps_what_the_children_said_when_the_first_crashed() {
        let crashed = Record {
            structure: "x".into(),
            error: Some("child crashed with signal 11".into()),
            ..Default::default()
        };
        let ran = Record {
            structure: "x".into(),
            lookups: Some(10),
            correct_lookups: Some(10),
            dataset_fingerprint: Some("0123456789abcdef".into()),
            build_input: "dataset order".into(),
            iter_keys: Some(10),
            scan_keys: Some(7),
            ..Default::default()
        };
        let c = combine(&[crashed, ran.clone(), ran]);
        assert_eq!(c.failed_runs, 1);
        assert_eq!(c.all_correct, Some(true), "the runs that checked passed");
        assert_eq!(c.dataset_fingerprint.as_deref(), Some("0123456789abcdef"));
        assert_eq!(c.build_input, "dataset order");
        assert_eq!((c.iter_keys, c.scan_keys), (Some(10), Some(7)));
    }

    #[test]
    fn combine_takes_medians_and_worst_checks() {
        let run = |ins: f64, correct: u64, err: Option<&str>| Record {
            structure: "x".into(),
            insert_ops_per_s: Some(ins),
            allocated_bytes: Some(100),
            correct_lookups: Some(correct),
            lookups: Some(10),
            error: err.map(String::from),
            ..Default::default()
        };
        let c = combine(&[
            run(3.0, 10, None),
            run(1.0, 9, None),
            run(2.0, 10, Some("boom")),
        ]);
        assert_eq!(c.runs, 3);
        assert_eq!(c.insert_ops_per_s, Some(2.0));
        assert_eq!(c.allocated_bytes, Some(100));
        assert_eq!(c.correct_lookups, Some(9));
        assert_eq!(c.error.as_deref(), Some("1 of 3 runs failed; run 3: boom"));
        assert_eq!(c.failed_runs, 1);
        assert_eq!(c.all_correct, Some(false));
    }
}
