//! When to merge: the [`HybridConfig`] and its decision.

use std::fmt;

/// How a [`HybridMap`](super::HybridMap) decides to merge its delta into its
/// base; a builder.
///
/// An automatic merge starts when the **fresh delta** (the mutable part,
/// tombstones included) has at least [`min_delta_keys`](Self::min_delta_keys)
/// entries and exceeds either share of the base — by entries
/// ([`key_ratio`](Self::key_ratio)) or by heap bytes
/// ([`byte_ratio`](Self::byte_ratio)) — or, whatever its entry count, when
/// its heap bytes exceed the [`byte_budget`](Self::byte_budget).
/// [`HybridMap::freeze`](super::HybridMap::freeze) merges at any time.
///
/// The defaults, and the measurements behind them, are in the [module
/// documentation](super#choosing-the-merge-policy): a key ratio of
/// [`DEFAULT_KEY_RATIO`](Self::DEFAULT_KEY_RATIO), no byte ratio, a budget
/// of [`DEFAULT_BYTE_BUDGET`](Self::DEFAULT_BYTE_BUDGET), at least
/// [`DEFAULT_MIN_DELTA_KEYS`](Self::DEFAULT_MIN_DELTA_KEYS) entries, merges
/// on a background thread.
///
/// ```
/// use memkv::{HybridConfig, HybridMap};
///
/// let map: HybridMap<u64> = HybridConfig::new()
///     .key_ratio(0.05)
///     .byte_budget(64 << 20)
///     .build();
/// map.insert("k", 1);
/// assert_eq!(map.get("k"), Some(1));
/// ```
#[derive(Clone, PartialEq)]
pub struct HybridConfig {
    pub(crate) key_ratio: f64,
    pub(crate) byte_ratio: f64,
    pub(crate) byte_budget: usize,
    pub(crate) min_delta_keys: usize,
    pub(crate) background: bool,
    pub(crate) part_keys: usize,
    pub(crate) build_threads: usize,
}

impl HybridConfig {
    /// The default [`key_ratio`](Self::key_ratio).
    pub const DEFAULT_KEY_RATIO: f64 = 0.06;
    /// The default [`byte_budget`](Self::byte_budget): 256 MiB.
    pub const DEFAULT_BYTE_BUDGET: usize = 256 << 20;
    /// The default [`min_delta_keys`](Self::min_delta_keys).
    pub const DEFAULT_MIN_DELTA_KEYS: usize = 4096;
    /// The default [`part_keys`](Self::part_keys): 2^20 (1,048,576).
    pub const DEFAULT_PART_KEYS: usize = 1 << 20;
    /// The most threads [`build_threads`](Self::build_threads) takes by
    /// default (fewer where the machine has fewer cores).
    pub const MAX_DEFAULT_BUILD_THREADS: usize = 4;

    /// The default policy.
    ///
    /// ```
    /// use memkv::HybridConfig;
    ///
    /// let config = HybridConfig::new();
    /// assert_eq!(config, HybridConfig::default());
    /// let shown = format!("{config:?}"); // the settings have no getters
    /// assert!(shown.contains("key_ratio: 0.06") && shown.contains("background: true"));
    /// ```
    pub fn new() -> Self {
        HybridConfig {
            key_ratio: Self::DEFAULT_KEY_RATIO,
            byte_ratio: f64::INFINITY,
            byte_budget: Self::DEFAULT_BYTE_BUDGET,
            min_delta_keys: Self::DEFAULT_MIN_DELTA_KEYS,
            background: true,
            part_keys: Self::DEFAULT_PART_KEYS,
            build_threads: std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(Self::MAX_DEFAULT_BUILD_THREADS),
        }
    }

    /// Merge when the fresh delta has more entries than `ratio` times the
    /// base's keys. `f64::INFINITY` turns this trigger off.
    ///
    /// # Panics
    /// If `ratio` is negative or NaN.
    ///
    /// ```
    /// use memkv::{FrozenLayer, HybridConfig, HybridMap};
    ///
    /// let base = FrozenLayer::from_sorted_iter((0..100u64).map(|i| (format!("{i:03}"), i)))?;
    /// let config = HybridConfig::new().key_ratio(0.1).min_delta_keys(1).background(false);
    /// let map = HybridMap::from_frozen(base, config);
    /// for i in 100..110u64 {
    ///     map.insert(format!("{i:03}"), i);
    /// }
    /// assert_eq!(map.stats().merges, 0); // 10 entries: not more than 0.1 × 100 keys
    /// map.insert("110", 110);
    /// assert_eq!(map.stats().merges, 1);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn key_ratio(mut self, ratio: f64) -> Self {
        assert!(ratio >= 0.0, "key_ratio must be at least 0, not {ratio}");
        self.key_ratio = ratio;
        self
    }

    /// Merge when the fresh delta's heap bytes exceed `ratio` times the
    /// base's bytes (off by default: `f64::INFINITY`).
    ///
    /// # Panics
    /// If `ratio` is negative or NaN.
    ///
    /// ```
    /// use memkv::{FrozenLayer, HybridConfig, HybridMap};
    ///
    /// let base = FrozenLayer::from_sorted_iter((0..10_000u64).map(|i| (format!("{i:05}"), i)))?;
    /// let config = HybridConfig::new().manual().byte_ratio(0.5).min_delta_keys(1);
    /// let map = HybridMap::from_frozen(base, config.background(false));
    /// for i in 0..1000u64 {
    ///     map.insert(format!("new/{i:04}"), i);
    /// }
    /// let stats = map.stats(); // merged each time the delta outgrew half the base
    /// assert!(stats.merges > 0 && stats.delta_bytes <= stats.base_bytes / 2);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn byte_ratio(mut self, ratio: f64) -> Self {
        assert!(ratio >= 0.0, "byte_ratio must be at least 0, not {ratio}");
        self.byte_ratio = ratio;
        self
    }

    /// Merge when the fresh delta's heap bytes exceed `bytes`, whatever the
    /// base's size. `usize::MAX` turns this trigger off.
    ///
    /// ```
    /// use memkv::{HybridConfig, HybridMap};
    ///
    /// let config = HybridConfig::new().key_ratio(f64::INFINITY).byte_budget(64 << 10);
    /// let map: HybridMap<u64> = config.background(false).build();
    /// for i in 0..5000u64 {
    ///     map.insert(format!("{i:05}"), i);
    ///     assert!(map.stats().delta_bytes <= 64 << 10);
    /// }
    /// assert!(map.stats().merges > 0);
    /// ```
    pub fn byte_budget(mut self, bytes: usize) -> Self {
        self.byte_budget = bytes;
        self
    }

    /// The ratio triggers wait for at least `keys` entries in the fresh
    /// delta, so that a small or empty base is not rebuilt for every few
    /// writes.
    ///
    /// ```
    /// use memkv::{HybridConfig, HybridMap};
    ///
    /// let map: HybridMap<u64> = HybridConfig::new().min_delta_keys(10).background(false).build();
    /// for i in 0..9u64 {
    ///     map.insert(i.to_string(), i);
    /// }
    /// assert_eq!(map.stats().merges, 0); // over an empty base, yet under 10 entries
    /// map.insert("9", 9);
    /// assert_eq!((map.stats().merges, map.stats().base_keys), (1, 10));
    /// ```
    pub fn min_delta_keys(mut self, keys: usize) -> Self {
        self.min_delta_keys = keys;
        self
    }

    /// Whether automatic merges run on a background thread owned by the map
    /// (the default) or inline, in the writing thread, right after the write
    /// that triggered them. Either way
    /// [`freeze`](super::HybridMap::freeze) runs in its caller's thread.
    ///
    /// ```
    /// use memkv::{HybridConfig, HybridMap};
    ///
    /// let map: HybridMap<u64> = HybridConfig::new().min_delta_keys(100).background(false).build();
    /// for i in 0..100u64 {
    ///     map.insert(format!("{i:03}"), i);
    /// }
    /// // The 100th write merged before it returned.
    /// assert_eq!((map.stats().merges, map.stats().base_keys), (1, 100));
    /// ```
    pub fn background(mut self, background: bool) -> Self {
        self.background = background;
        self
    }

    /// A merge builds the base in parts (one frozen layer per range of keys)
    /// of about `keys` keys each, and swaps each part in as soon as it is
    /// built, dropping the old parts it replaces. So a merge holds one
    /// part's worth of new base beside the old base, not two whole bases;
    /// smaller parts lower that peak but share fewer suffixes (see the
    /// [module documentation](super#choosing-the-merge-policy)).
    ///
    /// # Panics
    /// If `keys` is 0.
    ///
    /// ```
    /// let map = memkv::HybridConfig::new().manual().part_keys(100).build::<u64>();
    /// for i in 0..1000u64 {
    ///     map.insert(format!("{i:04}"), i);
    /// }
    /// map.freeze()?;
    /// assert_eq!(map.stats().base_parts, 10);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn part_keys(mut self, keys: usize) -> Self {
        assert!(keys > 0, "part_keys must be at least 1");
        self.part_keys = keys;
        self
    }

    /// How many threads, the caller's included, build a map **in one go**
    /// (`collect`, [`build_from`](Self::build_from)) when the entries are
    /// many (from 2 × [`part_keys`](Self::part_keys) or
    /// [`min_delta_keys`](Self::min_delta_keys), whichever is more, capped
    /// at 65,536) and this policy would merge that many at once. (With
    /// `min_delta_keys` over 65,536 it would not, as far as the first
    /// 65,536 entries tell, and the build takes one tree on one thread.)
    ///
    /// Entries not in key order are split: the key space is cut into one
    /// share per thread at keys taken from the first entries; the calling
    /// thread reads the entries and hands each share's on, and each thread
    /// gathers its share in trees and builds the base's parts of that
    /// range, dropping each tree once its keys are in parts. Over the
    /// 7.3 M Debian paths, two threads built the map in 6.6–8.4 s against
    /// 12.0–14.9 s for one (1.6–1.9× in three pairs), for about the same
    /// CPU time and a peak of 42 against 41 bytes per key. Besides the
    /// second core, each thread's trees are half as large, so fewer of
    /// their nodes miss the cache.
    ///
    /// Entries whose first ones come in strictly increasing key order need
    /// no tree: the calling thread gathers each part's entries in turn and
    /// the threads build the parts from them in turn. Over the same paths
    /// sorted, two threads took 1.4–2.6 s, for a peak of 19–20 bytes per
    /// key, and one 2.3–2.6 s for a peak of 16 (2026-11-27, another
    /// process busy on one core): each thread holds one part's entries
    /// (each key's bytes past those it shares with the key before) and its
    /// builder. The first entries decide, as many as the threshold above:
    /// they must come in strictly increasing order (one repeated key, as
    /// from a `sort` without `-u`, sends all the entries the other way).
    /// Should the order break later, the entries from there on are gathered
    /// in a tree, which becomes the delta over the base built so far,
    /// merged at once if this policy would merge it.
    ///
    /// Merges never take more than one thread: they run beside the map's
    /// users. By default the machine's cores, at most
    /// [`MAX_DEFAULT_BUILD_THREADS`](Self::MAX_DEFAULT_BUILD_THREADS).
    /// Any number may be asked for. No build starts more threads than the
    /// machine has cores ([`std::thread::available_parallelism`]): more
    /// would build no faster, and each holds a part's entries or a share's
    /// trees. A build in shares also starts no more than the first entries'
    /// distinct keys give shares of eight trees each.
    ///
    /// # Panics
    /// If `threads` is 0.
    ///
    /// ```
    /// let entries = (0..10_000u32).map(|i| (format!("usr/lib/{i:05}"), i));
    /// let map = memkv::HybridConfig::new().part_keys(1000).build_threads(3).build_from(entries);
    /// let stats = map.stats();
    /// assert_eq!((stats.base_keys, stats.delta_entries, stats.merges), (10_000, 0, 1));
    /// assert_eq!(map.get("usr/lib/09999"), Some(9999));
    /// ```
    pub fn build_threads(mut self, threads: usize) -> Self {
        assert!(threads > 0, "build_threads must be at least 1");
        self.build_threads = threads;
        self
    }

    /// No automatic merges at all: only the calls that ask for one merge,
    /// [`freeze`](super::HybridMap::freeze),
    /// [`merge_in_background`](super::HybridMap::merge_in_background) and
    /// [`save`](super::HybridMap::save).
    ///
    /// ```
    /// let map = memkv::HybridConfig::new().manual().build::<u64>();
    /// for i in 0..10_000u64 {
    ///     map.insert(format!("{i:05}"), i);
    /// }
    /// assert_eq!(map.stats().merges, 0);
    /// map.freeze()?;
    /// assert_eq!((map.stats().merges, map.stats().base_keys), (1, 10_000));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn manual(self) -> Self {
        self.key_ratio(f64::INFINITY)
            .byte_ratio(f64::INFINITY)
            .byte_budget(usize::MAX)
    }

    /// An empty map with this policy.
    ///
    /// ```
    /// use memkv::{HybridConfig, HybridMap};
    ///
    /// let config = HybridConfig::new().key_ratio(0.1);
    /// let map: HybridMap<Vec<u8>> = config.clone().build();
    /// assert!(map.is_empty());
    /// assert_eq!(map.config(), &config);
    /// ```
    pub fn build<V>(self) -> super::HybridMap<V>
    where
        V: crate::FrozenValue + Clone + Send + Sync + 'static,
    {
        super::HybridMap::with_config(self)
    }

    /// A map of `entries` with this policy, built in one go as `collect`
    /// builds a [`HybridMap`](super::HybridMap) with the default policy
    /// (see its `FromIterator`): the entries gathered in a
    /// [`FastArt`](crate::FastArt), then merged into a base at once, in this
    /// thread, if this policy would merge a delta of their size over an
    /// empty base (the [`manual`](Self::manual) policy leaves them in the
    /// delta for [`freeze`](super::HybridMap::freeze)). Many entries are
    /// gathered and built into the base on
    /// [`build_threads`](Self::build_threads) threads: each takes one range
    /// of keys, or, for entries in key order, parts in turn.
    ///
    /// ```
    /// use memkv::HybridConfig;
    ///
    /// let entries = (0..5000u32).map(|i| (format!("usr/lib/{i}"), i));
    /// let map = HybridConfig::new().part_keys(1024).build_from(entries);
    /// let stats = map.stats();
    /// assert_eq!((stats.base_keys, stats.delta_entries), (5000, 0));
    /// assert!(stats.base_parts >= 4);
    /// ```
    pub fn build_from<K, V>(self, entries: impl IntoIterator<Item = (K, V)>) -> super::HybridMap<V>
    where
        K: AsRef<[u8]>,
        V: crate::FrozenValue + Clone + Send + Sync + 'static,
    {
        super::HybridMap::build_from(entries, self)
    }

    /// About how many entries a fresh delta over a base of `base_keys` keys
    /// will take before the key policy merges it, or as many as the delta
    /// before it took (`last_entries`, 0 if none) if that is more, plus a
    /// quarter: what its key filter is sized for. Capped at 4 Mi keys
    /// (6 MiB of filter); a delta that outgrows its filter rebuilds it
    /// larger, under the write lock, which readers wait for.
    ///
    /// The delta before counts because the writes that arrive while a merge
    /// runs are not the policy's to bound: when merges run back to back (a
    /// small ratio, many writes), each delta takes what arrives during one
    /// merge, and one sized by the ratio alone outgrew its filter (on the
    /// full Debian paths at 0.02: 180 k entries against a filter for 164 k),
    /// whose rebuild walks every entry under the write lock.
    pub(crate) fn delta_keys_hint(&self, base_keys: usize, last_entries: usize) -> usize {
        let by_ratio = self.key_ratio * base_keys as f64;
        let by_ratio = if by_ratio.is_finite() {
            by_ratio as usize
        } else {
            0
        };
        let keys = by_ratio.max(self.min_delta_keys).max(last_entries);
        keys.saturating_add(keys / 4).min(1 << 22)
    }

    /// Whether a fresh delta of `entries` entries and `bytes` heap bytes
    /// over a base of `base_keys` keys and `base_bytes` bytes should be
    /// merged.
    #[inline]
    pub(crate) fn wants_merge(
        &self,
        entries: usize,
        bytes: usize,
        base_keys: usize,
        base_bytes: usize,
    ) -> bool {
        if bytes > self.byte_budget {
            return entries > 0;
        }
        if entries < self.min_delta_keys.max(1) {
            return false;
        }
        entries as f64 > self.key_ratio * base_keys as f64
            || bytes as f64 > self.byte_ratio * base_bytes as f64
    }
}

impl Default for HybridConfig {
    fn default() -> Self {
        HybridConfig::new()
    }
}

impl fmt::Debug for HybridConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HybridConfig")
            .field("key_ratio", &self.key_ratio)
            .field("byte_ratio", &self.byte_ratio)
            .field("byte_budget", &self.byte_budget)
            .field("min_delta_keys", &self.min_delta_keys)
            .field("background", &self.background)
            .field("part_keys", &self.part_keys)
            .field("build_threads", &self.build_threads)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_wait_for_the_minimum() {
        let config = HybridConfig::new().key_ratio(0.1).min_delta_keys(10);
        assert!(!config.wants_merge(9, 0, 0, 0));
        assert!(config.wants_merge(10, 0, 0, 0));
        assert!(!config.wants_merge(100, 0, 1000, 0));
        assert!(config.wants_merge(101, 0, 1000, 0));
    }

    #[test]
    fn the_budget_needs_no_minimum() {
        let config = HybridConfig::new().byte_budget(1000).min_delta_keys(10);
        assert!(config.wants_merge(1, 1001, 1 << 30, 1 << 30));
        assert!(!config.wants_merge(0, 1001, 0, 0));
        assert!(!config.wants_merge(1, 1000, 1 << 30, 1 << 30));
    }

    #[test]
    fn byte_ratio_and_manual() {
        let config = HybridConfig::new()
            .key_ratio(f64::INFINITY)
            .byte_ratio(0.5)
            .min_delta_keys(1);
        assert!(config.wants_merge(1, 501, 10, 1000));
        assert!(!config.wants_merge(1, 500, 10, 1000));
        let manual = HybridConfig::new().manual().min_delta_keys(0);
        assert!(!manual.wants_merge(usize::MAX, usize::MAX - 1, 0, 0));
    }

    /// A fresh delta's key filter is sized for the entries the key policy
    /// lets it take, or the delta before it took, plus a quarter, within a
    /// cap.
    #[test]
    fn the_filter_hint_follows_the_key_policy_and_the_last_delta() {
        let config = HybridConfig::new().key_ratio(0.1).min_delta_keys(0);
        assert_eq!(config.delta_keys_hint(1_000_000, 0), 125_000);
        assert_eq!(config.delta_keys_hint(1_000_000, 99_999), 125_000);
        assert_eq!(config.delta_keys_hint(1_000_000, 200_000), 250_000);
        assert_eq!(config.delta_keys_hint(1 << 30, 0), 1 << 22);
        assert_eq!(config.delta_keys_hint(0, usize::MAX), 1 << 22);
        let small = HybridConfig::new().key_ratio(0.1).min_delta_keys(500);
        assert_eq!(small.delta_keys_hint(1000, 0), 625);
        let manual = HybridConfig::new().manual().min_delta_keys(40);
        assert_eq!(manual.delta_keys_hint(1_000_000, 0), 50);
        assert_eq!(manual.delta_keys_hint(1_000_000, 80), 100);
    }

    #[test]
    fn debug_shows_every_setting() {
        let config = HybridConfig::new().part_keys(77).background(false);
        let shown = format!("{:?}", config.build_threads(5));
        for field in ["key_ratio", "byte_ratio", "byte_budget", "min_delta_keys"] {
            assert!(shown.contains(field), "{shown}");
        }
        for setting in ["background: false", "part_keys: 77", "build_threads: 5"] {
            assert!(shown.contains(setting), "{shown}");
        }
    }

    #[test]
    #[should_panic(expected = "key_ratio must be at least 0")]
    fn nan_ratio_is_rejected() {
        let _ = HybridConfig::new().key_ratio(f64::NAN);
    }
}
