//! Ordered traversal: cursors that walk the tree forwards or backwards and
//! build each key in one reusable buffer.
//!
//! A cursor is a stack of frames, one per inner node on the path to the
//! current leaf, each with the next position to visit (see [`Slot`]) and the
//! length of the key buffer at that node. The bottom frame is *virtual*: its
//! only child is the root of the (sub)tree being walked, reached without an
//! edge byte, so a lone leaf at the root needs no special case.
//!
//! Positions run 0 (the terminal) and then one per child in edge order. A
//! forward frame's `pos` is the next position to visit (inclusive); a backward
//! frame's is an exclusive upper bound.
//!
//! Cursors hold references, not borrows: every step takes the tree, so a
//! cursor can live inside an iterator that also owns (or borrows) the tree.

use std::ops::Bound;

use super::node::{Slot, read_ref};
use super::{RawArt, is_leaf};
use crate::search::{Guard, Reach};

/// Prefetches the children of `next`, the sibling a walk enters after the
/// one it is entering now, if it is an inner node.
///
/// Entering a node prefetches its children, but a walk that finishes one
/// subtree then waits for the next one's node and then for its children, in
/// turn: the node arrived with its parent's prefetch, so its children can
/// be requested a whole subtree earlier. (Full Debian paths, as inserted:
/// iteration 7.8 -> 10.0 M keys/s; a second sibling ahead gained nothing.)
/// Walks skip it while the leaves lie in key order
/// ([`RawArt::leaves_in_order`], after compaction): the hardware streams
/// them, and this would only cost instructions (23.9 -> 28 M keys/s).
#[inline]
fn prefetch_below<V>(art: &RawArt<V>, next: Option<Slot>) {
    if let Some(next) = next
        && !is_leaf(next.child)
    {
        art.prefetch_children(art.node(next.child));
    }
}

/// The next slot of `frame` in key order, if any, which the frame then
/// moves past; `root` is the walked subtree's root, the virtual frame's
/// only child. Prefetches below the sibling after it (see
/// [`prefetch_below`]).
#[inline(always)]
fn take_next<V>(art: &RawArt<V>, frame: &mut Frame, root: u32) -> Option<Slot> {
    if frame.node == VIRTUAL {
        let slot = (frame.pos <= 1).then_some(Slot {
            pos: 1,
            edge: None,
            child: root,
        });
        frame.pos = 2;
        return slot;
    }
    let node = art.node(frame.node);
    let slot = node.next_at(frame.pos)?;
    frame.pos = slot.pos + 1;
    if !art.leaves_in_order() {
        prefetch_below(art, node.next_at(frame.pos));
    }
    Some(slot)
}

/// The frame over the walked subtree's root. Never a node reference (those
/// have the low bit clear).
const VIRTUAL: u32 = 1;

/// A backward frame's starting bound: above every position (0..=256).
const BACK_START: u16 = 258;

#[derive(Clone, Copy, Debug)]
struct Frame {
    node: u32,
    pos: u16,
    key_len: usize,
}

/// A leaf the walk has reached and the cursor not returned yet.
#[derive(Clone, Copy, Debug)]
struct Pending {
    leaf: u32,
    /// How many leading bytes its key shares with the key returned before
    /// it (a lower bound).
    keep: usize,
    /// Where its key's next bytes after those, up to its own suffix, end in
    /// `Cursor::tails` (they start where the previous pending leaf's end).
    tail_end: usize,
}

/// How many leaves a cursor walks ahead of the one it returns, at most.
///
/// On a map as inserted the leaves lie anywhere, so each is a cache miss.
/// Walking ahead over the nodes alone and prefetching the leaves it reaches
/// lets their misses overlap with each other and with the nodes' own.
const MAX_AHEAD: usize = 64;

/// The size below which a tree is walked in place, not ahead: most of it
/// stays in cache, so the misses to overlap are few, and the copies of
/// walking ahead cost more than they save. Scratch program, Debian paths,
/// alternating pairs against walks in place: 100 k keys (4.8 MB) -14%,
/// 300 k (11 MB) -7%, 1 M (36 MB) +3%, 7.3 M (257 MB) +13%.
///
/// Debug builds walk ahead at any size, so that the tests, whose maps are
/// small, take the path that large maps take (compacted maps in the tests
/// take the other).
const WALK_AHEAD_MIN_BYTES: usize = 32 << 20;

/// A cursor's first walk ahead. Each later one doubles, up to `MAX_AHEAD`:
/// a short scan stops after a few leaves, and should not pay for walking far
/// past them.
const FIRST_AHEAD: usize = 1;

/// One end of a traversal.
///
/// It walks the tree ahead of the leaf it returns (see `MAX_AHEAD`), so two
/// keys are kept: `path`, spelled down to where the walk is, and `key`, of
/// the leaf returned last. The walk records, for each leaf it reaches, how
/// its key differs from the previous one: a length to keep and a tail. That
/// costs little, because neighbours in key order share most of their bytes.
#[derive(Clone, Debug)]
pub(crate) struct Cursor {
    stack: Vec<Frame>,
    /// The key bytes down to the walk's position, without a leaf's suffix.
    path: Vec<u8>,
    /// The shortest `path` has been since the last leaf the walk reached:
    /// the next leaf's key shares the previous one's first `low` bytes.
    low: usize,
    /// The walked subtree's root.
    root: u32,
    /// The region of the compacted tree it last loaded (see `enter`).
    region: usize,
    /// The leaves walked ahead, in the order they are returned; those before
    /// `returned` have been.
    pending: Vec<Pending>,
    returned: usize,
    /// The pending leaves' tails, one after another.
    tails: Vec<u8>,
    /// How many leaves the next walk ahead reaches.
    ahead: usize,
    /// The key of the leaf returned last, unless `direct`.
    key: Vec<u8>,
    /// Whether it returns each leaf as the walk reaches it, its key in
    /// `path`: while the leaves lie in key order or the tree is small (see
    /// `advance`). Decided at its first step (`None` before), since no tree
    /// changes shape or size while a cursor walks it.
    direct: Option<bool>,
    /// Bytes of other trees walked at the same time (a sharded memtable's
    /// shards, merged): they compete for the cache, so the tree counts as
    /// that much larger when `direct` is decided.
    alongside: usize,
}

impl Cursor {
    /// A cursor over the subtree `root`, whose keys start with `base`, with
    /// the virtual frame at `pos`: 1 before the root, 2 after it.
    fn new(root: u32, base: &[u8], pos: u16) -> Cursor {
        let mut c = Cursor {
            stack: Vec::new(),
            path: base.to_vec(),
            low: 0,
            root,
            region: usize::MAX,
            pending: Vec::new(),
            returned: 0,
            tails: Vec::new(),
            ahead: FIRST_AHEAD,
            key: Vec::new(),
            direct: None,
            alongside: 0,
        };
        if root != 0 {
            c.stack.push(Frame {
                node: VIRTUAL,
                pos,
                key_len: base.len(),
            });
        }
        c
    }

    /// A cursor before the first leaf of the subtree `root`, whose keys start
    /// with `base`.
    pub(crate) fn front(root: u32, base: &[u8]) -> Cursor {
        Cursor::new(root, base, 1)
    }

    /// A cursor after the last leaf of the subtree `root`.
    pub(crate) fn back(root: u32, base: &[u8]) -> Cursor {
        Cursor::new(root, base, 2)
    }

    /// The key of the leaf last returned.
    #[inline]
    pub(crate) fn key(&self) -> &[u8] {
        if self.direct == Some(false) {
            &self.key
        } else {
            &self.path
        }
    }

    /// The next leaf in key order.
    #[inline]
    pub(crate) fn next<V>(&mut self, art: &RawArt<V>) -> Option<u32> {
        self.advance(art, true)
    }

    /// The previous leaf in key order.
    #[inline]
    pub(crate) fn prev<V>(&mut self, art: &RawArt<V>) -> Option<u32> {
        self.advance(art, false)
    }

    /// Returns the next pending leaf, walking ahead first if none is left.
    #[inline]
    fn advance<V>(&mut self, art: &RawArt<V>, forward: bool) -> Option<u32> {
        let direct = *self.direct.get_or_insert_with(|| {
            art.leaves_in_order()
                || (!cfg!(debug_assertions)
                    && art.memory_usage().saturating_add(self.alongside) < WALK_AHEAD_MIN_BYTES)
        });
        if direct {
            // Compacted leaves lie in key order and stream in without help:
            // walking ahead would only cost its copies (30 -> 25 M keys/s).
            // So would a small tree's, mostly in cache.
            return self.step_in_place(art, forward);
        }
        if self.returned == self.pending.len() {
            self.walk_ahead(art, forward);
        }
        let leaf = *self.pending.get(self.returned)?;
        let tail_start = match self.returned {
            0 => 0,
            i => self.pending[i - 1].tail_end,
        };
        self.returned += 1;
        self.key.truncate(leaf.keep);
        self.key
            .extend_from_slice(&self.tails[tail_start..leaf.tail_end]);
        self.key.extend_from_slice(art.leaf_suffix(leaf.leaf));
        Some(leaf.leaf)
    }

    /// Walks to the next leaf and returns it, its key in `path`.
    #[inline(always)]
    fn step_in_place<V>(&mut self, art: &RawArt<V>, forward: bool) -> Option<u32> {
        let leaf = self.step(art, forward)?;
        self.path.extend_from_slice(art.leaf_suffix(leaf));
        Some(leaf)
    }

    /// Walks to the next leaf in the cursor's direction.
    #[inline(always)]
    fn step<V>(&mut self, art: &RawArt<V>, forward: bool) -> Option<u32> {
        if forward {
            self.step_next(art)
        } else {
            self.step_prev(art)
        }
    }

    /// Walks on to the next `ahead` leaves (fewer at the end), records them
    /// as pending and prefetches them.
    ///
    /// It does most of a walk's work, but `advance` calls it once per up to
    /// 64 leaves: `#[cold]` keeps that call off the path of the other 63
    /// (`#[inline(never)]` instead: 13.6-14.1 against 14.3-14.7 M keys/s).
    #[cold]
    fn walk_ahead<V>(&mut self, art: &RawArt<V>, forward: bool) {
        self.pending.clear();
        self.tails.clear();
        self.returned = 0;
        for _ in 0..self.ahead {
            let Some(leaf) = self.step(art, forward) else {
                break;
            };
            art.prefetch_ref(leaf);
            self.tails.extend_from_slice(&self.path[self.low..]);
            self.pending.push(Pending {
                leaf,
                keep: self.low,
                tail_end: self.tails.len(),
            });
            self.low = self.path.len();
        }
        self.ahead = (self.ahead * 2).min(MAX_AHEAD);
    }

    /// Steps the walk into `slot` of the top frame: extends the path, and
    /// either returns the leaf found or pushes a frame for the node found.
    #[inline(always)]
    fn enter<V>(&mut self, art: &RawArt<V>, slot: Slot, forward: bool) -> Option<u32> {
        let base = self.stack.last().expect("a frame").key_len;
        self.low = self.low.min(base);
        self.path.truncate(base);
        if let Some(edge) = slot.edge {
            self.path.push(edge);
        }
        if is_leaf(slot.child) {
            return Some(slot.child);
        }
        if art.leaves_in_order() {
            // Untouched since compaction: its clusters are whole, so load each
            // region at once, as `get` does (compacted full Debian paths,
            // alternating runs: 2.5-6% faster). Once inserts have put nodes
            // outside them, the loads fetch unrelated lines (2-3% slower).
            art.enter_region(&mut self.region, slot.child);
        }
        let node = art.node(slot.child);
        art.prefetch_children(node);
        self.path.extend_from_slice(node.prefix());
        let pos = if forward { 0 } else { BACK_START };
        self.stack.push(Frame {
            node: slot.child,
            pos,
            key_len: self.path.len(),
        });
        None
    }

    /// Walks to the next leaf in key order.
    #[inline(always)]
    fn step_next<V>(&mut self, art: &RawArt<V>) -> Option<u32> {
        loop {
            let root = self.root;
            let top = self.stack.last_mut()?;
            match take_next(art, top, root) {
                None => {
                    self.stack.pop();
                }
                Some(slot) => {
                    if let Some(leaf) = self.enter(art, slot, true) {
                        return Some(leaf);
                    }
                }
            }
        }
    }

    /// Walks to the previous leaf in key order.
    #[inline(always)]
    fn step_prev<V>(&mut self, art: &RawArt<V>) -> Option<u32> {
        loop {
            let root = self.root;
            let top = self.stack.last_mut()?;
            let slot = if top.node == VIRTUAL {
                (top.pos >= 2).then_some(Slot {
                    pos: 1,
                    edge: None,
                    child: root,
                })
            } else if top.pos == 0 {
                None
            } else {
                art.node(top.node).prev_at(top.pos - 1)
            };
            match slot {
                None => {
                    self.stack.pop();
                }
                Some(slot) => {
                    top.pos = slot.pos;
                    if top.node != VIRTUAL && top.pos > 0 && !art.leaves_in_order() {
                        let after = art.node(top.node).prev_at(top.pos - 1);
                        prefetch_below(art, after);
                    }
                    if let Some(leaf) = self.enter(art, slot, false) {
                        return Some(leaf);
                    }
                }
            }
        }
    }

    /// Walks in place to the next leaf in key order that `guard` lets it
    /// reach, its key in `path` (see [`key`](Self::key)).
    ///
    /// The guard is asked about each inner node's key as the walk enters it
    /// and about each leaf's, so a dead end drops a whole subtree where it
    /// starts: an automaton search pays for the nodes it enters, not for a
    /// seek from the root per dead end. The walk does not run ahead, as a
    /// guarded one cannot know which leaves it will take.
    pub(crate) fn next_guarded<V, G: Guard>(
        &mut self,
        art: &RawArt<V>,
        guard: &mut G,
    ) -> Option<u32> {
        self.direct = Some(true);
        loop {
            let root = self.root;
            let top = self.stack.last_mut()?;
            let Some(slot) = take_next(art, top, root) else {
                self.stack.pop();
                continue;
            };
            self.path.truncate(top.key_len);
            self.path.extend(slot.edge);
            if is_leaf(slot.child) {
                self.path.extend_from_slice(art.leaf_suffix(slot.child));
                match guard.reach(&self.path) {
                    Reach::Out(len) => self.drop_under(len),
                    Reach::Below | Reach::Here => return Some(slot.child),
                }
                continue;
            }
            if art.leaves_in_order() {
                art.enter_region(&mut self.region, slot.child);
            }
            let node = art.node(slot.child);
            self.path.extend_from_slice(node.prefix());
            match guard.reach(&self.path) {
                Reach::Below => {
                    art.prefetch_children(node);
                    self.stack.push(Frame {
                        node: slot.child,
                        pos: 0,
                        key_len: self.path.len(),
                    });
                }
                // Only the node's own key: its terminal's (invariant 5: a
                // terminal's suffix is empty), if it has one.
                Reach::Here => match node.terminal() {
                    0 => {}
                    terminal => return Some(terminal),
                },
                Reach::Out(len) => self.drop_under(len),
            }
        }
    }

    /// Drops the frames whose remaining children all extend `path[..len]`:
    /// a guard has ruled out every key longer than that.
    fn drop_under(&mut self, len: usize) {
        while self.stack.last().is_some_and(|top| top.key_len >= len) {
            self.stack.pop();
        }
    }

    /// A forward cursor over the whole tree whose first leaf is the first key
    /// `>= bound`.
    pub(crate) fn seek_ge<V>(art: &RawArt<V>, bound: &[u8]) -> Cursor {
        let mut c = Cursor::front(art.root(), &[]);
        let mut r = art.root();
        let mut depth = 0;
        let mut edge = None;
        // Loop invariant: the top frame's position is that of `r`, and the key
        // spelled down to `r` equals `bound[..depth]`.
        while r != 0 {
            let rest = &bound[depth..];
            let top = c.stack.len() - 1;
            if is_leaf(r) {
                if art.leaf_suffix(r) < rest {
                    c.stack[top].pos += 1; // the leaf is below the bound: skip it
                }
                return c;
            }
            let node = art.node(r);
            let prefix = node.prefix();
            let m = prefix.len().min(rest.len());
            match prefix[..m].cmp(&rest[..m]) {
                std::cmp::Ordering::Less => {
                    c.stack[top].pos += 1; // the whole subtree is below
                    return c;
                }
                // Above the bound, or extending it: the whole subtree counts.
                std::cmp::Ordering::Greater => return c,
                std::cmp::Ordering::Equal if rest.len() <= prefix.len() => return c,
                std::cmp::Ordering::Equal => {}
            }
            // Descend: once `r` is done the top frame continues after it.
            c.stack[top].pos += 1;
            c.path.truncate(c.stack[top].key_len);
            c.path.extend(edge);
            c.path.extend_from_slice(prefix);
            depth += prefix.len();
            let byte = bound[depth];
            // The terminal is shorter than the bound; edges below `byte` are
            // below it too.
            c.stack.push(Frame {
                node: r,
                pos: node.position_of(byte),
                key_len: c.path.len(),
            });
            let child = node.find(byte);
            if child.is_null() {
                return c;
            }
            // SAFETY: `find` returned a child slot of the live node `r`.
            r = unsafe { read_ref(child) };
            edge = Some(byte);
            depth += 1;
        }
        c
    }

    /// A backward cursor over the whole tree whose first leaf is the last key
    /// `<= bound`.
    pub(crate) fn seek_le<V>(art: &RawArt<V>, bound: &[u8]) -> Cursor {
        let mut c = Cursor::back(art.root(), &[]);
        let mut r = art.root();
        let mut depth = 0;
        let mut edge = None;
        // Loop invariant: the top frame's (exclusive) position is just past
        // that of `r`, and the key spelled down to `r` equals `bound[..depth]`.
        while r != 0 {
            let rest = &bound[depth..];
            let top = c.stack.len() - 1;
            if is_leaf(r) {
                if art.leaf_suffix(r) > rest {
                    c.stack[top].pos -= 1; // the leaf is above the bound: skip it
                }
                return c;
            }
            let node = art.node(r);
            let prefix = node.prefix();
            let m = prefix.len().min(rest.len());
            match prefix[..m].cmp(&rest[..m]) {
                std::cmp::Ordering::Less => return c, // the whole subtree is below
                std::cmp::Ordering::Greater => {
                    c.stack[top].pos -= 1;
                    return c;
                }
                // Every key below extends the bound, so is above it.
                std::cmp::Ordering::Equal if rest.len() < prefix.len() => {
                    c.stack[top].pos -= 1;
                    return c;
                }
                std::cmp::Ordering::Equal => {}
            }
            c.stack[top].pos -= 1;
            c.path.truncate(c.stack[top].key_len);
            c.path.extend(edge);
            c.path.extend_from_slice(prefix);
            depth += prefix.len();
            if depth == bound.len() {
                // Only the terminal (equal to the bound) is not above it.
                c.stack.push(Frame {
                    node: r,
                    pos: 1,
                    key_len: c.path.len(),
                });
                return c;
            }
            let byte = bound[depth];
            let child = node.find(byte);
            let pos = node.position_of(byte) + u16::from(!child.is_null());
            c.stack.push(Frame {
                node: r,
                pos,
                key_len: c.path.len(),
            });
            if child.is_null() {
                return c;
            }
            // SAFETY: `find` returned a child slot of the live node `r`.
            r = unsafe { read_ref(child) };
            edge = Some(byte);
            depth += 1;
        }
        c
    }
}

/// A double-ended traversal of a subtree or a key range: two lazily started
/// cursors that stop when they meet or cross a bound.
#[derive(Clone, Debug)]
pub(crate) struct RawIter {
    front: Option<Cursor>,
    back: Option<Cursor>,
    root: u32,
    base: Vec<u8>,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    /// The leaves each end returned last (0: none yet). The ends have met
    /// when one is about to return the other's last leaf.
    last_front: u32,
    last_back: u32,
    done: bool,
    /// Passed to each end's cursor (see `Cursor::alongside`).
    alongside: usize,
}

impl RawIter {
    /// All of `art`.
    pub(crate) fn all<V>(art: &RawArt<V>) -> RawIter {
        RawIter::subtree(art.root(), Vec::new())
    }

    /// The subtree at `root`, whose keys all start with `base`.
    pub(crate) fn subtree(root: u32, base: Vec<u8>) -> RawIter {
        RawIter {
            front: None,
            back: None,
            root,
            base,
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
            last_front: 0,
            last_back: 0,
            done: root == 0,
            alongside: 0,
        }
    }

    /// Counts `bytes` of other trees, walked at the same time, with this
    /// one's size where that decides how to walk it.
    pub(crate) fn set_walked_alongside(&mut self, bytes: usize) {
        self.alongside = bytes;
    }

    /// The keys of `art` within the bounds. Inverted bounds give nothing.
    pub(crate) fn range<V>(
        art: &RawArt<V>,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
    ) -> RawIter {
        let empty = match (&lower, &upper) {
            (Bound::Included(a), Bound::Included(b)) => a > b,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                a >= b
            }
            _ => false,
        };
        let mut it = RawIter::all(art);
        it.done |= empty;
        it.lower = lower;
        it.upper = upper;
        it
    }

    /// The key of the entry `next` returned last.
    #[inline]
    pub(crate) fn front_key(&self) -> &[u8] {
        self.front.as_ref().map_or(&[], |c| c.key())
    }

    /// The key of the entry `next_back` returned last.
    #[inline]
    pub(crate) fn back_key(&self) -> &[u8] {
        self.back.as_ref().map_or(&[], |c| c.key())
    }

    /// The next leaf from the front.
    pub(crate) fn next<V>(&mut self, art: &RawArt<V>) -> Option<u32> {
        if self.done {
            return None;
        }
        let front = self.front.get_or_insert_with(|| {
            let mut c = match &self.lower {
                Bound::Unbounded => Cursor::front(self.root, &self.base),
                Bound::Included(k) | Bound::Excluded(k) => Cursor::seek_ge(art, k),
            };
            c.alongside = self.alongside;
            c
        });
        let mut leaf = front.next(art);
        // Only the first key can equal an excluded lower bound.
        if self.last_front == 0
            && let (Some(_), Bound::Excluded(k)) = (leaf, &self.lower)
            && front.key() == k.as_slice()
        {
            leaf = front.next(art);
        }
        let past_end = match &self.upper {
            Bound::Included(k) => front.key() > k.as_slice(),
            Bound::Excluded(k) => front.key() >= k.as_slice(),
            Bound::Unbounded => false,
        };
        match leaf {
            Some(leaf) if leaf != self.last_back && !past_end => {
                self.last_front = leaf;
                Some(leaf)
            }
            _ => {
                self.done = true;
                None
            }
        }
    }

    /// The next leaf from the back.
    pub(crate) fn next_back<V>(&mut self, art: &RawArt<V>) -> Option<u32> {
        if self.done {
            return None;
        }
        let back = self.back.get_or_insert_with(|| {
            let mut c = match &self.upper {
                Bound::Unbounded => Cursor::back(self.root, &self.base),
                Bound::Included(k) | Bound::Excluded(k) => Cursor::seek_le(art, k),
            };
            c.alongside = self.alongside;
            c
        });
        let mut leaf = back.prev(art);
        if self.last_back == 0
            && let (Some(_), Bound::Excluded(k)) = (leaf, &self.upper)
            && back.key() == k.as_slice()
        {
            leaf = back.prev(art);
        }
        let past_start = match &self.lower {
            Bound::Included(k) => back.key() < k.as_slice(),
            Bound::Excluded(k) => back.key() <= k.as_slice(),
            Bound::Unbounded => false,
        };
        match leaf {
            Some(leaf) if leaf != self.last_front && !past_start => {
                self.last_back = leaf;
                Some(leaf)
            }
            _ => {
                self.done = true;
                None
            }
        }
    }
}
