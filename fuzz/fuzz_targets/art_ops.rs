//! `FastArt` against a `BTreeMap` model over operation sequences, with the
//! tree's invariants checked after every step. Under cargo-fuzz's default
//! AddressSanitizer, any invalid access in the tree's raw code aborts.

#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use memkv::FastArt;
use memkv_fuzz::{Key, Op, fan};

fuzz_target!(|ops: Vec<Op>| {
    let mut map = FastArt::new();
    let mut model: BTreeMap<Vec<u8>, u16> = BTreeMap::new();
    for op in ops {
        match op {
            Op::Insert(key, value) => {
                let key = key.bytes();
                assert_eq!(map.insert(&key, value), model.insert(key, value));
            }
            Op::Remove(key) => {
                let key = key.bytes();
                assert_eq!(map.remove(&key), model.remove(&key));
            }
            Op::Get(key) => {
                let key = key.bytes();
                assert_eq!(map.get(&key), model.get(&key));
            }
            Op::GetMany(keys) => {
                let keys: Vec<Vec<u8>> = keys.iter().map(Key::bytes).collect();
                let want: Vec<_> = keys.iter().map(|key| model.get(key)).collect();
                assert_eq!(map.get_many(&keys), want);
            }
            Op::Entry(key, value) => {
                let key = key.bytes();
                let got = *map
                    .entry(&key)
                    .and_modify(|v| *v = v.wrapping_add(1))
                    .or_insert(value);
                let want = *model
                    .entry(key)
                    .and_modify(|v| *v = v.wrapping_add(1))
                    .or_insert(value);
                assert_eq!(got, want);
            }
            Op::Blind(key, value) => {
                let key = key.bytes();
                match value {
                    Some(value) => _ = (map.insert(&key, value), model.insert(key, value)),
                    None => _ = (map.remove(&key), model.remove(&key)),
                }
            }
            Op::SplitAppend(key) => {
                let key = key.bytes();
                let mut upper = map.split_off(&key);
                let mut model_upper = model.split_off(&key);
                assert!(
                    upper
                        .iter()
                        .map(|(k, v)| (k, *v))
                        .eq(model_upper.iter().map(|(k, v)| (k.clone(), *v)))
                );
                assert!(
                    map.iter()
                        .map(|(k, v)| (k, *v))
                        .eq(model.iter().map(|(k, v)| (k.clone(), *v)))
                );
                check(&upper);
                check(&map);
                map.append(&mut upper);
                model.append(&mut model_upper);
                assert!(upper.is_empty());
            }
            Op::FanOut { from, to } => {
                for key in fan(from, to) {
                    let value = u16::from(key[1]);
                    assert_eq!(map.insert(&key, value), model.insert(key, value));
                }
            }
            Op::FanIn { from, to } => {
                for key in fan(from, to) {
                    assert_eq!(map.remove(&key), model.remove(&key));
                }
            }
            Op::Range { start, end, back } => {
                let (start, end) = (start.bytes(), end.bytes());
                if start > end {
                    assert_eq!(map.range(&start[..]..&end[..]).count(), 0);
                    continue;
                }
                let want: Vec<_> = model.range(start.clone()..end.clone()).collect();
                let got: Vec<_> = if !back {
                    map.range(&start[..]..&end[..]).collect()
                } else {
                    let mut got: Vec<_> = map.range(&start[..]..&end[..]).rev().collect();
                    got.reverse();
                    got
                };
                assert!(got.iter().map(|(k, v)| (k, *v)).eq(want));
            }
            Op::Prefix(prefix) => {
                let prefix = prefix.bytes();
                let want = model.iter().filter(|(key, _)| key.starts_with(&prefix));
                assert!(
                    map.prefix(&prefix)
                        .map(|(k, v)| (k, *v))
                        .eq(want.map(|(k, v)| (k.clone(), *v)))
                );
            }
            Op::LongestPrefixOf(key) => {
                let key = key.bytes();
                let want = model.iter().rfind(|(k, _)| key.starts_with(k));
                let got = map.longest_prefix_of(&key);
                assert_eq!(
                    got.map(|(k, v)| (k.to_vec(), *v)),
                    want.map(|(k, v)| (k.clone(), *v))
                );
            }
            Op::PopFirst => assert_eq!(map.pop_first(), model.pop_first()),
            Op::PopLast => assert_eq!(map.pop_last(), model.pop_last()),
            Op::Retain(divisor) => {
                let keep = |value: u16| divisor == 0 || !value.is_multiple_of(u16::from(divisor));
                map.retain(|_, value| keep(*value));
                model.retain(|_, value| keep(*value));
            }
            Op::Settle => map.compact(),
            Op::Clear => {
                map.clear();
                model.clear();
            }
            Op::Iterate => {
                assert!(
                    map.iter()
                        .map(|(k, v)| (k, *v))
                        .eq(model.iter().map(|(k, v)| (k.clone(), *v)))
                );
                assert!(
                    map.iter()
                        .rev()
                        .map(|(k, v)| (k, *v))
                        .eq(model.iter().rev().map(|(k, v)| (k.clone(), *v)))
                );
            }
        }
        assert_eq!(map.len(), model.len());
        check(&map);
    }
    assert!(
        map.iter()
            .map(|(k, v)| (k, *v))
            .eq(model.iter().map(|(k, v)| (k.clone(), *v)))
    );
});

fn check(map: &FastArt<u16>) {
    if let Err(why) = map.check_invariants() {
        panic!("invariants broken: {why}");
    }
}
