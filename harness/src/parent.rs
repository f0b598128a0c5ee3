//! The parent: load and check the dataset, run one child per structure and
//! run, gather the records, print the report.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::chart;
use crate::child::{PHASE_PREFIX, RECORD_PREFIX};
use crate::cli::Cli;
use crate::dataset::{self, Source};
use crate::machine::Machine;
use crate::record::{self, PROTOCOL, Record};
use crate::report::{self, DatasetSummary};
use crate::structures::{self, Entry, REGISTRY};

/// Lines of a child's stderr kept to explain a crash.
const STDERR_TAIL: usize = 6;

/// Runs the parent.
pub(crate) fn main(cli: &Cli) -> ExitCode {
    if let (Some(json), Some(chart_path)) = (&cli.replot, &cli.chart) {
        return match replot(json, chart_path) {
            Ok(()) => ExitCode::SUCCESS,
            Err(msg) => fail(&msg, 1),
        };
    }
    if cli.list {
        for e in REGISTRY.iter().filter(|e| !e.hidden) {
            let default = if e.default {
                ""
            } else {
                " (not in the default set)"
            };
            println!("{:<10} {}{default}", e.name, e.about);
        }
        return ExitCode::SUCCESS;
    }
    let entries = match select(cli.structures.as_deref()) {
        Ok(e) => e,
        Err(msg) => return fail(&msg, 2),
    };
    let source = match cli.data.source() {
        Ok(s) => s,
        Err(msg) => return fail(&msg, 2),
    };
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            return fail(
                &format!("cannot find the memkv-bench executable to run children: {e}"),
                1,
            );
        }
    };

    // Load once here, to fail early with a clear message and to describe the
    // dataset; each child loads it again for itself.
    let bar = loading_bar(&source);
    let loaded = dataset::load(&source, cli.data.load_options(), &mut |bytes| {
        bar.set_position(bytes)
    });
    bar.finish_and_clear();
    let summary = match loaded {
        Ok(ds) => DatasetSummary::of(&ds),
        Err(e) => return fail(&e.to_string(), 1),
    };

    let machine = Machine::detect();
    print!("{}", report::header(&machine, &summary, cli.runs));
    println!();
    let _ = std::io::stdout().flush();

    let total = entries.len() as u64 * u64::from(cli.runs);
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {wide_msg}",
        )
        .expect("valid template"),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let timeout = Duration::from_secs(cli.child_timeout);
    // Runs go round-robin over the structures, so that a slow spell of a
    // shared machine is spread over all of them, not one.
    let mut runs: Vec<Vec<Record>> = vec![Vec::new(); entries.len()];
    for run in 1..=cli.runs {
        for (entry, records) in entries.iter().zip(&mut runs) {
            let label = format!("{} (run {run}/{})", entry.name, cli.runs);
            bar.set_message(label.clone());
            let child = ChildRun {
                exe: &exe,
                cli,
                entry,
                label: &label,
                bar: &bar,
                timeout,
            };
            records.push(child.run(&summary));
            bar.inc(1);
        }
    }
    bar.finish_and_clear();

    let records: Vec<Record> = runs.iter().map(|r| record::combine(r)).collect();
    print!("{}", report::tables(&records));
    print!("{}", report::spread(&runs));
    let (verdict, failed) = report::verdict(&records);
    print!("{verdict}");
    let _ = std::io::stdout().flush();

    let mut code = ExitCode::SUCCESS;
    if let Some(path) = &cli.json
        && let Err(msg) = write_json(path, &records)
    {
        code = fail(&msg, 1);
    }
    if let Some(path) = &cli.chart
        && let Err(msg) = chart::write(path, &summary.name, &machine.to_string(), &records)
    {
        code = fail(&msg, 1);
    }
    // Wrong answers of memkv's own structures fail the run, as the verdict
    // says, even when an output file could not be written as well.
    if failed { ExitCode::from(3) } else { code }
}

fn fail(msg: &str, code: u8) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(code)
}

/// The structures named by `--structures`, or the default set.
pub(crate) fn select(requested: Option<&[String]>) -> Result<Vec<&'static Entry>, String> {
    let Some(names) = requested else {
        return Ok(REGISTRY.iter().filter(|e| e.default).collect());
    };
    let mut out: Vec<&'static Entry> = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let entry = structures::find(name).ok_or_else(|| {
            let known: Vec<&str> = REGISTRY
                .iter()
                .filter(|e| !e.hidden)
                .map(|e| e.name)
                .collect();
            format!("unknown structure {name:?}; known: {}", known.join(", "))
        })?;
        if !out.iter().any(|e| e.name == entry.name) {
            out.push(entry);
        }
    }
    if out.is_empty() {
        return Err("--structures names no structure".into());
    }
    Ok(out)
}

fn loading_bar(source: &Source) -> ProgressBar {
    let size = match source {
        Source::File(path) => std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        _ => 0,
    };
    if size == 0 {
        return ProgressBar::hidden();
    }
    ProgressBar::new(size).with_style(
        ProgressStyle::with_template("loading {bar:30} {binary_bytes}/{binary_total_bytes} {eta}")
            .expect("valid template"),
    )
}

/// Reads the record a child printed, checking that it speaks this
/// harness's protocol (`protocol` reads the record's version field).
pub(crate) fn parse_record<R: serde::de::DeserializeOwned>(
    json: &str,
    protocol: impl Fn(&R) -> u32,
) -> Result<R, String> {
    let record: R =
        serde_json::from_str(json).map_err(|e| format!("unreadable record from the child: {e}"))?;
    match protocol(&record) {
        PROTOCOL => Ok(record),
        other => Err(format!(
            "child speaks protocol {other}, expected {PROTOCOL}"
        )),
    }
}

/// Draws a chart from the records an earlier run wrote with `--json`.
fn replot(json: &PathBuf, chart_path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(json)
        .map_err(|e| format!("cannot read {}: {e}", json.display()))?;
    let records: Vec<Record> = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a --json output: {e}", json.display()))?;
    let dataset = records.first().map_or("(empty)", |r| r.dataset.as_str());
    chart::write(
        chart_path,
        dataset,
        &Machine::detect().to_string(),
        &records,
    )
}

fn write_json(path: &PathBuf, records: &[Record]) -> Result<(), String> {
    let json = serde_json::to_string_pretty(records).map_err(|e| e.to_string())?;
    std::fs::write(path, json + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// One child process measuring one structure once.
struct ChildRun<'a> {
    exe: &'a PathBuf,
    cli: &'a Cli,
    entry: &'a Entry,
    label: &'a str,
    bar: &'a ProgressBar,
    timeout: Duration,
}

/// How a child ended.
enum Ended {
    Exited(ExitStatus),
    TimedOut,
    WaitFailed(std::io::Error),
}

impl ChildRun<'_> {
    /// Runs the child and returns its record, or a record carrying the
    /// reason there is none.
    fn run(&self, summary: &DatasetSummary) -> Record {
        let failed = |error: String| Record {
            structure: self.entry.name.to_string(),
            dataset: summary.name.clone(),
            keys: summary.keys,
            raw_key_bytes: summary.raw_key_bytes,
            raw_value_bytes: summary.raw_value_bytes,
            protocol: PROTOCOL,
            workload: "map".into(),
            runs: 1,
            error: Some(error),
            ..Default::default()
        };
        let mut args: Vec<OsString> = vec![
            "--child".into(),
            self.entry.name.into(),
            "--protocol".into(),
            PROTOCOL.to_string().into(),
        ];
        args.extend(self.cli.data.to_args());
        let child = Child {
            exe: self.exe,
            args: &args,
            name: self.entry.name,
            label: self.label,
            bar: self.bar,
            timeout: self.timeout,
        };
        match child
            .run()
            .and_then(|json| parse_record(&json, |r: &Record| r.protocol))
            .and_then(|record| same_data(record, summary))
        {
            Ok(record) => record,
            Err(e) => failed(e),
        }
    }
}

/// `record`, if its child measured the data the parent loaded (a dataset
/// file can change between the two loads).
fn same_data(record: Record, summary: &DatasetSummary) -> Result<Record, String> {
    if record.dataset_fingerprint.as_ref() == Some(&summary.fingerprint) {
        return Ok(record);
    }
    Err(format!(
        "the child measured other data than the parent loaded (fingerprint {} of {} keys, \
         expected {} of {}): was the dataset changed during the run?",
        record.dataset_fingerprint.as_deref().unwrap_or("none"),
        record.keys,
        summary.fingerprint,
        summary.keys
    ))
}

/// One child process: this executable with `args`.
pub(crate) struct Child<'a> {
    /// This executable.
    pub(crate) exe: &'a PathBuf,
    /// Its arguments.
    pub(crate) args: &'a [OsString],
    /// The structure's name, prefixed to the child's stderr lines.
    pub(crate) name: &'static str,
    /// The progress bar's label for this child.
    pub(crate) label: &'a str,
    /// The progress bar, which shows the child's phases.
    pub(crate) bar: &'a ProgressBar,
    /// How long to wait before killing it.
    pub(crate) timeout: Duration,
}

impl Child<'_> {
    /// Runs the child; returns the JSON of its record line, or why there is
    /// none (how it ended, the phase, and its last stderr line).
    pub(crate) fn run(&self) -> Result<String, String> {
        let mut child = match Command::new(self.exe)
            .args(self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
        {
            Ok(c) => c,
            Err(e) => return Err(format!("cannot start the child process: {e}")),
        };

        let mut stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let out = thread::spawn(move || {
            let mut s = Vec::new();
            let _ = stdout.read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        });
        let (bar, label, name) = (self.bar.clone(), self.label.to_string(), self.name);
        let err = thread::spawn(move || {
            let mut phase = String::from("start");
            let mut tail = VecDeque::new();
            let mut reader = BufReader::new(stderr);
            let mut buf = Vec::new();
            while matches!(reader.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
                let line = String::from_utf8_lossy(&buf).trim_end().to_string();
                buf.clear();
                if let Some(p) = line.strip_prefix(PHASE_PREFIX) {
                    bar.set_message(format!("{label}: {p}"));
                    phase = p.to_string();
                } else {
                    bar.suspend(|| eprintln!("[{name}] {line}"));
                    tail.push_back(line);
                    if tail.len() > STDERR_TAIL {
                        tail.pop_front();
                    }
                }
            }
            (phase, tail)
        });

        let deadline = Instant::now() + self.timeout;
        let ended = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ended::Exited(status),
                Ok(None) if Instant::now() >= deadline => {
                    // Our own child, by its handle.
                    let _ = child.kill();
                    let _ = child.wait();
                    break Ended::TimedOut;
                }
                Ok(None) => thread::sleep(Duration::from_millis(20)),
                Err(e) => break Ended::WaitFailed(e),
            }
        };
        let stdout = out.join().unwrap_or_default();
        let (phase, tail) = err.join().unwrap_or_default();

        if let Some(json) = stdout.lines().find_map(|l| l.strip_prefix(RECORD_PREFIX)) {
            return Ok(json.to_string());
        }
        let last = tail.iter().rev().find(|l| !l.is_empty());
        let said = last
            .map(|l| format!("; its last words: {l}"))
            .unwrap_or_default();
        Err(match ended {
            Ended::Exited(status) => format!("child {} during {phase}{said}", describe(status)),
            Ended::TimedOut => format!(
                "child timed out after {} s during {phase} (see --child-timeout){said}",
                self.timeout.as_secs()
            ),
            Ended::WaitFailed(e) => format!("waiting for the child failed: {e}"),
        })
    }
}

/// "crashed with signal 11 (SIGSEGV)" or "exited with status 1".
fn describe(status: ExitStatus) -> String {
    if let Some(sig) = status.signal() {
        let name = match sig {
            4 => " (SIGILL)",
            6 => " (SIGABRT: an abort, e.g. a panic while panicking or a failed allocation)",
            7 => " (SIGBUS)",
            8 => " (SIGFPE)",
            9 => " (SIGKILL: possibly the out-of-memory killer)",
            11 => " (SIGSEGV: invalid memory access or stack overflow)",
            _ => "",
        };
        return format!("crashed with signal {sig}{name}");
    }
    match status.code() {
        Some(code) => format!("exited with status {code} without a record"),
        None => "ended without a record".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_defaults_dedupes_and_rejects_unknown_names() {
        let default = select(None).unwrap();
        assert!(default.iter().any(|e| e.name == "fastart"));
        assert!(default.iter().any(|e| e.name == "hybrid"));
        let names = [
            "btreemap".to_string(),
            " fst".into(),
            "btreemap".into(),
            "".into(),
        ];
        let picked: Vec<&str> = select(Some(&names))
            .unwrap()
            .iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(picked, ["btreemap", "fst"]);
        let err = select(Some(&["nope".to_string()])).unwrap_err();
        assert!(
            err.starts_with("unknown structure \"nope\"; known: fastart, "),
            "{err}"
        );
        assert!(select(Some(&[])).is_err());
    }

    #[test]
    fn a_record_of_other_data_is_refused() {
        let load = |text: &str| {
            let path = std::env::temp_dir().join(format!(
                "memkv-bench-same-data-{}-{}",
                std::process::id(),
                text.len()
            ));
            std::fs::write(&path, text).unwrap();
            let ds = dataset::load(&Source::File(path.clone()), Default::default(), &mut |_| {});
            std::fs::remove_file(&path).ok();
            crate::measure::Prepared::new(ds.unwrap())
        };
        let (parent, child) = (load("a\nb\nc\n"), load("a\nb\nd\ne\n"));
        let summary = DatasetSummary::of(&parent.dataset);
        assert!(same_data(parent.base_record("x"), &summary).is_ok());
        let err = same_data(child.base_record("x"), &summary).unwrap_err();
        assert!(err.starts_with("the child measured other data"), "{err}");
        assert!(err.contains("of 4 keys, expected"), "{err}");
    }

    #[test]
    fn exit_statuses_are_described() {
        assert_eq!(
            describe(ExitStatus::from_raw(11)),
            "crashed with signal 11 (SIGSEGV: invalid memory access or stack overflow)"
        );
        assert_eq!(
            describe(ExitStatus::from_raw(3 << 8)),
            "exited with status 3 without a record"
        );
    }
}
