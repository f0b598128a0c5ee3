//! A value whose `Drop` panics, dropped while a write replaces or removes
//! it: the write is done, and `len` agrees with the entries, whichever
//! layer the dropped value came from.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};

use memkv::frozen::{FrozenValue, IntColumn};
use memkv::hybrid::Entry;
use memkv::{HybridConfig, HybridMap};

thread_local! {
    /// The value whose next drop on this thread panics.
    static PANIC_ON: Cell<Option<u64>> = const { Cell::new(None) };
}

#[derive(Clone, Debug, PartialEq)]
struct Val(u64);

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
