//! The command line.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::{ArgGroup, Args, Parser};

use crate::dataset::{LoadOptions, Source, SyntheticKind};
use crate::memtable::Order;

/// The options of the map workload, which `--memtable` and the options
/// that need it refuse. Named on each of those too: clap does not require
/// `--memtable` for `--order` when an option that conflicts with
/// `--memtable` is given, and `--order` was then ignored.
const MAPS_ONLY: [&str; 7] = [
    "dataset",
    "sample",
    "synthetic",
    "limit",
    "keep_cr",
    "chart",
    "replot",
];

/// The options that say what to measure and how, which `--replot`, which
/// measures nothing, refuses rather than ignores.
const MEASURING: [&str; 12] = [
    "dataset",
    "sample",
    "synthetic",
    "keys",
    "limit",
    "keep_cr",
    "structures",
    "runs",
    "json",
    "child_timeout",
    "list",
    "memtable",
];

/// Default number of keys of a synthetic dataset.
const DEFAULT_SYNTHETIC_KEYS: usize = 1_000_000;

/// Which structure should hold my keys, and what does it cost?
///
/// Measures memory per key and insert / lookup / iteration / scan throughput
/// of memkv's structures and of other ordered maps, on your data. Each
/// structure runs in its own child process so its memory is measured alone.
/// Results go to stdout as a markdown table; progress to stderr.
#[derive(Debug, Parser)]
#[command(name = "memkv-bench", version, about, long_about)]
#[command(group(ArgGroup::new("sized").args(["synthetic", "memtable"]).multiple(true)))]
pub(crate) struct Cli {
    /// The keys to measure with.
    #[command(flatten)]
    pub(crate) data: DataArgs,

    /// Structures to measure, comma-separated (default: every structure
    /// --list shows without "not in the default set").
    #[arg(long, value_name = "A,B,...", value_delimiter = ',')]
    pub(crate) structures: Option<Vec<String>>,

    /// Child processes per structure; the median of each figure is reported.
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) runs: u32,

    /// Also write one JSON record per structure to PATH.
    #[arg(long, value_name = "PATH")]
    pub(crate) json: Option<PathBuf>,

    /// Also draw bytes/key against lookup throughput as an SVG chart at PATH.
    #[arg(long, value_name = "PATH")]
    pub(crate) chart: Option<PathBuf>,

    /// Measure LSM memtables instead of maps: bulk load through a write
    /// path, memory per entry, flush iteration, lookups, one writer with one
    /// reader (16-byte keys, 100-byte values; --keys defaults to 100000).
    #[arg(long, conflicts_with_all = MAPS_ONLY)]
    pub(crate) memtable: bool,

    /// With --memtable: the insert order (default: random and sequential,
    /// one table each; counter only when asked).
    #[arg(long, value_name = "ORDER", requires = "memtable", conflicts_with_all = MAPS_ONLY)]
    pub(crate) order: Option<Order>,

    /// With --memtable: the write path flushes inline, with no flusher
    /// thread (the write that fills a memtable writes its run), as on WASI.
    #[arg(long, requires = "memtable", conflicts_with_all = MAPS_ONLY)]
    pub(crate) inline_flush: bool,

    /// Give up on a child after this many seconds (a hung structure).
    #[arg(long, value_name = "SECS", default_value_t = 1800,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) child_timeout: u64,

    /// List the structures and exit.
    #[arg(long)]
    pub(crate) list: bool,

    /// Measure nothing: draw the --chart from the records of an earlier
    /// --json (the footer names the machine it is drawn on).
    #[arg(long, value_name = "JSON", requires = "chart", conflicts_with_all = MEASURING)]
    pub(crate) replot: Option<PathBuf>,

    /// Internal: measure one structure and print its record (the parent
    /// runs itself with this).
    #[arg(long, value_name = "STRUCTURE", hide = true)]
    pub(crate) child: Option<String>,

    /// Internal: the parent's protocol version, checked by the child.
    #[arg(long, hide = true)]
    pub(crate) protocol: Option<u32>,
}

impl Cli {
    /// Checks before measuring that `--json` and `--chart` can be written
    /// where they point (an existing directory, not a directory themselves),
    /// so that a long run does not end in "cannot write".
    pub(crate) fn check_outputs(&self) -> Result<(), String> {
        if let (Some(json), Some(chart)) = (&self.json, &self.chart)
            && same_file(json, chart)
        {
            return Err(format!(
                "--json and --chart both name {}: the chart would overwrite the records",
                json.display()
            ));
        }
        for (flag, path) in [("--json", &self.json), ("--chart", &self.chart)] {
            let Some(path) = path else { continue };
            if path.is_dir() {
                return Err(format!("{flag} {} is a directory", path.display()));
            }
            let dir = parent_dir(path);
            if !dir.is_dir() {
                return Err(format!(
                    "{flag} {}: directory {} does not exist",
                    path.display(),
                    dir.display()
                ));
            }
        }
        Ok(())
    }
}

/// Whether two output paths name the same file: the same name in the same
/// directory, however each is spelled (a directory that does not resolve is
/// compared as written; `check_outputs` refuses it anyway).
fn same_file(a: &Path, b: &Path) -> bool {
    let resolved = |p: &Path| {
        let dir = parent_dir(p);
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        dir.join(p.file_name().unwrap_or_default())
    };
    resolved(a) == resolved(b)
}

/// The directory an output file goes into: its parent, or `.` for a bare
/// file name.
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// The dataset arguments, which the parent passes on to its children.
#[derive(Clone, Debug, Args)]
pub(crate) struct DataArgs {
    /// Where the keys come from.
    #[command(flatten)]
    pub(crate) source: SourceArgs,

    /// Number of keys of a --synthetic dataset [default: 1000000] or of
    /// --memtable [default: 100000].
    #[arg(long, value_name = "N", requires = "sized")]
    pub(crate) keys: Option<usize>,

    /// Use only the first N distinct keys.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) limit: Option<u64>,

    /// Keep a trailing carriage return as part of a key (by default one
    /// trailing '\r' per line is stripped and the count reported).
    #[arg(long, conflicts_with = "synthetic")]
    pub(crate) keep_cr: bool,
}

/// At most one of the dataset sources; none = the embedded sample.
#[derive(Clone, Debug, Args)]
#[group(multiple = false)]
pub(crate) struct SourceArgs {
    /// A file with one key per line (bytes, not necessarily UTF-8); blank
    /// lines and repeated keys are dropped and counted.
    #[arg(long, value_name = "PATH")]
    pub(crate) dataset: Option<PathBuf>,

    /// The embedded 100k sample of Debian file paths (the default).
    #[arg(long)]
    pub(crate) sample: bool,

    /// Generated keys with a fixed seed.
    #[arg(long, value_name = "KIND")]
    pub(crate) synthetic: Option<SyntheticKind>,
}

/// Whether `keys` generated keys, of which the harness itself holds
/// `bytes_per_key` each, can be measured on a machine with `memory` bytes:
/// a clear error instead of an aborted allocation.
pub(crate) fn keys_fit(keys: usize, bytes_per_key: u64, memory: Option<u64>) -> Result<(), String> {
    if keys > u32::MAX as usize {
        return Err(format!("--keys {keys}: at most {}", u32::MAX));
    }
    let needed = keys as u64 * bytes_per_key;
    match memory {
        Some(memory) if needed > memory => Err(format!(
            "--keys {keys}: the harness's own copies of the keys alone need about {:.1} GB, \
             more than this machine's {:.1} GB of memory",
            needed as f64 / 1e9,
            memory as f64 / 1e9
        )),
        _ => Ok(()),
    }
}

impl DataArgs {
    /// The source these arguments name.
    pub(crate) fn source(&self) -> Result<Source, String> {
        let s = &self.source;
        Ok(match (&s.dataset, s.synthetic) {
            (Some(path), _) => Source::File(path.clone()),
            (None, Some(kind)) => {
                let keys = self.keys.unwrap_or(DEFAULT_SYNTHETIC_KEYS);
                if keys == 0 {
                    return Err("--keys must be at least 1".into());
                }
                let key_len = match kind {
                    SyntheticKind::SeqU64 => 8,
                    SyntheticKind::Random16 | SyntheticKind::Lsm => 16,
                };
                // The dataset and its copy in lookup order (key bytes,
                // offsets, values), three orders of u32, the table of keys
                // seen: the harness's own, before any structure.
                // `--limit` caps what is generated.
                let generated = self.load_options().limit.map_or(keys, |l| keys.min(l));
                keys_fit(generated, 2 * key_len + 60, crate::machine::memory_bytes())?;
                Source::Synthetic { kind, keys }
            }
            (None, None) => Source::Sample,
        })
    }

    /// How to read the source.
    pub(crate) fn load_options(&self) -> LoadOptions {
        LoadOptions {
            limit: self.limit.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            keep_cr: self.keep_cr,
        }
    }

    /// The same arguments as a command line, for a child.
    pub(crate) fn to_args(&self) -> Vec<OsString> {
        let mut out: Vec<OsString> = Vec::new();
        if let Some(path) = &self.source.dataset {
            out.push("--dataset".into());
            out.push(path.into());
        }
        if self.source.sample {
            out.push("--sample".into());
        }
        if let Some(kind) = self.source.synthetic {
            out.push("--synthetic".into());
            out.push(kind.name().into());
        }
        if let Some(n) = self.keys {
            out.push("--keys".into());
            out.push(n.to_string().into());
        }
        if let Some(n) = self.limit {
            out.push("--limit".into());
            out.push(n.to_string().into());
        }
        if self.keep_cr {
            out.push("--keep-cr".into());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("memkv-bench").chain(args.iter().copied()))
    }

    #[test]
    fn output_paths_are_checked_before_a_run() {
        let check = |args: &[&str]| parse(args).unwrap().check_outputs();
        let dir = tempfile::tempdir().unwrap();
        let inside = dir.path().join("out.json");
        assert_eq!(check(&["--json", inside.to_str().unwrap()]), Ok(()));
        assert_eq!(check(&["--chart", "here.svg"]), Ok(()));

        let missing = dir.path().join("no/such/dir/out.svg");
        let err = check(&["--chart", missing.to_str().unwrap()]).unwrap_err();
        assert!(
            err.starts_with("--chart ") && err.contains("does not exist"),
            "{err}"
        );
        let err = check(&["--json", dir.path().to_str().unwrap()]).unwrap_err();
        assert!(
            err.starts_with("--json ") && err.ends_with("is a directory"),
            "{err}"
        );
    }

    #[test]
    fn one_path_for_both_outputs_is_refused() {
        let check = |args: &[&str]| parse(args).unwrap().check_outputs();
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let out = out.to_str().unwrap();
        let err = check(&["--json", out, "--chart", out]).unwrap_err();
        assert!(err.contains("both name"), "{err}");
        // However the directory is spelled.
        let dotted = dir.path().join(".").join("out");
        let err = check(&["--json", out, "--chart", dotted.to_str().unwrap()]).unwrap_err();
        assert!(err.contains("both name"), "{err}");
        let chart = format!("{out}.svg");
        assert_eq!(check(&["--json", out, "--chart", &chart]), Ok(()));
    }

    #[test]
    fn replot_refuses_what_it_would_ignore() {
        let replot = ["--replot", "a.json", "--chart", "a.svg"];
        assert!(parse(&replot).is_ok());
        for option in [
            &["--json", "b.json"][..],
            &["--structures", "fastart"],
            &["--dataset", "x"],
            &["--sample"],
            &["--synthetic", "lsm"],
            &["--limit", "5"],
            &["--runs", "7"],
            &["--child-timeout", "9"],
            &["--memtable"],
        ] {
            let args = [&replot[..], option].concat();
            assert!(parse(&args).is_err(), "{args:?}");
        }
    }

    #[test]
    fn meaningless_values_are_refused() {
        assert!(parse(&["--child-timeout", "0"]).is_err());
        assert!(parse(&["--child-timeout", "1"]).is_ok());
        assert!(parse(&["--synthetic", "lsm", "--keep-cr"]).is_err());
        assert!(parse(&["--dataset", "x", "--keep-cr"]).is_ok());
    }

    #[test]
    fn keys_past_memory_are_refused() {
        assert!(keys_fit(1000, 100, Some(1 << 30)).is_ok());
        assert!(keys_fit(1000, 100, None).is_ok(), "memory unknown");
        let err = keys_fit(20_000_000, 100, Some(1_000_000_000)).unwrap_err();
        assert_eq!(
            err,
            "--keys 20000000: the harness's own copies of the keys alone need about 2.0 GB, \
             more than this machine's 1.0 GB of memory"
        );
        // Both limits are inclusive.
        assert!(keys_fit(10, 100, Some(1000)).is_ok());
        assert!(keys_fit(10, 100, Some(999)).is_err());
        assert!(keys_fit(u32::MAX as usize, 0, None).is_ok());
        assert!(keys_fit(u32::MAX as usize + 1, 0, None).is_err());
        let err = keys_fit(usize::MAX, 100, None).unwrap_err();
        assert!(err.ends_with(&format!("at most {}", u32::MAX)), "{err}");
        let huge = parse(&["--synthetic", "lsm", "--keys", "4000000000"]).unwrap();
        assert!(
            huge.data.source().is_err(),
            "more than any test machine has"
        );
        // `--limit` caps what is generated, so it is what must fit.
        for keys in ["4000000000", "4294967296"] {
            let cut = parse(&["--synthetic", "lsm", "--keys", keys, "--limit", "1000"]).unwrap();
            assert!(cut.data.source().is_ok(), "--keys {keys} --limit 1000");
        }
    }

    #[test]
    fn default_is_the_sample() {
        let cli = parse(&[]).unwrap();
        assert_eq!(cli.data.source().unwrap(), Source::Sample);
        assert_eq!(cli.runs, 3);
    }

    #[test]
    fn sources_are_exclusive() {
        assert!(parse(&["--sample", "--dataset", "x"]).is_err());
        assert!(parse(&["--synthetic", "lsm", "--dataset", "x"]).is_err());
        assert!(parse(&["--keys", "5"]).is_err(), "--keys needs --synthetic");
        assert!(
            parse(&["--order", "random"]).is_err(),
            "--order needs --memtable"
        );
        assert!(parse(&["--inline-flush"]).is_err(), "needs --memtable");
        // Not ignored beside an option of the map workload.
        for map_option in [
            &["--sample"][..],
            &["--dataset", "x"],
            &["--synthetic", "lsm"],
            &["--limit", "5"],
            &["--keep-cr"],
            &["--chart", "x.svg"],
        ] {
            for memtable_option in [&["--order", "random"][..], &["--inline-flush"]] {
                let args = [memtable_option, map_option].concat();
                assert!(parse(&args).is_err(), "{args:?}");
            }
        }
        assert!(
            parse(&["--memtable", "--inline-flush"])
                .unwrap()
                .inline_flush
        );
        assert!(parse(&["--memtable", "--sample"]).is_err());
        assert!(parse(&["--memtable", "--chart", "x.svg"]).is_err());
        let cli = parse(&["--memtable", "--keys", "5", "--order", "sequential"]).unwrap();
        assert!(cli.memtable);
        assert_eq!(cli.data.keys, Some(5));
        assert_eq!(cli.order, Some(Order::Sequential));
        assert!(parse(&["--limit", "0"]).is_err());
        assert!(parse(&["--runs", "0"]).is_err());
    }

    #[test]
    fn child_arguments_round_trip() {
        let cli = parse(&["--synthetic", "seq-u64", "--keys", "10", "--limit", "5"]).unwrap();
        let mut args = vec![OsString::from("memkv-bench")];
        args.extend(cli.data.to_args());
        let again = Cli::try_parse_from(args).unwrap();
        assert_eq!(
            again.data.source().unwrap(),
            Source::Synthetic {
                kind: SyntheticKind::SeqU64,
                keys: 10
            }
        );
        assert_eq!(again.data.load_options().limit, Some(5));
        assert!(!again.data.keep_cr);
        let cli = parse(&["--dataset", "/tmp/k.txt", "--keep-cr"]).unwrap();
        let mut args = vec![OsString::from("memkv-bench")];
        args.extend(cli.data.to_args());
        assert!(Cli::try_parse_from(args).unwrap().data.keep_cr);
        let cli = parse(&["--dataset", "/tmp/k.txt", "--structures", "a,b"]).unwrap();
        assert_eq!(
            cli.structures.as_deref(),
            Some(&["a".to_string(), "b".to_string()][..])
        );
        assert_eq!(cli.data.to_args(), ["--dataset", "/tmp/k.txt"]);
    }
}
