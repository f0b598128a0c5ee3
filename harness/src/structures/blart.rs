//! The `blart` crate (0.6): `TreeMap`.
//!
//! blart refuses a key that is a prefix of another (`try_insert` returns
//! `InsertPrefixError`); its documented way around that for strings is
//! NUL-terminated keys (`CStr`), which can't be prefixes of each other. So
//! when no key holds a zero byte, keys are stored as `Box<CStr>` (one extra
//! byte each, same order); otherwise as raw `Box<[u8]>`, which works only for
//! prefix-free data (e.g. fixed-length keys) and is reported as an error
//! otherwise.

use std::cell::RefCell;
use std::ffi::{CStr, CString};
use std::ops::Bound;

use blart::TreeMap;

use super::{BuildInput, Structure};

/// blart's map in one of its two key encodings.
pub(crate) enum Blart {
    /// Keys with a NUL terminator; `scratch` builds the terminated query
    /// without allocating per lookup.
    CStr {
        map: TreeMap<Box<CStr>, u64>,
        scratch: RefCell<Vec<u8>>,
    },
    /// Raw keys (the data has zero bytes, so it cannot be NUL-terminated).
    Bytes(TreeMap<Box<[u8]>, u64>),
}

impl std::fmt::Debug for Blart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Blart::CStr { .. } => "Blart::CStr",
            Blart::Bytes(_) => "Blart::Bytes",
        })
    }
}

/// `key` with a NUL terminator, in `buf`.
fn terminated<'b>(buf: &'b mut Vec<u8>, key: &[u8]) -> &'b CStr {
    buf.clear();
    buf.extend_from_slice(key);
    buf.push(0);
    CStr::from_bytes_with_nul(buf).expect("keys hold no zero byte")
}

fn owned_cstr(key: &[u8]) -> CString {
    CString::new(key).expect("keys hold no zero byte")
}

impl Structure for Blart {
    fn build(input: &BuildInput<'_>) -> Result<Self, String> {
        if input.any_nul {
            let mut map = TreeMap::new();
            for (key, value) in input.entries() {
                let old =
                    (map.try_insert(Box::from(key), value)).map_err(|e| format!("blart: {e}"))?;
                input.inserted(key, old.is_none());
            }
            return Ok(Blart::Bytes(map));
        }
        let mut map = TreeMap::new();
        for (key, value) in input.entries() {
            input.inserted(
                key,
                map.insert(owned_cstr(key).into_boxed_c_str(), value)
                    .is_none(),
            );
        }
        Ok(Blart::CStr {
            map,
            scratch: RefCell::new(Vec::new()),
        })
    }

    fn len(&self) -> Option<usize> {
        Some(match self {
            Blart::CStr { map, .. } => map.len(),
            Blart::Bytes(map) => map.len(),
        })
    }

    const REPLACES: bool = true;

    fn replace(&mut self, key: &[u8], value: u64) -> Option<u64> {
        match self {
            Blart::CStr { map, .. } => map.insert(owned_cstr(key).into_boxed_c_str(), value),
            // The key is in the map, so it is no prefix of another.
            Blart::Bytes(map) => map.try_insert(Box::from(key), value).ok().flatten(),
        }
    }

    fn get(&self, key: &[u8]) -> Option<u64> {
        match self {
            Blart::CStr { map, scratch } => {
                let mut buf = scratch.borrow_mut();
                map.get(terminated(&mut buf, key)).copied()
            }
            Blart::Bytes(map) => map.get(key).copied(),
        }
    }

    fn for_each(&self, mut f: impl FnMut(&[u8], u64)) {
        match self {
            Blart::CStr { map, .. } => map.iter().for_each(|(k, v)| f(k.to_bytes(), *v)),
            Blart::Bytes(map) => map.iter().for_each(|(k, v)| f(k, *v)),
        }
    }

    fn prefix(&self, prefix: &[u8], mut f: impl FnMut(&[u8], u64)) {
        match self {
            Blart::CStr { map, .. } => map.prefix(prefix).for_each(|(k, v)| f(k.to_bytes(), *v)),
            Blart::Bytes(map) => map.prefix(prefix).for_each(|(k, v)| f(k, *v)),
        }
    }

    fn range(&self, start: &[u8], end: &[u8], mut f: impl FnMut(&[u8], u64)) {
        match self {
            Blart::CStr { map, .. } => {
                let (start, end) = (owned_cstr(start), owned_cstr(end));
                let r = (
                    Bound::Included(start.as_c_str()),
                    Bound::Excluded(end.as_c_str()),
                );
                map.range::<CStr, _>(r)
                    .for_each(|(k, v)| f(k.to_bytes(), *v));
            }
            Blart::Bytes(map) => {
                let r = (Bound::Included(start), Bound::Excluded(end));
                map.range::<[u8], _>(r).for_each(|(k, v)| f(k, *v));
            }
        }
    }

    fn notes(&self) -> Vec<String> {
        match self {
            Blart::CStr { .. } => vec!["keys stored as NUL-terminated CStr (+1 B/key): blart rejects keys that are prefixes of others".into()],
            Blart::Bytes(_) => vec!["keys stored raw (data has zero bytes, so no CStr)".into()],
        }
    }
}
