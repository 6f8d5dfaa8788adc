//! QUIC's report: [`QuicReport`] and its parts (the handshake, the RTT, the
//! HTTP/3 streams), filled from a [`crate::analysis::quic::QuicAnalysis`].

use std::collections::BTreeMap;

use super::{Finding, Phase};
use crate::base::cost::round3;
use crate::base::side::Side;
use crate::base::time::Timestamp;
use crate::wire::community_id::{community_id, UDP};

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
    /// Community ID v1 of its UDP 4-tuple ([`crate::wire::community_id`]).
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
    /// Its first packet's time (the columnar `ts`; not in the JSON).
    #[serde(skip)]
    pub first_ts: Timestamp,
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
    /// The latency spin bit (RFC 9000 §17.4), read without keys; absent
    /// without short-header packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spin: Option<QuicSpinReport>,
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
    /// Every packet with its frames, the RTT samples and the losses, when
    /// the pipeline kept journals ([`crate::pipeline::Options::journal`],
    /// for qlog); not part of the JSON.
    #[serde(skip)]
    pub journal: Option<Box<crate::model::journal::QuicJournal>>,
}

/// The spin bit of a connection's short-header packets: each flip seen in
/// one direction, the time since the previous one there is one RTT
/// (RFC 9312 §4.1), endpoints' delays included, measured without keys.
/// An endpoint that does not spin may send the bit at random (RFC 9000
/// §17.4): flips are taken for a spin signal only when (nearly) every
/// period is at least 3/4 of the RTT the ACK frames measured (the
/// Initials' ACKs need no key), since a signal flips at most once a round
/// trip.
#[derive(Debug, Clone, serde::Serialize)]
pub struct QuicSpinReport {
    /// Short-header packets `[client, server]`.
    pub packets: [u64; 2],
    /// Times the bit changed between consecutive short-header packets of
    /// one sender `[client, server]`.
    pub flips: [u64; 2],
    /// What the flips are: `spins` (a spin signal: the periods are RTT
    /// samples), `off` (never flips: the endpoints do not spin), `random`
    /// (more than a tenth of the periods are shorter than 3/4 of the RTT:
    /// not a spin signal), `unchecked` (flips, but no ACK-frame RTT to
    /// check them against), `too-short` (no full period).
    pub signal: &'static str,
    /// Flip periods timed (one per flip after a sender's first).
    pub samples: usize,
    /// Smallest period (ms), when `signal` is `spins`.
    pub min_ms: Option<f64>,
    /// Median period (ms), when `signal` is `spins`.
    pub median_ms: Option<f64>,
}

impl QuicSpinReport {
    fn of(
        s: &crate::quic::conn::Spin,
        rtt: Option<crate::base::time::Duration>,
    ) -> Option<QuicSpinReport> {
        if s.packets == [0, 0] {
            return None;
        }
        let mut ms: Vec<f64> = s.samples.iter().map(|x| x.2.as_millis_f64()).collect();
        ms.sort_by(f64::total_cmp);
        let signal = match (s.flips, rtt) {
            ([0, 0], _) => "off",
            _ if ms.is_empty() => "too-short",
            (_, None) => "unchecked",
            (_, Some(rtt)) => {
                let floor = 0.75 * rtt.as_millis_f64();
                let short = ms.iter().filter(|m| **m < floor).count();
                if short * 10 > ms.len() {
                    "random"
                } else {
                    "spins"
                }
            }
        };
        let spins = signal == "spins";
        Some(QuicSpinReport {
            packets: s.packets,
            flips: s.flips,
            signal,
            samples: ms.len(),
            min_ms: ms.first().filter(|_| spins).map(|m| round3(*m)),
            median_ms: (spins && !ms.is_empty()).then(|| round3(ms[ms.len() / 2])),
        })
    }
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
    /// The response's `Server-Timing` beside the wire's think time (the
    /// request row's); absent when the response had none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_timing: Option<crate::analysis::requests::ServerTimingRow>,
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
            server_timing: row.server_timing.clone(),
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
    /// The report of `a` with its `findings`; times relative to `start`; Community ID seed `seed`.
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
            first_ts: a.first().ts,
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
            spin: QuicSpinReport::of(a.spin(), a.rtt_min()),
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
            journal: None,
        }
    }
}
