//! A value whose `Drop` panics, dropped while a write replaces or removes
//! it: the write is done, and `len` agrees with the entries, whichever
//! layer the dropped value came from. And user code that panics in the
//! middle of a read-modify-write (a closure, a predicate, `V::clone`): the
//! map keeps what it had, or what was written before the panic, and the
//! write lock is free again.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};

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
