//! Formatting helpers.

use std::fmt;

/// Shows bytes as a byte-string literal: printable ASCII as is, the rest
/// escaped, e.g. `b"usr/bin\x00\xff"`.
pub(crate) struct ByteStr<'a>(pub(crate) &'a [u8]);

impl fmt::Debug for ByteStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b\"{}\"", self.0.escape_ascii())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_show_as_a_byte_string_literal() {
        let shown = format!("{:?}", ByteStr(b"usr/bin\x00\xff\"\\"));
        assert_eq!(shown, r#"b"usr/bin\x00\xff\"\\""#);
        assert_eq!(format!("{:?}", ByteStr(b"")), r#"b"""#);
    }
}
