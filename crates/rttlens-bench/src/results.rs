//! What a run measured, as the JSON document (`rttlens-bench/1`, see
//! `docs/bench.md`) and as text; `--compare` of two documents.

use std::io::{self, Write};

use crate::conn::ErrorClass;
use crate::mix::Kind;
use rttlens_probe::ProbePhase;

/// The `schema` value of the JSON document.
pub const SCHEMA: &str = "rttlens-bench/1";

/// A run's results.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BenchReport {
    /// [`SCHEMA`].
    pub schema: String,
    /// The URL.
    pub target: String,
    /// The address connected to.
    pub addr: String,
    /// Set when the target was a lab server.
    pub lab: Option<LabInfo>,
    /// How connections arrived.
    pub load: LoadInfo,
    /// The mix, as `--mix` takes it.
    pub mix: String,
    /// `--tls`: `"1.2"`, `"1.3"`, or `null` for both.
    pub tls_version: Option<String>,
    /// Requests per connection (0: handshakes only).
    pub requests_per_connection: u32,
    /// Worker threads of the generator.
    pub threads: usize,
    /// Stopped by Ctrl-C: the figures cover what was measured until then.
    pub interrupted: bool,
    /// From the first intended start to the last connection's end (ms).
    pub elapsed_ms: f64,
    /// Connection counts.
    pub connections: Counts,
    /// Successful handshakes per second.
    pub handshakes_per_s: Rates,
    /// Every kind together; latencies of successful connections (ms).
    pub phases: PhaseLatencies,
    /// Per kind attempted.
    pub kinds: Vec<KindReport>,
    /// Failures by class and phase, most frequent first.
    pub errors: Vec<ErrorCount>,
    /// The generator's own CPU time.
    pub client_cpu: Cpu,
    /// The server's CPU time (lab servers, `--server-pid`).
    pub server_cpu: Option<Cpu>,
    /// The lab's delay link (`--lab`): its CPU time and how late it
    /// forwarded packets.
    pub link: Option<LinkReport>,
    /// Session tickets (TLS 1.3 NewSessionTicket messages).
    pub tickets: Tickets,
    /// What the reader should know (the generator fell behind, the ticket
    /// pool ran dry, closed loop hides stalls, …).
    pub notes: Vec<String>,
}

/// The lab target.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LabInfo {
    /// `nginx`, `go` or `builtin`.
    pub server: String,
    /// The RTT of the lab link (ms).
    pub rtt_ms: f64,
    /// The server's certificate key: `p256` (ECDSA) or `rsa2048`.
    pub cert: String,
    /// The server's listen backlog (`--lab-backlog`; Go's is the server
    /// namespace's `net.core.somaxconn`). `None` in results written
    /// before it was reported.
    #[serde(default)]
    pub backlog: Option<u32>,
    /// The server namespace's `net.ipv4.tcp_syncookies` during the run
    /// (`--lab-syncookies`, else the kernel's default).
    #[serde(default)]
    pub syncookies: Option<u8>,
    /// Whether the client namespace's TCP offered timestamps
    /// (`net.ipv4.tcp_timestamps`, `--lab-client-timestamps`).
    #[serde(default)]
    pub client_timestamps: Option<bool>,
    /// The server namespace's listen-queue counters after the run
    /// (warm-up included); `None` when they could not be read.
    #[serde(default)]
    pub server_tcp: Option<ListenCounters>,
}

/// What the server namespace's kernel counted at its listeners
/// (`/proc/net/netstat`, `TcpExt`), over the whole lab run: the ground
/// truth for accept-queue overflows and SYN cookies in its capture.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ListenCounters {
    /// `ListenOverflows`: a SYN or a handshake's last ACK dropped because
    /// the accept queue was full.
    pub listen_overflows: u64,
    /// `ListenDrops`: every segment a listener dropped (overflows
    /// included).
    pub listen_drops: u64,
    /// `TCPReqQFullDrop`: SYNs dropped because the SYN queue was full and
    /// SYN cookies were off.
    pub syn_queue_full_drops: u64,
    /// `TCPReqQFullDoCookies`: SYN cookies sent because the SYN queue was
    /// full.
    pub syn_queue_full_cookies: u64,
    /// `SyncookiesSent`: SYN-ACKs carrying a cookie.
    pub syncookies_sent: u64,
    /// `SyncookiesRecv`: ACKs with a valid cookie.
    pub syncookies_recv: u64,
    /// `SyncookiesFailed`: ACKs whose cookie did not check.
    pub syncookies_failed: u64,
    /// `TCPSynRetrans`: SYN-ACKs the server retransmitted.
    pub synack_retransmits: u64,
}

impl ListenCounters {
    /// Parse `/proc/net/netstat` (pairs of lines, names then values).
    pub fn parse(netstat: &str) -> Option<ListenCounters> {
        let lines: Vec<&str> = netstat.lines().collect();
        let (names, values) = lines.chunks(2).find_map(|p| match p {
            [n, v] if n.starts_with("TcpExt:") && v.starts_with("TcpExt:") => Some((*n, *v)),
            _ => None,
        })?;
        let map: std::collections::HashMap<&str, u64> = names
            .split_whitespace()
            .zip(values.split_whitespace())
            .skip(1)
            .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
            .collect();
        let get = |k: &str| map.get(k).copied().unwrap_or(0);
        Some(ListenCounters {
            listen_overflows: get("ListenOverflows"),
            listen_drops: get("ListenDrops"),
            syn_queue_full_drops: get("TCPReqQFullDrop"),
            syn_queue_full_cookies: get("TCPReqQFullDoCookies"),
            syncookies_sent: get("SyncookiesSent"),
            syncookies_recv: get("SyncookiesRecv"),
            syncookies_failed: get("SyncookiesFailed"),
            synack_retransmits: get("TCPSynRetrans"),
        })
    }
}

/// Open or closed loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadMode {
    /// Arrivals on a fixed schedule (`--rate`).
    Open,
    /// A fixed number of connections at a time (`-c`).
    Closed,
}

/// How the load was shaped.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoadInfo {
    /// Open or closed loop.
    pub mode: LoadMode,
    /// Open loop: arrivals per second.
    pub rate_per_s: Option<f64>,
    /// Closed loop: connections at a time.
    pub concurrency: Option<u32>,
    /// `--duration` (ms).
    pub duration_ms: Option<f64>,
    /// `-n`.
    pub count: Option<u64>,
    /// `--timeout` per connection (ms).
    pub timeout_ms: f64,
    /// `--max-in-flight`.
    pub max_in_flight: usize,
}

/// Connection counts.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    /// Connections that finished, failed or were not started.
    pub finished: u64,
    /// Connections whose handshake (and requests) completed.
    pub succeeded: u64,
    /// Connections that failed (every class, `not-started` included).
    pub failed: u64,
    /// Still open when the run was stopped (Ctrl-C), not counted elsewhere.
    pub abandoned: u64,
}

/// Handshake rates (per second).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rates {
    /// Open loop: the arrival rate asked for.
    pub offered: Option<f64>,
    /// Successful connections per second of `elapsed_ms`.
    pub achieved: f64,
}

/// Latency percentiles of one phase (ms).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LatencySummary {
    /// Samples.
    pub count: u64,
    /// Smallest.
    pub min_ms: f64,
    /// Mean.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p99_9_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

/// The phases of a connection, each `null` when not measured.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PhaseLatencies {
    /// Intended start → `connect(2)`: how late the generator started it.
    pub start_lag: Option<LatencySummary>,
    /// TCP handshake.
    pub connect: Option<LatencySummary>,
    /// TLS handshake: established socket → handshake complete.
    pub tls: Option<LatencySummary>,
    /// Request written → first response byte (first request).
    pub ttfb: Option<LatencySummary>,
    /// Intended start → handshake complete, or last response read.
    pub total: Option<LatencySummary>,
}

impl PhaseLatencies {
    /// The phases with their names, in report order.
    pub fn named(&self) -> [(&'static str, Option<&LatencySummary>); 5] {
        [
            ("connect", self.connect.as_ref()),
            ("tls", self.tls.as_ref()),
            ("ttfb", self.ttfb.as_ref()),
            ("total", self.total.as_ref()),
            ("start lag", self.start_lag.as_ref()),
        ]
    }
}

/// One kind's results.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KindReport {
    /// The kind attempted.
    pub kind: Kind,
    /// Connections of this kind.
    pub attempted: u64,
    /// Of which succeeded.
    pub succeeded: u64,
    /// Of the successful, how many resumed a session (verified by rustls).
    pub resumed: u64,
    /// Of the successful, how many sent their request as early data.
    pub early_data_sent: u64,
    /// Of the successful, how many had their early data accepted.
    pub early_data_accepted: u64,
    /// Latencies of this kind's successful connections.
    pub phases: PhaseLatencies,
}

/// Failures of one class in one phase.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ErrorCount {
    /// The class.
    pub class: ErrorClass,
    /// The phase.
    pub phase: ProbePhase,
    /// How many.
    pub count: u64,
    /// The first message.
    pub example: String,
}

/// CPU time of the generator or of the server over the measured run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cpu {
    /// What was measured (`rttlens bench, 2 threads`, `nginx pid 1234`).
    pub what: String,
    /// User + system CPU seconds (`/proc/…/stat` utime + stime).
    pub seconds: f64,
    /// CPU per successful connection (µs).
    pub per_handshake_us: Option<f64>,
    /// CPU seconds per second of the run: 1.0 = one core busy all along.
    pub cores_busy: f64,
}

/// The lab's userspace delay link under the load.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinkReport {
    /// CPU time of its threads.
    pub cpu: Cpu,
    /// The busiest thread's CPU seconds per second: near 1.0 the link is
    /// the bottleneck (one thread forwards every packet).
    pub busiest_thread_cores_busy: f64,
    /// Median of how late a packet left the link against its deadline
    /// (ms), over the whole lab (warm-up included): what a phase's p50
    /// can have gained from the link rather than the server.
    pub late_p50_ms: Option<f64>,
    /// 99th percentile of how late a packet left the link against its
    /// deadline (ms), over the whole lab (warm-up included).
    pub late_p99_ms: Option<f64>,
    /// The latest a packet left (ms).
    pub late_max_ms: Option<f64>,
}

/// Session tickets.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tickets {
    /// NewSessionTicket messages received (warm-up included).
    pub received: u64,
    /// Handed to resumed and 0-RTT connections.
    pub used: u64,
    /// Left in the pool at the end.
    pub left: usize,
}

fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1} %", 100.0 * part as f64 / whole as f64)
    }
}

impl BenchReport {
    /// The load in words: `open loop, 2000/s for 10 s`.
    pub fn load_text(&self) -> String {
        let l = &self.load;
        let mut s = match l.mode {
            LoadMode::Open => format!("open loop, {}/s", l.rate_per_s.unwrap_or(0.0)),
            LoadMode::Closed => format!("closed loop, {} at a time", l.concurrency.unwrap_or(0)),
        };
        if let Some(d) = l.duration_ms {
            s.push_str(&format!(" for {} s", d / 1000.0));
        }
        if let Some(n) = l.count {
            s.push_str(&format!(", {n} connections"));
        }
        s
    }

    /// The report for people.
    ///
    /// # Errors
    /// Writing failed.
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        let what = if self.requests_per_connection == 0 {
            "handshakes only".to_string()
        } else {
            format!("{} request(s) per connection", self.requests_per_connection)
        };
        let tls = self
            .tls_version
            .as_ref()
            .map_or("TLS 1.3 or 1.2".to_string(), |v| format!("TLS {v}"));
        writeln!(out, "rttlens bench {} ({})", self.target, self.addr)?;
        if let Some(l) = &self.lab {
            writeln!(
                out,
                "lab       {} in the lab's server namespace ({} certificate), RTT {} ms{}{}{}",
                l.server,
                l.cert,
                l.rtt_ms,
                l.backlog
                    .map(|b| format!(", backlog {b}"))
                    .unwrap_or_default(),
                l.syncookies
                    .map(|c| format!(", tcp_syncookies {c}"))
                    .unwrap_or_default(),
                if l.client_timestamps == Some(false) {
                    ", client without TCP timestamps"
                } else {
                    ""
                }
            )?;
        }
        writeln!(
            out,
            "load      {}; mix {}; {tls}; {what}; {} threads",
            self.load_text(),
            self.mix,
            self.threads
        )?;
        let c = &self.connections;
        let offered = self
            .handshakes_per_s
            .offered
            .map(|o| format!(" of {o} offered"))
            .unwrap_or_default();
        writeln!(
            out,
            "result    {} connections in {:.2} s{}: {} ok, {} failed{}; {:.1} handshakes/s achieved{offered}",
            c.finished,
            self.elapsed_ms / 1000.0,
            if self.interrupted { " (interrupted)" } else { "" },
            c.succeeded,
            c.failed,
            if c.abandoned > 0 { format!(", {} abandoned", c.abandoned) } else { String::new() },
            self.handshakes_per_s.achieved,
        )?;
        writeln!(out)?;
        let from = match self.load.mode {
            LoadMode::Open => "total from the intended start (open loop)",
            LoadMode::Closed => "total from the actual start (closed loop)",
        };
        writeln!(out, "latency (ms) of successful connections; {from}")?;
        writeln!(
            out,
            "{:<8} {:<10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "kind", "phase", "count", "p50", "p90", "p99", "p99.9", "max", "mean"
        )?;
        let mut rows: Vec<(String, &PhaseLatencies)> = vec![("all".into(), &self.phases)];
        if self.kinds.len() > 1 {
            rows.extend(
                self.kinds
                    .iter()
                    .map(|k| (k.kind.name().to_string(), &k.phases)),
            );
        }
        for (name, p) in rows {
            let mut first = true;
            for (phase, s) in p.named() {
                let Some(s) = s else { continue };
                if phase == "start lag" && name != "all" {
                    continue;
                }
                writeln!(
                    out,
                    "{:<8} {:<10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
                    if first { name.as_str() } else { "" },
                    phase,
                    s.count,
                    ms(s.p50_ms),
                    ms(s.p90_ms),
                    ms(s.p99_ms),
                    ms(s.p99_9_ms),
                    ms(s.max_ms),
                    ms(s.mean_ms)
                )?;
                first = false;
            }
        }
        writeln!(out)?;
        let mut verified = Vec::new();
        for k in &self.kinds {
            match k.kind {
                Kind::Full => {}
                Kind::Resumed => verified.push(format!(
                    "resumed {} of {} ({})",
                    k.resumed,
                    k.succeeded,
                    pct(k.resumed, k.succeeded)
                )),
                Kind::ZeroRtt => verified.push(format!(
                    "0-RTT: early data sent {} of {}, accepted {} ({}); resumed {}",
                    k.early_data_sent,
                    k.succeeded,
                    k.early_data_accepted,
                    pct(k.early_data_accepted, k.succeeded),
                    k.resumed
                )),
            }
        }
        if !verified.is_empty() {
            writeln!(out, "verified  {}", verified.join("; "))?;
        }
        if self.errors.is_empty() {
            writeln!(out, "errors    none")?;
        }
        for (i, e) in self.errors.iter().enumerate() {
            writeln!(
                out,
                "{:<9} {} in {}: {} ({}), e.g. {}",
                if i == 0 { "errors" } else { "" },
                e.class.name(),
                e.phase,
                e.count,
                pct(e.count, c.finished),
                e.example
            )?;
        }
        for cpu in std::iter::once(&self.client_cpu).chain(&self.server_cpu) {
            let label = if std::ptr::eq(cpu, &self.client_cpu) {
                "client"
            } else {
                "server"
            };
            writeln!(
                out,
                "{label:<9} {}: {:.2} CPU-s{}, {:.2} cores busy",
                cpu.what,
                cpu.seconds,
                cpu.per_handshake_us
                    .map(|u| format!(" = {u:.0} µs per connection"))
                    .unwrap_or_default(),
                cpu.cores_busy
            )?;
        }
        if let Some(l) = &self.link {
            writeln!(
                out,
                "link      {}: {:.2} CPU-s, busiest thread {:.2} cores busy; packets left late by p50 {} ms, p99 {} ms, max {} ms",
                l.cpu.what,
                l.cpu.seconds,
                l.busiest_thread_cores_busy,
                l.late_p50_ms.map_or("-".into(), |v| format!("{v:.2}")),
                l.late_p99_ms.map_or("-".into(), |v| format!("{v:.2}")),
                l.late_max_ms.map_or("-".into(), |v| format!("{v:.1}")),
            )?;
        }
        if let Some(k) = self.lab.as_ref().and_then(|l| l.server_tcp.as_ref()) {
            writeln!(
                out,
                "listen    server namespace: {} accept-queue overflows ({} listener drops), {} SYN-queue drops; \
                 {} SYN cookies sent ({} SYN queue full), {} received, {} failed; {} SYN-ACK retransmissions",
                k.listen_overflows,
                k.listen_drops,
                k.syn_queue_full_drops,
                k.syncookies_sent,
                k.syn_queue_full_cookies,
                k.syncookies_recv,
                k.syncookies_failed,
                k.synack_retransmits
            )?;
        }
        let t = &self.tickets;
        if t.received > 0 || t.used > 0 {
            writeln!(
                out,
                "tickets   {} received, {} used, {} left",
                t.received, t.used, t.left
            )?;
        }
        for n in &self.notes {
            writeln!(out, "note      {n}")?;
        }
        Ok(())
    }
}

/// `--compare A B`: the figures of two runs side by side with the change.
///
/// # Errors
/// Writing failed.
pub fn write_compare(a: &BenchReport, b: &BenchReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "A  {} · {} · mix {}", a.target, a.load_text(), a.mix)?;
    writeln!(out, "B  {} · {} · mix {}", b.target, b.load_text(), b.mix)?;
    if a.load != b.load || a.mix != b.mix || a.requests_per_connection != b.requests_per_connection
    {
        writeln!(
            out,
            "note: the runs differ in load, mix or requests: compare with care"
        )?;
    }
    writeln!(out)?;
    writeln!(out, "{:<28} {:>12} {:>12} {:>10}", "", "A", "B", "change")?;
    let row = |out: &mut dyn Write, name: &str, x: Option<f64>, y: Option<f64>| -> io::Result<()> {
        let f = |v: Option<f64>| v.map_or("-".to_string(), ms);
        let change = match (x, y) {
            (Some(x), Some(y)) if x > 0.0 => format!("{:+.1} %", 100.0 * (y - x) / x),
            _ => "-".into(),
        };
        writeln!(out, "{name:<28} {:>12} {:>12} {change:>10}", f(x), f(y))
    };
    row(
        out,
        "handshakes/s achieved",
        Some(a.handshakes_per_s.achieved),
        Some(b.handshakes_per_s.achieved),
    )?;
    let fail = |r: &BenchReport| {
        100.0 * r.connections.failed as f64 / r.connections.finished.max(1) as f64
    };
    row(out, "failed (%)", Some(fail(a)), Some(fail(b)))?;
    type Quantile = fn(&LatencySummary) -> f64;
    let quantiles: [(&str, Quantile); 5] = [
        ("p50", |s| s.p50_ms),
        ("p90", |s| s.p90_ms),
        ("p99", |s| s.p99_ms),
        ("p99.9", |s| s.p99_9_ms),
        ("max", |s| s.max_ms),
    ];
    let mut sections: Vec<(String, &PhaseLatencies, &PhaseLatencies)> =
        vec![("all".into(), &a.phases, &b.phases)];
    for ka in &a.kinds {
        if let Some(kb) = b.kinds.iter().find(|k| k.kind == ka.kind) {
            if a.kinds.len() > 1 || b.kinds.len() > 1 {
                sections.push((ka.kind.name().into(), &ka.phases, &kb.phases));
            }
        }
    }
    for (kind, pa, pb) in sections {
        for ((phase, sa), (_, sb)) in pa.named().into_iter().zip(pb.named()) {
            if sa.is_none() && sb.is_none() || phase == "start lag" && kind != "all" {
                continue;
            }
            for (q, get) in quantiles {
                row(
                    out,
                    &format!("{kind} {phase} {q} (ms)"),
                    sa.map(get),
                    sb.map(get),
                )?;
            }
        }
    }
    let share = |r: &BenchReport, kind: Kind| {
        r.kinds.iter().find(|k| k.kind == kind).map(|k| {
            let v = if kind == Kind::ZeroRtt {
                k.early_data_accepted
            } else {
                k.resumed
            };
            100.0 * v as f64 / k.succeeded.max(1) as f64
        })
    };
    row(
        out,
        "resumed verified (%)",
        share(a, Kind::Resumed),
        share(b, Kind::Resumed),
    )?;
    row(
        out,
        "0-RTT accepted (%)",
        share(a, Kind::ZeroRtt),
        share(b, Kind::ZeroRtt),
    )?;
    row(
        out,
        "client CPU per conn (µs)",
        a.client_cpu.per_handshake_us,
        b.client_cpu.per_handshake_us,
    )?;
    row(
        out,
        "server CPU per conn (µs)",
        a.server_cpu.as_ref().and_then(|c| c.per_handshake_us),
        b.server_cpu.as_ref().and_then(|c| c.per_handshake_us),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::ListenCounters;

    #[test]
    fn listen_counters_come_from_the_tcpext_lines() {
        let netstat = "TcpExt: SyncookiesSent SyncookiesRecv SyncookiesFailed ListenOverflows ListenDrops TCPSynRetrans TCPReqQFullDoCookies TCPReqQFullDrop\n\
                       TcpExt: 217 256 1 86 90 3 220 4\n\
                       IpExt: InNoRoutes ListenOverflows\n\
                       IpExt: 9 9\n";
        let k = ListenCounters::parse(netstat).expect("TcpExt");
        assert_eq!(
            k,
            ListenCounters {
                listen_overflows: 86,
                listen_drops: 90,
                syn_queue_full_drops: 4,
                syn_queue_full_cookies: 220,
                syncookies_sent: 217,
                syncookies_recv: 256,
                syncookies_failed: 1,
                synack_retransmits: 3,
            }
        );
        assert_eq!(ListenCounters::parse("IpExt: A\nIpExt: 1\n"), None);
    }
}
