//! [`HybridMap`]: a mutable, concurrent ordered map at close to the memory of
//! a [`FrozenLayer`], with recent changes in a small [`FastArt`] delta and
//! merges in the background.
//!
//! # Layers
//!
//! ```text
//!  writes ──▶ fresh delta    FastArt<V> + FastArt<()> of tombstones               (newest)
//!                            + FastArt<Option<V>> of pending blind writes, behind an RwLock
//!             sealed deltas  the same, immutable, in an Arc                            (being merged)
//!             base           Arc<FrozenLayer<V>> per range of keys          (oldest, almost all keys)
//! ```
//!
//! A lookup asks the layers from newest to oldest and the first that knows
//! the key answers: a value, or a **tombstone** that says the key was
//! removed (tombstones have a tree of their own, so a value's leaf holds no
//! `Option` tag and a tombstone's leaf no value). Each delta carries a
//! Bloom filter of its keys (12 bits per key, one cache line per probe), so
//! the lookups of the many keys a delta does not hold skip its radix tree
//! (on the Debian paths a miss in a 750 k-entry delta otherwise costs about
//! as much as the base's lookup). A removal writes a tombstone only when an
//! older layer holds the key; a key that lives only in the fresh delta is
//! simply removed from it. Ordered iteration is a streaming merge of the
//! layers, newest winning (see [`Iter`]).
//!
//! [`len`](HybridMap::len) is exact. [`insert`](HybridMap::insert) and
//! [`remove`](HybridMap::remove) return the old value, so they look the key
//! up below the fresh delta anyway and know whether they add or remove a key.
//! The **blind writes** [`put`](HybridMap::put) and
//! [`delete`](HybridMap::delete) return nothing and skip that lookup (the
//! costly part of a write); their entries stay **pending** in a third tree of
//! the fresh delta, read like any other, until something needs to count
//! them: `len` (which looks all pending keys up below in one batch), the next
//! write to the same key that looks below, or, for those a merge seals, that
//! merge, which counts them against the layers below (one batch of lookups
//! on its thread, no lock held, before it builds) and adds the count to
//! `len` when its new base is in place.
//!
//! A **merge** seals the fresh delta (an O(1) swap: it becomes an immutable
//! sealed delta and an empty fresh delta takes the writes), then streams the
//! sealed deltas and the base in key order into a new base. It builds that
//! base in **parts**, one [`FrozenLayer`] per range of about
//! [`part_keys`](HybridConfig::part_keys) keys, and swaps each part in as
//! soon as it is built, dropping the old parts it has passed: a merge holds
//! one part of new base beside the old base, never two whole bases. A merge
//! that fails (an I/O error, a panic in [`FrozenValue::encode`]) loses
//! nothing: the parts it put in place answer as the layers they replaced,
//! its sealed delta stays, still read, and the next merge takes it together
//! with the newer writes.
//!
//! # Concurrency
//!
//! A `HybridMap` is `Send + Sync` (for `V: Send + Sync`) and every operation
//! takes `&self`: share it in an `Arc` or scoped threads. Inside:
//!
//! * the fresh delta sits in a [`std::sync::RwLock`]. On Linux it is a futex
//!   lock that blocks new readers once a writer waits, so writers are not
//!   starved. Its readers write its word, so readers on several cores share
//!   that cache line: two threads looking up keys that are all in cache
//!   lose about a ninth of their rate to it, while over the 7.3 M paths,
//!   where lookups wait for memory, it does not show. A sharded lock
//!   (crossbeam's `ShardedLock`) won that back but made every `insert` 31%
//!   slower, so the plain lock stays (DESIGN.md, "Readers on two cores");
//! * the sealed deltas and the base sit in an [`arc_swap::ArcSwap`]. Every
//!   lookup that misses the fresh delta reads this pointer; `ArcSwap`'s load
//!   does not touch a shared reference count, so readers on several cores do
//!   not fight over one cache line, and a merge replaces the pointer without
//!   waiting for anyone. (arc-swap is small, widely used and maintained; it
//!   has no dependencies.)
//!
//! What each operation may wait for, and how long:
//!
//! | operation | holds | may wait for |
//! |---|---|---|
//! | [`get`](HybridMap::get), [`contains_key`](HybridMap::contains_key) | the fresh delta's read lock during one lookup in it | a writer's single update of the fresh delta (a `FastArt` insert or remove: well under a microsecond, a few µs when the arena grows a chunk), a merge's seal (one swap), or the longer holders of the write lock below: a live [`Entry`], a `pop_first`/`pop_last`, a `retain` asking again; and, when a writer waits for the write lock (the lock then blocks new readers), what that writer waits for |
//! | [`get_many`](HybridMap::get_many) | the read lock while it looks the whole batch up in the fresh delta (mostly one filter probe per key) | as `get` |
//! | [`prefixes_of`](HybridMap::prefixes_of), [`longest_prefix_of`](HybridMap::longest_prefix_of) | the read lock during one walk along the key in each of the fresh delta's trees (no filter to skip them: a filter answers for whole keys) | as `get` |
//! | [`insert`](HybridMap::insert), [`remove`](HybridMap::remove) | the read lock while it looks the key's old value up below the fresh delta (an fst lookup, about 2 µs), walking the key's path in the fresh delta beside it; then the write lock during one `FastArt` update (and, when the fresh delta outgrows its filter's sizing — only if merges fall behind or never run — one rebuild of the filter from its keys: ~0.3 µs per key, 0.15 s at 500 k entries) | holders of the write lock, for the read lock; for the write lock, readers' lookups in the fresh delta, iterators' copies (below), other writers, and other writers' old-value lookups under the read lock |
//! | [`put`](HybridMap::put), [`delete`](HybridMap::delete) | the write lock during one `FastArt` update of the pending tree (or, for a key the fresh delta already holds settled, as `insert`/`remove`) | for the write lock: readers' lookups in the fresh delta, iterators' copies, other writers |
//! | [`len`](HybridMap::len), [`is_empty`](HybridMap::is_empty) | with no pending entries: the read lock for one load. Otherwise the read lock while it copies the pending keys, none while it looks them up below (in one batch, about 1 µs per key), then the write lock for each 1,024 of them while it settles those (a `FastArt` move per key: about a millisecond), and once more for any written meanwhile (a lookup below for each) | as `insert`; and the blind writes since the last call, once; just after a merge sealed blind writes, that merge's count of them |
//! | each entry of [`extend`](HybridMap::extend) | the write lock during one `FastArt` update, as `insert` (the old values were looked up for the whole batch first, with no lock, and its paths in the fresh delta walked under the read lock) | as `insert` |
//! | [`iter`](HybridMap::iter), [`range`](HybridMap::range), [`prefix`](HybridMap::prefix) | the read lock while copying the fresh delta's entries in range | as `get` |
//! | [`clone`](HybridMap::clone) | the read lock while copying the fresh delta (the frozen layers are shared) | as `get` |
//! | [`first_key_value`](HybridMap::first_key_value), [`last_key_value`](HybridMap::last_key_value) | the read lock for one descent per layer, repeated past each tombstone at that end that no earlier search for that end stepped over (the map remembers how far those got, until a write crosses it) | as `get` |
//! | [`pop_first`](HybridMap::pop_first), [`pop_last`](HybridMap::pop_last) | the write lock while it finds the entry (as `first_key_value`, starting where the last pop from that end left off) and looks its key up below the fresh delta, then removes it | as `insert` |
//! | [`entry`](HybridMap::entry) | the read lock while it looks the key's old value up, as `insert`; then the write lock until the entry is dropped: as long as the caller keeps it | as `insert` |
//! | [`retain`](HybridMap::retain) | the read lock for its snapshot (as `iter`), then for each entry rejected the read lock for its old-value lookup, as `remove`, and the write lock while `keep` is asked again if another writer came since the snapshot, and the entry removed | as `iter`, then as `insert` |
//! | [`stats`](HybridMap::stats) | the read lock for a few loads | as `get`; just after a merge sealed blind writes, that merge's count of them |
//! | [`freeze`](HybridMap::freeze), [`clear`](HybridMap::clear) | the merge lock | a merge already running, to its end |
//! | [`merge_in_background`](HybridMap::merge_in_background) | the merge thread's mailbox lock, to leave the request (and to start the thread if none runs) | another caller leaving a request (if no thread can be started, it merges inline, as `freeze`); the merge thread itself waits for a merge running elsewhere (a `freeze`) and then merges what it left |
//! | [`save`](HybridMap::save) | the merge lock for its `freeze`, then none while it writes the base (a background merge that starts meanwhile may put some of its parts in place first, so the file may hold later writes in some ranges of keys and not in others) | as `freeze` |
//!
//! Readers never wait for a merge: the base and the sealed deltas are
//! immutable and read through `Arc`s, and the lookups in them (the costly
//! part, a few microseconds in the fst) happen after the lock is released.
//! Writers look up a key's old value in the base, too, before taking the
//! write lock (`pop_first`/`pop_last`, which must find their key first, do
//! it under the lock). `insert` and `remove` hold the read lock meanwhile,
//! to walk the key's path in the fresh delta beside the fst walk, so that
//! the misses of the two overlap and the update finds its path cached
//! (writes 14–17% faster in the mixed workload of the next section). No lock is held
//! while a merge builds.
//!
//! # Iterators
//!
//! An [`Iter`] is a snapshot: it owns `Arc`s of the immutable layers and a
//! copy of the fresh delta's entries in its range, taken under the read lock
//! when it is created. For a range or prefix scan that copy is small; for
//! [`iter`](HybridMap::iter) it is the whole fresh delta, which the policy
//! bounds (by default 6% of the base's keys, plus what arrives while a
//! merge runs). Measured on the Debian
//! sample: 80–180 ns and about 150 bytes of buffer per copied entry, so 1 ms
//! for a fresh delta of 12,500 entries, during which writers wait; on 7.3 M
//! keys a full delta of 900,000 entries would take on the order of 100 ms.
//! The alternative, sealing the fresh delta for every iterator (O(1)), would
//! pile up small sealed deltas that every lookup must then search, and force
//! merges to run far more often. An iterator that lives on keeps the layers
//! it started with alive after a merge replaced them.
//!
//! # Choosing the merge policy
//!
//! A merge rewrites the base part by part, every part the sealed deltas
//! touch (all of them, for writes on random keys): its cost is the frozen
//! layer's build speed (1.1–1.9 M keys/s here, merging included: 3.8–6.8 s
//! for 7.3 M keys on this project's shared 2-core machine, depending on the
//! day), whatever the delta's size. The policy ([`HybridConfig`]) trades
//! three things against each other:
//!
//! * **memory**: each delta entry costs about 47 bytes (a `FastArt` leaf and
//!   path for a 63-byte path with a `u64`, and its filter bits; measured
//!   46.6 B/entry for 695,000 entries on the 7.3 M paths) against the
//!   base's 9.4 bytes per key. A delta of share `r` adds about `47 r` bytes
//!   per key;
//! * **merge work**: rebuilding N keys every `r N` writes costs `1 / r` keys
//!   built per write, about 7.5 µs of background CPU per write at
//!   `r = 0.06` (compare a `FastArt` insert, about 1–3 µs);
//! * **memory during a merge**: the base, the sealed delta, the fresh delta
//!   (which takes the writes that arrive meanwhile) and one part being
//!   built, with its fst builder's node cache. The old part that the new one
//!   replaces stays until the new one is in place, so about two parts ride
//!   on top of the base.
//!
//! [`part_keys`](HybridConfig::part_keys) sets the parts' size: larger
//! parts share more suffixes (a smaller base), smaller ones lower the peak.
//! One merge of the 7.3 M paths with a 9.5% delta
//! (`examples/hybrid_merge.rs` in the harness; values are line numbers):
//!
//! | `part_keys` | parts | base B/key | base + delta | peak during the merge | merge |
//! |--:|--:|--:|--:|--:|--:|
//! | 2^18 | 28 | 10.06 | 14.50 | 15.78 | 4.7 s |
//! | 2^19 | 14 |  9.74 | 14.17 | 16.28 | 4.4 s |
//! | **2^20** | 7 | 9.35 | 13.79 | **16.61** | 4.4 s |
//! | one layer | 1 | 9.06 | 13.50 | 29.32 | 4.9 s |
//!
//! The default is 2^20: the design asks for a base within 10% of a single
//! frozen layer, and smaller parts come close to missing that on these
//! paths (their suffixes are shared across the whole key space: +3.2% at
//! 2^20, +7.5% at 2^19, +11% at 2^18 here), for little less peak. Parts stay between half
//! and one and a quarter times that size (a part that grows past that is
//! rebuilt as two halves), along the boundaries of the last merge, so a map
//! in a steady state rebuilds each part in place, and a part that no write
//! touched since the last merge is put back as it is, not rebuilt: after
//! writes that fall in a few ranges (keys that grow with time, say), a merge
//! rebuilds only those (full Debian paths: 0.42 s after 1% new keys in one
//! range, 3.84 s after 1% updates of random keys).
//!
//! The default key ratio is 0.06, with a floor of 4,096 entries and a 256 MiB
//! budget. On 2026-11-27 a mixed workload (90% lookups, 10%
//! writes of random keys by `insert` and `remove`; harness
//! `examples/hybrid_mixed.rs`) ran at four ratios on the full 7.3 M paths:
//! 16 M operations each, merges in the background, 6.57 M keys loaded
//! first by single inserts (that sparser set takes 10.8 B/key as a base).
//! There were 23 runs, the settings alternating, some beside `FastArt` in
//! the same process and some alone
//! (`harness/results/hybrid-ratios-full.md`). Each cell is the range and
//! the median:
//!
//! | `key_ratio` | runs | mean / peak B/key | lookups/s | writes/s, writing thread's time | merge CPU per run |
//! |--:|--:|--:|--:|--:|--:|
//! | 0.02 | 10 | 13.7–14.2 / 15.5–17.0 | 697–903 k (748 k) | 410–519 k (441 k) | 25–29 s |
//! | 0.04 | 6 | 13.3–13.6 / 17.2–18.7 | 625–810 k (744 k) | 364–455 k (425 k) | 13–16 s |
//! | **0.06** | 5 | 13.4–13.5 / 17.0–18.5 | 703–810 k (764 k) | 391–444 k (424 k) | 8–10 s |
//! | 0.12 | 2 | 14.1–14.2 / 20.3 | 672–715 k (694 k) | 353–386 k (370 k) | 3–5 s |
//!
//! From 0.02 to 0.06 the foreground rates do not differ beyond what this
//! machine moves between two runs of one setting (625–810 k lookups/s at
//! 0.04 within a quarter of an hour). What differs is the merge thread's
//! work. At 0.02 a merge of the whole base (2.5–2.7 s in these runs) is
//! due before the last one ends, so merges run back to back and take a core all the
//! time, about three times the CPU of 0.06. At 0.12 the delta grows large
//! enough to slow the lookups (by 9%) and the writes (by 13%), and the
//! peak passes 20 B/key. Early pairs of runs favoured 0.02 (lookups
//! 0.80–0.85× `FastArt`'s against 0.75–0.80×), and the default was 0.02
//! for an hour. The runs that followed, with the setting alone, did not
//! bear that out.
//!
//! Earlier measurements of the default (2026-11-25, before the lookup keys
//! were read outside the clock):
//!
//! | | `HybridMap` (defaults) | `FastArt` |
//! |---|--:|--:|
//! | memory: mean / peak | 13.5 / **18.4** B/key | 35.6 / 35.8 B/key |
//! | lookups | 675 k/s (0.80×) | 843 k/s |
//! | writes, in the writing thread's time | 446 k/s (0.57×) | 776 k/s |
//! | writes, the merge thread's CPU charged to them | 137 k/s (0.18×) | 776 k/s |
//!
//! Five other runs of the same code: peaks of 17.0–18.2 B/key, lookups at
//! 0.73–0.84× (median of the six 0.78×), writes at 0.54–0.61× (0.15–0.20×
//! charged): this shared machine moves that much between runs. (Lookups were
//! 0.82–0.89× before `FastArt` learnt to compact itself as it grows: it
//! got faster, `HybridMap` did not get slower.) Since the base's layers
//! have a jump table (a hash probe in place of the top of each fst walk),
//! fourteen runs on a slower evening and the next morning gave lookups at
//! 0.71–0.93× (median 0.80×; the code before it, alternating with it,
//! 0.60–0.70×), writes at 0.45–0.60× (median 0.51×), memory 13.9–14.4
//! B/key on average and 17.4–20.9 at the peak. Merges running on the other
//! core cost the lookups 0–9% (their mean time with and without one); the
//! rest of the gap is the lookup itself. (Those runs timed each operation
//! with its key's cache miss inside, the same for both maps; without it,
//! as since 2026-11-26, the ratios are lower: lookups 0.61–0.74×.) Since
//! the search for a key's base part stopped comparing it with the empty
//! key, which cost a microcode assist (2026-11-27), eleven runs gave
//! lookups at 0.79–0.96× `FastArt`'s (nine at 0.8× or more) and writes by
//! `insert`/`remove` at 0.46–0.56×.
//!
//! The workload needs no old value, so it can write blind
//! ([`put`](HybridMap::put), [`delete`](HybridMap::delete)). Three runs
//! alternating with `insert`/`remove`, charging the final `len` (the lookups
//! the blind writes left out that no merge had counted) to the writes:
//! blind writes at **0.55–0.63×** `FastArt`'s (340–354 k/s) against
//! 0.39–0.44× for `insert`/`remove`, memory mean 14.4–14.6 B/key against
//! 14.0–14.2 (peaks 19.2–20.2 against 17.5–19.6).
//!
//! The last row is the honest figure when every core is busy: rebuilding
//! the base for every 6% of it written costs more than the writes
//! themselves. Even free merges would leave `insert` and `remove` at about
//! half of `FastArt`'s rate: each one looks the key up in the base first,
//! for the old value it returns and for an exact [`len`](HybridMap::len)
//! (blind writes move that lookup to `len` and the merges). A larger ratio does not buy
//! much of it back here (0.1, parts of 2^20: 0.22×, with peaks of 21.9–22.3
//! B/key), as the merges mostly run on the second core anyway. On the 100,000-key sample
//! (1 M operations; measured with the base as one layer, which a map that
//! fits in one part still is) the fixed costs of each merge dominate and a
//! hybrid map is not smaller than a `FastArt` (50.3 B/key), so the sample
//! shows only how the ratio trades memory for throughput:
//!
//! | `key_ratio` | merges | mean B/key | peak B/key | lookups/s (× FastArt) | writes/s, merge CPU charged (× FastArt) |
//! |--:|--:|--:|--:|--:|--:|
//! | 0.05  | 14 | 77.0 |  88.0 | 959 k (0.62×) |  73 k (0.05×) |
//! | 0.125 | 12 | 69.4 |  94.2 | 911 k (0.63×) |  91 k (0.07×) |
//! | 0.25  |  9 | 57.8 |  96.8 | 915 k (0.69×) | 134 k (0.11×) |
//! | 0.5   |  5 | 49.4 | 109.3 | 720 k (0.54×) | 280 k (0.24×) |
//!
//! (Raw output: `harness/results/hybrid-*.md`.) Raise the ratio for
//! write-heavy use, at the cost of memory.
//!
//! Lookups cost what a [`FrozenLayer::get`] costs (a walk of the fst, about
//! 1.5–2.5 µs for these paths on this machine) plus a read lock, one hash of the
//! key and one cache line of each delta's Bloom filter; only the keys a
//! delta holds (and under 1% of the others) pay a descent in it.
//!
//! ## Reads during a merge
//!
//! Readers never wait for a merge. Measured with `examples/hybrid_merge.rs`
//! (one thread looking up random keys while a background merge of 7.3 M keys
//! runs): 1.13 M lookups during a 4.4 s merge took 3.8 µs on average, 67
//! took over 100 µs and the slowest 3.3 ms: the scheduler (the merge thread
//! and the reader share two cores with other work), not a lock, as no lock
//! is shared between a reader and a building merge.
//!
//! # Example
//!
//! ```
//! use memkv::HybridMap;
//!
//! let map = HybridMap::new();
//! map.insert("usr/bin/env", 3u64);
//! map.insert("etc/hosts", 1);
//! map.freeze()?; // both keys now live in the frozen base
//! map.insert("usr/bin/cat", 2);
//! assert_eq!(map.remove("etc/hosts"), Some(1)); // a tombstone over the base
//!
//! assert_eq!(map.get("usr/bin/env"), Some(3));
//! assert_eq!(map.len(), 2);
//! let keys: Vec<Vec<u8>> = map.prefix("usr/").map(|(key, _)| key).collect();
//! assert_eq!(keys, [b"usr/bin/cat".to_vec(), b"usr/bin/env".to_vec()]);
//!
//! # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
//! # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
//! let dir = tempfile::tempdir()?;
//! map.save(dir.path().join("paths.memkv"))?;
//! let reopened = HybridMap::<u64>::open(dir.path().join("paths.memkv"))?;
//! assert_eq!(reopened.len(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod base;
mod bulk;
mod entry;
mod filter;
mod iter;
mod layers;
mod merge;
mod policy;
mod worker;

use std::collections::VecDeque;
use std::fmt;
use std::mem;
use std::ops::{Bound, ControlFlow, RangeBounds};
use std::panic;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;

use self::base::{Base, Part};
pub use self::entry::{Entry, OccupiedEntry, VacantEntry};
use self::filter::key_hash;
use self::iter::Batch;
pub use self::iter::{Iter, Keys, PrefixesOf, Search, Values};
use self::layers::{Delta, Edge, Layers};
use self::merge::Outcome;
pub use self::policy::HybridConfig;
use self::worker::Mailbox;
use crate::keys::{as_slice, owned_bound, prefix_successor};
use crate::search::{Guard, Pruner, Unguarded};
use crate::{FastArt, FrozenLayer, FrozenLayerBuilder, FrozenValue, Result};

/// What layers say about the prefixes of a key: for each prefix's length,
/// its value, or `None` for a tombstone.
type PrefixWords<V> = Vec<(usize, Option<V>)>;

/// A mutable ordered map from byte strings to values that keeps almost all
/// keys in a compressed [`FrozenLayer`] and recent changes in a small
/// [`FastArt`]; see the [module documentation](self) for the design.
///
/// The API follows [`BTreeMap`](std::collections::BTreeMap) where it can,
/// with two differences that come from sharing the map between threads and
/// from the frozen base: every method takes `&self`, and values come back
/// **by value** (`V: Clone`), never as references.
///
/// ```ignore-wasi
/// use std::sync::Arc;
/// use memkv::HybridMap;
///
/// let map = Arc::new(HybridMap::<u32>::new());
/// let writer = {
///     let map = Arc::clone(&map);
///     std::thread::spawn(move || {
///         for i in 0..1000u32 {
///             map.insert(format!("key{i:04}"), i);
///         }
///     })
/// };
/// writer.join().unwrap();
/// assert_eq!(map.get("key0042"), Some(42));
/// assert_eq!(map.len(), 1000);
/// ```
pub struct HybridMap<V: FrozenValue> {
    inner: Arc<Inner<V>>,
}

/// What the map and its merge thread share.
struct Inner<V: FrozenValue> {
    fresh: RwLock<Delta<V>>,
    /// Sealed deltas and base. Replaced (1) by a seal, only while `fresh` is
    /// write-locked, so that a reader who checked the fresh delta under its
    /// read lock and loads this before releasing it sees every entry exactly
    /// once; (2) by a merge's end, with layers that answer every lookup
    /// alike; (3) by `clear`, under both locks.
    layers: ArcSwap<Layers<V>>,
    /// Keys in the map, less what the deltas' pending entries (blind writes,
    /// see [`HybridMap::put`]) change: exact when they have none. Modulo
    /// 2^64, as it may go below zero until a sealed delta's pending values
    /// are added (atomics wrap). Changed only under the fresh delta's write
    /// lock.
    len: AtomicUsize,
    /// How many times the fresh delta's write lock was taken to write (by
    /// [`Inner::write_fresh`]; a seal, which changes no value, does not
    /// count): no entry changed between two readings under the lock unless
    /// this moved. [`HybridMap::retain`] tells by it whether the entry it
    /// decided on may have changed since its snapshot.
    write_locks: AtomicU64,
    config: HybridConfig,
    /// Held by whoever merges: one merge at a time.
    merge_lock: Mutex<()>,
    merging: AtomicBool,
    /// Approximate heap bytes of the base being built.
    building: AtomicUsize,
    record: Mutex<MergeRecord>,
    mailbox: Mailbox,
}

/// The history of merges, for [`HybridStats`].
#[derive(Debug, Default)]
struct MergeRecord {
    merges: u64,
    failed: u64,
    last_duration: Option<Duration>,
    last_at: Option<SystemTime>,
    last_keys: usize,
    last_error: Option<String>,
}

impl MergeRecord {
    /// A merge built a base of `keys` keys in `duration`.
    fn built(&mut self, duration: Duration, keys: usize) {
        self.merges += 1;
        self.last_duration = Some(duration);
        self.last_at = Some(SystemTime::now());
        self.last_keys = keys;
        self.last_error = None;
    }

    /// A merge ended with `outcome`, a failure.
    fn failed(&mut self, outcome: &Outcome) {
        self.failed += 1;
        self.last_error = Some(match outcome {
            Outcome::Failed(err) => format!("merge failed: {err}"),
            Outcome::Panicked(payload) => format!(
                "merge panicked: {}",
                crate::error::panic_message(payload.as_ref())
            ),
            Outcome::Built(_) | Outcome::Cancelled => unreachable!("not a failure: {outcome:?}"),
        });
    }
}

/// A snapshot of a [`HybridMap`]'s layers and merge history; see
/// [`HybridMap::stats`].
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct HybridStats {
    /// Keys in the map: exact unless [`delta_pending`](Self::delta_pending)
    /// blind writes wait to be counted (which [`HybridMap::len`] does, and
    /// `stats`, a look that changes nothing, does not).
    pub len: usize,
    /// Keys in the frozen base.
    pub base_keys: usize,
    /// Bytes of the frozen base (on the heap, or mapped from a file when
    /// [`base_mapped`](Self::base_mapped)).
    pub base_bytes: usize,
    /// How many layers the base is made of, one per range of keys (see
    /// [`HybridConfig::part_keys`]).
    pub base_parts: usize,
    /// Whether the base is (in part) a memory-mapped file (after
    /// [`open`](HybridMap::open), until the first merge has replaced it;
    /// never where the platform maps no files, such as WASI, where `open`
    /// reads the file).
    pub base_mapped: bool,
    /// Entries in the deltas (fresh and sealed), tombstones included.
    pub delta_entries: usize,
    /// Tombstones among `delta_entries`.
    pub delta_tombstones: usize,
    /// Entries of the fresh delta written blind ([`HybridMap::put`],
    /// [`HybridMap::delete`]) and not counted in `len` yet.
    pub delta_pending: usize,
    /// Heap bytes of the deltas (fresh and sealed).
    pub delta_bytes: usize,
    /// Sealed deltas: 1 while a merge runs, more only after failed merges;
    /// also 1 in a [`clone`](HybridMap::clone) taken while a merge ran, until
    /// the copy's own next merge folds it in.
    pub sealed_deltas: usize,
    /// Whether a merge is running.
    pub merging: bool,
    /// Approximate heap bytes of the base a running merge is building.
    pub building_bytes: usize,
    /// Merges completed.
    pub merges: u64,
    /// Merges that failed (errors and panics; not cancellations on drop).
    pub failed_merges: u64,
    /// How long the last completed merge took to build the new base.
    pub last_merge_duration: Option<Duration>,
    /// When the last completed merge put its base in place.
    pub last_merge_at: Option<SystemTime>,
    /// Keys in the base the last completed merge built.
    pub last_merge_keys: usize,
    /// Why the last failed merge failed (cleared by a successful one).
    pub last_error: Option<String>,
}

/// What [`Inner::merge`] did.
enum Merged {
    /// There was nothing to merge.
    Nothing,
    /// A new base is in place.
    Done,
    /// A new base is in place, and then a value of the merged deltas
    /// panicked in its `Drop` (the payload, for the caller).
    DoneThenDropPanicked(Box<dyn std::any::Any + Send + 'static>),
    /// Nothing changed; the error or panic is for the caller.
    Failed(Outcome),
    Cancelled,
}

/// How many pending entries [`Inner::settle_pending`] settles under one
/// taking of the write lock: about a millisecond of readers' wait.
const SETTLE_BATCH: usize = 1024;

/// The fresh delta locked for one write, with the layers below it and what
/// they hold for the key written (see [`Inner::lock_for_write`]).
struct WriteLock<'a, V: FrozenValue> {
    fresh: RwLockWriteGuard<'a, Delta<V>>,
    layers: arc_swap::Guard<Arc<Layers<V>>>,
    older: Option<V>,
    /// The key's [`key_hash`], for the deltas' filters.
    hash: u64,
}

/// What a snapshot is made of, all read under the fresh delta's read lock.
struct SnapshotParts<V: FrozenValue> {
    /// A copy of the fresh delta's entries (within the snapshot's bounds).
    copy: Batch<V>,
    /// The layers below the fresh delta.
    layers: arc_swap::Guard<Arc<Layers<V>>>,
    /// The count of write locks taken before the snapshot (see
    /// [`Inner::write_locks`]).
    write_locks: u64,
    /// `len`, if nothing was pending in the fresh delta: then it counts the
    /// copy and the layers exactly, less what the sealed deltas' pending
    /// entries change ([`Inner::with_sealed_pending`] adds that). Only
    /// serde's writer needs it (a loaded atomic, no more).
    #[cfg_attr(not(feature = "serde"), allow(dead_code))]
    settled_len: Option<usize>,
}

impl<V: FrozenValue> Inner<V> {
    fn read_fresh(&self) -> RwLockReadGuard<'_, Delta<V>> {
        self.fresh.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_fresh(&self) -> RwLockWriteGuard<'_, Delta<V>> {
        let fresh = self.fresh.write().unwrap_or_else(PoisonError::into_inner);
        // Under the lock, so readers under either lock see it in order.
        self.write_locks.fetch_add(1, Ordering::Relaxed);
        fresh
    }

    /// The fresh delta, read-locked, and the layers under it, for a lookup
    /// of a key whose [`key_hash`] is `hash`, with the filter block of
    /// every delta requested, so that their misses overlap rather than come
    /// one after another. The lock and the layers' load come first: they
    /// are atomic read-modify-writes, which wait for earlier loads.
    fn read_for_lookup(
        &self,
        hash: u64,
    ) -> (
        RwLockReadGuard<'_, Delta<V>>,
        arc_swap::Guard<Arc<Layers<V>>>,
    ) {
        let fresh = self.read_fresh();
        // Loaded before the lock is released: see `Inner::layers`.
        let layers = self.layers.load();
        fresh.prefetch_filter(hash);
        layers.prefetch_filters(hash);
        (fresh, layers)
    }

    /// Takes the fresh delta's write lock for a write to `key`, with the
    /// layers and the key's value in them (the sealed deltas and the base).
    /// That value is looked up before the write lock is taken, since the
    /// base's fst walk is the costly part, and again under it only if a
    /// merge sealed the fresh delta in between (its entries then moved down
    /// into the layers). Meanwhile, under the read lock, the key's path in
    /// the fresh delta is walked beside the fst walk: the update that follows
    /// finds it cached.
    fn lock_for_write(&self, key: &[u8]) -> WriteLock<'_, V>
    where
        V: Clone,
    {
        let hash = key_hash(key);
        let seen = self.layers.load();
        // The write's path in the fresh delta is walked beside the base
        // lookup, so that the misses of the two walks overlap.
        let older = {
            let fresh = self.read_fresh();
            let mut toward = fresh.path_toward(key, hash);
            seen.get_beside(key, hash, &mut toward)
        };
        self.lock_for_write_seen(key, hash, &seen, older)
    }

    /// [`Inner::lock_for_write`] with the key's value already looked up in
    /// `seen`, layers loaded before.
    fn lock_for_write_seen(
        &self,
        key: &[u8],
        hash: u64,
        seen: &Layers<V>,
        older: Option<V>,
    ) -> WriteLock<'_, V>
    where
        V: Clone,
    {
        let fresh = self.write_fresh();
        let layers = self.layers.load();
        let older = if layers.seals == seen.seals {
            older
        } else {
            layers.get(key, hash)
        };
        self.settled_write_lock(key, fresh, layers, older, hash)
    }

    /// The write lock for a write to `key`, whose value in `layers` (those
    /// under `fresh`) is `older`. A pending entry for `key` is settled
    /// first: `older` tells what lies below it, and the write's own
    /// accounting of `len` assumes a settled entry.
    fn settled_write_lock<'a>(
        &'a self,
        key: &[u8],
        mut fresh: RwLockWriteGuard<'a, Delta<V>>,
        layers: arc_swap::Guard<Arc<Layers<V>>>,
        older: Option<V>,
        hash: u64,
    ) -> WriteLock<'a, V> {
        let change = fresh.settle(key, hash, older.is_some());
        self.count(change);
        WriteLock {
            fresh,
            layers,
            older,
            hash,
        }
    }

    /// Adds `change` to `len`: every write's count goes through here. The
    /// caller holds the fresh delta's write lock.
    #[inline]
    fn count(&self, change: isize) {
        if change > 0 {
            self.len.fetch_add(change.unsigned_abs(), Ordering::Release);
        } else if change < 0 {
            self.len.fetch_sub(change.unsigned_abs(), Ordering::Release);
        }
    }

    /// Settles every pending entry of the fresh delta and returns the exact
    /// number of keys in the map. [`SETTLE_BATCH`] at a time, their keys are
    /// copied under the read lock, looked up below with no lock held, then
    /// settled under the write lock, so that readers never wait for more
    /// than one batch; entries written blind meanwhile are looked up under
    /// the last taking of it, one by one.
    fn settle_pending(&self) -> usize {
        // Settled entries leave the pending tree, so each batch is taken
        // from its start; at most as many as were pending at first, so that
        // blind writers cannot keep this going.
        let mut budget = usize::MAX;
        loop {
            let (seen, batch) = {
                let fresh = self.read_fresh();
                if fresh.pending() == 0 {
                    // Nothing to settle: `len` and the layers, read together
                    // under the read lock, are exact.
                    let layers = self.layers.load_full();
                    let len = self.len.load(Ordering::Acquire);
                    drop(fresh);
                    return self.with_sealed_pending(len, &layers);
                }
                budget = budget.min(fresh.pending());
                if budget == 0 {
                    break;
                }
                let batch = fresh.pending_batch(None, SETTLE_BATCH.min(budget));
                (self.layers.load_full(), batch)
            };
            budget -= batch.len();
            let keys: Vec<&[u8]> = batch.iter().map(|(key, _)| &key[..]).collect();
            let hashes: Vec<u64> = keys.iter().map(|key| key_hash(key)).collect();
            let below = seen.contains_many_below(0, &keys, &hashes);
            // Not `write_fresh`: settling changes no value.
            let mut fresh = self.fresh.write().unwrap_or_else(PoisonError::into_inner);
            // After a seal, the keys looked up are below, and counted by
            // the merge that sealed them.
            if self.layers.load().seals != seen.seals {
                break;
            }
            for ((key, hash), below) in keys.iter().zip(hashes).zip(below) {
                let change = fresh.settle(key, hash, below);
                self.count(change);
            }
        }
        let mut fresh = self.fresh.write().unwrap_or_else(PoisonError::into_inner);
        let layers = self.layers.load_full();
        self.settle_locked(&mut fresh, &layers);
        let len = self.len.load(Ordering::Acquire);
        drop(fresh);
        self.with_sealed_pending(len, &layers)
    }

    /// `len`, read together with `layers` under the fresh delta's lock with
    /// nothing pending in it, plus what the sealed deltas' pending entries
    /// change (counted with no lock held: a merge counts them before its
    /// build, so this waits for that at most).
    fn with_sealed_pending(&self, len: usize, layers: &Layers<V>) -> usize {
        // `len` alone may have gone below zero (wrapped): a removal of a
        // key that only a sealed delta's pending value holds.
        len.wrapping_add_signed(layers.count_pending())
    }

    /// Settles every pending entry of `fresh`, write-locked over `layers`,
    /// looking each up there.
    fn settle_locked(&self, fresh: &mut Delta<V>, layers: &Layers<V>) {
        if fresh.pending() == 0 {
            return;
        }
        for (key, _) in fresh.pending_batch(None, usize::MAX) {
            let hash = key_hash(&key);
            let below = layers.contains_key(&key, hash);
            let change = fresh.settle(&key, hash, below);
            self.count(change);
        }
        debug_assert_eq!(fresh.pending(), 0);
    }

    fn record(&self) -> MutexGuard<'_, MergeRecord> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_merges(&self) -> MutexGuard<'_, ()> {
        self.merge_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl<V: FrozenValue + Clone> Inner<V> {
    /// Seals the fresh delta and merges every sealed delta into a new base.
    /// The caller holds the merge lock.
    fn merge(&self, _merging: &MutexGuard<'_, ()>) -> Merged {
        let keys = {
            // Not `write_fresh`: a seal moves entries down and changes no
            // value, so it is not counted in `write_locks`.
            let mut fresh = self.fresh.write().unwrap_or_else(PoisonError::into_inner);
            let current = self.layers.load();
            // With the fresh delta empty (now, or after the seal below), the
            // older layers hold the map's keys: `len` counts all but what
            // the sealed deltas' pending entries change (counted below).
            let keys = self.len.load(Ordering::Acquire);
            if !fresh.is_empty() {
                // Sized for the base this merge builds, which holds `keys`,
                // and for the writes this delta took.
                let hint = self.config.delta_keys_hint(keys, fresh.len());
                let mut next = Delta::with_capacity(hint);
                fresh.pass_empty_ends(&mut next);
                let sealed = mem::replace(&mut *fresh, next);
                let mut deltas = Vec::with_capacity(current.deltas.len() + 1);
                deltas.push(Arc::new(sealed));
                deltas.extend(current.deltas.iter().cloned());
                self.layers.store(Arc::new(Layers {
                    deltas,
                    base: current.base.clone(),
                    seals: current.seals + 1,
                }));
            } else if current.deltas.is_empty() {
                return Merged::Nothing;
            }
            keys
        };
        let snapshot = self.layers.load_full();
        // The sealed deltas' pending entries are counted against the layers
        // below them before any new part (which answers for them too) is
        // put in place.
        let keys = self.with_sealed_pending(keys, &snapshot);
        // The old base's parts not yet replaced, and the new parts.
        let mut old: VecDeque<Part<V>> = snapshot.base.parts().iter().cloned().collect();
        let mut new: Vec<Part<V>> = Vec::new();
        // Only merges (and `clear`, which waits for them) replace the
        // layers, and we hold the merge lock: what is in place is
        // `snapshot`, with the parts published so far. Each part answers
        // for its keys as the sealed deltas and the old base did, so the
        // fresh delta needs no lock.
        let mut publish = |part: Part<V>| {
            match &part.upper {
                None => old.clear(),
                Some(upper) => {
                    while old
                        .front()
                        .is_some_and(|p| p.upper.as_ref().is_some_and(|u| u <= upper))
                    {
                        old.pop_front();
                    }
                    if let Some(straddling) = old.front_mut()
                        && straddling.lower < *upper
                    {
                        straddling.start_at(upper);
                    }
                }
            }
            new.push(part);
            let current = self.layers.load();
            let parts = new.iter().chain(&old).cloned().collect();
            self.layers.store(Arc::new(Layers {
                deltas: current.deltas.clone(),
                base: Base::from_parts(parts),
                seals: current.seals,
            }));
        };
        self.merging.store(true, Ordering::Relaxed);
        let outcome = merge::build(
            snapshot,
            keys,
            self.config.part_keys,
            &self.mailbox.cancel,
            &self.building,
            &mut publish,
        );
        self.merging.store(false, Ordering::Relaxed);
        let mut record = self.record();
        match outcome {
            Outcome::Built(duration) => {
                record.built(duration, keys);
                drop(record);
                // The sealed deltas are all in the new base now, and their
                // pending entries' change to `len` with them: under the
                // write lock, so that `len` is read with the layers it
                // goes with.
                let fresh = self.fresh.write().unwrap_or_else(PoisonError::into_inner);
                let current = self.layers.load_full();
                self.layers.store(Arc::new(Layers {
                    deltas: Vec::new(),
                    base: current.base.clone(),
                    seals: current.seals,
                }));
                self.count(current.count_pending());
                drop(fresh);
                // The merged deltas' values are dropped here (unless a
                // reader still holds them), with the map already merged: a
                // `Drop` that panics is reported, and the merge thread
                // lives on (were it to die, no merge would start again).
                match panic::catch_unwind(panic::AssertUnwindSafe(|| drop(current))) {
                    Ok(()) => Merged::Done,
                    Err(payload) => {
                        self.record().last_error = Some(format!(
                            "a merged value's drop panicked: {}",
                            crate::error::panic_message(payload.as_ref())
                        ));
                        Merged::DoneThenDropPanicked(payload)
                    }
                }
            }
            Outcome::Cancelled => Merged::Cancelled,
            failed => {
                record.failed(&failed);
                Merged::Failed(failed)
            }
        }
    }

    /// A merge asked for by [`HybridMap::merge_in_background`] (which the
    /// policy also calls): waits for a merge running elsewhere (`freeze`,
    /// say) to end, then merges what that one left, so that no request is
    /// lost. Failures are recorded, not raised.
    fn requested_merge(&self) {
        let _ = self.merge(&self.lock_merges());
    }

    /// A merge the policy asked for inline: failures are recorded, not
    /// raised. One already running elsewhere serves instead.
    fn automatic_merge(&self) {
        let guard = match self.merge_lock.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            // Someone is merging: the next write re-checks the policy.
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        let _ = self.merge(&guard);
    }
}

/// A layer with no keys: the base of a new or cleared map.
fn empty_layer<V: FrozenValue>() -> FrozenLayer<V> {
    FrozenLayerBuilder::memory()
        .into_layer()
        .expect("an empty layer in memory always builds")
}

impl<V> HybridMap<V>
where
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    /// An empty map with the default [`HybridConfig`]. Allocates nothing
    /// much and starts no thread until it needs to merge.
    ///
    /// ```
    /// use memkv::{HybridConfig, HybridMap};
    ///
    /// let map: HybridMap<u64> = HybridMap::new();
    /// assert!(map.is_empty());
    /// assert_eq!(map.config(), &HybridConfig::default());
    /// ```
    pub fn new() -> Self {
        Self::with_config(HybridConfig::new())
    }

    /// An empty map with the given merge policy.
    ///
    /// ```
    /// use memkv::{HybridConfig, HybridMap};
    ///
    /// let map = HybridMap::with_config(HybridConfig::new().manual());
    /// for i in 0..10_000u64 {
    ///     map.insert(format!("{i:05}"), i);
    /// }
    /// assert_eq!(map.stats().merges, 0); // the manual policy waits for `freeze`
    /// assert_eq!(map.config(), &HybridConfig::new().manual());
    /// ```
    pub fn with_config(config: HybridConfig) -> Self {
        Self::from_frozen(empty_layer(), config)
    }

    /// A map over an existing layer, which becomes its base.
    ///
    /// ```
    /// let base = memkv::FrozenLayer::from_sorted_iter([("a", 1u8), ("b", 2)])?;
    /// let map = memkv::HybridMap::from_frozen(base, Default::default());
    /// map.insert("c", 3);
    /// assert_eq!(map.len(), 3);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn from_frozen(base: FrozenLayer<V>, config: HybridConfig) -> Self {
        let len = base.len();
        let fresh = Delta::with_capacity(config.delta_keys_hint(len, 0));
        Self::from_layers(fresh, Arc::new(Layers::new(base)), len, config)
    }

    /// A map of `entries` alone (later ones win), built into a base at once
    /// if `config` would merge a delta of that size over an empty base: from
    /// sorted entries, in shares of the key space, or (fewer entries than a
    /// sample) gathered in a tree and merged. A failed build is recorded, as
    /// a background merge's, and leaves every entry in the delta.
    fn build_from<K: AsRef<[u8]>>(
        entries: impl IntoIterator<Item = (K, V)>,
        config: HybridConfig,
    ) -> Self {
        let mut entries = entries.into_iter();
        let sample_len = bulk::sample_len(config.part_keys, config.min_delta_keys);
        // A policy that merges that many entries over an empty base merges
        // any more, so the entries need never be in one tree.
        if config.wants_merge(sample_len, 0, 0, 0) {
            let sample: Vec<(K, V)> = entries.by_ref().take(sample_len).collect();
            if sample.len() == sample_len {
                if bulk::in_order(&sample) {
                    return Self::build_sorted(sample, entries, config);
                }
                return Self::build_in_shares(sample, entries, config);
            }
            return Self::build_in_one(sample.into_iter().chain(entries), config);
        }
        Self::build_in_one(entries, config)
    }

    /// [`build_from`](Self::build_from) of entries whose first ones,
    /// `sample`, come in key order: the base built straight from them for
    /// as long as they do (see [`bulk::build_sorted`]). The rest are
    /// gathered in a tree, which becomes the delta over that base, merged
    /// at once as in one tree: the keys it adds are counted by walking it
    /// and the base side by side, with no lookup per key, as `extend`
    /// would make.
    fn build_sorted<K: AsRef<[u8]>>(
        sample: Vec<(K, V)>,
        mut rest: impl Iterator<Item = (K, V)>,
        config: HybridConfig,
    ) -> Self {
        let threads = bulk::threads_for(config.build_threads);
        match bulk::build_sorted(sample, &mut rest, config.part_keys, threads) {
            bulk::Sorted::Built {
                parts,
                keys,
                took,
                next,
            } => {
                let Some(next) = next else {
                    return Self::of_parts(parts, keys, took, config);
                };
                let values: FastArt<V> = std::iter::once(next).chain(rest).collect();
                let len = keys + bulk::count_new(&values, &parts);
                let layers = Layers {
                    deltas: Vec::new(),
                    base: Base::from_parts(parts),
                    seals: 0,
                };
                Self::build_over(values, Arc::new(layers), len, config, Some((took, keys)))
            }
            bulk::Sorted::Failed { values, why } => Self::of_failed_build(*values, &why, config),
        }
    }

    /// [`build_from`](Self::build_from) in shares of the key space, on
    /// `build_threads` threads (see [`bulk`]), `sample` the first entries.
    fn build_in_shares<K: AsRef<[u8]>>(
        sample: Vec<(K, V)>,
        rest: impl Iterator<Item = (K, V)>,
        config: HybridConfig,
    ) -> Self {
        let threads = bulk::threads_for(config.build_threads);
        match bulk::build(sample, rest, threads, config.part_keys) {
            bulk::Bulk::Built { parts, keys, took } => Self::of_parts(parts, keys, took, config),
            bulk::Bulk::Failed { values, why } => Self::of_failed_build(*values, &why, config),
        }
    }

    /// A map of a base of `parts`, which hold `keys` keys, built in one go
    /// in `took`: recorded as a merge.
    fn of_parts(parts: Vec<Part<V>>, keys: usize, took: Duration, config: HybridConfig) -> Self {
        let layers = Layers {
            deltas: Vec::new(),
            base: Base::from_parts(parts),
            seals: 0,
        };
        let fresh = Delta::with_capacity(config.delta_keys_hint(keys, 0));
        let map = Self::from_layers(fresh, Arc::new(layers), keys, config);
        map.inner.record().built(took, keys);
        map
    }

    /// A map of `values`, whose build in one go failed (`why`): as when the
    /// merge of a map built in one tree fails, but with the delta fresh, as
    /// no merge sealed it.
    fn of_failed_build(values: FastArt<V>, why: &Outcome, config: HybridConfig) -> Self {
        let len = values.len();
        let layers = Arc::new(Layers::new(empty_layer()));
        let map = Self::from_layers(Delta::of_values(values, true), layers, len, config);
        map.inner.record().failed(why);
        map
    }

    /// [`build_from`](Self::build_from) in one tree.
    fn build_in_one<K: AsRef<[u8]>>(
        entries: impl Iterator<Item = (K, V)>,
        config: HybridConfig,
    ) -> Self {
        // `extend` does not compact as it goes; as a delta it never will.
        let values: FastArt<V> = entries.collect();
        let len = values.len();
        let layers = Arc::new(Layers::new(empty_layer()));
        Self::build_over(values, layers, len, config, None)
    }

    /// A map of the delta `values` over `layers`, which hold `len` keys
    /// together, merged at once, in this thread, if the policy would merge
    /// such a delta. `built`: how long the base took and its keys, if it
    /// was built as a merge would (recorded as one, before this merge).
    fn build_over(
        values: FastArt<V>,
        layers: Arc<Layers<V>>,
        len: usize,
        config: HybridConfig,
        built: Option<(Duration, usize)>,
    ) -> Self {
        let merge = config.wants_merge(
            values.len(),
            values.memory_usage(),
            layers.base.len(),
            layers.base.layer_bytes(),
        );
        // A delta merged at once needs no filter: the merge reads its trees.
        // If the merge fails, the delta stays, sealed, and a key its filter
        // would have turned away then costs a descent into it, not a wrong
        // answer.
        let fresh = Delta::of_values(values, !merge);
        let map = Self::from_layers(fresh, layers, len, config);
        if let Some((took, keys)) = built {
            map.inner.record().built(took, keys);
        }
        if merge {
            map.inner.automatic_merge();
        }
        map
    }

    /// A map of `fresh` over `layers`, which hold `len` keys together.
    fn from_layers(
        fresh: Delta<V>,
        layers: Arc<Layers<V>>,
        len: usize,
        config: HybridConfig,
    ) -> Self {
        HybridMap {
            inner: Arc::new(Inner {
                fresh: RwLock::new(fresh),
                layers: ArcSwap::new(layers),
                len: AtomicUsize::new(len),
                write_locks: AtomicU64::new(0),
                config,
                merge_lock: Mutex::new(()),
                merging: AtomicBool::new(false),
                building: AtomicUsize::new(0),
                record: Mutex::new(MergeRecord::default()),
                mailbox: Mailbox::default(),
            }),
        }
    }

    /// Maps the layer file at `path` (written by [`save`](Self::save) or
    /// [`FrozenLayer::save`]) as the base, after checking it in full (see
    /// [`FrozenLayer::open`]), with an empty delta and the default policy.
    ///
    /// The base then lives in the page cache, not on the heap, until the
    /// first merge builds a new one in memory. Until then the file must not
    /// be modified in place, as [`FrozenLayer::open`] says (a file that
    /// shrinks kills the process with `SIGBUS`); saving over it by a rename,
    /// as [`save`](Self::save) does, is safe. For a file from elsewhere,
    /// open it with [`FrozenLayer::open`], check it with
    /// [`FrozenLayer::verify_structure`] and make the map with
    /// [`from_frozen`](Self::from_frozen).
    ///
    /// ```
    /// use memkv::{FrozenLayer, HybridMap};
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("paths.memkv");
    /// FrozenLayer::from_sorted_iter([("etc/hosts", 1u32), ("usr/bin/ls", 2)])?.save(&path)?;
    /// let map = HybridMap::<u32>::open(&path)?;
    /// assert_eq!((map.len(), map.get("usr/bin/ls")), (2, Some(2)));
    /// # #[cfg(not(target_os = "wasi"))] // which reads the file
    /// assert!(map.stats().base_mapped);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with_config(path, HybridConfig::new())
    }

    /// [`open`](Self::open) with the given merge policy.
    ///
    /// ```
    /// use memkv::{HybridConfig, HybridMap};
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("paths.memkv");
    /// HybridMap::<u32>::from_iter([("usr/bin/ls", 1)]).save(&path)?;
    /// let config = HybridConfig::new().manual();
    /// let map = HybridMap::<u32>::open_with_config(&path, config.clone())?;
    /// assert_eq!(map.config(), &config);
    /// assert_eq!(map.get("usr/bin/ls"), Some(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_with_config(path: impl AsRef<Path>, config: HybridConfig) -> Result<Self> {
        Ok(Self::from_frozen(FrozenLayer::open(path)?, config))
    }

    /// Merges everything into the base (see [`freeze`](Self::freeze)) and
    /// writes the base to `path` atomically ([`FrozenLayer::save`]).
    ///
    /// Writes that other threads make while `save` runs may or may not be
    /// in the file.
    ///
    /// A map [`open`](Self::open)ed from `path` may still map that file,
    /// which Windows may refuse to replace: there, save such a map to
    /// another path ([`FrozenLayer::save`] says more).
    ///
    /// ```
    /// use memkv::HybridMap;
    ///
    /// # #[cfg(target_os = "wasi")] // its std::env::temp_dir panics
    /// # tempfile::env::override_temp_dir("/tmp".as_ref()).ok();
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("paths.memkv");
    /// let map = HybridMap::new();
    /// map.insert("usr/bin/ls", 1u32);
    /// map.save(&path)?; // merges first: no `freeze` needed
    /// assert_eq!(map.stats().delta_entries, 0);
    /// assert_eq!(HybridMap::<u32>::open(&path)?.get("usr/bin/ls"), Some(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Panics
    /// As [`freeze`](Self::freeze).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        self.freeze()?;
        let layers = self.inner.layers.load_full();
        layers.base.save(path.as_ref())
    }

    /// The number of keys.
    ///
    /// ```
    /// let map = memkv::HybridMap::new();
    /// map.insert("a", 1u8);
    /// map.freeze()?;
    /// map.insert("a", 2); // an update of a key in the base: not a new key
    /// map.insert("b", 3);
    /// assert_eq!(map.len(), 2);
    /// map.remove("a"); // a tombstone over the base
    /// assert_eq!(map.len(), 1);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    ///
    /// Exact, whatever the writes: after blind writes ([`put`](Self::put),
    /// [`delete`](Self::delete)) to the fresh delta it first looks their
    /// keys up below it, in one batch, which is the lookup those writes left
    /// out. With none since the last call, it is one atomic load under the
    /// read lock. Blind writes that a merge has sealed are counted by that
    /// merge before it builds; a `len` just after the seal waits for that
    /// count (about 1 µs per entry).
    #[inline]
    pub fn len(&self) -> usize {
        self.inner.settle_pending()
    }

    /// Whether the map has no keys.
    ///
    /// ```
    /// let map = memkv::HybridMap::new();
    /// assert!(map.is_empty());
    /// map.insert("a", 1u8);
    /// assert!(!map.is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of `key`, cloned from the delta or decoded from the base.
    ///
    /// ```
    /// let map = memkv::HybridMap::new();
    /// map.insert(b"\x00\xff", vec![1u8, 2]);
    /// assert_eq!(map.get(b"\x00\xff"), Some(vec![1, 2]));
    /// assert_eq!(map.get(b"\x00"), None);
    /// ```
    #[inline]
    pub fn get(&self, key: impl AsRef<[u8]>) -> Option<V> {
        let key = key.as_ref();
        let hash = key_hash(key);
        let (fresh, layers) = self.inner.read_for_lookup(hash);
        if let Some(slot) = fresh.lookup(key, hash) {
            return slot.cloned();
        }
        drop(fresh);
        layers.get(key, hash)
    }

    /// The values of each of `keys`, in the order of `keys`: the same
    /// answers as [`get`](Self::get) for each, from one snapshot of the map,
    /// faster when there are many: the keys the deltas do not decide are
    /// looked up part by part with [`FrozenLayer::get_many`], which overlaps
    /// their cache misses.
    ///
    /// Writers wait while the batch is looked up in the fresh delta (see
    /// the [module documentation](self#concurrency)), not for the base.
    ///
    /// ```
    /// let map: memkv::HybridMap<u64> = [("usr/bin/ls", 1), ("usr/bin/cat", 2)].into_iter().collect();
    /// map.freeze()?;
    /// map.insert("usr/bin/vi", 3);
    /// map.remove("usr/bin/ls");
    /// let found = map.get_many(&["usr/bin/cat", "usr/bin/vi", "usr/bin/ls"]);
    /// assert_eq!(found, [Some(2), Some(3), None]);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn get_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<Option<V>> {
        let hashes: Vec<u64> = keys.iter().map(|key| key_hash(key.as_ref())).collect();
        let mut values = vec![None; keys.len()];
        let mut undecided = Vec::new();
        let fresh = self.inner.read_fresh();
        for (i, key) in keys.iter().enumerate() {
            match fresh.lookup(key.as_ref(), hashes[i]) {
                Some(slot) => values[i] = slot.cloned(),
                None => undecided.push(i),
            }
        }
        // Loaded before the lock is released: see `Inner::layers`.
        let layers = self.inner.layers.load();
        drop(fresh);
        layers.get_many_into(keys, &hashes, undecided, &mut values);
        values
    }

    /// Whether `key` is in the map (does not decode or clone its value).
    ///
    /// ```
    /// let map: memkv::HybridMap<u8> = [("a", 1), ("b", 2)].into_iter().collect();
    /// map.freeze()?;
    /// map.remove("a");
    /// assert!(!map.contains_key("a"));
    /// assert!(map.contains_key(b"b"));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    #[inline]
    pub fn contains_key(&self, key: impl AsRef<[u8]>) -> bool {
        let key = key.as_ref();
        let hash = key_hash(key);
        let (fresh, layers) = self.inner.read_for_lookup(hash);
        if let Some(slot) = fresh.lookup(key, hash) {
            return slot.is_some();
        }
        drop(fresh);
        layers.contains_key(key, hash)
    }

    /// The key-value pair stored under `key`. The key comes back as given
    /// (the base keeps no key whole to lend), the value cloned or decoded.
    ///
    /// ```
    /// let map: memkv::HybridMap<u8> = [("a", 1)].into_iter().collect();
    /// assert_eq!(map.get_key_value("a"), Some(("a", 1)));
    /// assert_eq!(map.get_key_value("b"), None);
    /// ```
    pub fn get_key_value<K: AsRef<[u8]>>(&self, key: K) -> Option<(K, V)> {
        let value = self.get(key.as_ref())?;
        Some((key, value))
    }

    /// Inserts a value; returns the value `key` had before, if any.
    ///
    /// The write goes to the fresh delta. Finding the old value may take a
    /// lookup in the base (done before the write lock is taken).
    ///
    /// ```
    /// let map = memkv::HybridMap::new();
    /// assert_eq!(map.insert("usr/bin/ls", 1u32), None);
    /// map.freeze()?; // now in the base
    /// assert_eq!(map.insert("usr/bin/ls", 2), Some(1));
    /// assert_eq!(map.get("usr/bin/ls"), Some(2));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn insert(&self, key: impl AsRef<[u8]>, value: V) -> Option<V> {
        let key = key.as_ref();
        self.insert_locked(key, value, self.inner.lock_for_write(key))
    }

    /// Inserts `entries` (drained), with the same result as inserting each
    /// in turn. Their values in the layers below the fresh delta are looked
    /// up together first ([`Layers::get_many_into`]), and their paths in the
    /// fresh delta walked side by side, so that each write then finds its
    /// path cached; then each is written under its own write lock, as by
    /// [`insert`](Self::insert).
    fn insert_batch<K: AsRef<[u8]>>(&self, entries: &mut Vec<(K, V)>) {
        let keys: Vec<&[u8]> = entries.iter().map(|(k, _)| k.as_ref()).collect();
        let hashes: Vec<u64> = keys.iter().map(|k| key_hash(k)).collect();
        let seen = self.inner.layers.load();
        let mut older = vec![None; keys.len()];
        seen.get_many_into(&keys, &hashes, (0..keys.len()).collect(), &mut older);
        self.inner.read_fresh().prefetch_paths(&keys);
        drop(keys);
        for ((key, value), (hash, older)) in entries.drain(..).zip(hashes.into_iter().zip(older)) {
            let key = key.as_ref();
            let lock = self.inner.lock_for_write_seen(key, hash, &seen, older);
            self.insert_locked(key, value, lock);
        }
    }

    /// The write of [`insert`](Self::insert), under `lock`.
    fn insert_locked(&self, key: &[u8], value: V, lock: WriteLock<'_, V>) -> Option<V> {
        let WriteLock {
            mut fresh,
            layers,
            mut older,
            hash,
        } = lock;
        // `older`, if not returned, is dropped after `len` is right: its
        // `Drop` may panic.
        let old = insert_into(&mut fresh, key, hash, value, &mut older);
        if old.is_none() {
            self.inner.count(1);
        }
        self.unlock_after_write(fresh, &layers);
        old
    }

    /// Removes `key`; returns the value it had.
    ///
    /// If an older layer (the base, or a delta being merged) holds the key,
    /// this writes a tombstone to the fresh delta; otherwise it removes the
    /// key from the fresh delta outright.
    ///
    /// ```
    /// let map: memkv::HybridMap<u32> = [("a", 1), ("b", 2)].into_iter().collect();
    /// map.freeze()?;
    /// assert_eq!(map.remove("a"), Some(1)); // a tombstone hides the base's entry
    /// assert_eq!(map.remove("a"), None);
    /// assert_eq!((map.len(), map.stats().delta_tombstones), (1, 1));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn remove(&self, key: impl AsRef<[u8]>) -> Option<V> {
        let key = key.as_ref();
        self.remove_locked(key, self.inner.lock_for_write(key))
    }

    /// Removes `key`; returns it with the value it had.
    ///
    /// ```
    /// let map: memkv::HybridMap<u32> = [("a", 1)].into_iter().collect();
    /// assert_eq!(map.remove_entry("a"), Some((b"a".to_vec(), 1)));
    /// assert_eq!(map.remove_entry("a"), None);
    /// ```
    pub fn remove_entry(&self, key: impl AsRef<[u8]>) -> Option<(Vec<u8>, V)> {
        let key = key.as_ref();
        self.remove(key).map(|value| (key.to_vec(), value))
    }

    /// Sets `key` to `value`, like [`insert`](Self::insert) but without
    /// returning the old value: a **blind write**. Unless the fresh delta
    /// already holds `key` settled (not pending, as below), it does not
    /// look the key up in the base (the costly part of an `insert` of a key
    /// the delta does not hold), so it costs about one update of the small
    /// fresh delta.
    ///
    /// The entry stays *pending* until the map learns whether the base held
    /// the key, which only [`len`](Self::len) and `is_empty` need. The next
    /// call to either settles it, with that lookup, in a batch (until then
    /// [`stats`](Self::stats) counts it under `delta_pending`, not in its
    /// `len`); so does the next write to the key that looks below, such as
    /// `insert`; and the merge that seals it counts it, on the merge's
    /// thread, before it builds. Reads, iteration and merges see the value
    /// at once, as after an `insert`.
    ///
    /// ```
    /// let map: memkv::HybridMap<u32> = [("a", 1), ("b", 2)].into_iter().collect();
    /// map.freeze()?;
    /// map.put("a", 10); // over the base: not a new key
    /// map.put("c", 3);
    /// assert_eq!(map.get("a"), Some(10));
    /// assert_eq!(map.stats().delta_pending, 2);
    /// assert_eq!(map.len(), 3); // exact: "a" and "c" looked up in the base here
    /// assert_eq!(map.stats().delta_pending, 0);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn put(&self, key: impl AsRef<[u8]>, value: V) {
        self.write_blind(key.as_ref(), Some(value));
    }

    /// Removes `key`, like [`remove`](Self::remove) but without returning
    /// the old value: a blind write, as [`put`](Self::put). Unless the fresh
    /// delta already holds `key` settled, it writes a pending tombstone
    /// without looking in the base (over a pending entry too); a merge
    /// drops the tombstone, and whatever it hid.
    ///
    /// ```
    /// let map: memkv::HybridMap<u32> = [("a", 1), ("b", 2)].into_iter().collect();
    /// map.freeze()?;
    /// map.delete("a");
    /// map.delete("x"); // absent: a tombstone that hides nothing
    /// assert_eq!(map.get("a"), None);
    /// assert_eq!(map.len(), 1);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn delete(&self, key: impl AsRef<[u8]>) {
        self.write_blind(key.as_ref(), None);
    }

    /// The write of [`put`](Self::put) (a value) and
    /// [`delete`](Self::delete) (`None`).
    fn write_blind(&self, key: &[u8], slot: Option<V>) {
        let hash = key_hash(key);
        let mut fresh = self.inner.write_fresh();
        if fresh.has_settled(key, hash) {
            // Its entry's standing over the base is known, and a pending
            // one would lose it: write as `insert` and `remove` do (they
            // look below, which a delta-held key seldom needs long for).
            drop(fresh);
            match slot {
                Some(value) => drop(self.insert(key, value)),
                None => drop(self.remove(key)),
            }
            return;
        }
        let layers = self.inner.layers.load();
        let replaced = fresh.put_pending(key, hash, slot);
        self.unlock_after_write(fresh, &layers);
        // After the lock: its `Drop` may panic.
        drop(replaced);
    }

    /// The write of [`remove`](Self::remove), under `lock`.
    fn remove_locked(&self, key: &[u8], lock: WriteLock<'_, V>) -> Option<V> {
        let WriteLock {
            mut fresh,
            layers,
            mut older,
            hash,
        } = lock;
        // As in `insert_locked`: `older` is dropped after `len` is right.
        let old = remove_from(&mut fresh, key, hash, &mut older);
        if old.is_some() {
            self.inner.count(-1);
            self.unlock_after_write(fresh, &layers);
        }
        old
    }

    /// Removes every key. Waits for a running merge to end first.
    ///
    /// ```
    /// let map: memkv::HybridMap<u32> = [("a", 1)].into_iter().collect();
    /// map.freeze()?;
    /// map.clear();
    /// assert!(map.is_empty() && map.get("a").is_none());
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn clear(&self) {
        let merging = self.inner.lock_merges();
        let mut fresh = self.inner.write_fresh();
        let seals = self.inner.layers.load().seals + 1;
        let empty = Delta::with_capacity(self.inner.config.delta_keys_hint(0, 0));
        let old_fresh = mem::replace(&mut *fresh, empty);
        let old_layers = self.inner.layers.swap(Arc::new(Layers {
            deltas: Vec::new(),
            base: Base::whole(empty_layer()),
            seals,
        }));
        self.inner.len.store(0, Ordering::Release);
        drop((fresh, merging));
        // The old values last, with no lock held and the map already
        // empty: a value's `Drop` that panics leaves `len` right.
        drop((old_layers, old_fresh));
    }

    /// All entries in key order: a snapshot (see [`Iter`]).
    ///
    /// ```
    /// let map: memkv::HybridMap<u32> = [("b", 2), ("a", 1)].into_iter().collect();
    /// map.freeze()?;
    /// map.insert("c", 3);
    /// let entries: Vec<_> = map.iter().collect();
    /// map.insert("d", 4); // not in the snapshot above
    /// assert_eq!(entries, [(b"a".to_vec(), 1), (b"b".to_vec(), 2), (b"c".to_vec(), 3)]);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn iter(&self) -> Iter<V> {
        self.iter_bounds(Bound::Unbounded, Bound::Unbounded)
    }

    /// The entries whose keys `automaton` accepts, in key order: a snapshot,
    /// as [`iter`](Self::iter), searched with the automata
    /// [`FrozenLayer::search`](crate::FrozenLayer::search) takes
    /// ([`frozen::automaton`](crate::frozen::automaton)).
    ///
    /// Each layer's walk feeds the automaton its nodes' keys as
    /// [`FastArt::search`](crate::FastArt::search)'s does, and leaves the
    /// subtrees under a dead end (bytes after which the automaton cannot
    /// match) unvisited; the layers' matching entries are then merged. The
    /// snapshot's copy of the small mutable delta holds only those entries:
    /// the automaton runs over that delta while the copy holds its read
    /// lock, so writers wait for that walk (not for the rest of the search),
    /// and the automaton must not use the map (a write from it would wait
    /// for itself).
    ///
    /// ```
    /// use memkv::frozen::automaton::{Automaton, Subsequence};
    ///
    /// let map: memkv::HybridMap<u32> =
    ///     [("usr/bin/cat", 1), ("usr/lib/cat.so", 2), ("var/cache", 3)].into_iter().collect();
    /// map.freeze()?;
    /// map.remove("usr/bin/cat");
    /// map.insert("usr/local/cat", 4);
    /// let fuzzy: Vec<u32> = map.search(Subsequence::new("uca")).map(|(_, v)| v).collect();
    /// assert_eq!(fuzzy, [2, 4]);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn search<A: fst::Automaton>(&self, automaton: A) -> Search<V, A> {
        let mut pruner = Pruner::new(automaton);
        let all = (Bound::Unbounded, Bound::Unbounded);
        let (entries, _) = self.snapshot_guarded(all, &mut pruner);
        Search::new(entries, pruner)
    }

    /// All keys in order: a snapshot, as [`iter`](Self::iter).
    ///
    /// ```
    /// let map: memkv::HybridMap<u32> = [("b", 2), ("a", 1)].into_iter().collect();
    /// assert_eq!(map.keys().collect::<Vec<_>>(), [b"a".to_vec(), b"b".to_vec()]);
    /// ```
    pub fn keys(&self) -> Keys<V> {
        Keys::new(self.iter())
    }

    /// All values in key order: a snapshot, as [`iter`](Self::iter).
    ///
    /// ```
    /// let map: memkv::HybridMap<u32> = [("b", 2), ("a", 1)].into_iter().collect();
    /// assert_eq!(map.values().collect::<Vec<_>>(), [1, 2]);
    /// ```
    pub fn values(&self) -> Values<V> {
        Values::new(self.iter())
    }

    /// The entries whose keys lie in `range`, in key order: a snapshot. An
    /// inverted or empty range yields nothing (it does not panic).
    ///
    /// The bounds may be any bytes: `"b"..`, `"a"..="c"`,
    /// `&b"a"[..]..=&b"b"[..]`, `Vec<u8>`s. Where Rust can read the bounds'
    /// type more than one way, name it: `..` as `range::<[u8], _>(..)` (or
    /// call `iter`), a range of byte-string literals, which is over arrays,
    /// as `range::<[u8; 1], _>(b"a"..b"b")`, and a pair of `Bound`s as
    /// `range::<[u8], _>((lower, upper))` (`::<str, _>` for `&str` bounds).
    ///
    /// ```
    /// let map: memkv::HybridMap<u8> = [("a", 1), ("b", 2), ("c", 3)].into_iter().collect();
    /// let keys: Vec<_> = map.range("b"..).map(|(k, _)| k).collect();
    /// assert_eq!(keys, [b"b".to_vec(), b"c".to_vec()]);
    /// assert_eq!(map.range(&b"a"[..]..=&b"b"[..]).count(), 2);
    /// ```
    pub fn range<T, R>(&self, range: R) -> Iter<V>
    where
        T: AsRef<[u8]> + ?Sized,
        R: RangeBounds<T>,
    {
        self.iter_bounds(
            owned_bound(range.start_bound()),
            owned_bound(range.end_bound()),
        )
    }

    /// The entries whose keys start with `prefix`, in key order: a snapshot.
    ///
    /// ```
    /// let map: memkv::HybridMap<u8> = [("ab", 1), ("abc", 2), ("b", 3)].into_iter().collect();
    /// assert_eq!(map.prefix("ab").count(), 2);
    /// ```
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Iter<V> {
        let prefix = prefix.as_ref();
        let end = match prefix_successor(prefix) {
            Some(end) => Bound::Excluded(end),
            None => Bound::Unbounded,
        };
        self.iter_bounds(Bound::Included(prefix.to_vec()), end)
    }

    /// The entries whose keys are prefixes of `key` (`key` itself
    /// included), shortest first: the inverse of [`prefix`](Self::prefix),
    /// as a router or a rule table asks it. A snapshot, taken as
    /// [`get`](Self::get) takes one: the fresh delta under its read lock,
    /// then the layers below, where a newer layer's entry or tombstone
    /// decides each prefix.
    ///
    /// Each layer is walked along `key` once; a base in several parts (from
    /// about a million keys) in each part that answers for some prefix of
    /// `key`, from the first, which holds the empty one: 2.6–4.2 parts per
    /// query over 7 to 98 parts, in a count over the sample's paths.
    /// [`longest_prefix_of`](Self::longest_prefix_of) searches from the
    /// key's own part back, and stops in the first that holds a match
    /// (almost always that one). The keys yielded are slices of `key`,
    /// which is therefore borrowed, not taken by value.
    ///
    /// ```
    /// let map: memkv::HybridMap<u8> = [("usr/", 1), ("usr/bin/", 2)].into_iter().collect();
    /// map.freeze()?;
    /// map.insert("usr/bin/ls", 3);
    /// map.remove("usr/");
    /// let covering: Vec<_> = map.prefixes_of("usr/bin/ls").collect();
    /// assert_eq!(covering, [(&b"usr/bin/"[..], 2), (&b"usr/bin/ls"[..], 3)]);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn prefixes_of<'k, K: AsRef<[u8]> + ?Sized>(&self, key: &'k K) -> PrefixesOf<'k, V> {
        let key = key.as_ref();
        let (mut said, layers) = self.deltas_on_prefixes_of(key);
        layers
            .base
            .prefixes_of(key, |len, value| said.push((len, Some(value))));
        // The deltas' words come first among equal lengths (a stable sort).
        said.sort_by_key(|&(len, _)| len);
        said.dedup_by_key(|&mut (len, _)| len);
        let live = said.into_iter();
        PrefixesOf::new(
            live.filter_map(|(len, slot)| Some((&key[..len], slot?)))
                .collect(),
        )
    }

    /// What the deltas say about each prefix of `key` (a value, or `None`
    /// for a tombstone), in order of length, the newest delta's word on
    /// each; and the layers under the fresh delta, of the same snapshot.
    fn deltas_on_prefixes_of(
        &self,
        key: &[u8],
    ) -> (PrefixWords<V>, arc_swap::Guard<Arc<Layers<V>>>) {
        let mut said = PrefixWords::new();
        let fresh = self.inner.read_fresh();
        fresh.prefixes_of(key, |len, slot| said.push((len, slot.cloned())));
        // Loaded before the lock is released: see `Inner::layers`.
        let layers = self.inner.layers.load();
        drop(fresh);
        layers.deltas_prefixes_of(key, |len, slot| said.push((len, slot.cloned())));
        // The first word on a length decides it: a stable sort keeps the
        // newest first among equal lengths, and `dedup` keeps the first.
        said.sort_by_key(|&(len, _)| len);
        said.dedup_by_key(|&mut (len, _)| len);
        (said, layers)
    }

    /// The entry whose key is the longest prefix of `key` (`key` itself, if
    /// present): the most specific match. The key returned is a slice of
    /// `key`.
    ///
    /// ```
    /// let map: memkv::HybridMap<u8> = [("", 0), ("a", 1), ("abc", 3)].into_iter().collect();
    /// assert_eq!(map.longest_prefix_of("abcd"), Some((&b"abc"[..], 3)));
    /// map.remove("abc");
    /// assert_eq!(map.longest_prefix_of("abcd"), Some((&b"a"[..], 1)));
    /// ```
    pub fn longest_prefix_of<'k, K: AsRef<[u8]> + ?Sized>(
        &self,
        key: &'k K,
    ) -> Option<(&'k [u8], V)> {
        let key = key.as_ref();
        let (said, layers) = self.deltas_on_prefixes_of(key);
        // The longest the deltas hold, and the longest the base holds that
        // no delta has a word on; the longer of the two.
        let in_deltas = (said.iter().rev()).find_map(|(len, slot)| Some((*len, slot.as_ref()?)));
        let undecided = |len: usize| said.binary_search_by_key(&len, |&(len, _)| len).is_err();
        let in_base = layers.base.longest_prefix_where(key, undecided);
        let longest = match (in_deltas, in_base) {
            (Some((len, value)), base) if base.as_ref().is_none_or(|&(l, _)| l < len) => {
                (len, value.clone())
            }
            (_, base) => base?,
        };
        Some((&key[..longest.0], longest.1))
    }

    fn iter_bounds(&self, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> Iter<V> {
        self.snapshot_with_locks(start, end).0
    }

    /// A snapshot of the entries within the bounds, and the count of write
    /// locks taken before it (see [`Inner::write_locks`]).
    fn snapshot_with_locks(&self, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> (Iter<V>, u64) {
        self.snapshot_guarded((start, end), &mut Unguarded)
    }

    /// [`snapshot_with_locks`](Self::snapshot_with_locks), whose copy of
    /// the fresh delta holds the entries `guard` lets through.
    fn snapshot_guarded<G: Guard>(
        &self,
        (start, end): (Bound<Vec<u8>>, Bound<Vec<u8>>),
        guard: &mut G,
    ) -> (Iter<V>, u64) {
        let parts = self.snapshot_parts((as_slice(&start), as_slice(&end)), guard);
        let entries = Iter::new(Some(parts.copy), &parts.layers, start, end);
        (entries, parts.write_locks)
    }

    /// A snapshot of the whole map and its exact number of entries, for a
    /// writer that needs the count first (serde's `serialize_map`).
    #[cfg(feature = "serde")]
    pub(crate) fn counted_snapshot(&self) -> (usize, Iter<V>) {
        let whole = (Bound::Unbounded, Bound::Unbounded);
        let mut parts = self.snapshot_parts(whole, &mut Unguarded);
        if parts.settled_len.is_none() {
            // Blind writes left entries pending: settle them and try again.
            self.inner.settle_pending();
            parts = self.snapshot_parts(whole, &mut Unguarded);
        }
        let SnapshotParts {
            copy,
            layers,
            settled_len,
            ..
        } = parts;
        let entries = |copy| Iter::new(Some(copy), &layers, Bound::Unbounded, Bound::Unbounded);
        let len = match settled_len {
            Some(len) => self.inner.with_sealed_pending(len, &layers),
            // Blind writers on other threads keep entries pending: count a
            // second merge of the same snapshot.
            None => {
                let mut walk = entries(copy.clone());
                let mut len = 0;
                while walk.next_entry().is_some() {
                    len += 1;
                }
                len
            }
        };
        (len, entries(copy))
    }

    /// What a snapshot of the entries within `bounds` is made of, the fresh
    /// delta's copy holding those that `guard` lets through.
    fn snapshot_parts<G: Guard>(
        &self,
        bounds: (Bound<&[u8]>, Bound<&[u8]>),
        guard: &mut G,
    ) -> SnapshotParts<V> {
        let mut copy = Batch::new();
        let fresh = self.inner.read_fresh();
        let push = |key: &[u8], slot: Option<&V>| {
            copy.push(key, slot.cloned());
            ControlFlow::Continue(())
        };
        if G::PRUNES {
            fresh.visit_guarded(bounds, guard, push);
        } else {
            fresh.visit(bounds, push);
        }
        let layers = self.inner.layers.load();
        let write_locks = self.inner.write_locks.load(Ordering::Relaxed);
        let settled_len = (fresh.pending() == 0).then(|| self.inner.len.load(Ordering::Acquire));
        drop(fresh);
        SnapshotParts {
            copy,
            layers,
            write_locks,
            settled_len,
        }
    }

    /// The first entry in key order.
    ///
    /// ```
    /// let map = memkv::HybridMap::new();
    /// assert_eq!(map.first_key_value(), None);
    /// map.insert("b", 2u8);
    /// map.insert("a", 1);
    /// assert_eq!(map.first_key_value(), Some((b"a".to_vec(), 1)));
    /// ```
    pub fn first_key_value(&self) -> Option<(Vec<u8>, V)> {
        self.edge(Edge::First)
    }

    /// The last entry in key order, found by looking at the end of each
    /// layer (no iterator is built).
    ///
    /// ```
    /// let map: memkv::HybridMap<u8> = [("a", 1), ("b", 2)].into_iter().collect();
    /// map.freeze()?;
    /// map.remove("b");
    /// assert_eq!(map.last_key_value(), Some((b"a".to_vec(), 1)));
    /// assert_eq!(map.first_key_value(), Some((b"a".to_vec(), 1)));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn last_key_value(&self) -> Option<(Vec<u8>, V)> {
        self.edge(Edge::Last)
    }

    /// The first or last entry, from the fresh delta (locked) and the
    /// layers below it.
    fn edge(&self, edge: Edge) -> Option<(Vec<u8>, V)> {
        let fresh = self.inner.read_fresh();
        let layers = self.inner.layers.load();
        edge_in(&fresh, &layers, edge)
    }

    /// Removes and returns the first entry in key order.
    ///
    /// The entry is found and removed under the fresh delta's write lock,
    /// so no other write comes between: what it returns was the first
    /// entry when it was removed.
    ///
    /// Popping a key that lives below the fresh delta leaves a tombstone.
    /// The map remembers where the last pop from each end left off (until a
    /// write crosses it), so the next pop starts there instead of stepping
    /// over those tombstones again: draining a frozen map by pops costs
    /// about as much per pop at the end as at the start.
    ///
    /// ```
    /// let map: memkv::HybridMap<u8> = [("a", 1), ("b", 2)].into_iter().collect();
    /// map.freeze()?;
    /// assert_eq!(map.pop_first(), Some((b"a".to_vec(), 1)));
    /// assert_eq!(map.pop_first(), Some((b"b".to_vec(), 2)));
    /// assert_eq!(map.pop_first(), None);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn pop_first(&self) -> Option<(Vec<u8>, V)> {
        self.pop(Edge::First)
    }

    /// Removes and returns the last entry in key order; as
    /// [`pop_first`](Self::pop_first).
    ///
    /// ```
    /// let map: memkv::HybridMap<u8> = [("a", 1), ("b", 2)].into_iter().collect();
    /// assert_eq!(map.pop_last(), Some((b"b".to_vec(), 2)));
    /// assert_eq!(map.len(), 1);
    /// ```
    pub fn pop_last(&self) -> Option<(Vec<u8>, V)> {
        self.pop(Edge::Last)
    }

    fn pop(&self, edge: Edge) -> Option<(Vec<u8>, V)> {
        let fresh = self.inner.write_fresh();
        let layers = self.inner.layers.load();
        let (key, _) = edge_in(&fresh, &layers, edge)?;
        let hash = key_hash(&key);
        // While the write lock is held no seal can come, so `layers` stays
        // what lies under the fresh delta (merges only swap in parts that
        // answer alike).
        let older = layers.get(&key, hash);
        // Nothing lies before `key` at this end, and the removal below,
        // under the same lock, takes `key` too (a tombstone or a removal
        // leaves the end true): the next pop starts past it, not over every
        // tombstone pops left.
        fresh.note_empty_end(edge, &key);
        let lock = self
            .inner
            .settled_write_lock(&key, fresh, layers, older, hash);
        let value = self.remove_locked(&key, lock);
        debug_assert!(value.is_some(), "the edge entry is in the map");
        Some((key, value?))
    }

    /// Keeps only the entries for which `keep` returns true.
    ///
    /// `keep` is asked about each entry of a snapshot (as [`iter`](Self::iter)
    /// takes), in key order, with no lock held; each entry it rejects is then
    /// removed under the write lock, as by [`remove`](Self::remove). Unlike
    /// `BTreeMap::retain`, `keep` gets `&V`: the values are copies (decoded
    /// from the base), so changing one would be a write of every entry; use
    /// [`insert`](Self::insert) or [`entry`](Self::entry) for that.
    ///
    /// Other threads may write meanwhile. An entry written after the snapshot
    /// is never removed on the strength of its old value: once any other
    /// write has come since the snapshot, `keep` is asked again about each
    /// entry it rejects, under the write lock, with the entry's current
    /// value. So it may see a key twice, and it must not use the map (it
    /// cannot tell which call holds the lock). Keys inserted after the
    /// snapshot are not visited. If `keep` panics, the entries removed so far stay
    /// removed.
    ///
    /// ```
    /// let map: memkv::HybridMap<u32> = (0..10u32).map(|i| (i.to_string(), i)).collect();
    /// map.freeze()?;
    /// map.insert("10", 10);
    /// map.retain(|_key, value| value % 2 == 0);
    /// assert_eq!(map.len(), 6);
    /// assert_eq!(map.get("3"), None);
    /// assert_eq!(map.get("10"), Some(10));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn retain(&self, mut keep: impl FnMut(&[u8], &V) -> bool) {
        let (mut entries, snapshot_locks) =
            self.snapshot_with_locks(Bound::Unbounded, Bound::Unbounded);
        let mut own_locks = 0;
        while let Some((key, value)) = entries.next_entry() {
            if keep(key, &value) {
                continue;
            }
            let lock = self.inner.lock_for_write(key);
            own_locks += 1;
            // Only our own write locks since the snapshot: every entry is
            // as the snapshot has it. Once another writer came, that stays
            // unknown for the rest of the walk.
            let unchanged =
                self.inner.write_locks.load(Ordering::Relaxed) == snapshot_locks + own_locks;
            if !unchanged {
                let current = match lock.fresh.lookup(key, lock.hash) {
                    Some(slot) => slot.cloned(),
                    None => lock.older.clone(),
                };
                match current {
                    Some(value) if !keep(key, &value) => {}
                    _ => continue,
                }
            }
            self.remove_locked(key, lock);
        }
    }

    /// The entry for `key`, to read and change it in place, holding the
    /// fresh delta's write lock until the entry is dropped.
    ///
    /// Whatever the entry does (insert, modify, remove) happens as one write:
    /// no other write to the map comes between the entry's lookup and its
    /// change. The price is the lock: while an entry lives, readers of the
    /// fresh delta and other writers wait for it, so keep it short, and do
    /// not use the map from the thread that holds it (that deadlocks, as
    /// with any `RwLock`). Values come back as copies, as from
    /// [`get`](Self::get).
    ///
    /// ```
    /// let map: memkv::HybridMap<u64> = [("usr/bin/ls", 10)].into_iter().collect();
    /// map.freeze()?;
    /// for (path, bytes) in [("usr/bin/ls", 1), ("usr/bin/cp", 5), ("usr/bin/cp", 2)] {
    ///     map.entry(path).and_modify(|total| *total += bytes).or_insert(bytes);
    /// }
    /// assert_eq!(map.get("usr/bin/ls"), Some(11));
    /// assert_eq!(map.get("usr/bin/cp"), Some(7));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn entry<K: AsRef<[u8]>>(&self, key: K) -> Entry<'_, K, V> {
        let lock = self.inner.lock_for_write(key.as_ref());
        Entry::new(self, key, lock)
    }

    /// Merges the delta into the base now, in this thread, and returns when
    /// the new base is in place. If a merge is running (in the background),
    /// waits for it first, then merges what was written since.
    ///
    /// Reads and writes from other threads go on meanwhile; writes made
    /// after the merge began stay in the (new) fresh delta.
    ///
    /// ```
    /// let map: memkv::HybridMap<u64> = (0..1000u64).map(|i| (format!("k{i}"), i)).collect();
    /// map.freeze()?;
    /// let stats = map.stats();
    /// assert_eq!((stats.base_keys, stats.delta_entries), (1000, 0));
    /// assert!(stats.last_merge_at.is_some());
    /// # Ok::<(), memkv::Error>(())
    /// ```
    ///
    /// # Errors
    /// The builder's error ([`FrozenLayerBuilder`]), e.g. an I/O error.
    /// The map is then unchanged: nothing is lost, and a later merge retries.
    ///
    /// # Panics
    /// If [`FrozenValue::encode`] panics on a value, the panic is passed on,
    /// after the map has been left as it was. If a merged value's `Drop`
    /// panics, the panic is passed on after the merge is done (and
    /// [`stats`](Self::stats)`().last_error` tells of it).
    pub fn freeze(&self) -> Result<()> {
        let guard = self.inner.lock_merges();
        match self.inner.merge(&guard) {
            Merged::Nothing | Merged::Done | Merged::Cancelled => Ok(()),
            Merged::Failed(Outcome::Failed(err)) => Err(err),
            Merged::Failed(Outcome::Panicked(payload)) | Merged::DoneThenDropPanicked(payload) => {
                drop(guard);
                panic::resume_unwind(payload)
            }
            Merged::Failed(_) => Ok(()),
        }
    }

    /// Asks for a merge on a background thread (started if none is running,
    /// even when the policy merges inline) and returns at once. Failures
    /// show in [`stats`](Self::stats). A merge running elsewhere (a
    /// [`freeze`](Self::freeze) on another thread) is waited for, and this
    /// one merges what came after it.
    ///
    /// [`freeze`](Self::freeze) waits for a merge that is running, so it
    /// serves to wait for this one:
    ///
    /// ```
    /// let map = memkv::HybridConfig::new().manual().build::<u64>();
    /// for i in 0..1000u64 {
    ///     map.insert(format!("k{i:04}"), i);
    /// }
    /// map.merge_in_background(); // returns at once
    /// map.freeze()?; // waits for it, then merges what is left: nothing
    /// let stats = map.stats();
    /// assert_eq!((stats.merges, stats.base_keys, stats.delta_entries), (1, 1000, 0));
    /// assert_eq!(map.get("k0042"), Some(42));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn merge_in_background(&self) {
        let inner = &self.inner;
        let started = inner.mailbox.request(|| {
            let inner = Arc::clone(inner);
            thread::Builder::new()
                .name("memkv-hybrid-merge".into())
                .spawn(move || {
                    while inner.mailbox.next() {
                        // The merge catches what user code may throw; this
                        // is for anything else: the thread must go on (it
                        // is `running` until `next` says otherwise), and
                        // the panic must show.
                        let merged = panic::catch_unwind(panic::AssertUnwindSafe(|| {
                            inner.requested_merge();
                        }));
                        if let Err(payload) = merged {
                            inner.record().failed(&Outcome::Panicked(payload));
                        }
                    }
                })
        });
        if !started {
            inner.record().last_error = Some("could not start a merge thread".into());
            inner.requested_merge();
        }
    }

    /// Whether the policy asks for a merge, given the fresh delta (locked)
    /// and the layers.
    #[inline]
    fn wants_merge(&self, fresh: &Delta<V>, layers: &Layers<V>) -> bool {
        self.inner.config.wants_merge(
            fresh.len(),
            fresh.memory_usage(),
            layers.base.len(),
            layers.base.layer_bytes(),
        )
    }

    /// Releases the fresh delta after a write, then starts a merge if the
    /// policy asks for one.
    fn unlock_after_write(&self, fresh: RwLockWriteGuard<'_, Delta<V>>, layers: &Layers<V>) {
        let merge = self.wants_merge(&fresh, layers);
        drop(fresh);
        if merge {
            self.start_automatic_merge();
        }
    }

    fn start_automatic_merge(&self) {
        if self.inner.config.background {
            self.merge_in_background();
        } else {
            self.inner.automatic_merge();
        }
    }

    /// Sizes of the layers and the history of merges.
    ///
    /// ```
    /// let map = memkv::HybridMap::new();
    /// map.insert("a", 1u64);
    /// map.freeze()?;
    /// map.remove("a");
    /// let stats = map.stats();
    /// assert_eq!((stats.len, stats.base_keys, stats.delta_tombstones, stats.merges), (0, 1, 1, 1));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn stats(&self) -> HybridStats {
        let fresh = self.inner.read_fresh();
        let layers = self.inner.layers.load_full();
        let (entries, tombstones, bytes) = (fresh.len(), fresh.tombstones(), fresh.memory_usage());
        let pending = fresh.pending();
        let settled = self.inner.len.load(Ordering::Acquire);
        drop(fresh);
        let len = self.inner.with_sealed_pending(settled, &layers);
        let record = self.inner.record();
        HybridStats {
            len,
            base_keys: layers.base.len(),
            base_bytes: layers.base.layer_bytes(),
            base_parts: layers.base.parts().len(),
            base_mapped: layers.base.mapped_bytes() > 0,
            delta_entries: entries + layers.delta_entries(),
            delta_tombstones: tombstones + layers.delta_tombstones(),
            delta_pending: pending,
            delta_bytes: bytes + layers.delta_bytes(),
            sealed_deltas: layers.deltas.len(),
            merging: self.inner.merging.load(Ordering::Relaxed),
            building_bytes: self.inner.building.load(Ordering::Relaxed),
            merges: record.merges,
            failed_merges: record.failed,
            last_merge_duration: record.last_duration,
            last_merge_at: record.last_at,
            last_merge_keys: record.last_keys,
            last_error: record.last_error.clone(),
        }
    }

    /// Whether a merge is running: [`stats`](Self::stats)`().merging`,
    /// without the rest.
    ///
    /// ```
    /// let map = memkv::HybridConfig::new().manual().build::<u64>();
    /// map.insert("a", 1);
    /// assert!(!map.is_merging());
    /// ```
    pub fn is_merging(&self) -> bool {
        self.inner.merging.load(Ordering::Relaxed)
    }

    /// Heap bytes held by the map: the deltas (see
    /// [`FastArt::memory_usage`](crate::FastArt::memory_usage)), the base when it is on the heap (0 when it
    /// is mapped from a file: see [`FrozenLayer::memory_usage`]), and, while
    /// a merge runs, the bytes written so far of the base it builds (the
    /// builder's buffer may hold up to twice that). Layers that a live
    /// [`Iter`] keeps after a merge replaced them are not counted.
    ///
    /// ```
    /// let map = memkv::HybridConfig::new().manual().build::<u64>();
    /// let empty = map.memory_usage();
    /// for i in 0..10_000u64 {
    ///     map.insert(format!("usr/share/doc/{i:05}"), i);
    /// }
    /// let in_delta = map.memory_usage();
    /// assert!(in_delta > empty);
    /// map.freeze()?;
    /// assert!(map.memory_usage() < in_delta / 2); // the frozen base is much smaller
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn memory_usage(&self) -> usize {
        let fresh_bytes = self.inner.read_fresh().memory_usage();
        let layers = self.inner.layers.load();
        fresh_bytes
            + layers.delta_bytes()
            + layers.base.memory_usage()
            + self.inner.building.load(Ordering::Relaxed)
    }

    /// The policy this map merges by.
    ///
    /// ```
    /// use memkv::HybridConfig;
    ///
    /// let config = HybridConfig::new().part_keys(1 << 16);
    /// let map = config.clone().build::<u64>();
    /// assert_eq!(map.config(), &config);
    /// ```
    pub fn config(&self) -> &HybridConfig {
        &self.inner.config
    }
}

/// The first or last entry of the map whose fresh delta is `fresh` (locked
/// by the caller) over `layers`: the extreme key over all layers, resolved
/// through them; past a tombstone, the next one. The search starts past
/// the fresh delta's empty end, and moves that end past the tombstones it
/// stepped over.
fn edge_in<V: FrozenValue + Clone>(
    fresh: &Delta<V>,
    layers: &Layers<V>,
    edge: Edge,
) -> Option<(Vec<u8>, V)> {
    // Keys at or beyond `beyond` are known to be absent.
    let start = fresh.empty_end(edge);
    let mut beyond = start.clone();
    loop {
        let bound = match &beyond {
            Some(key) => Bound::Excluded(key.as_slice()),
            None => Bound::Unbounded,
        };
        let mut best: Option<(Vec<u8>, Option<V>)> = None;
        let mut offer = |key: &[u8], value: Option<V>| {
            let better = match &best {
                None => true,
                Some((b, _)) => match edge {
                    Edge::First => key < b.as_slice(),
                    Edge::Last => key > b.as_slice(),
                },
            };
            // Equal keys keep the first (newest) offer.
            if better {
                best = Some((key.to_vec(), value));
            }
        };
        for delta in std::iter::once(fresh).chain(layers.deltas.iter().map(|d| &**d)) {
            let (bounds, last) = match edge {
                Edge::First => ((bound, Bound::Unbounded), false),
                Edge::Last => ((Bound::Unbounded, bound), true),
            };
            delta.edge(bounds, last, |key, slot| offer(key, slot.cloned()));
        }
        let from_base = match edge {
            Edge::First => layers.base.first_from(bound),
            Edge::Last => layers.base.last_before(bound),
        };
        if let Some((key, value)) = from_base {
            offer(&key, Some(value));
        }
        let Some((key, value)) = best else {
            note_tombstones_passed(fresh, edge, &start, &beyond);
            return None;
        };
        match value {
            Some(value) => {
                note_tombstones_passed(fresh, edge, &start, &beyond);
                return Some((key, value));
            }
            None => beyond = Some(key),
        }
    }
}

/// Records in `fresh` that the map is empty up to `beyond` at `edge`, if a
/// search that started at `start` stepped over tombstones to get there.
fn note_tombstones_passed<V>(
    fresh: &Delta<V>,
    edge: Edge,
    start: &Option<Vec<u8>>,
    beyond: &Option<Vec<u8>>,
) {
    if let Some(key) = beyond
        && beyond != start
    {
        fresh.note_empty_end(edge, key);
    }
}

/// Writes `value` for `key` to the fresh delta, over older layers that
/// hold `older` for it; returns the value the map had (taken from `older`
/// if it is that one). The caller holds the write lock, counts a new key in
/// `len`, and only then drops what is left in `older`.
fn insert_into<V>(
    fresh: &mut Delta<V>,
    key: &[u8],
    hash: u64,
    value: V,
    older: &mut Option<V>,
) -> Option<V> {
    match fresh.put(key, hash, Some(value)) {
        Some(Some(old)) => Some(old),
        Some(None) => None,
        None => older.take(),
    }
}

/// Removes `key` through the fresh delta, over older layers that hold
/// `older` for it; returns the value the map had (taken from `older` if it
/// is that one). The caller holds the write lock, uncounts a removed key in
/// `len`, and only then drops what is left in `older`.
fn remove_from<V>(fresh: &mut Delta<V>, key: &[u8], hash: u64, older: &mut Option<V>) -> Option<V> {
    match fresh.lookup(key, hash) {
        // Only this delta has it: remove it outright.
        Some(Some(_)) if older.is_none() => fresh.remove(key).flatten(),
        // An older layer has it too: a tombstone must hide that.
        Some(Some(_)) => fresh.put(key, hash, None).flatten(),
        Some(None) => None,
        None => {
            if older.is_some() {
                fresh.put(key, hash, None);
            }
            older.take()
        }
    }
}

impl<V: FrozenValue> Drop for HybridMap<V> {
    /// Stops the merge thread: a running merge gives up at its next check
    /// (every few thousand keys, well under a millisecond), and the thread
    /// is joined.
    fn drop(&mut self) {
        if let Some(thread) = self.inner.mailbox.shutdown() {
            // A panic on the merge thread was already reported by the
            // panic hook; dropping must not panic again.
            let _ = thread.join();
        }
    }
}

impl<V> Clone for HybridMap<V>
where
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    /// A copy of the map as it is now, with the same policy, that then
    /// goes its own way. The frozen layers are immutable, so the copy
    /// shares them (each map's [`memory_usage`](HybridMap::memory_usage)
    /// counts them, but they are held once) and copies only the fresh
    /// delta, under its read lock: it costs as much as an
    /// [`iter`](HybridMap::iter), not a copy of every key. Its
    /// [`stats`](HybridMap::stats) count its own merges, from none.
    ///
    /// ```
    /// let map: memkv::HybridMap<u32> = [("a", 1), ("b", 2)].into_iter().collect();
    /// map.freeze()?;
    /// map.insert("c", 3);
    /// let copy = map.clone();
    /// copy.remove("a");
    /// map.insert("d", 4);
    /// assert_eq!(map.len(), 4);
    /// assert_eq!(copy.keys().collect::<Vec<_>>(), [b"b".to_vec(), b"c".to_vec()]);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    fn clone(&self) -> Self {
        let fresh = self.inner.read_fresh();
        // Under the read lock no write is under way, so the fresh delta
        // (pending entries and all), the layers under it and the count
        // agree.
        let layers = self.inner.layers.load_full();
        let len = self.inner.len.load(Ordering::Acquire);
        HybridMap::from_layers(fresh.clone(), layers, len, self.inner.config.clone())
    }
}

impl<V> PartialEq for HybridMap<V>
where
    V: FrozenValue + Clone + Send + Sync + PartialEq + 'static,
{
    /// Whether both maps hold the same entries, whatever their layers:
    /// the entries are compared in key order, as two [`iter`](HybridMap::iter)s
    /// give them, so writes by other threads meanwhile may or may not count.
    ///
    /// ```
    /// let a: memkv::HybridMap<u32> = [("a", 1), ("b", 2)].into_iter().collect();
    /// let b = memkv::HybridMap::new();
    /// b.insert("b", 2);
    /// b.insert("c", 3);
    /// b.freeze()?; // in the base
    /// b.insert("a", 1); // in the delta
    /// b.remove("c"); // a tombstone over the base
    /// assert!(a == b);
    /// b.insert("b", 20);
    /// assert!(a != b);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    fn eq(&self, other: &Self) -> bool {
        let (mut mine, mut theirs) = (self.iter(), other.iter());
        loop {
            match (mine.next_entry(), theirs.next_entry()) {
                (None, None) => return true,
                (Some(x), Some(y)) if x == y => {}
                _ => return false,
            }
        }
    }
}

impl<V> Eq for HybridMap<V> where V: FrozenValue + Clone + Send + Sync + Eq + 'static {}

impl<V> Default for HybridMap<V>
where
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    fn default() -> Self {
        HybridMap::new()
    }
}

impl<V> fmt::Debug for HybridMap<V>
where
    V: FrozenValue + Clone + Send + Sync + fmt::Debug + 'static,
{
    /// The entries, as a map (like `BTreeMap`'s `Debug`), keys shown as
    /// byte strings.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        let mut entries = self.iter();
        while let Some((key, value)) = entries.next_entry() {
            map.entry(&crate::fmt::ByteStr(key), &value);
        }
        map.finish()
    }
}

impl<K, V> FromIterator<(K, V)> for HybridMap<V>
where
    K: AsRef<[u8]>,
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    /// A map of `entries` (a later entry for a key replaces an earlier one,
    /// as [`insert`](HybridMap::insert) would), built in one go if the
    /// default policy would merge a delta of that many keys over an empty
    /// base (it does from 4,096 distinct keys, and from 65,536 entries
    /// however often they repeat a key). Fewer than 65,536 are gathered in a
    /// [`FastArt`], which becomes the map's delta and is merged into the
    /// base at once, in this thread. More are split among the machine's
    /// cores (up to four), each gathering one range of keys in trees and
    /// building that range's parts of the base, dropping each tree once its
    /// keys are in parts; see [`HybridConfig::build_threads`]. Entries whose
    /// first 65,536 come in strictly increasing key order go straight into
    /// the base, with no tree, for as long as they stay in order, the cores
    /// building its parts in turn: over the
    /// 7.3 M paths sorted, on two cores, 1.4–2.6 s and a peak of 19–20
    /// bytes per key (on one thread, 2.3–2.6 s and 16).
    ///
    /// That is one merge instead of the many that inserting one by one into
    /// a growing map takes, and no lookups below for old values: over the
    /// 7.3 M Debian paths, on two cores, 7.7–8.3 s and 15–16 s of CPU,
    /// against 26.6–28.3 s and 45 s of CPU (the merges run on a second
    /// thread) for [`extend`](Extend::extend) into a new map, and 1.6–1.9×
    /// as fast as on one thread. Meanwhile it holds the trees: 42 bytes per
    /// key at the peak (41 on one thread), against 31–33 for `extend`. For
    /// a map built under a tight memory budget, `extend` a new map instead.
    ///
    /// ```
    /// let map: memkv::HybridMap<u32> = (0..10_000).map(|i| (format!("k{i:05}"), i)).collect();
    /// let stats = map.stats();
    /// assert_eq!((stats.base_keys, stats.delta_entries, stats.merges), (10_000, 0, 1));
    /// assert_eq!(map.get("k00042"), Some(42));
    /// ```
    ///
    /// [`HybridConfig::build_from`] does the same with another policy.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(entries: I) -> Self {
        HybridMap::build_from(entries, HybridConfig::new())
    }
}

/// ```
/// let map = memkv::HybridMap::from([("a", 1u32), ("b", 2)]);
/// assert_eq!((map.len(), map.get("b")), (2, Some(2)));
/// ```
impl<K, V, const N: usize> From<[(K, V); N]> for HybridMap<V>
where
    K: AsRef<[u8]>,
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    fn from(entries: [(K, V); N]) -> Self {
        entries.into_iter().collect()
    }
}

/// Entries `extend` looks up together: enough for the base's lookups to
/// overlap within each part it holds, few enough that the batch's keys and
/// old values stay small.
const EXTEND_BATCH: usize = 256;

impl<K, V> Extend<(K, V)> for HybridMap<V>
where
    K: AsRef<[u8]>,
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    /// Inserts every entry, with the same result as calling
    /// [`insert`](HybridMap::insert) for each in turn.
    ///
    /// Faster than that loop (over 7.3 M paths, 1.37–1.43× in one process,
    /// 1.06–1.37× in the benchmark harness's builds): entries are taken 256
    /// at a time, and their lookups in the layers below the fresh delta (the
    /// base's fst walks, the costly part of a write) run side by side first,
    /// as in [`get_many`](HybridMap::get_many). Each entry is then written under
    /// its own write lock, so readers wait no longer than for one `insert`.
    /// If the iterator or a replaced value's `Drop` panics, the entries taken
    /// but not yet inserted are dropped; every entry inserted before stays.
    ///
    /// A loop of [`put`](HybridMap::put) takes a quarter to a third less of
    /// the writing thread's time (over 7.3 M paths): it leaves those lookups
    /// to the merges that seal its entries, or to the next `len`, which then
    /// costs more per entry than they do here. A new map is built faster by
    /// `collect` (or [`HybridConfig::build_from`]), with one merge, for more
    /// memory meanwhile (see `FromIterator`).
    ///
    /// A map shared between threads takes the same batched writes through
    /// `&HybridMap` (which implements `Extend` too):
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let map = Arc::new(memkv::HybridMap::<u32>::new());
    /// (&*map).extend([("a", 1), ("b", 2)]);
    /// assert_eq!(map.len(), 2);
    /// ```
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, entries: I) {
        (&*self).extend(entries);
    }
}

impl<K, V> Extend<(K, V)> for &HybridMap<V>
where
    K: AsRef<[u8]>,
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    /// As [`HybridMap`]'s `extend`; every write takes `&self`.
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, entries: I) {
        let mut entries = entries.into_iter();
        let mut batch = Vec::with_capacity(EXTEND_BATCH);
        loop {
            batch.extend(entries.by_ref().take(EXTEND_BATCH));
            if batch.is_empty() {
                return;
            }
            self.insert_batch(&mut batch);
        }
    }
}

impl<V> IntoIterator for &HybridMap<V>
where
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    type Item = (Vec<u8>, V);
    type IntoIter = Iter<V>;

    fn into_iter(self) -> Iter<V> {
        self.iter()
    }
}

impl<V> IntoIterator for HybridMap<V>
where
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    type Item = (Vec<u8>, V);
    type IntoIter = Iter<V>;

    /// The entries in key order. The iterator holds the layers it reads,
    /// so the map can go.
    fn into_iter(self) -> Iter<V> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lower bounds of the base's parts.
    fn part_bounds(map: &HybridMap<u64>) -> Vec<Vec<u8>> {
        part_layers(map)
            .into_iter()
            .map(|(lower, _)| lower)
            .collect()
    }

    /// `b` = 2 to `e` = 5 in the base, with the manual policy.
    /// A map built in one go and left in its delta (by a policy that does
    /// not merge it at once) keeps a filter that turns absent keys away:
    /// only a delta merged at once goes without.
    #[test]
    fn a_delta_built_in_one_go_is_filtered_unless_merged_at_once() {
        let key = |i: u32| format!("usr/share/doc/pkg{i}/copyright");
        let map = HybridConfig::new()
            .manual()
            .build_from((0..5000).map(|i| (key(i), i)));
        assert_eq!(map.stats().delta_entries, 5000);
        let fresh = map.inner.read_fresh();
        assert!((0..5000).all(|i| fresh.filter_passes(key_hash(key(i).as_bytes()))));
        let absent = (5000..6000)
            .filter(|&i| fresh.filter_passes(key_hash(key(i).as_bytes())))
            .count();
        assert!(absent < 100, "{absent} of 1000 absent keys passed");
    }

    /// A seal sizes the next fresh delta's filter for as many writes as
    /// the sealed delta took, where the policy alone would size it for
    /// fewer: merges back to back take what arrives during one, and an
    /// outgrown filter is rebuilt under the write lock.
    #[test]
    fn a_seal_sizes_the_next_filter_for_the_writes_the_last_delta_took() {
        let key = |i: u32| format!("usr/share/doc/pkg{i}/copyright");
        // The manual policy sizes a delta by `min_delta_keys` alone.
        let mut map = HybridConfig::new().manual().min_delta_keys(0).build();
        map.extend((0..3000).map(|i| (key(i), i)));
        map.freeze().unwrap();
        let next = map.inner.read_fresh().filter_capacity();
        assert!(next >= 3000, "{next}");
        // A freeze with nothing to seal keeps the fresh delta, filter and
        // all.
        map.freeze().unwrap();
        assert_eq!(map.inner.read_fresh().filter_capacity(), next);
        map.insert(key(1), 1);
        map.freeze().unwrap();
        assert!(map.inner.read_fresh().filter_capacity() < 3000);
    }

    fn frozen_b_to_e() -> HybridMap<u64> {
        let mut map = HybridConfig::new().manual().build::<u64>();
        map.extend([("b", 2), ("c", 3), ("d", 4), ("e", 5)]);
        map.freeze().unwrap();
        map
    }

    #[test]
    fn pops_start_where_the_last_left_off_until_a_write_crosses_it() {
        let map = frozen_b_to_e();
        let empty_end = |edge| map.inner.read_fresh().empty_end(edge);
        assert_eq!(map.pop_first(), Some((b"b".to_vec(), 2)));
        assert_eq!(map.pop_last(), Some((b"e".to_vec(), 5)));
        assert_eq!(empty_end(Edge::First).as_deref(), Some(&b"b"[..]));
        // A seal moves the tombstones down; the new fresh delta knows the
        // ends are still empty.
        map.freeze().unwrap();
        assert_eq!(empty_end(Edge::First).as_deref(), Some(&b"b"[..]));
        assert_eq!(empty_end(Edge::Last).as_deref(), Some(&b"e"[..]));
        // A tombstone leaves the end empty; values at or past it do not.
        map.remove("b");
        assert_eq!(empty_end(Edge::First).as_deref(), Some(&b"b"[..]));
        map.insert("b", 20);
        assert_eq!(empty_end(Edge::First), None);
        map.insert("f", 60);
        assert_eq!(empty_end(Edge::Last), None);
        assert_eq!(map.pop_first(), Some((b"b".to_vec(), 20)));
        assert_eq!(map.pop_last(), Some((b"f".to_vec(), 60)));
        assert_eq!(map.pop_first(), Some((b"c".to_vec(), 3)));
        assert_eq!(map.pop_last(), Some((b"d".to_vec(), 4)));
        assert_eq!(
            (map.pop_first(), map.pop_last(), map.len()),
            (None, None, 0)
        );
    }

    #[test]
    fn searches_for_an_end_remember_the_tombstones_they_stepped_over() {
        let map = frozen_b_to_e();
        let empty_end = |edge| map.inner.read_fresh().empty_end(edge);
        map.remove("b");
        map.remove("c");
        map.remove("e");
        assert_eq!(
            (empty_end(Edge::First), empty_end(Edge::Last)),
            (None, None)
        );
        assert_eq!(map.first_key_value(), Some((b"d".to_vec(), 4)));
        assert_eq!(map.last_key_value(), Some((b"d".to_vec(), 4)));
        assert_eq!(empty_end(Edge::First).as_deref(), Some(&b"c"[..]));
        assert_eq!(empty_end(Edge::Last).as_deref(), Some(&b"e"[..]));
        // A search that steps over nothing new leaves the ends as they are.
        assert_eq!(map.first_key_value(), Some((b"d".to_vec(), 4)));
        assert_eq!(empty_end(Edge::First).as_deref(), Some(&b"c"[..]));
        map.insert("a", 1);
        assert_eq!(map.first_key_value(), Some((b"a".to_vec(), 1)));
        assert_eq!(empty_end(Edge::First), None);
        // Emptied through `remove`s, the map knows its ends are empty as far
        // as the last tombstone (`a`, only in the fresh delta, has none).
        map.remove("a");
        map.remove("d");
        assert_eq!((map.first_key_value(), map.last_key_value()), (None, None));
        assert_eq!(empty_end(Edge::First).as_deref(), Some(&b"e"[..]));
        assert_eq!(empty_end(Edge::Last).as_deref(), Some(&b"b"[..]));
    }

    /// Keys `0000` to `0999` (each valued at its number) merged into ten
    /// parts of 100 keys, with the manual policy.
    fn in_parts_of_100() -> HybridMap<u64> {
        let map = HybridConfig::new().manual().part_keys(100).build::<u64>();
        for i in 0..1000u64 {
            map.insert(format!("{i:04}"), i);
        }
        map.freeze().unwrap();
        map
    }

    #[test]
    fn merges_keep_the_parts_boundaries() {
        let map = in_parts_of_100();
        let first = part_bounds(&map);
        assert_eq!(first.len(), 10);
        // Updates, removals and an insert: the same boundaries.
        for i in (0..1000u64).step_by(7) {
            map.insert(format!("{i:04}"), i + 1);
        }
        map.remove("0005");
        map.remove("0300"); // a part's first key
        map.insert("0005x", 5);
        map.freeze().unwrap();
        assert_eq!(part_bounds(&map), first);
        // One range grows past one and a half times the size: it alone is
        // split (into 150 + 150 + 100 keys).
        for i in 0..300u64 {
            map.insert(format!("0500{i:03}"), i);
        }
        map.freeze().unwrap();
        let grown = part_bounds(&map);
        assert_eq!(grown.len(), 12);
        assert!(first.iter().all(|bound| grown.contains(bound)));
        assert_eq!(map.len(), 1299);
        // Parts over one and a quarter times the size are rebuilt as two
        // halves at the next merge (the two of 150 keys here), before they
        // reach the largest size: cut there, a part would leave a few of
        // its keys at the start of the next.
        map.insert("0999", 0);
        map.freeze().unwrap();
        let halved = part_bounds(&map);
        assert_eq!(halved.len(), 14);
        assert!(grown.iter().all(|bound| halved.contains(bound)));
        // A part that grew to 130 keys stays whole, then is halved.
        for i in 0..30u64 {
            map.insert(format!("0250{i:03}"), i);
        }
        map.freeze().unwrap();
        assert_eq!(part_bounds(&map), halved);
        map.insert("0998", 0);
        map.freeze().unwrap();
        let bounds = part_bounds(&map);
        assert_eq!(bounds.len(), 15);
        assert!(halved.iter().all(|bound| bounds.contains(bound)));
        let middle = bounds.iter().find(|b| !halved.contains(b)).unwrap();
        // 0200..0249, 0250, 0250000..0250013: 65 keys below the new bound.
        assert_eq!(middle.as_slice(), b"0250014");
        assert_eq!(map.len(), 1329);
    }

    #[test]
    fn a_part_that_shrank_below_half_joins_the_next() {
        let map = in_parts_of_100();
        let first = part_bounds(&map);
        assert_eq!(first.len(), 10);
        // 0300..0399 loses 60 keys: the 40 left are under half a part, so
        // the new part goes on past the old boundary at 0400, to 0500.
        for i in 300..360u64 {
            map.remove(format!("{i:04}"));
        }
        map.freeze().unwrap();
        let joined: Vec<Vec<u8>> = first.into_iter().filter(|b| b != b"0400").collect();
        assert_eq!(part_bounds(&map), joined);
        assert_eq!(map.len(), 940);
    }

    /// A part's lower bound and layer.
    type PartId = (Vec<u8>, *const FrozenLayer<u64>);

    /// Each part's lower bound and layer.
    fn part_layers(map: &HybridMap<u64>) -> Vec<PartId> {
        let layers = map.inner.layers.load();
        layers
            .base
            .parts()
            .iter()
            .map(|p| (p.lower.to_vec(), Arc::as_ptr(&p.layer)))
            .collect()
    }

    /// For each part, whether it has the same bounds and layer as before.
    fn same_layers(before: &[PartId], after: &[PartId]) -> Vec<bool> {
        before.iter().zip(after).map(|(b, a)| b == a).collect()
    }

    #[test]
    fn merges_put_untouched_parts_back_as_they_are() {
        let map = in_parts_of_100();
        let before = part_layers(&map);
        assert_eq!(before.len(), 10);
        // Writes in two ranges (the last part's included): only those two
        // parts are rebuilt.
        map.insert("0512", 5120);
        map.remove("0733");
        map.insert("1000", 1000);
        map.freeze().unwrap();
        let after = part_layers(&map);
        let kept = same_layers(&before, &after);
        let mut expected = vec![true; 10];
        (expected[5], expected[7], expected[9]) = (false, false, false);
        assert_eq!(kept, expected);
        for i in 0..=1000u64 {
            let want = match i {
                512 => Some(5120),
                733 => None,
                _ => Some(i),
            };
            assert_eq!(map.get(format!("{i:04}")), want, "key {i}");
        }
        assert_eq!(map.iter().count(), 1000);
        // The first range emptied: the next part is kept, and answers for
        // the empty range too.
        for i in 0..100u64 {
            map.remove(format!("{i:04}"));
        }
        map.freeze().unwrap();
        let emptied = part_layers(&map);
        assert_eq!(emptied.len(), 9);
        assert_eq!(emptied[0], (Vec::new(), after[1].1));
        assert_eq!(emptied[1..], after[2..]);
        assert_eq!(map.first_key_value(), Some((b"0100".to_vec(), 100)));
        assert_eq!(map.len(), 900);
        assert_eq!(map.iter().count(), 900);
    }

    #[test]
    fn kept_parts_longer_than_a_batch_are_skipped_exactly() {
        // Parts of 2,000 keys: a merge reads the base in batches of 1,024
        // entries, so skipping a kept part starts the next batch at the
        // next part's first key, which must not be lost.
        let map = HybridConfig::new().manual().part_keys(2000).build::<u64>();
        for i in 0..10_000u64 {
            map.insert(format!("{i:05}"), i);
        }
        map.freeze().unwrap();
        let before = part_layers(&map);
        assert_eq!(before.len(), 5);
        map.insert("05000", 1);
        map.freeze().unwrap();
        let after = part_layers(&map);
        assert_eq!(
            same_layers(&before, &after),
            [true, true, false, true, true]
        );
        for i in 0..10_000u64 {
            let want = if i == 5000 { 1 } else { i };
            assert_eq!(map.get(format!("{i:05}")), Some(want), "key {i}");
        }
        let keys: Vec<_> = map.iter().map(|(k, _)| k).collect();
        assert_eq!(keys.len(), 10_000);
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn writes_through_entries_start_the_policys_merges() {
        let map: HybridMap<u64> = HybridConfig::new()
            .min_delta_keys(8)
            .key_ratio(0.5)
            .background(false)
            .build();
        for i in 0..100u64 {
            map.entry(format!("{i:03}")).or_insert(i);
        }
        let stats = map.stats();
        assert!(stats.merges > 0, "{stats:?}");
        assert_eq!(map.get("042"), Some(42));
    }

    /// A writer looks its key up in the older layers before it takes the
    /// lock; a `clear` in between empties them, and the writer must see it.
    #[test]
    fn a_write_looks_again_after_a_clear_or_a_seal() {
        let map = frozen_b_to_e();
        let hash = key_hash(b"c");
        let seen = map.inner.layers.load_full();
        let older = seen.get(b"c", hash);
        assert_eq!(older, Some(3));
        map.clear();
        let lock = map.inner.lock_for_write_seen(b"c", hash, &seen, older);
        assert_eq!(lock.older, None, "the value from before the clear");
        drop(lock);
        // So must one whose key a merge moved down from the fresh delta.
        map.insert("z", 26);
        let hash = key_hash(b"z");
        let seen = map.inner.layers.load_full();
        assert_eq!(seen.get(b"z", hash), None);
        map.freeze().unwrap();
        let lock = map.inner.lock_for_write_seen(b"z", hash, &seen, None);
        assert_eq!(lock.older, Some(26), "the fresh delta was sealed");
    }

    /// What `len`'s batches leave (entries written blind while it looked
    /// the others up) is settled under the lock, one lookup each.
    #[test]
    fn settling_under_the_lock_counts_every_pending_entry() {
        let map = frozen_b_to_e();
        map.put("a", 1); // new: +1
        map.put("f", 6); // new: +1
        map.put("c", 3); // over the base: 0
        map.delete("d"); // hides a base key: -1
        map.delete("z"); // hides nothing: 0
        let inner = &map.inner;
        let settled = inner.len.load(Ordering::Acquire);
        let mut fresh = inner.write_fresh();
        inner.settle_locked(&mut fresh, &inner.layers.load());
        assert_eq!(fresh.pending(), 0);
        drop(fresh);
        assert_eq!(inner.len.load(Ordering::Acquire), settled + 1);
        assert_eq!((map.len(), map.stats().delta_tombstones), (5, 1));
    }

    #[test]
    fn a_freeze_with_nothing_to_merge_does_nothing() {
        let map = frozen_b_to_e();
        let (merges, layers) = (map.stats().merges, part_layers(&map));
        map.freeze().unwrap();
        assert_eq!(map.stats().merges, merges);
        assert_eq!(part_layers(&map), layers, "the base was rebuilt");
    }

    #[test]
    fn the_map_shows_its_entries_and_keeps_its_policy() {
        let map = frozen_b_to_e();
        map.insert("a\n", 1);
        assert_eq!(
            format!("{map:?}"),
            r#"{b"a\n": 1, b"b": 2, b"c": 3, b"d": 4, b"e": 5}"#
        );
        let config = HybridConfig::new().part_keys(77).min_delta_keys(5);
        assert_eq!(config.clone().build::<u64>().config(), &config);
    }

    #[test]
    fn or_default_inserts_only_into_a_vacant_entry() {
        let map = frozen_b_to_e();
        assert_eq!(map.entry("c").or_default(), 3);
        assert_eq!(map.entry("a").or_default(), 0);
        assert_eq!(
            (map.get("a"), map.get("c"), map.len()),
            (Some(0), Some(3), 5)
        );
    }

    #[test]
    fn entries_show_their_key_and_value() {
        let map = frozen_b_to_e();
        let shown = format!("{:?}", map.entry("c"));
        assert_eq!(shown, r#"Entry(OccupiedEntry { key: b"c", value: 3 })"#);
        let shown = format!("{:?}", map.entry(b"\xffz"));
        assert_eq!(shown, r#"Entry(VacantEntry(b"\xffz"))"#);
    }

    /// The byte triggers weigh the fresh delta against the base's bytes.
    #[test]
    fn the_byte_ratio_compares_with_the_bases_bytes() {
        let base = (0..10_000u64).map(|i| (format!("usr/share/doc/{i:05}"), i));
        let config = HybridConfig::new()
            .manual()
            .byte_ratio(0.5)
            .min_delta_keys(1)
            .background(false);
        let map = HybridMap::from_frozen(FrozenLayer::from_sorted_iter(base).unwrap(), config);
        let (base_bytes, merges) = (map.stats().base_bytes, map.stats().merges);
        // Each write adds about a leaf to the fresh delta (tens of bytes).
        let mut writes = 0;
        while map.stats().merges == merges {
            map.insert(format!("usr/bin/{writes:05}"), writes);
            writes += 1;
            assert!(writes < 100_000, "no merge after {writes} writes");
        }
        // The merge came when the delta passed half the base's bytes.
        let per_write = base_bytes / 2 / writes as usize;
        assert!(
            (8..200).contains(&per_write),
            "{writes} writes, {base_bytes} B base"
        );
    }

    /// An iterator holds one batch per layer, whatever the range: batches
    /// double from 16 entries to [`iter::MAX_BATCH`], then stay there.
    #[test]
    fn an_iterators_buffers_grow_to_a_batch_and_no_further() {
        const KEY: usize = 12;
        let mut map = HybridConfig::new().manual().build::<u64>();
        map.extend((0..20_000u64).map(|i| (format!("key/{i:08}"), i)));
        map.freeze().unwrap();
        // A batch's keys, key ends and values.
        let batch =
            |entries: usize| entries * (KEY + size_of::<usize>() + size_of::<Option<u64>>());
        let mut entries = map.iter();
        assert_eq!(entries.memory_usage(), 0, "nothing fetched yet");
        let (key, _) = entries.next_entry().unwrap();
        assert_eq!(key.len(), KEY);
        let first = entries.memory_usage();
        assert!((batch(16)..=2 * batch(16)).contains(&first), "{first}");
        let mut read = 1;
        while entries.next_entry().is_some() {
            read += 1;
            let held = entries.memory_usage();
            // The resume key counts too.
            assert!(
                held <= 2 * batch(iter::MAX_BATCH) + 2 * KEY,
                "{held} after {read}"
            );
        }
        assert_eq!(read, 20_000);
        // The largest batch's room stays, with the last key read.
        let last = entries.memory_usage();
        assert!(last >= batch(iter::MAX_BATCH) + KEY, "{last}");
        // From the back too.
        let mut entries = map.iter();
        assert_eq!(format!("{entries:?}"), "Iter { layers: 2, .. }");
        entries.next_back_entry().unwrap();
        let first = entries.memory_usage();
        assert!((batch(16)..=2 * batch(16)).contains(&first), "{first}");
    }

    #[test]
    fn the_map_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<HybridMap<u64>>();
        check::<HybridMap<Vec<u8>>>();
        check::<Iter<u64>>();
        // For any value type, not only the built-in ones: the column reader
        // is bound `Send + Sync` (frozen/column.rs).
        fn generic<V: FrozenValue>() {
            check::<FrozenLayer<V>>();
        }
        generic::<u64>();
    }
}
