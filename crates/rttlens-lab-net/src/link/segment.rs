//! Just enough of a raw IPv4/IPv6 packet for the link's loss and reorder
//! knobs ([`segment_facts`]): is it a TCP segment, with SYN set, carrying
//! payload? (Not the kernel's `TCP_INFO`: the link reads packets, not
//! sockets.)

/// What the loss and reorder knobs need to know of a packet.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SegmentFacts {
    /// A TCP segment with SYN set.
    pub(crate) syn: bool,
    /// A TCP segment that carries payload.
    pub(crate) payload: bool,
}

/// Parse just enough of an IPv4/IPv6 + TCP packet. `None` when not TCP (or
/// IPv6 with extension headers, which the lab does not produce).
pub(crate) fn segment_facts(p: &[u8]) -> Option<SegmentFacts> {
    let (tcp, ip_payload_len) = match p.first()? >> 4 {
        4 => {
            let ihl = usize::from(p.first()? & 0x0f) * 4;
            if *p.get(9)? != 6 || ihl < 20 {
                return None;
            }
            let total = usize::from(u16::from_be_bytes([*p.get(2)?, *p.get(3)?]));
            (p.get(ihl..)?, total.checked_sub(ihl)?)
        }
        6 => {
            if *p.get(6)? != 6 {
                return None;
            }
            let plen = usize::from(u16::from_be_bytes([*p.get(4)?, *p.get(5)?]));
            (p.get(40..)?, plen)
        }
        _ => return None,
    };
    let doff = usize::from(tcp.get(12)? >> 4) * 4;
    let flags = *tcp.get(13)?;
    Some(SegmentFacts {
        syn: flags & 0x02 != 0,
        payload: ip_payload_len > doff,
    })
}

/// Whether the packet is an IPv4/IPv6 UDP datagram (IPv6 without
/// extension headers, as [`segment_facts`]).
pub(crate) fn is_udp(p: &[u8]) -> bool {
    match p.first().map(|b| b >> 4) {
        Some(4) => p.get(9) == Some(&17),
        Some(6) => p.get(6) == Some(&17),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_facts_syn_and_payload() {
        // IPv4 + TCP SYN, no payload
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[3] = 40;
        p[9] = 6;
        p[32] = 0x50;
        p[33] = 0x02;
        let i = segment_facts(&p).unwrap();
        assert!(i.syn && !i.payload);
        p.extend_from_slice(b"hi");
        p[3] = 42;
        p[33] = 0x18;
        let i = segment_facts(&p).unwrap();
        assert!(!i.syn && i.payload);
        p[9] = 17;
        assert!(segment_facts(&p).is_none());
        assert!(is_udp(&p));
        p[9] = 6;
        assert!(!is_udp(&p));
    }
}
