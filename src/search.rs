//! Automaton search over a map's keys in order.
//!
//! The walks of every map's layers ask a [`Pruner`] about each node's key
//! as they come to it. It runs the key through the automaton from where it
//! parts from the key before it (the states of their shared prefix are
//! kept), and a prefix after which the automaton cannot match leaves the
//! subtree under it unwalked. The answers are
//! the fst crate's streams' for the same automaton (tests compare them with
//! the crate's own): a key matches if its state does (after `accept_eof`,
//! except for the empty key), and `can_match` is asked of a state only on
//! the way to longer keys. One difference, for automata that break the
//! trait's contract: a state whose `will_always_match` is true is trusted,
//! and the keys under it match unasked; the crate's streams never ask it.

use std::panic::{RefUnwindSafe, UnwindSafe};

use fst::Automaton;

use crate::keys::common_prefix;

/// The automaton and its states along the key fed last.
pub(crate) struct Pruner<A: Automaton> {
    automaton: A,
    /// `states[i]` is the state after the first `i` bytes of `key`:
    /// `states.len() == key.len() + 1`.
    states: Vec<A::State>,
    /// The part fed of the key fed last: all of it, but for the bytes after
    /// a dead end ([`Reach::Out`]) or after `always`.
    key: Vec<u8>,
    /// Whether the automaton will match whatever follows `key` (its
    /// `will_always_match`): keys that start with it then match without
    /// being fed.
    always: bool,
}

impl<A: Automaton> Pruner<A> {
    pub(crate) fn new(automaton: A) -> Self {
        let start = automaton.start();
        let always = automaton.will_always_match(&start);
        Pruner {
            automaton,
            states: vec![start],
            key: Vec::new(),
            always,
        }
    }

    /// Feeds `key` to the automaton from where it parts from the key fed
    /// before it, and says whether a walk may yield it
    /// ([`matches`](Self::matches) then says if it does) and go below it.
    /// Keys may come in any order (the walks of a hybrid map's layers take
    /// turns); in key order, each costs only the bytes it does not share.
    pub(crate) fn reach(&mut self, key: &[u8]) -> Reach {
        if self.always {
            if key.starts_with(&self.key) {
                // Under a prefix that matches whatever follows (a prefix
                // query's range): nothing to feed, nor to copy.
                return Reach::Below;
            }
            self.always = false;
        }
        let shared = common_prefix(&self.key, key);
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
            // Both calls before either push: an automaton that panics
            // leaves `key` and `states` in step.
            let state = self.automaton.accept(&self.states[at], byte);
            let always = self.automaton.will_always_match(&state);
            self.key.push(byte);
            self.states.push(state);
            if always {
                self.always = true;
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
        if self.always {
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

/// A [`Pruner`] whose automaton's type is erased, so that searches over
/// different automata can stand side by side (the frozen layer's set
/// operations). Its supertraits are the auto traits the operations had
/// before they held one.
pub(crate) trait AnyPruner: Send + Sync + UnwindSafe + RefUnwindSafe {
    fn reach(&mut self, key: &[u8]) -> Reach;
    fn matches(&self) -> bool;
    fn clone_box<'s>(&self) -> Box<dyn AnyPruner + 's>
    where
        Self: 's;
}

impl<A> AnyPruner for Pruner<A>
where
    A: Automaton + Clone + Send + Sync + UnwindSafe + RefUnwindSafe,
    A::State: Send + Sync + UnwindSafe + RefUnwindSafe,
{
    fn reach(&mut self, key: &[u8]) -> Reach {
        Pruner::reach(self, key)
    }

    fn matches(&self) -> bool {
        Pruner::matches(self)
    }

    /// A pruner of the same automaton that starts afresh: the states are
    /// only a cache of those along the key fed last (the fst crate's
    /// combined automata cannot clone theirs), and any key may come next.
    fn clone_box<'s>(&self) -> Box<dyn AnyPruner + 's>
    where
        Self: 's,
    {
        Box::new(Pruner::new(self.automaton.clone()))
    }
}

impl Guard for dyn AnyPruner + '_ {
    const PRUNES: bool = true;

    #[inline]
    fn reach(&mut self, key: &[u8]) -> Reach {
        AnyPruner::reach(self, key)
    }

    #[inline]
    fn matches(&self) -> bool {
        AnyPruner::matches(self)
    }
}

/// What a walk may reach: asked of each node's key as the walk comes to
/// it, before it yields the key or goes below it.
pub(crate) trait Guard {
    /// Whether it ever answers anything but [`Reach::Below`] or rejects a
    /// key: walks that read several layers take their plain path when not.
    const PRUNES: bool;

    fn reach(&mut self, key: &[u8]) -> Reach;

    /// Whether the key [`reach`](Self::reach) took last, and let through,
    /// is one to yield.
    fn matches(&self) -> bool;
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

/// Reaches and yields everything: a plain walk.
pub(crate) struct Unguarded;

impl Guard for Unguarded {
    const PRUNES: bool = false;

    #[inline(always)]
    fn reach(&mut self, _: &[u8]) -> Reach {
        Reach::Below
    }

    #[inline(always)]
    fn matches(&self) -> bool {
        true
    }
}

/// The walks ask the automaton about each node they reach.
impl<A: Automaton> Guard for Pruner<A> {
    const PRUNES: bool = true;

    #[inline]
    fn reach(&mut self, key: &[u8]) -> Reach {
        Pruner::reach(self, key)
    }

    #[inline]
    fn matches(&self) -> bool {
        Pruner::matches(self)
    }
}
