//! `HybridMap` against a `BTreeMap` model over operation sequences, with
//! merges where the sequence asks for them: `freeze`, and one in the
//! background in place of `split_off` (the policy is manual otherwise, so
//! that a failing input replays much the same way).

#![no_main]

use libfuzzer_sys::fuzz_target;
use memkv::{HybridConfig, HybridMap};
use memkv_fuzz::{Entries, Op, Subject, read_in_order, run};

fuzz_target!(|ops: Vec<Op>| run(&mut Hybrid(HybridConfig::new().manual().build()), ops));

struct Hybrid(HybridMap<u16>);

impl Subject for Hybrid {
    fn insert(&mut self, key: &[u8], value: u16) -> Option<u16> {
        self.0.insert(key, value)
    }

    fn remove(&mut self, key: &[u8]) -> Option<u16> {
        self.0.remove(key)
    }

    fn get(&self, key: &[u8]) -> Option<u16> {
        self.0.get(key)
    }

    fn get_many(&self, keys: &[Vec<u8>]) -> Vec<Option<u16>> {
        self.0.get_many(keys)
    }

    fn bump_or_insert(&mut self, key: &[u8], value: u16) -> u16 {
        self.0
            .entry(key)
            .and_modify(|v| *v = v.wrapping_add(1))
            .or_insert(value)
    }

    fn blind(&mut self, key: &[u8], value: Option<u16>) {
        match value {
            Some(value) => self.0.put(key, value),
            None => self.0.delete(key),
        }
    }

    fn range(&self, start: &[u8], end: &[u8], back: bool) -> Entries {
        read_in_order(self.0.range(start..end), back)
    }

    fn prefix(&self, prefix: &[u8]) -> Entries {
        self.0.prefix(prefix).collect()
    }

    fn longest_prefix_of(&self, key: &[u8]) -> Option<(Vec<u8>, u16)> {
        self.0.longest_prefix_of(key).map(|(k, v)| (k.to_vec(), v))
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
        self.0.freeze().unwrap();
    }

    fn clear(&mut self) {
        self.0.clear();
    }

    /// No `split_off` here: a merge in the background instead, checked by
    /// the steps after it.
    fn split_and_append(&mut self, _: &[u8]) -> Option<(Entries, Entries)> {
        self.0.merge_in_background();
        None
    }

    fn entries(&self, back: bool) -> Entries {
        read_in_order(self.0.iter(), back)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn check(&self) {}
}
