//! Iterators over a [`FastArt`](super::FastArt).
//!
//! Each assembles keys in a buffer it reuses. The [`Iterator`] impls copy the
//! key into a new `Vec<u8>` per entry; the lending `next_entry` and
//! `next_back_entry` methods return it borrowed from the iterator instead.

use std::fmt;
use std::iter::FusedIterator;
use std::marker::PhantomData;
use std::ops::Bound;

use super::FastArt;
use super::raw::{Cursor, RawArt, RawIter};
use fst::Automaton;

use crate::fmt::ByteStr;
use crate::keys::as_slice;
use crate::search::{Guard, Pruner};

/// # Safety
/// `v` must point to a live value that outlives `'a` unchanged.
#[inline(always)]
unsafe fn shared<'a, V>(v: *mut V) -> &'a V {
    // SAFETY: per the contract.
    unsafe { &*v }
}

/// # Safety
/// `v` must point to a live value that outlives `'a`, reachable by no other
/// reference for `'a`.
#[inline(always)]
unsafe fn exclusive<'a, V>(v: *mut V) -> &'a mut V {
    // SAFETY: per the contract.
    unsafe { &mut *v }
}

/// The entries of a [`FastArt`](super::FastArt) in key order; see
/// [`FastArt::iter`](super::FastArt::iter).
#[derive(Debug)]
pub struct Iter<'a, V> {
    /// A `Range` over the whole map, plus the exact count it lacks.
    all: Range<'a, V>,
    remaining: usize,
}

impl<'a, V> Iter<'a, V> {
    pub(crate) fn new(art: &'a RawArt<V>, raw: RawIter) -> Self {
        Iter {
            all: Range::new(art, raw),
            remaining: art.len(),
        }
    }

    /// The next entry, its key borrowed from the iterator: no allocation.
    ///
    /// ```
    /// let map: memkv::FastArt<u8> = [("x", 1), ("y", 2)].into_iter().collect();
    /// let mut it = map.iter();
    /// assert_eq!(it.next_entry(), Some((&b"x"[..], &1)));
    /// assert_eq!(it.next_back_entry(), Some((&b"y"[..], &2)));
    /// assert_eq!(it.next_entry(), None);
    /// ```
    #[inline]
    pub fn next_entry(&mut self) -> Option<(&[u8], &'a V)> {
        let entry = self.all.next_entry()?;
        self.remaining -= 1;
        Some(entry)
    }

    /// The next entry from the back, its key borrowed from the iterator.
    ///
    /// ```
    /// let map: memkv::FastArt<u8> = [("a", 1), ("b", 2)].into_iter().collect();
    /// let mut it = map.iter();
    /// let (key, value) = it.next_back_entry().unwrap();
    /// let last = key.to_vec(); // `key` borrows `it`: copy it to keep it past the next step
    /// assert_eq!(it.next_back_entry(), Some((&b"a"[..], &1)));
    /// assert_eq!((last, value), (b"b".to_vec(), &2));
    /// ```
    #[inline]
    pub fn next_back_entry(&mut self) -> Option<(&[u8], &'a V)> {
        let entry = self.all.next_back_entry()?;
        self.remaining -= 1;
        Some(entry)
    }
}

impl<'a, V> Iterator for Iter<'a, V> {
    type Item = (Vec<u8>, &'a V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.next_entry().map(|(k, v)| (k.to_vec(), v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl<V> DoubleEndedIterator for Iter<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.next_back_entry().map(|(k, v)| (k.to_vec(), v))
    }
}

impl<V> ExactSizeIterator for Iter<'_, V> {}
impl<V> FusedIterator for Iter<'_, V> {}

/// The entries of a key range or prefix; see
/// [`FastArt::range`](super::FastArt::range) and
/// [`FastArt::prefix`](super::FastArt::prefix).
#[derive(Debug)]
pub struct Range<'a, V> {
    art: &'a RawArt<V>,
    raw: RawIter,
}

impl<'a, V> Range<'a, V> {
    pub(crate) fn new(art: &'a RawArt<V>, raw: RawIter) -> Self {
        Range { art, raw }
    }

    /// Walks as if the tree were `bytes` larger: other trees of that size
    /// are walked at the same time (a sharded memtable's merge), and with
    /// them the tree no longer fits the cache.
    pub(crate) fn walked_alongside(mut self, bytes: usize) -> Self {
        self.raw.set_walked_alongside(bytes);
        self
    }

    /// The next entry, its key borrowed from the iterator: no allocation.
    ///
    /// ```
    /// let map = memkv::FastArt::from([("usr/a", 1), ("usr/b", 2), ("var/c", 4)]);
    /// let mut it = map.prefix("usr/");
    /// let mut total = 0;
    /// while let Some((key, value)) = it.next_entry() {
    ///     assert!(key.starts_with(b"usr/"));
    ///     total += value;
    /// }
    /// assert_eq!(total, 3);
    /// ```
    #[inline]
    pub fn next_entry(&mut self) -> Option<(&[u8], &'a V)> {
        let leaf = self.raw.next(self.art)?;
        // SAFETY: a live value; the tree is borrowed (shared) for 'a.
        let value = unsafe { shared(self.art.leaf_value(leaf)) };
        Some((self.raw.front_key(), value))
    }

    /// The next entry from the back, its key borrowed from the iterator.
    ///
    /// ```
    /// let map: memkv::FastArt<u8> = [("a", 1), ("b", 2), ("c", 3)].into_iter().collect();
    /// let mut it = map.range("a".."c");
    /// assert_eq!(it.next_back_entry(), Some((&b"b"[..], &2)));
    /// assert_eq!(it.next_back_entry(), Some((&b"a"[..], &1)));
    /// assert_eq!(it.next_back_entry(), None);
    /// ```
    #[inline]
    pub fn next_back_entry(&mut self) -> Option<(&[u8], &'a V)> {
        let leaf = self.raw.next_back(self.art)?;
        // SAFETY: as in `next_entry`.
        let value = unsafe { shared(self.art.leaf_value(leaf)) };
        Some((self.raw.back_key(), value))
    }
}

impl<'a, V> Iterator for Range<'a, V> {
    type Item = (Vec<u8>, &'a V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.next_entry().map(|(k, v)| (k.to_vec(), v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.art.len()))
    }
}

impl<V> DoubleEndedIterator for Range<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.next_back_entry().map(|(k, v)| (k.to_vec(), v))
    }
}

impl<V> FusedIterator for Range<'_, V> {}

/// The entries whose keys are prefixes of a given key, shortest first; see
/// [`FastArt::prefixes_of`](super::FastArt::prefixes_of).
///
/// Each key is a slice of the key asked about, so nothing is assembled or
/// allocated: the walk follows that key's path down the tree once, and the
/// entries it yields are the ones met on the way.
#[derive(Debug)]
pub struct PrefixesOf<'a, 'k, V> {
    art: &'a RawArt<V>,
    key: &'k [u8],
    /// Where the walk goes on: a block and the key bytes spelled above it;
    /// `None` once it has ended.
    at: Option<(u32, usize)>,
}

impl<'a, 'k, V> PrefixesOf<'a, 'k, V> {
    pub(crate) fn new(art: &'a RawArt<V>, key: &'k [u8]) -> Self {
        let root = art.root();
        PrefixesOf {
            art,
            key,
            at: (root != 0).then_some((root, 0)),
        }
    }
}

impl<'a, 'k, V> Iterator for PrefixesOf<'a, 'k, V> {
    type Item = (&'k [u8], &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        while let Some((r, depth)) = self.at {
            let step = self.art.prefix_step(self.key, r, depth);
            self.at = step.next;
            if let Some((len, leaf)) = step.found {
                // SAFETY: a live value; the tree is borrowed (shared) for 'a.
                let value = unsafe { shared(self.art.leaf_value(leaf)) };
                return Some((&self.key[..len], value));
            }
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // At most one entry per length still to come.
        let left = match self.at {
            Some((_, depth)) => self.key.len() - depth + 1,
            None => 0,
        };
        (0, Some(left.min(self.art.len())))
    }
}

impl<V> FusedIterator for PrefixesOf<'_, '_, V> {}

/// The entries in key order with mutable values; see
/// [`FastArt::iter_mut`](super::FastArt::iter_mut).
#[derive(Debug)]
pub struct IterMut<'a, V> {
    /// A `RangeMut` over the whole map, plus the exact count it lacks.
    all: RangeMut<'a, V>,
    remaining: usize,
}

impl<'a, V> IterMut<'a, V> {
    pub(crate) fn new(art: &'a mut RawArt<V>, raw: RawIter) -> Self {
        let remaining = art.len();
        IterMut {
            all: RangeMut::new(art, raw),
            remaining,
        }
    }

    /// The next entry, its key borrowed from the iterator: no allocation.
    ///
    /// ```
    /// let mut map: memkv::FastArt<usize> = [("a", 1), ("bcd", 2)].into_iter().collect();
    /// let mut it = map.iter_mut();
    /// while let Some((key, value)) = it.next_entry() {
    ///     *value += key.len();
    /// }
    /// assert_eq!(map.values().copied().collect::<Vec<_>>(), [2, 5]);
    /// ```
    #[inline]
    pub fn next_entry(&mut self) -> Option<(&[u8], &'a mut V)> {
        let entry = self.all.next_entry()?;
        self.remaining -= 1;
        Some(entry)
    }

    /// The next entry from the back, its key borrowed from the iterator.
    ///
    /// ```
    /// let mut map: memkv::FastArt<u8> = [("a", 1), ("b", 2)].into_iter().collect();
    /// let mut it = map.iter_mut();
    /// let (key, value) = it.next_back_entry().unwrap();
    /// assert_eq!(key, b"b");
    /// *value = 20;
    /// assert_eq!(map["b"], 20);
    /// ```
    #[inline]
    pub fn next_back_entry(&mut self) -> Option<(&[u8], &'a mut V)> {
        let entry = self.all.next_back_entry()?;
        self.remaining -= 1;
        Some(entry)
    }
}

impl<'a, V> Iterator for IterMut<'a, V> {
    type Item = (Vec<u8>, &'a mut V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.next_entry().map(|(k, v)| (k.to_vec(), v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl<V> DoubleEndedIterator for IterMut<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.next_back_entry().map(|(k, v)| (k.to_vec(), v))
    }
}

impl<V> ExactSizeIterator for IterMut<'_, V> {}
impl<V> FusedIterator for IterMut<'_, V> {}

/// The entries of a key range with mutable values; see
/// [`FastArt::range_mut`](super::FastArt::range_mut).
#[derive(Debug)]
pub struct RangeMut<'a, V> {
    // A shared view of a tree borrowed exclusively: the structure is only
    // read, and each value is handed out once.
    art: &'a RawArt<V>,
    raw: RawIter,
    _exclusive: PhantomData<&'a mut V>,
}

impl<'a, V> RangeMut<'a, V> {
    pub(crate) fn new(art: &'a mut RawArt<V>, raw: RawIter) -> Self {
        RangeMut {
            art,
            raw,
            _exclusive: PhantomData,
        }
    }

    /// The next entry, its key borrowed from the iterator: no allocation.
    ///
    /// ```
    /// let mut map: memkv::FastArt<u8> = [("a", 1), ("b", 2), ("c", 3)].into_iter().collect();
    /// let mut it = map.range_mut("b"..);
    /// while let Some((key, value)) = it.next_entry() {
    ///     assert_ne!(key, b"a");
    ///     *value *= 10;
    /// }
    /// assert_eq!(map.values().copied().collect::<Vec<_>>(), [1, 20, 30]);
    /// ```
    #[inline]
    pub fn next_entry(&mut self) -> Option<(&[u8], &'a mut V)> {
        let leaf = self.raw.next(self.art)?;
        // SAFETY: the tree is exclusively borrowed for 'a and each leaf is
        // returned once, so no two references to a value coexist.
        Some((self.raw.front_key(), unsafe {
            exclusive(self.art.leaf_value(leaf))
        }))
    }

    /// The next entry from the back, its key borrowed from the iterator.
    ///
    /// ```
    /// let mut map: memkv::FastArt<u8> = [("a", 1), ("b", 2), ("c", 3)].into_iter().collect();
    /// let mut it = map.range_mut(.."c");
    /// let (key, value) = it.next_back_entry().unwrap();
    /// assert_eq!(key, b"b");
    /// *value = 0;
    /// assert_eq!(map.values().copied().collect::<Vec<_>>(), [1, 0, 3]);
    /// ```
    #[inline]
    pub fn next_back_entry(&mut self) -> Option<(&[u8], &'a mut V)> {
        let leaf = self.raw.next_back(self.art)?;
        // SAFETY: as in `next_entry`; the two ends never return the same leaf.
        Some((self.raw.back_key(), unsafe {
            exclusive(self.art.leaf_value(leaf))
        }))
    }
}

impl<'a, V> Iterator for RangeMut<'a, V> {
    type Item = (Vec<u8>, &'a mut V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.next_entry().map(|(k, v)| (k.to_vec(), v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.art.len()))
    }
}

impl<V> DoubleEndedIterator for RangeMut<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.next_back_entry().map(|(k, v)| (k.to_vec(), v))
    }
}

impl<V> FusedIterator for RangeMut<'_, V> {}

// SAFETY: a `RangeMut` stands for `&mut RawArt<V>` (it is made from one and
// hands each value out once), which is `Send` when `V: Send`. Through it this
// thread reads only the tree's structure and key bytes, which nothing changes
// while the map is borrowed; the values it handed out may be used on other
// threads, and it never reads them again. (`IterMut` and `ValuesMut` wrap
// one.)
unsafe impl<V: Send> Send for RangeMut<'_, V> {}

/// The keys in order; see [`FastArt::keys`](super::FastArt::keys).
#[derive(Debug)]
pub struct Keys<'a, V> {
    inner: Iter<'a, V>,
}

impl<'a, V> Keys<'a, V> {
    pub(crate) fn new(inner: Iter<'a, V>) -> Self {
        Keys { inner }
    }

    /// The next key, borrowed from the iterator: no allocation.
    ///
    /// ```
    /// let map: memkv::FastArt<()> = [("a", ()), ("b", ()), ("c", ())].into_iter().collect();
    /// let mut keys = map.keys();
    /// assert_eq!(keys.next_key(), Some(&b"a"[..]));
    /// assert_eq!(keys.next_back_key(), Some(&b"c"[..]));
    /// assert_eq!(keys.len(), 1);
    /// ```
    #[inline]
    pub fn next_key(&mut self) -> Option<&[u8]> {
        self.inner.next_entry().map(|(k, _)| k)
    }

    /// The next key from the back, borrowed from the iterator.
    ///
    /// ```
    /// let map: memkv::FastArt<u8> = [("a", 1), ("b", 2)].into_iter().collect();
    /// let mut keys = map.keys();
    /// assert_eq!(keys.next_back_key(), Some(&b"b"[..]));
    /// assert_eq!(keys.next_back_key(), Some(&b"a"[..]));
    /// assert_eq!(keys.next_back_key(), None);
    /// ```
    #[inline]
    pub fn next_back_key(&mut self) -> Option<&[u8]> {
        self.inner.next_back_entry().map(|(k, _)| k)
    }
}

impl<V> Iterator for Keys<'_, V> {
    type Item = Vec<u8>;

    #[inline]
    fn next(&mut self) -> Option<Vec<u8>> {
        self.inner.next().map(|(k, _)| k)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<V> DoubleEndedIterator for Keys<'_, V> {
    fn next_back(&mut self) -> Option<Vec<u8>> {
        self.inner.next_back().map(|(k, _)| k)
    }
}

impl<V> ExactSizeIterator for Keys<'_, V> {}
impl<V> FusedIterator for Keys<'_, V> {}

/// The values in key order; see [`FastArt::values`](super::FastArt::values).
/// Allocates nothing per entry.
#[derive(Debug)]
pub struct Values<'a, V> {
    inner: Iter<'a, V>,
}

impl<'a, V> Values<'a, V> {
    pub(crate) fn new(inner: Iter<'a, V>) -> Self {
        Values { inner }
    }
}

impl<'a, V> Iterator for Values<'a, V> {
    type Item = &'a V;

    #[inline]
    fn next(&mut self) -> Option<&'a V> {
        self.inner.next_entry().map(|(_, v)| v)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<V> DoubleEndedIterator for Values<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back_entry().map(|(_, v)| v)
    }
}

impl<V> ExactSizeIterator for Values<'_, V> {}
impl<V> FusedIterator for Values<'_, V> {}

/// The values in key order, mutable; see
/// [`FastArt::values_mut`](super::FastArt::values_mut).
#[derive(Debug)]
pub struct ValuesMut<'a, V> {
    inner: IterMut<'a, V>,
}

impl<'a, V> ValuesMut<'a, V> {
    pub(crate) fn new(inner: IterMut<'a, V>) -> Self {
        ValuesMut { inner }
    }
}

impl<'a, V> Iterator for ValuesMut<'a, V> {
    type Item = &'a mut V;

    #[inline]
    fn next(&mut self) -> Option<&'a mut V> {
        self.inner.next_entry().map(|(_, v)| v)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<V> DoubleEndedIterator for ValuesMut<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back_entry().map(|(_, v)| v)
    }
}

impl<V> ExactSizeIterator for ValuesMut<'_, V> {}
impl<V> FusedIterator for ValuesMut<'_, V> {}

/// The entries in key order, by value; see `FastArt::into_iter`.
///
/// Dropping it early drops the remaining values.
#[derive(Debug)]
pub struct IntoIter<V> {
    art: RawArt<V>,
    raw: RawIter,
    remaining: usize,
}

impl<V> IntoIter<V> {
    pub(crate) fn new(art: RawArt<V>) -> Self {
        let raw = RawIter::all(&art);
        let remaining = art.len();
        IntoIter {
            art,
            raw,
            remaining,
        }
    }

    /// The next entry, its key borrowed from the iterator: no allocation.
    ///
    /// ```
    /// let map = memkv::FastArt::from([("b", String::from("y")), ("a", String::from("x"))]);
    /// let mut it = map.into_iter();
    /// let mut values = Vec::new();
    /// while let Some((key, value)) = it.next_entry() {
    ///     assert_eq!(key.len(), 1);
    ///     values.push(value); // the value is owned; only the key is borrowed
    /// }
    /// assert_eq!(values, ["x", "y"]);
    /// ```
    #[inline]
    pub fn next_entry(&mut self) -> Option<(&[u8], V)> {
        let leaf = self.raw.next(&self.art)?;
        self.remaining -= 1;
        // SAFETY: each leaf is returned once; its value is moved out here and
        // the tree is later freed without dropping values (see `Drop`).
        let value = unsafe { self.art.take_value(leaf) };
        Some((self.raw.front_key(), value))
    }

    /// The next entry from the back, its key borrowed from the iterator.
    ///
    /// ```
    /// let map = memkv::FastArt::from([("a", String::from("x")), ("b", String::from("y"))]);
    /// let mut it = map.into_iter();
    /// assert_eq!(it.next_back_entry(), Some((&b"b"[..], String::from("y"))));
    /// assert_eq!(it.len(), 1);
    /// ```
    #[inline]
    pub fn next_back_entry(&mut self) -> Option<(&[u8], V)> {
        let leaf = self.raw.next_back(&self.art)?;
        self.remaining -= 1;
        // SAFETY: as in `next_entry`.
        let value = unsafe { self.art.take_value(leaf) };
        Some((self.raw.back_key(), value))
    }
}

impl<V> Iterator for IntoIter<V> {
    type Item = (Vec<u8>, V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.next_entry().map(|(k, v)| (k.to_vec(), v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl<V> DoubleEndedIterator for IntoIter<V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.next_back_entry().map(|(k, v)| (k.to_vec(), v))
    }
}

impl<V> ExactSizeIterator for IntoIter<V> {}
impl<V> FusedIterator for IntoIter<V> {}

/// The keys in order, the map consumed; see
/// [`FastArt::into_keys`](super::FastArt::into_keys).
#[derive(Debug)]
pub struct IntoKeys<V> {
    inner: IntoIter<V>,
}

impl<V> IntoKeys<V> {
    pub(crate) fn new(inner: IntoIter<V>) -> Self {
        IntoKeys { inner }
    }

    /// The next key, borrowed from the iterator: no allocation.
    ///
    /// ```
    /// let map: memkv::FastArt<u8> = [("b", 2), ("a", 1)].into_iter().collect();
    /// let mut keys = map.into_keys();
    /// assert_eq!(keys.next_key(), Some(&b"a"[..]));
    /// assert_eq!(keys.next(), Some(b"b".to_vec()));
    /// assert_eq!(keys.next_key(), None);
    /// ```
    #[inline]
    pub fn next_key(&mut self) -> Option<&[u8]> {
        self.inner.next_entry().map(|(k, _)| k)
    }

    /// The next key from the back, borrowed from the iterator: no
    /// allocation.
    ///
    /// ```
    /// let map: memkv::FastArt<u8> = [("b", 2), ("a", 1)].into_iter().collect();
    /// let mut keys = map.into_keys();
    /// assert_eq!(keys.next_back_key(), Some(&b"b"[..]));
    /// assert_eq!(keys.next_key(), Some(&b"a"[..]));
    /// assert_eq!(keys.next_back_key(), None);
    /// ```
    #[inline]
    pub fn next_back_key(&mut self) -> Option<&[u8]> {
        self.inner.next_back_entry().map(|(k, _)| k)
    }
}

impl<V> Iterator for IntoKeys<V> {
    type Item = Vec<u8>;

    #[inline]
    fn next(&mut self) -> Option<Vec<u8>> {
        self.inner.next().map(|(k, _)| k)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<V> DoubleEndedIterator for IntoKeys<V> {
    fn next_back(&mut self) -> Option<Vec<u8>> {
        self.inner.next_back().map(|(k, _)| k)
    }
}

impl<V> ExactSizeIterator for IntoKeys<V> {}
impl<V> FusedIterator for IntoKeys<V> {}

/// The values in key order, the map consumed; see
/// [`FastArt::into_values`](super::FastArt::into_values). Allocates nothing
/// per entry.
#[derive(Debug)]
pub struct IntoValues<V> {
    inner: IntoIter<V>,
}

impl<V> IntoValues<V> {
    pub(crate) fn new(inner: IntoIter<V>) -> Self {
        IntoValues { inner }
    }
}

impl<V> Iterator for IntoValues<V> {
    type Item = V;

    #[inline]
    fn next(&mut self) -> Option<V> {
        self.inner.next_entry().map(|(_, v)| v)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<V> DoubleEndedIterator for IntoValues<V> {
    fn next_back(&mut self) -> Option<V> {
        self.inner.next_back_entry().map(|(_, v)| v)
    }
}

impl<V> ExactSizeIterator for IntoValues<V> {}
impl<V> FusedIterator for IntoValues<V> {}

impl<V> Drop for IntoIter<V> {
    fn drop(&mut self) {
        /// Finishes the job if a value's drop panics.
        struct Guard<'a, V>(&'a mut IntoIter<V>);
        impl<V> Drop for Guard<'_, V> {
            fn drop(&mut self) {
                while let Some(leaf) = self.0.raw.next(&self.0.art) {
                    // SAFETY: a value not yet moved out (each leaf once).
                    drop(unsafe { self.0.art.take_value(leaf) });
                }
                self.0.art.forget_values_and_clear();
            }
        }
        let guard = Guard(self);
        while let Some(leaf) = guard.0.raw.next(&guard.0.art) {
            // SAFETY: as above.
            drop(unsafe { guard.0.art.take_value(leaf) });
        }
    }
}

// By hand, not derived: a derive would ask `V: Clone`, and these iterators
// only borrow values (as std's `btree_map::Iter` is `Clone` for any `V`).
impl<V> Clone for Iter<'_, V> {
    fn clone(&self) -> Self {
        Iter {
            all: self.all.clone(),
            remaining: self.remaining,
        }
    }
}

impl<V> Clone for Range<'_, V> {
    fn clone(&self) -> Self {
        Range {
            art: self.art,
            raw: self.raw.clone(),
        }
    }
}

impl<V> Clone for PrefixesOf<'_, '_, V> {
    fn clone(&self) -> Self {
        PrefixesOf { ..*self }
    }
}

impl<V> Clone for Keys<'_, V> {
    fn clone(&self) -> Self {
        Keys {
            inner: self.inner.clone(),
        }
    }
}

impl<V> Clone for Values<'_, V> {
    fn clone(&self) -> Self {
        Values {
            inner: self.inner.clone(),
        }
    }
}

/// The entries of a range that a predicate picks, removed as they are
/// yielded; see [`FastArt::extract_if`](super::FastArt::extract_if).
pub struct ExtractIf<'a, V, F> {
    map: &'a mut FastArt<V>,
    /// Where the next search starts: after the entry yielded last.
    from: Bound<Vec<u8>>,
    to: Bound<Vec<u8>>,
    pred: F,
    /// Whether the iteration has ended: the range searched to its end, or
    /// the predicate panicked.
    done: bool,
}

impl<'a, V, F> ExtractIf<'a, V, F> {
    pub(super) fn new(
        map: &'a mut FastArt<V>,
        from: Bound<Vec<u8>>,
        to: Bound<Vec<u8>>,
        pred: F,
    ) -> Self {
        ExtractIf {
            map,
            from,
            to,
            pred,
            done: false,
        }
    }
}

impl<V, F: FnMut(&[u8], &mut V) -> bool> Iterator for ExtractIf<'_, V, F> {
    type Item = (Vec<u8>, V);

    fn next(&mut self) -> Option<(Vec<u8>, V)> {
        if self.done {
            return None;
        }
        // Done unless a match turns up: a predicate that panics ends the
        // iteration (as std's does), rather than being asked again about
        // the entries it has seen.
        self.done = true;
        // A walk of the range from where the last match was, until the next
        // one; the tree changes only once the walk is dropped.
        let bounds = (as_slice(&self.from), as_slice(&self.to));
        let mut entries = self.map.range_mut::<[u8], _>(bounds);
        let key = loop {
            let (key, value) = entries.next_entry()?;
            if (self.pred)(key, value) {
                break key.to_vec();
            }
        };
        let value = self.map.remove(&key).expect("the key just found");
        self.from = Bound::Excluded(key.clone());
        self.done = false;
        Some((key, value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(if self.done { 0 } else { self.map.len() }))
    }
}

impl<V, F: FnMut(&[u8], &mut V) -> bool> FusedIterator for ExtractIf<'_, V, F> {}

impl<V, F> fmt::Debug for ExtractIf<'_, V, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn bound(bound: &Bound<Vec<u8>>) -> Bound<ByteStr<'_>> {
            bound.as_ref().map(|key| ByteStr(key))
        }
        f.debug_struct("ExtractIf")
            .field("from", &bound(&self.from))
            .field("to", &bound(&self.to))
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// The entries whose keys an automaton accepts, in key order; see
/// [`FastArt::search`](super::FastArt::search).
pub struct Search<'a, V, A: Automaton> {
    walk: Guarded<'a, V>,
    pruner: Pruner<A>,
    done: bool,
}

impl<'a, V, A: Automaton> Search<'a, V, A> {
    pub(super) fn new(map: &'a FastArt<V>, automaton: A) -> Self {
        Search {
            walk: Guarded::new(map, Bound::Unbounded),
            pruner: Pruner::new(automaton),
            done: false,
        }
    }

    /// The next entry, its key borrowed from the search (valid until the
    /// next call): no allocation per entry.
    ///
    /// ```
    /// use memkv::frozen::automaton::{Automaton, Str};
    ///
    /// let map: memkv::FastArt<u8> = [("usr/bin", 1), ("usr/lib", 2), ("var", 3)].into_iter().collect();
    /// let mut under_usr = map.search(Str::new("usr/").starts_with());
    /// let mut total = 0;
    /// while let Some((_, value)) = under_usr.next_entry() {
    ///     total += value;
    /// }
    /// assert_eq!(total, 3);
    /// ```
    pub fn next_entry(&mut self) -> Option<(&[u8], &'a V)> {
        if self.done {
            return None;
        }
        let entry = self.walk.next_entry(&mut self.pruner);
        self.done = entry.is_none();
        entry
    }
}

impl<'a, V, A: Automaton> Iterator for Search<'a, V, A> {
    type Item = (Vec<u8>, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        self.next_entry().map(|(key, value)| (key.to_vec(), value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(if self.done { 0 } else { self.walk.art.len() }))
    }
}

impl<V, A: Automaton> FusedIterator for Search<'_, V, A> {}

impl<V, A: Automaton> fmt::Debug for Search<'_, V, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Search")
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// A forward walk in place from a lower bound that asks a [`Guard`] about
/// each node it enters and yields the entries the guard
/// [matches](Guard::matches): the engine of [`Search`], and of the hybrid
/// map's searches over its deltas.
pub(crate) struct Guarded<'a, V> {
    art: &'a RawArt<V>,
    walk: Cursor,
    /// An excluded lower bound, passed over if the walk comes to it first.
    excluded: Option<Vec<u8>>,
}

impl<'a, V> Guarded<'a, V> {
    pub(crate) fn new(map: &'a FastArt<V>, lower: Bound<&[u8]>) -> Self {
        let art = &map.raw;
        let walk = match lower {
            Bound::Unbounded => Cursor::front(art.root(), &[]),
            Bound::Included(key) | Bound::Excluded(key) => Cursor::seek_ge(art, key),
        };
        let excluded = match lower {
            Bound::Excluded(key) => Some(key.to_vec()),
            _ => None,
        };
        Guarded {
            art,
            walk,
            excluded,
        }
    }

    /// The next entry the guard lets through, its key borrowed from the
    /// walk (valid until the next call).
    #[inline]
    pub(crate) fn next_entry<G: Guard>(&mut self, guard: &mut G) -> Option<(&[u8], &'a V)> {
        loop {
            let leaf = self.walk.next_guarded(self.art, guard)?;
            // The first leaf the walk returns is the least at or after the
            // bound that the guard let it reach, so only it can equal the
            // bound.
            if let Some(bound) = self.excluded.take()
                && self.walk.key() == bound.as_slice()
            {
                continue;
            }
            if guard.matches() {
                // SAFETY: a live value; the tree is borrowed (shared) for 'a.
                let value = unsafe { shared(self.art.leaf_value(leaf)) };
                return Some((self.walk.key(), value));
            }
        }
    }
}
