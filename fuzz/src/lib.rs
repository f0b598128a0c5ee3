//! What the op-sequence targets share: keys that stress a radix tree and
//! the operations run on a map and on a `BTreeMap` model side by side.

use std::collections::BTreeMap;

use arbitrary::Arbitrary;

/// A key, drawn so that keys collide, share prefixes and are prefixes of
/// each other.
#[derive(Arbitrary, Debug, Clone)]
pub enum Key {
    /// Bytes over the alphabet {0x00, 'a', 'b', 0xFF}: two bits each.
    Small(Vec<u8>),
    /// A 53-byte shared prefix cut at `cut`, then one byte: compressed
    /// paths of every length, split anywhere.
    Long { cut: u8, last: u8 },
    /// One byte under a shared parent: enough of these grow a node to 256
    /// children.
    Fan(u8),
    /// Any bytes.
    Raw(Vec<u8>),
}

const LONG: &[u8] = b"usr/share/doc/some-package-with-a-long-name/examples/";

impl Key {
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Key::Small(bytes) => bytes
                .iter()
                .take(12)
                .map(|b| [0x00, b'a', b'b', 0xFF][usize::from(b & 3)])
                .collect(),
            Key::Long { cut, last } => {
                let mut key = LONG[..usize::from(*cut) % (LONG.len() + 1)].to_vec();
                key.push(*last);
                key
            }
            Key::Fan(byte) => vec![b'f', *byte],
            Key::Raw(bytes) => bytes.clone(),
        }
    }
}

/// One operation; each target runs it on its map and on the model.
#[derive(Arbitrary, Debug, Clone)]
pub enum Op {
    Insert(Key, u16),
    Remove(Key),
    Get(Key),
    /// Several lookups in one call (`get_many`).
    GetMany(Vec<Key>),
    /// `entry(key).and_modify(add 1).or_insert(value)`.
    Entry(Key, u16),
    /// A write that returns nothing: `put` (with a value) or `delete`
    /// (without) on a `HybridMap`, `insert` or `remove` on a `FastArt`.
    Blind(Key, Option<u16>),
    /// `split_off` at the key, then `append` the part split off back (on
    /// a map without them, what its [`Subject::split_and_append`] does).
    SplitAppend(Key),
    /// Insert the keys `f` + every byte from `from` to `to`.
    FanOut {
        from: u8,
        to: u8,
    },
    /// Remove them again.
    FanIn {
        from: u8,
        to: u8,
    },
    /// The entries from `start` (included) to `end` (excluded), read
    /// backwards when `back`.
    Range {
        start: Key,
        end: Key,
        back: bool,
    },
    Prefix(Key),
    LongestPrefixOf(Key),
    PopFirst,
    PopLast,
    /// Keep the entries whose value is not divisible by this (0 keeps all).
    Retain(u8),
    /// FastArt: `compact`; HybridMap: `freeze`.
    Settle,
    Clear,
    Iterate,
}

/// The keys of a fan from `from` to `to`, either way round.
pub fn fan(from: u8, to: u8) -> impl Iterator<Item = Vec<u8>> {
    (from.min(to)..=from.max(to)).map(|byte| vec![b'f', byte])
}

/// Entries as the maps and the model yield them.
pub type Entries = Vec<(Vec<u8>, u16)>;

/// `entries` in key order, read from the back when `back`.
pub fn read_in_order(
    entries: impl DoubleEndedIterator<Item = (Vec<u8>, u16)>,
    back: bool,
) -> Entries {
    match back {
        false => entries.collect(),
        true => {
            let mut entries: Entries = entries.rev().collect();
            entries.reverse();
            entries
        }
    }
}

/// A map under test: what [`run`] asks of it, each answer owned so that
/// it compares with the model's.
pub trait Subject {
    fn insert(&mut self, key: &[u8], value: u16) -> Option<u16>;
    fn remove(&mut self, key: &[u8]) -> Option<u16>;
    fn get(&self, key: &[u8]) -> Option<u16>;
    fn get_many(&self, keys: &[Vec<u8>]) -> Vec<Option<u16>>;
    /// `entry(key).and_modify(add 1).or_insert(value)`, and the value
    /// that leaves.
    fn bump_or_insert(&mut self, key: &[u8], value: u16) -> u16;
    /// A write that answers nothing: `Some` puts, `None` deletes.
    fn blind(&mut self, key: &[u8], value: Option<u16>);
    /// `start..end`, read backwards when `back`, returned in key order.
    fn range(&self, start: &[u8], end: &[u8], back: bool) -> Entries;
    fn prefix(&self, prefix: &[u8]) -> Entries;
    fn longest_prefix_of(&self, key: &[u8]) -> Option<(Vec<u8>, u16)>;
    fn pop_first(&mut self) -> Option<(Vec<u8>, u16)>;
    fn pop_last(&mut self) -> Option<(Vec<u8>, u16)>;
    fn retain(&mut self, keep: impl Fn(u16) -> bool);
    /// `compact` or `freeze`.
    fn settle(&mut self);
    fn clear(&mut self);
    /// `split_off` at `key` then `append` back, returning both halves as
    /// they were; a map without them does something else and returns
    /// `None`.
    fn split_and_append(&mut self, key: &[u8]) -> Option<(Entries, Entries)>;
    /// Every entry, read backwards when `back`, returned in key order.
    fn entries(&self, back: bool) -> Entries;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool;
    /// Checks the map's own invariants, if it has a checker.
    fn check(&self);
}

/// Runs `ops` on `subject` and on a `BTreeMap`, comparing every answer,
/// the length after every step and the entries at the end.
pub fn run<S: Subject>(subject: &mut S, ops: Vec<Op>) {
    let mut model: BTreeMap<Vec<u8>, u16> = BTreeMap::new();
    let owned = |entries: &mut dyn Iterator<Item = (&Vec<u8>, &u16)>| -> Entries {
        entries.map(|(k, v)| (k.clone(), *v)).collect()
    };
    for op in ops {
        match op {
            Op::Insert(key, value) => {
                let key = key.bytes();
                assert_eq!(subject.insert(&key, value), model.insert(key, value));
            }
            Op::Remove(key) => {
                let key = key.bytes();
                assert_eq!(subject.remove(&key), model.remove(&key));
            }
            Op::Get(key) => {
                let key = key.bytes();
                assert_eq!(subject.get(&key), model.get(&key).copied());
            }
            Op::GetMany(keys) => {
                let keys: Vec<Vec<u8>> = keys.iter().map(Key::bytes).collect();
                let want: Vec<_> = keys.iter().map(|key| model.get(key).copied()).collect();
                assert_eq!(subject.get_many(&keys), want);
            }
            Op::Entry(key, value) => {
                let key = key.bytes();
                let got = subject.bump_or_insert(&key, value);
                let want = *model
                    .entry(key)
                    .and_modify(|v| *v = v.wrapping_add(1))
                    .or_insert(value);
                assert_eq!(got, want);
            }
            Op::Blind(key, value) => {
                let key = key.bytes();
                subject.blind(&key, value);
                match value {
                    Some(value) => _ = model.insert(key, value),
                    None => _ = model.remove(&key),
                }
            }
            Op::SplitAppend(key) => {
                let key = key.bytes();
                if let Some((lower, upper)) = subject.split_and_append(&key) {
                    let split = |below: bool| {
                        owned(&mut model.iter().filter(|(k, _)| (**k < key) == below))
                    };
                    assert_eq!(lower, split(true));
                    assert_eq!(upper, split(false));
                }
            }
            Op::FanOut { from, to } => {
                for key in fan(from, to) {
                    let value = u16::from(key[1]);
                    assert_eq!(subject.insert(&key, value), model.insert(key, value));
                }
            }
            Op::FanIn { from, to } => {
                for key in fan(from, to) {
                    assert_eq!(subject.remove(&key), model.remove(&key));
                }
            }
            Op::Range { start, end, back } => {
                let (start, end) = (start.bytes(), end.bytes());
                let want = match start <= end {
                    true => owned(&mut model.range(start.clone()..end.clone())),
                    false => Vec::new(),
                };
                assert_eq!(subject.range(&start, &end, back), want);
            }
            Op::Prefix(prefix) => {
                let prefix = prefix.bytes();
                let want = owned(&mut model.iter().filter(|(key, _)| key.starts_with(&prefix)));
                assert_eq!(subject.prefix(&prefix), want);
            }
            Op::LongestPrefixOf(key) => {
                let key = key.bytes();
                let want = model.iter().rfind(|(k, _)| key.starts_with(k));
                assert_eq!(
                    subject.longest_prefix_of(&key),
                    want.map(|(k, v)| (k.clone(), *v))
                );
            }
            Op::PopFirst => assert_eq!(subject.pop_first(), model.pop_first()),
            Op::PopLast => assert_eq!(subject.pop_last(), model.pop_last()),
            Op::Retain(divisor) => {
                let keep = |value: u16| divisor == 0 || !value.is_multiple_of(u16::from(divisor));
                subject.retain(keep);
                model.retain(|_, value| keep(*value));
            }
            Op::Settle => subject.settle(),
            Op::Clear => {
                subject.clear();
                model.clear();
            }
            Op::Iterate => {
                assert_eq!(subject.entries(false), owned(&mut model.iter()));
                assert_eq!(subject.entries(true), owned(&mut model.iter()));
            }
        }
        assert_eq!(
            (subject.len(), subject.is_empty()),
            (model.len(), model.is_empty())
        );
        subject.check();
    }
    assert_eq!(subject.entries(false), owned(&mut model.iter()));
}
