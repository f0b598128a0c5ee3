//! `memkv-bench`: which structure should hold my keys, and what does it cost?
//!
//! Measures memory per key (jemalloc `stats.allocated`) and insert, lookup,
//! iteration and scan throughput of memkv's structures and of other ordered
//! maps, on the embedded sample, a file of keys, or synthetic keys. Every
//! structure runs in a child process of its own (this binary re-executed
//! with `--child`), so each memory figure covers one structure alone. See
//! `harness/README.md` for the options, the protocol and how to read the
//! numbers.

mod chart;
mod child;
mod cli;
mod dataset;
mod machine;
mod measure;
mod memtable;
mod parent;
mod record;
mod report;
mod rng;
mod structures;

use std::process::ExitCode;

use clap::Parser;

/// Every allocation goes through jemalloc, whose statistics are the memory
/// figures.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    if cli.child.is_none()
        && !cli.list
        && let Err(msg) = cli.check_outputs()
    {
        eprintln!("error: {msg}");
        return ExitCode::from(2);
    }
    if cli.memtable {
        return match &cli.child {
            Some(name) => memtable::child_main(&cli, name),
            None => memtable::parent_main(&cli),
        };
    }
    match &cli.child {
        Some(structure) => child::main(&cli, structure),
        None => parent::main(&cli),
    }
}
