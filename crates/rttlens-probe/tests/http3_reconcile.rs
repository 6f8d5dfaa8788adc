//! `rttlens probe --http3` against the lab's built-in QUIC server
//! (`rttlens_lab_server::quic`) behind the userspace delay link at RTT
//! 40 ms: the probe's own capture, read back through the engine with the
//! key log the probe kept, is fully decrypted and its QUIC ladder agrees
//! with the probe's own timings within 1 ms, for full, resumed and 0-RTT
//! connections (issue 25, "Done when"). The bound holds for the median of
//! each phase over [`RUNS`] runs of `--sequence`, as for TCP
//! (`crates/rttlens-lab/tests/probe.rs`): a run on two busy cores may be
//! preempted for milliseconds, which says nothing about either clock.
//! Needs root, /dev/net/tun and iproute2; FAILS (never skips) naming what
//! is missing.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use rttlens_lab_net::{Host, Lab, LinkConfig};
use rttlens_lab_server::quic::{QuicConfig, QuicServer};
use rttlens_probe::{ProbeConfig, ProbeReport};

const RTT: Duration = Duration::from_millis(40);
/// The bar (issue 25): app and wire within 1 ms per phase.
const BOUND_MS: f64 = 1.0;
/// The phases compared on every attempt (docs/probe.md "App against
/// wire").
const PHASES: [&str; 4] = ["quic-handshake", "request", "transfer", "total"];
/// Runs of `--sequence` (full, resumed, 0-RTT) the medians are taken over.
const RUNS: usize = 9;

static ONE_LAB: Mutex<()> = Mutex::new(());

/// A lab at 40 ms with the QUIC server (`server`) in the server namespace;
/// the probe (`probe`) runs `runs` times in the client namespace. Returns
/// its reports.
fn probe_quic(server: QuicConfig, probe: ProbeConfig, runs: usize) -> Vec<ProbeReport> {
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("the HTTP/3 reconcile test needs root, /dev/net/tun and iproute2: {e}");
    }
    let _one = ONE_LAB.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::new(LinkConfig::with_rtt(RTT)).expect("lab");
    let (ptx, prx) = std::sync::mpsc::channel::<Result<u16, String>>();
    let (stx, srx) = tokio::sync::oneshot::channel::<()>();
    let thread = lab.thread_in(Host::Server, move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("server runtime");
        rt.block_on(async move {
            let addr = SocketAddr::new(Lab::SERVER_V4.into(), 0);
            match QuicServer::bind(addr, server) {
                Ok(s) => {
                    let _ = ptx.send(Ok(s.local_addr().port()));
                    let _ = s
                        .run_until(async {
                            let _ = srx.await;
                        })
                        .await;
                }
                Err(e) => {
                    let _ = ptx.send(Err(e.to_string()));
                }
            }
        });
    });
    let port = prx
        .recv_timeout(Duration::from_secs(10))
        .expect("QUIC server started within 10 s")
        .expect("QUIC server");
    let mut cfg = probe;
    cfg.url = format!("https://{}:{port}/size/20000", Lab::SERVER_V4);
    let reports = (0..runs)
        .map(|i| {
            let mut cfg = cfg.clone();
            // kept (pcapng with its key log) for a look when an assertion fails
            cfg.pcap = Some(scratch().join(format!("run-{i}.pcapng")));
            cfg.tls.keylog = Some(scratch().join(format!("run-{i}.keylog")));
            lab.run_in(Host::Client, move || rttlens_probe::run(&cfg))
                .expect("entering the client namespace")
                .expect("probe --http3")
        })
        .collect();
    let _ = stx.send(());
    let _ = thread.join();
    reports
}

/// Where the runs' captures go (removed when the test passes).
fn scratch() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("rttlens-http3-reconcile-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

fn probe_cfg() -> ProbeConfig {
    let mut c = ProbeConfig::new("");
    c.http3 = true;
    c.tls.insecure = true;
    c.max_time = Some(Duration::from_secs(30));
    c
}

/// Every attempt matched to its QUIC connection, every packet of it
/// decrypted, every check verified, and each phase of [`PHASES`] compared;
/// returns `(step, phase, app − wire)` for each.
fn reconciled(r: &ProbeReport) -> Vec<(String, &'static str, f64)> {
    assert_eq!(r.capture.status, "captured", "{:?}", r.capture);
    let pcap = r.capture.pcap.as_deref().unwrap_or("?");
    assert!(
        r.capture.note.is_none(),
        "capture note: {:?} (capture {pcap})",
        r.capture.note
    );
    assert!(r.capture_summary.is_some(), "the capture analysed");
    let mut out = Vec::new();
    for a in &r.attempts {
        let step = &a.step;
        let q = a
            .quic_connection
            .and_then(|i| r.quic_connections.get(i))
            .unwrap_or_else(|| panic!("{step}: no QUIC connection for {}", a.local));
        assert_eq!(q.client, a.local);
        assert!(
            q.not_decrypted.is_empty(),
            "{step}: packets left undecrypted: {:?} (capture {pcap})",
            q.not_decrypted
        );
        assert_eq!(
            q.decrypted, q.packets,
            "{step}: packets decrypted [client, server] of those captured"
        );
        assert!(
            q.key_log,
            "{step}: the key log held the connection's secrets"
        );
        for c in &a.checks {
            assert_eq!(c.ok, Some(true), "{step}: check {} ({})", c.what, c.how);
        }
        for phase in PHASES {
            let g = a
                .wire_vs_app
                .iter()
                .find(|g| g.phase == phase)
                .unwrap_or_else(|| panic!("{step}: {phase} not compared: {:?}", a.wire_vs_app));
            eprintln!("TEMP {step} {phase} app {} wire {}", g.app_ms, g.wire_ms);
            out.push((step.clone(), phase, g.diff_ms));
        }
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Per step and phase, the median |app − wire| over the runs within
/// [`BOUND_MS`]; the message names every one that is not.
fn assert_within(diffs: &[(String, &'static str, f64)], steps: &[&str]) {
    let mut over = Vec::new();
    for step in steps {
        for phase in PHASES {
            let d: Vec<f64> = diffs
                .iter()
                .filter(|(s, p, _)| s == step && *p == phase)
                .map(|(_, _, d)| *d)
                .collect();
            assert_eq!(d.len(), RUNS, "{step} {phase}: compared on every run");
            let m = median(d.iter().map(|x| x.abs()).collect());
            let worst = d.iter().map(|x| x.abs()).fold(0.0, f64::max);
            eprintln!(
                "app − wire, {step} {phase}: median |diff| {m:.3} ms (median diff {:+.3} ms, \
                 worst {worst:.3} ms, {RUNS} runs)",
                median(d.clone())
            );
            if m > BOUND_MS {
                over.push(format!("{step} {phase}: median |app − wire| {m:.3} ms"));
            }
        }
    }
    assert!(
        over.is_empty(),
        "app and wire differ by more than {BOUND_MS} ms: {}",
        over.join(", ")
    );
}

#[test]
fn http3_capture_is_decrypted_and_agrees_within_1ms() {
    // --sequence: a full handshake, a resumed one, then 0-RTT (the server
    // accepts early data)
    let mut c = probe_cfg();
    c.sequence = true;
    let reports = probe_quic(
        QuicConfig {
            early_data: true,
            ..QuicConfig::default()
        },
        c,
        RUNS,
    );
    let mut diffs = Vec::new();
    for r in &reports {
        let steps: Vec<&str> = r.attempts.iter().map(|a| a.step.as_str()).collect();
        assert_eq!(steps, ["full", "resumed", "0-rtt"]);
        let zero = &r.attempts[2];
        assert_eq!(
            zero.tls.as_ref().map(|t| t.early_data),
            Some("accepted"),
            "0-RTT accepted"
        );
        diffs.extend(reconciled(r));
    }
    assert_within(&diffs, &["full", "resumed", "0-rtt"]);
    let _ = std::fs::remove_dir_all(scratch());
}
