//! Datasets: the embedded sample, a user's file, or synthetic keys.
//!
//! A file holds one key per line. Keys are raw bytes (not necessarily UTF-8).
//! Line endings: the `\n` ends a line; one trailing `\r` is stripped too (a
//! file written on Windows would otherwise get a `\r` on every key), unless
//! `--keep-cr` asks to keep it; the number stripped is reported. Blank lines
//! and repeated keys are dropped, and both counts are reported. A key's value
//! is the 1-based number of the line it first appears on.

use std::fmt;
use std::fs::File;
use std::hash::BuildHasher;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use hashbrown::HashTable;

use crate::rng::{SEED_SYNTHETIC, SplitMix64};

/// The committed 100k-path sample, built into the binary so that the default
/// run needs no file.
pub(crate) const SAMPLE: &[u8] = include_bytes!("../../data/debian-paths-100k.txt");
/// How the sample is named in the output.
pub(crate) const SAMPLE_NAME: &str = "debian-paths-100k (embedded sample)";

/// Length of each value of the `lsm` synthetic dataset.
pub(crate) const LSM_VALUE_LEN: usize = 100;

/// The kinds of synthetic dataset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SyntheticKind {
    /// Uniformly random 16-byte keys.
    Random16,
    /// The big-endian bytes of 0, 1, 2, …: sorted 8-byte keys, inserted in
    /// order.
    SeqU64,
    /// 16-byte keys (a 4-byte table id out of 16, then 12 random bytes), each
    /// with a 100-byte value: the shape of an LSM memtable's entries.
    Lsm,
}

impl SyntheticKind {
    /// The name used on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SyntheticKind::Random16 => "random16",
            SyntheticKind::SeqU64 => "seq-u64",
            SyntheticKind::Lsm => "lsm",
        }
    }
}

/// Where the keys come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// The embedded 100k sample of Debian paths.
    Sample,
    /// A file with one key per line.
    File(PathBuf),
    /// Generated keys.
    Synthetic {
        /// Which generator.
        kind: SyntheticKind,
        /// How many keys to generate.
        keys: usize,
    },
}

/// How a dataset is read.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LoadOptions {
    /// Keep only the first this-many distinct keys.
    pub(crate) limit: Option<usize>,
    /// Keep a trailing `\r` as part of the key.
    pub(crate) keep_cr: bool,
}

/// Counts of what loading dropped or changed, so the user sees them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LoadReport {
    /// Lines read (for synthetic data: keys generated).
    pub(crate) lines: u64,
    /// Empty lines dropped.
    pub(crate) blank: u64,
    /// Lines dropped because the key appeared on an earlier line.
    pub(crate) duplicates: u64,
    /// Keys from which a trailing `\r` was removed.
    pub(crate) cr_stripped: u64,
    /// Whether `--limit` stopped reading before the end of the data.
    pub(crate) limited: bool,
}

/// Why a dataset could not be loaded.
#[derive(Debug)]
pub(crate) enum LoadError {
    /// The file could not be opened.
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Reading the file failed part-way.
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// There is no key to measure.
    Empty {
        /// The dataset's name.
        name: String,
        /// What was read.
        report: LoadReport,
    },
    /// Keys are indexed with `u32` to keep the harness's own arrays small.
    TooManyKeys {
        /// The dataset's name.
        name: String,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Open { path, source } => {
                write!(f, "cannot open dataset {}: {source}", path.display())
            }
            LoadError::Read { path, source } => {
                write!(f, "cannot read dataset {}: {source}", path.display())
            }
            LoadError::Empty { name, report } => write!(
                f,
                "dataset {name} has no keys ({} lines read, {} blank)",
                report.lines, report.blank
            ),
            LoadError::TooManyKeys { name } => {
                write!(
                    f,
                    "dataset {name} has more than {} keys, the harness's limit",
                    u32::MAX
                )
            }
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Open { source, .. } | LoadError::Read { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Keys stored back to back in one buffer: one allocation for millions of
/// keys, so that the harness's own copy costs little and loads fast.
#[derive(Debug, Default)]
pub(crate) struct Keys {
    bytes: Vec<u8>,
    /// `offsets[i]..offsets[i + 1]` is key `i`; `offsets[0] == 0`.
    offsets: Vec<usize>,
}

impl Keys {
    fn with_capacity(bytes: usize) -> Self {
        Keys {
            bytes: Vec::with_capacity(bytes),
            offsets: vec![0],
        }
    }

    fn push(&mut self, key: &[u8]) {
        self.bytes.extend_from_slice(key);
        self.offsets.push(self.bytes.len());
    }

    /// The keys at `order`'s indices, laid out in that order.
    pub(crate) fn gather(&self, order: &[u32]) -> Keys {
        let mut out = Keys::with_capacity(self.total_bytes());
        out.offsets.reserve(order.len());
        for &i in order {
            out.push(self.get(i as usize));
        }
        out
    }

    /// `n` sixteen-byte counter keys of table `table`: its id (big-endian),
    /// four zero bytes, then 0, 1, 2, … big-endian, so each sorts after the
    /// one before.
    pub(crate) fn counters(n: usize, table: u32) -> Keys {
        let mut out = Keys::with_capacity(n * 16);
        out.offsets.reserve(n);
        let mut key = [0u8; 16];
        key[..4].copy_from_slice(&table.to_be_bytes());
        for i in 0..n as u64 {
            key[8..].copy_from_slice(&i.to_be_bytes());
            out.push(&key);
        }
        out
    }

    /// Key `i`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> &[u8] {
        &self.bytes[self.offsets[i]..self.offsets[i + 1]]
    }

    /// How many keys.
    pub(crate) fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Total bytes of all keys.
    pub(crate) fn total_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// All keys in order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        self.offsets.windows(2).map(|w| &self.bytes[w[0]..w[1]])
    }

    /// Whether some key holds a zero byte (some peers need keys that don't).
    pub(crate) fn any_nul(&self) -> bool {
        self.bytes.contains(&0)
    }
}

/// A loaded dataset: distinct keys in dataset order, each with its value.
#[derive(Debug)]
pub(crate) struct Dataset {
    /// How the dataset is named in the output.
    pub(crate) name: String,
    /// The distinct keys, in the order of the data.
    pub(crate) keys: Keys,
    /// `values[i]` is key `i`'s line number (1-based, first occurrence).
    pub(crate) values: Vec<u64>,
    /// Length of each key's out-of-line value (the `lsm` dataset), else 0.
    pub(crate) value_len: usize,
    /// What loading dropped.
    pub(crate) report: LoadReport,
}

impl Dataset {
    /// Number of keys.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// Total bytes of the values stored out of line (see `value_len`).
    pub(crate) fn raw_value_bytes(&self) -> usize {
        self.value_len * self.len()
    }

    /// A hash of the keys, their order and their values, as 16 hex digits:
    /// the parent and each child compute it, so that a child that read a
    /// file changed since the parent did is noticed. SipHash-1-3 with fixed
    /// keys (std's `DefaultHasher::new`), the same in parent and child, as
    /// they are one binary: 0.12 s for the 471 MB of Debian paths. (A
    /// multiply-rotate mix tried first let two flipped bits cancel.)
    pub(crate) fn fingerprint(&self) -> String {
        use std::hash::Hasher;
        let mut h = std::hash::DefaultHasher::new();
        h.write(&self.keys.bytes);
        for &offset in &self.keys.offsets {
            h.write_usize(offset);
        }
        for &value in &self.values {
            h.write_u64(value);
        }
        h.write_usize(self.value_len);
        format!("{:016x}", h.finish())
    }
}

/// Gathers distinct keys, dropping repeats.
struct Builder {
    keys: Keys,
    values: Vec<u64>,
    /// Indices of `keys`, hashed by key bytes: the set of keys seen so far
    /// without a second copy of them.
    seen: HashTable<u32>,
    hasher: hashbrown::DefaultHashBuilder,
    report: LoadReport,
    limit: usize,
}

impl Builder {
    fn new(capacity_bytes: usize, limit: Option<usize>) -> Self {
        Builder {
            keys: Keys::with_capacity(capacity_bytes),
            values: Vec::new(),
            seen: HashTable::new(),
            hasher: hashbrown::DefaultHashBuilder::default(),
            report: LoadReport::default(),
            limit: limit.unwrap_or(usize::MAX),
        }
    }

    fn full(&self) -> bool {
        self.keys.len() >= self.limit
    }

    /// Adds the key from line `line`; returns false when it was a repeat.
    fn add(&mut self, key: &[u8], line: u64) -> Result<bool, ()> {
        let hash = self.hasher.hash_one(key);
        let keys = &self.keys;
        if self
            .seen
            .find(hash, |&i| keys.get(i as usize) == key)
            .is_some()
        {
            self.report.duplicates += 1;
            return Ok(false);
        }
        let index = u32::try_from(self.keys.len()).map_err(|_| ())?;
        self.keys.push(key);
        self.values.push(line);
        let (keys, hasher) = (&self.keys, &self.hasher);
        self.seen
            .insert_unique(hash, index, |&i| hasher.hash_one(keys.get(i as usize)));
        Ok(true)
    }

    fn finish(mut self, name: String, value_len: usize) -> Result<Dataset, LoadError> {
        if self.keys.len() == 0 {
            return Err(LoadError::Empty {
                name,
                report: self.report,
            });
        }
        self.keys.bytes.shrink_to_fit();
        self.keys.offsets.shrink_to_fit();
        self.values.shrink_to_fit();
        Ok(Dataset {
            name,
            keys: self.keys,
            values: self.values,
            value_len,
            report: self.report,
        })
    }
}

/// Loads a dataset. `progress` is called now and then with the number of
/// input bytes consumed so far.
pub(crate) fn load(
    source: &Source,
    options: LoadOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<Dataset, LoadError> {
    match source {
        Source::Sample => {
            let path = Path::new("<embedded sample>");
            parse_lines(
                SAMPLE,
                SAMPLE_NAME.to_string(),
                path,
                SAMPLE.len(),
                options,
                progress,
            )
        }
        Source::File(path) => load_file(path, options, progress),
        Source::Synthetic { kind, keys } => synthetic(*kind, *keys, options.limit),
    }
}

fn load_file(
    path: &Path,
    options: LoadOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<Dataset, LoadError> {
    let open_err = |source| LoadError::Open {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(open_err)?;
    let meta = file.metadata().map_err(open_err)?;
    if meta.is_dir() {
        return Err(open_err(io::Error::other("is a directory")));
    }
    // Each structure's child process opens the file again: a pipe would
    // reach it empty, and every row would read as memkv's failure.
    if !meta.is_file() {
        return Err(open_err(io::Error::other(
            "is not a regular file (a pipe?), and every structure's process reads it again: \
             write the keys to a file first",
        )));
    }
    // The file size bounds the key bytes: reserving it once avoids the
    // doublings, whose freed buffers would linger in the allocator.
    let capacity = match options.limit {
        Some(_) => 0,
        None => usize::try_from(meta.len()).unwrap_or(0),
    };
    let reader = BufReader::with_capacity(1 << 20, file);
    parse_lines(
        reader,
        path.display().to_string(),
        path,
        capacity,
        options,
        progress,
    )
}

/// Splits `reader` into keys; `path` names the input in read errors.
fn parse_lines<R: BufRead>(
    mut reader: R,
    name: String,
    path: &Path,
    capacity: usize,
    options: LoadOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<Dataset, LoadError> {
    let read_err = |source| LoadError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut b = Builder::new(capacity, options.limit);
    let mut line = Vec::new();
    let mut consumed = 0u64;
    let mut reported = 0u64;
    while !b.full() {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(read_err)?;
        if n == 0 {
            break;
        }
        consumed += n as u64;
        if consumed - reported >= 1 << 20 {
            progress(consumed);
            reported = consumed;
        }
        b.report.lines += 1;
        let mut key = line.as_slice();
        if let Some(k) = key.strip_suffix(b"\n") {
            key = k;
        }
        if !options.keep_cr
            && let Some(k) = key.strip_suffix(b"\r")
        {
            key = k;
            b.report.cr_stripped += 1;
        }
        if key.is_empty() {
            b.report.blank += 1;
            continue;
        }
        let line_no = b.report.lines;
        b.add(key, line_no)
            .map_err(|()| LoadError::TooManyKeys { name: name.clone() })?;
    }
    if b.full() {
        // Stopped by --limit: is there anything left?
        b.report.limited = !reader.fill_buf().map_err(read_err)?.is_empty();
    }
    progress(consumed);
    b.finish(name, 0)
}

/// Generates a synthetic dataset with a fixed seed. `limit` caps the count
/// like it does for files.
fn synthetic(
    kind: SyntheticKind,
    count: usize,
    limit: Option<usize>,
) -> Result<Dataset, LoadError> {
    let count = count.min(limit.unwrap_or(usize::MAX));
    let key_len = match kind {
        SyntheticKind::Random16 | SyntheticKind::Lsm => 16,
        SyntheticKind::SeqU64 => 8,
    };
    let mut b = Builder::new(count * key_len, None);
    let mut rng = SplitMix64::new(SEED_SYNTHETIC);
    let mut key = [0u8; 16];
    let name = format!(
        "synthetic {} ({count} keys, seed {SEED_SYNTHETIC:#x})",
        kind.name()
    );
    for i in 0..count as u64 {
        let key = match kind {
            SyntheticKind::Random16 => {
                rng.fill(&mut key);
                &key[..]
            }
            SyntheticKind::SeqU64 => {
                key[..8].copy_from_slice(&i.to_be_bytes());
                &key[..8]
            }
            SyntheticKind::Lsm => {
                let table = rng.below(16) as u32;
                key[..4].copy_from_slice(&table.to_be_bytes());
                rng.fill(&mut key[4..]);
                &key[..]
            }
        };
        b.report.lines += 1;
        b.add(key, i + 1)
            .map_err(|()| LoadError::TooManyKeys { name: name.clone() })?;
    }
    let value_len = if kind == SyntheticKind::Lsm {
        LSM_VALUE_LEN
    } else {
        0
    };
    b.finish(name, value_len)
}

/// The `lsm` dataset's value for the key on line `line`: 100 bytes derived
/// from the line number, so the child can regenerate them without storing
/// them twice.
pub(crate) fn lsm_value(line: u64, out: &mut [u8; LSM_VALUE_LEN]) {
    SplitMix64::new(SEED_SYNTHETIC ^ line.rotate_left(32)).fill(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(data: &[u8], options: LoadOptions) -> Result<Dataset, LoadError> {
        parse_lines(
            data,
            "test".into(),
            Path::new("test"),
            0,
            options,
            &mut |_| {},
        )
    }

    fn keys(d: &Dataset) -> Vec<&[u8]> {
        d.keys.iter().collect()
    }

    #[test]
    fn blank_lines_and_duplicates_are_dropped_and_counted() {
        let d = parse(b"a\n\nb\na\n\n\nc\nb\n", LoadOptions::default()).unwrap();
        assert_eq!(keys(&d), [&b"a"[..], b"b", b"c"]);
        assert_eq!(d.values, [1, 3, 7]);
        assert_eq!(
            d.report,
            LoadReport {
                lines: 8,
                blank: 3,
                duplicates: 2,
                cr_stripped: 0,
                limited: false
            }
        );
    }

    #[test]
    fn fingerprints_tell_datasets_apart() {
        let print = |data: &[u8]| parse(data, LoadOptions::default()).unwrap().fingerprint();
        let base = print(b"alpha\nbeta\ngamma\n");
        assert_eq!(base.len(), 16);
        assert_eq!(base, print(b"alpha\nbeta\ngamma\n"));
        for other in [
            &b"alpha\nbeta\ngammb\n"[..], // a byte
            b"beta\nalpha\ngamma\n",      // the order
            b"alph\nabeta\ngamma\n",      // where a key ends
            b"alpha\nbeta\n",             // a key fewer
            b"alpha\n\nbeta\ngamma\n",    // a line number (the values)
        ] {
            assert_ne!(base, print(other), "{}", other.escape_ascii());
        }
        // Two flipped bits, bit 7 of byte 7 and bit 4 of byte 11, which
        // cancelled in a multiply-rotate mix; and each alone.
        let base = print(b"abcdefghijkl\n");
        for other in [
            &b"abcdefg\xe8ijk|\n"[..],
            b"abcdefg\xe8ijkl\n",
            b"abcdefghijk|\n",
        ] {
            assert_ne!(base, print(other), "{}", other.escape_ascii());
        }
    }

    #[test]
    fn last_line_without_newline_counts() {
        let d = parse(b"x\ny", LoadOptions::default()).unwrap();
        assert_eq!(keys(&d), [&b"x"[..], b"y"]);
    }

    #[test]
    fn non_utf8_bytes_are_kept() {
        let d = parse(b"\xff\xfe\n\x00a\x80\n", LoadOptions::default()).unwrap();
        assert_eq!(keys(&d), [&b"\xff\xfe"[..], b"\x00a\x80"]);
        assert!(d.keys.any_nul());
    }

    #[test]
    fn one_trailing_cr_is_stripped_unless_kept() {
        let data = b"a\r\nb\r\r\n\r\nc\rd\n";
        let d = parse(data, LoadOptions::default()).unwrap();
        assert_eq!(keys(&d), [&b"a"[..], b"b\r", b"c\rd"]);
        assert_eq!(d.report.cr_stripped, 3);
        assert_eq!(d.report.blank, 1);
        let d = parse(
            data,
            LoadOptions {
                keep_cr: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(keys(&d), [&b"a\r"[..], b"b\r\r", b"\r", b"c\rd"]);
        assert_eq!(d.report.cr_stripped, 0);
    }

    #[test]
    fn limit_takes_the_first_distinct_keys() {
        let d = parse(
            b"a\na\nb\nc\nd\n",
            LoadOptions {
                limit: Some(2),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(keys(&d), [&b"a"[..], b"b"]);
        assert!(d.report.limited);
        let d = parse(
            b"a\nb\n",
            LoadOptions {
                limit: Some(2),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(!d.report.limited);
    }

    #[test]
    fn empty_dataset_is_an_error() {
        for data in [&b""[..], b"\n\n\r\n"] {
            match parse(data, LoadOptions::default()) {
                Err(LoadError::Empty { .. }) => {}
                other => panic!("expected Empty, got {other:?}"),
            }
        }
        let msg = parse(b"\n\n", LoadOptions::default())
            .unwrap_err()
            .to_string();
        assert_eq!(msg, "dataset test has no keys (2 lines read, 2 blank)");
    }

    #[test]
    fn missing_file_is_an_error_with_the_path() {
        let path = PathBuf::from("/nonexistent/memkv-bench/keys.txt");
        let err = load(&Source::File(path), LoadOptions::default(), &mut |_| {}).unwrap_err();
        assert!(matches!(err, LoadError::Open { .. }));
        assert!(
            err.to_string()
                .starts_with("cannot open dataset /nonexistent/memkv-bench/keys.txt:")
        );
    }

    #[test]
    fn directory_is_an_error() {
        let err = load(
            &Source::File(std::env::temp_dir()),
            LoadOptions::default(),
            &mut |_| {},
        )
        .unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
    }

    #[test]
    fn sample_loads() {
        let d = load(&Source::Sample, LoadOptions::default(), &mut |_| {}).unwrap();
        assert_eq!(d.len(), 100_000);
        assert_eq!(d.report.duplicates, 0);
        assert_eq!(d.report.blank, 0);
    }

    #[test]
    fn counter_keys_count_up_in_one_table() {
        let keys = Keys::counters(300, 7);
        assert_eq!(keys.len(), 300);
        assert_eq!(keys.total_bytes(), 300 * 16);
        assert_eq!(
            keys.get(0),
            [0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(keys.get(257)[8..], 257u64.to_be_bytes());
        assert!((1..300).all(|i| keys.get(i - 1) < keys.get(i)));
        assert!((0..300).all(|i| keys.get(i)[..8] == [0, 0, 0, 7, 0, 0, 0, 0]));
    }

    #[test]
    fn synthetic_datasets_are_deterministic() {
        for kind in [
            SyntheticKind::Random16,
            SyntheticKind::SeqU64,
            SyntheticKind::Lsm,
        ] {
            let a = synthetic(kind, 1000, None).unwrap();
            let b = synthetic(kind, 1000, Some(1000)).unwrap();
            assert_eq!(a.len(), 1000);
            assert!(a.keys.iter().eq(b.keys.iter()));
            assert_eq!(a.values, (1..=1000).collect::<Vec<u64>>());
        }
        let seq = synthetic(SyntheticKind::SeqU64, 3, None).unwrap();
        assert_eq!(seq.keys.get(2), 2u64.to_be_bytes());
        let lsm = synthetic(SyntheticKind::Lsm, 10, None).unwrap();
        assert_eq!(lsm.raw_value_bytes(), 1000);
        assert!(
            lsm.keys
                .iter()
                .all(|k| k.len() == 16 && k[..3] == [0, 0, 0] && k[3] < 16)
        );
        assert_eq!(
            synthetic(SyntheticKind::Random16, 50, Some(7))
                .unwrap()
                .len(),
            7
        );
    }
}
