//! Building a map in one go, on one or more threads
//! ([`HybridConfig::build_threads`](super::HybridConfig::build_threads)).
//!
//! The key space is cut into shares at pivots taken from a sample of the
//! first entries, one share per thread. The calling thread reads the
//! entries and passes each share's on in batches (keys copied into one
//! buffer per batch: the caller's key type need not be `Send`); each thread
//! gathers its share in `FastArt`s of its own, then builds the base's
//! parts of its range from them. Over the Debian paths, two trees of half
//! the keys each filled in 4.5 s where one tree of all took 8.8–9.8 s:
//! besides the second core, each tree is half as far from the cache.
//!
//! A share is gathered in several trees of consecutive ranges (cut at more
//! pivots), so that each can be dropped as soon as the parts holding its
//! keys are built: the trees shrink as the base grows, and the peak is the
//! trees alone, not the trees and the base.
//!
//! Entries in key order need no tree ([`build_sorted`]): each part's are
//! gathered in turn, and the threads build the parts in turn.
//!
//! A part build that fails (an error, or a panic in
//! [`FrozenValue::encode`], in a value's `Clone` or in the `Drop` of a
//! clone) loses nothing: the trees, or each part's
//! entries, are kept until the parts holding them are built, and every
//! entry (from the trees left, and from the parts built) then goes into
//! one delta.

use std::mem;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread;
use std::time::{Duration, Instant};

use super::base::Part;
use super::merge::Outcome;
use crate::keys::common_prefix;
use crate::{FastArt, FrozenLayerBuilder, FrozenValue, Result};

/// Entries per batch passed to another thread.
const BATCH: usize = 4096;

/// Batches under way to one thread: enough to keep it busy while the
/// caller reads on, few enough to hold little memory.
const BATCHES_UNDER_WAY: usize = 4;

/// The threads a build asked for `asked` may start: no more than the
/// machine's cores. More would build no faster, and each holds the entries
/// of a part (a sorted build, whose every turn also keeps its last part
/// built until its turn comes round) or of a share's trees.
pub(super) fn threads_for(asked: usize) -> usize {
    let cores = thread::available_parallelism().map_or(1, usize::from);
    asked.clamp(1, cores)
}

/// How many entries are read before the key space is cut: the sample the
/// pivots come from. Fewer entries are not split (the cut is worth it once
/// each share builds a few parts), nor fewer than a policy with
/// `min_delta_keys` would merge, up to a sample's largest size.
pub(super) fn sample_len(part_keys: usize, min_delta_keys: usize) -> usize {
    let largest = 1 << 16;
    part_keys
        .saturating_mul(2)
        .max(min_delta_keys.min(largest))
        .min(largest)
}

/// What [`build`] made of the entries.
pub(super) enum Bulk<V: FrozenValue> {
    /// The base's parts, in key order (keeping [`Base`](super::base::Base)'s
    /// invariants), with the keys they hold and the time their build took
    /// once the entries were gathered.
    Built {
        parts: Vec<Part<V>>,
        keys: usize,
        took: Duration,
    },
    /// Building a part failed: every entry, in one tree, and why.
    Failed {
        values: Box<FastArt<V>>,
        why: Outcome,
    },
}

/// Some entries' keys, in one buffer, and their values.
struct Batch<V> {
    bytes: Vec<u8>,
    /// Each entry's key ends at this offset of `bytes` (and starts where
    /// the one before ends).
    entries: Vec<(usize, V)>,
}

impl<V> Batch<V> {
    fn new() -> Self {
        Batch {
            bytes: Vec::new(),
            entries: Vec::with_capacity(BATCH),
        }
    }

    fn push(&mut self, key: &[u8], value: V) {
        self.bytes.extend_from_slice(key);
        self.entries.push((self.bytes.len(), value));
    }

    /// Adds the entries to `tree`, in order (a later one wins).
    fn into_tree(self, tree: &mut FastArt<V>) {
        let Batch { bytes, entries } = self;
        let mut start = 0;
        tree.extend(entries.into_iter().map(|(end, value)| {
            let key = &bytes[mem::replace(&mut start, end)..end];
            (key, value)
        }));
    }
}

/// Entries in strictly increasing key order, each key kept as the length
/// it shares with the key before and the rest (front coding): sorted keys
/// share most of their bytes with their neighbours (52 of 63.5 on average
/// over the Debian paths), so a part's entries take a fraction of their
/// keys' bytes while the part is built.
struct FrontCoded<V> {
    /// Each entry's key's bytes after those it shares with the key before.
    suffixes: Vec<u8>,
    /// Each entry's suffix ends at this offset of `suffixes` (and starts
    /// where the one before ends).
    entries: Vec<(usize, V)>,
    /// How many bytes each entry's key shares with the key before (fewer
    /// than it does past `u32::MAX`, which only lengthens its suffix).
    shared: Vec<u32>,
    /// The key pushed last, whole.
    last: Vec<u8>,
}

impl<V> FrontCoded<V> {
    /// Room for `entries` entries of `suffix_bytes` bytes of suffixes.
    fn with_capacity(entries: usize, suffix_bytes: usize) -> Self {
        FrontCoded {
            suffixes: Vec::with_capacity(suffix_bytes),
            entries: Vec::with_capacity(entries),
            shared: Vec::with_capacity(entries),
            last: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    /// Pushes an entry whose key is above the last one's.
    fn push(&mut self, key: &[u8], value: V) {
        let shared = common_prefix(&self.last, key).min(u32::MAX as usize);
        reserve_a_quarter(&mut self.suffixes, key.len() - shared);
        reserve_a_quarter(&mut self.entries, 1);
        reserve_a_quarter(&mut self.shared, 1);
        self.suffixes.extend_from_slice(&key[shared..]);
        self.entries.push((self.suffixes.len(), value));
        self.shared.push(shared as u32);
        self.last.truncate(shared);
        self.last.extend_from_slice(&key[shared..]);
    }

    /// Bytes of suffixes held.
    fn suffix_bytes(&self) -> usize {
        self.suffixes.len()
    }

    /// The key pushed last.
    fn last_key(&self) -> Option<&[u8]> {
        (!self.entries.is_empty()).then_some(self.last.as_slice())
    }

    /// Empties it, keeping its room.
    fn clear(&mut self) {
        self.suffixes.clear();
        self.entries.clear();
        self.shared.clear();
        self.last.clear();
    }

    /// Calls `f` on each entry, in order, until it fails.
    fn try_for_each<E>(
        &self,
        mut f: impl FnMut(&[u8], &V) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let mut key = Vec::new();
        let mut start = 0;
        for ((end, value), &shared) in self.entries.iter().zip(&self.shared) {
            key.truncate(shared as usize);
            key.extend_from_slice(&self.suffixes[mem::replace(&mut start, *end)..*end]);
            f(&key, value)?;
        }
        Ok(())
    }

    /// Adds the entries to `tree`.
    fn into_tree(self, tree: &mut FastArt<V>) {
        let mut key = Vec::new();
        let mut start = 0;
        for ((end, value), shared) in self.entries.into_iter().zip(self.shared) {
            key.truncate(shared as usize);
            key.extend_from_slice(&self.suffixes[mem::replace(&mut start, end)..end]);
            tree.insert(&key, value);
        }
    }
}

/// Makes room in `buffer` for `more` items, growing it by a quarter at
/// least: a buffer grown to a part's size then holds at most a quarter
/// more than that (doubling: up to twice).
fn reserve_a_quarter<T>(buffer: &mut Vec<T>, more: usize) {
    if buffer.capacity() - buffer.len() < more {
        buffer.reserve_exact(more.max(buffer.capacity() / 4));
    }
}

/// Trees per share: a thread gathers its share's entries in this many
/// trees of consecutive ranges, and drops each once the parts holding its
/// keys are built, so that the trees shrink as the base grows.
const TREES_PER_SHARE: usize = 8;

/// One share's entries: trees of consecutive ranges of keys, the first
/// one's index among all the shares' trees.
struct Share<V> {
    first: usize,
    trees: Vec<FastArt<V>>,
}

impl<V: FrozenValue + Clone> Share<V> {
    fn new(trees: std::ops::Range<usize>) -> Self {
        Share {
            first: trees.start,
            trees: trees.map(|_| FastArt::new()).collect(),
        }
    }

    /// Adds `batch`, of keys in the range of tree `tree` (an index among
    /// all the shares' trees).
    fn add(&mut self, tree: usize, batch: Batch<V>) {
        batch.into_tree(&mut self.trees[tree - self.first]);
    }
}

/// What the calling thread passes to a share's thread.
enum Gathered<V> {
    /// Entries for tree `.0` (an index among all the shares' trees).
    Batch(usize, Batch<V>),
    /// Every entry is in: build the parts. A channel that closes without
    /// it means the build was abandoned (a panic in the caller's iterator,
    /// or in another thread), and nothing is built.
    End,
}

/// Where one share's entries go.
enum Gatherer<V> {
    /// To another thread, which gathers them and builds its parts.
    Sent(SyncSender<Gathered<V>>),
    /// Into trees of this thread's (the first share, and any whose thread
    /// could not be started).
    Kept(Share<V>),
}

/// What a share comes to: the parts built from its trees, the trees not
/// yet dropped (all of them if the build failed early), and why its build
/// failed, if it did.
struct ShareBuilt<V: FrozenValue> {
    parts: Vec<Part<V>>,
    trees: Vec<FastArt<V>>,
    failure: Option<Outcome>,
}

/// Gathers `sample` and then `rest` (the entries, in order: a later one
/// wins) in `threads` shares of the key space, and builds each share's
/// parts of about `part_keys` keys on its own thread.
///
/// A panic while the entries are gathered (in the caller's iterator, or in
/// a replaced value's `Drop`) is passed on once every thread has stopped.
pub(super) fn build<K, V>(
    sample: Vec<(K, V)>,
    rest: impl Iterator<Item = (K, V)>,
    threads: usize,
    part_keys: usize,
) -> Bulk<V>
where
    K: AsRef<[u8]>,
    V: FrozenValue + Clone + Send + Sync,
{
    let pivots = pivots(&sample, threads.saturating_mul(TREES_PER_SHARE));
    // Tree `i` holds the keys from `lowers[i]` up to `lowers[i + 1]`; share
    // `s` the trees `firsts[s]..firsts[s + 1]`.
    let mut lowers: Vec<Box<[u8]>> = vec![Box::default()];
    lowers.extend(pivots.iter().cloned());
    // No more shares than the sample's distinct keys give whole ones: more
    // threads would each gather a sliver (and `threads` may be anything).
    let threads = threads.clamp(1, lowers.len().div_ceil(TREES_PER_SHARE));
    let firsts: Vec<usize> = (0..=threads)
        .map(|share| share * lowers.len() / threads)
        .collect();
    let owners: Vec<usize> = (0..threads)
        .flat_map(|share| (firsts[share]..firsts[share + 1]).map(move |_| share))
        .collect();
    let (results, gathered) = thread::scope(|scope| {
        let mut gatherers = Vec::with_capacity(threads);
        let mut others = Vec::new();
        for share in 0..threads {
            let trees = firsts[share]..firsts[share + 1];
            if share == 0 || trees.is_empty() {
                gatherers.push(Gatherer::Kept(Share::new(trees)));
                continue;
            }
            let (sender, receiver) = mpsc::sync_channel(BATCHES_UNDER_WAY);
            let lower = lowers[trees.start].clone();
            let its_trees = trees.clone();
            let work = move || gather_and_build(receiver, Share::new(its_trees), lower, part_keys);
            match thread::Builder::new()
                .name("memkv-hybrid-build".into())
                .spawn_scoped(scope, work)
            {
                Ok(other) => {
                    gatherers.push(Gatherer::Sent(sender));
                    others.push((share, other));
                }
                Err(_) => gatherers.push(Gatherer::Kept(Share::new(trees))),
            }
        }
        let mut batches: Vec<Batch<V>> = (0..lowers.len()).map(|_| Batch::new()).collect();
        // Whether every thread took every batch: one that stops early has
        // panicked (a replaced value's `Drop`), and its join passes that on
        // without this thread reading the rest or building its shares.
        let mut taken = true;
        for (key, value) in sample.into_iter().chain(rest) {
            let key = key.as_ref();
            let tree = pivots.partition_point(|pivot| **pivot <= *key);
            batches[tree].push(key, value);
            if batches[tree].entries.len() == BATCH {
                let batch = mem::replace(&mut batches[tree], Batch::new());
                taken = pass(&mut gatherers[owners[tree]], tree, batch);
                if !taken {
                    break;
                }
            }
        }
        if taken {
            for (tree, batch) in batches.into_iter().enumerate() {
                taken &= pass(&mut gatherers[owners[tree]], tree, batch);
            }
        }
        let gathered = Instant::now();
        // The other threads build their parts while this one builds the
        // kept shares'.
        let mut results: Vec<Option<ShareBuilt<V>>> = (0..threads).map(|_| None).collect();
        let mut kept = Vec::new();
        for (i, gatherer) in gatherers.into_iter().enumerate() {
            match gatherer {
                Gatherer::Kept(share) => kept.push((i, share)),
                Gatherer::Sent(sender) => {
                    if taken {
                        // (Fails only if the thread panicked, which its
                        // join passes on.)
                        let _ = sender.send(Gathered::End);
                    }
                }
            }
        }
        for (i, share) in kept.into_iter().filter(|_| taken) {
            // (A share with no trees, of fewer distinct keys in the sample
            // than shares, has no parts.)
            if !share.trees.is_empty() {
                let lower = lowers[share.first].clone();
                results[i] = Some(build_share(share.trees, lower, part_keys));
            }
        }
        for (share, other) in others {
            // A panic while gathering (a value's `Drop`) is passed on.
            let built = other
                .join()
                .unwrap_or_else(|payload| panic::resume_unwind(payload));
            results[share] = Some(built);
        }
        (results, gathered)
    });
    let results: Vec<ShareBuilt<V>> = results.into_iter().flatten().collect();
    if results.iter().all(|built| built.failure.is_none()) {
        let mut parts = Vec::new();
        for built in results {
            parts.extend(built.parts);
        }
        let parts = glue(parts);
        let keys = parts.iter().map(|part| part.keys).sum();
        return Bulk::Built {
            parts,
            keys,
            took: gathered.elapsed(),
        };
    }
    // The first failure is the one reported; every entry goes into one
    // tree: those in the parts built, then those in the trees kept (a
    // tree's entries that also went into a part have the same values).
    let mut why = None;
    let mut values = Box::new(FastArt::new());
    for built in results {
        why = why.or(built.failure);
        read_back(&built.parts, &mut values);
        for tree in built.trees {
            values.extend(tree);
        }
    }
    Bulk::Failed {
        values,
        why: why.expect("a share failed"),
    }
}

/// Whether the keys of `sample` strictly increase: entries that may come
/// in key order, which [`build_sorted`] takes without a tree.
pub(super) fn in_order<K: AsRef<[u8]>, V>(sample: &[(K, V)]) -> bool {
    sample
        .windows(2)
        .all(|pair| pair[0].0.as_ref() < pair[1].0.as_ref())
}

/// What [`build_sorted`] made of the entries.
pub(super) enum Sorted<K, V: FrozenValue> {
    /// The base's parts, built from the entries up to `next`, the first
    /// whose key was not above the one before (`None`: they all were; the
    /// caller writes it and the rest into the map, see [`count_new`]), with
    /// the keys they hold and the time they took.
    Built {
        parts: Vec<Part<V>>,
        keys: usize,
        took: Duration,
        next: Option<(K, V)>,
    },
    /// Building a part failed: every entry, in one tree, and why.
    Failed {
        values: Box<FastArt<V>>,
        why: Outcome,
    },
}

/// One part's entries on their way to its layer, with the part's index
/// and bounds.
struct Run<V> {
    index: usize,
    lower: Box<[u8]>,
    upper: Option<Box<[u8]>>,
    entries: FrontCoded<V>,
}

/// A [`Run`] with its part, or why the part could not be built.
type RunBuilt<V> = (Run<V>, std::result::Result<Part<V>, Outcome>);

impl<V: FrozenValue + Clone> Run<V> {
    fn build(self) -> RunBuilt<V> {
        let built = guarded(|| {
            let mut builder = FrozenLayerBuilder::memory();
            self.entries
                .try_for_each(|key, value| builder.insert(key, value.clone()))?;
            Part::built(self.lower.clone(), self.upper.clone(), builder)
        });
        (self, built)
    }
}

/// One of the threads that [`build_sorted`] hands parts to in turn, and
/// its spare buffers.
struct Turn<V: FrozenValue> {
    builder: Builder<V>,
    spare: Option<FrontCoded<V>>,
}

/// Who builds a [`Turn`]'s parts.
enum Builder<V: FrozenValue> {
    /// This thread (the first turn, and any whose thread could not be
    /// started).
    Here,
    /// Another thread, which takes one run at a time and sends it back
    /// with its part; `busy` while it holds one.
    There {
        runs: SyncSender<Run<V>>,
        built: Receiver<RunBuilt<V>>,
        busy: bool,
    },
}

/// The parts built so far, by index, and the runs whose build failed.
struct Settled<V: FrozenValue> {
    parts: Vec<Option<Part<V>>>,
    failed: Vec<(FrontCoded<V>, Outcome)>,
}

impl<V: FrozenValue> Settled<V> {
    /// Files `built`, and returns its buffers, emptied, if its part was
    /// built (should it fail, they hold its entries).
    fn file(&mut self, (run, built): RunBuilt<V>) -> Option<FrontCoded<V>> {
        match built {
            Ok(part) => {
                if self.parts.len() <= run.index {
                    self.parts.resize_with(run.index + 1, || None);
                }
                self.parts[run.index] = Some(part);
                let mut entries = run.entries;
                entries.clear();
                Some(entries)
            }
            Err(why) => {
                self.failed.push((run.entries, why));
                None
            }
        }
    }
}

impl<V: FrozenValue + Clone + Send + Sync> Turn<V> {
    /// A turn built by a thread of its own, started in `scope`, or by this
    /// one if it cannot be.
    fn start<'scope>(scope: &'scope thread::Scope<'scope, '_>) -> Self
    where
        V: 'scope,
    {
        let (runs, taken) = mpsc::sync_channel::<Run<V>>(0);
        let (done, built) = mpsc::channel();
        let work = move || {
            for run in taken {
                if done.send(run.build()).is_err() {
                    return;
                }
            }
        };
        let builder = match thread::Builder::new()
            .name("memkv-hybrid-build".into())
            .spawn_scoped(scope, work)
        {
            Ok(_) => Builder::There {
                runs,
                built,
                busy: false,
            },
            Err(_) => Builder::Here,
        };
        Turn {
            builder,
            spare: None,
        }
    }

    /// Builds `run`'s part here, or hands it to this turn's thread.
    fn give(&mut self, run: Run<V>, settled: &mut Settled<V>) {
        match &mut self.builder {
            Builder::Here => self.spare = settled.file(run.build()),
            Builder::There { runs, busy, .. } => match runs.send(run) {
                Ok(()) => *busy = true,
                // Only if the thread has stopped, which it does only when
                // told to: built here then.
                Err(mpsc::SendError(run)) => self.spare = settled.file(run.build()),
            },
        }
    }

    /// Waits for the run this turn's thread holds, if any, and files it.
    fn settle(&mut self, settled: &mut Settled<V>) {
        if let Builder::There { built, busy, .. } = &mut self.builder
            && mem::take(busy)
        {
            let run = built.recv().expect("a builder thread stops only when told");
            self.spare = settled.file(run);
        }
    }
}

/// Builds the base's parts straight from `sample` and then `rest`, with
/// no tree, for as long as their keys strictly increase: parts of
/// `part_keys` keys, cut as a merge over an empty base cuts them, built by
/// `threads` threads (this one among them) in turn. A part's entries are
/// gathered first ([`FrontCoded`]), and kept until its layer is built,
/// so that if the build fails, they, the parts built and the entries not
/// yet read all go into one tree.
pub(super) fn build_sorted<K, V>(
    sample: Vec<(K, V)>,
    rest: &mut impl Iterator<Item = (K, V)>,
    part_keys: usize,
    threads: usize,
) -> Sorted<K, V>
where
    K: AsRef<[u8]>,
    V: FrozenValue + Clone + Send + Sync,
{
    let started = Instant::now();
    let target = part_keys.max(1);
    let threads = threads.max(1);
    // A turn's buffers are reused from part to part. New ones are sized
    // for what has been read: the sample (in order, as the caller checked),
    // then the first part filled. Sized for a part at the sample's mean,
    // they asked for 75 GB before reading 256 MB of long keys into one
    // part (2026-11-27, a review).
    let suffix_bytes: usize = (sample.windows(2))
        .map(|pair| {
            let (before, key) = (pair[0].0.as_ref(), pair[1].0.as_ref());
            key.len() - common_prefix(before, key)
        })
        .sum();
    let mut room = (sample.len().min(target), suffix_bytes);
    let mut entries = sample.into_iter().chain(&mut *rest);
    let mut settled = Settled {
        parts: Vec::new(),
        failed: Vec::new(),
    };
    let next = thread::scope(|scope| {
        let mut turns = vec![Turn {
            builder: Builder::Here,
            spare: None,
        }];
        let mut index = 0;
        let mut lower: Box<[u8]> = Box::default();
        let mut filling = FrontCoded::with_capacity(room.0, room.1);
        let mut next = None;
        // The caller's iterator runs outside any catching of panics: a
        // panic in it is the caller's, passed on once the threads stop.
        for (key, value) in entries.by_ref() {
            let bytes = key.as_ref();
            // (The first entry of a part is pushed as it starts it.)
            if filling.last_key() >= Some(bytes) {
                next = Some((key, value));
                break;
            }
            if filling.len() >= target {
                room = (filling.len(), filling.suffix_bytes());
                let upper: Box<[u8]> = bytes.into();
                let run = Run {
                    index,
                    lower: mem::replace(&mut lower, upper.clone()),
                    upper: Some(upper),
                    entries: mem::replace(&mut filling, FrontCoded::with_capacity(0, 0)),
                };
                turns[index % threads].give(run, &mut settled);
                index += 1;
                // The next part's turn: its last run comes back first, and
                // its buffers are filled again.
                if index % threads == turns.len() {
                    turns.push(Turn::start(scope));
                }
                let turn = &mut turns[index % threads];
                turn.settle(&mut settled);
                filling = (turn.spare.take())
                    .unwrap_or_else(|| FrontCoded::with_capacity(room.0, room.1));
                // (`filling` holds nothing yet: all the entries read so
                // far are in the runs.)
                if !settled.failed.is_empty() {
                    next = Some((key, value));
                    break;
                }
            }
            filling.push(bytes, value);
        }
        if settled.failed.is_empty() {
            let last = Run {
                index,
                lower,
                upper: None,
                entries: filling,
            };
            settled.file(last.build());
        }
        // Dropping each thread's sender (with `turns`) stops it.
        for turn in &mut turns {
            turn.settle(&mut settled);
        }
        next
    });
    let Settled { parts, failed } = settled;
    if failed.is_empty() {
        let parts: Vec<Part<V>> = parts.into_iter().flatten().collect();
        let keys = parts.iter().map(|part| part.keys).sum();
        return Sorted::Built {
            parts,
            keys,
            took: started.elapsed(),
            next,
        };
    }
    // Every key so far came once, in order: only the entries not read
    // may repeat one, and they come last and win.
    let mut values = Box::new(FastArt::new());
    let parts: Vec<Part<V>> = parts.into_iter().flatten().collect();
    read_back(&parts, &mut values);
    let mut why = None;
    for (entries, failure) in failed {
        why = why.or(Some(failure));
        entries.into_tree(&mut values);
    }
    values.extend(next.into_iter().chain(entries));
    Sorted::Failed {
        values,
        why: why.expect("a build failed"),
    }
}

/// How many of the keys of `values` the base of `parts` (built by
/// [`build_sorted`]: each layer holds its part's keys only) does not hold:
/// a walk of both in key order, with no lookup.
pub(super) fn count_new<V: FrozenValue>(values: &FastArt<V>, parts: &[Part<V>]) -> usize {
    let mut layers = parts.iter().map(|part| part.layer.iter());
    let mut layer = layers.next();
    // The base's next key, once read (`None`: the base has no more).
    let mut below: Option<Vec<u8>> = None;
    let mut advance = |below: &mut Option<Vec<u8>>| loop {
        let Some(entries) = layer.as_mut() else {
            *below = None;
            return;
        };
        if let Some((key, _)) = entries.next_entry() {
            let buffer = below.get_or_insert_with(Vec::new);
            buffer.clear();
            buffer.extend_from_slice(key);
            return;
        }
        layer = layers.next();
    };
    advance(&mut below);
    let mut new = 0;
    let mut keys = values.keys();
    while let Some(key) = keys.next_key() {
        while below.as_deref().is_some_and(|below| below < key) {
            advance(&mut below);
        }
        if below.as_deref() != Some(key) {
            new += 1;
        }
    }
    new
}

/// Adds the entries of `parts` to `values`: the keys of a build that
/// failed, read back from the parts built before.
fn read_back<V: FrozenValue>(parts: &[Part<V>], values: &mut FastArt<V>) {
    for part in parts {
        let mut layer = part.layer.iter();
        while let Some((key, value)) = layer.next_entry() {
            values.insert(key, value);
        }
    }
}

/// What `build` returns, or what went wrong in it (`encode` is user code,
/// and may panic).
fn guarded<T>(build: impl FnOnce() -> Result<T>) -> std::result::Result<T, Outcome> {
    match panic::catch_unwind(AssertUnwindSafe(build)) {
        Ok(Ok(built)) => Ok(built),
        Ok(Err(err)) => Err(Outcome::Failed(err)),
        Err(payload) => Err(Outcome::Panicked(payload)),
    }
}

/// Up to `threads - 1` keys that cut the sample's distinct keys into
/// `threads` shares of about the same size: the pivots, in increasing
/// order, none of them the empty key.
fn pivots<K: AsRef<[u8]>, V>(sample: &[(K, V)], threads: usize) -> Vec<Box<[u8]>> {
    let mut keys: Vec<&[u8]> = sample.iter().map(|(key, _)| key.as_ref()).collect();
    keys.sort_unstable();
    keys.dedup();
    let shares = threads.min(keys.len()).max(1);
    // Index `i * len / shares` grows by at least 1 from one share to the
    // next, and is at least 1, past the smallest key.
    (1..shares)
        .map(|i| keys[i * keys.len() / shares].into())
        .collect()
}

/// Passes `batch`, of keys in the range of tree `tree`, on to its share.
/// False if its thread has stopped taking batches, which it does only if
/// it panicked.
fn pass<V: FrozenValue + Clone>(gatherer: &mut Gatherer<V>, tree: usize, batch: Batch<V>) -> bool {
    match gatherer {
        Gatherer::Kept(share) => {
            share.add(tree, batch);
            true
        }
        Gatherer::Sent(sender) => sender.send(Gathered::Batch(tree, batch)).is_ok(),
    }
}

/// Another thread's work: gathers the batches of one share, whose keys
/// start at `lower`, then builds its parts, unless the build is abandoned
/// first (see [`Gathered::End`]).
fn gather_and_build<V: FrozenValue + Clone>(
    batches: Receiver<Gathered<V>>,
    mut share: Share<V>,
    lower: Box<[u8]>,
    part_keys: usize,
) -> ShareBuilt<V> {
    for gathered in batches {
        match gathered {
            Gathered::Batch(tree, batch) => share.add(tree, batch),
            Gathered::End => return build_share(share.trees, lower, part_keys),
        }
    }
    ShareBuilt {
        parts: Vec::new(),
        trees: share.trees,
        failure: Some(Outcome::Cancelled),
    }
}

/// The parts of one share's keys, in `trees` (of consecutive ranges, from
/// `lower` on), cut every `part_keys` keys as a merge over an empty base
/// cuts them, except that fewer than half that many (rounded down) left at
/// the end go into the part before (which then holds at most one and a
/// half times as many): the shares' ends are not where such a merge would
/// cut. The last part has no upper bound: [`glue`] sets the bounds where
/// the shares meet.
///
/// Each tree is dropped once the parts holding its keys are built. Should
/// a build fail, the trees not dropped are returned with the parts built
/// before.
fn build_share<V: FrozenValue + Clone>(
    trees: Vec<FastArt<V>>,
    mut lower: Box<[u8]>,
    part_keys: usize,
) -> ShareBuilt<V> {
    let target = part_keys.max(1);
    let mut parts = Vec::new();
    let mut builder = FrozenLayerBuilder::memory();
    let mut left: usize = trees.iter().map(FastArt::len).sum();
    let mut trees: Vec<Option<FastArt<V>>> = trees.into_iter().map(Some).collect();
    let mut failure = None;
    'trees: for at in 0..trees.len() {
        let (done, rest) = trees.split_at_mut(at);
        let Some(tree) = rest[0].as_ref() else {
            continue;
        };
        let mut entries = tree.iter();
        while let Some((key, value)) = entries.next_entry() {
            if builder.len() >= target && left >= target / 2 {
                let full = mem::replace(&mut builder, FrozenLayerBuilder::memory());
                let below = mem::replace(&mut lower, key.into());
                match guarded(|| Part::built(below, Some(key.into()), full)) {
                    Ok(part) => parts.push(part),
                    Err(why) => {
                        failure = Some(why);
                        break 'trees;
                    }
                }
                // The trees before this one are all in parts now.
                done.iter_mut().for_each(|tree| *tree = None);
            }
            if let Err(why) = guarded(|| builder.insert(key, value.clone())) {
                failure = Some(why);
                break 'trees;
            }
            left -= 1;
        }
    }
    if failure.is_none() {
        match guarded(|| Part::built(lower, None, builder)) {
            Ok(part) => {
                parts.push(part);
                trees.clear();
            }
            Err(why) => failure = Some(why),
        }
    }
    ShareBuilt {
        parts,
        trees: trees.into_iter().flatten().collect(),
        failure,
    }
}

/// The shares' parts as one base: parts with no keys (of a share the
/// sample's pivots left empty) are dropped, and each remaining part's
/// range made to end where the next one's starts (the last: unbounded).
/// That widens a range only over those dropped, where no key lies.
fn glue<V: FrozenValue>(parts: Vec<Part<V>>) -> Vec<Part<V>> {
    let last = parts.len() - 1;
    let mut kept: Vec<Part<V>> = (parts.into_iter().enumerate())
        .filter(|(i, part)| part.keys > 0 || *i == last)
        .map(|(_, part)| part)
        .collect();
    if kept.len() > 1 && kept[kept.len() - 1].keys == 0 {
        kept.pop();
    }
    kept[0].lower = Box::default();
    for i in 1..kept.len() {
        kept[i - 1].upper = Some(kept[i].lower.clone());
    }
    if let Some(last) = kept.last_mut() {
        last.upper = None;
    }
    kept
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn pivots_cut_the_distinct_keys_evenly_and_skip_the_smallest() {
        let sample: Vec<(String, ())> = ["d", "a", "c", "b", "a", "e", "f"]
            .into_iter()
            .map(|k| (k.to_string(), ()))
            .collect();
        let cut = |threads| -> Vec<Box<[u8]>> { pivots(&sample, threads) };
        assert_eq!(cut(1), Vec::<Box<[u8]>>::new());
        assert_eq!(cut(2), [b"d".as_slice().into()]);
        assert_eq!(cut(3), [b"c".as_slice().into(), b"e".as_slice().into()]);
        // No more shares than distinct keys: each pivot a different key.
        assert_eq!(cut(100).len(), 5);
        let same: Vec<(&str, ())> = vec![("", ()); 10];
        assert!(pivots(&same, 4).is_empty());
    }

    /// Parts cut at the target; a small rest joins the part before.
    #[test]
    fn parts_are_cut_at_the_target_with_a_small_rest_kept_in() {
        let tree: FastArt<u32> = (0..25u32).map(|i| (format!("{i:02}"), i)).collect();
        let sizes = |part_keys| -> Vec<usize> {
            let built = build_share(vec![tree.clone()], b"".as_slice().into(), part_keys);
            assert!(built.failure.is_none() && built.trees.is_empty());
            built.parts.iter().map(|part| part.keys).collect()
        };
        assert_eq!(sizes(10), [10, 10, 5]); // 5 left: half of 10
        assert_eq!(sizes(11), [11, 14]); // 3 left: under half of 11
        assert_eq!(sizes(8), [8, 8, 9]);
        assert_eq!(sizes(6), [6, 6, 6, 7]);
        assert_eq!(sizes(100), [25]);
        let parts = build_share(vec![tree], b"a".as_slice().into(), 10).parts;
        let lowers: Vec<&[u8]> = parts.iter().map(|part| &*part.lower).collect();
        assert_eq!(lowers, [&b"a"[..], b"10", b"20"]);
        assert_eq!(parts[0].upper.as_deref(), Some(&b"10"[..]));
        assert_eq!(parts[2].upper, None);
    }

    /// Front-coded entries give back their keys, whole, in order.
    #[test]
    fn front_coded_entries_give_back_their_keys() {
        let keys: Vec<&[u8]> = vec![
            b"",
            b"\x00",
            b"a",
            b"ab",
            b"abc\xff",
            b"abd",
            b"b",
            b"usr/share/doc/a",
            b"usr/share/doc/b/changelog",
            b"\xff",
        ];
        let mut coded = FrontCoded::with_capacity(0, 0);
        for (i, key) in keys.iter().enumerate() {
            coded.push(key, i);
            assert_eq!(coded.last_key(), Some(*key));
        }
        assert_eq!(coded.len(), keys.len());
        // Only the bytes past the key before are kept.
        assert_eq!(coded.suffixes.len(), 1 + 1 + 1 + 2 + 1 + 1 + 15 + 11 + 1);
        let mut seen = Vec::new();
        coded
            .try_for_each(|key, &i| {
                seen.push((key.to_vec(), i));
                if i == 3 { Err(()) } else { Ok(()) }
            })
            .unwrap_err();
        let want: Vec<(Vec<u8>, usize)> =
            keys.iter().take(4).map(|k| k.to_vec()).zip(0..).collect();
        assert_eq!(seen, want);
        let mut tree = FastArt::new();
        coded.into_tree(&mut tree);
        let got: Vec<(Vec<u8>, usize)> = tree.iter().map(|(k, v)| (k, *v)).collect();
        let want: Vec<(Vec<u8>, usize)> = keys.iter().map(|k| k.to_vec()).zip(0..).collect();
        assert_eq!(got, want);
        coded = FrontCoded::with_capacity(4, 4);
        coded.push(b"x", 0);
        coded.clear();
        assert_eq!((coded.len(), coded.last_key()), (0, None));
    }

    /// A value whose encoding of 77 panics.
    #[derive(Clone, Debug, PartialEq)]
    struct Picky(u64);

    impl FrozenValue for Picky {
        const TYPE_NAME: &'static str = "Picky";
        type Column = crate::frozen::IntColumn;
        fn encode(&self) -> u64 {
            assert_ne!(self.0, 77, "Picky refuses to encode 77");
            self.0
        }
        fn decode(encoded: u64) -> Self {
            Picky(encoded)
        }
    }

    /// A share's trees are dropped once their keys are in parts; a part
    /// that fails leaves the trees its keys came from.
    #[test]
    #[cfg_attr(panic = "abort", ignore = "catches a panic")]
    fn a_shares_trees_go_as_its_parts_are_built() {
        // Five trees of 20 keys each, in parts of 30: 77 is in the third
        // part (60..90), which takes keys from trees 3 and 4.
        let trees: Vec<FastArt<Picky>> = (0..5u64)
            .map(|t| {
                (t * 20..t * 20 + 20)
                    .map(|i| (format!("{i:03}"), Picky(i)))
                    .collect()
            })
            .collect();
        let built = build_share(trees, Box::default(), 30);
        assert!(matches!(built.failure, Some(Outcome::Panicked(_))));
        let parts: Vec<usize> = built.parts.iter().map(|part| part.keys).collect();
        assert_eq!(parts, [30, 30]);
        let kept: Vec<Option<Vec<u8>>> =
            built.trees.iter().map(|tree| tree.keys().next()).collect();
        assert_eq!(kept, [Some(b"060".to_vec()), Some(b"080".to_vec())]);
        // With no value refused, every tree goes.
        let trees: Vec<FastArt<u64>> = (0..5u64)
            .map(|t| {
                (t * 20..t * 20 + 20)
                    .map(|i| (format!("{i:03}"), i))
                    .collect()
            })
            .collect();
        let built = build_share(trees, Box::default(), 30);
        assert!(built.failure.is_none() && built.trees.is_empty());
        assert_eq!(built.parts.len(), 3);
    }

    #[test]
    fn glue_drops_empty_parts_and_joins_the_ranges() {
        let part = |lower: &str, upper: Option<&str>, keys: &[&str]| {
            let layer = crate::FrozenLayer::from_sorted_iter(keys.iter().map(|k| (*k, 1u8)));
            Part {
                lower: lower.as_bytes().into(),
                upper: upper.map(|u| u.as_bytes().into()),
                keys: keys.len(),
                layer: Arc::new(layer.unwrap()),
            }
        };
        let glued = glue(vec![
            part("", Some("b"), &[]),
            part("b", Some("d"), &["b", "c"]),
            part("d", Some("f"), &[]),
            part("f", None, &["g"]),
        ]);
        let ranges: Vec<_> = glued
            .iter()
            .map(|p| (&*p.lower, p.upper.as_deref()))
            .collect();
        assert_eq!(ranges, [(&b""[..], Some(&b"f"[..])), (&b"f"[..], None)]);
        let alone = glue(vec![part("", Some("b"), &[]), part("b", None, &[])]);
        assert_eq!(
            (alone.len(), &*alone[0].lower, alone[0].upper.is_none()),
            (1, &b""[..], true)
        );
        let last_empty = glue(vec![part("", Some("b"), &["a"]), part("b", None, &[])]);
        assert_eq!((last_empty.len(), last_empty[0].upper.is_none()), (1, true));
    }
}
