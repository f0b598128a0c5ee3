//! Temporary directories for the tests (the integration tests and, through
//! `#[path]`, the unit tests), on WASI too, whose `std::env::temp_dir`
//! panics (the tests run there as well: `.ci/run`).

/// A new temporary directory, removed when dropped.
pub(crate) fn dir() -> tempfile::TempDir {
    if cfg!(target_os = "wasi") {
        tempfile::tempdir_in("/tmp")
    } else {
        tempfile::tempdir()
    }
    .expect("a temporary directory")
}
