//! The raw tree's pointer discipline, in scenarios small enough for Miri.
//!
//! Under `cargo test` these are model tests like the others (every answer is
//! compared with a `BTreeMap`). Their point is a run under Miri, which checks
//! what valgrind cannot: that no reference the API hands out is invalidated
//! by a later access the aliasing rules forbid. Two such bugs were found
//! this way (a write through a pointer to the root while `&mut self` was
//! lent; a `&mut V` made by every lookup of a boxed value). `.ci/run` runs
//! this file under Miri where a nightly toolchain with Miri is installed:
//!
//! ```sh
//! cargo +nightly miri test --test art_aliasing
//! ```

use std::collections::BTreeMap;

use memkv::FastArt;

/// Stored boxed in its leaf: its alignment is above the arena's 8 bytes.
#[derive(Clone, Debug, PartialEq)]
#[repr(align(16))]
struct Aligned16(u64);

/// A fixed pseudo-random sequence (xorshift64).
struct Sequence(u64);

impl Sequence {
    /// The next number, below `m`.
    fn below(&mut self, m: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % m
    }
}

/// Keys that take the tree's unusual paths: prefixes stored out of line
/// (past 254 bytes), two-byte keys under a wide node, and paths that fork
/// at several depths.
fn keys(n: usize) -> Vec<Vec<u8>> {
    let mut seq = Sequence(0x2545_f491_4f6c_dd1d);
    let mut next = |m| seq.below(m);
    (0..n)
        .map(|i| match i % 5 {
            0 => {
                let mut key = vec![b'p'; [250, 254, 255, 300][next(4) as usize]];
                key.push(next(256) as u8);
                key
            }
            1 => vec![b'w', next(256) as u8],
            _ => format!("usr/d{}/f{}", next(7), next(50)).into_bytes(),
        })
        .collect()
}

#[test]
fn references_to_boxed_values_survive_other_lookups() {
    let mut map = FastArt::new();
    map.insert("k", Aligned16(1));
    map.insert("kk", Aligned16(2));
    let first = map.get("k").unwrap();
    let again = map.get("k").unwrap();
    let other = map.get("kk").unwrap();
    assert_eq!((first.0, again.0, other.0), (1, 1, 2));
    let all: Vec<&Aligned16> = map.values().collect();
    assert_eq!(all, [first, other]);
}

#[test]
fn inserts_at_the_root_and_below() {
    let mut map = FastArt::new();
    let mut model = BTreeMap::new();
    // The first insert fills the root slot; the next ones fork at it (a
    // prefix of the first key, then a key that leaves its prefix).
    for (i, key) in [&b"abc"[..], b"ab", b"x", b"", b"abd"].iter().enumerate() {
        assert_eq!(map.insert(key, i), model.insert(key.to_vec(), i));
        map.check_invariants().unwrap();
    }
    assert!(map.iter().eq(model.iter().map(|(k, v)| (k.clone(), v))));
}

#[test]
fn inline_values_through_every_operation() {
    let keys = keys(300);
    let mut map = FastArt::new();
    let mut model = BTreeMap::new();
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(
            map.insert(key, i as u64),
            model.insert(key.clone(), i as u64)
        );
    }
    map.check_invariants().unwrap();
    map.compact();
    map.check_invariants().unwrap();
    for (key, value) in &model {
        assert_eq!(map.get(key), Some(value));
    }
    for (_, value) in map.range_mut(&b"usr"[..]..) {
        *value += 1;
    }
    for (_, value) in model.range_mut(b"usr".to_vec()..) {
        *value += 1;
    }
    // Both ends of one iterator.
    let mut iter = map.iter();
    let (mut front, mut back) = (Vec::new(), Vec::new());
    while let Some(entry) = iter.next() {
        front.push(entry);
        if let Some(entry) = iter.next_back() {
            back.push(entry);
        }
    }
    front.extend(back.into_iter().rev());
    assert!(
        front
            .into_iter()
            .eq(model.iter().map(|(k, v)| (k.clone(), v)))
    );
    for key in keys.iter().step_by(2) {
        assert_eq!(map.remove(key), model.remove(key));
    }
    map.check_invariants().unwrap();
    *map.entry("new").or_insert(5) += 1;
    *model.entry(b"new".to_vec()).or_insert(5) += 1;
    assert!(map.iter().eq(model.iter().map(|(k, v)| (k.clone(), v))));
    // An owning iterator dropped half-way frees the rest.
    let mut owned = map.into_iter();
    assert_eq!(owned.next(), model.pop_first());
    assert_eq!(owned.next_back(), model.pop_last());
}

#[test]
fn boxed_and_heap_values_through_every_operation() {
    let keys = keys(120);
    let mut boxed = FastArt::new();
    let mut strings = FastArt::new();
    let mut model = BTreeMap::new();
    for (i, key) in keys.iter().enumerate() {
        boxed.insert(key, Aligned16(i as u64));
        strings.insert(key, i.to_string());
        model.insert(key.clone(), i as u64);
    }
    boxed.compact();
    strings.compact();
    for key in keys.iter().step_by(3) {
        assert_eq!(boxed.remove(key).map(|v| v.0), model.get(key).copied());
        assert_eq!(
            strings.remove(key),
            model.remove(key).map(|v| v.to_string())
        );
    }
    for value in boxed.values_mut() {
        value.0 += 1;
    }
    assert!(
        boxed
            .values()
            .map(|v| v.0)
            .eq(model.values().map(|v| v + 1))
    );
    let copy = strings.clone();
    assert_eq!(copy, strings);
    let tail = strings.split_off("usr/d3");
    assert_eq!(strings.len() + tail.len(), model.len());
}

/// Past 64 KiB of nodes compaction packs clusters and lookups load whole
/// regions; inserts and removals afterwards reuse the room regions leave.
#[test]
fn clustered_compaction_then_changes() {
    let mut map = FastArt::new();
    map.set_auto_compact(false);
    let mut model = BTreeMap::new();
    let mut first = Vec::new();
    let mut seq = Sequence(0x9E37_79B9_7F4A_7C15);
    let mut insert = |map: &mut FastArt<u64>, key: String, i| {
        map.insert(&key, i);
        model.insert(key.clone().into_bytes(), i);
        first.push(key.into_bytes());
    };
    for i in 0..1500u64 {
        let (dir, sub, file) = (seq.below(13), seq.below(17), seq.below(400));
        insert(&mut map, format!("usr/d{dir}/e{sub}/f{file}"), i);
    }
    // Nodes with long prefixes, so that few keys (Miri is slow) make enough
    // nodes for clusters.
    for group in 0..800u64 {
        for i in 0..3 {
            insert(&mut map, format!("g{group:05}/{group:040}/{i}"), group);
        }
    }
    assert!(
        map.stats().node_bytes >= 64 << 10,
        "too few nodes for clusters"
    );
    map.compact();
    map.check_invariants().unwrap();
    for (key, value) in model.iter().step_by(7) {
        assert_eq!(map.get(key), Some(value));
    }
    for i in 0..300u64 {
        let key = format!("usr/d{}/e{}/g{i}", seq.below(16), seq.below(17)).into_bytes();
        map.insert(&key, i);
        model.insert(key, i);
        if i % 2 == 0 {
            // One of the keys the clusters were made of.
            let gone = &first[seq.below(first.len() as u64) as usize];
            assert_eq!(map.remove(gone), model.remove(gone));
        }
    }
    map.check_invariants().unwrap();
    assert!(map.iter().eq(model.iter().map(|(k, v)| (k.clone(), v))));
    let wanted: Vec<&Vec<u8>> = model.keys().take(50).collect();
    let found = map.get_many(&wanted);
    assert!(found.iter().zip(model.values()).all(|(f, v)| *f == Some(v)));
}

/// Every read of one map from two threads at once, as inserted and
/// compacted. Under Miri its data-race detector checks that no read
/// through `&FastArt` writes anything (the tree holds raw pointers, so the
/// compiler cannot check `Sync` for it).
#[test]
#[cfg_attr(target_os = "wasi", ignore = "needs threads")]
fn reads_from_two_threads_at_once() {
    fn reads(map: &FastArt<u64>, keys: &[Vec<u8>]) -> Vec<u64> {
        let mut seen: Vec<u64> = keys
            .iter()
            .map(|key| map.get(key).copied().unwrap())
            .collect();
        seen.extend(map.get_many(keys).into_iter().map(|found| *found.unwrap()));
        let mut iter = map.iter();
        while let Some((_, value)) = iter.next_entry() {
            seen.push(*value);
        }
        seen.extend(map.iter().rev().map(|(_, value)| *value));
        seen.extend(map.prefix("usr/d3").map(|(_, value)| *value));
        seen.extend(
            map.range(&b"usr/d2"[..]..&b"w"[..])
                .map(|(_, value)| *value),
        );
        seen.push(*map.first_key_value().unwrap().1);
        seen.push(*map.last_key_value().unwrap().1);
        seen
    }
    let keys = keys(120);
    let mut map: FastArt<u64> = keys.iter().zip(0..).collect();
    for compacted in [false, true] {
        if compacted {
            map.compact();
        }
        let alone = reads(&map, &keys);
        std::thread::scope(|s| {
            let (map, keys) = (&map, &keys[..]);
            let threads = [
                s.spawn(move || reads(map, keys)),
                s.spawn(move || reads(map, keys)),
            ];
            for thread in threads {
                assert_eq!(thread.join().unwrap(), alone);
            }
        });
    }
}
