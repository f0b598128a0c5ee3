//! Building frozen layers: builder errors carry the offending keys, the
//! conveniences agree with each other, and every supported value type
//! survives a save and open.

use std::io::BufWriter;

use memkv::frozen::automaton::{Automaton, Str, Subsequence};
use memkv::frozen::{FrozenValue, IntColumn};
use memkv::{Error, FastArt, FrozenLayer, FrozenLayerBuilder};

#[path = "common/scratch.rs"]
mod scratch;

#[test]
fn out_of_order_key_is_reported_with_both_keys() {
    let mut builder = FrozenLayerBuilder::memory();
    builder.insert("b", 1u64).unwrap();
    match builder.insert("a", 2) {
        Err(Error::OutOfOrder { previous, got }) => {
            assert_eq!(
                (previous.as_slice(), got.as_slice()),
                (&b"b"[..], &b"a"[..])
            );
        }
        other => panic!("expected OutOfOrder, got {other:?}"),
    }
    // A prefix of the previous key sorts before it, as does the empty key.
    assert!(matches!(builder.insert("", 3), Err(Error::OutOfOrder { got, .. }) if got.is_empty()));
    // The rejected keys left the builder as it was.
    builder.insert("c", 4).unwrap();
    let layer = builder.into_layer().unwrap();
    assert_eq!(
        layer.iter().collect::<Vec<_>>(),
        [(b"b".to_vec(), 1), (b"c".to_vec(), 4)]
    );
}

#[test]
fn duplicate_key_is_reported() {
    let mut builder = FrozenLayerBuilder::memory();
    builder.insert(b"same\x00\xFF", ()).unwrap();
    match builder.insert(b"same\x00\xFF", ()) {
        Err(Error::DuplicateKey { key }) => assert_eq!(key, b"same\x00\xFF"),
        other => panic!("expected DuplicateKey, got {other:?}"),
    }
    let message = builder.insert(b"same\x00\xFF", ()).unwrap_err().to_string();
    assert!(message.contains("same\\x00\\xff"), "{message}");
    assert_eq!(builder.len(), 1);
}

#[test]
fn sorted_iter_rejects_unsorted_input() {
    let result = FrozenLayer::from_sorted_iter([("a", 1u8), ("c", 2), ("b", 3)]);
    assert!(
        matches!(result, Err(Error::OutOfOrder { previous, got }) if previous == b"c" && got == b"b")
    );
    let result = FrozenLayer::from_sorted_iter([("a", 1u8), ("a", 2)]);
    assert!(matches!(result, Err(Error::DuplicateKey { key }) if key == b"a"));
}

#[test]
fn unsorted_iter_keeps_the_last_duplicate() {
    let layer =
        FrozenLayer::from_unsorted_iter([("k", 1u32), ("a", 5), ("k", 2), ("k", 3), ("a", 6)])
            .unwrap();
    assert_eq!(
        layer.iter().collect::<Vec<_>>(),
        [(b"a".to_vec(), 6), (b"k".to_vec(), 3)]
    );
}

#[test]
fn long_keys_are_shown_shortened_in_errors() {
    let long = vec![b'x'; 5000];
    let mut builder = FrozenLayerBuilder::memory();
    builder.insert(&long, 0u8).unwrap();
    let err = builder.insert(&long, 0).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("(5000 bytes)") && message.len() < 300,
        "{message}"
    );
    assert!(matches!(err, Error::DuplicateKey { key } if key.len() == 5000));
}

#[test]
fn freezing_a_fast_art_keeps_every_entry() {
    let mut art = FastArt::new();
    for i in 0..500u64 {
        art.insert(format!("{:x}/{}", i % 17, i), i * 3);
    }
    art.insert("", 7);
    art.insert(b"\xFF\xFF", 8);
    let layer = FrozenLayer::from_fast_art(&art).unwrap();
    assert_eq!(layer.len(), art.len());
    let from_art: Vec<(Vec<u8>, u64)> = art.iter().map(|(k, v)| (k, *v)).collect();
    assert_eq!(layer.iter().collect::<Vec<_>>(), from_art);

    let mut blobs = FastArt::new();
    blobs.insert("one", b"1".to_vec());
    blobs.insert("empty", Vec::new());
    let layer = FrozenLayer::from_fast_art(&blobs).unwrap();
    assert_eq!(layer.get("one"), Some(b"1".to_vec()));
    assert_eq!(layer.get("empty"), Some(Vec::new()));
}

#[test]
fn a_builder_can_write_straight_to_a_file() {
    let dir = scratch::dir();
    let path = dir.path().join("streamed.memkv");
    let file = std::fs::File::create(&path).unwrap();
    let mut builder = FrozenLayerBuilder::new(BufWriter::new(file)).unwrap();
    assert!(builder.is_empty());
    for i in 0..2000u32 {
        builder.insert(format!("key{i:05}"), i).unwrap();
    }
    assert_eq!(builder.len(), 2000);
    assert!(!builder.is_empty());
    assert_eq!(
        format!("{builder:?}"),
        "FrozenLayerBuilder { value_type: \"u32\", len: 2000, .. }"
    );
    // Output-sized: the fst so far, 2000 values of 11 bits (344 words), and
    // the first node cache and fst buffer (256 + 4 KiB); growth may leave
    // some capacity spare, never a word per value.
    let output = builder.bytes_written() as usize + 344 * 8;
    let held = builder.memory_usage();
    assert!(
        (output + FIRST_CACHE..=2 * output + FIRST_CACHE + (4 << 10)).contains(&held),
        "builder holds {held} bytes for {output} bytes of output"
    );
    let written = builder.bytes_written();
    let writer = builder.finish().unwrap();
    // Finishing flushes everything through to the file.
    assert!(writer.buffer().is_empty());
    let file = writer.into_inner().unwrap();
    file.sync_all().unwrap();
    // What was written before finishing is the header and all of the fst
    // but its last nodes and footer; the column (16 + 344 * 8 bytes), the
    // jump table and the trailer follow, and the trailer gives the fst's
    // length (the 8 bytes 24 before the end).
    let bytes = std::fs::read(&path).unwrap();
    let fst_len = u64::from_le_bytes(bytes[bytes.len() - 24..][..8].try_into().unwrap());
    let column_len = u64::from_le_bytes(bytes[bytes.len() - 16..][..8].try_into().unwrap());
    assert_eq!(column_len, 16 + 344 * 8);
    let fst_end = 32 + fst_len;
    assert!(
        written <= fst_end && written + 64 >= fst_end,
        "{written} bytes written before finishing, {fst_end} after"
    );
    let layer = FrozenLayer::<u32>::open(&path).unwrap();
    assert_eq!(layer.len(), 2000);
    assert_eq!(layer.get("key01999"), Some(1999));
    assert_eq!(layer.nth(1234), Some((b"key01234".to_vec(), 1234)));
    assert_eq!(
        format!("{layer:?}"),
        format!(
            "FrozenLayer {{ value_type: \"u32\", len: 2000, bytes: {}, jump_depth: 5, mapped_from: Some({:?}) }}",
            bytes.len(),
            path
        )
    );
    // Building in memory gives the very same bytes, and so does writing
    // the layer out.
    let in_memory =
        FrozenLayer::from_sorted_iter((0..2000u32).map(|i| (format!("key{i:05}"), i))).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), in_memory.as_bytes());
    assert!(format!("{in_memory:?}").ends_with("mapped_from: None }"));
    let mut out = Vec::new();
    in_memory.write_to(&mut out).unwrap();
    assert_eq!(out, in_memory.as_bytes());
    let mut full = [0u8; 100];
    assert!(matches!(
        in_memory.write_to(&mut full[..]),
        Err(Error::Io { .. })
    ));
}

/// The fst writer's node cache when it starts (4,096 buckets of 64 bytes).
const FIRST_CACHE: usize = 256 << 10;

/// The builder's memory counts the values it holds as well as the fst, whose
/// keys here are few bytes.
#[test]
fn a_builder_counts_the_values_it_holds() {
    let mut builder = FrozenLayerBuilder::<Vec<u8>, _>::memory();
    for i in 0..100u32 {
        builder.insert(format!("{i:03}"), vec![7; 1000]).unwrap();
    }
    let held = builder.memory_usage();
    assert!(
        (100_000 + FIRST_CACHE..300_000 + FIRST_CACHE).contains(&held),
        "{held} bytes"
    );
    let layer = builder.into_layer().unwrap();
    assert_eq!(layer.get("042"), Some(vec![7; 1000]));

    // 100,000 values of 64 bits: 800,000 bytes packed.
    let mut builder = FrozenLayerBuilder::<u64, _>::memory();
    let value = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for i in 0..100_000 {
        builder.insert(format!("{i:06}"), value(i)).unwrap();
    }
    let held = builder.memory_usage();
    assert!((800_000..2_000_000).contains(&held), "{held} bytes");
    let layer = builder.into_layer().unwrap();
    assert_eq!(layer.get("054321"), Some(value(54321)));
}

/// Saves and reopens a layer of `V`, checking every value.
fn round_trip<V: FrozenValue + Clone + PartialEq + std::fmt::Debug>(entries: &[(&str, V)]) {
    let layer = FrozenLayer::from_sorted_iter(entries.iter().cloned()).unwrap();
    let dir = scratch::dir();
    let path = dir.path().join("values.memkv");
    layer.save(&path).unwrap();
    let opened = FrozenLayer::<V>::open(&path).unwrap();
    for (key, value) in entries {
        assert_eq!(
            opened.get(key).as_ref(),
            Some(value),
            "{} key {key}",
            V::TYPE_NAME
        );
    }
    assert_eq!(opened.len(), entries.len());
}

#[test]
fn every_value_type_round_trips_through_a_file() {
    round_trip(&[("a", 0u8), ("b", 255), ("c", 7)]);
    round_trip(&[("a", u16::MAX), ("b", 0)]);
    round_trip(&[("a", 1u32), ("b", u32::MAX)]);
    round_trip(&[("a", u64::MAX), ("b", 0), ("c", 1 << 40)]);
    round_trip(&[("a", i8::MIN), ("b", i8::MAX)]);
    round_trip(&[("a", -300i16), ("b", 300)]);
    round_trip(&[("a", i32::MIN), ("b", -1), ("c", i32::MAX)]);
    round_trip(&[("a", i64::MIN), ("b", -1), ("c", 0), ("d", i64::MAX)]);
    round_trip(&[("a", true), ("b", false)]);
    round_trip(&[("a", ()), ("b", ())]);
    round_trip(&[("a", b"".to_vec()), ("b", vec![0, 255, 3])]);
    round_trip(&[
        ("a", Box::<[u8]>::from(&b"xy"[..])),
        ("b", Box::<[u8]>::from(&b""[..])),
    ]);
}

#[test]
fn strings_and_machine_integers_round_trip() {
    round_trip(&[
        ("a", String::new()),
        ("b", "grüße".to_string()),
        ("c", "x".repeat(3000)),
    ]);
    round_trip(&[("a", Box::<str>::from("")), ("b", Box::<str>::from("ü"))]);
    round_trip(&[("a", usize::MAX), ("b", 0)]);
    round_trip(&[("a", isize::MIN), ("b", -1), ("c", isize::MAX)]);
}

#[test]
fn byte_values_are_lent_from_the_mapped_file() {
    let entries: Vec<(String, Vec<u8>)> = (0..2000)
        .map(|i| (format!("key{i:05}"), vec![(i % 251) as u8; i % 40]))
        .collect();
    let layer = FrozenLayer::from_sorted_iter(entries.iter().cloned()).unwrap();
    let dir = scratch::dir();
    let path = dir.path().join("bytes.memkv");
    layer.save(&path).unwrap();
    let opened = FrozenLayer::<Vec<u8>>::open(&path).unwrap();
    let file = opened.as_bytes().as_ptr_range();
    for (key, value) in &entries {
        let lent = opened.get_encoded(key).unwrap();
        assert_eq!(lent, &value[..], "{key}");
        // Borrowed from the mapping, not copied (an empty value may point
        // anywhere).
        assert!(value.is_empty() || file.contains(&lent.as_ptr()), "{key}");
    }
    assert_eq!(opened.get_encoded("key99999"), None);
    let mut scan = opened.range("key00100".."key00200");
    let mut expected = entries[100..200].iter();
    while let Some((key, value)) = scan.next_encoded() {
        let (k, v) = expected.next().unwrap();
        assert_eq!((key, value), (k.as_bytes(), &v[..]));
    }
    assert!(expected.next().is_none());
}

#[test]
fn byte_strings_do_not_open_as_strings() {
    // Byte strings need not be UTF-8; a layer of them is not one of strings.
    let bytes = FrozenLayer::from_sorted_iter([("a", vec![0xFF_u8])]).unwrap();
    assert!(matches!(
        FrozenLayer::<String>::from_bytes(bytes.as_bytes().to_vec()),
        Err(Error::ValueTypeMismatch { .. })
    ));
    let strings = FrozenLayer::from_sorted_iter([("a", "é".to_string())]).unwrap();
    let boxed = FrozenLayer::<Box<str>>::from_bytes(strings.as_bytes().to_vec()).unwrap();
    assert_eq!(boxed.get("a").as_deref(), Some("é"));
    assert!(matches!(
        FrozenLayer::<u64>::from_bytes(
            FrozenLayer::from_sorted_iter([("a", 1_usize)])
                .unwrap()
                .as_bytes()
                .to_vec()
        ),
        Err(Error::ValueTypeMismatch { .. })
    ));
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Celsius(i16);

impl FrozenValue for Celsius {
    const TYPE_NAME: &'static str = "Celsius";
    type Column = IntColumn;
    fn encode(&self) -> u64 {
        self.0.encode()
    }
    fn decode(encoded: u64) -> Self {
        Celsius(i16::decode(encoded))
    }
}

#[test]
fn a_user_value_type_round_trips_and_is_told_apart() {
    round_trip(&[("oslo", Celsius(-12)), ("rome", Celsius(31))]);
    let layer = FrozenLayer::from_sorted_iter([("oslo", Celsius(-12))]).unwrap();
    assert!(matches!(
        FrozenLayer::<i16>::from_bytes(layer.as_bytes().to_vec()),
        Err(Error::ValueTypeMismatch { .. })
    ));
}

#[test]
fn columns_are_as_small_as_the_values_allow() {
    let keys: Vec<String> = (0..4096).map(|i| format!("{i:05}")).collect();
    let size = |layer: &[u8]| layer.len();
    let unit = FrozenLayer::from_sorted_iter(keys.iter().map(|k| (k, ()))).unwrap();
    let bits_12 =
        FrozenLayer::from_sorted_iter(keys.iter().enumerate().map(|(i, k)| (k, i as u64))).unwrap();
    let offset = FrozenLayer::from_sorted_iter(
        keys.iter()
            .enumerate()
            .map(|(i, k)| (k, 1u64 << 50 | i as u64)),
    )
    .unwrap();
    let negative =
        FrozenLayer::from_sorted_iter(keys.iter().enumerate().map(|(i, k)| (k, i as i64 - 2048)))
            .unwrap();
    // 4096 values of 12 bits are 6144 bytes of column over the unit layer,
    // wherever the values sit on the number line.
    for layer in [bits_12.as_bytes(), offset.as_bytes()] {
        assert_eq!(size(layer) - size(unit.as_bytes()), 4096 * 12 / 8);
    }
    assert_eq!(
        size(negative.as_bytes()) - size(unit.as_bytes()),
        4096 * 12 / 8
    );
}

#[test]
fn automata_search_the_keys() {
    let layer = FrozenLayer::from_sorted_iter([
        ("usr/bin/cat", 1u16),
        ("usr/bin/cut", 2),
        ("usr/lib/libc.so", 3),
        ("var/log/syslog", 4),
    ])
    .unwrap();
    let bin: Vec<u16> = layer
        .search(Str::new("usr/bin/").starts_with())
        .map(|(_, v)| v)
        .collect();
    assert_eq!(bin, [1, 2]);
    let sub: Vec<u16> = layer
        .search(Subsequence::new("ulc"))
        .map(|(_, v)| v)
        .collect();
    assert_eq!(sub, [3]);
    let either: Vec<u16> = layer
        .search(Str::new("var/log/syslog").union(Str::new("usr/bin/cat")))
        .map(|(_, v)| v)
        .collect();
    assert_eq!(either, [1, 4]);
    let mut lending = layer.search(Subsequence::new("cut"));
    assert_eq!(lending.next_entry(), Some((&b"usr/bin/cut"[..], 2)));
    assert_eq!(lending.next_entry(), None);
    let layer_debug = format!("{layer:?}");
    assert_eq!(
        format!("{lending:?}"),
        format!("Search {{ layer: {layer_debug}, .. }}")
    );
    assert_eq!(
        format!("{:?}", layer.iter()),
        format!("Iter {{ layer: {layer_debug}, .. }}")
    );
}

#[cfg(feature = "levenshtein")]
#[test]
fn levenshtein_finds_near_keys() {
    use memkv::frozen::automaton::Levenshtein;
    let layer = FrozenLayer::from_sorted_iter([("cat", 1u8), ("cot", 2), ("dog", 3)]).unwrap();
    let near: Vec<u8> = layer
        .search(Levenshtein::new("cat", 1).unwrap())
        .map(|(_, v)| v)
        .collect();
    assert_eq!(near, [1, 2]);
}
