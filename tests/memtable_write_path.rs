//! The write path, for every memtable: puts and deletes across many flushes
//! against a `BTreeMap` model, the run-file format, reads while writing, and
//! errors.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, mpsc};

use std::ops::RangeBounds;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use memkv::memtable::{
    ArtMemtable, EntryRef, FrozenArtMemtable, Lookup, Memtable, MemtableRead, ShardedArtMemtable,
    SkipListMemtable, ValueKind, VecMemtable, WritePath, WritePathOptions,
};

#[path = "common/scratch.rs"]
mod scratch;

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn open<M: Memtable + 'static>(dir: &std::path::Path, buffer: usize) -> WritePath<M> {
    open_flushing::<M>(dir, buffer, Flush::Background)
}

/// Who writes the frozen memtables.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Flush {
    /// The flusher thread (inline all the same where no thread starts).
    Background,
    /// The write that froze the memtable.
    Inline,
}

fn open_flushing<M: Memtable + 'static>(
    dir: &std::path::Path,
    buffer: usize,
    flush: Flush,
) -> WritePath<M> {
    let mut options = WritePathOptions::new(dir);
    options.write_buffer_size = buffer;
    options.background_flush = flush == Flush::Background;
    let db = WritePath::open(options).unwrap();
    if flush == Flush::Inline {
        assert!(db.flushes_inline());
    }
    db
}

/// Parses a run file: (key, value or `None` for a tombstone).
fn read_run(path: &std::path::Path) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let bytes = std::fs::read(path).unwrap();
    let mut rest = &bytes[..];
    let mut out = Vec::new();
    let take = |n: usize, rest: &mut &[u8]| {
        let (a, b) = rest.split_at(n);
        *rest = b;
        a.to_vec()
    };
    while !rest.is_empty() {
        let klen = u32::from_le_bytes(take(4, &mut rest).try_into().unwrap()) as usize;
        let key = take(klen, &mut rest);
        let vlen = u32::from_le_bytes(take(4, &mut rest).try_into().unwrap());
        let value = (vlen != u32::MAX).then(|| take(vlen as usize, &mut rest));
        out.push((key, value));
    }
    out
}

/// With `batches`, the writes go in write batches of 1 to 40 entries (a
/// batch's keys may repeat); a batch is written before each check.
fn model_across_flushes<M: Memtable + 'static>(batches: bool, buffer: usize, flush: Flush) {
    let dir = scratch::dir();
    let db = open_flushing::<M>(dir.path(), buffer, flush);
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng = Rng(1);
    let mut pending: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
    let mut batch_len = 1;
    for i in 0..6000u64 {
        // 600 keys of varying length (some prefixes of others), overwritten
        // and deleted many times over, across many runs.
        let k = rng.next() % 600;
        let key = k.to_be_bytes()[8 - (1 + k as usize % 3)..].to_vec();
        let value =
            (!rng.next().is_multiple_of(5)).then(|| vec![i as u8; (rng.next() % 40) as usize]);
        match &value {
            Some(v) => model.insert(key.clone(), v.clone()),
            None => model.remove(&key),
        };
        if !batches {
            match &value {
                Some(v) => db.put(&key, v).unwrap(),
                None => db.delete(&key).unwrap(),
            }
        } else {
            pending.push((key, value));
            if pending.len() == batch_len || i % 997 == 0 || i == 5999 {
                let batch: Vec<(&[u8], Option<&[u8]>)> = (pending.iter())
                    .map(|(k, v)| (k.as_slice(), v.as_deref()))
                    .collect();
                db.write_batch(&batch).unwrap();
                pending.clear();
                batch_len = 1 + (rng.next() % 40) as usize;
            }
        }
        if i % 997 == 0 {
            for k in 0..600u64 {
                let key = k.to_be_bytes()[8 - (1 + k as usize % 3)..].to_vec();
                assert_eq!(
                    db.get(&key).unwrap(),
                    model.get(&key).cloned(),
                    "{key:?} after {i}"
                );
            }
        }
    }
    let stats = db.stats();
    assert_eq!(stats.last_seqno, 6000);
    assert!(stats.freezes >= 5, "{stats:?}");
    if flush == Flush::Inline {
        // Each memtable was written by the write that froze it.
        assert_eq!((stats.flushes, stats.immutables), (stats.freezes, 0));
    }
    db.flush().unwrap();
    let stats = db.stats();
    assert_eq!(stats.immutables, 0);
    assert_eq!(stats.flushes, stats.freezes);
    for k in 0..700u64 {
        let key = k.to_be_bytes()[8 - (1 + k as usize % 3)..].to_vec();
        assert_eq!(db.get(&key).unwrap(), model.get(&key).cloned(), "{key:?}");
    }
    // Every run is sorted with one entry per key, and merging the runs
    // newest-first gives the model.
    let runs = db.run_paths();
    assert_eq!(runs.len() as u64, stats.flushes);
    let mut merged: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
    for path in runs.iter().rev() {
        let run = read_run(path);
        assert!(run.windows(2).all(|w| w[0].0 < w[1].0), "{path:?} sorted");
        for (k, v) in run {
            merged.entry(k).or_insert(v);
        }
    }
    let merged: BTreeMap<Vec<u8>, Vec<u8>> = merged
        .into_iter()
        .filter_map(|(k, v)| Some((k, v?)))
        .collect();
    assert_eq!(merged, model);
    let stats = db.close().unwrap();
    assert_eq!(stats.immutables, 0);
}

/// Keys written by [`stalls_and_concurrent_reads`], and the ones its reader
/// reads.
const STALL_KEYS: u32 = 3000;
const READ_EVERY: usize = 37;

fn stall_value(i: u32) -> Vec<u8> {
    i.to_le_bytes().repeat(8)
}

/// Keys the reader reads that lie below `n`.
fn read_below(n: u32) -> usize {
    (0..n).step_by(READ_EVERY).count()
}

/// Sets its flag when dropped, panicking or not.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// A writer fills many small memtables (writes may stall while the flusher
/// catches up) while a reader reads keys back as they move from the active
/// memtable to immutable ones to run files: a key the reader finds has its
/// value, and a key written before the reader asks for it is always found.
///
/// The reader starts at the writer's 1000th write and the writer waits at its
/// 2000th for the reader's first pass, so that pass runs while the writer is
/// between the two, however the threads are scheduled; the reader's last
/// pass starts after the last write.
fn stalls_and_concurrent_reads<M: Memtable + 'static>(buffer: usize, flush: Flush) {
    let dir = scratch::dir();
    // 8 KiB (24 KiB sharded; see `write_path_tests!`): a few dozen
    // memtables of several entries each (at 4 KiB, the arena's first chunk
    // alone fills an `ArtMemtable` or a `VecMemtable`, so each held one
    // entry).
    let db = Arc::new(open_flushing::<M>(dir.path(), buffer, flush));
    // Key i is written once, with `stall_value(i)`; `written` then becomes
    // i + 1.
    let written = Arc::new(AtomicU32::new(0));
    let done = Arc::new(AtomicBool::new(false));
    // Channels rather than barriers: if either thread panics, the other's
    // `recv` fails instead of waiting forever.
    let (start, started) = mpsc::channel::<()>();
    let (first_pass_done, first_pass) = mpsc::channel::<()>();
    let reader = {
        let (db, written, done) = (Arc::clone(&db), Arc::clone(&written), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut seen_per_pass = Vec::new();
            if started.recv().is_err() {
                return seen_per_pass; // the writer failed
            }
            loop {
                let last = done.load(Ordering::Acquire);
                let mut seen = 0;
                for i in (0..STALL_KEYS).step_by(READ_EVERY) {
                    let before = written.load(Ordering::Acquire);
                    match db.get(i.to_be_bytes()).unwrap() {
                        Some(v) => {
                            assert_eq!(v, stall_value(i), "key {i}");
                            seen += 1;
                        }
                        None => assert!(
                            i >= before,
                            "key {i} was written ({before} were) but is not found"
                        ),
                    }
                }
                seen_per_pass.push(seen);
                if seen_per_pass.len() == 1 {
                    let _ = first_pass_done.send(());
                }
                if last {
                    return seen_per_pass;
                }
            }
        })
    };
    {
        // Ends the reader's loop even if the writer panics.
        let _done = SetOnDrop(Arc::clone(&done));
        for i in 0..STALL_KEYS {
            if i == 1000 {
                start.send(()).unwrap();
            }
            if i == 2000 && first_pass.recv().is_err() {
                // The reader panicked: report its failure.
                std::panic::resume_unwind(reader.join().unwrap_err());
            }
            db.put(i.to_be_bytes(), stall_value(i)).unwrap();
            written.store(i + 1, Ordering::Release);
            // Once written, always visible.
            if i % 101 == 0 {
                assert!(db.get(i.to_be_bytes()).unwrap().is_some());
            }
        }
    }
    let seen = reader
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e));
    // The first pass ran between the 1000th and the 2000th write.
    assert!(
        (read_below(1000)..=read_below(2000)).contains(&seen[0]),
        "{seen:?}"
    );
    // The last one after every write.
    assert_eq!(seen.last(), Some(&read_below(STALL_KEYS)), "{seen:?}");
    let stats = db.stats();
    assert!(
        stats.freezes > 10 && stats.freezes <= u64::from(STALL_KEYS) / 8,
        "{stats:?}"
    );
    drop(db); // joins the flusher; the tempdir is removed after.
}

macro_rules! write_path_tests {
    ($($module:ident => $ty:ty, buffer: $buffer:expr;)*) => {$(
        mod $module {
            use super::*;

            #[test]
            fn model_across_flushes_in_write_batches() {
                super::model_across_flushes::<$ty>(true, $buffer, Flush::Background);
            }

            #[test]
            fn model_across_flushes() {
                super::model_across_flushes::<$ty>(false, $buffer, Flush::Background);
            }

            #[test]
            fn model_across_inline_flushes_in_write_batches() {
                super::model_across_flushes::<$ty>(true, $buffer, Flush::Inline);
            }

            #[test]
            fn model_across_inline_flushes() {
                super::model_across_flushes::<$ty>(false, $buffer, Flush::Inline);
            }

            #[test]
            #[cfg_attr(target_os = "wasi", ignore = "needs threads")]
            fn stalls_and_concurrent_reads() {
                super::stalls_and_concurrent_reads::<$ty>($buffer, Flush::Background);
            }

            /// Readers read while the writer writes runs itself.
            #[test]
            #[cfg_attr(target_os = "wasi", ignore = "needs threads")]
            fn concurrent_reads_beside_inline_flushes() {
                super::stalls_and_concurrent_reads::<$ty>($buffer, Flush::Inline);
            }
        }
    )*};
}

// Small write buffers, so that the writes cross many memtables. A sharded
// memtable holds about 2 KiB per shard as soon as the shard has an entry
// (its tree's first chunk and the shard), 34 KiB for the default 16: at
// 8 KiB each of its memtables would hold one entry. These keys are short
// or counters, which its hash (all but the last byte) puts in a few
// shards: at 24 KiB the stall test's 3,000 keys cross 23 memtables.
write_path_tests! {
    skiplist => SkipListMemtable, buffer: 8 << 10;
    art => ArtMemtable, buffer: 8 << 10;
    sharded => ShardedArtMemtable, buffer: 24 << 10;
    vec => VecMemtable, buffer: 8 << 10;
}

#[test]
fn open_refuses_a_missing_directory() {
    let err = WritePath::<ArtMemtable>::open(WritePathOptions::new("/nonexistent/memkv-runs"))
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    assert!(err.to_string().contains("does not exist"), "{err}");
}

#[test]
fn open_refuses_a_file_in_place_of_the_directory() {
    let dir = scratch::dir();
    let file = dir.path().join("runs");
    std::fs::write(&file, b"not a directory").unwrap();
    let err = WritePath::<ArtMemtable>::open(WritePathOptions::new(&file)).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotADirectory);
    assert!(err.to_string().contains("is not a directory"), "{err}");
}

#[test]
fn a_failed_flush_fails_later_writes_and_keeps_data_readable() {
    let dir = scratch::dir();
    let db = open::<ArtMemtable>(dir.path(), 1 << 10);
    // The flusher creates run-000000.sst with create_new: make it exist.
    std::fs::write(dir.path().join("run-000000.sst"), b"in the way").unwrap();
    let mut failed = None;
    for i in 0..2000u32 {
        if let Err(e) = db.put(i.to_be_bytes(), [1; 50]) {
            failed = Some((i, e));
            break;
        }
    }
    let (i, e) = failed.expect("a write fails once the flush has failed");
    assert!(e.to_string().contains("flush failed"), "{e}");
    // What was written before is still readable from the memtables; the
    // failed write is not done (its key reads as never written), and no
    // later one is either.
    assert_eq!(db.get(0u32.to_be_bytes()).unwrap(), Some(vec![1; 50]));
    assert_eq!(db.get((i - 1).to_be_bytes()).unwrap(), Some(vec![1; 50]));
    assert_eq!(db.get(i.to_be_bytes()).unwrap(), None, "write {i} failed");
    assert!(db.write_batch(&[(b"late", Some(b"x"))]).is_err());
    assert_eq!(db.get(b"late").unwrap(), None);
    assert_eq!(
        db.stats().last_seqno,
        u64::from(i),
        "seqnos 1..=i were written"
    );
    assert!(db.close().is_err());
}

#[test]
fn a_directory_with_runs_is_refused_at_open() {
    let dir = scratch::dir();
    {
        let db = open::<ArtMemtable>(dir.path(), 1 << 10);
        for i in 0..200u32 {
            db.put(i.to_be_bytes(), [1; 50]).unwrap();
        }
        db.close().unwrap();
    }
    assert!(dir.path().join("run-000000.sst").exists());
    let e = WritePath::<ArtMemtable>::open(WritePathOptions::new(dir.path())).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{e}");
    assert!(e.to_string().contains("run-0"), "{e}");
}

#[test]
#[should_panic(expected = "max_write_buffer_number must be at least 2")]
fn one_write_buffer_is_refused() {
    let dir = scratch::dir();
    let mut options = WritePathOptions::new(dir.path());
    options.max_write_buffer_number = 1;
    let _ = WritePath::<SkipListMemtable>::open(options);
}

#[test]
fn debug_shows_the_options_and_the_progress() {
    let dir = scratch::dir();
    let db = open::<ArtMemtable>(dir.path(), 1 << 20);
    db.put(b"k", b"v").unwrap();
    let shown = format!("{db:?}");
    assert!(shown.starts_with("WritePath"), "{shown}");
    assert!(shown.contains("write_buffer_size: 1048576"), "{shown}");
    assert!(shown.contains("last_seqno: 1"), "{shown}");
    let inline = format!("flushes_inline: {}", cfg!(target_os = "wasi"));
    assert!(shown.contains(&inline), "{shown}");
}

/// What a [`Hooked`] memtable does out of the ordinary.
const SLOW: u8 = 0;
const PANICS: u8 = 1;
const INSERT_PANICS: u8 = 2;
const FREEZE_PANICS: u8 = 3;

/// An `ArtMemtable` whose frozen form is slow to flush (`SLOW`: 50 ms per
/// memtable) or panics when flushed (`PANICS`), so that the tests decide
/// how far the flusher lags; or whose `insert` panics on the value `boom`
/// (`INSERT_PANICS`), or whose `freeze` panics (`FREEZE_PANICS`).
#[derive(Default)]
struct Hooked<const FLUSH: u8>(ArtMemtable);

struct HookedFrozen<const FLUSH: u8>(FrozenArtMemtable);

impl<const FLUSH: u8> MemtableRead for Hooked<FLUSH> {
    type Cursor<'a> = <ArtMemtable as MemtableRead>::Cursor<'a>;

    fn get_with<R>(
        &self,
        key: impl AsRef<[u8]>,
        snapshot: u64,
        f: impl FnOnce(Lookup<&[u8]>) -> R,
    ) -> R {
        self.0.get_with(key, snapshot, f)
    }

    fn range<'a>(&'a self, range: impl RangeBounds<[u8]>, snapshot: u64) -> Self::Cursor<'a> {
        self.0.range(range, snapshot)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn approximate_memory_usage(&self) -> usize {
        self.0.approximate_memory_usage()
    }
}

impl<const FLUSH: u8> Memtable for Hooked<FLUSH> {
    type Frozen = HookedFrozen<FLUSH>;

    fn insert(&self, key: impl AsRef<[u8]>, seqno: u64, kind: ValueKind, value: impl AsRef<[u8]>) {
        assert!(
            FLUSH != INSERT_PANICS || value.as_ref() != b"boom",
            "the insert panics"
        );
        self.0.insert(key, seqno, kind, value);
    }

    fn insert_batch(&self, entries: &[EntryRef<'_>]) {
        if FLUSH == INSERT_PANICS {
            // One at a time, so that the entries before `boom` are in.
            for e in entries {
                self.insert(e.user_key, e.seqno, e.kind, e.value);
            }
        } else {
            self.0.insert_batch(entries);
        }
    }

    fn freeze(self) -> HookedFrozen<FLUSH> {
        assert!(FLUSH != FREEZE_PANICS, "the freeze panics");
        HookedFrozen(self.0.freeze())
    }
}

impl<const FLUSH: u8> MemtableRead for HookedFrozen<FLUSH> {
    type Cursor<'a> = <FrozenArtMemtable as MemtableRead>::Cursor<'a>;

    fn get_with<R>(
        &self,
        key: impl AsRef<[u8]>,
        snapshot: u64,
        f: impl FnOnce(Lookup<&[u8]>) -> R,
    ) -> R {
        self.0.get_with(key, snapshot, f)
    }

    /// The flusher's read (reads by key go through `get_with`).
    fn range<'a>(&'a self, range: impl RangeBounds<[u8]>, snapshot: u64) -> Self::Cursor<'a> {
        match FLUSH {
            SLOW => std::thread::sleep(Duration::from_millis(50)),
            PANICS => panic!("the memtable's flush panics"),
            _ => {}
        }
        self.0.range(range, snapshot)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn approximate_memory_usage(&self) -> usize {
        self.0.approximate_memory_usage()
    }
}

/// Writes `keys` (a small value each) and checks after every write that
/// keys written so far read back: from the active memtable, the immutable
/// ones or the runs. Returns the most immutable memtables seen.
fn write_and_read_back<M: Memtable + 'static>(db: &WritePath<M>, keys: u32) -> usize {
    let mut most = 0;
    for i in 0..keys {
        db.put(i.to_be_bytes(), stall_value(i)).unwrap();
        most = most.max(db.stats().immutables);
        for j in [0, i / 2, i.saturating_sub(40), i] {
            let found = db.get(j.to_be_bytes()).unwrap();
            assert_eq!(found, Some(stall_value(j)), "key {j} after {i}");
        }
    }
    most
}

#[test]
fn flush_waits_for_the_flusher() {
    let dir = scratch::dir();
    let db = open::<Hooked<SLOW>>(dir.path(), 8 << 10);
    write_and_read_back(&db, 200);
    db.flush().unwrap();
    let stats = db.stats();
    assert!(stats.freezes >= 1, "{stats:?}");
    assert_eq!(
        (stats.immutables, stats.flushes),
        (0, stats.freezes),
        "{stats:?}"
    );
    let runs = db.run_paths();
    assert_eq!(runs.len() as u64, stats.flushes);
    let bytes: u64 = runs
        .iter()
        .map(|r| std::fs::metadata(r).unwrap().len())
        .sum();
    assert_eq!(stats.flushed_bytes, bytes);
    // A flush with nothing new to write returns at once, with nothing to do.
    db.flush().unwrap();
    assert_eq!(db.stats().freezes, stats.freezes);
}

/// Dropping a write path (or closing it) waits until the memtables frozen
/// so far are written.
#[test]
fn dropping_waits_for_the_flusher() {
    let dir = scratch::dir();
    let db = open::<Hooked<SLOW>>(dir.path(), 8 << 10);
    write_and_read_back(&db, 200);
    let freezes = db.stats().freezes;
    assert!(freezes >= 1);
    drop(db);
    let runs = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(runs as u64, freezes);
}

#[test]
fn open_ignores_other_files() {
    let dir = scratch::dir();
    for name in ["run-notes.txt", "old.sst", "run-"] {
        std::fs::write(dir.path().join(name), b"not a run").unwrap();
    }
    let db = open::<ArtMemtable>(dir.path(), 1 << 20);
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    assert_eq!(db.run_paths(), [dir.path().join("run-000000.sst")]);
}

/// At most `max_write_buffer_number - 1` memtables wait for the flusher:
/// a writer that would freeze one more waits, and the wait is counted.
/// Keys stay readable while the memtables before them wait, are written
/// and go.
#[test]
#[cfg_attr(target_os = "wasi", ignore = "needs a flusher thread")]
fn writers_stall_at_the_limit_of_memtables() {
    let dir = scratch::dir();
    let mut options = WritePathOptions::new(dir.path());
    options.write_buffer_size = 8 << 10;
    options.max_write_buffer_number = 3;
    let db = WritePath::<Hooked<SLOW>>::open(options).unwrap();
    let most = write_and_read_back(&db, 1000);
    let stats = db.stats();
    assert_eq!(most, 2, "{stats:?}");
    assert!(stats.stalls >= 1, "{stats:?}");
    assert!(stats.stall_time > Duration::ZERO, "{stats:?}");
    // Closing waits for the memtables still frozen.
    let stats = db.close().unwrap();
    assert_eq!(
        (stats.immutables, stats.flushes),
        (0, stats.freezes),
        "{stats:?}"
    );
}

/// A memtable whose flush panics fails the write path as an I/O error
/// does: later writes fail (rather than waiting for a flusher that is
/// gone), and what was written stays readable.
#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn a_panicking_flush_fails_later_writes() {
    let dir = scratch::dir();
    let db = open::<Hooked<PANICS>>(dir.path(), 8 << 10);
    // On a thread, so that writes that wait forever fail the test.
    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        let failed = (0..2000u32).find_map(|i| {
            let put = db.put(i.to_be_bytes(), stall_value(i));
            put.err().map(|e| (i, e))
        });
        let _ = done.send((db, failed));
    });
    let (db, failed) = (result.recv_timeout(Duration::from_secs(60)))
        .expect("writes go on (or fail) after a flush panicked");
    let (i, e) = failed.expect("a write fails once the flush has failed");
    assert!(
        e.to_string()
            .contains("panicked: the memtable's flush panics"),
        "{e}"
    );
    for j in [0, i / 2, i - 1] {
        assert_eq!(
            db.get(j.to_be_bytes()).unwrap(),
            Some(stall_value(j)),
            "key {j}"
        );
    }
    assert!(db.flush().is_err());
    assert!(db.close().is_err());
}

/// A memtable whose flush fails keeps the newer memtables behind it from
/// becoming runs: a read asks the immutable memtables before the runs, so a
/// newer version written out as a run would be hidden by the older one
/// still held in memory.
#[test]
#[cfg_attr(target_os = "wasi", ignore = "needs a flusher thread")]
fn after_a_failed_flush_no_newer_memtable_becomes_a_run() {
    let dir = scratch::dir();
    let mut options = WritePathOptions::new(dir.path());
    options.write_buffer_size = 1; // every write freezes its memtable
    options.max_write_buffer_number = 4; // three may wait for the flusher
    let db = WritePath::<Hooked<SLOW>>::open(options).unwrap();
    // The second run's name is taken: its flush fails.
    std::fs::write(dir.path().join("run-000001.sst"), b"in the way").unwrap();
    db.put(b"w", b"first").unwrap(); // run 0, 50 ms to flush
    db.put(b"k", b"old").unwrap(); // run 1: fails
    db.put(b"k", b"new").unwrap(); // run 2: must not be written
    let err = db.flush().unwrap_err();
    assert!(err.to_string().contains("run-000001.sst"), "{err}");
    // Long enough for the flusher to have written the third memtable, had
    // it gone on.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(db.get(b"k").unwrap(), Some(b"new".to_vec()));
    assert_eq!(db.get(b"w").unwrap(), Some(b"first".to_vec()));
    assert_eq!(
        db.run_paths().len(),
        1,
        "only the memtable before the failure"
    );
    assert_eq!(db.stats().immutables, 2, "the two still in memory");
    assert!(db.close().is_err());
}

/// Inline, a flush that fails is the next write's error, as it is with the
/// flusher thread; only now which write that is can be said: the one after
/// the write whose memtable could not be written.
#[test]
fn a_failed_inline_flush_fails_the_next_write() {
    let dir = scratch::dir();
    // Every write freezes its memtable and writes it.
    let db = open_flushing::<ArtMemtable>(dir.path(), 1, Flush::Inline);
    std::fs::write(dir.path().join("run-000001.sst"), b"in the way").unwrap();
    db.put(b"w", b"first").unwrap();
    assert_eq!(db.run_paths(), [dir.path().join("run-000000.sst")]);
    // Done, and readable, though its memtable could not be written.
    db.put(b"k", b"old").unwrap();
    let err = db.put(b"k", b"new").unwrap_err();
    assert!(
        err.to_string().contains("flush failed") && err.to_string().contains("run-000001.sst"),
        "{err}"
    );
    assert_eq!(db.get(b"k").unwrap(), Some(b"old".to_vec()));
    assert_eq!(db.get(b"w").unwrap(), Some(b"first".to_vec()));
    let stats = db.stats();
    assert_eq!(
        (
            stats.last_seqno,
            stats.freezes,
            stats.flushes,
            stats.immutables
        ),
        (2, 2, 1, 1),
        "{stats:?}"
    );
    assert!(db.flush().is_err());
    assert!(db.close().is_err());
}

/// Inline, a memtable whose flush panics fails the write path as with the
/// flusher thread, and the panic does not reach the writer.
#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn a_panicking_inline_flush_fails_later_writes() {
    let dir = scratch::dir();
    let db = open_flushing::<Hooked<PANICS>>(dir.path(), 8 << 10, Flush::Inline);
    let (i, e) = (0..2000u32)
        .find_map(|i| {
            db.put(i.to_be_bytes(), stall_value(i))
                .err()
                .map(|e| (i, e))
        })
        .expect("a write fails once the flush has failed");
    assert!(
        e.to_string()
            .contains("panicked: the memtable's flush panics"),
        "{e}"
    );
    // The write before it froze the memtable, and its flush panicked.
    assert_eq!(db.stats().freezes, 1);
    for j in [0, i / 2, i - 1] {
        assert_eq!(
            db.get(j.to_be_bytes()).unwrap(),
            Some(stall_value(j)),
            "key {j}"
        );
    }
    assert_eq!(db.get(i.to_be_bytes()).unwrap(), None, "write {i} failed");
    assert!(db.flush().is_err());
    assert!(db.close().is_err());
}

/// A key or value that no run file can hold is refused before anything is
/// written, and the write path goes on. (A 4 GiB value cannot be held on a
/// 32-bit target.)
#[test]
#[cfg(target_pointer_width = "64")]
fn a_write_too_long_for_a_run_is_refused_whole() {
    let dir = scratch::dir();
    let db = open::<ArtMemtable>(dir.path(), 1 << 20);
    db.put(b"a", b"before").unwrap();
    // Zeroed pages: allocated lazily, so the test stays cheap.
    let huge = vec![0u8; u32::MAX as usize];
    let err = db
        .write_batch(&[(b"a", Some(b"in the batch")), (b"b", Some(&huge))])
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
    assert_eq!(
        db.put(&huge, b"v").unwrap_err().kind(),
        std::io::ErrorKind::InvalidInput
    );
    drop(huge);
    assert_eq!(db.stats().last_seqno, 1, "no sequence number taken");
    db.put(b"z", b"after").unwrap();
    assert_eq!(db.get(b"a").unwrap(), Some(b"before".to_vec()));
    db.flush().unwrap();
    assert_eq!(db.get(b"a").unwrap(), Some(b"before".to_vec()));
    assert_eq!(db.get(b"z").unwrap(), Some(b"after".to_vec()));
}

/// A key and value that a run file could hold but the memtable's records
/// cannot (`Memtable::fits`) are refused as well, before anything is
/// written, and the write path goes on: they used to reach the memtable,
/// whose panic failed every later write.
#[test]
#[cfg(target_pointer_width = "64")]
fn a_write_too_long_for_the_memtable_is_refused_whole() {
    // Each check of the skip list's key reads its 2 GiB (about 10 s in a
    // debug build), so that one is written once, by `put`, and the batch is
    // tried only where the check reads lengths.
    fn refused<M: Memtable + 'static>(key: &[u8], value: &[u8], in_a_batch_too: bool) {
        let dir = scratch::dir();
        let db = open::<M>(dir.path(), 1 << 20);
        db.put(b"a", b"before").unwrap();
        let err = db.put(key, value).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
        assert!(err.to_string().contains("Memtable::fits"), "{err}");
        if in_a_batch_too {
            let err = db.write_batch(&[(b"b", Some(b"in the batch")), (key, Some(value))]);
            assert_eq!(err.unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
        }
        assert_eq!(db.stats().last_seqno, 1, "no sequence number taken");
        db.put(b"z", b"after").unwrap();
        db.flush().unwrap();
        assert_eq!(db.get(b"a").unwrap(), Some(b"before".to_vec()));
        assert_eq!(db.get(b"b").unwrap(), None);
        assert_eq!(db.get(b"z").unwrap(), Some(b"after".to_vec()));
    }
    // Zeroed pages, allocated lazily: each under 4 GiB, too long together.
    let half = vec![0u8; 1 << 31];
    refused::<VecMemtable>(&half, &half, true);
    // Zero bytes, which the skip list's keys write twice.
    refused::<SkipListMemtable>(&half, b"v", false);
}

/// A memtable that panics part-way through a batch leaves some of its
/// entries in: the write path fails, so that no later write publishes
/// them.
#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn a_batch_whose_insert_panics_is_never_read() {
    let dir = scratch::dir();
    let db = open::<Hooked<INSERT_PANICS>>(dir.path(), 1 << 20);
    db.put(b"a", b"before").unwrap();
    let result = catch_unwind(AssertUnwindSafe(|| {
        db.write_batch(&[(b"a", Some(b"in the batch")), (b"b", Some(b"boom"))])
    }));
    assert!(result.is_err(), "the memtable's panic comes through");
    let err = db.put(b"z", b"after").unwrap_err();
    assert!(err.to_string().starts_with("a write panicked"), "{err}");
    assert_eq!(db.get(b"a").unwrap(), Some(b"before".to_vec()));
    assert_eq!(db.get(b"z").unwrap(), None);
    assert!(db.flush().is_err());
    assert_eq!(db.get(b"a").unwrap(), Some(b"before".to_vec()));
}

/// A memtable whose `freeze` panics takes its entries with it; the write
/// path then fails, and nothing waits for a flush that cannot come.
#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn a_panicking_freeze_fails_the_write_path_without_a_hang() {
    let dir = scratch::dir();
    let db = open::<Hooked<FREEZE_PANICS>>(dir.path(), 1 << 20);
    db.put(b"k", b"v").unwrap();
    // On a thread, so that a flush that waits forever fails the test.
    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        let first = catch_unwind(AssertUnwindSafe(|| db.flush())).is_err();
        let second = db.flush().map_err(|e| e.to_string());
        let put = db.put(b"k2", b"v").map_err(|e| e.to_string());
        let _ = done.send((first, second, put, db.stats().immutables));
    });
    let (first, second, put, immutables) = result
        .recv_timeout(Duration::from_secs(60))
        .expect("flush returns after a freeze panicked");
    assert!(first, "the freeze's panic comes through");
    assert!(second.unwrap_err().contains("freezing a memtable panicked"));
    assert!(put.unwrap_err().contains("freezing a memtable panicked"));
    assert_eq!(immutables, 0);
}

/// `open_with` makes every memtable, the first one and one per freeze, with
/// the caller's settings.
#[test]
fn open_with_makes_every_memtable() {
    let dir = scratch::dir();
    let mut options = WritePathOptions::new(dir.path());
    options.write_buffer_size = 16 << 10;
    let made = Arc::new(AtomicU32::new(0));
    let db = {
        let made = Arc::clone(&made);
        WritePath::open_with(options, move || {
            made.fetch_add(1, Ordering::Relaxed);
            ShardedArtMemtable::with_shards(3)
        })
        .unwrap()
    };
    assert_eq!(made.load(Ordering::Relaxed), 1);
    for i in 0..2000u32 {
        db.put(i.to_le_bytes(), i.to_be_bytes()).unwrap();
    }
    let freezes = db.stats().freezes;
    assert!(freezes > 5, "{freezes} freezes");
    assert_eq!(u64::from(made.load(Ordering::Relaxed)), freezes + 1);
    for i in (0..2000u32).step_by(7) {
        assert_eq!(
            db.get(i.to_le_bytes()).unwrap(),
            Some(i.to_be_bytes().to_vec())
        );
    }
    // Three shards take less than sixteen: more entries per memtable.
    let dir16 = scratch::dir();
    let db16 = open::<ShardedArtMemtable>(dir16.path(), 16 << 10);
    for i in 0..2000u32 {
        db16.put(i.to_le_bytes(), i.to_be_bytes()).unwrap();
    }
    assert!(db16.stats().freezes > freezes, "{:?}", db16.stats());
}

/// A panic making the next memtable loses nothing: the full one stays
/// active and readable, and the panic comes back as the write path's
/// failure.
#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn a_panicking_memtable_maker_loses_nothing() {
    let dir = scratch::dir();
    let mut options = WritePathOptions::new(dir.path());
    options.write_buffer_size = 4 << 10;
    let made = AtomicU32::new(0);
    let db = WritePath::open_with(options, move || {
        assert!(
            made.fetch_add(1, Ordering::Relaxed) < 1,
            "no second memtable"
        );
        ArtMemtable::default()
    })
    .unwrap();
    let mut written = 0u32;
    let err = loop {
        match db.put(written.to_be_bytes(), b"value") {
            Ok(()) => written += 1,
            Err(e) => break e,
        }
        assert!(written < 100_000, "the memtable never filled");
    };
    assert!(
        err.to_string()
            .contains("making a memtable panicked: no second memtable"),
        "{err}"
    );
    assert!(db.flush().is_err());
    let stats = db.stats();
    assert_eq!((stats.freezes, stats.flushes), (0, 0), "{stats:?}");
    // The write that filled the memtable landed; the one after it failed.
    assert_eq!(stats.last_seqno, u64::from(written), "{stats:?}");
    for i in 0..written {
        assert_eq!(db.get(i.to_be_bytes()).unwrap(), Some(b"value".to_vec()));
    }
    assert_eq!(db.get(written.to_be_bytes()).unwrap(), None);
}
