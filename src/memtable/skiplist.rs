//! [`SkipListMemtable`]: the baseline, a lock-free `crossbeam_skiplist`
//! `SkipMap` of internal keys.
//!
//! Each entry is one skip-list node whose key owns one boxed slice:
//!
//! ```text
//!  | escaped user key, 0x00 0x01 | !seqno big-endian | value |
//!  '---------- compared bytewise (see `key`) --------'
//! ```
//!
//! The compared part is a byte string whose order is the memtable order, so
//! the map's key can be borrowed as `[u8]` and a lookup seeks with an encoded
//! key built on the stack of the caller's thread (in a reused thread-local
//! buffer) — no allocation and no dynamic dispatch per comparison. Keeping
//! the value in the same box saves the separate value allocation of the usual
//! `SkipMap<InternalKey, Value>`.

use std::borrow::Borrow;
use std::cell::RefCell;
use std::cmp::Ordering as CmpOrdering;
use std::fmt;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam_skiplist::SkipMap;
use crossbeam_skiplist::map;

use super::{
    EntryCursor, EntryRef, Lookup, Memtable, MemtableRead, ValueKind, check_seqno, key, under_4_gib,
};

/// The estimated bytes of a skip-list node besides the key's box: the key
/// struct, the reference count and height word, and the tower (two links on
/// average: crossbeam draws heights with p = 1/2), each word a `usize`.
const NODE_ESTIMATE: usize = size_of::<SkipKey>() + size_of::<usize>() + 2 * size_of::<usize>();

/// A skip-list key: the encoded internal key followed by the value.
struct SkipKey {
    buf: Box<[u8]>,
    /// Bytes of `buf` that are the encoded internal key.
    key_len: u32,
    kind: ValueKind,
}

impl SkipKey {
    #[inline]
    fn encoded(&self) -> &[u8] {
        &self.buf[..self.key_len as usize]
    }

    #[inline]
    fn value(&self) -> &[u8] {
        &self.buf[self.key_len as usize..]
    }
}

impl fmt::Debug for SkipKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkipKey")
            .field("encoded", &self.encoded().escape_ascii().to_string())
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl PartialEq for SkipKey {
    fn eq(&self, other: &Self) -> bool {
        self.encoded() == other.encoded()
    }
}

impl Eq for SkipKey {}

impl PartialOrd for SkipKey {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for SkipKey {
    #[inline]
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.encoded().cmp(other.encoded())
    }
}

/// `Borrow` must agree with `Ord`: both compare the encoded key bytes.
impl Borrow<[u8]> for SkipKey {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.encoded()
    }
}

thread_local! {
    /// A reused buffer for encoding lookup keys.
    static LOOKUP_KEY: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on the encoded internal key (`user_key`, `seqno`), built in a
/// reused thread-local buffer.
#[inline]
fn with_lookup_key<R>(user_key: &[u8], seqno: u64, f: impl FnOnce(&[u8]) -> R) -> R {
    // Taken out of the cell, so a nested lookup inside `f` (which would find
    // it empty and use a fresh one) can't conflict.
    let mut buf = LOOKUP_KEY.with(|b| std::mem::take(&mut *b.borrow_mut()));
    buf.clear();
    key::push_internal(&mut buf, user_key, seqno);
    let r = f(&buf);
    LOOKUP_KEY.with(|b| *b.borrow_mut() = buf);
    r
}

/// The internal-key range covering every version of the user keys in a
/// user-key range.
#[derive(Debug)]
struct EncodedRange {
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
}

impl EncodedRange {
    fn new(range: &impl RangeBounds<[u8]>) -> Self {
        // Every encoded version of `k` lies strictly between its escaped
        // form (a proper prefix) and that form followed by eight 0xFF bytes
        // (version 0, `!0` = all ones) inclusive.
        let all_versions_end = |k: &[u8]| {
            let mut v = Vec::with_capacity(k.len() + key::OVERHEAD);
            key::push_escaped(&mut v, k);
            v.extend_from_slice(&[0xFF; 8]);
            v
        };
        let escaped = |k: &[u8]| {
            let mut v = Vec::with_capacity(k.len() + 2);
            key::push_escaped(&mut v, k);
            v
        };
        let start = match range.start_bound() {
            Bound::Included(k) => Bound::Included(escaped(k)),
            Bound::Excluded(k) => Bound::Excluded(all_versions_end(k)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let end = match range.end_bound() {
            Bound::Included(k) => Bound::Included(all_versions_end(k)),
            Bound::Excluded(k) => Bound::Excluded(escaped(k)),
            Bound::Unbounded => Bound::Unbounded,
        };
        EncodedRange { start, end }
    }
}

impl RangeBounds<[u8]> for EncodedRange {
    fn start_bound(&self) -> Bound<&[u8]> {
        self.start.as_ref().map(Vec::as_slice)
    }

    fn end_bound(&self) -> Bound<&[u8]> {
        self.end.as_ref().map(Vec::as_slice)
    }
}

/// An LSM memtable on `crossbeam_skiplist::SkipMap`: lock-free inserts from
/// any number of threads, lock-free reads. The common baseline.
///
/// [`approximate_memory_usage`](MemtableRead::approximate_memory_usage) is an
/// estimate kept as entries are inserted: each entry's box plus an average
/// node size; the allocator's rounding is not included.
///
/// An entry inserted again with the same key and sequence number replaces
/// the old one, and crossbeam-skiplist 0.1.3 never frees the replaced node
/// if a cursor has passed over it: the node and the entry's bytes are lost
/// for good (crossbeam-rs/crossbeam issue 1178, fixed upstream but not
/// released; found by the `memtable_ops` fuzz target). Engines give each
/// write its own sequence number, so they do not replace entries.
///
/// ```
/// use memkv::memtable::{Lookup, Memtable, MemtableRead, SkipListMemtable, ValueKind};
///
/// let mem = SkipListMemtable::default();
/// mem.insert(b"k", 1, ValueKind::Value, b"v1");
/// mem.insert(b"k", 2, ValueKind::Tombstone, b"");
/// assert_eq!(mem.get(b"k", 1), Lookup::Found(b"v1".to_vec()));
/// assert_eq!(mem.get(b"k", 2), Lookup::Deleted);
/// ```
#[derive(Debug)]
pub struct SkipListMemtable {
    map: SkipMap<SkipKey, ()>,
    memory: AtomicUsize,
}

impl Default for SkipListMemtable {
    fn default() -> Self {
        SkipListMemtable {
            map: SkipMap::new(),
            memory: AtomicUsize::new(0),
        }
    }
}

impl MemtableRead for SkipListMemtable {
    type Cursor<'a> = SkipListCursor<'a>;

    #[inline]
    fn get_with<R>(
        &self,
        user_key: impl AsRef<[u8]>,
        snapshot: u64,
        f: impl FnOnce(Lookup<&[u8]>) -> R,
    ) -> R {
        let user_key = user_key.as_ref();
        let snapshot = snapshot.min(super::MAX_SEQNO);
        let found = with_lookup_key(user_key, snapshot, |lookup| {
            let entry = self.map.lower_bound(Bound::Included(lookup))?;
            // Same user key: same escaped part, which ends 8 bytes before the
            // end of both encodings.
            let same = entry.key().encoded().len() == lookup.len()
                && entry.key().encoded()[..lookup.len() - 8] == lookup[..lookup.len() - 8];
            same.then_some(entry)
        });
        match &found {
            None => f(Lookup::Absent),
            Some(e) => match e.key().kind {
                ValueKind::Value => f(Lookup::Found(e.key().value())),
                ValueKind::Tombstone => f(Lookup::Deleted),
            },
        }
    }

    fn range<'a>(&'a self, range: impl RangeBounds<[u8]>, snapshot: u64) -> SkipListCursor<'a> {
        SkipListCursor {
            range: self.map.range(EncodedRange::new(&range)),
            ahead: Vec::with_capacity(READ_AHEAD),
            current: None,
            snapshot,
            key_buf: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    fn approximate_memory_usage(&self) -> usize {
        self.memory.load(Ordering::Relaxed)
    }
}

impl Memtable for SkipListMemtable {
    type Frozen = FrozenSkipListMemtable;

    /// The encoded key escapes each zero byte, so its length depends on
    /// the bytes (counted only for keys long enough to matter).
    fn fits(user_key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> bool {
        let (user_key, value) = (user_key.as_ref(), value.as_ref());
        let overhead = key::OVERHEAD as u64;
        let all_zeros = user_key.len() as u64 * 2 + overhead;
        let key_fits = under_4_gib(all_zeros) || {
            let zeros = user_key.iter().filter(|&&b| b == 0).count() as u64;
            under_4_gib(user_key.len() as u64 + zeros + overhead)
        };
        key_fits && under_4_gib(value.len() as u64)
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
        // As the other memtables do (see `Memtable::insert`).
        assert!(u32::try_from(value.len()).is_ok(), "values are under 4 GiB");
        let mut buf = Vec::with_capacity(user_key.len() + key::OVERHEAD + value.len());
        key::push_internal(&mut buf, user_key, seqno);
        let key_len = u32::try_from(buf.len()).expect("keys are under 4 GiB");
        buf.extend_from_slice(value);
        let buf = buf.into_boxed_slice();
        self.memory
            .fetch_add(NODE_ESTIMATE + buf.len(), Ordering::Relaxed);
        self.map.insert(SkipKey { buf, key_len, kind }, ());
    }

    fn freeze(self) -> FrozenSkipListMemtable {
        FrozenSkipListMemtable(self)
    }
}

/// Skip-list entries a [`SkipListCursor`] reads ahead.
const READ_AHEAD: usize = 16;

/// A cursor over a [`SkipListMemtable`] (active or frozen): the skip list's
/// own range iterator, which pins an epoch and holds a reference count per
/// step. Allocates only for keys that contain a zero byte (unescaped into a
/// reused buffer).
///
/// It reads ahead as [`FrozenArtCursor`](super::FrozenArtCursor) does: the
/// next 16 nodes are taken from the list, then the first byte of each of their
/// key-and-value boxes is loaded, so that those cache misses overlap (the
/// nodes themselves can only be reached one after the other).
pub struct SkipListCursor<'a> {
    range: map::Range<'a, [u8], EncodedRange, SkipKey, ()>,
    /// Entries read ahead, in reverse order (the next one last).
    ahead: Vec<map::Entry<'a, SkipKey, ()>>,
    current: Option<map::Entry<'a, SkipKey, ()>>,
    snapshot: u64,
    key_buf: Vec<u8>,
}

impl fmt::Debug for SkipListCursor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkipListCursor")
            .field("snapshot", &self.snapshot)
            .finish_non_exhaustive()
    }
}

impl SkipListCursor<'_> {
    /// Reads the next entries ahead; false at the end.
    fn refill(&mut self) -> bool {
        while self.ahead.len() < READ_AHEAD {
            match self.range.next() {
                Some(e) => self.ahead.push(e),
                None => break,
            }
        }
        self.ahead.reverse();
        // Independent loads: the misses overlap.
        let mut touch = 0u8;
        for e in &self.ahead {
            touch ^= e.key().buf[0];
        }
        std::hint::black_box(touch);
        !self.ahead.is_empty()
    }
}

impl EntryCursor for SkipListCursor<'_> {
    #[inline]
    fn next_entry(&mut self) -> Option<EntryRef<'_>> {
        loop {
            if self.ahead.is_empty() && !self.refill() {
                return None;
            }
            let e = self.ahead.pop().expect("refilled");
            if key::split(e.key().encoded()).1 <= self.snapshot {
                self.current = Some(e);
                break;
            }
        }
        let k = self.current.as_ref().expect("just set").key();
        let (escaped, seqno) = key::split(k.encoded());
        Some(EntryRef {
            user_key: key::unescape(escaped, &mut self.key_buf),
            seqno,
            kind: k.kind,
            value: k.value(),
        })
    }
}

/// A frozen [`SkipListMemtable`]: the same skip list, no longer written.
#[derive(Debug)]
pub struct FrozenSkipListMemtable(SkipListMemtable);

impl MemtableRead for FrozenSkipListMemtable {
    type Cursor<'a> = SkipListCursor<'a>;

    #[inline]
    fn get_with<R>(
        &self,
        user_key: impl AsRef<[u8]>,
        snapshot: u64,
        f: impl FnOnce(Lookup<&[u8]>) -> R,
    ) -> R {
        let user_key = user_key.as_ref();
        self.0.get_with(user_key, snapshot, f)
    }

    fn range<'a>(&'a self, range: impl RangeBounds<[u8]>, snapshot: u64) -> SkipListCursor<'a> {
        self.0.range(range, snapshot)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn approximate_memory_usage(&self) -> usize {
        self.0.approximate_memory_usage()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip_key(user_key: &[u8], seqno: u64, value: &[u8]) -> SkipKey {
        let mut buf = Vec::new();
        key::push_internal(&mut buf, user_key, seqno);
        let key_len = buf.len() as u32;
        buf.extend_from_slice(value);
        SkipKey {
            buf: buf.into_boxed_slice(),
            key_len,
            kind: ValueKind::Value,
        }
    }

    /// The map orders by `Ord` and seeks through `Borrow<[u8]>`; the other
    /// comparisons must agree with both, and none may look at the value.
    #[test]
    fn skip_keys_compare_by_the_encoded_key_alone() {
        let a = skip_key(b"a", 5, b"one value");
        let same = skip_key(b"a", 5, b"another");
        let older = skip_key(b"a", 4, b"one value");
        let b = skip_key(b"b", 9, b"");
        assert!(a == same);
        assert!(a != older && a != b);
        assert_eq!(a.partial_cmp(&same), Some(CmpOrdering::Equal));
        for (x, y) in [(&a, &older), (&older, &b), (&a, &b)] {
            assert_eq!(x.partial_cmp(y), Some(CmpOrdering::Less));
            assert_eq!(x.cmp(y), CmpOrdering::Less);
            let (bx, by): (&[u8], &[u8]) = (x.borrow(), y.borrow());
            assert_eq!(bx.cmp(by), CmpOrdering::Less);
        }
    }

    #[test]
    fn a_skip_key_shows_its_encoded_key_and_kind() {
        let shown = format!("{:?}", skip_key(b"k\x00", 1, b"v"));
        assert!(shown.starts_with("SkipKey"), "{shown}");
        assert!(shown.contains(r"k\\x00\\xff\\x00\\x01"), "{shown}");
        assert!(shown.contains("Value"), "{shown}");
    }

    #[test]
    fn a_cursor_shows_its_snapshot() {
        let mem = SkipListMemtable::default();
        let shown = format!("{:?}", mem.range(.., 7));
        assert_eq!(shown, "SkipListCursor { snapshot: 7, .. }");
    }
}
