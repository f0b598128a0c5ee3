//! The public types' variance and auto traits, pinned at compile time: each
//! test compiles only while a type is as permissive as it soundly can be,
//! by analogy with std's `BTreeMap` family (a map and its shared iterators
//! covariant in the value type; `Send`/`Sync` asking no more of the value
//! type than the type needs). The opposite facts, that the mutable
//! iterators and entries are invariant and that no type is `Send`/`Sync`
//! where that would be unsound, are `compile_fail` doctests in
//! `src/compile_fail.rs`. The auto-trait facts already checked in
//! `tests/art_model.rs` (`send_and_sync_follow_the_value_type`) and
//! `src/hybrid/mod.rs` (`the_map_is_send_and_sync`) are not repeated here.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::MutexGuard;

use memkv::art::{self, InsertError};
use memkv::frozen::{self, FrozenValue, automaton::Str};
use memkv::hybrid;
use memkv::memtable::{
    ArtCursor, ArtMemtable, BufferedCursor, EntryCursor, EntryRef, FrozenArtCursor,
    FrozenShardedArtCursor, FrozenVecCursor, Lookup, MAX_SEQNO, Memtable, MemtableRead,
    ShardedArtCursor, ShardedArtMemtable, SkipListCursor, SkipListMemtable, ValueKind, VecMemtable,
    WritePath,
};
use memkv::{FastArt, FrozenLayer, FrozenLayerBuilder, HybridMap};

fn assert_send<T: Send>() {}
fn assert_sync<T: Sync>() {}

/// `Sync` but not `Send`: a value type that tells "needs `V: Sync`" apart
/// from "needs `V: Send + Sync`".
type SyncOnly = MutexGuard<'static, u8>;

/// Neither `Send` nor `Sync`, stored in an integer column.
#[derive(Debug, PartialEq)]
struct RcInt(Rc<u64>);

impl FrozenValue for RcInt {
    const TYPE_NAME: &'static str = "RcInt";
    type Column = frozen::IntColumn;
    fn encode(&self) -> u64 {
        *self.0
    }
    fn decode(encoded: u64) -> Self {
        RcInt(Rc::new(encoded))
    }
}

/// Neither `Send` nor `Sync`, stored in a byte-string column.
struct RcBytes(Rc<[u8]>);

impl FrozenValue for RcBytes {
    const TYPE_NAME: &'static str = "RcBytes";
    type Column = frozen::BytesColumn;
    fn encode(&self) -> &[u8] {
        &self.0
    }
    fn decode(encoded: &[u8]) -> Self {
        RcBytes(encoded.into())
    }
}

/// `FastArt<V>` is covariant in `V`, like `BTreeMap`: a map of `&'static str` serves where a map of shorter-lived strings is asked for.
#[test]
fn the_map_is_covariant_in_its_values() {
    fn shorten<'a>(map: FastArt<&'static str>) -> FastArt<&'a str> {
        map
    }
    let local = String::from("local");
    let mut map = shorten(FastArt::from([("a", "static")]));
    map.insert("b", &local);
    assert_eq!(
        map.values().copied().collect::<Vec<_>>(),
        ["static", "local"]
    );
}

/// The shared iterators are covariant in both the borrow and `V`, as std's are: values borrowed for `'long` may be read as borrowed for any shorter `'short`.
#[test]
fn the_shared_iterators_are_covariant() {
    fn iter<'short, 'long: 'short>(
        it: art::Iter<'long, &'static str>,
    ) -> art::Iter<'short, &'short str> {
        it
    }
    fn range<'short, 'long: 'short>(
        it: art::Range<'long, &'static str>,
    ) -> art::Range<'short, &'short str> {
        it
    }
    fn keys<'short, 'long: 'short>(
        it: art::Keys<'long, &'static str>,
    ) -> art::Keys<'short, &'short str> {
        it
    }
    fn values<'short, 'long: 'short>(
        it: art::Values<'long, &'static str>,
    ) -> art::Values<'short, &'short str> {
        it
    }
    fn prefixes_of<'short, 'long: 'short>(
        it: art::PrefixesOf<'long, 'long, &'static str>,
    ) -> art::PrefixesOf<'short, 'short, &'short str> {
        it
    }
    fn search<'short, 'long: 'short>(
        it: art::Search<'long, &'static str, Str<'static>>,
    ) -> art::Search<'short, &'short str, Str<'static>> {
        it
    }
    let map = FastArt::from([("a", "x"), ("b", "y")]);
    assert_eq!(search(map.search(Str::new("b"))).count(), 1);
    assert_eq!(prefixes_of(map.prefixes_of("ab")).count(), 1);
    assert_eq!(iter(map.iter()).count(), 2);
    assert_eq!(range(map.range("b"..)).count(), 1);
    assert_eq!(keys(map.keys()).count(), 2);
    assert_eq!(values(map.values()).collect::<Vec<_>>(), [&"x", &"y"]);
}

/// The consuming iterators are covariant in `V`, as std's `IntoIter` is: they own their values and never take one in.
#[test]
fn the_consuming_iterators_are_covariant() {
    fn into_iter<'a>(it: art::IntoIter<&'static str>) -> art::IntoIter<&'a str> {
        it
    }
    fn into_keys<'a>(it: art::IntoKeys<&'static str>) -> art::IntoKeys<&'a str> {
        it
    }
    fn into_values<'a>(it: art::IntoValues<&'static str>) -> art::IntoValues<&'a str> {
        it
    }
    let map = FastArt::from([("a", "x"), ("b", "y")]);
    assert_eq!(into_iter(map.clone().into_iter()).count(), 2);
    assert_eq!(into_keys(map.clone().into_keys()).count(), 2);
    assert_eq!(
        into_values(map.into_values()).collect::<Vec<_>>(),
        ["x", "y"]
    );
}

/// The mutable iterators and entries are covariant in their borrow's lifetime (only `V` must be invariant), as std's are: a longer exclusive borrow serves as a shorter one.
#[test]
fn the_mutable_iterators_and_entries_shorten_their_borrow() {
    fn iter_mut<'short, 'long: 'short>(it: art::IterMut<'long, u8>) -> art::IterMut<'short, u8> {
        it
    }
    fn extract_if<'short, 'long: 'short, F>(
        it: art::ExtractIf<'long, u8, F>,
    ) -> art::ExtractIf<'short, u8, F> {
        it
    }
    let mut map = FastArt::from([("a", 1u8), ("b", 2)]);
    assert_eq!(
        extract_if(map.extract_if::<str, _, _>(.., |_, v| *v == 2)).count(),
        1
    );
    fn range_mut<'short, 'long: 'short>(it: art::RangeMut<'long, u8>) -> art::RangeMut<'short, u8> {
        it
    }
    fn values_mut<'short, 'long: 'short>(
        it: art::ValuesMut<'long, u8>,
    ) -> art::ValuesMut<'short, u8> {
        it
    }
    fn entry<'short, 'long: 'short>(
        entry: art::Entry<'long, &'static str, u8>,
    ) -> art::Entry<'short, &'short str, u8> {
        entry
    }
    let mut map = FastArt::from([("a", 1u8), ("b", 2)]);
    iter_mut(map.iter_mut()).for_each(|(_, v)| *v += 1);
    range_mut(map.range_mut("b"..)).for_each(|(_, v)| *v += 1);
    values_mut(map.values_mut()).for_each(|v| *v *= 10);
    *entry(map.entry("a")).or_insert(0) += 1;
    *entry(map.entry("c")).or_insert(0) += 1;
    assert_eq!(map.values().copied().collect::<Vec<_>>(), [21, 40, 1]);
}

/// Each kind of entry on its own is covariant in the borrow and in `K`, as std's are: the key is only moved in and out, never written through.
#[test]
fn the_entries_are_covariant_in_the_borrow_and_the_key() {
    fn occupied<'short, 'long: 'short>(
        entry: art::OccupiedEntry<'long, &'static str, u8>,
    ) -> art::OccupiedEntry<'short, &'short str, u8> {
        entry
    }
    fn vacant<'short, 'long: 'short>(
        entry: art::VacantEntry<'long, &'static str, u8>,
    ) -> art::VacantEntry<'short, &'short str, u8> {
        entry
    }
    let mut map = FastArt::from([("a", 1u8)]);
    let art::Entry::Occupied(entry) = map.entry("a") else {
        unreachable!()
    };
    *occupied(entry).into_mut() += 1;
    let art::Entry::Vacant(entry) = map.entry("b") else {
        unreachable!()
    };
    vacant(entry).insert(5);
    assert_eq!(map.values().copied().collect::<Vec<_>>(), [2, 5]);
}

/// `InsertError<V>` is covariant in `V` and `Send + Sync` when `V` is: it can be boxed as a `dyn Error + Send + Sync` and sent on, as std's error types can.
#[test]
fn an_insert_error_is_covariant_and_crosses_threads() {
    fn shorten<'a>(error: InsertError<&'static str>) -> InsertError<&'a str> {
        error
    }
    fn boxed(error: InsertError<String>) -> Box<dyn std::error::Error + Send + Sync> {
        Box::new(error)
    }
    // Compile-time facts: nothing here makes a map fail an insert.
    let _ = (shorten, boxed);
}

/// The map and its owning iterators need only `V: Send` to be `Send`, like `BTreeMap` (a `Cell` value may move with its map), and only `V: Sync` to be `Sync`.
#[test]
fn the_map_needs_no_more_than_send_or_sync_of_its_values() {
    assert_send::<FastArt<Cell<u8>>>();
    assert_send::<art::IntoIter<Cell<u8>>>();
    assert_send::<art::IntoKeys<Cell<u8>>>();
    assert_send::<art::IntoValues<Cell<u8>>>();
    assert_sync::<FastArt<SyncOnly>>();
    assert_sync::<art::IntoIter<SyncOnly>>();
}

/// The shared iterators are `&FastArt` plus a cursor: `Send + Sync` when `V: Sync`, whether or not `V: Send` (std's `Iter` asks the same).
#[test]
fn the_shared_iterators_need_only_sync_values() {
    fn both<T: Send + Sync>() {}
    both::<art::Iter<'static, SyncOnly>>();
    both::<art::Range<'static, SyncOnly>>();
    both::<art::Keys<'static, SyncOnly>>();
    both::<art::Values<'static, SyncOnly>>();
    both::<art::PrefixesOf<'static, 'static, SyncOnly>>();
}

/// The mutable iterators and entries are `Sync` when `V: Sync` (and `K: Sync`), whether or not `V: Send`: through `&` they give out at most `&V`.
#[test]
fn the_mutable_iterators_and_entries_are_sync_with_sync_values() {
    assert_sync::<art::IterMut<'static, SyncOnly>>();
    assert_sync::<art::RangeMut<'static, SyncOnly>>();
    assert_sync::<art::ValuesMut<'static, SyncOnly>>();
    assert_sync::<art::OccupiedEntry<'static, &str, SyncOnly>>();
    assert_sync::<art::VacantEntry<'static, &str, SyncOnly>>();
    assert_sync::<art::Entry<'static, &str, SyncOnly>>();
}

/// A vacant entry, and `Entry` as a whole, are `Send` when `K` and `V` are, as `OccupiedEntry` is (`tests/art_model.rs` checks that one): an entry may be finished on another thread.
#[test]
fn every_entry_is_send_with_send_keys_and_values() {
    assert_send::<art::VacantEntry<'static, &str, Cell<u8>>>();
    assert_send::<art::Entry<'static, &str, Cell<u8>>>();
    assert_send::<art::Entry<'static, Vec<u8>, Cell<u8>>>();
}

/// A frozen layer's iterators are covariant in their borrow of the layer: a layer borrowed for `'long` serves where `'short` is asked for.
#[test]
fn the_frozen_iterators_are_covariant_in_their_borrow() {
    fn iter<'short, 'long: 'short>(it: frozen::Iter<'long, u64>) -> frozen::Iter<'short, u64> {
        it
    }
    fn keys<'short, 'long: 'short>(it: frozen::Keys<'long, u64>) -> frozen::Keys<'short, u64> {
        it
    }
    fn values<'short, 'long: 'short>(
        it: frozen::Values<'long, u64>,
    ) -> frozen::Values<'short, u64> {
        it
    }
    fn search<'short, 'long: 'short>(
        it: frozen::Search<'long, u64, Str<'static>>,
    ) -> frozen::Search<'short, u64, Str<'static>> {
        it
    }
    fn prefixes_of<'short, 'long: 'short>(
        it: frozen::PrefixesOf<'long, 'long, u64>,
    ) -> frozen::PrefixesOf<'short, 'short, u64> {
        it
    }
    let layer = FrozenLayer::from_sorted_iter([("a", 1u64), ("ab", 2), ("b", 3)]).unwrap();
    assert_eq!(iter(layer.iter()).count(), 3);
    assert_eq!(keys(layer.keys()).count(), 3);
    assert_eq!(values(layer.values()).sum::<u64>(), 6);
    assert_eq!(search(layer.search(Str::new("ab"))).count(), 1);
    assert_eq!(prefixes_of(layer.prefixes_of("abc")).count(), 2);
}

/// A frozen layer holds no `V` (values are decoded on demand), so its iterators are `Send + Sync` for every value type, as the layer itself is (`src/hybrid/mod.rs` checks that): each thread decodes its own values.
#[test]
#[cfg_attr(target_os = "wasi", ignore = "needs threads")]
fn the_frozen_iterators_are_send_and_sync_for_any_value() {
    fn both<T: Send + Sync>() {}
    fn generic<'a, V: FrozenValue + 'a>() {
        both::<frozen::Iter<'a, V>>();
        both::<frozen::Keys<'a, V>>();
        both::<frozen::Values<'a, V>>();
        both::<frozen::Search<'a, V, Str<'a>>>();
        both::<frozen::PrefixesOf<'a, 'a, V>>();
    }
    generic::<RcInt>();
    let layer = FrozenLayer::from_sorted_iter([("a", RcInt(Rc::new(1))), ("b", RcInt(Rc::new(2)))])
        .unwrap();
    let mut values = layer.values();
    assert_eq!(values.next(), Some(RcInt(Rc::new(1))));
    let rest = std::thread::scope(|s| {
        s.spawn(move || values.map(|v| *v.0).sum::<u64>())
            .join()
            .unwrap()
    });
    assert_eq!(rest, 2);
}

/// The searches and set operations cross threads as the walks they run
/// on do. The set operations hold the values they yield last, decoded, so
/// they ask `V: Send` and `V: Sync` of the value type as a `Vec<V>` would.
#[test]
fn searches_and_set_operations_cross_threads() {
    fn both<T: Send + Sync>() {}
    both::<art::Search<'static, u8, Str<'static>>>();
    both::<art::ExtractIf<'static, u8, fn(&[u8], &mut u8) -> bool>>();
    both::<hybrid::Search<u64, Str<'static>>>();
    both::<hybrid::Search<Vec<u8>, Str<'static>>>();
    both::<frozen::OpBuilder<'static, RcInt>>();
    both::<frozen::Union<'static, u64>>();
    both::<frozen::Intersection<'static, Vec<u8>>>();
    both::<frozen::Difference<'static, u64>>();
    both::<frozen::SymmetricDifference<'static, String>>();
}

/// The set operations are unwind-safe, searches among their streams or not
/// (`add_search` asks it of the automaton, as it asks `Send` and `Sync`).
#[test]
fn set_operations_are_unwind_safe() {
    use std::panic::{RefUnwindSafe, UnwindSafe};
    fn unwind_safe<T: UnwindSafe + RefUnwindSafe>(_: &T) {}
    let layer = FrozenLayer::from_sorted_iter([("ab", 1u64), ("b", 2)]).unwrap();
    let builder = frozen::OpBuilder::new()
        .add(&layer)
        .add_search(layer.search(Str::new("ab")));
    unwind_safe(&builder);
    unwind_safe(&builder.clone().union());
    unwind_safe(&builder.clone().intersection());
    unwind_safe(&builder.clone().difference());
    let mut both = builder.symmetric_difference();
    unwind_safe(&both);
    assert_eq!(
        both.next(),
        Some((
            b"b".to_vec(),
            vec![frozen::IndexedValue { index: 0, value: 2 }]
        ))
    );
}

/// A builder holds values encoded, never a `V`, so it is `Send + Sync` (with a `Send + Sync` writer) whatever `V` is, for both columns.
#[test]
fn the_frozen_builder_is_send_and_sync_for_any_value() {
    fn both<T: Send + Sync>() {}
    both::<FrozenLayerBuilder<RcInt>>();
    both::<FrozenLayerBuilder<RcInt, std::fs::File>>();
    both::<FrozenLayerBuilder<RcBytes>>();
    both::<FrozenLayerBuilder<RcBytes, std::fs::File>>();
}

/// A hybrid map's snapshot iterators cross threads, as its `Iter` does (`src/hybrid/mod.rs` checks that one).
#[test]
fn the_hybrid_iterators_are_send_and_sync() {
    fn both<T: Send + Sync>() {}
    both::<hybrid::Keys<u64>>();
    both::<hybrid::Values<u64>>();
    both::<hybrid::PrefixesOf<'static, u64>>();
    both::<hybrid::Keys<Vec<u8>>>();
    both::<hybrid::Values<Vec<u8>>>();
    both::<hybrid::PrefixesOf<'static, Vec<u8>>>();
}

/// `prefixes_of` on a hybrid map returns owned values and slices of the key asked about: covariant in that key's lifetime (and in `V`), so it lives no longer than the key needs.
#[test]
fn the_hybrid_prefix_iterator_is_covariant() {
    fn shorten<'short, 'long: 'short>(
        it: hybrid::PrefixesOf<'long, u64>,
    ) -> hybrid::PrefixesOf<'short, u64> {
        it
    }
    fn values<'a>(it: hybrid::PrefixesOf<'a, &'static str>) -> hybrid::PrefixesOf<'a, &'a str> {
        it
    }
    let map: HybridMap<u64> = [("a", 1), ("ab", 2), ("b", 3)].into_iter().collect();
    assert_eq!(shorten(map.prefixes_of("abc")).count(), 2);
    let _ = values;
}

/// A hybrid map's entries are `Sync` and covariant in their borrow and key; they hold the map's write lock, so they are not `Send` (a `compile_fail` doctest pins that).
#[test]
fn the_hybrid_entries_are_sync_and_covariant_in_the_borrow() {
    assert_sync::<hybrid::Entry<'static, &str, u64>>();
    assert_sync::<hybrid::OccupiedEntry<'static, &str, u64>>();
    assert_sync::<hybrid::VacantEntry<'static, &str, u64>>();
    fn entry<'short, 'long: 'short>(
        entry: hybrid::Entry<'long, &'static str, u64>,
    ) -> hybrid::Entry<'short, &'short str, u64> {
        entry
    }
    fn occupied<'short, 'long: 'short>(
        entry: hybrid::OccupiedEntry<'long, &'static str, u64>,
    ) -> hybrid::OccupiedEntry<'short, &'short str, u64> {
        entry
    }
    fn vacant<'short, 'long: 'short>(
        entry: hybrid::VacantEntry<'long, &'static str, u64>,
    ) -> hybrid::VacantEntry<'short, &'short str, u64> {
        entry
    }
    let map: HybridMap<u64> = HybridMap::new();
    assert_eq!(entry(map.entry("a")).or_insert(1), 1);
    let hybrid::Entry::Occupied(found) = map.entry("a") else {
        unreachable!()
    };
    assert_eq!(occupied(found).get(), &1);
    let hybrid::Entry::Vacant(absent) = map.entry("b") else {
        unreachable!()
    };
    vacant(absent).insert(2);
    assert_eq!(map.len(), 2);
}

/// The memtable cursors, and the entries they lend, are covariant in their borrow, so a flush can hold them for any shorter scope.
#[test]
fn the_memtable_cursors_are_covariant_in_their_borrow() {
    fn art<'short, 'long: 'short>(c: ArtCursor<'long>) -> ArtCursor<'short> {
        c
    }
    fn frozen_art<'short, 'long: 'short>(c: FrozenArtCursor<'long>) -> FrozenArtCursor<'short> {
        c
    }
    fn sharded<'short, 'long: 'short>(c: ShardedArtCursor<'long>) -> ShardedArtCursor<'short> {
        c
    }
    fn frozen_sharded<'short, 'long: 'short>(
        c: FrozenShardedArtCursor<'long>,
    ) -> FrozenShardedArtCursor<'short> {
        c
    }
    fn skip_list<'short, 'long: 'short>(c: SkipListCursor<'long>) -> SkipListCursor<'short> {
        c
    }
    fn frozen_vec<'short, 'long: 'short>(c: FrozenVecCursor<'long>) -> FrozenVecCursor<'short> {
        c
    }
    fn entry<'short, 'long: 'short>(e: EntryRef<'long>) -> EntryRef<'short> {
        e
    }
    fn lookup<'a>(l: Lookup<&'static [u8]>) -> Lookup<&'a [u8]> {
        l
    }
    fn filled<M: Memtable>() -> M {
        let mem = M::default();
        mem.insert(b"a", 1, ValueKind::Value, b"v");
        mem.insert(b"b", 2, ValueKind::Value, b"v");
        mem
    }
    let art_mem: ArtMemtable = filled();
    let sharded_mem: ShardedArtMemtable = filled();
    let skip_mem: SkipListMemtable = filled();
    let vec_mem: VecMemtable = filled();

    assert_eq!(art(art_mem.iter(MAX_SEQNO)).collect_entries().len(), 2);
    assert_eq!(
        skip_list(skip_mem.iter(MAX_SEQNO)).collect_entries().len(),
        2
    );
    let frozen = art_mem.freeze();
    let mut cursor = frozen_art(frozen.iter(MAX_SEQNO));
    assert_eq!(
        cursor.next_entry().map(entry).map(|e| e.user_key),
        Some(&b"a"[..])
    );
    assert_eq!(
        sharded(sharded_mem.iter(MAX_SEQNO)).collect_entries().len(),
        2
    );
    let frozen = sharded_mem.freeze();
    assert_eq!(
        frozen_sharded(frozen.iter(MAX_SEQNO))
            .collect_entries()
            .len(),
        2
    );
    let frozen = vec_mem.freeze();
    assert_eq!(
        frozen_vec(frozen.iter(MAX_SEQNO)).collect_entries().len(),
        2
    );
    assert_eq!(lookup(Lookup::Found(b"v")), Lookup::Found(&b"v"[..]));
}

/// The memtable cursors and a write path cross threads: a flush may run on another thread than the one that froze the memtable, and writers share a write path.
#[test]
fn the_memtable_cursors_and_write_path_are_send_and_sync() {
    fn both<T: Send + Sync>() {}
    both::<ArtCursor<'static>>();
    both::<FrozenArtCursor<'static>>();
    both::<ShardedArtCursor<'static>>();
    both::<FrozenShardedArtCursor<'static>>();
    both::<SkipListCursor<'static>>();
    both::<FrozenVecCursor<'static>>();
    both::<BufferedCursor>();
    both::<WritePath<ArtMemtable>>();
    both::<WritePath<ShardedArtMemtable>>();
    both::<WritePath<SkipListMemtable>>();
    both::<WritePath<VecMemtable>>();
}

/// The borrowing iterators are `Clone` for any value type, as std's are: a
/// clone copies a position, not a value.
#[test]
fn the_borrowing_iterators_clone_without_cloneable_values() {
    struct NoClone;
    fn clone<T: Clone>() {}
    clone::<memkv::art::Iter<'static, NoClone>>();
    clone::<memkv::art::Range<'static, NoClone>>();
    clone::<memkv::art::Keys<'static, NoClone>>();
    clone::<memkv::art::Values<'static, NoClone>>();
    clone::<memkv::art::PrefixesOf<'static, 'static, NoClone>>();
    // The frozen layer's hold no value at all.
    clone::<memkv::frozen::Iter<'static, Vec<u8>>>();
    clone::<memkv::frozen::Keys<'static, String>>();
    clone::<memkv::frozen::Values<'static, u64>>();
    clone::<memkv::frozen::PrefixesOf<'static, 'static, u64>>();
    let map: memkv::FastArt<NoClone> = [("a", NoClone), ("b", NoClone)].into_iter().collect();
    let mut first = map.keys();
    first.next();
    assert_eq!(first.clone().collect::<Vec<_>>(), [b"b".to_vec()]);
    assert_eq!(first.count(), 1);
}

/// A builder of any value type moves between threads, as a layer does.
#[test]
fn a_frozen_builder_of_any_value_type_is_send_and_sync() {
    fn both<T: Send + Sync>() {}
    fn generic<V: memkv::FrozenValue>() {
        both::<memkv::FrozenLayerBuilder<V>>();
    }
    generic::<u64>();
    generic::<Vec<u8>>();
}
