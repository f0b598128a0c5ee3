//! TEMPORARY STUB: the final public API of `FastArt` over a `BTreeMap`, so that
//! other layers can be written against it while the radix tree is built.
#![allow(missing_docs)]

use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};

use crate::Error;

/// A fallible insert's error: why it failed, and the value handed back.
#[derive(Debug)]
pub struct InsertError<V> {
    error: Error,
    value: V,
}

impl<V> InsertError<V> {
    pub fn error(&self) -> &Error {
        &self.error
    }
    pub fn into_value(self) -> V {
        self.value
    }
}

#[derive(Clone, Debug)]
pub struct FastArt<V> {
    map: BTreeMap<Vec<u8>, V>,
}

impl<V> Default for FastArt<V> {
    fn default() -> Self {
        FastArt::new()
    }
}

impl<V> FastArt<V> {
    pub const MAX_KEY_LEN: usize = u32::MAX as usize;

    pub fn new() -> Self {
        FastArt { map: BTreeMap::new() }
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    pub fn clear(&mut self) {
        self.map.clear()
    }
    pub fn get(&self, key: impl AsRef<[u8]>) -> Option<&V> {
        self.map.get(key.as_ref())
    }
    pub fn get_mut(&mut self, key: impl AsRef<[u8]>) -> Option<&mut V> {
        self.map.get_mut(key.as_ref())
    }
    pub fn contains_key(&self, key: impl AsRef<[u8]>) -> bool {
        self.map.contains_key(key.as_ref())
    }
    pub fn insert(&mut self, key: impl AsRef<[u8]>, value: V) -> Option<V> {
        self.map.insert(key.as_ref().to_vec(), value)
    }
    pub fn try_insert(
        &mut self,
        key: impl AsRef<[u8]>,
        value: V,
    ) -> Result<Option<V>, InsertError<V>> {
        let key = key.as_ref();
        if key.len() > Self::MAX_KEY_LEN {
            return Err(InsertError {
                error: Error::KeyTooLong { len: key.len(), max: Self::MAX_KEY_LEN },
                value,
            });
        }
        Ok(self.insert(key, value))
    }
    pub fn remove(&mut self, key: impl AsRef<[u8]>) -> Option<V> {
        self.map.remove(key.as_ref())
    }
    pub fn iter(&self) -> Iter<'_, V> {
        Iter { inner: self.map.range::<[u8], _>(..) }
    }
    pub fn keys(&self) -> Keys<'_, V> {
        Keys { inner: self.iter() }
    }
    pub fn values(&self) -> Values<'_, V> {
        Values { inner: self.iter() }
    }
    pub fn range<T, R>(&self, range: R) -> Range<'_, V>
    where
        T: AsRef<[u8]> + ?Sized,
        R: RangeBounds<T>,
    {
        let lo = map_bound(range.start_bound());
        let hi = map_bound(range.end_bound());
        let empty = match (lo, hi) {
            (Bound::Included(a), Bound::Included(b)) => a > b,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b) | Bound::Included(b)) => {
                a >= b
            }
            _ => false,
        };
        if empty {
            return Iter { inner: self.map.range::<[u8], _>((Bound::Excluded(&[][..]), Bound::Included(&[][..]))) };
        }
        Iter { inner: self.map.range::<[u8], _>((lo, hi)) }
    }
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Range<'_, V> {
        let p = prefix.as_ref();
        let mut end = p.to_vec();
        while end.last() == Some(&0xFF) {
            end.pop();
        }
        let hi = match end.last_mut() {
            Some(b) => {
                *b += 1;
                Bound::Excluded(end.as_slice())
            }
            None => Bound::Unbounded,
        };
        Iter { inner: self.map.range::<[u8], _>((Bound::Included(p), hi)) }
    }
    pub fn first_key_value(&self) -> Option<(Vec<u8>, &V)> {
        self.map.first_key_value().map(|(k, v)| (k.clone(), v))
    }
    pub fn last_key_value(&self) -> Option<(Vec<u8>, &V)> {
        self.map.last_key_value().map(|(k, v)| (k.clone(), v))
    }
    pub fn memory_usage(&self) -> usize {
        0
    }
}

fn map_bound<T: AsRef<[u8]> + ?Sized>(b: Bound<&T>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Iterator over a range or prefix (same methods as `Iter`).
pub type Range<'a, V> = Iter<'a, V>;

pub struct Iter<'a, V> {
    inner: std::collections::btree_map::Range<'a, Vec<u8>, V>,
}

impl<'a, V> Iter<'a, V> {
    /// Lending form: the key is borrowed from the iterator, no allocation.
    pub fn next_entry(&mut self) -> Option<(&[u8], &'a V)> {
        self.inner.next().map(|(k, v)| (k.as_slice(), v))
    }
    pub fn next_back_entry(&mut self) -> Option<(&[u8], &'a V)> {
        self.inner.next_back().map(|(k, v)| (k.as_slice(), v))
    }
}

impl<'a, V> Iterator for Iter<'a, V> {
    type Item = (Vec<u8>, &'a V);
    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next().map(|(k, v)| (k.clone(), v))
    }
}

impl<V> DoubleEndedIterator for Iter<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(|(k, v)| (k.clone(), v))
    }
}

pub struct Keys<'a, V> {
    inner: Iter<'a, V>,
}
impl<V> Iterator for Keys<'_, V> {
    type Item = Vec<u8>;
    fn next(&mut self) -> Option<Vec<u8>> {
        self.inner.next().map(|(k, _)| k)
    }
}
pub struct Values<'a, V> {
    inner: Iter<'a, V>,
}
impl<'a, V> Iterator for Values<'a, V> {
    type Item = &'a V;
    fn next(&mut self) -> Option<&'a V> {
        self.inner.next_entry().map(|(_, v)| v)
    }
}

impl<K: AsRef<[u8]>, V> FromIterator<(K, V)> for FastArt<V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut m = FastArt::new();
        m.extend(iter);
        m
    }
}
impl<K: AsRef<[u8]>, V> Extend<(K, V)> for FastArt<V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}
impl<'a, V> IntoIterator for &'a FastArt<V> {
    type Item = (Vec<u8>, &'a V);
    type IntoIter = Iter<'a, V>;
    fn into_iter(self) -> Iter<'a, V> {
        self.iter()
    }
}
