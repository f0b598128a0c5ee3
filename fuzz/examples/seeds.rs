//! Writes seed inputs into `fuzz/corpus/<target>` (which `cargo fuzz run`
//! reads), so that the fuzzer starts from inputs that parse: for
//! `frozen_file`, small layers with the format's features; for
//! `serde_input`, maps in CBOR and JSON, and a layer as its file's bytes.
//! `cargo run --manifest-path fuzz/Cargo.toml --example seeds`.

use std::collections::BTreeSet;
use std::path::Path;

use memkv::{FastArt, FrozenLayer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/frozen_file");
    std::fs::create_dir_all(&dir)?;
    // Shared prefixes (a jump table), shared suffixes, a node of more than
    // 32 transitions (with an index), a prefix chain, 0x00 and 0xFF, the
    // empty key.
    let mut keys = BTreeSet::new();
    for i in 0..24 {
        for file in ["changelog.gz", "copyright"] {
            keys.insert(format!("usr/share/doc/pkg{i:02}/{file}").into_bytes());
        }
    }
    for byte in b'0'..b'0' + 40 {
        keys.insert([&b"usr/bin/"[..], &[byte]].concat());
    }
    for key in [&b""[..], b"k", b"k\x00", b"k\x00\xFF", b"\xFF\xFF"] {
        keys.insert(key.to_vec());
    }
    let write = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes);
    let numbered = FrozenLayer::from_sorted_iter(keys.iter().zip(0u64..))?;
    write("numbered", numbered.as_bytes())?;
    let spread = FrozenLayer::from_sorted_iter(keys.iter().zip((0u64..).map(|i| i << 40)))?;
    write("wide_values", spread.as_bytes())?;
    let bytes = FrozenLayer::from_sorted_iter(keys.iter().map(|k| (k, k.clone())))?;
    write("byte_values", bytes.as_bytes())?;
    let small = FrozenLayer::from_sorted_iter([("a", 1u64), ("ab", 2), ("b", 3)])?;
    write("small", small.as_bytes())?;
    write("empty", FrozenLayer::<u64>::default().as_bytes())?;
    write("empty_bytes", FrozenLayer::<Vec<u8>>::default().as_bytes())?;

    let dir = dir.with_file_name("serde_input");
    std::fs::create_dir_all(&dir)?;
    let write = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes);
    let map: FastArt<u64> = keys.iter().zip(0u64..).collect();
    let mut cbor = Vec::new();
    ciborium::into_writer(&map, &mut cbor)?;
    write("map.cbor", &cbor)?;
    write(
        "map.json",
        &serde_json::to_vec(&FastArt::from([("a", 1u64), ("ab", 2), ("b", 3)]))?,
    )?;
    let mut cbor = Vec::new();
    ciborium::into_writer(&Upload { layer: numbered }, &mut cbor)?;
    write("layer.cbor", &cbor)?;
    println!("seeds written under {}", dir.parent().unwrap().display());
    Ok(())
}

/// A layer inside a struct, as its file's bytes.
#[derive(serde::Serialize)]
struct Upload {
    #[serde(with = "memkv::frozen::file_bytes")]
    layer: FrozenLayer<u64>,
}
