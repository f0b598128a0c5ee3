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
    pub fn or_insert(self, default: V) -> &'a mut V {
        match self {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(default),
        }
    }

    /// The value, inserting `make()` if the key is absent. If `make` panics,
    /// the map is unchanged.
    pub fn or_insert_with(self, make: impl FnOnce() -> V) -> &'a mut V {
        match self {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(make()),
        }
    }

    /// The value, inserting `make(&key)` if the key is absent.
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
    pub fn or_default(self) -> &'a mut V
    where
        V: Default,
    {
        self.or_insert_with(V::default)
    }

    /// Calls `f` on the value if the key is present.
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
    pub fn key(&self) -> &K {
        &self.key
    }

    /// Takes the key back.
    pub fn into_key(self) -> K {
        self.key
    }

    /// Inserts `value` and returns a reference to it.
    ///
    /// # Panics
    /// As [`FastArt::insert`].
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
    pub fn key(&self) -> &K {
        &self.key
    }

    /// The value.
    pub fn get(&self) -> &V {
        // SAFETY: see the `value` field.
        unsafe { &*self.value }
    }

    /// The value, mutable.
    pub fn get_mut(&mut self) -> &mut V {
        // SAFETY: see the `value` field; `&mut self` makes it exclusive.
        unsafe { &mut *self.value }
    }

    /// The value, mutable for the whole borrow of the map.
    pub fn into_mut(self) -> &'a mut V {
        // SAFETY: see the `value` field; the entry gives up its borrow.
        unsafe { &mut *self.value }
    }

    /// Replaces the value; returns the old one.
    pub fn insert(&mut self, value: V) -> V {
        std::mem::replace(self.get_mut(), value)
    }

    /// Removes the entry; returns the value.
    pub fn remove(self) -> V {
        self.remove_entry().1
    }

    /// Removes the entry; returns the key and value.
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
