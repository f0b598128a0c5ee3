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
    /// Whether every key from each state on is accepted.
    always: Vec<bool>,
    /// Whether `can_match` and `will_always_match` say all they can (or
    /// only "not dead" and never).
    exact: bool,
    /// An automaton that breaks the trait's contract, as a user's may:
    /// `can_match` false on states that go on to match (per state), and
    /// `accept_eof` to another state (per state). Searches must still give
    /// the fst crate's streams' answers.
    lawless: Option<(Vec<bool>, Vec<Option<usize>>)>,
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

/// Whether a search with `automaton` yields `key`, by the fst crate's
/// streams' rules: `can_match` is asked of each state on the way down (not
/// of the key's own), and a key's state goes through `accept_eof` before
/// `is_match`, but for the empty key's.
pub(crate) fn accepts<A: Automaton>(automaton: &A, key: &[u8]) -> bool {
    let mut state = automaton.start();
    for &byte in key {
        if !automaton.can_match(&state) {
            return false;
        }
        state = automaton.accept(&state, byte);
    }
    // The fst crate's streams ask the empty key's state as it is.
    match automaton.accept_eof(&state).filter(|_| !key.is_empty()) {
        Some(end) => automaton.is_match(&end),
        None => automaton.is_match(&state),
    }
}

impl Dfa {
    fn new(
        next: Vec<[Option<usize>; CLASSES]>,
        accepting: Vec<bool>,
        exact: bool,
        lawless: Option<(Vec<bool>, Vec<Option<usize>>)>,
    ) -> Self {
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
        // States from which every byte leads to a state of the set, all
        // accepting: start from the accepting ones, drop any that can leave.
        let mut always = accepting.clone();
        loop {
            let mut changed = false;
            for state in 0..next.len() {
                let stays = next[state].iter().all(|to| to.is_some_and(|to| always[to]));
                if always[state] && !stays {
                    always[state] = false;
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
            always,
            exact,
            lawless,
        }
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
        match &self.lawless {
            Some((can, _)) => state.is_some_and(|s| can[s]),
            None => state.is_some_and(|s| !self.exact || self.live[s]),
        }
    }

    fn will_always_match(&self, state: &Option<usize>) -> bool {
        self.lawless.is_none() && state.is_some_and(|s| self.exact && self.always[s])
    }

    fn accept_eof(&self, state: &Option<usize>) -> Option<Option<usize>> {
        let (_, eof) = self.lawless.as_ref()?;
        state.and_then(|s| eof[s]).map(Some)
    }

    fn accept(&self, state: &Option<usize>, byte: u8) -> Option<usize> {
        state.and_then(|s| self.next[s][class(byte)])
    }
}

/// Automata of one to five states; about a third of the transitions dead,
/// in one automaton of three the last state an accepting sink, from which
/// every key is accepted (`will_always_match`), and one in four lawless.
pub(crate) fn dfa() -> impl Strategy<Value = Dfa> {
    (1usize..6).prop_flat_map(|states| {
        let row =
            prop::array::uniform6(prop_oneof![1 => Just(None), 2 => (0..states).prop_map(Some)]);
        (
            prop::collection::vec(row, states),
            prop::collection::vec(any::<bool>(), states),
            any::<bool>(),
            prop::bool::weighted(1.0 / 3.0),
            prop::option::weighted(
                0.25,
                (
                    prop::collection::vec(prop::bool::weighted(0.8), states),
                    prop::collection::vec(prop::option::of(0..states), states),
                ),
            ),
        )
            .prop_map(|(mut next, mut accepting, exact, sink, lawless)| {
                if sink {
                    let last = next.len() - 1;
                    next[last] = [Some(last); CLASSES];
                    accepting[last] = true;
                }
                Dfa::new(next, accepting, exact, lawless)
            })
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

/// An automaton for a search test: a random one, a prefix of a stored key
/// (a prefix query, whose states all match from the prefix on), or the two
/// combined, so that keys move in and out of prefixes that match whatever
/// follows.
#[derive(Clone, Debug)]
pub(crate) enum Query {
    Dfa(Dfa),
    Prefix(Vec<u8>),
    Union(Dfa, Vec<u8>),
    Intersection(Dfa, Vec<u8>),
}

impl Query {
    /// The query over `keys` (stored keys, for the prefixes), from the
    /// picks a strategy drew.
    pub(crate) fn new(
        kind: u8,
        dfa: Dfa,
        keys: &[Vec<u8>],
        pick: prop::sample::Index,
        cut: usize,
    ) -> Self {
        let prefix = match keys.is_empty() {
            true => Vec::new(),
            false => {
                let key = pick.get(keys);
                key[..cut.min(key.len())].to_vec()
            }
        };
        match kind % 4 {
            0 => Query::Dfa(dfa),
            1 => Query::Prefix(prefix),
            2 => Query::Union(dfa, prefix),
            _ => Query::Intersection(dfa, prefix),
        }
    }
}

/// The keys that start with some bytes, as the fst crate's
/// `Str::starts_with` for any bytes: its states past the prefix match
/// whatever follows.
#[derive(Clone, Debug)]
pub(crate) struct StartsWith(pub(crate) Vec<u8>);

impl Automaton for StartsWith {
    /// How many bytes of the prefix matched so far; `None` once one did not.
    type State = Option<usize>;

    fn start(&self) -> Option<usize> {
        Some(0)
    }

    fn is_match(&self, state: &Option<usize>) -> bool {
        *state == Some(self.0.len())
    }

    fn can_match(&self, state: &Option<usize>) -> bool {
        state.is_some()
    }

    fn will_always_match(&self, state: &Option<usize>) -> bool {
        self.is_match(state)
    }

    fn accept(&self, state: &Option<usize>, byte: u8) -> Option<usize> {
        match *state {
            Some(done) if done == self.0.len() => Some(done),
            Some(at) if self.0[at] == byte => Some(at + 1),
            _ => None,
        }
    }
}

/// Runs `$search` with the query's automaton (each a different type).
macro_rules! with_query {
    ($query:expr, $search:expr) => {{
        use memkv::frozen::automaton::Automaton;
        match $query {
            dfa::Query::Dfa(dfa) => $search(dfa.clone()),
            dfa::Query::Prefix(prefix) => $search(dfa::StartsWith(prefix.clone())),
            dfa::Query::Union(dfa, prefix) => {
                $search(dfa.clone().union(dfa::StartsWith(prefix.clone())))
            }
            dfa::Query::Intersection(dfa, prefix) => {
                $search(dfa.clone().intersection(dfa::StartsWith(prefix.clone())))
            }
        }
    }};
}
pub(crate) use with_query;
