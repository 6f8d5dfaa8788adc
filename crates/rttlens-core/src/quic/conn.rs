//! One QUIC connection as its datagrams pass the capture point: packets
//! opened with the keys at hand (Initial keys always, the others from a key
//! log), CRYPTO streams reassembled, ACK frames turned into RTT samples
//! (RFC 9002 §5) and loss declarations (§6.1), and a record of each packet
//! for the handshake's ladder and the detectors.

use std::net::SocketAddr;

mod credit;
mod handshake;
mod protection;
mod recovery;
mod spin;

pub use credit::{AtLimit, Credit};
pub use handshake::Handshake;
pub use protection::Protection;
pub use recovery::Recovery;
pub use spin::Spin;

use super::frame::{frames, Frame};
use super::journal::{JournalFrame, JournalLoss, QuicJournal};
use super::packet::{packets, Header, PacketType};
use super::protect::{open, PacketKeys};
use super::trace::QuicTrace;
use crate::base::side::{FrameRef, Side};
use crate::base::time::{Duration, Timestamp};
use crate::capture::keylog::KeyStore;
use crate::proto::h3::H3Tracker;
use crate::wire::UdpDatagram;

/// Packets recorded in detail per connection (the handshake and the start
/// of the transfer); later ones are only counted.
pub(crate) const PACKETS_KEPT: usize = 4096;
/// Most RTT samples, lost packets, flow-control events kept per connection.
const EVENTS_CAP: usize = 512;
/// The ack delay exponent when the peer's transport parameters are not
/// known (RFC 9000 §18.2).
const DEFAULT_ACK_DELAY_EXPONENT: u64 = 3;

/// One packet of the connection, as the analysis reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketRec {
    /// The frame that carried it.
    pub at: FrameRef,
    /// Its sender.
    pub side: Side,
    /// Its type.
    pub ty: PacketType,
    /// Packet number, when its header protection was removed.
    pub pn: Option<u64>,
    /// Bytes of the packet (header, payload and tag).
    pub len: u32,
    /// UDP payload bytes of the datagram, on the datagram's first packet
    /// (0 on packets coalesced after it).
    pub datagram: u32,
    /// Its payload was decrypted.
    pub opened: bool,
    /// It carries a frame other than ACK, PADDING, CONNECTION_CLOSE (RFC
    /// 9002 §2); only known when opened.
    pub ack_eliciting: bool,
    /// CRYPTO data it carries: the first frame's offset and the total
    /// length (bytes).
    pub crypto: Option<(u64, u32)>,
    /// Some of its CRYPTO data had been sent before (a retransmission).
    pub crypto_again: bool,
    /// STREAM data bytes it carries.
    pub stream_bytes: u32,
}

/// An RTT sample from an ACK frame: the time from a packet passing the
/// capture point to the ACK of it passing back, the ACK's delay taken off
/// (1-RTT space only, RFC 9002 §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckSample {
    /// The side that sent the ACK: the sample measures the path between
    /// the capture point and that side, there and back.
    pub acker: Side,
    /// The acknowledged packet.
    pub packet: FrameRef,
    /// The ACK.
    pub ack: FrameRef,
    /// Packet number space (0 Initial, 1 Handshake, 2 application).
    pub space: u8,
    /// Time from packet to ACK less the reported ack delay.
    pub rtt: Duration,
    /// The ack delay the ACK reported.
    pub ack_delay: Duration,
}

/// A packet declared lost (RFC 9002 §6.1.1: three later packets acked and
/// not it), or a packet number the sender skipped at the capture point
/// (lost before it, or not captured).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loss {
    /// Its sender.
    pub side: Side,
    /// Packet number space.
    pub space: u8,
    /// Packet number.
    pub pn: u64,
    /// The packet, when the capture holds it (a declared loss); for a
    /// gap, the first packet after it.
    pub at: FrameRef,
    /// The ACK that declared it lost (`None` for a gap).
    pub declared_by: Option<FrameRef>,
}

/// A flow-control frame (RFC 9000 §4): a limit raised or a sender blocked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowEvent {
    /// Its sender.
    pub side: Side,
    /// The packet.
    pub at: FrameRef,
    /// `MAX_DATA`, `MAX_STREAM_DATA`, `DATA_BLOCKED`, `STREAM_DATA_BLOCKED`.
    pub kind: &'static str,
    /// The stream, for the stream-level frames.
    pub stream: Option<u64>,
    /// The limit (bytes).
    pub value: u64,
}

/// What a Version Negotiation or Retry packet did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerRedirect {
    /// The packet.
    pub at: FrameRef,
    /// Version Negotiation: the versions the server offers; Retry: empty.
    pub versions: Vec<u32>,
    /// Retry: bytes of its token.
    pub token_len: usize,
}

/// A CONNECTION_CLOSE frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Close {
    /// Its sender.
    pub side: Side,
    /// The packet.
    pub at: FrameRef,
    /// Application error space (frame type 0x1d) rather than transport.
    pub app: bool,
    /// Error code.
    pub error: u64,
    /// Reason phrase (lossy UTF-8, at most 120 characters).
    pub reason: String,
}

/// One QUIC connection: who and what version, the datagrams counted, and
/// one field per concern (RFC 9000, 9001, 9002 terms in each).
pub struct QuicConn {
    /// 0-based index among the capture's QUIC connections.
    pub index: u64,
    /// Client address and port.
    pub client: SocketAddr,
    /// Server address and port.
    pub server: SocketAddr,
    /// Whether the client was told apart by its Initial (else by ports).
    pub roles_known: bool,
    /// Version of the client's first Initial, then of the connection.
    pub version: u32,
    /// Whether the streams carry HTTP/3: the client offered ALPN `h3`
    /// (beside the other one-byte field, not in a sub-struct, where it
    /// would pad to 8 bytes).
    http3: Option<bool>,
    /// The first version the client tried, when Version Negotiation made
    /// it change.
    pub first_version: Option<u32>,
    /// The client's first Destination Connection ID.
    pub original_dcid: Vec<u8>,
    /// Connection IDs each side chose (its Source Connection ID).
    pub scid: [Vec<u8>; 2],
    /// First and last packet.
    pub first: FrameRef,
    /// Last packet.
    pub last: FrameRef,
    /// Datagrams and UDP payload bytes, per sender.
    pub datagrams: [u64; 2],
    /// UDP payload bytes per sender.
    pub bytes: [u64; 2],
    /// Packets per sender (decrypted ones: [`Protection::opened`]).
    pub packets: [u64; 2],
    /// Packet protection: the keys, and what was decrypted (RFC 9001).
    pub protection: Protection,
    /// The TLS handshake: CRYPTO streams, transport parameters, 0-RTT,
    /// HANDSHAKE_DONE (RFC 9001 §4).
    pub handshake: Handshake,
    /// Packet records, ACK bookkeeping, RTT samples and losses (RFC 9002).
    pub recovery: Recovery,
    /// Version Negotiation and Retry (RFC 9000 §6, §8.1).
    pub redirects: Redirects,
    /// What the other frames signalled: flow control, new connection IDs,
    /// closes, streams and HTTP/3.
    pub signals: Signals,
    /// Every datagram, when the table keeps traces
    /// (`super::table::QuicTable::with_trace`).
    pub trace: Option<Box<QuicTrace>>,
    /// The latency spin bit of the short-header packets (RFC 9000 §17.4).
    pub spin: Spin,
    /// Every packet with its frames, when the table keeps journals
    /// (`super::table::QuicTable::with_journal`, for qlog).
    pub journal: Option<Box<QuicJournal>>,
}

/// Version Negotiation and Retry packets from the server (RFC 9000 §6,
/// §17.2.5).
#[derive(Debug, Default)]
pub struct Redirects {
    /// Version Negotiation packets.
    pub version_negotiation: Vec<ServerRedirect>,
    /// Retry packets.
    pub retry: Vec<ServerRedirect>,
    /// The Source Connection ID of the server's Retry (the one a client
    /// acts on, RFC 9000 §17.2.5.2).
    retry_scid: Option<Vec<u8>>,
}

/// What the frames other than CRYPTO and ACK signalled: flow control (RFC
/// 9000 §4), NEW_CONNECTION_ID (§19.15), CONNECTION_CLOSE (§10.2, §19.19),
/// STREAM data and HTTP/3 on it (RFC 9114).
#[derive(Debug)]
pub struct Signals {
    /// Flow-control frames.
    pub flow: Vec<FlowEvent>,
    /// CONNECTION_CLOSE frames.
    pub closes: Vec<Close>,
    /// Connection IDs learnt from NEW_CONNECTION_ID, for the table.
    pub(crate) new_cids: Vec<Vec<u8>>,
    /// First STREAM data from each side.
    pub first_stream: [Option<FrameRef>; 2],
    /// Flow-control credit against the bytes sent (boxed: only a
    /// connection whose streams were decrypted has one).
    pub credit: Option<Box<Credit>>,
    /// HTTP/3 on the request streams.
    pub h3: H3Tracker,
}

impl std::fmt::Debug for QuicConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicConn")
            .field("index", &self.index)
            .field("client", &self.client)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// The side a datagram's first packet shows to be the client's, and the
/// client's Initial keys: a client Initial opens with the keys of its own
/// Destination Connection ID (RFC 9001 §5.2); a server's does not.
pub(crate) fn opens_as_first_initial(h: &Header<'_>) -> bool {
    client_initial(h).is_some()
}

/// Whether `payload` starts with a client's first Initial whose QUIC Bit
/// is cleared (RFC 9287 §3.1: a client that remembers its server's
/// `grease_quic_bit`, as quinn does on a resumed connection, may clear it
/// from its first packet on): opened with the Initial keys of its own
/// Destination Connection ID, so the AEAD proves it is QUIC.
pub(crate) fn greased_first_initial(payload: &[u8]) -> bool {
    packets(payload, None)
        .fixed_bit_optional()
        .next()
        .and_then(Result::ok)
        .is_some_and(|h| h.ty == PacketType::Initial && client_initial(&h).is_some())
}

fn client_initial(h: &Header<'_>) -> Option<PacketKeys> {
    if h.ty != PacketType::Initial {
        return None;
    }
    let keys = PacketKeys::initial(h.version, h.dcid, Side::Client)?;
    open(&keys, h, None, &mut Vec::new()).map(|_| keys)
}

impl QuicConn {
    /// A connection from its first datagram `d` (a long-header packet):
    /// the sender is the client if its Initial opens with the client's
    /// Initial keys, the server if it is a Retry or Version Negotiation,
    /// else the side with the lower port is taken for the server.
    pub(crate) fn new(index: u64, d: &UdpDatagram<'_>, at: FrameRef, store: KeyStore) -> QuicConn {
        let src = SocketAddr::new(d.src, d.src_port);
        let dst = SocketAddr::new(d.dst, d.dst_port);
        let first = packets(d.payload, None)
            .fixed_bit_optional()
            .next()
            .and_then(Result::ok);
        let (from_client, known) = match &first {
            Some(h) if client_initial(h).is_some() => (true, true),
            Some(h) if matches!(h.ty, PacketType::Retry | PacketType::VersionNegotiation) => {
                (false, true)
            }
            Some(h) if h.ty == PacketType::ZeroRtt => (true, true),
            _ => (d.src_port > d.dst_port, false),
        };
        let (client, server) = if from_client { (src, dst) } else { (dst, src) };
        let version = first.as_ref().map_or(0, |h| h.version);
        QuicConn {
            index,
            client,
            server,
            roles_known: known,
            version,
            http3: None,
            first_version: None,
            original_dcid: Vec::new(),
            scid: [Vec::new(), Vec::new()],
            first: at,
            last: at,
            datagrams: [0; 2],
            bytes: [0; 2],
            packets: [0; 2],
            protection: Protection::new(store),
            handshake: Handshake::default(),
            recovery: Recovery::default(),
            redirects: Redirects::default(),
            signals: Signals {
                flow: Vec::new(),
                closes: Vec::new(),
                new_cids: Vec::new(),
                first_stream: [None, None],
                credit: None,
                h3: H3Tracker::new(),
            },
            trace: None,
            spin: Spin::default(),
            journal: None,
        }
    }

    /// The side that sent from `src`.
    pub(crate) fn side_of(&self, src: SocketAddr) -> Side {
        if src == self.client {
            Side::Client
        } else {
            Side::Server
        }
    }

    /// The length of the connection IDs the peer of `side` chose, which
    /// short headers from `side` carry.
    fn short_dcid_len(&self, side: Side) -> Option<usize> {
        let peer = &self.scid[side.peer().index()];
        (!peer.is_empty() || self.packets[side.peer().index()] > 0).then_some(peer.len())
    }

    /// Reads one datagram from `side`.
    pub(crate) fn push(&mut self, side: Side, d: &UdpDatagram<'_>, at: FrameRef) {
        let s = side.index();
        self.last = at;
        self.datagrams[s] += 1;
        self.bytes[s] += u64::from(d.payload_len);
        if let Some(t) = &mut self.trace {
            t.datagram(side, at, d.payload_len);
        }
        let mut first_in_datagram = true;
        let mut first_dcid: Option<&[u8]> = None;
        // a known connection's packets may have the QUIC Bit cleared
        // (RFC 9287: quinn greases it once the peer allowed it); the AEAD
        // still proves each packet
        for h in packets(d.payload, self.short_dcid_len(side)).fixed_bit_optional() {
            let Ok(h) = h else { break };
            // coalesced packets carry one connection ID (RFC 9000 §12.2:
            // receivers ignore ones with another); bytes after the long
            // headers that do not are padding, not a short-header packet
            if first_dcid.is_some_and(|f| f != h.dcid) {
                break;
            }
            first_dcid.get_or_insert(h.dcid);
            self.packets[s] += 1;
            let datagram = if first_in_datagram { d.payload_len } else { 0 };
            first_in_datagram = false;
            if let Some(j) = &mut self.journal {
                j.packet(side, at, &h, datagram);
            }
            if h.ty == PacketType::OneRtt {
                let bit = h.packet.first().is_some_and(|b| b & 0x20 != 0);
                self.spin.observe(side, bit, at);
            }
            self.packet(side, &h, at, datagram);
        }
    }

    fn packet(&mut self, side: Side, h: &Header<'_>, at: FrameRef, datagram: u32) {
        let s = side.index();
        let mut rec = PacketRec {
            at,
            side,
            ty: h.ty,
            pn: None,
            len: h.packet.len() as u32,
            datagram,
            opened: false,
            ack_eliciting: false,
            crypto: None,
            crypto_again: false,
            stream_bytes: 0,
        };
        match h.ty {
            PacketType::VersionNegotiation => {
                if side == Side::Server {
                    let versions = h
                        .versions
                        .chunks_exact(4)
                        .take(16)
                        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
                        .collect();
                    self.redirects.version_negotiation.push(ServerRedirect {
                        at,
                        versions,
                        token_len: 0,
                    });
                }
                self.record(rec);
                return;
            }
            PacketType::Retry => {
                if side == Side::Server {
                    self.redirects.retry.push(ServerRedirect {
                        at,
                        versions: Vec::new(),
                        token_len: h.token.len(),
                    });
                    // a client acts on one Retry only (RFC 9000 §17.2.5.2)
                    if self.redirects.retry_scid.is_none() {
                        self.scid[s] = h.scid.to_vec();
                        self.redirects.retry_scid = Some(h.scid.to_vec());
                    }
                }
                self.record(rec);
                return;
            }
            _ => {}
        }
        if h.ty != PacketType::OneRtt {
            if side == Side::Client && h.ty == PacketType::Initial {
                self.client_initial_header(h);
            }
            if !h.scid.is_empty() || self.scid[s].is_empty() {
                self.scid[s] = h.scid.to_vec();
            }
        }
        if h.ty == PacketType::ZeroRtt && side == Side::Client {
            // seen by its long header, with or without keys
            let z = self.handshake.zero_rtt.get_or_insert((at, 0, 0));
            z.1 += 1;
            z.2 += u64::from(rec.len);
        }
        let space = h.ty.space().unwrap_or(0);
        let opened = self.open(side, h, space);
        let Some(o) = opened else {
            *self.protection.not_opened.entry(h.ty.as_str()).or_default() += 1;
            self.record(rec);
            return;
        };
        self.protection.opened[s] += 1;
        rec.opened = true;
        rec.pn = Some(o.pn);
        if let Some(j) = &mut self.journal {
            j.opened(o.pn, usize::from(o.first & 0x03) + 1);
        }
        if let Some(l) = self.recovery.largest[s][space] {
            if o.pn > l + 1 && self.recovery.losses.len() < EVENTS_CAP {
                // packet numbers the sender skipped at the capture point
                for pn in (l + 1..o.pn).take(8) {
                    self.recovery.push_loss(Loss {
                        side,
                        space: space as u8,
                        pn,
                        at,
                        declared_by: None,
                    });
                }
            }
            if o.pn > l + 1 {
                if let Some(j) = &mut self.journal {
                    j.losses
                        .extend((l + 1..o.pn).take(64).map(|pn| JournalLoss {
                            side,
                            space: space as u8,
                            pn,
                            at,
                            declared_by: None,
                        }));
                }
            }
        }
        let largest = &mut self.recovery.largest[s][space];
        *largest = Some(largest.map_or(o.pn, |l| l.max(o.pn)));
        let payload = self.protection.take_scratch();
        let level = match h.ty {
            PacketType::Initial => 0,
            PacketType::Handshake => 1,
            _ => 2,
        };
        for f in frames(&o.payload) {
            let Ok(f) = f else { break };
            rec.ack_eliciting |= f.is_ack_eliciting();
            if self.journal.is_some() {
                let exp = self.ack_delay_exponent(side);
                if let Some(j) = &mut self.journal {
                    j.frame(JournalFrame::of(&f, exp));
                }
            }
            self.frame(side, space, level, f, at, &mut rec);
        }
        self.protection.put_scratch(payload);
        let q = &mut self.recovery.sent[s][space].q;
        if q.len() >= recovery::SENT_CAP {
            q.pop_front();
        }
        q.push_back((o.pn, at, rec.ack_eliciting));
        self.record(rec);
    }

    /// A client Initial: the connection's version and the Initial keys of
    /// its Destination Connection ID (new after a Retry, RFC 9000 §17.2.5.2).
    fn client_initial_header(&mut self, h: &Header<'_>) {
        if self.original_dcid.is_empty() {
            self.original_dcid = h.dcid.to_vec();
        }
        if h.version != self.version && self.version != 0 {
            self.first_version.get_or_insert(self.version);
        }
        let changed = h.version != self.version;
        // a new version after Version Negotiation starts the handshake
        // again (RFC 9000 §6.2): a new ClientHello (quic-go's has a new
        // random, so its keys are logged under that one) at CRYPTO offset
        // 0, and the Initials the server discarded are not lost
        if changed && self.version != 0 && !self.redirects.version_negotiation.is_empty() {
            self.handshake.crypto[Side::Client.index()][0] = Default::default();
            self.handshake.crypto[Side::Server.index()][0] = Default::default();
            self.handshake.transport[Side::Client.index()] = None;
            self.recovery.sent[Side::Client.index()][0] = Default::default();
        }
        self.version = h.version;
        // the Initial keys come from the client's first DCID, and change
        // only with a Retry (its SCID becomes the DCID, RFC 9001 §5.2) or a
        // new version after Version Negotiation
        let retry_scid = self.redirects.retry_scid.as_deref();
        self.protection
            .initial(h.version, h.dcid, changed, retry_scid);
    }

    fn frame(
        &mut self,
        side: Side,
        space: usize,
        level: usize,
        f: Frame<'_>,
        at: FrameRef,
        rec: &mut PacketRec,
    ) {
        let s = side.index();
        match f {
            Frame::Crypto { offset, data } => {
                let again = self.handshake.crypto[s][level].push(offset, data, at);
                rec.crypto_again |= again;
                let (o, n) = rec.crypto.get_or_insert((offset, 0));
                *o = (*o).min(offset);
                *n += data.len() as u32;
                if level == 0 {
                    self.hellos_read(side);
                } else if level == 1
                    && side == Side::Server
                    && self.handshake.transport[s].is_none()
                {
                    self.encrypted_extensions();
                }
            }
            Frame::Ack {
                largest,
                ack_delay,
                ranges,
                ..
            } => {
                let exp = self.ack_delay_exponent(side);
                let delay_us = ack_delay.saturating_mul(1 << exp);
                let delay = if space == 2 {
                    Duration::from_micros(i64::try_from(delay_us).unwrap_or(i64::MAX / 1000))
                } else {
                    Duration::ZERO
                };
                let ranges: Vec<(u64, u64)> = ranges.take(64).collect();
                self.ack(side, space, largest, delay, &ranges, at);
            }
            Frame::Stream {
                id,
                offset,
                fin,
                data,
            } => {
                rec.stream_bytes += data.len() as u32;
                self.signals.first_stream[s].get_or_insert(at);
                let peer_tp = self.handshake.transport[side.peer().index()].as_ref();
                let initial = (
                    credit::initial_stream_limit(peer_tp, side, id),
                    peer_tp.and_then(|t| t.initial_max_data),
                );
                let end = offset.saturating_add(data.len() as u64);
                self.signals
                    .credit
                    .get_or_insert_with(Box::default)
                    .sent(side, id, end, initial, at);
                if self.speaks_http3() {
                    self.signals.h3.stream(side, id, offset, data, fin, at);
                }
            }
            Frame::ResetStream { id, .. } | Frame::StopSending { id, .. }
                if self.speaks_http3() =>
            {
                self.signals.h3.reset(side, id, at);
            }
            Frame::MaxData(v) => self.flow_event(side, at, "MAX_DATA", None, v),
            Frame::MaxStreamData { id, max } => {
                self.flow_event(side, at, "MAX_STREAM_DATA", Some(id), max)
            }
            Frame::DataBlocked(v) => self.flow_event(side, at, "DATA_BLOCKED", None, v),
            Frame::StreamDataBlocked { id, limit } => {
                self.flow_event(side, at, "STREAM_DATA_BLOCKED", Some(id), limit)
            }
            Frame::HandshakeDone => {
                self.handshake.done.get_or_insert(at);
            }
            Frame::NewConnectionId { cid, .. } if self.signals.new_cids.len() < 64 => {
                self.signals.new_cids.push(cid.to_vec());
            }
            Frame::ConnectionClose {
                app, error, reason, ..
            } if self.signals.closes.len() < 8 => {
                let reason: String = String::from_utf8_lossy(reason).chars().take(120).collect();
                self.signals.closes.push(Close {
                    side,
                    at,
                    app,
                    error,
                    reason,
                });
            }
            _ => {}
        }
    }

    /// The `ack_delay_exponent` of `side`'s ACK frames (RFC 9000 §18.2):
    /// its transport parameter, 3 when not known; at most 20.
    fn ack_delay_exponent(&self, side: Side) -> u64 {
        self.handshake.transport[side.index()]
            .as_ref()
            .and_then(|t| t.ack_delay_exponent)
            .unwrap_or(DEFAULT_ACK_DELAY_EXPONENT)
            .min(20)
    }

    fn flow_event(
        &mut self,
        side: Side,
        at: FrameRef,
        kind: &'static str,
        stream: Option<u64>,
        value: u64,
    ) {
        if kind.starts_with("MAX_") {
            self.signals
                .credit
                .get_or_insert_with(Box::default)
                .raise(side, stream, value);
        }
        if self.signals.flow.len() < EVENTS_CAP {
            self.signals.flow.push(FlowEvent {
                side,
                at,
                kind,
                stream,
                value,
            });
        }
    }

    /// When the last packet passed.
    pub(crate) fn last_ts(&self) -> Timestamp {
        self.last.ts
    }
}

#[cfg(test)]
mod tests {
    /// Grouping the fields by concern (issue 40) measured 11168 B before
    /// and after; the sub-structs must not add padding. The journal's
    /// pointer and HTTP/3's frame log's (issue 45, qlog) added 16, the
    /// spin bit's state (issue 45) 112, the flow-control credit's pointer
    /// (`credit.rs`) and the list of handshake packets acknowledged
    /// (`recovery.rs`, both issue 45) 32 together.
    #[test]
    fn quic_conn_stays_small() {
        let size = std::mem::size_of::<super::QuicConn>();
        eprintln!("size_of::<QuicConn>() = {size}");
        assert!(size <= 11328, "{size}");
    }
}
