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
use std::ops::{Bound, ControlFlow};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::base::Part;
use super::iter::Iter;
use super::layers::Layers;
use crate::error::panic_message;
use crate::{Error, FrozenLayer, FrozenLayerBuilder, FrozenValue};

/// How often (in keys) a merge checks for cancellation and reports its
/// memory.
const CHECK_EVERY: usize = 4096;

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
/// (between half and one and a quarter times that, along the old parts'
/// boundaries where it can; old parts no sealed delta touches are kept as
/// they are), and hands each part to `publish` as soon as it is built (in
/// key order: the last one has no upper bound). `building`
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
    let mut entries = Iter::new(None, &layers, Bound::Unbounded, Bound::Unbounded).for_merge();
    // A fixed size, not the map's keys over a number of parts: that would
    // shift as the map grows and push parts out of their range of sizes,
    // and cutting an old part in the middle keeps its whole layer (and the
    // new parts that already cover some of it) until the merge passes its
    // end.
    let size = PartSize::new(part_keys);
    let target = size.target;
    let average = bytes_per_key(layers.base.layer_bytes(), layers.base.len());
    let old: Vec<OldPart<V>> = layers
        .base
        .parts()
        .iter()
        .map(|part| {
            let layer = &part.layer;
            let per_key = bytes_per_key(layer.as_bytes().len(), layer.len());
            // A part the sealed deltas leave alone, of a size the rules
            // below would keep, is put in place again as it is: a merge
            // after writes that fall in a few ranges (keys that grow with
            // time, say) rebuilds only those.
            let untouched = layers.deltas.iter().all(|delta| {
                let mut any = false;
                delta.visit(part.bounds(), |_, _| {
                    any = true;
                    ControlFlow::Break(())
                });
                !any
            });
            let keeps = size.keeps(part.keys);
            // Only a layer of exactly the part's keys: a part cut from a
            // larger layer would keep all of it.
            let whole = part.keys == layer.len();
            OldPart {
                upper: part.upper.clone(),
                keys: part.keys,
                bytes_per_key: per_key.or(average),
                reuse: (untouched && keeps && whole).then(|| Arc::downgrade(layer)),
            }
        })
        .collect();
    drop(layers);
    // The old part that holds the keys being read, and how many of its keys
    // were read (an estimate: the deltas add and remove some).
    let mut within = 0;
    let mut consumed = 0;
    let mut builder =
        FrozenLayerBuilder::memory_with_capacity(expected_bytes(&old, &size, within, consumed));
    let mut lower: Box<[u8]> = Box::default();
    let mut built = 0;
    while let Some((key, value)) = entries.next_entry() {
        let len = builder.len();
        let mut crossed = None;
        while let Some(upper) = &old[within].upper
            && *key >= **upper
        {
            crossed = Some(within);
            within += 1;
            consumed = 0;
        }
        let cut = match crossed {
            // New parts end where old ones did, so that putting one in
            // place frees the old ones it covers (an old part cut in the
            // middle would stay whole until the merge passes its end).
            Some(passed) if len > 0 && len >= target / 2 => old[passed].upper.clone(),
            // Other cuts are by count. An old part far from the size (such
            // as a whole layer a map was opened with, or the empty layer of
            // a new map) is cut at the target. One that grew well past the
            // target is cut in two halves, before it reaches the largest
            // size: cut there instead, it would leave the next part to start
            // with a few keys of it. No part grows past the largest size.
            _ => {
                let keys = old[within].keys;
                let by_count = if size.regular(keys) {
                    // (`len > 0`: at a target of 1, half of it is 0, and
                    // an empty part would be cut.)
                    let halve = keys >= size.split_from
                        && consumed == keys / 2
                        && len > 0
                        && len >= target / 2;
                    halve || len >= size.largest
                } else {
                    len >= target
                };
                by_count.then(|| key.into())
            }
        };
        if let Some(upper) = cut {
            // Finish the part before starting the next one's buffer.
            let full = mem::replace(&mut builder, FrozenLayerBuilder::memory());
            let lower = mem::replace(&mut lower, upper.clone());
            let part = Part::built(lower, Some(upper), full)?;
            built += part.keys;
            publish(part);
            builder = FrozenLayerBuilder::memory_with_capacity(expected_bytes(
                &old, &size, within, consumed,
            ));
        }
        // At the start of an old part that can be kept (with no new part
        // begun below it): put it in place, and skip its keys.
        if builder.is_empty()
            && consumed == 0
            && let Some(layer) = old[within].reuse.as_ref().and_then(Weak::upgrade)
        {
            // Its range starts where the new part would have (lower, if
            // the old parts below left no keys); its layer holds only keys
            // from its own lower bound on.
            let upper = old[within].upper.clone();
            built += old[within].keys;
            publish(Part {
                lower: mem::replace(&mut lower, upper.clone().unwrap_or_default()),
                upper: upper.clone(),
                keys: old[within].keys,
                layer,
            });
            let Some(upper) = upper else {
                debug_assert_eq!(built, keys, "the map's len disagrees with its layers");
                return Ok(true); // the last part: nothing after it
            };
            entries.skip_to(&upper);
            within += 1;
            builder = FrozenLayerBuilder::memory_with_capacity(expected_bytes(
                &old, &size, within, consumed,
            ));
            continue;
        }
        builder.insert(key, value)?;
        consumed += 1;
        if builder.len() % CHECK_EVERY == 0 {
            if cancel.load(Ordering::Relaxed) {
                return Ok(false);
            }
            building.store(builder.memory_usage(), Ordering::Relaxed);
        }
    }
    let part = Part::built(lower, None, builder)?;
    debug_assert_eq!(
        built + part.keys,
        keys,
        "the map's len disagrees with its layers"
    );
    publish(part);
    Ok(true)
}

/// The sizes, in keys, that decide where parts are cut.
struct PartSize {
    /// The size parts are cut to by count.
    target: usize,
    /// No part grows past this: a part being built, and the old ones it
    /// replaces, are a merge's extra memory.
    largest: usize,
    /// A part of this many keys is rebuilt as two.
    split_from: usize,
}

impl PartSize {
    fn new(part_keys: usize) -> Self {
        let target = part_keys.max(1);
        PartSize {
            target,
            // Saturating: `part_keys` may be up to `usize::MAX` (one part).
            largest: target.saturating_add(target / 2),
            split_from: target.saturating_add(target / 4),
        }
    }

    /// Whether an old part of `keys` keys is of about the size: rebuilt
    /// along its own boundaries (else cut by count at the target).
    fn regular(&self, keys: usize) -> bool {
        (self.target / 2..=self.largest).contains(&keys)
    }

    /// Whether an old part of `keys` keys stays one part as it is.
    fn keeps(&self, keys: usize) -> bool {
        (self.target / 2..self.split_from).contains(&keys)
    }
}

/// An old part as a merge sees it.
struct OldPart<V: FrozenValue> {
    upper: Option<Box<[u8]>>,
    keys: usize,
    /// Its layer's bytes per key (if it has enough keys to say), else the
    /// base's.
    bytes_per_key: Option<f64>,
    /// The part's layer if the merge puts it in place again as it is. Weak,
    /// so that holding it does not keep the part once it is replaced.
    reuse: Option<Weak<FrozenLayer<V>>>,
}

/// The bytes to reserve for a new part that starts after the first
/// `consumed` keys of old part `at`: what the old parts it will cover take,
/// plus 10%, following the cutting rules of [`stream`] on the old parts'
/// key counts (the deltas add and remove a few).
///
/// Without it the output buffer grows (by a quarter at a time past 1 MiB)
/// and may end a quarter larger than it needs, and shrinking it then
/// copies it once more. If the estimate is short, the buffer grows from it
/// as before; one far too long (say, the whole old part, for a part that
/// starts at its middle) would hold the excess for the whole build.
fn expected_bytes<V: FrozenValue>(
    old: &[OldPart<V>],
    size: &PartSize,
    mut at: usize,
    mut consumed: usize,
) -> usize {
    let PartSize {
        target,
        largest,
        split_from,
    } = *size;
    let mut keys = 0;
    let mut bytes = 0.0;
    loop {
        let (old_keys, per_key) = (old[at].keys, old[at].bytes_per_key.unwrap_or(0.0));
        let rest = old_keys.saturating_sub(consumed);
        let end = if !size.regular(old_keys) {
            // Cut by count at the target.
            (keys + rest >= target).then(|| target - keys)
        } else if old_keys >= split_from && consumed < old_keys / 2 {
            // Cut at the old part's middle.
            Some(old_keys / 2 - consumed)
        } else {
            (keys + rest >= largest).then(|| largest - keys)
        };
        if let Some(taken) = end {
            bytes += taken as f64 * per_key;
            break;
        }
        bytes += rest as f64 * per_key;
        keys += rest;
        // Cut where the old part ends, unless the part is still small.
        if keys >= target / 2 || at + 1 == old.len() {
            break;
        }
        at += 1;
        consumed = 0;
    }
    if bytes == 0.0 {
        return 0;
    }
    (bytes * 1.1) as usize + 4096
}

/// Bytes per key of a layer or base of `bytes` bytes and `keys` keys, if
/// it has enough keys to say.
fn bytes_per_key(bytes: usize, keys: usize) -> Option<f64> {
    (keys >= 1024).then(|| bytes as f64 / keys as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Old parts of these key counts, at these bytes per key.
    fn parts(sizes: &[(usize, f64)]) -> Vec<OldPart<u64>> {
        (sizes.iter())
            .map(|&(keys, per_key)| OldPart {
                upper: None,
                keys,
                bytes_per_key: Some(per_key),
                reuse: None,
            })
            .collect()
    }

    /// What `expected_bytes` reserves for parts that will take `bytes`.
    fn reserve(bytes: f64) -> usize {
        (bytes * 1.1) as usize + 4096
    }

    /// Each reservation follows the cutting rules of `stream` over the old
    /// parts: target 100 keys, largest 150, halved from 125.
    #[test]
    fn a_reservation_covers_the_old_parts_the_new_one_will_take() {
        let size = PartSize::new(100);
        let expect =
            |old: &[(usize, f64)], at, consumed| expected_bytes(&parts(old), &size, at, consumed);
        // A part of about the size is rebuilt whole.
        assert_eq!(expect(&[(100, 10.0)], 0, 0), reserve(1000.0));
        // One from 125 keys on, as two halves: each half's bytes.
        assert_eq!(expect(&[(130, 10.0), (100, 1.0)], 0, 0), reserve(650.0));
        assert_eq!(expect(&[(130, 10.0), (100, 1.0)], 0, 65), reserve(650.0));
        assert_eq!(expect(&[(130, 10.0), (100, 1.0)], 0, 10), reserve(550.0));
        // One far from the size is cut by count at the target, and its
        // rest (50 keys) ends a part where it ends.
        assert_eq!(expect(&[(1000, 10.0), (100, 1.0)], 0, 0), reserve(1000.0));
        assert_eq!(expect(&[(1000, 10.0), (100, 1.0)], 0, 950), reserve(500.0));
        // A rest under half the target goes on into the next old part, up
        // to the largest size.
        assert_eq!(expect(&[(30, 10.0), (100, 20.0)], 0, 0), reserve(2300.0));
        assert_eq!(
            expect(&[(40, 10.0), (120, 20.0)], 0, 0),
            reserve(400.0 + 2200.0)
        );
        assert_eq!(
            expect(&[(1000, 10.0), (30, 20.0), (100, 1.0)], 0, 990),
            reserve(100.0 + 600.0 + 100.0)
        );
        // ... or up to the target, into one far from the size ...
        assert_eq!(
            expect(&[(30, 10.0), (1000, 20.0)], 0, 0),
            reserve(300.0 + 1400.0)
        );
        // ... or into the next one's first half.
        assert_eq!(
            expect(&[(30, 10.0), (140, 20.0)], 0, 0),
            reserve(300.0 + 1400.0)
        );
        // The last part ends where the old parts do.
        assert_eq!(expect(&[(30, 10.0)], 0, 0), reserve(300.0));
        assert_eq!(expect(&[(100, 1.0), (30, 10.0)], 1, 0), reserve(300.0));
        // Nothing known: nothing reserved.
        let unknown = [OldPart::<u64> {
            upper: None,
            keys: 100,
            bytes_per_key: None,
            reuse: None,
        }];
        assert_eq!(expected_bytes(&unknown, &size, 0, 0), 0);
    }

    #[test]
    fn part_sizes() {
        let size = PartSize::new(100);
        assert_eq!(
            (size.target, size.largest, size.split_from),
            (100, 150, 125)
        );
        assert!(!size.regular(49) && size.regular(50) && size.regular(150) && !size.regular(151));
        assert!(!size.keeps(49) && size.keeps(50) && size.keeps(124) && !size.keeps(125));
        assert_eq!(PartSize::new(0).target, 1);
        // One part, whatever the size: no overflow.
        let whole = PartSize::new(usize::MAX);
        assert_eq!((whole.largest, whole.split_from), (usize::MAX, usize::MAX));
        assert!(whole.regular(usize::MAX / 2));
    }

    #[test]
    fn outcomes_show_what_happened() {
        let shown = |outcome: Outcome| format!("{outcome:?}");
        assert_eq!(
            shown(Outcome::Built(Duration::from_millis(5))),
            "Built(5ms)"
        );
        assert_eq!(
            shown(Outcome::Panicked(Box::new("boom"))),
            r#"Panicked("boom")"#
        );
        assert_eq!(shown(Outcome::Cancelled), "Cancelled");
    }

    #[test]
    fn bytes_per_key_needs_enough_keys() {
        assert_eq!(bytes_per_key(10_230, 1023), None);
        assert_eq!(bytes_per_key(10_240, 1024), Some(10.0));
        assert_eq!(bytes_per_key(25_000, 2000), Some(12.5));
    }
}
