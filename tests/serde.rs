//! The `serde` feature: the three maps written and read back through a
//! binary format (CBOR, keys as bytes) and human-readable ones (JSON and
//! RON, keys as strings), against a `BTreeMap` model, over keys that stress
//! tries; and `frozen::file_bytes`, against damaged and forged files.
//!
//! `cargo test -p memkv --features serde --test serde`

#![cfg(feature = "serde")]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use memkv::{FastArt, FrozenLayer, FrozenValue, HybridConfig, HybridMap};
use proptest::prelude::*;
use serde::ser::{SerializeMap, Serializer};

#[path = "common/radix_keys.rs"]
mod radix_keys;

/// Entries written as a serde map in the order given, repeated keys and
/// all, with keys as bytes: what another program might send.
struct AsMap<'a>(&'a [(Vec<u8>, u64)]);

impl serde::Serialize for AsMap<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in self.0 {
            map.serialize_entry(&Bytes(key), value)?;
        }
        map.end()
    }
}

struct Bytes<'a>(&'a [u8]);

impl serde::Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self.0)
    }
}

fn to_cbor(value: &impl serde::Serialize) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::into_writer(value, &mut out).unwrap();
    out
}

fn from_cbor<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    ciborium::from_reader(bytes).map_err(|err| err.to_string())
}

fn entries_of_art(map: &FastArt<u64>) -> Vec<(Vec<u8>, u64)> {
    map.iter().map(|(key, value)| (key, *value)).collect()
}

fn entries_of_frozen(map: &FrozenLayer<u64>) -> Vec<(Vec<u8>, u64)> {
    map.iter().collect()
}

/// A hybrid map holding `model`'s entries spread over a base, a sealed
/// delta's worth of writes merged in, and a fresh delta with tombstones
/// over base keys and entries written blind, as `ops` place them.
fn hybrid_of(
    ops: &[(Vec<u8>, Option<u64>)],
    freeze_at: usize,
) -> (HybridMap<u64>, BTreeMap<Vec<u8>, u64>) {
    let map = HybridMap::with_config(HybridConfig::new().manual());
    let mut model = BTreeMap::new();
    for (i, (key, value)) in ops.iter().enumerate() {
        if i == freeze_at {
            map.freeze().unwrap();
        }
        // Blind writes leave their entries pending in the fresh delta, where
        // `len` does not count them until they are settled.
        let blind = i % 2 == 1;
        match value {
            Some(value) => {
                if blind {
                    map.put(key, *value);
                } else {
                    map.insert(key, *value);
                }
                model.insert(key.clone(), *value);
            }
            None => {
                if blind {
                    map.delete(key);
                } else {
                    map.remove(key);
                }
                model.remove(key);
            }
        }
    }
    (map, model)
}

fn op() -> impl Strategy<Value = (Vec<u8>, Option<u64>)> {
    (
        radix_keys::radix_key(),
        prop::option::weighted(0.8, 0..1000u64),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Every map writes the same bytes as the model (so the same entries, in
    /// the same order, with the same count up front), and each reads back
    /// what any of them wrote.
    #[test]
    fn every_map_writes_and_reads_the_models_entries(
        ops in prop::collection::vec(op(), 0..300),
        freeze_at in 0..300usize,
    ) {
        let (hybrid, model) = hybrid_of(&ops, freeze_at);
        let art: FastArt<u64> = model.iter().map(|(k, v)| (k, *v)).collect();
        let frozen = FrozenLayer::from_fast_art(&art).unwrap();
        let sorted: Vec<(Vec<u8>, u64)> = model.clone().into_iter().collect();

        let written = to_cbor(&AsMap(&sorted));
        prop_assert_eq!(&to_cbor(&art), &written, "FastArt");
        prop_assert_eq!(&to_cbor(&frozen), &written, "FrozenLayer");
        prop_assert_eq!(&to_cbor(&hybrid), &written, "HybridMap");

        let art: FastArt<u64> = from_cbor(&written).unwrap();
        prop_assert_eq!(entries_of_art(&art), sorted.clone());
        art.check_invariants().unwrap();
        let frozen: FrozenLayer<u64> = from_cbor(&written).unwrap();
        prop_assert_eq!(frozen.iter().collect::<Vec<_>>(), sorted.clone());
        let hybrid: HybridMap<u64> = from_cbor(&written).unwrap();
        prop_assert_eq!(hybrid.len(), sorted.len());
        prop_assert_eq!(hybrid.iter().collect::<Vec<_>>(), sorted);
    }

    /// Entries in any order, keys repeated: the last value for a key wins,
    /// as with inserts in that order.
    #[test]
    fn entries_in_any_order_read_as_inserted_in_turn(
        entries in prop::collection::vec((radix_keys::radix_key(), 0..1000u64), 0..200),
        sorted_head in 0..200usize,
    ) {
        // Often a sorted run first, as the frozen layer's reader streams
        // such a run into its builder before it falls back to a tree.
        let mut entries = entries;
        let head = sorted_head.min(entries.len());
        entries[..head].sort();
        let model: BTreeMap<Vec<u8>, u64> = entries.iter().cloned().collect();
        let want: Vec<(Vec<u8>, u64)> = model.into_iter().collect();
        let written = to_cbor(&AsMap(&entries));

        let art: FastArt<u64> = from_cbor(&written).unwrap();
        prop_assert_eq!(entries_of_art(&art), want.clone());
        let frozen: FrozenLayer<u64> = from_cbor(&written).unwrap();
        prop_assert_eq!(frozen.iter().collect::<Vec<_>>(), want.clone());
        let hybrid: HybridMap<u64> = from_cbor(&written).unwrap();
        prop_assert_eq!(hybrid.iter().collect::<Vec<_>>(), want.clone());
        prop_assert_eq!(hybrid.len(), want.len());
    }
}

#[test]
fn json_keys_are_strings_and_round_trip() {
    let art: FastArt<u64> = [("usr/bin/ls", 1), ("", 0), ("é/ü", 2)]
        .into_iter()
        .collect();
    let json = serde_json::to_string(&art).unwrap();
    assert_eq!(json, r#"{"":0,"usr/bin/ls":1,"é/ü":2}"#);
    let frozen = FrozenLayer::from_fast_art(&art).unwrap();
    assert_eq!(serde_json::to_string(&frozen).unwrap(), json);
    let hybrid: HybridMap<u64> = art.iter().map(|(k, v)| (k, *v)).collect();
    assert_eq!(serde_json::to_string(&hybrid).unwrap(), json);

    let back: FastArt<u64> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, art);
    let back: FrozenLayer<u64> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, frozen);
    let back: HybridMap<u64> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, hybrid);
    // And as the map any Rust program would read it into.
    let plain: BTreeMap<String, u64> = serde_json::from_str(&json).unwrap();
    assert_eq!(plain.len(), 3);
}

/// RON and YAML answer a request for bytes by decoding a string as base64
/// or by refusing it; keys are read from what they hold.
#[test]
fn ron_keys_round_trip() {
    let art: FastArt<u64> = [("abcd", 1u64), ("a", 3), ("", 0), ("usr/bin/ls", 2)]
        .into_iter()
        .collect();
    let ron = ron::to_string(&art).unwrap();
    assert_eq!(ron, r#"{"":0,"a":3,"abcd":1,"usr/bin/ls":2}"#);
    let back: FastArt<u64> = ron::from_str(&ron).unwrap();
    assert_eq!(back, art);
    let back: FrozenLayer<u64> = ron::from_str(&ron).unwrap();
    assert_eq!(entries_of_frozen(&back), entries_of_art(&art));
    let back: HybridMap<u64> = ron::from_str(&ron).unwrap();
    assert_eq!(back.iter().collect::<Vec<_>>(), entries_of_art(&art));
    // A key that is not UTF-8 goes out as RON's bytes, and comes back.
    let odd: FastArt<u64> = [(&b"\xFF\x00"[..], 1u64)].into_iter().collect();
    let back: FastArt<u64> = ron::from_str(&ron::to_string(&odd).unwrap()).unwrap();
    assert_eq!(back, odd);
}

#[test]
fn a_json_key_with_a_lone_surrogate_is_an_error() {
    assert!(serde_json::from_str::<FastArt<u64>>(r#"{"\ud800":1}"#).is_err());
}

#[test]
fn string_values_round_trip() {
    let layer =
        FrozenLayer::from_sorted_iter([("/a", "Start".to_string()), ("/b", "Ende".to_string())])
            .unwrap();
    let json = serde_json::to_string(&layer).unwrap();
    assert_eq!(json, r#"{"/a":"Start","/b":"Ende"}"#);
    let back: FrozenLayer<String> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, layer);
}

#[test]
fn keys_as_sequences_of_bytes_are_read() {
    // What `BTreeMap<Vec<u8>, _>` writes without serde_bytes.
    let model: BTreeMap<Vec<u8>, u64> = [(vec![0xFF, 0], 1), (vec![], 2), (b"ab".to_vec(), 3)]
        .into_iter()
        .collect();
    let written = to_cbor(&model);
    let want: Vec<(Vec<u8>, u64)> = model.into_iter().collect();
    let art: FastArt<u64> = from_cbor(&written).unwrap();
    assert_eq!(entries_of_art(&art), want);
    let frozen: FrozenLayer<u64> = from_cbor(&written).unwrap();
    assert_eq!(frozen.iter().collect::<Vec<_>>(), want);
    let hybrid: HybridMap<u64> = from_cbor(&written).unwrap();
    assert_eq!(hybrid.iter().collect::<Vec<_>>(), want);
}

#[test]
fn a_key_that_is_not_utf8_is_an_error_in_json_not_a_panic() {
    let art: FastArt<u64> = [(&b"\xFF"[..], 1)].into_iter().collect();
    assert!(serde_json::to_string(&art).is_err());
    // A binary format takes it.
    let back: FastArt<u64> = from_cbor(&to_cbor(&art)).unwrap();
    assert_eq!(back, art);
}

#[test]
fn bad_input_is_an_error() {
    for json in [
        "[1,2]",
        "7",
        r#"{"a":"one"}"#,
        r#"{"a":1,"#,
        r#"{"a":-1}"#,
        "",
    ] {
        assert!(
            serde_json::from_str::<FastArt<u64>>(json).is_err(),
            "FastArt took {json:?}"
        );
        assert!(
            serde_json::from_str::<FrozenLayer<u64>>(json).is_err(),
            "FrozenLayer took {json:?}"
        );
        assert!(
            serde_json::from_str::<HybridMap<u64>>(json).is_err(),
            "HybridMap took {json:?}"
        );
    }
    // Out of order before the error: the frozen layer's reader has moved
    // to its tree by then.
    let json = r#"{"b":1,"a":2,"c":"three"}"#;
    assert!(serde_json::from_str::<FrozenLayer<u64>>(json).is_err());
    let message = serde_json::from_str::<FastArt<u64>>("[]")
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("a map from keys to values, for a FastArt"),
        "{message}"
    );

    // Every truncation of a good encoding.
    let entries: Vec<(Vec<u8>, u64)> = (0..40u64)
        .map(|i| (format!("k/{i:03}").into_bytes(), i))
        .collect();
    let written = to_cbor(&AsMap(&entries));
    for len in 0..written.len() {
        let cut = &written[..len];
        assert!(
            from_cbor::<FastArt<u64>>(cut).is_err(),
            "FastArt took {len} bytes"
        );
        assert!(
            from_cbor::<FrozenLayer<u64>>(cut).is_err(),
            "FrozenLayer took {len} bytes"
        );
        assert!(
            from_cbor::<HybridMap<u64>>(cut).is_err(),
            "HybridMap took {len} bytes"
        );
    }

    // A key claiming 2^60 byte values: an error, not an allocation of that.
    let huge = [0xA1, 0x9B, 0x10, 0, 0, 0, 0, 0, 0, 0, 0x00];
    assert!(from_cbor::<FastArt<u64>>(&huge).is_err());
}

/// While another thread writes and merges run, every map written is a
/// whole snapshot: its count up front matches its entries, so the encoding
/// reads back in full, with no bytes left over. Blind writes leave entries
/// pending, in the fresh delta and in sealed ones until their merge counts
/// them; deltas of a quarter of the base keep those counts slow enough
/// that some snapshot usually falls between a seal and its count.
#[test]
#[cfg_attr(target_os = "wasi", ignore = "needs threads")]
fn a_hybrid_map_written_under_writes_is_one_snapshot() {
    let config = HybridConfig::new().min_delta_keys(1_000).key_ratio(0.25);
    let map: HybridMap<u64> = (0..8_000u64).map(|i| (format!("k/{i:05}"), i)).collect();
    let map = HybridMap::from_frozen(FrozenLayer::from_sorted_iter(map.iter()).unwrap(), config);
    let stop = AtomicBool::new(false);
    /// Stops the writer however the reader ends: a scope waits for it.
    struct StopOnDrop<'a>(&'a AtomicBool);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let key = format!("k/{:05}", (i * 7919) % 12_000);
                match i % 6 {
                    0 => drop(map.remove(&key)),
                    1 => map.delete(&key),
                    2 | 3 => drop(map.insert(&key, i)),
                    _ => map.put(&key, i),
                }
                i += 1;
            }
        });
        let _stop = StopOnDrop(&stop);
        for _ in 0..100 {
            let written = to_cbor(&map);
            let mut reader = &written[..];
            // As written, not into a map, which would hide a repeated key.
            let plain: ciborium::Value = ciborium::from_reader(&mut reader).unwrap();
            assert!(reader.is_empty(), "{} bytes after the map", reader.len());
            let keys: Vec<Vec<u8>> = (plain.into_map().unwrap().into_iter())
                .map(|(key, _)| key.into_bytes().unwrap())
                .collect();
            assert!(
                keys.windows(2).all(|pair| pair[0] < pair[1]),
                "keys out of order"
            );
            assert!(keys.iter().all(|key| key.starts_with(b"k/")));
            let back: FastArt<u64> = from_cbor(&written).unwrap();
            assert_eq!(back.len(), keys.len());
        }
    });
}

/// A layer as its file's bytes, inside a struct of the user's.
#[derive(serde::Serialize, serde::Deserialize)]
struct Dictionary<V: memkv::FrozenValue> {
    name: String,
    #[serde(with = "memkv::frozen::file_bytes")]
    layer: FrozenLayer<V>,
}

fn file_bytes_round_trip<V>(entries: Vec<(&str, V)>)
where
    V: memkv::FrozenValue + PartialEq + std::fmt::Debug,
{
    let layer = FrozenLayer::from_sorted_iter(entries).unwrap();
    let dictionary = Dictionary {
        name: "d".into(),
        layer,
    };
    let written = to_cbor(&dictionary);
    let back: Dictionary<V> = from_cbor(&written).unwrap();
    assert!(back.layer == dictionary.layer);
    // A human-readable format writes the bytes as numbers, and reads them.
    let json = serde_json::to_string(&dictionary).unwrap();
    let back: Dictionary<V> = serde_json::from_str(&json).unwrap();
    assert!(back.layer == dictionary.layer);
    // The buffer the bytes grew in is trimmed: the layer keeps it.
    assert_eq!(back.layer.memory_usage(), dictionary.layer.memory_usage());
}

#[test]
fn a_layer_as_file_bytes_round_trips() {
    file_bytes_round_trip(vec![("", 0u64), ("a", u64::MAX), ("ab", 7)]);
    file_bytes_round_trip(vec![("a", "x".to_string()), ("b", String::new())]);
    file_bytes_round_trip(vec![("\u{0}", vec![0xFFu8; 300])]);
    file_bytes_round_trip::<u8>(vec![]);
}

/// The bytes of a layer wrapped as a `Dictionary` would be, in CBOR.
fn dictionary_cbor(layer_bytes: &[u8]) -> Vec<u8> {
    struct Raw<'a>(&'a [u8]);
    impl serde::Serialize for Raw<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeStruct;
            let mut s = serializer.serialize_struct("Dictionary", 2)?;
            s.serialize_field("name", "d")?;
            s.serialize_field("layer", &Bytes(self.0))?;
            s.end()
        }
    }
    to_cbor(&Raw(layer_bytes))
}

#[test]
fn damaged_or_inconsistent_file_bytes_are_errors() {
    let keys: Vec<String> = (0..300)
        .map(|i| format!("usr/share/doc/p{}/f{}", i % 17, i))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    let layer = FrozenLayer::from_sorted_iter(sorted.iter().zip(0u64..)).unwrap();
    let good = layer.as_bytes().to_vec();
    assert!(from_cbor::<Dictionary<u64>>(&dictionary_cbor(&good)).is_ok());
    assert!(
        from_cbor::<Dictionary<u32>>(&dictionary_cbor(&good)).is_err(),
        "another value type"
    );
    for at in 0..good.len() {
        let mut bytes = good.clone();
        bytes[at] ^= 0x10;
        assert!(
            from_cbor::<Dictionary<u64>>(&dictionary_cbor(&bytes)).is_err(),
            "flip at {at}"
        );
    }
    // Bytes as a list claiming 2^60 elements: an error, not a reserve.
    let mut huge = vec![0xA2, 0x64];
    huge.extend(b"name");
    huge.extend([0x61, b'd', 0x65]);
    huge.extend(b"layer");
    huge.extend([0x9B, 0x10, 0, 0, 0, 0, 0, 0, 0, 0x00]);
    assert!(from_cbor::<Dictionary<u64>>(&huge).is_err());
    // Forged: node bytes changed and the checksum made valid again. What
    // is accepted must answer as a whole layer does.
    let (mut refused, mut state) = (0, 0x9E37_79B9_7F4A_7C15u64);
    for _ in 0..400 {
        let mut bytes = good.clone();
        for _ in 0..3 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = 48 + (state as usize) % (good.len() / 2);
            bytes[at] = (state >> 32) as u8;
        }
        let end = bytes.len();
        let crc = crc32fast::hash(&bytes[..end - 4]);
        bytes[end - 4..].copy_from_slice(&crc.to_le_bytes());
        match from_cbor::<Dictionary<u64>>(&dictionary_cbor(&bytes)) {
            Err(_) => refused += 1,
            Ok(back) => {
                let entries: Vec<(Vec<u8>, u64)> = back.layer.iter().collect();
                assert_eq!(entries.len(), back.layer.len());
                for (key, value) in &entries {
                    assert_eq!(back.layer.get(key), Some(*value));
                }
            }
        }
    }
    assert!(refused > 300, "only {refused} of 400 forgeries refused");
}

/// A layer of `V::default()` values whose fst is a ladder of `levels` nodes
/// with two ways down each, numbered as the builders number: 2^levels keys,
/// all consistent, in a few hundred bytes (a column of equal values does
/// not grow with the keys).
fn ladder_layer<V: FrozenValue + Default>(levels: u32) -> Vec<u8> {
    let small = FrozenLayer::from_sorted_iter((0..8u8).map(|i| ([i], V::default()))).unwrap();
    let file = small.as_bytes();
    let field = |at: usize| u64::from_le_bytes(file[at..at + 8].try_into().unwrap()) as usize;
    let trailer = file.len() - 32;
    let (fst_len, column_len) = (field(trailer + 8), field(trailer + 16));
    let rest = &file[32 + fst_len..trailer]; // the column and the jump table

    let mut nodes = vec![0x00, 0x00, 0x40]; // a final node
    for k in 1..=levels {
        nodes.extend((1u64 << (k - 1)).to_le_bytes());
        nodes.extend(0u64.to_le_bytes());
        nodes.extend([1, 1, b'b', b'a', 0x18, 0x02]);
    }
    let root = (16 + nodes.len() - 1) as u64;
    let keys = 1u64 << levels;
    let mut fst = 3u64.to_le_bytes().to_vec();
    fst.extend(0u64.to_le_bytes());
    fst.extend(&nodes);
    fst.extend(keys.to_le_bytes());
    fst.extend(root.to_le_bytes());
    fst.extend([0; 4]);

    let mut forged = file[..32].to_vec();
    forged.extend(&fst);
    forged.extend(rest);
    forged.extend(keys.to_le_bytes());
    forged.extend((fst.len() as u64).to_le_bytes());
    forged.extend((column_len as u64).to_le_bytes());
    forged.extend(&file[file.len() - 8..file.len() - 4]);
    let crc = crc32fast::hash(&forged);
    forged.extend(crc.to_le_bytes());
    forged
}

#[derive(serde::Deserialize)]
struct Bounded {
    #[allow(dead_code)]
    name: String,
    #[serde(deserialize_with = "at_most_a_million")]
    layer: FrozenLayer<()>,
}

fn at_most_a_million<'de, D: serde::Deserializer<'de>>(d: D) -> Result<FrozenLayer<()>, D::Error> {
    memkv::frozen::file_bytes::deserialize_at_most(d, 1_000_000)
}

#[test]
fn a_layer_claiming_more_keys_than_allowed_is_refused_before_its_check() {
    // Consistent: accepted, and walked in full, by the unbounded reader.
    let small = dictionary_cbor(&ladder_layer::<()>(12));
    let back: Dictionary<()> = from_cbor(&small).unwrap();
    assert_eq!((back.layer.len(), back.layer.keys().count()), (4096, 4096));
    let back: Bounded = from_cbor(&small).unwrap();
    assert_eq!(back.layer.len(), 4096);
    // 2^40 keys in a few hundred bytes: refused at once (walking them
    // would take days).
    let huge = dictionary_cbor(&ladder_layer::<()>(40));
    assert!(huge.len() < 1024);
    let refused = from_cbor::<Bounded>(&huge).err().unwrap();
    // A 32-bit target refuses it sooner: its usize cannot count the keys.
    let why = if cfg!(target_pointer_width = "64") {
        "claims 1099511627776 keys, more than the 1000000 allowed"
    } else {
        "claims 1099511627776 keys, more than this machine can count"
    };
    assert!(refused.contains(why), "{refused}");
    // Empty byte strings too, whose offsets `from_bytes` used to check one
    // by one, all 2^40 of them, before the limit was looked at.
    let huge = ladder_layer::<Vec<u8>>(40);
    let lent = serde::de::value::BytesDeserializer::<serde::de::value::Error>::new(&huge);
    let refused = memkv::frozen::file_bytes::deserialize_at_most::<Vec<u8>, _>(lent, 1_000_000);
    assert!(refused.err().unwrap().to_string().contains(why));
}

/// The limit admits a layer of exactly that many keys; borrowed bytes
/// (a format that lends them rather than handing over a buffer) read as
/// owned ones; and input of the wrong kind says what was expected.
#[test]
fn file_bytes_at_the_limit_borrowed_and_of_the_wrong_kind() {
    use serde::de::IntoDeserializer;
    use serde::de::value::{BytesDeserializer, Error as ValueError, I64Deserializer};

    let layer = FrozenLayer::from_sorted_iter([("a", 1u64), ("b", 2), ("c", 3)]).unwrap();
    let lent = || BytesDeserializer::<ValueError>::new(layer.as_bytes());
    let at_most = memkv::frozen::file_bytes::deserialize_at_most::<u64, _>;
    assert!(at_most(lent(), 3).unwrap() == layer);
    let refused = at_most(lent(), 2).err().unwrap().to_string();
    assert!(
        refused.contains("claims 3 keys, more than the 2 allowed"),
        "{refused}"
    );
    assert!(memkv::frozen::file_bytes::deserialize::<u64, _>(lent()).unwrap() == layer);

    let number: I64Deserializer<ValueError> = 7i64.into_deserializer();
    let wrong = memkv::frozen::file_bytes::deserialize::<u64, _>(number)
        .err()
        .unwrap()
        .to_string();
    assert!(
        wrong.contains("expected a FrozenLayer's file, as bytes"),
        "{wrong}"
    );
    // A map's key of the wrong kind (in RON, which asks the key for
    // whatever it holds).
    let wrong = ron::from_str::<FastArt<u64>>("{1: 2}")
        .unwrap_err()
        .to_string();
    assert!(
        wrong.contains("a key: a string, bytes, or a sequence of byte values"),
        "{wrong}"
    );
}
