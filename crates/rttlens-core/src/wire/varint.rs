//! QUIC's variable-length integers (RFC 9000 §16), which HTTP/3 (RFC 9114
//! §1.3) and QPACK's stream instructions use too: the two high bits of the
//! first byte give the length (1, 2, 4 or 8 bytes), the rest is the value,
//! big-endian; values up to 2^62 − 1.

/// Reads one variable-length integer at the start of `buf`: the value and
/// the bytes it took, or `None` when `buf` ends inside it.
pub(crate) fn read(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let len = 1usize << (first >> 6);
    let bytes = buf.get(..len)?;
    let mut v = u64::from(first & 0x3f);
    for b in &bytes[1..] {
        v = (v << 8) | u64::from(*b);
    }
    Some((v, len))
}

/// A cursor over a buffer of QUIC fields: varints, fixed-size integers and
/// length-prefixed byte strings, each returning `None` past the end.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Cursor<'a> {
        Cursor { buf, pos: 0 }
    }

    /// Bytes read so far.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// The bytes not read yet.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub(crate) fn varint(&mut self) -> Option<u64> {
        let (v, n) = read(self.rest())?;
        self.pos += n;
        Some(v)
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        let b = *self.rest().first()?;
        self.pos += 1;
        Some(b)
    }

    /// `n` bytes.
    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let b = self.rest().get(..n)?;
        self.pos += n;
        Some(b)
    }

    /// `n` bytes, `n` given as a varint (clamped to what a `usize` holds).
    pub(crate) fn bytes_varint_len(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.varint()?).ok()?;
        self.bytes(n)
    }

    /// A big-endian integer of `n` ≤ 8 bytes.
    pub(crate) fn uint(&mut self, n: usize) -> Option<u64> {
        let b = self.bytes(n)?;
        Some(b.iter().fold(0, |v, x| (v << 8) | u64::from(*x)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc9000_appendix_a1_examples() {
        // RFC 9000 §A.1's sample encodings
        let cases: [(&[u8], u64); 4] = [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (bytes, want) in cases {
            assert_eq!(read(bytes), Some((want, bytes.len())));
        }
        // a two-byte encoding of 37 is also valid
        assert_eq!(read(&[0x40, 0x25]), Some((37, 2)));
        assert_eq!(read(&[0x9d, 0x7f]), None);
        assert_eq!(read(&[]), None);
    }
}
