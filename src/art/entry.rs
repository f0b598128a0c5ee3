//! The entry API of [`FastArt`].

use std::fmt;

use super::FastArt;
use crate::fmt::ByteStr;

/// A view of one key's place in a [`FastArt`], vacant or occupied; see
/// [`FastArt::entry`].
///
/// ```
/// use memkv::FastArt;
///
/// let mut sizes: FastArt<u64> = FastArt::new();
/// for (path, bytes) in [("usr/bin/ls", 10), ("usr/bin/cp", 5), ("usr/bin/ls", 1)] {
///     sizes.entry(path).and_modify(|total| *total += bytes).or_insert(bytes);
/// }
/// assert_eq!(sizes.get("usr/bin/ls"), Some(&11));
/// *sizes.entry("etc/passwd").or_default() += 2;
/// assert_eq!(sizes.entry("etc/passwd").or_insert_with(|| unreachable!()), &2);
/// ```
pub enum Entry<'a, K: AsRef<[u8]>, V> {
    /// The key is absent.
    Vacant(VacantEntry<'a, K, V>),
    /// The key is present.
    Occupied(OccupiedEntry<'a, K, V>),
}

/// An absent key's place; see [`Entry`].
pub struct VacantEntry<'a, K: AsRef<[u8]>, V> {
    map: &'a mut FastArt<V>,
    key: K,
}

/// A present key's place; see [`Entry`].
pub struct OccupiedEntry<'a, K: AsRef<[u8]>, V> {
    map: &'a mut FastArt<V>,
    key: K,
    /// The key's value: stays valid while `map` is borrowed by the entry and
    /// not changed through it (every method that changes the tree consumes
    /// the entry).
    value: *mut V,
}

// SAFETY: an `OccupiedEntry` is a `&mut FastArt<V>` and a `&mut V` into it
// (`value`), which are `Send` when `V: Send` and `Sync` when `V: Sync`; the
// raw pointer only keeps the compiler from deriving that.
unsafe impl<K: AsRef<[u8]> + Send, V: Send> Send for OccupiedEntry<'_, K, V> {}
// SAFETY: as for `Send`: through `&OccupiedEntry` only `&V` is reachable.
unsafe impl<K: AsRef<[u8]> + Sync, V: Sync> Sync for OccupiedEntry<'_, K, V> {}

impl<'a, K: AsRef<[u8]>, V> Entry<'a, K, V> {
    /// The value, inserting `default` if the key is absent.
    ///
    /// ```
    /// let mut map: memkv::FastArt<u32> = memkv::FastArt::new();
    /// *map.entry("a").or_insert(1) += 10;
    /// *map.entry("a").or_insert(1) += 10;
    /// assert_eq!(map["a"], 21);
    /// ```
    pub fn or_insert(self, default: V) -> &'a mut V {
        match self {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(default),
        }
    }

    /// The value, inserting `make()` if the key is absent. If `make` panics,
    /// the map is unchanged.
    ///
    /// ```
    /// let mut map: memkv::FastArt<Vec<u8>> = memkv::FastArt::new();
    /// map.entry("a").or_insert_with(Vec::new).push(1);
    /// map.entry("a").or_insert_with(|| unreachable!("present")).push(2);
    /// assert_eq!(map["a"], [1, 2]);
    /// ```
    pub fn or_insert_with(self, make: impl FnOnce() -> V) -> &'a mut V {
        match self {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(make()),
        }
    }

    /// The value, inserting `make(&key)` if the key is absent.
    ///
    /// ```
    /// let mut map: memkv::FastArt<usize> = memkv::FastArt::new();
    /// let len = map.entry("usr/bin").or_insert_with_key(|key| key.len());
    /// assert_eq!(*len, 7);
    /// ```
    pub fn or_insert_with_key(self, make: impl FnOnce(&K) -> V) -> &'a mut V {
        match self {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let value = make(&e.key);
                e.insert(value)
            }
        }
    }

    /// The value, inserting `V::default()` if the key is absent.
    ///
    /// ```
    /// let mut map: memkv::FastArt<Vec<&str>> = memkv::FastArt::new();
    /// map.entry("fruit").or_default().push("apple");
    /// map.entry("fruit").or_default().push("pear");
    /// assert_eq!(map["fruit"], ["apple", "pear"]);
    /// ```
    pub fn or_default(self) -> &'a mut V
    where
        V: Default,
    {
        self.or_insert_with(V::default)
    }

    /// Calls `f` on the value if the key is present.
    ///
    /// ```
    /// let mut map: memkv::FastArt<u32> = memkv::FastArt::new();
    /// map.entry("a").and_modify(|v| *v += 1).or_insert(0);
    /// map.entry("a").and_modify(|v| *v += 1).or_insert(0);
    /// assert_eq!(map["a"], 1);
    /// ```
    pub fn and_modify(self, f: impl FnOnce(&mut V)) -> Self {
        match self {
            Entry::Occupied(mut e) => {
                f(e.get_mut());
                Entry::Occupied(e)
            }
            vacant => vacant,
        }
    }

    /// The entry's key.
    ///
    /// ```
    /// let mut map: memkv::FastArt<u8> = [("a", 1)].into_iter().collect();
    /// assert_eq!(map.entry("a").key(), &"a");
    /// assert_eq!(map.entry(b"b".to_vec()).key(), b"b"); // the key as given, present or not
    /// ```
    pub fn key(&self) -> &K {
        match self {
            Entry::Occupied(e) => &e.key,
            Entry::Vacant(e) => &e.key,
        }
    }
}

impl<'a, K: AsRef<[u8]>, V> VacantEntry<'a, K, V> {
    pub(super) fn new(map: &'a mut FastArt<V>, key: K) -> Self {
        VacantEntry { map, key }
    }

    /// The key.
    ///
    /// ```
    /// use memkv::{art::Entry, FastArt};
    ///
    /// let mut map: FastArt<u8> = FastArt::new();
    ///
    /// let Entry::Vacant(vacant) = map.entry("a") else { unreachable!() };
    /// assert_eq!(vacant.key(), &"a");
    /// ```
    pub fn key(&self) -> &K {
        &self.key
    }

    /// Takes the key back.
    ///
    /// ```
    /// use memkv::{art::Entry, FastArt};
    ///
    /// let mut map: FastArt<u8> = FastArt::new();
    ///
    /// let Entry::Vacant(vacant) = map.entry(String::from("a")) else { unreachable!() };
    /// assert_eq!(vacant.into_key(), "a");
    /// assert!(map.is_empty());
    /// ```
    pub fn into_key(self) -> K {
        self.key
    }

    /// Inserts `value` and returns a reference to it.
    ///
    /// # Panics
    /// As [`FastArt::insert`].
    ///
    /// ```
    /// use memkv::{art::Entry, FastArt};
    ///
    /// let mut map: FastArt<u8> = FastArt::new();
    ///
    /// let Entry::Vacant(vacant) = map.entry("a") else { unreachable!() };
    /// *vacant.insert(1) += 1;
    /// assert_eq!(map["a"], 2);
    /// ```
    pub fn insert(self, value: V) -> &'a mut V {
        self.map.compact_if_due();
        if !self.map.raw.has_room_for_insert() {
            panic!(
                "{}",
                crate::Error::CapacityExceeded {
                    bytes: self.map.memory_usage()
                }
            );
        }
        let (_, ptr) = self.map.raw.insert(self.key.as_ref(), value);
        // SAFETY: the new value lives in the tree, borrowed exclusively for 'a.
        unsafe { &mut *ptr }
    }
}

impl<'a, K: AsRef<[u8]>, V> OccupiedEntry<'a, K, V> {
    pub(super) fn new(map: &'a mut FastArt<V>, key: K, value: *mut V) -> Self {
        OccupiedEntry { map, key, value }
    }

    /// The key.
    ///
    /// ```
    /// use memkv::{art::Entry, FastArt};
    ///
    /// let mut map: FastArt<u8> = [("a", 1)].into_iter().collect();
    /// let Entry::Occupied(occupied) = map.entry(b"a".to_vec()) else { unreachable!() };
    ///
    /// assert_eq!(occupied.key(), b"a");
    /// ```
    pub fn key(&self) -> &K {
        &self.key
    }

    /// The value.
    ///
    /// ```
    /// use memkv::{art::Entry, FastArt};
    ///
    /// let mut map: FastArt<u8> = [("a", 1)].into_iter().collect();
    /// let Entry::Occupied(occupied) = map.entry("a") else { unreachable!() };
    ///
    /// assert_eq!(occupied.get(), &1);
    /// ```
    pub fn get(&self) -> &V {
        // SAFETY: see the `value` field.
        unsafe { &*self.value }
    }

    /// The value, mutable.
    ///
    /// ```
    /// use memkv::{art::Entry, FastArt};
    ///
    /// let mut map: FastArt<u8> = [("a", 1)].into_iter().collect();
    /// let Entry::Occupied(mut occupied) = map.entry("a") else { unreachable!() };
    ///
    /// *occupied.get_mut() += 10;
    /// *occupied.get_mut() += 10; // the entry is still there
    /// assert_eq!(occupied.get(), &21);
    /// ```
    pub fn get_mut(&mut self) -> &mut V {
        // SAFETY: see the `value` field; `&mut self` makes it exclusive.
        unsafe { &mut *self.value }
    }

    /// The value, mutable for the whole borrow of the map.
    ///
    /// ```
    /// use memkv::{art::Entry, FastArt};
    ///
    /// let mut map: FastArt<u8> = [("a", 1)].into_iter().collect();
    /// let Entry::Occupied(occupied) = map.entry("a") else { unreachable!() };
    ///
    /// let value: &mut u8 = occupied.into_mut();
    /// *value = 5;
    /// assert_eq!(map["a"], 5);
    /// ```
    pub fn into_mut(self) -> &'a mut V {
        // SAFETY: see the `value` field; the entry gives up its borrow.
        unsafe { &mut *self.value }
    }

    /// Replaces the value; returns the old one.
    ///
    /// ```
    /// use memkv::{art::Entry, FastArt};
    ///
    /// let mut map: FastArt<u8> = [("a", 1)].into_iter().collect();
    /// let Entry::Occupied(mut occupied) = map.entry("a") else { unreachable!() };
    ///
    /// assert_eq!(occupied.insert(2), 1);
    /// assert_eq!(map["a"], 2);
    /// ```
    pub fn insert(&mut self, value: V) -> V {
        std::mem::replace(self.get_mut(), value)
    }

    /// Removes the entry; returns the value.
    ///
    /// ```
    /// use memkv::{art::Entry, FastArt};
    ///
    /// let mut map: FastArt<u8> = [("a", 1)].into_iter().collect();
    /// let Entry::Occupied(occupied) = map.entry("a") else { unreachable!() };
    ///
    /// assert_eq!(occupied.remove(), 1);
    /// assert!(!map.contains_key("a"));
    /// ```
    pub fn remove(self) -> V {
        self.remove_entry().1
    }

    /// Removes the entry; returns the key and value.
    ///
    /// ```
    /// use memkv::{art::Entry, FastArt};
    ///
    /// let mut map: FastArt<u8> = [("a", 1)].into_iter().collect();
    /// let Entry::Occupied(occupied) = map.entry(b"a".to_vec()) else { unreachable!() };
    ///
    /// assert_eq!(occupied.remove_entry(), (b"a".to_vec(), 1));
    /// assert!(map.is_empty());
    /// ```
    pub fn remove_entry(self) -> (K, V) {
        let value = self
            .map
            .remove(self.key.as_ref())
            .expect("an occupied entry's key is present");
        (self.key, value)
    }
}

impl<K: AsRef<[u8]>, V: fmt::Debug> fmt::Debug for Entry<'_, K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entry::Vacant(e) => f.debug_tuple("Entry").field(e).finish(),
            Entry::Occupied(e) => f.debug_tuple("Entry").field(e).finish(),
        }
    }
}

impl<K: AsRef<[u8]>, V> fmt::Debug for VacantEntry<'_, K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("VacantEntry")
            .field(&ByteStr(self.key.as_ref()))
            .finish()
    }
}

impl<K: AsRef<[u8]>, V: fmt::Debug> fmt::Debug for OccupiedEntry<'_, K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OccupiedEntry")
            .field("key", &ByteStr(self.key.as_ref()))
            .field("value", self.get())
            .finish()
    }
}
