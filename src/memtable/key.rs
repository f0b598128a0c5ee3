//! Internal keys as byte strings whose bytewise order is the memtable order:
//! user key ascending, then sequence number descending.
//!
//! ```text
//!  | user key, each 0x00 written 0x00 0xFF | 0x00 0x01 | !seqno as u64 big-endian |
//! ```
//!
//! The escape and the terminator make a key that is a prefix of another sort
//! before it whatever the sequence numbers: after a key's last byte comes
//! `0x00 0x01`, while a longer key continues with either a byte above `0x00`
//! or an escaped zero `0x00 0xFF`, both greater. Inverting the sequence
//! number makes newer versions sort first.

/// Bytes the encoding adds to a key without zero bytes.
pub(crate) const OVERHEAD: usize = 2 + 8;

/// Appends the escaped, terminated `user_key` to `out`.
#[inline]
pub(crate) fn push_escaped(out: &mut Vec<u8>, user_key: &[u8]) {
    let mut rest = user_key;
    while let Some(z) = rest.iter().position(|&b| b == 0) {
        out.extend_from_slice(&rest[..=z]);
        out.push(0xFF);
        rest = &rest[z + 1..];
    }
    out.extend_from_slice(rest);
    out.extend_from_slice(&[0x00, 0x01]);
}

/// Appends the encoded internal key (`user_key`, `seqno`) to `out`.
#[inline]
pub(crate) fn push_internal(out: &mut Vec<u8>, user_key: &[u8], seqno: u64) {
    push_escaped(out, user_key);
    out.extend_from_slice(&(!seqno).to_be_bytes());
}

/// Splits an encoded internal key into the escaped user key (terminator
/// included) and the sequence number.
#[inline]
pub(crate) fn split(encoded: &[u8]) -> (&[u8], u64) {
    let n = encoded.len() - 8;
    let seqno = !u64::from_be_bytes(encoded[n..].try_into().expect("8 bytes"));
    (&encoded[..n], seqno)
}

/// The user key of an escaped, terminated key: borrowed when it holds no
/// zero byte (the common case), else unescaped into `buf`.
#[inline]
pub(crate) fn unescape<'a>(escaped: &'a [u8], buf: &'a mut Vec<u8>) -> &'a [u8] {
    let body = &escaped[..escaped.len() - 2];
    if !body.contains(&0) {
        return body;
    }
    buf.clear();
    let mut rest = body;
    while let Some(z) = rest.iter().position(|&b| b == 0) {
        buf.extend_from_slice(&rest[..=z]);
        rest = &rest[z + 2..];
    }
    buf.extend_from_slice(rest);
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(k: &[u8], s: u64) -> Vec<u8> {
        let mut v = Vec::new();
        push_internal(&mut v, k, s);
        v
    }

    #[test]
    fn order_is_user_key_then_seqno_descending() {
        let keys: [&[u8]; 7] = [
            b"",
            b"\x00",
            b"\x00\x00",
            b"\x00\x01",
            b"a",
            b"a\x00",
            b"ab",
        ];
        let mut all = Vec::new();
        for k in keys {
            for s in [super::super::MAX_SEQNO, 5, 0] {
                all.push((k, s));
            }
        }
        // `all` is in the memtable order; the encodings must sort the same.
        for w in all.windows(2) {
            assert!(
                enc(w[0].0, w[0].1) < enc(w[1].0, w[1].1),
                "{:?} !< {:?}",
                w[0],
                w[1]
            );
        }
    }

    #[test]
    fn round_trips() {
        let mut buf = Vec::new();
        for k in [
            &b""[..],
            b"\x00",
            b"a\x00\x00b\x00",
            b"plain",
            b"\x01\x00\xff",
        ] {
            let e = enc(k, 42);
            let (esc, s) = split(&e);
            assert_eq!(s, 42);
            assert_eq!(unescape(esc, &mut buf), k);
        }
    }
}
