//! The binary end to end: datasets from files, errors, the JSON records, the
//! chart, and how a structure's panic or crash is reported.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memkv-bench"))
        .args(args)
        .output()
        .expect("run memkv-bench")
}

/// A scratch file path unique to this test process and `name`.
fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("memkv-bench-test-{}-{name}", std::process::id()))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs with `--json`, which must exit successfully, and returns the
/// records.
fn records(name: &str, args: &[&str]) -> (Output, Vec<Value>) {
    records_exiting(0, name, args)
}

/// Runs with `--json`, which must exit with `status`, and returns the
/// records.
fn records_exiting(status: i32, name: &str, args: &[&str]) -> (Output, Vec<Value>) {
    let path = scratch(name);
    let mut all = args.to_vec();
    let p = path.to_str().unwrap();
    all.extend(["--json", p]);
    let out = bench(&all);
    assert_eq!(out.status.code(), Some(status), "{}", text(&out.stderr));
    let json: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).ok();
    (out, json.as_array().unwrap().clone())
}

#[test]
fn missing_file_is_a_clear_error() {
    let out = bench(&["--dataset", "/nonexistent/keys.txt"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("error: cannot open dataset /nonexistent/keys.txt:"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

/// Each structure's process reads the dataset again, which a pipe cannot
/// give twice: refused up front, not reported as every structure failing.
#[test]
fn a_pipe_is_a_clear_error() {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_memkv-bench"))
        .args([
            "--dataset",
            "/dev/stdin",
            "--structures",
            "btreemap",
            "--runs",
            "1",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run memkv-bench");
    // It may refuse before reading: a broken pipe is no failure here.
    let _ = child.stdin.take().unwrap().write_all(b"a\nb\nc\n");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("error: cannot open dataset /dev/stdin:")
            && err.contains("not a regular file"),
        "{err}"
    );
}

#[test]
fn empty_dataset_is_a_clear_error() {
    let path = scratch("empty.txt");
    std::fs::write(&path, "\n\r\n\n").unwrap();
    let out = bench(&["--dataset", path.to_str().unwrap()]);
    std::fs::remove_file(&path).ok();
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("has no keys (3 lines read, 3 blank)"), "{err}");
}

#[test]
fn unknown_structure_and_bad_arguments_are_refused() {
    let out = bench(&["--structures", "btreemap,nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown structure \"nope\""));
    assert_eq!(
        bench(&["--sample", "--synthetic", "lsm"]).status.code(),
        Some(2)
    );
    // The child mode is internal and checks the protocol version.
    let out = bench(&["--child", "btreemap"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--child is internal"));
}

#[test]
fn list_names_every_public_structure() {
    let out = bench(&["--list"]);
    let list = text(&out.stdout);
    for name in [
        "fastart",
        "frozen",
        "btreemap",
        "hashbrown",
        "skipmap",
        "fst",
        "art-tree",
        "blart",
        "rart",
    ] {
        assert!(
            list.lines().any(|l| l.starts_with(name)),
            "{name} missing from\n{list}"
        );
    }
    assert!(!list.contains("selftest"));
}

#[test]
fn file_dataset_drops_blank_and_duplicate_lines_and_reports_them() {
    let path = scratch("keys.txt");
    std::fs::write(&path, b"b\r\n\na\nb\n\xff\xfe\nc\na\n").unwrap();
    let (out, recs) = records(
        "file.json",
        &[
            "--dataset",
            path.to_str().unwrap(),
            "--structures",
            "btreemap",
            "--runs",
            "1",
        ],
    );
    std::fs::remove_file(&path).ok();
    let stdout = text(&out.stdout);
    assert!(stdout.contains("· 4 keys ·"), "{stdout}");
    assert!(
        stdout.contains("dropped 1 blank lines and 2 duplicates"),
        "{stdout}"
    );
    assert!(
        stdout.contains("stripped a trailing \\r from 1 lines"),
        "{stdout}"
    );
    assert_eq!(recs[0]["keys"], 4);
    assert_eq!(recs[0]["raw_key_bytes"], 1 + 1 + 2 + 1);
    // Every key, and one absent key (the first in order, with 0x01 added).
    assert_eq!(recs[0]["correct_lookups"], 5);
    assert_eq!(recs[0]["iter_mismatches"], 0);
}

#[test]
fn json_records_have_the_documented_shape() {
    let (out, recs) = records(
        "shape.json",
        &[
            "--synthetic",
            "seq-u64",
            "--keys",
            "2000",
            "--structures",
            "btreemap,hashbrown",
            "--runs",
            "2",
        ],
    );
    assert_eq!(recs.len(), 2);
    let fields = [
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
    ];
    for r in &recs {
        for f in fields {
            assert!(r.get(f).is_some(), "{f} missing in {r}");
        }
        assert!(r["error"].is_null());
        assert_eq!(r["keys"], 2000);
        assert_eq!(r["raw_key_bytes"], 16000);
        // Every key, and an absent key for every eighth.
        assert_eq!(r["correct_lookups"], 2250);
        assert_eq!(r["lookups"], 2250);
        assert_eq!(r["runs"], 2);
        assert_eq!(r["failed_runs"], 0);
        assert_eq!(r["all_correct"], true);
        assert_eq!(r["len_reported"], 2000);
        // Each insert of the build, and a replacement of every eighth key.
        assert_eq!(r["insert_answers"], 2250);
        assert_eq!(r["wrong_insert_answers"], 0);
        assert_eq!(r["dataset_fingerprint"].as_str().unwrap().len(), 16);
        assert!(r["allocated_bytes"].as_u64().unwrap() > 16000);
    }
    assert_eq!(recs[0]["structure"], "btreemap");
    assert!(recs[0]["iter_keys_per_s"].as_f64().unwrap() > 0.0);
    assert!(
        recs[1]["iter_keys_per_s"].is_null(),
        "hashbrown has no ordered iteration"
    );
    let table = text(&out.stdout);
    assert!(table.contains("| hashbrown |"), "{table}");
    assert!(table.contains("(1.00×)"), "{table}");
    // Two runs: each ratio's spread over the pairs of runs.
    assert!(table.contains("Ratios to btreemap run by run"), "{table}");
    let spread = (table.lines())
        .find(|l| l.starts_with("| hashbrown | ") && l.contains("× (2) |"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        spread.ends_with("| — | — |"),
        "no iteration, no batch: {spread}"
    );
    assert!(
        table.contains("verdict: no memkv structure was measured"),
        "{table}"
    );
}

/// The inserts `selftest-wrong` answers wrong over the first 500 keys: 50
/// in the build, and 11 of the 63 replacements (those whose old or new
/// value ends in 0, which its `get` answers wrong).
const WRONG_INSERT_ANSWERS: u64 = 61;

#[test]
fn panics_crashes_and_wrong_answers_are_reported_per_structure() {
    // The test doubles stand in for memkv's structures, whose failures
    // fail the run.
    let (out, recs) = records_exiting(
        3,
        "faults.json",
        &[
            "--limit",
            "500",
            "--runs",
            "1",
            "--structures",
            "selftest-panic,selftest-abort,selftest-wrong,btreemap",
        ],
    );
    let panic = recs[0]["error"].as_str().unwrap();
    assert!(
        panic.starts_with("panicked during lookup: selftest: deliberate panic in get"),
        "{panic}"
    );
    assert!(
        recs[0]["insert_ops_per_s"].as_f64().is_some(),
        "phases before the panic are kept"
    );
    let abort = recs[1]["error"].as_str().unwrap();
    assert!(
        abort.starts_with("child crashed with signal 6 (SIGABRT"),
        "{abort}"
    );
    assert!(abort.contains("during lookup"), "{abort}");
    assert!(recs[2]["error"].is_null());
    // 450 of the 500 keys, and the 63 absent ones.
    assert_eq!(recs[2]["correct_lookups"], 513);
    assert_eq!(recs[2]["correct_batched_lookups"], 513);
    assert_eq!(recs[2]["iter_mismatches"], 50);
    assert_eq!(recs[2]["batched_build_mismatches"], 50);
    assert_eq!(recs[2]["len_reported"], 499);
    // 500 inserts and 63 replacements answered; the build's 50 said a key
    // was there, and 11 replacements answered or read back a wrong value.
    assert_eq!(recs[2]["insert_answers"], 563);
    assert_eq!(recs[2]["wrong_insert_answers"], WRONG_INSERT_ANSWERS);
    assert_eq!(recs[2]["all_correct"], false);
    assert_eq!(recs[3]["all_correct"], true);
    // The checks made before the panic (`len`) passed; the crash left no
    // record, so nothing was checked.
    assert_eq!(recs[0]["all_correct"], true);
    assert!(recs[1]["all_correct"].is_null());
    assert!(
        recs[3]["error"].is_null(),
        "a failing structure doesn't affect the others"
    );
    let table = text(&out.stdout);
    assert!(
        table.contains(&format!(
            "91.119% (513/563) ✗; iteration ✗ 50 wrong; len() ✗ 499; \
             insert answers ✗ {WRONG_INSERT_ANSWERS} wrong"
        )),
        "{table}"
    );
    assert!(
        table.contains(
            "**verdict: FAILED**: selftest-panic (an error), selftest-abort (an error), \
             selftest-wrong (wrong answers) (the exit status is 3)"
        ),
        "{table}"
    );
    assert!(table.contains("| selftest-wrong | "), "{table}");
    assert!(
        table.contains("| lookups 513/563 ✗; build ✗ 50 wrong |"),
        "{table}"
    );
    let failures = recs[2]["failures"].as_array().unwrap();
    assert!(
        failures
            .iter()
            .any(|f| f.as_str().unwrap().starts_with("batched lookup: ")),
        "{failures:?}"
    );
    // Each reported lookup names the value of the key it shows: the wrong
    // answers are the right value plus one, for values divisible by 10.
    let mut lookups = 0;
    for failure in failures.iter().map(|f| f.as_str().unwrap()) {
        if !failure.contains("lookup: ") {
            continue;
        }
        let (got, want) = failure
            .rsplit_once(" returned Some(")
            .and_then(|(_, rest)| rest.split_once("), expected "))
            .unwrap_or_else(|| panic!("{failure}"));
        let (got, want): (u64, u64) = (got.parse().unwrap(), want.parse().unwrap());
        assert!(want % 10 == 0 && got == want + 1, "{failure}");
        lookups += 1;
    }
    assert!(lookups >= 2, "{failures:?}");
    // The build's wrong answers in one line, the replacements' first three
    // each in one.
    let starting = |what: &str| {
        (failures.iter())
            .filter(|f| f.as_str().unwrap().starts_with(what))
            .count()
    };
    assert_eq!(starting("insert: 50 of 500 inserts"), 1, "{failures:?}");
    assert_eq!(starting("replace: "), 3, "{failures:?}");
}

#[test]
fn chart_is_written_as_svg() {
    let path = scratch("chart.svg");
    let out = bench(&[
        "--synthetic",
        "random16",
        "--keys",
        "1000",
        "--structures",
        "btreemap,fst",
        "--runs",
        "1",
        "--chart",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let svg = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains("btreemap") && svg.contains("fst"));
    assert!(svg.contains("synthetic random16"));
}

/// The exit status follows the verdict, with `--chart` too, even when no
/// structure has a point to plot (the chart then says so).
#[test]
fn chart_or_not_the_exit_status_follows_the_verdict() {
    let chart = scratch("verdict.svg");
    let c = chart.to_str().unwrap();
    let out = bench(&[
        "--limit",
        "500",
        "--structures",
        "selftest-panic",
        "--runs",
        "1",
        "--chart",
        c,
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let svg = std::fs::read_to_string(&chart).unwrap();
    assert!(svg.contains("nothing to plot"), "{svg}");
    // A peer's error is a finding: keys with zero bytes, one a prefix of
    // the other, which blart refuses.
    let data = scratch("prefix-nul.txt");
    std::fs::write(&data, b"a\x00\na\x00\x00\n").unwrap();
    let out = bench(&[
        "--dataset",
        data.to_str().unwrap(),
        "--structures",
        "blart",
        "--runs",
        "1",
        "--chart",
        c,
    ]);
    std::fs::remove_file(&data).ok();
    std::fs::remove_file(&chart).ok();
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("peers' findings, which do not fail the run: blart (an error)"),
        "{stdout}"
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// `--limit` caps the keys generated, so a huge `--keys` with a small
/// limit is a small run, not refused.
#[test]
fn keys_past_memory_with_a_limit_run() {
    let out = bench(&[
        "--synthetic",
        "random16",
        "--keys",
        "4294967296",
        "--limit",
        "1000",
        "--structures",
        "btreemap",
        "--runs",
        "1",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = bench(&["--synthetic", "random16", "--keys", "4294967296"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("at most 4294967295"));
}

/// A `--json` written before `all_correct` existed: the chart still marks
/// the structures its counters say answered wrong (rart's range scans in
/// run 16).
#[test]
fn replot_of_an_older_json_marks_wrong_answers() {
    let json = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results/debian-full-run16.json");
    let chart = scratch("replot.svg");
    let out = bench(&[
        "--replot",
        json.to_str().unwrap(),
        "--chart",
        chart.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let svg = std::fs::read_to_string(&chart).unwrap();
    std::fs::remove_file(&chart).ok();
    assert!(svg.contains("rart ✗"), "rart is marked");
    assert!(!svg.contains("fastart ✗"), "fastart is not");
}
