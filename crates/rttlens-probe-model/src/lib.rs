//! # rttlens-probe-model: the probe's report as plain data
//!
//! The report of `rttlens probe`: per connection the curl times, the
//! phases in ms and RTTs, what TLS negotiated and the verified outcomes;
//! for `-n N` the order statistics; for `--sequence` the round trips each
//! step saved. The probe (crate `rttlens-probe`) fills these types;
//! `rttlens-report` renders them (`rttlens_report::probe`: a text
//! waterfall, or the JSON document of `docs/probe.md`), and the exporter
//! (`rttlens-serve`) reads them. Its own crate so that the producer and the
//! renderer both depend on it and neither on the other.
//!
//! [`TlsVersion`] is here too: the TLS versions the probe and the bench ask
//! for (`--tls`) and the lab's servers offer (`--tls-versions`), one plain
//! type that both ends take without the lab's network code.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

use rttlens_core::base::cost::round3;
use rttlens_core::model::{ConnReport, QuicReport};
use rttlens_core::pipeline::CaptureSummary;

pub use path::{PathHop, PathReport, PathStep, PathVersus};
/// `getsockopt(TCP_INFO)` decoded (the type of [`TcpInfoSnapshots`]).
pub use rttlens_sys::TcpInfo;
pub use tls_version::TlsVersion;

mod path;
mod tls_version;

/// curl's `-w` times, in ms since the attempt started (before the name
/// lookup), rounded to µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Timings {
    /// Name resolved (`time_namelookup`).
    pub namelookup_ms: f64,
    /// TCP connected (`time_connect`): `connect(2)` returned. With TFO and
    /// a cookie it returns at once and the SYN leaves with the first write.
    pub connect_ms: f64,
    /// TLS handshake complete (`time_appconnect`); `null` without TLS. With
    /// 0-RTT it comes after `pretransfer` (the request went first).
    pub appconnect_ms: Option<f64>,
    /// About to send the request (`time_pretransfer`).
    pub pretransfer_ms: f64,
    /// First response byte read (`time_starttransfer`, TTFB); with TLS this
    /// is the first *decrypted* byte, as in curl; with HTTP/2 the moment the
    /// response's HEADERS were parsed.
    pub starttransfer_ms: f64,
    /// Same instant as `starttransfer_ms` with TLS (the first plaintext
    /// byte rustls returned); `null` without TLS.
    pub first_decrypted_byte_ms: Option<f64>,
    /// Response complete (`time_total`).
    pub total_ms: f64,
}

/// What came back.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ResponseInfo {
    /// HTTP status code.
    pub status: u16,
    /// `HTTP/1.1` etc.
    pub version: String,
    /// Body bytes received (after transfer decoding).
    pub body_bytes: u64,
    /// The `Location` header of a redirect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

/// One verified (or not verifiable) outcome.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Check {
    /// What was checked: `full-handshake`, `resumed`, `early-data-accepted`,
    /// `tfo-cookie`, `tfo-data-acked`.
    pub what: &'static str,
    /// `true` held, `false` did not, `null` could not be seen (say why in
    /// `how`).
    pub ok: Option<bool>,
    /// Where the answer comes from (`rustls handshake_kind()`,
    /// `TCP_INFO tcpi_options & TCPI_OPT_SYN_DATA`, `capture: tfo-accepted`).
    pub how: String,
}

/// What TLS negotiated on one connection (from rustls).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NegotiatedTls {
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
    /// The server's certificates' expiry (rttlens serve's `probe_ssl_*`
    /// series); not in the JSON report.
    #[serde(skip)]
    pub certs: Option<PeerCerts>,
}

/// When the server's certificates expire, as blackbox_exporter reads them
/// (its `prober/tls.go`), in Unix seconds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PeerCerts {
    /// The earliest `notAfter` of the certificates the server presented
    /// (Go's `PeerCertificates`: the leaf and the intermediates it sent);
    /// `None` when none could be read.
    pub earliest_expiry: Option<i64>,
    /// The earliest `notAfter` of the verified chain (the leaf, the
    /// intermediates the verifier used and the trust anchor's own
    /// certificate), the latest such over the chains built (one here);
    /// `None` when no chain was verified (`insecure`).
    pub verified_chain_expiry: Option<i64>,
    /// The leaf certificate as blackbox labels it (its
    /// `probe_ssl_last_chain_info`); `None` when it could not be read.
    pub leaf: Option<LeafCert>,
}

/// The server's leaf certificate in the strings blackbox_exporter gives
/// its `probe_ssl_last_chain_info` labels (Go's formatting).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LeafCert {
    /// SHA-256 of the certificate's DER, lowercase hex
    /// (`fingerprint_sha256`).
    pub fingerprint_sha256: String,
    /// The subject as Go's `pkix.Name.String()` writes it
    /// (`CN=example.com,O=Example,C=US`: Go's order, RFC 4514 escaping).
    pub subject: String,
    /// The issuer, the same way.
    pub issuer: String,
    /// The subject alternative names of DNS type, in order
    /// (`subjectalternative`: joined with `,`).
    pub dns_names: Vec<String>,
    /// The serial number's magnitude in lowercase hex, leading zero bytes
    /// dropped (`serialnumber`: Go's `%x` of `SerialNumber.Bytes()`).
    pub serial_hex: String,
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
    /// last byte read; wire: SYN → last response payload). Over QUIC
    /// (`--http3`): `quic-handshake` (app: the probe first yields after
    /// quinn's connect → quinn's handshake complete; wire: the client's
    /// first Initial → its Finished), `request` (app: h3 wrote the
    /// request's HEADERS → response HEADERS decoded; wire: the packet with the request's HEADERS → the one
    /// completing the response's), `transfer` (app: first DATA bytes read
    /// → stream end read; wire: the packet with the first DATA byte → the
    /// one with the FIN), `total` (app: the probe first yields after
    /// quinn's connect → stream end read; wire: first Initial → the FIN).
    /// docs/probe.md "App against wire" says why each instant.
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

/// The kernel's view of one connection (`getsockopt(TCP_INFO)`,
/// [`rttlens_sys::TcpInfo`]: units in the field names, `_us` µs, rates in
/// bytes/s, `snd_cwnd` in segments), taken twice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TcpInfoSnapshots {
    /// When `connect(2)` returned (with TFO that is before the SYN left, so
    /// the RTT fields are still 0).
    pub after_connect: Option<TcpInfo>,
    /// When the response was complete, before the probe closed.
    pub at_end: Option<TcpInfo>,
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

/// The transport an attempt ran over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// TCP (with TLS for `https://`): the default, left out of the JSON so
    /// TCP reports read as they always did.
    #[default]
    Tcp,
    /// QUIC over UDP (`--http3`, RFC 9000), HTTP/3 on top (RFC 9114).
    Quic,
}

impl Transport {
    /// `true` for TCP (serde's `skip_serializing_if`).
    pub fn is_tcp(&self) -> bool {
        *self == Transport::Tcp
    }
}

/// QUIC's own account of one connection (quinn 0.11's `Connection::rtt()`
/// and `Connection::stats()`), read when the response was complete.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct QuicInfo {
    /// quinn's smoothed RTT (RFC 9002 §5.3), ms.
    pub srtt_ms: f64,
    /// The smallest RTT sample (RFC 9002 §5.2, `min_rtt`), ms: the RTT the
    /// phases are counted in.
    pub min_rtt_ms: f64,
    /// The handshake (connect start → handshake complete) in whole round
    /// trips of `min_rtt_ms`: 1 for a plain handshake; a Retry, a
    /// HelloRetryRequest or an anti-amplification stall adds one each.
    /// With 0-RTT the request did not wait for it. `null` without an RTT.
    pub handshake_rtts: Option<u32>,
    /// Key shares rustls generated for this connection: 1, or 2 after a
    /// HelloRetryRequest (RFC 8446 §4.1.4).
    pub key_shares: u32,
    /// Congestion window at the end, bytes.
    pub cwnd_bytes: u64,
    /// Congestion events (loss or ECN-CE) seen.
    pub congestion_events: u64,
    /// Packets sent.
    pub sent_packets: u64,
    /// Packets declared lost (RFC 9002 §6).
    pub lost_packets: u64,
    /// Bytes declared lost.
    pub lost_bytes: u64,
    /// The path's MTU at the end, bytes (the UDP payload quinn allows
    /// itself; 1200 until PMTU discovery raises it).
    pub mtu_bytes: u16,
    /// UDP datagrams sent.
    pub datagrams_out: u64,
    /// UDP payload bytes sent.
    pub bytes_out: u64,
    /// UDP datagrams received.
    pub datagrams_in: u64,
    /// UDP payload bytes received.
    pub bytes_in: u64,
}

/// One connection of the run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Attempt {
    /// 0-based, in order.
    pub index: usize,
    /// The step (`single`, `full`, `resumed`, `0-rtt`, `tfo-cookie`,
    /// `tfo-data`, joined with `+`).
    pub step: String,
    /// `quic` for `--http3`; left out for TCP.
    #[serde(skip_serializing_if = "Transport::is_tcp")]
    pub transport: Transport,
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
    /// `quic` (quinn's `min_rtt`, `--http3`), `tcp_info` (the kernel's `tcpi_min_rtt`, else `tcpi_rtt`, at the
    /// end), `connect` (the smallest `connect` duration of the run without
    /// TFO).
    pub rtt_source: Option<&'static str>,
    /// `TCP_INFO` snapshots (after connect, at the end); both `null` over
    /// QUIC.
    pub tcp_info: TcpInfoSnapshots,
    /// QUIC's own account (`--http3`); left out for TCP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quic: Option<QuicInfo>,
    /// TLS facts (`null` for `http://`).
    pub tls: Option<NegotiatedTls>,
    /// The response.
    pub response: ResponseInfo,
    /// Request bytes written (plaintext, headers and body).
    pub request_bytes: u64,
    /// The step's outcomes and how each was verified.
    pub checks: Vec<Check>,
    /// Index of this connection in the report's `connections` (the
    /// capture's view), or `null` without capture.
    pub connection: Option<usize>,
    /// `--http3`: index of this connection in the capture's `quic` list
    /// (the engine's QUIC analysis of the probe's own capture); left out
    /// when not found or over TCP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quic_connection: Option<usize>,
    /// The app's phases against the wire's (empty without capture).
    pub wire_vs_app: Vec<Agreement>,
}

impl Attempt {
    /// The check named `what`.
    pub fn check(&self, what: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.what == what)
    }

    /// The phase named `name`.
    pub fn phase(&self, name: &str) -> Option<&AppPhase> {
        self.phases.iter().find(|p| p.name == name)
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
    /// A status with nothing captured yet.
    pub fn new(status: &'static str, note: Option<String>) -> CaptureStatus {
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

/// Order statistics of one time, in ms.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TimeSummary {
    /// Smallest (ms).
    pub min_ms: f64,
    /// Median (ms; the mean of the middle two for an even count).
    pub median_ms: f64,
    /// 90th percentile (ms; nearest rank).
    pub p90_ms: f64,
    /// Largest (ms).
    pub max_ms: f64,
}

/// One [`TimeSummary`] per curl time over several attempts.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TimingStats {
    /// Attempts summarised.
    pub count: usize,
    /// `time_namelookup`.
    pub namelookup: Option<TimeSummary>,
    /// `time_connect`.
    pub connect: Option<TimeSummary>,
    /// `time_appconnect` (TLS only).
    pub appconnect: Option<TimeSummary>,
    /// `time_pretransfer`.
    pub pretransfer: Option<TimeSummary>,
    /// `time_starttransfer`.
    pub starttransfer: Option<TimeSummary>,
    /// `time_total`.
    pub total: Option<TimeSummary>,
}

impl TimingStats {
    /// `(name, summary)` in phase order, for renderers.
    pub fn rows(&self) -> Vec<(&'static str, TimeSummary)> {
        [
            ("namelookup", self.namelookup),
            ("connect", self.connect),
            ("appconnect", self.appconnect),
            ("pretransfer", self.pretransfer),
            ("starttransfer", self.starttransfer),
            ("total", self.total),
        ]
        .into_iter()
        .filter_map(|(n, s)| s.map(|s| (n, s)))
        .collect()
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
    /// `--path`: the hops toward the target (left out without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathReport>,
    /// The capture's analysis, one entry per probe connection found in it.
    #[serde(skip)]
    pub connections: Vec<ConnReport>,
    /// `--http3`: the capture's QUIC connections, in order of first
    /// packet ([`Attempt::quic_connection`] indexes them).
    #[serde(skip)]
    pub quic_connections: Vec<QuicReport>,
    /// The capture's summary.
    #[serde(skip)]
    pub capture_summary: Option<CaptureSummary>,
    /// Key log lines (for the pcapng's Decryption Secrets Block).
    #[serde(skip)]
    pub keylog: Option<Vec<u8>>,
}

impl ProbeReport {
    /// Every check of every attempt held (checks that could not be seen
    /// count as holding).
    pub fn all_verified(&self) -> bool {
        self.attempts
            .iter()
            .flat_map(|a| &a.checks)
            .all(|c| c.ok != Some(false))
    }
}
