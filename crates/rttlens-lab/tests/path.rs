//! The probe's `--path` across the routed lab (issue 44): client — R1 —
//! delay link — R2 — server, the delay on the middle link. The trace must
//! show R1, R2 and the server, name R2 as the hop where the RTT steps up,
//! and put each hop's median RTT within 1 ms of the delay in front of it.
//! Needs root, /dev/net/tun and iproute2; FAILS (never skips) naming what
//! is missing. The UDP test traces `--http3`'s probes across the same lab.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use rttlens_lab::path::{find_path, run_path};
use rttlens_lab_net::{LinkConfig, Node, RoutedLab};
use rttlens_probe::path::PathOptions;

/// One lab at a time (timing on 2 cores).
static ONE_LAB: Mutex<()> = Mutex::new(());

fn prerequisites() {
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("the path scenario needs root, /dev/net/tun and iproute2: {e}");
    }
}

/// `--http3`'s probes, UDP to the traceroute ports: the routers answer
/// time-exceeded, the server port unreachable (nothing listens there).
#[test]
fn udp_path_reaches_the_server() {
    prerequisites();
    let _one = ONE_LAB.lock().unwrap_or_else(|e| e.into_inner());
    let lab = RoutedLab::new(LinkConfig::with_rtt(Duration::from_millis(20))).expect("lab");
    let target = SocketAddr::from((RoutedLab::SERVER, 443));
    let opts = PathOptions {
        rounds: 3,
        udp: true,
        names: false,
    };
    let p = lab
        .run_in(Node::Client, move || {
            rttlens_probe::path::trace(target, opts, Some((20.0, "capture")))
        })
        .expect("entering the client namespace");
    assert_eq!(
        (p.status, p.protocol, p.port),
        ("traced", "udp", None),
        "{p:#?}"
    );
    let addrs: Vec<_> = p.hops.iter().map(|h| h.addr.clone()).collect();
    let want = [RoutedLab::R1, RoutedLab::R2, RoutedLab::SERVER].map(|a| Some(a.to_string()));
    assert_eq!(addrs, want, "{p:#?}");
    assert!(p.hops[2].target, "{p:#?}");
    let p50 = p.hops[2].p50_ms.expect("the server answered");
    assert!((p50 - 20.0).abs() <= 1.0, "server p50 {p50} ms at 20 ms");
    assert_eq!(p.step.as_ref().map(|s| s.ttl), Some(2), "{p:#?}");
}

#[test]
fn path_middle_hop() {
    prerequisites();
    let _one = ONE_LAB.lock().unwrap_or_else(|e| e.into_inner());
    let s = find_path("path-middle-hop").expect("scenario");
    let keep = std::env::temp_dir().join(format!("rttlens-path-keep-{}", std::process::id()));
    let o = run_path(s, Duration::from_millis(40), Some(&keep)).expect("path scenario ran");
    for h in &o.path.hops {
        eprintln!("{h:?}");
    }
    for c in &o.checks {
        eprintln!(
            "{} {}: {}",
            if c.ok { "held" } else { "FAILED" },
            c.expect,
            c.seen
        );
    }
    assert!(o.passed(), "path-middle-hop: {:#?}", o.checks);

    // --keep: the probe's own capture is kept, and read again it gives the
    // connection RTT the last hop was compared with
    let kept = keep.join("path-middle-hop").join("probe.pcapng");
    let mut reader = rttlens_core::capture::CaptureReader::open(&kept).expect("kept capture");
    let mut conns = Vec::new();
    rttlens_core::pipeline::run(
        &mut reader,
        &mut |c| conns.extend(c.into_tcp()),
        &mut |_| {},
    )
    .expect("pipeline");
    let _ = std::fs::remove_dir_all(&keep);
    assert_eq!(conns.len(), 1, "one connection in {}", kept.display());
    let v = o.path.versus_connection.as_ref().expect("compared");
    let min = conns[0]
        .rtt
        .as_ref()
        .expect("an RTT from the capture")
        .min_ms;
    assert!(
        (min - v.connection_rtt_ms).abs() < 0.001,
        "kept capture's RTT {min} ms against the compared {} ms",
        v.connection_rtt_ms
    );

    // the text report's hop table names the hops and the step
    let mut text = Vec::new();
    rttlens_report::probe::path::write_path(&o.path, &mut text).expect("text");
    let text = String::from_utf8(text).expect("utf-8");
    eprintln!("{text}");
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(
        rows[1].contains("10.77.0.2") && rows[2].contains("10.77.2.2 [target]"),
        "{text}"
    );
    assert!(text.contains("largest step: hop 2 10.77.0.2"), "{text}");

    // the HTML report draws them: a median dot per hop, the step pinned
    let mut html = Vec::new();
    rttlens_report::html::path::fragment(&o.path, &mut html).expect("html");
    let html = String::from_utf8(html).expect("utf-8");
    assert!(
        html.contains("data-graph=\"path\"") && html.contains("<svg"),
        "{html}"
    );
    assert!(
        html.contains("data-finding=\"step\""),
        "no step pin: {html}"
    );
    assert!(html.contains("hop 2 10.77.0.2"), "{html}");
}
