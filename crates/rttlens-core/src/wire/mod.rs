//! Wire decoding: from a captured frame to a [`TcpSegment`].
//!
//! [`decode`] strips the link layer (`link`), walks IPv4 or IPv6 with its
//! extension headers (`ip`) and reads the TCP header and options
//! (`tcp`). Everything borrows from the frame; nothing is allocated.
//!
//! Ethernet, VLAN tags and the IP and TCP fixed headers are read with
//! etherparse's checked header slices. Written here, because etherparse
//! lacks them or rejects real captures: the Linux cooked headers SLL and
//! SLL2, BSD null/loopback, and the TCP options (etherparse stops at the
//! Fast Open option, kind 34).
//!
//! # Lengths
//!
//! The IP header's length fields are the truth for the TCP payload length
//! ([`TcpSegment::payload_len`]): Ethernet padding after the datagram is not
//! payload, and a frame cut by the snapshot length keeps the payload length
//! of its IP header with a shorter [`TcpSegment::payload`]. When the IP
//! length field is 0 (Linux GSO/TSO packets larger than 64 KiB: an IPv4
//! total length of 0, or an IPv6 jumbogram / BIG TCP payload length of 0),
//! the frame's length on the wire stands in for it.
//!
//! # Errors
//!
//! A frame that cannot be decoded gives a [`DecodeError`]; inside a capture
//! that is a counted capture-quality note, never a reason to stop.

pub mod community_id;
pub(crate) mod duplicates;
pub(crate) mod ip;
pub(crate) mod link;
pub(crate) mod tcp;
pub(crate) mod varint;

use std::net::IpAddr;

pub use tcp::{FastOpen, TcpFlags, TcpOptions};

use crate::base::seq::SeqNumber;
use crate::capture::LinkType;

/// What a frame holds, as far as rttlens is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// A TCP segment.
    Tcp(TcpSegment<'a>),
    /// A fragment after the first of a fragmented IP datagram carrying TCP:
    /// it has no TCP header, and IP fragments are not reassembled. Worth a
    /// capture-quality note (TCP is rarely fragmented).
    TcpFragment,
    /// A UDP datagram (RFC 768): what QUIC rides on. IP fragments after
    /// the first are [`Decoded::Other`].
    Udp(UdpDatagram<'a>),
    /// Anything else: ARP, ICMP, other EtherTypes or address families.
    Other,
}

/// A decoded UDP datagram, borrowing its payload from the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpDatagram<'a> {
    /// IP source address.
    pub src: IpAddr,
    /// IP destination address.
    pub dst: IpAddr,
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Captured payload bytes (after the 8-byte UDP header, bounded by the
    /// UDP length field); shorter than [`payload_len`](Self::payload_len)
    /// when the snapshot length cut the frame.
    pub payload: &'a [u8],
    /// Payload length on the wire, in octets (the UDP length field less 8).
    pub payload_len: u32,
}

/// A decoded TCP segment (RFC 9293 §3.1), borrowing its payload from the
/// frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSegment<'a> {
    /// IP source address.
    pub src: IpAddr,
    /// IP destination address.
    pub dst: IpAddr,
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: SeqNumber,
    /// Acknowledgment number (meaningful when [`TcpFlags::ACK`] is set).
    pub ack: SeqNumber,
    /// Control bits.
    pub flags: TcpFlags,
    /// Window field as sent: raw, not yet scaled by the window-scale shift.
    pub window: u16,
    /// The options the analysis uses.
    pub options: TcpOptions,
    /// Captured payload bytes; shorter than
    /// [`payload_len`](Self::payload_len) when the snapshot length cut the
    /// frame.
    pub payload: &'a [u8],
    /// Payload length on the wire, in octets, from the IP length fields.
    pub payload_len: u32,
    /// The IPv4 Identification field (RFC 791 §3.1; 0 for IPv6): two copies
    /// of one packet share it, a retransmission from Linux does not (its
    /// per-socket counter, `ip_select_ident()`). 0 tells nothing either way:
    /// IPv6 has none, and some stacks send 0 on every DF datagram.
    pub ip_id: u16,
}

impl TcpSegment<'_> {
    /// Sequence space the segment occupies: payload length plus one for SYN
    /// and one for FIN (RFC 9293 §3.4).
    pub fn seq_len(&self) -> u32 {
        self.payload_len
            .saturating_add(u32::from(self.flags.contains(TcpFlags::SYN)))
            .saturating_add(u32::from(self.flags.contains(TcpFlags::FIN)))
    }

    /// Whether the snapshot length cut some of the payload.
    pub fn is_cut(&self) -> bool {
        (self.payload.len() as u64) < u64::from(self.payload_len)
    }

    /// The same segment with `payload` as its captured payload.
    pub fn with_payload<'b>(&self, payload: &'b [u8]) -> TcpSegment<'b> {
        TcpSegment {
            src: self.src,
            dst: self.dst,
            src_port: self.src_port,
            dst_port: self.dst_port,
            seq: self.seq,
            ack: self.ack,
            flags: self.flags,
            window: self.window,
            options: self.options,
            payload,
            payload_len: self.payload_len,
            ip_id: self.ip_id,
        }
    }
}

/// Why a frame could not be decoded. Inside a capture each one is a counted
/// capture-quality note, never fatal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The captured bytes end inside a header (usually: a small snapshot
    /// length).
    #[error("the frame ends inside its {layer} header (cut by the snapshot length?)")]
    Truncated {
        /// The header that was cut: `"Ethernet"`, `"IPv4"`, `"TCP"`, ….
        layer: &'static str,
    },
    /// The frame's link type is one rttlens cannot decode.
    #[error("unsupported link type {0}")]
    UnknownLinkType(LinkType),
    /// A header holds impossible values (a bad IP version or IHL, a TCP data
    /// offset below 5, lengths that contradict each other, SYN with FIN, …).
    #[error("malformed {layer} header: {what}")]
    Malformed {
        /// The header at fault.
        layer: &'static str,
        /// What is wrong, in words.
        what: &'static str,
    },
}

/// The IP protocol number of TCP.
const IPPROTO_TCP: u8 = 6;
/// The IP protocol number of UDP.
const IPPROTO_UDP: u8 = 17;

/// Decodes a frame of link type `link` captured as `data`, whose length on
/// the wire was `orig_len`.
///
/// IP fragments are not reassembled: the first fragment of a fragmented
/// datagram decodes as a segment whose payload is that fragment's part, and
/// later fragments of a TCP datagram are [`Decoded::TcpFragment`].
///
/// # Errors
///
/// [`DecodeError::UnknownLinkType`] for a link type not listed in `link`;
/// [`DecodeError::Truncated`] when `data` ends inside a link, IP or TCP
/// header; [`DecodeError::Malformed`] for impossible header values.
pub fn decode(link: LinkType, data: &[u8], orig_len: u32) -> Result<Decoded<'_>, DecodeError> {
    let Some(net) = link::strip(link, data)? else {
        return Ok(Decoded::Other);
    };
    // The IP datagram's length on the wire, for IP length fields of 0.
    let link_len = data.len().saturating_sub(net.bytes().len());
    let wire_len = (orig_len as usize).saturating_sub(link_len);
    let datagram = match net {
        link::Network::Ipv4(bytes) => ip::parse_ipv4(bytes, wire_len)?,
        link::Network::Ipv6(bytes) => ip::parse_ipv6(bytes, wire_len)?,
    };
    if datagram.protocol == IPPROTO_UDP && !datagram.non_first_fragment {
        return udp(&datagram);
    }
    if datagram.protocol != IPPROTO_TCP {
        return Ok(Decoded::Other);
    }
    if datagram.non_first_fragment {
        return Ok(Decoded::TcpFragment);
    }
    tcp::parse_segment(&datagram).map(Decoded::Tcp)
}

/// The UDP header (RFC 768) of `d`; the payload bounded by the UDP length
/// field when that is sane (a length of 0 is a jumbogram's, RFC 2675 §4:
/// the IP length stands). A header that is cut or impossible makes the
/// datagram [`Decoded::Other`]: rttlens reads UDP only for QUIC, and a
/// broken UDP header is no note about the TCP it analyses.
fn udp<'a>(d: &ip::Datagram<'a>) -> Result<Decoded<'a>, DecodeError> {
    let Some(h) = d.payload.get(..8) else {
        return Ok(Decoded::Other);
    };
    let len = usize::from(u16::from_be_bytes([h[4], h[5]]));
    let wire = if (8..=d.payload_len).contains(&len) {
        len
    } else if len == 0 {
        d.payload_len
    } else {
        return Ok(Decoded::Other);
    };
    let captured = d.payload.len().min(wire);
    Ok(Decoded::Udp(UdpDatagram {
        src: d.src,
        dst: d.dst,
        src_port: u16::from_be_bytes([h[0], h[1]]),
        dst_port: u16::from_be_bytes([h[2], h[3]]),
        payload: &d.payload[8..captured],
        payload_len: u32::try_from(wire - 8).unwrap_or(u32::MAX),
    }))
}

#[cfg(test)]
mod tests;
