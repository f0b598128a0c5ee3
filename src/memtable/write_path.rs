//! [`WritePath`]: a memtable used the way an LSM engine uses it (documented
//! on the type).

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{EntryCursor, EntryRef, Lookup, MAX_SEQNO, Memtable, MemtableRead, ValueKind};

/// A tombstone's value length in a run file.
const TOMBSTONE_LEN: u32 = u32::MAX;
/// One sparse-index entry per this many run entries.
const INDEX_EVERY: usize = 64;

/// How a [`WritePath`] is configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WritePathOptions {
    /// Directory for the run files (must exist).
    pub dir: PathBuf,
    /// Freeze the active memtable when its approximate memory usage reaches
    /// this many bytes (default 64 MiB, RocksDB's `write_buffer_size`).
    pub write_buffer_size: usize,
    /// Memtables that may exist at once, the active one included (default
    /// 2, at least 2): writers stall while `max_write_buffer_number − 1`
    /// immutable memtables wait for the flusher.
    pub max_write_buffer_number: usize,
    /// Write frozen memtables on a background thread (default `true`). With
    /// `false`, or where no thread can be started (WASI), the write or
    /// [`flush`](WritePath::flush) that freezes a memtable writes it too,
    /// before it returns: writes then take turns with flushes, and never
    /// stall. On two cores, 3 M puts through an
    /// [`ArtMemtable`](super::ArtMemtable) ran at about 0.6× their rate
    /// with the thread (DESIGN.md).
    pub background_flush: bool,
}

impl WritePathOptions {
    /// The defaults, with run files in `dir`.
    ///
    /// ```
    /// use memkv::memtable::WritePathOptions;
    ///
    /// let options = WritePathOptions::new("/tmp/runs");
    /// assert_eq!(options.dir, std::path::Path::new("/tmp/runs"));
    /// assert_eq!(options.write_buffer_size, 64 << 20);
    /// assert_eq!(options.max_write_buffer_number, 2);
    /// assert!(options.background_flush);
    /// ```
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        WritePathOptions {
            dir: dir.into(),
            write_buffer_size: 64 << 20,
            max_write_buffer_number: 2,
            background_flush: true,
        }
    }
}

/// What a [`WritePath`] has done so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WritePathStats {
    /// The last sequence number assigned. Each entry written takes one: a
    /// batch of n entries takes n, and a delete takes one whether or not the
    /// key exists.
    pub last_seqno: u64,
    /// Memtables frozen.
    pub freezes: u64,
    /// Run files written.
    pub flushes: u64,
    /// Bytes written to run files.
    pub flushed_bytes: u64,
    /// Memtable switches that had to wait for the flusher, because the
    /// immutable memtables were at their limit: the switch of a write that
    /// filled the memtable, or of a [`WritePath::flush`].
    pub stalls: u64,
    /// Time spent in those waits.
    pub stall_time: Duration,
    /// Immutable memtables not yet flushed.
    pub immutables: usize,
}

/// The memtables and runs a read consults.
struct State<M: Memtable> {
    active: M,
    /// Oldest first.
    immutables: Vec<Arc<M::Frozen>>,
    /// Oldest first.
    runs: Vec<Arc<Run>>,
}

/// Bookkeeping shared with the flusher, behind one mutex.
#[derive(Debug, Default)]
struct Progress {
    /// Immutable memtables handed to the flusher and not yet written.
    immutables: usize,
    /// The flusher's first failure: writes fail from then on.
    error: Option<(io::ErrorKind, String)>,
    stats: WritePathStats,
}

struct Shared<M: Memtable> {
    state: RwLock<State<M>>,
    progress: Mutex<Progress>,
    /// Signalled when the flusher finishes (or fails) a memtable.
    flushed: Condvar,
    /// Reads see every write up to this sequence number.
    visible: AtomicU64,
}

impl<M: Memtable> Shared<M> {
    fn progress(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An LSM write path around a [`Memtable`]: a harness for measuring
/// memtables, not a database.
///
/// ```text
///  put/delete ──► active memtable ──(full: freeze)──► immutable memtables ──► flusher thread ──► run files
///                    ▲ get: 1st                          ▲ get: 2nd, newest first                  ▲ get: 3rd, newest first
/// ```
///
/// * Writes go to the active memtable, each with the next sequence number.
///   Writers are serialised by a mutex (one sequence of numbers).
/// * When the active memtable's
///   [`approximate_memory_usage`](super::MemtableRead::approximate_memory_usage)
///   reaches [`WritePathOptions::write_buffer_size`], it is frozen and handed
///   over a bounded channel to one background thread, which writes it as a
///   sorted run file. At most `max_write_buffer_number − 1` immutable
///   memtables exist at once (so at most `max_write_buffer_number`
///   memtables, as in RocksDB); a writer that would exceed that stalls until
///   the flusher finishes one. The freeze itself runs while the write path's
///   state is locked, so reads wait for it: O(1) for the skip list and the
///   ART, a sort for [`VecMemtable`](super::VecMemtable). Without a flusher
///   thread ([`WritePathOptions::background_flush`]; WASI), the write that
///   froze the memtable writes it, and the immutable memtables are never
///   more than the one being written.
/// * A read sees every write whose `put`/`delete` returned: the active
///   memtable, then the immutable ones, then the run files, newest first; a
///   tombstone anywhere stops the search.
/// * A flush that fails, by an I/O error or a panic (in a memtable's
///   cursor, say), fails every write after it; what was written stays
///   readable from the memtables.
///
/// # Run files
/// A run holds the newest version of each key of one memtable (the write
/// path reads only the latest state, so older versions are dropped at flush;
/// tombstones are kept, as they hide older runs), sorted by key:
///
/// ```text
///  repeated: | key len: u32 LE | key | value len: u32 LE | value |
///            a tombstone has value len 0xFFFF_FFFF and no value bytes
/// ```
///
/// Written through a buffered writer, not synced (a crash loses nothing a
/// benchmark cares about). An in-memory sparse index (every 64th key) lets a
/// read fetch one small block with `pread`. Runs are never compacted or
/// deleted: the directory is the caller's to clean up.
///
/// ```
/// use memkv::memtable::{ArtMemtable, WritePath, WritePathOptions};
///
/// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
/// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
/// let dir = tempfile::tempdir()?;
/// let mut options = WritePathOptions::new(dir.path());
/// options.write_buffer_size = 4096; // tiny, to force flushes
/// let db: WritePath<ArtMemtable> = WritePath::open(options)?;
/// for i in 0..1000u32 {
///     db.put(&i.to_be_bytes(), b"some value")?;
/// }
/// db.delete(&7u32.to_be_bytes())?;
/// assert_eq!(db.get(&5u32.to_be_bytes())?, Some(b"some value".to_vec()));
/// assert_eq!(db.get(&7u32.to_be_bytes())?, None);
/// let stats = db.close()?;
/// assert!(stats.flushes > 0);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct WritePath<M: Memtable + 'static> {
    shared: Arc<Shared<M>>,
    /// Serialises writers; holds the last sequence number assigned.
    writer: Mutex<u64>,
    flusher: Flusher<M::Frozen>,
    options: WritePathOptions,
    /// Makes each new active memtable.
    new_memtable: Box<dyn Fn() -> M + Send + Sync>,
}

/// Who writes the frozen memtables.
enum Flusher<F> {
    /// A background thread, fed by a channel with room for every immutable
    /// memtable allowed, each with its number (see [`flush_one`]).
    Thread {
        sender: SyncSender<(u64, Arc<F>)>,
        handle: JoinHandle<()>,
    },
    /// None asked for, or none could be started (WASI has no threads): the
    /// writer whose switch froze a memtable writes it before the switch
    /// returns.
    Inline,
    /// Closed or dropped.
    Stopped,
}

impl<M: Memtable + 'static> std::fmt::Debug for WritePath<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WritePath")
            .field("options", &self.options)
            .field("flushes_inline", &self.flushes_inline())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl<M: Memtable + 'static> WritePath<M> {
    /// Starts a write path with an empty memtable and its flusher thread.
    ///
    /// Where no thread can be started (WASI has none, or a limit is
    /// reached), or [`WritePathOptions::background_flush`] is `false`, the
    /// write path flushes inline instead: the write (or
    /// [`flush`](WritePath::flush)) that freezes a memtable also writes it as
    /// a run before it returns. [`flushes_inline`](WritePath::flushes_inline)
    /// tells which.
    ///
    /// # Errors
    /// If `options.dir` is not a directory or already holds run files (a
    /// write path starts empty and reads no runs it did not write).
    ///
    /// # Panics
    /// If `max_write_buffer_number` is below 2.
    ///
    /// ```
    /// use memkv::memtable::{SkipListMemtable, WritePath, WritePathOptions};
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let db: WritePath<SkipListMemtable> = WritePath::open(WritePathOptions::new(dir.path()))?;
    /// db.put(b"k", b"v")?;
    /// db.flush()?; // writes a run file into `dir`
    /// // A second write path can't start in a directory that holds runs.
    /// let err = WritePath::<SkipListMemtable>::open(WritePathOptions::new(dir.path()))
    ///     .unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn open(options: WritePathOptions) -> io::Result<Self> {
        Self::open_with(options, M::default)
    }

    /// [`open`](WritePath::open), with each memtable (the first one and every
    /// one after a freeze) made by `new_memtable` rather than `M::default()`:
    /// for a memtable with settings, such as a
    /// [`ShardedArtMemtable`](super::ShardedArtMemtable) with another count
    /// of shards.
    ///
    /// A panic in `new_memtable` when a memtable is full changes nothing:
    /// the full memtable stays active and every entry readable. It comes
    /// back as an error: from [`flush`](WritePath::flush), or, when a write
    /// filled the memtable, as the write path's failure, which later writes
    /// return (as after a failed flush).
    ///
    /// # Errors
    /// As [`open`](WritePath::open).
    ///
    /// # Panics
    /// If `max_write_buffer_number` is below 2, or `new_memtable` panics
    /// making the first memtable.
    ///
    /// ```
    /// use memkv::memtable::{ShardedArtMemtable, WritePath, WritePathOptions};
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let db = WritePath::open_with(WritePathOptions::new(dir.path()), || {
    ///     ShardedArtMemtable::with_shards(64)
    /// })?;
    /// db.put(b"k", b"v")?;
    /// assert_eq!(db.get(b"k")?, Some(b"v".to_vec()));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn open_with(
        options: WritePathOptions,
        new_memtable: impl Fn() -> M + Send + Sync + 'static,
    ) -> io::Result<Self> {
        Self::start(options, new_memtable, |flush| {
            std::thread::Builder::new()
                .name("memkv-flusher".into())
                .spawn(flush)
        })
    }

    /// [`open_with`](WritePath::open_with), with the flusher thread started
    /// by `spawn` (the tests' seam for a platform without threads).
    fn start(
        options: WritePathOptions,
        new_memtable: impl Fn() -> M + Send + Sync + 'static,
        spawn: impl FnOnce(Box<dyn FnOnce() + Send>) -> io::Result<JoinHandle<()>>,
    ) -> io::Result<Self> {
        assert!(
            options.max_write_buffer_number >= 2,
            "max_write_buffer_number must be at least 2 (got {})",
            options.max_write_buffer_number
        );
        if !options.dir.is_dir() {
            let (kind, what) = if options.dir.exists() {
                (io::ErrorKind::NotADirectory, "is not a directory")
            } else {
                (io::ErrorKind::NotFound, "does not exist")
            };
            return Err(io::Error::new(
                kind,
                format!("{} {what}", options.dir.display()),
            ));
        }
        // Else the first flush would fail on the existing name, and every
        // write after it.
        for entry in std::fs::read_dir(&options.dir)? {
            let name = entry?.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("run-") && name.ends_with(".sst") {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "{} already holds run files ({name}); a write path starts in an empty directory",
                        options.dir.display()
                    ),
                ));
            }
        }
        let shared = Arc::new(Shared {
            state: RwLock::new(State {
                active: new_memtable(),
                immutables: Vec::new(),
                runs: Vec::new(),
            }),
            progress: Mutex::new(Progress::default()),
            flushed: Condvar::new(),
            visible: AtomicU64::new(0),
        });
        let flusher = if options.background_flush {
            let (sender, receiver) = sync_channel(options.max_write_buffer_number - 1);
            let flush = {
                let shared = Arc::clone(&shared);
                let dir = options.dir.clone();
                Box::new(move || flush_loop(&shared, &receiver, &dir))
            };
            // Any failure, not only WASI's `Unsupported`: a thread limit
            // reached is no reason to refuse writes that can be flushed
            // inline.
            match spawn(flush) {
                Ok(handle) => Flusher::Thread { sender, handle },
                Err(_) => Flusher::Inline,
            }
        } else {
            Flusher::Inline
        };
        Ok(WritePath {
            shared,
            writer: Mutex::new(0),
            flusher,
            options,
            new_memtable: Box::new(new_memtable),
        })
    }

    /// Writes `value` under `key`.
    ///
    /// # Errors
    /// If an earlier flush failed, or a write or a memtable's freeze
    /// panicked (the write is then not done); [`io::ErrorKind::InvalidInput`]
    /// if the key or value is 4 GiB − 1 bytes or longer, which a run file
    /// cannot hold, or if they do not [fit](Memtable::fits) the memtable
    /// (nothing is then written, and the write path goes on).
    ///
    /// # Panics
    /// If the memtable's `insert` panics; the write path then fails, and
    /// none of the write is ever read.
    ///
    /// ```
    /// use memkv::memtable::{ArtMemtable, WritePath, WritePathOptions};
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let db: WritePath<ArtMemtable> = WritePath::open(WritePathOptions::new(dir.path()))?;
    /// db.put(b"color", b"red")?;
    /// db.put(b"color", b"green")?; // a newer version hides the older one
    /// assert_eq!(db.get(b"color")?, Some(b"green".to_vec()));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> io::Result<()> {
        let (key, value) = (key.as_ref(), value.as_ref());
        self.write(key, ValueKind::Value, value)
    }

    /// Deletes `key` (writes a tombstone).
    ///
    /// # Errors
    /// As [`WritePath::put`].
    ///
    /// ```
    /// use memkv::memtable::{ArtMemtable, WritePath, WritePathOptions};
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let db: WritePath<ArtMemtable> = WritePath::open(WritePathOptions::new(dir.path()))?;
    /// db.put(b"k", b"v")?;
    /// db.flush()?; // the value is now in a run file
    /// db.delete(b"k")?; // the tombstone in the memtable hides it
    /// assert_eq!(db.get(b"k")?, None);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn delete(&self, key: impl AsRef<[u8]>) -> io::Result<()> {
        let key = key.as_ref();
        self.write(key, ValueKind::Tombstone, &[])
    }

    fn write(&self, key: &[u8], kind: ValueKind, value: &[u8]) -> io::Result<()> {
        check_fits::<M>(key, value)?;
        self.write_entries(1, |active, seqno| active.insert(key, seqno, kind, value))
    }

    /// Applies a write batch: `(key, Some(value))` puts, `(key, None)`
    /// deletes, in order, with consecutive sequence numbers. The whole batch
    /// goes into one memtable (through [`Memtable::insert_batch`]) and
    /// becomes visible to [`get`](WritePath::get) at once.
    ///
    /// # Errors
    /// As [`WritePath::put`]: none of the batch is then written.
    ///
    /// ```
    /// use memkv::memtable::{ArtMemtable, WritePath, WritePathOptions};
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let db: WritePath<ArtMemtable> = WritePath::open(WritePathOptions::new(dir.path()))?;
    /// db.put(b"old", b"1")?;
    /// db.write_batch(&[(b"new", Some(b"2")), (b"old", None)])?;
    /// assert_eq!((db.get(b"new")?, db.get(b"old")?), (Some(b"2".to_vec()), None));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn write_batch(&self, batch: &[(&[u8], Option<&[u8]>)]) -> io::Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        for &(key, value) in batch {
            check_fits::<M>(key, value.unwrap_or_default())?;
        }
        self.write_entries(batch.len() as u64, |active, first| {
            let entries: Vec<EntryRef<'_>> = (batch.iter().zip(first..))
                .map(|(&(user_key, value), seqno)| EntryRef {
                    user_key,
                    seqno,
                    kind: match value {
                        Some(_) => ValueKind::Value,
                        None => ValueKind::Tombstone,
                    },
                    value: value.unwrap_or_default(),
                })
                .collect();
            active.insert_batch(&entries);
        })
    }

    /// Under the writer lock, has `insert(active memtable, first seqno)`
    /// write `count` entries numbered from the next sequence number on, then
    /// publishes them together and freezes the memtable if it is full.
    fn write_entries(&self, count: u64, insert: impl FnOnce(&M, u64)) -> io::Result<()> {
        let mut last = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        self.check_error()?;
        let first = *last + 1;
        let end = *last + count;
        assert!(end <= MAX_SEQNO, "sequence numbers exhausted");
        let full = {
            let state = self.state_read();
            // A memtable that panics part-way through a batch has some of
            // its entries in, numbered above `visible`: the next write
            // would publish them. So the write path fails instead, and
            // none is ever published.
            if let Err(payload) =
                panic::catch_unwind(AssertUnwindSafe(|| insert(&state.active, first)))
            {
                drop(state);
                let message = crate::error::panic_message(payload.as_ref());
                self.fail(&io::Error::other(format!("a write panicked: {message}")));
                panic::resume_unwind(payload);
            }
            state.active.approximate_memory_usage() >= self.options.write_buffer_size
        };
        *last = end;
        self.shared.visible.store(end, Ordering::Release);
        if full && let Err(e) = self.switch() {
            // The entries are in and visible: this write is done, so the
            // failure to freeze is the next write's error (see `put`).
            self.fail(&e);
        }
        Ok(())
    }

    /// Records `e` as the write path's failure, unless one is recorded:
    /// every write fails from then on.
    fn fail(&self, e: &io::Error) {
        let mut p = self.shared.progress();
        if p.error.is_none() {
            p.error = Some((e.kind(), e.to_string()));
        }
        self.shared.flushed.notify_all();
    }

    /// The value of `key` as of the last completed write, or `None` if it
    /// was never written or was deleted.
    ///
    /// # Errors
    /// If reading a run file fails.
    ///
    /// ```
    /// use memkv::memtable::{ArtMemtable, WritePath, WritePathOptions};
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let db: WritePath<ArtMemtable> = WritePath::open(WritePathOptions::new(dir.path()))?;
    /// db.put(b"old", b"1")?;
    /// db.flush()?;
    /// db.put(b"new", b"2")?;
    /// assert_eq!(db.get(b"old")?, Some(b"1".to_vec())); // from the run file
    /// assert_eq!(db.get(b"new")?, Some(b"2".to_vec())); // from the memtable
    /// assert_eq!(db.get(b"never")?, None);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn get(&self, key: impl AsRef<[u8]>) -> io::Result<Option<Vec<u8>>> {
        let key = key.as_ref();
        let snapshot = self.shared.visible.load(Ordering::Acquire);
        let runs = {
            let state = self.state_read();
            match state.active.get(key, snapshot) {
                Lookup::Found(v) => return Ok(Some(v)),
                Lookup::Deleted => return Ok(None),
                Lookup::Absent => {}
            }
            for imm in state.immutables.iter().rev() {
                match imm.get(key, snapshot) {
                    Lookup::Found(v) => return Ok(Some(v)),
                    Lookup::Deleted => return Ok(None),
                    Lookup::Absent => {}
                }
            }
            state.runs.clone()
        };
        for run in runs.iter().rev() {
            match run.get(key)? {
                Lookup::Found(v) => return Ok(Some(v)),
                Lookup::Deleted => return Ok(None),
                Lookup::Absent => {}
            }
        }
        Ok(None)
    }

    /// Freezes the active memtable (if it holds anything) and waits until
    /// every immutable memtable is written to a run.
    ///
    /// # Errors
    /// If a flush failed, or a write or a freeze panicked (see [`put`](WritePath::put)).
    ///
    /// ```
    /// use memkv::memtable::{ArtMemtable, WritePath, WritePathOptions};
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let db: WritePath<ArtMemtable> = WritePath::open(WritePathOptions::new(dir.path()))?;
    /// db.put(b"k", b"v")?;
    /// db.flush()?;
    /// db.flush()?; // nothing new: no empty run
    /// let stats = db.stats();
    /// assert_eq!((stats.freezes, stats.flushes, stats.immutables), (1, 1, 0));
    /// assert_eq!(stats.flushed_bytes, 4 + 1 + 4 + 1); // key len, key, value len, value
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn flush(&self) -> io::Result<()> {
        {
            let _writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
            if !self.state_read().active.is_empty() {
                self.switch()?;
            }
        }
        let mut p = self.shared.progress();
        while p.immutables > 0 && p.error.is_none() {
            p = self
                .shared
                .flushed
                .wait(p)
                .unwrap_or_else(PoisonError::into_inner);
        }
        error_of(&p)
    }

    /// Counters so far.
    ///
    /// ```
    /// use memkv::memtable::{ArtMemtable, WritePath, WritePathOptions};
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let db: WritePath<ArtMemtable> = WritePath::open(WritePathOptions::new(dir.path()))?;
    /// db.put(b"a", b"1")?;
    /// db.delete(b"b")?; // a delete is a write too, even of an absent key
    /// let stats = db.stats();
    /// assert_eq!(stats.last_seqno, 2);
    /// assert_eq!((stats.freezes, stats.flushes, stats.stalls), (0, 0, 0));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn stats(&self) -> WritePathStats {
        let p = self.shared.progress();
        let mut s = p.stats.clone();
        s.immutables = p.immutables;
        s.last_seqno = self.shared.visible.load(Ordering::Acquire);
        s
    }

    /// The run files written so far, oldest first.
    ///
    /// ```
    /// use memkv::memtable::{ArtMemtable, WritePath, WritePathOptions};
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let db: WritePath<ArtMemtable> = WritePath::open(WritePathOptions::new(dir.path()))?;
    /// assert!(db.run_paths().is_empty());
    /// for key in [b"a", b"b"] {
    ///     db.put(key, b"v")?;
    ///     db.flush()?;
    /// }
    /// let paths = db.run_paths();
    /// assert_eq!(paths, [dir.path().join("run-000000.sst"), dir.path().join("run-000001.sst")]);
    /// assert!(paths.iter().all(|p| p.is_file()));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn run_paths(&self) -> Vec<PathBuf> {
        self.state_read()
            .runs
            .iter()
            .map(|r| r.path.clone())
            .collect()
    }

    /// Waits for the flusher to write every immutable memtable, stops it,
    /// and returns the final counters. The active memtable is not flushed
    /// (call [`WritePath::flush`] first for that).
    ///
    /// # Errors
    /// If a flush failed, or a write or a freeze panicked (see [`put`](WritePath::put)).
    ///
    /// ```
    /// use memkv::memtable::{ArtMemtable, WritePath, WritePathOptions};
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let db: WritePath<ArtMemtable> = WritePath::open(WritePathOptions::new(dir.path()))?;
    /// db.put(b"k", b"v")?;
    /// let stats = db.close()?;
    /// assert_eq!((stats.last_seqno, stats.flushes), (1, 0)); // the write stayed in memory
    /// assert_eq!(std::fs::read_dir(dir.path())?.count(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn close(mut self) -> io::Result<WritePathStats> {
        self.stop();
        let stats = self.stats();
        error_of(&self.shared.progress())?;
        Ok(stats)
    }

    /// Whether frozen memtables are written by the writers themselves, as
    /// asked for by [`WritePathOptions::background_flush`] or because no
    /// flusher thread could be started (see [`open`](WritePath::open)).
    ///
    /// ```
    /// use memkv::memtable::{ArtMemtable, WritePath, WritePathOptions};
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let mut options = WritePathOptions::new(dir.path());
    /// let db: WritePath<ArtMemtable> = WritePath::open(options.clone())?;
    /// // Threads exist on every target but WASI.
    /// assert_eq!(db.flushes_inline(), cfg!(target_os = "wasi"));
    /// drop(db);
    ///
    /// options.background_flush = false;
    /// options.write_buffer_size = 1; // every write freezes its memtable
    /// let db: WritePath<ArtMemtable> = WritePath::open(options)?;
    /// db.put(b"k", b"v")?;
    /// // Written before `put` returned.
    /// assert_eq!((db.stats().flushes, db.run_paths().len()), (1, 1));
    /// assert!(db.flushes_inline());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn flushes_inline(&self) -> bool {
        matches!(self.flusher, Flusher::Inline)
    }

    fn stop(&mut self) {
        if let Flusher::Thread { sender, handle } =
            std::mem::replace(&mut self.flusher, Flusher::Stopped)
        {
            // Closing the channel ends the flusher's loop once it is drained.
            drop(sender);
            if handle.join().is_err() {
                self.shared.progress().error =
                    Some((io::ErrorKind::Other, "the flusher thread panicked".into()));
            }
        }
    }

    fn state_read(&self) -> std::sync::RwLockReadGuard<'_, State<M>> {
        self.shared
            .state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn check_error(&self) -> io::Result<()> {
        error_of(&self.shared.progress())
    }

    /// Freezes the active memtable and hands it to the flusher, first
    /// waiting while the immutable memtables are at their limit. The caller
    /// holds the writer lock.
    fn switch(&self) -> io::Result<()> {
        // First, so that a panic in it leaves everything as it was.
        let fresh =
            panic::catch_unwind(AssertUnwindSafe(|| (self.new_memtable)())).map_err(|payload| {
                let message = crate::error::panic_message(payload.as_ref());
                io::Error::other(format!("making a memtable panicked: {message}"))
            })?;
        let number = {
            let mut p = self.shared.progress();
            let limit = self.options.max_write_buffer_number - 1;
            if p.immutables >= limit {
                let start = Instant::now();
                while p.immutables >= limit && p.error.is_none() {
                    p = self
                        .shared
                        .flushed
                        .wait(p)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                p.stats.stalls += 1;
                p.stats.stall_time += start.elapsed();
            }
            error_of(&p)?;
            p.immutables += 1;
            p.stats.freezes += 1;
            p.stats.freezes - 1
        };
        let frozen = {
            let mut state = self
                .shared
                .state
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            let old = std::mem::replace(&mut state.active, fresh);
            // `freeze` consumes the memtable: if it panics, the entries are
            // gone. The write path then fails (writes, `flush` and `close`
            // report it) instead of waiting for a flush that will not come.
            let frozen = match panic::catch_unwind(AssertUnwindSafe(|| old.freeze())) {
                Ok(frozen) => Arc::new(frozen),
                Err(payload) => {
                    drop(state);
                    self.shared.progress().immutables -= 1;
                    let message = crate::error::panic_message(payload.as_ref());
                    self.fail(&io::Error::other(format!(
                        "freezing a memtable panicked: {message}"
                    )));
                    panic::resume_unwind(payload);
                }
            };
            state.immutables.push(Arc::clone(&frozen));
            frozen
        };
        match &self.flusher {
            // Never blocks: the channel has room for the limit, which the
            // count above enforces.
            Flusher::Thread { sender, .. } => sender.send((number, frozen)).map_err(|_| {
                io::Error::new(io::ErrorKind::BrokenPipe, "the flusher thread has stopped")
            }),
            // A failure is recorded as the flusher's would be: the next
            // write reports it.
            Flusher::Inline => {
                flush_one(&self.shared, &frozen, &self.options.dir, number);
                Ok(())
            }
            Flusher::Stopped => unreachable!("switched after close"),
        }
    }
}

impl<M: Memtable + 'static> Drop for WritePath<M> {
    fn drop(&mut self) {
        self.stop();
    }
}

fn error_of(p: &Progress) -> io::Result<()> {
    match &p.error {
        None => Ok(()),
        Some((kind, msg)) => Err(io::Error::new(*kind, msg.clone())),
    }
}

/// The flusher thread: writes each memtable it receives as a run, then
/// swaps the run in for the memtable.
fn flush_loop<M: Memtable>(
    shared: &Shared<M>,
    receiver: &Receiver<(u64, Arc<M::Frozen>)>,
    dir: &Path,
) {
    for (number, frozen) in receiver {
        flush_one(shared, &frozen, dir, number);
    }
}

/// Writes `frozen` as a run file, and swaps the run in for it. `number`
/// counts the memtables frozen before it, and names the file: unique, and
/// the same with a flusher thread or without.
fn flush_one<M: Memtable>(shared: &Shared<M>, frozen: &Arc<M::Frozen>, dir: &Path, number: u64) {
    // After a failure, a newer memtable written as a run would leave the
    // immutable memtables it is newer than, and a read, which asks those
    // before the runs, would find their older versions first. So from then
    // on every memtable stays immutable, still read in order, and counted
    // as not flushed.
    if shared.progress().error.is_some() {
        return;
    }
    let path = dir.join(format!("run-{number:06}.sst"));
    // A panic (in a memtable's cursor, say) must not end the flusher
    // thread: writers would then wait forever for the memtable it held.
    // It fails the write path as an I/O error does. `AssertUnwindSafe`:
    // the memtable is only read here, and stays readable.
    let result = panic::catch_unwind(AssertUnwindSafe(|| Run::write(&path, &**frozen)))
        .unwrap_or_else(|payload| {
            let message = crate::error::panic_message(payload.as_ref());
            Err(io::Error::other(format!(
                "writing the run panicked: {message}"
            )))
        });
    let mut p = shared.progress();
    match result {
        Ok(run) => {
            let bytes = run.size;
            {
                let mut state = shared.state.write().unwrap_or_else(PoisonError::into_inner);
                state.runs.push(Arc::new(run));
                state.immutables.retain(|m| !Arc::ptr_eq(m, frozen));
            }
            p.stats.flushes += 1;
            p.stats.flushed_bytes += bytes;
            p.immutables -= 1;
        }
        // The memtable stays readable (and counted as immutable);
        // writes fail from now on.
        Err(e) => {
            if p.error.is_none() {
                p.error = Some((e.kind(), format!("flush failed: {}: {e}", path.display())));
            }
        }
    }
    drop(p);
    shared.flushed.notify_all();
}

/// A sorted run file and its sparse index.
#[derive(Debug)]
struct Run {
    path: PathBuf,
    file: RunFile,
    /// Every `INDEX_EVERY`th key and the offset of its entry.
    index: Vec<(Vec<u8>, u64)>,
    size: u64,
}

impl Run {
    /// Writes the newest version of each key of `mem`.
    fn write(path: &Path, mem: &impl MemtableRead) -> io::Result<Run> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let (mut index, mut offset, mut count) = (Vec::new(), 0u64, 0usize);
        let mut last: Option<Vec<u8>> = None;
        let mut cursor = mem.iter(MAX_SEQNO);
        while let Some(e) = cursor.next_entry() {
            if last.as_deref() == Some(e.user_key) {
                continue; // an older version
            }
            match &mut last {
                Some(l) => {
                    l.clear();
                    l.extend_from_slice(e.user_key);
                }
                None => last = Some(e.user_key.to_vec()),
            }
            if count % INDEX_EVERY == 0 {
                index.push((e.user_key.to_vec(), offset));
            }
            count += 1;
            let key_len = u32::try_from(e.user_key.len()).map_err(|_| too_long())?;
            out.write_all(&key_len.to_le_bytes())?;
            out.write_all(e.user_key)?;
            offset += 4 + u64::from(key_len);
            match e.kind {
                ValueKind::Value => {
                    let len = len_in_run(e.value.len()).ok_or_else(too_long)?;
                    out.write_all(&len.to_le_bytes())?;
                    out.write_all(e.value)?;
                    offset += 4 + u64::from(len);
                }
                ValueKind::Tombstone => {
                    out.write_all(&TOMBSTONE_LEN.to_le_bytes())?;
                    offset += 4;
                }
            }
        }
        let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        Ok(Run {
            path: path.to_path_buf(),
            file: RunFile::new(file),
            index,
            size: offset,
        })
    }

    /// The entry for `key` in this run.
    fn get(&self, key: &[u8]) -> io::Result<Lookup<Vec<u8>>> {
        let i = self.index.partition_point(|(k, _)| k.as_slice() <= key);
        if i == 0 {
            return Ok(Lookup::Absent);
        }
        let start = self.index[i - 1].1;
        let end = self.index.get(i).map_or(self.size, |e| e.1);
        let mut block = vec![0u8; (end - start) as usize];
        self.file.read_exact_at(&mut block, start)?;
        let mut rest = &block[..];
        let corrupt = || io::Error::new(io::ErrorKind::InvalidData, "corrupt run file");
        while !rest.is_empty() {
            let key_len = read_u32(&mut rest).ok_or_else(corrupt)? as usize;
            let k = rest.get(..key_len).ok_or_else(corrupt)?;
            rest = &rest[key_len..];
            let value_len = read_u32(&mut rest).ok_or_else(corrupt)?;
            let (found, len) = match value_len {
                TOMBSTONE_LEN => (Lookup::Deleted, 0),
                n => (Lookup::Found(()), n as usize),
            };
            let v = rest.get(..len).ok_or_else(corrupt)?;
            rest = &rest[len..];
            match k.cmp(key) {
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => return Ok(found.map(|()| v.to_vec())),
                std::cmp::Ordering::Greater => break,
            }
        }
        Ok(Lookup::Absent)
    }
}

fn read_u32(rest: &mut &[u8]) -> Option<u32> {
    let (head, tail) = rest.split_first_chunk::<4>()?;
    *rest = tail;
    Some(u32::from_le_bytes(*head))
}

/// A length as a run file stores it, if it can: a `u32` other than the
/// tombstone's mark.
fn len_in_run(len: usize) -> Option<u32> {
    u32::try_from(len).ok().filter(|&len| len != TOMBSTONE_LEN)
}

/// Refuses a key or value that a run file or the memtable cannot hold,
/// before any of a write is done. Keys get the values' limit too: one
/// limit for both.
fn check_fits<M: Memtable>(key: &[u8], value: &[u8]) -> io::Result<()> {
    if len_in_run(key.len()).is_none() || len_in_run(value.len()).is_none() {
        Err(too_long())
    } else if !M::fits(key, value) {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a key of {} and a value of {} bytes do not fit the memtable's records \
                 (see Memtable::fits)",
                key.len(),
                value.len()
            ),
        ))
    } else {
        Ok(())
    }
}

fn too_long() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "a key or value of 4 GiB or more does not fit a run file",
    )
}

/// A run file, which readers on any number of threads read at offsets.
#[derive(Debug)]
struct RunFile {
    #[cfg(any(unix, windows))]
    file: File,
    /// Elsewhere a read moves the file's one cursor: readers take turns.
    #[cfg(not(any(unix, windows)))]
    file: Mutex<File>,
}

impl RunFile {
    fn new(file: File) -> RunFile {
        #[cfg(not(any(unix, windows)))]
        let file = Mutex::new(file);
        RunFile { file }
    }

    /// Fills `buf` from the file's bytes at `offset`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        #[cfg(unix)]
        {
            std::os::unix::fs::FileExt::read_exact_at(&self.file, buf, offset)
        }
        #[cfg(windows)]
        {
            // `seek_read` also moves the cursor, which nothing here uses.
            use std::os::windows::fs::FileExt;
            read_exact_with(buf, offset, |buf, at| self.file.seek_read(buf, at))
        }
        #[cfg(not(any(unix, windows)))]
        {
            use std::io::{Read, Seek, SeekFrom};
            let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
            read_exact_with(buf, offset, |buf, at| {
                file.seek(SeekFrom::Start(at))?;
                file.read(buf)
            })
        }
    }
}

/// Fills `buf` by reads at offsets from `offset` on, as many as it takes:
/// `read_at` may read fewer bytes than asked, or be interrupted.
#[cfg(any(test, not(unix)))]
fn read_exact_with(
    mut buf: &mut [u8],
    mut offset: u64,
    mut read_at: impl FnMut(&mut [u8], u64) -> io::Result<usize>,
) -> io::Result<()> {
    while !buf.is_empty() {
        match read_at(buf, offset) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `data` read at most `most` bytes at a time, interrupted
    /// before every other read.
    fn reader(data: &[u8], most: usize) -> impl FnMut(&mut [u8], u64) -> io::Result<usize> {
        let mut interrupt = true;
        move |buf, at| {
            interrupt = !interrupt;
            if interrupt {
                return Err(io::Error::from(io::ErrorKind::Interrupted));
            }
            let rest = data.get(at as usize..).unwrap_or_default();
            let n = buf.len().min(rest.len()).min(most);
            buf[..n].copy_from_slice(&rest[..n]);
            Ok(n)
        }
    }

    #[test]
    fn short_and_interrupted_reads_fill_the_buffer() {
        let data: Vec<u8> = (0..=255).collect();
        for most in [1, 3, 64, 300] {
            let mut buf = [0u8; 100];
            read_exact_with(&mut buf, 150, reader(&data, most)).unwrap();
            assert!(
                buf[..].iter().copied().eq(150..250),
                "at most {most} a read"
            );
        }
    }

    /// Where no thread starts (WASI), the write path flushes inline rather
    /// than refusing to open.
    #[test]
    fn a_flusher_that_cannot_start_means_inline_flushes() {
        let dir = crate::scratch::dir();
        let mut options = WritePathOptions::new(dir.path());
        options.write_buffer_size = 1; // every write freezes its memtable
        let db = WritePath::start(options, super::super::ArtMemtable::default, |_| {
            Err(io::ErrorKind::Unsupported.into())
        })
        .unwrap();
        assert!(db.flushes_inline());
        for key in [b"a", b"b", b"c"] {
            db.put(key, b"v").unwrap();
        }
        let stats = db.stats();
        assert_eq!((stats.flushes, stats.immutables), (3, 0), "{stats:?}");
        assert_eq!(db.get(b"b").unwrap(), Some(b"v".to_vec()));
        assert_eq!(db.close().unwrap().flushes, 3);
    }

    #[test]
    fn a_read_past_the_end_is_an_error() {
        let data = [7u8; 10];
        let mut buf = [0u8; 4];
        let err = read_exact_with(&mut buf, 8, reader(&data, 64)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        let other = read_exact_with(&mut buf, 0, |_, _| Err(io::Error::other("disk")));
        assert_eq!(other.unwrap_err().kind(), io::ErrorKind::Other);
    }
}
