//! Streaming construction of a frozen layer from keys in increasing order.

use std::fmt;
use std::io::{self, Write};
use std::marker::PhantomData;

use super::FrozenLayer;
use super::column::{FrozenValue, ValueColumn};
use super::format::{self, Check, ChecksumWriter, Storage};
use super::fst_builder::{FstBuilder, KeyError};
use super::jump;
use crate::{Error, Result};

/// Builds a [`FrozenLayer`] from keys given in strictly increasing byte
/// order, streaming.
///
/// The builder compiles the fst as keys arrive and keeps only what the
/// output needs: the fst compiled so far, the value column, the path of the
/// last key, and a cache of compiled nodes (256 KiB at first, then an
/// eighth of the fst's size, at most 8 MiB) through which repeated suffixes
/// are stored once. It never holds the keys themselves, so building from a
/// sorted file of 7.3 million paths needs memory for the finished layer (and
/// that cache) only.
///
/// Errors carry the offending data: a key smaller than the previous one is
/// [`Error::OutOfOrder`], a repeated key [`Error::DuplicateKey`]. Such a key
/// is rejected and the builder is unchanged, so it may go on with the next
/// key. A write error on the output ([`Error::Io`]) leaves the builder
/// unusable: every later call fails, and nothing half-built is returned.
/// (A writer builder writes its header at once and the rest when
/// [`finish`](Self::finish)ing, so that is where write errors show.)
///
/// ```
/// use memkv::FrozenLayerBuilder;
///
/// let mut builder = FrozenLayerBuilder::memory();
/// builder.insert("apple", 3u64)?;
/// builder.insert("banana", 5)?;
/// assert!(matches!(builder.insert("aardvark", 1), Err(memkv::Error::OutOfOrder { .. })));
/// let layer = builder.into_layer()?;
/// assert_eq!(layer.get("banana"), Some(5));
/// assert_eq!(layer.len(), 2);
/// # Ok::<(), memkv::Error>(())
/// ```
///
/// To build into a file, give [`new`](Self::new) a writer and
/// [`open`](FrozenLayer::open) the result once [`finish`](Self::finish)ed.
pub struct FrozenLayerBuilder<V: FrozenValue, W = Vec<u8>> {
    fst: FstBuilder,
    sink: Sink<W>,
    column: <V::Column as ValueColumn>::Builder,
    len: u64,
    value: PhantomData<fn(V)>,
}

/// Where a builder's layer goes.
enum Sink<W> {
    /// A writer that has the header; the rest follows when finishing.
    Writer(ChecksumWriter<W>),
    /// Memory: the header is the prefix of the fst's buffer, so the whole
    /// layer is built in that one buffer (no copy of the fst at the end);
    /// the function hands it out as `W`, which is `Vec<u8>`.
    Buffer(fn(Vec<u8>) -> W),
}

impl<V: FrozenValue> FrozenLayerBuilder<V, Vec<u8>> {
    /// A builder whose layer is built in memory; get it with
    /// [`into_layer`](Self::into_layer).
    ///
    /// ```
    /// let mut builder = memkv::FrozenLayerBuilder::memory();
    /// builder.insert("enabled", true)?;
    /// let layer = builder.into_layer()?;
    /// assert_eq!(layer.get("enabled"), Some(true));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn memory() -> Self {
        Self::memory_with_capacity(0)
    }

    /// A [`memory`](Self::memory) builder whose buffer starts with room for
    /// `bytes` of layer, so that a good estimate saves the copies (and the
    /// doubled capacity) of a growing buffer.
    pub(crate) fn memory_with_capacity(bytes: usize) -> Self {
        let mut header = Vec::with_capacity(bytes.max(format::HEADER_LEN));
        format::write_header(&mut header, Self::type_name()).expect("writing to a Vec cannot fail");
        FrozenLayerBuilder {
            fst: FstBuilder::new(header),
            sink: Sink::Buffer(|layer| layer),
            column: Default::default(),
            len: 0,
            value: PhantomData,
        }
    }

    /// Finishes the layer and returns it, ready for queries.
    ///
    /// ```
    /// let mut builder = memkv::FrozenLayerBuilder::memory();
    /// for (i, word) in ["ant", "bee", "cat"].into_iter().enumerate() {
    ///     builder.insert(word, i as u64)?;
    /// }
    /// let layer = builder.into_layer()?;
    /// assert_eq!(layer.get("cat"), Some(2));
    /// assert_eq!(layer.mapped_bytes(), 0); // on the heap
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn into_layer(self) -> Result<FrozenLayer<V>> {
        let mut bytes = self.finish()?;
        // Growth by doubling may have left up to half the buffer unused.
        // (jemalloc shrinks a large allocation in place, without a copy.)
        bytes.shrink_to_fit();
        // We just wrote and checksummed these bytes: no need to re-read them.
        FrozenLayer::from_storage(Storage::Heap(bytes), Check::Lengths)
    }
}

impl<V: FrozenValue, W: Write> FrozenLayerBuilder<V, W> {
    /// A builder that writes the layer, in the file format, to `writer`:
    /// the header now, the rest when [`finish`](Self::finish)ing.
    ///
    /// Fails only if writing the header fails.
    ///
    /// ```
    /// use std::{fs::File, io::BufWriter};
    /// use memkv::{FrozenLayer, FrozenLayerBuilder};
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("built.memkv");
    /// let mut builder = FrozenLayerBuilder::new(BufWriter::new(File::create(&path)?))?;
    /// builder.insert("alpha", 1u32)?;
    /// builder.insert("beta", 2)?;
    /// builder.finish()?;
    /// assert_eq!(FrozenLayer::<u32>::open(&path)?.get("beta"), Some(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(writer: W) -> Result<Self> {
        let mut out = ChecksumWriter::new(writer);
        format::write_header(&mut out, Self::type_name()).map_err(write_error)?;
        Ok(FrozenLayerBuilder {
            fst: FstBuilder::new(Vec::new()),
            sink: Sink::Writer(out),
            column: Default::default(),
            len: 0,
            value: PhantomData,
        })
    }

    fn type_name() -> &'static str {
        const {
            assert!(
                V::TYPE_NAME.len() <= format::TYPE_NAME_LEN,
                "FrozenValue::TYPE_NAME is longer than 16 bytes"
            )
        };
        V::TYPE_NAME
    }

    /// Adds `key` with `value`. `key` must be greater than every key added
    /// before (byte-wise lexicographic order, as `[u8]`'s `Ord`).
    ///
    /// ```
    /// use memkv::{Error, FrozenLayerBuilder};
    ///
    /// let mut builder = FrozenLayerBuilder::memory();
    /// builder.insert("b", 2u8)?;
    /// let early = builder.insert("a", 1);
    /// assert!(matches!(early, Err(Error::OutOfOrder { previous, got })
    ///     if previous == b"b" && got == b"a"));
    /// assert!(matches!(builder.insert("b", 3), Err(Error::DuplicateKey { .. })));
    /// builder.insert("c", 3)?; // the refused keys left the builder as it was
    /// assert_eq!(builder.into_layer()?.len(), 2);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn insert(&mut self, key: impl AsRef<[u8]>, value: V) -> Result<()> {
        self.insert_encoded(key.as_ref(), value.encode())
    }

    /// Adds a key with a value in its stored form (lets the conveniences
    /// insert from a `&V`).
    pub(crate) fn insert_encoded(
        &mut self,
        key: &[u8],
        value: <V::Column as ValueColumn>::Encoded<'_>,
    ) -> Result<()> {
        // The fst maps each key to its ordinal; the value goes to the column
        // at that ordinal, only once the fst has accepted the key.
        self.fst.insert(key, self.len).map_err(|err| match err {
            KeyError::OutOfOrder { previous, got } => Error::OutOfOrder { previous, got },
            KeyError::Duplicate { got } => Error::DuplicateKey { key: got },
        })?;
        V::Column::push(&mut self.column, value);
        self.len += 1;
        Ok(())
    }

    /// Number of keys added so far.
    ///
    /// ```
    /// let mut builder = memkv::FrozenLayerBuilder::memory();
    /// builder.insert("a", 1u8)?;
    /// builder.insert("b", 2)?;
    /// assert_eq!(builder.len(), 2);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        // The layer built counts its keys in a `usize` too.
        self.len as usize
    }

    /// Whether no key was added yet.
    ///
    /// ```
    /// let mut builder = memkv::FrozenLayerBuilder::memory();
    /// assert!(builder.is_empty());
    /// builder.insert("a", 1u8)?;
    /// assert!(!builder.is_empty());
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of layer so far: the header and the fst compiled so far (the
    /// values follow when finishing). A writer builder keeps the fst in
    /// memory and hands it to its writer when finishing, so these bytes
    /// need not have reached the writer yet.
    ///
    /// ```
    /// let mut builder = memkv::FrozenLayerBuilder::memory();
    /// let start = builder.bytes_written();
    /// for i in 0..1000u32 {
    ///     builder.insert(format!("key{i:04}"), i)?;
    /// }
    /// let so_far = builder.bytes_written();
    /// assert!(so_far > start);
    /// assert!(builder.into_layer()?.as_bytes().len() as u64 > so_far); // + values, trailer
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn bytes_written(&self) -> u64 {
        (format::HEADER_LEN + self.fst.bytes_written()) as u64
    }

    /// Heap bytes held by the builder: the fst compiled so far with its
    /// cache of nodes, and the value column (and, for a
    /// [`memory`](Self::memory) builder, the header: it opens the fst's
    /// buffer).
    ///
    /// ```
    /// let mut builder = memkv::FrozenLayerBuilder::memory();
    /// let start = builder.memory_usage(); // the node cache, allocated up front
    /// for i in 0..10_000u64 {
    ///     builder.insert(format!("key{i:05}"), i)?;
    /// }
    /// assert!(builder.memory_usage() > start);
    /// assert!(builder.memory_usage() as u64 >= builder.bytes_written());
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn memory_usage(&self) -> usize {
        self.fst.memory_usage() + V::Column::builder_heap_bytes(&self.column)
    }

    /// Writes the value column and trailer, flushes, and returns the writer,
    /// which now holds a complete layer file.
    ///
    /// ```
    /// use memkv::{FrozenLayer, FrozenLayerBuilder};
    ///
    /// let mut builder = FrozenLayerBuilder::new(Vec::new())?;
    /// builder.insert("a", 1i64)?;
    /// builder.insert("b", -2)?;
    /// let bytes: Vec<u8> = builder.finish()?;
    /// assert_eq!(FrozenLayer::<i64>::from_bytes(bytes)?.get("b"), Some(-2));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn finish(self) -> Result<W> {
        let fst = self.fst.finish();
        match self.sink {
            Sink::Writer(mut out) => {
                let jump = jump::Built::for_fst(&fst);
                let fst_len = fst.len() as u64;
                out.write_all(&fst).map_err(write_error)?;
                drop(fst);
                finish_layer::<V, _>(&mut out, self.column, jump, self.len, fst_len)?;
                Ok(out.into_inner())
            }
            Sink::Buffer(into) => {
                let jump = jump::Built::for_fst(&fst[format::HEADER_LEN..]);
                let fst_len = (fst.len() - format::HEADER_LEN) as u64;
                // Room for the column, jump table and trailer in one step,
                // rather than a doubling of the whole layer's buffer.
                let mut fst = fst;
                let jump_len = jump.as_ref().map_or(0, jump::Built::max_len);
                fst.reserve_exact(V::Column::builder_heap_bytes(&self.column) + jump_len + 4096);
                let mut out = ChecksumWriter::after(fst);
                finish_layer::<V, _>(&mut out, self.column, jump, self.len, fst_len)?;
                Ok(into(out.into_inner()))
            }
        }
    }
}

impl<V: FrozenValue, W> fmt::Debug for FrozenLayerBuilder<V, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrozenLayerBuilder")
            .field("value_type", &V::TYPE_NAME)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

/// Writes the value column and the trailer after the fst, and flushes.
fn finish_layer<V: FrozenValue, W: Write>(
    out: &mut ChecksumWriter<W>,
    column: <V::Column as ValueColumn>::Builder,
    jump: Option<jump::Built>,
    len: u64,
    fst_len: u64,
) -> Result<()> {
    let column_len = V::Column::write_column(column, out).map_err(write_error)?;
    if let Some(jump) = jump {
        let at = format::HEADER_LEN as u64 + fst_len + column_len;
        jump.write(out, at).map_err(write_error)?;
    }
    format::write_trailer(out, len, fst_len, column_len).map_err(write_error)?;
    out.flush().map_err(write_error)
}

fn write_error(source: io::Error) -> Error {
    Error::Io {
        context: "writing a frozen layer".to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accepts `budget` bytes, then fails every write.
    #[derive(Debug)]
    struct FailingWriter {
        budget: usize,
    }

    impl Write for FailingWriter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.budget == 0 {
                return Err(io::Error::other("disk full"));
            }
            let n = buf.len().min(self.budget);
            self.budget -= n;
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_write_error_in_the_fst_is_reported() {
        // Enough for the header and part of the fst.
        let mut builder = FrozenLayerBuilder::<u64, _>::new(FailingWriter { budget: 60 }).unwrap();
        for i in 0..10_000u64 {
            builder.insert(format!("key{i:06}"), i).unwrap();
        }
        let err = builder.finish().unwrap_err();
        assert!(
            matches!(&err, Error::Io { source, .. } if source.to_string() == "disk full"),
            "{err}"
        );
    }

    #[test]
    fn a_write_error_when_finishing_is_reported() {
        let mut builder = FrozenLayerBuilder::<u64, _>::new(FailingWriter { budget: 48 }).unwrap();
        builder.insert("a", 1).unwrap();
        assert!(matches!(builder.finish(), Err(Error::Io { .. })));
    }

    #[test]
    fn a_header_write_error_is_reported() {
        let err = FrozenLayerBuilder::<u64, _>::new(FailingWriter { budget: 3 }).unwrap_err();
        assert!(matches!(err, Error::Io { .. }));
    }
}
