//! Merging: the sealed deltas and the base, streamed in key order into a new
//! frozen layer.
//!
//! The merge reads the older layers through the same k-way merge as the
//! map's iterators ([`Iter`]), so it holds no keys in memory beyond one batch
//! per layer and the layer being built. It only *reads* the layers (shared,
//! immutable `Arc`s): whatever goes wrong — an I/O or format error, a panic
//! in user code such as [`FrozenValue::encode`], cancellation — the layers are
//! untouched and nothing is lost; the caller simply does not swap the result
//! in.

use std::any::Any;
use std::fmt;
use std::ops::Bound;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::iter::Iter;
use super::layers::Layers;
use crate::{Error, FrozenLayer, FrozenLayerBuilder, FrozenValue};

/// How often (in keys) a merge checks for cancellation and reports its
/// memory.
const CHECK_EVERY: u64 = 4096;

/// How a merge ended.
pub(crate) enum Outcome<V: FrozenValue> {
    /// The new base, and how long it took to build.
    Built(FrozenLayer<V>, Duration),
    /// The builder reported an error.
    Failed(Error),
    /// User code panicked (the payload, to resume or describe).
    Panicked(Box<dyn Any + Send + 'static>),
    /// The map is being dropped.
    Cancelled,
}

impl<V: FrozenValue> fmt::Debug for Outcome<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Built(layer, time) => f.debug_tuple("Built").field(layer).field(time).finish(),
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
/// amount to, which holds `keys` keys. `building` receives the approximate heap bytes of the layer
/// being built as it grows (0 again at the end).
pub(crate) fn build<V: FrozenValue + Clone>(
    layers: &Layers<V>,
    keys: usize,
    cancel: &AtomicBool,
    building: &AtomicUsize,
) -> Outcome<V> {
    let started = Instant::now();
    let result = panic::catch_unwind(AssertUnwindSafe(|| stream(layers, keys, cancel, building)));
    building.store(0, Ordering::Relaxed);
    match result {
        Ok(Ok(Some(layer))) => Outcome::Built(layer, started.elapsed()),
        Ok(Ok(None)) => Outcome::Cancelled,
        Ok(Err(err)) => Outcome::Failed(err),
        Err(payload) => Outcome::Panicked(payload),
    }
}

fn stream<V: FrozenValue + Clone>(
    layers: &Layers<V>,
    keys: usize,
    cancel: &AtomicBool,
    building: &AtomicUsize,
) -> Result<Option<FrozenLayer<V>>, Error> {
    let mut entries =
        Iter::new(None, layers, Bound::Unbounded, Bound::Unbounded).with_large_batches();
    let mut builder = FrozenLayerBuilder::memory_with_capacity(estimate(layers, keys));
    while let Some((key, value)) = entries.next_entry() {
        builder.insert(key, value)?;
        if builder.len() % CHECK_EVERY == 0 {
            if cancel.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let bytes = builder.memory_usage();
            building.store(bytes, Ordering::Relaxed);
        }
    }
    debug_assert_eq!(
        builder.len(),
        keys as u64,
        "the map's len disagrees with its layers"
    );
    builder.into_layer().map(Some)
}

/// The bytes to reserve for a new base of `keys` keys: the old base's bytes
/// per key, times `keys`, plus 5%.
///
/// Without it the output buffer grows by doubling and may hold twice what
/// it needs at the end, and shrinking it then copies it once more. If the
/// estimate is short, the buffer grows from it as before.
fn estimate<V: FrozenValue>(layers: &Layers<V>, keys: usize) -> usize {
    let base = &layers.base;
    if base.len() < 1024 {
        return 0; // too few keys to say
    }
    let per_key = base.as_bytes().len() as f64 / base.len() as f64;
    (per_key * keys as f64 * 1.05) as usize + 4096
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
