//! The probe's report: per connection the curl times, the phases in ms and
//! RTTs, what TLS negotiated and the verified outcomes; for `-n N` the
//! order statistics; for `--sequence` the round trips each step saved.
//! Rendered as a text waterfall ([`ProbeReport::write_text`]) or as the
//! JSON document of `docs/probe.md` ([`ProbeReport::write_json`]), in the
//! same family as `analyze`'s (`schema_version`, `tool`, `source`,
//! `connections`, `capture`).

use std::io::{self, Write};

use rttlens_core::detect::finding::round3;
use rttlens_core::pipeline::CaptureSummary;
use rttlens_core::report::ConnReport;

use crate::http::ResponseInfo;
use crate::sequence::{Check, Step, TfoStep, TlsStep};
use crate::stats::TimingStats;
use crate::timing::{between_ms, Marks, Timings};
use crate::ProbeConfig;

/// What TLS negotiated on one connection (from rustls).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TlsFacts {
    /// `TLSv1.3`, `TLSv1.2`.
    pub version: String,
    /// Cipher suite (IANA name).
    pub cipher: String,
    /// ALPN protocol, when one was agreed.
    pub alpn: Option<String>,
    /// `full`, `full-with-hello-retry` or `resumed` (rustls
    /// `handshake_kind()`).
    pub handshake: &'static str,
    /// `not-offered`, `accepted` or `rejected` (rustls
    /// `is_early_data_accepted()`).
    pub early_data: &'static str,
}

impl TlsFacts {
    /// Read the facts off a finished connection; `offered`: early data was
    /// offered.
    pub fn of(c: &rustls::ClientConnection, offered: bool) -> TlsFacts {
        use rustls::HandshakeKind;
        TlsFacts {
            version: c
                .protocol_version()
                .map(|v| match v {
                    rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".to_string(),
                    rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".to_string(),
                    other => format!("{other:?}"),
                })
                .unwrap_or_default(),
            cipher: c
                .negotiated_cipher_suite()
                .map(|s| format!("{:?}", s.suite()))
                .unwrap_or_default(),
            alpn: c
                .alpn_protocol()
                .map(|p| String::from_utf8_lossy(p).into_owned()),
            handshake: match c.handshake_kind() {
                Some(HandshakeKind::Resumed) => "resumed",
                Some(HandshakeKind::FullWithHelloRetryRequest) => "full-with-hello-retry",
                _ => "full",
            },
            early_data: match (offered, c.is_early_data_accepted()) {
                (_, true) => "accepted",
                (true, false) => "rejected",
                (false, false) => "not-offered",
            },
        }
    }
}

/// One phase of the app-level waterfall.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AppPhase {
    /// `namelookup`, `connect`, `tls`, `request` (pretransfer →
    /// starttransfer) or `transfer` (starttransfer → total).
    pub name: &'static str,
    /// Start, ms since the attempt started.
    pub start_ms: f64,
    /// Duration (ms).
    pub ms: f64,
    /// Duration in round trips (`ms / rtt_ms`); `null` when no RTT is known.
    pub rtts: Option<f64>,
}

/// One phase timed by the app and on the wire.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Agreement {
    /// `connect` (app: `connect(2)` call → return; wire: SYN → SYN-ACK),
    /// `tls` (app: connected → handshake done; wire: SYN-ACK → the client's
    /// last handshake message), `starttransfer` (app: request written →
    /// first decrypted byte; wire: first request byte → first response
    /// byte + its record's completion), `total` (app: `connect(2)` call →
    /// last byte read; wire: SYN → last response payload).
    pub phase: &'static str,
    /// The app's duration (ms).
    pub app_ms: f64,
    /// The wire's duration (ms).
    pub wire_ms: f64,
    /// `app_ms − wire_ms` (ms).
    pub diff_ms: f64,
}

impl Agreement {
    /// A comparison, rounded to µs.
    pub fn new(phase: &'static str, app_ms: f64, wire_ms: f64) -> Agreement {
        let r = round3;
        Agreement {
            phase,
            app_ms: r(app_ms),
            wire_ms: r(wire_ms),
            diff_ms: r(app_ms - wire_ms),
        }
    }
}

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

/// The kernel's view of one connection (`getsockopt(TCP_INFO)`,
/// [`rttlens_sys::TcpInfo`]: units in the field names, `_us` µs, rates in
/// bytes/s, `snd_cwnd` in segments), taken twice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TcpInfoSnapshots {
    /// When `connect(2)` returned (with TFO that is before the SYN left, so
    /// the RTT fields are still 0).
    pub after_connect: Option<rttlens_sys::TcpInfo>,
    /// When the response was complete, before the probe closed.
    pub at_end: Option<rttlens_sys::TcpInfo>,
}

impl TcpInfoSnapshots {
    /// The connection's RTT as the kernel measured it (ms): the windowed
    /// minimum (`tcpi_min_rtt`) at the end, else the smoothed RTT
    /// (`tcpi_rtt`); `None` when neither is known or both are 0.
    pub fn rtt_ms(&self) -> Option<f64> {
        let e = self.at_end?;
        let us = e.min_rtt_us.filter(|v| *v > 0).unwrap_or(e.rtt_us);
        (us > 0).then(|| f64::from(us) / 1e3)
    }
}

/// One connection of the run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Attempt {
    /// 0-based, in order.
    pub index: usize,
    /// The step (`single`, `full`, `resumed`, `0-rtt`, `tfo-cookie`,
    /// `tfo-data`, joined with `+`).
    pub step: String,
    /// Local `addr:port`.
    pub local: String,
    /// Remote `addr:port`.
    pub remote: String,
    /// curl's times (cumulative, ms since the attempt started).
    pub timings: Timings,
    /// The same as phases (durations, RTTs).
    pub phases: Vec<AppPhase>,
    /// The RTT the phases are counted in (ms).
    pub rtt_ms: Option<f64>,
    /// Where `rtt_ms` comes from: `capture` (the wire's minimum RTT),
    /// `tcp_info` (the kernel's `tcpi_min_rtt`, else `tcpi_rtt`, at the
    /// end), `connect` (the smallest `connect` duration of the run without
    /// TFO).
    pub rtt_source: Option<&'static str>,
    /// `TCP_INFO` snapshots (after connect, at the end).
    pub tcp_info: TcpInfoSnapshots,
    /// TLS facts (`null` for `http://`).
    pub tls: Option<TlsFacts>,
    /// The response.
    pub response: ResponseInfo,
    /// Request bytes written (plaintext, headers and body).
    pub request_bytes: u64,
    /// The step's outcomes and how each was verified.
    pub checks: Vec<Check>,
    /// Index of this connection in the report's `connections` (the
    /// capture's view), or `null` without capture.
    pub connection: Option<usize>,
    /// The app's phases against the wire's (empty without capture).
    pub wire_vs_app: Vec<Agreement>,
    #[serde(skip)]
    app: AppDurations,
    #[serde(skip)]
    step_kind: Option<Step>,
    #[serde(skip)]
    connect_ms: f64,
}

impl Attempt {
    /// Assemble an attempt from its marks.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        step: Step,
        local: String,
        remote: std::net::SocketAddr,
        marks: Marks,
        https: bool,
        tls: Option<TlsFacts>,
        response: ResponseInfo,
        request_bytes: u64,
    ) -> Attempt {
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
                Some(TlsStep::Any) | None => {}
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
        Attempt {
            index: 0,
            step: step.name(),
            local,
            remote: remote.to_string(),
            connect_ms: timings.connect_ms - timings.namelookup_ms,
            timings,
            phases: Vec::new(),
            rtt_ms: None,
            rtt_source: None,
            tcp_info: TcpInfoSnapshots::default(),
            tls,
            response,
            request_bytes,
            checks,
            connection: None,
            wire_vs_app: Vec::new(),
            app: AppDurations {
                connect_ms: between_ms(marks.connect_start, marks.connect),
                tls_ms: marks.appconnect.map(|a| between_ms(marks.connect, a)),
                request_ms: between_ms(
                    marks.pretransfer,
                    marks.starttransfer.unwrap_or(marks.total),
                ),
                total_from_connect_ms: between_ms(marks.connect_start, marks.total),
            },
            step_kind: Some(step),
        }
    }

    /// Attach the `TCP_INFO` snapshots; the end snapshot verifies TFO data
    /// (`TCPI_OPT_SYN_DATA`: the SYN-ACK acknowledged the SYN's data, kernel
    /// `tcp_rcv_fastopen_synack`), to be set against the wire's
    /// `tfo-accepted` by [`crate::reconcile`].
    pub fn with_tcp_info(mut self, s: TcpInfoSnapshots) -> Attempt {
        self.tcp_info = s;
        if let Some(end) = s.at_end {
            for c in &mut self.checks {
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
        self
    }

    /// The app's durations the wire is compared with.
    pub fn app_durations(&self) -> AppDurations {
        self.app
    }

    /// The step as planned.
    pub fn step_kind(&self) -> Option<Step> {
        self.step_kind
    }

    /// The check named `what`.
    pub fn check(&self, what: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.what == what)
    }

    /// The phase named `name`.
    pub fn phase(&self, name: &str) -> Option<&AppPhase> {
        self.phases.iter().find(|p| p.name == name)
    }

    fn fill_phases(&mut self) {
        let t = &self.timings;
        let rtt = self.rtt_ms.filter(|r| *r > 0.0);
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
        self.phases = v;
    }
}

/// Round trips a step saved against the run's first connection.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Saved {
    /// The step.
    pub step: String,
    /// `starttransfer` of the first connection minus this one's (ms).
    pub starttransfer_ms: f64,
    /// The same in round trips.
    pub rtts: Option<f64>,
}

/// What the self-capture could see.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CaptureStatus {
    /// `captured`, `off` (`--no-capture`), `not-permitted` (no
    /// CAP_NET_RAW: the probe ran without it) or `failed` (the capture or
    /// its analysis failed: `note` says why).
    pub status: &'static str,
    /// Packets captured.
    pub packets: u64,
    /// Interface captured on.
    pub interface: Option<String>,
    /// What this means for the report (what could not be seen).
    pub note: Option<String>,
    /// `--pcap` file written.
    pub pcap: Option<String>,
    /// Time spent starting the capture (ms); cut out of every timing.
    pub start_overhead_ms: Option<f64>,
    /// Time spent stopping it after the last response (ms); in no timing.
    pub stop_ms: Option<f64>,
    /// Packets stored shorter than they were (headers only past the
    /// memory limit).
    pub truncated: u64,
    /// Packets the kernel dropped before the capture read them (`null`
    /// when it would not say).
    pub kernel_drops: Option<u64>,
}

impl CaptureStatus {
    fn new(status: &'static str, note: Option<String>) -> CaptureStatus {
        CaptureStatus {
            status,
            packets: 0,
            interface: None,
            note,
            pcap: None,
            start_overhead_ms: None,
            stop_ms: None,
            truncated: 0,
            kernel_drops: None,
        }
    }
}

/// The whole probe report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ProbeReport {
    /// The URL asked for.
    pub url: String,
    /// The connections, in order.
    pub attempts: Vec<Attempt>,
    /// `-n N` (N > 1): order statistics of each curl time.
    pub stats: Option<TimingStats>,
    /// `--sequence`: what each later step saved against the first.
    pub saved: Vec<Saved>,
    /// The self-capture.
    pub capture: CaptureStatus,
    /// The capture's analysis, one entry per probe connection found in it.
    #[serde(skip)]
    pub connections: Vec<ConnReport>,
    /// The capture's summary.
    #[serde(skip)]
    pub capture_summary: Option<CaptureSummary>,
    /// Key log lines (for the pcapng's Decryption Secrets Block).
    #[serde(skip)]
    pub keylog: Option<Vec<u8>>,
}

impl ProbeReport {
    /// Assemble the report; RTTs are filled in by [`ProbeReport::finish`].
    pub fn build(
        cfg: &ProbeConfig,
        mut attempts: Vec<Attempt>,
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
            connections: Vec::new(),
            capture_summary: None,
            keylog,
        };
        if !cfg.sequence && r.attempts.len() > 1 {
            let ts: Vec<Timings> = r.attempts.iter().map(|a| a.timings).collect();
            r.stats = Some(TimingStats::of(&ts));
        }
        r.finish(cfg.sequence);
        r
    }

    /// Count phases in RTTs (the wire's RTT where the capture gave one,
    /// else the kernel's from `TCP_INFO`, else the run's smallest connect
    /// without TFO) and, for a sequence, what each step saved.
    pub fn finish(&mut self, sequence: bool) {
        let tfo_connect = |a: &Attempt| a.step_kind.is_some_and(|s| s.tfo.is_some());
        let connect_rtt = self
            .attempts
            .iter()
            .filter(|a| !tfo_connect(a))
            .map(|a| a.connect_ms)
            .filter(|m| *m > 0.0)
            .min_by(f64::total_cmp);
        for a in &mut self.attempts {
            let wire = a
                .connection
                .and_then(|i| self.connections.get(i))
                .and_then(|c| c.rtt.as_ref())
                .map(|r| r.min_ms);
            (a.rtt_ms, a.rtt_source) = match (wire, a.tcp_info.rtt_ms(), connect_rtt) {
                (Some(w), _, _) => (Some(w), Some("capture")),
                (None, Some(k), _) => (Some(k), Some("tcp_info")),
                (None, None, Some(c)) => (Some(c), Some("connect")),
                (None, None, None) => (None, None),
            };
            a.fill_phases();
        }
        self.saved.clear();
        if sequence {
            if let Some(first) = self.attempts.first() {
                let base = first.timings.starttransfer_ms;
                for a in self.attempts.iter().skip(1) {
                    let ms = round3(base - a.timings.starttransfer_ms);
                    self.saved.push(Saved {
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
    pub fn saved_was_planned(&self) -> bool {
        self.attempts
            .iter()
            .any(|a| a.step_kind.is_some_and(|s| s.name() != "single"))
    }

    /// Every check of every attempt held (checks that could not be seen
    /// count as holding).
    pub fn all_verified(&self) -> bool {
        self.attempts
            .iter()
            .flat_map(|a| &a.checks)
            .all(|c| c.ok != Some(false))
    }

    /// The JSON document (docs/probe.md).
    ///
    /// # Errors
    /// Writing failed.
    pub fn write_json(&self, w: &mut dyn Write) -> io::Result<()> {
        #[derive(serde::Serialize)]
        struct Doc<'a> {
            schema_version: u32,
            tool: String,
            source: &'a str,
            probe: &'a ProbeReport,
            connections: &'a [ConnReport],
            capture: Option<&'a CaptureSummary>,
        }
        let doc = Doc {
            schema_version: rttlens_report::json::SCHEMA_VERSION,
            tool: format!("rttlens {}", env!("CARGO_PKG_VERSION")),
            source: &self.url,
            probe: self,
            connections: &self.connections,
            capture: self.capture_summary.as_ref(),
        };
        serde_json::to_writer(&mut *w, &doc).map_err(io::Error::other)?;
        writeln!(w)
    }

    /// The text report: per connection a waterfall (ms and RTTs per phase),
    /// TLS facts and checks, then the capture's findings; the statistics
    /// and savings at the end.
    ///
    /// # Errors
    /// Writing failed.
    pub fn write_text(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(w, "probe {}", self.url)?;
        for a in &self.attempts {
            writeln!(w)?;
            let rtt = match (a.rtt_ms, a.rtt_source) {
                (Some(r), Some(s)) => format!("RTT {r:.2} ms ({s})"),
                _ => "RTT unknown".into(),
            };
            writeln!(
                w,
                "connection {} · {} · {} → {} · {} {} · {} B · {rtt}",
                a.index,
                a.step,
                a.local,
                a.remote,
                a.response.version,
                a.response.status,
                a.response.body_bytes
            )?;
            let total = a.timings.total_ms.max(0.001);
            const WIDTH: f64 = 30.0;
            writeln!(
                w,
                "  {:<12} {:>9} {:>9} {:>6}  ",
                "phase", "start ms", "ms", "RTTs"
            )?;
            for p in &a.phases {
                let from = ((p.start_ms / total) * WIDTH).round() as usize;
                let len = (((p.ms / total) * WIDTH).round() as usize).max(usize::from(p.ms > 0.0));
                let bar = format!("{}{}", " ".repeat(from), "█".repeat(len));
                let rtts = p.rtts.map_or("-".into(), |r| format!("{r:.2}"));
                writeln!(
                    w,
                    "  {:<12} {:>9.2} {:>9.2} {:>6}  |{bar}",
                    p.name, p.start_ms, p.ms, rtts
                )?;
            }
            let total_rtts = a
                .rtt_ms
                .filter(|r| *r > 0.0)
                .map_or("-".into(), |r| format!("{:.2}", a.timings.total_ms / r));
            writeln!(
                w,
                "  {:<12} {:>9} {:>9.2} {:>6}",
                "total", "", a.timings.total_ms, total_rtts
            )?;
            if let Some(t) = &a.tls {
                writeln!(
                    w,
                    "  {} {} · ALPN {} · {} handshake · early data {}",
                    t.version,
                    t.cipher,
                    t.alpn.as_deref().unwrap_or("none"),
                    t.handshake,
                    t.early_data
                )?;
            }
            if let Some(t) = &a.tcp_info.at_end {
                writeln!(w, "  {}", tcp_info_line(t))?;
            }
            for c in &a.checks {
                let ok = match c.ok {
                    Some(true) => "verified",
                    Some(false) => "NOT verified",
                    None => "unknown",
                };
                writeln!(w, "  check {}: {ok} ({})", c.what, c.how)?;
            }
            if !a.wire_vs_app.is_empty() {
                let parts: Vec<String> = a
                    .wire_vs_app
                    .iter()
                    .map(|g| format!("{} {:+.2} ms", g.phase, g.diff_ms))
                    .collect();
                writeln!(w, "  app − wire: {}", parts.join(", "))?;
            }
            if let Some(c) = a.connection.and_then(|i| self.connections.get(i)) {
                writeln!(w, "  --- from the probe's own capture ---")?;
                let mut buf = Vec::new();
                rttlens_report::text::write_connection(&mut buf, c, false)?;
                for line in String::from_utf8_lossy(&buf).lines() {
                    writeln!(w, "  {line}")?;
                }
            }
        }
        if !self.saved.is_empty() {
            writeln!(w)?;
            writeln!(w, "saved against connection 0 (starttransfer):")?;
            for s in &self.saved {
                let r = s.rtts.map_or(String::new(), |r| format!(" ({r:.2} RTT)"));
                writeln!(w, "  {:<20} {:>9.2} ms{r}", s.step, s.starttransfer_ms)?;
            }
        }
        if let Some(st) = &self.stats {
            writeln!(w)?;
            writeln!(w, "{} attempts (ms):", st.count)?;
            writeln!(
                w,
                "  {:<14} {:>9} {:>9} {:>9} {:>9}",
                "time", "min", "median", "p90", "max"
            )?;
            for (n, s) in st.rows() {
                writeln!(
                    w,
                    "  {n:<14} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
                    s.min_ms, s.median_ms, s.p90_ms, s.max_ms
                )?;
            }
        }
        writeln!(w)?;
        let mut line = format!("capture: {}", self.capture.status);
        if self.capture.status == "captured" {
            line.push_str(&format!(
                " ({} packets on {})",
                self.capture.packets,
                self.capture.interface.as_deref().unwrap_or("?")
            ));
        }
        if let Some(n) = &self.capture.note {
            line.push_str(&format!(" · {n}"));
        }
        if let Some(p) = &self.capture.pcap {
            line.push_str(&format!(" · written to {p}"));
        }
        writeln!(w, "{line}")
    }
}

/// `TCP_INFO` in one line: RTTs in ms, cwnd in segments, delivery rate in
/// Mbit/s, the chrono times in ms.
fn tcp_info_line(t: &rttlens_sys::TcpInfo) -> String {
    let ms = |us: u64| us as f64 / 1e3;
    let mut s = format!(
        "TCP_INFO: rtt {:.2} ms (min {}) · cwnd {} · retrans {}",
        ms(u64::from(t.rtt_us)),
        t.min_rtt_us
            .map_or("-".into(), |m| format!("{:.2}", ms(u64::from(m)))),
        t.snd_cwnd,
        t.total_retrans
    );
    if let Some(r) = t.delivery_rate {
        s.push_str(&format!(" · delivery {:.1} Mbit/s", r as f64 * 8.0 / 1e6));
    }
    if let (Some(b), Some(r), Some(sb)) = (t.busy_time_us, t.rwnd_limited_us, t.sndbuf_limited_us) {
        s.push_str(&format!(
            " · busy {:.1} ms, rwnd-limited {:.1} ms, sndbuf-limited {:.1} ms",
            ms(b),
            ms(r),
            ms(sb)
        ));
    }
    if t.syn_data_acked() {
        s.push_str(" · SYN data acked");
    }
    s
}
