//! A finished QUIC connection read for the ladder: its RTT from ACK frames,
//! the handshake's steps and round trips, and the HTTP/3 requests.
//!
//! The RTT at the capture point is the sum of its two halves (docs/design.md
//! §4 "Vantage and RTT"): an ACK sent by one side of a packet of the other measures
//! the path between the capture point and the acker, there and back, plus
//! the acker's delay (RFC 9002 §5: the reported ack delay is taken off in
//! the application space; Initial and Handshake ACKs are sent at once).

use crate::analysis::ladder::{ClientClock, ClientDir, Phase};
use crate::analysis::requests::{rows, Exchanges, Path, RequestRow};
use crate::analysis::rtt::Vantage;
use crate::base::cost::{round3, Cost};
use crate::base::fact::{fact, Value};
use crate::base::side::{FrameRef, Side};
use crate::base::time::Duration;
use crate::proto::h3::H3Summary;
use crate::proto::tls::hello::{ClientHelloInfo, ServerHelloInfo};
use crate::quic::conn::{Close, FlowEvent, Loss, PacketRec, QuicConn, ServerRedirect};
use crate::quic::crypto::{Message, TransportParameters};
use crate::quic::packet::PacketType;
use crate::quic::trace::QuicTrace;

/// The RTT of a QUIC connection at the capture point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuicRtt {
    /// The smallest sample of each half: `[client, server]` (the path from
    /// the capture point to that side and back).
    pub half: [Option<Duration>; 2],
    /// The two halves' sum; when one half has no sample, the other alone
    /// (then a lower bound).
    pub min: Duration,
    /// Samples taken.
    pub samples: usize,
}

/// The handshake's steps (capture clock).
#[derive(Debug, Clone, Default)]
pub struct QuicHandshake {
    /// The client's first Initial.
    pub client_initial: Option<FrameRef>,
    /// The server's first packet (Initial, Retry or Version Negotiation).
    pub server_first: Option<FrameRef>,
    /// The client's ClientHello (the last one, after a HelloRetryRequest).
    pub client_hello: Option<ClientHelloInfo>,
    /// The first ClientHello, when there were two.
    pub first_client_hello: Option<FrameRef>,
    /// The groups of the first ClientHello's key shares, when there were
    /// two ClientHellos (the last one's are in `client_hello`).
    pub first_key_shares: Option<Vec<u16>>,
    /// The ServerHello (not a HelloRetryRequest).
    pub server_hello: Option<ServerHelloInfo>,
    /// The HelloRetryRequest.
    pub hello_retry: Option<ServerHelloInfo>,
    /// The server's Certificate message length (bytes), when decrypted.
    pub certificate_bytes: Option<u32>,
    /// The client's handshake done: its Finished when decrypted, else its
    /// first 1-RTT packet, else its last Handshake packet.
    pub client_done: Option<FrameRef>,
    /// Whether `client_done` is the Finished itself.
    pub finished_seen: bool,
    /// The server's HANDSHAKE_DONE.
    pub handshake_done: Option<FrameRef>,
    /// 0-RTT: the client offered early data (`early_data` in the
    /// ClientHello).
    pub early_data_offered: bool,
    /// 0-RTT accepted (`early_data` in EncryptedExtensions); `None` when
    /// the EncryptedExtensions was not decrypted.
    pub early_data_accepted: Option<bool>,
    /// The server accepted the PSK (resumption).
    pub resumed: Option<bool>,
}

/// A finished QUIC connection and what the analysis made of it.
#[derive(Debug)]
pub struct QuicAnalysis {
    /// The connection, read through the accessors below (the engine's
    /// flow internals stay in `analysis`, as TCP's do).
    conn: QuicConn,
    /// RTT, when an ACK gave a sample.
    pub rtt: Option<QuicRtt>,
    /// The handshake.
    pub handshake: QuicHandshake,
    /// HTTP/3 on the connection's streams (decrypted 1-RTT packets).
    pub h3: H3Summary,
    /// The rows of the HTTP/3 request streams, one per stream of
    /// `h3.streams` and in its order (built as TCP's HTTP/1.x and HTTP/2
    /// rows are, [`crate::analysis::requests`]).
    pub requests: Vec<RequestRow>,
}

impl QuicAnalysis {
    /// The packets in order, as recorded.
    pub fn recs(&self) -> &[PacketRec] {
        &self.conn.recovery.recs
    }

    /// The RTT to count in, when known.
    pub fn rtt_min(&self) -> Option<Duration> {
        self.rtt.map(|r| r.min).filter(|d| *d > Duration::ZERO)
    }

    /// A cost of `d`, in round trips when the RTT is known.
    pub(crate) fn cost(&self, d: Duration) -> Cost {
        match self.rtt_min() {
            Some(rtt) => Cost::of(d, rtt),
            None => Cost {
                ms: round3(d.as_millis_f64().max(0.0)),
                rtts: None,
            },
        }
    }
}

/// What the QUIC table recorded of the connection, read by the detectors
/// and the report through these accessors.
impl QuicAnalysis {
    /// The client's address (the sender of the first Initial, else the
    /// higher port).
    pub fn client(&self) -> std::net::SocketAddr {
        self.conn.client
    }

    /// The server's address.
    pub fn server(&self) -> std::net::SocketAddr {
        self.conn.server
    }

    /// The QUIC version the connection settled on (RFC 9000 §15).
    pub fn version(&self) -> u32 {
        self.conn.version
    }

    /// The version of the client's first Initial, when it was not the one
    /// the connection settled on (Version Negotiation, RFC 9368).
    pub fn first_version(&self) -> Option<u32> {
        self.conn.first_version
    }

    /// UDP datagrams each side sent, indexed by [`Side::index`].
    pub fn datagrams(&self) -> [u64; 2] {
        self.conn.datagrams
    }

    /// UDP payload bytes each side sent, indexed by [`Side::index`].
    pub fn bytes(&self) -> [u64; 2] {
        self.conn.bytes
    }

    /// Packets opened with the keys, each side.
    pub fn decrypted(&self) -> [u64; 2] {
        self.conn.protection.opened
    }

    /// Packets left sealed, by packet type.
    pub fn not_decrypted(&self) -> &std::collections::BTreeMap<&'static str, u64> {
        &self.conn.protection.not_opened
    }

    /// Whether the key log held this connection's secrets.
    pub fn keys_logged(&self) -> bool {
        self.conn.protection.keys_logged()
    }

    /// The transport parameters each side sent, when decrypted.
    pub fn transport(&self) -> &[Option<TransportParameters>; 2] {
        &self.conn.handshake.transport
    }

    /// CONNECTION_CLOSE frames, in capture order.
    pub fn closes(&self) -> &[Close] {
        &self.conn.signals.closes
    }

    /// The frames of the CRYPTO data carrying `side`'s handshake messages
    /// of type `ty` at level `level` (0 Initial, 1 Handshake, 2 1-RTT).
    pub fn crypto_messages(&self, side: Side, level: usize, ty: u8) -> Vec<FrameRef> {
        self.conn.crypto_messages(side, level, ty)
    }

    /// The datagram trace (`--trace`), taken out for the report.
    pub fn take_trace(&mut self) -> Option<Box<QuicTrace>> {
        self.conn.trace.take()
    }

    /// The latency spin bit of the short-header packets (RFC 9000 §17.4).
    pub fn spin(&self) -> &crate::quic::conn::Spin {
        &self.conn.spin
    }

    /// The packet journal (for qlog), taken out for the report.
    pub fn take_journal(&mut self) -> Option<Box<crate::quic::journal::QuicJournal>> {
        let mut j = self.conn.journal.take()?;
        j.vantage = match self.rtt.map(|r| r.half) {
            Some([Some(h_c), Some(h_s)]) => match Vantage::of_halves(h_c, h_s) {
                Vantage::Client => Some(Side::Client),
                Vantage::Server => Some(Side::Server),
                Vantage::Middle | Vantage::Unknown => None,
            },
            _ => None,
        };
        Some(j)
    }

    /// 0-based index of the connection among the capture's QUIC
    /// connections.
    pub fn index(&self) -> u64 {
        self.conn.index
    }

    /// The connection's first packet.
    pub fn first(&self) -> FrameRef {
        self.conn.first
    }

    /// The connection's last packet.
    pub fn last(&self) -> FrameRef {
        self.conn.last
    }

    /// Packets each side sent, indexed by [`Side::index`].
    pub fn packets(&self) -> [u64; 2] {
        self.conn.packets
    }

    /// Whether the client was told apart by its Initial (else by ports).
    pub fn roles_known(&self) -> bool {
        self.conn.roles_known
    }

    /// The server's Version Negotiation packets.
    pub fn version_negotiations(&self) -> &[ServerRedirect] {
        &self.conn.redirects.version_negotiation
    }

    /// The server's Retry packets.
    pub fn retries(&self) -> &[ServerRedirect] {
        &self.conn.redirects.retry
    }

    /// The transport parameters `side` sent, when decrypted.
    pub(crate) fn transport_parameters(&self, side: Side) -> Option<&TransportParameters> {
        self.conn.handshake.transport[side.index()].as_ref()
    }

    /// Packets lost (the first kept): declared lost by the peer's ACKs, or
    /// gaps in a sender's packet numbers.
    pub fn losses(&self) -> &[Loss] {
        &self.conn.recovery.losses
    }

    /// Whether the peer acknowledged `sender`'s Initial (`space` 0) or
    /// Handshake (1) packet `pn` (the first few hundred such ACKs kept).
    pub(crate) fn handshake_acked(&self, sender: Side, space: u8, pn: u64) -> bool {
        self.conn
            .recovery
            .handshake_acked
            .contains(&(sender, space, pn))
    }

    /// Flow-control frames (`*_BLOCKED`, `MAX_*`), in capture order.
    pub(crate) fn flow_control(&self) -> &[FlowEvent] {
        &self.conn.signals.flow
    }

    /// Each moment a sender's data ended exactly at its peer's
    /// flow-control limit, in capture order (docs/design.md §4 "QUIC").
    pub(crate) fn at_limit(&self) -> &[crate::quic::conn::AtLimit] {
        self.conn
            .signals
            .credit
            .as_ref()
            .map_or(&[][..], |c| &c.reached[..])
    }

    /// The client's 0-RTT packets: the first, how many, their bytes.
    pub fn zero_rtt(&self) -> Option<(FrameRef, u64, u64)> {
        self.conn.handshake.zero_rtt
    }

    /// The first STREAM data `side` sent.
    pub(crate) fn first_stream(&self, side: Side) -> Option<FrameRef> {
        self.conn.signals.first_stream[side.index()]
    }

    /// The handshake message of type `ty` sent by `side` at level `level`
    /// (0 Initial, 1 Handshake, 2 1-RTT).
    pub(crate) fn message(&self, side: Side, level: usize, ty: u8) -> Option<&Message> {
        self.conn.message(side, level, ty)
    }
}

/// Reads a finished connection.
pub fn analyze(mut conn: QuicConn) -> QuicAnalysis {
    if let Some(j) = &mut conn.journal {
        j.h3 = conn.signals.h3.take_frames();
    }
    let h3 = std::mem::take(&mut conn.signals.h3).finish();
    let rtt = rtt(&conn);
    let handshake = handshake(&conn);
    let path = Path {
        start: conn.first.ts,
        rtt: rtt.map_or(Duration::ZERO, |r| r.min),
        h_s: rtt
            .and_then(|r| r.half[Side::Server.index()])
            .unwrap_or(Duration::ZERO),
    };
    let requests = rows(Exchanges::H3(&h3.streams), path, None);
    QuicAnalysis {
        conn,
        rtt,
        handshake,
        h3,
        requests,
    }
}

fn rtt(c: &QuicConn) -> Option<QuicRtt> {
    let mut half = [None::<Duration>; 2];
    for s in &c.recovery.samples {
        let h = &mut half[s.acker.index()];
        *h = Some(h.map_or(s.rtt, |x| x.min(s.rtt)));
    }
    let min = match half {
        [Some(a), Some(b)] => a + b,
        [Some(a), None] | [None, Some(a)] => a,
        [None, None] => return None,
    };
    Some(QuicRtt {
        half,
        min,
        samples: c.recovery.samples.len(),
    })
}

fn handshake(c: &QuicConn) -> QuicHandshake {
    let mut h = QuicHandshake {
        client_initial: c
            .recovery
            .recs
            .iter()
            .find(|r| r.side == Side::Client && r.ty == PacketType::Initial)
            .map(|r| r.at),
        server_first: c
            .recovery
            .recs
            .iter()
            .find(|r| r.side == Side::Server)
            .map(|r| r.at),
        handshake_done: c.handshake.done,
        ..QuicHandshake::default()
    };
    let hellos: Vec<_> = c.crypto_messages(Side::Client, 0, 1);
    if hellos.len() > 1 {
        h.first_client_hello = Some(hellos[0]);
        h.first_key_shares = c
            .client_hello_first()
            .map(|(ch, _)| ch.key_share_groups.to_vec());
    }
    if let Some((ch, _)) = c.client_hello_last() {
        h.early_data_offered = ch.early_data;
        h.client_hello = Some(ch);
    }
    for (sh, _) in c.server_hellos() {
        if sh.hello_retry_request {
            h.hello_retry.get_or_insert(sh);
        } else if h.server_hello.is_none() {
            h.resumed = Some(sh.pre_shared_key.is_some());
            h.server_hello = Some(sh);
        }
    }
    h.certificate_bytes = c
        .message(Side::Server, 1, 11)
        .or_else(|| c.message(Side::Server, 1, 25))
        .map(|m| m.len + 4);
    if let Some(ee) = c.message(Side::Server, 1, 8) {
        h.early_data_accepted = ee.body.as_deref().map(|b| {
            crate::proto::tls::hello::extension_in_block(b.get(2..).unwrap_or_default(), 42)
                .is_some()
        });
    }
    if let Some(fin) = c.message(Side::Client, 1, 20) {
        h.client_done = Some(fin.done);
        h.finished_seen = true;
    } else {
        let after = h.server_first.map_or(c.first.ts, |f| f.ts);
        h.client_done = c
            .recovery
            .recs
            .iter()
            .find(|r| r.side == Side::Client && r.ty == PacketType::OneRtt && r.at.ts >= after)
            .or_else(|| {
                c.recovery
                    .recs
                    .iter()
                    .rev()
                    .find(|r| r.side == Side::Client && r.ty == PacketType::Handshake)
            })
            .map(|r| r.at);
    }
    h
}

impl QuicAnalysis {
    /// The ladder of phases in the client's clock: `quic-handshake` (the
    /// client's first Initial to its handshake done: nominally 1 RTT, 0 of
    /// them before the request with 0-RTT), then for the first HTTP/3
    /// request `request` (its HEADERS to the response's HEADERS) and
    /// `transfer` (the response's first DATA byte to its last).
    pub fn ladder(&self) -> Vec<Phase> {
        let clock = ClientClock {
            h_c: self
                .rtt
                .and_then(|r| r.half[Side::Client.index()])
                .unwrap_or(Duration::ZERO),
            rtt: self.rtt_min().unwrap_or(Duration::ZERO),
        };
        let mut out = Vec::new();
        let h = &self.handshake;
        if let (Some(ci), Some(done)) = (h.client_initial, h.client_done) {
            let detail = fact!(
                "ladder.quic-handshake",
                finished_seen = h.finished_seen,
                version_negotiation = !self.conn.redirects.version_negotiation.is_empty(),
                retry = !self.conn.redirects.retry.is_empty(),
                hello_retry = h.hello_retry.is_some(),
            );
            out.push(clock.phase(
                "quic-handshake",
                (ci, ClientDir::Sent),
                (done, ClientDir::Sent),
                detail,
            ));
        }
        let first = self
            .h3
            .streams
            .iter()
            .find(|s| s.request_headers.is_some() && s.response_headers.is_some());
        if let Some(s) = first {
            let (Some(req), Some(resp)) = (s.request_headers, s.response_headers) else {
                return out;
            };
            let mut detail = fact!("ladder.h3-request", stream = Value::Count(s.id));
            if let Some(m) = &s.method {
                detail = detail.with("method", m.clone());
            }
            if let Some(p) = &s.path {
                detail = detail.with("path", p.clone());
            }
            out.push(clock.phase(
                "request",
                (req, ClientDir::Sent),
                (resp, ClientDir::Received),
                detail,
            ));
            if let (Some(first), Some(end)) = (s.response_first_data, s.response_end) {
                out.push(clock.phase(
                    "transfer",
                    (first, ClientDir::Received),
                    (end, ClientDir::Received),
                    fact!(
                        "ladder.h3-transfer",
                        bytes = Value::Bytes(s.data_bytes[Side::Server.index()])
                    ),
                ));
            }
        }
        out
    }
}
