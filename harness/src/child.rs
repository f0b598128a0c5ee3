//! The child side of the protocol: measure one structure, report one record.
//!
//! The parent runs `memkv-bench --child STRUCTURE --protocol N <dataset
//! arguments>`. The child writes to stderr `memkv-phase: NAME` lines as it
//! goes (anything else on stderr is passed through), and at the end exactly
//! one line `memkv-record: {JSON}` to stdout, whatever happened: a failed
//! build or a panic in the structure is an `error` in the record, with the
//! measurements made before it. Only a crash the process can't survive (a
//! signal, an abort) leaves the parent without a record; it then writes the
//! error itself.

use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::Mutex;

use crate::cli::Cli;
use crate::dataset;
use crate::measure::{Prepared, current_phase, phase};
use crate::record::PROTOCOL;
use crate::structures;

/// Starts a progress line on the child's stderr.
pub(crate) const PHASE_PREFIX: &str = "memkv-phase: ";
/// Starts the record line on the child's stdout.
pub(crate) const RECORD_PREFIX: &str = "memkv-record: ";

/// The message of the last panic, kept by the hook for the record.
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Runs the child; `structure` is the `--child` argument.
pub(crate) fn main(cli: &Cli, structure: &str) -> ExitCode {
    if cli.protocol != Some(PROTOCOL) {
        eprintln!(
            "error: --child is internal: the parent and child must be the same memkv-bench \
             (protocol {PROTOCOL}, got {:?})",
            cli.protocol
        );
        return ExitCode::from(2);
    }
    let Some(entry) = structures::find(structure) else {
        eprintln!("error: unknown structure {structure:?}");
        return ExitCode::from(2);
    };
    panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(non-string panic payload)".into());
        let at = info
            .location()
            .map(|l| format!(" at {l}"))
            .unwrap_or_default();
        let text = format!("panicked during {}: {msg}{at}", current_phase());
        eprintln!("{text}");
        *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = Some(text);
    }));

    phase("load");
    let source = match cli.data.source() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let ds = match dataset::load(&source, cli.data.load_options(), &mut |_| {}) {
        Ok(ds) => ds,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    phase("prepare");
    let prepared = Prepared::new(ds);
    let mut record = prepared.base_record(entry.name);
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| (entry.run)(&prepared, &mut record)));
    if outcome.is_err() {
        let msg = LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()).take();
        record.error = Some(msg.unwrap_or_else(|| "panicked".into()));
    }
    let json = serde_json::to_string(&record).expect("a record serialises");
    println!("{RECORD_PREFIX}{json}");
    ExitCode::SUCCESS
}
