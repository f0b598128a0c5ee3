//! The base of a hybrid map: frozen layers, each answering for one range of
//! keys.
//!
//! A merge does not build the new base as one layer but as **parts** of
//! about [`HybridConfig::part_keys`](super::HybridConfig::part_keys) keys
//! each, and puts each part in place as soon as it is built. The old parts
//! it has passed are then dropped, so a merge holds one part's worth of new
//! base on top of the old one, not a second copy of the whole base (29.3
//! against 16.6 bytes per key at the peak of a merge of the 7.3 M Debian
//! paths). Splitting costs some compression: suffixes are no longer
//! shared across parts (9.06 B/key as one layer, 9.35 in 7 parts, 10.06 in
//! 28).
//!
//! # Invariants
//!
//! * A [`Base`] has at least one part. The first part's `lower` is the empty
//!   key (the smallest key), each part's `upper` is the next part's `lower`,
//!   the last part's `upper` is `None`, and the lowers strictly increase: the
//!   parts cover all keys, each key exactly once.
//! * A part's layer holds exactly the base's keys in `[lower, upper)`, and
//!   `keys` counts them. It may hold other keys outside that range (a part
//!   of an old base that a running merge has half replaced keeps its whole
//!   layer until the merge passes its end); those are never read, as every
//!   read is clipped to the part's range.

use std::fmt;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use crate::frozen::save_built;
use crate::keys::{before_end, common_prefix};
use crate::{FrozenLayer, FrozenLayerBuilder, FrozenValue, Result};

/// One frozen layer and the range of keys it answers for.
pub(crate) struct Part<V: FrozenValue> {
    /// The smallest key this part answers for (empty for the first part).
    pub(crate) lower: Box<[u8]>,
    /// Keys from this one on belong to the next part; `None` for the last.
    pub(crate) upper: Option<Box<[u8]>>,
    pub(crate) layer: Arc<FrozenLayer<V>>,
    /// The layer's keys in `[lower, upper)`.
    pub(crate) keys: usize,
}

impl<V: FrozenValue> Clone for Part<V> {
    fn clone(&self) -> Self {
        Part {
            lower: self.lower.clone(),
            upper: self.upper.clone(),
            layer: Arc::clone(&self.layer),
            keys: self.keys,
        }
    }
}

impl<V: FrozenValue> Part<V> {
    /// A part for all keys.
    pub(crate) fn whole(layer: FrozenLayer<V>) -> Self {
        Part {
            lower: Box::default(),
            upper: None,
            keys: layer.len(),
            layer: Arc::new(layer),
        }
    }

    /// A part of the keys `builder` holds, all in `lower..upper`: what a
    /// merge makes of each builder it fills.
    pub(crate) fn built(
        lower: Box<[u8]>,
        upper: Option<Box<[u8]>>,
        builder: FrozenLayerBuilder<V>,
    ) -> Result<Self> {
        let layer = builder.into_layer()?;
        Ok(Part {
            lower,
            upper,
            keys: layer.len(),
            layer: Arc::new(layer),
        })
    }

    /// The entries in `start..end` that this part answers for.
    pub(crate) fn range<'a>(
        &'a self,
        start: Bound<&'a [u8]>,
        end: Bound<&'a [u8]>,
    ) -> crate::frozen::Iter<'a, V> {
        let start = later_start(start, &self.lower);
        let end = earlier_end(end, self.upper.as_deref());
        self.layer.range::<[u8], _>((start, end))
    }

    /// The range of keys the part answers for.
    pub(crate) fn bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        let end = earlier_end(Bound::Unbounded, self.upper.as_deref());
        (Bound::Included(&self.lower), end)
    }

    /// Whether `key` lies in the range this part answers for. An empty
    /// `lower` is not compared: see `Base::part_of`.
    #[inline]
    fn answers_for(&self, key: &[u8]) -> bool {
        (self.lower.is_empty() || *self.lower <= *key)
            && self.upper.as_deref().is_none_or(|upper| key < upper)
    }

    /// Narrows the part to the keys from `lower` on (a merge has built the
    /// keys below it into a new part).
    pub(crate) fn start_at(&mut self, lower: &[u8]) {
        debug_assert!(*self.lower < *lower);
        debug_assert!(self.upper.as_deref().is_none_or(|upper| lower < upper));
        let end = match &self.upper {
            Some(upper) => rank_from(&self.layer, upper),
            None => self.layer.len(),
        };
        self.keys = end - rank_from(&self.layer, lower);
        self.lower = lower.into();
    }

    /// Whether keys past this part may still lie before `end`.
    pub(crate) fn next_within(&self, end: Bound<&[u8]>) -> bool {
        (self.upper.as_deref()).is_some_and(|upper| before_end(upper, end))
    }

    /// Whether keys before this part may still lie after `start`.
    pub(crate) fn previous_within(&self, start: Bound<&[u8]>) -> bool {
        match start {
            Bound::Unbounded => true,
            Bound::Included(start) | Bound::Excluded(start) => *start < *self.lower,
        }
    }

    /// Whether the part lies wholly after `end`.
    pub(crate) fn starts_after(&self, end: Bound<&[u8]>) -> bool {
        !before_end(&self.lower, end)
    }

    /// Whether the part lies wholly before `start`.
    pub(crate) fn ends_before(&self, start: Bound<&[u8]>) -> bool {
        match (&self.upper, start) {
            (None, _) | (_, Bound::Unbounded) => false,
            (Some(upper), Bound::Included(start) | Bound::Excluded(start)) => **upper <= *start,
        }
    }
}

/// The base: parts in key order (see the [module documentation](self) for
/// the invariants).
pub(crate) struct Base<V: FrozenValue> {
    parts: Vec<Part<V>>,
    /// The sum of the parts' `keys`.
    keys: usize,
}

impl<V: FrozenValue> Clone for Base<V> {
    fn clone(&self) -> Self {
        Base {
            parts: self.parts.clone(),
            keys: self.keys,
        }
    }
}

impl<V: FrozenValue> Base<V> {
    /// A base of one layer.
    pub(crate) fn whole(layer: FrozenLayer<V>) -> Self {
        Base::from_parts(vec![Part::whole(layer)])
    }

    /// A base of `parts`, which must keep the invariants.
    pub(crate) fn from_parts(parts: Vec<Part<V>>) -> Self {
        debug_assert!(parts.first().is_some_and(|first| first.lower.is_empty()));
        debug_assert!(parts.last().is_some_and(|last| last.upper.is_none()));
        debug_assert!(
            parts
                .windows(2)
                .all(|pair| pair[0].upper.as_deref() == Some(&*pair[1].lower)
                    && pair[0].lower < pair[1].lower)
        );
        let keys = parts.iter().map(|part| part.keys).sum();
        Base { parts, keys }
    }

    pub(crate) fn parts(&self) -> &[Part<V>] {
        &self.parts
    }

    /// The part that answers for `key`.
    #[inline]
    fn part_of(&self, key: &[u8]) -> usize {
        // The first part's lower is the empty key, so it starts at or
        // before any key and is left out of the search: comparing with it
        // costs more than it seems, as its bytes are a dangling pointer
        // that glibc's masked-load `memcmp` reads under fault suppression,
        // a microcode assist of some 80 ns on this machine's CPU.
        self.parts[1..].partition_point(|part| *part.lower <= *key)
    }

    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<V> {
        self.parts[self.part_of(key)].layer.get(key)
    }

    /// Hands `found` the length and value of each key in the base that is
    /// a prefix of `key`, shortest first.
    ///
    /// A prefix sorts before the key, so it may lie in an earlier part than
    /// the key: the walk visits, in order, the parts that answer for some
    /// prefix of `key`, and keeps from each layer only the keys its part
    /// answers for (a part's layer may hold more).
    pub(crate) fn prefixes_of(&self, key: &[u8], mut found: impl FnMut(usize, V)) {
        let mut part = 0;
        loop {
            let here = &self.parts[part];
            let mut covering = here.layer.prefixes_of(key);
            while let Some((prefix, value)) = covering.next_encoded() {
                if here.answers_for(prefix) {
                    found(prefix.len(), V::decode(value));
                }
            }
            // The shortest prefix at or after this part's end starts the
            // next part to visit: `upper` itself, if it is a prefix of `key`,
            // or else one byte past the bytes the two share (no prefix of
            // `key` is at or after `upper` if `key` is not).
            let Some(upper) = here.upper.as_deref() else {
                return;
            };
            if key < upper {
                return;
            }
            let shared = common_prefix(key, upper);
            let len = if shared == upper.len() {
                shared
            } else {
                shared + 1
            };
            part = self.part_of(&key[..len]);
        }
    }

    /// The length and value of the longest key in the base that is a
    /// prefix of `key` and whose length `wanted` accepts.
    ///
    /// Longer prefixes sort later, so the walk visits the parts from the
    /// one that answers for `key` back toward the first, and stops in the
    /// first part that holds an accepted prefix in its range; in each it
    /// starts where the layer's jump table leads (see
    /// [`FrozenLayer::longest_prefix_where`]).
    pub(crate) fn longest_prefix_where(
        &self,
        key: &[u8],
        mut wanted: impl FnMut(usize) -> bool,
    ) -> Option<(usize, V)> {
        let mut part = self.part_of(key);
        loop {
            let here = &self.parts[part];
            let found = (here.layer).longest_prefix_where(key, |prefix| {
                here.answers_for(prefix) && wanted(prefix.len())
            });
            if let Some((prefix, value)) = found {
                return Some((prefix.len(), V::decode(value)));
            }
            let lower = &*here.lower;
            if lower.is_empty() {
                return None;
            }
            // The longest prefix before `lower` ends the next part to
            // visit: `lower` less its last byte, if `lower` is a prefix of
            // `key`, or else the bytes the two share (the prefixes of
            // `key` in this part are all at or after `lower`, so `key` is
            // after it and, past the bytes they share, greater).
            let shared = common_prefix(key, lower);
            let len = if shared == lower.len() {
                shared - 1
            } else {
                shared
            };
            part = self.part_of(&key[..len]);
        }
    }

    /// [`get`](Self::get) with [`FrozenLayer::get_beside`].
    pub(crate) fn get_beside(&self, key: &[u8], beside: &mut dyn FnMut() -> bool) -> Option<V> {
        self.parts[self.part_of(key)].layer.get_beside(key, beside)
    }

    /// The values of the keys at `indices` of `keys`, into `values` at the
    /// same indices: one batched lookup per part.
    pub(crate) fn get_many_into<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
        indices: Vec<usize>,
        values: &mut [Option<V>],
    ) {
        self.per_part(keys, indices, values, |layer, batch| layer.get_many(batch));
    }

    /// Whether the keys at `indices` of `keys` are present, into `present`
    /// at the same indices: as [`get_many_into`](Self::get_many_into), but
    /// no value is read or decoded (a `String` would be allocated).
    pub(crate) fn contains_many_into<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
        indices: Vec<usize>,
        present: &mut [bool],
    ) {
        self.per_part(keys, indices, present, |layer, batch| {
            (layer.rank_many(batch).iter())
                .map(Option::is_some)
                .collect()
        });
    }

    /// The keys at `indices` of `keys`, grouped by part, each group handed
    /// to `lookup` with its part's layer; its answers go into `out` at the
    /// keys' indices.
    fn per_part<K: AsRef<[u8]>, T>(
        &self,
        keys: &[K],
        indices: Vec<usize>,
        out: &mut [T],
        lookup: impl Fn(&FrozenLayer<V>, &[&[u8]]) -> Vec<T>,
    ) {
        let mut by_part: Vec<(usize, usize)> = (indices.into_iter())
            .map(|i| (self.part_of(keys[i].as_ref()), i))
            .collect();
        by_part.sort_unstable();
        let mut batch = Vec::new();
        for run in by_part.chunk_by(|a, b| a.0 == b.0) {
            batch.clear();
            batch.extend(run.iter().map(|&(_, i)| keys[i].as_ref()));
            let found = lookup(&self.parts[run[0].0].layer, &batch);
            for (&(_, i), answer) in run.iter().zip(found) {
                out[i] = answer;
            }
        }
    }

    #[inline]
    pub(crate) fn contains_key(&self, key: &[u8]) -> bool {
        self.parts[self.part_of(key)].layer.contains_key(key)
    }

    /// Keys in the base.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.keys
    }

    /// Bytes of the parts' layers (keys outside their ranges included).
    pub(crate) fn layer_bytes(&self) -> usize {
        self.parts
            .iter()
            .map(|part| part.layer.as_bytes().len())
            .sum()
    }

    /// Heap bytes of the parts' layers (see [`FrozenLayer::memory_usage`]).
    pub(crate) fn memory_usage(&self) -> usize {
        self.parts
            .iter()
            .map(|part| part.layer.memory_usage())
            .sum()
    }

    /// Bytes of the parts' layers that are mapped from a file.
    pub(crate) fn mapped_bytes(&self) -> usize {
        self.parts
            .iter()
            .map(|part| part.layer.mapped_bytes())
            .sum()
    }

    /// The first entry after `bound` (a lower bound).
    pub(crate) fn first_from(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, V)> {
        let first = match bound {
            Bound::Unbounded => 0,
            Bound::Included(key) | Bound::Excluded(key) => self.part_of(key),
        };
        self.parts[first..]
            .iter()
            .find_map(|part| part.range(bound, Bound::Unbounded).next())
    }

    /// The last entry within the upper bound `bound`.
    pub(crate) fn last_before(&self, bound: Bound<&[u8]>) -> Option<(Vec<u8>, V)> {
        let last = match bound {
            Bound::Unbounded => self.parts.len() - 1,
            Bound::Included(key) | Bound::Excluded(key) => self.part_of(key),
        };
        self.parts[..=last].iter().rev().find_map(|part| {
            let end = earlier_end(bound, part.upper.as_deref());
            // A key below the part's range is not the part's.
            last_in_layer_before(&part.layer, end).filter(|(key, _)| **key >= *part.lower)
        })
    }

    /// Writes the base to `path` as one layer file, atomically.
    pub(crate) fn save(&self, path: &Path) -> Result<()> {
        if let [part] = self.parts.as_slice()
            && part.keys == part.layer.len()
        {
            return part.layer.save(path);
        }
        save_built(path, |builder| {
            for part in &self.parts {
                let mut entries = part.range(Bound::Unbounded, Bound::Unbounded);
                while let Some((key, value)) = entries.next_entry() {
                    builder.insert(key, value)?;
                }
            }
            Ok(())
        })
    }
}

impl<V: FrozenValue> fmt::Debug for Base<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Base")
            .field("parts", &self.parts.len())
            .field("keys", &self.keys)
            .field("bytes", &self.layer_bytes())
            .finish()
    }
}

/// The larger of a lower bound and `Included(lower)`.
fn later_start<'a>(start: Bound<&'a [u8]>, lower: &'a [u8]) -> Bound<&'a [u8]> {
    match start {
        Bound::Included(key) | Bound::Excluded(key) if key >= lower => start,
        _ => Bound::Included(lower),
    }
}

/// The smaller of an upper bound and `Excluded(upper)` (`None`: no bound).
fn earlier_end<'a>(end: Bound<&'a [u8]>, upper: Option<&'a [u8]>) -> Bound<&'a [u8]> {
    let Some(upper) = upper else {
        return end;
    };
    match end {
        Bound::Included(key) if key < upper => end,
        Bound::Excluded(key) if key <= upper => end,
        _ => Bound::Excluded(upper),
    }
}

/// How many of the layer's keys are smaller than `key`.
fn rank_from<V: FrozenValue>(layer: &FrozenLayer<V>, key: &[u8]) -> usize {
    let rank = match layer.rank(key) {
        Some(rank) => Some(rank),
        None => layer
            .range::<[u8], _>((Bound::Included(key), Bound::Unbounded))
            .next_entry()
            .map(|(next, _)| layer.rank(next).expect("a key the layer just yielded")),
    };
    rank.unwrap_or(layer.len())
}

/// The layer's last entry within the upper bound `bound`.
fn last_in_layer_before<V: FrozenValue>(
    layer: &FrozenLayer<V>,
    bound: Bound<&[u8]>,
) -> Option<(Vec<u8>, V)> {
    let end = match bound {
        Bound::Unbounded => return layer.last_key_value(),
        Bound::Included(limit) => match layer.rank(limit) {
            Some(rank) => rank + 1,
            None => rank_from(layer, limit),
        },
        Bound::Excluded(limit) => rank_from(layer, limit),
    };
    end.checked_sub(1).and_then(|before| layer.nth(before))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(keys: &[&str]) -> FrozenLayer<u8> {
        FrozenLayer::from_sorted_iter(keys.iter().enumerate().map(|(i, k)| (*k, i as u8))).unwrap()
    }

    /// Parts "" .. "d" .. "g" .., the middle one with keys outside its range
    /// (as a half-replaced part of an old base has).
    fn three_parts() -> Base<u8> {
        let mut middle = Part::whole(layer(&["a", "d", "e", "f", "g", "h"]));
        middle.upper = Some(b"g".as_slice().into());
        middle.start_at(b"d");
        let mut first = Part::whole(layer(&["b", "c"]));
        first.upper = Some(b"d".as_slice().into());
        let mut last = Part::whole(layer(&["g", "z"]));
        last.lower = b"g".as_slice().into();
        Base::from_parts(vec![first, middle, last])
    }

    /// The keys that are prefixes of a key come from the parts that answer
    /// for them, each once: a layer's keys beyond its part's range are not
    /// among them.
    #[test]
    fn prefixes_come_from_the_parts_that_answer_for_them() {
        let part = |keys: &[&str], value: u8, lower: &str, upper: Option<&str>| Part {
            lower: lower.as_bytes().into(),
            upper: upper.map(|u| u.as_bytes().into()),
            layer: Arc::new(
                FrozenLayer::from_sorted_iter(keys.iter().map(|k| (*k, value))).unwrap(),
            ),
            keys: keys
                .iter()
                .filter(|k| **k >= lower && upper.is_none_or(|u| **k < u))
                .count(),
        };
        // The middle layer holds keys below and above its part's range, and
        // the range ends at a key that is a prefix of others.
        let base = Base::from_parts(vec![
            part(&["", "c"], 1, "", Some("d")),
            part(&["", "a", "d", "de", "def"], 2, "d", Some("de")),
            part(&["de", "def", "g"], 3, "de", None),
        ]);
        let prefixes = |key: &str| {
            let mut found = Vec::new();
            base.prefixes_of(key.as_bytes(), |len, value| {
                found.push((key[..len].to_string(), value))
            });
            found
        };
        let owned = |entries: &[(&str, u8)]| -> Vec<(String, u8)> {
            entries.iter().map(|(k, v)| (k.to_string(), *v)).collect()
        };
        assert_eq!(
            prefixes("defg"),
            owned(&[("", 1), ("d", 2), ("de", 3), ("def", 3)])
        );
        assert_eq!(prefixes("dz"), owned(&[("", 1), ("d", 2)]));
        assert_eq!(prefixes("gh"), owned(&[("", 1), ("g", 3)]));
        assert_eq!(prefixes("abc"), owned(&[("", 1)]));
        assert_eq!(prefixes("cd"), owned(&[("", 1), ("c", 1)]));
        // The longest, from the key's part back, skipping the lengths not
        // wanted.
        let longest = |key: &str, unwanted: &[usize]| {
            base.longest_prefix_where(key.as_bytes(), |len| !unwanted.contains(&len))
                .map(|(len, value)| (key[..len].to_string(), value))
        };
        let one = |key: &str, value: u8| Some((key.to_string(), value));
        assert_eq!(longest("defg", &[]), one("def", 3));
        assert_eq!(longest("defg", &[3]), one("de", 3));
        assert_eq!(longest("defg", &[2, 3]), one("d", 2));
        assert_eq!(longest("defg", &[1, 2, 3]), one("", 1));
        assert_eq!(longest("defg", &[0, 1, 2, 3]), None);
        assert_eq!(longest("gh", &[1]), one("", 1));
        assert_eq!(longest("dz", &[]), one("d", 2));
        assert_eq!(longest("cd", &[1]), one("", 1));
    }

    #[test]
    fn reads_stay_in_each_parts_range() {
        let base = three_parts();
        assert_eq!(base.len(), 2 + 3 + 2);
        assert_eq!(base.parts()[1].keys, 3);
        assert!(base.contains_key(b"e") && base.contains_key(b"g") && base.contains_key(b"b"));
        // "a" is in the middle layer, but below its range.
        assert!(!base.contains_key(b"a"));
        let key = |entry: Option<(Vec<u8>, u8)>| entry.map(|(k, _)| String::from_utf8(k).unwrap());
        assert_eq!(key(base.first_from(Bound::Unbounded)), Some("b".into()));
        assert_eq!(
            key(base.first_from(Bound::Excluded(b"c"))),
            Some("d".into())
        );
        assert_eq!(
            key(base.first_from(Bound::Excluded(b"f"))),
            Some("g".into())
        );
        assert_eq!(key(base.first_from(Bound::Excluded(b"z"))), None);
        assert_eq!(key(base.last_before(Bound::Unbounded)), Some("z".into()));
        assert_eq!(
            key(base.last_before(Bound::Excluded(b"g"))),
            Some("f".into())
        );
        assert_eq!(
            key(base.last_before(Bound::Excluded(b"d"))),
            Some("c".into())
        );
        assert_eq!(
            key(base.last_before(Bound::Excluded(b"e"))),
            Some("d".into())
        );
        assert_eq!(key(base.last_before(Bound::Excluded(b"b"))), None);
        assert_eq!(
            key(base.last_before(Bound::Included(b"d"))),
            Some("d".into())
        );
        assert_eq!(
            key(base.last_before(Bound::Included(b"y"))),
            Some("g".into())
        );
        let middle: Vec<_> = base.parts()[1]
            .range(Bound::Unbounded, Bound::Unbounded)
            .map(|(k, _)| k)
            .collect();
        assert_eq!(middle, [b"d".to_vec(), b"e".to_vec(), b"f".to_vec()]);
    }

    #[test]
    fn saving_several_parts_writes_one_layer() {
        let dir = crate::scratch::dir();
        let path = dir.path().join("base");
        three_parts().save(&path).unwrap();
        let saved = FrozenLayer::<u8>::open(&path).unwrap();
        let keys: Vec<_> = saved.iter().map(|(k, _)| k).collect();
        let expected: Vec<Vec<u8>> = ["b", "c", "d", "e", "f", "g", "z"]
            .iter()
            .map(|k| k.as_bytes().to_vec())
            .collect();
        assert_eq!(keys, expected);
    }

    #[test]
    fn bounds_meet_in_the_middle() {
        let (b, d) = (&b"b"[..], &b"d"[..]);
        assert_eq!(later_start(Bound::Unbounded, b), Bound::Included(b));
        assert_eq!(later_start(Bound::Excluded(d), b), Bound::Excluded(d));
        assert_eq!(later_start(Bound::Excluded(b), d), Bound::Included(d));
        assert_eq!(later_start(Bound::Excluded(b), b), Bound::Excluded(b));
        assert_eq!(earlier_end(Bound::Unbounded, Some(d)), Bound::Excluded(d));
        assert_eq!(earlier_end(Bound::Included(d), Some(d)), Bound::Excluded(d));
        assert_eq!(earlier_end(Bound::Included(b), Some(d)), Bound::Included(b));
        assert_eq!(earlier_end(Bound::Excluded(d), Some(d)), Bound::Excluded(d));
        assert_eq!(earlier_end(Bound::Included(b), None), Bound::Included(b));
        // An end past the part's upper bound stops at it: the layer may
        // hold keys beyond.
        assert_eq!(
            earlier_end(Bound::Excluded(&b"z"[..]), Some(d)),
            Bound::Excluded(d)
        );
    }

    /// The tests an iterator uses to skip the parts a range leaves out.
    #[test]
    fn parts_know_whether_a_range_reaches_past_them() {
        let base = three_parts();
        let [first, middle, last] = base.parts() else {
            panic!("three parts");
        };
        let (d, e, g) = (&b"d"[..], &b"e"[..], &b"g"[..]);
        assert!(middle.next_within(Bound::Unbounded));
        assert!(middle.next_within(Bound::Included(g)));
        assert!(!middle.next_within(Bound::Excluded(g)));
        assert!(!middle.next_within(Bound::Included(e)));
        assert!(
            !last.next_within(Bound::Unbounded),
            "nothing after the last"
        );
        assert!(middle.previous_within(Bound::Unbounded));
        assert!(middle.previous_within(Bound::Included(b"c")));
        assert!(!middle.previous_within(Bound::Included(d)));
        assert!(!middle.previous_within(Bound::Excluded(e)));
        assert!(
            !first.previous_within(Bound::Included(b"")),
            "nothing before the first"
        );
        assert!(middle.starts_after(Bound::Excluded(d)));
        assert!(middle.starts_after(Bound::Included(b"c")));
        assert!(!middle.starts_after(Bound::Included(d)));
        assert!(!middle.starts_after(Bound::Unbounded));
        assert!(first.ends_before(Bound::Included(d)));
        assert!(first.ends_before(Bound::Excluded(e)));
        assert!(!first.ends_before(Bound::Included(b"c")));
        assert!(!first.ends_before(Bound::Unbounded));
        assert!(
            !last.ends_before(Bound::Included(b"zz")),
            "the last has no end"
        );
    }

    #[test]
    fn sizes_sum_the_parts_layers() {
        let base = three_parts();
        let layers = base.parts().iter().map(|part| &part.layer);
        let bytes: usize = layers.clone().map(|layer| layer.as_bytes().len()).sum();
        let heap: usize = layers.map(|layer| layer.memory_usage()).sum();
        // The middle layer's keys outside its range count too.
        assert!(bytes > base.parts()[1].layer.as_bytes().len());
        assert_eq!(base.layer_bytes(), bytes);
        assert_eq!(base.memory_usage(), heap);
        assert_eq!(base.mapped_bytes(), 0);
        assert_eq!(
            format!("{base:?}"),
            format!("Base {{ parts: 3, keys: 7, bytes: {bytes} }}")
        );
    }
}
