//! Automaton search over a map's keys in order, for the maps that walk
//! their keys through an iterator that can skip ahead (`FastArt`,
//! `HybridMap`); the frozen layer walks its fst with the automaton instead.
//!
//! Each key is run through the automaton from where it parts from the key
//! before it (the states of their shared prefix are kept), and a prefix
//! after which the automaton cannot match sends the iterator past every
//! key that starts with it, in one seek.

use fst::Automaton;

use crate::keys::prefix_successor;

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
    /// `states[i]` is the state after the first `i` bytes of `key`, each of
    /// which can still match: `states.len() == key.len() + 1`.
    states: Vec<A::State>,
    /// The key judged last; after a skip, the part of it the states cover.
    key: Vec<u8>,
}

impl<A: Automaton> Pruner<A> {
    pub(crate) fn new(automaton: A) -> Self {
        let start = automaton.start();
        Pruner {
            automaton,
            states: vec![start],
            key: Vec::new(),
        }
    }

    /// Whether no key at all can match.
    pub(crate) fn hopeless(&self) -> bool {
        !self.automaton.can_match(&self.states[0])
    }

    /// The key judged last, whole after a [`Verdict::Match`] or
    /// [`Verdict::Miss`].
    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }

    /// Judges `key`, which comes after the key judged before it.
    pub(crate) fn judge(&mut self, key: &[u8]) -> Verdict {
        let shared = (self.key.iter().zip(key))
            .take_while(|(a, b)| a == b)
            .count();
        self.key.truncate(shared);
        self.states.truncate(shared + 1);
        for (at, &byte) in key.iter().enumerate().skip(shared) {
            let state = self.automaton.accept(&self.states[at], byte);
            if !self.automaton.can_match(&state) {
                return Verdict::SkipTo(prefix_successor(&key[..=at]));
            }
            self.key.push(byte);
            self.states.push(state);
        }
        match self.automaton.is_match(&self.states[key.len()]) {
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
        }
    }
}
