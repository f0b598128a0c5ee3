//! Automaton search over a map's keys in order, for the maps whose walks
//! can skip ahead.
//!
//! Each key is run through the automaton from where it parts from the key
//! before it (the states of their shared prefix are kept), and a prefix
//! after which the automaton cannot match sends the iterator past every
//! longer key that starts with it: in one seek (`HybridMap`), or by leaving
//! the subtree under it unwalked (`FastArt`, `FrozenLayer`). The answers are
//! the fst crate's streams' for the same automaton (tests compare them with
//! the crate's own): a key matches if its state does (after `accept_eof`,
//! except for the empty key), and `can_match` is asked of a state only on
//! the way to longer keys. One difference, for automata that break the
//! trait's contract: a state whose `will_always_match` is true is trusted,
//! and the keys under it match unasked; the crate's streams never ask it.

use fst::Automaton;

use crate::keys::{common_prefix, prefix_successor};

/// What a key is to the automaton.
pub(crate) enum Verdict {
    /// The automaton accepts it.
    Match,
    /// It does not, but keys that extend it may.
    Miss,
    /// No key longer than the part of it [`Pruner::key`] now holds and
    /// starting with it can match: skip them.
    SkipUnder,
}

/// The automaton and its states along the key judged last.
pub(crate) struct Pruner<A: Automaton> {
    automaton: A,
    /// `states[i]` is the state after the first `i` bytes of `key`:
    /// `states.len() == key.len() + 1`, unless `always` stopped them short.
    states: Vec<A::State>,
    /// The key judged last; after a skip, the part of it the states cover.
    key: Vec<u8>,
    /// The length of the shortest prefix of `key` after which the automaton
    /// will match whatever follows (its `will_always_match`), if there is
    /// one: keys that share it match without being fed (`states` then stop
    /// there).
    always: Option<usize>,
}

impl<A: Automaton> Pruner<A> {
    pub(crate) fn new(automaton: A) -> Self {
        let start = automaton.start();
        let always = automaton.will_always_match(&start).then_some(0);
        Pruner {
            automaton,
            states: vec![start],
            key: Vec::new(),
            always,
        }
    }

    /// The key judged last, whole after a [`Verdict::Match`] or
    /// [`Verdict::Miss`]; after a [`Verdict::SkipUnder`], the prefix whose
    /// longer keys are out.
    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }

    /// Where a search that seeks goes on after a [`Verdict::SkipUnder`]:
    /// the first key after those under the prefix (`None`: there is none).
    pub(crate) fn past_skipped(&self) -> Option<Vec<u8>> {
        prefix_successor(&self.key)
    }

    /// Judges `key`, which comes after the key judged before it.
    pub(crate) fn judge(&mut self, key: &[u8]) -> Verdict {
        match self.reach(key) {
            Reach::Out(_) => Verdict::SkipUnder,
            Reach::Below | Reach::Here if self.matches() => Verdict::Match,
            Reach::Below | Reach::Here => Verdict::Miss,
        }
    }

    /// Feeds `key`, which comes after the key fed before it, to the
    /// automaton from where the two part, and says whether a walk may yield
    /// it ([`matches`](Self::matches) then says if it does) and go below
    /// it.
    pub(crate) fn reach(&mut self, key: &[u8]) -> Reach {
        let shared = common_prefix(&self.key, key);
        if let Some(always) = self.always {
            if shared >= always {
                // Under a prefix that matches whatever follows (a prefix
                // query's range): nothing to feed.
                self.key.truncate(shared);
                self.key.extend_from_slice(&key[shared..]);
                return Reach::Below;
            }
            self.always = None;
        }
        // Where `always` stopped the states, this key parts before it.
        debug_assert!(shared < self.states.len());
        self.key.truncate(shared);
        self.states.truncate(shared + 1);
        for (at, &byte) in key.iter().enumerate().skip(shared) {
            // Checked on the way down from a state, as the fst crate's
            // streams check it: the keys under `key[..at]` are out, not
            // `key[..at]` itself, which was judged before.
            if !self.automaton.can_match(&self.states[at]) {
                return Reach::Out(at);
            }
            let state = self.automaton.accept(&self.states[at], byte);
            self.key.push(byte);
            let always = self.automaton.will_always_match(&state);
            self.states.push(state);
            if always {
                self.always = Some(at + 1);
                self.key.extend_from_slice(&key[at + 1..]);
                return Reach::Below;
            }
        }
        match self.automaton.can_match(&self.states[key.len()]) {
            true => Reach::Below,
            false => Reach::Here,
        }
    }

    /// Whether the automaton accepts the key [`reach`](Self::reach) took
    /// last and let through.
    pub(crate) fn matches(&self) -> bool {
        if self.always.is_some() {
            return true;
        }
        let last = &self.states[self.key.len()];
        // The fst crate's streams ask the empty key's state without
        // `accept_eof`, and the searches answer as they do.
        let end = if self.key.is_empty() {
            None
        } else {
            self.automaton.accept_eof(last)
        };
        self.automaton.is_match(end.as_ref().unwrap_or(last))
    }
}

/// What a walk may reach: asked of each node's key as the walk comes to
/// it, before it yields the key or goes below it.
pub(crate) trait Guard {
    fn reach(&mut self, key: &[u8]) -> Reach;
}

/// A [`Guard`]'s answer.
pub(crate) enum Reach {
    /// The key, and the keys below it.
    Below,
    /// The key, not those below it.
    Here,
    /// No key longer than the first `n` bytes of this one (`n` < its
    /// length) that starts with them: this node and its subtree are out.
    Out(usize),
}

/// The frozen layer's and FastArt's walks ask the automaton about each
/// node they reach.
impl<A: Automaton> Guard for Pruner<A> {
    #[inline]
    fn reach(&mut self, key: &[u8]) -> Reach {
        Pruner::reach(self, key)
    }
}
