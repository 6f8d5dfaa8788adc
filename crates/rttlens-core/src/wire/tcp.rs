//! TCP header (RFC 9293 §3.1) and the options the analysis uses.
//!
//! The fixed header is read with etherparse's `TcpHeaderSlice`. The options
//! are parsed here from the raw option bytes ([`TcpOptions::parse`]):
//! etherparse's option iterator stops at the first kind it does not know,
//! and it does not know TCP Fast Open (kind 34, RFC 7413).

use std::fmt;

use etherparse::err::tcp as tcp_err;
use etherparse::TcpHeaderSlice;

use super::ip::Datagram;
use super::{DecodeError, TcpSegment};
use crate::base::seq::SeqNumber;

/// TCP control bits (RFC 9293 §3.1; ECE and CWR from RFC 3168; AE from
/// RFC 9768, formerly NS).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TcpFlags(pub u16);

impl TcpFlags {
    /// No more data from sender.
    pub const FIN: TcpFlags = TcpFlags(0x001);
    /// Synchronize sequence numbers.
    pub const SYN: TcpFlags = TcpFlags(0x002);
    /// Reset the connection.
    pub const RST: TcpFlags = TcpFlags(0x004);
    /// Push function.
    pub(crate) const PSH: TcpFlags = TcpFlags(0x008);
    /// Acknowledgment field is significant.
    pub const ACK: TcpFlags = TcpFlags(0x010);
    /// Urgent pointer field is significant.
    pub(crate) const URG: TcpFlags = TcpFlags(0x020);
    /// ECN-Echo (RFC 3168).
    pub const ECE: TcpFlags = TcpFlags(0x040);
    /// Congestion Window Reduced (RFC 3168).
    pub const CWR: TcpFlags = TcpFlags(0x080);
    /// Accurate ECN (RFC 9768; the former NS bit of RFC 3540).
    pub(crate) const AE: TcpFlags = TcpFlags(0x100);

    const NAMES: [(TcpFlags, &'static str); 9] = [
        (TcpFlags::SYN, "SYN"),
        (TcpFlags::FIN, "FIN"),
        (TcpFlags::RST, "RST"),
        (TcpFlags::PSH, "PSH"),
        (TcpFlags::ACK, "ACK"),
        (TcpFlags::URG, "URG"),
        (TcpFlags::ECE, "ECE"),
        (TcpFlags::CWR, "CWR"),
        (TcpFlags::AE, "AE"),
    ];

    /// Whether every bit of `other` is set.
    #[inline]
    pub fn contains(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for TcpFlags {
    type Output = TcpFlags;
    fn bitor(self, rhs: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | rhs.0)
    }
}

impl fmt::Display for TcpFlags {
    /// The set flags joined by `|`, e.g. `SYN|ACK`; `-` for none.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (flag, name) in TcpFlags::NAMES {
            if self.contains(flag) {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        if first {
            f.write_str("-")?;
        }
        Ok(())
    }
}

impl fmt::Debug for TcpFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TcpFlags({self})")
    }
}

/// A TCP Fast Open option (RFC 7413 §4.1.1), either as kind 34 or as the
/// experimental kind 254 with ExID `0xF989` (RFC 6994).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FastOpen {
    /// An empty option: the client asks for a cookie.
    CookieRequest {
        /// Sent as kind 254 + ExID `0xF989`.
        experimental: bool,
    },
    /// A cookie (the client presenting it, or the server granting it).
    Cookie {
        /// Cookie length in octets (RFC 7413: 4 to 16).
        len: u8,
        /// Sent as kind 254 + ExID `0xF989`.
        experimental: bool,
    },
}

/// The TCP options the analysis uses, folded into one `Copy` summary.
///
/// A later occurrence of an option overrides an earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpOptions {
    /// Maximum segment size (kind 2, RFC 9293 §3.7.1).
    pub mss: Option<u16>,
    /// Window scale shift (kind 3, RFC 7323 §2), clamped to 14 as RFC 7323
    /// §2.3 asks.
    pub window_scale: Option<u8>,
    /// SACK permitted (kind 4, RFC 2018).
    pub sack_permitted: bool,
    /// SACK blocks (kind 5, RFC 2018) as (left edge, right edge); the first
    /// [`sack_count`](Self::sack_count) entries are valid.
    pub(crate) sack_blocks: [(SeqNumber, SeqNumber); 4],
    /// Number of valid entries in [`sack_blocks`](Self::sack_blocks).
    pub(crate) sack_count: u8,
    /// Timestamps (kind 8, RFC 7323 §3): (TSval, TSecr).
    pub(crate) timestamps: Option<(u32, u32)>,
    /// TCP Fast Open (kind 34, or 254 + ExID `0xF989`).
    pub(crate) fast_open: Option<FastOpen>,
    /// The option list ran past the header or an option had a bad length:
    /// parsing stopped there, and options after it are missing.
    pub malformed: bool,
}

/// Option kinds (IANA "TCP Option Kind Numbers").
mod kind {
    pub(crate) const END: u8 = 0;
    pub(crate) const NOP: u8 = 1;
    pub(crate) const MSS: u8 = 2;
    pub(crate) const WINDOW_SCALE: u8 = 3;
    pub(crate) const SACK_PERMITTED: u8 = 4;
    pub(crate) const SACK: u8 = 5;
    pub(crate) const TIMESTAMPS: u8 = 8;
    pub(crate) const FAST_OPEN: u8 = 34;
    pub(crate) const EXPERIMENT_2: u8 = 254;
}

/// ExID of experimental TCP Fast Open (RFC 7413 §4.1.1, RFC 6994).
const TFO_EXID: u16 = 0xF989;
/// Largest window scale shift (RFC 7323 §2.3).
const MAX_WINDOW_SCALE: u8 = 14;

fn be_u16(b: &[u8]) -> Option<u16> {
    b.first_chunk::<2>().map(|b| u16::from_be_bytes(*b))
}

fn be_u32(b: &[u8]) -> Option<u32> {
    b.first_chunk::<4>().map(|b| u32::from_be_bytes(*b))
}

impl TcpOptions {
    /// The valid SACK blocks.
    pub fn sack(&self) -> &[(SeqNumber, SeqNumber)] {
        self.sack_blocks
            .get(..usize::from(self.sack_count))
            .unwrap_or(&[])
    }

    /// Parses the option bytes of a TCP header (the bytes between the fixed
    /// 20-octet header and the data offset).
    ///
    /// Parsing stops at End of Option List, at the end of `bytes`, or at the
    /// first option whose length is missing, below 2, runs past `bytes`, or
    /// is wrong for its kind (then [`malformed`](Self::malformed) is set).
    /// Unknown kinds are skipped by their length.
    pub(crate) fn parse(bytes: &[u8]) -> TcpOptions {
        // most segments of a Linux or BSD peer carry timestamps alone, laid
        // out as RFC 7323 Appendix A suggests: NOP, NOP, TS (what the loop
        // below makes of them, read in one step)
        if let [kind::NOP, kind::NOP, kind::TIMESTAMPS, 10, v0, v1, v2, v3, e0, e1, e2, e3] = *bytes
        {
            return TcpOptions {
                timestamps: Some((
                    u32::from_be_bytes([v0, v1, v2, v3]),
                    u32::from_be_bytes([e0, e1, e2, e3]),
                )),
                ..TcpOptions::default()
            };
        }
        Self::parse_all(bytes)
    }

    /// [`TcpOptions::parse`] option by option.
    fn parse_all(bytes: &[u8]) -> TcpOptions {
        let mut opts = TcpOptions::default();
        let mut rest = bytes;
        while let Some((&kind, after_kind)) = rest.split_first() {
            match kind {
                kind::END => break,
                kind::NOP => {
                    rest = after_kind;
                    continue;
                }
                _ => {}
            }
            let Some(&len) = after_kind.first() else {
                opts.malformed = true;
                break;
            };
            let Some((option, after)) =
                rest.split_at_checked(usize::from(len)).filter(|_| len >= 2)
            else {
                opts.malformed = true;
                break;
            };
            let body = option.get(2..).unwrap_or(&[]);
            if !opts.apply(kind, body) {
                opts.malformed = true;
                break;
            }
            rest = after;
        }
        opts
    }

    /// Records one option; `false` when its length is wrong for its kind.
    fn apply(&mut self, kind: u8, body: &[u8]) -> bool {
        match kind {
            kind::MSS => match be_u16(body).filter(|_| body.len() == 2) {
                Some(mss) => self.mss = Some(mss),
                None => return false,
            },
            kind::WINDOW_SCALE => match body {
                [shift] => self.window_scale = Some((*shift).min(MAX_WINDOW_SCALE)),
                _ => return false,
            },
            kind::SACK_PERMITTED => {
                if !body.is_empty() {
                    return false;
                }
                self.sack_permitted = true;
            }
            kind::SACK => {
                if body.is_empty() || body.len() % 8 != 0 {
                    return false;
                }
                self.sack_count = 0;
                for (slot, block) in self.sack_blocks.iter_mut().zip(body.chunks_exact(8)) {
                    let left = be_u32(block).unwrap_or(0);
                    let right = block.get(4..).and_then(be_u32).unwrap_or(0);
                    *slot = (SeqNumber(left), SeqNumber(right));
                    self.sack_count += 1;
                }
            }
            kind::TIMESTAMPS => {
                if body.len() != 8 {
                    return false;
                }
                let tsval = be_u32(body).unwrap_or(0);
                let tsecr = body.get(4..).and_then(be_u32).unwrap_or(0);
                self.timestamps = Some((tsval, tsecr));
            }
            kind::FAST_OPEN => self.fast_open = Some(fast_open(body, false)),
            kind::EXPERIMENT_2 if be_u16(body) == Some(TFO_EXID) => {
                self.fast_open = Some(fast_open(body.get(2..).unwrap_or(&[]), true));
            }
            _ => {}
        }
        true
    }
}

/// The fixed header of a segment whose options the snapshot length cut:
/// etherparse's `TcpHeaderSlice` needs the whole header, so the 20 fixed
/// bytes (RFC 9293 §3.1) are read here. `None` when the header is not cut
/// inside its options (the common paths go through etherparse).
fn parse_cut_header<'a>(datagram: &Datagram<'a>) -> Option<TcpSegment<'a>> {
    let b = datagram.payload;
    let fixed: &[u8; 20] = b.get(..20)?.try_into().ok()?;
    let header_len = usize::from(fixed[12] >> 4) * 4;
    if header_len < 20 || b.len() >= header_len || header_len > datagram.payload_len {
        return None;
    }
    let u16_at = |i: usize| u16::from_be_bytes([fixed[i], fixed[i + 1]]);
    let u32_at =
        |i: usize| u32::from_be_bytes([fixed[i], fixed[i + 1], fixed[i + 2], fixed[i + 3]]);
    let flags = TcpFlags((u16::from(fixed[12] & 0x01) << 8) | u16::from(fixed[13]));
    if flags.contains(TcpFlags::SYN | TcpFlags::FIN) {
        return None;
    }
    Some(TcpSegment {
        src: datagram.src,
        dst: datagram.dst,
        src_port: u16_at(0),
        dst_port: u16_at(2),
        seq: SeqNumber(u32_at(4)),
        ack: SeqNumber(u32_at(8)),
        flags,
        window: u16_at(14),
        // the options that fit; one cut in the middle is left out
        options: TcpOptions::parse(&b[20..]),
        payload: &[],
        payload_len: u32::try_from(datagram.payload_len - header_len).unwrap_or(u32::MAX),
        ip_id: datagram.ip_id,
    })
}

/// A Fast Open option whose cookie is `cookie`: empty is a cookie request
/// (docs/design.md §4 "TFO": an option of length 2 is a cookie request, a
/// longer one carries a cookie).
fn fast_open(cookie: &[u8], experimental: bool) -> FastOpen {
    if cookie.is_empty() {
        FastOpen::CookieRequest { experimental }
    } else {
        FastOpen::Cookie {
            len: u8::try_from(cookie.len()).unwrap_or(u8::MAX),
            experimental,
        }
    }
}

/// Reads the TCP segment that is the upper layer of `datagram`.
///
/// # Errors
///
/// [`DecodeError::Truncated`] when the captured bytes end inside the fixed
/// 20-byte TCP header; [`DecodeError::Malformed`] when the data offset is
/// below 5, the header runs past the IP length, or SYN and FIN are both set.
/// A header cut inside its options by the snapshot length (`tcpdump -s 96`
/// and an IPv6 SYN with its options) is read as far as it goes: the fixed
/// fields in full, the options that fit, no payload.
pub(super) fn parse_segment<'a>(datagram: &Datagram<'a>) -> Result<TcpSegment<'a>, DecodeError> {
    if !datagram.is_complete() {
        if let Some(seg) = parse_cut_header(datagram) {
            return Ok(seg);
        }
    }
    let header = TcpHeaderSlice::from_slice(datagram.payload).map_err(|e| match e {
        tcp_err::HeaderSliceError::Len(_) if datagram.is_complete() => DecodeError::Malformed {
            layer: "TCP",
            what: "the header runs past the IP length",
        },
        tcp_err::HeaderSliceError::Len(_) => DecodeError::Truncated { layer: "TCP" },
        tcp_err::HeaderSliceError::Content(_) => DecodeError::Malformed {
            layer: "TCP",
            what: "the data offset is below 5",
        },
    })?;
    let header_bytes = header.slice();
    let flags = match header_bytes.get(12..14) {
        Some(&[hi, lo]) => TcpFlags((u16::from(hi & 0x01) << 8) | u16::from(lo)),
        _ => TcpFlags::default(),
    };
    if flags.contains(TcpFlags::SYN | TcpFlags::FIN) {
        return Err(DecodeError::Malformed {
            layer: "TCP",
            what: "SYN and FIN are both set",
        });
    }
    let header_len = header_bytes.len();
    let payload_len = datagram.payload_len.saturating_sub(header_len);
    Ok(TcpSegment {
        src: datagram.src,
        dst: datagram.dst,
        src_port: header.source_port(),
        dst_port: header.destination_port(),
        seq: SeqNumber(header.sequence_number()),
        ack: SeqNumber(header.acknowledgment_number()),
        flags,
        window: header.window_size(),
        options: TcpOptions::parse(header.options()),
        payload: datagram.payload.get(header_len..).unwrap_or(&[]),
        payload_len: u32::try_from(payload_len).unwrap_or(u32::MAX),
        ip_id: datagram.ip_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(bytes: &[u8]) -> TcpOptions {
        TcpOptions::parse(bytes)
    }

    proptest::proptest! {
        /// The timestamps-only layout read in one step reads as the loop
        /// reads it, and so does anything else.
        #[test]
        fn timestamps_alone_read_as_option_by_option(
            tsval in proptest::prelude::any::<u32>(),
            tsecr in proptest::prelude::any::<u32>(),
            other in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
        ) {
            let mut ts = vec![1, 1, 8, 10];
            ts.extend(tsval.to_be_bytes());
            ts.extend(tsecr.to_be_bytes());
            let fast = TcpOptions::parse(&ts);
            proptest::prop_assert_eq!(fast, TcpOptions::parse_all(&ts));
            proptest::prop_assert_eq!(fast.timestamps, Some((tsval, tsecr)));
            proptest::prop_assert_eq!(TcpOptions::parse(&other), TcpOptions::parse_all(&other));
            let mut longer = ts.clone();
            longer.extend(&other);
            proptest::prop_assert_eq!(TcpOptions::parse(&longer), TcpOptions::parse_all(&longer));
        }
    }

    #[test]
    fn test_deconstruct_common_options() {
        let o = opts(&[
            0x02, 0x04, 0x05, 0xa0, // MSS 1440
            0x01, // NOP
            0x03, 0x03, 0x06, // WS 6
            0x01, 0x01, // NOP NOP
            0x08, 0x0a, 0x10, 0xb8, 0x1b, 0x93, 0x00, 0x00, 0x00, 0x00, // TS
            0x04, 0x02, // SACK permitted
            0x00, 0x00, // EOL, padding
        ]);
        assert_eq!(o.mss, Some(1440));
        assert_eq!(o.window_scale, Some(6));
        assert_eq!(o.timestamps, Some((0x10b8_1b93, 0)));
        assert!(o.sack_permitted);
        assert!(!o.malformed);
        assert_eq!(o.sack(), &[]);
        assert_eq!(o.fast_open, None);
    }

    #[test]
    fn test_deconstruct_sack_blocks() {
        let o = opts(&[
            0x01, 0x01, 0x05, 0x1a, // NOP NOP SACK, 3 blocks
            0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x20, 0x00, //
            0x00, 0x00, 0x30, 0x00, 0x00, 0x00, 0x40, 0x00, //
            0xff, 0xff, 0xff, 0xf0, 0x00, 0x00, 0x00, 0x10, // wraps
        ]);
        assert_eq!(o.sack_count, 3);
        assert_eq!(
            o.sack(),
            &[
                (SeqNumber(0x1000), SeqNumber(0x2000)),
                (SeqNumber(0x3000), SeqNumber(0x4000)),
                (SeqNumber(0xffff_fff0), SeqNumber(0x10)),
            ]
        );
        assert!(!o.malformed);

        // Four blocks: the most a 40-octet option space holds.
        let mut four = vec![0x05, 34];
        for i in 1..=8u32 {
            four.extend_from_slice(&(i * 100).to_be_bytes());
        }
        let o = opts(&four);
        assert_eq!(o.sack_count, 4);
        assert_eq!(o.sack()[3], (SeqNumber(700), SeqNumber(800)));
    }

    #[test]
    fn test_deconstruct_fast_open() {
        // Kind 34, length 2: cookie request.
        let o = opts(&[0x02, 0x04, 0x05, 0xb4, 0x22, 0x02, 0x01, 0x01]);
        assert_eq!(
            o.fast_open,
            Some(FastOpen::CookieRequest {
                experimental: false
            })
        );
        assert_eq!(o.mss, Some(1460));
        // Kind 34 with an 8-octet cookie, options after it still parsed.
        let o = opts(&[
            0x22, 0x0a, 1, 2, 3, 4, 5, 6, 7, 8, // TFO cookie
            0x03, 0x03, 0x08, 0x00, // WS 8, EOL
        ]);
        assert_eq!(
            o.fast_open,
            Some(FastOpen::Cookie {
                len: 8,
                experimental: false
            })
        );
        assert_eq!(o.window_scale, Some(8));
        // Kind 254, ExID 0xF989, length 4: experimental cookie request.
        let o = opts(&[0xfe, 0x04, 0xf9, 0x89, 0x01, 0x01, 0x04, 0x02]);
        assert_eq!(
            o.fast_open,
            Some(FastOpen::CookieRequest { experimental: true })
        );
        assert!(o.sack_permitted);
        // Kind 254, ExID 0xF989, 16-octet cookie.
        let mut exp = vec![0xfe, 20, 0xf9, 0x89];
        exp.extend_from_slice(&[0xab; 16]);
        let o = opts(&exp);
        assert_eq!(
            o.fast_open,
            Some(FastOpen::Cookie {
                len: 16,
                experimental: true
            })
        );
        // Kind 254 with another experiment's ExID is not TFO.
        let o = opts(&[0xfe, 0x06, 0x12, 0x34, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4]);
        assert_eq!(o.fast_open, None);
        assert_eq!(o.mss, Some(1460));
        assert!(!o.malformed);
    }

    #[test]
    fn test_window_scale_clamped() {
        assert_eq!(opts(&[0x03, 0x03, 14]).window_scale, Some(14));
        assert_eq!(opts(&[0x03, 0x03, 15]).window_scale, Some(14));
        assert_eq!(opts(&[0x03, 0x03, 255]).window_scale, Some(14));
    }

    #[test]
    fn test_impossible_len() {
        // Length 0 and 1 would loop forever or overlap the next option.
        for bad in [0u8, 1] {
            let o = opts(&[0x02, 0x04, 0x05, 0xb4, 0x08, bad, 0x04, 0x02]);
            assert_eq!(o.mss, Some(1460), "options before the bad one are kept");
            assert!(!o.sack_permitted, "parsing stopped at the bad length");
            assert!(o.malformed);
        }
        // Length runs past the option space.
        let o = opts(&[0x01, 0x08, 0x0a, 0, 0, 0, 1]);
        assert!(o.malformed);
        assert_eq!(o.timestamps, None);
        // Kind without a length octet.
        assert!(opts(&[0x01, 0x01, 0x02]).malformed);
        // Known kinds with the wrong length.
        for bad in [
            &[0x02, 0x03, 0x05][..],                  // MSS, 3
            &[0x03, 0x04, 0x07, 0x00],                // WS, 4
            &[0x04, 0x03, 0x00],                      // SACK permitted, 3
            &[0x05, 0x02],                            // SACK, no block
            &[0x05, 0x0b, 0, 0, 0, 0, 0, 0, 0, 0, 0], // SACK, 9 octets
            &[0x08, 0x08, 0, 0, 0, 0, 0, 0],          // timestamps, 8
        ] {
            let o = opts(bad);
            assert!(o.malformed, "{bad:02x?}");
            assert_eq!(
                (
                    o.mss,
                    o.window_scale,
                    o.sack_permitted,
                    o.sack_count,
                    o.timestamps
                ),
                (None, None, false, 0, None),
                "{bad:02x?}"
            );
        }
        // Garbage after EOL is ignored.
        let o = opts(&[0x00, 0x08, 0x00, 0xff]);
        assert_eq!(o, TcpOptions::default());
        // Unknown kinds are skipped by their length.
        let o = opts(&[0x1e, 0x04, 0xaa, 0xbb, 0x02, 0x04, 0x05, 0xb4]);
        assert_eq!(o.mss, Some(1460));
        assert!(!o.malformed);
    }

    #[test]
    fn test_truncated() {
        let full = [
            0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0, 0, 0, 1, 0, 0, 0, 2, 0x01, 0x03,
            0x03, 0x07,
        ];
        for len in 0..full.len() {
            // Never panics; complete options before the cut are kept.
            let o = opts(&full[..len]);
            assert_eq!(o.mss.is_some(), len >= 4, "cut at {len}");
            assert_eq!(o.timestamps.is_some(), len >= 16, "cut at {len}");
        }
        assert_eq!(opts(&full).window_scale, Some(7));
    }

    #[test]
    fn flags() {
        let f = TcpFlags::SYN | TcpFlags::ACK;
        assert!(f.contains(TcpFlags::SYN));
        assert!(f.contains(TcpFlags::SYN | TcpFlags::ACK));
        assert!(!f.contains(TcpFlags::FIN));
        assert_eq!(f.to_string(), "SYN|ACK");
        assert_eq!(TcpFlags(0).to_string(), "-");
        assert_eq!(
            format!("{:?}", TcpFlags(0x1ff)),
            "TcpFlags(SYN|FIN|RST|PSH|ACK|URG|ECE|CWR|AE)"
        );
    }
}
