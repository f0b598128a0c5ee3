//! The `--memtable` markdown report: a header, one table per insert order,
//! the targets of issue 6 checked for `memtable-art`, and a legend.

use std::fmt::Write;

use super::record::MemtableRecord;
use super::workload::WRITE_BATCH;
use super::{BASELINE, Order};
use crate::dataset::LSM_VALUE_LEN;
use crate::machine::Machine;
use crate::record::what_went_wrong;
use crate::report::{rate, thousands};

/// The machine and workload lines.
pub(crate) fn header(machine: &Machine, keys: usize, runs: u32, inline_flush: bool) -> String {
    let mut s = String::new();
    let build = if cfg!(debug_assertions) {
        " · DEBUG BUILD: throughputs are meaningless, use --release"
    } else {
        ""
    };
    let _ = writeln!(s, "machine: {machine}{build}");
    let flusher = if inline_flush {
        "no flusher thread (`--inline-flush`)"
    } else {
        "one flusher thread"
    };
    let _ = writeln!(
        s,
        "memtable workload: {} entries · 16-byte keys (`lsm` synthetic: 4-byte table id + 12 random \
         bytes) · {LSM_VALUE_LEN}-byte values · write path: 64 MiB memtables, at most 2, \
         {flusher} · {runs} child process(es) per memtable and order, median shown",
        thousands(keys as u64)
    );
    s
}

/// `x` with its ratio to the baseline's.
fn with_ratio(x: Option<f64>, base: Option<f64>, show: fn(f64) -> String) -> String {
    match (x, base) {
        (Some(x), Some(b)) if b > 0.0 => format!("{} ({:.2}×)", show(x), x / b),
        (Some(x), _) => show(x),
        (None, _) => "—".into(),
    }
}

fn checks(r: &MemtableRecord) -> String {
    let pair = |c: Option<u64>, n: Option<u64>| match (c, n) {
        (Some(c), Some(n)) if c == n => format!("{}/{}", thousands(c), thousands(n)),
        (Some(c), Some(n)) => format!("{}/{} ✗", thousands(c), thousands(n)),
        _ => "—".into(),
    };
    let mut s = format!("lookups {}", pair(r.correct_lookups, r.lookups));
    let _ = write!(
        s,
        "; write path {}",
        pair(r.write_path_correct, r.write_path_reads)
    );
    if r.batched_load_reads.is_some() {
        let _ = write!(
            s,
            "; batched write path {}",
            pair(r.batched_load_correct, r.batched_load_reads)
        );
    }
    if r.batched_check_reads.is_some() {
        let _ = write!(
            s,
            "; batches {}",
            pair(r.batched_check_correct, r.batched_check_reads)
        );
    }
    if r.concurrent_reads.is_some() {
        let _ = write!(
            s,
            "; 1W+1R {}",
            pair(r.concurrent_correct_reads, r.concurrent_reads)
        );
    }
    match r.flush_iter_mismatches {
        Some(0) => s.push_str("; flush order ✓"),
        Some(m) => {
            let _ = write!(s, "; flush order ✗ {m} wrong");
        }
        None => {}
    }
    s
}

/// One order's table, with the targets line.
pub(crate) fn table(order: Order, records: &[MemtableRecord]) -> String {
    let (base, baseline_note) = crate::report::baseline(BASELINE, records, |r| {
        (&r.structure, r.error.is_some(), r.failed_runs, r.runs)
    });
    let b = |get: fn(&MemtableRecord) -> Option<f64>| base.and_then(get);
    let mut s = String::new();
    let _ = writeln!(s, "\n### {} order\n", order.name());
    if order == Order::Counter {
        let _ = writeln!(
            s,
            "Keys: not the `lsm` keys but counters, in order: table 1's id, four zero bytes, \
             then 0, 1, 2, … big-endian.\n"
        );
    }
    if records.iter().any(|r| r.inline_flush) {
        let _ = writeln!(
            s,
            "Write path: flushed inline (`--inline-flush`): each run written by the put that \
             filled its memtable, with no flusher thread.\n"
        );
    }
    let _ = writeln!(
        s,
        "| memtable | load/s | batched load/s | load MiB/s | bytes/entry | overhead/entry | insert/s | batched insert/s | flush iter/s | freeze | lookup/s | 1W+1R writes/s | 1W+1R reads/s | checks | notes |"
    );
    let _ = writeln!(
        s,
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|"
    );
    let one = |x: f64| format!("{x:.1}");
    let mib = |x: f64| format!("{x:.0}");
    for r in records {
        let mut notes = r.notes.join("; ");
        if let (Some(f), Some(st)) = (r.freezes, r.stalls) {
            let stall = r
                .stall_ms
                .map_or(String::new(), |ms| format!(", {ms:.0} ms"));
            let _ = write!(
                notes,
                "{}load: {f} freezes, {st} stalls{stall}",
                if notes.is_empty() { "" } else { "; " }
            );
        }
        if let Some(e) = &r.error {
            notes = format!("**error:** {e}; {notes}");
        }
        // A measurement with its ratio to the baseline's.
        let col = |get: fn(&MemtableRecord) -> Option<f64>, show: fn(f64) -> String| {
            with_ratio(get(r), b(get), show)
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.structure,
            col(|r| r.load_ops_per_s, rate),
            col(|r| r.batched_load_ops_per_s, rate),
            with_ratio(r.load_mib_per_s, None, mib),
            col(|r| r.memtable_bytes_per_entry, one),
            col(|r| r.memtable_overhead_per_entry, one),
            col(|r| r.memtable_insert_ops_per_s, rate),
            col(|r| r.batched_insert_ops_per_s, rate),
            col(|r| r.flush_iter_keys_per_s, rate),
            r.freeze_ms.map_or("—".into(), |ms| format!("{ms:.1} ms")),
            col(|r| r.lookup_ops_per_s, rate),
            col(|r| r.concurrent_write_ops_per_s, rate),
            col(|r| r.concurrent_read_ops_per_s, rate),
            checks(r),
            notes.replace('|', "\\|"),
        );
    }
    s.push_str(&baseline_note);
    if let (Some(base), Some(art)) = (
        base,
        records
            .iter()
            .find(|r| r.structure == "memtable-art" && r.error.is_none()),
    ) {
        let _ = writeln!(s, "\n{}", targets(order, base, art));
    }
    s
}

/// Issue 6's targets for `memtable-art` against the baseline.
fn targets(order: Order, base: &MemtableRecord, art: &MemtableRecord) -> String {
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let check = |what: &str, r: Option<f64>, ok: fn(f64) -> bool, want: &str| match r {
        Some(r) => format!(
            "{what} {r:.2}× (target {want}) {}",
            if ok(r) { "✓" } else { "✗" }
        ),
        None => format!("{what} not measured"),
    };
    let load = ratio(art.load_ops_per_s, base.load_ops_per_s);
    let mem = ratio(art.memtable_bytes_per_entry, base.memtable_bytes_per_entry);
    let iter = ratio(art.flush_iter_keys_per_s, base.flush_iter_keys_per_s);
    let parts = match order {
        Order::Random => [
            check("load", load, |r| r >= 2.0, "≥ 2×"),
            check("memory/entry", mem, |r| r <= 0.6, "≤ 0.6×"),
            check("flush iteration", iter, |r| r >= 1.5, "≥ 1.5×"),
        ],
        Order::Sequential | Order::Counter => [
            check("load", load, |r| r >= 1.0, "no slower"),
            check("memory/entry", mem, |r| r <= 0.6, "≤ 0.6×"),
            check("flush iteration", iter, |r| r >= 1.0, "no slower"),
        ],
    };
    format!("targets, memtable-art vs {BASELINE}: {}", parts.join(" · "))
}

/// The legend under the tables.
pub(crate) fn footer() -> String {
    format!(
        "\nColumns: load = puts through the write path until the last returns (freezes, stalls \
         and the flusher's competition for the CPU included); batched load = the same through \
         `WritePath::write_batch`, {WRITE_BATCH} entries per batch; MiB/s counts key and value \
         bytes (of the first load). \
         bytes/entry = jemalloc `stats.allocated` growth per entry while one memtable takes every \
         entry (no flush); overhead = bytes/entry − key − value bytes. insert = that build's \
         inserts per second, one by one; batched insert = another memtable built through \
         `insert_batch`, {WRITE_BATCH} entries per call. flush iter = entries per \
         second of the frozen memtable's cursor (key, sequence number, first and last value \
         byte read); freeze = `freeze()` on the full memtable (a sort for memtable-vec, not in \
         flush iter). lookup = every key once, shuffled, value compared. 1W+1R = one thread \
         inserting every entry into a new memtable while another looks up random keys already \
         inserted. Ratios are to {BASELINE}; higher is better except for bytes and overhead.\n"
    )
}

/// The verdict under the tables, and whether the run failed: every
/// implementation is memkv's, so any error or wrong answer fails it.
pub(crate) fn verdict(records: &[MemtableRecord]) -> (String, bool) {
    let failing: Vec<String> = (records.iter())
        .filter(|r| r.fails_the_run())
        .map(|r| {
            let what = what_went_wrong(r.error.is_some(), r.all_correct);
            format!("{} {} ({what})", r.structure, r.order)
        })
        .collect();
    if failing.is_empty() {
        ("\nverdict: every answer was right\n".into(), false)
    } else {
        let text = format!(
            "\n**verdict: FAILED**: {} (the exit status is 3)\n",
            failing.join(", ")
        );
        (text, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(name: &str, load: f64, bytes: f64) -> MemtableRecord {
        MemtableRecord {
            structure: name.into(),
            order: "random".into(),
            load_ops_per_s: Some(load),
            memtable_bytes_per_entry: Some(bytes),
            flush_iter_keys_per_s: Some(1e6),
            correct_lookups: Some(10),
            lookups: Some(10),
            ..Default::default()
        }
    }

    /// A baseline that failed in one run of three still has the other two's
    /// medians: the ratios and the targets line rest on them, and say so.
    #[test]
    fn a_baseline_that_failed_in_some_runs_still_gives_ratios() {
        let mut base = rec(BASELINE, 1e6, 200.0);
        (base.runs, base.failed_runs) = (3, 1);
        base.error = Some("1 of 3 runs failed; run 2: killed".into());
        let t = table(
            Order::Random,
            &[base.clone(), rec("memtable-art", 2.5e6, 150.0)],
        );
        assert!(t.contains("| memtable-art | 2.50 M (2.50×)"), "{t}");
        assert!(t.contains("over its 2 runs that did not fail, of 3"), "{t}");
        assert!(t.contains("load 2.50× (target ≥ 2×) ✓"), "{t}");
        base.failed_runs = 3;
        let t = table(Order::Random, &[base, rec("memtable-art", 2.5e6, 150.0)]);
        assert!(t.contains("| memtable-art | 2.50 M |"), "{t}");
        assert!(
            t.contains("(no ratios: memtable-skiplist failed in every run)"),
            "{t}"
        );
        let t = table(Order::Random, &[rec("memtable-art", 2.5e6, 150.0)]);
        assert!(
            t.contains("(no ratios: memtable-skiplist was not measured)"),
            "{t}"
        );
    }

    #[test]
    fn table_shows_ratios_and_targets() {
        let t = table(
            Order::Random,
            &[rec(BASELINE, 1e6, 200.0), rec("memtable-art", 2.5e6, 150.0)],
        );
        assert!(t.contains("| memtable-art | 2.50 M (2.50×)"), "{t}");
        assert!(t.contains("150.0 (0.75×)"), "{t}");
        assert!(t.contains("load 2.50× (target ≥ 2×) ✓"), "{t}");
        assert!(t.contains("memory/entry 0.75× (target ≤ 0.6×) ✗"), "{t}");
        assert!(t.contains("lookups 10/10"), "{t}");
    }

    #[test]
    fn batched_inserts_get_a_column_and_a_check() {
        let mut base = rec(BASELINE, 1e6, 200.0);
        base.batched_insert_ops_per_s = Some(1e6);
        let mut art = rec("memtable-art", 2.5e6, 150.0);
        art.batched_insert_ops_per_s = Some(3e6);
        art.batched_check_reads = Some(20);
        art.batched_check_correct = Some(19);
        base.batched_load_ops_per_s = Some(2e6);
        art.batched_load_ops_per_s = Some(7e6);
        art.batched_load_reads = Some(30);
        art.batched_load_correct = Some(30);
        let t = table(Order::Random, &[base, art]);
        assert!(t.contains("| 3.00 M (3.00×) |"), "{t}");
        assert!(
            t.contains("| memtable-art | 2.50 M (2.50×) | 7.00 M (3.50×) |"),
            "{t}"
        );
        assert!(
            t.contains("; batched write path 30/30; batches 19/20 ✗"),
            "{t}"
        );
    }

    #[test]
    fn verdict_fails_on_any_wrong_answer_or_error() {
        let ok = |name: &str| MemtableRecord {
            all_correct: Some(true),
            ..rec(name, 1e6, 100.0)
        };
        let (text, failed) = verdict(&[ok(BASELINE), ok("memtable-art")]);
        assert!(!failed && text.contains("every answer was right"), "{text}");
        let wrong = MemtableRecord {
            all_correct: Some(false),
            ..ok("memtable-art")
        };
        let broken = MemtableRecord {
            error: Some("write path: disk full".into()),
            ..ok("memtable-vec")
        };
        let (text, failed) = verdict(&[ok(BASELINE), wrong, broken]);
        assert!(failed);
        assert!(
            text.contains(
                "**verdict: FAILED**: memtable-art random (wrong answers), memtable-vec random \
                 (an error) (the exit status is 3)"
            ),
            "{text}"
        );
    }
}
