//! Server-Timing read from real servers through the lab at RTT 20 ms:
//!
//! - the catalogue's `server-timing-queue` (an upstream reporting its
//!   handler's 20 ms behind nginx's `limit_req` queue, cleartext HTTP/1.1)
//!   names `server-unaccounted-time`, and its control
//!   `server-timing-direct` (the upstream alone) gives think times within
//!   1 ms of the header;
//! - nginx's `add_header` and `add_trailer` read over cleartext HTTP/1.1
//!   (chunked trailers) and decrypted HTTP/2 (curl's key log), and the lab's
//!   QUIC server's header and trailers over decrypted HTTP/3 (the probe's
//!   key log): every row carries the metrics of both.
//!
//! Needs root, /dev/net/tun, iproute2 and `nginx-light curl tcpdump`;
//! FAILS (never skips) naming what is missing.

use std::path::Path;
use std::time::Duration;

use rttlens_core::capture::CaptureReader;
use rttlens_core::model::{ConnReport, Connection, QuicReport, ServerTimingRow};
use rttlens_core::pipeline;
use rttlens_lab::scenario::{self, Scenario, ScenarioCtx};
use rttlens_lab_net::{Host, Lab, LabError};
use rttlens_lab_server::quic::QuicConfig;

const RTT: Duration = Duration::from_millis(20);

fn prerequisites() {
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("lab tests need root, /dev/net/tun and iproute2: {e}");
    }
    for (c, p) in scenario::PROGRAMS {
        if let Err(e) = rttlens_lab_net::require_command(c, p) {
            panic!("{e}");
        }
    }
}

/// The kept client capture of scenario `name` under `keep`, analysed with
/// the key log beside it.
fn analyse(keep: &Path, name: &str) -> (Vec<ConnReport>, Vec<QuicReport>) {
    let path = keep.join(name).join("client.pcap");
    let mut reader = CaptureReader::open(&path).expect("the kept capture");
    if let Ok(text) = std::fs::read(keep.join(name).join("keylog.txt")) {
        reader.key_store().add(&text);
    }
    let (mut conns, mut quic) = (Vec::new(), Vec::new());
    pipeline::run(
        &mut reader,
        &mut |c| match c {
            Connection::Tcp(c) => conns.push(*c),
            Connection::Quic(q) => quic.push(*q),
        },
        &mut |_| {},
    )
    .expect("analysis");
    conns.sort_by_key(|c| c.index);
    (conns, quic)
}

/// Runs `s` at [`RTT`], keeping its files under `keep`; it must pass.
fn run(s: &Scenario, keep: &Path) {
    let o =
        scenario::run_scenario(s, RTT, Some(keep)).unwrap_or_else(|e| panic!("{}: {e}", s.name));
    assert!(
        o.passed(),
        "{}: expected {:?}, forbidden seen {:?}, findings {:?}, problems {:?}",
        s.name,
        o.found
            .iter()
            .map(|f| (f.expect, f.found))
            .collect::<Vec<_>>(),
        o.unexpected_forbidden,
        o.findings,
        o.problems
    );
}

fn names(st: &ServerTimingRow) -> Vec<&str> {
    st.metrics.iter().map(|m| m.name.as_str()).collect()
}

#[test]
fn a_proxy_queue_is_unaccounted_and_its_control_matches_the_header() {
    prerequisites();
    let keep = tempdir("server-timing-queue");
    let queue = rttlens_lab::catalogue::find("server-timing-queue").expect("in the catalogue");
    let direct = rttlens_lab::catalogue::find("server-timing-direct").expect("in the catalogue");
    run(queue, &keep);
    run(direct, &keep);

    let (conns, _) = analyse(&keep, queue.name);
    let rows: Vec<_> = conns.iter().flat_map(|c| &c.requests).collect();
    assert_eq!(rows.len(), 5, "five requests through nginx: {rows:#?}");
    let mut unaccounted = Vec::new();
    for r in &rows {
        let st = r
            .server_timing
            .as_ref()
            .expect("nginx passes the upstream's header on");
        assert_eq!(names(st), ["app"], "{st:?}");
        assert!(!st.trailer);
        assert_eq!(Some(st.frame), r.response_frame, "the head's segment");
        let app = st.total_ms.expect("a dur");
        assert!((19.0..40.0).contains(&app), "the handler's 20 ms: {st:?}");
        unaccounted.push(st.unaccounted_ms.expect("RTT known"));
    }
    unaccounted.sort_by(f64::total_cmp);
    // 50 ms apart in the queue: the last waited about 200 ms
    assert!(unaccounted[4] > 150.0, "{unaccounted:?}");
    // a connection each: every request that waited in the queue is named
    // on its own, at its own difference
    let found: Vec<_> = conns
        .iter()
        .flat_map(|c| &c.findings)
        .filter(|f| f.id == "server-unaccounted-time")
        .collect();
    assert_eq!(found.len(), 4, "the first went through at once: {found:#?}");
    let f = found
        .iter()
        .max_by(|a, b| a.cost.ms.total_cmp(&b.cost.ms))
        .expect("found");
    assert!(
        (f.cost.ms - unaccounted[4]).abs() < 1.0,
        "{f:?} {unaccounted:?}"
    );
    // each cites the request's end, the response and the header
    for f in &found {
        let kinds: Vec<&str> = f
            .evidence
            .iter()
            .flat_map(|e| e.facts.iter().map(|x| x.kind))
            .collect();
        for k in ["request-end", "response", "header"] {
            let k = format!("server-unaccounted-time.{k}");
            assert!(kinds.contains(&k.as_str()), "{k}: {f:#?}");
        }
    }
    let title = rttlens_report::words::title(f);
    assert!(title.contains("Server-Timing accounts for"), "{title}");

    let (conns, _) = analyse(&keep, direct.name);
    let rows: Vec<_> = conns.iter().flat_map(|c| &c.requests).collect();
    assert_eq!(rows.len(), 5, "{rows:#?}");
    for r in rows {
        let st = r.server_timing.as_ref().expect("the upstream's header");
        let gap = st.unaccounted_ms.expect("RTT known");
        assert!(gap.abs() <= 1.0, "think within 1 ms of the header: {st:?}");
    }
    let _ = std::fs::remove_dir_all(&keep);
}

/// Metrics nginx adds in the head and in the trailers.
const HEAD: &str = "db;dur=3.5, app;dur=1.25;desc=\"render\"";
const TRAILER: &str = "total;dur=4.75";

/// nginx on 80 (HTTP/1.1) and 443 (TLS, HTTP/2) adding Server-Timing in
/// the head and the trailers; curl fetches from both, writing its keys;
/// the probe fetches over HTTP/3 from the QUIC server, which adds its own.
fn header_and_trailers(c: &mut ScenarioCtx) -> Result<(), LabError> {
    let extra = vec![
        format!("add_header Server-Timing '{HEAD}' always;"),
        format!("add_trailer Server-Timing '{TRAILER}' always;"),
    ];
    let e = extra.clone();
    c.nginx(80, move |n| {
        n.tls = false;
        n.extra_location = e;
    })?;
    c.nginx(443, move |n| {
        n.http2 = true;
        n.extra_location = extra;
    })?;
    let keylog = c.keylog();
    let s = Lab::SERVER_V4;
    c.sh(&format!(
        "curl -sS --max-time 10 -o /dev/null http://{s}/size/100000 && SSLKEYLOGFILE={} curl -sS -k --http2 --tlsv1.3 --max-time 10 -o /dev/null https://{s}/size/100000",
        keylog.display()
    ))?;
    let port = c.quic_server(QuicConfig {
        server_timing: true,
        think: Duration::from_millis(10),
        ..QuicConfig::default()
    })?;
    let mut p = rttlens_probe::ProbeConfig::new(format!("https://{s}:{port}/size/20000"));
    p.http3 = true;
    p.tls.insecure = true;
    p.tls.keylog = Some(keylog);
    p.max_time = Some(Duration::from_secs(20));
    p.capture = false;
    c.probe(p).map(|_| ())
}

#[test]
fn header_and_trailers_over_http1_decrypted_http2_and_http3() {
    prerequisites();
    let keep = tempdir("server-timing-versions");
    let s = Scenario {
        name: "server-timing-versions",
        about: "Server-Timing in the head and the trailers over HTTP/1.1, HTTP/2 and HTTP/3",
        expect: &[],
        forbid: &[],
        key: "request",
        vantage: Host::Client,
        link: |_| {},
        run: header_and_trailers,
        variants: &[],
        fix: None,
    };
    run(&s, &keep);
    let (conns, quic) = analyse(&keep, s.name);
    assert_eq!(conns.len(), 2, "HTTP/1.1 and HTTP/2: {conns:#?}");
    for c in &conns {
        let r = &c.requests[0];
        let st = r.server_timing.as_ref().unwrap_or_else(|| panic!("{c:#?}"));
        assert_eq!(names(st), ["db", "app", "total"], "{}", c.protocol);
        assert!(st.trailer, "{st:?}");
        assert_eq!(st.total_ms, Some(4.75));
        assert_eq!(st.total_from, "total");
        assert_eq!(st.metrics[1].desc.as_deref(), Some("render"));
        assert_eq!(Some(st.frame), r.response_frame);
    }
    assert!(conns[0].tls.is_none() && conns[1].requests[0].stream == Some(1));
    let q = quic.first().expect("the HTTP/3 connection");
    let st = q.streams[0]
        .server_timing
        .as_ref()
        .expect("decrypted HTTP/3");
    assert_eq!(names(st), ["app", "total"], "{st:?}");
    assert!(st.trailer);
    let app = st.metrics[0].dur_ms.expect("a dur");
    assert!(app >= 10.0, "the 10 ms think: {st:?}");
    assert_eq!(Some(st.frame), q.streams[0].response_frame);
    let _ = std::fs::remove_dir_all(&keep);
}

/// A fresh directory for kept scenario files.
fn tempdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("rttlens-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}
