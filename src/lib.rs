//! memkv: ordered maps from byte-string keys that hold very many keys in
//! little memory, without giving up speed.
//!
//! # Which structure
//!
//! | type | what it is | use it for |
//! |---|---|---|
//! | [`FastArt<V>`] | a mutable adaptive radix tree in a slab arena | a mutable ordered map smaller than its own keys, with faster inserts and lookups than `BTreeMap` (and ordered walks as fast once compacted) |
//! | [`FrozenLayer<V>`] | an immutable map: keys in an [`fst`](https://docs.rs/fst), values in a packed column | a dictionary built once, saved, and memory-mapped in milliseconds |
//! | [`HybridMap<V>`] | a `FastArt` delta over a `FrozenLayer` base, merged in the background | a mutable map at near-frozen memory, shared between threads |
//! | [`memtable`] | a [`Memtable`] trait with skip-list, radix-tree (one lock, or sharded) and sorted-vector implementations | the memtable of an LSM engine |
//!
//! On the 7.3 million file paths of Debian's archive (63.5 bytes each on
//! average), a `FastArt<u64>` holds keys and values in about 35 bytes per key,
//! a `FrozenLayer<u64>` in about 9, where `BTreeMap<Box<[u8]>, u64>` takes
//! 115; DESIGN.md has the measurements and the command that produced them.
//!
//! # FastArt
//!
//! A `BTreeMap`-like API; keys are anything that is `AsRef<[u8]>`:
//!
//! ```
//! use memkv::FastArt;
//!
//! let mut map = FastArt::new();
//! map.insert("usr/bin/ls", 1u64);
//! map.insert("usr/bin/cp", 2);
//! map.insert("etc/passwd", 3);
//! assert_eq!(map.get("usr/bin/cp"), Some(&2));
//!
//! // Ordered iteration, ranges and prefixes. Keys are assembled as the tree
//! // is walked: `next_entry` lends each one without allocating.
//! let mut bin = map.prefix("usr/bin/");
//! let mut total = 0;
//! while let Some((key, value)) = bin.next_entry() {
//!     assert!(key.starts_with(b"usr/bin/"));
//!     total += value;
//! }
//! assert_eq!(total, 3);
//! assert_eq!(map.range("etc/".."usr/").count(), 1);
//!
//! // The stored keys that are prefixes of a key: longest-prefix matching.
//! let found = map.longest_prefix_of("usr/bin/cp.bak");
//! assert_eq!(found, Some((&b"usr/bin/cp"[..], &2)));
//! ```
//!
//! # FrozenLayer
//!
//! Built from sorted keys (or any keys, sorted for you), then queried, saved
//! and opened again without reading the file onto the heap. Values are
//! integers (bit-packed to the width their range needs), byte strings or
//! strings (which `get_encoded` lends from the file instead of copying), or
//! a type of yours through [`FrozenValue`]:
//!
//! ```
//! use memkv::FrozenLayer;
//!
//! let layer = FrozenLayer::from_unsorted_iter([("b", 2u64), ("a", 1), ("c", 3)])?;
//! assert_eq!(layer.get("b"), Some(2));
//! assert_eq!(layer.rank("c"), Some(2));
//!
//! # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
//! # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
//! let dir = tempfile::tempdir()?;
//! layer.save(dir.path().join("keys.memkv"))?;
//! let mapped = FrozenLayer::<u64>::open(dir.path().join("keys.memkv"))?;
//! assert_eq!(mapped.get("a"), Some(1));
//!
//! let titles = FrozenLayer::from_sorted_iter([("/a", "Start".to_string())])?;
//! assert_eq!(titles.get_encoded("/a"), Some(&b"Start"[..]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # HybridMap
//!
//! Mutable through `&self` from many threads; most keys sit in the compressed
//! base, recent changes in a small delta merged into it in the background:
//!
//! ```
//! use memkv::HybridMap;
//!
//! let map: HybridMap<u64> = HybridMap::new();
//! map.insert("k1", 1);
//! map.insert("k2", 2);
//! map.freeze()?; // merge now; normally a policy decides when
//! map.remove("k1");
//! assert_eq!(map.get("k1"), None);
//! assert_eq!(map.get("k2"), Some(2));
//! assert_eq!(map.len(), 1);
//! # Ok::<(), memkv::Error>(())
//! ```
//!
//! # Memtables
//!
//! Internal keys (user key, sequence number, kind) with snapshot reads, for an
//! LSM engine's write buffer; see the [`memtable`] module.
//!
//! ```
//! use memkv::memtable::{ArtMemtable, Lookup, Memtable, MemtableRead, ValueKind};
//!
//! let table = ArtMemtable::default();
//! table.insert(b"user:1", 10, ValueKind::Value, b"alice");
//! table.insert(b"user:1", 12, ValueKind::Tombstone, b"");
//! assert_eq!(table.get(b"user:1", 11), Lookup::Found(b"alice".to_vec()));
//! assert_eq!(table.get(b"user:1", 12), Lookup::Deleted);
//! ```
//!
//! # Features
//!
//! - `levenshtein`: the fst crate's edit-distance automaton, for `search`
//!   on any of the three maps (fuzzy lookups).
//! - `serde`: `Serialize` and `Deserialize` for [`FastArt`],
//!   [`FrozenLayer`] and [`HybridMap`], each as a map from keys to values in
//!   key order, so that what one writes reads back as any other. Keys are
//!   bytes in binary formats and strings in human-readable ones, where a
//!   key that is not UTF-8 is an error in most (JSON's among them).
//!   `frozen::file_bytes` writes a layer as its file's bytes instead, for
//!   `#[serde(with = ...)]`.
//!
//! # Errors and limits
//!
//! Bad input gets an [`Error`], never a panic: unsorted keys to a builder, a
//! truncated or corrupt file, a missing file. (Corrupt: damaged bytes, which
//! a file's checksum catches. A file whose checksum was recomputed over
//! inconsistent contents passes that check; [`FrozenLayer::verify_structure`]
//! refuses it, at the cost of a walk over the layer.) Each type documents its limits
//! where users meet them (for `FastArt`, 16 GiB of nodes and 16 GiB of
//! leaves per map).
//!
//! Keys are read through `AsRef<[u8]>`, sometimes more than once per call
//! (an entry reads its key when it is made and again when it inserts). An
//! implementation that returns different bytes from one call to the next
//! is a logic error, as an inconsistent `Ord` is for `BTreeMap`: what the
//! map then does is not specified (it may panic, or lose that key), but it
//! stays within that map and is never undefined behaviour.

mod error;
mod fmt;
mod keys;
mod lanes;
mod search;
#[cfg(feature = "serde")]
mod serde_impl;

pub mod art;
pub mod frozen;
pub mod hybrid;
pub mod memtable;

#[cfg(doctest)]
mod compile_fail;

pub use crate::art::FastArt;
pub use crate::error::{Error, Result};
pub use crate::frozen::{FrozenLayer, FrozenLayerBuilder, FrozenValue};
pub use crate::hybrid::{HybridConfig, HybridMap};
pub use crate::memtable::{
    ArtMemtable, Memtable, ShardedArtMemtable, SkipListMemtable, VecMemtable,
};

/// Temporary directories for the unit tests, as for the integration tests.
#[cfg(test)]
#[path = "../tests/common/scratch.rs"]
mod scratch;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
