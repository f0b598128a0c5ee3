//! Entries copied out of a locked memtable into a buffer, so that a cursor
//! never holds the memtable's lock while its user works.

use super::{EntryCursor, EntryRef, ValueKind};

/// Where one buffered entry's bytes are: key then value, back to back.
#[derive(Clone, Copy, Debug)]
struct Item {
    start: usize,
    key_len: usize,
    value_len: usize,
    seqno: u64,
    kind: ValueKind,
}

/// A batch of copied entries, consumed front to back.
#[derive(Clone, Debug, Default)]
pub(crate) struct EntryBuf {
    bytes: Vec<u8>,
    items: Vec<Item>,
    pos: usize,
}

impl EntryBuf {
    /// Appends a copy of `e`.
    pub(crate) fn push(&mut self, e: EntryRef<'_>) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(e.user_key);
        self.bytes.extend_from_slice(e.value);
        self.items.push(Item {
            start,
            key_len: e.user_key.len(),
            value_len: e.value.len(),
            seqno: e.seqno,
            kind: e.kind,
        });
    }

    /// Entries buffered, returned or not.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether every buffered entry has been returned.
    pub(crate) fn is_drained(&self) -> bool {
        self.pos == self.items.len()
    }

    /// Empties the buffer, keeping its capacity.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.items.clear();
        self.pos = 0;
    }

    /// The next buffered entry.
    #[inline]
    pub(crate) fn next_entry(&mut self) -> Option<EntryRef<'_>> {
        if self.is_drained() {
            return None;
        }
        self.pos += 1;
        self.entry(self.pos - 1)
    }

    /// The next buffered entry, left in place.
    #[inline]
    pub(crate) fn peek(&self) -> Option<EntryRef<'_>> {
        self.entry(self.pos)
    }

    /// Passes over the next buffered entry, if any.
    #[inline]
    pub(crate) fn skip(&mut self) {
        self.pos = (self.pos + 1).min(self.items.len());
    }

    #[inline]
    fn entry(&self, i: usize) -> Option<EntryRef<'_>> {
        let it = *self.items.get(i)?;
        let key_end = it.start + it.key_len;
        Some(EntryRef {
            user_key: &self.bytes[it.start..key_end],
            seqno: it.seqno,
            kind: it.kind,
            value: &self.bytes[key_end..key_end + it.value_len],
        })
    }
}

/// A cursor over entries copied out of a memtable when it was created
/// ([`VecMemtable`](super::VecMemtable)'s, whose entries are only sorted on
/// demand).
#[derive(Clone, Debug, Default)]
pub struct BufferedCursor {
    buf: EntryBuf,
}

impl BufferedCursor {
    pub(crate) fn new(buf: EntryBuf) -> Self {
        BufferedCursor { buf }
    }
}

impl EntryCursor for BufferedCursor {
    #[inline]
    fn next_entry(&mut self) -> Option<EntryRef<'_>> {
        self.buf.next_entry()
    }
}
