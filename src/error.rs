//! The crate's error type.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Everything that can go wrong in memkv, with the offending data where there
/// is any.
///
/// Operations that can fail on user input (a builder fed unsorted keys, a
/// truncated or damaged file, a map past its capacity) return this instead
/// of panicking. Keys have no length limit: no structure refuses a key for
/// its length.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The structure cannot grow any further (its internal address space is
    /// exhausted; see the type's documentation for the limit).
    CapacityExceeded {
        /// The number of bytes the structure held when it refused to grow.
        bytes: usize,
    },
    /// An I/O error, with the operation and path it happened on when known.
    Io {
        /// What was being done, e.g. "opening /tmp/x.memkv".
        context: String,
        /// The underlying error.
        source: io::Error,
    },
    /// A sorted builder was given a key smaller than the one before it.
    OutOfOrder {
        /// The last key the builder accepted.
        previous: Vec<u8>,
        /// The rejected key, which sorts before `previous`.
        got: Vec<u8>,
    },
    /// A sorted builder was given the same key twice in a row.
    DuplicateKey {
        /// The repeated key.
        key: Vec<u8>,
    },
    /// The bytes do not start with the file's magic number: they are not a
    /// memkv file of the expected kind (or are damaged at the very start).
    BadMagic {
        /// The first bytes found (at most eight).
        found: Vec<u8>,
    },
    /// The file was written in a format version this build cannot read.
    UnsupportedVersion {
        /// The version stored in the file.
        found: u32,
        /// The newest version this build reads (the one it writes).
        supported: u32,
    },
    /// The checksum stored in the file does not match its contents: the file
    /// was damaged (a flipped bit, a truncated or torn write).
    ChecksumMismatch {
        /// The checksum stored in the file.
        stored: u32,
        /// The checksum computed over the bytes actually read.
        computed: u32,
    },
    /// The file stores values of another type than the one asked for.
    ValueTypeMismatch {
        /// The value type the caller asked for.
        expected: String,
        /// The value type recorded in the file.
        found: String,
    },
    /// The bytes are structurally invalid: truncated, or with sections
    /// whose lengths or contents do not add up.
    Corrupt {
        /// What is wrong, in words.
        reason: String,
    },
    /// An error reported by the `fst` crate that no other variant describes.
    Fst(fst::Error),
    /// A file's contents were refused: `error` says why (one of the variants
    /// above), `path` which file. Opening a file returns its contents'
    /// errors this way, so that the message names the file; an I/O error
    /// names it in its `context` instead. Match on
    /// [`without_path`](Self::without_path) to handle an error the same
    /// whether or not it came from a file.
    ///
    /// ```
    /// use memkv::{Error, FrozenLayer};
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("notes.txt");
    /// std::fs::write(&path, "not a layer, but long enough for a header and a trailer")?;
    /// let err = FrozenLayer::<u64>::open(&path).unwrap_err();
    /// assert_eq!(err.path(), Some(path.as_path()));
    /// assert!(matches!(err.without_path(), Error::BadMagic { .. }));
    /// assert!(err.to_string().ends_with("notes.txt: not a memkv file: it starts with \"not a la\" \
    ///                                    instead of the magic number"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    InFile {
        /// The file, as the caller named it.
        path: PathBuf,
        /// What is wrong with its contents.
        error: Box<Error>,
    },
}

impl Error {
    /// The file the error is about, for an [`Error::InFile`].
    pub fn path(&self) -> Option<&Path> {
        match self {
            Error::InFile { path, .. } => Some(path),
            _ => None,
        }
    }

    /// The error itself, without the file it was found in: the `error` of
    /// an [`Error::InFile`], any other error as it is.
    ///
    /// ```
    /// use memkv::{Error, FrozenLayer};
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let layer = FrozenLayer::from_sorted_iter([("k", 1u64)])?;
    /// let path = dir.path().join("ids.memkv");
    /// layer.save(&path)?;
    /// let from_file = FrozenLayer::<u32>::open(&path).unwrap_err();
    /// let from_bytes = FrozenLayer::<u32>::from_bytes(layer.as_bytes().to_vec()).unwrap_err();
    /// for err in [from_file, from_bytes] {
    ///     assert!(matches!(err.without_path(), Error::ValueTypeMismatch { .. }));
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn without_path(&self) -> &Error {
        match self {
            Error::InFile { error, .. } => error,
            other => other,
        }
    }

    /// This error, found in the file at `path`: an [`Error::InFile`],
    /// unless it already names a file (an `InFile`, or an [`Error::Io`],
    /// whose context does).
    pub(crate) fn in_file(self, path: impl Into<PathBuf>) -> Error {
        match self {
            Error::InFile { .. } | Error::Io { .. } => self,
            error => Error::InFile {
                path: path.into(),
                error: Box::new(error),
            },
        }
    }
}

/// Shows a key in an error message: printable ASCII as is, other bytes
/// escaped, and long keys cut short (with their length) so that one bad
/// 1 MiB key does not flood a log.
struct DisplayKey<'a>(&'a [u8]);

impl fmt::Display for DisplayKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 100;
        if self.0.len() <= SHOWN {
            write!(f, "\"{}\"", self.0.escape_ascii())
        } else {
            let len = self.0.len();
            write!(f, "\"{}\"... ({len} bytes)", self.0[..SHOWN].escape_ascii())
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::CapacityExceeded { bytes } => {
                write!(
                    f,
                    "capacity exceeded: the structure already holds {bytes} bytes"
                )
            }
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::OutOfOrder { previous, got } => write!(
                f,
                "keys out of order: {} was given after {}, but keys must be strictly increasing",
                DisplayKey(got),
                DisplayKey(previous)
            ),
            Error::DuplicateKey { key } => {
                write!(
                    f,
                    "duplicate key {}: keys must be strictly increasing",
                    DisplayKey(key)
                )
            }
            Error::BadMagic { found } => write!(
                f,
                "not a memkv file: it starts with {} instead of the magic number",
                DisplayKey(found)
            ),
            Error::UnsupportedVersion { found, supported } => write!(
                f,
                "unsupported file format version {found} (this build reads versions 1 to {supported})"
            ),
            Error::ChecksumMismatch { stored, computed } => write!(
                f,
                "checksum mismatch: the file says {stored:#010x} but its bytes sum to {computed:#010x}; \
                 the file is damaged"
            ),
            Error::ValueTypeMismatch { expected, found } => write!(
                f,
                "value type mismatch: the file stores {found:?} values, but {expected:?} was asked for"
            ),
            Error::Corrupt { reason } => write!(f, "corrupt data: {reason}"),
            Error::Fst(err) => write!(f, "fst error: {err}"),
            Error::InFile { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Fst(err) => Some(err),
            // The message already includes the error's own, so the chain
            // goes on from its source (as `Display` and `source` should not
            // both show one message).
            Error::InFile { error, .. } => error.source(),
            _ => None,
        }
    }
}

/// The result type of memkv's fallible operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A panic payload as text, for error reports.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn each_message_names_what_went_wrong_and_the_data() {
        let cases = [
            (
                Error::CapacityExceeded { bytes: 4096 },
                "capacity exceeded: the structure already holds 4096 bytes",
            ),
            (
                Error::OutOfOrder {
                    previous: b"b".to_vec(),
                    got: b"a\x00".to_vec(),
                },
                "keys out of order: \"a\\x00\" was given after \"b\", \
                 but keys must be strictly increasing",
            ),
            (
                Error::DuplicateKey {
                    key: b"k\xff".to_vec(),
                },
                "duplicate key \"k\\xff\": keys must be strictly increasing",
            ),
            (
                Error::BadMagic {
                    found: b"PK\x03\x04".to_vec(),
                },
                "not a memkv file: it starts with \"PK\\x03\\x04\" instead of the magic number",
            ),
            (
                Error::UnsupportedVersion {
                    found: 9,
                    supported: 2,
                },
                "unsupported file format version 9 (this build reads versions 1 to 2)",
            ),
            (
                Error::ChecksumMismatch {
                    stored: 0xdead,
                    computed: 0xbeef,
                },
                "checksum mismatch: the file says 0x0000dead but its bytes sum to 0x0000beef; \
                 the file is damaged",
            ),
            (
                Error::ValueTypeMismatch {
                    expected: "u64".into(),
                    found: "()".into(),
                },
                "value type mismatch: the file stores \"()\" values, but \"u64\" was asked for",
            ),
            (
                Error::Corrupt {
                    reason: "a section runs past the end".into(),
                },
                "corrupt data: a section runs past the end",
            ),
        ];
        for (err, message) in cases {
            assert_eq!(err.to_string(), message);
            assert!(err.source().is_none(), "{err:?} has no underlying error");
        }
    }

    #[test]
    fn io_and_fst_errors_keep_their_cause() {
        let err = Error::Io {
            context: "opening /tmp/x.memkv".into(),
            source: io::Error::new(io::ErrorKind::NotFound, "no such file"),
        };
        assert_eq!(err.to_string(), "opening /tmp/x.memkv: no such file");
        assert_eq!(err.source().unwrap().to_string(), "no such file");

        let fst_err = fst::Map::new(vec![1u8, 2, 3]).unwrap_err();
        let shown = fst_err.to_string();
        let err = Error::Fst(fst_err);
        assert_eq!(err.to_string(), format!("fst error: {shown}"));
        assert_eq!(err.source().unwrap().to_string(), shown);
    }

    #[test]
    fn an_error_in_a_file_names_it_once_and_keeps_the_chain() {
        let err = Error::Corrupt {
            reason: "a section runs past the end".into(),
        }
        .in_file("/data/ids.memkv");
        assert_eq!(
            err.to_string(),
            "/data/ids.memkv: corrupt data: a section runs past the end"
        );
        assert_eq!(err.path(), Some(Path::new("/data/ids.memkv")));
        assert!(matches!(err.without_path(), Error::Corrupt { .. }));
        assert!(err.source().is_none(), "the inner message is already shown");
        // Named once: a second file does not wrap it again.
        let again = err.in_file("/elsewhere");
        assert_eq!(again.path(), Some(Path::new("/data/ids.memkv")));
        assert!(matches!(again.without_path(), Error::Corrupt { .. }));

        // The chain goes on from the inner error's own source.
        let fst_err = fst::Map::new(vec![1u8, 2, 3]).unwrap_err();
        let shown = fst_err.to_string();
        let err = Error::Fst(fst_err).in_file("x.memkv");
        assert_eq!(err.to_string(), format!("x.memkv: fst error: {shown}"));
        assert_eq!(err.source().unwrap().to_string(), shown);

        // An I/O error names its file in its context already.
        let io = Error::Io {
            context: "opening frozen layer x.memkv".into(),
            source: io::Error::new(io::ErrorKind::NotFound, "no such file"),
        }
        .in_file("x.memkv");
        assert!(matches!(io, Error::Io { .. }));
        assert_eq!(io.path(), None);
        assert!(matches!(io.without_path(), Error::Io { .. }));
    }

    #[test]
    fn long_keys_are_cut_short_in_messages() {
        let at_limit = vec![b'a'; 100];
        let message = Error::DuplicateKey { key: at_limit }.to_string();
        assert!(
            message.contains(&format!("key \"{}\":", "a".repeat(100))),
            "{message}"
        );
        assert!(!message.contains("..."), "{message}");

        let past_limit = vec![b'a'; 1 << 20];
        let message = Error::DuplicateKey { key: past_limit }.to_string();
        assert!(message.contains(&format!("\"{}\"... (1048576 bytes)", "a".repeat(100))));
        assert!(message.len() < 200, "{message}");
    }

    #[test]
    #[cfg_attr(panic = "abort", ignore = "catches a panic")]
    fn panic_messages_are_read_from_either_string_type() {
        let payload = std::panic::catch_unwind(|| panic!("static text")).unwrap_err();
        assert_eq!(panic_message(payload.as_ref()), "static text");
        let n = 7;
        let payload = std::panic::catch_unwind(|| panic!("formatted {n}")).unwrap_err();
        assert_eq!(panic_message(payload.as_ref()), "formatted 7");
        let payload = std::panic::catch_unwind(|| std::panic::panic_any(7u32)).unwrap_err();
        assert_eq!(
            panic_message(payload.as_ref()),
            "a panic with a non-string payload"
        );
    }
}
