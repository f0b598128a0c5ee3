//! Merges that fail or are paused half-way: nothing is lost, and reads and
//! writes go on through fresh delta → sealed delta → base.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use memkv::frozen::{FrozenValue, IntColumn};
use memkv::{HybridConfig, HybridMap};

/// A value whose encoding panics when it equals `BAD`: user code failing
/// in the middle of a merge.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Touchy<const BAD: u64>(u64);

impl<const BAD: u64> FrozenValue for Touchy<BAD> {
    const TYPE_NAME: &'static str = "Touchy";
    type Column = IntColumn;
    fn encode(&self) -> u64 {
        assert_ne!(self.0, BAD, "Touchy refuses to encode {BAD}");
        self.0
    }
    fn decode(encoded: u64) -> Self {
        Touchy(encoded)
    }
}

fn key(i: u64) -> String {
    format!("usr/share/doc/pkg{:05}/changelog", i)
}

/// Every key `0..n` but `removed` maps to its own number.
fn assert_all_there<const BAD: u64>(map: &HybridMap<Touchy<BAD>>, n: u64, removed: &[u64]) {
    for i in 0..n {
        let want = (!removed.contains(&i)).then_some(Touchy(i));
        assert_eq!(map.get(key(i)), want, "key {i}");
    }
    let keys: Vec<_> = map.iter().map(|(k, _)| k).collect();
    assert_eq!(keys.len() as u64, n - removed.len() as u64);
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(map.len() as u64, n - removed.len() as u64);
}

#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn a_panicking_freeze_loses_nothing() {
    // Parts of 3 keys: the merge has put two parts in place (keys 0 to 5)
    // when it meets key 7.
    let map: HybridMap<Touchy<7>> = HybridConfig::new().manual().part_keys(3).build();
    for i in 0..500 {
        map.insert(key(i), Touchy(i));
    }
    // Key 7 has the value whose encoding panics: this merge fails.
    let err = panic::catch_unwind(AssertUnwindSafe(|| map.freeze())).unwrap_err();
    let message = err.downcast_ref::<String>().unwrap();
    assert!(message.contains("refuses to encode 7"), "{message}");
    let stats = map.stats();
    assert_eq!((stats.merges, stats.failed_merges), (0, 1));
    assert_eq!(stats.sealed_deltas, 1, "the failed delta stays, sealed");
    assert_eq!((stats.base_keys, stats.base_parts), (6, 3));
    assert!(stats.last_error.unwrap().contains("refuses to encode 7"));
    assert_all_there(&map, 500, &[]);

    // Writes go on over the failed delta; a second failure stacks a second
    // sealed delta.
    for i in 500..600 {
        map.insert(key(i), Touchy(i));
    }
    map.remove(key(3));
    assert!(panic::catch_unwind(AssertUnwindSafe(|| map.freeze())).is_err());
    assert_eq!(map.stats().sealed_deltas, 2);
    assert_all_there(&map, 600, &[3]);

    // Once the bad value is gone, the next merge takes every layer.
    map.insert(key(7), Touchy(7 + 1000));
    map.freeze().unwrap();
    let stats = map.stats();
    assert_eq!(
        (stats.merges, stats.failed_merges, stats.sealed_deltas),
        (1, 2, 0)
    );
    assert_eq!((stats.base_keys, stats.delta_entries), (599, 0));
    assert_eq!(stats.last_error, None);
    assert_eq!(map.get(key(7)), Some(Touchy(1007)));
    // The bad value is fine in the delta, as long as no merge meets it.
    map.insert(key(7), Touchy(7));
    assert_all_there(&map, 600, &[3]);
}

#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn a_failing_background_merge_loses_nothing() {
    let map: HybridMap<Touchy<42>> = HybridConfig::new()
        .min_delta_keys(100)
        .key_ratio(0.0)
        .build();
    for i in 0..100 {
        map.insert(key(i), Touchy(i));
    }
    // The 100th insert started a background merge, which meets 42 and fails.
    let deadline = Instant::now() + Duration::from_secs(30);
    while map.stats().failed_merges == 0 {
        assert!(
            Instant::now() < deadline,
            "the merge neither failed nor ended"
        );
        thread::sleep(Duration::from_millis(1));
    }
    let stats = map.stats();
    assert_eq!((stats.merges, stats.sealed_deltas), (0, 1));
    assert_all_there(&map, 100, &[]);
    // Replace the bad value: the next automatic merge (after another 100
    // writes) succeeds.
    map.insert(key(42), Touchy(1042));
    for i in 100..250 {
        map.insert(key(i), Touchy(i));
    }
    while map.stats().merges == 0 {
        assert!(Instant::now() < deadline, "no merge succeeded");
        thread::sleep(Duration::from_millis(1));
    }
    map.insert(key(42), Touchy(42 + 1));
    map.freeze().unwrap();
    assert_eq!(map.get(key(42)), Some(Touchy(43)));
    map.insert(key(42), Touchy(u64::MAX));
    map.remove(key(42));
    assert_all_there(&map, 250, &[42]);
}

/// A map of 5,000 keys built in one go whose merge failed on the value that
/// `Touchy` refuses to encode: the failure is recorded, as a background
/// merge's, every entry is there and no other, and once the value is
/// replaced the next merge takes them all.
fn assert_a_failed_build_loses_nothing(map: &HybridMap<Touchy<4321>>) {
    let stats = map.stats();
    assert_eq!((stats.merges, stats.failed_merges), (0, 1), "{stats:?}");
    assert!(stats.last_error.unwrap().contains("refuses to encode 4321"));
    assert_all_there(map, 5000, &[]);
    assert_eq!(map.get(key(5000)), None);
    assert_eq!(map.get("usr"), None);
    map.insert(key(4321), Touchy(4321 + 1));
    map.freeze().unwrap();
    let stats = map.stats();
    assert_eq!(
        (
            stats.merges,
            stats.base_keys,
            stats.delta_entries,
            stats.sealed_deltas
        ),
        (1, 5000, 0, 0)
    );
    map.insert(key(4321), Touchy(4321));
    assert_all_there(map, 5000, &[]);
}

#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn a_collect_whose_merge_fails_loses_nothing() {
    // 5,000 keys: `collect` merges them into a base at once, in this
    // thread, and that merge meets the value whose encoding panics. The
    // entries stay in the delta, sealed, whose filter lets every key
    // through (absent keys are still absent).
    let map: HybridMap<Touchy<4321>> = (0..5000).map(|i| (key(i), Touchy(i))).collect();
    assert_eq!(map.stats().sealed_deltas, 1);
    assert_a_failed_build_loses_nothing(&map);
}

/// The numbers `0..n` out of order (a permutation: 7,919 is prime to n).
fn shuffled(n: u64) -> impl Iterator<Item = u64> {
    assert!(!n.is_multiple_of(7919));
    (0..n).map(move |i| i * 7919 % n)
}

#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn a_build_in_shares_whose_part_fails_loses_nothing() {
    // 5,000 keys out of order, in parts of 100, on one to three threads:
    // the entries are split among the threads' trees, and the part that
    // meets the value whose encoding panics fails, after the trees of the
    // parts before it have been dropped. Every entry (those from the parts
    // built, and from the trees left) then goes into the fresh delta, in
    // one tree.
    for threads in [1, 2, 3] {
        let config = HybridConfig::new().part_keys(100).build_threads(threads);
        let map = config.build_from(shuffled(5000).map(|i| (key(i), Touchy::<4321>(i))));
        let stats = map.stats();
        assert_eq!(
            (stats.delta_entries, stats.base_keys, stats.sealed_deltas),
            (5000, 0, 0),
            "{threads}: {stats:?}"
        );
        assert_a_failed_build_loses_nothing(&map);
    }
}

#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn a_sorted_build_whose_part_fails_loses_nothing() {
    // 5,000 keys in order: parts are built straight from them, and the one
    // that meets the value whose encoding panics fails. The parts built,
    // the entries of the failed one and those not yet read all go into
    // the fresh delta. Then the same with the order broken after the
    // failing key, and before it: the entries from there on go into the
    // delta, and the failure comes with the merge of them. On one to three
    // threads, which take the parts in turn: in parts of 100, the 43rd
    // part fails (#43), built on another thread (with two or three); in
    // parts of 101, #42, built on this one (with two).
    for (threads, part_keys) in [(1, 100), (2, 100), (2, 101), (3, 100)] {
        a_sorted_build_whose_part_fails_loses_nothing_on(threads, part_keys);
    }
}

fn a_sorted_build_whose_part_fails_loses_nothing_on(threads: usize, part_keys: usize) {
    let config = HybridConfig::new()
        .part_keys(part_keys)
        .build_threads(threads);
    let sorted = config
        .clone()
        .build_from((0..5000).map(|i| (key(i), Touchy::<4321>(i))));
    assert_eq!(
        (sorted.stats().delta_entries, sorted.stats().base_keys),
        (5000, 0)
    );
    assert_a_failed_build_loses_nothing(&sorted);
    let order = (0..4500).chain(shuffled(500).map(|i| 4500 + i));
    let broken_after = config
        .clone()
        .build_from(order.map(|i| (key(i), Touchy::<4321>(i))));
    assert_eq!(broken_after.stats().delta_entries, 5000);
    assert_a_failed_build_loses_nothing(&broken_after);
    let order = (0..4200).chain(shuffled(800).map(|i| 4200 + i));
    let broken_before = config.build_from(order.map(|i| (key(i), Touchy::<4321>(i))));
    // The base holds the keys up to where the order broke (4200 and the
    // few after it that still came in order); the rest are in the delta,
    // fewer than the policy merges.
    let stats = broken_before.stats();
    assert!((4200..4300).contains(&stats.base_keys), "{stats:?}");
    assert_eq!(
        (
            stats.merges,
            stats.failed_merges,
            stats.len,
            stats.delta_entries
        ),
        (1, 0, 5000, 5000 - stats.base_keys)
    );
    assert_all_there(&broken_before, 5000, &[]);
    // `freeze` passes the panic on, the map left as it was.
    assert!(panic::catch_unwind(AssertUnwindSafe(|| broken_before.freeze())).is_err());
    assert_all_there(&broken_before, 5000, &[]);
}

/// Entries in key order whose neighbours share no leading byte: the
/// sorted build, which sizes its buffers from how much the sample's
/// neighbours share, builds them all into the base, on one thread and two.
#[test]
fn a_sorted_build_of_keys_that_share_nothing() {
    for threads in [1, 2] {
        let config = HybridConfig::new()
            .part_keys(16)
            .min_delta_keys(32)
            .build_threads(threads);
        let map = config.build_from((0..=255u8).map(|b| ([b], u64::from(b))));
        let stats = map.stats();
        assert_eq!(
            (stats.len, stats.base_keys, stats.delta_entries),
            (256, 256, 0),
            "{threads}: {stats:?}"
        );
        for b in 0..=255u8 {
            assert_eq!(map.get([b]), Some(u64::from(b)));
        }
        assert!(map.keys().eq((0..=255u8).map(|b| vec![b])));
    }
}

#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn a_panic_in_the_entries_of_a_build_in_one_go_is_passed_on() {
    // After the sample (4,096 entries: the default `min_delta_keys`), out
    // of order, the entries go to the other threads: the panic comes out
    // of `build_from` once they have stopped. In order, the parts are
    // built from them by this thread and the other in turn: the panic
    // comes out once the other has stopped.
    let bad = |i: u64| {
        assert!(i != 4500, "entry 4500 is bad");
        (key(i), Touchy::<{ u64::MAX }>(i))
    };
    let config = HybridConfig::new().part_keys(100).build_threads(2);
    for in_order in [false, true] {
        let order: Box<dyn Iterator<Item = u64>> = if in_order {
            Box::new(0..5000)
        } else {
            Box::new(shuffled(5000))
        };
        let built = panic::catch_unwind(AssertUnwindSafe(|| {
            config.clone().build_from(order.map(bad))
        }));
        let payload = built.expect_err("the iterator panicked");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"entry 4500 is bad"));
    }
}

/// A value that counts its encodings (one test's: the count is global).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tallied(u64);

static ENCODED: AtomicUsize = AtomicUsize::new(0);

impl FrozenValue for Tallied {
    const TYPE_NAME: &'static str = "Tallied";
    type Column = IntColumn;
    fn encode(&self) -> u64 {
        ENCODED.fetch_add(1, Ordering::Relaxed);
        self.0
    }
    fn decode(encoded: u64) -> Self {
        Tallied(encoded)
    }
}

/// Once the caller's iterator has panicked, the build cannot succeed: the
/// other threads stop without building their parts. They took the closed
/// channel for the end of the entries, and built every part of their
/// shares, encoding every value, before the panic came out (2026-11-27, a
/// review).
#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn a_build_in_shares_whose_entries_panic_builds_nothing() {
    let entries = shuffled(20_000).enumerate().map(|(at, i)| {
        assert!(at != 19_999, "the last entry is bad");
        (key(i), Tallied(i))
    });
    let config = HybridConfig::new().part_keys(100).build_threads(2);
    let built = panic::catch_unwind(AssertUnwindSafe(|| config.build_from(entries)));
    assert!(built.is_err(), "the iterator panicked");
    assert_eq!(ENCODED.load(Ordering::Relaxed), 0, "values encoded");
}

/// A value whose `Drop` panics for `u64::MAX`.
#[derive(Clone, Debug, PartialEq)]
struct Bomb(u64);

impl Drop for Bomb {
    fn drop(&mut self) {
        assert!(self.0 != u64::MAX || thread::panicking(), "a bomb dropped");
    }
}

impl FrozenValue for Bomb {
    const TYPE_NAME: &'static str = "Bomb";
    type Column = IntColumn;
    fn encode(&self) -> u64 {
        self.0
    }
    fn decode(encoded: u64) -> Self {
        Bomb(encoded)
    }
}

/// When another thread panics as it gathers its share (here, dropping the
/// value a repeated key replaces), the calling thread stops reading the
/// entries: it read them all, and built its own share, before passing
/// the panic on.
#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn a_build_in_shares_stops_reading_when_a_thread_panics() {
    let n = 300_000;
    let read = AtomicUsize::new(0);
    // The largest key, so that it falls in the second thread's share:
    // first with a bomb, then again soon after the sample (4,096 entries).
    let (first, rest): (Vec<u64>, Vec<u64>) = shuffled(n - 1).partition(|&i| i < 5000);
    let entries = (std::iter::once((n - 1, Bomb(u64::MAX))))
        .chain(first.into_iter().map(|i| (i, Bomb(i))))
        .chain(std::iter::once((n - 1, Bomb(n - 1))))
        .chain(rest.into_iter().map(|i| (i, Bomb(i))))
        .map(|(i, value)| (key(i), value))
        .inspect(|_| {
            read.fetch_add(1, Ordering::Relaxed);
        });
    let config = HybridConfig::new().part_keys(1000).build_threads(2);
    let built = panic::catch_unwind(AssertUnwindSafe(|| config.build_from(entries)));
    let payload = built.expect_err("the replaced value's Drop panicked");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"a bomb dropped"));
    let read = read.load(Ordering::Relaxed);
    assert!(read < n as usize / 2, "{read} entries read");
}

/// `build_threads` takes any number: no more threads start than the
/// sample's distinct keys give shares of whole trees (here 200 keys, 25
/// threads). `usize::MAX` overflowed (2026-11-27, a review), and a
/// thread started for each key of the sample.
#[test]
fn a_build_in_shares_on_more_threads_than_keys() {
    for threads in [100_000, usize::MAX] {
        let config =
            (HybridConfig::new().part_keys(100).min_delta_keys(200)).build_threads(threads);
        // Plain values: `Tallied`'s count belongs to the test above, which
        // runs beside this one.
        let map = config.build_from(shuffled(5000).map(|i| (key(i), i)));
        let stats = map.stats();
        assert_eq!((stats.len, stats.base_keys), (5000, 5000), "{threads}");
        assert!((0..5000).all(|i| map.get(key(i)) == Some(i)));
    }
}

/// The threads that encoded a `Witnessed` value.
static WITNESSES: Mutex<Vec<thread::ThreadId>> = Mutex::new(Vec::new());

/// A value that records which threads encode it.
#[derive(Clone, Debug, PartialEq)]
struct Witnessed(u64);

impl FrozenValue for Witnessed {
    const TYPE_NAME: &'static str = "Witnessed";
    type Column = IntColumn;
    fn encode(&self) -> u64 {
        let mut seen = WITNESSES.lock().unwrap();
        let me = thread::current().id();
        if !seen.contains(&me) {
            seen.push(me);
        }
        self.0
    }
    fn decode(encoded: u64) -> Self {
        Witnessed(encoded)
    }
}

/// No build starts more threads than the machine has cores, however many
/// `build_threads` asks for. A sorted build started one thread per part
/// past that, each holding its part until the end (2026-11-29, a review:
/// 1,001 threads for 2,000 parts).
#[test]
fn no_build_starts_more_threads_than_cores() {
    let cores = thread::available_parallelism().map_or(1, usize::from);
    let config = HybridConfig::new().part_keys(10).build_threads(1000);
    for sorted in [true, false] {
        WITNESSES.lock().unwrap().clear();
        let order: Vec<u64> = if sorted {
            (0..20_000).collect()
        } else {
            shuffled(20_000).collect()
        };
        let map = config
            .clone()
            .build_from(order.into_iter().map(|i| (key(i), Witnessed(i))));
        let stats = map.stats();
        assert_eq!(
            (stats.len, stats.base_keys),
            (20_000, 20_000),
            "sorted: {sorted}"
        );
        let threads = WITNESSES.lock().unwrap().len();
        assert!(
            (1..=cores).contains(&threads),
            "sorted: {sorted}: {threads} threads encoded, on {cores} cores"
        );
        assert!(
            (0..20_000)
                .step_by(97)
                .all(|i| map.get(key(i)) == Some(Witnessed(i)))
        );
    }
}

/// Parts of one key each: a merge cut an empty part before an old part
/// of one key (half the target is 0), with the empty key one whose bounds
/// were equal (2026-11-27, a review).
#[test]
fn parts_of_one_key() {
    let map: HybridMap<u64> = HybridConfig::new().part_keys(1).manual().build();
    for (i, k) in ["a", "b", "c"].into_iter().enumerate() {
        map.insert(k, i as u64);
    }
    map.freeze().unwrap();
    map.insert("", 9);
    map.freeze().unwrap();
    let all: Vec<(Vec<u8>, u64)> = map.iter().collect();
    assert_eq!(
        all,
        [(&b""[..], 9), (b"a", 0), (b"b", 1), (b"c", 2)].map(|(k, v)| (k.to_vec(), v))
    );
    let stats = map.stats();
    assert_eq!(
        (stats.base_keys, stats.base_parts, stats.failed_merges),
        (4, 4, 0)
    );
}

/// A value whose encoding of `HOLD` blocks until the test opens the gate:
/// a merge paused half-way.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Gated(u64);

const HOLD: u64 = 1_000_000;

/// (merge reached the gate, gate open)
static GATE: (Mutex<(bool, bool)>, Condvar) = (Mutex::new((false, false)), Condvar::new());

impl FrozenValue for Gated {
    const TYPE_NAME: &'static str = "Gated";
    type Column = IntColumn;
    fn encode(&self) -> u64 {
        if self.0 == HOLD {
            let (lock, cond) = &GATE;
            let mut state = lock.lock().unwrap();
            state.0 = true;
            cond.notify_all();
            while !state.1 {
                state = cond.wait(state).unwrap();
            }
        }
        self.0
    }
    fn decode(encoded: u64) -> Self {
        Gated(encoded)
    }
}

#[test]
#[cfg_attr(target_os = "wasi", ignore = "needs threads")]
fn reads_and_writes_go_on_during_a_merge() {
    let map = Arc::new(HybridConfig::new().manual().build::<Gated>());
    // Base: keys 0..300.
    for i in 0..300 {
        map.insert(key(i), Gated(i));
    }
    map.freeze().unwrap();
    // To be sealed: updates, removals (tombstones over the base), new keys,
    // and the key whose value holds the merge.
    for i in 0..100 {
        map.insert(key(i), Gated(i + 10_000));
    }
    for i in 100..150 {
        map.remove(key(i));
    }
    for i in 300..400 {
        map.insert(key(i), Gated(i));
    }
    map.insert("zz-hold", Gated(HOLD));
    let merger = {
        let map = Arc::clone(&map);
        thread::spawn(move || map.freeze())
    };
    {
        let (lock, cond) = &GATE;
        let mut state = lock.lock().unwrap();
        while !state.0 {
            state = cond.wait(state).unwrap();
        }
    }
    // The merge is running and holds: the delta is sealed.
    let stats = map.stats();
    assert!(stats.merging);
    assert_eq!((stats.sealed_deltas, stats.base_keys), (1, 300));
    assert_eq!(stats.delta_entries, 100 + 50 + 100 + 1);
    // Fresh writes over the sealed delta and the base.
    map.insert(key(0), Gated(20_000)); // over sealed over base
    map.insert(key(100), Gated(20_100)); // over a sealed tombstone
    map.remove(key(300)); // a sealed key: needs a tombstone
    map.remove(key(200)); // a base key
    map.insert(key(500), Gated(500)); // new
    assert_eq!(map.remove(key(500)), Some(Gated(500))); // only fresh: outright
    let check = |map: &HybridMap<Gated>| {
        assert_eq!(map.get(key(0)), Some(Gated(20_000)));
        assert_eq!(map.get(key(1)), Some(Gated(10_001)));
        assert_eq!(map.get(key(100)), Some(Gated(20_100)));
        assert_eq!(map.get(key(101)), None);
        assert_eq!(map.get(key(200)), None);
        assert_eq!(map.get(key(201)), Some(Gated(201)));
        assert_eq!(map.get(key(300)), None);
        assert_eq!(map.get(key(301)), Some(Gated(301)));
        assert_eq!(map.get(key(500)), None);
        // 400 keys + hold − 49 removed (100..150 but 100) − 200 − 300.
        assert_eq!(map.len(), 400 + 1 - 49 - 2);
        let all: Vec<_> = map.iter().collect();
        assert_eq!(all.len(), map.len());
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(map.range(key(99)..key(102)).count(), 2); // 99 and 100
        assert_eq!(
            map.last_key_value(),
            Some((b"zz-hold".to_vec(), Gated(HOLD)))
        );
    };
    check(&map);
    let fresh_stats = map.stats();
    assert_eq!(fresh_stats.delta_entries, 251 + 4);
    // An iterator taken now is a snapshot across the merge's end.
    let snapshot = map.range(key(0)..key(2));
    {
        let (lock, cond) = &GATE;
        lock.lock().unwrap().1 = true;
        cond.notify_all();
    }
    merger.join().unwrap().unwrap();
    let stats = map.stats();
    assert_eq!(
        (stats.sealed_deltas, stats.base_keys, stats.merges),
        (0, 400 + 1 - 50, 2)
    );
    assert_eq!(stats.delta_entries, 4);
    check(&map);
    assert_eq!(
        snapshot.collect::<Vec<_>>(),
        [
            (key(0).into_bytes(), Gated(20_000)),
            (key(1).into_bytes(), Gated(10_001))
        ]
    );
    map.freeze().unwrap();
    check(&map);
    assert_eq!(map.stats().delta_entries, 0);
}
