//! The connections still open at the end of a capture go out in the serial
//! run's order on any number of threads, also when there are more of them
//! than a flow thread sends in one answer (the merger interleaves the
//! threads' parts by index): a storm's capture ends with thousands of
//! half-open connections. So do the connections one sweep hands on after a
//! silence longer than the idle timeout, also when there are so many that a
//! flow thread sends their state and the merger makes their reports.

use std::io::Cursor;

use rttlens_core::capture::CaptureReader;
use rttlens_core::pipeline::{self, Options};

/// A classic pcap (µs, Ethernet) of `n` connections to 10.0.0.2:443 from
/// 10.1.x.y: each a SYN, and every third answered by a SYN-ACK, none closed.
fn half_open(n: u32) -> Vec<u8> {
    half_open_then(n, 0, 0)
}

/// [`half_open`] of `n`, then `gap_s` seconds of silence, then `after` more
/// connections of the same kind.
fn half_open_then(n: u32, gap_s: u64, after: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for w in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        // magic, version 2.4 (two u16), thiszone, sigfigs, snaplen, Ethernet
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.truncate(24);
    let mut t_us = 1_700_000_000_000_000u64;
    let frame = |from_client: bool, i: u32, flags: u8, t: u64| {
        let client = [10, 1, (i >> 8) as u8, i as u8];
        let server = [10, 0, 0, 2];
        let (src, dst) = if from_client {
            (client, server)
        } else {
            (server, client)
        };
        let (sport, dport) = if from_client {
            (40000u16, 443u16)
        } else {
            (443, 40000)
        };
        let mut p = vec![0u8; 12];
        p.extend_from_slice(&[0x08, 0x00]);
        // IPv4, 20 + 20 bytes
        p.extend_from_slice(&[0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0]);
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(&sport.to_be_bytes());
        p.extend_from_slice(&dport.to_be_bytes());
        let seq = if from_client { 1000 + i } else { 9000 + i };
        p.extend_from_slice(&seq.to_be_bytes());
        let ack = if from_client { 0 } else { 1001 + i };
        p.extend_from_slice(&ack.to_be_bytes());
        p.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
        let len = u32::try_from(p.len()).expect("frame length");
        let rec = [
            u32::try_from(t / 1_000_000).expect("seconds"),
            u32::try_from(t % 1_000_000).expect("µs"),
            len,
            len,
        ];
        let mut r: Vec<u8> = rec.iter().flat_map(|w| w.to_le_bytes()).collect();
        r.extend_from_slice(&p);
        r
    };
    for i in 0..n + after {
        if i == n {
            t_us += gap_s * 1_000_000;
        }
        t_us += 100;
        out.extend(frame(true, i, 0x02, t_us));
        if i % 3 == 0 {
            out.extend(frame(false, i, 0x12, t_us + 50));
        }
    }
    out
}

fn reports(capture: &[u8], threads: usize) -> Vec<String> {
    let mut reader = CaptureReader::new(Box::new(Cursor::new(capture.to_vec()))).expect("capture");
    let options = Options {
        threads,
        ..Options::default()
    };
    let mut out = Vec::new();
    pipeline::run_with(
        &mut reader,
        &options,
        &mut |c| out.push(format!("{c:?}")),
        &mut |_| {},
    )
    .expect("analyse");
    out
}

/// `capture`'s `n` reports on each of `threads` threads are the serial
/// run's, in its order.
fn same_as_serial(capture: &[u8], n: usize, threads: &[usize]) {
    let serial = reports(capture, 1);
    assert_eq!(serial.len(), n);
    for &threads in threads {
        let got = reports(capture, threads);
        assert_eq!(got.len(), serial.len(), "{threads} threads");
        let first = got.iter().zip(&serial).position(|(a, b)| a != b);
        assert_eq!(
            first, None,
            "{threads} threads: the first report that differs"
        );
    }
}

#[test]
fn connections_left_open_go_out_in_serial_order_on_any_threads() {
    same_as_serial(&half_open(3000), 3000, &[2, 3, 4]);
}

#[test]
fn a_sweep_after_a_long_silence_goes_out_in_serial_order_on_any_threads() {
    // 10,000 half-open connections, then a silence past the idle timeout
    // (300 s), then 2,000 more: the first sweep after the silence hands on
    // all 10,000 at once (more than a shard reports itself on 2 threads:
    // the merger makes those reports), the 2,000 are left open at the end
    same_as_serial(&half_open_then(10_000, 301, 2_000), 12_000, &[2, 3]);
}
