//! Over 700 lines: the packets, the keys and the ACK bookkeeping of one
//! connection all work on QuicConn's private state; grouping its fields by
//! concern (issue 40) is what will let it split.
//!
//! One QUIC connection as its datagrams pass the capture point: packets
//! opened with the keys at hand (Initial keys always, the others from a key
//! log), CRYPTO streams reassembled, ACK frames turned into RTT samples
//! (RFC 9002 §5) and loss declarations (§6.1), and a record of each packet
//! for the handshake's ladder and the detectors.

use std::collections::VecDeque;
use std::net::SocketAddr;

use super::crypto::{CryptoStream, TransportParameters};
use super::frame::{frames, Frame};
use super::h3::H3Tracker;
use super::packet::{packets, Header, PacketType};
use super::protect::{open, quic_suite, tls13_suites, PacketKeys};
use super::trace::QuicTrace;
use crate::base::side::{FrameRef, Side};
use crate::base::time::{Duration, Timestamp};
use crate::capture::keylog::{KeyStore, SecretLabel, Secrets};
use crate::proto::tls::hello::{self, ClientHelloInfo, ServerHelloInfo};
use crate::wire::UdpDatagram;

/// Packets recorded in detail per connection (the handshake and the start
/// of the transfer); later ones are only counted.
pub(crate) const PACKETS_KEPT: usize = 4096;
/// Sent packets awaiting an ACK kept per direction and space.
const SENT_CAP: usize = 8192;
/// Most RTT samples, lost packets, flow-control events kept per connection.
const EVENTS_CAP: usize = 512;
/// The ack delay exponent when the peer's transport parameters are not
/// known (RFC 9000 §18.2).
const DEFAULT_ACK_DELAY_EXPONENT: u64 = 3;
/// The packet reordering threshold (RFC 9002 §6.1.1, `kPacketThreshold`).
const PACKET_THRESHOLD: u64 = 3;

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

/// Keys of the 1-RTT space for one direction: the current phase and the
/// next (RFC 9001 §6).
struct OneRtt {
    keys: PacketKeys,
    phase: bool,
    next: Option<PacketKeys>,
}

/// The keys a connection has, by space and sender.
#[derive(Default)]
struct Keys {
    initial: [Option<PacketKeys>; 2],
    /// The client's Destination Connection ID the Initial keys came from.
    initial_dcid: Vec<u8>,
    handshake: [Option<PacketKeys>; 2],
    zero_rtt: Option<PacketKeys>,
    one_rtt: [Option<OneRtt>; 2],
    secrets: Option<Secrets>,
}

/// Packets sent by one side in one space, not yet acknowledged.
#[derive(Debug, Default)]
struct Sent {
    q: VecDeque<(u64, FrameRef, bool)>,
    /// Largest packet number the peer acknowledged.
    largest_acked: Option<u64>,
}

/// One QUIC connection.
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
    /// Packets per sender, and how many were decrypted.
    pub packets: [u64; 2],
    /// Packets decrypted, per sender.
    pub opened: [u64; 2],
    /// The first packets in detail.
    pub recs: Vec<PacketRec>,
    /// Version Negotiation packets.
    pub version_negotiation: Vec<ServerRedirect>,
    /// Retry packets.
    pub retry: Vec<ServerRedirect>,
    /// CRYPTO streams by sender and level (Initial, Handshake, 1-RTT).
    pub(crate) crypto: [[CryptoStream; 3]; 2],
    /// Each side's transport parameters (ClientHello, EncryptedExtensions).
    pub transport: [Option<TransportParameters>; 2],
    /// RTT samples.
    pub samples: Vec<AckSample>,
    /// Packets lost.
    pub losses: Vec<Loss>,
    /// Losses beyond the kept ones.
    pub losses_more: u64,
    /// Flow-control frames.
    pub flow: Vec<FlowEvent>,
    /// HANDSHAKE_DONE (RFC 9001 §4.1.2).
    pub handshake_done: Option<FrameRef>,
    /// CONNECTION_CLOSE frames.
    pub closes: Vec<Close>,
    /// First packet of 0-RTT from the client, its packet count and bytes.
    pub zero_rtt: Option<(FrameRef, u64, u64)>,
    /// Packets whose decryption was not possible, per type name.
    pub not_opened: std::collections::BTreeMap<&'static str, u64>,
    /// A key log held this connection's secrets.
    pub keys_logged: bool,
    /// HTTP/3 on the request streams.
    pub h3: H3Tracker,
    /// First STREAM data from each side.
    pub first_stream: [Option<FrameRef>; 2],
    /// Every datagram, when the table keeps traces
    /// (`super::table::QuicTable::with_trace`).
    pub trace: Option<Box<QuicTrace>>,
    keys: Keys,
    sent: [[Sent; 3]; 2],
    largest: [[Option<u64>; 3]; 2],
    store: KeyStore,
    scratch: Vec<u8>,
    /// Connection IDs learnt from NEW_CONNECTION_ID, for the table.
    pub(crate) new_cids: Vec<Vec<u8>>,
    /// The Source Connection ID of the server's Retry.
    retry_scid: Option<Vec<u8>>,
    /// Whether the streams carry HTTP/3: the client offered ALPN `h3`.
    http3: Option<bool>,
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
            first_version: None,
            original_dcid: Vec::new(),
            scid: [Vec::new(), Vec::new()],
            first: at,
            last: at,
            datagrams: [0; 2],
            bytes: [0; 2],
            packets: [0; 2],
            opened: [0; 2],
            recs: Vec::new(),
            version_negotiation: Vec::new(),
            retry: Vec::new(),
            crypto: Default::default(),
            transport: [None, None],
            samples: Vec::new(),
            losses: Vec::new(),
            losses_more: 0,
            flow: Vec::new(),
            handshake_done: None,
            closes: Vec::new(),
            zero_rtt: None,
            not_opened: Default::default(),
            keys_logged: false,
            h3: H3Tracker::new(),
            first_stream: [None, None],
            trace: None,
            keys: Keys::default(),
            sent: Default::default(),
            largest: [[None; 3]; 2],
            store,
            scratch: Vec::new(),
            new_cids: Vec::new(),
            retry_scid: None,
            http3: None,
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

    /// The ClientHello, once whole.
    pub(crate) fn client_hello(&self) -> Option<(ClientHelloInfo, &super::crypto::Message)> {
        let m = self.crypto[Side::Client.index()][0].message(1)?;
        let (mut info, _) = hello::parse_client_hello(m.body.as_deref()?).ok()?;
        info.first = m.first;
        info.complete = m.done;
        Some((info, m))
    }

    /// The last ClientHello (the second, after a HelloRetryRequest).
    pub(crate) fn client_hello_last(&self) -> Option<(ClientHelloInfo, &super::crypto::Message)> {
        let m = self.crypto[Side::Client.index()][0]
            .messages
            .iter()
            .rev()
            .find(|m| m.ty == 1)?;
        let (mut info, _) = hello::parse_client_hello(m.body.as_deref()?).ok()?;
        info.first = m.first;
        info.complete = m.done;
        Some((info, m))
    }

    /// Where each handshake message of type `ty` sent by `side` at
    /// `level` started.
    pub fn crypto_messages(&self, side: Side, level: usize, ty: u8) -> Vec<FrameRef> {
        self.crypto[side.index()][level]
            .messages
            .iter()
            .filter(|m| m.ty == ty)
            .map(|m| m.first)
            .collect()
    }

    /// The ServerHellos and HelloRetryRequests, in order.
    pub(crate) fn server_hellos(&self) -> Vec<(ServerHelloInfo, &super::crypto::Message)> {
        self.crypto[Side::Server.index()][0]
            .messages
            .iter()
            .filter(|m| m.ty == 2)
            .filter_map(|m| {
                let (mut info, _) = hello::parse_server_hello(m.body.as_deref()?).ok()?;
                info.first = m.first;
                info.complete = m.done;
                Some((info, m))
            })
            .collect()
    }

    /// The handshake message of type `ty` sent by `side` at level `level`
    /// (0 Initial, 1 Handshake, 2 1-RTT).
    pub(crate) fn message(
        &self,
        side: Side,
        level: usize,
        ty: u8,
    ) -> Option<&super::crypto::Message> {
        self.crypto[side.index()][level].message(ty)
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
                    self.version_negotiation.push(ServerRedirect {
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
                    self.retry.push(ServerRedirect {
                        at,
                        versions: Vec::new(),
                        token_len: h.token.len(),
                    });
                    // a client acts on one Retry only (RFC 9000 §17.2.5.2)
                    if self.retry_scid.is_none() {
                        self.scid[s] = h.scid.to_vec();
                        self.retry_scid = Some(h.scid.to_vec());
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
            let z = self.zero_rtt.get_or_insert((at, 0, 0));
            z.1 += 1;
            z.2 += u64::from(rec.len);
        }
        let space = h.ty.space().unwrap_or(0);
        let opened = self.open(side, h, space);
        let Some(o) = opened else {
            *self.not_opened.entry(h.ty.as_str()).or_default() += 1;
            self.record(rec);
            return;
        };
        self.opened[s] += 1;
        rec.opened = true;
        rec.pn = Some(o.pn);
        if let Some(l) = self.largest[s][space] {
            if o.pn > l + 1 && self.losses.len() < EVENTS_CAP {
                // packet numbers the sender skipped at the capture point
                for pn in (l + 1..o.pn).take(8) {
                    self.push_loss(Loss {
                        side,
                        space: space as u8,
                        pn,
                        at,
                        declared_by: None,
                    });
                }
            }
        }
        let largest = &mut self.largest[s][space];
        *largest = Some(largest.map_or(o.pn, |l| l.max(o.pn)));
        let payload = std::mem::take(&mut self.scratch);
        let level = match h.ty {
            PacketType::Initial => 0,
            PacketType::Handshake => 1,
            _ => 2,
        };
        for f in frames(&o.payload) {
            let Ok(f) = f else { break };
            rec.ack_eliciting |= f.is_ack_eliciting();
            self.frame(side, space, level, f, at, &mut rec);
        }
        self.scratch = payload;
        let q = &mut self.sent[s][space].q;
        if q.len() >= SENT_CAP {
            q.pop_front();
        }
        q.push_back((o.pn, at, rec.ack_eliciting));
        self.record(rec);
    }

    fn record(&mut self, rec: PacketRec) {
        if let Some(t) = &mut self.trace {
            t.packet(rec.ty, rec.pn, rec.ack_eliciting, rec.crypto_again);
        }
        if self.recs.len() < PACKETS_KEPT {
            self.recs.push(rec);
        }
    }

    fn push_loss(&mut self, l: Loss) {
        if self.losses.len() < EVENTS_CAP {
            self.losses.push(l);
        } else {
            self.losses_more += 1;
        }
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
        if changed && self.version != 0 && !self.version_negotiation.is_empty() {
            self.crypto[Side::Client.index()][0] = Default::default();
            self.crypto[Side::Server.index()][0] = Default::default();
            self.transport[Side::Client.index()] = None;
            self.sent[Side::Client.index()][0] = Default::default();
        }
        self.version = h.version;
        // the Initial keys come from the client's first DCID, and change
        // only with a Retry (its SCID becomes the DCID, RFC 9001 §5.2) or a
        // new version after Version Negotiation
        let after_retry =
            self.retry_scid.as_deref() == Some(h.dcid) && self.keys.initial_dcid != h.dcid;
        if self.keys.initial[0].is_none() || changed || after_retry {
            self.keys.initial_dcid = h.dcid.to_vec();
            self.keys.initial = [
                PacketKeys::initial(h.version, h.dcid, Side::Client),
                PacketKeys::initial(h.version, h.dcid, Side::Server),
            ];
        }
    }

    /// Opens `h` sent by `side` in `space` with the keys at hand, fetching
    /// them from the key log when the hellos make them known.
    fn open(&mut self, side: Side, h: &Header<'_>, space: usize) -> Option<super::protect::Opened> {
        let s = side.index();
        let largest = self.largest[s][space];
        match h.ty {
            PacketType::Initial => {
                let k = self.keys.initial[s].as_ref()?;
                open(k, h, largest, &mut self.scratch)
            }
            PacketType::Handshake => {
                if self.keys.handshake[s].is_none() {
                    self.derive(
                        side,
                        SecretLabel::ClientHandshakeTraffic,
                        SecretLabel::ServerHandshakeTraffic,
                        1,
                    );
                }
                let k = self.keys.handshake[s].as_ref()?;
                open(k, h, largest, &mut self.scratch)
            }
            PacketType::ZeroRtt => {
                if self.keys.zero_rtt.is_none() {
                    self.zero_rtt_keys(h, largest);
                }
                let k = self.keys.zero_rtt.as_ref()?;
                open(k, h, largest, &mut self.scratch)
            }
            PacketType::OneRtt => {
                if self.keys.one_rtt[s].is_none() {
                    self.derive(
                        side,
                        SecretLabel::ClientTraffic0,
                        SecretLabel::ServerTraffic0,
                        2,
                    );
                }
                let k = self.keys.one_rtt[s].as_mut()?;
                let (first, _, _) = super::protect::unmask(&k.keys, h)?;
                let phase = first & 0x04 != 0;
                if phase == k.phase {
                    return open(&k.keys, h, largest, &mut self.scratch);
                }
                // a key update (RFC 9001 §6): try the next phase's keys
                if k.next.is_none() {
                    k.next = k.keys.next();
                }
                let o = open(k.next.as_ref()?, h, largest, &mut self.scratch)?;
                let next = k.next.take()?;
                k.keys = next;
                k.phase = phase;
                Some(o)
            }
            _ => None,
        }
    }

    /// The connection's secrets from the key log, by its ClientHello's
    /// random.
    fn secrets(&mut self) -> Option<&Secrets> {
        if self.keys.secrets.is_none() {
            let (ch, _) = self.client_hello()?;
            self.keys.secrets = self.store.get(&ch.random);
            self.keys_logged = self.keys.secrets.is_some();
        }
        self.keys.secrets.as_ref()
    }

    /// Handshake (`space` 1) or 1-RTT (2) keys of both directions from the
    /// logged secrets and the ServerHello's suite.
    fn derive(&mut self, side: Side, client: SecretLabel, server: SecretLabel, space: usize) {
        let Some(suite) = self
            .server_hellos()
            .iter()
            .rev()
            .find(|(sh, _)| !sh.hello_retry_request)
            .and_then(|(sh, _)| quic_suite(sh.cipher_suite))
        else {
            return;
        };
        let version = self.version;
        let Some(secrets) = self.secrets().cloned() else {
            return;
        };
        let label = if side == Side::Client { client } else { server };
        let Some(secret) = secrets.get(label) else {
            return;
        };
        let Some(keys) = PacketKeys::from_secret(suite, secret, version) else {
            return;
        };
        if space == 1 {
            self.keys.handshake[side.index()] = Some(keys);
        } else {
            self.keys.one_rtt[side.index()] = Some(OneRtt {
                keys,
                phase: false,
                next: None,
            });
        }
    }

    /// 0-RTT keys: the early secret with whichever TLS 1.3 suite opens the
    /// packet (the resumed session's suite is not in the capture).
    fn zero_rtt_keys(&mut self, h: &Header<'_>, largest: Option<u64>) {
        let version = self.version;
        let Some(secret) = self
            .secrets()
            .and_then(|s| s.get(SecretLabel::ClientEarlyTraffic))
            .map(<[u8]>::to_vec)
        else {
            return;
        };
        for suite in tls13_suites() {
            if let Some(k) = PacketKeys::from_secret(suite, &secret, version) {
                if open(&k, h, largest, &mut self.scratch).is_some() {
                    self.keys.zero_rtt = Some(k);
                    return;
                }
            }
        }
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
                let again = self.crypto[s][level].push(offset, data, at);
                rec.crypto_again |= again;
                let (o, n) = rec.crypto.get_or_insert((offset, 0));
                *o = (*o).min(offset);
                *n += data.len() as u32;
                if level == 0 {
                    self.hellos_read(side);
                } else if level == 1 && side == Side::Server && self.transport[s].is_none() {
                    self.encrypted_extensions();
                }
            }
            Frame::Ack {
                largest,
                ack_delay,
                ranges,
                ..
            } => {
                let exp = self.transport[s]
                    .as_ref()
                    .and_then(|t| t.ack_delay_exponent)
                    .unwrap_or(DEFAULT_ACK_DELAY_EXPONENT)
                    .min(20);
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
                self.first_stream[s].get_or_insert(at);
                if self.speaks_http3() {
                    self.h3.stream(side, id, offset, data, fin, at);
                }
            }
            Frame::ResetStream { id, .. } | Frame::StopSending { id, .. }
                if self.speaks_http3() =>
            {
                self.h3.reset(side, id, at);
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
                self.handshake_done.get_or_insert(at);
            }
            Frame::NewConnectionId { cid, .. } if self.new_cids.len() < 64 => {
                self.new_cids.push(cid.to_vec());
            }
            Frame::ConnectionClose {
                app, error, reason, ..
            } if self.closes.len() < 8 => {
                let reason: String = String::from_utf8_lossy(reason).chars().take(120).collect();
                self.closes.push(Close {
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

    fn flow_event(
        &mut self,
        side: Side,
        at: FrameRef,
        kind: &'static str,
        stream: Option<u64>,
        value: u64,
    ) {
        if self.flow.len() < EVENTS_CAP {
            self.flow.push(FlowEvent {
                side,
                at,
                kind,
                stream,
                value,
            });
        }
    }

    /// Whether the client offered HTTP/3 (ALPN `h3`, or a draft's `h3-NN`,
    /// RFC 9114 §3.1): only then are the streams read as HTTP/3.
    fn speaks_http3(&mut self) -> bool {
        if self.http3.is_none() {
            let Some((ch, _)) = self.client_hello() else {
                return false;
            };
            self.http3 = Some(ch.alpn.iter().any(|a| a == "h3" || a.starts_with("h3-")));
        }
        self.http3 == Some(true)
    }

    /// The client's transport parameters once its ClientHello is whole.
    fn hellos_read(&mut self, side: Side) {
        if side != Side::Client || self.transport[0].is_some() {
            return;
        }
        let Some(m) = self.crypto[0][0].message(1) else {
            return;
        };
        if let Some(tp) = m
            .body
            .as_deref()
            .and_then(|b| hello::client_hello_extension(b, 0x39))
        {
            self.transport[0] = Some(TransportParameters::parse(tp));
        }
    }

    /// The server's transport parameters from its EncryptedExtensions.
    fn encrypted_extensions(&mut self) {
        let Some(body) = self.crypto[1][1].message(8).and_then(|m| m.body.as_deref()) else {
            return;
        };
        let block = body.get(2..).unwrap_or_default();
        if let Some(tp) = hello::extension_in_block(block, 0x39) {
            self.transport[1] = Some(TransportParameters::parse(tp));
        }
    }

    /// An ACK from `side` of the peer's packets in `space`: an RTT sample
    /// when the largest acknowledged is new (RFC 9002 §5.1) and packets
    /// declared lost by the packet threshold (§6.1.1).
    fn ack(
        &mut self,
        side: Side,
        space: usize,
        largest: u64,
        delay: Duration,
        ranges: &[(u64, u64)],
        at: FrameRef,
    ) {
        let peer = side.peer();
        let sent = &mut self.sent[peer.index()][space];
        let new_largest = sent.largest_acked.is_none_or(|l| largest > l);
        if new_largest {
            sent.largest_acked = Some(largest);
        }
        let mut sample = None;
        let mut lost = Vec::new();
        let acked = |pn: u64| ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&pn));
        while let Some(&(pn, sent_at, _)) = sent.q.front() {
            if pn > largest {
                break;
            }
            if acked(pn) {
                if pn == largest && new_largest {
                    sample = Some(sent_at);
                }
                sent.q.pop_front();
            } else if pn + PACKET_THRESHOLD <= largest {
                lost.push((pn, sent_at));
                sent.q.pop_front();
            } else {
                break;
            }
        }
        // acked packets behind one still waiting: the queue is in packet
        // number order, so only its head up to `largest` can be acked (a
        // scan of the whole queue on every ACK cost O(packets in flight))
        let mut end = sent.q.partition_point(|e| e.0 <= largest);
        let mut i = 0;
        while i < end {
            let (pn, t, _) = sent.q[i];
            if acked(pn) {
                if pn == largest && new_largest {
                    sample = Some(t);
                }
                sent.q.remove(i);
                end -= 1;
            } else {
                i += 1;
            }
        }
        for (pn, sent_at) in lost {
            self.push_loss(Loss {
                side: peer,
                space: space as u8,
                pn,
                at: sent_at,
                declared_by: Some(at),
            });
        }
        if let Some(sent_at) = sample {
            let raw = at.ts - sent_at.ts;
            let rtt = if raw - delay > Duration::ZERO {
                raw - delay
            } else {
                raw
            };
            if let Some(t) = &mut self.trace {
                t.sample(side, at, rtt);
            }
            if self.samples.len() < EVENTS_CAP {
                self.samples.push(AckSample {
                    acker: side,
                    packet: sent_at,
                    ack: at,
                    space: space as u8,
                    rtt,
                    ack_delay: delay,
                });
            }
        }
    }

    /// When the last packet passed.
    pub(crate) fn last_ts(&self) -> Timestamp {
        self.last.ts
    }
}
