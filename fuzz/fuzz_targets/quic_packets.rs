//! Arbitrary bytes as UDP datagrams of QUIC connections: header parsing
//! (long and short, coalesced, Version Negotiation, Retry), Initial key
//! derivation and packet decryption, CRYPTO reassembly and the hellos,
//! ACK processing, then the analysis and detectors of every connection.
//! Nothing may panic, and every recorded packet's frame is one that was
//! fed.
//!
//! Input: records `[ctl, len, data…]`. `ctl` bit 0 picks the sender
//! (client port 50000 or server port 443), bit 1 makes the datagram a copy
//! of a valid client Initial's header (RFC 9001 Appendix A.2's first
//! bytes) followed by `data`, so the fuzzer reaches the decryption path.
#![no_main]

use std::net::{IpAddr, Ipv4Addr};

use libfuzzer_sys::fuzz_target;
use rttlens_core::base::side::FrameRef;
use rttlens_core::base::time::Timestamp;
use rttlens_core::capture::keylog::KeyStore;
use rttlens_core::quic::table::QuicTable;
use rttlens_core::wire::UdpDatagram;

/// A version 1 client Initial's header up to its Length field (RFC 9001
/// §A.2: DCID 8394c8f03e515708, empty SCID and token); the Length that
/// follows is the fuzzer's bytes'.
const INITIAL_HEADER: [u8; 16] = [
    0xc3, 0, 0, 0, 1, 8, 0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08, 0, 0,
];

fuzz_target!(|data: &[u8]| {
    let client = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    let server = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
    let mut table = QuicTable::new(KeyStore::new());
    let mut done = Vec::new();
    let mut rest = data;
    let mut frame = 0u64;
    let mut buf = Vec::new();
    while let [ctl, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (body, next) = tail.split_at(n);
        rest = next;
        frame += 1;
        buf.clear();
        if ctl & 2 != 0 {
            buf.extend_from_slice(&INITIAL_HEADER);
            buf.extend_from_slice(&(0x4000 | body.len() as u16).to_be_bytes());
        }
        buf.extend_from_slice(body);
        let from_client = ctl & 1 == 0;
        let d = UdpDatagram {
            src: if from_client { client } else { server },
            dst: if from_client { server } else { client },
            src_port: if from_client { 50000 } else { 443 },
            dst_port: if from_client { 443 } else { 50000 },
            payload: &buf,
            payload_len: buf.len() as u32,
        };
        let at = FrameRef {
            frame,
            ts: Timestamp::from_nanos(frame as i64 * 1_000_000),
        };
        table.push(&d, at, &mut |c| done.push(c));
    }
    table.finish(&mut |c| done.push(c));
    for c in done {
        for r in &c.recovery.recs {
            assert!(r.at.frame >= 1 && r.at.frame <= frame);
        }
        let a = rttlens_core::analysis::quic::analyze(c);
        let findings = rttlens_core::detect::run_quic(&a);
        let _ = rttlens_core::model::QuicReport::new(&a, findings, Timestamp::from_nanos(0), 0);
    }
});
