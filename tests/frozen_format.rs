//! The file format, pinned: layers saved by each format version (the
//! files `tests/data/format-v{N}-{kind}.memkv`) must open and answer the
//! same on every platform and in every later version, and today's writers
//! (in memory, and streaming into any `Write`) must write the current
//! version's files byte for byte. A change to the format fails here: it
//! needs a new version, which still reads the old files, and files of its
//! own, which `MEMKV_BLESS=1 cargo test --test frozen_format` writes (it
//! writes only files that are missing, never over a pinned one).
//!
//! `.ci/run` runs this on x86-64 and on 32-bit x86; it passed on
//! big-endian s390x (under qemu) too.

use std::path::PathBuf;

use memkv::{FrozenLayer, FrozenLayerBuilder, FrozenValue};

/// Keys a radix tree and an fst both find awkward: the empty key, 0x00 and
/// 0xFF bytes, keys that are prefixes of others, long shared prefixes
/// (enough keys under 24 shared bytes for a jump table) and shared
/// suffixes, and a node of more than 32 transitions.
fn keys() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"\x00".to_vec(),
        b"\x00\xff".to_vec(),
        b"k".to_vec(),
        b"k\x00".to_vec(),
        b"k\x00\xff".to_vec(),
        b"\xff\xff".to_vec(),
    ];
    for package in ["bash", "coreutils", "libc6", "python3.11", "zlib1g"] {
        for file in ["changelog.Debian.gz", "copyright", "README", "NEWS.gz"] {
            keys.push(format!("usr/share/doc/{package}/{file}").into_bytes());
        }
    }
    // A jump table needs 128 keys, a quarter of them under one prefix.
    for i in 0..60 {
        keys.push(format!("usr/lib/x86_64-linux-gnu/libpinned{i:02}.so.1").into_bytes());
    }
    for byte in 0x20..0x60u8 {
        keys.push([&b"usr/bin/"[..], &[byte]].concat());
    }
    keys.sort();
    keys.dedup();
    keys
}

/// Each key's value: integers of every width, so the column packs them at
/// the widest.
fn number(i: usize) -> u64 {
    (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (i % 64)
}

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// The format version in a layer file's header.
fn version_of(file: &[u8]) -> u32 {
    u32::from_le_bytes(file[8..12].try_into().unwrap())
}

/// Checks that today's writers write the pinned file of the current version
/// for `entries`, and that the pinned file of every version (of values of
/// `kind`) opens, memory-mapped and from its bytes, and holds `entries`.
fn check<V>(kind: &str, entries: Vec<(Vec<u8>, V)>)
where
    V: FrozenValue + Clone + PartialEq + std::fmt::Debug,
{
    let written = FrozenLayer::from_sorted_iter(entries.iter().cloned()).unwrap();
    let mut streamed = FrozenLayerBuilder::new(Vec::new()).unwrap();
    for (key, value) in &entries {
        streamed.insert(key, value.clone()).unwrap();
    }
    let streamed = streamed.finish().unwrap();
    assert!(streamed == written.as_bytes(), "the two writers differ");

    let current = version_of(written.as_bytes());
    let name = format!("format-v{current}-{kind}.memkv");
    if std::env::var_os("MEMKV_BLESS").is_some() && !path(&name).exists() {
        written.save(path(&name)).unwrap();
    }
    let pinned = std::fs::read(path(&name))
        .unwrap_or_else(|err| panic!("{name}: {err} (MEMKV_BLESS=1 writes a missing file)"));
    assert!(
        written.as_bytes() == pinned,
        "the writer's bytes differ from {name}: a format change needs a new version"
    );

    for version in 1..=current {
        let name = format!("format-v{version}-{kind}.memkv");
        let Ok(pinned) = std::fs::read(path(&name)) else {
            continue;
        };
        assert_eq!(version_of(&pinned), version, "{name}");
        let opened = FrozenLayer::<V>::open(path(&name)).unwrap();
        let from_bytes = FrozenLayer::<V>::from_bytes(pinned).unwrap();
        for layer in [&opened, &from_bytes] {
            if version > 1 {
                assert!(!format!("{layer:?}").contains("jump_depth: 0"), "{layer:?}");
            }
            layer.verify_structure().unwrap();
            assert_eq!(layer.len(), entries.len());
            let read: Vec<(Vec<u8>, V)> = layer.iter().collect();
            assert_eq!(read, entries, "{name}");
            for (key, value) in &entries {
                assert_eq!(layer.get(key).as_ref(), Some(value), "{name}");
            }
            assert_eq!(layer.get(b"usr/share/doc/bash/"), None);
        }
    }
}

#[test]
fn integers_read_and_write_as_pinned() {
    let entries = keys()
        .into_iter()
        .enumerate()
        .map(|(i, k)| (k, number(i)))
        .collect();
    check::<u64>("u64", entries);
}

#[test]
fn byte_strings_read_and_write_as_pinned() {
    let entries = keys()
        .into_iter()
        .enumerate()
        .map(|(i, k)| {
            let value = k.iter().rev().copied().chain([i as u8; 3]).collect();
            (k, value)
        })
        .collect();
    check::<Vec<u8>>("bytes", entries);
}

#[test]
fn strings_read_and_write_as_pinned() {
    let entries = keys()
        .into_iter()
        .enumerate()
        .map(|(i, k)| (k, format!("{i} é ✓").repeat(i % 4)))
        .collect();
    check::<String>("string", entries);
}
