//! [`VecMemtable`]: append to a vector, sort when frozen — the cheapest
//! possible insert, the write-only reference point.
//!
//! ```text
//!  entries: Vec<Ref>, in insertion order (sorted by `freeze`)
//!  arena record: | seqno << 8 | kind : u64 LE | key len : LEB128 | value len : LEB128 | key | value |
//! ```
//!
//! Reads of the active memtable scan every entry (O(n) per lookup, O(n log n)
//! per cursor: the entries are copied and sorted). A frozen one is sorted,
//! and reads binary-search it.

use std::cmp::Ordering as CmpOrdering;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{PoisonError, RwLock};

use super::arena::{Arena, Ref, get_varint, put_varint};
use super::buffered::{BufferedCursor, EntryBuf};
use super::{
    EntryCursor, EntryRef, Lookup, Memtable, MemtableRead, OwnedRange, ValueKind, check_seqno,
    under_4_gib,
};

/// The entry at `r`.
#[inline]
fn entry(arena: &Arena, r: Ref) -> EntryRef<'_> {
    let bytes = arena.from(r);
    let head = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    let (key_len, a) = get_varint(&bytes[8..]);
    let (value_len, b) = get_varint(&bytes[8 + a..]);
    let key_start = 8 + a + b;
    let value_start = key_start + key_len as usize;
    EntryRef {
        user_key: &bytes[key_start..value_start],
        seqno: head >> 8,
        kind: ValueKind::from_bit(head),
        value: &bytes[value_start..value_start + value_len as usize],
    }
}

/// Memtable order: user key ascending, sequence number descending.
#[inline]
fn order(a: &EntryRef<'_>, b: &EntryRef<'_>) -> CmpOrdering {
    a.user_key
        .cmp(b.user_key)
        .then_with(|| b.seqno.cmp(&a.seqno))
}

/// Sorts `entries` into memtable order and keeps, of entries with the same
/// user key and sequence number, the one appended last.
fn sort_dedup(arena: &Arena, entries: &mut Vec<Ref>) {
    // Stable: equal internal keys stay in insertion order.
    entries.sort_by(|&a, &b| order(&entry(arena, a), &entry(arena, b)));
    let mut kept = 0;
    for i in 0..entries.len() {
        if kept > 0
            && order(&entry(arena, entries[kept - 1]), &entry(arena, entries[i]))
                == CmpOrdering::Equal
        {
            entries[kept - 1] = entries[i];
        } else {
            entries[kept] = entries[i];
            kept += 1;
        }
    }
    entries.truncate(kept);
}

/// The arena and the entry list.
#[derive(Debug, Default)]
struct Tables {
    arena: Arena,
    entries: Vec<Ref>,
}

impl Tables {
    fn memory_usage(&self) -> usize {
        self.arena.memory_usage() + self.entries.capacity() * size_of::<Ref>()
    }
}

/// An LSM memtable that appends each insert to a vector and sorts on
/// [`freeze`](Memtable::freeze): the lower bound of insert cost, with reads
/// that scan everything until it is frozen.
///
/// Writers are serialised by a lock; readers run in parallel. Point lookups
/// on the active memtable are O(n), and a cursor copies and sorts every
/// entry: good for tests and for measuring the write side, not for serving
/// reads. [`approximate_memory_usage`](MemtableRead::approximate_memory_usage)
/// is exact (the arena's chunks and the vector's capacity).
///
/// ```
/// use memkv::memtable::{Lookup, Memtable, MemtableRead, ValueKind, VecMemtable};
///
/// let mem = VecMemtable::default();
/// mem.insert(b"b", 2, ValueKind::Value, b"two");
/// mem.insert(b"a", 1, ValueKind::Value, b"one");
/// let frozen = mem.freeze();
/// assert_eq!(frozen.get(b"b", 5), Lookup::Found(b"two".to_vec()));
/// ```
#[derive(Debug, Default)]
pub struct VecMemtable {
    tables: RwLock<Tables>,
    memory: AtomicUsize,
}

impl VecMemtable {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Tables> {
        self.tables.read().unwrap_or_else(PoisonError::into_inner)
    }
}

impl MemtableRead for VecMemtable {
    type Cursor<'a> = BufferedCursor;

    fn get_with<R>(
        &self,
        user_key: impl AsRef<[u8]>,
        snapshot: u64,
        f: impl FnOnce(Lookup<&[u8]>) -> R,
    ) -> R {
        let user_key = user_key.as_ref();
        let t = self.read();
        // The newest visible version; of equal sequence numbers, the last
        // appended.
        let mut best: Option<EntryRef<'_>> = None;
        for &r in &t.entries {
            let e = entry(&t.arena, r);
            if e.user_key == user_key
                && e.seqno <= snapshot
                && best.is_none_or(|b| e.seqno >= b.seqno)
            {
                best = Some(e);
            }
        }
        f(match best {
            None => Lookup::Absent,
            Some(e) if e.kind == ValueKind::Value => Lookup::Found(e.value),
            Some(_) => Lookup::Deleted,
        })
    }

    fn range(&self, range: impl RangeBounds<[u8]>, snapshot: u64) -> BufferedCursor {
        let t = self.read();
        let range = OwnedRange::new(&range);
        let mut sorted: Vec<Ref> = t
            .entries
            .iter()
            .copied()
            .filter(|&r| {
                let k = entry(&t.arena, r).user_key;
                (range.start.as_ref().map(Vec::as_slice), Bound::Unbounded).contains(k)
                    && range.before_end(k)
            })
            .collect();
        sort_dedup(&t.arena, &mut sorted);
        let mut buf = EntryBuf::default();
        for r in sorted {
            let e = entry(&t.arena, r);
            if e.seqno <= snapshot {
                buf.push(e);
            }
        }
        BufferedCursor::new(buf)
    }

    /// Exact, as the trait asks: a pair inserted again replaces the one
    /// before. The entries lie unsorted until frozen, so this sorts a copy
    /// of their references, O(n log n) like a cursor here.
    fn len(&self) -> usize {
        let t = self.read();
        if t.entries.len() < 2 {
            return t.entries.len();
        }
        let mut entries = t.entries.clone();
        sort_dedup(&t.arena, &mut entries);
        entries.len()
    }

    /// O(1), unlike [`len`](Self::len): no entry appended is no entry.
    fn is_empty(&self) -> bool {
        self.read().entries.is_empty()
    }

    fn approximate_memory_usage(&self) -> usize {
        self.memory.load(Ordering::Relaxed)
    }
}

impl Memtable for VecMemtable {
    type Frozen = FrozenVecMemtable;

    /// One record holds the entry: its head, both lengths, the key and the
    /// value.
    fn fits(user_key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> bool {
        let (user_key, value) = (user_key.as_ref(), value.as_ref());
        let varint = |len: usize| match u32::try_from(len) {
            Ok(len) => put_varint(&mut [0; 5], len).len() as u64,
            Err(_) => 5,
        };
        let record = 8 + varint(user_key.len()) + varint(value.len());
        under_4_gib(record + user_key.len() as u64 + value.len() as u64)
    }

    fn insert(
        &self,
        user_key: impl AsRef<[u8]>,
        seqno: u64,
        kind: ValueKind,
        value: impl AsRef<[u8]>,
    ) {
        let (user_key, value) = (user_key.as_ref(), value.as_ref());
        check_seqno(seqno);
        let key_len = u32::try_from(user_key.len()).expect("keys are under 4 GiB");
        let value_len = u32::try_from(value.len()).expect("values are under 4 GiB");
        let head = (seqno << 8 | kind as u64).to_le_bytes();
        let (mut a, mut b) = ([0u8; 5], [0u8; 5]);
        let mut t = self.tables.write().unwrap_or_else(PoisonError::into_inner);
        let r = t.arena.append(&[
            &head,
            put_varint(&mut a, key_len),
            put_varint(&mut b, value_len),
            user_key,
            value,
        ]);
        t.entries.push(r);
        self.memory.store(t.memory_usage(), Ordering::Relaxed);
    }

    fn freeze(self) -> FrozenVecMemtable {
        let mut t = self
            .tables
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let mut entries = std::mem::take(&mut t.entries);
        sort_dedup(&t.arena, &mut entries);
        entries.shrink_to_fit();
        t.entries = entries;
        let memory = t.memory_usage();
        FrozenVecMemtable { tables: t, memory }
    }
}

/// A frozen [`VecMemtable`]: sorted, read by binary search.
#[derive(Debug)]
pub struct FrozenVecMemtable {
    tables: Tables,
    memory: usize,
}

impl FrozenVecMemtable {
    /// The index of the first entry at or after (`key`, `seqno`).
    fn seek(&self, key: &[u8], seqno: u64) -> usize {
        let t = &self.tables;
        t.entries.partition_point(|&r| {
            let e = entry(&t.arena, r);
            e.user_key < key || (e.user_key == key && e.seqno > seqno)
        })
    }
}

impl MemtableRead for FrozenVecMemtable {
    type Cursor<'a> = FrozenVecCursor<'a>;

    fn get_with<R>(
        &self,
        user_key: impl AsRef<[u8]>,
        snapshot: u64,
        f: impl FnOnce(Lookup<&[u8]>) -> R,
    ) -> R {
        let user_key = user_key.as_ref();
        let t = &self.tables;
        let i = self.seek(user_key, snapshot);
        f(match t.entries.get(i).map(|&r| entry(&t.arena, r)) {
            Some(e) if e.user_key == user_key => match e.kind {
                ValueKind::Value => Lookup::Found(e.value),
                ValueKind::Tombstone => Lookup::Deleted,
            },
            _ => Lookup::Absent,
        })
    }

    fn range<'a>(&'a self, range: impl RangeBounds<[u8]>, snapshot: u64) -> FrozenVecCursor<'a> {
        let pos = match range.start_bound() {
            Bound::Included(k) => self.seek(k, u64::MAX),
            Bound::Excluded(k) => {
                let t = &self.tables;
                t.entries
                    .partition_point(|&r| entry(&t.arena, r).user_key <= k)
            }
            Bound::Unbounded => 0,
        };
        FrozenVecCursor {
            tables: &self.tables,
            pos,
            end: OwnedRange::new(&range),
            snapshot,
        }
    }

    fn len(&self) -> usize {
        self.tables.entries.len()
    }

    fn approximate_memory_usage(&self) -> usize {
        self.memory
    }
}

/// A cursor over a [`FrozenVecMemtable`]: walks the sorted vector.
#[derive(Debug)]
pub struct FrozenVecCursor<'a> {
    tables: &'a Tables,
    pos: usize,
    end: OwnedRange,
    snapshot: u64,
}

impl EntryCursor for FrozenVecCursor<'_> {
    #[inline]
    fn next_entry(&mut self) -> Option<EntryRef<'_>> {
        loop {
            let &r = self.tables.entries.get(self.pos)?;
            self.pos += 1;
            let e = entry(&self.tables.arena, r);
            if !self.end.before_end(e.user_key) {
                self.pos = self.tables.entries.len();
                return None;
            }
            if e.seqno <= self.snapshot {
                return Some(e);
            }
        }
    }
}
