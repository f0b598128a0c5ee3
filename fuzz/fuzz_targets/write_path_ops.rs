//! The memtable write path against a `BTreeMap` of the latest values:
//! puts, deletes, write batches, reads and flushes through tiny memtables
//! (so that writes cross many freezes and run files), with a flusher
//! thread or flushing inline, for each of the four memtables.

#![no_main]

use std::collections::BTreeMap;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use memkv::memtable::{
    ArtMemtable, Memtable, ShardedArtMemtable, SkipListMemtable, VecMemtable, WritePath,
    WritePathOptions,
};
use memkv_fuzz::Key;

#[derive(Arbitrary, Debug)]
struct Setup {
    /// Which memtable (of four).
    memtable: u8,
    /// `write_buffer_size` in bytes: 0 freezes after every write.
    buffer: u16,
    /// `max_write_buffer_number` is 2 to 4.
    memtables: u8,
    background_flush: bool,
}

#[derive(Arbitrary, Debug)]
enum WriteOp {
    Put(Key, Vec<u8>),
    Delete(Key),
    Batch(Vec<(Key, Option<Vec<u8>>)>),
    Get(Key),
    Flush,
}

fn run<M: Memtable + 'static>(setup: &Setup, ops: &[WriteOp]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut options = WritePathOptions::new(dir.path());
    options.write_buffer_size = usize::from(setup.buffer);
    options.max_write_buffer_number = 2 + usize::from(setup.memtables % 3);
    options.background_flush = setup.background_flush;
    let db = WritePath::<M>::open(options).expect("an empty directory opens");
    assert_eq!(db.flushes_inline(), !setup.background_flush);
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut written = 0u64;
    for op in ops {
        match op {
            WriteOp::Put(key, value) => {
                let key = key.bytes();
                db.put(&key, value).unwrap();
                model.insert(key, value.clone());
                written += 1;
            }
            WriteOp::Delete(key) => {
                let key = key.bytes();
                db.delete(&key).unwrap();
                model.remove(&key);
                written += 1;
            }
            WriteOp::Batch(batch) => {
                let keys: Vec<Vec<u8>> = batch.iter().map(|(key, _)| key.bytes()).collect();
                let refs: Vec<(&[u8], Option<&[u8]>)> = (keys.iter().zip(batch))
                    .map(|(key, (_, value))| (&key[..], value.as_deref()))
                    .collect();
                db.write_batch(&refs).unwrap();
                for (key, value) in refs {
                    match value {
                        Some(value) => model.insert(key.to_vec(), value.to_vec()),
                        None => model.remove(key),
                    };
                }
                written += batch.len() as u64;
            }
            WriteOp::Get(key) => {
                let key = key.bytes();
                assert_eq!(db.get(&key).unwrap(), model.get(&key).cloned(), "{key:?}");
            }
            WriteOp::Flush => {
                db.flush().unwrap();
                let stats = db.stats();
                assert_eq!((stats.immutables, stats.flushes), (0, stats.freezes));
            }
        }
        let stats = db.stats();
        assert_eq!(stats.last_seqno, written);
        if !setup.background_flush {
            // Each memtable frozen was written before its write returned.
            assert_eq!((stats.immutables, stats.flushes), (0, stats.freezes));
        }
    }
    // Every key ever named, present or not, reads as the model says, from
    // wherever it now is, and again once everything is in runs.
    let named: Vec<Vec<u8>> = ops.iter().flat_map(keys_of).collect();
    for round in 0..2 {
        for key in &named {
            assert_eq!(
                db.get(key).unwrap(),
                model.get(key).cloned(),
                "{key:?}, round {round}"
            );
        }
        db.flush().unwrap();
    }
    assert_eq!(db.run_paths().len() as u64, db.stats().flushes);
    let stats = db.close().unwrap();
    assert_eq!((stats.immutables, stats.flushes), (0, stats.freezes));
}

fn keys_of(op: &WriteOp) -> Vec<Vec<u8>> {
    match op {
        WriteOp::Put(key, _) | WriteOp::Delete(key) | WriteOp::Get(key) => vec![key.bytes()],
        WriteOp::Batch(batch) => batch.iter().map(|(key, _)| key.bytes()).collect(),
        WriteOp::Flush => Vec::new(),
    }
}

fuzz_target!(|input: (Setup, Vec<WriteOp>)| {
    let (setup, ops) = input;
    match setup.memtable % 4 {
        0 => run::<ArtMemtable>(&setup, &ops),
        1 => run::<ShardedArtMemtable>(&setup, &ops),
        2 => run::<SkipListMemtable>(&setup, &ops),
        _ => run::<VecMemtable>(&setup, &ops),
    }
});
