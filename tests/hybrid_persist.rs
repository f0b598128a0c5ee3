//! save → open round trips, and the Debian sample through a HybridMap.

use std::collections::BTreeMap;

use memkv::{Error, FrozenLayer, HybridConfig, HybridMap};

#[path = "common/scratch.rs"]
mod scratch;

#[test]
fn save_then_open_round_trips() {
    let dir = scratch::dir();
    let path = dir.path().join("map.memkv");
    // Bases of several parts, so that `save` streams them into one file.
    let config = HybridConfig::new().manual().part_keys(300);
    let map: HybridMap<Vec<u8>> = config.clone().build();
    let mut model = BTreeMap::new();
    for i in 0..2000u32 {
        let key = format!("k{:04}", i * 7 % 2000).into_bytes();
        let value = i.to_le_bytes().repeat((i % 4) as usize);
        map.insert(&key, value.clone());
        model.insert(key, value);
    }
    map.freeze().unwrap();
    assert_eq!(map.stats().base_parts, 7);
    // Unmerged changes at save time: tombstones over the base, updates, new.
    for i in (0..2000).step_by(3) {
        let key = format!("k{i:04}").into_bytes();
        assert_eq!(map.remove(&key), model.remove(&key));
    }
    map.insert("k0001", b"updated".to_vec());
    model.insert(b"k0001".to_vec(), b"updated".to_vec());
    map.insert([0xFF, 0x00], vec![]);
    model.insert(vec![0xFF, 0x00], vec![]);
    map.save(&path).unwrap();
    assert_eq!(map.stats().delta_entries, 0, "save merges first");

    let reopened = HybridMap::<Vec<u8>>::open_with_config(&path, config).unwrap();
    let stats = reopened.stats();
    // WASI maps no files: `open` reads the base into memory there.
    let mapped = !cfg!(target_os = "wasi");
    assert_eq!(stats.base_mapped, mapped);
    assert_eq!(stats.base_parts, 1, "a saved base is one layer");
    assert_eq!(
        (stats.len, stats.base_keys, stats.delta_entries),
        (model.len(), model.len(), 0)
    );
    if mapped {
        assert_eq!(
            reopened.memory_usage(),
            stats.delta_bytes,
            "the base is mapped, not on the heap"
        );
    } else {
        assert!(reopened.memory_usage() >= stats.delta_bytes + stats.base_bytes);
    }
    assert_eq!(reopened.iter().collect::<BTreeMap<_, _>>(), model);
    // The reopened map is a map like any other: write, merge, save again.
    reopened.insert("new", b"v".to_vec());
    reopened.remove("k0001");
    model.insert(b"new".to_vec(), b"v".to_vec());
    model.remove(&b"k0001"[..]);
    reopened.freeze().unwrap();
    let stats = reopened.stats();
    assert!(!stats.base_mapped, "a merge builds the new base in memory");
    assert_eq!(stats.base_parts, model.len().div_ceil(300));
    reopened.save(&path).unwrap();
    drop(reopened);
    let again = HybridMap::<Vec<u8>>::open(&path).unwrap();
    assert_eq!(again.iter().collect::<BTreeMap<_, _>>(), model);
    // The file is a plain FrozenLayer.
    let layer = FrozenLayer::<Vec<u8>>::open(&path).unwrap();
    assert_eq!(layer.len(), model.len());
}

#[test]
fn open_reports_errors() {
    let dir = scratch::dir();
    let missing = dir.path().join("missing.memkv");
    assert!(matches!(
        HybridMap::<u64>::open(&missing),
        Err(Error::Io { .. })
    ));
    let path = dir.path().join("bytes.memkv");
    let map: HybridMap<Vec<u8>> = [("a", vec![1u8])].into_iter().collect();
    map.save(&path).unwrap();
    let err = HybridMap::<u64>::open(&path).unwrap_err();
    assert_eq!(err.path(), Some(path.as_path()));
    assert!(matches!(
        err.without_path(),
        Error::ValueTypeMismatch { .. }
    ));
}

/// The first `n` keys of the committed Debian sample, in its (shuffled)
/// order.
fn debian_sample(n: usize) -> Vec<Vec<u8>> {
    let data = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/debian-paths-100k.txt"
    ))
    .unwrap();
    data.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .take(n)
        .map(<[u8]>::to_vec)
        .collect()
}

#[test]
fn debian_sample_through_the_policy() {
    let keys = debian_sample(30_000);
    // Small thresholds so that merges run while inserting: inline, so that
    // their number does not depend on timing (at 1000, 2000, 4000, ... keys).
    let map: HybridMap<u64> = HybridConfig::new()
        .min_delta_keys(1000)
        .key_ratio(1.0)
        .background(false)
        .build();
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(map.insert(key, i as u64), None);
    }
    for (i, key) in keys.iter().enumerate().step_by(10) {
        assert_eq!(map.remove(key), Some(i as u64));
    }
    map.freeze().unwrap();
    let stats = map.stats();
    assert_eq!(stats.merges, 6, "{stats:?}");
    assert_eq!(stats.failed_merges, 0);
    assert_eq!(stats.len, 27_000);
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(map.get(key), (i % 10 != 0).then_some(i as u64));
    }
    // After a full merge the map is its base: memory within 10% of the
    // FrozenLayer of the same entries built alone (the target of issue 5).
    let alone = FrozenLayer::from_unsorted_iter(
        keys.iter()
            .enumerate()
            .filter(|(i, _)| i % 10 != 0)
            .map(|(i, k)| (k.clone(), i as u64)),
    )
    .unwrap();
    let (hybrid, frozen) = (map.memory_usage(), alone.memory_usage());
    println!("after freeze: HybridMap {hybrid} B, FrozenLayer alone {frozen} B");
    assert!(
        (frozen as f64 * 0.9..=frozen as f64 * 1.10).contains(&(hybrid as f64)),
        "{hybrid} vs {frozen}"
    );
    // One part, built from the same entries: the same bytes.
    let stats = map.stats();
    assert_eq!(stats.base_parts, 1, "{stats:?}");
    assert_eq!(stats.base_bytes, alone.as_bytes().len());
    let sorted: Vec<_> = map.iter().collect();
    assert_eq!(sorted, alone.iter().collect::<Vec<_>>());
}

#[test]
fn a_map_of_strings_saves_and_opens_as_one() {
    let dir = scratch::dir();
    let path = dir.path().join("titles.memkv");
    let map: HybridMap<String> = HybridConfig::new().manual().part_keys(100).build();
    let mut model = BTreeMap::new();
    for i in 0..500u32 {
        let (key, title) = (
            format!("https://example.org/{i}"),
            format!("Seite {i} – grüße"),
        );
        map.insert(&key, title.clone());
        model.insert(key.into_bytes(), title);
    }
    map.freeze().unwrap();
    map.insert("https://example.org/7", "neu".to_string());
    model.insert(b"https://example.org/7".to_vec(), "neu".to_string());
    map.save(&path).unwrap();

    let reopened = HybridMap::<String>::open(&path).unwrap();
    assert_eq!(reopened.iter().collect::<BTreeMap<_, _>>(), model);
    assert_eq!(
        reopened.get("https://example.org/7").as_deref(),
        Some("neu")
    );
    // Strings are not byte strings: the file says which it holds.
    let err = HybridMap::<Vec<u8>>::open(&path).unwrap_err();
    assert!(matches!(
        err.without_path(),
        Error::ValueTypeMismatch { .. }
    ));
    let layer = FrozenLayer::<String>::open(&path).unwrap();
    assert_eq!(
        layer.get_encoded("https://example.org/3"),
        Some("Seite 3 – grüße".as_bytes())
    );
}

/// Saving over the file a layer and a map have open, mapped. On unix the
/// rename replaces it and what is open keeps reading the old file; a system
/// that refuses to replace a mapped file (wine does) must make the save
/// an error that changes nothing. Either way nothing is lost.
#[test]
fn saving_over_an_open_file_loses_nothing() {
    let dir = scratch::dir();
    let path = dir.path().join("layer.memkv");
    let entries = |prefix: &str, n: u64| -> BTreeMap<Vec<u8>, u64> {
        (0..n)
            .map(|i| (format!("{prefix}/{i:04}").into_bytes(), i))
            .collect()
    };
    let old = entries("old", 1000);
    FrozenLayer::from_sorted_iter(old.clone())
        .unwrap()
        .save(&path)
        .unwrap();
    let layer = FrozenLayer::<u64>::open(&path).unwrap();
    let map = HybridMap::<u64>::open(&path).unwrap();

    // The map's own file, its base still mapped and unchanged: the save
    // reads the mapping while it writes the file that replaces it.
    let unchanged = map.save(&path);
    // A different layer over it.
    let new = entries("new", 700);
    let replaced = FrozenLayer::from_sorted_iter(new.clone())
        .unwrap()
        .save(&path);
    if cfg!(unix) {
        unchanged.as_ref().unwrap();
        replaced.as_ref().unwrap();
    }
    let on_disk = FrozenLayer::<u64>::open(&path).unwrap();
    on_disk.verify().unwrap();
    let expected = if replaced.is_ok() { &new } else { &old };
    assert_eq!(on_disk.iter().collect::<BTreeMap<_, _>>(), *expected);
    // What was open still reads the old file, whole.
    layer.verify().unwrap();
    assert_eq!(layer.iter().collect::<BTreeMap<_, _>>(), old);
    assert_eq!(map.iter().collect::<BTreeMap<_, _>>(), old);
    // No temporary file is left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["layer.memkv"]);
}
