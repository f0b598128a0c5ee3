//! Any input to the three maps' `Deserialize`, in CBOR and in JSON. Nothing
//! panics; a `BTreeMap` that reads the input reads as each map does, and
//! the three maps agree. A layer read as its file's bytes
//! (`file_bytes::deserialize_at_most`) is either refused or answers
//! consistently.

#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use memkv::{FastArt, FrozenLayer, HybridMap};
use serde::de::DeserializeOwned;

#[derive(serde::Deserialize)]
struct Upload {
    #[serde(deserialize_with = "at_most_a_thousand")]
    layer: FrozenLayer<u64>,
}

fn at_most_a_thousand<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<FrozenLayer<u64>, D::Error> {
    memkv::frozen::file_bytes::deserialize_at_most(d, 1_000)
}

type Entries = Vec<(Vec<u8>, u64)>;

/// A serde format, to read the same input as each type.
trait Format {
    fn read<T: DeserializeOwned>(data: &[u8]) -> Option<T>;
    fn write(map: &FastArt<u64>) -> Vec<u8>;
}

struct Cbor;
struct Json;

impl Format for Cbor {
    fn read<T: DeserializeOwned>(data: &[u8]) -> Option<T> {
        ciborium::from_reader(data).ok()
    }

    fn write(map: &FastArt<u64>) -> Vec<u8> {
        let mut written = Vec::new();
        ciborium::into_writer(map, &mut written).unwrap();
        written
    }
}

impl Format for Json {
    fn read<T: DeserializeOwned>(data: &[u8]) -> Option<T> {
        serde_json::from_slice(data).ok()
    }

    fn write(map: &FastArt<u64>) -> Vec<u8> {
        serde_json::to_vec(map).unwrap()
    }
}

/// Reads `data` as each map; the three agree, and hold the model's
/// entries where the model read it too. What they read writes back and
/// reads again the same.
fn read_all<F: Format>(data: &[u8], model: Option<Entries>) {
    let art = F::read::<FastArt<u64>>(data)
        .map(|map| map.iter().map(|(k, v)| (k, *v)).collect::<Entries>());
    let frozen = F::read::<FrozenLayer<u64>>(data).map(|layer| layer.iter().collect::<Entries>());
    let hybrid = F::read::<HybridMap<u64>>(data).map(|map| map.iter().collect::<Entries>());
    assert_eq!(frozen, art);
    assert_eq!(hybrid, art);
    if model.is_some() {
        assert_eq!(art, model);
    }
    if let Some(entries) = art {
        let map: FastArt<u64> = entries.iter().map(|(k, v)| (k, *v)).collect();
        assert!(F::read::<FastArt<u64>>(&F::write(&map)) == Some(map));
    }
}

fuzz_target!(|data: &[u8]| {
    let cbor_model = Cbor::read::<BTreeMap<Vec<u8>, u64>>(data).map(|m| m.into_iter().collect());
    read_all::<Cbor>(data, cbor_model);
    let json_model = Json::read::<BTreeMap<String, u64>>(data);
    let json_model = json_model.map(|m| m.into_iter().map(|(k, v)| (k.into_bytes(), v)).collect());
    read_all::<Json>(data, json_model);

    if let Some(upload) = Cbor::read::<Upload>(data) {
        let layer = upload.layer;
        let entries: Entries = layer.iter().collect();
        assert_eq!(entries.len(), layer.len());
        assert!(entries.windows(2).all(|w| w[0].0 < w[1].0));
        for (ordinal, (key, value)) in entries.iter().enumerate() {
            assert_eq!(layer.get(key), Some(*value));
            assert_eq!(layer.rank(key), Some(ordinal));
        }
    }
});
