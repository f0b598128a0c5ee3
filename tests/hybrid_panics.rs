//! A value whose `Drop` panics, dropped while a write replaces or removes
//! it: the write is done, and `len` agrees with the entries, whichever
//! layer the dropped value came from. And user code that panics in the
//! middle of a read-modify-write (a closure, a predicate, `V::clone`): the
//! map keeps what it had, or what was written before the panic, and the
//! write lock is free again.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use memkv::frozen::{FrozenValue, IntColumn};
use memkv::hybrid::Entry;
use memkv::{HybridConfig, HybridMap};

thread_local! {
    /// The value whose next drop on this thread panics.
    static PANIC_ON: Cell<Option<u64>> = const { Cell::new(None) };
    /// The value whose next clone on this thread panics.
    static PANIC_ON_CLONE: Cell<Option<u64>> = const { Cell::new(None) };
}

#[derive(Debug, PartialEq)]
struct Val(u64);

impl Clone for Val {
    fn clone(&self) -> Self {
        if PANIC_ON_CLONE.get() == Some(self.0) {
            PANIC_ON_CLONE.set(None);
            panic!("clone of {}", self.0);
        }
        Val(self.0)
    }
}

impl Drop for Val {
    fn drop(&mut self) {
        if PANIC_ON.get() == Some(self.0) {
            PANIC_ON.set(None);
            panic!("drop of {}", self.0);
        }
    }
}

impl FrozenValue for Val {
    const TYPE_NAME: &'static str = "Val";
    type Column = IntColumn;
    fn encode(&self) -> u64 {
        self.0
    }
    fn decode(encoded: u64) -> Self {
        Val(encoded)
    }
}

/// Runs `write` with the drop of `Val(panics_on)` panicking, checks that it
/// did, and returns `(len, entries)` after.
fn after_panicking_drop(
    map: &HybridMap<Val>,
    panics_on: u64,
    write: impl FnOnce(),
) -> (usize, usize) {
    PANIC_ON.set(Some(panics_on));
    let result = panic::catch_unwind(AssertUnwindSafe(write));
    let armed = PANIC_ON.replace(None);
    assert!(
        result.is_err() && armed.is_none(),
        "the drop of {panics_on} panicked"
    );
    (map.len(), map.iter().count())
}

/// A map whose base holds `k` = 1, with `k` = 2 in the fresh delta over it.
fn updated_over_base() -> HybridMap<Val> {
    let map = HybridConfig::new().manual().build();
    map.insert("k", Val(1));
    map.freeze().unwrap();
    map.insert("k", Val(2));
    map
}

#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn remove_over_the_base() {
    let map = updated_over_base();
    // The base's copy, looked up for the old value, is dropped.
    assert_eq!(
        after_panicking_drop(&map, 1, || drop(map.remove("k"))),
        (0, 0)
    );
    assert_eq!(map.get("k"), None);
}

#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn clear() {
    let map = updated_over_base();
    map.insert("j", Val(3));
    // The fresh delta's values are dropped with it.
    assert_eq!(after_panicking_drop(&map, 3, || map.clear()), (0, 0));
    assert!(map.is_empty());
    map.insert("k", Val(4));
    assert_eq!((map.len(), map.get("k")), (1, Some(Val(4))));
}

#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn insert_over_a_tombstone() {
    let map: HybridMap<Val> = HybridConfig::new().manual().build();
    map.insert("k", Val(1));
    map.freeze().unwrap();
    map.remove("k");
    assert_eq!(
        after_panicking_drop(&map, 1, || drop(map.insert("k", Val(3)))),
        (1, 1)
    );
    assert_eq!(map.get("k"), Some(Val(3)));
}

#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn entry_remove() {
    for over_base in [false, true] {
        let map = if over_base {
            updated_over_base()
        } else {
            let map = HybridConfig::new().manual().build();
            map.insert("k", Val(2));
            map
        };
        let remove = || {
            let Entry::Occupied(entry) = map.entry("k") else {
                panic!("k is in the map");
            };
            drop(entry.remove());
        };
        // The fresh delta's value (2) is dropped inside the write.
        assert_eq!(
            after_panicking_drop(&map, 2, remove),
            (0, 0),
            "over the base: {over_base}"
        );
    }
}

#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn entry_insert() {
    let map = updated_over_base();
    let insert = || {
        let Entry::Occupied(mut entry) = map.entry("k") else {
            panic!("k is in the map");
        };
        // The entry hands back its copy of 2; the delta's 2 is dropped.
        std::mem::forget(entry.insert(Val(3)));
    };
    assert_eq!(after_panicking_drop(&map, 2, insert), (1, 1));
    assert_eq!(map.get("k"), Some(Val(3)));
}

/// Runs `call`, which must panic, and checks that the map is whole after:
/// `len` agrees with the entries, and the write lock is free (a write from
/// this thread would deadlock on it otherwise). Returns the entries.
fn after_panic(map: &HybridMap<Val>, call: impl FnOnce()) -> Vec<(Vec<u8>, u64)> {
    let result = panic::catch_unwind(AssertUnwindSafe(call));
    assert!(result.is_err(), "the call panicked");
    PANIC_ON_CLONE.set(None);
    let entries: Vec<_> = map.iter().map(|(key, value)| (key, value.0)).collect();
    assert_eq!(map.len(), entries.len());
    map.insert("written after", Val(99));
    assert_eq!(map.remove("written after"), Some(Val(99)));
    entries
}

/// `a` = 1 and `b` = 2 in the base, `c` = 3 in the fresh delta.
fn over_base_and_delta() -> HybridMap<Val> {
    let map = HybridConfig::new().manual().build();
    map.insert("a", Val(1));
    map.insert("b", Val(2));
    map.freeze().unwrap();
    map.insert("c", Val(3));
    map
}

fn entries(pairs: &[(&str, u64)]) -> Vec<(Vec<u8>, u64)> {
    pairs
        .iter()
        .map(|&(key, value)| (key.as_bytes().to_vec(), value))
        .collect()
}

#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn retain_with_a_panicking_predicate_keeps_what_it_had_not_yet_removed() {
    let map = over_base_and_delta();
    let left = after_panic(&map, || {
        map.retain(|key, _| match key {
            b"a" => false,
            b"b" => panic!("the predicate panics at b"),
            _ => false,
        })
    });
    assert_eq!(left, entries(&[("b", 2), ("c", 3)]));
}

#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn entry_closures_that_panic_write_nothing() {
    let map = over_base_and_delta();
    let left = after_panic(&map, || {
        map.entry("d").or_insert_with(|| panic!("no value for d"));
    });
    assert_eq!(left, entries(&[("a", 1), ("b", 2), ("c", 3)]));
    for key in ["a", "c"] {
        let left = after_panic(&map, || {
            map.entry(key).and_modify(|value| {
                value.0 += 10;
                panic!("half-way through a change of {key}")
            });
        });
        assert_eq!(left, entries(&[("a", 1), ("b", 2), ("c", 3)]), "{key}");
    }
}

#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn a_panicking_clone_leaves_pops_and_entries_undone() {
    let map = over_base_and_delta();
    // Values in a delta are cloned as they are found (the base's are
    // decoded): `c`'s clone panics in each of these.
    let calls: [&dyn Fn(); 4] = [
        &|| drop(map.pop_last()),
        &|| drop(map.entry("c").and_modify(|value| value.0 += 1)),
        &|| drop(map.entry("c").or_insert(Val(7))),
        &|| drop(map.last_key_value()),
    ];
    for (i, call) in calls.into_iter().enumerate() {
        PANIC_ON_CLONE.set(Some(3));
        let left = after_panic(&map, call);
        assert_eq!(left, entries(&[("a", 1), ("b", 2), ("c", 3)]), "call {i}");
    }
}

/// Per test below, the value whose next drop *as inserted* panics, on
/// whatever thread drops it (the merge thread's, in one): copies made by
/// `clone` or read from the base never do.
static PANIC_ON_ANY_THREAD: [AtomicU64; 2] = [const { AtomicU64::new(u64::MAX) }; 2];

/// A value of the test that uses `PANIC_ON_ANY_THREAD[T]`.
#[derive(Debug, PartialEq)]
struct Inserted<const T: usize> {
    n: u64,
    as_inserted: bool,
}

impl<const T: usize> Inserted<T> {
    fn new(n: u64) -> Self {
        Inserted {
            n,
            as_inserted: true,
        }
    }
}

impl<const T: usize> Clone for Inserted<T> {
    fn clone(&self) -> Self {
        Inserted {
            n: self.n,
            as_inserted: false,
        }
    }
}

impl<const T: usize> Drop for Inserted<T> {
    fn drop(&mut self) {
        if self.as_inserted
            && PANIC_ON_ANY_THREAD[T]
                .compare_exchange(self.n, u64::MAX, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        {
            panic!("drop of {}", self.n);
        }
    }
}

impl<const T: usize> FrozenValue for Inserted<T> {
    const TYPE_NAME: &'static str = "Inserted";
    type Column = IntColumn;
    fn encode(&self) -> u64 {
        self.n
    }
    fn decode(encoded: u64) -> Self {
        Inserted {
            n: encoded,
            as_inserted: false,
        }
    }
}

/// A merged value's drop that panics on the merge thread, after the merge
/// is done, does not end the thread: later merges still start (before,
/// the map believed the dead thread still ran, and never merged again),
/// and the panic shows in the stats.
#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn a_panicking_drop_after_a_background_merge_stops_no_later_merge() {
    let map: HybridMap<Inserted<0>> = HybridConfig::new()
        .min_delta_keys(100)
        .key_ratio(0.0)
        .build();
    PANIC_ON_ANY_THREAD[0].store(7, Ordering::SeqCst);
    for i in 0..100 {
        map.insert(format!("k{i:05}"), Inserted::new(i));
    }
    let wait_for = |done: &dyn Fn() -> bool, what: &str| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done() {
            assert!(Instant::now() < deadline, "{what}: {:?}", map.stats());
            thread::sleep(Duration::from_millis(2));
        }
    };
    wait_for(
        &|| PANIC_ON_ANY_THREAD[0].load(Ordering::SeqCst) == u64::MAX && map.stats().merges == 1,
        "the first merge and the panic",
    );
    for i in 100..1_000 {
        map.insert(format!("k{i:05}"), Inserted::new(i));
    }
    wait_for(&|| map.stats().merges >= 2, "a second merge");
    map.freeze().unwrap();
    let stats = map.stats();
    assert_eq!(
        (stats.len, stats.base_keys, stats.failed_merges),
        (1_000, 1_000, 0)
    );
    assert_eq!(map.get("k00007").map(|v| v.n), Some(7));
}

/// The same panic in `freeze`'s own merge is passed on, after the merge.
#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn a_panicking_drop_after_freeze_is_passed_on_with_the_merge_done() {
    let map: HybridMap<Inserted<1>> = HybridConfig::new().manual().build();
    for i in 0..10 {
        map.insert(format!("k{i}"), Inserted::new(i));
    }
    PANIC_ON_ANY_THREAD[1].store(3, Ordering::SeqCst);
    let result = panic::catch_unwind(AssertUnwindSafe(|| map.freeze()));
    assert!(result.is_err(), "the drop of 3 panicked");
    let stats = map.stats();
    assert_eq!(
        (stats.base_keys, stats.delta_entries, stats.merges),
        (10, 0, 1)
    );
    assert!(stats.last_error.unwrap().contains("drop of 3"));
    assert_eq!(map.iter().count(), 10);
}
