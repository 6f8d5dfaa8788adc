//! The tests' own pcap reader and writer (classic pcap; Ethernet or raw
//! IP, as tcpdump writes on a veth or a TUN device; IPv4; TCP): an oracle
//! that shares no code with the engine, so a test can check the engine's
//! findings against a second reading of the same packets. Used by the lab
//! tests in `crates/rttlens-lab/tests/` (`#[path]`).

#![allow(dead_code)] // each test binary uses its own part

use std::fs;
use std::path::Path;

/// A classic pcap file: its global header and its records.
pub struct Pcap {
    header: Vec<u8>,
    records: Vec<Vec<u8>>,
    little: bool,
    nanos: bool,
    /// The link type (`network` field): 1 Ethernet, 101 raw IP (tcpdump on
    /// a TUN device).
    link: u32,
}

/// Read a classic pcap file (tcpdump `-w`).
pub fn read_pcap(path: &Path) -> Pcap {
    let data = fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert!(data.len() >= 24, "{}: not a pcap file", path.display());
    let magic = [data[0], data[1], data[2], data[3]];
    let (little, nanos) = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] => (true, false),
        [0x4d, 0x3c, 0xb2, 0xa1] => (true, true),
        [0xa1, 0xb2, 0xc3, 0xd4] => (false, false),
        [0xa1, 0xb2, 0x3c, 0x4d] => (false, true),
        _ => panic!("{}: not a classic pcap file", path.display()),
    };
    let u32_at = |b: &[u8], i: usize| {
        let w = [b[i], b[i + 1], b[i + 2], b[i + 3]];
        if little {
            u32::from_le_bytes(w)
        } else {
            u32::from_be_bytes(w)
        }
    };
    let mut records = Vec::new();
    let mut i = 24;
    while i + 16 <= data.len() {
        let caplen = u32_at(&data, i + 8) as usize;
        let end = i + 16 + caplen;
        assert!(end <= data.len(), "{}: truncated record", path.display());
        records.push(data[i..end].to_vec());
        i = end;
    }
    Pcap {
        header: data[..24].to_vec(),
        link: u32_at(&data, 20),
        records,
        little,
        nanos,
    }
}

impl Pcap {
    /// The records as packets, numbered from 1 like Wireshark frames.
    pub fn packets(&self) -> Vec<Packet> {
        self.records
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let u = |j: usize| {
                    let w = [r[j], r[j + 1], r[j + 2], r[j + 3]];
                    if self.little {
                        u32::from_le_bytes(w)
                    } else {
                        u32::from_be_bytes(w)
                    }
                };
                let frac = u(4) as f64 / if self.nanos { 1e9 } else { 1e6 };
                Packet {
                    frame: i as u64 + 1,
                    ts: u(0) as f64 + frac,
                    tcp: ip_of(self.link, &r[16..]).and_then(parse_tcp),
                }
            })
            .collect()
    }

    /// Write the capture without the record of `frame` (1-based).
    pub fn write_without(&self, frame: u64, path: &Path) {
        let mut out = self.header.clone();
        for (i, r) in self.records.iter().enumerate() {
            if i as u64 + 1 != frame {
                out.extend_from_slice(r);
            }
        }
        fs::write(path, out).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
}

/// One captured frame.
#[derive(Debug, Clone)]
pub struct Packet {
    /// Frame number (1-based).
    pub frame: u64,
    /// Capture time (Unix seconds).
    pub ts: f64,
    /// The TCP segment, when the frame is IPv4/TCP (over Ethernet or raw).
    pub tcp: Option<Tcp>,
}

/// The TCP fields the tests look at.
#[derive(Debug, Clone)]
pub struct Tcp {
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgement number.
    pub ack: u32,
    /// Flags byte (FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10).
    pub flags: u8,
    /// Raw window field.
    pub window: u16,
    /// Payload as captured.
    pub payload: Vec<u8>,
}

impl Tcp {
    /// A SYN without ACK.
    pub fn is_syn(&self) -> bool {
        self.flags & 0x12 == 0x02
    }
}

/// The IP packet in a frame of link type `link`: Ethernet (1) with
/// EtherType IPv4, or raw IP (101, and the DLT_RAW values 12 and 14).
fn ip_of(link: u32, f: &[u8]) -> Option<&[u8]> {
    match link {
        1 if f.len() >= 14 && f[12..14] == [0x08, 0x00] => Some(&f[14..]),
        12 | 14 | 101 => Some(f),
        _ => None,
    }
}

/// The TCP segment of an IPv4 packet.
fn parse_tcp(ip: &[u8]) -> Option<Tcp> {
    if ip.len() < 20 {
        return None;
    }
    let ihl = (ip[0] & 0x0f) as usize * 4;
    let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
    if ip[0] >> 4 != 4 || ip[9] != 6 || ip.len() < ihl + 20 || total < ihl + 20 {
        return None;
    }
    let t = &ip[ihl..];
    let doff = (t[12] >> 4) as usize * 4;
    let end = total.min(ip.len());
    let payload = ip.get(ihl + doff..end).unwrap_or_default().to_vec();
    let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    Some(Tcp {
        sport: u16::from_be_bytes([t[0], t[1]]),
        dport: u16::from_be_bytes([t[2], t[3]]),
        seq: be32(&t[4..8]),
        ack: be32(&t[8..12]),
        flags: t[13],
        window: u16::from_be_bytes([t[14], t[15]]),
        payload,
    })
}

/// `a` is after `b` in sequence space (RFC 9293 §3.4 comparison).
pub fn seq_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}
