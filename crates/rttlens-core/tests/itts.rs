//! The PKU vs THU case (`../shared/captures/itts`, real captures with known
//! answers in their README): the acceptance bar of the analyze engine.

use std::path::PathBuf;

use rttlens_core::capture::CaptureReader;
use rttlens_core::flow::rounds::Limit;
use rttlens_core::model::ConnReport;
use rttlens_core::pipeline::{self, CaptureSummary};

fn capture(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/captures/itts")
        .join(name);
    assert!(
        p.exists(),
        "{} is missing: the tests need ../shared/captures beside the repository",
        p.display()
    );
    p
}

fn analyze(name: &str) -> (Vec<ConnReport>, CaptureSummary) {
    let mut reader = CaptureReader::open(&capture(name)).expect("open capture");
    let mut conns = Vec::new();
    let sum = pipeline::run(
        &mut reader,
        &mut |c| conns.extend(c.into_tcp()),
        &mut |_| {},
    )
    .expect("analyse");
    (conns, sum)
}

fn one(name: &str) -> ConnReport {
    let (mut conns, sum) = analyze(name);
    assert_eq!(conns.len(), 1, "{name}: one connection");
    assert!(
        sum.quality.is_clean(),
        "{name}: clean capture, got {:?}",
        sum.quality
    );
    conns.remove(0)
}

fn ids(c: &ConnReport) -> Vec<&'static str> {
    c.findings.iter().map(|f| f.id).collect()
}

fn phase<'a>(c: &'a ConnReport, name: &str) -> &'a rttlens_core::analysis::ladder::Phase {
    c.ladder
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no {name} phase in {:?}", c.ladder))
}

fn within(x: f64, want: f64, tol: f64) -> bool {
    (x - want).abs() <= tol * want
}

#[test]
fn pku_sender_window_cap() {
    let c = one("pku.cap");
    assert_eq!(c.vantage.as_str(), "client");
    let rtt = c.rtt.as_ref().expect("rtt");
    assert!(within(rtt.min_ms, 25.7, 0.02), "RTT {} ms", rtt.min_ms);
    let tls = c.tls.as_ref().expect("tls facts");
    assert_eq!(tls.info.version, "1.2");
    assert_eq!(tls.kind, "tls12-full");
    assert_eq!(tls.nominal_rtts, 2);
    assert!(
        within(tls.measured_rtts, 2.0, 0.15),
        "TLS took {} RTT",
        tls.measured_rtts
    );
    // request and first response byte, as Wireshark numbers them
    let req = phase(&c, "request");
    assert_eq!((req.start_frame, req.end_frame), (16, 18));

    let f = c
        .findings
        .iter()
        .find(|f| f.id == "sender-window-cap")
        .expect("sender-window-cap");
    assert!(f.evidence.len() >= 3 && f.evidence.iter().all(|e| e.frame >= 18 && e.frame <= 887));
    let t = c.transfer.as_ref().expect("transfer");
    let mss = t.mss;
    let capped: Vec<_> = t
        .rounds
        .iter()
        .filter(|r| r.limit == Limit::Sndbuf)
        .collect();
    assert!(capped.len() >= 6, "capped rounds: {}", capped.len());
    for r in &capped {
        assert!(
            r.flight.abs_diff(65535) <= mss,
            "round {} flight {}",
            r.index,
            r.flight
        );
        assert!(r.rwnd >= 120_000, "client offers ~128 KB, got {}", r.rwnd);
    }
    let bound = t.bound.expect("bound");
    assert_eq!(bound.limit, Limit::Sndbuf);
    assert!(
        within(bound.bytes_per_sec / 1e6, 2.5, 0.1),
        "bound {} B/s",
        bound.bytes_per_sec
    );
    assert!(
        f.cost.rtts.is_some_and(|r| r >= 1.0),
        "a material cost: {:?}",
        f.cost
    );
    let ids = ids(&c);
    assert!(ids.contains(&"tls12-full-handshake"), "{ids:?}");
    assert!(!ids.contains(&"receive-window-limit"), "{ids:?}");
    assert!(!ids.contains(&"large-tls-record"), "{ids:?}");
}

#[test]
fn thu_iw10_slow_start_and_large_record() {
    let c = one("thu.cap");
    let t = c.transfer.as_ref().expect("transfer");
    let iw = t.initial_window.expect("initial window");
    assert_eq!(iw.bytes, 14280, "IW10 × 1428");
    assert_eq!(t.mss, 1428);
    let flights: Vec<u64> = t.rounds.iter().map(|r| r.flight).collect();
    for w in flights.windows(2).take(5) {
        assert!(
            w[1] as f64 >= 1.3 * w[0] as f64,
            "slow start growth ≥ 1.3×: {flights:?}"
        );
    }
    let ids = ids(&c);
    assert!(!ids.contains(&"sender-window-cap"), "{ids:?}");
    assert!(
        !ids.contains(&"initial-window"),
        "IW10 is not small: {ids:?}"
    );
    let f = c
        .findings
        .iter()
        .find(|f| f.id == "large-tls-record")
        .expect("large-tls-record");
    assert!(
        within(f.cost.ms, 26.0, 0.3),
        "record completes ~26 ms after its first byte: {:?}",
        f.cost
    );
    assert_eq!(
        f.evidence.first().map(|e| e.frame),
        Some(13),
        "record starts in frame 13"
    );
    assert_eq!(
        f.evidence.last().map(|e| e.frame),
        Some(32),
        "record completes in frame 32"
    );
    assert_eq!(f.facts.u64("record_bytes"), 16408, "{:?}", f.facts);
    let fdb = phase(&c, "first-decrypted-byte");
    assert!(
        within(fdb.rtts, 1.0, 0.3),
        "first decrypted byte ~1 RTT after the first response byte: {}",
        fdb.rtts
    );
    let req = phase(&c, "request");
    assert_eq!((req.start_frame, req.end_frame), (12, 13));
}

#[test]
fn pku2_receive_window_limit() {
    let c = one("pku-2.cap");
    let ids = ids(&c);
    assert!(ids.contains(&"receive-window-limit"), "{ids:?}");
    assert!(!ids.contains(&"sender-window-cap"), "{ids:?}");
    let t = c.transfer.as_ref().expect("transfer");
    let first = t
        .rounds
        .iter()
        .find(|r| r.limit == Limit::Rwnd)
        .expect("an rwnd round");
    assert!(
        first.flight.abs_diff(131_072) <= t.mss,
        "flight = the client's window, ~128 KB: {}",
        first.flight
    );
}

#[test]
fn thu2_iw10_slow_start() {
    let c = one("thu-2.cap");
    let t = c.transfer.as_ref().expect("transfer");
    assert_eq!(t.initial_window.expect("iw").bytes, 14280);
    let ss = t
        .rounds
        .iter()
        .take_while(|r| r.limit == Limit::SlowStart)
        .count();
    assert!(ss >= 5, "slow start rounds: {ss}");
    let ids = ids(&c);
    assert!(!ids.contains(&"sender-window-cap"), "{ids:?}");
    // late in the transfer the client's window (~128–160 KB) held the flight
    // to within two segments for a round or two: allowed, but only after the
    // slow start and costing at most the one round it delayed (timed since
    // issue 43: the rounds here are 26–26.5 ms apart against a 25.5 ms
    // rtt_min, and the last one takes its own time to send, so one round is
    // up to 1.1 RTT)
    if let Some(f) = c.findings.iter().find(|f| f.id == "receive-window-limit") {
        let first_rwnd = t
            .rounds
            .iter()
            .position(|r| r.limit == Limit::Rwnd)
            .expect("an rwnd round");
        assert!(
            first_rwnd >= 5,
            "window limit only after slow start: round {first_rwnd}"
        );
        assert!(f.cost.rtts.is_some_and(|r| r <= 1.1), "{:?}", f.cost);
    }
}

#[test]
fn every_finding_keeps_the_contract() {
    for name in ["pku.cap", "thu.cap", "pku-2.cap", "thu-2.cap"] {
        let (conns, _) = analyze(name);
        for c in &conns {
            for f in &c.findings {
                assert!(!f.evidence.is_empty(), "{name} {}: evidence", f.id);
                assert!(
                    f.evidence
                        .iter()
                        .all(|e| e.frame >= 1 && e.frame <= c.last_frame),
                    "{name} {}: frames in range",
                    f.id
                );
                // the sentences are the report's (crates/rttlens/tests/cli.rs
                // checks each has its template); here, that the record is typed
                assert!(!f.references.is_empty(), "{name} {}: references", f.id);
                assert!(
                    f.evidence
                        .iter()
                        .flat_map(|e| &e.facts)
                        .chain(&f.confidence.why)
                        .all(|x| x.kind.contains('.') && x.kind != "text"),
                    "{name} {}: typed facts {:?}",
                    f.id,
                    f.evidence
                );
                assert!(f.cost.ms >= 0.0 && f.cost.rtts.is_none_or(|r| r >= 0.0));
            }
        }
    }
}
