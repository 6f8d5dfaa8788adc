//! The report model: what one analysed connection and the capture as a whole
//! say, owned and serializable. The renderers (text, JSON) live in the
//! `rttlens-report` crate; the JSON schema is documented in `docs/json.md`.
//! [`Connection`] is the one record of a connection of any transport.

mod capture;
pub mod finding;
pub mod population;
mod quic_labels;
mod record;
pub mod trace;

pub use finding::Finding;
pub use trace::Limit;

pub use capture::{CaptureSummary, Quality, TlsTally};
pub(crate) use quic_labels::quic_frame_labels;
pub use record::{Connection, Transport};

// The record's parts defined where an earlier layer fills them, read from
// here outside the engine (tests/layers.rs "the record's one door").
pub use crate::analysis::ladder::Phase;
pub use crate::analysis::requests::RequestRow;
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
use crate::wire::community_id::{community_id, TCP, UDP};
use std::collections::BTreeMap;

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
    pub index: u64,
    /// Client address:port.
    pub client: String,
    /// Server address:port.
    pub server: String,
    /// Community ID v1 of its 4-tuple (seed 0 unless
    /// `Options::community_id_seed` says otherwise): the key Zeek,
    /// Suricata, Arkime and Elastic join flows on
    /// ([`crate::wire::community_id`]).
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
    /// First to last packet (ms).
    pub duration_ms: f64,
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
    /// its ladder, notes and facts move into the report, not copied); its
    /// Community ID with `seed` (0 by default in every tool).
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

/// The report of one QUIC connection (docs/json.md "QUIC connections").
#[derive(Debug, Clone, serde::Serialize)]
pub struct QuicReport {
    /// 0-based index among the capture's QUIC connections, in order of
    /// first packet.
    pub index: u64,
    /// Client address:port.
    pub client: String,
    /// Server address:port.
    pub server: String,
    /// Community ID v1 (seed 0) of its UDP 4-tuple
    /// ([`crate::wire::community_id`]).
    pub community_id: String,
    /// Whether the client was told apart by its Initial (`false`: by ports).
    pub roles_known: bool,
    /// QUIC version (`1`, `2`, or the number in hex).
    pub version: String,
    /// The version of the client's first Initial, when Version Negotiation
    /// changed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_version: Option<String>,
    /// First frame.
    pub first_frame: u64,
    /// Last frame.
    pub last_frame: u64,
    /// Seconds from the capture's first packet to this connection's first.
    pub start_s: f64,
    /// First to last packet (ms).
    pub duration_ms: f64,
    /// Datagrams `[client, server]`.
    pub datagrams: [u64; 2],
    /// UDP payload bytes `[client, server]`.
    pub bytes: [u64; 2],
    /// Packets (coalesced ones counted apart) `[client, server]`.
    pub packets: [u64; 2],
    /// Packets decrypted `[client, server]`: Initials always, the others
    /// with a key log.
    pub decrypted: [u64; 2],
    /// Packets not decrypted, by type (`Handshake`, `1-RTT`, …).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub not_decrypted: BTreeMap<&'static str, u64>,
    /// A key log held this connection's secrets.
    pub key_log: bool,
    /// RTT, when an ACK frame gave a sample.
    pub rtt: Option<QuicRttReport>,
    /// The handshake.
    pub handshake: QuicHandshakeReport,
    /// Transport parameters `[client, server]` (the server's need a key
    /// log: they are in its EncryptedExtensions).
    pub transport_parameters: [Option<crate::quic::TransportParameters>; 2],
    /// Packets declared lost by the ACKs that followed (RFC 9002 §6.1.1:
    /// three later packets acknowledged and not it), `[client's,
    /// server's]`; decrypted packets only.
    pub lost: [u64; 2],
    /// Packet numbers missing at the capture point, `[client's,
    /// server's]`: lost before it, not captured, or skipped on purpose by
    /// the sender (RFC 9000 §21.4), so no proof of loss alone.
    pub pn_gaps: [u64; 2],
    /// The ladder of phases. Not serialized here: the JSON renderer
    /// (`rttlens_report::json`) writes it with each phase's sentence.
    #[serde(skip)]
    pub ladder: Vec<Phase>,
    /// HTTP/3 request streams (decrypted).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<QuicStreamRow>,
    /// Findings, highest cost first. Not serialized here: the JSON
    /// renderer (`rttlens_report::json`) writes them with their sentences.
    #[serde(skip)]
    pub findings: Vec<Finding>,
    /// What the population view takes from this connection; not part of
    /// the JSON.
    #[serde(skip)]
    pub sample: crate::population::Sample,
    /// CONNECTION_CLOSE frames: `side: error (reason)`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub closes: Vec<String>,
    /// Every datagram, when the pipeline kept traces
    /// ([`crate::pipeline::Options::trace`]); not part of the JSON.
    #[serde(skip)]
    pub trace: Option<Box<crate::quic::trace::QuicTrace>>,
}

/// One HTTP/3 request stream (RFC 9114 §4.1).
#[derive(Debug, Clone, serde::Serialize)]
pub struct QuicStreamRow {
    /// Stream ID.
    pub id: u64,
    /// `:method`.
    pub method: Option<String>,
    /// `:path`.
    pub path: Option<String>,
    /// `:authority`.
    pub authority: Option<String>,
    /// `:status`.
    pub status: Option<u16>,
    /// Frame of the request's HEADERS.
    pub request_frame: Option<u64>,
    /// Frame of the response's HEADERS.
    pub response_frame: Option<u64>,
    /// Frame of the response's first DATA byte.
    pub first_data_frame: Option<u64>,
    /// Frame of the response's last byte (FIN).
    pub end_frame: Option<u64>,
    /// Request HEADERS to response HEADERS at the capture point (ms).
    pub ttfb_ms: Option<f64>,
    /// Response body bytes (DATA frames).
    pub response_bytes: u64,
    /// Reset (RESET_STREAM or STOP_SENDING) by `client` or `server`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reset_by: Option<&'static str>,
}

impl QuicStreamRow {
    /// The row of stream `s`: the request row every HTTP version gets
    /// (`row`, [`crate::analysis::requests`]), with what only this row
    /// shows taken from the stream (its authority, reset, body bytes and
    /// the HEADERS-to-HEADERS wait).
    fn of(
        row: &crate::analysis::requests::RequestRow,
        s: &crate::proto::http::stream::HttpStream,
    ) -> QuicStreamRow {
        QuicStreamRow {
            id: s.id,
            method: row.method.clone(),
            path: row.target.clone(),
            authority: s.authority.clone(),
            status: row.status,
            request_frame: row.request_frame,
            response_frame: row.response_frame,
            first_data_frame: row.first_data_frame,
            end_frame: row.response_end_frame,
            ttfb_ms: s
                .request_headers
                .zip(s.response_headers)
                .map(|(q, r)| round3((r.ts - q.ts).as_millis_f64())),
            response_bytes: s.data_bytes[Side::Server.index()],
            reset_by: s.reset.map(|r| r.by.as_str()),
        }
    }
}

/// The RTT of a QUIC connection (ms).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct QuicRttReport {
    /// Smallest RTT: the two halves' smallest samples added.
    pub min_ms: f64,
    /// Capture point → client → capture point, smallest sample.
    pub client_half_ms: Option<f64>,
    /// Capture point → server → capture point, smallest sample.
    pub server_half_ms: Option<f64>,
    /// ACK frames that gave a sample.
    pub samples: usize,
}

/// The QUIC handshake as the report tells it.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct QuicHandshakeReport {
    /// Server name (ClientHello SNI).
    pub sni: Option<String>,
    /// ALPN offered by the client.
    pub alpn_offered: Vec<String>,
    /// TLS cipher suite chosen.
    pub cipher: Option<String>,
    /// Key exchange group of the ServerHello.
    pub key_share_group: Option<String>,
    /// The server sent a HelloRetryRequest.
    pub hello_retry_request: bool,
    /// The server sent a Retry.
    pub retry: bool,
    /// The server sent Version Negotiation.
    pub version_negotiation: bool,
    /// The client offered resumption (pre_shared_key).
    pub resumption_offered: bool,
    /// The server accepted it; `null` without a ServerHello.
    pub resumed: Option<bool>,
    /// 0-RTT: `not-offered`, `offered` (outcome not decrypted), `accepted`,
    /// `rejected`.
    pub zero_rtt: &'static str,
    /// 0-RTT packets the client sent.
    pub zero_rtt_packets: u64,
    /// The server's Certificate message (bytes), when decrypted.
    pub certificate_bytes: Option<u32>,
    /// Client Initial to the client's handshake done (ms, client clock).
    pub ms: Option<f64>,
    /// The same in round trips.
    pub rtts: Option<f64>,
    /// HANDSHAKE_DONE from the server (frame).
    pub handshake_done_frame: Option<u64>,
}

impl QuicReport {
    /// The report of `a` with its `findings`; times relative to `start`;
    /// its Community ID with `seed`.
    pub fn new(
        a: &crate::analysis::quic::QuicAnalysis,
        findings: Vec<Finding>,
        start: Timestamp,
        seed: u16,
    ) -> QuicReport {
        let h = &a.handshake;
        let version = |v: u32| match v {
            crate::quic::packet::VERSION_1 => "1".to_string(),
            crate::quic::packet::VERSION_2 => "2".to_string(),
            v => format!("{v:#010x}"),
        };
        let ladder = a.ladder();
        let hs_phase = ladder.iter().find(|p| p.name == "quic-handshake");
        let zero_rtt = match (h.early_data_offered, h.early_data_accepted) {
            (false, _) => "not-offered",
            (true, None) => "offered",
            (true, Some(true)) => "accepted",
            (true, Some(false)) => "rejected",
        };
        let mut lost = [0u64; 2];
        let mut pn_gaps = [0u64; 2];
        for l in a.losses() {
            if l.declared_by.is_some() {
                lost[l.side.index()] += 1;
            } else {
                pn_gaps[l.side.index()] += 1;
            }
        }
        QuicReport {
            index: a.index(),
            client: a.client().to_string(),
            server: a.server().to_string(),
            community_id: community_id(seed, UDP, a.client(), a.server()),
            roles_known: a.roles_known(),
            version: version(a.version()),
            first_version: a.first_version().map(version),
            first_frame: a.first().frame,
            last_frame: a.last().frame,
            start_s: round3((a.first().ts - start).as_secs_f64()),
            duration_ms: round3((a.last().ts - a.first().ts).as_millis_f64()),
            datagrams: a.datagrams(),
            bytes: a.bytes(),
            packets: a.packets(),
            decrypted: a.decrypted(),
            not_decrypted: a.not_decrypted().clone(),
            key_log: a.keys_logged(),
            rtt: a.rtt.map(|r| QuicRttReport {
                min_ms: round3(r.min.as_millis_f64()),
                client_half_ms: r.half[0].map(|d| round3(d.as_millis_f64())),
                server_half_ms: r.half[1].map(|d| round3(d.as_millis_f64())),
                samples: r.samples,
            }),
            handshake: QuicHandshakeReport {
                sni: h.client_hello.as_ref().and_then(|ch| ch.sni.clone()),
                alpn_offered: h
                    .client_hello
                    .as_ref()
                    .map(|ch| ch.alpn.clone())
                    .unwrap_or_default(),
                cipher: h.server_hello.as_ref().map(|sh| {
                    sh.cipher_suite_name
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("{:#06x}", sh.cipher_suite))
                }),
                key_share_group: h
                    .server_hello
                    .as_ref()
                    .and_then(|sh| sh.key_share_group)
                    .map(crate::proto::tls::hello::group_name),
                hello_retry_request: h.hello_retry.is_some(),
                retry: !a.retries().is_empty(),
                version_negotiation: !a.version_negotiations().is_empty(),
                resumption_offered: h.client_hello.as_ref().is_some_and(|ch| ch.pre_shared_key),
                resumed: h.resumed,
                zero_rtt,
                zero_rtt_packets: a.zero_rtt().map_or(0, |z| z.1),
                certificate_bytes: h.certificate_bytes,
                ms: hs_phase.map(|p| p.ms),
                rtts: hs_phase.filter(|_| a.rtt_min().is_some()).map(|p| p.rtts),
                handshake_done_frame: h.handshake_done.map(|f| f.frame),
            },
            transport_parameters: a.transport().clone(),
            lost,
            pn_gaps,
            sample: crate::population::Sample::of_quic(a, &ladder, start),
            ladder,
            streams: a
                .requests
                .iter()
                .zip(&a.h3.streams)
                .map(|(row, s)| QuicStreamRow::of(row, s))
                .collect(),
            findings,
            closes: a
                .closes()
                .iter()
                .map(|x| {
                    let side = if x.side == Side::Client {
                        "client"
                    } else {
                        "server"
                    };
                    let space = if x.app { "application" } else { "transport" };
                    if x.reason.is_empty() {
                        format!("{side}: {space} error {:#x}", x.error)
                    } else {
                        format!("{side}: {space} error {:#x} ({})", x.error, x.reason)
                    }
                })
                .collect(),
            trace: None,
        }
    }
}
