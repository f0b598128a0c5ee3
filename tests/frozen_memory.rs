//! What the frozen layer's batched lookup allocates, counted by this
//! binary's allocator.

#[path = "common/counting.rs"]
mod counting;

use memkv::FrozenLayer;
use memkv::frozen::FrozenValue;

/// `get_many` takes at most two allocations per call, as its doc says: the
/// ordinals it finds first, then the result (one buffer may serve both,
/// which the standard library decides by the value type's layout).
fn allocations_of_get_many<V: FrozenValue + PartialEq + std::fmt::Debug>(
    value: impl Fn(u64) -> V,
) -> usize {
    let keys: Vec<String> = (0..3000)
        .map(|i| format!("usr/share/doc/p{i:05}/copyright"))
        .collect();
    let layer =
        FrozenLayer::from_sorted_iter(keys.iter().zip(0..).map(|(k, i)| (k, value(i)))).unwrap();
    let mut asked: Vec<&str> = keys.iter().map(String::as_str).rev().collect();
    asked.push("usr/share/doc/absent");
    let before = counting::allocations();
    let found = layer.get_many(&asked);
    let allocations = counting::allocations() - before;
    for (j, got) in found.iter().enumerate() {
        let want = (j < 3000).then(|| value(2999 - j as u64));
        assert_eq!(got, &want, "key {j}");
    }
    allocations
}

#[test]
fn get_many_allocates_at_most_twice() {
    for (what, allocations) in [
        ("u64", allocations_of_get_many(|i| i)),
        ("u8", allocations_of_get_many(|i| i as u8)),
        ("i32", allocations_of_get_many(|i| -(i as i32))),
        ("()", allocations_of_get_many(|_| ())),
    ] {
        assert!(
            (1..=2).contains(&allocations),
            "{what}: {allocations} allocations"
        );
    }
}
