//! What one connection gives the population view: its phases, where its
//! handshake sat in time, and the signs of its SYN exchange. Taken from the
//! analysis before the report is built, kept beside the report (not in its
//! JSON) and folded into the [`Population`](super::Population) as the
//! connection ends.

use crate::analysis::ladder::Phase;
use crate::analysis::quic::QuicAnalysis;
use crate::analysis::tls::TlsKind;
use crate::analysis::Analysis;
use crate::base::side::{FrameRef, Side};
use crate::base::time::{Duration, Timestamp};

/// The population's phases, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PhaseId {
    /// SYN → SYN-ACK (the ladder's `connect`).
    Connect,
    /// SYN-ACK → handshake done at the client (the ladder's `tls`).
    Tls,
    /// ClientHello in → ServerHello out at the server (the capture's
    /// interval less the RTT from the capture point to the server, h_s):
    /// the server's handshake processing.
    ServerHandshake,
    /// First request byte sent → first response byte received (the
    /// ladder's `request`).
    Ttfb,
    /// The server's share of the TTFB beyond the network (the ladder's
    /// `server-think` part).
    ServerThink,
    /// The response transfer (the ladder's `transfer`).
    Transfer,
    /// Time the client itself took within its handshake and before its
    /// first request: SYN-ACK in → ClientHello out, its key exchange in a
    /// full TLS 1.2 handshake, handshake done → request out.
    ClientDelay,
    /// A QUIC connection's handshake: the client's first Initial to its
    /// handshake done (the ladder's `quic-handshake`); QUIC has no
    /// `connect` apart from it.
    QuicHandshake,
}

/// Number of [`PhaseId`]s.
pub(crate) const N_PHASES: usize = 8;

impl PhaseId {
    /// All of them, in report order.
    pub const ALL: [PhaseId; N_PHASES] = [
        PhaseId::Connect,
        PhaseId::Tls,
        PhaseId::ServerHandshake,
        PhaseId::Ttfb,
        PhaseId::ServerThink,
        PhaseId::Transfer,
        PhaseId::ClientDelay,
        PhaseId::QuicHandshake,
    ];

    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseId::Connect => "connect",
            PhaseId::Tls => "tls",
            PhaseId::ServerHandshake => "server-handshake",
            PhaseId::Ttfb => "ttfb",
            PhaseId::ServerThink => "server-think",
            PhaseId::Transfer => "transfer",
            PhaseId::ClientDelay => "client-delay",
            PhaseId::QuicHandshake => "quic-handshake",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// Signs of a SYN cookie (Linux `cookie_v4_init_sequence`) on a SYN-ACK:
/// a server that answers from a cookie keeps no state for the SYN, so it
/// can only send back the options it can encode. Without timestamps there
/// is nowhere to put window scale and SACK-permitted and the SYN-ACK
/// carries the MSS alone (`tcp_conn_request`: `tcp_clear_options` when the
/// client sent no timestamp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SynAckShape {
    /// The client's SYN offered window scaling or SACK, without timestamps
    /// (the case where a cookie SYN-ACK drops them).
    pub(crate) offered_without_ts: bool,
    /// The SYN-ACK carried window scale or SACK-permitted.
    pub(crate) granted: bool,
}

/// One connection, as the population view sees it.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// First packet, seconds after the capture's first.
    pub(crate) start_s: f64,
    /// Handshake done at the client (TLS done, or the SYN-ACK for plain
    /// TCP), or the last packet when it never finished; seconds after the
    /// capture's first.
    pub(crate) handshake_end_s: f64,
    /// Each phase in ms and in round trips (`None` when unknown).
    pub(crate) phases: [Option<(f64, Option<f64>)>; N_PHASES],
    /// The connection's baseline RTT (ms).
    pub(crate) rtt_ms: Option<f64>,
    /// Data segments each side sent (client, server), and how many were
    /// retransmissions.
    pub(crate) data_segments: [u64; 2],
    pub(crate) retransmissions: [u64; 2],
    /// The SYN exchange, when the capture holds the SYN.
    pub(crate) syn: Option<SynSample>,
    /// ClientHello and ServerHello frames (evidence of the server's
    /// handshake processing).
    pub(crate) hello_frames: Option<(u64, u64)>,
    /// When the ClientHello and the ServerHello passed the capture point,
    /// seconds after the capture's first packet (the order in which a
    /// burst's handshakes were served).
    pub(crate) hello_s: Option<(f64, f64)>,
    /// Frames that bound the client's delay: (the packet it answered, its
    /// answer), the longest of its waits.
    pub(crate) client_wait_frames: Option<(u64, u64)>,
    /// The TLS handshake resumed a session (PSK or abbreviated).
    pub(crate) resumed: bool,
    /// First SYN sent → first response byte received, in the client's
    /// clock (ms): what a user waited for the first byte.
    pub(crate) first_byte_ms: Option<f64>,
    /// Every `Server-Timing` metric with a `dur` of its requests: (name,
    /// ms); empty without the field.
    pub(crate) server_timing: Vec<(String, f64)>,
}

/// The `Server-Timing` metrics with a `dur` of `rows`, as
/// [`Sample::server_timing`] keeps them.
fn server_timing(rows: &[crate::analysis::requests::RequestRow]) -> Vec<(String, f64)> {
    rows.iter()
        .filter_map(|r| r.server_timing.as_ref())
        .flat_map(|st| &st.metrics)
        .filter_map(|m| Some((m.name.clone(), m.dur_ms?)))
        .collect()
}

/// The SYN exchange of one connection.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SynSample {
    /// First SYN frame.
    pub(crate) syn_frame: u64,
    /// SYN transmissions (1: none lost).
    pub(crate) syn_count: u32,
    /// First SYN-ACK frame, when one came.
    pub(crate) syn_ack_frame: Option<u64>,
    /// The server sent its SYN-ACK again after the client's ACK of it:
    /// the server did not take the ACK (Linux drops the handshake's final
    /// ACK when the accept queue is full: `tcp_check_req` → `listen_overflow`).
    /// With the ACK's and the resent SYN-ACK's frames, and the time from
    /// the one to the other (ms).
    pub(crate) ack_ignored: Option<(u64, u64, f64)>,
    /// The SYN-ACK's options against what the SYN offered.
    pub(crate) shape: Option<SynAckShape>,
}

impl Sample {
    /// The phase's ms.
    pub(crate) fn ms(&self, p: PhaseId) -> Option<f64> {
        self.phases[p.index()].map(|v| v.0)
    }

    /// The population's view of an analysed connection (before its report
    /// takes the ladder away).
    pub(crate) fn of(a: &Analysis, capture_start: Timestamp) -> Sample {
        let rel = |t: Timestamp| (t - capture_start).as_secs_f64();
        let mut s = Sample {
            start_s: rel(a.first().ts),
            rtt_ms: (a.rtt_min > Duration::ZERO).then(|| a.rtt_min.as_millis_f64()),
            data_segments: [a.data_segments(Side::Client), a.data_segments(Side::Server)],
            retransmissions: a.tcp.retransmissions,
            server_timing: server_timing(&a.requests),
            ..Sample::default()
        };
        let mut put = |id: PhaseId, ms: f64, rtts: f64| {
            let rtts = (a.rtt_min > Duration::ZERO).then_some(rtts);
            s.phases[id.index()] = Some((ms, rtts));
        };
        for p in &a.ladder {
            let id = match p.name {
                "connect" => PhaseId::Connect,
                "tls" => PhaseId::Tls,
                "request" => PhaseId::Ttfb,
                "transfer" => PhaseId::Transfer,
                _ => continue,
            };
            put(id, p.ms, p.rtts);
            for part in &p.parts {
                let id = match part.name {
                    "server-processing" => PhaseId::ServerHandshake,
                    "server-think" => PhaseId::ServerThink,
                    _ => continue,
                };
                put(id, part.ms, part.rtts);
            }
        }
        let client = client_delay(a);
        if let Some((d, frames)) = client {
            let clock = a.clock();
            let part = clock.part("client-delay", d);
            put(PhaseId::ClientDelay, part.ms, part.rtts);
            s.client_wait_frames = frames;
        }
        let end = a
            .tls
            .as_ref()
            .and_then(|t| t.done)
            .or(a.syn_ack().map(|sa| sa.first))
            .unwrap_or(a.last());
        s.handshake_end_s = rel(end.ts).max(s.start_s);
        if let Some(t) = &a.tls {
            s.hello_frames = t.server_hello.map(|sh| (t.client_hello.frame, sh.frame));
            s.hello_s = t
                .server_hello
                .map(|sh| (rel(t.client_hello.ts), rel(sh.ts)));
            s.resumed = matches!(
                t.kind,
                TlsKind::Tls12Abbreviated | TlsKind::Tls13Psk | TlsKind::Tls13ZeroRtt
            );
        }
        if let (Some(syn), Some(r)) = (a.syn(), a.app.response_first) {
            if r.ts >= syn.first.ts {
                s.first_byte_ms = Some(((r.ts - syn.first.ts) + a.h_c()).as_millis_f64());
            }
        }
        if let Some(syn) = a.syn() {
            let ack_ignored = match (a.syn_ack(), a.handshake_ack()) {
                (Some(sa), Some(ack)) if sa.count > 1 && sa.last.ts > ack.ts => Some((
                    ack.frame,
                    sa.last.frame,
                    (sa.last.ts - ack.ts).as_millis_f64(),
                )),
                _ => None,
            };
            let shape = a.syn_ack().map(|sa| {
                let o = &syn.options;
                SynAckShape {
                    offered_without_ts: o.timestamps.is_none()
                        && (o.window_scale.is_some() || o.sack_permitted),
                    granted: sa.options.window_scale.is_some() || sa.options.sack_permitted,
                }
            });
            s.syn = Some(SynSample {
                syn_frame: syn.first.frame,
                syn_count: syn.count,
                syn_ack_frame: a.syn_ack().map(|sa| sa.first.frame),
                ack_ignored,
                shape,
            });
        }
        s
    }

    /// The population's view of an analysed QUIC connection: its
    /// handshake, request and transfer phases from `ladder` (the
    /// connection's own, [`QuicAnalysis::ladder`]), the server's handshake
    /// processing (its first Initial less the client's, less the RTT from
    /// the capture point to the server), its RTT and packet counts.
    pub(crate) fn of_quic(a: &QuicAnalysis, ladder: &[Phase], capture_start: Timestamp) -> Sample {
        let rel = |t: Timestamp| (t - capture_start).as_secs_f64();
        let rtt = a.rtt_min();
        let mut s = Sample {
            start_s: rel(a.first().ts),
            rtt_ms: rtt.map(|r| r.as_millis_f64()),
            data_segments: a.packets(),
            server_timing: server_timing(&a.requests),
            ..Sample::default()
        };
        // packets declared lost (RFC 9002 §6.1.1), as a TCP sender's
        // retransmissions count
        for l in a.losses().iter().filter(|l| l.declared_by.is_some()) {
            s.retransmissions[l.side.index()] += 1;
        }
        let mut put = |id: PhaseId, ms: f64, rtts: f64| {
            s.phases[id.index()] = Some((ms, rtt.map(|_| rtts)));
        };
        for p in ladder {
            let id = match p.name {
                "quic-handshake" => PhaseId::QuicHandshake,
                "request" => PhaseId::Ttfb,
                "transfer" => PhaseId::Transfer,
                _ => continue,
            };
            put(id, p.ms, p.rtts);
        }
        let h = &a.handshake;
        if let (Some(ci), Some(sf)) = (h.client_initial, h.server_first) {
            let h_s = a
                .rtt
                .and_then(|r| r.half[Side::Server.index()])
                .unwrap_or(Duration::ZERO);
            let d = ((sf.ts - ci.ts) - h_s).max(Duration::ZERO);
            let rtts = rtt.and_then(|r| d.in_rtts(r)).unwrap_or(0.0);
            put(PhaseId::ServerHandshake, d.as_millis_f64(), rtts);
            s.hello_frames = Some((ci.frame, sf.frame));
            s.hello_s = Some((rel(ci.ts), rel(sf.ts)));
        }
        let end = h.client_done.unwrap_or(a.last());
        s.handshake_end_s = rel(end.ts).max(s.start_s);
        s.resumed = h.resumed == Some(true);
        s
    }
}

/// The client's own time within its handshake and before its first request,
/// and the frames of its longest wait: SYN-ACK in → ClientHello out (less
/// h_c), the client's key exchange after the server's first flight in a
/// full TLS 1.2 handshake, and handshake done → first request out. `None`
/// when none of these can be told.
fn client_delay(a: &Analysis) -> Option<(Duration, Option<(u64, u64)>)> {
    let h_c = a.h_c();
    let mut total = Duration::ZERO;
    let mut longest: Option<(Duration, (u64, u64))> = None;
    let mut seen = false;
    let mut add = |from: FrameRef, from_received: bool, to: FrameRef| {
        if to.ts < from.ts {
            return;
        }
        let mut d = to.ts - from.ts;
        if from_received {
            d = d - h_c;
        }
        let d = d.max(Duration::ZERO);
        seen = true;
        total = total + d;
        if longest.is_none_or(|(l, _)| d > l) {
            longest = Some((d, (from.frame, to.frame)));
        }
    };
    let sa = a.syn_ack()?;
    match &a.tls {
        Some(t) => {
            // the SYN-ACK the ClientHello answered: its last transmission
            // before the ClientHello
            let answered = if sa.last.ts <= t.client_hello.ts {
                sa.last
            } else {
                sa.first
            };
            add(answered, true, t.client_hello);
            if let (TlsKind::Tls12Full, Some(end), Some(fin)) =
                (t.kind, t.server_flight_end, t.client_finished)
            {
                add(end, true, fin);
            }
            if let (Some(done), Some(q)) = (t.done, a.app.request_first) {
                add(done, !t.done_sent_by_client, q);
            }
        }
        None => {
            if let Some(q) = a.app.request_first {
                let answered = if sa.last.ts <= q.ts {
                    sa.last
                } else {
                    sa.first
                };
                add(answered, true, q);
            }
        }
    }
    seen.then(|| (total, longest.map(|l| l.1)))
}
