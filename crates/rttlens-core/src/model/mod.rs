//! The report model: what one analysed connection and the capture as a whole
//! say, owned and serializable. The renderers (text, JSON) live in the
//! `rttlens-report` crate; the JSON schema is documented in `docs/json.md`.
//! [`Connection`] is the one record of a connection of any transport.

mod capture;
pub mod finding;
pub mod history;
pub mod journal;
pub mod population;
mod quic;
mod quic_labels;
mod record;
mod rendered;
pub mod trace;

pub use finding::Finding;
pub use trace::Limit;

pub use capture::{CaptureSummary, Quality, TlsTally};
pub use quic::{QuicHandshakeReport, QuicReport, QuicRttReport, QuicSpinReport, QuicStreamRow};
pub(crate) use quic_labels::quic_frame_labels;
pub use record::{Connection, Transport};
pub use rendered::{ConnIndex, Prerender, Rendered, CONN_INDEX};

// The record's parts defined where an earlier layer fills them, read from
// here outside the engine (tests/layers.rs "the record's one door").
pub use crate::analysis::ladder::Phase;
pub use crate::analysis::requests::{RequestRow, ServerTimingRow};
pub use crate::proto::http::server_timing::Metric as ServerTimingMetric;
pub use crate::proto::tls::decrypt::{DecryptStatus, Decryption};

use crate::analysis::connection::{Coverage, TcpFacts};
use crate::analysis::rtt::Vantage;
use crate::analysis::tls::TlsInfo;
use crate::analysis::transfer::{Bound, InitialWindow, LimitCount};
use crate::analysis::Analysis;
use crate::base::cost::round3;
use crate::base::side::Side;
use crate::base::time::Timestamp;
use crate::flow::rtt::RttMethod;
use crate::wire::community_id::{community_id, TCP};

/// RTT figures in milliseconds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RttReport {
    /// Baseline RTT (ms).
    pub min_ms: f64,
    /// Median RTT (ms).
    pub median_ms: f64,
    /// M→client→M (ms).
    pub h_c_ms: f64,
    /// M→server→M (ms).
    pub h_s_ms: f64,
    /// Method that gave the figure.
    pub method: RttMethod,
}

/// One round as reported.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RoundReport {
    /// 0-based round index within the sender's rounds.
    pub index: u32,
    /// First and last frame.
    pub first_frame: u64,
    /// Last frame.
    pub last_frame: u64,
    /// Start, ms after the connection's first packet.
    pub start_ms: f64,
    /// New bytes sent.
    pub new_bytes: u64,
    /// Retransmitted bytes.
    pub(crate) retx_bytes: u64,
    /// Maximum bytes in flight.
    pub flight: u64,
    /// Frame where the flight peaked.
    pub(crate) flight_frame: u64,
    /// Receiver window then (bytes).
    pub rwnd: u64,
    /// What limited the round.
    pub limit: Limit,
}

/// The response transfer as reported.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TransferReport {
    /// Who sent the bulk data.
    pub sender: Side,
    /// Bytes.
    pub bytes: u64,
    /// Duration (ms).
    pub(crate) ms: f64,
    /// Throughput (bytes per second).
    pub bytes_per_sec: f64,
    /// Sender MSS (bytes).
    pub mss: u64,
    /// Initial window (first round's flight).
    pub initial_window: Option<InitialWindow>,
    /// Rounds per limit.
    pub limits: Vec<LimitCount>,
    /// Throughput bound of the dominant window limit.
    pub bound: Option<Bound>,
    /// The rounds.
    pub rounds: Vec<RoundReport>,
    /// Rounds not kept (very long transfers).
    pub rounds_dropped: u64,
}

/// One analysed connection.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ConnReport {
    /// 0-based index in order of first packet.
    #[serde(serialize_with = "rendered::conn_index")]
    pub index: u64,
    /// Client address:port.
    pub client: String,
    /// Server address:port.
    pub server: String,
    /// Community ID v1 of its 4-tuple: the key Zeek, Suricata, Arkime and
    /// Elastic join flows on ([`crate::wire::community_id`]).
    pub community_id: String,
    /// `tls`, `http` or `tcp`.
    pub protocol: &'static str,
    /// First frame.
    pub first_frame: u64,
    /// Last frame.
    pub last_frame: u64,
    /// Packets.
    pub frames: u64,
    /// Seconds from the capture's first packet to this connection's first.
    pub start_s: f64,
    /// Its first packet's time (the columnar `ts`; not in the JSON).
    #[serde(skip)]
    pub first_ts: Timestamp,
    /// First to last packet (ms).
    pub duration_ms: f64,
    /// Zeek's `history`, of the events kept ([`history::history`]); not in the JSON.
    #[serde(skip)]
    pub history: String,
    /// Capture point.
    pub vantage: Vantage,
    /// RTT, when known.
    pub rtt: Option<RttReport>,
    /// TCP facts.
    pub tcp: TcpFacts,
    /// TLS facts, for TLS connections.
    pub tls: Option<TlsReport>,
    /// The ladder of phases. Not serialized here: the JSON renderer
    /// (`rttlens_report::json`) writes it with each phase's sentence.
    #[serde(skip)]
    pub ladder: Vec<Phase>,
    /// The response transfer.
    pub transfer: Option<TransferReport>,
    /// Every HTTP/1.x request and its response (cleartext, or decrypted
    /// with a key log); absent when there were none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<crate::analysis::requests::RequestRow>,
    /// Findings, highest cost first. Not serialized here: the JSON
    /// renderer (`rttlens_report::json`) writes them with their sentences.
    #[serde(skip)]
    pub findings: Vec<Finding>,
    /// What part of the connection the capture holds (mid-stream start,
    /// one direction only).
    pub coverage: Coverage,
    /// Quality notes.
    pub notes: Vec<String>,
    /// Every packet, when the pipeline kept traces
    /// ([`crate::pipeline::Options::trace`]); not part of the JSON.
    #[serde(skip)]
    pub trace: Option<Box<crate::flow::trace::Trace>>,
    /// What the population view takes from this connection; not part of
    /// the JSON.
    #[serde(skip)]
    pub sample: crate::population::Sample,
    /// Its output written ahead on the thread that made it, when the
    /// pipeline was asked to ([`crate::pipeline::Options::prerender`]);
    /// not part of the JSON.
    #[serde(skip)]
    pub rendered: Option<Box<Rendered>>,
}

/// TLS facts of a connection.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct TlsReport {
    /// What was negotiated (flattened: `version`, `sni`, `alpn`, `cipher`, …).
    #[serde(flatten)]
    pub info: TlsInfo,
    /// Handshake kind (`tls12-full`, `tls12-abbreviated`, `tls13-full`,
    /// `tls13-psk`, `tls13-0rtt`, `other`), see docs/design.md §2 "Handshake
    /// kinds".
    pub kind: String,
    /// Round trips the kind needs by design (+1 after a HelloRetryRequest).
    pub nominal_rtts: u32,
    /// Round trips the handshake took (connect done → handshake done at the client).
    pub measured_rtts: f64,
    /// The server sent a HelloRetryRequest.
    pub(crate) hello_retry: bool,
    /// What decryption did, when the analysis had a key log (absent
    /// without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decryption: Option<crate::proto::tls::decrypt::Decryption>,
}

impl ConnReport {
    /// Build the report of an analysed connection (the analysis is spent:
    /// its ladder, notes and facts move into the report); Community ID seed `seed`.
    pub fn new(
        mut a: Analysis,
        findings: Vec<Finding>,
        capture_start: crate::base::time::Timestamp,
        seed: u16,
    ) -> ConnReport {
        let measured_tls_rtts = a.phase("tls").map(|p| p.rtts).unwrap_or(0.0);
        let sample = crate::population::Sample::of(&a, capture_start);
        let vantage = a.vantage();
        let (first, last) = (a.first(), a.last());
        let rtt = a.rtt.map(|r| RttReport {
            min_ms: round3(r.min.as_millis_f64()),
            median_ms: round3(r.median.as_millis_f64()),
            h_c_ms: round3(r.h_c.as_millis_f64()),
            h_s_ms: round3(r.h_s.as_millis_f64()),
            method: r.method,
        });
        let transfer = a.transfer.as_ref().map(|t| TransferReport {
            sender: t.sender,
            bytes: t.bytes,
            ms: round3(t.duration.as_millis_f64()),
            bytes_per_sec: t.bytes_per_sec.round(),
            mss: t.mss,
            initial_window: t.initial_window,
            limits: t.limits.clone(),
            bound: t.bound.map(|mut b| {
                b.bytes_per_sec = b.bytes_per_sec.round();
                b
            }),
            rounds: t
                .rounds
                .iter()
                .map(|r| RoundReport {
                    index: r.index,
                    first_frame: r.first.frame,
                    last_frame: r.last.frame,
                    start_ms: round3((r.first.ts - first.ts).as_millis_f64()),
                    new_bytes: r.new_bytes,
                    retx_bytes: r.retx_bytes,
                    flight: r.max_flight,
                    flight_frame: r.max_flight_frame,
                    rwnd: r.rwnd,
                    limit: r.limit,
                })
                .collect(),
            rounds_dropped: t.rounds_dropped,
        });
        ConnReport {
            index: a.index(),
            client: endpoint(a.client()),
            server: endpoint(a.server()),
            community_id: community_id(seed, TCP, a.client(), a.server()),
            protocol: a.app.protocol,
            first_frame: first.frame,
            last_frame: last.frame,
            frames: a.frames(),
            start_s: round3((first.ts - capture_start).as_secs_f64() * 1000.0) / 1000.0,
            first_ts: first.ts,
            history: history::history(&a),
            duration_ms: duration_ms(&a),
            vantage,
            rtt,
            tcp: std::mem::take(&mut a.tcp),
            tls: a.tls.as_mut().map(|t| TlsReport {
                info: std::mem::take(&mut t.info),
                kind: t.kind.as_str().to_string(),
                nominal_rtts: t.kind.nominal_rtts() + u32::from(t.hello_retry.is_some()),
                measured_rtts: measured_tls_rtts,
                hello_retry: t.hello_retry.is_some(),
                decryption: a.decryption.take(),
            }),
            ladder: std::mem::take(&mut a.ladder),
            transfer,
            requests: std::mem::take(&mut a.requests),
            findings,
            coverage: a.coverage,
            notes: std::mem::take(&mut a.notes),
            trace: None,
            sample,
            rendered: None,
        }
    }

    /// Gives the connection the index `index` (and its findings with it):
    /// the parallel pipeline numbers connections only once every thread
    /// has seen the frames before.
    pub(crate) fn renumber(&mut self, index: u64) {
        self.index = index;
        for f in &mut self.findings {
            f.connection = index;
        }
    }

    /// What the population view keeps of this connection beside its
    /// [`sample`](Self::sample).
    pub fn population_conn(&self) -> crate::population::Conn<'_> {
        crate::population::Conn {
            index: self.index,
            client: &self.client,
            server: &self.server,
            sni: self.tls.as_ref().and_then(|t| t.info.sni.as_deref()),
            tls: self.tls.is_some(),
            window_ms: self
                .findings
                .iter()
                .filter(|f| crate::population::WINDOW_IDS.contains(&f.id))
                .map(|f| f.cost.ms)
                .sum(),
        }
    }

    /// Total cost of the findings (ms), for "slowest first" ordering.
    pub fn findings_ms(&self) -> f64 {
        findings_ms(&self.findings)
    }
}

impl QuicReport {
    /// Total cost of the findings (ms), for "slowest first" ordering.
    pub fn findings_ms(&self) -> f64 {
        findings_ms(&self.findings)
    }

    /// What the population view's per-connection signs read.
    pub fn population_conn(&self) -> crate::population::Conn<'_> {
        crate::population::Conn {
            index: self.index,
            client: &self.client,
            server: &self.server,
            sni: self.handshake.sni.as_deref(),
            tls: true,
            window_ms: 0.0,
        }
    }
}

/// [`ConnReport::duration_ms`] of `a`'s connection.
pub(crate) fn duration_ms(a: &Analysis) -> f64 {
    round3((a.last().ts - a.first().ts).as_millis_f64())
}

/// [`ConnReport::findings_ms`] of `findings`.
pub(crate) fn findings_ms(findings: &[Finding]) -> f64 {
    findings.iter().map(|f| f.cost.ms).sum()
}

/// `addr:port` exactly as `SocketAddr`'s `Display` writes it; IPv4 without
/// the formatting machinery, which took 5 % of a run over many short
/// connections (two per connection).
fn endpoint(a: std::net::SocketAddr) -> String {
    fn push_decimal(s: &mut String, mut n: u32) {
        let mut digits = [0u8; 10];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        s.extend(digits[i..].iter().map(|&d| char::from(d)));
    }
    match a {
        std::net::SocketAddr::V4(v4) => {
            let mut s = String::with_capacity(21);
            for (i, octet) in v4.ip().octets().into_iter().enumerate() {
                if i > 0 {
                    s.push('.');
                }
                push_decimal(&mut s, u32::from(octet));
            }
            s.push(':');
            push_decimal(&mut s, u32::from(v4.port()));
            s
        }
        std::net::SocketAddr::V6(_) => a.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::endpoint;

    #[test]
    fn endpoints_are_written_as_display_writes_them() {
        for a in [
            "0.0.0.0:0",
            "10.77.0.1:443",
            "192.168.100.255:65535",
            "255.255.255.255:1",
            "1.20.100.9:8080",
            "[::1]:443",
            "[2001:db8::1]:50131",
        ] {
            let addr: std::net::SocketAddr = a.parse().expect("address");
            assert_eq!(endpoint(addr), addr.to_string());
            assert_eq!(endpoint(addr), a);
        }
    }
}
