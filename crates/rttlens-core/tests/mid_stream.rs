//! Captures from the wild (issue 9): the PKU/THU captures cut so that they
//! start after the handshake (tcpdump started late), or hold one direction
//! only (asymmetric routing, a `src host` filter). The engine must say less
//! than on the full capture, never something the full capture contradicts,
//! and still say what the packets prove.

use std::path::PathBuf;

use rttlens_core::base::side::Side;
use rttlens_core::capture::CaptureReader;
use rttlens_core::model::ConnReport;
use rttlens_core::pipeline;

fn capture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/captures/itts")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: the tests need ../shared/captures beside the repository",
            p.display()
        )
    })
}

/// Classic pcap records of `file` (header, then (record header, data)).
fn records(file: &[u8]) -> (&[u8], Vec<&[u8]>) {
    assert_eq!(
        &file[..4],
        &[0xd4, 0xc3, 0xb2, 0xa1],
        "little-endian µs pcap"
    );
    let mut out = Vec::new();
    let mut i = 24;
    while i + 16 <= file.len() {
        let incl = u32::from_le_bytes(file[i + 8..i + 12].try_into().unwrap()) as usize;
        out.push(&file[i..i + 16 + incl]);
        i += 16 + incl;
    }
    (&file[..24], out)
}

/// The capture with only the records `keep` says yes to (1-based frame numbers).
fn cut(file: &[u8], keep: impl Fn(u64, &[u8]) -> bool) -> Vec<u8> {
    let (hdr, recs) = records(file);
    let mut out = hdr.to_vec();
    for (i, r) in recs.iter().enumerate() {
        if keep(i as u64 + 1, r) {
            out.extend_from_slice(r);
        }
    }
    out
}

fn analyze(bytes: Vec<u8>) -> ConnReport {
    let mut reader =
        CaptureReader::new(Box::new(std::io::Cursor::new(bytes))).expect("open capture");
    let mut conns = Vec::new();
    pipeline::run(
        &mut reader,
        &mut |c| conns.extend(c.into_tcp()),
        &mut |_| {},
    )
    .expect("analyse");
    assert_eq!(conns.len(), 1, "one connection");
    conns.remove(0)
}

fn ids(c: &ConnReport) -> Vec<&'static str> {
    c.findings.iter().map(|f| f.id).collect()
}

const ALL: [&str; 4] = ["pku.cap", "thu.cap", "pku-2.cap", "thu-2.cap"];

/// The frame where the full capture's request phase ends (the first
/// response byte): a copy from there on has lost the handshakes.
fn first_response_frame(full: &ConnReport) -> u64 {
    full.ladder
        .iter()
        .find(|p| p.name == "request")
        .map(|p| p.end_frame)
        .expect("full capture has a request phase")
}

/// The RTT of `other` is the full capture's, within 5 %.
fn same_rtt(name: &str, full: &ConnReport, other: &ConnReport) {
    let (rf, ro) = (full.rtt.as_ref().unwrap(), other.rtt.as_ref().expect("RTT"));
    assert!(
        (ro.min_ms - rf.min_ms).abs() <= 0.05 * rf.min_ms,
        "{name}: RTT {} vs {}",
        ro.min_ms,
        rf.min_ms
    );
}

/// `other` says less than `full`, never something else.
fn says_no_more(name: &str, full: &ConnReport, other: &ConnReport) {
    let full_ids = ids(full);
    for id in ids(other) {
        assert!(
            full_ids.contains(&id),
            "{name}: the partial capture says {id}, the full one does not: {:?}",
            other.findings
        );
    }
}

/// A note of `c` says `what`.
fn noted(name: &str, c: &ConnReport, what: &str) {
    assert!(
        c.notes.iter().any(|n| n.contains(what)),
        "{name}: a note says {what:?}: {:?}",
        c.notes
    );
}

/// Starting at the first response byte (the handshake and request cut off):
/// RTT from timestamps, the client's window scale inferred, no phase that
/// needs the start, and no finding the full capture does not have.
#[test]
fn after_the_handshake_says_less_never_other() {
    for name in ALL {
        let file = capture(name);
        let full = analyze(file.clone());
        let start = first_response_frame(&full);
        let mid = analyze(cut(&file, |n, _| n >= start));
        assert!(mid.coverage.mid_stream, "{name}: mid-stream");
        assert_eq!(mid.coverage.only, None, "{name}: both directions");
        // RTT from the timestamp echoes, within 5 % of the handshake's
        same_rtt(name, &full, &mid);
        assert_eq!(mid.vantage, full.vantage, "{name}: vantage");
        for p in ["connect", "tls", "request"] {
            assert!(
                mid.ladder.iter().all(|x| x.name != p),
                "{name}: no {p} phase mid-stream"
            );
        }
        // the client's window scale (6 in all four, from their SYNs) is
        // inferred from the server's flight: a lower bound, here exact
        let shift = full.tcp.window_scale[Side::Client.index()].expect("SYN option");
        let inferred = mid.tcp.window_scale_inferred[Side::Client.index()]
            .unwrap_or_else(|| panic!("{name}: client window scale inferred"));
        assert!(inferred.shift <= shift, "{name}: {inferred:?} ≤ {shift}");
        assert_eq!(inferred.shift, shift, "{name}: the flight proves it");
        says_no_more(name, &full, &mid);
        assert!(
            !ids(&mid).contains(&"initial-window"),
            "{name}: no initial window mid-stream"
        );
        noted(name, &mid, "mid-connection");
    }
}

/// PKU's cap at 65535 B in flight shows from any point of the transfer:
/// the same finding, its frames shifted by the cut.
#[test]
fn pku_sender_window_cap_mid_stream() {
    let file = capture("pku.cap");
    let full = analyze(file.clone());
    let start = first_response_frame(&full);
    let mid = analyze(cut(&file, |n, _| n >= start));
    let f = full.findings.iter().find(|f| f.id == "sender-window-cap");
    let m = mid.findings.iter().find(|f| f.id == "sender-window-cap");
    let (f, m) = (
        f.expect("full: sender-window-cap"),
        m.unwrap_or_else(|| panic!("mid-stream: sender-window-cap, got {:?}", mid.findings)),
    );
    assert_eq!(
        m.confidence.level, f.confidence.level,
        "as sure as with the SYNs"
    );
    let shifted: Vec<u64> = m.evidence.iter().map(|e| e.frame + start - 1).collect();
    let full_frames: Vec<u64> = f.evidence.iter().map(|e| e.frame).collect();
    assert!(
        shifted.iter().filter(|x| full_frames.contains(x)).count() >= 2,
        "evidence frames shifted by the cut: {shifted:?} vs {full_frames:?}"
    );
    assert!(
        !ids(&mid).contains(&"receive-window-limit"),
        "the client offered twice the flight: {:?}",
        mid.findings
    );
}

/// Only the server's packets (a `src host` filter): no RTT, no rounds
/// judged, no window finding, and the header says why.
#[test]
fn one_direction_says_what_it_cannot_see() {
    for name in ALL {
        let file = capture(name);
        let full = analyze(file.clone());
        let server_port = full
            .server
            .rsplit(':')
            .next()
            .and_then(|p| p.parse::<u16>().ok())
            .expect("server port");
        // Ethernet (link type 1, checked) + IPv6 (40 bytes): the TCP
        // source port at byte 54 of the packet
        assert_eq!(&file[20..24], &[1, 0, 0, 0], "{name}: Ethernet");
        let one = analyze(cut(&file, |_, rec| {
            let data = &rec[16..];
            data.len() >= 56 && u16::from_be_bytes([data[54], data[55]]) == server_port
        }));
        assert_eq!(one.coverage.only, Some(Side::Server), "{name}");
        assert!(one.rtt.is_none(), "{name}: no RTT from one direction");
        for id in ids(&one) {
            assert!(
                ![
                    "sender-window-cap",
                    "receive-window-limit",
                    "initial-window",
                    "slow-start",
                    "capture-drops"
                ]
                .contains(&id),
                "{name}: {id} needs the other direction"
            );
        }
        noted(name, &one, "one direction only");
    }
}

/// `tcpdump -s 96`: every record cut to 96 bytes (IPv6 SYNs lose the end
/// of their options). The TCP analysis is complete — handshake, window
/// scale, RTT, rounds — and TLS is said to be unknown, not guessed.
#[test]
fn snaplen_cut_keeps_tcp_and_guesses_no_tls() {
    const SNAPLEN: usize = 96;
    for name in ALL {
        let file = capture(name);
        let full = analyze(file.clone());
        let (hdr, recs) = records(&file);
        let mut out = hdr.to_vec();
        for r in recs {
            let data = &r[16..];
            let keep = data.len().min(SNAPLEN);
            out.extend_from_slice(&r[..8]);
            out.extend_from_slice(&(keep as u32).to_le_bytes());
            out.extend_from_slice(&r[12..16]);
            out.extend_from_slice(&data[..keep]);
        }
        let cut = analyze(out);
        assert_eq!(cut.frames, full.frames, "{name}: every segment decoded");
        assert!(cut.tls.is_none(), "{name}: no TLS guessed");
        assert!(
            cut.ladder.iter().any(|p| p.name == "connect"),
            "{name}: the handshake is still timed"
        );
        assert!(
            cut.ladder
                .iter()
                .all(|p| p.name != "request" && p.name != "tls"),
            "{name}: no request or TLS phase from cut payloads: {:?}",
            cut.ladder.iter().map(|p| p.name).collect::<Vec<_>>()
        );
        assert_eq!(
            cut.tcp.mss_option, full.tcp.mss_option,
            "{name}: SYN options read from the cut header"
        );
        same_rtt(name, &full, &cut);
        noted(name, &cut, "snapshot length");
        says_no_more(name, &full, &cut);
    }
}
