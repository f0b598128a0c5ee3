//! What building a `HybridMap` in one go asks of the allocator: no more
//! than the entries read call for, whatever the policy's part size.

#[path = "common/counting.rs"]
mod counting;

use memkv::{HybridConfig, HybridMap};

/// `n` keys in order, each with `tail` bytes of its own after a shared
/// stem.
fn sorted_keys(n: usize, tail: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let mut key = format!("var/cache/{i:08}/").into_bytes();
            key.extend((0..tail).map(|j| b'a' + ((i * 7 + j * 13) % 26) as u8));
            key
        })
        .collect()
}

/// A sorted build gathers each part's entries before building it. Its
/// buffers were sized for a whole part at the sample's mean key, however
/// few entries came: 66,000 keys of 219 bytes, under a part of 2^20 keys
/// (the default), peaked at 256 MB for 14 MB of keys (19 MB now), and with
/// one part for everything
/// (`part_keys(usize::MAX)`) and 4 KiB keys, 75 GB, which aborted the
/// process (2026-11-27, a review). Now they are sized for what was read,
/// and grow by quarters.
#[test]
fn a_sorted_build_asks_for_about_what_it_reads() {
    let keys = sorted_keys(66_000, 200);
    let raw: usize = keys.iter().map(Vec::len).sum();
    for config in [
        HybridConfig::new(),
        HybridConfig::new().part_keys(usize::MAX),
    ] {
        counting::reset_peak();
        let before = counting::held();
        let map: HybridMap<u64> = config.build_from(keys.iter().zip(0..));
        let peak = (counting::peak() - before) as usize;
        assert_eq!(map.len(), keys.len());
        assert_eq!(map.stats().delta_entries, 0, "all in the base");
        assert_eq!(map.get(&keys[12_345]), Some(12_345));
        // The entries gathered (their suffixes, values and lengths), a
        // quarter of room, and the sample, in the calling thread.
        assert!(peak < 3 * raw, "peak {peak} bytes for {raw} bytes of keys");
    }
}
