//! `Serialize` and `Deserialize` for the three maps (the `serde` feature).
//!
//! Each map is written as a serde map from its keys to its values, in key
//! order, with its number of entries given up front, so that what one map
//! writes reads back as any of the others. A key goes out as a string where
//! the format is human-readable and the key is UTF-8 (JSON's object keys
//! must be strings), and as bytes otherwise, which most human-readable
//! formats refuse (JSON, YAML and TOML do; RON writes them).
//!
//! A key comes back from whatever a human-readable format holds (a string,
//! or a sequence of byte values); in a binary format it must be bytes, or a
//! sequence of byte values (what a `BTreeMap<Vec<u8>, _>` writes): a binary
//! format cannot always be asked what it holds. So a CBOR map whose keys
//! are text strings is refused, and what these maps write to CBOR reads as a
//! `BTreeMap<Vec<u8>, _>`, not a `BTreeMap<String, _>`; in JSON it is the
//! other way round (MessagePack, bincode and postcard read either way). In
//! YAML, an unquoted key that reads as a number, a boolean or null (`1:`,
//! `true:`, `~:`) is refused with an error: quote it.
//!
//! Reading takes the entries in any order. When a key comes more than once
//! the last value wins, as with repeated inserts (and with serde's own
//! `BTreeMap`).

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Deserializer, Serialize};

use crate::{FastArt, FrozenLayer, FrozenLayerBuilder, FrozenValue, HybridMap};

/// A key to write (see the module's docs).
struct KeyRef<'a>(&'a [u8]);

impl Serialize for KeyRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable()
            && let Ok(text) = std::str::from_utf8(self.0)
        {
            return serializer.serialize_str(text);
        }
        serializer.serialize_bytes(self.0)
    }
}

/// Writes the map as a serde map from keys to values, in key order (see
/// the module's docs).
///
/// ```
/// let map: memkv::FastArt<u32> = [("b", 2), ("a", 1)].into_iter().collect();
/// assert_eq!(serde_json::to_string(&map)?, r#"{"a":1,"b":2}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
impl<V: Serialize> Serialize for FastArt<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        let mut entries = self.iter();
        while let Some((key, value)) = entries.next_entry() {
            map.serialize_entry(&KeyRef(key), value)?;
        }
        map.end()
    }
}

/// Writes the layer as a serde map from keys to values, in key order, each
/// value decoded (see the module's docs).
///
/// ```
/// let layer = memkv::FrozenLayer::from_sorted_iter([("a", 1u32), ("b", 2)])?;
/// assert_eq!(serde_json::to_string(&layer)?, r#"{"a":1,"b":2}"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl<V: FrozenValue + Serialize> Serialize for FrozenLayer<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        let mut entries = self.iter();
        while let Some((key, value)) = entries.next_entry() {
            map.serialize_entry(&KeyRef(key), &value)?;
        }
        map.end()
    }
}

/// Writes a snapshot of the map, as [`HybridMap::iter`] takes one (writes
/// from other threads meanwhile change neither its entries nor their
/// count), as a serde map from keys to values, in key order (see the
/// module's docs). Serde takes a map's length before its entries: the
/// length is [`HybridMap::len`] read with the snapshot, after settling the
/// blind writes pending in the fresh delta (as `len` does). Only if blind
/// writers on other threads leave entries pending again meanwhile is the
/// snapshot counted by a walk over it first.
///
/// ```
/// let map: memkv::HybridMap<u32> = [("a", 1), ("b", 2)].into_iter().collect();
/// map.freeze()?;
/// map.remove("a"); // a tombstone in the delta hides the base's entry
/// map.insert("c", 3);
/// assert_eq!(serde_json::to_string(&map)?, r#"{"b":2,"c":3}"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl<V> Serialize for HybridMap<V>
where
    V: FrozenValue + Clone + Send + Sync + Serialize + 'static,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (len, mut entries) = self.counted_snapshot();
        let mut map = serializer.serialize_map(Some(len))?;
        while let Some((key, value)) = entries.next_entry() {
            map.serialize_entry(&KeyRef(key), &value)?;
        }
        map.end()
    }
}

/// A key read (see the module's docs).
struct KeyBuf(Vec<u8>);

impl<'de> Deserialize<'de> for KeyBuf {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // A human-readable format wrote a string (or, for a key that is not
        // UTF-8, bytes as it writes them): asked for bytes, some decode a
        // string as base64 (RON) or refuse (YAML), so let it say what it
        // has. A binary format may not know (bincode cannot be asked), and
        // wrote bytes.
        if deserializer.is_human_readable() {
            deserializer.deserialize_any(KeyVisitor)
        } else {
            deserializer.deserialize_byte_buf(KeyVisitor)
        }
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = KeyBuf;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key: a string, bytes, or a sequence of byte values")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<KeyBuf, E> {
        Ok(KeyBuf(key.as_bytes().to_vec()))
    }

    fn visit_string<E: de::Error>(self, key: String) -> Result<KeyBuf, E> {
        Ok(KeyBuf(key.into_bytes()))
    }

    fn visit_bytes<E: de::Error>(self, key: &[u8]) -> Result<KeyBuf, E> {
        Ok(KeyBuf(key.to_vec()))
    }

    fn visit_byte_buf<E: de::Error>(self, key: Vec<u8>) -> Result<KeyBuf, E> {
        Ok(KeyBuf(key))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, bytes: A) -> Result<KeyBuf, A::Error> {
        bytes_of_seq(bytes).map(KeyBuf)
    }
}

/// The bytes of a sequence of byte values (how a format without a bytes
/// type, such as JSON, writes a byte string).
pub(crate) fn bytes_of_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Vec<u8>, A::Error> {
    // A length from the input is only a hint: a damaged one must not
    // reserve gigabytes.
    let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
    while let Some(byte) = seq.next_element()? {
        bytes.push(byte);
    }
    Ok(bytes)
}

/// The entries of a serde map as an iterator, for the maps' `FromIterator`
/// and `Extend`: it ends at the map's end or at the first error, which it
/// keeps for [`finish`](Self::finish).
struct Entries<'de, A: MapAccess<'de>, V> {
    access: A,
    error: Option<A::Error>,
    done: bool,
    _entries: PhantomData<fn() -> (&'de (), V)>,
}

impl<'de, A: MapAccess<'de>, V: Deserialize<'de>> Entries<'de, A, V> {
    fn new(access: A) -> Self {
        Entries {
            access,
            error: None,
            done: false,
            _entries: PhantomData,
        }
    }

    /// `built` if every entry was read, else the error that ended them.
    fn finish<T>(self, built: T) -> Result<T, A::Error> {
        match self.error {
            None => Ok(built),
            Some(error) => Err(error),
        }
    }
}

impl<'de, A: MapAccess<'de>, V: Deserialize<'de>> Iterator for Entries<'de, A, V> {
    type Item = (Vec<u8>, V);

    fn next(&mut self) -> Option<(Vec<u8>, V)> {
        if self.done {
            return None;
        }
        match self.access.next_entry::<KeyBuf, V>() {
            Ok(Some((KeyBuf(key), value))) => Some((key, value)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(error) => {
                self.done = true;
                self.error = Some(error);
                None
            }
        }
    }
}

/// A map built from a serde map's entries.
trait FromMap<'de>: Sized {
    /// What the visitor expects, for errors.
    const EXPECTING: &'static str;

    fn from_map<A: MapAccess<'de>>(access: A) -> Result<Self, A::Error>;
}

struct MapVisitor<T>(PhantomData<fn() -> T>);

impl<'de, T: FromMap<'de>> Visitor<'de> for MapVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_map<A: MapAccess<'de>>(self, access: A) -> Result<T, A::Error> {
        T::from_map(access)
    }
}

/// A map collected from the entries of `access` (through its
/// `FromIterator`), or the error that ended them.
fn collect_entries<'de, A, V, M>(access: A) -> Result<M, A::Error>
where
    A: MapAccess<'de>,
    V: Deserialize<'de>,
    M: FromIterator<(Vec<u8>, V)>,
{
    let mut entries = Entries::new(access);
    let map = (&mut entries).collect();
    entries.finish(map)
}

impl<'de, V: Deserialize<'de>> FromMap<'de> for FastArt<V> {
    const EXPECTING: &'static str = "a map from keys to values, for a FastArt";

    fn from_map<A: MapAccess<'de>>(access: A) -> Result<Self, A::Error> {
        collect_entries(access)
    }
}

/// Reads a serde map from keys to values, in any order (see the module's
/// docs).
///
/// ```
/// let map: memkv::FastArt<u32> = serde_json::from_str(r#"{"b":2,"a":1,"b":3}"#)?;
/// assert_eq!(map.get("b"), Some(&3)); // the last value for a key wins
/// assert_eq!(map.len(), 2);
/// # Ok::<(), serde_json::Error>(())
/// ```
impl<'de, V: Deserialize<'de>> Deserialize<'de> for FastArt<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MapVisitor(PhantomData))
    }
}

impl<'de, V: FrozenValue + Deserialize<'de>> FromMap<'de> for FrozenLayer<V> {
    const EXPECTING: &'static str = "a map from keys to values, for a FrozenLayer";

    /// Streams entries in key order straight into the layer's builder, as
    /// written; at the first one out of order (or a key repeated) it moves
    /// what it built into a [`FastArt`], which takes the rest in any order
    /// and is frozen at the end.
    fn from_map<A: MapAccess<'de>>(access: A) -> Result<Self, A::Error> {
        let mut entries = Entries::new(access);
        let mut builder = FrozenLayerBuilder::memory();
        let mut last: Option<Vec<u8>> = None;
        while let Some((key, value)) = entries.next() {
            if last.as_ref().is_some_and(|last| key <= *last) {
                let mut tree = FastArt::new();
                {
                    let built = builder.into_layer().map_err(de::Error::custom)?;
                    let mut copied = built.iter();
                    while let Some((key, value)) = copied.next_entry() {
                        tree.insert(key, value);
                    }
                }
                tree.insert(key, value);
                tree.extend(&mut entries);
                entries.finish(())?;
                return FrozenLayer::from_fast_art(&tree).map_err(de::Error::custom);
            }
            builder.insert(&key, value).map_err(de::Error::custom)?;
            last = Some(key);
        }
        entries.finish(())?;
        builder.into_layer().map_err(de::Error::custom)
    }
}

/// Reads a serde map from keys to values, in any order (see the module's
/// docs). Entries in key order, as every map writes them, go straight into
/// the layer's builder; otherwise they are gathered in a [`FastArt`] first
/// (about 35 bytes per key on the Debian paths, with the values), from the
/// first entry out of order on.
///
/// ```
/// let layer: memkv::FrozenLayer<u32> = serde_json::from_str(r#"{"a":1,"b":2}"#)?;
/// assert_eq!(layer.get("b"), Some(2));
/// let shuffled: memkv::FrozenLayer<u32> = serde_json::from_str(r#"{"b":2,"a":1}"#)?;
/// assert_eq!(shuffled, layer);
/// # Ok::<(), serde_json::Error>(())
/// ```
impl<'de, V: FrozenValue + Deserialize<'de>> Deserialize<'de> for FrozenLayer<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MapVisitor(PhantomData))
    }
}

impl<'de, V> FromMap<'de> for HybridMap<V>
where
    V: FrozenValue + Clone + Send + Sync + Deserialize<'de> + 'static,
{
    const EXPECTING: &'static str = "a map from keys to values, for a HybridMap";

    fn from_map<A: MapAccess<'de>>(access: A) -> Result<Self, A::Error> {
        collect_entries(access)
    }
}

/// Reads a serde map from keys to values, in any order (see the module's
/// docs), as `collect` builds a map (its `FromIterator`): into the base at
/// once, straight from entries in key order (from 65,536 entries, in shares
/// on up to four cores).
/// The map has the default [`HybridConfig`](crate::HybridConfig); for
/// another, read a [`FrozenLayer`] and give it to
/// [`HybridMap::from_frozen`].
///
/// ```
/// let map: memkv::HybridMap<u32> = serde_json::from_str(r#"{"a":1,"b":2}"#)?;
/// assert_eq!(map.get("a"), Some(1));
/// map.insert("c", 3); // as mutable as any other
/// # Ok::<(), serde_json::Error>(())
/// ```
impl<'de, V> Deserialize<'de> for HybridMap<V>
where
    V: FrozenValue + Clone + Send + Sync + Deserialize<'de> + 'static,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MapVisitor(PhantomData))
    }
}
