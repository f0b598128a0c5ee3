//! `memkv-bench --memtable`: memkv's LSM memtables side by side.
//!
//! The parent runs one child per implementation, insert order and run (as
//! the map workload does, so each memory figure covers one memtable alone),
//! gathers their [`MemtableRecord`]s and prints one table per order, with
//! ratios to `memtable-skiplist`. See [`workload`] for what a child measures.

mod record;
mod report;
mod workload;

use std::ffi::OsString;
use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use self::record::{MemtableRecord, combine};
use self::workload::{Subject, Workload};
use crate::child::RECORD_PREFIX;
use crate::cli::Cli;
use crate::dataset::{self, LoadOptions, Source, SyntheticKind};
use crate::machine::Machine;
use crate::measure::phase;
use crate::parent::{Child, parse_record};
use crate::record::PROTOCOL;

/// Entries per run when `--keys` is not given.
const DEFAULT_KEYS: usize = 100_000;

/// The order entries are inserted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Order {
    /// The generator's order: keys in random order.
    Random,
    /// Sorted: each key greater than the one before.
    Sequential,
    /// Counter keys, sorted: table 1's ids 0, 1, 2, … (16 bytes: the table
    /// id, four zero bytes, the big-endian id), as an auto-increment id or a
    /// timestamp makes them. Not in the default run.
    Counter,
}

impl Order {
    /// The name on the command line and in the records.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Order::Random => "random",
            Order::Sequential => "sequential",
            Order::Counter => "counter",
        }
    }
}

/// A memtable implementation the harness knows.
#[derive(Debug)]
pub(crate) struct Impl {
    /// Name on the command line and in the output.
    pub(crate) name: &'static str,
    /// One line for `--list`.
    pub(crate) about: &'static str,
    /// Measures it (in a child process).
    run: fn(&Workload, &mut MemtableRecord),
}

const fn entry<M: Subject>(name: &'static str, about: &'static str) -> Impl {
    Impl {
        name,
        about,
        run: workload::run::<M>,
    }
}

/// The implementations, in output order; the first is the baseline.
pub(crate) const IMPLS: &[Impl] = &[
    entry::<memkv::SkipListMemtable>(
        "memtable-skiplist",
        "memkv::SkipListMemtable: crossbeam SkipMap, lock-free (the baseline)",
    ),
    entry::<memkv::ArtMemtable>(
        "memtable-art",
        "memkv::ArtMemtable: FastArt + version chains in a value arena",
    ),
    entry::<memkv::ShardedArtMemtable>(
        "memtable-art-sharded",
        "memkv::ShardedArtMemtable: ArtMemtable's tree and arena in 16 shards by key hash, a lock each",
    ),
    entry::<memkv::VecMemtable>(
        "memtable-vec",
        "memkv::VecMemtable: append, sort on freeze (write-only reference)",
    ),
];

/// The baseline of the ratios.
pub(crate) const BASELINE: &str = "memtable-skiplist";

fn find(name: &str) -> Option<&'static Impl> {
    IMPLS.iter().find(|i| i.name == name)
}

fn keys(cli: &Cli) -> Result<usize, String> {
    match cli.data.keys {
        Some(0) => Err("--keys must be at least 1".into()),
        Some(n) => {
            // The dataset, the workload's copy in insert order with the
            // values laid out, the lookup copy of both, the orders.
            crate::cli::keys_fit(n, 300, crate::machine::memory_bytes())?;
            Ok(n)
        }
        None => Ok(DEFAULT_KEYS),
    }
}

fn orders(cli: &Cli) -> Vec<Order> {
    match cli.order {
        Some(o) => vec![o],
        None => vec![Order::Random, Order::Sequential],
    }
}

fn fail(msg: &str, code: u8) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(code)
}

/// The child: measures one implementation with one order, prints its record.
pub(crate) fn child_main(cli: &Cli, name: &str) -> ExitCode {
    if cli.protocol != Some(PROTOCOL) {
        eprintln!(
            "error: --child is internal: the parent and child must be the same memkv-bench \
             (protocol {PROTOCOL}, got {:?})",
            cli.protocol
        );
        return ExitCode::from(2);
    }
    let Some(imp) = find(name) else {
        return fail(&format!("unknown memtable {name:?}"), 2);
    };
    let (Ok(n), Some(order)) = (keys(cli), cli.order) else {
        return fail("the memtable child needs --keys and --order", 2);
    };
    phase("prepare");
    let source = Source::Synthetic {
        kind: SyntheticKind::Lsm,
        keys: n,
    };
    let ds = match dataset::load(&source, LoadOptions::default(), &mut |_| {}) {
        Ok(ds) => ds,
        Err(e) => return fail(&e.to_string(), 1),
    };
    let w = Workload::new(ds, order);
    let mut rec = MemtableRecord {
        structure: imp.name.into(),
        keys: w.len() as u64,
        order: order.name().into(),
        protocol: PROTOCOL,
        workload: "memtable".into(),
        runs: 1,
        inline_flush: cli.inline_flush,
        ..Default::default()
    };
    // The map workload's child installs a panic hook that records the
    // message; here the payload is enough.
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| (imp.run)(&w, &mut rec)));
    if let Err(payload) = outcome {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(non-string panic payload)".into());
        rec.error = Some(format!("panicked: {msg}"));
    }
    let json = serde_json::to_string(&rec).expect("a record serialises");
    println!("{RECORD_PREFIX}{json}");
    ExitCode::SUCCESS
}

/// The parent: one child per implementation, order and run.
pub(crate) fn parent_main(cli: &Cli) -> ExitCode {
    if cli.list {
        for i in IMPLS {
            println!("{:<18} {}", i.name, i.about);
        }
        return ExitCode::SUCCESS;
    }
    let impls: Vec<&'static Impl> = match &cli.structures {
        None => IMPLS.iter().collect(),
        Some(names) => {
            let mut out: Vec<&'static Impl> = Vec::new();
            for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
                let Some(i) = find(name) else {
                    let known: Vec<&str> = IMPLS.iter().map(|i| i.name).collect();
                    return fail(
                        &format!("unknown memtable {name:?}; known: {}", known.join(", ")),
                        2,
                    );
                };
                if !out.iter().any(|o| o.name == i.name) {
                    out.push(i);
                }
            }
            if out.is_empty() {
                return fail("--structures names no memtable", 2);
            }
            out
        }
    };
    let n = match keys(cli) {
        Ok(n) => n,
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
    let orders = orders(cli);
    let machine = Machine::detect();
    print!(
        "{}",
        report::header(&machine, n, cli.runs, cli.inline_flush)
    );
    let _ = std::io::stdout().flush();

    let total = (impls.len() * orders.len()) as u64 * u64::from(cli.runs);
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {wide_msg}",
        )
        .expect("valid template"),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let timeout = Duration::from_secs(cli.child_timeout);
    let mut all = Vec::new();
    for &order in &orders {
        // Round-robin over the implementations, as the map workload does.
        let mut runs: Vec<Vec<MemtableRecord>> = vec![Vec::new(); impls.len()];
        for run in 1..=cli.runs {
            for (imp, records) in impls.iter().zip(&mut runs) {
                let label = format!("{} {} (run {run}/{})", imp.name, order.name(), cli.runs);
                bar.set_message(label.clone());
                let mut args: Vec<OsString> = [
                    "--memtable",
                    "--child",
                    imp.name,
                    "--protocol",
                    &PROTOCOL.to_string(),
                    "--keys",
                    &n.to_string(),
                    "--order",
                    order.name(),
                ]
                .iter()
                .map(OsString::from)
                .collect();
                if cli.inline_flush {
                    args.push("--inline-flush".into());
                }
                let child = Child {
                    exe: &exe,
                    args: &args,
                    name: imp.name,
                    label: &label,
                    bar: &bar,
                    timeout,
                };
                let failed = |error: String| MemtableRecord {
                    structure: imp.name.into(),
                    keys: n as u64,
                    order: order.name().into(),
                    protocol: PROTOCOL,
                    workload: "memtable".into(),
                    runs: 1,
                    inline_flush: cli.inline_flush,
                    error: Some(error),
                    ..Default::default()
                };
                let parsed = child
                    .run()
                    .and_then(|json| parse_record(&json, |r: &MemtableRecord| r.protocol));
                records.push(match parsed {
                    Ok(record) => record,
                    Err(e) => failed(e),
                });
                bar.inc(1);
            }
        }
        let combined: Vec<MemtableRecord> = runs.iter().map(|r| combine(r)).collect();
        bar.suspend(|| {
            print!("{}", report::table(order, &combined));
            let _ = std::io::stdout().flush();
        });
        all.extend(combined);
    }
    bar.finish_and_clear();
    print!("{}", report::footer());
    let (verdict, failed) = report::verdict(&all);
    print!("{verdict}");

    let mut code = ExitCode::SUCCESS;
    if let Some(path) = &cli.json {
        let json = serde_json::to_string_pretty(&all).expect("records serialise");
        if let Err(e) = std::fs::write(path, json + "\n") {
            code = fail(&format!("cannot write {}: {e}", path.display()), 1);
        }
    }
    // Every implementation here is memkv's: a wrong answer fails the run,
    // as the verdict says, even when the JSON could not be written as well.
    if failed { ExitCode::from(3) } else { code }
}
