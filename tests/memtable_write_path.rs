//! The write path, for every memtable: puts and deletes across many flushes
//! against a `BTreeMap` model, the run-file format, reads while writing, and
//! errors.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use memkv::memtable::{
    ArtMemtable, Memtable, SkipListMemtable, VecMemtable, WritePath, WritePathOptions,
};

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
    let mut options = WritePathOptions::new(dir);
    options.write_buffer_size = buffer;
    WritePath::open(options).unwrap()
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
fn model_across_flushes<M: Memtable + 'static>(batches: bool) {
    let dir = tempfile::tempdir().unwrap();
    let db = open::<M>(dir.path(), 8 << 10);
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng = Rng(1);
    let mut pending: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
    let mut batch_len = 1;
    for i in 0..6000u64 {
        // 600 keys of varying length (some prefixes of others), overwritten
        // and deleted many times over, across many runs.
        let k = rng.next() % 600;
        let key = k.to_be_bytes()[8 - (1 + k as usize % 3)..].to_vec();
        let value = (rng.next() % 5 != 0).then(|| vec![i as u8; (rng.next() % 40) as usize]);
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

fn stalls_and_concurrent_reads<M: Memtable + 'static>() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(open::<M>(dir.path(), 4 << 10));
    let done = Arc::new(AtomicBool::new(false));
    // Key i is written once with value i; a reader that sees key i must see
    // that value, whether it is in a memtable or a run.
    let reader = {
        let (db, done) = (Arc::clone(&db), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut seen = 0;
            while !done.load(Ordering::Acquire) {
                for i in (0..3000u32).step_by(37) {
                    if let Some(v) = db.get(&i.to_be_bytes()).unwrap() {
                        assert_eq!(v, i.to_le_bytes().repeat(8));
                        seen += 1;
                    }
                }
            }
            seen
        })
    };
    for i in 0..3000u32 {
        db.put(&i.to_be_bytes(), &i.to_le_bytes().repeat(8))
            .unwrap();
        // Once written, always visible.
        if i % 101 == 0 {
            assert!(db.get(&i.to_be_bytes()).unwrap().is_some());
        }
    }
    done.store(true, Ordering::Release);
    assert!(reader.join().unwrap() > 0);
    let stats = db.stats();
    assert!(stats.freezes > 10, "{stats:?}");
    drop(db); // joins the flusher; the tempdir is removed after.
}

macro_rules! write_path_tests {
    ($($module:ident => $ty:ty;)*) => {$(
        mod $module {
            use super::*;

            #[test]
            fn model_across_flushes_in_write_batches() {
                super::model_across_flushes::<$ty>(true);
            }

            #[test]
            fn model_across_flushes() {
                super::model_across_flushes::<$ty>(false);
            }

            #[test]
            fn stalls_and_concurrent_reads() {
                super::stalls_and_concurrent_reads::<$ty>();
            }
        }
    )*};
}

write_path_tests! {
    skiplist => SkipListMemtable;
    art => ArtMemtable;
    vec => VecMemtable;
}

#[test]
fn open_refuses_a_missing_directory() {
    let err = WritePath::<ArtMemtable>::open(WritePathOptions::new("/nonexistent/memkv-runs"))
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
}

#[test]
fn a_failed_flush_fails_later_writes_and_keeps_data_readable() {
    let dir = tempfile::tempdir().unwrap();
    let db = open::<ArtMemtable>(dir.path(), 1 << 10);
    // The flusher creates run-000000.sst with create_new: make it exist.
    std::fs::write(dir.path().join("run-000000.sst"), b"in the way").unwrap();
    let mut failed = None;
    for i in 0..2000u32 {
        if let Err(e) = db.put(&i.to_be_bytes(), &[1; 50]) {
            failed = Some((i, e));
            break;
        }
    }
    let (i, e) = failed.expect("a write fails once the flush has failed");
    assert!(e.to_string().contains("flush failed"), "{e}");
    // What was written before is still readable from the memtables.
    assert_eq!(db.get(&0u32.to_be_bytes()).unwrap(), Some(vec![1; 50]));
    assert_eq!(db.get(&(i - 1).to_be_bytes()).unwrap(), Some(vec![1; 50]));
    assert!(db.close().is_err());
}

#[test]
#[should_panic(expected = "max_write_buffer_number must be at least 2")]
fn one_write_buffer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = WritePathOptions::new(dir.path());
    options.max_write_buffer_number = 1;
    let _ = WritePath::<SkipListMemtable>::open(options);
}
