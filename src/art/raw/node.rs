//! Inner nodes: layout, lookup and construction.
//!
//! Every inner node is one arena block:
//!
//! ```text
//!  | tag: u8 | count: u8 | prefix field | terminal: u32 (if tag has TERMINAL) | body |
//!
//!  body of Node4 and Node16 (one layout, exact fit):
//!      | keys: [u8; count], ascending | refs: [u32; count] |
//!  body of Node48:
//!      | index: [u8; 256] (0 = no child, else slot + 1) | refs: [u32; 48] |
//!  body of Node256:
//!      | refs: [u32; 256] (0 = no child) |
//! ```
//!
//! * `tag` holds the kind (low two bits) and the `TERMINAL` flag.
//! * `count` is the number of byte edges; a Node256 with 256 children stores 0.
//! * The prefix field (see `bytes`) holds the node's *whole* compressed path,
//!   not a truncated copy as in libart, so a lookup never visits a leaf to
//!   recover prefix bytes and leaves need only store their own suffix.
//! * The terminal slot holds the leaf of the key that ends exactly at this
//!   node (after its prefix). This is how keys that are prefixes of other keys
//!   are stored, without a terminator byte that would rule out keys with 0x00.
//! * `refs` are tree references (`u32`, low bit = leaf), stored unaligned.
//!
//! Node4 and Node16 share one layout sized to their exact child count: the
//! two kinds differ only in how a child is found (a scalar scan, or SSE2 over
//! 16 key bytes). On the Debian paths 71% of inner nodes have two children;
//! with a 3-byte prefix such a node takes 16 bytes.

use std::ptr;

use super::bytes;
use super::search;

/// Flag in the tag byte: the node has a terminal leaf.
const TERMINAL: u8 = 0b100;
const KIND_MASK: u8 = 0b11;

/// Largest child count of a Node4 and a Node16.
pub(crate) const NODE4_MAX: usize = 4;
pub(crate) const NODE16_MAX: usize = 16;
pub(crate) const NODE48_MAX: usize = 48;

/// A Node48 turns back into a Node16 at this many children, a Node256 into a
/// Node48 at [`NODE256_SHRINK`]; the gap to the growth points keeps a node
/// that hovers at a boundary from being rebuilt on every insert and remove.
pub(crate) const NODE48_SHRINK: usize = 12;
pub(crate) const NODE256_SHRINK: usize = 36;

/// Byte offset of the prefix field.
const PREFIX_AT: usize = 2;

/// The four node kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    Node4 = 0,
    Node16 = 1,
    Node48 = 2,
    Node256 = 3,
}

impl Kind {
    /// The kind a node with `count` children should have, given its current
    /// kind (growth is immediate, shrinking has hysteresis).
    pub(crate) fn for_count(count: usize, current: Kind) -> Kind {
        let sparse = if count <= NODE4_MAX {
            Kind::Node4
        } else {
            Kind::Node16
        };
        match current {
            Kind::Node4 | Kind::Node16 if count <= NODE16_MAX => sparse,
            Kind::Node48 if count <= NODE48_SHRINK => sparse,
            Kind::Node256 if count <= NODE48_SHRINK => sparse,
            Kind::Node256 if count <= NODE256_SHRINK => Kind::Node48,
            Kind::Node256 => Kind::Node256,
            _ if count <= NODE48_MAX => Kind::Node48,
            _ => Kind::Node256,
        }
    }

    /// Whether `count` is a child count a node of this kind may have.
    pub(crate) fn allows(self, count: usize) -> bool {
        match self {
            Kind::Node4 => (1..=NODE4_MAX).contains(&count),
            Kind::Node16 => (NODE4_MAX + 1..=NODE16_MAX).contains(&count),
            Kind::Node48 => (NODE48_SHRINK + 1..=NODE48_MAX).contains(&count),
            Kind::Node256 => (NODE256_SHRINK + 1..=256).contains(&count),
        }
    }

    fn is_sparse(self) -> bool {
        matches!(self, Kind::Node4 | Kind::Node16)
    }

    fn body_bytes(self, count: usize) -> usize {
        match self {
            Kind::Node4 | Kind::Node16 => count * 5,
            Kind::Node48 => 256 + NODE48_MAX * 4,
            Kind::Node256 => 256 * 4,
        }
    }
}

/// Bytes of a node of `kind` with `count` children, a prefix field of
/// `prefix_field` bytes and maybe a terminal.
#[inline]
pub(crate) fn node_bytes(kind: Kind, count: usize, prefix_field: usize, terminal: bool) -> usize {
    PREFIX_AT + prefix_field + 4 * usize::from(terminal) + kind.body_bytes(count)
}

/// Reads the tree reference in `slot`.
///
/// # Safety
/// `slot` must be valid for reads of 4 bytes: a slot inside a live block (a
/// node's terminal or child slot) or the tree's `u32` root.
#[inline(always)]
pub(crate) unsafe fn read_ref(slot: *const u8) -> u32 {
    // SAFETY: 4 readable bytes per the contract; unaligned reads are always
    // allowed.
    unsafe { slot.cast::<u32>().read_unaligned() }
}

/// Writes tree reference `r` into `slot`.
///
/// # Safety
/// `slot` must be valid for writes of 4 bytes, as for [`read_ref`].
#[inline(always)]
pub(crate) unsafe fn write_ref(slot: *mut u8, r: u32) {
    // SAFETY: 4 writable bytes per the contract.
    unsafe { slot.cast::<u32>().write_unaligned(r) }
}

/// What a cursor finds at a position of a node (see [`Node::next_at`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot {
    /// The position: 0 is the terminal, `1 + i` a child (index `i` for Node4
    /// and Node16, edge byte `i` for Node48 and Node256).
    pub(crate) pos: u16,
    /// The edge byte, `None` for the terminal.
    pub(crate) edge: Option<u8>,
    /// The tree reference found there.
    pub(crate) child: u32,
}

/// A pointer to a live inner node.
///
/// # Invariant
/// `ptr` points to a live node block laid out as in the module docs. A `Node`
/// is a short-lived view: it must not be used after its block is freed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    ptr: *mut u8,
}

impl Node {
    /// # Safety
    /// `ptr` must point to a live node block (see the type invariant).
    #[inline(always)]
    pub(crate) unsafe fn from_ptr(ptr: *mut u8) -> Node {
        Node { ptr }
    }

    #[inline(always)]
    fn tag(self) -> u8 {
        // SAFETY: type invariant: byte 0 of a live node is its tag.
        unsafe { *self.ptr }
    }

    #[inline(always)]
    pub(crate) fn kind(self) -> Kind {
        match self.tag() & KIND_MASK {
            0 => Kind::Node4,
            1 => Kind::Node16,
            2 => Kind::Node48,
            _ => Kind::Node256,
        }
    }

    #[inline(always)]
    pub(crate) fn has_terminal(self) -> bool {
        self.tag() & TERMINAL != 0
    }

    /// Number of byte edges (the terminal not counted).
    #[inline(always)]
    pub(crate) fn count(self) -> usize {
        // SAFETY: type invariant: byte 1 is the count.
        let raw = unsafe { *self.ptr.add(1) } as usize;
        if raw == 0 && self.kind() == Kind::Node256 {
            256
        } else {
            raw
        }
    }

    #[inline(always)]
    fn set_count(self, count: usize) {
        debug_assert!(count <= 256);
        // SAFETY: type invariant; 256 wraps to 0, decoded in `count`.
        unsafe { *self.ptr.add(1) = count as u8 }
    }

    #[inline(always)]
    pub(crate) fn prefix_field(self) -> *mut u8 {
        // SAFETY: the field starts inside the block.
        unsafe { self.ptr.add(PREFIX_AT) }
    }

    /// The node's compressed path. The slice lives as long as the node.
    #[inline(always)]
    pub(crate) fn prefix<'a>(self) -> &'a [u8] {
        // SAFETY: type invariant: a valid prefix field at PREFIX_AT.
        unsafe { bytes::read(self.prefix_field()) }
    }

    #[inline(always)]
    fn prefix_field_size(self) -> usize {
        // SAFETY: type invariant: a valid prefix field at PREFIX_AT.
        unsafe { bytes::stored_size(self.prefix_field()) }
    }

    /// Where the terminal slot is (or would be).
    #[inline(always)]
    pub(crate) fn terminal_slot(self) -> *mut u8 {
        // SAFETY: the offset right after the prefix field, inside the block
        // both when the node has a terminal and when the body (of 5 bytes or
        // more) starts there instead.
        unsafe { self.prefix_field().add(self.prefix_field_size()) }
    }

    /// The terminal leaf's reference, 0 if none.
    #[inline(always)]
    pub(crate) fn terminal(self) -> u32 {
        if self.has_terminal() {
            // SAFETY: type invariant: a node with a terminal has its slot.
            unsafe { read_ref(self.terminal_slot()) }
        } else {
            0
        }
    }

    #[inline(always)]
    fn body(self) -> *mut u8 {
        // SAFETY: the body follows the terminal slot inside the block.
        unsafe {
            self.terminal_slot()
                .add(4 * usize::from(self.has_terminal()))
        }
    }

    /// Bytes of this node.
    #[inline]
    pub(crate) fn bytes(self) -> usize {
        node_bytes(
            self.kind(),
            self.count(),
            self.prefix_field_size(),
            self.has_terminal(),
        )
    }

    /// Units of this node's block.
    #[inline]
    pub(crate) fn units(self) -> usize {
        self.bytes().div_ceil(super::arena::UNIT)
    }

    #[inline(always)]
    fn sparse_keys(self) -> *mut u8 {
        self.body()
    }

    #[inline(always)]
    fn sparse_refs(self) -> *mut u8 {
        // SAFETY: refs follow the `count` key bytes.
        unsafe { self.body().add(self.count()) }
    }

    /// The length of the node's prefix if `rest` starts with it.
    ///
    /// Prefixes of up to 8 bytes (nearly all) are compared with one masked
    /// 8-byte load, without branching on their length.
    #[inline(always)]
    pub(crate) fn match_prefix(self, rest: &[u8]) -> Option<usize> {
        // SAFETY: type invariant: a valid prefix field at PREFIX_AT.
        let len = unsafe { *self.prefix_field() } as usize;
        if len <= 8 && rest.len() >= 8 {
            // SAFETY: a node holds at least two entries (a terminal costs 4
            // bytes, a child 5), so at least 8 bytes follow the length byte.
            let stored = unsafe {
                self.prefix_field()
                    .add(1)
                    .cast::<[u8; 8]>()
                    .read_unaligned()
            };
            let wanted: [u8; 8] = rest[..8].try_into().expect("8 bytes");
            let diff = u64::from_le_bytes(stored) ^ u64::from_le_bytes(wanted);
            let mask = ((1u128 << (8 * len)) - 1) as u64;
            return (diff & mask == 0).then_some(len);
        }
        let prefix = self.prefix();
        search::starts_with(rest, prefix).then_some(prefix.len())
    }

    /// The slot of the child on edge `byte`, or null.
    #[inline(always)]
    pub(crate) fn find(self, byte: u8) -> *mut u8 {
        let count = self.count();
        // SAFETY: in all arms, type invariant: the body is laid out per kind
        // with `count` children; indices read are below the array sizes.
        unsafe {
            match self.kind() {
                Kind::Node4 => match search::find4(self.sparse_keys(), count, byte) {
                    Some(i) => self.sparse_refs().add(4 * i),
                    None => ptr::null_mut(),
                },
                Kind::Node16 => match search::find16(self.sparse_keys(), count, byte) {
                    Some(i) => self.sparse_refs().add(4 * i),
                    None => ptr::null_mut(),
                },
                Kind::Node48 => {
                    let body = self.body();
                    match *body.add(byte as usize) {
                        0 => ptr::null_mut(),
                        s => body.add(256 + 4 * (s as usize - 1)),
                    }
                }
                Kind::Node256 => {
                    let slot = self.body().add(4 * byte as usize);
                    if read_ref(slot) == 0 {
                        ptr::null_mut()
                    } else {
                        slot
                    }
                }
            }
        }
    }

    /// The first occupied position at or after `pos`, in key order.
    ///
    /// Inlined for Node4 and Node16 (nine nodes in ten), whose next child
    /// is an index away; the dense kinds scan, out of line.
    #[inline(always)]
    pub(crate) fn next_at(self, pos: u16) -> Option<Slot> {
        if pos == 0 && self.has_terminal() {
            return Some(Slot {
                pos: 0,
                edge: None,
                child: self.terminal(),
            });
        }
        let from = pos.max(1) as usize - 1;
        if !self.kind().is_sparse() {
            return self.next_dense_at(from);
        }
        // SAFETY: type invariant: a sparse node has `count` keys and refs,
        // and `from` is below `count`.
        (from < self.count()).then(|| unsafe {
            Slot {
                pos: from as u16 + 1,
                edge: Some(*self.sparse_keys().add(from)),
                child: read_ref(self.sparse_refs().add(4 * from)),
            }
        })
    }

    /// [`next_at`](Self::next_at) for a Node48 or Node256: the first child
    /// on byte `from` or after.
    #[inline(never)]
    fn next_dense_at(self, from: usize) -> Option<Slot> {
        // SAFETY: in both arms, type invariant; indices are below 256.
        unsafe {
            match self.kind() {
                Kind::Node4 | Kind::Node16 => unreachable!("a sparse node"),
                Kind::Node48 => {
                    let body = self.body();
                    (from..256).find_map(|b| match *body.add(b) {
                        0 => None,
                        s => Some(Slot {
                            pos: b as u16 + 1,
                            edge: Some(b as u8),
                            child: read_ref(body.add(256 + 4 * (s as usize - 1))),
                        }),
                    })
                }
                Kind::Node256 => {
                    let body = self.body();
                    (from..256).find_map(|b| match read_ref(body.add(4 * b)) {
                        0 => None,
                        child => Some(Slot {
                            pos: b as u16 + 1,
                            edge: Some(b as u8),
                            child,
                        }),
                    })
                }
            }
        }
    }

    /// The last occupied position at or before `pos`, in key order;
    /// inlined for the sparse kinds, as [`next_at`](Self::next_at).
    #[inline(always)]
    pub(crate) fn prev_at(self, pos: u16) -> Option<Slot> {
        let terminal = || {
            self.has_terminal().then(|| Slot {
                pos: 0,
                edge: None,
                child: self.terminal(),
            })
        };
        if pos == 0 {
            return terminal();
        }
        let upto = pos as usize - 1; // inclusive child position
        let found = if self.kind().is_sparse() {
            let count = self.count();
            // SAFETY: type invariant: a sparse node has `count` keys and
            // refs, and `i` is below `count`.
            (count > 0).then(|| unsafe {
                let i = upto.min(count - 1);
                Slot {
                    pos: i as u16 + 1,
                    edge: Some(*self.sparse_keys().add(i)),
                    child: read_ref(self.sparse_refs().add(4 * i)),
                }
            })
        } else {
            self.prev_dense_at(upto)
        };
        found.or_else(terminal)
    }

    /// [`prev_at`](Self::prev_at) for a Node48 or Node256: the last child
    /// on byte `upto` or before.
    #[inline(never)]
    fn prev_dense_at(self, upto: usize) -> Option<Slot> {
        // SAFETY: in both arms, type invariant; indices are below 256.
        unsafe {
            match self.kind() {
                Kind::Node4 | Kind::Node16 => unreachable!("a sparse node"),
                Kind::Node48 => {
                    let body = self.body();
                    (0..=upto.min(255)).rev().find_map(|b| match *body.add(b) {
                        0 => None,
                        s => Some(Slot {
                            pos: b as u16 + 1,
                            edge: Some(b as u8),
                            child: read_ref(body.add(256 + 4 * (s as usize - 1))),
                        }),
                    })
                }
                Kind::Node256 => {
                    let body = self.body();
                    (0..=upto.min(255))
                        .rev()
                        .find_map(|b| match read_ref(body.add(4 * b)) {
                            0 => None,
                            child => Some(Slot {
                                pos: b as u16 + 1,
                                edge: Some(b as u8),
                                child,
                            }),
                        })
                }
            }
        }
    }

    /// The position a child on edge `byte` has or would have: for a cursor
    /// that must continue *after* that edge, `position_after(byte)`.
    #[inline]
    pub(crate) fn position_of(self, byte: u8) -> u16 {
        if self.kind().is_sparse() {
            // SAFETY: type invariant: `count` ascending keys.
            let keys = unsafe { std::slice::from_raw_parts(self.sparse_keys(), self.count()) };
            keys.partition_point(|&k| k < byte) as u16 + 1
        } else {
            byte as u16 + 1
        }
    }

    /// Appends the references and slots of the terminal (first) and the
    /// children (ascending by edge byte) to `out`.
    pub(crate) fn child_slots(self, out: &mut Vec<(u32, *mut u8)>) {
        if self.has_terminal() {
            out.push((self.terminal(), self.terminal_slot()));
        }
        // Straight from the layout, without a search per child: compaction
        // calls this twice for every node.
        // SAFETY: in all arms, type invariant: the body is laid out per kind
        // with `count` children; every slot taken lies in its array.
        unsafe {
            match self.kind() {
                Kind::Node4 | Kind::Node16 => {
                    let refs = self.sparse_refs();
                    for i in 0..self.count() {
                        let slot = refs.add(4 * i);
                        out.push((read_ref(slot), slot));
                    }
                }
                Kind::Node48 => {
                    let body = self.body();
                    for byte in 0..256 {
                        let index = usize::from(*body.add(byte));
                        if index != 0 {
                            let slot = body.add(256 + 4 * (index - 1));
                            out.push((read_ref(slot), slot));
                        }
                    }
                }
                Kind::Node256 => {
                    let body = self.body();
                    for byte in 0..256 {
                        let slot = body.add(4 * byte);
                        let child = read_ref(slot);
                        if child != 0 {
                            out.push((child, slot));
                        }
                    }
                }
            }
        }
    }

    /// Appends the children, ascending by edge byte, to `out`.
    pub(crate) fn children(self, out: &mut Vec<(u8, u32)>) {
        let mut pos = 1;
        while let Some(slot) = self.next_at(pos) {
            out.push((slot.edge.expect("positions >= 1 are edges"), slot.child));
            pos = slot.pos + 1;
        }
    }

    /// The children of a Node4 or Node16 in edge order; nothing for the other
    /// kinds.
    #[inline]
    pub(crate) fn sparse_children(self) -> impl Iterator<Item = u32> {
        let count = if self.kind().is_sparse() {
            self.count()
        } else {
            0
        };
        let refs = self.sparse_refs();
        // SAFETY: type invariant: a sparse node has `count` refs.
        (0..count).map(move |i| unsafe { read_ref(refs.add(4 * i)) })
    }

    /// Inserts a child into a Node48 that has room, in place.
    ///
    /// # Safety
    /// The node must be a Node48 with fewer than 48 children and none on `byte`.
    pub(crate) unsafe fn node48_insert(self, byte: u8, child: u32) {
        let count = self.count();
        debug_assert!(self.kind() == Kind::Node48 && count < NODE48_MAX);
        // Slots are kept dense (0..count), so the new child takes slot `count`.
        // SAFETY: per the contract; `count` < 48 slots.
        unsafe {
            let body = self.body();
            *body.add(byte as usize) = count as u8 + 1;
            write_ref(body.add(256 + 4 * count), child);
        }
        self.set_count(count + 1);
    }

    /// Removes the child on `byte` from a Node48, in place.
    ///
    /// # Safety
    /// The node must be a Node48 with a child on `byte`.
    pub(crate) unsafe fn node48_remove(self, byte: u8) {
        let count = self.count();
        // SAFETY: per the contract; slot indices are below `count` <= 48.
        unsafe {
            let body = self.body();
            let slot = *body.add(byte as usize) as usize - 1;
            *body.add(byte as usize) = 0;
            let last = count - 1;
            if slot != last {
                // Keep slots dense: the last slot moves into the hole.
                let moved = read_ref(body.add(256 + 4 * last));
                write_ref(body.add(256 + 4 * slot), moved);
                let owner = (0..256)
                    .find(|&b| *body.add(b) as usize == last + 1)
                    .expect("slot owner");
                *body.add(owner) = slot as u8 + 1;
            }
        }
        self.set_count(count - 1);
    }

    /// Sets the child on `byte` of a Node256 (0 removes it), in place.
    ///
    /// # Safety
    /// The node must be a Node256; adding needs `byte` free, removing needs it
    /// taken, and the count must stay in 1..=256.
    pub(crate) unsafe fn node256_set(self, byte: u8, child: u32) {
        // SAFETY: per the contract.
        let slot = unsafe { self.body().add(4 * byte as usize) };
        // SAFETY: a Node256's slot for `byte`, inside its body.
        let had = unsafe { read_ref(slot) } != 0;
        // SAFETY: as above.
        unsafe { write_ref(slot, child) };
        let count = self.count();
        self.set_count(if child != 0 && !had {
            count + 1
        } else if child == 0 && had {
            count - 1
        } else {
            count
        });
    }

    /// Inserts a child into a Node4/Node16 in place, when the block (of the
    /// same unit count as the grown node) has room.
    ///
    /// # Safety
    /// The node must be sparse with fewer than 16 children and none on `byte`,
    /// and its block must be at least `node_bytes` of the grown node long.
    pub(crate) unsafe fn sparse_insert(self, byte: u8, child: u32) {
        let count = self.count();
        let at = self.position_of(byte) as usize - 1;
        // SAFETY: per the contract the block has room for one more key and ref.
        // Moves go back to front so nothing is overwritten before it is read.
        unsafe {
            let keys = self.sparse_keys();
            let old_refs = keys.add(count);
            let new_refs = keys.add(count + 1);
            ptr::copy(
                old_refs.add(4 * at),
                new_refs.add(4 * (at + 1)),
                4 * (count - at),
            );
            ptr::copy(old_refs, new_refs, 4 * at);
            ptr::copy(keys.add(at), keys.add(at + 1), count - at);
            *keys.add(at) = byte;
            write_ref(new_refs.add(4 * at), child);
        }
        self.set_kind_count(count + 1);
    }

    /// Removes a child from a Node4/Node16 in place (the block keeps its size).
    ///
    /// # Safety
    /// The node must be sparse with a child on `byte` and at least 2 children.
    pub(crate) unsafe fn sparse_remove(self, byte: u8) {
        let count = self.count();
        let at = self.position_of(byte) as usize - 1;
        // SAFETY: per the contract; moves go front to back.
        unsafe {
            let keys = self.sparse_keys();
            let old_refs = keys.add(count);
            let new_refs = keys.add(count - 1);
            ptr::copy(keys.add(at + 1), keys.add(at), count - at - 1);
            ptr::copy(old_refs, new_refs, 4 * at);
            ptr::copy(
                old_refs.add(4 * (at + 1)),
                new_refs.add(4 * at),
                4 * (count - at - 1),
            );
        }
        self.set_kind_count(count - 1);
    }

    /// Checks a Node48's index: every child's slot is below `count` and used
    /// by exactly one byte.
    pub(crate) fn check_node48_slots(self) -> Result<(), String> {
        let count = self.count();
        let mut owners = [0usize; NODE48_MAX];
        for b in 0..256 {
            // SAFETY: type invariant: a Node48 body starts with its 256-byte index.
            let s = unsafe { *self.body().add(b) } as usize;
            if s > count {
                return Err(format!("byte {b} points at slot {} of {count}", s - 1));
            }
            if s > 0 {
                owners[s - 1] += 1;
            }
        }
        match owners[..count].iter().position(|&n| n != 1) {
            Some(slot) => Err(format!("slot {slot} is indexed {} times", owners[slot])),
            None => Ok(()),
        }
    }

    fn set_kind_count(self, count: usize) {
        let kind = if count <= NODE4_MAX {
            Kind::Node4
        } else {
            Kind::Node16
        };
        // SAFETY: type invariant; only the kind bits of the tag change.
        unsafe { *self.ptr = (self.tag() & !KIND_MASK) | kind as u8 };
        self.set_count(count);
    }
}

/// Where a new node's prefix comes from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PrefixSource<'a> {
    /// The concatenation of these parts.
    New(&'a [&'a [u8]]),
    /// Moved from an existing node's prefix field (which then must be neither
    /// read nor freed).
    Move(*const u8),
}

impl PrefixSource<'_> {
    fn field_size(&self) -> usize {
        match *self {
            PrefixSource::New(parts) => bytes::field_size(parts.iter().map(|p| p.len()).sum()),
            // SAFETY: `Move` names a valid field (see the variant's contract).
            PrefixSource::Move(field) => unsafe { bytes::stored_size(field) },
        }
    }
}

/// A node to build.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spec<'a> {
    pub(crate) kind: Kind,
    pub(crate) prefix: PrefixSource<'a>,
    /// The terminal leaf, 0 for none.
    pub(crate) terminal: u32,
    /// The children, ascending by edge byte; their number must suit `kind`.
    pub(crate) children: &'a [(u8, u32)],
}

impl Spec<'_> {
    pub(crate) fn bytes(&self) -> usize {
        node_bytes(
            self.kind,
            self.children.len(),
            self.prefix.field_size(),
            self.terminal != 0,
        )
    }

    /// Writes the node into `dst` and returns the heap bytes allocated for an
    /// out-of-line prefix.
    ///
    /// # Safety
    /// `dst` must be valid for `self.bytes()` bytes and overlap no source.
    pub(crate) unsafe fn write(&self, dst: *mut u8) -> usize {
        let count = self.children.len();
        debug_assert!(count <= 256 && (self.kind.is_sparse() || count > NODE4_MAX));
        let has_terminal = self.terminal != 0;
        // SAFETY: `dst` has room for the whole node (contract); every offset
        // written below is inside `self.bytes()`.
        unsafe {
            *dst = self.kind as u8 | if has_terminal { TERMINAL } else { 0 };
            *dst.add(1) = count as u8;
            let field = dst.add(PREFIX_AT);
            let heap = match self.prefix {
                PrefixSource::New(parts) => bytes::write(field, parts),
                PrefixSource::Move(src) => {
                    ptr::copy_nonoverlapping(src, field, bytes::stored_size(src));
                    0
                }
            };
            let node = Node::from_ptr(dst);
            if has_terminal {
                write_ref(node.terminal_slot(), self.terminal);
            }
            let body = node.body();
            match self.kind {
                Kind::Node4 | Kind::Node16 => {
                    for (i, &(byte, child)) in self.children.iter().enumerate() {
                        *body.add(i) = byte;
                        write_ref(body.add(count + 4 * i), child);
                    }
                }
                Kind::Node48 => {
                    ptr::write_bytes(body, 0, 256);
                    for (i, &(byte, child)) in self.children.iter().enumerate() {
                        *body.add(byte as usize) = i as u8 + 1;
                        write_ref(body.add(256 + 4 * i), child);
                    }
                    // Unused slots are never read, but keep them initialized.
                    ptr::write_bytes(body.add(256 + 4 * count), 0, 4 * (NODE48_MAX - count));
                }
                Kind::Node256 => {
                    ptr::write_bytes(body, 0, 1024);
                    for &(byte, child) in self.children {
                        write_ref(body.add(4 * byte as usize), child);
                    }
                }
            }
            heap
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [Kind; 4] = [Kind::Node4, Kind::Node16, Kind::Node48, Kind::Node256];

    /// The checker finds a Node48 whose index is broken: the model tests
    /// rely on it to catch what a wrong lookup might not show at once.
    #[test]
    fn the_checker_finds_a_broken_node48_index() {
        let mut art = crate::art::raw::RawArt::new();
        for byte in 0..20u8 {
            art.insert(&[b'k', byte], u32::from(byte));
        }
        art.check().unwrap();
        // SAFETY: the root is a live node.
        let node = unsafe { Node::from_ptr(art.ptr(art.root())) };
        assert_eq!((node.kind(), node.count()), (Kind::Node48, 20));
        // A Node48's body starts with its index: slot + 1 per edge byte.
        let index = node.body();
        // SAFETY: `byte` < 256 lies in the index; each byte is put back
        // before the tree is used for anything but `check`.
        let edit = |byte: usize, slot: u8| unsafe { index.add(byte).replace(slot) };
        // Byte 3 loses its slot and byte 200, which has no child, takes
        // byte 5's: as many children as the count says, so only the index
        // check sees that byte 3's slot is indexed by no byte.
        // SAFETY: as for `edit`; a read.
        let slot5 = unsafe { *index.add(5) };
        let slot3 = edit(3, 0);
        let was = edit(200, slot5);
        let error = art.check().unwrap_err();
        let want = format!("slot {} is indexed 0 times", slot3 - 1);
        assert!(error.ends_with(&want), "{error}");
        edit(200, was);
        edit(3, slot3);
        art.check().unwrap();
    }

    #[test]
    fn kinds_allow_their_child_counts() {
        let allowed = |kind: Kind| (0..=257).filter(|&n| kind.allows(n)).collect::<Vec<_>>();
        assert_eq!(allowed(Kind::Node4), (1..=4).collect::<Vec<_>>());
        assert_eq!(allowed(Kind::Node16), (5..=16).collect::<Vec<_>>());
        assert_eq!(allowed(Kind::Node48), (13..=48).collect::<Vec<_>>());
        assert_eq!(allowed(Kind::Node256), (37..=256).collect::<Vec<_>>());
    }

    /// Kinds grow at 5, 17 and 49 children and shrink at 12 and 36, and
    /// whatever a node holds, the kind chosen for it allows its count.
    #[test]
    fn kinds_change_at_their_growth_and_shrink_points() {
        for (count, current, want) in [
            (4, Kind::Node4, Kind::Node4),
            (5, Kind::Node4, Kind::Node16),
            (16, Kind::Node16, Kind::Node16),
            (17, Kind::Node16, Kind::Node48),
            (4, Kind::Node16, Kind::Node4),
            (48, Kind::Node48, Kind::Node48),
            (49, Kind::Node48, Kind::Node256),
            (13, Kind::Node48, Kind::Node48),
            (12, Kind::Node48, Kind::Node16),
            (37, Kind::Node256, Kind::Node256),
            (36, Kind::Node256, Kind::Node48),
            (40, Kind::Node256, Kind::Node256),
            (12, Kind::Node256, Kind::Node16),
            (3, Kind::Node256, Kind::Node4),
        ] {
            assert_eq!(
                Kind::for_count(count, current),
                want,
                "{count} children, was {current:?}"
            );
        }
        for current in KINDS {
            for count in 1..=256 {
                let kind = Kind::for_count(count, current);
                assert!(
                    kind.allows(count),
                    "{count} children, was {current:?}: {kind:?}"
                );
            }
        }
    }
}
