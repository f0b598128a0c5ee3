//! The crate's error type.

use std::fmt;
use std::io;

/// Everything that can go wrong in memkv, with the offending data where there
/// is any.
///
/// Operations that can fail on user input (a builder fed unsorted keys, a
/// truncated file, a key past the length limit) return this instead of
/// panicking.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A key is longer than the structure can store.
    KeyTooLong {
        /// The length of the rejected key.
        len: usize,
        /// The longest key the structure accepts.
        max: usize,
    },
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
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::KeyTooLong { len, max } => {
                write!(f, "key of {len} bytes is longer than the maximum of {max} bytes")
            }
            Error::CapacityExceeded { bytes } => {
                write!(f, "capacity exceeded: the structure already holds {bytes} bytes")
            }
            Error::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The result type of memkv's fallible operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;
