//! A connection whose client sends the same SYN again and again (a storm
//! replayed, a client that never gives up): the table keeps such a
//! connection as its SYNs only up to a bound, then makes it whole, and the
//! report is the one a whole connection from the first SYN gives (a table
//! that keeps traces never takes the SYNs-only path).
//!
//! The SYN is the first frame of a real capture (`shared/captures/itts`),
//! sent again every 2 s; then the rest of that capture's connection follows
//! (its SYN-ACK answers the same ISN).

use std::io::Cursor;
use std::path::PathBuf;

use rttlens_core::capture::CaptureReader;
use rttlens_core::model::ConnReport;
use rttlens_core::pipeline::{self, Options};

fn capture_bytes(name: &str) -> Vec<u8> {
    let path = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/captures/itts/"
    ))
    .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The records of a classic little-endian µs pcap (as the ITTS captures
/// are): (header, records with their 16-byte headers).
fn records(pcap: &[u8]) -> (Vec<u8>, Vec<Vec<u8>>) {
    assert_eq!(
        pcap[..4],
        [0xd4, 0xc3, 0xb2, 0xa1],
        "a little-endian µs pcap"
    );
    let mut out = Vec::new();
    let mut i = 24;
    while i + 16 <= pcap.len() {
        let caplen = u32::from_le_bytes(pcap[i + 8..i + 12].try_into().unwrap()) as usize;
        out.push(pcap[i..i + 16 + caplen].to_vec());
        i += 16 + caplen;
    }
    (pcap[..24].to_vec(), out)
}

/// `record` moved `secs` seconds later.
fn later(record: &[u8], secs: u32) -> Vec<u8> {
    let mut r = record.to_vec();
    let s = u32::from_le_bytes(r[..4].try_into().unwrap()) + secs;
    r[..4].copy_from_slice(&s.to_le_bytes());
    r
}

/// The TCP connections' reports of `pcap`, with or without traces kept.
fn reports(pcap: &[u8], trace: bool) -> Vec<ConnReport> {
    let mut reader = CaptureReader::new(Box::new(Cursor::new(pcap.to_vec()))).unwrap();
    let options = Options {
        trace,
        ..Options::default()
    };
    let mut out = Vec::new();
    pipeline::run_with(
        &mut reader,
        &options,
        &mut |c| {
            if let Some(r) = c.as_tcp() {
                let mut r = r.clone();
                r.trace = None;
                out.push(r);
            }
        },
        &mut |_| {},
    )
    .unwrap();
    out
}

#[test]
fn a_syn_sent_again_hundreds_of_times_reports_as_a_whole_connection_does() {
    let (header, recs) = records(&capture_bytes("pku.cap"));
    // frame 1 is the client's SYN, frame 2 the SYN-ACK (see capture_itts.rs)
    for repeats in [40u32, 200] {
        let mut pcap = header.clone();
        for k in 0..repeats {
            pcap.extend(later(&recs[0], 2 * k));
        }
        // then the connection goes on, its frames as far after the last SYN
        for r in &recs[1..] {
            pcap.extend(later(r, 2 * (repeats - 1)));
        }
        let plain = reports(&pcap, false);
        let whole = reports(&pcap, true);
        assert_eq!(plain.len(), 1, "{repeats} SYNs: one connection");
        assert_eq!(plain[0].tcp.syn_count, repeats, "{repeats} SYNs counted");
        assert_eq!(
            format!("{:?}", plain),
            format!("{:?}", whole),
            "{repeats} SYNs: the SYNs-only path reports what a whole connection does"
        );
    }
}
