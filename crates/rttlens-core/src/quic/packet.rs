//! QUIC packet headers (RFC 9000 §17, RFC 8999 for the version-independent
//! invariants, RFC 9369 §3.2 for version 2's long packet types): a UDP
//! payload split into its coalesced packets (RFC 9000 §12.2), each with
//! the header fields readable before header protection is removed.
//!
//! Written here: no crate we checked parses QUIC headers from captured
//! bytes without also owning the connection (quinn-proto's `PartialDecode`
//! is crate-private; quiche's header parser needs its own types and
//! BoringSSL).

use crate::wire::varint::Cursor;

/// QUIC version 1 (RFC 9000).
pub const VERSION_1: u32 = 0x0000_0001;
/// QUIC version 2 (RFC 9369).
pub const VERSION_2: u32 = 0x6b33_43cf;

/// Longest connection ID of versions 1 and 2, in bytes (RFC 9000 §17.2).
pub const MAX_CID_LEN: usize = 20;

/// The smallest UDP payload of a datagram carrying a client Initial
/// (RFC 9000 §14.1), bytes.
pub const MIN_INITIAL_DATAGRAM: usize = 1200;

/// Length of the Retry Integrity Tag (RFC 9001 §5.8), bytes.
const RETRY_TAG_LEN: usize = 16;

/// The kind of a packet, with the packet number space it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PacketType {
    /// Initial (RFC 9000 §17.2.2): the ClientHello and ServerHello.
    Initial,
    /// 0-RTT (§17.2.3): early data under the resumed session's keys.
    ZeroRtt,
    /// Handshake (§17.2.4): the rest of the TLS handshake.
    Handshake,
    /// Retry (§17.2.5): the server asks the client to prove its address.
    Retry,
    /// Version Negotiation (§17.2.1): the versions the server speaks.
    VersionNegotiation,
    /// 1-RTT, short header (§17.3.1).
    OneRtt,
}

impl PacketType {
    /// Wireshark's name of the packet type.
    pub fn as_str(self) -> &'static str {
        match self {
            PacketType::Initial => "Initial",
            PacketType::ZeroRtt => "0-RTT",
            PacketType::Handshake => "Handshake",
            PacketType::Retry => "Retry",
            PacketType::VersionNegotiation => "Version Negotiation",
            PacketType::OneRtt => "1-RTT",
        }
    }

    /// Packet number space (RFC 9000 §12.3): 0 Initial, 1 Handshake, 2
    /// application data (0-RTT and 1-RTT); `None` for Retry and Version
    /// Negotiation, which carry no packet number.
    pub fn space(self) -> Option<usize> {
        match self {
            PacketType::Initial => Some(0),
            PacketType::Handshake => Some(1),
            PacketType::ZeroRtt | PacketType::OneRtt => Some(2),
            PacketType::Retry | PacketType::VersionNegotiation => None,
        }
    }
}

/// One packet's header as read before header protection is removed,
/// borrowing the datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header<'a> {
    /// Kind of packet.
    pub ty: PacketType,
    /// Version field (long header; 0 for Version Negotiation; the
    /// connection's version for a short header is not in the packet: 0).
    pub version: u32,
    /// Destination connection ID. For a short header, the bytes after the
    /// first byte up to the length the caller gave.
    pub dcid: &'a [u8],
    /// Source connection ID (long header only).
    pub scid: &'a [u8],
    /// Initial: the Token field; Retry: the Retry Token.
    pub token: &'a [u8],
    /// Version Negotiation: the Supported Versions list, 4 bytes each.
    pub versions: &'a [u8],
    /// The whole packet: from its first byte to the end of its payload
    /// (the Length field's end for long headers, the datagram's for short).
    pub packet: &'a [u8],
    /// Offset of the (protected) packet number within `packet`; 0 for
    /// Retry and Version Negotiation.
    pub pn_offset: usize,
}

/// Why a datagram's packet could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// The bytes end inside the header or before the Length field's end.
    #[error("QUIC packet truncated")]
    Truncated,
    /// The fixed bit (RFC 9000 §17.2) is 0 on a packet of a known version.
    #[error("QUIC fixed bit not set")]
    FixedBit,
    /// A connection ID longer than 20 bytes in a version 1 or 2 packet.
    #[error("QUIC connection ID over 20 bytes")]
    LongCid,
    /// A version rttlens does not read (only its invariants are known).
    #[error("QUIC version {0:#010x} not read")]
    UnknownVersion(u32),
}

/// Whether rttlens reads packets of `version`.
pub fn known_version(version: u32) -> bool {
    matches!(version, VERSION_1 | VERSION_2)
}

/// The long-header type of `bits` (the first byte's bits 4–5) in
/// `version` (RFC 9000 §17.2; RFC 9369 §3.2 reorders them for version 2).
fn long_type(version: u32, bits: u8) -> PacketType {
    let v2 = version == VERSION_2;
    match (bits, v2) {
        (0, false) | (1, true) => PacketType::Initial,
        (1, false) | (2, true) => PacketType::ZeroRtt,
        (2, false) | (3, true) => PacketType::Handshake,
        _ => PacketType::Retry,
    }
}

/// Whether a UDP payload looks like a QUIC long-header packet of a version
/// rttlens reads, or a Version Negotiation packet: the test for a datagram
/// of a connection not yet known.
pub fn is_long_header(payload: &[u8]) -> bool {
    let Some(&first) = payload.first() else {
        return false;
    };
    if first & 0x80 == 0 || payload.len() < 7 {
        return false;
    }
    let version = u32::from_be_bytes([payload[1], payload[2], payload[3], payload[4]]);
    version == 0 || known_version(version) && first & 0x40 != 0
}

/// The packets of one UDP payload, in order (RFC 9000 §12.2: long-header
/// packets coalesced, a short-header packet last). `short_dcid_len` is the
/// length of the connection IDs the receiver chose, for a short header;
/// `None` when unknown (a short header then ends the walk).
///
/// The walk stops at the first packet that cannot be read, after returning
/// its error; bytes after the last packet that are all zero are padding
/// (some stacks pad datagrams after the packets) and end the walk quietly.
pub fn packets(payload: &[u8], short_dcid_len: Option<usize>) -> Packets<'_> {
    Packets {
        rest: payload,
        short_dcid_len,
        done: false,
        fixed_bit_optional: false,
    }
}

/// Iterator of [`packets`].
#[derive(Debug, Clone)]
pub struct Packets<'a> {
    rest: &'a [u8],
    short_dcid_len: Option<usize>,
    done: bool,
    fixed_bit_optional: bool,
}

impl Packets<'_> {
    /// Packets of a connection already known: the fixed bit (the "QUIC
    /// Bit") may be 0 on long and short headers of a known version, as
    /// RFC 9287 lets an endpoint send once its peer advertised
    /// `grease_quic_bit` (quinn does). Without this a datagram whose first
    /// bit is cleared ends the walk with [`HeaderError::FixedBit`].
    pub fn fixed_bit_optional(mut self) -> Self {
        self.fixed_bit_optional = true;
        self
    }
}

impl<'a> Iterator for Packets<'a> {
    type Item = Result<Header<'a>, HeaderError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.rest.is_empty() || self.rest.iter().all(|b| *b == 0) {
            return None;
        }
        let fixed = !self.fixed_bit_optional;
        let got = if self.rest[0] & 0x80 != 0 {
            long_header(self.rest, fixed)
        } else {
            match self.short_dcid_len {
                Some(n) => short_header(self.rest, n, fixed),
                None => return None,
            }
        };
        match got {
            Ok(h) => {
                self.rest = &self.rest[h.packet.len()..];
                if h.ty == PacketType::OneRtt
                    || matches!(h.ty, PacketType::Retry | PacketType::VersionNegotiation)
                {
                    self.done = true;
                }
                Some(Ok(h))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

fn cid<'a>(c: &mut Cursor<'a>, checked: bool) -> Result<&'a [u8], HeaderError> {
    let len = usize::from(c.u8().ok_or(HeaderError::Truncated)?);
    if checked && len > MAX_CID_LEN {
        return Err(HeaderError::LongCid);
    }
    c.bytes(len).ok_or(HeaderError::Truncated)
}

fn long_header(buf: &[u8], fixed_bit: bool) -> Result<Header<'_>, HeaderError> {
    let mut c = Cursor::new(buf);
    let first = c.u8().ok_or(HeaderError::Truncated)?;
    let version = c.uint(4).ok_or(HeaderError::Truncated)? as u32;
    let known = known_version(version);
    let dcid = cid(&mut c, known)?;
    let scid = cid(&mut c, known)?;
    let mut h = Header {
        ty: PacketType::VersionNegotiation,
        version,
        dcid,
        scid,
        token: &[],
        versions: &[],
        packet: buf,
        pn_offset: 0,
    };
    if version == 0 {
        let rest = c.rest();
        h.versions = &rest[..rest.len() / 4 * 4];
        return Ok(h);
    }
    if !known {
        return Err(HeaderError::UnknownVersion(version));
    }
    if fixed_bit && first & 0x40 == 0 {
        return Err(HeaderError::FixedBit);
    }
    h.ty = long_type(version, (first >> 4) & 3);
    match h.ty {
        PacketType::Retry => {
            let rest = c.rest();
            let n = rest
                .len()
                .checked_sub(RETRY_TAG_LEN)
                .ok_or(HeaderError::Truncated)?;
            h.token = &rest[..n];
            return Ok(h);
        }
        PacketType::Initial => {
            h.token = c.bytes_varint_len().ok_or(HeaderError::Truncated)?;
        }
        _ => {}
    }
    let len = c.varint().ok_or(HeaderError::Truncated)?;
    h.pn_offset = c.pos();
    let end = usize::try_from(len)
        .ok()
        .and_then(|l| h.pn_offset.checked_add(l))
        .filter(|e| *e <= buf.len())
        .ok_or(HeaderError::Truncated)?;
    h.packet = &buf[..end];
    Ok(h)
}

fn short_header(buf: &[u8], dcid_len: usize, fixed_bit: bool) -> Result<Header<'_>, HeaderError> {
    if fixed_bit && buf[0] & 0x40 == 0 {
        return Err(HeaderError::FixedBit);
    }
    let dcid = buf.get(1..1 + dcid_len).ok_or(HeaderError::Truncated)?;
    Ok(Header {
        ty: PacketType::OneRtt,
        version: 0,
        dcid,
        scid: &[],
        token: &[],
        versions: &[],
        packet: buf,
        pn_offset: 1 + dcid_len,
    })
}

/// The full packet number from its `pn_len`-byte truncated form `truncated`
/// and the largest packet number received so far in its space (RFC 9000
/// §A.3).
pub fn decode_packet_number(largest: Option<u64>, truncated: u64, pn_len: usize) -> u64 {
    let expected = largest.map_or(0, |l| l + 1);
    let win = 1u64 << (pn_len * 8);
    let hwin = win / 2;
    let mask = win - 1;
    let candidate = (expected & !mask) | truncated;
    if candidate + hwin <= expected && candidate < (1 << 62) - win {
        candidate + win
    } else if candidate > expected + hwin && candidate >= win {
        candidate - win
    } else {
        candidate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_number_decoding_rfc9000_a3() {
        // RFC 9000 §A.3's example
        assert_eq!(
            decode_packet_number(Some(0xa82f30ea), 0x9b32, 2),
            0xa82f9b32
        );
        assert_eq!(decode_packet_number(None, 0, 1), 0);
        assert_eq!(decode_packet_number(Some(0xff), 0x01, 1), 0x101);
    }

    #[test]
    fn version_negotiation_and_retry_are_read() {
        let mut vn = vec![0x80, 0, 0, 0, 0, 2, 1, 2, 1, 9];
        vn.extend_from_slice(&[0, 0, 0, 1, 0x6b, 0x33, 0x43, 0xcf]);
        let h: Vec<_> = packets(&vn, None).collect();
        let h = h[0].as_ref().unwrap();
        assert_eq!(h.ty, PacketType::VersionNegotiation);
        assert_eq!(h.versions.len(), 8);
        let mut retry = vec![0xf0, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4];
        retry.extend_from_slice(b"token");
        retry.extend_from_slice(&[7; 16]);
        let h: Vec<_> = packets(&retry, None).collect();
        let h = h[0].as_ref().unwrap();
        assert_eq!(h.ty, PacketType::Retry);
        assert_eq!(h.token, b"token");
        assert_eq!(h.scid, &[1, 2, 3, 4]);
    }

    #[test]
    fn a_cleared_quic_bit_is_read_only_on_a_known_connection() {
        // RFC 9287: a short header with the fixed bit 0
        let mut b = vec![0x01];
        b.extend_from_slice(&[9; 8]);
        b.extend_from_slice(&[0; 24]);
        let strict: Vec<_> = packets(&b, Some(8)).collect();
        assert!(matches!(strict[..], [Err(HeaderError::FixedBit)]));
        let known: Vec<_> = packets(&b, Some(8)).fixed_bit_optional().collect();
        assert_eq!(known[0].as_ref().unwrap().ty, PacketType::OneRtt);
        assert_eq!(known[0].as_ref().unwrap().dcid, &[9; 8]);
    }

    #[test]
    fn truncated_and_garbage_never_panic() {
        for n in 0..40u8 {
            let mut b = vec![0xc0, 0, 0, 0, 1, 8];
            b.extend((0..n).map(|i| i.wrapping_mul(37)));
            for p in packets(&b, Some(8)) {
                let _ = p;
            }
        }
    }
}
