//! What the examples share: where their keys come from.

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
