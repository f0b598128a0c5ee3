//! What the op-sequence targets share: keys that stress a radix tree and
//! the operations run on a map and on a `BTreeMap` model side by side.

use arbitrary::Arbitrary;

/// A key, drawn so that keys collide, share prefixes and are prefixes of
/// each other.
#[derive(Arbitrary, Debug, Clone)]
pub enum Key {
    /// Bytes over the alphabet {0x00, 'a', 'b', 0xFF}: two bits each.
    Small(Vec<u8>),
    /// A long shared prefix (past the 8 bytes a node header holds inline),
    /// cut at `cut`, then one byte.
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
    /// `split_off` at the key, then `append` the part split off back.
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
