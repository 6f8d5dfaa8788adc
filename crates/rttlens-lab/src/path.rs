//! The path scenarios (issue 44): the probe's `--path` across
//! [`RoutedLab`]'s four namespaces, client — R1 — delay link — R2 —
//! server, where the delay is on the middle link. Not a [`crate::Scenario`]:
//! what is checked is the probe's trace, not findings in a capture.
//!
//! The expectations: three hops (R1, R2, the server, each at the address
//! its kernel answers from), the step named at R2 (the far end of the
//! delayed link), each hop's median RTT within [`TOLERANCE_MS`] of the
//! delay configured in front of it (0 for R1, the link's RTT for R2 and
//! the server), and the server's against the connection's own RTT within
//! the same.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rttlens_lab_net::{LabError, LinkConfig, Node, RoutedLab};
use rttlens_lab_server::builtin::{Server, ServerConfig};
use rttlens_probe::path::PathOptions;
use rttlens_probe::{PathReport, ProbeConfig};

/// How far a hop's median RTT may be from the delay in front of it (ms).
pub const TOLERANCE_MS: f64 = 1.0;

/// Rounds of the trace (mtr's pace: one a second).
pub const ROUNDS: u32 = 10;

/// One path scenario.
#[derive(Debug)]
pub struct PathScenario {
    /// Stable name.
    pub name: &'static str,
    /// One line: what it shows.
    pub about: &'static str,
    /// What must hold, one line each (for `--list`).
    pub expect: &'static [&'static str],
}

/// The path scenarios.
pub const PATH_SCENARIOS: &[PathScenario] = &[PathScenario {
    name: "path-middle-hop",
    about:
        "the probe's --path across client — R1 — delay link — R2 — server: the RTT steps up at R2",
    expect: &[
        "hops R1, R2, server",
        "largest step at hop 2 (R2)",
        "each hop's p50 within 1 ms of its delay",
        "server's p50 within 1 ms of the connection's RTT",
    ],
}];

/// The path scenario named `name`.
pub fn find_path(name: &str) -> Option<&'static PathScenario> {
    PATH_SCENARIOS.iter().find(|s| s.name == name)
}

/// One expectation's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct PathCheck {
    /// What must hold.
    pub expect: String,
    /// Whether it did.
    pub ok: bool,
    /// What was seen.
    pub seen: String,
}

/// A path scenario's run.
#[derive(Debug, Clone)]
pub struct PathOutcome {
    /// Scenario name.
    pub scenario: &'static str,
    /// The link's RTT (ms).
    pub rtt_ms: f64,
    /// Every expectation, in order.
    pub checks: Vec<PathCheck>,
    /// The trace as the probe reported it.
    pub path: PathReport,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
}

impl PathOutcome {
    /// Every expectation held.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.ok)
    }
}

/// Build the routed lab with the delay `rtt` on its middle link, start the
/// built-in server (plain HTTP) behind R2, run the probe with `--path` in
/// the client and check the trace. With `keep` (`rttlens lab --keep DIR`),
/// the probe's own capture of its connection is kept as
/// `DIR/SCENARIO/probe.pcapng`, the packets the connection's RTT was
/// measured on.
///
/// # Errors
/// The lab could not be built, the server not started, the directory not
/// made, or the probe failed.
pub fn run_path(
    s: &PathScenario,
    rtt: Duration,
    keep: Option<&Path>,
) -> Result<PathOutcome, LabError> {
    let started = Instant::now();
    let pcap = match keep {
        Some(dir) => {
            let dir = dir.join(s.name);
            std::fs::create_dir_all(&dir).map_err(|e| LabError::Io {
                context: format!("creating {}", dir.display()),
                source: e,
            })?;
            Some(dir.join("probe.pcapng"))
        }
        None => None,
    };
    let lab = RoutedLab::new(LinkConfig::with_rtt(rtt))?;
    let server = BehindR2::start(&lab)?;
    let mut cfg = ProbeConfig::new(server.url());
    cfg.max_time = Some(Duration::from_secs(20));
    cfg.pcap = pcap;
    cfg.path = Some(PathOptions {
        rounds: ROUNDS,
        udp: false,
        names: false,
    });
    let report = lab
        .run_in(Node::Client, move || rttlens_probe::run(&cfg))
        .map_err(|e| LabError::Client {
            command: "rttlens probe --path".into(),
            stderr: format!("entering the client namespace: {e}"),
        })?;
    drop(server);
    let report = report.map_err(|e| LabError::Client {
        command: "rttlens probe --path".into(),
        stderr: e.to_string(),
    })?;
    let conn_rtt = report.attempts.first().and_then(|a| {
        let wire = a
            .connection
            .and_then(|i| report.connections.get(i))
            .and_then(|c| c.rtt.as_ref());
        a.rtt_ms.map(|ms| ConnRtt {
            ms,
            source: a.rtt_source.unwrap_or("none"),
            how: wire.map(|r| {
                format!(
                    "{}; h_c {:.2}, h_s {:.2} ms",
                    r.method.as_str(),
                    r.h_c_ms,
                    r.h_s_ms
                )
            }),
        })
    });
    let path = report.path.ok_or_else(|| LabError::Client {
        command: "rttlens probe --path".into(),
        stderr: "no path in the report".into(),
    })?;
    let rtt_ms = rtt.as_secs_f64() * 1e3;
    Ok(PathOutcome {
        scenario: s.name,
        rtt_ms,
        checks: checks(&path, rtt_ms, conn_rtt),
        path,
        elapsed: started.elapsed(),
    })
}

/// The built-in server (plain HTTP) in [`RoutedLab`]'s server namespace,
/// on a free port; stopped on drop.
#[derive(Debug)]
pub struct BehindR2 {
    port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<std::io::Result<Result<(), String>>>>,
}

impl BehindR2 {
    /// Start it (its own current-thread runtime on a thread in the
    /// server's namespace).
    ///
    /// # Errors
    /// [`LabError::Server`] when it does not start within 10 s.
    pub fn start(lab: &RoutedLab) -> Result<BehindR2, LabError> {
        let (port_tx, port_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = lab.thread_in(Node::Server, move || -> Result<(), String> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async move {
                let cfg = ServerConfig {
                    plain_http: true,
                    ..ServerConfig::default()
                };
                let addr = SocketAddr::new(RoutedLab::SERVER.into(), 0);
                let srv = Server::bind(addr, cfg).map_err(|e| e.to_string())?;
                let _ = port_tx.send(srv.local_addr().port());
                srv.run_until(async {
                    let _ = stop_rx.await;
                })
                .await
                .map_err(|e| e.to_string())
            })
        });
        let port = port_rx
            .recv_timeout(Duration::from_secs(10))
            .map_err(|e| LabError::Server(format!("built-in server behind R2: {e}")))?;
        Ok(BehindR2 {
            port,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// `http://10.77.2.2:PORT/`.
    pub fn url(&self) -> String {
        format!("http://{}:{}/", RoutedLab::SERVER, self.port)
    }
}

impl Drop for BehindR2 {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The connection's own RTT as the probe gave it, and how it was measured
/// (shown beside the last check, so a miss says which samples made it).
struct ConnRtt {
    /// The RTT (ms).
    ms: f64,
    /// Where it came from: `capture`, `tcp_info`, `connect`.
    source: &'static str,
    /// From the capture: the method and both halves.
    how: Option<String>,
}

impl ConnRtt {
    /// `40.21 ms (capture: data-ack; h_c 0.04, h_s 40.17 ms)`.
    fn describe(&self) -> String {
        match &self.how {
            Some(how) => format!("{:.2} ms ({}: {how})", self.ms, self.source),
            None => format!("{:.2} ms ({})", self.ms, self.source),
        }
    }
}

/// The expectations of [`PATH_SCENARIOS`] on `path`.
fn checks(path: &PathReport, rtt_ms: f64, conn_rtt: Option<ConnRtt>) -> Vec<PathCheck> {
    let want = [
        (RoutedLab::R1, 0.0),
        (RoutedLab::R2, rtt_ms),
        (RoutedLab::SERVER, rtt_ms),
    ];
    let mut out = Vec::new();
    let addrs: Vec<String> = path
        .hops
        .iter()
        .map(|h| h.addr.clone().unwrap_or_else(|| "???".into()))
        .collect();
    let want_addrs: Vec<String> = want.iter().map(|(a, _)| a.to_string()).collect();
    out.push(PathCheck {
        expect: format!("{}: hops {}", path.status, want_addrs.join(", ")),
        ok: path.status == "traced" && addrs == want_addrs,
        seen: match &path.note {
            Some(n) => n.clone(),
            None => addrs.join(", "),
        },
    });
    let r2 = IpAddr::from(RoutedLab::R2).to_string();
    out.push(PathCheck {
        expect: format!("largest step at hop 2 ({r2})"),
        ok: path
            .step
            .as_ref()
            .is_some_and(|s| s.ttl == 2 && s.addr == r2),
        seen: path.step.as_ref().map_or("none".into(), |s| {
            format!("hop {} {} +{:.2} ms", s.ttl, s.addr, s.step_ms)
        }),
    });
    for (i, (addr, delay)) in want.iter().enumerate() {
        let p50 = path.hops.get(i).and_then(|h| h.p50_ms);
        out.push(PathCheck {
            expect: format!("hop {} ({addr}) p50 {delay:.0} ± {TOLERANCE_MS} ms", i + 1),
            ok: p50.is_some_and(|m| (m - delay).abs() <= TOLERANCE_MS),
            seen: p50.map_or("no answer".into(), |m| format!("{m:.2} ms")),
        });
    }
    let v = path.versus_connection.as_ref();
    let ok = v.is_some_and(|v| v.last_hop_is_target && v.diff_ms.abs() <= TOLERANCE_MS);
    out.push(PathCheck {
        expect: format!("server p50 vs the connection's RTT ± {TOLERANCE_MS} ms"),
        ok,
        seen: match (v, conn_rtt) {
            // a miss also says how the connection's RTT was measured
            (Some(v), Some(r)) if !ok => format!(
                "{:.2} vs {} ({:+.2})",
                v.last_hop_ms,
                r.describe(),
                v.diff_ms
            ),
            (Some(v), _) => format!(
                "{:.2} vs {:.2} ms ({:+.2})",
                v.last_hop_ms, v.connection_rtt_ms, v.diff_ms
            ),
            (None, Some(r)) => format!("no last hop; connection {}", r.describe()),
            (None, None) => "no connection RTT".into(),
        },
    });
    out
}
