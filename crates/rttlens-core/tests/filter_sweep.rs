//! A filter that drops most segments must not hold back the connections it
//! keeps: the sweeps that hand on connections that are over run on every
//! TCP segment's time, tracked or filtered out (issue 27), so the filtered
//! run sees the kept connections as the unfiltered run does.
//!
//! The capture is made of two real ones (`itts/thu.cap`, `itts/pku.cap`,
//! two servers): the first connection again every 10 s, on the same
//! 4-tuple with the same ISN, and between them two copies of the second
//! (more segments than a sweep waits for). A copy of the first connection
//! is its own connection only when a sweep handed on the one before.

use std::io::Cursor;
use std::path::PathBuf;

use rttlens_core::capture::CaptureReader;
use rttlens_core::filter::Filter;
use rttlens_core::model::ConnReport;
use rttlens_core::pipeline::{self, Options};

fn real(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/captures/itts")
        .join(name);
    std::fs::read(&p)
        .unwrap_or_else(|e| panic!("{}: {e} (the tests need ../shared/captures)", p.display()))
}

/// The records of a little-endian microsecond pcap, each with its time in µs.
fn records(pcap: &[u8]) -> Vec<(u64, Vec<u8>)> {
    assert_eq!(
        pcap[..4],
        [0xd4, 0xc3, 0xb2, 0xa1],
        "a little-endian µs pcap"
    );
    let u32_at = |i: usize| {
        u64::from(u32::from_le_bytes([
            pcap[i],
            pcap[i + 1],
            pcap[i + 2],
            pcap[i + 3],
        ]))
    };
    let mut out = Vec::new();
    let mut i = 24;
    while i + 16 <= pcap.len() {
        let t = u32_at(i) * 1_000_000 + u32_at(i + 4);
        let end = i + 16 + usize::try_from(u32_at(i + 8)).expect("caplen");
        out.push((t, pcap[i + 16..end].to_vec()));
        i = end;
    }
    out
}

/// `copies` of `first` every 10 s with two copies of `second` 2 s and 4 s
/// after each, as one capture in time order.
fn interleaved(first: &[u8], second: &[u8], copies: u64) -> Vec<u8> {
    let (a, b) = (records(first), records(second));
    let (a0, b0) = (a[0].0, b[0].0);
    let mut out = first[..24].to_vec();
    let mut put = |t: u64, data: &[u8]| {
        let len = u32::try_from(data.len()).expect("record length");
        for w in [t / 1_000_000, t % 1_000_000] {
            out.extend_from_slice(&u32::try_from(w).expect("time").to_le_bytes());
        }
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(data);
    };
    let base = 1_700_000_000_000_000u64;
    for i in 0..copies {
        let at = base + i * 10_000_000;
        for (t, d) in &a {
            put(at + (t - a0), d);
        }
        for k in 1..=2 {
            for (t, d) in &b {
                put(at + k * 2_000_000 + (t - b0), d);
            }
        }
    }
    out
}

fn analyse(capture: &[u8], filter: Option<&str>, threads: usize) -> Vec<ConnReport> {
    let mut reader = CaptureReader::new(Box::new(Cursor::new(capture.to_vec()))).expect("capture");
    let options = Options {
        threads,
        filter: filter.map(|f| Filter::parse(f).expect("filter")),
        ..Options::default()
    };
    let mut conns = Vec::new();
    pipeline::run_with(
        &mut reader,
        &options,
        &mut |c| conns.extend(c.into_tcp()),
        &mut |_| {},
    )
    .expect("analyse");
    conns
}

#[test]
fn a_filter_keeps_the_sweeps_of_the_whole_capture() {
    const COPIES: u64 = 5;
    let capture = interleaved(&real("thu.cap"), &real("pku.cap"), COPIES);
    let all = analyse(&capture, None, 1);
    let server = &all[0].server;
    let kept: Vec<_> = all.iter().filter(|c| &c.server == server).collect();
    let (host, _port) = server.rsplit_once(':').expect("address:port");
    let host = host.trim_start_matches('[').trim_end_matches(']');
    // the premise: unfiltered, each copy is its own connection, and each
    // copy has fewer segments than a sweep waits for
    assert_eq!(
        kept.len() as u64,
        COPIES,
        "one connection per copy, unfiltered"
    );
    assert!(kept[0].frames < rttlens_core::flow::SWEEP_MIN);
    for threads in [1, 2] {
        let filtered = analyse(&capture, Some(&format!("host {host}")), threads);
        let got: Vec<_> = filtered.iter().map(|c| (c.first_frame, c.frames)).collect();
        let want: Vec<_> = kept.iter().map(|c| (c.first_frame, c.frames)).collect();
        assert_eq!(
            got, want,
            "the filtered run's connections ({threads} threads)"
        );
    }
}
