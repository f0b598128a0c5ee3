//! A [`FrozenLayer`] in serde as its file's bytes, for
//! `#[serde(with = "memkv::frozen::file_bytes")]` (the `serde` feature).
//!
//! A layer's own `Serialize` writes a map from keys to values, which any
//! other map can read; this writes the layer's file instead (what
//! [`save`](FrozenLayer::save) writes), as one byte string: as small as the
//! layer, and read back without a build. On the 7.3 M Debian paths with
//! `u64` values that is 67 MB against 491 MB for the map in CBOR. It suits
//! binary formats; a human-readable one writes bytes as a list of numbers.
//!
//! A human-readable format writes the bytes its own way: JSON and TOML as a
//! list of numbers, RON as a byte string; YAML refuses them.
//!
//! Reading treats the bytes as coming from elsewhere: it runs the checks of
//! [`from_bytes`](FrozenLayer::from_bytes) and then
//! [`verify_structure`](FrozenLayer::verify_structure) (about two
//! iterations' time), so that damaged or inconsistent bytes are an error
//! and no later query on the layer can panic. (A consistent forgery, with
//! its checksum made valid again, is accepted: the checksum is not
//! authentication.) The check walks every key the bytes claim, and a small
//! input can claim very many and still be consistent (1.5 KB can spell
//! 2^63 keys): for bytes from someone you do not trust,
//! [`deserialize_at_most`] refuses more keys than you allow before it walks
//! any.
//!
//! ```
//! use memkv::FrozenLayer;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Dictionary {
//!     name: String,
//!     #[serde(with = "memkv::frozen::file_bytes")]
//!     words: FrozenLayer<u64>,
//! }
//!
//! let words = FrozenLayer::from_sorted_iter([("apple", 1u64), ("pear", 2)])?;
//! let dictionary = Dictionary { name: "fruit".into(), words };
//! let mut bytes = Vec::new();
//! ciborium::into_writer(&dictionary, &mut bytes)?;
//! let back: Dictionary = ciborium::from_reader(&bytes[..])?;
//! assert_eq!(back.words.get("pear"), Some(2));
//! assert!(back.words == dictionary.words);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserializer, Serializer};

use super::{FrozenLayer, FrozenValue};

/// Writes `layer` as its file's bytes.
pub fn serialize<V: FrozenValue, S: Serializer>(
    layer: &FrozenLayer<V>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_bytes(layer.as_bytes())
}

/// Reads a layer from its file's bytes, checked in full (see the module's
/// docs). The check takes time in proportion to the keys the bytes claim,
/// with no limit: see [`deserialize_at_most`].
pub fn deserialize<'de, V: FrozenValue, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<FrozenLayer<V>, D::Error> {
    deserialize_at_most(deserializer, usize::MAX)
}

/// [`deserialize`], refusing a layer that claims more than `max_keys` keys
/// before its check walks any, so that the time a read takes is bounded
/// (about 0.2 µs per key on the Debian paths). For
/// `#[serde(deserialize_with = ...)]`:
///
/// ```
/// use memkv::FrozenLayer;
/// use serde::{Deserialize, Deserializer, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Upload {
///     #[serde(serialize_with = "memkv::frozen::file_bytes::serialize")]
///     #[serde(deserialize_with = "at_most_a_million")]
///     words: FrozenLayer<u32>,
/// }
///
/// fn at_most_a_million<'de, D: Deserializer<'de>>(d: D) -> Result<FrozenLayer<u32>, D::Error> {
///     memkv::frozen::file_bytes::deserialize_at_most(d, 1_000_000)
/// }
///
/// let words = FrozenLayer::from_sorted_iter([("a", 1u32), ("b", 2)])?;
/// let mut bytes = Vec::new();
/// ciborium::into_writer(&Upload { words }, &mut bytes)?;
/// let upload: Upload = ciborium::from_reader(&bytes[..])?;
/// assert_eq!(upload.words.len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn deserialize_at_most<'de, V: FrozenValue, D: Deserializer<'de>>(
    deserializer: D,
    max_keys: usize,
) -> Result<FrozenLayer<V>, D::Error> {
    let mut bytes = deserializer.deserialize_byte_buf(FileBytes)?;
    // A format that reads bytes into a growing buffer leaves up to twice
    // the room; the layer keeps its buffer for good.
    bytes.shrink_to_fit();
    let layer = FrozenLayer::from_bytes(bytes).map_err(de::Error::custom)?;
    if layer.len() > max_keys {
        return Err(de::Error::custom(format_args!(
            "the layer claims {} keys, more than the {max_keys} allowed",
            layer.len()
        )));
    }
    layer.verify_structure().map_err(de::Error::custom)?;
    Ok(layer)
}

struct FileBytes;

impl<'de> Visitor<'de> for FileBytes {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a FrozenLayer's file, as bytes")
    }

    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<Vec<u8>, E> {
        Ok(bytes.to_vec())
    }

    fn visit_byte_buf<E: de::Error>(self, bytes: Vec<u8>) -> Result<Vec<u8>, E> {
        Ok(bytes)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Vec<u8>, A::Error> {
        crate::serde_impl::bytes_of_seq(seq)
    }
}
