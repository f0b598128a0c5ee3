//! The markdown report on stdout.

use std::fmt::Write;

use crate::dataset::{Dataset, LoadReport};
use crate::machine::Machine;
use crate::measure::{LOOKUP_BATCH, PREFIX_SCANS, PROBES};
use crate::record::{Record, what_went_wrong};

/// The structure whose throughputs the ratios are relative to.
pub(crate) const BASELINE: &str = "btreemap";
/// Wrong results listed per structure (the record keeps a few more).
const SHOWN_FAILURES: usize = 3;

/// What the report says about the dataset (the parent drops the keys
/// themselves before running the children).
#[derive(Clone, Debug)]
pub(crate) struct DatasetSummary {
    /// Its name.
    pub(crate) name: String,
    /// Distinct keys.
    pub(crate) keys: u64,
    /// Sum of key lengths.
    pub(crate) raw_key_bytes: u64,
    /// Out-of-line value bytes (the `lsm` dataset).
    pub(crate) raw_value_bytes: u64,
    /// What loading dropped.
    pub(crate) load: LoadReport,
    /// [`Dataset::fingerprint`], which each child's record must repeat.
    pub(crate) fingerprint: String,
}

impl DatasetSummary {
    /// Summarises `ds`.
    pub(crate) fn of(ds: &Dataset) -> Self {
        DatasetSummary {
            name: ds.name.clone(),
            keys: ds.len() as u64,
            raw_key_bytes: ds.keys.total_bytes() as u64,
            raw_value_bytes: ds.raw_value_bytes() as u64,
            load: ds.report,
            fingerprint: ds.fingerprint(),
        }
    }
}

/// Peers that were considered and left out, with the reason. (Every ART
/// crate that accepts variable-length byte keys built on Rust 1.95 and is
/// measured; these are the ones whose API can't hold the datasets.)
pub(crate) const EXCLUDED: &[(&str, &str)] = &[(
    "art 1.0",
    "fixed-length keys only (`Art<V, const KEY_LEN>`), cannot hold variable-length keys",
)];

/// `1234567` → `1,234,567`.
pub(crate) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Megabytes (10^6 bytes), to a sensible precision.
fn mb(bytes: f64) -> String {
    let m = bytes / 1e6;
    if m.abs() >= 100.0 {
        format!("{m:.0}")
    } else if m.abs() >= 10.0 {
        format!("{m:.1}")
    } else {
        format!("{m:.2}")
    }
}

/// A rate with an SI suffix: `12.3 M`, `456 k`.
pub(crate) fn rate(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2} G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1} k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// The two header lines: machine and dataset.
pub(crate) fn header(machine: &Machine, ds: &DatasetSummary, runs: u32) -> String {
    let mut s = String::new();
    let build = if cfg!(debug_assertions) {
        " · DEBUG BUILD: throughputs are meaningless, use --release"
    } else {
        ""
    };
    let _ = writeln!(s, "machine: {machine}{build}");
    let avg = ds.raw_key_bytes as f64 / ds.keys.max(1) as f64;
    let _ = write!(
        s,
        "dataset: {} · {} keys · {} MB raw key bytes · avg key {avg:.1} B",
        ds.name,
        thousands(ds.keys),
        mb(ds.raw_key_bytes as f64),
    );
    if ds.raw_value_bytes > 0 {
        let _ = write!(
            s,
            " · {} MB values ({} B per key, in one out-of-line log: counted in total MB, not in \
             overhead; the map's value is the line number)",
            mb(ds.raw_value_bytes as f64),
            ds.raw_value_bytes / ds.keys.max(1)
        );
    }
    let l = &ds.load;
    let _ = write!(
        s,
        " · dropped {} blank lines and {} duplicates",
        thousands(l.blank),
        thousands(l.duplicates)
    );
    if l.cr_stripped > 0 {
        let _ = write!(
            s,
            " · stripped a trailing \\r from {} lines",
            thousands(l.cr_stripped)
        );
    }
    if l.limited {
        s.push_str(" · cut by --limit");
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "runs: {runs} child process(es) per structure, median shown · lookups of all keys in a \
         fixed-seed shuffled order, every value checked"
    );
    s
}

/// `x` and its ratio to the baseline's.
fn with_ratio(x: Option<f64>, base: Option<f64>) -> String {
    match (x, base) {
        (Some(x), Some(b)) if b > 0.0 => format!("{} ({:.2}×)", rate(x), x / b),
        (Some(x), _) => rate(x),
        (None, _) => "n/a".into(),
    }
}

/// A measured throughput with its ratio, or a dash when not measured.
fn throughput(x: Option<f64>, base: Option<f64>) -> String {
    if x.is_some() {
        with_ratio(x, base)
    } else {
        "—".into()
    }
}

fn correctness(r: &Record) -> String {
    let mut s = match (r.correct_lookups, r.lookups) {
        (Some(c), Some(n)) if n > 0 => {
            let pct = 100.0 * c as f64 / n as f64;
            let mark = if c == n { "" } else { " ✗" };
            let pct = if c == n {
                "100".to_string()
            } else {
                format!("{pct:.3}")
            };
            format!("{pct}% ({}/{}){mark}", thousands(c), thousands(n))
        }
        _ => "—".into(),
    };
    if let Some(m) = r.iter_mismatches.filter(|&m| m > 0) {
        let _ = write!(s, "; iteration ✗ {} wrong", thousands(m));
    }
    if let Some(m) = r.scan_mismatches.filter(|&m| m > 0) {
        let _ = write!(s, "; scans ✗ {} wrong", thousands(m));
    }
    if let Some(len) = r.len_reported.filter(|&len| len != r.keys) {
        let _ = write!(s, "; len() ✗ {}", thousands(len));
    }
    if let Some(m) = r.wrong_insert_answers.filter(|&m| m > 0) {
        let _ = write!(s, "; insert answers ✗ {} wrong", thousands(m));
    }
    s
}

/// The record of the structure named `baseline`, if it has figures to
/// take ratios to (a baseline that failed in some runs has the others'
/// medians), and what the ratios rest on when not on its every run: a line
/// for the table's foot, or nothing. `of` gives a record's structure,
/// whether it has an error, its failed runs and its runs.
pub(crate) fn baseline<'r, R>(
    baseline: &str,
    records: &'r [R],
    of: impl Fn(&R) -> (&String, bool, u32, u32),
) -> (Option<&'r R>, String) {
    let base = records.iter().find(|r| {
        let (structure, errored, failed, runs) = of(r);
        structure == baseline && (!errored || failed < runs)
    });
    let note = match base.map(&of) {
        Some((_, _, 0, _)) => String::new(),
        Some((_, _, failed, runs)) => format!(
            "\n(ratios to {baseline}'s medians over its {} runs that did not fail, of {runs})\n",
            runs - failed
        ),
        None if records.iter().any(|r| of(r).0 == baseline) => {
            format!("\n(no ratios: {baseline} failed in every run)\n")
        }
        None => format!("\n(no ratios: {baseline} was not measured)\n"),
    };
    (base, note)
}

/// Markdown cells can't hold `|` or newlines.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The main table, and below it the scans / cross-checks table, failures,
/// and notes.
pub(crate) fn tables(records: &[Record]) -> String {
    // A baseline that failed in some runs has the others' medians.
    let (base, baseline_note) = baseline(BASELINE, records, |r| {
        (&r.structure, r.error.is_some(), r.failed_runs, r.runs)
    });
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| structure | total MB | self-reported MB | bytes/key | overhead/key | insert/s | lookup/s | iter/s | correctness | notes |"
    );
    let _ = writeln!(s, "|---|--:|--:|--:|--:|--:|--:|--:|---|---|");
    for r in records {
        let opt = |x: Option<f64>, f: fn(f64) -> String| x.map_or("—".to_string(), f);
        let mut notes = r.notes.join("; ");
        if let Some(e) = &r.error {
            notes = if notes.is_empty() {
                format!("**error:** {e}")
            } else {
                format!("**error:** {e}; {notes}")
            };
        }
        let b = |get: fn(&Record) -> Option<f64>| base.and_then(get);
        let iter = match r.iter_keys_per_s {
            Some(_) => with_ratio(r.iter_keys_per_s, b(|b| b.iter_keys_per_s)),
            // Ran to the end without iterating: an unordered structure.
            None if r.error.is_none() => "n/a".into(),
            None => "—".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.structure,
            opt(r.allocated_bytes.map(|x| x as f64), mb),
            opt(r.self_reported_bytes.map(|x| x as f64), mb),
            opt(r.bytes_per_key, |x| format!("{x:.1}")),
            opt(r.overhead_per_key, |x| format!("{x:.1}")),
            throughput(r.insert_ops_per_s, b(|b| b.insert_ops_per_s)),
            throughput(r.lookup_ops_per_s, b(|b| b.lookup_ops_per_s)),
            iter,
            correctness(r),
            cell(&notes),
        );
    }
    s.push_str(&baseline_note);

    let batched: Vec<&Record> = (records.iter())
        .filter(|r| r.batched_lookup_ops_per_s.is_some() || r.batched_insert_ops_per_s.is_some())
        .collect();
    if !batched.is_empty() {
        let _ = writeln!(
            s,
            "\nBatched operations: inserts through the structure's batched insert (a second build, \
             keys in dataset order, the map then read in order and checked); lookups {LOOKUP_BATCH} \
             keys per call, the same keys in the same order as lookup/s, every value checked. \
             Ratios to {BASELINE}'s insert/s and lookup/s:\n"
        );
        let _ = writeln!(
            s,
            "| structure | batched insert/s | vs its own insert/s | batched lookup/s | vs its own lookup/s | correctness |"
        );
        let _ = writeln!(s, "|---|--:|--:|--:|--:|---|");
        let own = |batched: Option<f64>, single: Option<f64>| match (batched, single) {
            (Some(b), Some(l)) if l > 0.0 => format!("{:.2}×", b / l),
            _ => "—".into(),
        };
        for r in batched {
            let mut checked = match (r.correct_batched_lookups, r.lookups) {
                (Some(c), Some(n)) if c == n => format!("lookups 100% ({})", thousands(c)),
                (Some(c), Some(n)) => format!("lookups {}/{} ✗", thousands(c), thousands(n)),
                _ => String::new(),
            };
            if let Some(m) = r.batched_build_mismatches {
                let build = if m == 0 {
                    "build ✓".to_string()
                } else {
                    format!("build ✗ {} wrong", thousands(m))
                };
                checked = [checked, build]
                    .into_iter()
                    .filter(|c| !c.is_empty())
                    .collect::<Vec<_>>()
                    .join("; ");
            }
            let or_dash = |x: Option<f64>, base: Option<f64>| {
                if x.is_some() {
                    throughput(x, base)
                } else {
                    "—".into()
                }
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {checked} |",
                r.structure,
                or_dash(
                    r.batched_insert_ops_per_s,
                    base.and_then(|b| b.insert_ops_per_s)
                ),
                own(r.batched_insert_ops_per_s, r.insert_ops_per_s),
                or_dash(
                    r.batched_lookup_ops_per_s,
                    base.and_then(|b| b.lookup_ops_per_s)
                ),
                own(r.batched_lookup_ops_per_s, r.lookup_ops_per_s),
            );
        }
    }

    let _ = writeln!(
        s,
        "\nScans ({PREFIX_SCANS} prefix scans: a third and two thirds of {PROBES} spread-out keys; \
         {PROBES} range scans of 1% of the keys each) and memory cross-checks:\n"
    );
    let _ = writeln!(
        s,
        "| structure | prefix scans/s | prefix keys/s | range scans/s | range keys/s | keys expected | RSS Δ MB | thread-net MB | build input |"
    );
    let _ = writeln!(s, "|---|--:|--:|--:|--:|--:|--:|--:|---|");
    for r in records.iter().filter(|r| r.allocated_bytes.is_some()) {
        let or_na = |x: Option<f64>| x.map_or("n/a".to_string(), rate);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.structure,
            or_na(r.prefix_scans_per_s),
            or_na(r.prefix_keys_per_s),
            or_na(r.range_scans_per_s),
            or_na(r.range_keys_per_s),
            r.scan_keys.map_or("n/a".to_string(), thousands),
            r.rss_bytes.map_or("—".to_string(), |x| mb(x as f64)),
            r.thread_allocated_bytes
                .map_or("—".to_string(), |x| mb(x as f64)),
            r.build_input,
        );
    }

    let failing: Vec<&Record> = records.iter().filter(|r| !r.failures.is_empty()).collect();
    if !failing.is_empty() {
        let _ = writeln!(s, "\nWrong results (the first few per structure):\n");
        for r in failing {
            for f in r.failures.iter().take(SHOWN_FAILURES) {
                let _ = writeln!(s, "- {}: {}", r.structure, f);
            }
            if r.failures.len() > SHOWN_FAILURES {
                let more = r.failures.len() - SHOWN_FAILURES;
                let _ = writeln!(s, "- {}: … {more} more described in --json", r.structure);
            }
        }
    }

    let _ = writeln!(
        s,
        "\nColumns: total = jemalloc `stats.allocated` after the build minus before (MB = 10^6 bytes); \
         self-reported = the structure's own memory figure where it has one; overhead = total − raw key \
         (and value) bytes, per key; insert/s for `sorted` builds = keys/s of a bulk build from sorted \
         input, the sort not timed; ratios are to {BASELINE}. RSS Δ is a cross-check and can read low \
         when the build reuses pages freed after loading; thread-net = the building thread's own \
         allocated−freed bytes (exact even with jemalloc's thread cache)."
    );
    let _ = writeln!(s, "\nPeers not included:\n");
    let _ = writeln!(s, "| crate | reason |\n|---|---|");
    for (name, why) in EXCLUDED {
        let _ = writeln!(s, "| {name} | {why} |");
    }
    s
}

/// The verdict under the tables, and whether the run failed: it fails when
/// one of memkv's own structures answered wrong or ended in an error. A
/// peer's wrong answers and errors are findings, listed, not failures.
pub(crate) fn verdict(records: &[Record]) -> (String, bool) {
    let went_wrong = |r: &Record| what_went_wrong(r.error.is_some(), r.all_correct);
    let (ours, peers): (Vec<&Record>, Vec<&Record>) =
        (records.iter()).partition(|r| crate::structures::is_ours(&r.structure));
    let failing: Vec<String> = (ours.iter())
        .filter(|r| r.failed())
        .map(|r| format!("{} ({})", r.structure, went_wrong(r)))
        .collect();
    let mut s = String::new();
    if ours.is_empty() {
        s.push_str("\nverdict: no memkv structure was measured");
    } else if failing.is_empty() {
        let names: Vec<&str> = ours.iter().map(|r| r.structure.as_str()).collect();
        let _ = write!(
            s,
            "\nverdict: every answer of memkv's structures was right ({})",
            names.join(", ")
        );
    } else {
        let _ = write!(
            s,
            "\n**verdict: FAILED**: {} (the exit status is 3)",
            failing.join(", ")
        );
    }
    let findings: Vec<String> = (peers.iter())
        .filter(|r| r.failed())
        .map(|r| format!("{} ({})", r.structure, went_wrong(r)))
        .collect();
    if !findings.is_empty() {
        let _ = write!(
            s,
            "; peers' findings, which do not fail the run: {}",
            findings.join(", ")
        );
    }
    s.push('\n');
    (s, !failing.is_empty())
}

/// With several runs, how much each ratio to the baseline moved: run `i`
/// of each structure paired with run `i` of the baseline (the runs go
/// round-robin, so a pair was measured minutes apart), the lowest and
/// highest ratio over the pairs. Empty for one run, or without the
/// baseline.
pub(crate) fn spread(runs: &[Vec<Record>]) -> String {
    let Some(base) = runs
        .iter()
        .find(|r| r.first().is_some_and(|r| r.structure == BASELINE))
    else {
        return String::new();
    };
    if base.len() < 2 {
        return String::new();
    }
    type Get = fn(&Record) -> Option<f64>;
    let metrics: [Get; 4] = [
        |r| r.insert_ops_per_s,
        |r| r.lookup_ops_per_s,
        |r| r.iter_keys_per_s,
        |r| r.batched_lookup_ops_per_s,
    ];
    let mut s = format!(
        "\nRatios to {BASELINE} run by run (run i of each structure against run i of {BASELINE}, \
         measured minutes apart): lowest–highest over the runs, and how many pairs:\n\n\
         | structure | insert/s | lookup/s | iter/s | batched lookup/s |\n|---|--:|--:|--:|--:|\n"
    );
    for structure in runs.iter().filter(|r| !std::ptr::eq(*r, base)) {
        let Some(name) = structure.first().map(|r| r.structure.as_str()) else {
            continue;
        };
        let cells: Vec<String> = (metrics.iter())
            .enumerate()
            .map(|(m, get)| {
                // `batched lookup/s` is relative to the baseline's lookups.
                let base_get = if m == 3 { metrics[1] } else { *get };
                let ratios: Vec<f64> = (structure.iter().zip(base))
                    .filter_map(|(r, b)| Some(get(r)? / base_get(b).filter(|&b| b > 0.0)?))
                    .collect();
                let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                match ratios.len() {
                    0 => "—".into(),
                    k => format!("{lo:.2}–{hi:.2}× ({k})"),
                }
            })
            .collect();
        let _ = writeln!(s, "| {name} | {} |", cells.join(" | "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(7_303_784), "7,303,784");
        assert_eq!(rate(12_345_678.0), "12.35 M");
        assert_eq!(rate(1_500.0), "1.5 k");
        assert_eq!(rate(12.0), "12");
        assert_eq!(with_ratio(Some(2e6), Some(1e6)), "2.00 M (2.00×)");
        assert_eq!(with_ratio(None, Some(1e6)), "n/a");
    }

    fn rec(name: &str) -> Record {
        Record {
            structure: name.into(),
            allocated_bytes: Some(2_000_000),
            bytes_per_key: Some(20.0),
            overhead_per_key: Some(10.0),
            insert_ops_per_s: Some(1e6),
            lookup_ops_per_s: Some(2e6),
            iter_keys_per_s: Some(4e6),
            correct_lookups: Some(100_000),
            lookups: Some(100_000),
            insert_answers: Some(112_500),
            wrong_insert_answers: Some(0),
            ..Default::default()
        }
    }

    /// A baseline that failed in one run of three has the other two's
    /// medians: ratios rest on them, and the table says so (it used to say
    /// the baseline "was not measured" beside its own figures).
    #[test]
    fn a_baseline_that_failed_in_some_runs_still_gives_ratios() {
        let mut base = rec(BASELINE);
        (base.runs, base.failed_runs) = (3, 1);
        base.error = Some("1 of 3 runs failed; run 2: killed".into());
        let mut fast = rec("fastart");
        fast.lookup_ops_per_s = Some(4e6);
        let t = tables(&[base.clone(), fast.clone()]);
        assert!(t.contains("4.00 M (2.00×)"), "{t}");
        assert!(t.contains("over its 2 runs that did not fail, of 3"), "{t}");
        assert!(!t.contains("no ratios"), "{t}");
        base.failed_runs = 3;
        let t = tables(&[base, fast.clone()]);
        assert!(
            t.contains("(no ratios: btreemap failed in every run)"),
            "{t}"
        );
        let t = tables(&[fast]);
        assert!(t.contains("(no ratios: btreemap was not measured)"), "{t}");
    }

    #[test]
    fn table_rows_show_ratios_errors_and_na() {
        let mut hash = rec("hashbrown");
        hash.iter_keys_per_s = None;
        hash.lookup_ops_per_s = Some(4e6);
        let mut bad = rec("peer");
        bad.correct_lookups = Some(99_000);
        bad.iter_mismatches = Some(3);
        bad.keys = 100_000;
        bad.len_reported = Some(99_999);
        bad.wrong_insert_answers = Some(2);
        let failed = Record {
            structure: "frozen".into(),
            error: Some("not yet available".into()),
            ..Default::default()
        };
        let t = tables(&[rec("btreemap"), hash, bad, failed]);
        let rows: Vec<&str> = t.lines().collect();
        assert!(
            rows[2].starts_with("| btreemap | 2.00 | — | 20.0 | 10.0 | 1.00 M (1.00×)"),
            "{}",
            rows[2]
        );
        assert!(rows[3].contains("| 4.00 M (2.00×) | n/a |"), "{}", rows[3]);
        assert!(!rows[2].contains('✗'), "no wrong answer: {}", rows[2]);
        assert!(
            rows[4].contains(
                "99.000% (99,000/100,000) ✗; iteration ✗ 3 wrong; len() ✗ 99,999; \
                 insert answers ✗ 2 wrong"
            ),
            "{}",
            rows[4]
        );
        assert!(
            rows[5].contains("**error:** not yet available"),
            "{}",
            rows[5]
        );
        assert!(
            !t.contains("Batched operations"),
            "no structure batches here"
        );
    }

    #[test]
    fn batched_operations_get_their_own_table() {
        let mut art = rec("fastart");
        art.batched_lookup_ops_per_s = Some(6e6);
        art.correct_batched_lookups = Some(100_000);
        art.batched_insert_ops_per_s = Some(3e6);
        art.batched_build_mismatches = Some(0);
        let mut wrong = rec("other");
        wrong.batched_lookup_ops_per_s = Some(1e6);
        wrong.correct_batched_lookups = Some(7);
        wrong.batched_insert_ops_per_s = Some(5e5);
        wrong.batched_build_mismatches = Some(12);
        let mut lookups_only = rec("frozen");
        lookups_only.batched_lookup_ops_per_s = Some(4e6);
        lookups_only.correct_batched_lookups = Some(100_000);
        let t = tables(&[rec("btreemap"), art, wrong, lookups_only]);
        assert!(
            t.contains("| fastart | 3.00 M (3.00×) | 3.00× | 6.00 M (3.00×) | 3.00× | lookups 100% (100,000); build ✓ |"),
            "{t}"
        );
        assert!(
            t.contains("| other | 500.0 k (0.50×) | 0.50× | 1.00 M (0.50×) | 0.50× | lookups 7/100,000 ✗; build ✗ 12 wrong |"),
            "{t}"
        );
        assert!(
            t.contains("| frozen | — | — | 4.00 M (2.00×) | 2.00× | lookups 100% (100,000) |"),
            "{t}"
        );
    }

    #[test]
    fn verdict_fails_for_memkv_only() {
        let ok = |name: &str| Record {
            all_correct: Some(true),
            ..rec(name)
        };
        let (text, failed) = verdict(&[ok("fastart"), ok("hybrid"), ok("btreemap")]);
        assert!(!failed);
        assert!(
            text.contains("every answer of memkv's structures was right (fastart, hybrid)"),
            "{text}"
        );
        // A peer's wrong answers are a finding; the run passes.
        let wrong_peer = Record {
            all_correct: Some(false),
            ..rec("rart")
        };
        let (text, failed) = verdict(&[ok("fastart"), wrong_peer.clone()]);
        assert!(!failed, "{text}");
        assert!(
            text.contains("peers' findings, which do not fail the run: rart (wrong answers)"),
            "{text}"
        );
        // memkv's wrong answers, errors, and nothing checked all fail it.
        let wrong = Record {
            all_correct: Some(false),
            ..rec("fastart")
        };
        let broken = Record {
            error: Some("boom".into()),
            ..ok("frozen")
        };
        let unchecked = rec("hybrid");
        let (text, failed) = verdict(&[wrong, broken, unchecked, wrong_peer]);
        assert!(failed);
        assert!(
            text.contains(
                "**verdict: FAILED**: fastart (wrong answers), frozen (an error), \
                 hybrid (nothing checked) (the exit status is 3)"
            ),
            "{text}"
        );
        let (text, failed) = verdict(&[ok("btreemap")]);
        assert!(
            !failed && text.contains("no memkv structure was measured"),
            "{text}"
        );
    }

    #[test]
    fn spread_pairs_each_run_with_the_baselines_same_run() {
        let run = |name: &str, insert: f64, lookup: f64| Record {
            insert_ops_per_s: Some(insert),
            lookup_ops_per_s: Some(lookup),
            iter_keys_per_s: None,
            ..rec(name)
        };
        let base = vec![run("btreemap", 1e6, 1e6), run("btreemap", 2e6, 1e6)];
        // Alone, the medians would give 1.5×; paired, the ratio is 1× and 2×.
        let art = vec![run("fastart", 1e6, 3e6), run("fastart", 4e6, 2e6)];
        let t = spread(&[art.clone(), base.clone()]);
        assert!(
            t.contains("| fastart | 1.00–2.00× (2) | 2.00–3.00× (2) | — | — |"),
            "{t}"
        );
        assert!(!t.contains("| btreemap |"), "{t}");
        // A baseline that measured zero gives no ratio.
        let stalled = vec![run("btreemap", 1e6, 0.0), run("btreemap", 2e6, 1e6)];
        let t = spread(&[art.clone(), stalled]);
        assert!(
            t.contains("| fastart | 1.00–2.00× (2) | 2.00–2.00× (1) |"),
            "{t}"
        );
        assert_eq!(spread(&[art[..1].to_vec(), base[..1].to_vec()]), "");
        assert_eq!(spread(&[art]), "", "no baseline");
    }
}
