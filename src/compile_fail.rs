//! What must not compile: the public types' variance and auto traits, seen
//! from the side where a more permissive type would be unsound. Each
//! `compile_fail` block below stands for a program that, if it compiled,
//! could cause undefined behaviour (a value sent to or shared with a thread
//! it must not reach, a short-lived reference written into a map of
//! longer-lived ones, a borrow outliving what it borrows); a change that
//! lets one compile fails the doc-test run. `tests/variance.rs` pins the
//! other side: that the types are no stricter than that.
//!
//! A `compile_fail` doctest passes on *any* compile error, a typo included.
//! So each block is followed by its control: the same code with the one
//! offending part changed, which must compile. And each names the error it
//! expects, which rustdoc checks is among the errors only on a nightly
//! toolchain (stable ignores the code): after changing this file, run
//! `cargo +nightly test --doc compile_fail` as well.
//!
//! Invariance is tested with higher-ranked function pointers:
//! `for<'x> fn(&'x u8)` is a subtype of `fn(&'static u8)`, so a type
//! covariant in `V` coerces from the first as `V` to the second, and an
//! invariant one fails with `E0308`. (A coercion between lifetimes, as from
//! `&'static str` to `&'b str`, fails with "lifetime may not live long
//! enough", which has no code for rustdoc to check; the one such block,
//! for `IterMut`, is there to show the unsound coercion as it would be
//! written.)
//!
//! Declared only under `cfg(doctest)`: this module has no code.
//!
//! # `FastArt` and its iterators: `Send` and `Sync`
//!
//! A map moves its values with it, so it is `Send` only if they are: an
//! `Rc` moved to another thread could be cloned there while its other
//! handles are cloned here.
//!
//! ```compile_fail,E0277
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::FastArt<std::rc::Rc<u8>>>();
//! ```
//!
//! ```
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::FastArt<std::sync::Arc<u8>>>();
//! ```
//!
//! A shared map lends `&V` to every thread, so it is `Sync` only if `V` is:
//! two threads could `set` the same `Cell`.
//!
//! ```compile_fail,E0277
//! fn assert_sync<T: Sync>() {}
//! assert_sync::<memkv::FastArt<std::cell::Cell<u8>>>();
//! ```
//!
//! ```
//! fn assert_sync<T: Sync>() {}
//! assert_sync::<memkv::FastArt<std::sync::atomic::AtomicU8>>();
//! ```
//!
//! The shared iterators are a `&FastArt` in disguise: sent to another
//! thread, they hand out `&V` there while this thread still holds the map.
//! So each is `Send` only if `V: Sync`.
//!
//! ```compile_fail,E0277
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::Iter<'static, std::cell::Cell<u8>>>();
//! ```
//!
//! ```
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::Iter<'static, std::sync::atomic::AtomicU8>>();
//! ```
//!
//! ```compile_fail,E0277
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::Range<'static, std::cell::Cell<u8>>>();
//! ```
//!
//! ```
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::Range<'static, std::sync::atomic::AtomicU8>>();
//! ```
//!
//! ```compile_fail,E0277
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::Values<'static, std::cell::Cell<u8>>>();
//! ```
//!
//! ```
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::Values<'static, std::sync::atomic::AtomicU8>>();
//! ```
//!
//! ```compile_fail,E0277
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::PrefixesOf<'static, 'static, std::cell::Cell<u8>>>();
//! ```
//!
//! ```
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::PrefixesOf<'static, 'static, std::sync::atomic::AtomicU8>>();
//! ```
//!
//! The mutable iterators hand out `&mut V` on whichever thread holds them,
//! and the consuming one hands out `V`: `Send` only if `V: Send`.
//! (`RangeMut`'s `Send` is written by hand, `IterMut` and `ValuesMut` wrap
//! it: these pin that impl's bound.)
//!
//! ```compile_fail,E0277
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::RangeMut<'static, std::rc::Rc<u8>>>();
//! ```
//!
//! ```
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::RangeMut<'static, std::cell::Cell<u8>>>();
//! ```
//!
//! ```compile_fail,E0277
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::IterMut<'static, std::rc::Rc<u8>>>();
//! ```
//!
//! ```
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::IterMut<'static, std::cell::Cell<u8>>>();
//! ```
//!
//! ```compile_fail,E0277
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::ValuesMut<'static, std::rc::Rc<u8>>>();
//! ```
//!
//! ```
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::ValuesMut<'static, std::cell::Cell<u8>>>();
//! ```
//!
//! ```compile_fail,E0277
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::IntoIter<std::rc::Rc<u8>>>();
//! ```
//!
//! ```
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::IntoIter<std::cell::Cell<u8>>>();
//! ```
//!
//! # `OccupiedEntry`: the hand-written `Send` and `Sync`
//!
//! An occupied entry holds a raw pointer to its value, so both its `Send`
//! and its `Sync` are written by hand, and each must ask for its key type
//! as well as its value type. `Send`: the entry carries `V` (through
//! `into_mut`, `remove`) and `K` (through `remove_entry`) to the thread it
//! is sent to.
//!
//! ```compile_fail,E0277
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::OccupiedEntry<'static, &str, std::rc::Rc<u8>>>();
//! ```
//!
//! ```
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::OccupiedEntry<'static, &str, std::cell::Cell<u8>>>();
//! ```
//!
//! ```compile_fail,E0277
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::OccupiedEntry<'static, std::rc::Rc<[u8]>, u8>>();
//! ```
//!
//! ```
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::art::OccupiedEntry<'static, std::sync::Arc<[u8]>, u8>>();
//! ```
//!
//! `Sync`: a shared entry lends `&V` (`get`) and `&K` (`key`) to every
//! thread.
//!
//! ```compile_fail,E0277
//! fn assert_sync<T: Sync>() {}
//! assert_sync::<memkv::art::OccupiedEntry<'static, &str, std::cell::Cell<u8>>>();
//! ```
//!
//! ```
//! fn assert_sync<T: Sync>() {}
//! assert_sync::<memkv::art::OccupiedEntry<'static, &str, std::sync::atomic::AtomicU8>>();
//! ```
//!
//! ```compile_fail,E0277
//! fn assert_sync<T: Sync>() {}
//! assert_sync::<memkv::art::OccupiedEntry<'static, std::rc::Rc<[u8]>, u8>>();
//! ```
//!
//! ```
//! fn assert_sync<T: Sync>() {}
//! assert_sync::<memkv::art::OccupiedEntry<'static, std::sync::Arc<[u8]>, u8>>();
//! ```
//!
//! # `FastArt`: the mutable views are invariant in `V`
//!
//! Whatever writes a `V` into the map must see the map's own `V`. Were
//! `IterMut` covariant, an `IterMut<'a, &'static str>` could become an
//! `IterMut<'a, &'b str>` and store a `&'b str` in a `FastArt<&'static
//! str>`, to be read after it dangles:
//!
//! ```compile_fail
//! use memkv::art::IterMut;
//!
//! fn shorten<'a, 'b>(it: IterMut<'a, &'static str>) -> IterMut<'a, &'b str> {
//!     it
//! }
//! ```
//!
//! The shared iterator reads only, so the same function is fine with it:
//!
//! ```
//! use memkv::art::Iter;
//!
//! fn shorten<'a, 'b>(it: Iter<'a, &'static str>) -> Iter<'a, &'b str> {
//!     it
//! }
//! ```
//!
//! The same for each mutable view, checked with function pointers (see
//! above) so that the error has a code: first the mutable iterators, each
//! with its shared sibling as the control.
//!
//! ```compile_fail,E0308
//! type Any = for<'x> fn(&'x u8);
//! type Static = fn(&'static u8);
//! fn coerce<'a>(it: memkv::art::IterMut<'a, Any>) -> memkv::art::IterMut<'a, Static> {
//!     it
//! }
//! ```
//!
//! ```
//! type Any = for<'x> fn(&'x u8);
//! type Static = fn(&'static u8);
//! fn coerce<'a>(it: memkv::art::Iter<'a, Any>) -> memkv::art::Iter<'a, Static> {
//!     it
//! }
//! ```
//!
//! ```compile_fail,E0308
//! type Any = for<'x> fn(&'x u8);
//! type Static = fn(&'static u8);
//! fn coerce<'a>(it: memkv::art::RangeMut<'a, Any>) -> memkv::art::RangeMut<'a, Static> {
//!     it
//! }
//! ```
//!
//! ```
//! type Any = for<'x> fn(&'x u8);
//! type Static = fn(&'static u8);
//! fn coerce<'a>(it: memkv::art::Range<'a, Any>) -> memkv::art::Range<'a, Static> {
//!     it
//! }
//! ```
//!
//! ```compile_fail,E0308
//! type Any = for<'x> fn(&'x u8);
//! type Static = fn(&'static u8);
//! fn coerce<'a>(it: memkv::art::ValuesMut<'a, Any>) -> memkv::art::ValuesMut<'a, Static> {
//!     it
//! }
//! ```
//!
//! ```
//! type Any = for<'x> fn(&'x u8);
//! type Static = fn(&'static u8);
//! fn coerce<'a>(it: memkv::art::Values<'a, Any>) -> memkv::art::Values<'a, Static> {
//!     it
//! }
//! ```
//!
//! Then the entries (`insert`, `get_mut`, `or_insert` write or lend `&mut
//! V`). They have no shared sibling: the control is the same function with
//! `V` left as it is.
//!
//! ```compile_fail,E0308
//! use memkv::art::OccupiedEntry;
//! type Any = for<'x> fn(&'x u8);
//! type Static = fn(&'static u8);
//! fn coerce<'a>(e: OccupiedEntry<'a, &'a str, Any>) -> OccupiedEntry<'a, &'a str, Static> {
//!     e
//! }
//! ```
//!
//! ```
//! use memkv::art::OccupiedEntry;
//! type Any = for<'x> fn(&'x u8);
//! fn coerce<'a>(e: OccupiedEntry<'a, &'a str, Any>) -> OccupiedEntry<'a, &'a str, Any> {
//!     e
//! }
//! ```
//!
//! ```compile_fail,E0308
//! use memkv::art::VacantEntry;
//! type Any = for<'x> fn(&'x u8);
//! type Static = fn(&'static u8);
//! fn coerce<'a>(e: VacantEntry<'a, &'a str, Any>) -> VacantEntry<'a, &'a str, Static> {
//!     e
//! }
//! ```
//!
//! ```
//! use memkv::art::VacantEntry;
//! type Any = for<'x> fn(&'x u8);
//! fn coerce<'a>(e: VacantEntry<'a, &'a str, Any>) -> VacantEntry<'a, &'a str, Any> {
//!     e
//! }
//! ```
//!
//! ```compile_fail,E0308
//! use memkv::art::Entry;
//! type Any = for<'x> fn(&'x u8);
//! type Static = fn(&'static u8);
//! fn coerce<'a>(e: Entry<'a, &'a str, Any>) -> Entry<'a, &'a str, Static> {
//!     e
//! }
//! ```
//!
//! ```
//! use memkv::art::Entry;
//! type Any = for<'x> fn(&'x u8);
//! fn coerce<'a>(e: Entry<'a, &'a str, Any>) -> Entry<'a, &'a str, Any> {
//!     e
//! }
//! ```
//!
//! # `FastArt`: keys lent from the iterator
//!
//! `next_entry` assembles each key in a buffer the iterator reuses, so the
//! key it lends must not outlive the next step.
//!
//! ```compile_fail,E0499
//! let map = memkv::FastArt::from([("a", 1u8), ("b", 2)]);
//! let mut it = map.range("a"..);
//! let (first, _) = it.next_entry().unwrap();
//! let _ = it.next_entry();
//! assert_eq!(first, b"a");
//! ```
//!
//! ```
//! let map = memkv::FastArt::from([("a", 1u8), ("b", 2)]);
//! let mut it = map.range("a"..);
//! let (first, _) = it.next_entry().map(|(k, v)| (k.to_vec(), v)).unwrap();
//! let _ = it.next_entry();
//! assert_eq!(first, b"a");
//! ```
//!
//! # `FrozenLayer`: bytes lent from the layer
//!
//! A layer may be a memory-mapped file; the stored bytes `get_encoded`
//! lends must not outlive it.
//!
//! ```compile_fail,E0505
//! let layer = memkv::FrozenLayer::from_sorted_iter([("a", String::from("x"))])?;
//! let bytes = layer.get_encoded("a");
//! drop(layer);
//! assert_eq!(bytes, Some(&b"x"[..]));
//! # Ok::<(), memkv::Error>(())
//! ```
//!
//! ```
//! let layer = memkv::FrozenLayer::from_sorted_iter([("a", String::from("x"))])?;
//! let bytes = layer.get_encoded("a");
//! assert_eq!(bytes, Some(&b"x"[..]));
//! drop(layer);
//! # Ok::<(), memkv::Error>(())
//! ```
//!
//! # `FrozenLayer`: set operations hold the values they yield
//!
//! A set operation keeps the values of the entry it yielded last, decoded,
//! to lend them; a value type that must stay on its thread keeps the
//! operation there too (the layer and its plain iterators hold no `V`, and
//! cross threads whatever `V` is).
//!
//! ```compile_fail,E0277
//! use std::rc::Rc;
//! struct Shared(Rc<u64>);
//! impl memkv::FrozenValue for Shared {
//!     const TYPE_NAME: &'static str = "Shared";
//!     type Column = memkv::frozen::IntColumn;
//!     fn encode(&self) -> u64 { *self.0 }
//!     fn decode(encoded: u64) -> Self { Shared(Rc::new(encoded)) }
//! }
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::frozen::Union<'static, Shared>>();
//! ```
//!
//! ```
//! use std::sync::Arc;
//! struct Shared(Arc<u64>);
//! impl memkv::FrozenValue for Shared {
//!     const TYPE_NAME: &'static str = "Shared";
//!     type Column = memkv::frozen::IntColumn;
//!     fn encode(&self) -> u64 { *self.0 }
//!     fn decode(encoded: u64) -> Self { Shared(Arc::new(encoded)) }
//! }
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::frozen::Union<'static, Shared>>();
//! ```
//!
//! # `FrozenLayer`: a search in a set operation stays `Send` and `Sync`
//!
//! A set operation holds the automata of the searches added to it, so
//! [`add_search`](crate::frozen::OpBuilder::add_search) takes only automata
//! that may cross threads with it (and can be cloned, with the operation):
//! one holding an `Rc` is refused; the same automaton over an `Arc` is the
//! control.
//!
//! ```compile_fail,E0277
//! use std::rc::Rc;
//! use memkv::frozen::automaton::Automaton;
//! #[derive(Clone)]
//! struct Prefix(Rc<Vec<u8>>);
//! impl Automaton for Prefix {
//!     type State = Option<usize>;
//!     fn start(&self) -> Option<usize> { Some(0) }
//!     fn is_match(&self, s: &Option<usize>) -> bool { *s == Some(self.0.len()) }
//!     fn accept(&self, s: &Option<usize>, b: u8) -> Option<usize> {
//!         s.filter(|&at| at < self.0.len() && self.0[at] == b).map(|at| at + 1)
//!     }
//! }
//! let layer = memkv::FrozenLayer::from_sorted_iter([("ab", 1u64)]).unwrap();
//! let search = layer.search(Prefix(Rc::new(b"ab".to_vec())));
//! memkv::frozen::OpBuilder::new().add_search(search);
//! ```
//!
//! ```
//! use std::sync::Arc;
//! use memkv::frozen::automaton::Automaton;
//! #[derive(Clone)]
//! struct Prefix(Arc<Vec<u8>>);
//! impl Automaton for Prefix {
//!     type State = Option<usize>;
//!     fn start(&self) -> Option<usize> { Some(0) }
//!     fn is_match(&self, s: &Option<usize>) -> bool { *s == Some(self.0.len()) }
//!     fn accept(&self, s: &Option<usize>, b: u8) -> Option<usize> {
//!         s.filter(|&at| at < self.0.len() && self.0[at] == b).map(|at| at + 1)
//!     }
//! }
//! let layer = memkv::FrozenLayer::from_sorted_iter([("ab", 1u64)]).unwrap();
//! let search = layer.search(Prefix(Arc::new(b"ab".to_vec())));
//! let found: Vec<_> = memkv::frozen::OpBuilder::new().add_search(search).union().collect();
//! assert_eq!(found.len(), 1);
//! ```
//!
//! # `HybridMap`: an entry holds the write lock
//!
//! An entry holds the map's write lock (a `std` `RwLockWriteGuard`) until
//! it is dropped, and a lock must be released by the thread that took it:
//! an entry is not `Send`, vacant or occupied. It is `Sync` (a shared entry
//! only reads), which is the control.
//!
//! ```compile_fail,E0277
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::hybrid::OccupiedEntry<'static, &str, u64>>();
//! ```
//!
//! ```
//! fn assert_sync<T: Sync>() {}
//! assert_sync::<memkv::hybrid::OccupiedEntry<'static, &str, u64>>();
//! ```
//!
//! ```compile_fail,E0277
//! fn assert_send<T: Send>() {}
//! assert_send::<memkv::hybrid::VacantEntry<'static, &str, u64>>();
//! ```
//!
//! ```
//! fn assert_sync<T: Sync>() {}
//! assert_sync::<memkv::hybrid::VacantEntry<'static, &str, u64>>();
//! ```
//!
//! # Memtables: entries lent from the cursor
//!
//! A cursor may lend each entry's key from a buffer it reuses, so an entry
//! must not outlive the next step.
//!
//! ```compile_fail,E0499
//! use memkv::memtable::{EntryCursor, MAX_SEQNO, Memtable, MemtableRead, SkipListMemtable, ValueKind};
//!
//! let mem = SkipListMemtable::default();
//! mem.insert(b"a", 1, ValueKind::Value, b"x");
//! let mut cursor = mem.iter(MAX_SEQNO);
//! let first = cursor.next_entry().unwrap();
//! let _ = cursor.next_entry();
//! assert_eq!(first.user_key, b"a");
//! ```
//!
//! ```
//! use memkv::memtable::{EntryCursor, MAX_SEQNO, Memtable, MemtableRead, SkipListMemtable, ValueKind};
//!
//! let mem = SkipListMemtable::default();
//! mem.insert(b"a", 1, ValueKind::Value, b"x");
//! let mut cursor = mem.iter(MAX_SEQNO);
//! let first = cursor.next_entry().unwrap().to_entry();
//! let _ = cursor.next_entry();
//! assert_eq!(first.user_key, b"a");
//! ```
