//! Link layers: from a frame to the IP datagram it carries.
//!
//! | link type | header |
//! |---|---|
//! | [`LinkType::ETHERNET`] | Ethernet II, then any number of 802.1Q / 802.1ad (QinQ) tags (EtherTypes `0x8100`, `0x88a8`, `0x9100`) |
//! | [`LinkType::LINUX_SLL`] | 16 octets, protocol at offset 14 ([`SllHeader`]) |
//! | [`LinkType::LINUX_SLL2`] | 20 octets, protocol at offset 0 ([`Sll2Header`]) |
//! | [`LinkType::RAW`], [`LinkType::IPV4`], [`LinkType::IPV6`] | none; the IP version nibble decides |
//! | [`LinkType::NULL`] | 4-octet address family in the capturing host's byte order ([`NullHeader`]) |
//! | [`LinkType::LOOP`] | 4-octet address family in network byte order |
//! | [`LinkType::PPP`] | RFC 1662 HDLC-like framing: address `0xff` and control `0x03` (may be left out), then the PPP protocol (RFC 1661 §2): `0x0021` IPv4, `0x0057` IPv6 |
//!
//! Ethernet and VLAN headers are read with etherparse. The SLL, SLL2 and
//! null headers are views written here: etherparse has no SLL2 or null, and
//! its SLL slice rejects the ARPHRD types of loopback (772), tun (65534) and
//! PPP devices, which are exactly what `tcpdump -i any` records on a
//! server.

use etherparse::{Ethernet2HeaderSlice, SingleVlanHeaderSlice};

use super::DecodeError;
use crate::capture::LinkType;

/// The network-layer datagram a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Network<'a> {
    /// An IPv4 datagram (and whatever follows it in the frame).
    Ipv4(&'a [u8]),
    /// An IPv6 datagram (and whatever follows it in the frame).
    Ipv6(&'a [u8]),
}

impl<'a> Network<'a> {
    /// The bytes from the IP header to the end of the frame.
    pub(crate) fn bytes(&self) -> &'a [u8] {
        match *self {
            Network::Ipv4(b) | Network::Ipv6(b) => b,
        }
    }
}

/// EtherType of IPv4.
pub(crate) const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of IPv6.
pub(crate) const ETHERTYPE_IPV6: u16 = 0x86dd;
/// EtherType of an 802.1Q VLAN tag.
pub(crate) const ETHERTYPE_VLAN: u16 = 0x8100;
/// EtherType of an 802.1ad service tag (QinQ outer tag).
pub(crate) const ETHERTYPE_QINQ: u16 = 0x88a8;
/// Pre-standard QinQ outer tag EtherType.
pub(crate) const ETHERTYPE_QINQ_OLD: u16 = 0x9100;

/// BSD `AF_INET`.
const AF_INET: u32 = 2;
/// BSD `AF_INET6` values: NetBSD/OpenBSD (24), FreeBSD/DragonFly (28),
/// Darwin (30).
const AF_INET6: [u32; 3] = [24, 28, 30];

/// Strips the link-layer header of a `link` frame. `Ok(None)` when the frame
/// carries something other than IP.
///
/// # Errors
///
/// [`DecodeError::UnknownLinkType`] for a link type not in the table above,
/// [`DecodeError::Truncated`] when the frame ends inside a link header, and
/// [`DecodeError::Malformed`] for raw IP whose version is neither 4 nor 6.
pub(crate) fn strip(link: LinkType, data: &[u8]) -> Result<Option<Network<'_>>, DecodeError> {
    match link {
        LinkType::ETHERNET => {
            let eth = Ethernet2HeaderSlice::from_slice(data)
                .map_err(|_| DecodeError::Truncated { layer: "Ethernet" })?;
            let rest = data.get(eth.slice().len()..).unwrap_or(&[]);
            by_ethertype(eth.ether_type().0, rest)
        }
        LinkType::LINUX_SLL => {
            let sll = SllHeader::new_checked(data)?;
            if sll.arphrd_type() == ARPHRD_NETLINK {
                return Ok(None);
            }
            by_ethertype(sll.protocol(), sll.payload())
        }
        LinkType::LINUX_SLL2 => {
            let sll2 = Sll2Header::new_checked(data)?;
            if sll2.arphrd_type() == ARPHRD_NETLINK {
                return Ok(None);
            }
            by_ethertype(sll2.protocol(), sll2.payload())
        }
        LinkType::RAW | LinkType::IPV4 | LinkType::IPV6 => by_version(data).map(Some),
        LinkType::NULL => {
            let null = NullHeader::new_checked(data)?;
            Ok(by_family(null.family_any_order(), null.payload()))
        }
        LinkType::LOOP => {
            let null = NullHeader::new_checked(data)?;
            Ok(by_family(null.family_be(), null.payload()))
        }
        LinkType::PPP => ppp(data),
        other => Err(DecodeError::UnknownLinkType(other)),
    }
}

/// PPP (`LINKTYPE_PPP`): the optional address and control octets, then
/// the protocol field, one octet when its low bit is set (protocol field
/// compression, RFC 1661 §6.5), else two.
fn ppp(data: &[u8]) -> Result<Option<Network<'_>>, DecodeError> {
    let rest = match data {
        [0xff, 0x03, rest @ ..] => rest,
        rest => rest,
    };
    let (proto, rest) = match rest {
        [p, rest @ ..] if p & 1 == 1 => (u16::from(*p), rest),
        [hi, lo, rest @ ..] => (u16::from_be_bytes([*hi, *lo]), rest),
        _ => return Err(DecodeError::Truncated { layer: "PPP" }),
    };
    Ok(match proto {
        0x0021 => Some(Network::Ipv4(rest)),
        0x0057 => Some(Network::Ipv6(rest)),
        _ => None,
    })
}

/// Follows EtherTypes through VLAN tags to IP. Each tag consumes 4 octets,
/// so the loop ends with the frame.
fn by_ethertype(mut ethertype: u16, mut rest: &[u8]) -> Result<Option<Network<'_>>, DecodeError> {
    loop {
        match ethertype {
            ETHERTYPE_IPV4 => return Ok(Some(Network::Ipv4(rest))),
            ETHERTYPE_IPV6 => return Ok(Some(Network::Ipv6(rest))),
            ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD => {
                let tag = SingleVlanHeaderSlice::from_slice(rest)
                    .map_err(|_| DecodeError::Truncated { layer: "VLAN" })?;
                ethertype = tag.ether_type().0;
                rest = rest.get(tag.slice().len()..).unwrap_or(&[]);
            }
            _ => return Ok(None),
        }
    }
}

/// Raw IP: the version nibble decides.
fn by_version(data: &[u8]) -> Result<Network<'_>, DecodeError> {
    match data.first().map(|b| b >> 4) {
        Some(4) => Ok(Network::Ipv4(data)),
        Some(6) => Ok(Network::Ipv6(data)),
        Some(_) => Err(DecodeError::Malformed {
            layer: "raw IP",
            what: "the version is neither 4 nor 6",
        }),
        None => Err(DecodeError::Truncated { layer: "raw IP" }),
    }
}

fn by_family(family: u32, payload: &[u8]) -> Option<Network<'_>> {
    if family == AF_INET {
        Some(Network::Ipv4(payload))
    } else if AF_INET6.contains(&family) {
        Some(Network::Ipv6(payload))
    } else {
        None
    }
}

/// `ARPHRD_NETLINK`: the SLL protocol field is a netlink family, not an
/// EtherType.
const ARPHRD_NETLINK: u16 = 824;

fn be_u16(buffer: &[u8], at: usize) -> u16 {
    buffer
        .get(at..)
        .and_then(|b| b.first_chunk::<2>())
        .map_or(0, |b| u16::from_be_bytes(*b))
}

fn be_u32(buffer: &[u8], at: usize) -> u32 {
    buffer
        .get(at..)
        .and_then(|b| b.first_chunk::<4>())
        .map_or(0, |b| u32::from_be_bytes(*b))
}

/// Linux cooked capture v1 header (`LINKTYPE_LINUX_SLL`,
/// <https://www.tcpdump.org/linktypes/LINKTYPE_LINUX_SLL.html>).
///
/// Once [`new_checked`](Self::new_checked) succeeds no accessor can panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SllHeader<'a> {
    buffer: &'a [u8],
}

mod sll_field {
    #[allow(dead_code)]
    pub(crate) const PACKET_TYPE: usize = 0;
    pub(crate) const ARPHRD_TYPE: usize = 2;
    #[allow(dead_code)]
    pub(crate) const ADDR_LEN: usize = 4;
    pub(crate) const PROTOCOL: usize = 14;
}

impl<'a> SllHeader<'a> {
    /// Header length in octets.
    pub const LEN: usize = 16;

    /// A view of the header at the start of `buffer`.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`] when `buffer` is shorter than 16 octets.
    pub(crate) fn new_checked(buffer: &'a [u8]) -> Result<Self, DecodeError> {
        if buffer.len() < Self::LEN {
            return Err(DecodeError::Truncated { layer: "Linux SLL" });
        }
        Ok(SllHeader { buffer })
    }

    /// Packet type (0 to us, 1 broadcast, 2 multicast, 3 to someone else,
    /// 4 sent by us).
    #[allow(dead_code)] // the whole header stays readable, as smoltcp's wire views
    pub(crate) fn packet_type(&self) -> u16 {
        be_u16(self.buffer, sll_field::PACKET_TYPE)
    }

    /// `ARPHRD_` device type (1 Ethernet, 772 loopback, 65534 none/tun, …).
    pub(crate) fn arphrd_type(&self) -> u16 {
        be_u16(self.buffer, sll_field::ARPHRD_TYPE)
    }

    /// Length of the link-layer source address.
    #[allow(dead_code)] // the whole header stays readable, as smoltcp's wire views
    pub(crate) fn addr_len(&self) -> u16 {
        be_u16(self.buffer, sll_field::ADDR_LEN)
    }

    /// Protocol: an EtherType for IP.
    pub(crate) fn protocol(&self) -> u16 {
        be_u16(self.buffer, sll_field::PROTOCOL)
    }

    /// The bytes after the header.
    pub(crate) fn payload(&self) -> &'a [u8] {
        self.buffer.get(Self::LEN..).unwrap_or(&[])
    }
}

/// Linux cooked capture v2 header (`LINKTYPE_LINUX_SLL2`,
/// <https://www.tcpdump.org/linktypes/LINKTYPE_LINUX_SLL2.html>).
///
/// Once [`new_checked`](Self::new_checked) succeeds no accessor can panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sll2Header<'a> {
    buffer: &'a [u8],
}

mod sll2_field {
    pub(crate) const PROTOCOL: usize = 0;
    #[allow(dead_code)]
    pub(crate) const INTERFACE_INDEX: usize = 4;
    pub(crate) const ARPHRD_TYPE: usize = 8;
    #[allow(dead_code)]
    pub(crate) const PACKET_TYPE: usize = 10;
    #[allow(dead_code)]
    pub(crate) const ADDR_LEN: usize = 11;
}

impl<'a> Sll2Header<'a> {
    /// Header length in octets.
    pub const LEN: usize = 20;

    /// A view of the header at the start of `buffer`.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`] when `buffer` is shorter than 20 octets.
    pub(crate) fn new_checked(buffer: &'a [u8]) -> Result<Self, DecodeError> {
        if buffer.len() < Self::LEN {
            return Err(DecodeError::Truncated {
                layer: "Linux SLL2",
            });
        }
        Ok(Sll2Header { buffer })
    }

    /// Protocol: an EtherType for IP.
    pub(crate) fn protocol(&self) -> u16 {
        be_u16(self.buffer, sll2_field::PROTOCOL)
    }

    /// Index of the interface the packet was captured on.
    #[allow(dead_code)] // the whole header stays readable, as smoltcp's wire views
    pub(crate) fn interface_index(&self) -> u32 {
        be_u32(self.buffer, sll2_field::INTERFACE_INDEX)
    }

    /// `ARPHRD_` device type.
    pub(crate) fn arphrd_type(&self) -> u16 {
        be_u16(self.buffer, sll2_field::ARPHRD_TYPE)
    }

    /// Packet type (as in [`SllHeader::packet_type`]).
    #[allow(dead_code)] // the whole header stays readable, as smoltcp's wire views
    pub(crate) fn packet_type(&self) -> u8 {
        self.buffer
            .get(sll2_field::PACKET_TYPE)
            .copied()
            .unwrap_or(0)
    }

    /// Length of the link-layer source address.
    #[allow(dead_code)] // the whole header stays readable, as smoltcp's wire views
    pub(crate) fn addr_len(&self) -> u8 {
        self.buffer.get(sll2_field::ADDR_LEN).copied().unwrap_or(0)
    }

    /// The bytes after the header.
    pub(crate) fn payload(&self) -> &'a [u8] {
        self.buffer.get(Self::LEN..).unwrap_or(&[])
    }
}

/// BSD null / OpenBSD loopback header (`LINKTYPE_NULL`, `LINKTYPE_LOOP`,
/// <https://www.tcpdump.org/linktypes/LINKTYPE_NULL.html>): a 4-octet
/// address family.
///
/// Once [`new_checked`](Self::new_checked) succeeds no accessor can panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NullHeader<'a> {
    buffer: &'a [u8],
}

impl<'a> NullHeader<'a> {
    /// Header length in octets.
    pub(crate) const LEN: usize = 4;

    /// A view of the header at the start of `buffer`.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`] when `buffer` is shorter than 4 octets.
    pub(crate) fn new_checked(buffer: &'a [u8]) -> Result<Self, DecodeError> {
        if buffer.len() < Self::LEN {
            return Err(DecodeError::Truncated { layer: "BSD null" });
        }
        Ok(NullHeader { buffer })
    }

    /// The address family read in network byte order (`LINKTYPE_LOOP`).
    pub(crate) fn family_be(&self) -> u32 {
        be_u32(self.buffer, 0)
    }

    /// The address family of a `LINKTYPE_NULL` header, written in the byte
    /// order of the capturing host, which the file does not record: the
    /// order that gives a small value (every `AF_` value fits in 16 bits)
    /// wins.
    pub(crate) fn family_any_order(&self) -> u32 {
        let be = self.family_be();
        if be <= 0xffff {
            be
        } else {
            be.swap_bytes()
        }
    }

    /// The bytes after the header.
    pub(crate) fn payload(&self) -> &'a [u8] {
        self.buffer.get(Self::LEN..).unwrap_or(&[])
    }
}
