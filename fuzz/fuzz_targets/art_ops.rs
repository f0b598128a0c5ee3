//! `FastArt` against a `BTreeMap` model over operation sequences, with the
//! tree's invariants checked after every step. Under cargo-fuzz's default
//! AddressSanitizer, any invalid access in the tree's raw code aborts.

#![no_main]

use libfuzzer_sys::fuzz_target;
use memkv::FastArt;
use memkv_fuzz::{Entries, Op, Subject, read_in_order, run};

fuzz_target!(|ops: Vec<Op>| run(&mut Art(FastArt::new()), ops));

struct Art(FastArt<u16>);

fn owned<'a>(entries: impl Iterator<Item = (Vec<u8>, &'a u16)>) -> Entries {
    entries.map(|(k, v)| (k, *v)).collect()
}

impl Subject for Art {
    fn insert(&mut self, key: &[u8], value: u16) -> Option<u16> {
        self.0.insert(key, value)
    }

    fn remove(&mut self, key: &[u8]) -> Option<u16> {
        self.0.remove(key)
    }

    fn get(&self, key: &[u8]) -> Option<u16> {
        self.0.get(key).copied()
    }

    fn get_many(&self, keys: &[Vec<u8>]) -> Vec<Option<u16>> {
        self.0
            .get_many(keys)
            .into_iter()
            .map(Option::<&u16>::copied)
            .collect()
    }

    fn bump_or_insert(&mut self, key: &[u8], value: u16) -> u16 {
        *self
            .0
            .entry(key)
            .and_modify(|v| *v = v.wrapping_add(1))
            .or_insert(value)
    }

    fn blind(&mut self, key: &[u8], value: Option<u16>) {
        match value {
            Some(value) => _ = self.0.insert(key, value),
            None => _ = self.0.remove(key),
        }
    }

    fn range(&self, start: &[u8], end: &[u8], back: bool) -> Entries {
        read_in_order(self.0.range(start..end).map(|(k, v)| (k, *v)), back)
    }

    fn prefix(&self, prefix: &[u8]) -> Entries {
        owned(self.0.prefix(prefix))
    }

    fn longest_prefix_of(&self, key: &[u8]) -> Option<(Vec<u8>, u16)> {
        self.0.longest_prefix_of(key).map(|(k, v)| (k.to_vec(), *v))
    }

    fn pop_first(&mut self) -> Option<(Vec<u8>, u16)> {
        self.0.pop_first()
    }

    fn pop_last(&mut self) -> Option<(Vec<u8>, u16)> {
        self.0.pop_last()
    }

    fn retain(&mut self, keep: impl Fn(u16) -> bool) {
        self.0.retain(|_, value| keep(*value));
    }

    fn settle(&mut self) {
        self.0.compact();
    }

    fn clear(&mut self) {
        self.0.clear();
    }

    fn split_and_append(&mut self, key: &[u8]) -> Option<(Entries, Entries)> {
        let mut upper = self.0.split_off(key);
        let halves = (owned(self.0.iter()), owned(upper.iter()));
        check_tree(&self.0);
        check_tree(&upper);
        self.0.append(&mut upper);
        assert!(upper.is_empty());
        Some(halves)
    }

    fn entries(&self, back: bool) -> Entries {
        read_in_order(self.0.iter().map(|(k, v)| (k, *v)), back)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn check(&self) {
        check_tree(&self.0);
    }
}

fn check_tree(tree: &FastArt<u16>) {
    if let Err(why) = tree.check_invariants() {
        panic!("invariants broken: {why}");
    }
}
