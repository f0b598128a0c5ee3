//! The frozen layer's file format, its storage (heap or memory map), and
//! atomic saving.
//!
//! A frozen layer is one byte string, identical in memory and on disk:
//!
//! ```text
//! offset         size  field
//! 0                 8  magic "MEMKVFRZ"
//! 8                 4  format version (u32): 2 (1 is still read)
//! 12                4  reserved, 0
//! 16               16  value type name (FrozenValue::TYPE_NAME), zero-padded
//! 32            F_LEN  fst: key -> ordinal, in the fst crate's own format
//! 32+F_LEN      C_LEN  value column (layout chosen by the value type; column.rs)
//! 32+F_LEN+C_LEN    J  jump table (jump.rs), possibly empty; version 2 only
//! end-32            8  key count (u64)
//! end-24            8  F_LEN (u64)
//! end-16            8  C_LEN (u64)
//! end-8             4  trailer magic "MKVF"
//! end-4             4  CRC-32 (IEEE) of every byte before it
//! ```
//!
//! All integers are little-endian. The jump table's length is what the
//! header, fst, column and trailer leave (J = 0 in version 1, whose files
//! end with the column): its own footer describes it. Section lengths sit
//! in a trailer rather
//! than the header because the builder streams: it writes the fst as keys
//! arrive and only knows the lengths at the end. The fst carries a checksum
//! of its own, but it covers only the fst; ours covers the whole file, so a
//! flipped bit anywhere (header, fst, column, trailer) is caught before the
//! fst code, which trusts its input and may panic on damaged bytes, ever
//! reads it. CRC-32 detects every error burst of up to 32 bits, so every
//! single-byte flip or truncation is caught; it is not a defence against a
//! deliberately forged file.
//!
//! The checksum comes from `crc32fast`: a small, widely used crate (zip,
//! flate2) that picks a SIMD (PCLMULQDQ / ARMv8 CRC) kernel at run time, so
//! verifying a file costs a fraction of reading it.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::Mmap;

use crate::{Error, Result};

/// The first eight bytes of every frozen layer file.
pub(crate) const MAGIC: [u8; 8] = *b"MEMKVFRZ";
/// The four bytes before the checksum; their absence means truncation.
const TRAILER_MAGIC: [u8; 4] = *b"MKVF";
/// The format version this build writes, and the newest it reads.
pub(crate) const VERSION: u32 = 2;
/// The oldest format version this build reads: version 1 is version 2
/// without a jump table.
const OLDEST_VERSION: u32 = 1;
/// Room for the value type name in the header.
pub(crate) const TYPE_NAME_LEN: usize = 16;
/// Bytes before the fst.
pub(crate) const HEADER_LEN: usize = 32;
/// Bytes after the value column.
pub(crate) const TRAILER_LEN: usize = 32;

/// Writes the header for a layer of values named `type_name`.
pub(crate) fn write_header<W: Write>(out: &mut W, type_name: &str) -> io::Result<()> {
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(&MAGIC);
    header[8..12].copy_from_slice(&VERSION.to_le_bytes());
    header[16..16 + type_name.len()].copy_from_slice(type_name.as_bytes());
    out.write_all(&header)
}

/// Writes the trailer; `out` must have hashed every byte before it.
pub(crate) fn write_trailer<W: Write>(
    out: &mut ChecksumWriter<W>,
    key_count: u64,
    fst_len: u64,
    column_len: u64,
) -> io::Result<()> {
    let mut fields = [0u8; TRAILER_LEN - 4];
    fields[..8].copy_from_slice(&key_count.to_le_bytes());
    fields[8..16].copy_from_slice(&fst_len.to_le_bytes());
    fields[16..24].copy_from_slice(&column_len.to_le_bytes());
    fields[24..28].copy_from_slice(&TRAILER_MAGIC);
    out.write_all(&fields)?;
    let checksum = out.checksum();
    out.write_all(&checksum.to_le_bytes())
}

/// A writer that checksums what passes through it.
pub(crate) struct ChecksumWriter<W> {
    inner: W,
    hasher: crc32fast::Hasher,
}

impl ChecksumWriter<Vec<u8>> {
    /// A writer that appends to `bytes`, with `bytes` already checksummed.
    pub(crate) fn after(bytes: Vec<u8>) -> Self {
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&bytes);
        ChecksumWriter {
            inner: bytes,
            hasher,
        }
    }
}

impl<W: Write> ChecksumWriter<W> {
    pub(crate) fn new(inner: W) -> Self {
        ChecksumWriter {
            inner,
            hasher: crc32fast::Hasher::new(),
        }
    }

    /// The CRC-32 of everything written so far.
    pub(crate) fn checksum(&self) -> u32 {
        self.hasher.clone().finalize()
    }

    pub(crate) fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for ChecksumWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Where the sections of a well-formed file are.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub(crate) fst: Range<usize>,
    pub(crate) column: Range<usize>,
    /// Empty when the file has no jump table.
    pub(crate) jump: Range<usize>,
    pub(crate) key_count: u64,
}

/// How much of a file to check when opening it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// Header, trailer and section lengths only: O(1).
    Lengths,
    /// Also the checksum over every byte (and, by the caller, the column's
    /// contents): O(file size).
    Full,
}

fn corrupt(reason: String) -> Error {
    Error::Corrupt { reason }
}

/// Validates `bytes` as a frozen layer of `type_name` values and locates its
/// sections. Never panics, whatever the bytes.
pub(crate) fn parse(bytes: &[u8], type_name: &str, check: Check) -> Result<Layout> {
    let magic_len = bytes.len().min(MAGIC.len());
    if bytes[..magic_len] != MAGIC[..magic_len] {
        return Err(Error::BadMagic {
            found: bytes[..magic_len].to_vec(),
        });
    }
    if bytes.len() < HEADER_LEN + TRAILER_LEN {
        return Err(corrupt(format!(
            "truncated: {} bytes, but the smallest frozen layer file is {} bytes",
            bytes.len(),
            HEADER_LEN + TRAILER_LEN
        )));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if !(OLDEST_VERSION..=VERSION).contains(&version) {
        return Err(Error::UnsupportedVersion {
            found: version,
            supported: VERSION,
        });
    }
    let trailer = &bytes[bytes.len() - TRAILER_LEN..];
    if trailer[24..28] != TRAILER_MAGIC {
        return Err(corrupt(
            "the trailer is missing: the file is truncated or was not completely written"
                .to_owned(),
        ));
    }
    if check == Check::Full {
        let stored = u32::from_le_bytes(trailer[28..32].try_into().expect("4 bytes"));
        let computed = crc32fast::hash(&bytes[..bytes.len() - 4]);
        if stored != computed {
            return Err(Error::ChecksumMismatch { stored, computed });
        }
    }
    let field = |at: usize| u64::from_le_bytes(trailer[at..at + 8].try_into().expect("8 bytes"));
    let (key_count, fst_len, column_len) = (field(0), field(8), field(16));
    let body_len = (bytes.len() - HEADER_LEN - TRAILER_LEN) as u64;
    let jump_len = fst_len
        .checked_add(column_len)
        .and_then(|sections| body_len.checked_sub(sections))
        .filter(|&jump_len| version > 1 || jump_len == 0);
    let Some(jump_len) = jump_len else {
        return Err(corrupt(format!(
            "the sections ({fst_len} bytes of fst, {column_len} of values) do not add up to the \
             {body_len} bytes between header and trailer"
        )));
    };
    let name_field = &bytes[16..16 + TYPE_NAME_LEN];
    let name_len = name_field
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(TYPE_NAME_LEN);
    let found = &name_field[..name_len];
    if found != type_name.as_bytes() {
        return Err(Error::ValueTypeMismatch {
            expected: type_name.to_owned(),
            found: String::from_utf8_lossy(found).into_owned(),
        });
    }
    // Both lengths are below `bytes.len()` now, so they fit a usize.
    let fst_end = HEADER_LEN + fst_len as usize;
    let column_end = fst_end + column_len as usize;
    check_fst_footer(&bytes[HEADER_LEN..fst_end])?;
    Ok(Layout {
        fst: HEADER_LEN..fst_end,
        column: fst_end..column_end,
        jump: column_end..column_end + jump_len as usize,
        key_count,
    })
}

/// Checks the two fields of the fst's footer that `fst::raw::Fst::new`
/// trusts. Its root address must lie inside the fst: every walk starts
/// there, and the crate's own check of it passes nearly any value. Both it
/// and the key count must fit a `usize`: the crate panics where they do not
/// (on 32-bit targets).
fn check_fst_footer(fst: &[u8]) -> Result<()> {
    // Smaller fsts, and versions the crate does not know, it refuses itself.
    if fst.len() < 36 {
        return Ok(());
    }
    let field = |at: usize| u64::from_le_bytes(fst[at..at + 8].try_into().expect("8 bytes"));
    // Up to version 2 the footer ends the fst; from 3 a checksum follows.
    let end = if field(0) <= 2 {
        fst.len()
    } else {
        fst.len() - 4
    };
    let (keys, root) = (field(end - 16), field(end - 8));
    if root >= fst.len() as u64 {
        return Err(corrupt(format!(
            "the fst's root address {root} lies outside its {} bytes",
            fst.len()
        )));
    }
    if usize::try_from(keys).is_err() {
        return Err(corrupt(format!(
            "the fst claims {keys} keys, more than this machine can count"
        )));
    }
    Ok(())
}

/// The bytes of a layer: owned on the heap, or an opened file's (mapped
/// read-only, or read where the platform maps no files). A clone copies heap
/// bytes (as cloning any owned map does) and shares a file's, which are
/// read-only.
#[derive(Clone)]
pub(crate) enum Storage {
    Heap(Vec<u8>),
    File(Arc<OpenFile>),
}

/// A file's bytes, with its path for the errors found in them later (by
/// `verify`).
pub(crate) struct OpenFile {
    pub(crate) bytes: FileBytes,
    pub(crate) path: PathBuf,
}

/// How a file's bytes are held.
pub(crate) enum FileBytes {
    /// A read-only mapping: page cache, not heap.
    Mapped(Mmap),
    /// Read into the heap where the platform maps no files (WASI).
    Read(Vec<u8>),
}

impl FileBytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(map) => map,
            FileBytes::Read(bytes) => bytes,
        }
    }
}

impl Storage {
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Storage::Heap(bytes) => bytes,
            Storage::File(file) => file.bytes.as_slice(),
        }
    }

    /// The file the bytes are mapped from, if any.
    pub(crate) fn path(&self) -> Option<&Path> {
        match self {
            Storage::Heap(_) => None,
            Storage::File(file) => Some(&file.path),
        }
    }

    /// Maps the file at `path` read-only, or reads it where the platform
    /// maps no files.
    pub(crate) fn map_file(path: &Path) -> Result<Storage> {
        let opening = || format!("opening frozen layer {}", path.display());
        let a_directory = || io::Error::new(io::ErrorKind::IsADirectory, "it is a directory");
        // Windows refuses to open a directory ("Access denied"), and on
        // unix mapping one fails with "No such device": both name the
        // wrong problem.
        let file = File::open(path).map_err(|source| Error::Io {
            context: opening(),
            source: if path.is_dir() { a_directory() } else { source },
        })?;
        if file.metadata().is_ok_and(|meta| meta.is_dir()) {
            return Err(Error::Io {
                context: opening(),
                source: a_directory(),
            });
        }
        // SAFETY: `Mmap::map` is unsafe because the mapped bytes can change
        // (or, if the file shrinks, fault with SIGBUS) when another process
        // modifies the file while it is mapped; Rust's `&[u8]` assumes they
        // cannot. memkv never writes to a file in place (`save` writes a new
        // file and renames it over the old one, which leaves existing
        // mappings of the old file intact), and `FrozenLayer::open` documents
        // that other writers must do the same.
        let bytes = match unsafe { Mmap::map(&file) } {
            Ok(map) => FileBytes::Mapped(map),
            // memmap2 has no mappings on WASI, say: the layer still opens.
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                // Sized to the file, so that `memory_usage` counts no slack.
                let len = file.metadata().map_or(0, |meta| meta.len());
                let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
                (&file)
                    .read_to_end(&mut bytes)
                    .map_err(|source| Error::Io {
                        context: format!("reading frozen layer {}", path.display()),
                        source,
                    })?;
                FileBytes::Read(bytes)
            }
            Err(source) => {
                return Err(Error::Io {
                    context: format!("memory-mapping frozen layer {}", path.display()),
                    source,
                });
            }
        };
        Ok(Storage::File(Arc::new(OpenFile {
            bytes,
            path: path.to_owned(),
        })))
    }
}

/// The fst's bytes: a range of the layer's storage. The fst crate reads
/// through `AsRef<[u8]>`, so lookups on a mapped layer read the map directly.
#[derive(Clone)]
pub(crate) struct FstBytes {
    pub(crate) storage: Storage,
    pub(crate) range: Range<usize>,
}

impl AsRef<[u8]> for FstBytes {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        &self.storage.bytes()[self.range.clone()]
    }
}

/// Writes `bytes` to `path` so that a crash at any moment leaves either the
/// old file or the complete new one: write a temporary file in the same
/// directory, fsync it, rename it over `path`, fsync the directory.
pub(crate) fn save_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    save_atomically_with(path, |file, temp_path| {
        file.write_all(bytes).map_err(|source| Error::Io {
            context: format!("writing temporary file {}", temp_path.display()),
            source,
        })
    })
}

/// [`save_atomically`], with `write` filling the temporary file (given
/// with its path, for error messages) instead of a slice of bytes.
pub(crate) fn save_atomically_with(
    path: &Path,
    write: impl FnOnce(&mut File, &Path) -> Result<()>,
) -> Result<()> {
    let io_error = |context: String| move |source| Error::Io { context, source };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let file_name = path.file_name().ok_or_else(|| Error::Io {
        context: format!("saving frozen layer to {}", path.display()),
        source: io::Error::new(io::ErrorKind::InvalidInput, "the path does not name a file"),
    })?;
    // Opened before anything changes: a directory that cannot be opened
    // (writable but not readable) must fail the save while the old file
    // is still in place, not after the rename.
    let dir_handle = open_dir(dir).map_err(io_error(format!(
        "opening directory {} to sync it",
        dir.display()
    )))?;
    let (temp_path, mut file) = create_temp_file(dir, file_name)?;
    let mut guard = RemoveOnDrop(Some(temp_path.clone()));
    write(&mut file, &temp_path)?;
    file.sync_all().map_err(io_error(format!(
        "syncing temporary file {}",
        temp_path.display()
    )))?;
    drop(file);
    fs::rename(&temp_path, path).map_err(io_error(format!(
        "renaming {} to {}",
        temp_path.display(),
        path.display()
    )))?;
    guard.0 = None;
    match dir_handle {
        Some(dir_handle) => dir_handle.sync_all().map_err(io_error(format!(
            "syncing directory {} (the new file is in place, but may not be durable)",
            dir.display()
        ))),
        None => Ok(()),
    }
}

/// Numbers this process's temporary files apart.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The longest target name a temporary file's name repeats: with the dot,
/// the pid and the number it stays under the usual 255-byte limit.
const TEMP_NAME_MAX: usize = 200;

/// The name of temporary file `number` for `file_name`: after the target,
/// so that a leftover one says what it was for, unless that name is too
/// long to repeat.
fn temp_name(file_name: &std::ffi::OsStr, number: u64) -> std::ffi::OsString {
    let mut name = std::ffi::OsString::from(".");
    if file_name.len() <= TEMP_NAME_MAX {
        name.push(file_name);
    } else {
        name.push("memkv");
    }
    name.push(format!(".{}.{number}.tmp", process_id()));
    name
}

/// This process's id, or 0 where there are none (WASI, whose
/// `std::process::id` panics): two processes' names may then meet, and
/// `create_temp_file` steps over a name that is taken.
fn process_id() -> u32 {
    if cfg!(target_os = "wasi") {
        0
    } else {
        std::process::id()
    }
}

/// Creates a fresh file next to the target, named after it.
fn create_temp_file(dir: &Path, file_name: &std::ffi::OsStr) -> Result<(PathBuf, File)> {
    loop {
        let number = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp_path = dir.join(temp_name(file_name, number));
        match File::options()
            .write(true)
            .create_new(true)
            .open(&temp_path)
        {
            Ok(file) => return Ok((temp_path, file)),
            // Left over from a crashed process that had our pid: pick another.
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(source) => {
                return Err(Error::Io {
                    context: format!("creating temporary file {}", temp_path.display()),
                    source,
                });
            }
        }
    }
}

/// The directory to sync after the rename, which makes it durable: on Unix,
/// the directory entry is only on disk once the directory itself is synced.
fn open_dir(dir: &Path) -> io::Result<Option<File>> {
    #[cfg(unix)]
    {
        File::open(dir).map(Some)
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(None)
    }
}

/// Deletes a temporary file unless disarmed (by taking the path out).
struct RemoveOnDrop(Option<PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            // Best effort: the error being reported matters more.
            let _ = fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minimal_file(type_name: &str) -> Vec<u8> {
        let mut out = ChecksumWriter::new(Vec::new());
        write_header(&mut out, type_name).unwrap();
        out.write_all(b"fst!col").unwrap();
        write_trailer(&mut out, 0, 4, 3).unwrap();
        out.into_inner()
    }

    #[test]
    fn parses_what_it_writes() {
        let bytes = minimal_file("u64");
        let layout = parse(&bytes, "u64", Check::Full).unwrap();
        assert_eq!(&bytes[layout.fst], b"fst!");
        assert_eq!(&bytes[layout.column], b"col");
        assert_eq!(layout.key_count, 0);
    }

    #[test]
    fn names_what_is_wrong() {
        let bytes = minimal_file("u64");
        assert!(matches!(
            parse(&bytes, "i64", Check::Full),
            Err(Error::ValueTypeMismatch { expected, found }) if expected == "i64" && found == "u64"
        ));
        assert!(matches!(
            parse(b"", "u64", Check::Full),
            Err(Error::Corrupt { .. })
        ));
        assert!(matches!(
            parse(b"MEMK", "u64", Check::Full),
            Err(Error::Corrupt { .. })
        ));
        assert!(matches!(
            parse(b"PK\x03\x04 a zip file", "u64", Check::Full),
            Err(Error::BadMagic { found }) if found == b"PK\x03\x04 a z"
        ));
        let mut newer = bytes.clone();
        newer[8] = 3;
        assert!(matches!(
            parse(&newer, "u64", Check::Full),
            Err(Error::UnsupportedVersion {
                found: 3,
                supported: 2
            })
        ));
        let mut unversioned = bytes.clone();
        unversioned[8] = 0;
        assert!(matches!(
            parse(&unversioned, "u64", Check::Lengths),
            Err(Error::UnsupportedVersion { found: 0, .. })
        ));
        let mut flipped = bytes.clone();
        flipped[33] ^= 1;
        assert!(matches!(
            parse(&flipped, "u64", Check::Full),
            Err(Error::ChecksumMismatch { .. })
        ));
        // Without the checksum the flip in the body goes unnoticed.
        assert!(parse(&flipped, "u64", Check::Lengths).is_ok());
        let mut lengths = bytes.clone();
        let at = lengths.len() - 24;
        lengths[at] = 5;
        assert!(matches!(
            parse(&lengths, "u64", Check::Lengths),
            Err(Error::Corrupt { .. })
        ));
    }

    #[test]
    fn save_replaces_the_file_and_leaves_no_temporary() {
        let dir = crate::scratch::dir();
        let path = dir.path().join("layer.memkv");
        save_atomically(&path, b"first").unwrap();
        save_atomically(&path, b"second").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("layer.memkv")]);
    }

    #[test]
    fn the_temporary_file_is_made_beside_the_target() {
        let dir = crate::scratch::dir();
        let path = dir.path().join("layer.memkv");
        let mut seen = None;
        save_atomically_with(&path, |_, temp_path| {
            seen = Some(temp_path.to_owned());
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.unwrap().parent(), Some(dir.path()));
        // A bare file name is in the current directory. The write fails, so
        // nothing is left there.
        let mut seen = None;
        let result = save_atomically_with(Path::new("memkv-test-bare.memkv"), |_, temp_path| {
            seen = Some(temp_path.to_owned());
            Err(Error::Io {
                context: "test".to_owned(),
                source: io::Error::other("refused"),
            })
        });
        assert!(matches!(result, Err(Error::Io { context, .. }) if context == "test"));
        let seen = seen.unwrap();
        assert_eq!(seen.parent(), Some(Path::new(".")));
        assert!(!seen.exists());
    }

    #[test]
    fn a_long_file_name_is_not_repeated_in_the_temporary_one() {
        let dir = crate::scratch::dir();
        let long = "n".repeat(250);
        assert!(temp_name(long.as_ref(), u64::MAX).len() <= 255);
        assert_eq!(
            temp_name("layer.memkv".as_ref(), 7).to_str().unwrap(),
            format!(".layer.memkv.{}.7.tmp", process_id())
        );
        let path = dir.path().join(&long);
        save_atomically(&path, b"saved").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"saved");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn mapping_a_directory_says_so() {
        let dir = crate::scratch::dir();
        let Err(Error::Io { context, source }) = Storage::map_file(dir.path()) else {
            panic!("a directory mapped");
        };
        assert!(
            context.contains(&dir.path().display().to_string()),
            "{context}"
        );
        assert_eq!(source.kind(), io::ErrorKind::IsADirectory, "{source}");
    }

    #[test]
    fn a_leftover_temporary_file_is_stepped_over() {
        let dir = crate::scratch::dir();
        let name = std::ffi::OsStr::new("layer.memkv");
        // The next names this process may pick (other tests take numbers
        // too, so block a good many).
        let next = TEMP_COUNTER.load(Ordering::Relaxed);
        for number in next..next + 1000 {
            fs::write(dir.path().join(temp_name(name, number)), b"stale").unwrap();
        }
        save_atomically(&dir.path().join(name), b"fresh").unwrap();
        assert_eq!(fs::read(dir.path().join(name)).unwrap(), b"fresh");
        // Any other error ends the search.
        let missing = dir.path().join("no-such-dir").join(name);
        assert!(matches!(
            save_atomically(&missing, b"lost"),
            Err(Error::Io { .. })
        ));
    }

    #[test]
    fn failed_save_keeps_the_old_file() {
        let dir = crate::scratch::dir();
        let path = dir.path().join("layer.memkv");
        save_atomically(&path, b"old").unwrap();
        // Renaming a file over a non-empty directory fails after the
        // temporary file was written; the temporary must be cleaned up.
        let blocker = dir.path().join("blocker");
        fs::create_dir(&blocker).unwrap();
        fs::write(blocker.join("x"), b"").unwrap();
        assert!(matches!(
            save_atomically(&blocker, b"new"),
            Err(Error::Io { .. })
        ));
        assert_eq!(fs::read(&path).unwrap(), b"old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
