//! Keys that stress a radix tree, for the model tests of every structure
//! built on one.
//!
//! Included with `#[path = "common/radix_keys.rs"] mod radix_keys;` by the
//! tests that use it.

use proptest::prelude::*;

/// Keys that collide, share prefixes and hit layout boundaries.
pub(crate) fn radix_key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // A tiny alphabet with 0x00 and 0xFF: prefix chains ("a", "aa"), the
        // empty key, and many keys that are prefixes of others.
        3 => prop::collection::vec(prop::sample::select(vec![0x00u8, 0x01, b'a', b'b', 0xFE, 0xFF]), 0..6),
        // Long shared prefixes around the 254-byte inline limit, so prefixes
        // and suffixes move between inline and out-of-line storage.
        2 => (prop::sample::select(vec![11usize, 253, 254, 255, 300]), prop::collection::vec(prop::sample::select(vec![b'x', b'y', 0x00, 0xFF]), 0..3))
            .prop_map(|(n, tail)| {
                let mut k = vec![b'p'; n];
                k.extend(tail);
                k
            }),
        // Wide fan-out under one prefix: nodes grow to Node256 and back.
        2 => any::<u8>().prop_map(|b| vec![b'w', b'/', b]),
        1 => any::<u8>().prop_map(|b| vec![b'w', b'/', b, b'!']),
        // Anything.
        1 => prop::collection::vec(any::<u8>(), 0..24),
    ]
}
