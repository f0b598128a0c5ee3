//! Every value a FastArt holds is dropped exactly once: on overwrite, remove,
//! clear, compaction, an early-dropped owned iterator, and when the map is
//! dropped; a panicking `Drop` or `or_insert_with` leaks nothing (the CI runs
//! these tests under valgrind, which reports any leak).

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use memkv::FastArt;

/// Counts live values; a value whose `id` equals `panic_on` panics when
/// dropped, and one whose `id` equals `clone_panics_on` when cloned.
#[derive(Default)]
struct Ledger {
    created: Cell<usize>,
    dropped: Cell<usize>,
    panic_on: Cell<Option<usize>>,
    clone_panics_on: Cell<Option<usize>>,
}

impl Ledger {
    fn live(&self) -> usize {
        self.created.get() - self.dropped.get()
    }
}

/// A value that reports its drop to the ledger. Holds a heap allocation so
/// that a leaked value is also a leaked block for valgrind.
struct Tracked {
    id: usize,
    ledger: Rc<Ledger>,
    _heap: Box<[u8]>,
}

fn tracked(ledger: &Rc<Ledger>, id: usize) -> Tracked {
    ledger.created.set(ledger.created.get() + 1);
    Tracked {
        id,
        ledger: ledger.clone(),
        _heap: vec![id as u8; 24].into_boxed_slice(),
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.ledger.dropped.set(self.ledger.dropped.get() + 1);
        if self.ledger.panic_on.get() == Some(self.id) {
            panic!("value {} panics in drop", self.id);
        }
    }
}

impl Clone for Tracked {
    fn clone(&self) -> Self {
        if self.ledger.clone_panics_on.get() == Some(self.id) {
            panic!("value {} panics in clone", self.id);
        }
        tracked(&self.ledger, self.id)
    }
}

fn key(i: usize) -> Vec<u8> {
    // Shared prefixes, prefix relations and a 0x00 byte.
    format!("k/{}/{}", i % 7, i)
        .into_bytes()
        .into_iter()
        .chain(i.is_multiple_of(3).then_some(0))
        .collect()
}

#[test]
fn each_value_is_dropped_once() {
    let ledger = Rc::new(Ledger::default());
    let mut map = FastArt::new();
    for i in 0..2000 {
        assert!(map.insert(key(i), tracked(&ledger, i)).is_none());
    }
    // Overwrites hand the old value back, to be dropped by the caller.
    for i in (0..2000).step_by(3) {
        let old = map.insert(key(i), tracked(&ledger, i)).expect("present");
        assert_eq!(old.id, i);
    }
    assert_eq!(ledger.live(), 2000);
    for i in (0..2000).step_by(5) {
        assert_eq!(map.remove(key(i)).map(|v| v.id), Some(i));
    }
    assert_eq!(ledger.live(), map.len());
    map.compact();
    assert_eq!(
        ledger.live(),
        map.len(),
        "compaction moves values without dropping or copying them"
    );
    let copy = map.clone();
    assert_eq!(ledger.live(), 2 * map.len());
    drop(copy);
    map.clear();
    assert_eq!(ledger.live(), 0);
    for i in 0..100 {
        map.insert(key(i), tracked(&ledger, i));
    }
    drop(map);
    assert_eq!(ledger.live(), 0);
}

/// A `clone` of the map whose value's `clone` panics part-way drops the
/// values it had cloned, once each, and leaves the original whole (as the
/// standard collections' crash tests ask).
#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn a_panicking_value_clone_drops_what_was_cloned() {
    let ledger = Rc::new(Ledger::default());
    let map: FastArt<_> = (0..500).map(|i| (key(i), tracked(&ledger, i))).collect();
    // The 250th value in key order, so that half the copy is made.
    let middle = map.values().nth(250).expect("500 values").id;
    ledger.clone_panics_on.set(Some(middle));
    let copied = catch_unwind(AssertUnwindSafe(|| map.clone()));
    assert!(copied.is_err());
    assert_eq!(ledger.live(), 500, "the partial copy's values are dropped");
    map.check_invariants().unwrap();
    ledger.clone_panics_on.set(None);
    let copy = map.clone();
    assert_eq!(copy.len(), 500);
    assert_eq!(ledger.live(), 1000);
    drop((map, copy));
    assert_eq!(ledger.live(), 0);
}

#[test]
fn owned_iterator_dropped_early_drops_the_rest() {
    let ledger = Rc::new(Ledger::default());
    let map: FastArt<_> = (0..500).map(|i| (key(i), tracked(&ledger, i))).collect();
    let mut it = map.into_iter();
    let taken: Vec<_> = it.by_ref().take(100).collect();
    let from_back = it.next_back().expect("entries left");
    assert_eq!(ledger.live(), 500);
    drop(it);
    assert_eq!(ledger.live(), 101);
    drop((taken, from_back));
    assert_eq!(ledger.live(), 0);
}

#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn panicking_drop_leaks_nothing_and_drops_the_others() {
    for how in ["drop", "clear", "into_iter"] {
        let ledger = Rc::new(Ledger::default());
        let mut map: FastArt<_> = (0..300).map(|i| (key(i), tracked(&ledger, i))).collect();
        ledger.panic_on.set(Some(123));
        let result = catch_unwind(AssertUnwindSafe(|| match how {
            "drop" => drop(map),
            "clear" => map.clear(),
            _ => drop(map.into_iter()),
        }));
        let payload = result.expect_err("the panic propagates");
        assert_eq!(
            payload.downcast_ref::<String>().map(String::as_str),
            Some("value 123 panics in drop"),
            "{how}: the value's own panic"
        );
        assert_eq!(
            ledger.dropped.get(),
            300,
            "{how}: every value was dropped once despite the panic"
        );
    }
}

/// `extend` on a map past the size where it takes entries 16 at a time: a
/// panic in the iterator or in a replaced value's `Drop` drops the entries
/// taken but not yet inserted, once each, and keeps those inserted before.
#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn panicking_extend_of_a_large_map_leaks_nothing() {
    for how in ["iterator", "replaced value"] {
        let ledger = Rc::new(Ledger::default());
        // Padding makes 1,100 values more than the size where batching starts.
        let mut map: FastArt<(Tracked, [u8; 16 << 10])> = (0..1100)
            .map(|i| (key(i), (tracked(&ledger, i), [0; 16 << 10])))
            .collect();
        assert!(map.memory_usage() > 16 << 20, "past the batching size");
        ledger.panic_on.set(Some(5));
        let ledger_in = ledger.clone();
        // The second batch holds 2020, which replaces key(5)'s value, and
        // the iterator panics at 2021.
        let entries = (2000..2040).map(move |i| {
            assert!(how != "iterator" || i != 2021, "the iterator panics");
            let k = if i == 2020 { key(5) } else { key(i) };
            (k, (tracked(&ledger_in, i), [0; 16 << 10]))
        });
        let result = catch_unwind(AssertUnwindSafe(|| map.extend(entries)));
        assert!(result.is_err(), "{how}: the panic propagates");
        map.check_invariants().unwrap();
        assert!(
            (0..1100)
                .chain(2000..2016)
                .all(|i| map.contains_key(key(i))),
            "{how}: the entries inserted before stay"
        );
        ledger.panic_on.set(None);
        drop(map);
        assert_eq!(ledger.live(), 0, "{how}: every value dropped once");
    }
}

/// Whichever value's drop panics (the first the teardown reaches, one in
/// the middle, or the last, after which no walk is left to finish), the map
/// is left empty, with its books reset.
#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn map_is_empty_and_usable_after_a_panicking_clear() {
    for panics in 0..50 {
        let ledger = Rc::new(Ledger::default());
        let mut map: FastArt<_> = (0..50).map(|i| (key(i), tracked(&ledger, i))).collect();
        ledger.panic_on.set(Some(panics));
        assert!(catch_unwind(AssertUnwindSafe(|| map.clear())).is_err());
        assert!(map.is_empty(), "value {panics} panicked");
        assert_eq!((map.len(), map.iter().len()), (0, 0));
        map.check_invariants().unwrap();
        assert_eq!(ledger.live(), 0);
        ledger.panic_on.set(None);
        map.insert("again", tracked(&ledger, 1));
        assert_eq!(map.len(), 1);
        drop(map);
        assert_eq!(ledger.live(), 0);
    }
}

/// `retain` runs user code twice over: the predicate, and the drops of the
/// values it removes. A panic in either leaves a valid map, every value
/// dropped once.
#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn panicking_retain_leaks_nothing() {
    let ledger = Rc::new(Ledger::default());
    let mut map: FastArt<_> = (0..300).map(|i| (key(i), tracked(&ledger, i))).collect();
    // The predicate panics part-way: nothing is removed yet.
    let result = catch_unwind(AssertUnwindSafe(|| {
        map.retain(|_, value| {
            assert!(value.id != 150, "keep panics");
            value.id % 2 == 0
        })
    }));
    assert!(result.is_err());
    map.check_invariants().unwrap();
    assert_eq!((map.len(), ledger.live()), (300, 300));
    // A removed value's drop panics: the map stays valid and usable.
    ledger.panic_on.set(Some(151));
    let result = catch_unwind(AssertUnwindSafe(|| {
        map.retain(|_, value| value.id % 2 == 0)
    }));
    assert!(result.is_err());
    map.check_invariants().unwrap();
    assert_eq!(ledger.live(), map.len());
    assert!((150..300).contains(&map.len()) && !map.values().any(|value| value.id == 151));
    ledger.panic_on.set(None);
    map.retain(|_, value| value.id % 2 == 0);
    assert_eq!(map.len(), 150);
    drop(map);
    assert_eq!(ledger.live(), 0);
    assert_eq!(ledger.dropped.get(), 300);
}

/// `extract_if` hands removed values out one at a time: a predicate that
/// panics part-way leaves those taken before it out and the rest in, each
/// value dropped once; an iterator dropped early leaves the rest in.
#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn panicking_extract_if_leaks_nothing() {
    let ledger = Rc::new(Ledger::default());
    let mut map: FastArt<_> = (0..300).map(|i| (key(i), tracked(&ledger, i))).collect();
    let mut taken = Vec::new();
    let result = catch_unwind(AssertUnwindSafe(|| {
        let evens = map.extract_if::<[u8], _, _>(.., |_, value| {
            assert!(value.id != 150, "extract_if's predicate panics");
            value.id % 2 == 0
        });
        for entry in evens {
            taken.push(entry);
        }
    }));
    assert!(result.is_err());
    map.check_invariants().unwrap();
    // The even ids before 150 in key order are out, in that order; the rest in.
    let mut in_order: Vec<usize> = (0..300).collect();
    in_order.sort_by_key(|&i| key(i));
    let before: Vec<usize> = in_order.iter().copied().take_while(|&i| i != 150).collect();
    let evens: Vec<usize> = before.iter().copied().filter(|i| i % 2 == 0).collect();
    assert_eq!(
        taken.iter().map(|(_, value)| value.id).collect::<Vec<_>>(),
        evens
    );
    let out = evens.len();
    assert!(out > 0 && (map.len(), ledger.live()) == (300 - out, 300));
    drop(taken);
    assert_eq!(ledger.live(), 300 - out);
    // Dropped after one: the rest stays.
    let first = map.extract_if::<[u8], _, _>(.., |_, _| true).next();
    let left_first = in_order.iter().copied().find(|i| !evens.contains(i));
    assert_eq!(first.map(|(_, value)| value.id), left_first);
    assert_eq!((map.len(), ledger.live()), (299 - out, 299 - out));
    map.check_invariants().unwrap();
    drop(map);
    assert_eq!(ledger.live(), 0);
    assert_eq!(ledger.dropped.get(), 300);
}

/// After its predicate panics, `extract_if` yields nothing more and asks
/// the predicate nothing more, as std's does: the entries it saw are not
/// seen twice.
#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn extract_if_ends_at_a_panic() {
    let mut map: FastArt<u32> = (0..10u32).map(|i| (format!("k{i}"), i)).collect();
    let mut asked = 0;
    let mut evens = map.extract_if::<[u8], _, _>(.., |_, value| {
        asked += 1;
        assert!(asked != 3, "extract_if's predicate panics");
        *value % 2 == 0
    });
    let mut taken = Vec::new();
    for _ in 0..5 {
        if let Ok(Some((_, value))) = catch_unwind(AssertUnwindSafe(|| evens.next())) {
            taken.push(value);
        }
    }
    drop(evens);
    assert_eq!(taken, [0]);
    assert_eq!(asked, 3);
    assert_eq!(map.len(), 9);
}

#[test]
#[cfg_attr(panic = "abort", ignore = "catches a panic")]
fn panicking_or_insert_with_leaves_the_map_unchanged() {
    let ledger = Rc::new(Ledger::default());
    let mut map: FastArt<_> = (0..50).map(|i| (key(i), tracked(&ledger, i))).collect();
    let result = catch_unwind(AssertUnwindSafe(|| {
        map.entry(b"new".to_vec())
            .or_insert_with(|| panic!("no value today"));
    }));
    assert!(result.is_err());
    assert_eq!(map.len(), 50);
    assert!(!map.contains_key("new"));
    map.check_invariants().unwrap();
    map.entry(b"new".to_vec())
        .or_insert_with(|| tracked(&ledger, 99));
    assert_eq!(map.get("new").map(|v| v.id), Some(99));
    drop(map);
    assert_eq!(ledger.live(), 0);
}

/// Values the leaves cannot hold inline (over-aligned, or large) are boxed;
/// zero-sized values take no space. All are dropped once.
#[test]
fn boxed_and_zero_sized_values() {
    #[repr(align(16))]
    struct Aligned(Tracked);
    struct Large(Tracked, [u64; 100]);

    let ledger = Rc::new(Ledger::default());
    let mut aligned = FastArt::new();
    let mut large = FastArt::new();
    for i in 0..300 {
        aligned.insert(key(i), Aligned(tracked(&ledger, i)));
        large.insert(key(i), Large(tracked(&ledger, i), [i as u64; 100]));
    }
    for i in (0..300).step_by(2) {
        let a = aligned.get(key(i)).expect("present");
        assert_eq!((a as *const Aligned as usize) % 16, 0, "alignment is kept");
        assert_eq!(a.0.id, i);
        assert_eq!(
            large.get(key(i)).map(|l| (l.0.id, l.1[99])),
            Some((i, i as u64))
        );
        assert!(aligned.remove(key(i)).is_some());
    }
    aligned.compact();
    large.compact();
    assert_eq!(ledger.live(), 150 + 300);
    drop(aligned.into_iter().take(10).collect::<Vec<_>>());
    drop(large);
    assert_eq!(ledger.live(), 0);

    let mut set: FastArt<()> = (0..1000).map(|i| (key(i), ())).collect();
    assert_eq!(set.len(), 1000);
    assert_eq!(set.remove(key(10)), Some(()));
    set.check_invariants().unwrap();
}

/// Maps still holding out-of-line key parts (prefixes and suffixes over 254
/// bytes) are torn down without leaks, by every route. Valgrind is what
/// checks this one; the test makes sure the routes are taken.
#[test]
fn long_key_parts_are_freed_on_every_route() {
    let long = |i: usize, shared: usize| -> Vec<u8> {
        let mut k = vec![b'L'; shared];
        k.extend(format!("/{i}/").bytes());
        k.extend(std::iter::repeat_n(b'x', 300 + i));
        k
    };
    let build = || -> FastArt<String> {
        (0..40)
            .map(|i| (long(i, 500 * (i % 2)), i.to_string()))
            .collect()
    };
    let map = build();
    assert!(
        map.stats().out_of_line_bytes > 40 * 300,
        "the test must hold out-of-line parts"
    );
    drop(map);
    let mut map = build();
    map.clear();
    let mut map = build();
    map.compact();
    drop(map.into_iter().take(5).collect::<Vec<_>>());
}
