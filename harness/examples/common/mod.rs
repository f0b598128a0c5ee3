//! What the examples share: where their keys come from, how much memory is
//! allocated, how much CPU time is spent.

use std::io;
use std::path::Path;

/// The committed 100k sample: the examples' dataset unless one is given.
const SAMPLE: &[u8] = include_bytes!("../../../data/debian-paths-100k.txt");

/// The bytes of the dataset at `path` (one key per line), or of the sample.
/// An error names the file.
pub(crate) fn dataset_bytes(path: Option<&Path>) -> io::Result<Vec<u8>> {
    match path {
        Some(path) => std::fs::read(path).map_err(|error| {
            io::Error::new(error.kind(), format!("reading {}: {error}", path.display()))
        }),
        None => Ok(SAMPLE.to_vec()),
    }
}

/// Bytes allocated through jemalloc (`stats.allocated`), after flushing this
/// thread's cache so that the blocks it holds freed do not count (another
/// thread's cache goes when the thread exits).
#[allow(dead_code)] // pop_drain measures no memory
pub(crate) fn allocated() -> u64 {
    use tikv_jemalloc_ctl::{Access, AsName, epoch, stats};
    let tcache = b"thread.tcache.enabled\0".name();
    if tcache.write(false).is_ok() {
        let _ = tcache.write(true);
    }
    let _ = epoch::advance();
    stats::allocated::read().map_or(0, |x| x as u64)
}

/// The distinct lines of `data` (without a trailing `\r`), in their order.
pub(crate) fn distinct_keys(data: &[u8]) -> Vec<&[u8]> {
    let mut seen = std::collections::HashSet::new();
    data.split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty() && seen.insert(*l))
        .collect()
}

/// The distinct lines of `data` (as [`distinct_keys`] reads them), each
/// with its number among them as its value, sorted by key. Values are line
/// numbers, as in the main harness: in key order they look random, as
/// values would in use (an ordinal in key order would pack into fewer bits).
#[allow(dead_code)] // only some examples build from sorted entries
pub(crate) fn sorted_entries(data: &[u8]) -> Vec<(&[u8], u64)> {
    let mut entries: Vec<(&[u8], u64)> = distinct_keys(data).into_iter().zip(0..).collect();
    entries.sort_unstable();
    entries
}

/// User and system CPU seconds from a `/proc` stat file:
/// `/proc/self/stat` for the process, `/proc/thread-self/stat` for the
/// calling thread. 0 where there is none.
#[allow(dead_code)] // hybrid_merge and pop_drain time no CPU
pub(crate) fn cpu_seconds(stat_path: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(stat_path) else {
        return 0.0;
    };
    // Fields after the parenthesised command name; utime and stime are
    // the 14th and 15th fields of the whole line.
    let rest = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11).and_then(|s| s.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|s| s.parse().ok()).unwrap_or(0);
    ticks as f64 / 100.0
}
