//! A random automaton over bytes, for the model tests of `search`: random
//! transitions between a few states over classes of bytes that a trie's
//! keys stress (0x00, 0xFF, a small alphabet, the rest), a random set of
//! accepting states, and `can_match` either exact (no accepting state
//! reachable: the search skips the keys below) or only "not dead".
//!
//! Included with `#[path = "common/dfa.rs"] mod dfa;` by the tests that use
//! it.

use memkv::frozen::automaton::Automaton;
use proptest::prelude::*;

const CLASSES: usize = 6;

#[derive(Clone, Debug)]
pub(crate) struct Dfa {
    /// `next[state][class]`, `None` for the dead state.
    next: Vec<[Option<usize>; CLASSES]>,
    accepting: Vec<bool>,
    /// Whether an accepting state can be reached from each state.
    live: Vec<bool>,
    exact: bool,
}

fn class(byte: u8) -> usize {
    match byte {
        0x00 => 0,
        0xFF => 1,
        b'a' => 2,
        b'b' => 3,
        _ => 4 + usize::from(byte % 2),
    }
}

impl Dfa {
    fn new(next: Vec<[Option<usize>; CLASSES]>, accepting: Vec<bool>, exact: bool) -> Self {
        let mut live = accepting.clone();
        loop {
            let mut changed = false;
            for state in 0..next.len() {
                if !live[state] && next[state].iter().flatten().any(|&to| live[to]) {
                    live[state] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        Dfa {
            next,
            accepting,
            live,
            exact,
        }
    }

    /// Whether the automaton accepts `key`, byte by byte.
    pub(crate) fn accepts(&self, key: &[u8]) -> bool {
        let mut state = Some(0);
        for &byte in key {
            state = state.and_then(|s| self.next[s][class(byte)]);
        }
        state.is_some_and(|s| self.accepting[s])
    }
}

impl Automaton for Dfa {
    type State = Option<usize>;

    fn start(&self) -> Option<usize> {
        Some(0)
    }

    fn is_match(&self, state: &Option<usize>) -> bool {
        state.is_some_and(|s| self.accepting[s])
    }

    fn can_match(&self, state: &Option<usize>) -> bool {
        state.is_some_and(|s| !self.exact || self.live[s])
    }

    fn accept(&self, state: &Option<usize>, byte: u8) -> Option<usize> {
        state.and_then(|s| self.next[s][class(byte)])
    }
}

/// Automata of one to five states; about a third of the transitions dead.
pub(crate) fn dfa() -> impl Strategy<Value = Dfa> {
    (1usize..6).prop_flat_map(|states| {
        let row =
            prop::array::uniform6(prop_oneof![1 => Just(None), 2 => (0..states).prop_map(Some)]);
        (
            prop::collection::vec(row, states),
            prop::collection::vec(any::<bool>(), states),
            any::<bool>(),
        )
            .prop_map(|(next, accepting, exact)| Dfa::new(next, accepting, exact))
    })
}

/// An automaton that counts the bytes fed to it: how much of a map a search
/// reads.
pub(crate) struct Counting<'c, A> {
    pub(crate) inner: A,
    pub(crate) bytes: &'c std::cell::Cell<usize>,
}

impl<A: Automaton> Automaton for Counting<'_, A> {
    type State = A::State;

    fn start(&self) -> A::State {
        self.inner.start()
    }

    fn is_match(&self, state: &A::State) -> bool {
        self.inner.is_match(state)
    }

    fn can_match(&self, state: &A::State) -> bool {
        self.inner.can_match(state)
    }

    fn accept(&self, state: &A::State, byte: u8) -> A::State {
        self.bytes.set(self.bytes.get() + 1);
        self.inner.accept(state, byte)
    }
}
