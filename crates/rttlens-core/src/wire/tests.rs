//! Whole-frame decoding tests over static byte arrays (smoltcp's
//! `test_deconstruct` / `test_truncated` / `test_impossible_len` pattern).
//! Every frame below was checked with `tshark -V` when it was written.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::*;

/// Ethernet II header, EtherType IPv4.
static ETH_IPV4: [u8; 14] = [
    0x00, 0x11, 0x22, 0x33, 0x44, 0x55, // destination
    0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, // source
    0x08, 0x00, // IPv4
];

/// Ethernet II header with an 802.1ad outer tag (VLAN 100) and an 802.1Q
/// inner tag (VLAN 200), then IPv6.
static ETH_QINQ_IPV6: [u8; 22] = [
    0x00, 0x11, 0x22, 0x33, 0x44, 0x55, //
    0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, //
    0x88, 0xa8, 0x00, 0x64, // S-tag, VLAN 100
    0x81, 0x00, 0x00, 0xc8, // C-tag, VLAN 200
    0x86, 0xdd, // IPv6
];

/// IPv4 header, 192.168.0.1 → 192.168.0.2, TCP, total length 60.
static IPV4_SYN: [u8; 20] = [
    0x45, 0x00, 0x00, 0x3c, // version 4, IHL 5, total length 60
    0x1c, 0x46, 0x40, 0x00, // id, DF
    0x40, 0x06, 0x00, 0x00, // TTL 64, TCP, checksum (unchecked)
    0xc0, 0xa8, 0x00, 0x01, //
    0xc0, 0xa8, 0x00, 0x02, //
];

/// TCP SYN 50000 → 443, seq 0x01020304, data offset 10, window 64240, with
/// MSS 1460, SACK permitted, timestamps (1, 0), NOP, window scale 7.
static TCP_SYN: [u8; 40] = [
    0xc3, 0x50, 0x01, 0xbb, // ports
    0x01, 0x02, 0x03, 0x04, // seq
    0x00, 0x00, 0x00, 0x00, // ack
    0xa0, 0x02, 0xfa, 0xf0, // data offset 10, SYN, window
    0x00, 0x00, 0x00, 0x00, // checksum, urgent pointer
    0x02, 0x04, 0x05, 0xb4, // MSS 1460
    0x04, 0x02, // SACK permitted
    0x08, 0x0a, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, // TS 1, 0
    0x01, // NOP
    0x03, 0x03, 0x07, // window scale 7
];

/// IPv6 2001:db8::1 → 2001:db8::2, payload length 39, hop-by-hop then
/// destination options then TCP.
static IPV6_EXT_CHAIN: [u8; 56] = [
    0x60, 0x00, 0x00, 0x00, // version 6
    0x00, 0x27, 0x00, 0x40, // payload length 39, next header hop-by-hop, hop limit 64
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, //
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, //
    0x3c, 0x00, 0x01, 0x04, 0x00, 0x00, 0x00, 0x00, // hop-by-hop: next dest opts, PadN
    0x06, 0x00, 0x01, 0x04, 0x00, 0x00, 0x00, 0x00, // dest opts: next TCP, PadN
];

/// TCP PSH|ACK 443 → 50000, seq 1000, ack 2000, no options, window 512.
static TCP_PSH_ACK: [u8; 20] = [
    0x01, 0xbb, 0xc3, 0x50, //
    0x00, 0x00, 0x03, 0xe8, // seq 1000
    0x00, 0x00, 0x07, 0xd0, // ack 2000
    0x50, 0x18, 0x02, 0x00, // data offset 5, PSH|ACK, window 512
    0x00, 0x00, 0x00, 0x00, //
];

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn tcp(decoded: Result<Decoded<'_>, DecodeError>) -> TcpSegment<'_> {
    match decoded {
        Ok(Decoded::Tcp(seg)) => seg,
        other => panic!("expected a TCP segment, got {other:?}"),
    }
}

fn v4(a: [u8; 4]) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(a))
}

fn db8(last: u16) -> IpAddr {
    IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, last))
}

fn eth_syn() -> Vec<u8> {
    cat(&[&ETH_IPV4, &IPV4_SYN, &TCP_SYN])
}

fn ipv6_ext_frame() -> Vec<u8> {
    cat(&[&IPV6_EXT_CHAIN, &TCP_PSH_ACK, b"abc"])
}

#[test]
fn test_deconstruct_ethernet_ipv4_syn() {
    let frame = eth_syn();
    let seg = tcp(decode(LinkType::ETHERNET, &frame, frame.len() as u32));
    assert_eq!(seg.src, v4([192, 168, 0, 1]));
    assert_eq!(seg.dst, v4([192, 168, 0, 2]));
    assert_eq!((seg.src_port, seg.dst_port), (50000, 443));
    assert_eq!(seg.seq, SeqNumber(0x0102_0304));
    assert_eq!(seg.ack, SeqNumber(0));
    assert_eq!(seg.flags, TcpFlags::SYN);
    assert_eq!(seg.window, 64240);
    assert_eq!(seg.options.mss, Some(1460));
    assert!(seg.options.sack_permitted);
    assert_eq!(seg.options.timestamps, Some((1, 0)));
    assert_eq!(seg.options.window_scale, Some(7));
    assert!(!seg.options.malformed);
    assert_eq!(seg.payload_len, 0);
    assert!(seg.payload.is_empty());
    assert_eq!(seg.seq_len(), 1);
}

#[test]
fn test_deconstruct_qinq_ipv6_extension_chain() {
    let frame = cat(&[&ETH_QINQ_IPV6, &ipv6_ext_frame()]);
    let seg = tcp(decode(LinkType::ETHERNET, &frame, frame.len() as u32));
    assert_eq!((seg.src, seg.dst), (db8(1), db8(2)));
    assert_eq!((seg.src_port, seg.dst_port), (443, 50000));
    assert_eq!((seg.seq, seg.ack), (SeqNumber(1000), SeqNumber(2000)));
    assert_eq!(seg.flags, TcpFlags::PSH | TcpFlags::ACK);
    assert_eq!(seg.window, 512);
    assert_eq!(seg.payload, b"abc");
    assert_eq!(seg.payload_len, 3);
    assert_eq!(seg.options, TcpOptions::default());
}

/// Linux cooked v2: protocol IPv4, interface 2, ARPHRD_ETHER, outgoing.
static SLL2_IPV4: [u8; 20] = [
    0x08, 0x00, 0x00, 0x00, // protocol, reserved
    0x00, 0x00, 0x00, 0x02, // interface index
    0x00, 0x01, 0x04, 0x06, // ARPHRD_ETHER, outgoing, address length 6
    0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x00, 0x00, // address
];

/// Linux cooked v1 on loopback (ARPHRD_LOOPBACK 772), protocol IPv6.
static SLL_LOOPBACK_IPV6: [u8; 16] = [
    0x00, 0x00, 0x03, 0x04, // to us, ARPHRD_LOOPBACK
    0x00, 0x06, 0, 0, 0, 0, 0, 0, 0, 0, // address length 6, address
    0x86, 0xdd, // IPv6
];

/// Linux cooked v1 on a tun device (ARPHRD_NONE 65534), protocol IPv4.
static SLL_TUN_IPV4: [u8; 16] = [
    0x00, 0x04, 0xff, 0xfe, // sent by us, ARPHRD_NONE
    0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, //
    0x08, 0x00, //
];

#[test]
fn test_deconstruct_sll2() {
    let frame = cat(&[&SLL2_IPV4, &IPV4_SYN, &TCP_SYN]);
    let view = link::Sll2Header::new_checked(&frame).unwrap();
    assert_eq!(view.protocol(), 0x0800);
    assert_eq!(view.interface_index(), 2);
    assert_eq!(view.arphrd_type(), 1);
    assert_eq!(view.packet_type(), 4);
    assert_eq!(view.addr_len(), 6);
    let seg = tcp(decode(LinkType::LINUX_SLL2, &frame, frame.len() as u32));
    assert_eq!(seg.src, v4([192, 168, 0, 1]));
    assert_eq!(seg.options.mss, Some(1460));
}

#[test]
fn test_deconstruct_sll_loopback_and_tun() {
    let frame = cat(&[&SLL_LOOPBACK_IPV6, &ipv6_ext_frame()]);
    let view = link::SllHeader::new_checked(&frame).unwrap();
    assert_eq!(view.arphrd_type(), 772);
    assert_eq!(view.addr_len(), 6);
    assert_eq!(view.packet_type(), 0);
    let seg = tcp(decode(LinkType::LINUX_SLL, &frame, frame.len() as u32));
    assert_eq!(seg.payload, b"abc");

    let frame = cat(&[&SLL_TUN_IPV4, &IPV4_SYN, &TCP_SYN]);
    let seg = tcp(decode(LinkType::LINUX_SLL, &frame, frame.len() as u32));
    assert_eq!(seg.dst, v4([192, 168, 0, 2]));
}

#[test]
fn test_deconstruct_null_loopback() {
    // macOS lo0 (LINKTYPE_NULL, little-endian host): AF_INET = 2.
    let frame = cat(&[&[0x02, 0x00, 0x00, 0x00], &IPV4_SYN, &TCP_SYN]);
    let seg = tcp(decode(LinkType::NULL, &frame, frame.len() as u32));
    assert_eq!(seg.src, v4([192, 168, 0, 1]));
    // A big-endian host writing Darwin's AF_INET6 = 30.
    let frame = cat(&[&[0x00, 0x00, 0x00, 0x1e], &ipv6_ext_frame()]);
    let seg = tcp(decode(LinkType::NULL, &frame, frame.len() as u32));
    assert_eq!(seg.dst, db8(2));
    // FreeBSD's AF_INET6 = 28, little-endian.
    let frame = cat(&[&[0x1c, 0x00, 0x00, 0x00], &ipv6_ext_frame()]);
    assert!(matches!(
        decode(LinkType::NULL, &frame, 0),
        Ok(Decoded::Tcp(_))
    ));
    // LINKTYPE_LOOP is network order: AF_INET = 00 00 00 02.
    let frame = cat(&[&[0x00, 0x00, 0x00, 0x02], &IPV4_SYN, &TCP_SYN]);
    assert!(matches!(
        decode(LinkType::LOOP, &frame, 0),
        Ok(Decoded::Tcp(_))
    ));
    // An address family that is not IP.
    let frame = cat(&[&[0x07, 0x00, 0x00, 0x00], &IPV4_SYN, &TCP_SYN]);
    assert_eq!(decode(LinkType::NULL, &frame, 0), Ok(Decoded::Other));
}

#[test]
fn test_deconstruct_raw_ip() {
    let v4_packet = cat(&[&IPV4_SYN, &TCP_SYN]);
    let v6_packet = ipv6_ext_frame();
    for link in [LinkType::RAW, LinkType::IPV4, LinkType::IPV6] {
        assert!(matches!(
            decode(link, &v4_packet, 60),
            Ok(Decoded::Tcp(TcpSegment {
                src: IpAddr::V4(_),
                ..
            }))
        ));
        assert!(matches!(
            decode(link, &v6_packet, 79),
            Ok(Decoded::Tcp(TcpSegment {
                src: IpAddr::V6(_),
                ..
            }))
        ));
    }
}

#[test]
fn test_ethernet_padding_is_not_payload() {
    // A 40-octet IPv4 ACK padded to the 60-octet Ethernet minimum.
    let mut ip = IPV4_SYN;
    ip[3] = 40;
    let frame = cat(&[&ETH_IPV4, &ip, &TCP_PSH_ACK, &[0xee; 6]]);
    assert_eq!(frame.len(), 60);
    let seg = tcp(decode(LinkType::ETHERNET, &frame, 60));
    assert_eq!(seg.payload_len, 0);
    assert!(seg.payload.is_empty());
}

#[test]
fn test_snaplen_cut_keeps_ip_length() {
    // The IP header says 100 payload octets; only 10 were captured.
    let mut ip = IPV4_SYN;
    ip[2..4].copy_from_slice(&140u16.to_be_bytes());
    let frame = cat(&[&ETH_IPV4, &ip, &TCP_PSH_ACK, &[0x42; 10]]);
    let seg = tcp(decode(LinkType::ETHERNET, &frame, 154));
    assert_eq!(seg.payload_len, 100);
    assert_eq!(seg.payload, &[0x42; 10]);
    assert!(seg.is_cut());
}

#[test]
fn test_ipv4_options_and_tso_length() {
    // IHL 6: four octets of options (NOP, NOP, NOP, EOL).
    let mut ip = [0u8; 24];
    ip[..20].copy_from_slice(&IPV4_SYN);
    ip[0] = 0x46;
    ip[2..4].copy_from_slice(&(24u16 + 20 + 5).to_be_bytes());
    ip[20..].copy_from_slice(&[1, 1, 1, 0]);
    let frame = cat(&[&ETH_IPV4, &ip, &TCP_PSH_ACK, b"hello"]);
    let seg = tcp(decode(LinkType::ETHERNET, &frame, frame.len() as u32));
    assert_eq!(seg.payload, b"hello");
    assert_eq!(seg.payload_len, 5);

    // Total length 0 (a GSO packet captured before segmentation): the
    // frame's length on the wire gives the datagram's.
    let mut ip = IPV4_SYN;
    ip[2..4].copy_from_slice(&[0, 0]);
    let frame = cat(&[&ETH_IPV4, &ip, &TCP_PSH_ACK, &[7; 100]]);
    let seg = tcp(decode(LinkType::ETHERNET, &frame, 14 + 20 + 20 + 70_000));
    assert_eq!(seg.payload_len, 70_000);
    assert_eq!(seg.payload.len(), 100);
}

#[test]
fn test_fragments() {
    // Non-first IPv4 fragment (offset 185 × 8) of a TCP datagram.
    let mut ip = IPV4_SYN;
    ip[6..8].copy_from_slice(&[0x00, 0xb9]);
    let frame = cat(&[&ETH_IPV4, &ip, &[0u8; 40]]);
    assert_eq!(
        decode(LinkType::ETHERNET, &frame, 74),
        Ok(Decoded::TcpFragment)
    );
    // ... of a UDP datagram: just Other.
    ip[9] = 17;
    let frame = cat(&[&ETH_IPV4, &ip, &[0u8; 40]]);
    assert_eq!(decode(LinkType::ETHERNET, &frame, 74), Ok(Decoded::Other));

    // IPv6 fragment header with offset 1 (× 8), next header TCP.
    let mut ip6 = [0u8; 40];
    ip6[..40].copy_from_slice(&IPV6_EXT_CHAIN[..40]);
    ip6[4..6].copy_from_slice(&16u16.to_be_bytes());
    ip6[6] = 44; // fragment
    let frag = [0x06, 0x00, 0x00, 0x08, 0x12, 0x34, 0x56, 0x78];
    let packet = cat(&[&ip6, &frag, &[0u8; 8]]);
    assert_eq!(decode(LinkType::RAW, &packet, 56), Ok(Decoded::TcpFragment));
    // A first fragment (offset 0, more fragments) still has the TCP header.
    let frag = [0x06, 0x00, 0x00, 0x01, 0x12, 0x34, 0x56, 0x78];
    ip6[4..6].copy_from_slice(&28u16.to_be_bytes());
    let packet = cat(&[&ip6, &frag, &TCP_PSH_ACK]);
    assert!(matches!(
        decode(LinkType::RAW, &packet, 68),
        Ok(Decoded::Tcp(_))
    ));
}

#[test]
fn test_not_tcp() {
    // ARP
    let mut frame = eth_syn();
    frame[12..14].copy_from_slice(&[0x08, 0x06]);
    assert_eq!(decode(LinkType::ETHERNET, &frame, 94), Ok(Decoded::Other));
    // UDP
    let mut frame = eth_syn();
    frame[14 + 9] = 17;
    assert_eq!(decode(LinkType::ETHERNET, &frame, 94), Ok(Decoded::Other));
    // IPv6 "no next header"
    let mut packet = ipv6_ext_frame();
    packet[48] = 59;
    assert_eq!(decode(LinkType::RAW, &packet, 79), Ok(Decoded::Other));
    // A link type rttlens does not decode.
    assert_eq!(
        decode(LinkType::IEEE802_11_RADIOTAP, &packet, 79),
        Err(DecodeError::UnknownLinkType(LinkType::IEEE802_11_RADIOTAP))
    );
}

#[test]
fn test_truncated() {
    // Every prefix of each frame decodes to a segment or a typed error,
    // never a panic; the error names the header the cut fell into. A TCP
    // header cut inside its options (snaplen) is a segment with the fixed
    // fields and the options that fit.
    let frame = eth_syn();
    let whole = match decode(LinkType::ETHERNET, &frame, frame.len() as u32) {
        Ok(Decoded::Tcp(seg)) => seg,
        other => panic!("the whole SYN: {other:?}"),
    };
    for len in 0..frame.len() {
        let got = decode(LinkType::ETHERNET, &frame[..len], frame.len() as u32);
        let layer = match len {
            0..=13 => "Ethernet",
            14..=33 => "IPv4",
            34..=53 => "TCP",
            _ => {
                let Ok(Decoded::Tcp(seg)) = got else {
                    panic!("cut at {len} inside the options: {got:?}")
                };
                assert_eq!(
                    (seg.seq, seg.flags, seg.window, seg.payload_len),
                    (whole.seq, whole.flags, whole.window, whole.payload_len),
                    "cut at {len}: the fixed fields"
                );
                assert!(seg.payload.is_empty());
                // an option is there once its bytes are
                if len >= 54 + 4 {
                    assert_eq!(seg.options.mss, whole.options.mss, "cut at {len}");
                }
                continue;
            }
        };
        assert_eq!(got, Err(DecodeError::Truncated { layer }), "cut at {len}");
    }

    let frame = cat(&[&ETH_QINQ_IPV6, &ipv6_ext_frame()]);
    for len in 0..frame.len() {
        let expected = match len {
            0..=13 => Some("Ethernet"),
            14..=21 => Some("VLAN"),
            22..=61 => Some("IPv6"),
            62..=77 => Some("IPv6 extension"),
            78..=97 => Some("TCP"),
            _ => None, // payload cut: still a segment
        };
        match (decode(LinkType::ETHERNET, &frame[..len], 101), expected) {
            (Err(e), Some(layer)) => assert_eq!(e, DecodeError::Truncated { layer }),
            (Ok(Decoded::Tcp(seg)), None) => {
                assert_eq!(seg.payload_len, 3);
                assert_eq!(seg.payload.len(), len - 98);
            }
            (other, _) => panic!("cut at {len}: {other:?}"),
        }
    }

    for (link, frame, header) in [
        (LinkType::LINUX_SLL2, &SLL2_IPV4[..], "Linux SLL2"),
        (LinkType::LINUX_SLL, &SLL_TUN_IPV4[..], "Linux SLL"),
        (LinkType::NULL, &[2, 0, 0, 0][..], "BSD null"),
        (LinkType::LOOP, &[0, 0, 0, 2][..], "BSD null"),
    ] {
        for len in 0..frame.len() {
            assert_eq!(
                decode(link, &frame[..len], 100),
                Err(DecodeError::Truncated { layer: header })
            );
        }
        // The link header alone: the IP header is cut.
        assert!(matches!(
            decode(link, frame, 100),
            Err(DecodeError::Truncated {
                layer: "IPv4" | "IPv6"
            })
        ));
    }
    assert_eq!(
        decode(LinkType::RAW, &[], 0),
        Err(DecodeError::Truncated { layer: "raw IP" })
    );
}

fn malformed(layer: &'static str, what: &'static str) -> Result<Decoded<'static>, DecodeError> {
    Err(DecodeError::Malformed { layer, what })
}

#[test]
fn test_impossible_len() {
    // IHL 4
    let mut packet = cat(&[&IPV4_SYN, &TCP_SYN]);
    packet[0] = 0x44;
    assert_eq!(
        decode(LinkType::RAW, &packet, 60),
        malformed("IPv4", "the header length (IHL) is below 5")
    );
    // Total length 19 < IHL × 4
    let mut packet = cat(&[&IPV4_SYN, &TCP_SYN]);
    packet[2..4].copy_from_slice(&19u16.to_be_bytes());
    assert_eq!(
        decode(LinkType::RAW, &packet, 60),
        malformed("IPv4", "the total length is shorter than the header")
    );
    // Total length leaves room for 20 TCP octets, data offset says 40.
    let mut packet = cat(&[&IPV4_SYN, &TCP_SYN]);
    packet[2..4].copy_from_slice(&40u16.to_be_bytes());
    assert_eq!(
        decode(LinkType::RAW, &packet, 60),
        malformed("TCP", "the header runs past the IP length")
    );
    // TCP data offset 4
    let mut packet = cat(&[&IPV4_SYN, &TCP_SYN]);
    packet[20 + 12] = 0x40;
    assert_eq!(
        decode(LinkType::RAW, &packet, 60),
        malformed("TCP", "the data offset is below 5")
    );
    // SYN and FIN
    let mut packet = cat(&[&IPV4_SYN, &TCP_SYN]);
    packet[20 + 13] = 0x03;
    assert_eq!(
        decode(LinkType::RAW, &packet, 60),
        malformed("TCP", "SYN and FIN are both set")
    );
    // Ethernet says IPv4, the header says version 6.
    let mut frame = eth_syn();
    frame[14] = 0x65;
    assert_eq!(
        decode(LinkType::ETHERNET, &frame, 94),
        malformed("IPv4", "the version is not 4")
    );
    // Ethernet says IPv6, the header says version 4.
    let frame = cat(&[&ETH_QINQ_IPV6, &IPV4_SYN, &TCP_SYN]);
    assert_eq!(
        decode(LinkType::ETHERNET, &frame, 100),
        malformed("IPv6", "the version is not 6")
    );
    // Raw IP, version 5.
    assert_eq!(
        decode(LinkType::RAW, &[0x50; 40], 40),
        malformed("raw IP", "the version is neither 4 nor 6")
    );
    // IPv6 payload length 12: the destination options header runs past it.
    let mut packet = ipv6_ext_frame();
    packet[4..6].copy_from_slice(&12u16.to_be_bytes());
    assert_eq!(
        decode(LinkType::RAW, &packet, 79),
        malformed(
            "IPv6 extension",
            "the extension headers run past the payload length"
        )
    );
    // Hop-by-hop after destination options.
    let mut packet = ipv6_ext_frame();
    packet[6] = 60;
    packet[40] = 0;
    assert_eq!(
        decode(LinkType::RAW, &packet, 79),
        malformed(
            "IPv6 extension",
            "a hop-by-hop header does not directly follow the IPv6 header"
        )
    );
    // IPv6 payload length 30: TCP gets 14 octets after 16 of extensions.
    let mut packet = ipv6_ext_frame();
    packet[4..6].copy_from_slice(&30u16.to_be_bytes());
    assert_eq!(
        decode(LinkType::RAW, &packet, 79),
        malformed("TCP", "the header runs past the IP length")
    );
}

/// TCP SYN carrying a Fast Open cookie (kind 34, 8 octets) and 4 octets of
/// data, data offset 9.
static TCP_TFO_SYN: [u8; 36] = [
    0xc3, 0x50, 0x00, 0x50, // 50000 → 80
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, // seq 1, ack 0
    0x90, 0x02, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, // data offset 9, SYN
    0x02, 0x04, 0x05, 0xb4, // MSS 1460
    0x22, 0x0a, 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04, // TFO cookie
    0x01, 0x01, // NOP NOP
];

#[test]
fn test_deconstruct_tfo_syn_with_data() {
    let mut ip = IPV4_SYN;
    ip[2..4].copy_from_slice(&60u16.to_be_bytes());
    let frame = cat(&[&ETH_IPV4, &ip, &TCP_TFO_SYN, b"GET "]);
    let seg = tcp(decode(LinkType::ETHERNET, &frame, frame.len() as u32));
    assert_eq!(
        seg.options.fast_open,
        Some(FastOpen::Cookie {
            len: 8,
            experimental: false
        })
    );
    assert_eq!(seg.payload, b"GET ");
    assert_eq!(seg.seq_len(), 5);

    // The same cookie in the experimental encoding, with a cookie request
    // instead: kind 254, length 4, ExID 0xF989, then padding.
    let mut tcp_hdr = TCP_TFO_SYN;
    tcp_hdr[24..36].copy_from_slice(&[0xfe, 0x04, 0xf9, 0x89, 1, 1, 1, 1, 1, 1, 1, 0]);
    let frame = cat(&[&ETH_IPV4, &ip, &tcp_hdr, b"GET "]);
    let seg = tcp(decode(LinkType::ETHERNET, &frame, frame.len() as u32));
    assert_eq!(
        seg.options.fast_open,
        Some(FastOpen::CookieRequest { experimental: true })
    );
    assert_eq!(seg.options.mss, Some(1460));
}

#[test]
fn test_garbage_option_length_keeps_segment() {
    // A bad option length does not lose the segment: its fixed fields and
    // payload are still there, with `malformed` set.
    let mut tcp_hdr = TCP_SYN;
    tcp_hdr[25] = 0x00; // SACK-permitted length 0
    let frame = cat(&[&ETH_IPV4, &IPV4_SYN, &tcp_hdr]);
    let seg = tcp(decode(LinkType::ETHERNET, &frame, frame.len() as u32));
    assert!(seg.options.malformed);
    assert_eq!(seg.options.mss, Some(1460));
    assert_eq!(seg.options.timestamps, None);
    assert_eq!(seg.seq, SeqNumber(0x0102_0304));
}
