//! `memkv-bench --memtable` end to end: the records, the table, the checks,
//! and argument errors.

use std::process::{Command, Output};

use serde_json::Value;

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memkv-bench"))
        .args(args)
        .output()
        .expect("run memkv-bench")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs memkv-bench with `args` and `--json`, which must succeed: its
/// report and its records.
fn bench_records(args: &[&str]) -> (String, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records.json");
    let out = bench(&[args, &["--json", path.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let Value::Array(records) = json else {
        panic!("not an array of records: {json}")
    };
    (text(&out.stdout), records)
}

/// With one entry the writer is done before the reader can read: no read
/// rate and no check claimed for 1W+1R (it once showed "0/0" and 0
/// reads/s as a passed check), but a note that says why.
#[test]
fn a_reader_that_read_nothing_claims_nothing() {
    let (stdout, records) = bench_records(&[
        "--memtable",
        "--keys",
        "1",
        "--runs",
        "1",
        "--order",
        "random",
        "--structures",
        "memtable-art",
    ]);
    let r = &records[0];
    assert!(r["concurrent_reads"].is_null(), "{r}");
    assert!(r["concurrent_read_ops_per_s"].is_null(), "{r}");
    assert!(r["concurrent_write_ops_per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(r["all_correct"], true, "the other checks");
    let note = "1W+1R: the writer inserted all 1 entries before the reader's first read";
    assert!(
        r["notes"].as_array().unwrap().iter().any(|n| n == note),
        "{r}"
    );
    assert!(!stdout.contains("1W+1R 0/0"), "{stdout}");
}

#[test]
fn every_memtable_and_order_gets_a_checked_record() {
    let (stdout, records) = bench_records(&["--memtable", "--keys", "3000", "--runs", "1"]);
    for want in [
        "### random order",
        "### sequential order",
        "| memtable-art |",
        "| memtable-art-sharded |",
        "targets, memtable-art vs memtable-skiplist: load",
        "verdict: every answer was right",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in\n{stdout}");
    }
    assert_eq!(records.len(), 8, "4 memtables × 2 orders");
    for r in &records {
        let name = r["structure"].as_str().unwrap();
        assert!(r["error"].is_null(), "{name}: {}", r["error"]);
        assert_eq!(r["workload"], "memtable");
        assert_eq!(r["keys"], 3000);
        for field in [
            "load_ops_per_s",
            "load_mib_per_s",
            "memtable_bytes_per_entry",
            "flush_iter_keys_per_s",
            "lookup_ops_per_s",
        ] {
            assert!(r[field].as_f64().unwrap() > 0.0, "{name}: {field}");
        }
        assert_eq!(r["correct_lookups"], r["lookups"], "{name}");
        assert_eq!(r["all_correct"], true, "{name}");
        assert_eq!(r["failed_runs"], 0, "{name}");
        assert_eq!(r["lookups"], 3000);
        assert_eq!(r["write_path_correct"], r["write_path_reads"], "{name}");
        assert_eq!(r["flush_iter_mismatches"], 0, "{name}");
        assert_eq!(r["flush_iter_keys"], 3000, "{name}");
        // Keys and values are 116 bytes per entry: no memtable holds less.
        assert!(r["memtable_bytes_per_entry"].as_f64().unwrap() > 116.0);
        if name == "memtable-vec" {
            assert!(r["concurrent_reads"].is_null());
        } else {
            assert_eq!(
                r["concurrent_correct_reads"], r["concurrent_reads"],
                "{name}"
            );
        }
    }
    let orders: Vec<&str> = records
        .iter()
        .map(|r| r["order"].as_str().unwrap())
        .collect();
    assert_eq!(orders.iter().filter(|o| **o == "random").count(), 4);
}

#[test]
fn one_order_and_a_subset() {
    let out = bench(&[
        "--memtable",
        "--keys",
        "500",
        "--runs",
        "1",
        "--order",
        "sequential",
        "--structures",
        "memtable-art",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("### sequential order"));
    assert!(!stdout.contains("### random order"));
    assert!(!stdout.contains("| memtable-skiplist |"));
    // Without --inline-flush, a flusher thread.
    assert!(stdout.contains("one flusher thread") && !stdout.contains("flushed inline"));
}

/// Counter keys go through every phase, checked, in every memtable.
#[test]
fn counter_order_is_checked_in_every_memtable() {
    let (stdout, records) = bench_records(&[
        "--memtable",
        "--keys",
        "2000",
        "--runs",
        "1",
        "--order",
        "counter",
    ]);
    assert!(stdout.contains("### counter order"), "{stdout}");
    assert!(stdout.contains("Keys: not the `lsm` keys but counters"));
    assert!(!stdout.contains("### sequential order"));
    assert!(
        stdout.contains("verdict: every answer was right"),
        "{stdout}"
    );
    assert_eq!(records.len(), 4);
    for r in &records {
        let name = r["structure"].as_str().unwrap();
        assert_eq!(r["order"], "counter", "{name}");
        assert_eq!(r["all_correct"], true, "{name}");
        assert_eq!(r["flush_iter_keys"], 2000, "{name}");
        assert_eq!(r["flush_iter_mismatches"], 0, "{name}");
    }
}

/// `--inline-flush` reaches every child's write path, and the report says
/// so.
#[test]
fn inline_flush_is_recorded_and_reported() {
    let (stdout, records) = bench_records(&[
        "--memtable",
        "--keys",
        "2000",
        "--runs",
        "1",
        "--order",
        "random",
        "--structures",
        "memtable-art,memtable-skiplist",
        "--inline-flush",
    ]);
    assert!(stdout.contains("Write path: flushed inline"), "{stdout}");
    assert!(stdout.contains("no flusher thread"), "{stdout}");
    assert_eq!(records.len(), 2);
    for r in &records {
        assert_eq!(r["inline_flush"], true, "{r}");
        assert_eq!(r["all_correct"], true, "{r}");
    }
    let refused = bench(&["--inline-flush", "--sample"]);
    assert!(!refused.status.success(), "--inline-flush needs --memtable");
}

#[test]
fn list_and_argument_errors() {
    let list = text(&bench(&["--memtable", "--list"]).stdout);
    for name in [
        "memtable-skiplist",
        "memtable-art",
        "memtable-art-sharded",
        "memtable-vec",
    ] {
        assert!(list.contains(name), "{list}");
    }
    let out = bench(&["--memtable", "--structures", "memtable-nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown memtable \"memtable-nope\""));
    assert_eq!(bench(&["--order", "random"]).status.code(), Some(2));
    assert_eq!(bench(&["--memtable", "--sample"]).status.code(), Some(2));
    assert_eq!(bench(&["--memtable", "--keys", "0"]).status.code(), Some(2));
}
