//! Automaton search over a map's keys in order, for the maps that walk
//! their keys through an iterator that can skip ahead (`FastArt`,
//! `HybridMap`); the frozen layer walks its fst with the automaton instead.
//!
//! Each key is run through the automaton from where it parts from the key
//! before it (the states of their shared prefix are kept), and a prefix
//! after which the automaton cannot match sends the iterator past every
//! key that starts with it, in one seek. The answers are the fst crate's
//! streams' for the same automaton (tests compare them with the frozen
//! layer's): a key matches if its state does (after `accept_eof`, except
//! for the empty key), and `can_match` is asked of a state only on the way
//! to longer keys.

use fst::Automaton;

use crate::keys::{common_prefix, prefix_successor};

/// What a key is to the automaton.
pub(crate) enum Verdict {
    /// The automaton accepts it.
    Match,
    /// It does not, but keys that extend it may.
    Miss,
    /// None of the keys that start as it does up to some byte can match:
    /// go on at this key, the first after them (`None`: no key is).
    SkipTo(Option<Vec<u8>>),
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
    /// [`Verdict::Miss`].
    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }

    /// Judges `key`, which comes after the key judged before it.
    pub(crate) fn judge(&mut self, key: &[u8]) -> Verdict {
        let shared = common_prefix(&self.key, key);
        if let Some(always) = self.always {
            if shared >= always {
                // Under a prefix that matches whatever follows (a prefix
                // query's range): nothing to feed.
                self.key.truncate(shared);
                self.key.extend_from_slice(&key[shared..]);
                return Verdict::Match;
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
                return Verdict::SkipTo(prefix_successor(&key[..at]));
            }
            let state = self.automaton.accept(&self.states[at], byte);
            self.key.push(byte);
            let always = self.automaton.will_always_match(&state);
            self.states.push(state);
            if always {
                self.always = Some(at + 1);
                self.key.extend_from_slice(&key[at + 1..]);
                return Verdict::Match;
            }
        }
        let last = &self.states[key.len()];
        // The fst crate's streams ask the empty key's state without
        // `accept_eof`; the frozen layer's search is such a stream.
        let end = if key.is_empty() {
            None
        } else {
            self.automaton.accept_eof(last)
        };
        let matched = self.automaton.is_match(end.as_ref().unwrap_or(last));
        match matched {
            true => Verdict::Match,
            false => Verdict::Miss,
        }
    }
}

impl<A: Automaton + Clone> Clone for Pruner<A>
where
    A::State: Clone,
{
    fn clone(&self) -> Self {
        Pruner {
            automaton: self.automaton.clone(),
            states: self.states.clone(),
            key: self.key.clone(),
            always: self.always,
        }
    }
}
