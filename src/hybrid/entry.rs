//! The entry API of [`HybridMap`]: one key read and changed under the
//! fresh delta's write lock.

use std::fmt;
use std::mem;

use super::{HybridMap, WriteLock};
use crate::FrozenValue;
use crate::fmt::ByteStr;

/// A view of one key's place in a [`HybridMap`], vacant or occupied; see
/// [`HybridMap::entry`]. It holds the map's write lock until dropped.
///
/// ```
/// let map = memkv::HybridMap::<u32>::new();
/// assert_eq!(map.entry("a").or_insert(1), 1);
/// assert_eq!(map.entry("a").or_insert_with(|| unreachable!()), 1);
/// if let memkv::hybrid::Entry::Occupied(entry) = map.entry("a") {
///     assert_eq!(entry.remove_entry(), ("a", 1));
/// }
/// assert!(map.is_empty());
/// ```
pub enum Entry<'a, K, V>
where
    K: AsRef<[u8]>,
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    /// The key is absent.
    Vacant(VacantEntry<'a, K, V>),
    /// The key is present.
    Occupied(OccupiedEntry<'a, K, V>),
}

/// An absent key's place; see [`Entry`].
pub struct VacantEntry<'a, K, V>
where
    K: AsRef<[u8]>,
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    key: K,
    held: Held<'a, V>,
}

/// A present key's place, with a copy of its value; see [`Entry`].
pub struct OccupiedEntry<'a, K, V>
where
    K: AsRef<[u8]>,
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    key: K,
    /// The key's value in the map: the one the lock was taken over, or the
    /// last one this entry wrote.
    value: V,
    held: Held<'a, V>,
}

/// The fresh delta's write lock for one key. When it goes, after a write,
/// the merge policy is asked, as after any write.
struct Held<'a, V>
where
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    map: &'a HybridMap<V>,
    /// `Some` until dropped.
    lock: Option<WriteLock<'a, V>>,
    /// Whether a layer below the fresh delta holds the key: a removal must
    /// then leave a tombstone.
    older_present: bool,
    wrote: bool,
}

impl<'a, V> Held<'a, V>
where
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    fn lock(&mut self) -> &mut WriteLock<'a, V> {
        // Only `drop` takes the lock out.
        self.lock
            .as_mut()
            .expect("an entry holds its lock until dropped")
    }

    /// Writes `value` for `key`, which the map did not hold if `new`.
    fn write(&mut self, key: &[u8], value: V, new: bool) {
        let lock = self.lock();
        let replaced = lock.fresh.put(key, lock.hash, Some(value));
        if new {
            self.map.inner.count(1);
        }
        self.wrote = true;
        // Last: its `Drop` may panic.
        drop(replaced);
    }

    /// Removes `key`, which the map holds (as `remove_from` would).
    fn remove(&mut self, key: &[u8]) {
        let older_present = self.older_present;
        let lock = self.lock();
        let removed = if older_present {
            lock.fresh.put(key, lock.hash, None)
        } else {
            lock.fresh.remove(key)
        };
        self.map.inner.count(-1);
        self.wrote = true;
        // Last: its `Drop` may panic.
        drop(removed);
    }
}

impl<V> Drop for Held<'_, V>
where
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    fn drop(&mut self) {
        // Not while unwinding: an inline merge can take seconds.
        if let Some(lock) = self.lock.take()
            && self.wrote
            && !std::thread::panicking()
        {
            self.map.unlock_after_write(lock.fresh, &lock.layers);
        }
    }
}

impl<'a, K, V> Entry<'a, K, V>
where
    K: AsRef<[u8]>,
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    /// The entry for `key`, under `lock` (taken for `key`).
    pub(super) fn new(map: &'a HybridMap<V>, key: K, mut lock: WriteLock<'a, V>) -> Self {
        let older_present = lock.older.is_some();
        let current = match lock.fresh.lookup(key.as_ref(), lock.hash) {
            Some(slot) => slot.cloned(),
            None => lock.older.take(),
        };
        let held = Held {
            map,
            lock: Some(lock),
            older_present,
            wrote: false,
        };
        match current {
            Some(value) => Entry::Occupied(OccupiedEntry { key, value, held }),
            None => Entry::Vacant(VacantEntry { key, held }),
        }
    }

    /// The value, inserting `default` if the key is absent.
    ///
    /// The value comes back as a copy, not a reference: change a stored
    /// value with [`and_modify`](Self::and_modify) or an
    /// [`OccupiedEntry`].
    ///
    /// ```
    /// let map = memkv::HybridMap::<u32>::new();
    /// assert_eq!(map.entry("a").or_insert(1), 1);
    /// assert_eq!(map.entry("a").or_insert(2), 1); // present: left as it was
    /// assert_eq!(map.get("a"), Some(1));
    /// ```
    pub fn or_insert(self, default: V) -> V {
        self.or_insert_with(|| default)
    }

    /// The value, inserting `make()` if the key is absent.
    ///
    /// ```
    /// let map: memkv::HybridMap<Vec<u8>> = [("a", b"old".to_vec())].into_iter().collect();
    /// let mut calls = 0;
    /// for key in ["a", "b"] {
    ///     map.entry(key).or_insert_with(|| { calls += 1; b"new".to_vec() });
    /// }
    /// assert_eq!(calls, 1); // only for the absent key
    /// assert_eq!(map.get("b"), Some(b"new".to_vec()));
    /// ```
    pub fn or_insert_with(self, make: impl FnOnce() -> V) -> V {
        self.or_insert_with_key(|_| make())
    }

    /// The value, inserting `make(key)` if the key is absent.
    ///
    /// ```
    /// let map = memkv::HybridMap::<u64>::new();
    /// assert_eq!(map.entry("four").or_insert_with_key(|key| key.len() as u64), 4);
    /// ```
    pub fn or_insert_with_key(self, make: impl FnOnce(&K) -> V) -> V {
        match self {
            Entry::Occupied(entry) => entry.into_value(),
            Entry::Vacant(entry) => {
                let value = make(&entry.key);
                entry.insert(value)
            }
        }
    }

    /// The value, inserting `V::default()` if the key is absent.
    ///
    /// ```
    /// let map: memkv::HybridMap<u64> = [("a", 7)].into_iter().collect();
    /// assert_eq!(map.entry("a").or_default(), 7);
    /// assert_eq!(map.entry("b").or_default(), 0);
    /// assert_eq!(map.len(), 2);
    /// ```
    pub fn or_default(self) -> V
    where
        V: Default,
    {
        self.or_insert_with(V::default)
    }

    /// Changes the value of a present key with `f` (a write, under the
    /// entry's lock); leaves an absent one alone.
    ///
    /// ```
    /// let map = memkv::HybridMap::<u32>::new();
    /// map.entry("a").and_modify(|n| *n += 1);
    /// assert_eq!(map.get("a"), None); // absent: nothing written
    /// for _ in 0..3 {
    ///     map.entry("a").and_modify(|n| *n += 1).or_insert(1);
    /// }
    /// assert_eq!(map.get("a"), Some(3));
    /// ```
    pub fn and_modify(self, f: impl FnOnce(&mut V)) -> Self {
        match self {
            Entry::Occupied(mut entry) => {
                // The entry's copy is changed in place (if `f` panics, the
                // entry goes unwritten), then written: one clone, not two.
                f(&mut entry.value);
                let value = entry.value.clone();
                entry.held.write(entry.key.as_ref(), value, false);
                Entry::Occupied(entry)
            }
            vacant => vacant,
        }
    }

    /// The key, as given to [`HybridMap::entry`].
    ///
    /// ```
    /// let map: memkv::HybridMap<u8> = [("a", 1)].into_iter().collect();
    /// assert_eq!(map.entry("a").key(), &"a"); // occupied
    /// assert_eq!(map.entry(b"b".to_vec()).key(), b"b"); // vacant
    /// ```
    pub fn key(&self) -> &K {
        match self {
            Entry::Occupied(entry) => entry.key(),
            Entry::Vacant(entry) => entry.key(),
        }
    }
}

impl<K, V> VacantEntry<'_, K, V>
where
    K: AsRef<[u8]>,
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    /// The key, as given to [`HybridMap::entry`].
    ///
    /// ```
    /// use memkv::hybrid::Entry;
    ///
    /// let map = memkv::HybridMap::<u8>::new();
    /// let Entry::Vacant(entry) = map.entry("a") else { unreachable!() };
    /// assert_eq!(entry.key(), &"a");
    /// ```
    pub fn key(&self) -> &K {
        &self.key
    }

    /// The key, and the lock released without a write.
    ///
    /// ```
    /// use memkv::hybrid::Entry;
    ///
    /// let map = memkv::HybridMap::<u8>::new();
    /// let Entry::Vacant(entry) = map.entry(String::from("a")) else { unreachable!() };
    /// assert_eq!(entry.into_key(), "a");
    /// assert!(map.is_empty()); // nothing was written, and the map is unlocked
    /// ```
    pub fn into_key(self) -> K {
        self.key
    }

    /// Inserts `value` for the key; returns a copy of it.
    ///
    /// ```
    /// use memkv::hybrid::Entry;
    ///
    /// let map = memkv::HybridMap::<u8>::new();
    /// if let Entry::Vacant(entry) = map.entry("a") {
    ///     assert_eq!(entry.insert(1), 1);
    /// }
    /// assert_eq!(map.get("a"), Some(1));
    /// ```
    pub fn insert(mut self, value: V) -> V {
        let copy = value.clone();
        self.held.write(self.key.as_ref(), value, true);
        copy
    }
}

impl<K, V> OccupiedEntry<'_, K, V>
where
    K: AsRef<[u8]>,
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    /// The key, as given to [`HybridMap::entry`].
    ///
    /// ```
    /// use memkv::hybrid::Entry;
    ///
    /// let map: memkv::HybridMap<u8> = [("a", 1)].into_iter().collect();
    /// let Entry::Occupied(entry) = map.entry("a") else { unreachable!() };
    /// assert_eq!(entry.key(), &"a");
    /// ```
    pub fn key(&self) -> &K {
        &self.key
    }

    /// The key's value.
    ///
    /// This is the entry's copy of the value (cloned from the delta or
    /// decoded from the base), not a reference into the map.
    ///
    /// ```
    /// use memkv::hybrid::Entry;
    ///
    /// let map: memkv::HybridMap<u8> = [("a", 1)].into_iter().collect();
    /// map.freeze()?;
    /// let Entry::Occupied(entry) = map.entry("a") else { unreachable!() };
    /// assert_eq!(entry.get(), &1);
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn get(&self) -> &V {
        &self.value
    }

    /// The key's value, and the lock released.
    ///
    /// ```
    /// use memkv::hybrid::Entry;
    ///
    /// let map: memkv::HybridMap<u8> = [("a", 1)].into_iter().collect();
    /// let Entry::Occupied(entry) = map.entry("a") else { unreachable!() };
    /// assert_eq!(entry.into_value(), 1);
    /// map.insert("b", 2); // the entry's lock is released
    /// assert_eq!(map.len(), 2);
    /// ```
    pub fn into_value(self) -> V {
        self.value
    }

    /// Replaces the key's value (a write, under the entry's lock); returns
    /// the value it had.
    ///
    /// ```
    /// let map: memkv::HybridMap<u8> = [("a", 1)].into_iter().collect();
    /// if let memkv::hybrid::Entry::Occupied(mut entry) = map.entry("a") {
    ///     assert_eq!(entry.insert(2), 1);
    ///     assert_eq!(entry.get(), &2);
    /// }
    /// assert_eq!(map.get("a"), Some(2));
    /// ```
    pub fn insert(&mut self, value: V) -> V {
        self.held.write(self.key.as_ref(), value.clone(), false);
        mem::replace(&mut self.value, value)
    }

    /// Removes the key; returns its value.
    ///
    /// ```
    /// use memkv::hybrid::Entry;
    ///
    /// let map: memkv::HybridMap<u8> = [("a", 1), ("b", 2)].into_iter().collect();
    /// map.freeze()?;
    /// if let Entry::Occupied(entry) = map.entry("a") {
    ///     assert_eq!(entry.remove(), 1); // a tombstone over the base
    /// }
    /// assert_eq!((map.get("a"), map.len()), (None, 1));
    /// # Ok::<(), memkv::Error>(())
    /// ```
    pub fn remove(self) -> V {
        self.remove_entry().1
    }

    /// Removes the key; returns it (as given) and its value.
    ///
    /// ```
    /// use memkv::hybrid::Entry;
    ///
    /// let map: memkv::HybridMap<u8> = [("a", 1)].into_iter().collect();
    /// if let Entry::Occupied(entry) = map.entry(b"a".to_vec()) {
    ///     assert_eq!(entry.remove_entry(), (b"a".to_vec(), 1));
    /// }
    /// assert!(map.is_empty());
    /// ```
    pub fn remove_entry(mut self) -> (K, V) {
        self.held.remove(self.key.as_ref());
        (self.key, self.value)
    }
}

impl<K, V> fmt::Debug for Entry<'_, K, V>
where
    K: AsRef<[u8]>,
    V: FrozenValue + Clone + Send + Sync + fmt::Debug + 'static,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entry::Vacant(entry) => f.debug_tuple("Entry").field(entry).finish(),
            Entry::Occupied(entry) => f.debug_tuple("Entry").field(entry).finish(),
        }
    }
}

impl<K, V> fmt::Debug for VacantEntry<'_, K, V>
where
    K: AsRef<[u8]>,
    V: FrozenValue + Clone + Send + Sync + 'static,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("VacantEntry")
            .field(&ByteStr(self.key.as_ref()))
            .finish()
    }
}

impl<K, V> fmt::Debug for OccupiedEntry<'_, K, V>
where
    K: AsRef<[u8]>,
    V: FrozenValue + Clone + Send + Sync + fmt::Debug + 'static,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OccupiedEntry")
            .field("key", &ByteStr(self.key.as_ref()))
            .field("value", &self.value)
            .finish()
    }
}
