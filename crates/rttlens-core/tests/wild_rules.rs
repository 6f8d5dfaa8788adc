//! Rules for captures nobody here made (issue 21), each checked on a real
//! public capture from `../shared/captures/public` (sources in its
//! SOURCES.md): a cost is time someone waited, a RST's window means
//! nothing, a zero window is zero at any scale, an initial window is only
//! measured where it could have limited the sender, and the engine's
//! self-check catches what breaks those rules.

use std::path::PathBuf;

use rttlens_core::analysis::analyze;
use rttlens_core::base::side::{FrameRef, Side};
use rttlens_core::capture::CaptureReader;
use rttlens_core::detect::{self, self_check};
use rttlens_core::flow::half::FrameMark;
use rttlens_core::flow::FlowTable;
use rttlens_core::model::ConnReport;
use rttlens_core::pipeline;
use rttlens_core::proto::protocols::Protocols;
use rttlens_core::wire::{self, Decoded, TcpFlags};

fn path(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/captures/public")
        .join(name);
    assert!(
        p.is_file(),
        "{}: the tests need ../shared/captures beside the repository",
        p.display()
    );
    p
}

fn reports(name: &str) -> Vec<ConnReport> {
    let mut reader = CaptureReader::open(&path(name)).expect("readable capture");
    let mut out = Vec::new();
    pipeline::run(&mut reader, &mut |r| out.extend(r.into_tcp()), &mut |_| {}).expect("analysed");
    out.sort_by_key(|r| r.index);
    out
}

fn ids(r: &ConnReport) -> Vec<&'static str> {
    r.findings.iter().map(|f| f.id).collect()
}

/// Frame number → TCP flags of every TCP frame, decoded apart from the flow layer.
fn tcp_flags(name: &str) -> Vec<(u64, TcpFlags, u16)> {
    let mut reader = CaptureReader::open(&path(name)).expect("readable capture");
    let mut out = Vec::new();
    while let Some(f) = reader.next_frame().expect("frame") {
        if let Ok(Decoded::Tcp(seg)) = wire::decode(f.link_type, f.data, f.orig_len) {
            out.push((f.number, seg.flags, seg.window));
        }
    }
    out
}

#[test]
fn a_rst_is_never_a_zero_window() {
    // public captures whose RST segments carry a window field of 0
    // (tshark: `tcp.flags.reset==1 && tcp.window_size_value==0`)
    for name in [
        "sv_ssl-version-negated.pcap",
        "zeek_http-vnd-ms-cab-multi-conn.pcap",
        "zeek_tls12-dhe.pcap",
    ] {
        let rst_zero: Vec<u64> = tcp_flags(name)
            .into_iter()
            .filter(|&(_, f, w)| f.contains(TcpFlags::RST) && w == 0)
            .map(|(n, _, _)| n)
            .collect();
        assert!(!rst_zero.is_empty(), "{name}: has RSTs with window 0");
        let mut reader = CaptureReader::open(&path(name)).expect("readable");
        let marks = pipeline::frame_marks(&mut reader).expect("marks");
        for (frame, mark) in marks {
            assert!(
                !(rst_zero.contains(&frame)
                    && matches!(mark, FrameMark::ZeroWindow | FrameMark::DuplicateAck)),
                "{name}: frame {frame} is a RST, marked {mark:?}"
            );
        }
    }
}

#[test]
fn a_zero_window_is_found_without_the_handshake() {
    // the Windows Update download of 206_example_b: the client closed its
    // window (tshark marks 57 zero windows); cut before its handshake, the
    // capture starts with the transfer already under way
    let name = "zeek_http-206-example-b.pcap";
    let full = reports(name);
    assert!(
        ids(&full[0]).contains(&"zero-window"),
        "{:?}",
        ids(&full[0])
    );
    let bytes = std::fs::read(path(name)).expect("read");
    let cut = drop_first_records(&bytes, 3);
    let mut reader = CaptureReader::new(Box::new(std::io::Cursor::new(cut))).expect("reader");
    let mut mid = Vec::new();
    pipeline::run(&mut reader, &mut |r| mid.extend(r.into_tcp()), &mut |_| {}).expect("analysed");
    mid.sort_by_key(|r| r.index);
    let r = &mid[0];
    assert!(
        r.notes.iter().any(|n| n.contains("mid-connection")),
        "the cut copy starts mid-connection: {:?}",
        r.notes
    );
    let z = r
        .findings
        .iter()
        .find(|f| f.id == "zero-window")
        .unwrap_or_else(|| panic!("no zero-window without the handshake: {:?}", ids(r)));
    let f = full[0]
        .findings
        .iter()
        .find(|f| f.id == "zero-window")
        .expect("full");
    // the same episodes, renumbered: the cut dropped three frames
    assert_eq!(z.evidence[0].frame + 3, f.evidence[0].frame);
    assert!(z.cost.ms > 0.0 && z.cost.ms <= r.duration_ms);
}

/// A classic pcap without its first `n` records.
fn drop_first_records(file: &[u8], n: usize) -> Vec<u8> {
    assert_eq!(
        &file[..4],
        &[0xd4, 0xc3, 0xb2, 0xa1],
        "little-endian µs pcap"
    );
    let mut out = file[..24].to_vec();
    let (mut i, mut k) = (24, 0);
    while i + 16 <= file.len() {
        let incl = u32::from_le_bytes(file[i + 8..i + 12].try_into().expect("4 bytes")) as usize;
        if k >= n {
            out.extend_from_slice(&file[i..(i + 16 + incl).min(file.len())]);
        }
        i += 16 + incl;
        k += 1;
    }
    out
}

#[test]
fn time_after_both_sides_closed_costs_nothing() {
    // zeek's tls12-ecdhe: after the server's FIN and the client's, the
    // client's close_notify (53 B) is retransmitted; nobody waits for it
    let name = "zeek_tls12-ecdhe.pcap";
    let flags = tcp_flags(name);
    let fins: Vec<u64> = flags
        .iter()
        .filter(|(_, f, _)| f.contains(TcpFlags::FIN))
        .map(|&(n, _, _)| n)
        .collect();
    let mut reader = CaptureReader::open(&path(name)).expect("readable");
    let retx: Vec<u64> = pipeline::frame_marks(&mut reader)
        .expect("marks")
        .into_iter()
        .filter(|(_, m)| matches!(m, FrameMark::Retransmission(_)))
        .map(|(n, _)| n)
        .collect();
    assert!(fins.len() >= 2, "both sides close: {fins:?}");
    let both_closed = fins[1];
    assert!(
        retx.iter().any(|&n| n > both_closed),
        "a retransmission after both FINs (frames {fins:?}): {retx:?}"
    );
    let r = &reports(name)[0];
    for f in &r.findings {
        assert!(
            f.evidence.iter().all(|e| e.frame < both_closed) || f.cost.ms == 0.0,
            "{} costs {} ms for frames after both sides closed (frame {both_closed}): {:?}",
            f.id,
            f.cost.ms,
            f.evidence
        );
    }
    // what happened before the close is still there
    assert!(ids(r).contains(&"tls12-full-handshake"), "{:?}", ids(r));
}

#[test]
fn an_initial_window_needs_a_full_segment() {
    // a first flight shorter than one segment is the application's write
    let r = &reports("sv_tcp-empty-sack.pcap")[0];
    let t = r.transfer.as_ref().expect("a transfer");
    let iw = t.initial_window.as_ref().expect("first round measured");
    assert!(iw.segments < 1.0, "first round under one segment: {iw:?}");
    assert!(!ids(r).contains(&"initial-window"), "{:?}", ids(r));
    // two full segments (Windows XP's IW2, 2004) are a window
    let r = &reports("ws_http.cap")[0];
    assert!(ids(r).contains(&"initial-window"), "{:?}", ids(r));
}

#[test]
fn a_syn_ack_lost_after_the_capture_point_is_said_so() {
    // 206_example_a's second connection: SYN, SYN-ACK seen, SYN again 3 s
    // later (the SYN-ACK never reached the client), then the handshake
    let r = &reports("zeek_http-206-example-a.pcap")[1];
    let f = r
        .findings
        .iter()
        .find(|f| {
            f.id == "syn-retransmission"
                && f.evidence[0].facts[0].kind == "syn-retransmission.first"
                && f.evidence[0].facts[0].args.str("packet") == "SYN"
        })
        .expect("syn-retransmission of the SYN");
    let frames: Vec<u64> = f.evidence.iter().map(|e| e.frame).collect();
    assert!(
        frames.windows(2).all(|w| w[0] <= w[1]),
        "in capture order: {frames:?}"
    );
    assert!(
        f.evidence[1].facts[0].kind == "syn-retransmission.syn-ack-lost",
        "{:?}",
        f.evidence
    );
    assert!((2900.0..3100.0).contains(&f.cost.ms), "{}", f.cost.ms);
}

#[test]
fn a_window_cap_is_not_charged_the_time_other_causes_held() {
    // 206_example_b's first connection: two responses held by the client's
    // unscaled 64 KB window, all their new data sent by 1.45 s (frame 1277,
    // tshark); then one offset resent 14 times over 81 s until the server
    // resets (`rto-backoff`). The window's cost is the time its rounds took
    // (issue 43), but not those 81 s, nor the fast recoveries, nor the
    // client's pause between its requests.
    let r = &reports("zeek_http-206-example-b.pcap")[0];
    let cost = |id: &str| {
        r.findings
            .iter()
            .find(|f| f.id == id)
            .unwrap_or_else(|| panic!("{id} in {:?}", ids(r)))
            .cost
            .ms
    };
    assert!(cost("rto-backoff") > 80_000.0, "{}", cost("rto-backoff"));
    let window = cost("receive-window-limit");
    assert!(window < 1_450.0, "receive-window-limit {window} ms");
}

/// Every connection of `name`, analysed and detected as the pipeline does.
fn analyses(name: &str, each: &mut dyn FnMut(&rttlens_core::analysis::Analysis)) {
    let mut reader = CaptureReader::open(&path(name)).expect("readable");
    let mut table = FlowTable::<Protocols>::new();
    let mut conns = Vec::new();
    while let Some(f) = reader.next_frame().expect("frame") {
        if let Ok(Decoded::Tcp(seg)) = wire::decode(f.link_type, f.data, f.orig_len) {
            let at = FrameRef {
                frame: f.number,
                ts: f.ts,
            };
            table.push(&seg, at, &mut |c| conns.push(c));
        }
    }
    table.finish(&mut |c| conns.push(c));
    for c in conns {
        each(&analyze(c));
    }
}

#[test]
fn the_self_check_catches_a_cost_nobody_paid() {
    let mut checked = 0;
    analyses("zeek_http-206-example-a.pcap", &mut |a| {
        let mut findings = detect::run_all(a);
        assert_eq!(self_check::check(a, &findings), Vec::<String>::new());
        let Some(f) = findings.iter_mut().find(|f| f.cost.ms > 0.0) else {
            return;
        };
        let lasted = (a.last().ts - a.first().ts).as_millis_f64();
        f.cost.ms = lasted + 1.0;
        f.evidence.reverse();
        f.evidence.push(detect::Evidence {
            frame: a.last().frame + 1,
            facts: Default::default(),
        });
        let bad = self_check::check(a, &findings);
        let has = |s: &str| bad.iter().any(|b| b.contains(s));
        assert!(has("longer than the connection"), "{bad:?}");
        assert!(has("longer than the time it accrued in"), "{bad:?}");
        assert!(has("outside the connection's frames"), "{bad:?}");
        checked += 1;
    });
    assert!(checked > 0, "a finding with a cost to inflate");
}

#[test]
fn a_packet_captured_twice_is_counted_once() {
    // zeek's m57-long and vnd.ms-cab captures hold every packet twice, a
    // few µs apart with the same IPv4 Identification (Wireshark marks the
    // copies as retransmissions and duplicate ACKs)
    for (name, rtt_ms) in [
        ("zeek_http-m57-long-49583-80.pcap", 96.4),
        ("zeek_http-vnd-ms-cab-multi-conn.pcap", 24.0),
    ] {
        let mut reader = CaptureReader::open(&path(name)).expect("readable");
        let mut conns = Vec::new();
        let sum = pipeline::run(
            &mut reader,
            &mut |r| conns.extend(r.into_tcp()),
            &mut |_| {},
        )
        .expect("ran");
        let copies = sum.quality.duplicate_frames;
        assert!(
            copies * 3 >= sum.frames,
            "{name}: {copies} copies of {} frames",
            sum.frames
        );
        assert!(!sum.quality.is_clean(), "{name}: copies are a quality note");
        let c = &conns[0];
        let rtt = c
            .rtt
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: RTT known once copies are dropped"));
        assert!(
            (rtt.min_ms - rtt_ms).abs() < rtt_ms * 0.1,
            "{name}: RTT {} ms (tshark's iRTT {rtt_ms} ms)",
            rtt.min_ms
        );
        // a copy is not a retransmission
        let mut reader = CaptureReader::open(&path(name)).expect("readable");
        let retx = pipeline::frame_marks(&mut reader)
            .expect("marks")
            .into_iter()
            .filter(|(_, m)| matches!(m, FrameMark::Retransmission(_)))
            .count() as u64;
        assert!(
            retx * 10 < copies,
            "{name}: {retx} retransmissions among {copies} copies"
        );
    }
}

#[test]
fn segments_at_the_paths_size_are_full() {
    // vnd.ms-cab: the server's SYN-ACK announces 1460 B but its segments
    // are 1380 B (the path's MTU): a 1380 B segment is full, not a small
    // segment Nagle could hold, and two of them are two segments
    let r = &reports("zeek_http-vnd-ms-cab-multi-conn.pcap")[2];
    assert!(!ids(r).contains(&"nagle-stall"), "{:?}", ids(r));
    let t = r.transfer.as_ref().expect("a transfer");
    assert_eq!(t.mss, 1380);
    assert_eq!(t.initial_window.as_ref().map(|w| w.segments), Some(2.0));
}

#[test]
fn a_hole_below_the_first_byte_seen_is_a_fast_retransmission() {
    // suricata-verify's tcp-empty-sack: the client's 608 B at relative seq
    // 2084 (frame 21) are lost, the server's duplicate ACKs at 2084 carry
    // SACK blocks above it (frames 25, 26), and frame 27 resends them.
    // Cut so the capture begins after the lost segment (frame 22 on), the
    // hole lies below the first client byte the copy holds: Wireshark still
    // flags two duplicate ACKs and a fast retransmission (frames 4-6 of the
    // copy), and so must the engine.
    let name = "sv_tcp-empty-sack.pcap";
    let bytes = std::fs::read(path(name)).expect("read");
    let cut = drop_first_records(&bytes, 21);
    let mut reader =
        CaptureReader::new(Box::new(std::io::Cursor::new(cut.clone()))).expect("reader");
    let marks = pipeline::frame_marks(&mut reader).expect("marks");
    let at = |f: u64| {
        marks
            .iter()
            .filter(|(g, _)| *g == f)
            .map(|(_, m)| *m)
            .collect::<Vec<_>>()
    };
    assert_eq!(at(4), vec![FrameMark::DuplicateAck], "{marks:?}");
    assert_eq!(at(5), vec![FrameMark::DuplicateAck], "{marks:?}");
    assert_eq!(
        at(6),
        vec![FrameMark::Retransmission(
            rttlens_core::flow::half::RetxKind::FastRetransmit
        )],
        "{marks:?}"
    );
    let mut reader = CaptureReader::new(Box::new(std::io::Cursor::new(cut))).expect("reader");
    let mut mid = Vec::new();
    pipeline::run(&mut reader, &mut |r| mid.extend(r.into_tcp()), &mut |_| {}).expect("analysed");
    let f = mid[0]
        .findings
        .iter()
        .find(|f| f.id == "fast-retransmit")
        .unwrap_or_else(|| panic!("no fast-retransmit: {:?}", ids(&mid[0])));
    assert!(f.evidence.iter().any(|e| e.frame == 6), "{:?}", f.evidence);
    // held up from the first ACK showing the hole (frame 3) to frame 6
    assert!((60.0..=80.0).contains(&f.cost.ms), "{}", f.cost.ms);
}

#[test]
fn only_a_block_the_ack_already_covers_is_a_duplicate_sack() {
    // tcp-empty-sack again, whole: frame 29 ACKs 3326 with a SACK block
    // 2692-3954 that straddles the ACK (a stale block, not a D-SACK); frame
    // 31 ACKs 3954 with 3326-3954, wholly below it: a D-SACK for the
    // retransmission at frame 28 (RFC 2883 §4). Frame 27's resend filled a
    // real hole.
    let mut seen = 0;
    analyses("sv_tcp-empty-sack.pcap", &mut |a| {
        for r in a.retransmissions(Side::Client) {
            match r.at.frame {
                27 => assert!(!r.spurious, "frame 27 filled a hole: {r:?}"),
                28 => assert!(r.spurious, "frame 28 was D-SACKed: {r:?}"),
                _ => continue,
            }
            seen += 1;
        }
    });
    assert_eq!(seen, 2);
}
