//! IPv4 (RFC 791, with header options and the authentication header) and
//! IPv6 (RFC 8200, with hop-by-hop, routing, fragment, destination options
//! and authentication extension headers), read with etherparse's header
//! slices.
//!
//! Only what TCP needs is kept: addresses, the upper-layer protocol, its
//! bytes and its length on the wire, and whether the datagram is a
//! non-first fragment.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use etherparse::err::{ip_auth, ipv4, ipv6, ipv6_exts};
use etherparse::{
    IpAuthHeaderSlice, Ipv4HeaderSlice, Ipv6ExtensionSlice, Ipv6ExtensionsSlice, Ipv6HeaderSlice,
};

use super::DecodeError;

/// IP protocol number of the authentication header (RFC 4302).
const IPPROTO_AH: u8 = 51;

/// The upper-layer part of an IP datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Datagram<'a> {
    /// Source address.
    pub(crate) src: IpAddr,
    /// Destination address.
    pub(crate) dst: IpAddr,
    /// Upper-layer protocol number (after any extension headers).
    pub(crate) protocol: u8,
    /// Captured upper-layer bytes, bounded by the IP length (so without
    /// link-layer padding); shorter than `payload_len` when the frame was
    /// cut.
    pub(crate) payload: &'a [u8],
    /// Upper-layer length on the wire, in octets.
    pub(crate) payload_len: usize,
    /// The datagram is a fragment other than the first: `payload` does not
    /// start with an upper-layer header.
    pub(crate) non_first_fragment: bool,
    /// IPv4 Identification field (RFC 791 §3.1); 0 for IPv6, whose
    /// datagrams carry one only in a fragment header.
    pub(crate) ip_id: u16,
}

impl Datagram<'_> {
    /// Whether every upper-layer byte was captured, so that a header running
    /// past `payload` runs past the IP length (malformed) rather than past
    /// the snapshot length (truncated).
    pub(crate) fn is_complete(&self) -> bool {
        self.payload.len() >= self.payload_len
    }
}

/// Parses the IPv4 datagram at the start of `bytes`. `wire_len` is the
/// datagram's length on the wire as the frame tells it, used only when the
/// total length field is 0 (Linux TSO/GSO).
///
/// # Errors
///
/// [`DecodeError::Truncated`] when `bytes` ends inside the IPv4 header (or
/// an authentication header); [`DecodeError::Malformed`] when the version is
/// not 4, the IHL is below 5 or the total length is shorter than the
/// header.
pub(crate) fn parse_ipv4(bytes: &[u8], wire_len: usize) -> Result<Datagram<'_>, DecodeError> {
    let header = Ipv4HeaderSlice::from_slice(bytes).map_err(|e| match e {
        ipv4::HeaderSliceError::Len(_) => DecodeError::Truncated { layer: "IPv4" },
        ipv4::HeaderSliceError::Content(ipv4::HeaderError::UnexpectedVersion { .. }) => {
            DecodeError::Malformed {
                layer: "IPv4",
                what: "the version is not 4",
            }
        }
        ipv4::HeaderSliceError::Content(_) => DecodeError::Malformed {
            layer: "IPv4",
            what: "the header length (IHL) is below 5",
        },
    })?;
    let header_len = header.slice().len();
    let total_len = match usize::from(header.total_len()) {
        0 => wire_len,
        n => n,
    };
    if total_len < header_len {
        return Err(DecodeError::Malformed {
            layer: "IPv4",
            what: "the total length is shorter than the header",
        });
    }
    let mut datagram = Datagram {
        src: IpAddr::V4(Ipv4Addr::from(header.source())),
        dst: IpAddr::V4(Ipv4Addr::from(header.destination())),
        protocol: header.protocol().0,
        payload: bytes
            .get(header_len..total_len.min(bytes.len()))
            .unwrap_or(&[]),
        payload_len: total_len - header_len,
        non_first_fragment: header.fragments_offset().value() != 0,
        ip_id: header.identification(),
    };
    if datagram.protocol == IPPROTO_AH && !datagram.non_first_fragment {
        let complete = datagram.is_complete();
        let ah =
            IpAuthHeaderSlice::from_slice(datagram.payload).map_err(|e| auth_error(e, complete))?;
        let ah_len = ah.slice().len();
        datagram.protocol = ah.next_header().0;
        datagram.payload = datagram.payload.get(ah_len..).unwrap_or(&[]);
        datagram.payload_len = datagram.payload_len.saturating_sub(ah_len);
    }
    Ok(datagram)
}

fn auth_error(e: ip_auth::HeaderSliceError, complete: bool) -> DecodeError {
    match e {
        ip_auth::HeaderSliceError::Len(_) if complete => DecodeError::Malformed {
            layer: "IP authentication",
            what: "the header runs past the IP length",
        },
        ip_auth::HeaderSliceError::Len(_) => DecodeError::Truncated {
            layer: "IP authentication",
        },
        ip_auth::HeaderSliceError::Content(_) => DecodeError::Malformed {
            layer: "IP authentication",
            what: "the payload length field is zero",
        },
    }
}

/// Parses the IPv6 datagram at the start of `bytes`, skipping its extension
/// headers. `wire_len` is used only when the payload length field is 0 (a
/// jumbogram, RFC 2675, or Linux BIG TCP).
///
/// # Errors
///
/// [`DecodeError::Truncated`] when `bytes` ends inside the IPv6 header or an
/// extension header; [`DecodeError::Malformed`] when the version is not 6,
/// a hop-by-hop header is not first, or the extension headers run past the
/// payload length.
pub(crate) fn parse_ipv6(bytes: &[u8], wire_len: usize) -> Result<Datagram<'_>, DecodeError> {
    let header = Ipv6HeaderSlice::from_slice(bytes).map_err(|e| match e {
        ipv6::HeaderSliceError::Len(_) => DecodeError::Truncated { layer: "IPv6" },
        ipv6::HeaderSliceError::Content(_) => DecodeError::Malformed {
            layer: "IPv6",
            what: "the version is not 6",
        },
    })?;
    let header_len = header.slice().len();
    let payload_len = match usize::from(header.payload_length()) {
        0 => wire_len.saturating_sub(header_len),
        n => n,
    };
    let after = bytes.get(header_len..).unwrap_or(&[]);
    let region = after.get(..payload_len.min(after.len())).unwrap_or(&[]);
    let complete = region.len() >= payload_len;
    let (exts, next, rest) = Ipv6ExtensionsSlice::from_slice(header.next_header(), region)
        .map_err(|e| match e {
            ipv6_exts::HeaderSliceError::Len(_) if complete => DecodeError::Malformed {
                layer: "IPv6 extension",
                what: "the extension headers run past the payload length",
            },
            ipv6_exts::HeaderSliceError::Len(_) => DecodeError::Truncated {
                layer: "IPv6 extension",
            },
            ipv6_exts::HeaderSliceError::Content(ipv6_exts::HeaderError::HopByHopNotAtStart) => {
                DecodeError::Malformed {
                    layer: "IPv6 extension",
                    what: "a hop-by-hop header does not directly follow the IPv6 header",
                }
            }
            ipv6_exts::HeaderSliceError::Content(_) => DecodeError::Malformed {
                layer: "IP authentication",
                what: "the payload length field is zero",
            },
        })?;
    let non_first_fragment = exts.is_fragmenting_payload()
        && exts.clone().into_iter().any(|ext| match ext {
            Ipv6ExtensionSlice::Fragment(frag) => frag.fragment_offset().value() != 0,
            _ => false,
        });
    Ok(Datagram {
        src: IpAddr::V6(Ipv6Addr::from(header.source())),
        dst: IpAddr::V6(Ipv6Addr::from(header.destination())),
        protocol: next.0,
        payload: rest,
        payload_len: payload_len.saturating_sub(exts.slice().len()),
        non_first_fragment,
        ip_id: 0,
    })
}
