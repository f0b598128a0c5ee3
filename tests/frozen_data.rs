//! The committed sample of real data: 100,000 Debian file paths, shuffled.

use std::collections::BTreeMap;

use memkv::FrozenLayer;

#[path = "common/scratch.rs"]
mod scratch;

fn sample_paths() -> Vec<Vec<u8>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/debian-paths-100k.txt");
    let text = std::fs::read(path).expect("data/debian-paths-100k.txt is committed");
    text.split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

#[test]
fn debian_paths_sample() {
    let paths = sample_paths();
    assert_eq!(paths.len(), 100_000);
    let layer =
        FrozenLayer::from_unsorted_iter(paths.iter().enumerate().map(|(line, p)| (p, line as u64)))
            .unwrap();
    assert_eq!(layer.len(), paths.len(), "the sample has unique paths");
    for (line, path) in paths.iter().enumerate() {
        assert_eq!(
            layer.get(path),
            Some(line as u64),
            "{}",
            String::from_utf8_lossy(path)
        );
    }

    // Key order and ordinals agree with a sorted model.
    let model: BTreeMap<&[u8], u64> = paths
        .iter()
        .enumerate()
        .map(|(l, p)| (p.as_slice(), l as u64))
        .collect();
    let mut entries = layer.iter();
    for (ordinal, (key, value)) in model.iter().enumerate() {
        assert_eq!(entries.next_entry(), Some((*key, *value)));
        if ordinal % 997 == 0 {
            assert_eq!(layer.rank(key), Some(ordinal));
            assert_eq!(layer.nth(ordinal), Some((key.to_vec(), *value)));
        }
    }
    assert_eq!(entries.next_entry(), None);
    let under_doc = layer.prefix("usr/share/doc/").count();
    assert_eq!(
        under_doc,
        model
            .keys()
            .filter(|k| k.starts_with(b"usr/share/doc/"))
            .count()
    );
    assert!(under_doc > 1000);

    // Shared prefixes and suffixes: the whole layer, values included, is a
    // fraction of the raw key bytes.
    let key_bytes: usize = paths.iter().map(Vec::len).sum();
    let layer_bytes = layer.as_bytes().len();
    assert!(
        layer_bytes * 2 < key_bytes,
        "layer {layer_bytes} bytes for {key_bytes} bytes of keys"
    );
    assert_eq!(layer.memory_usage(), layer_bytes);

    // Saved and mapped, every key again.
    let dir = scratch::dir();
    let file = dir.path().join("debian.memkv");
    layer.save(&file).unwrap();
    let mapped = FrozenLayer::<u64>::open(&file).unwrap();
    mapped.verify_structure().unwrap();
    // Read where no file can be mapped (WASI), and counted then.
    let held = if cfg!(target_os = "wasi") {
        (layer_bytes, 0)
    } else {
        (0, layer_bytes)
    };
    assert_eq!((mapped.memory_usage(), mapped.mapped_bytes()), held);
    for (line, path) in paths.iter().enumerate() {
        assert_eq!(mapped.get(path), Some(line as u64));
    }
}

/// A clone answers on its own, after the layer it came from is gone: a heap
/// layer's clone owns a copy, a mapped layer's clone shares the mapping.
#[test]
fn clones_outlive_their_originals() {
    let paths = sample_paths();
    let paths = &paths[..20_000];
    let layer = FrozenLayer::from_unsorted_iter(paths.iter().map(|p| (p, p.clone()))).unwrap();
    let dir = scratch::dir();
    let file = dir.path().join("paths.memkv");
    layer.save(&file).unwrap();
    let on_heap = layer.clone();
    assert_eq!(on_heap.as_bytes(), layer.as_bytes());
    assert_eq!(on_heap.mapped_bytes(), 0);
    drop(layer);

    let mapped = FrozenLayer::<Vec<u8>>::open(&file).unwrap();
    let shared = mapped.clone();
    assert_eq!(shared.as_bytes().as_ptr(), mapped.as_bytes().as_ptr());
    drop(mapped);

    for clone in [&on_heap, &shared] {
        assert_eq!(clone.len(), paths.len());
        for path in paths {
            assert_eq!(clone.get(path).as_ref(), Some(path));
        }
        let mut keys = clone.iter();
        let mut last: Option<Vec<u8>> = None;
        while let Some((key, value)) = keys.next_entry() {
            assert_eq!(key, value.as_slice());
            assert!(last.as_deref() < Some(key));
            last = Some(key.to_vec());
        }
    }
}
