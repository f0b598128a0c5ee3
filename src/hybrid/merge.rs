//! Merging: the sealed deltas and the base, streamed in key order into a new
//! base, part by part.
//!
//! The merge reads the older layers through the same k-way merge as the
//! map's iterators ([`Iter`]), so it holds no keys in memory beyond one batch
//! per layer and the part being built. It only *reads* the layers (shared,
//! immutable `Arc`s), and each part it puts in place answers for its keys as
//! the sealed deltas over the old base do. So whatever goes wrong — an I/O
//! or format error, a panic in user code such as [`FrozenValue::encode`],
//! cancellation — the map answers as before, the sealed deltas stay, and
//! nothing is lost.

use std::any::Any;
use std::fmt;
use std::mem;
use std::ops::Bound;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::base::Part;
use super::iter::Iter;
use super::layers::Layers;
use crate::{Error, FrozenLayerBuilder, FrozenValue};

/// How often (in keys) a merge checks for cancellation and reports its
/// memory.
const CHECK_EVERY: u64 = 4096;

/// How a merge ended.
pub(crate) enum Outcome {
    /// The new base is in place; the merge took this long.
    Built(Duration),
    /// The builder reported an error.
    Failed(Error),
    /// User code panicked (the payload, to resume or describe).
    Panicked(Box<dyn Any + Send + 'static>),
    /// The map is being dropped.
    Cancelled,
}

impl fmt::Debug for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Built(time) => f.debug_tuple("Built").field(time).finish(),
            Outcome::Failed(err) => f.debug_tuple("Failed").field(err).finish(),
            Outcome::Panicked(payload) => f
                .debug_tuple("Panicked")
                .field(&panic_message(payload.as_ref()))
                .finish(),
            Outcome::Cancelled => f.write_str("Cancelled"),
        }
    }
}

/// Builds the base that `layers` (sealed deltas and base, no fresh delta)
/// amount to, which holds `keys` keys, in parts of about `part_keys` keys
/// (between half and one and a half times that, along the old parts'
/// boundaries where it can), and hands each part to `publish` as soon as it
/// is built (in key order: the last one has no upper bound). `building`
/// receives the approximate heap bytes of the part being built as it grows
/// (0 again at the end).
///
/// `layers` is consumed: the merge holds the old base's parts only until
/// it has read them.
pub(crate) fn build<V: FrozenValue + Clone>(
    layers: Arc<Layers<V>>,
    keys: usize,
    part_keys: usize,
    cancel: &AtomicBool,
    building: &AtomicUsize,
    publish: &mut dyn FnMut(Part<V>),
) -> Outcome {
    let started = Instant::now();
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        stream(layers, keys, part_keys, cancel, building, publish)
    }));
    building.store(0, Ordering::Relaxed);
    match result {
        Ok(Ok(true)) => Outcome::Built(started.elapsed()),
        Ok(Ok(false)) => Outcome::Cancelled,
        Ok(Err(err)) => Outcome::Failed(err),
        Err(payload) => Outcome::Panicked(payload),
    }
}

/// Returns false if cancelled.
fn stream<V: FrozenValue + Clone>(
    layers: Arc<Layers<V>>,
    keys: usize,
    part_keys: usize,
    cancel: &AtomicBool,
    building: &AtomicUsize,
    publish: &mut dyn FnMut(Part<V>),
) -> Result<bool, Error> {
    let mut entries =
        Iter::new(None, &layers, Bound::Unbounded, Bound::Unbounded).with_large_batches();
    // A fixed size, not the map's keys over a number of parts: that would
    // shift as the map grows and push parts out of their range of sizes,
    // and cutting an old part in the middle keeps its whole layer (and the
    // new parts that already cover some of it) until the merge passes its
    // end.
    let target = part_keys.max(1);
    let average = bytes_per_key(layers.base.layer_bytes(), layers.base.len());
    // Each old part's upper bound, keys, and bytes per key.
    let old: Vec<OldPart> = layers
        .base
        .parts()
        .iter()
        .map(|part| {
            let layer = &part.layer;
            let per_key = bytes_per_key(layer.as_bytes().len(), layer.len());
            (part.upper.clone(), part.keys, per_key.or(average))
        })
        .collect();
    drop(layers);
    // Old parts of about the target size are kept (rebuilt along the same
    // boundaries) while they stay under one and a half times that (a part
    // being built, and the old one it replaces, are a merge's extra memory);
    // others are cut by count.
    let largest = target + target / 2;
    let regular = |keys: usize| (target / 2..=largest).contains(&keys);
    // The buffer for a new part that starts in old part `at`: most new
    // parts replace one old part, at about its size, and none is larger
    // than the target when it is cut by count.
    let capacity = |at: usize| {
        let keys = if regular(old[at].1) {
            old[at].1
        } else {
            old[at].1.min(target)
        };
        reserve(old[at].2, keys)
    };
    // The old part that holds the keys being read.
    let mut within = 0;
    let mut builder = FrozenLayerBuilder::memory_with_capacity(capacity(within));
    let mut lower: Box<[u8]> = Box::default();
    let mut built = 0;
    while let Some((key, value)) = entries.next_entry() {
        let len = builder.len() as usize;
        let mut crossed = None;
        while let Some(upper) = &old[within].0
            && *key >= **upper
        {
            crossed = Some(within);
            within += 1;
        }
        let cut = match crossed {
            // New parts end where old ones did, so that putting one in
            // place frees the old ones it covers (an old part cut in the
            // middle would stay whole until the merge passes its end).
            Some(passed) if len > 0 && len >= target / 2 => old[passed].0.clone(),
            // A part that grew past the largest size (or an old part far
            // from the size, such as a whole layer a map was opened with)
            // is cut by count.
            _ => {
                let limit = if regular(old[within].1) {
                    largest
                } else {
                    target
                };
                (len >= limit).then(|| key.into())
            }
        };
        if let Some(upper) = cut {
            // Finish the part before starting the next one's buffer.
            let full = mem::replace(&mut builder, FrozenLayerBuilder::memory());
            let layer = full.into_layer()?;
            built += layer.len();
            publish(Part {
                lower: mem::replace(&mut lower, upper.clone()),
                upper: Some(upper),
                keys: layer.len(),
                layer: Arc::new(layer),
            });
            builder = FrozenLayerBuilder::memory_with_capacity(capacity(within));
        }
        builder.insert(key, value)?;
        if builder.len() % CHECK_EVERY == 0 {
            if cancel.load(Ordering::Relaxed) {
                return Ok(false);
            }
            building.store(builder.memory_usage(), Ordering::Relaxed);
        }
    }
    let layer = builder.into_layer()?;
    debug_assert_eq!(
        built + layer.len(),
        keys,
        "the map's len disagrees with its layers"
    );
    publish(Part {
        lower,
        upper: None,
        keys: layer.len(),
        layer: Arc::new(layer),
    });
    Ok(true)
}

/// An old part as a merge sees it: its upper bound, its keys, and its
/// layer's bytes per key (if it has enough keys to say).
type OldPart = (Option<Box<[u8]>>, usize, Option<f64>);

/// Bytes per key of a layer or base of `bytes` bytes and `keys` keys, if
/// it has enough keys to say.
fn bytes_per_key(bytes: usize, keys: usize) -> Option<f64> {
    (keys >= 1024).then(|| bytes as f64 / keys as f64)
}

/// The bytes to reserve for a part of about `keys` keys: `per_key` bytes
/// per key, plus 10%.
///
/// Without it the output buffer grows by doubling and may hold twice what
/// it needs at the end, and shrinking it then copies it once more. If the
/// estimate is short, the buffer grows from it as before.
fn reserve(per_key: Option<f64>, keys: usize) -> usize {
    per_key.map_or(0, |per_key| (per_key * keys as f64 * 1.1) as usize + 4096)
}

/// A panic payload as text, for error reports.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}
