//! Readers check invariants while a writer inserts and removes and merges
//! run in the background.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use memkv::{HybridConfig, HybridMap};

const N: u64 = 20_000;
/// Every key `i` with `i % GAP == 0` is removed once key `i + GAP` is in.
const GAP: u64 = 5;

fn key(i: u64) -> Vec<u8> {
    // Scattered over the key space, so that every merge rewrites the base.
    format!("{:04x}/pkg{i:06}", (i * 7919) % 4096).into_bytes()
}

fn index(key: &[u8]) -> u64 {
    std::str::from_utf8(&key[8..]).unwrap().parse().unwrap()
}

/// What the map must hold once the writer has published `done`: keys
/// `0..=done`, less the removed ones.
fn present(i: u64, done: u64) -> Option<bool> {
    if i > done {
        return None; // not yet known
    }
    if i % GAP == 0 && i + GAP <= done {
        return Some(false);
    }
    if i % GAP == 0 {
        return None; // its removal may or may not have happened yet
    }
    Some(true)
}

struct SplitMix(u64);
impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[test]
fn readers_see_a_consistent_map_while_merges_run() {
    let map: HybridMap<u64> = HybridConfig::new()
        .min_delta_keys(2000)
        .key_ratio(0.3)
        // Merges put parts in place while the readers read.
        .part_keys(700)
        .build();
    // The writer publishes `done + 1` (0 = nothing yet).
    let published = AtomicU64::new(0);
    let finished = AtomicBool::new(false);
    let map = &map;
    let (published, finished) = (&published, &finished);
    thread::scope(|s| {
        s.spawn(move || {
            for i in 0..N {
                assert_eq!(map.insert(key(i), i), None);
                if i % GAP == 0 && i >= GAP {
                    assert_eq!(map.remove(key(i - GAP)), Some(i - GAP));
                }
                published.store(i + 1, Ordering::Release);
            }
            finished.store(true, Ordering::Release);
        });
        let readers: Vec<_> = (0..2u64)
            .map(|r| {
                s.spawn(move || {
                    let mut rng = SplitMix(r);
                    let (mut lookups, mut scans, mut during_merge) = (0u64, 0u64, 0u64);
                    let mut worst = Duration::ZERO;
                    while !finished.load(Ordering::Acquire) || scans == 0 {
                        let Some(done) = published.load(Ordering::Acquire).checked_sub(1) else {
                            continue;
                        };
                        for _ in 0..200 {
                            let i = rng.next() % (done + 1);
                            let merging = map.stats().merging;
                            let started = Instant::now();
                            let got = map.get(key(i));
                            worst = worst.max(started.elapsed());
                            during_merge += u64::from(merging);
                            match present(i, done) {
                                Some(true) => assert_eq!(got, Some(i), "key {i} (done {done})"),
                                Some(false) => assert_eq!(got, None, "key {i} (done {done})"),
                                None => assert!(got.is_none() || got == Some(i)),
                            }
                            lookups += 1;
                        }
                        // A snapshot: sorted, every value right, and between
                        // what was published before and after it was taken.
                        let entries: Vec<_> = map.iter().collect();
                        let after = published.load(Ordering::Acquire) - 1;
                        assert!(entries.windows(2).all(|w| w[0].0 < w[1].0));
                        let mut seen = vec![false; N as usize];
                        for (k, v) in &entries {
                            let i = index(k);
                            assert_eq!(*v, i);
                            // Key `after + 1` may be in, not yet published.
                            assert!(i <= after + 1, "key {i} before it was written");
                            assert_ne!(
                                present(i, done),
                                Some(false),
                                "removed key {i} still there"
                            );
                            seen[i as usize] = true;
                        }
                        for i in 0..=done {
                            if present(i, done) == Some(true) {
                                assert!(seen[i as usize], "key {i} missing from a snapshot");
                            }
                        }
                        // A prefix scan agrees with lookups of the same keys.
                        let prefix = format!("{:04x}/", rng.next() % 4096);
                        for (k, v) in map.prefix(&prefix) {
                            assert!(k.starts_with(prefix.as_bytes()));
                            assert_eq!(v, index(&k));
                        }
                        scans += 1;
                    }
                    (lookups, scans, during_merge, worst)
                })
            })
            .collect();
        let mut reads_during_merges = 0;
        for reader in readers {
            let (lookups, scans, during_merge, worst) = reader.join().unwrap();
            reads_during_merges += during_merge;
            println!(
                "reader: {lookups} lookups ({during_merge} while a merge ran), {scans} scans, \
                 slowest lookup {worst:?}"
            );
        }
        assert!(
            reads_during_merges > 0,
            "no lookup overlapped a merge: nothing was tested"
        );
    });
    map.freeze().unwrap();
    let stats = map.stats();
    println!("{stats:?}");
    assert!(
        stats.merges >= 3,
        "too few merges ran to test anything: {stats:?}"
    );
    assert_eq!(stats.failed_merges, 0);
    let expected = (0..N).filter(|&i| present(i, N - 1) == Some(true)).count();
    assert_eq!(map.len(), expected + 1, "the last removable key stays");
    for i in 0..N {
        assert_eq!(map.get(key(i)), (i % GAP != 0 || i + GAP >= N).then_some(i));
    }
}
