//! The structures under test, each behind the small [`Structure`] adapter.
//!
//! Adding one takes a file here with an adapter, and a line in
//! [`REGISTRY`]. Where its insert answers whether a key was there, the
//! build passes each answer to [`BuildInput::inserted`], and
//! [`Structure::replace`] lets the harness check the answer to a
//! replacement too.

use std::cell::{Cell, RefCell};

use crate::dataset::Keys;
use crate::measure;
use crate::record::Record;

mod art_tree;
mod blart;
mod btreemap;
mod fastart;
mod frozen;
mod fst;
mod hashbrown;
mod hybrid;
mod rart;
mod selftest;
mod skipmap;
mod subms;
mod vart;

/// In which order a structure receives the keys when it is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BuildOrder {
    /// One insert per key, in the order of the dataset.
    Dataset,
    /// A bulk build from keys sorted bytewise (the fst-style structures,
    /// which can only be built that way). The sort is done by the harness
    /// beforehand and is not part of the timed build.
    Sorted,
}

/// What a build gets.
#[derive(Debug)]
pub(crate) struct BuildInput<'a> {
    /// All keys, in dataset order.
    pub(crate) keys: &'a Keys,
    /// `values[i]` is key `i`'s value.
    pub(crate) values: &'a [u64],
    /// Indices into `keys` in the order to insert them (see [`BuildOrder`]).
    pub(crate) order: &'a [u32],
    /// Whether some key holds a zero byte.
    pub(crate) any_nul: bool,
    /// What the build's inserts answered, where the structure's insert
    /// answers at all (see [`BuildInput::inserted`]).
    pub(crate) answers: InsertAnswers,
}

impl BuildInput<'_> {
    /// The keys and values in build order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&[u8], u64)> + '_ {
        self.order
            .iter()
            .map(|&i| (self.keys.get(i as usize), self.values[i as usize]))
    }

    /// Records an insert's answer to whether `key` was new. The keys are
    /// distinct, so every answer must say it was: a map that believes it
    /// replaced a value has lost track of its keys, even if every later
    /// read agrees with the dataset.
    #[inline]
    pub(crate) fn inserted(&self, key: &[u8], was_new: bool) {
        self.answers.checked.set(self.answers.checked.get() + 1);
        if !was_new {
            self.answers.said_present(key);
        }
    }
}

/// The inserts' answers a build recorded through [`BuildInput::inserted`].
#[derive(Debug, Default)]
pub(crate) struct InsertAnswers {
    /// Answers recorded.
    pub(crate) checked: Cell<u64>,
    /// Of those, how many said the key was already there.
    pub(crate) wrong: Cell<u64>,
    /// The first key so answered.
    pub(crate) first_wrong: RefCell<Option<Vec<u8>>>,
}

impl InsertAnswers {
    #[cold]
    pub(crate) fn said_present(&self, key: &[u8]) {
        self.wrong.set(self.wrong.get() + 1);
        self.first_wrong
            .borrow_mut()
            .get_or_insert_with(|| key.to_vec());
    }
}

/// One structure, as the harness drives it: built once, then read.
///
/// The iteration methods hand each entry to a callback instead of returning
/// an iterator, so that every adapter can use its structure's fastest
/// non-allocating way (a lending iterator, a visitor, a stream) behind one
/// signature; they are generic, so the callback is inlined.
pub(crate) trait Structure: Sized {
    /// How [`Structure::build`] receives the keys.
    const BUILD_ORDER: BuildOrder = BuildOrder::Dataset;
    /// Whether the structure keeps keys in order (iteration and scans are
    /// measured only then; the methods below are never called otherwise).
    const ORDERED: bool = true;

    /// Builds the structure from `input.entries()`. An error (e.g. a key the
    /// structure rejects) is reported in the structure's row.
    fn build(input: &BuildInput<'_>) -> Result<Self, String>;

    /// The value of `key`.
    fn get(&self, key: &[u8]) -> Option<u64>;

    /// Whether the structure has a batched lookup of its own
    /// ([`Structure::get_batch`]); it is measured only then.
    const BATCHED: bool = false;

    /// The values of `keys`, in order, into `out` (cleared first), by the
    /// structure's batched lookup.
    fn get_batch(&self, keys: &[&[u8]], out: &mut Vec<Option<u64>>) {
        out.clear();
        out.extend(keys.iter().map(|key| self.get(key)));
    }

    /// Whether the structure has a batched insert of its own
    /// ([`Structure::build_batched`]); it is measured only then.
    const BATCHED_BUILD: bool = false;

    /// Builds as [`Structure::build`] does, through the structure's batched
    /// insert (for FastArt, `Extend`). Always given the keys in dataset order.
    fn build_batched(input: &BuildInput<'_>) -> Result<Self, String> {
        Self::build(input)
    }

    /// Whether the structure can set a key's value after its build and
    /// answer with the value it replaced ([`Structure::replace`]); checked
    /// only then.
    const REPLACES: bool = false;

    /// Sets `key`, which the map holds, to `value`, by the structure's
    /// insert: the value replaced, as the insert answers.
    fn replace(&mut self, _key: &[u8], _value: u64) -> Option<u64> {
        None
    }

    /// Calls `f` on every entry in key order.
    fn for_each(&self, f: impl FnMut(&[u8], u64));

    /// Calls `f` on every entry whose key starts with `prefix`, in key order.
    fn prefix(&self, prefix: &[u8], f: impl FnMut(&[u8], u64));

    /// Calls `f` on every entry with `start <= key < end`, in key order.
    fn range(&self, start: &[u8], end: &[u8], f: impl FnMut(&[u8], u64));

    /// The structure's own account of its memory, where it gives one.
    fn memory_usage(&self) -> Option<usize> {
        None
    }

    /// The structure's own count of its entries, where it keeps one:
    /// checked against the keys inserted.
    fn len(&self) -> Option<usize> {
        None
    }

    /// Facts a reader needs to interpret the row (how keys were encoded,
    /// what an operation costs beyond the structure itself).
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A structure the harness knows, by its command-line name.
#[derive(Debug)]
pub(crate) struct Entry {
    /// Name on the command line and in the output.
    pub(crate) name: &'static str,
    /// One line for `--list`.
    pub(crate) about: &'static str,
    /// Whether it is measured when `--structures` is not given.
    pub(crate) default: bool,
    /// Whether it is left out of `--list` (the harness's own test doubles).
    pub(crate) hidden: bool,
    /// Whether it is memkv's own (or a test double standing in for one):
    /// its wrong answers and errors fail the run, where a peer's are
    /// findings to report.
    pub(crate) ours: bool,
    /// Measures it (in a child process) into a record.
    pub(crate) run: fn(&measure::Prepared, &mut Record),
}

/// Every structure, in output order.
pub(crate) const REGISTRY: &[Entry] = &[
    Entry {
        name: "fastart",
        about: "memkv::FastArt<u64>, memkv's adaptive radix tree (compacting itself as it doubles)",
        default: true,
        ours: true,
        hidden: false,
        run: measure::run::<fastart::FastArtMap<{ fastart::mode::DEFAULT }>>,
    },
    Entry {
        name: "fastart-compact",
        about: "memkv::FastArt<u64> with compact() after the inserts (counted in the insert time)",
        default: true,
        ours: true,
        hidden: false,
        run: measure::run::<fastart::FastArtMap<{ fastart::mode::COMPACT }>>,
    },
    Entry {
        name: "fastart-noauto",
        about: "memkv::FastArt<u64> with automatic compaction off (the layout random inserts leave)",
        default: false,
        ours: true,
        hidden: false,
        run: measure::run::<fastart::FastArtMap<{ fastart::mode::NO_AUTO }>>,
    },
    Entry {
        name: "frozen",
        about: "memkv::FrozenLayer<u64>, memkv's fst-backed immutable layer",
        default: true,
        ours: true,
        hidden: false,
        run: measure::run::<frozen::Frozen>,
    },
    Entry {
        name: "hybrid",
        about: "memkv::HybridMap<u64>, FastArt deltas over a FrozenLayer base",
        default: true,
        ours: true,
        hidden: false,
        run: measure::run::<hybrid::Hybrid>,
    },
    Entry {
        name: "btreemap",
        about: "std BTreeMap<Box<[u8]>, u64> (the baseline of the ratios)",
        default: true,
        ours: false,
        hidden: false,
        run: measure::run::<btreemap::BTree>,
    },
    Entry {
        name: "hashbrown",
        about: "hashbrown::HashMap<Box<[u8]>, u64> (unordered: lookups only)",
        default: true,
        ours: false,
        hidden: false,
        run: measure::run::<hashbrown::Hash>,
    },
    Entry {
        name: "skipmap",
        about: "crossbeam_skiplist::SkipMap<Box<[u8]>, u64>",
        default: true,
        ours: false,
        hidden: false,
        run: measure::run::<skipmap::Skip>,
    },
    Entry {
        name: "fst",
        about: "bare fst::Map built from sorted keys",
        default: true,
        ours: false,
        hidden: false,
        run: measure::run::<fst::FstMap>,
    },
    Entry {
        name: "art-tree",
        about: "art-tree 0.2 Art<ByteString, u64>",
        default: true,
        ours: false,
        hidden: false,
        run: measure::run::<art_tree::ArtTree>,
    },
    Entry {
        name: "blart",
        about: "blart 0.6 TreeMap (keys as NUL-terminated CStr when they allow it)",
        default: true,
        ours: false,
        hidden: false,
        run: measure::run::<blart::Blart>,
    },
    Entry {
        name: "rart",
        about: "rart 0.11 AdaptiveRadixTree<VectorKey, u64>",
        default: true,
        ours: false,
        hidden: false,
        run: measure::run::<rart::Rart>,
    },
    Entry {
        name: "vart",
        about: "vart 0.11 Tree<VariableSizeKey, u64> (versioned, persistent)",
        default: true,
        ours: false,
        hidden: false,
        run: measure::run::<vart::Vart>,
    },
    Entry {
        name: "subms-art",
        about: "subms-adaptive-radix-tree 0.10 Art<u64> (range-scan feature)",
        default: true,
        ours: false,
        hidden: false,
        run: measure::run::<subms::Subms>,
    },
    Entry {
        name: "selftest-panic",
        about: "(harness test) panics in its first lookup",
        default: false,
        ours: true,
        hidden: true,
        run: measure::run::<selftest::Faulty<{ selftest::PANIC }>>,
    },
    Entry {
        name: "selftest-abort",
        about: "(harness test) aborts the process in its first lookup",
        default: false,
        ours: true,
        hidden: true,
        run: measure::run::<selftest::Faulty<{ selftest::ABORT }>>,
    },
    Entry {
        name: "selftest-wrong",
        about: "(harness test) returns wrong values and skips entries",
        default: false,
        ours: true,
        hidden: true,
        run: measure::run::<selftest::Faulty<{ selftest::WRONG }>>,
    },
];

/// The entry called `name`.
pub(crate) fn find(name: &str) -> Option<&'static Entry> {
    REGISTRY.iter().find(|e| e.name == name)
}

/// Whether the structure called `name` is memkv's own ([`Entry::ours`]).
pub(crate) fn is_ours(name: &str) -> bool {
    find(name).is_some_and(|e| e.ours)
}

/// The smallest byte string greater than every string that starts with
/// `prefix`, or `None` when there is none (`prefix` is empty or all `0xFF`):
/// turns a prefix scan into a range scan for structures without a native one.
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut end = prefix[..=keep].to_vec();
    end[keep] += 1;
    Some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_is_the_successor_of_all_extensions() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff"), None);
        assert_eq!(prefix_end(b""), None);
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = REGISTRY.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), REGISTRY.len());
    }
}
