//! Damaged, truncated and foreign files give errors from `open` and
//! `from_bytes`, never a panic.

use std::fs;
use std::path::Path;

use memkv::{Error, FrozenLayer};

#[path = "common/scratch.rs"]
mod scratch;

/// The error of opening (or verifying) a file that is refused for its contents: it must
/// name the file (an `Error::InFile` whose message starts with the path)
/// around the error itself, which is returned.
fn refused_in_file<T: std::fmt::Debug>(result: Result<T, Error>, path: &Path) -> Error {
    let err = result.expect_err("the file was accepted");
    let message = err.to_string();
    assert!(
        message.starts_with(&format!("{}: ", path.display())),
        "{message}"
    );
    match err {
        Error::InFile { path: named, error } => {
            assert_eq!(named, path);
            assert!(message.ends_with(&error.to_string()), "{message}");
            *error
        }
        other => panic!("expected an error naming {}, got {other:?}", path.display()),
    }
}

/// A small layer with both kinds of column work to do: 40 keys sharing
/// prefixes, values of 20 bits.
fn sample_u64() -> FrozenLayer<u64> {
    FrozenLayer::from_unsorted_iter(
        (0..40u64).map(|i| (format!("dir{}/file{i:02}", i % 3), i * 20_000)),
    )
    .unwrap()
}

/// A layer with a jump table: 300 keys under two prefixes of 5 bytes,
/// which get its two slots.
fn sample_jump() -> FrozenLayer<u64> {
    let layer = FrozenLayer::from_unsorted_iter(
        (0..300u64).map(|i| (format!("tmp/{}{:03}", ["a", "b"][i as usize % 2], i), i)),
    )
    .unwrap();
    assert!(format!("{layer:?}").contains("jump_depth: 5"), "{layer:?}");
    layer
}

fn sample_bytes() -> FrozenLayer<Vec<u8>> {
    FrozenLayer::from_unsorted_iter(
        (0..30u32).map(|i| (format!("k{i}"), vec![i as u8; (i % 7) as usize])),
    )
    .unwrap()
}

#[test]
fn every_truncation_is_an_error() {
    let u64_bytes = sample_u64().as_bytes().to_vec();
    let byte_bytes = sample_bytes().as_bytes().to_vec();
    let jump_bytes = sample_jump().as_bytes().to_vec();
    for bytes in [&u64_bytes, &jump_bytes] {
        for len in 0..bytes.len() {
            let result = FrozenLayer::<u64>::from_bytes(bytes[..len].to_vec());
            assert!(
                result.is_err(),
                "truncated to {len} of {} bytes was accepted",
                bytes.len()
            );
        }
    }
    for len in 0..byte_bytes.len() {
        assert!(
            FrozenLayer::<Vec<u8>>::from_bytes(byte_bytes[..len].to_vec()).is_err(),
            "len {len}"
        );
    }
    // The whole file is fine, so the loop above tested truncation only.
    assert!(FrozenLayer::<u64>::from_bytes(u64_bytes).is_ok());
    assert!(FrozenLayer::<u64>::from_bytes(jump_bytes).is_ok());
    assert!(FrozenLayer::<Vec<u8>>::from_bytes(byte_bytes).is_ok());
}

#[test]
fn every_truncated_file_fails_to_open() {
    let bytes = sample_u64().as_bytes().to_vec();
    let dir = scratch::dir();
    let path = dir.path().join("truncated.memkv");
    for len in 0..bytes.len() {
        fs::write(&path, &bytes[..len]).unwrap();
        assert!(
            FrozenLayer::<u64>::open(&path).is_err(),
            "truncated to {len} bytes was accepted"
        );
    }
    fs::write(&path, &bytes).unwrap();
    assert_eq!(
        FrozenLayer::<u64>::open(&path).unwrap().get("dir1/file04"),
        Some(80_000)
    );
}

#[test]
fn every_byte_flip_is_an_error() {
    for bytes in [
        sample_u64().as_bytes().to_vec(),
        sample_bytes().as_bytes().to_vec(),
        sample_jump().as_bytes().to_vec(),
    ] {
        let is_u64 = FrozenLayer::<u64>::from_bytes(bytes.clone()).is_ok();
        for position in 0..bytes.len() {
            for mask in [0x01u8, 0x80, 0xFF, 0x5A] {
                let mut damaged = bytes.clone();
                damaged[position] ^= mask;
                let result = if is_u64 {
                    FrozenLayer::<u64>::from_bytes(damaged).map(drop)
                } else {
                    FrozenLayer::<Vec<u8>>::from_bytes(damaged).map(drop)
                };
                assert!(result.is_err(), "flip {mask:#x} at {position} was accepted");
            }
        }
    }
}

#[test]
fn body_flips_are_reported_as_checksum_mismatches() {
    let bytes = sample_u64().as_bytes().to_vec();
    // Past the header, before the trailer: only the checksum can notice.
    for position in 32..bytes.len() - 32 {
        let mut damaged = bytes.clone();
        damaged[position] ^= 0x10;
        assert!(
            matches!(
                FrozenLayer::<u64>::from_bytes(damaged),
                Err(Error::ChecksumMismatch { .. })
            ),
            "position {position}"
        );
    }
}

#[test]
fn a_damaged_mapped_file_is_caught_by_open_and_verify() {
    let layer = sample_u64();
    let dir = scratch::dir();
    let path = dir.path().join("damaged.memkv");
    let mut bytes = layer.as_bytes().to_vec();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x04;
    fs::write(&path, &bytes).unwrap();
    assert!(matches!(
        refused_in_file(FrozenLayer::<u64>::open(&path), &path),
        Error::ChecksumMismatch { .. }
    ));
    // The unverified open skips the checksum; verify() runs it later.
    let unverified = FrozenLayer::<u64>::open_unverified(&path).unwrap();
    assert!(matches!(
        refused_in_file(unverified.verify(), &path),
        Error::ChecksumMismatch { .. }
    ));
}

/// Rewrites the checksum after an edit, as a bug in a writer might.
fn reseal(bytes: &mut [u8]) {
    let end = bytes.len() - 4;
    let crc = crc32fast::hash(&bytes[..end]);
    bytes[end..].copy_from_slice(&crc.to_le_bytes());
}

/// The little-endian `u64` at `at`.
fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

/// Where a layer's fst section ends (and its column starts): after the
/// 32-byte header and the fst length the trailer gives.
fn fst_end(bytes: &[u8]) -> usize {
    32 + u64_at(bytes, bytes.len() - 32 + 8) as usize
}

/// Where a layer's jump table section starts and ends: after the column,
/// before the trailer.
fn jump_section(bytes: &[u8]) -> std::ops::Range<usize> {
    fst_end(bytes) + u64_at(bytes, bytes.len() - 16) as usize..bytes.len() - 32
}

/// Version 1 files, written before layers had a jump table, still open;
/// a version 1 file may not have one.
#[test]
fn version_1_files_open_without_a_jump_table() {
    let layer = sample_u64();
    let mut v1 = layer.as_bytes().to_vec();
    assert!(jump_section(&v1).is_empty());
    v1[8] = 1;
    reseal(&mut v1);
    let opened = FrozenLayer::<u64>::from_bytes(v1).unwrap();
    assert_eq!(
        opened.iter().collect::<Vec<_>>(),
        layer.iter().collect::<Vec<_>>()
    );
    assert_eq!(opened.get("dir1/file04"), Some(80_000));

    let mut with_table = sample_jump().as_bytes().to_vec();
    assert!(!jump_section(&with_table).is_empty());
    with_table[8] = 1;
    reseal(&mut with_table);
    assert!(matches!(
        FrozenLayer::<u64>::from_bytes(with_table),
        Err(Error::Corrupt { .. })
    ));
}

/// A jump table slot that points outside the fst, behind a valid checksum:
/// the full checks catch it; an unverified open does not, and its lookups
/// may go wrong, but never out of bounds.
#[test]
fn a_wild_jump_table_slot_is_caught_by_the_full_checks() {
    let layer = sample_jump();
    let bytes = layer.as_bytes().to_vec();
    let section = jump_section(&bytes);
    // The slots start at a multiple of 64; the first occupied one has an
    // address other than u32::MAX at byte 24 of its 32.
    let slots = section.start.div_ceil(64) * 64..section.end - 16;
    let occupied = (slots.clone().step_by(32))
        .find(|&at| bytes[at + 24..at + 28] != [0xFF; 4])
        .unwrap();
    for (field, wild) in [(24, u32::MAX - 1), (28, 300)] {
        let mut damaged = bytes.clone();
        damaged[occupied + field..occupied + field + 4].copy_from_slice(&wild.to_le_bytes());
        reseal(&mut damaged);
        assert!(matches!(
            FrozenLayer::<u64>::from_bytes(damaged.clone()),
            Err(Error::Corrupt { .. })
        ));
        let dir = scratch::dir();
        let path = dir.path().join("wild.memkv");
        fs::write(&path, &damaged).unwrap();
        assert!(FrozenLayer::<u64>::open(&path).is_err());
        let unverified = FrozenLayer::<u64>::open_unverified(&path).unwrap();
        assert!(matches!(
            refused_in_file(unverified.verify(), &path),
            Error::Corrupt { .. }
        ));
        // Lookups through the slot: any answer, or a panic, but no crash
        // (not tried where a panic aborts, as on WASI).
        for i in (0..300u64).filter(|_| cfg!(panic = "unwind")) {
            let key = format!("tmp/{}{:03}", ["a", "b"][i as usize % 2], i);
            let _ = std::panic::catch_unwind(|| unverified.get(&key));
        }
    }
    // Footers that do not describe the section.
    let footer = section.end - 16;
    for (at, value) in [
        (footer, 3u8),
        (footer, 25),
        (footer + 1, 64),
        (footer + 2, 1),
        (footer + 8, 0),
    ] {
        let mut damaged = bytes.clone();
        damaged[at] = value;
        reseal(&mut damaged);
        assert!(
            matches!(
                FrozenLayer::<u64>::from_bytes(damaged),
                Err(Error::Corrupt { .. })
            ),
            "{value} at {at}"
        );
    }
}

/// Behind a valid checksum, each byte of the jump table's footer set to
/// values at the edges of its fields, and the section cut or lengthened to
/// every size from 0 to 100 bytes past its own (its footer kept, zeros in
/// front): each file is refused as corrupt or read as a layer that answers
/// right, and none panics.
#[test]
fn no_jump_footer_or_section_length_panics() {
    let layer = sample_jump();
    let bytes = layer.as_bytes().to_vec();
    let section = jump_section(&bytes);
    let trailer = bytes.len() - 32;
    let mut damaged = Vec::new();
    for at in section.end - 16..section.end {
        for value in [0u8, 1, 4, 5, 15, 16, 24, 25, 63, 64, 255] {
            let mut file = bytes.clone();
            file[at] = value;
            damaged.push(file);
        }
    }
    let whole = &bytes[section.clone()];
    for len in 0..whole.len() + 100 {
        let cut = match len.checked_sub(whole.len()) {
            None => whole[whole.len() - len..].to_vec(),
            Some(more) => [vec![0; more], whole.to_vec()].concat(),
        };
        damaged.push([&bytes[..section.start], &cut, &bytes[trailer..]].concat());
    }
    let expected: Vec<_> = layer.iter().collect();
    for mut file in damaged {
        reseal(&mut file);
        match FrozenLayer::<u64>::from_bytes(file) {
            Ok(read) => {
                for (key, value) in &expected {
                    assert_eq!(read.get(key), Some(*value));
                }
            }
            Err(e) => assert!(matches!(e, Error::Corrupt { .. }), "{e}"),
        }
    }
}

#[test]
fn inconsistent_sections_are_caught_behind_a_valid_checksum() {
    let bytes = sample_u64().as_bytes().to_vec();
    let trailer = bytes.len() - 32;

    let mut wrong_count = bytes.clone();
    wrong_count[trailer] ^= 1;
    reseal(&mut wrong_count);
    assert!(matches!(
        FrozenLayer::<u64>::from_bytes(wrong_count),
        Err(Error::Corrupt { .. })
    ));

    // The fst one byte longer and the column one shorter: the sum still
    // fits the file, but neither section parses.
    let mut wrong_lengths = bytes.clone();
    let (fst_len, column_len) = (u64_at(&bytes, trailer + 8), u64_at(&bytes, trailer + 16));
    wrong_lengths[trailer + 8..trailer + 16].copy_from_slice(&(fst_len + 1).to_le_bytes());
    wrong_lengths[trailer + 16..trailer + 24].copy_from_slice(&(column_len - 1).to_le_bytes());
    reseal(&mut wrong_lengths);
    assert!(matches!(
        FrozenLayer::<u64>::from_bytes(wrong_lengths),
        Err(Error::Corrupt { .. })
    ));

    // A wild fst root address (fst::raw::Fst::new takes it; walks would
    // read outside the fst).
    let mut wild_root = bytes.clone();
    let fst_end = fst_end(&bytes);
    wild_root[fst_end - 12..fst_end - 4].copy_from_slice(&u64::MAX.to_le_bytes());
    reseal(&mut wild_root);
    assert!(matches!(
        FrozenLayer::<u64>::from_bytes(wild_root),
        Err(Error::Corrupt { .. })
    ));

    // The same in an fst of version 2, which has no checksum, so that its
    // key count and root address are the last 16 bytes (the root's low
    // half zero: read where version 3 keeps it, it would look in bounds).
    let mut old_fst = bytes.clone();
    old_fst[32..40].copy_from_slice(&2u64.to_le_bytes());
    let keys = u64_at(&bytes, trailer).to_le_bytes();
    old_fst[fst_end - 16..fst_end - 8].copy_from_slice(&keys);
    old_fst[fst_end - 8..fst_end].copy_from_slice(&(1u64 << 32).to_le_bytes());
    reseal(&mut old_fst);
    assert!(matches!(
        FrozenLayer::<u64>::from_bytes(old_fst),
        Err(Error::Corrupt { .. })
    ));

    let mut newer = bytes.clone();
    newer[8] = 9;
    assert!(matches!(
        FrozenLayer::<u64>::from_bytes(newer),
        Err(Error::UnsupportedVersion {
            found: 9,
            supported: 2
        })
    ));
}

/// The byte column's offsets are checked by the full checks only: they pass
/// `open_unverified`, and `from_bytes`, `open` and `verify` catch them.
#[test]
fn bad_value_offsets_are_caught_by_the_full_checks() {
    let bytes = sample_bytes().as_bytes().to_vec();
    // The column opens with the offsets' length, then their packed base:
    // raising the base moves every value's end past the blob.
    let base_at = fst_end(&bytes) + 8;
    let mut bad = bytes.clone();
    let base = u64_at(&bytes, base_at);
    bad[base_at..base_at + 8].copy_from_slice(&(base + 1000).to_le_bytes());
    reseal(&mut bad);
    assert!(matches!(
        FrozenLayer::<Vec<u8>>::from_bytes(bad.clone()),
        Err(Error::Corrupt { .. })
    ));
    let dir = scratch::dir();
    let path = dir.path().join("offsets.memkv");
    fs::write(&path, &bad).unwrap();
    assert!(matches!(
        refused_in_file(FrozenLayer::<Vec<u8>>::open(&path), &path),
        Error::Corrupt { .. }
    ));
    let unverified = FrozenLayer::<Vec<u8>>::open_unverified(&path).unwrap();
    assert!(matches!(
        refused_in_file(unverified.verify(), &path),
        Error::Corrupt { .. }
    ));
    // Unchecked, the values read past the blob come back empty.
    assert_eq!(unverified.get("k6"), Some(Vec::new()));
}

/// Byte columns whose offsets disagree with their blob, behind a valid
/// checksum: offsets that go back, and a section too short for its own
/// offsets' length.
#[test]
fn inconsistent_byte_columns_are_caught() {
    // Values "", "aa", "b": ends 0, 2, 3 packed two bits each in one word.
    let layer = FrozenLayer::<Vec<u8>>::from_sorted_iter([
        ("a", Vec::new()),
        ("b", b"aa".to_vec()),
        ("c", b"b".to_vec()),
    ])
    .unwrap();
    let bytes = layer.as_bytes().to_vec();
    let trailer = bytes.len() - 32;
    let column = fst_end(&bytes);
    // Offsets' length, then the packed offsets' base, width and word.
    assert_eq!(u64_at(&bytes, column), 24);
    let word = column + 8 + 16;
    assert_eq!(u64_at(&bytes, word), 2 << 2 | 3 << 4);

    // Ends 3, 1, 3: the last one matches the blob, the middle goes back.
    let mut backwards = bytes.clone();
    backwards[word..word + 8].copy_from_slice(&(3u64 | 1 << 2 | 3 << 4).to_le_bytes());
    reseal(&mut backwards);
    assert!(matches!(
        FrozenLayer::<Vec<u8>>::from_bytes(backwards),
        Err(Error::Corrupt { .. })
    ));

    // A column of 4 bytes, too short for the offsets' length.
    let mut short = bytes[..column + 4].to_vec();
    short.extend_from_slice(&bytes[trailer..]);
    let short_trailer = short.len() - 32;
    short[short_trailer + 16..short_trailer + 24].copy_from_slice(&4u64.to_le_bytes());
    reseal(&mut short);
    assert!(matches!(
        FrozenLayer::<Vec<u8>>::from_bytes(short),
        Err(Error::Corrupt { .. })
    ));
}

/// An fst of 36 bytes (a header and a footer, no node) is the smallest that
/// `fst` accepts for parsing, so its root address is checked too.
#[test]
fn the_smallest_fsts_root_is_checked() {
    let empty = FrozenLayer::<u64>::from_sorted_iter(Vec::<(&str, u64)>::new()).unwrap();
    let bytes = empty.as_bytes();
    let fst_end = fst_end(bytes);
    // Drop the empty root node between the fst's 16-byte header and its
    // 20-byte footer, and point the root far away.
    let mut forged = bytes[..48].to_vec();
    forged.extend_from_slice(&bytes[fst_end - 20..]);
    let new_trailer = forged.len() - 32;
    forged[new_trailer + 8..new_trailer + 16].copy_from_slice(&36u64.to_le_bytes());
    forged[68 - 12..68 - 4].copy_from_slice(&u64::MAX.to_le_bytes());
    reseal(&mut forged);
    assert!(matches!(
        FrozenLayer::<u64>::from_bytes(forged),
        Err(Error::Corrupt { .. })
    ));
}

#[test]
fn foreign_bytes_are_rejected() {
    assert!(matches!(
        FrozenLayer::<u64>::from_bytes(Vec::new()),
        Err(Error::Corrupt { .. })
    ));
    assert!(matches!(
        FrozenLayer::<u64>::from_bytes(b"#!/bin/sh\necho hello\n".to_vec()),
        Err(Error::BadMagic { found }) if found == b"#!/bin/s"
    ));
    // Pseudo-random bytes of many lengths (a fixed xorshift sequence).
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for len in [1usize, 7, 8, 63, 64, 65, 100, 1000, 4096] {
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        assert!(
            FrozenLayer::<u64>::from_bytes(bytes.clone()).is_err(),
            "random {len} bytes"
        );
        // The same garbage behind a valid magic number and version.
        let mut disguised = bytes;
        if disguised.len() >= 12 {
            disguised[..8].copy_from_slice(b"MEMKVFRZ");
            disguised[8..12].copy_from_slice(&1u32.to_le_bytes());
            assert!(
                FrozenLayer::<u64>::from_bytes(disguised).is_err(),
                "disguised {len} bytes"
            );
        }
    }
    // A whole fst file (not ours) is not a frozen layer either.
    let fst_map = fst::Map::from_iter([("a", 1u64)])
        .unwrap()
        .into_fst()
        .into_inner();
    assert!(matches!(
        FrozenLayer::<u64>::from_bytes(fst_map),
        Err(Error::BadMagic { .. })
    ));
}

#[test]
fn empty_and_foreign_files_fail_to_open() {
    let dir = scratch::dir();
    let empty = dir.path().join("empty.memkv");
    fs::write(&empty, b"").unwrap();
    assert!(matches!(
        refused_in_file(FrozenLayer::<u64>::open(&empty), &empty),
        Error::Corrupt { .. }
    ));
    let text = dir.path().join("notes.txt");
    fs::write(
        &text,
        "not a layer, but long enough to hold a header and a trailer. ".repeat(3),
    )
    .unwrap();
    assert!(matches!(
        refused_in_file(FrozenLayer::<u64>::open(&text), &text),
        Error::BadMagic { .. }
    ));
    let err = FrozenLayer::<u64>::open_unverified(&text).unwrap_err();
    assert!(matches!(
        refused_in_file(Err::<(), _>(err), &text),
        Error::BadMagic { .. }
    ));
    // A directory is not a file.
    assert!(FrozenLayer::<u64>::open(dir.path()).is_err());
}

#[test]
fn a_missing_file_is_an_io_error_naming_the_path() {
    let dir = scratch::dir();
    let path = dir.path().join("no-such-layer.memkv");
    match FrozenLayer::<u64>::open(&path) {
        Err(Error::Io { context, source }) => {
            assert!(
                context.contains(&path.display().to_string()),
                "context: {context}"
            );
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("expected an Io error, got {other:?}"),
    }
    let message = FrozenLayer::<u64>::open(&path).unwrap_err().to_string();
    assert!(message.contains("no-such-layer.memkv"), "{message}");
}

#[test]
fn a_file_of_another_value_type_is_refused() {
    let layer = sample_u64();
    match FrozenLayer::<i64>::from_bytes(layer.as_bytes().to_vec()) {
        Err(Error::ValueTypeMismatch { expected, found }) => {
            assert_eq!((expected.as_str(), found.as_str()), ("i64", "u64"));
        }
        other => panic!("expected a type mismatch, got {other:?}"),
    }
    // Vec<u8> and Box<[u8]> share an encoding, so they may read each other.
    let bytes = sample_bytes();
    let boxed = FrozenLayer::<Box<[u8]>>::from_bytes(bytes.as_bytes().to_vec()).unwrap();
    assert_eq!(boxed.get("k6").as_deref(), Some(&[6u8; 6][..]));
}

#[test]
fn errors_display_their_data() {
    let message = FrozenLayer::<u64>::from_bytes(b"PK\x03\x04rest".to_vec())
        .unwrap_err()
        .to_string();
    assert!(message.contains("PK\\x03\\x04"), "{message}");
    let mut bytes = sample_u64().as_bytes().to_vec();
    bytes[40] ^= 1;
    let message = FrozenLayer::<u64>::from_bytes(bytes)
        .unwrap_err()
        .to_string();
    assert!(message.contains("checksum mismatch"), "{message}");
}

/// A layer of empty byte strings whose key count, in the fst's footer and
/// the trailer alike, says 2^40. Its value column stores one offset for all
/// values, so its length cannot give the count away; `from_bytes` used to
/// check the offsets one by one, for hours (the `frozen_file` fuzz target's
/// first find). It now answers at once, and `verify_structure` refuses the
/// count, which the fst's keys do not reach.
#[test]
fn a_huge_key_count_over_equal_values_opens_at_once() {
    let layer = FrozenLayer::from_sorted_iter([("a", Vec::new()), ("b", Vec::new())]).unwrap();
    let mut bytes = layer.as_bytes().to_vec();
    let (fst_keys, trailer) = (fst_end(&bytes) - 20, bytes.len() - 32);
    assert_eq!((u64_at(&bytes, fst_keys), u64_at(&bytes, trailer)), (2, 2));
    for at in [fst_keys, trailer] {
        bytes[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    }
    reseal(&mut bytes);
    let opened = FrozenLayer::<Vec<u8>>::from_bytes(bytes);
    if cfg!(target_pointer_width = "64") {
        let forged = opened.unwrap();
        assert_eq!(forged.len() as u64, 1 << 40);
        assert!(matches!(
            forged.verify_structure(),
            Err(Error::Corrupt { .. })
        ));
    } else {
        // A 32-bit usize cannot count the keys: refused sooner.
        let refused = opened.unwrap_err().to_string();
        assert!(
            refused.contains("more than this machine can count"),
            "{refused}"
        );
    }
}
