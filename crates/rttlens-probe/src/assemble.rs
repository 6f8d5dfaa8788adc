//! Filling the report ([`rttlens_probe_model`]) from a run: each
//! attempt from its marks, TLS facts and `TCP_INFO`; the RTT its phases
//! are counted in; what each `--sequence` step saved. What the probe keeps
//! beside the report (the step each attempt set out to do, the app's own
//! durations) is an [`AttemptState`] per attempt, used again when the
//! capture is attached ([`crate::reconcile`]).

use rttlens_core::base::cost::round3;
use rttlens_probe_model::{
    AppPhase, Attempt, CaptureStatus, Check, NegotiatedTls, ProbeReport, ResponseInfo, Saved,
    TcpInfoSnapshots, Timings, Transport,
};

use crate::sequence::{ProbeStep, TfoStep, TlsStep};
use crate::stats::timing_stats;
use crate::timing::{between_ms, Marks};
use crate::ProbeConfig;

/// The app's phase durations the wire is compared with (ms).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AppDurations {
    /// `connect(2)` call → return.
    pub connect_ms: f64,
    /// Connected → handshake done.
    pub tls_ms: Option<f64>,
    /// Request about to be written → first response byte read.
    pub request_ms: f64,
    /// `connect(2)` call → last response byte read.
    pub total_from_connect_ms: f64,
}

/// The app's durations of a QUIC attempt (`--http3`) the engine's QUIC
/// ladder is compared with (ms), each between two instants that match one
/// packet of the capture (docs/probe.md "App against wire").
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct QuicDurations {
    /// `quic-handshake`: the probe's task first yielded after quinn's
    /// `connect` (the ClientHello built and queued: the first Initial
    /// leaves as the runtime drives the connection; with 0-RTT the request
    /// is written first and goes in the same datagram) → quinn said the
    /// handshake completed (it had the server's Finished and queued the
    /// client's; with 0-RTT its `ZeroRttAccepted` resolved). Building the
    /// ClientHello (≈ 0.2 ms) is before any packet, so no capture sees it.
    pub handshake_ms: f64,
    /// `request`: h3 wrote the request's HEADERS frame (it goes out when
    /// quinn next drives the connection) → the response's HEADERS decoded.
    pub request_ms: f64,
    /// `transfer`: the response's first DATA bytes read → its stream's end
    /// read (FIN); `None` with no response body.
    pub transfer_ms: Option<f64>,
    /// `total`: from the same instant as `handshake_ms` → the response's
    /// stream end read.
    pub total_ms: f64,
}

/// What the probe keeps about one attempt beside its report entry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttemptState {
    /// The step as planned.
    pub step: ProbeStep,
    /// The app's durations the wire is compared with.
    pub app: AppDurations,
    /// `--http3`: the app's durations the wire's QUIC ladder is compared
    /// with.
    pub quic: Option<QuicDurations>,
    /// `time_connect − time_namelookup` (ms): the connect RTT of last
    /// resort.
    pub connect_ms: f64,
}

/// Assemble an attempt from its marks: its report entry (phases and RTTs
/// come with [`finish`]) and the probe's state of it.
#[allow(clippy::too_many_arguments)]
pub fn attempt(
    step: ProbeStep,
    local: String,
    remote: std::net::SocketAddr,
    marks: Marks,
    https: bool,
    tls: Option<NegotiatedTls>,
    response: ResponseInfo,
    request_bytes: u64,
) -> (Attempt, AttemptState) {
    let timings = marks.timings(https);
    let mut checks = Vec::new();
    if let Some(t) = &tls {
        let how = "rustls handshake_kind()".to_string();
        match step.tls {
            Some(TlsStep::Full) => checks.push(Check {
                what: "full-handshake",
                ok: Some(t.handshake != "resumed"),
                how,
            }),
            Some(TlsStep::Resumed) => checks.push(Check {
                what: "resumed",
                ok: Some(t.handshake == "resumed"),
                how,
            }),
            Some(TlsStep::ZeroRtt) => {
                checks.push(Check {
                    what: "resumed",
                    ok: Some(t.handshake == "resumed"),
                    how,
                });
                checks.push(Check {
                    what: "early-data-accepted",
                    ok: Some(t.early_data == "accepted"),
                    how: "rustls is_early_data_accepted()".into(),
                });
            }
            // HTTP/3's `-n` attempts: checked by `crate::quic`
            Some(TlsStep::Any | TlsStep::Reuse) | None => {}
        }
    }
    match step.tfo {
        Some(TfoStep::Data) => checks.push(Check {
            what: "tfo-data-acked",
            ok: None,
            how: "not seen: no TCP_INFO and no capture".into(),
        }),
        Some(TfoStep::Cookie) => checks.push(Check {
            what: "tfo-cookie",
            ok: None,
            how: "not seen: needs the capture".into(),
        }),
        Some(TfoStep::Any) | None => {}
    }
    let state = AttemptState {
        step,
        app: AppDurations {
            connect_ms: between_ms(marks.connect_start, marks.connect),
            tls_ms: marks.appconnect.map(|a| between_ms(marks.connect, a)),
            request_ms: between_ms(
                marks.pretransfer,
                marks.starttransfer.unwrap_or(marks.total),
            ),
            total_from_connect_ms: between_ms(marks.connect_start, marks.total),
        },
        quic: None,
        connect_ms: timings.connect_ms - timings.namelookup_ms,
    };
    let attempt = Attempt {
        index: 0,
        step: step.name(),
        transport: Transport::Tcp,
        local,
        remote: remote.to_string(),
        timings,
        phases: Vec::new(),
        rtt_ms: None,
        rtt_source: None,
        tcp_info: TcpInfoSnapshots::default(),
        quic: None,
        tls,
        response,
        request_bytes,
        checks,
        connection: None,
        quic_connection: None,
        wire_vs_app: Vec::new(),
    };
    (attempt, state)
}

/// Attach the `TCP_INFO` snapshots; the end snapshot verifies TFO data
/// (`TCPI_OPT_SYN_DATA`: the SYN-ACK acknowledged the SYN's data, kernel
/// `tcp_rcv_fastopen_synack`), to be set against the wire's
/// `tfo-accepted` by [`crate::reconcile`].
pub fn attach_tcp_info(a: &mut Attempt, s: TcpInfoSnapshots) {
    a.tcp_info = s;
    if let Some(end) = s.at_end {
        for c in &mut a.checks {
            if c.what == "tfo-data-acked" {
                let acked = end.syn_data_acked();
                c.ok = Some(acked);
                c.how = if acked {
                    "TCP_INFO: SYN data acknowledged".into()
                } else {
                    let why = match end.fastopen_client_fail {
                        Some(1) => " (no cookie sent)",
                        Some(2) => " (the SYN-ACK did not acknowledge the data)",
                        Some(3) => " (no cookie in the SYN-ACK)",
                        _ => "",
                    };
                    format!("TCP_INFO: SYN data not acknowledged{why}")
                };
            }
        }
    }
}

/// Assemble the report from the attempts (`states[i]` is `attempts[i]`'s)
/// and count their phases in RTTs ([`finish`]).
pub fn report(
    cfg: &ProbeConfig,
    mut attempts: Vec<Attempt>,
    states: &[AttemptState],
    keylog: Option<Vec<u8>>,
) -> ProbeReport {
    for (i, a) in attempts.iter_mut().enumerate() {
        a.index = i;
    }
    let mut r = ProbeReport {
        url: cfg.url.clone(),
        attempts,
        stats: None,
        saved: Vec::new(),
        capture: if cfg.capture {
            // replaced once the capture is attached
            CaptureStatus::new("failed", Some("the capture was not attached".into()))
        } else if cfg.http3 {
            CaptureStatus::new(
                "off",
                Some("--no-capture: app-level timings and quinn's statistics only".into()),
            )
        } else {
            CaptureStatus::new(
                "off",
                Some(
                    "--no-capture: app-level timings and TCP_INFO only; no wire ladder, \
                     no findings, no TFO check from the wire"
                        .into(),
                ),
            )
        },
        path: None,
        connections: Vec::new(),
        quic_connections: Vec::new(),
        capture_summary: None,
        keylog,
    };
    if !cfg.sequence && r.attempts.len() > 1 {
        let ts: Vec<Timings> = r.attempts.iter().map(|a| a.timings).collect();
        r.stats = Some(timing_stats(&ts));
    }
    finish(&mut r, states, cfg.sequence);
    r
}

/// Count phases in RTTs (the wire's RTT where the capture gave one, else
/// the kernel's from `TCP_INFO`, else the run's smallest connect without
/// TFO) and, for a sequence, what each step saved.
pub fn finish(r: &mut ProbeReport, states: &[AttemptState], sequence: bool) {
    let connect_rtt = states
        .iter()
        .filter(|s| s.step.tfo.is_none())
        .map(|s| s.connect_ms)
        .filter(|m| *m > 0.0)
        .min_by(f64::total_cmp);
    for a in &mut r.attempts {
        let wire = a
            .connection
            .and_then(|i| r.connections.get(i))
            .and_then(|c| c.rtt.as_ref())
            .map(|r| r.min_ms);
        // QUIC: quinn's own minimum RTT (the stack's account; the
        // handshake is no connect RTT)
        let quic = a.quic.map(|q| q.min_rtt_ms).filter(|r| *r > 0.0);
        (a.rtt_ms, a.rtt_source) = match (wire, a.tcp_info.rtt_ms(), connect_rtt) {
            (Some(w), _, _) => (Some(w), Some("capture")),
            _ if quic.is_some() => (quic, Some("quic")),
            _ if a.transport == Transport::Quic => (None, None),
            (None, Some(k), _) => (Some(k), Some("tcp_info")),
            (None, None, Some(c)) => (Some(c), Some("connect")),
            (None, None, None) => (None, None),
        };
        fill_phases(a);
    }
    r.saved.clear();
    if sequence {
        if let Some(first) = r.attempts.first() {
            let base = first.timings.starttransfer_ms;
            for a in r.attempts.iter().skip(1) {
                let ms = round3(base - a.timings.starttransfer_ms);
                r.saved.push(Saved {
                    step: a.step.clone(),
                    starttransfer_ms: ms,
                    rtts: a
                        .rtt_ms
                        .filter(|r| *r > 0.0)
                        .map(|r| (ms / r * 100.0).round() / 100.0),
                });
            }
        }
    }
}

/// The run was a `--sequence` (its steps are named).
pub fn planned_sequence(states: &[AttemptState]) -> bool {
    states.iter().any(|s| s.step.name() != "single")
}

/// The app-level waterfall of `a` from its times, in its RTT.
fn fill_phases(a: &mut Attempt) {
    let t = &a.timings;
    let rtt = a.rtt_ms.filter(|r| *r > 0.0);
    let mut v = Vec::new();
    let mut push = |name, from: f64, to: f64| {
        let ms = round3((to - from).max(0.0));
        v.push(AppPhase {
            name,
            start_ms: from,
            ms,
            rtts: rtt.map(|r| (ms / r * 100.0).round() / 100.0),
        });
    };
    push("namelookup", 0.0, t.namelookup_ms);
    push("connect", t.namelookup_ms, t.connect_ms);
    if let Some(a) = t.appconnect_ms {
        push("tls", t.connect_ms, a);
    }
    push("request", t.pretransfer_ms, t.starttransfer_ms);
    push("transfer", t.starttransfer_ms, t.total_ms);
    a.phases = v;
}
