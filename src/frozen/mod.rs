//! The frozen layer: an immutable ordered map from byte-string keys to
//! values, with the keys in a finite state transducer so that shared
//! prefixes *and* shared suffixes are stored once.
//!
//! # Layout
//!
//! A [`FrozenLayer`] is three sections of one byte string (the file format,
//! section by section, is in the repository's DESIGN.md):
//!
//! * an [`fst`](https://docs.rs/fst) mapping each key to its **ordinal**, its
//!   position in key order (`0..len`). Ordinals make
//!   [`rank`](FrozenLayer::rank) a plain lookup and [`nth`](FrozenLayer::nth)
//!   one walk from the root;
//! * a **value column** indexed by ordinal (`column.rs`): integers bit-packed
//!   to the width of their range, byte strings as packed offsets plus one
//!   blob;
//! * a **jump table** (`jump.rs`): for the prefixes that many keys share
//!   (24 bytes of a Debian path, say), the fst node their walk reaches, so
//!   that a lookup probes one hash slot instead of walking the top of the
//!   fst node by node. On the 7.3 M Debian paths it takes 0.10 bytes per
//!   key and makes lookups 29–33% faster.
//!
//! The same bytes are the file: [`save`](FrozenLayer::save) writes them,
//! [`open`](FrozenLayer::open) memory-maps them and queries read the map in
//! place, so a layer of millions of keys is usable at once without being read
//! onto the heap.
//!
//! # Why not store the values in the fst?
//!
//! The fst crate can map keys straight to `u64` outputs (`fst::Map`), but
//! outputs that do not follow key order break the sharing of suffixes and
//! cost bytes on many transitions. Measured on 7,303,784 Debian file paths
//! (63.5 bytes each on average) with each path's line number as its value:
//!
//! | layout                                        | bytes/key |
//! |-----------------------------------------------|-----------|
//! | `fst::Set` (keys only, no values)             |     6.81  |
//! | `fst::Map`, line numbers as outputs           |    14.62  |
//! | fst of ordinals, built by the fst crate       |     7.79  |
//! | fst of ordinals, built by memkv (below)       |     6.16  |
//! | + column of line numbers, 23 bits each        |   + 2.88  |
//! | + jump table                                  |   + 0.10  |
//! | = `FrozenLayer<u64>`, whole file              |     9.14  |
//!
//! Ordinal outputs increase with the keys, so they cost about one byte per
//! key over a plain set, and the column stores each value in
//! `bits(max - min)` bits. Line numbers of a shuffled file are random, so 23
//! bits (for values below 2^23) is close to the information-theoretic floor
//! for them (a random permutation of 7.3 M numbers needs ~21.4 bits each).
//! Frame-of-reference (`min` plus `bits(max - min)`-bit deltas) is as small as
//! plain `bits(max)` here, where `min` is 0, and far smaller whenever values
//! do not start near zero, as with timestamps or negative numbers.
//!
//! # Cost
//!
//! On the same 7.3 M paths, over the sixteen full runs of the benchmark
//! harness kept (`harness/results/debian-full*.md`, 2026-11-23 to 27;
//! release build on a shared 2-core machine whose speed moves by ±20–40%
//! between runs, so the ratios to the bare fst in the same run are the
//! telling part); `nth` and `open` were measured once, earlier, and
//! `verify_structure` once (2026-11-27, `harness/examples/frozen_checks.rs`,
//! five rounds):
//!
//! | operation                          | `FrozenLayer<u64>` | bare `fst::Map` | ratio in the same run |
//! |------------------------------------|--------------------|-----------------|--:|
//! | build from sorted keys             | 1.1–3.5 M keys/s   | 0.4–1.7 M keys/s | 1.8–4.0× |
//! | iterate ([`Iter::next_entry`])     | 6.9–13.9 M keys/s  | 2.5–5.2 M keys/s | 2.3–3.2× |
//! | `get`, keys in random order, since the jump table (runs 12–16) | 0.8–2.6 µs | 1.4–3.5 µs | 1.2–1.7× |
//! | [`nth`](FrozenLayer::nth)          | 2.1 µs             |                 | |
//! | [`open`](FrozenLayer::open) (checksum, warm cache) | 4–7 ms |           | |
//! | [`open_unverified`](FrozenLayer::open_unverified)  | 0.06–0.09 ms |     | |
//! | [`verify_structure`](FrozenLayer::verify_structure) (an iteration then: 0.53 s) | 1.22 s | | |
//!
//! The fst is in the fst crate's format. The crate reads it for
//! [`nth`](FrozenLayer::nth); lookups, [`iter`](FrozenLayer::iter),
//! [`range`](FrozenLayer::range), [`prefix`](FrozenLayer::prefix) and
//! [`search`](FrozenLayer::search) walk its bytes with memkv's own reader
//! instead of the crate's general `get` and streams (automata are still the
//! crate's, and searches give its streams' answers for automata that keep
//! the trait's contract). memkv's own builder
//! (`fst_builder.rs`) writes it: the crate's builder finds repeated
//! suffixes through a fixed cache of 20,000 nodes, ours through one that
//! grows with the fst (to 2^20 entries of 8 bytes, freed when it is done),
//! which is where the 1.6 bytes per key and most of the build time go.
//! With paths of 63 bytes on average,
//! each lookup is a walk through dozens of fst nodes. Building in memory
//! holds the layer being built (one buffer: header, fst, values), the value
//! column and the node cache; the layer then holds exactly its bytes.
//!
//! # Values come back by value
//!
//! A packed column holds no `V` in memory to point to, so
//! [`get`](FrozenLayer::get) returns `Option<V>`, decoded on the fly, not
//! `Option<&V>`. For integers that is free; for byte strings it allocates a
//! copy.
//!
//! # Combining layers
//!
//! [`OpBuilder`] streams the union, intersection, difference or symmetric
//! difference of several layers (or ranges and prefixes of them) in key
//! order, each key with the values of the layers that hold it; a stream
//! that falls far behind seeks ahead, so a small layer intersected with a
//! large one costs about a lookup (and up to ten entries of the large one)
//! per key of the small one. Over two layers
//! of 4.4 M Debian paths it runs at 2.4–2.6× the fst crate's `OpBuilder`,
//! and at 43–46× for a layer of 7 k paths against one of 4.4 M
//! (`harness/examples/frozen_ops.rs`).
//!
//! # Example
//!
//! ```
//! use memkv::FrozenLayer;
//!
//! let layer = FrozenLayer::from_unsorted_iter([
//!     ("usr/bin/env", 3u64),
//!     ("etc/hosts", 1),
//!     ("usr/bin/cat", 2),
//! ])?;
//! assert_eq!(layer.get("usr/bin/env"), Some(3));
//! assert_eq!(layer.rank("usr/bin/cat"), Some(1));
//! let under_bin: Vec<_> = layer.prefix("usr/bin/").map(|(key, _)| key).collect();
//! assert_eq!(under_bin, [b"usr/bin/cat".to_vec(), b"usr/bin/env".to_vec()]);
//!
//! # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
//! # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("paths.memkv");
//! layer.save(&path)?;
//! let reopened = FrozenLayer::<u64>::open(&path)?;
//! assert_eq!(reopened.get("etc/hosts"), Some(1));
//! # #[cfg(not(target_os = "wasi"))] // which reads files: it has no mappings
//! assert_eq!(reopened.memory_usage(), 0); // the bytes are mapped, not on the heap
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod build;
mod column;
#[cfg(feature = "serde")]
pub mod file_bytes;
mod format;
mod fst_builder;
mod fst_node;
mod iter;
mod jump;
mod lookup;
mod ops;
mod packed;
mod verify;

use std::fmt;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::marker::PhantomData;
use std::ops::{Bound, Range, RangeBounds};
use std::path::Path;

pub use self::build::FrozenLayerBuilder;
pub use self::column::{BytesColumn, Encoded, FrozenValue, IntColumn, ValueColumn};
use self::format::{Check, FileBytes, FstBytes, Storage};
pub use self::iter::{Iter, Keys, PrefixesOf, Search, Values};
use self::jump::JumpTable;
pub use self::ops::{
    Difference, IndexedValue, Intersection, OpBuilder, SymmetricDifference, Union,
};
use crate::keys::prefix_successor;
use crate::{Error, FastArt, Result};

/// Automata to [`search`](FrozenLayer::search) a layer's keys with, from the
/// fst crate: [`Str`](automaton::Str) (with `.starts_with()`),
/// [`Subsequence`](automaton::Subsequence), and, with the `levenshtein`
/// feature, `Levenshtein`; combine them with the
/// [`Automaton`](automaton::Automaton) trait's methods.
pub mod automaton {
    pub use fst::automaton::*;
}

/// An immutable ordered map from byte strings to values, with the keys in an
/// fst and the values in a packed column; see the [module
/// documentation](self).
///
/// Build one with [`FrozenLayerBuilder`] (streaming, from sorted keys) or the
/// conveniences [`from_sorted_iter`](Self::from_sorted_iter),
/// [`from_unsorted_iter`](Self::from_unsorted_iter) and
/// [`from_fast_art`](Self::from_fast_art); load one with
/// [`open`](Self::open) or [`from_bytes`](Self::from_bytes).
pub struct FrozenLayer<V: FrozenValue> {
    /// Owns the storage; the fst reads its own range of it.
    fst: fst::raw::Fst<FstBytes>,
    column: <V::Column as ValueColumn>::Reader,
    column_range: Range<usize>,
    /// Where lookups of long keys start their walk.
    jump: JumpTable,
    value: PhantomData<fn() -> V>,
}

impl<V: FrozenValue> FrozenLayer<V> {
    /// Builds a layer from entries in strictly increasing key order.
    ///
    /// Fails with [`Error::OutOfOrder`] or [`Error::DuplicateKey`] (carrying
    /// the keys) otherwise; see [`FrozenLayerBuilder`] for building without
    /// an iterator.
    ///
    /// ```
    /// use memkv::{Error, FrozenLayer};
    ///
    /// let layer = FrozenLayer::from_sorted_iter([("apple", 3u32), ("banana", 5)])?;
    /// assert_eq!(layer.get("banana"), Some(5));
    ///
    /// let unsorted = FrozenLayer::from_sorted_iter([("banana", 5u32), ("apple", 3)]);
    /// assert!(matches!(unsorted, Err(Error::OutOfOrder { previous, got })
    ///     if previous == b"banana" && got == b"apple"));
    /// let repeated = FrozenLayer::from_sorted_iter([("apple", 3u32), ("apple", 4)]);
    /// assert!(matches!(repeated, Err(Error::DuplicateKey { key }) if key == b"apple"));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn from_sorted_iter<K, I>(entries: I) -> Result<Self>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (K, V)>,
    {
        let mut builder = FrozenLayerBuilder::memory();
        for (key, value) in entries {
            builder.insert(key, value)?;
        }
        builder.into_layer()
    }

    /// Builds a layer from entries in any order. When a key appears more than
    /// once, the **last** value given for it wins, as with repeated
    /// `BTreeMap::insert`.
    ///
    /// Unlike the sorted builder, this holds all entries in memory while it
    /// sorts them.
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_unsorted_iter([("b", 1u8), ("a", 2), ("b", 3)])?;
    /// assert_eq!(layer.len(), 2);
    /// assert_eq!(layer.get("b"), Some(3)); // the last value given for "b"
    /// assert_eq!(layer.first_key_value(), Some((b"a".to_vec(), 2)));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn from_unsorted_iter<K, I>(entries: I) -> Result<Self>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (K, V)>,
    {
        let mut entries: Vec<(K, V)> = entries.into_iter().collect();
        // Stable, so equal keys keep their input order and the last of each
        // run is the last given.
        entries.sort_by(|a, b| a.0.as_ref().cmp(b.0.as_ref()));
        let mut builder = FrozenLayerBuilder::memory();
        let mut entries = entries.into_iter().peekable();
        while let Some((key, value)) = entries.next() {
            if entries
                .peek()
                .is_some_and(|(next, _)| next.as_ref() == key.as_ref())
            {
                continue;
            }
            builder.insert(key, value)?;
        }
        builder.into_layer()
    }

    /// Freezes a [`FastArt`]: the same entries, in an fst. Reads the tree in
    /// order without copying its keys (through its lending
    /// [`next_entry`](crate::art::Iter::next_entry)).
    ///
    /// ```
    /// use memkv::{FastArt, FrozenLayer};
    ///
    /// let mut art = FastArt::new();
    /// art.insert("usr/bin/ls", 1u64);
    /// art.insert("etc/hosts", 2);
    /// let layer = FrozenLayer::from_fast_art(&art)?;
    /// assert_eq!(layer.len(), art.len());
    /// assert_eq!(layer.get("etc/hosts"), Some(2));
    /// assert_eq!(layer.nth(0), Some((b"etc/hosts".to_vec(), 2)));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn from_fast_art(art: &FastArt<V>) -> Result<Self> {
        let mut builder = FrozenLayerBuilder::memory();
        let mut entries = art.iter();
        while let Some((key, value)) = entries.next_entry() {
            builder.insert_encoded(key, value.encode())?;
        }
        builder.into_layer()
    }

    /// Loads a layer from its bytes (as written by [`save`](Self::save) or
    /// [`write_to`](Self::write_to)), after checking them in full: magic
    /// number, version, value type, section lengths, the checksum over every
    /// byte, and the column. Damaged (truncated, bit-flipped) or foreign
    /// bytes give an error, never a panic. The checksum catches accidents,
    /// not a deliberately forged file with a recomputed checksum. The checks
    /// take time linear in the bytes' length, whatever number of keys the
    /// bytes claim.
    ///
    /// Bytes whose checksums are valid are trusted beyond those checks: the
    /// fst's nodes are not walked. Inconsistent contents under a valid
    /// checksum (a forged file, or one from a buggy writer) can make queries
    /// panic, return wrong answers, or iterate far more keys than
    /// [`len`](Self::len) says; never undefined behaviour (the readers index
    /// the bytes with bounds checks; their only `unsafe` is a prefetch hint,
    /// which reads nothing). For bytes from elsewhere, call
    /// [`verify_structure`](Self::verify_structure) before querying: it
    /// walks the fst (about twice the time of an iteration) and refuses
    /// such contents.
    ///
    /// The bytes stay on the heap, in this `Vec`, and queries read them in
    /// place.
    ///
    /// ```
    /// use memkv::{Error, FrozenLayer};
    ///
    /// let layer = FrozenLayer::from_sorted_iter([("a", 1u64)])?;
    /// let copy = FrozenLayer::<u64>::from_bytes(layer.as_bytes().to_vec())?;
    /// assert_eq!(copy.get("a"), Some(1));
    ///
    /// let garbage = FrozenLayer::<u64>::from_bytes(b"not a layer".to_vec());
    /// assert!(matches!(garbage, Err(Error::BadMagic { .. })));
    /// let other_type = FrozenLayer::<u32>::from_bytes(layer.as_bytes().to_vec());
    /// assert!(matches!(other_type, Err(Error::ValueTypeMismatch { .. })));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self> {
        Self::from_storage(Storage::Heap(bytes), Check::Full)
    }

    /// Memory-maps the layer file at `path`, after checking it in full like
    /// [`from_bytes`](Self::from_bytes). A missing or unreadable file is an
    /// [`Error::Io`] naming the path; a file whose contents are refused, an
    /// [`Error::InFile`] naming it around the error `from_bytes` would
    /// return (match on [`Error::without_path`]).
    ///
    /// The file is not read onto the heap: queries read the mapping, and the
    /// OS pages it in and out. The check reads every byte once (which also
    /// warms the page cache): 4–7 ms for a 78 MB layer already in the page
    /// cache (the 7.3 M Debian paths took 78 MB when this was measured, 67
    /// MB now), as the CRC runs at over 10 GB/s; from a cold cache,
    /// the time to read the file from disk. Against the fst crate, which
    /// trusts its bytes and may panic on damaged ones, that buys a clean
    /// error for a damaged file; a file whose checksums are valid is
    /// trusted, as [`from_bytes`](Self::from_bytes) says, unless
    /// [`verify_structure`](Self::verify_structure) checks it. Use
    /// [`open_unverified`](Self::open_unverified) (under 0.1 ms) to skip
    /// the check for files you trust.
    ///
    /// **The file must not be modified in place while it is open**, by this
    /// process or another: the mapping would show the changes (queries may
    /// then panic or answer wrong), and if the file shrinks, reading a page
    /// past its new end kills the process with `SIGBUS`. Every memory map
    /// rests on this promise, which no type can check (it is why memmap2's
    /// `Mmap::map` is `unsafe`); `open` is a safe function for files that
    /// are only ever replaced whole. Replacing the file by a rename, as
    /// [`save`](Self::save) does, is safe: a layer open on the old file
    /// keeps reading the old file. Read the bytes yourself and use
    /// [`from_bytes`](Self::from_bytes) where that promise cannot be kept.
    ///
    /// Where the platform maps no files (WASI), `open` reads the file into
    /// memory instead: [`memory_usage`](Self::memory_usage) then counts it,
    /// and [`mapped_bytes`](Self::mapped_bytes) is 0.
    ///
    /// ```
    /// use memkv::{Error, FrozenLayer};
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("ids.memkv");
    /// FrozenLayer::from_sorted_iter([("alice", 1u32), ("bob", 2)])?.save(&path)?;
    /// let layer = FrozenLayer::<u32>::open(&path)?;
    /// assert_eq!(layer.get("bob"), Some(2));
    ///
    /// let missing = FrozenLayer::<u32>::open(dir.path().join("missing.memkv"));
    /// assert!(matches!(missing, Err(Error::Io { context, .. })
    ///     if context.contains("missing.memkv")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        Self::from_storage(Storage::map_file(path)?, Check::Full).map_err(|err| err.in_file(path))
    }

    /// Like [`open`](Self::open), but checks only the header, trailer and
    /// section lengths (O(1)), not the checksum or the column's contents.
    ///
    /// For files you trust (say, written by this process a moment ago). The
    /// file is mapped as by `open`, with the same rule: never modify it in
    /// place while it is open. On a
    /// damaged file, queries may then return wrong results, panic, or in the
    /// worst case not terminate (the fst crate and our readers trust the
    /// bytes' contents but check every index, so never undefined behaviour).
    /// [`verify`](Self::verify) runs the skipped checks later.
    ///
    /// ```
    /// use memkv::FrozenLayer;
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("trusted.memkv");
    /// FrozenLayer::from_sorted_iter([("a", 1u8), ("b", 2)])?.save(&path)?;
    /// let layer = FrozenLayer::<u8>::open_unverified(&path)?;
    /// assert_eq!(layer.get("b"), Some(2));
    /// layer.verify()?; // the skipped checks, when convenient
    ///
    /// let truncated = dir.path().join("truncated.memkv"); // a copy: never change an open file
    /// std::fs::write(&truncated, &layer.as_bytes()[..layer.as_bytes().len() - 1])?;
    /// assert!(FrozenLayer::<u8>::open_unverified(&truncated).is_err()); // no trailer
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_unverified(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        Self::from_storage(Storage::map_file(path)?, Check::Lengths)
            .map_err(|err| err.in_file(path))
    }

    pub(crate) fn from_storage(storage: Storage, check: Check) -> Result<Self> {
        let layout = format::parse(storage.bytes(), V::TYPE_NAME, check)?;
        let column_bytes = &storage.bytes()[layout.column.clone()];
        let column = V::Column::open(column_bytes, layout.key_count)?;
        let jump = JumpTable::parse(storage.bytes(), layout.jump.clone())?;
        if check == Check::Full {
            V::Column::verify(&column, column_bytes)?;
            jump.verify(storage.bytes(), layout.fst.len(), layout.key_count)?;
        }
        let fst = fst::raw::Fst::new(FstBytes {
            storage,
            range: layout.fst,
        })
        .map_err(|err| Error::Corrupt {
            reason: format!("invalid fst section: {err}"),
        })?;
        if fst.len() as u64 != layout.key_count {
            return Err(Error::Corrupt {
                reason: format!(
                    "the fst holds {} keys but the trailer says {}",
                    fst.len(),
                    layout.key_count
                ),
            });
        }
        Ok(FrozenLayer {
            fst,
            column,
            column_range: layout.column,
            jump,
            value: PhantomData,
        })
    }

    /// Re-runs the full checks of [`open`](Self::open): the checksum over
    /// every byte and the column's contents. On a layer mapped from a file,
    /// an error names the file, as `open`'s do ([`Error::InFile`]).
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_sorted_iter([("greeting", b"hello".to_vec())])?;
    /// let mut bytes = layer.as_bytes().to_vec();
    /// let at = bytes.windows(5).rposition(|w| w == b"hello").ok_or("value not found")?;
    /// bytes[at] ^= 0x20; // one flipped bit: "hello" becomes "Hello"
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("damaged.memkv");
    /// std::fs::write(&path, &bytes)?;
    ///
    /// let damaged = memkv::FrozenLayer::<Vec<u8>>::open_unverified(&path)?;
    /// assert_eq!(damaged.get("greeting"), Some(b"Hello".to_vec()));
    /// let err = damaged.verify().unwrap_err();
    /// assert!(matches!(err.without_path(), memkv::Error::ChecksumMismatch { .. }));
    /// assert_eq!(err.path(), Some(path.as_path())); // a mapped layer's errors name its file
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn verify(&self) -> Result<()> {
        let storage = &self.fst.as_inner().storage;
        self.naming_its_file(|| {
            let layout = format::parse(storage.bytes(), V::TYPE_NAME, Check::Full)?;
            V::Column::verify(&self.column, &storage.bytes()[layout.column])?;
            (self.jump).verify(storage.bytes(), layout.fst.len(), layout.key_count)
        })
    }

    /// Runs `check`, whose error (if any) then names the layer's file if it
    /// has one, as [`open`](Self::open)'s do.
    fn naming_its_file(&self, check: impl FnOnce() -> Result<()>) -> Result<()> {
        check().map_err(|err| match self.fst.as_inner().storage.path() {
            Some(path) => err.in_file(path),
            None => err,
        })
    }

    /// Checks that the layer's contents are consistent, which the checksum
    /// cannot: a file can be made, on purpose or by a faulty writer, with
    /// valid checksums over contents that make queries panic, give wrong
    /// answers or, in the worst case, run without end. Once this returns
    /// `Ok`, whatever the bytes, no query panics or runs without end, and
    /// the layer answers as some well-formed layer would (not necessarily
    /// the one that was saved: only the checksum tells that).
    ///
    /// It walks the fst down to every key, as an iteration does, checking
    /// every node it passes, that the keys are numbered 0, 1, 2, … in
    /// order (as the builders number them) and that there are
    /// [`len`](Self::len) of them; it also checks the value column as
    /// [`verify`](Self::verify) does and that every slot of the jump table
    /// leads where its prefix does. It costs about two iterations of the
    /// layer (1.22 s for the 7.3 M Debian paths, against 4–7 ms for the
    /// checksum), so it is separate from [`open`](Self::open): for files
    /// from elsewhere, or from a writer you do not trust. The time grows
    /// with `len`, which a small file can make huge and still be valid
    /// (keys that share their parts: 63 nodes of two ways each spell 2^63
    /// keys in 1.5 KB): look at `len` first if that matters. On a layer
    /// mapped from a file, an error names the file ([`Error::InFile`]).
    ///
    /// ```
    /// use memkv::{Error, FrozenLayer};
    ///
    /// let layer = FrozenLayer::from_sorted_iter([("a", 1u8), ("b", 2)])?;
    /// layer.verify_structure()?;
    ///
    /// // The fst's root moved one byte down, into the middle of the fst,
    /// // with the file's checksum made valid again.
    /// let mut bytes = layer.as_bytes().to_vec();
    /// let (fst_len, end) = (bytes.len() - 24, bytes.len());
    /// let fst_end = 32 + u64::from_le_bytes(bytes[fst_len..fst_len + 8].try_into()?) as usize;
    /// let root = fst_end - 12;
    /// let moved = u64::from_le_bytes(bytes[root..root + 8].try_into()?) - 1;
    /// bytes[root..root + 8].copy_from_slice(&moved.to_le_bytes());
    /// let crc = crc32fast::hash(&bytes[..end - 4]);
    /// bytes[end - 4..].copy_from_slice(&crc.to_le_bytes());
    ///
    /// let forged = FrozenLayer::<u8>::from_bytes(bytes)?; // the checksum is valid
    /// assert!(matches!(forged.verify_structure(), Err(Error::Corrupt { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn verify_structure(&self) -> Result<()> {
        let storage = &self.fst.as_inner().storage;
        self.naming_its_file(|| {
            let layout = format::parse(storage.bytes(), V::TYPE_NAME, Check::Lengths)?;
            V::Column::verify(&self.column, &storage.bytes()[layout.column])?;
            (self.jump).verify(storage.bytes(), layout.fst.len(), layout.key_count)?;
            let corrupt = |reason| Error::Corrupt { reason };
            let fst = self.fst.as_bytes();
            let root = verify::check_fst(fst, layout.key_count).map_err(corrupt)?;
            (self.jump)
                .check_slots(storage.bytes(), fst, root)
                .map_err(corrupt)
        })
    }

    /// Writes the layer to `path` atomically: to a temporary file in the same
    /// directory, synced, then renamed over `path` (and the directory
    /// synced). A crash at any point leaves either the previous file or the
    /// new one, whole.
    ///
    /// Windows may refuse to replace a file while it is memory-mapped (by
    /// [`open`](Self::open), in any process; wine refuses in the tests):
    /// saving over it is then an error, and the old file stays as it was.
    /// Save to another path, or drop what maps the file first. (Unix
    /// replaces it, and what has it open keeps reading the old file.)
    ///
    /// ```
    /// use memkv::FrozenLayer;
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("layer.memkv");
    /// FrozenLayer::from_sorted_iter([("k", 1u32)])?.save(&path)?;
    /// FrozenLayer::from_sorted_iter([("k", 2u32)])?.save(&path)?; // replaces the file
    /// assert_eq!(FrozenLayer::<u32>::open(&path)?.get("k"), Some(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        format::save_atomically(path.as_ref(), self.as_bytes())
    }

    /// Writes the layer's bytes (the file format) to `out`.
    ///
    /// ```
    /// use memkv::FrozenLayer;
    ///
    /// let layer = FrozenLayer::from_sorted_iter([("a", 1i32), ("b", -1)])?;
    /// let mut out = Vec::new();
    /// layer.write_to(&mut out)?;
    /// assert_eq!(out, layer.as_bytes());
    /// assert_eq!(FrozenLayer::<i32>::from_bytes(out)?.get("b"), Some(-1));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn write_to<W: Write>(&self, mut out: W) -> Result<()> {
        out.write_all(self.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|source| Error::Io {
                context: "writing a frozen layer".to_owned(),
                source,
            })
    }

    /// The layer's bytes, in the file format.
    ///
    /// ```
    /// use memkv::FrozenLayer;
    ///
    /// let layer = FrozenLayer::from_sorted_iter([("a", ()), ("b", ())])?;
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("set.memkv");
    /// layer.save(&path)?;
    /// assert_eq!(std::fs::read(&path)?, layer.as_bytes());
    /// assert_eq!(FrozenLayer::<()>::open(&path)?.as_bytes(), layer.as_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_bytes(&self) -> &[u8] {
        self.fst.as_inner().storage.bytes()
    }

    /// The entries whose keys are prefixes of `key` (`key` itself
    /// included), shortest first: the inverse of [`prefix`](Self::prefix),
    /// as a router or a rule table asks it.
    ///
    /// One walk down the fst along `key` finds them all, from the root (the
    /// jump table would skip the shorter ones). The keys yielded are slices
    /// of `key`, which is therefore borrowed, not taken by value.
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_sorted_iter([("usr/", 1u8), ("usr/bin/", 2), ("usr/share/", 3)])?;
    /// let covering: Vec<_> = layer.prefixes_of("usr/bin/ls").collect();
    /// assert_eq!(covering, [(&b"usr/"[..], 1), (&b"usr/bin/"[..], 2)]);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn prefixes_of<'k, K: AsRef<[u8]> + ?Sized>(&self, key: &'k K) -> PrefixesOf<'_, 'k, V> {
        PrefixesOf::new(self, key.as_ref(), self.root_state(), usize::MAX)
    }

    /// The entry whose key is the longest prefix of `key` (`key` itself, if
    /// present): the most specific match. The key returned is a slice of
    /// `key`.
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_sorted_iter([("", 0u8), ("a", 1), ("abc", 3)])?;
    /// assert_eq!(layer.longest_prefix_of("abcd"), Some((&b"abc"[..], 3)));
    /// assert_eq!(layer.longest_prefix_of("ab"), Some((&b"a"[..], 1)));
    /// assert_eq!(layer.longest_prefix_of("x"), Some((&b""[..], 0)));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn longest_prefix_of<'k, K: AsRef<[u8]> + ?Sized>(
        &self,
        key: &'k K,
    ) -> Option<(&'k [u8], V)> {
        let longest = self.longest_prefix_where(key.as_ref(), |_| true);
        // Only the last value is decoded.
        longest.map(|(key, value)| (key, V::decode(value)))
    }

    /// The longest key that is a prefix of `key` and that `wanted` accepts,
    /// with its stored value.
    pub(crate) fn longest_prefix_where<'k>(
        &self,
        key: &'k [u8],
        mut wanted: impl FnMut(&[u8]) -> bool,
    ) -> Option<(&'k [u8], Encoded<'_, V>)> {
        // The longest match is usually below where the jump table leads,
        // and then the walk from the root to there is not needed; only if
        // none lies below is that part walked too.
        let start = self.walk_start(key);
        let mut last_from = |start, until| {
            let mut covering = PrefixesOf::new(self, key, start, until);
            let mut longest = None;
            while let Some(entry) = covering.next_encoded() {
                if wanted(entry.0) {
                    longest = Some(entry);
                }
            }
            longest
        };
        match last_from(start, usize::MAX) {
            // The nodes from the table's depth on were walked already.
            None if start.1 > 0 => last_from(self.root_state(), start.1),
            found => found,
        }
    }

    /// The value of `key`, decoded from the column.
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_sorted_iter([("a", -1i64), ("b", 7)])?;
    /// assert_eq!(layer.get("a"), Some(-1));
    /// assert_eq!(layer.get(b"c"), None);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    #[inline]
    pub fn get(&self, key: impl AsRef<[u8]>) -> Option<V> {
        self.get_encoded(key).map(V::decode)
    }

    /// The value of `key` in its stored form, borrowed from the layer (from
    /// the mapped file, for an opened one) instead of decoded: a byte string
    /// or string value as `&[u8]`, without the copy into a `Vec` or `String`
    /// that [`get`](Self::get) makes; an integer as its `u64` encoding.
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_sorted_iter([("a", b"first".to_vec())])?;
    /// let value: Option<&[u8]> = layer.get_encoded("a");
    /// assert_eq!(value, Some(&b"first"[..]));
    /// assert_eq!(layer.get_encoded("b"), None);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    #[inline]
    pub fn get_encoded(&self, key: impl AsRef<[u8]>) -> Option<Encoded<'_, V>> {
        let ordinal = self.rank_fetching_value(key.as_ref(), || false, &mut false)?;
        Some(self.encoded_at(ordinal))
    }

    /// [`get`](Self::get), with other work run beside it: whenever the walk
    /// steps into another cache line (prefetched, and likely a wait for
    /// memory), it calls `beside` once; after the walk it calls `beside`
    /// until it returns `false`, and never again after that. A `HybridMap`
    /// write walks its delta toward the key this way while it looks the
    /// key's old value up here, so that the two walks' misses overlap.
    pub(crate) fn get_beside(&self, key: &[u8], beside: &mut dyn FnMut() -> bool) -> Option<V> {
        let mut going = true;
        let ordinal = self.rank_fetching_value(key, &mut *beside, &mut going);
        while going {
            going = beside();
        }
        Some(self.value_at(ordinal?))
    }

    /// The values of each of `keys`, in the order of `keys`: the same
    /// answers as calling [`get`](Self::get) for each, faster when there are
    /// many.
    ///
    /// A lookup follows one fst node per key byte, each found from the one
    /// before. This keeps 16 lookups under way, each prefetching its next
    /// node when that lies in another cache line, so that their cache misses
    /// overlap. Worth it from a few dozen keys on, on a layer much larger
    /// than the CPU caches. It allocates at most twice per call, the ordinals
    /// it finds first and then the result (once when the result can reuse
    /// the ordinals' buffer, as for 64-bit values), plus once for each
    /// byte-string value it decodes.
    ///
    /// ```
    /// let layer =
    ///     memkv::FrozenLayer::from_sorted_iter([("usr/bin/cat", 2u64), ("usr/bin/ls", 1)])?;
    /// let found = layer.get_many(&["usr/bin/cat", "usr/bin/vi", "usr/bin/ls"]);
    /// assert_eq!(found, [Some(2), None, Some(1)]);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn get_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<Option<V>> {
        // The column reads, apart: they do not depend on each other, so the
        // processor overlaps their cache misses.
        (self.rank_many(keys).into_iter())
            .map(|ordinal| ordinal.map(|ordinal| self.value_at(ordinal)))
            .collect()
    }

    /// The [`rank`](Self::rank) of each of `keys`, looked up as
    /// [`get_many`](Self::get_many) does, without reading the values.
    pub(crate) fn rank_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<Option<u64>> {
        let mut ordinals = vec![None; keys.len()];
        let start = |key: &[u8]| self.walk_start(key);
        lookup::get_each(self.fst.as_bytes(), start, keys, |index, ordinal| {
            ordinals[index] = ordinal;
        });
        ordinals
    }

    /// Whether `key` is present (does not touch the column).
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_sorted_iter([("etc/hosts", ())])?;
    /// assert!(layer.contains_key("etc/hosts"));
    /// assert!(!layer.contains_key("etc")); // a prefix of a key is not a key
    /// # Ok::<(), memkv::Error>(())
    /// ```
    #[inline]
    pub fn contains_key(&self, key: impl AsRef<[u8]>) -> bool {
        self.rank(key).is_some()
    }

    /// The position of `key` in key order (`0..len`), if present.
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_sorted_iter([("a", ()), ("b", ()), ("c", ())])?;
    /// assert_eq!(layer.rank("c"), Some(2));
    /// assert_eq!(layer.rank("bb"), None);
    /// assert_eq!(layer.nth(1), Some((b"b".to_vec(), ())));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    #[inline]
    pub fn rank(&self, key: impl AsRef<[u8]>) -> Option<usize> {
        // The fst's output is the key's ordinal (see the module docs), under
        // `len`, so it fits a `usize`.
        let key = key.as_ref();
        lookup::get_one(self.fst.as_bytes(), self.walk_start(key), key).map(|o| o as usize)
    }

    /// The entry at position `ordinal` in key order, if `ordinal < len`.
    ///
    /// Walks the fst from the root, at each node taking the last transition
    /// whose output (the number of keys before it) does not exceed what is
    /// left of `ordinal`: O(key length × fan-out), no scan.
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_sorted_iter([("a", 10u16), ("b", 20), ("c", 30)])?;
    /// assert_eq!(layer.nth(1), Some((b"b".to_vec(), 20)));
    /// assert_eq!(layer.nth(3), None); // past the end
    /// // `nth` undoes `rank`.
    /// assert_eq!(layer.rank("c").and_then(|i| layer.nth(i)), Some((b"c".to_vec(), 30)));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn nth(&self, ordinal: usize) -> Option<(Vec<u8>, V)> {
        if ordinal >= self.fst.len() {
            return None;
        }
        let ordinal = ordinal as u64;
        let mut key = Vec::new();
        // Outputs are ordinals, which increase with the keys: exactly the
        // precondition of the fst crate's reverse lookup.
        if !self.fst.get_key_into(ordinal, &mut key) {
            return None;
        }
        Some((key, self.value_at(ordinal)))
    }

    /// The smallest key and its value.
    ///
    /// ```
    /// use memkv::FrozenLayer;
    ///
    /// let layer = FrozenLayer::from_sorted_iter([("a", 1u64), ("b", 2)])?;
    /// assert_eq!(layer.first_key_value(), Some((b"a".to_vec(), 1)));
    /// let empty = FrozenLayer::<u64>::from_sorted_iter(std::iter::empty::<(&str, u64)>())?;
    /// assert_eq!(empty.first_key_value(), None);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn first_key_value(&self) -> Option<(Vec<u8>, V)> {
        self.iter().next()
    }

    /// The largest key and its value (found by ordinal, without a scan).
    ///
    /// ```
    /// use memkv::FrozenLayer;
    ///
    /// let layer = FrozenLayer::from_sorted_iter([("a", 1u64), ("b", 2)])?;
    /// assert_eq!(layer.last_key_value(), Some((b"b".to_vec(), 2)));
    /// let empty = FrozenLayer::<u64>::from_sorted_iter(std::iter::empty::<(&str, u64)>())?;
    /// assert_eq!(empty.last_key_value(), None);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn last_key_value(&self) -> Option<(Vec<u8>, V)> {
        self.fst
            .len()
            .checked_sub(1)
            .and_then(|last| self.nth(last))
    }

    /// Number of keys.
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_unsorted_iter([("b", 1u8), ("a", 2), ("b", 3)])?;
    /// assert_eq!(layer.len(), 2);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.fst.len()
    }

    /// Whether the layer has no keys.
    ///
    /// ```
    /// use memkv::FrozenLayer;
    ///
    /// let empty = FrozenLayer::<u8>::from_sorted_iter(std::iter::empty::<(&str, u8)>())?;
    /// assert!(empty.is_empty());
    /// assert!(!FrozenLayer::from_sorted_iter([("a", 1u8)])?.is_empty());
    /// # Ok::<(), memkv::Error>(())
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.fst.is_empty()
    }

    /// All entries in key order; see [`Iter`] for the allocating and the
    /// lending way to consume them.
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_unsorted_iter([("b", 2u8), ("a", 1), ("c", 3)])?;
    /// let entries: Vec<(Vec<u8>, u8)> = layer.iter().collect();
    /// assert_eq!(entries, [(b"a".to_vec(), 1), (b"b".to_vec(), 2), (b"c".to_vec(), 3)]);
    /// let backwards: Vec<u8> = layer.iter().rev().map(|(_, v)| v).collect();
    /// assert_eq!(backwards, [3, 2, 1]);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn iter(&self) -> Iter<'_, V> {
        self.walk(Bound::Unbounded, Bound::Unbounded)
    }

    /// All keys in order, without reading a value.
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_unsorted_iter([("b", 2u8), ("a", 1), ("c", 3)])?;
    /// assert_eq!(layer.keys().collect::<Vec<_>>(), [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    /// assert_eq!(layer.keys().next_back(), Some(b"c".to_vec()));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn keys(&self) -> Keys<'_, V> {
        Keys::new(self.iter())
    }

    /// All values in key order.
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_unsorted_iter([("b", 2u8), ("a", 1), ("c", 3)])?;
    /// assert_eq!(layer.values().collect::<Vec<_>>(), [1, 2, 3]);
    /// assert_eq!(layer.values().rev().collect::<Vec<_>>(), [3, 2, 1]);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn values(&self) -> Values<'_, V> {
        Values::new(self.iter())
    }

    /// The entries whose keys lie in `range`, in key order. A range whose
    /// start lies after its end yields nothing (it does not panic).
    ///
    /// The bounds may be any bytes: `"b"..`, `"a"..="c"`,
    /// `&b"a"[..]..=&b"b"[..]`, `Vec<u8>`s. Where Rust can read the bounds'
    /// type more than one way, name it: `..` as `range::<[u8], _>(..)` (or
    /// call `iter`), a range of byte-string literals, which is over arrays,
    /// as `range::<[u8; 1], _>(b"a"..b"b")`, and a pair of `Bound`s as
    /// `range::<[u8], _>((lower, upper))` (`::<str, _>` for `&str` bounds).
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_sorted_iter([("a", 1u8), ("b", 2), ("c", 3)])?;
    /// let keys: Vec<_> = layer.range("b"..).map(|(k, _)| k).collect();
    /// assert_eq!(keys, [b"b".to_vec(), b"c".to_vec()]);
    /// assert_eq!(layer.range(&b"a"[..]..=&b"b"[..]).count(), 2);
    /// assert_eq!(layer.range("c".."a").count(), 0);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn range<T, R>(&self, range: R) -> Iter<'_, V>
    where
        T: AsRef<[u8]> + ?Sized,
        R: RangeBounds<T>,
    {
        self.walk(
            range.start_bound().map(AsRef::as_ref),
            range.end_bound().map(AsRef::as_ref),
        )
    }

    /// The entries whose keys start with `prefix`, in key order.
    ///
    /// ```
    /// let layer = memkv::FrozenLayer::from_sorted_iter([
    ///     ("usr/bin/cat", 1u32),
    ///     ("usr/bin/ls", 2),
    ///     ("usr/binaries", 3),
    ///     ("var/log", 4),
    /// ])?;
    /// let keys: Vec<_> = layer.prefix("usr/bin/").map(|(key, _)| key).collect();
    /// assert_eq!(keys, [b"usr/bin/cat".to_vec(), b"usr/bin/ls".to_vec()]);
    /// assert_eq!(layer.prefix("usr/bin").count(), 3);
    /// assert_eq!(layer.prefix("").count(), layer.len());
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Iter<'_, V> {
        let prefix = prefix.as_ref();
        match prefix_successor(prefix) {
            Some(end) => self.walk(Bound::Included(prefix), Bound::Excluded(&end)),
            None => self.walk(Bound::Included(prefix), Bound::Unbounded),
        }
    }

    fn walk(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> Iter<'_, V> {
        let root = self.fst.root().addr() as u64;
        Iter::walk(self.fst.as_bytes(), root, start, end, self)
    }

    /// A set operation (union, intersection, difference, symmetric
    /// difference) with this layer as its first stream: add the others to the
    /// [`OpBuilder`] it returns, then pick the operation.
    ///
    /// ```
    /// use memkv::FrozenLayer;
    ///
    /// let old = FrozenLayer::from_sorted_iter([("a", 1u64), ("b", 2)])?;
    /// let new = FrozenLayer::from_sorted_iter([("b", 20u64), ("c", 30)])?;
    /// // Newest value per key, as a compaction of the two would keep it.
    /// let merged = FrozenLayer::from_sorted_iter(
    ///     old.op().add(&new).union().map(|(key, values)| (key, values.last().unwrap().value)),
    /// )?;
    /// assert_eq!(merged.iter().collect::<Vec<_>>(), [
    ///     (b"a".to_vec(), 1),
    ///     (b"b".to_vec(), 20),
    ///     (b"c".to_vec(), 30),
    /// ]);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn op(&self) -> OpBuilder<'_, V> {
        OpBuilder::new().add(self)
    }

    /// The entries whose keys `automaton` accepts, in key order. The fst is
    /// walked only where the automaton can still match: the walk of
    /// [`iter`](Self::iter), asking the automaton at each branching node (its
    /// `can_match` before going below, as the fst crate's streams ask it),
    /// with each key fed from where it parts from the one before. Over the
    /// 7.3 M Debian paths that ran 1.8–2.9× the fst crate's stream for
    /// prefix and subsequence queries and as fast for edit distances, which
    /// leave the walk mostly at the top of the fst
    /// (`harness/examples/search.rs`).
    ///
    /// The answers are the crate's streams' for the same automaton, with one
    /// difference, for automata that break the trait's contract: a state
    /// whose `will_always_match` is true is trusted (every key under it
    /// matches, without `is_match`, `can_match` or `accept_eof` being asked),
    /// where the crate's streams never ask it. That is what makes a prefix
    /// query's keys cost no automaton steps.
    ///
    /// ```
    /// use memkv::frozen::automaton::{Automaton, Str, Subsequence};
    ///
    /// let layer = memkv::FrozenLayer::from_sorted_iter([
    ///     ("usr/bin/cat", 1u32),
    ///     ("usr/lib/cat.so", 2),
    ///     ("var/cache", 3),
    /// ])?;
    /// let under_usr = layer.search(Str::new("usr/").starts_with()).count();
    /// assert_eq!(under_usr, 2);
    /// let fuzzy: Vec<u32> = layer.search(Subsequence::new("uca")).map(|(_, v)| v).collect();
    /// assert_eq!(fuzzy, [1, 2]);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    ///
    /// With the `levenshtein` feature, `automaton::Levenshtein::new(query,
    /// distance)` finds keys within an edit distance (its construction can
    /// take much time and memory for long queries; see the fst crate). It is
    /// the fst crate's automaton, with its known bug: among keys with
    /// multi-byte UTF-8 characters it misses some matches (fst issues 38 and
    /// 160; `"\u{783}"` within 1 of `"\u{782}"` is not found).
    pub fn search<A: automaton::Automaton>(&self, automaton: A) -> Search<'_, V, A> {
        Search::new(self.iter(), automaton)
    }

    /// Heap bytes held by the layer: the capacity of its byte buffer when it
    /// was built, loaded with [`from_bytes`](Self::from_bytes) or read by
    /// [`open`](Self::open) where nothing is mapped (WASI), 0 when it is
    /// memory-mapped (see [`mapped_bytes`](Self::mapped_bytes)). Exact for a
    /// layer on the heap, which allocates nothing else (its fixed-size struct
    /// is not counted); a mapped layer also holds its mapping's handle and
    /// the file's path, a few dozen bytes and the path's length, not
    /// counted.
    ///
    /// ```
    /// use memkv::FrozenLayer;
    ///
    /// let layer = FrozenLayer::from_sorted_iter((0..1000u32).map(|i| (format!("{i:04}"), i)))?;
    /// assert!(layer.memory_usage() >= layer.as_bytes().len());
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("numbers.memkv");
    /// layer.save(&path)?;
    /// # #[cfg(not(target_os = "wasi"))] // which reads the file
    /// assert_eq!(FrozenLayer::<u32>::open(&path)?.memory_usage(), 0); // mapped instead
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn memory_usage(&self) -> usize {
        match &self.fst.as_inner().storage {
            Storage::Heap(bytes) => bytes.capacity(),
            Storage::File(file) => match &file.bytes {
                FileBytes::Mapped(_) => 0,
                FileBytes::Read(bytes) => bytes.capacity(),
            },
        }
    }

    /// Bytes of the file mapping when the layer was [`open`](Self::open)ed
    /// (on a platform that maps files), else 0. These are page cache, not
    /// heap: the OS can drop and re-read them.
    ///
    /// ```ignore-wasi
    /// use memkv::FrozenLayer;
    ///
    /// let layer = FrozenLayer::from_sorted_iter((0..1000u32).map(|i| (format!("{i:04}"), i)))?;
    /// assert_eq!(layer.mapped_bytes(), 0); // built on the heap
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("numbers.memkv");
    /// layer.save(&path)?;
    /// let opened = FrozenLayer::<u32>::open(&path)?;
    /// assert_eq!(opened.mapped_bytes(), layer.as_bytes().len());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn mapped_bytes(&self) -> usize {
        match &self.fst.as_inner().storage {
            Storage::Heap(_) => 0,
            Storage::File(file) => match &file.bytes {
                FileBytes::Mapped(map) => map.len(),
                FileBytes::Read(_) => 0,
            },
        }
    }

    /// The value at `ordinal` (< len).
    #[inline]
    pub(crate) fn value_at(&self, ordinal: u64) -> V {
        V::decode(self.encoded_at(ordinal))
    }

    /// The stored form of value `ordinal` (< len).
    #[inline]
    pub(crate) fn encoded_at(&self, ordinal: u64) -> Encoded<'_, V> {
        V::Column::get(&self.column, self.column_bytes(), ordinal)
    }

    /// The column's section of the layer's bytes.
    #[inline]
    fn column_bytes(&self) -> &[u8] {
        &self.fst.as_inner().storage.bytes()[self.column_range.clone()]
    }

    /// [`rank`](Self::rank), prefetching the value column at the ordinal
    /// gathered so far each time the walk enters another cache line (see
    /// `lookup::get_one_beside`, which also explains `beside` and `going`),
    /// for the value read that follows.
    #[inline]
    fn rank_fetching_value(
        &self,
        key: &[u8],
        beside: impl FnMut() -> bool,
        going: &mut bool,
    ) -> Option<u64> {
        let start = self.walk_start(key);
        let column = self.column_bytes();
        let near = |ordinal| V::Column::prefetch(&self.column, column, ordinal);
        lookup::get_one_beside(self.fst.as_bytes(), start, key, near, beside, going)
    }

    /// Where the walk for `key` starts: where the jump table says its
    /// first bytes lead, or the root.
    #[inline]
    fn walk_start(&self, key: &[u8]) -> lookup::State {
        (self.jump.start(self.as_bytes(), key)).unwrap_or_else(|| self.root_state())
    }

    /// A walk at the root, nothing matched yet.
    #[inline]
    fn root_state(&self) -> lookup::State {
        (self.fst.root().addr() as u64, 0, 0)
    }
}

/// Writes a layer file to `path` atomically (as [`FrozenLayer::save`]),
/// streaming the entries that `fill` adds to a builder straight into the
/// file: for a layer that is never whole in memory, such as a hybrid map's
/// base in several parts.
pub(crate) fn save_built<V: FrozenValue>(
    path: &Path,
    fill: impl FnOnce(&mut FrozenLayerBuilder<V, BufWriter<&mut File>>) -> Result<()>,
) -> Result<()> {
    format::save_atomically_with(path, |file, temp_path| {
        let build = || {
            let mut builder = FrozenLayerBuilder::new(BufWriter::new(file))?;
            fill(&mut builder)?;
            // `finish` flushes the buffer and reports its errors.
            builder.finish().map(drop)
        };
        // The builder's I/O errors name no file: name the one written.
        build().map_err(|err| match err {
            Error::Io { context, source } => Error::Io {
                context: format!("{context} to temporary file {}", temp_path.display()),
                source,
            },
            other => other,
        })
    })
}

impl<V: FrozenValue> fmt::Debug for FrozenLayer<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrozenLayer")
            .field("value_type", &V::TYPE_NAME)
            .field("len", &self.len())
            .field("bytes", &self.as_bytes().len())
            .field("jump_depth", &self.jump.depth())
            .field("mapped_from", &self.fst.as_inner().storage.path())
            .finish()
    }
}

/// An empty layer.
///
/// ```
/// let layer: memkv::FrozenLayer<u64> = Default::default();
/// assert!(layer.is_empty());
/// assert_eq!(layer.iter().count(), 0);
/// assert_eq!(layer.get(""), None);
/// ```
impl<V: FrozenValue> Default for FrozenLayer<V> {
    fn default() -> Self {
        // An empty build into memory has no key to refuse and no writer to
        // fail.
        FrozenLayerBuilder::memory()
            .into_layer()
            .expect("an empty layer always builds")
    }
}

/// A copy of the layer. A layer on the heap is copied byte for byte, as
/// cloning any owned map is; a mapped layer shares its read-only mapping
/// with the clone, so the clone costs no memory and both report the
/// mapping in [`mapped_bytes`](FrozenLayer::mapped_bytes).
///
/// ```ignore-wasi
/// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
/// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("layer.memkv");
/// let built = memkv::FrozenLayer::from_sorted_iter([("a", 1u64), ("b", 2)])?;
/// let copy = built.clone();
/// assert_eq!(copy.memory_usage(), built.memory_usage());
/// built.save(&path)?;
/// drop(built);
/// assert_eq!(copy.get("b"), Some(2));
///
/// let mapped = memkv::FrozenLayer::<u64>::open(&path)?;
/// let shared = mapped.clone();
/// assert_eq!((shared.memory_usage(), shared.mapped_bytes()), (0, mapped.mapped_bytes()));
/// assert_eq!(shared.iter().collect::<Vec<_>>(), mapped.iter().collect::<Vec<_>>());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl<V: FrozenValue> Clone for FrozenLayer<V> {
    fn clone(&self) -> Self {
        FrozenLayer {
            fst: self.fst.clone(),
            column: self.column.clone(),
            column_range: self.column_range.clone(),
            jump: self.jump.clone(),
            value: PhantomData,
        }
    }
}

/// Layers are equal when they hold the same entries, as `BTreeMap`s are,
/// however they were built or stored (on the heap or mapped).
///
/// ```
/// use memkv::FrozenLayer;
///
/// let sorted = FrozenLayer::from_sorted_iter([("a", 1u32), ("b", 2)])?;
/// let unsorted = FrozenLayer::from_unsorted_iter([("b", 2u32), ("a", 1)])?;
/// assert_eq!(sorted, unsorted);
/// assert_ne!(sorted, FrozenLayer::from_sorted_iter([("a", 1u32), ("b", 3)])?);
/// # Ok::<(), memkv::Error>(())
/// ```
impl<V: FrozenValue + PartialEq> PartialEq for FrozenLayer<V> {
    fn eq(&self, other: &Self) -> bool {
        if self.len() != other.len() {
            return false;
        }
        let (mut a, mut b) = (self.iter(), other.iter());
        while let (Some(x), Some(y)) = (a.next_entry(), b.next_entry()) {
            if x != y {
                return false;
            }
        }
        true
    }
}

impl<V: FrozenValue + Eq> Eq for FrozenLayer<V> {}

impl<'a, V: FrozenValue> IntoIterator for &'a FrozenLayer<V> {
    type Item = (Vec<u8>, V);
    type IntoIter = Iter<'a, V>;

    fn into_iter(self) -> Iter<'a, V> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The search for the longest prefix starts where the jump table leads;
    /// when nothing matches there or below, it walks from the root down to
    /// just above the table's depth: every match shorter than the depth is
    /// found, the one a byte short of it included.
    #[test]
    fn longest_prefixes_above_the_jump_depth_are_found() {
        let stem = b"usr/share/doc/some-package-name/";
        let files =
            (0..200u64).map(|i| ([&stem[..], format!("file{i:03}").as_bytes()].concat(), i));
        let depth = FrozenLayer::from_sorted_iter(files.clone())
            .unwrap()
            .jump
            .depth();
        assert!((jump::MIN_DEPTH..stem.len()).contains(&depth), "{depth}");
        let query = [&stem[..], b"zzz"].concat();
        // The stem's prefixes up to each length short of the depth.
        for longest in 0..depth {
            let short = (0..=longest).map(|len| (stem[..len].to_vec(), 1000 + len as u64));
            let mut entries: Vec<(Vec<u8>, u64)> = files.clone().chain(short).collect();
            entries.sort();
            let layer = FrozenLayer::from_sorted_iter(entries).unwrap();
            assert_eq!(layer.jump.depth(), depth);
            let want = (&query[..longest], 1000 + longest as u64);
            assert_eq!(layer.longest_prefix_of(&query), Some(want));
            assert_eq!(layer.prefixes_of(&query).count(), longest + 1);
        }
    }

    /// A builder's I/O error names no file; a save names the one it wrote.
    #[test]
    fn a_failed_save_names_the_file_it_was_writing() {
        let dir = crate::scratch::dir();
        let path = dir.path().join("layer.memkv");
        let err = save_built::<u64>(&path, |_| {
            Err(Error::Io {
                context: "writing a frozen layer".to_owned(),
                source: std::io::Error::new(std::io::ErrorKind::StorageFull, "no space"),
            })
        })
        .unwrap_err();
        let Error::Io { context, source } = err else {
            panic!("an I/O error")
        };
        assert!(
            context.starts_with("writing a frozen layer to temporary file "),
            "{context}"
        );
        assert!(context.contains(".layer.memkv."), "{context}");
        assert_eq!(source.kind(), std::io::ErrorKind::StorageFull);
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn empty_layer_answers_everything() {
        let layer = FrozenLayer::<u64>::from_sorted_iter(Vec::<(&str, u64)>::new()).unwrap();
        assert!(layer.is_empty());
        assert_eq!(layer.get(""), None);
        assert_eq!(layer.first_key_value(), None);
        assert_eq!(layer.last_key_value(), None);
        assert_eq!(layer.nth(0), None);
        assert_eq!(layer.iter().count(), 0);
        let reopened = FrozenLayer::<u64>::from_bytes(layer.as_bytes().to_vec()).unwrap();
        assert!(reopened.is_empty());
    }

    #[test]
    fn get_beside_answers_as_get_and_runs_its_work_to_the_end() {
        let layer = FrozenLayer::from_sorted_iter(
            (0..5000u64).map(|i| (format!("usr/share/doc/{i:05}/copyright"), i)),
        )
        .unwrap();
        for probe in [
            "usr/share/doc/00000/copyright",
            "usr/share/doc/04999/copyright",
            "usr/share/doc/02500/copyrigh",
            "usr/share/doc/02500/copyright/",
            "",
            "zzz",
        ] {
            for steps in [1, 2, 50] {
                // `steps` calls of work: `true` until the last, then `false`.
                let mut calls = 0;
                let mut beside = || {
                    calls += 1;
                    assert!(calls <= steps, "called after it returned false");
                    calls < steps
                };
                assert_eq!(
                    layer.get_beside(probe.as_bytes(), &mut beside),
                    layer.get(probe),
                    "{probe}"
                );
                assert_eq!(calls, steps, "{probe}: the work not run to its end");
            }
        }
    }

    #[test]
    fn memory_usage_is_the_buffer() {
        let layer =
            FrozenLayer::from_sorted_iter((0..1000u64).map(|i| (format!("{i:04}"), i))).unwrap();
        assert_eq!(layer.memory_usage(), layer.as_bytes().len());
        assert_eq!(layer.mapped_bytes(), 0);
    }
}
