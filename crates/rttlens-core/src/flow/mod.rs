//! TCP connections: keyed by 4-tuple and ISN, tracked per direction.
//!
//! [`FlowTable`] takes decoded segments in capture order and hands back each
//! [`Conn`] once it is over (closed and quiet, reused by a new SYN, idle, or
//! at the end of the capture), so memory grows with the connections open at
//! once, not with the file. A SYN with a new ISN on a 4-tuple in use starts a
//! new connection (as Wireshark's `tcp.stream` does).
//!
//! Per direction ([`half::Half`]): sequence space unwrapped to 64-bit stream
//! offsets (RFC 9293 §3.4 wraparound), ACKs made *causally eligible* for the
//! sender before they count (docs/design.md §4 "Causality"), retransmission
//! classes, zero windows, capture drops, rounds and in-order reassembly.

pub mod half;
pub mod reassembly;
pub mod rounds;
pub mod rtt;
pub mod trace;
pub mod turns;

use std::net::{IpAddr, SocketAddr};

use rustc_hash::FxHashMap;

use crate::base::seq::SeqNumber;
use crate::base::side::{FrameRef, Side};
use crate::base::time::{Duration, Timestamp};
use crate::flow::rtt::{RttMethod, RttSamples};
use crate::wire::{TcpFlags, TcpOptions, TcpSegment};
use half::Half;
use reassembly::{SideSink, Trackers};
use trace::{Trace, TracePacket};
use turns::Turns;

/// A connection closed (FIN both ways or RST) and quiet this long is handed on.
pub const CLOSED_LINGER: Duration = Duration::from_millis(1_000);
/// After a closed connection is handed on, segments on its 4-tuple without a
/// SYN (a late retransmitted FIN, the last ACK) are ignored this long, like
/// TIME_WAIT (RFC 9293 §3.6.1), instead of opening a phantom connection.
pub const TOMBSTONE: Duration = Duration::from_millis(60_000);
/// A connection without a packet for this long is handed on.
pub const IDLE_TIMEOUT: Duration = Duration::from_millis(300_000);
/// TCP timestamp option length with padding (RFC 7323 §3), bytes per segment.
pub const TS_OPTION_LEN: u64 = 12;
/// Every this many tracked segments (over the whole capture, not per table)
/// the pipeline asks the table for connections to hand on
/// ([`FlowTable::sweep`])…
pub const SWEEP_EVERY: u64 = 16_384;
/// …and sooner, once [`SWEEP_INTERVAL`] of capture time has passed, after
/// at least this many: a closed connection is then handed on about
/// [`CLOSED_LINGER`] after it closed whatever the packet rate (streamed
/// output comes sooner, fewer connections wait in memory), while a sweep
/// of many open connections stays rare against the segments between.
pub const SWEEP_MIN: u64 = 1_024;
/// See [`SWEEP_MIN`].
pub const SWEEP_INTERVAL: Duration = Duration::from_millis(100);

/// A SYN or SYN-ACK as first seen, with its retransmissions.
#[derive(Debug, Clone, Copy)]
pub struct SynInfo {
    /// First transmission.
    pub first: FrameRef,
    /// Latest transmission.
    pub last: FrameRef,
    /// Transmissions seen (1 = no retransmission).
    pub count: u32,
    /// Initial sequence number.
    pub isn: SeqNumber,
    /// Options carried (MSS, window scale, SACK-permitted, timestamps, TFO).
    pub options: TcpOptions,
    /// Raw window field (never scaled in a SYN, RFC 7323 §2.2).
    pub window: u16,
    /// Payload carried (TCP Fast Open data, RFC 7413), bytes.
    pub data_len: u32,
    /// The acknowledgment number (SYN-ACK only: whether it covers the SYN's
    /// data tells if TFO data was accepted, RFC 7413 §4.2).
    pub ack: SeqNumber,
    /// Payload of the latest transmission (a client that gave up on TFO
    /// resends its SYN without data, RFC 7413 §4.1.3).
    pub last_data_len: u32,
    /// Fast Open option of the latest transmission.
    pub last_fast_open: Option<crate::wire::FastOpen>,
    /// The first transmission without a Fast Open option after one with it:
    /// where a client gave up on TFO (RFC 7413 §4.1.3).
    pub first_plain: Option<FrameRef>,
}

/// Data carried by the client's SYN (TCP Fast Open), held until the SYN-ACK
/// says whether the server took it: taken data is the start of the stream;
/// refused data is resent by the client after the handshake and counted then.
#[derive(Debug, Clone)]
struct SynData {
    seq: SeqNumber,
    len: u32,
    bytes: Vec<u8>,
    at: FrameRef,
}

/// Without a SYN: whether a first payload's sender is the client (`true`:
/// a TLS ClientHello or an HTTP request line), the server (`false`: a TLS
/// ServerHello or an HTTP status line), or cannot be told (`None`: mid-way
/// through a stream). Servers on ephemeral ports (a test server bound to
/// port 0, a load balancer's back end) defeat the port rule, the opening
/// bytes of the exchange do not. Only the first bytes are looked at (a
/// record header and a handshake type, RFC 8446 §5.1 and §4; a request
/// method or `HTTP/1.`, RFC 9112 §3 and §4), so no parser is needed.
fn role_from_payload(payload: &[u8]) -> Option<bool> {
    Opening::of(payload).map(Opening::from_client)
}

/// What the first bytes of a stream say it carries (see
/// `role_from_payload`): enough to tell a request from a TLS handshake
/// when the snapshot length cut the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// A TLS handshake record holding a ClientHello.
    TlsClientHello,
    /// A TLS handshake record holding a ServerHello.
    TlsServerHello,
    /// An HTTP/1.x request line (a method and a space).
    HttpRequest,
    /// An HTTP/1.x status line.
    HttpResponse,
}

impl Opening {
    /// The opening of `payload`, if it is one of these.
    pub fn of(payload: &[u8]) -> Option<Opening> {
        const METHODS: [&[u8]; 8] = [
            b"GET ",
            b"POST ",
            b"HEAD ",
            b"PUT ",
            b"DELETE ",
            b"OPTIONS ",
            b"PATCH ",
            b"CONNECT ",
        ];
        match payload {
            [0x16, 0x03, _, _, _, 1, ..] => Some(Opening::TlsClientHello),
            [0x16, 0x03, _, _, _, 2, ..] => Some(Opening::TlsServerHello),
            p if METHODS.iter().any(|m| p.starts_with(m)) => Some(Opening::HttpRequest),
            p if p.starts_with(b"HTTP/1.") => Some(Opening::HttpResponse),
            _ => None,
        }
    }

    /// A client sends it.
    pub fn from_client(self) -> bool {
        matches!(self, Opening::TlsClientHello | Opening::HttpRequest)
    }
}

/// One TCP connection.
#[derive(Debug)]
pub struct Conn<P> {
    /// 0-based index in order of first packet (matches Wireshark's `tcp.stream`
    /// for captures that start before their connections).
    pub index: u64,
    /// The connecting host.
    pub client: SocketAddr,
    /// The accepting host.
    pub server: SocketAddr,
    /// Roles come from a SYN (else guessed: from the first packet's payload
    /// when it opens a TLS or HTTP exchange, else the lower port is the
    /// server).
    pub roles_from_syn: bool,
    /// First and last packet.
    pub first: FrameRef,
    /// Last packet.
    pub last: FrameRef,
    /// Packets of this connection.
    pub frames: u64,
    /// Packets each side sent, indexed by [`Side::index`] (one of them 0:
    /// the capture saw one direction only).
    pub segments: [u64; 2],
    /// Each side's latest packet, indexed by [`Side::index`].
    pub last_seen: [Option<FrameRef>; 2],
    /// Data segments whose payload the snapshot length cut: the byte
    /// stream has holes, TLS and HTTP cannot be read.
    pub payload_cut: u64,
    /// Per direction, indexed by [`Side::index`] of the sender.
    pub half: [Half; 2],
    /// The client's SYN.
    pub syn: Option<SynInfo>,
    /// The server's SYN-ACK.
    pub syn_ack: Option<SynInfo>,
    /// The client's ACK completing the handshake.
    pub handshake_ack: Option<FrameRef>,
    /// First reset and who sent it.
    pub rst: Option<(Side, FrameRef)>,
    /// RTT samples.
    pub rtt: RttSamples,
    /// Protocol trackers fed by the reassembled streams.
    pub protocols: P,
    /// Request/response turns at the TCP level.
    pub turns: Turns,
    /// What the client's first data opened with, from its captured bytes.
    pub client_opening: Option<Opening>,
    /// Every packet, when the table keeps traces ([`FlowTable::with_trace`]).
    pub trace: Option<Box<Trace>>,
    syn_data: Option<SynData>,
}

impl<P: Trackers> Conn<P> {
    fn new(index: u64, seg: &TcpSegment<'_>, at: FrameRef) -> Conn<P> {
        let src = SocketAddr::new(seg.src, seg.src_port);
        let dst = SocketAddr::new(seg.dst, seg.dst_port);
        let syn = seg.flags.contains(TcpFlags::SYN);
        let ack = seg.flags.contains(TcpFlags::ACK);
        let (client, server, from_syn) = if syn && !ack {
            (src, dst, true)
        } else if syn && ack {
            (dst, src, true)
        } else if let Some(src_is_client) = role_from_payload(seg.payload) {
            if src_is_client {
                (src, dst, false)
            } else {
                (dst, src, false)
            }
        } else if seg.src_port > seg.dst_port {
            (src, dst, false)
        } else {
            (dst, src, false)
        };
        Conn {
            index,
            client,
            server,
            roles_from_syn: from_syn,
            first: at,
            last: at,
            frames: 0,
            segments: [0; 2],
            last_seen: [None; 2],
            payload_cut: 0,
            half: [Half::new(Side::Client), Half::new(Side::Server)],
            syn: None,
            syn_ack: None,
            handshake_ack: None,
            rst: None,
            rtt: RttSamples::default(),
            protocols: P::default(),
            turns: Turns::default(),
            client_opening: None,
            trace: None,
            syn_data: None,
        }
    }

    /// Both directions closed by FIN, or reset.
    pub fn is_closed(&self) -> bool {
        self.rst.is_some() || (self.half[0].fin.is_some() && self.half[1].fin.is_some())
    }

    /// Baseline RTT so far (sum of the half minima), if both halves are known.
    pub fn rtt_min(&self) -> Option<Duration> {
        Some(self.rtt.h(Side::Client)? + self.rtt.h(Side::Server)?)
    }

    fn push(&mut self, seg: &TcpSegment<'_>, at: FrameRef) {
        self.frames += 1;
        self.last = at;
        let side = if SocketAddr::new(seg.src, seg.src_port) == self.client {
            Side::Client
        } else {
            Side::Server
        };
        let s = side.index();
        let p = side.peer().index();
        self.segments[s] += 1;
        self.last_seen[s] = Some(at);
        if seg.is_cut() {
            self.payload_cut += 1;
        }
        let flags = seg.flags;
        let is_syn = flags.contains(TcpFlags::SYN);
        let is_ack = flags.contains(TcpFlags::ACK);
        if is_syn {
            self.on_syn(side, seg, at);
        } else if side == Side::Client && is_ack && self.handshake_ack.is_none() {
            if let Some(sa) = self.syn_ack {
                if seg.ack == sa.isn.add(1) {
                    self.handshake_ack = Some(at);
                    if sa.count == 1 {
                        self.rtt
                            .add(Side::Client, at, at.ts - sa.last.ts, RttMethod::Handshake);
                    }
                }
            }
        }
        if flags.contains(TcpFlags::RST) && self.rst.is_none() {
            self.rst = Some((side, at));
        }
        let wants = self.protocols.wants_bytes();
        let retx_before = self.half[s].retx_count;
        if is_ack {
            // the half scales the window field it is given; a SYN's is never
            // scaled (RFC 7323 §2.2), so hand it over as the field that
            // scales back to (about) its value
            // a RST's window field means nothing (RFC 9293 §3.10.7: the
            // receiver of a RST checks only its sequence number; Wireshark
            // marks no zero window or duplicate ACK on one): keep the last
            let rst = flags.contains(TcpFlags::RST);
            let window = if is_syn {
                Some((seg.window as u64) >> self.half[p].peer_wscale.min(14))
            } else if rst {
                None
            } else {
                Some(seg.window as u64)
            };
            // pure: no payload, SYN, FIN or RST, and at the sender's next
            // sequence number (a keep-alive sits one below it)
            let pure = seg.payload_len == 0
                && !is_syn
                && !rst
                && !flags.contains(TcpFlags::FIN)
                && self.half[s]
                    .offset(seg.seq)
                    .is_none_or(|o| o >= self.half[s].snd_nxt);
            let n = seg.options.sack_count.min(4) as usize;
            let sack = &seg.options.sack_blocks[..n];
            let mut sink = SideSink {
                side: side.peer(),
                protocols: &mut self.protocols,
            };
            let sink: Option<&mut dyn reassembly::StreamSink> =
                if wants { Some(&mut sink) } else { None };
            self.half[p].on_peer_ack(seg.ack, window, sack, pure, at, &mut self.rtt, sink);
            if side == Side::Server && self.half[p].last_full_ack == Some(at) {
                if let Some(q) = self.half[p].last_new_data {
                    self.turns.on_server_full_ack(q, at);
                }
            }
        }
        if let Some((tsval, tsecr)) = seg.options.timestamps {
            self.half[s].note_tsval(tsval, at.ts);
            if is_ack && tsecr != 0 {
                self.half[p].on_tsecr(tsecr, at, &mut self.rtt);
            }
        }
        if seg.payload_len > 0 && is_syn && side == Side::Client {
            // TFO data: fed to the stream once the SYN-ACK accepts it
            if self.syn_data.is_none() && self.syn_ack.is_none() {
                self.syn_data = Some(SynData {
                    seq: seg.seq.add(1),
                    len: seg.payload_len,
                    bytes: seg.payload.to_vec(),
                    at,
                });
            }
        } else if seg.payload_len > 0 {
            let seq = if is_syn { seg.seq.add(1) } else { seg.seq };
            let h_x = self.rtt.h(side).unwrap_or(Duration::ZERO);
            let rtt_min = self.rtt_min().unwrap_or(Duration::from_millis(1));
            let mut sink = SideSink {
                side,
                protocols: &mut self.protocols,
            };
            let sink: Option<&mut dyn reassembly::StreamSink> =
                if wants { Some(&mut sink) } else { None };
            let h_peer = self.rtt.h(side.peer()).unwrap_or(Duration::ZERO);
            // all this side's earlier data acknowledged, and it waited longer
            // than that ACK's way to it: its application paused
            let paused = side == Side::Server
                && self.turns.pending(self.half[p].last_new_data)
                && self.half[s].ack_seen_all()
                && self.half[s].last_full_ack.is_some_and(|k| {
                    (at.ts - k.ts) - h_x > Duration::from_millis(1).max(rtt_min / 4)
                });
            if side == Side::Client && self.half[s].first_data.is_none() {
                self.client_opening = Opening::of(seg.payload);
            }
            self.half[s].on_data(
                seq,
                seg.payload_len,
                seg.payload,
                at,
                h_x,
                h_peer,
                rtt_min,
                sink,
            );
            if self.half[s].last_new_data == Some(at) {
                match side {
                    Side::Client => self.turns.on_client_data(),
                    Side::Server if self.turns.pending(self.half[p].last_new_data) => {
                        // this answer acknowledges all the client sent
                        let c = &self.half[p];
                        let acks = c.last_new_data.filter(|_| is_ack && c.acked >= c.snd_nxt);
                        let (full, drops) =
                            (self.half[s].segment_size(), self.half[s].dropped_bytes);
                        let len = u64::from(seg.payload_len);
                        self.turns
                            .on_server_data(at, acks, len, paused, full, drops);
                    }
                    Side::Server => {}
                }
            }
        }
        if seg.payload_len > 0 || flags.contains(TcpFlags::FIN) {
            // what the other side sends next may answer this (not Nagle,
            // not ACK-clocked): data, or the end of the stream (a TLS
            // close_notify answers a FIN)
            self.half[p].peer_spoke = true;
            self.half[p].peer_spoke_since_data = true;
        }
        if flags.contains(TcpFlags::FIN) && self.half[s].fin.is_none() {
            self.half[s].fin = Some(at);
        }
        if let Some(t) = &mut self.trace {
            let data_seq = if is_syn { seg.seq.add(1) } else { seg.seq };
            t.packets.push(TracePacket {
                at,
                side,
                flags,
                seq: self.half[s].offset(data_seq),
                len: seg.payload_len,
                ack: if is_ack {
                    self.half[p].offset(seg.ack)
                } else {
                    None
                },
                window: u64::from(seg.window),
                retransmission: self.half[s].retx_count > retx_before,
            });
        }
    }

    /// Take the trace (if kept) with its windows scaled and its RTT samples,
    /// once the connection is over.
    pub fn take_trace(&mut self) -> Option<Box<Trace>> {
        let mut t = self.trace.take()?;
        // side i's window field is scaled by its own shift, which the
        // other half holds as `peer_wscale`
        t.scale_windows([self.half[1].peer_wscale, self.half[0].peer_wscale]);
        t.wscale_known = [self.half[1].wscale_known, self.half[0].wscale_known];
        t.rtt = self.rtt.all.take().unwrap_or_default();
        Some(t)
    }

    fn on_syn(&mut self, side: Side, seg: &TcpSegment<'_>, at: FrameRef) {
        let info = SynInfo {
            first: at,
            last: at,
            count: 1,
            isn: seg.seq,
            options: seg.options,
            window: seg.window,
            data_len: seg.payload_len,
            ack: seg.ack,
            last_data_len: seg.payload_len,
            last_fast_open: seg.options.fast_open,
            first_plain: None,
        };
        let slot = match side {
            Side::Client => &mut self.syn,
            Side::Server => &mut self.syn_ack,
        };
        match slot {
            Some(prev) if prev.isn == seg.seq => {
                prev.count += 1;
                prev.last = at;
                prev.last_data_len = seg.payload_len;
                prev.last_fast_open = seg.options.fast_open;
                if prev.first_plain.is_none()
                    && prev.options.fast_open.is_some()
                    && seg.options.fast_open.is_none()
                {
                    prev.first_plain = Some(at);
                }
                return;
            }
            Some(_) => return, // a different ISN on a live connection: keep the first
            None => *slot = Some(info),
        }
        self.half[side.index()].set_isn(seg.seq);
        if side == Side::Server {
            if let Some(syn) = self.syn {
                self.rtt
                    .add(Side::Server, at, at.ts - syn.last.ts, RttMethod::Handshake);
            }
            // TFO: the SYN-ACK acknowledges the SYN's data only if the server took it
            if let Some(d) = self.syn_data.take() {
                if seg.ack == d.seq.add(d.len) {
                    let wants = self.protocols.wants_bytes();
                    let mut sink = SideSink {
                        side: Side::Client,
                        protocols: &mut self.protocols,
                    };
                    let sink: Option<&mut dyn reassembly::StreamSink> =
                        if wants { Some(&mut sink) } else { None };
                    self.half[Side::Client.index()].on_data(
                        d.seq,
                        d.len,
                        &d.bytes,
                        d.at,
                        Duration::ZERO,
                        Duration::ZERO,
                        Duration::from_millis(1),
                        sink,
                    );
                }
            }
        }
        // window scaling applies only when both SYNs carried the option (RFC 7323 §2.2)
        if let (Some(syn), Some(sa)) = (self.syn, self.syn_ack) {
            // each sender's MSS: the peer's MSS option, less the timestamp
            // option when both SYNs negotiated it (RFC 7323 §3)
            let ts = if syn.options.timestamps.is_some() && sa.options.timestamps.is_some() {
                TS_OPTION_LEN
            } else {
                0
            };
            self.half[Side::Client.index()].mss =
                sa.options.mss.map_or(0, |m| (m as u64).saturating_sub(ts));
            self.half[Side::Server.index()].mss =
                syn.options.mss.map_or(0, |m| (m as u64).saturating_sub(ts));
            let (c, s) = match (syn.options.window_scale, sa.options.window_scale) {
                (Some(c), Some(s)) => (c.min(14), s.min(14)),
                _ => (0, 0),
            };
            self.half[Side::Client.index()].peer_wscale = s;
            self.half[Side::Server.index()].peer_wscale = c;
            self.half[Side::Client.index()].wscale_known = true;
            self.half[Side::Server.index()].wscale_known = true;
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FlowKey {
    a: IpAddr,
    b: IpAddr,
    pa: u16,
    pb: u16,
}

impl FlowKey {
    fn of(seg: &TcpSegment<'_>) -> FlowKey {
        let x = (seg.src, seg.src_port);
        let y = (seg.dst, seg.dst_port);
        let (l, h) = if x <= y { (x, y) } else { (y, x) };
        FlowKey {
            a: l.0,
            b: h.0,
            pa: l.1,
            pb: h.1,
        }
    }
}

/// A hash of the connection `seg` belongs to (its 4-tuple, whichever way
/// the segment goes): the parallel pipeline's choice of shard.
pub(crate) fn conn_hash(seg: &TcpSegment<'_>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    FlowKey::of(seg).hash(&mut h);
    h.finish()
}

/// A connection in the table, with what a sweep looks at kept beside it:
/// a sweep then reads the table's own array, not every connection's
/// memory (thousands of cache misses per sweep on a busy capture).
#[derive(Debug)]
struct Slot<P> {
    /// [`Conn::index`].
    index: u64,
    /// The connection's last segment's time.
    last: Timestamp,
    /// [`Conn::is_closed`] after its last segment.
    closed: bool,
    conn: Box<Conn<P>>,
}

/// The connection table.
#[derive(Debug, Default)]
pub struct FlowTable<P> {
    conns: FxHashMap<FlowKey, Slot<P>>,
    /// Closed connections handed on, and when.
    closed: FxHashMap<FlowKey, Timestamp>,
    /// Segments ignored because their connection had closed.
    pub late_segments: u64,
    next_index: u64,
    /// The keys a sweep hands on (kept for the next sweep).
    over: Vec<(u64, FlowKey)>,
    /// Most connections open at once.
    pub peak_open: usize,
    /// Keep per-frame marks in every connection's halves.
    marks: bool,
    /// Keep every connection's packets ([`Conn::trace`]).
    trace: bool,
}

impl<P: Trackers> FlowTable<P> {
    /// An empty table.
    pub fn new() -> FlowTable<P> {
        Self::default()
    }

    /// An empty table whose connections keep every frame's TCP analysis
    /// marks ([`half::Half::marks`]): memory grows with the capture, so only
    /// for cross-checks.
    pub fn with_marks() -> FlowTable<P> {
        Self {
            marks: true,
            ..Self::default()
        }
    }

    /// An empty table whose connections keep every packet ([`Conn::trace`])
    /// for the pictures: memory grows with the packets of the connections
    /// open at once.
    pub fn with_trace() -> FlowTable<P> {
        Self {
            trace: true,
            ..Self::default()
        }
    }

    /// Account one segment seen at `at`. A SYN with a new ISN on a 4-tuple
    /// in use ends the old connection, which is passed to `done`; returns
    /// whether the segment opened a new connection. Connections that are
    /// closed or idle are handed on by [`sweep`](Self::sweep), which the
    /// caller runs at points chosen over the whole capture ([`SWEEP_EVERY`],
    /// [`SWEEP_MIN`]), so that a table holding
    /// a share of the capture's connections (one per thread) hands each
    /// connection on at the same point as a table holding them all.
    pub fn push(
        &mut self,
        seg: &TcpSegment<'_>,
        at: FrameRef,
        done: &mut dyn FnMut(Box<Conn<P>>),
    ) -> bool {
        let key = FlowKey::of(seg);
        let syn_only = seg.flags.contains(TcpFlags::SYN) && !seg.flags.contains(TcpFlags::ACK);
        if syn_only {
            if let Some(slot) = self.conns.get(&key) {
                let same = slot.conn.syn.is_some_and(|s| s.isn == seg.seq);
                if !same {
                    if let Some(old) = self.conns.remove(&key) {
                        done(old.conn);
                    }
                }
            }
        }
        let mut opened = false;
        let slot = match self.conns.get_mut(&key) {
            Some(slot) => slot,
            None if !syn_only && !self.closed.is_empty() && self.closed.contains_key(&key) => {
                self.late_segments += 1;
                return false;
            }
            None => {
                let mut c = Box::new(Conn::new(self.next_index, seg, at));
                if self.marks {
                    for h in &mut c.half {
                        h.marks = Some(Vec::new());
                    }
                }
                if self.trace {
                    c.trace = Some(Box::default());
                    c.rtt.all = Some(Vec::new());
                }
                self.next_index += 1;
                opened = true;
                self.conns.entry(key).or_insert(Slot {
                    index: c.index,
                    last: at.ts,
                    closed: false,
                    conn: c,
                })
            }
        };
        slot.conn.push(seg, at);
        slot.last = slot.conn.last.ts;
        slot.closed = slot.conn.is_closed();
        self.peak_open = self.peak_open.max(self.conns.len());
        opened
    }

    /// Connections opened so far (the next connection's index).
    pub fn opened(&self) -> u64 {
        self.next_index
    }

    /// Hand on, in index order, every connection closed and quiet for
    /// [`CLOSED_LINGER`] or silent for [`IDLE_TIMEOUT`] at `now` (the
    /// latest timestamp of the capture so far), and forget tombstones older
    /// than [`TOMBSTONE`].
    pub fn sweep(&mut self, now: Timestamp, done: &mut dyn FnMut(Box<Conn<P>>)) {
        // reused from sweep to sweep: a fresh vector of thousands of keys
        // each time cost page faults
        let mut over = std::mem::take(&mut self.over);
        over.clear();
        over.extend(
            self.conns
                .iter()
                .filter(|(_, c)| {
                    let quiet = now - c.last;
                    (c.closed && quiet > CLOSED_LINGER) || quiet > IDLE_TIMEOUT
                })
                .map(|(k, c)| (c.index, *k)),
        );
        // index order, not the hash map's: the same whether one table holds
        // every connection or each thread's table a share of them
        over.sort_unstable_by_key(|&(i, _)| i);
        for &(_, k) in &over {
            if let Some(c) = self.conns.remove(&k) {
                if c.closed {
                    self.closed.insert(k, now);
                }
                done(c.conn);
            }
        }
        self.over = over;
        self.closed.retain(|_, t| now - *t < TOMBSTONE);
    }

    /// End of capture: hand on every connection still open, in index order.
    pub fn finish(self, done: &mut dyn FnMut(Box<Conn<P>>)) {
        let mut rest: Vec<Box<Conn<P>>> = self.conns.into_values().map(|s| s.conn).collect();
        rest.sort_by_key(|c| c.index);
        for c in rest {
            done(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::half::RetxKind;
    use super::*;
    use crate::wire::TcpSegment;
    use std::net::Ipv4Addr;

    #[test]
    fn roles_without_syn_from_the_opening_bytes() {
        // a ClientHello record header (type 22, TLS 1.0 record, length, type 1)
        assert_eq!(role_from_payload(&[0x16, 3, 1, 0, 200, 1, 0]), Some(true));
        assert_eq!(role_from_payload(&[0x16, 3, 3, 0, 90, 2, 0]), Some(false));
        assert_eq!(role_from_payload(b"GET / HTTP/1.1\r\n"), Some(true));
        assert_eq!(role_from_payload(b"HTTP/1.1 200 OK\r\n"), Some(false));
        // application data, a cut header, nothing: not told
        assert_eq!(role_from_payload(&[0x17, 3, 3, 0, 90, 1]), None);
        assert_eq!(role_from_payload(&[0x16, 3, 1]), None);
        assert_eq!(role_from_payload(b""), None);
    }

    /// No protocol layer: these tests look at TCP only.
    #[derive(Debug, Default)]
    struct NoTrackers;

    impl Trackers for NoTrackers {
        fn wants_bytes(&self) -> bool {
            false
        }
        fn data(&mut self, _: Side, _: u64, _: &[u8], _: FrameRef) {}
        fn gap(&mut self, _: Side, _: u64, _: u64) {}
    }

    type Conn = super::Conn<NoTrackers>;

    const C: ([u8; 4], u16) = ([10, 0, 0, 1], 40000);
    const S: ([u8; 4], u16) = ([10, 0, 0, 2], 443);

    struct Net {
        table: FlowTable<NoTrackers>,
        done: Vec<Conn>,
        frame: u64,
    }

    impl Net {
        fn new() -> Net {
            Net {
                table: FlowTable::new(),
                done: Vec::new(),
                frame: 0,
            }
        }

        #[allow(clippy::too_many_arguments)]
        fn seg(
            &mut self,
            from_client: bool,
            ms: f64,
            flags: TcpFlags,
            seq: u32,
            ack: u32,
            len: u32,
            opts: TcpOptions,
        ) {
            let (src, dst) = if from_client { (C, S) } else { (S, C) };
            let payload = vec![0u8; len as usize];
            let seg = TcpSegment {
                src: Ipv4Addr::from(src.0).into(),
                dst: Ipv4Addr::from(dst.0).into(),
                src_port: src.1,
                dst_port: dst.1,
                seq: SeqNumber(seq),
                ack: SeqNumber(ack),
                flags,
                window: 1000,
                options: opts,
                payload: &payload,
                payload_len: len,
                ip_id: 0,
            };
            self.frame += 1;
            let at = FrameRef {
                frame: self.frame,
                ts: Timestamp::from_nanos((ms * 1e6) as i64),
            };
            let done = &mut self.done;
            self.table.push(&seg, at, &mut |c| done.push(*c));
        }

        fn finish(mut self) -> Vec<Conn> {
            let done = &mut self.done;
            self.table.finish(&mut |c| done.push(*c));
            self.done
        }
    }

    const SYN: TcpFlags = TcpFlags::SYN;
    const ACK: TcpFlags = TcpFlags::ACK;
    const SYNACK: TcpFlags = TcpFlags(TcpFlags::SYN.0 | TcpFlags::ACK.0);
    const FINACK: TcpFlags = TcpFlags(TcpFlags::FIN.0 | TcpFlags::ACK.0);

    fn wscale(shift: u8) -> TcpOptions {
        TcpOptions {
            window_scale: Some(shift),
            mss: Some(1460),
            ..TcpOptions::default()
        }
    }

    /// Handshake at 0 / 10 / 10.1 ms (server 10 ms away, client-side capture).
    fn handshake(n: &mut Net, c_isn: u32, s_isn: u32) {
        n.seg(true, 0.0, SYN, c_isn, 0, 0, wscale(7));
        n.seg(
            false,
            10.0,
            SYNACK,
            s_isn,
            c_isn.wrapping_add(1),
            0,
            wscale(7),
        );
        n.seg(
            true,
            10.1,
            ACK,
            c_isn.wrapping_add(1),
            s_isn.wrapping_add(1),
            0,
            TcpOptions::default(),
        );
    }

    #[test]
    fn sequence_wraparound_keeps_offsets_and_rounds() {
        let mut n = Net::new();
        let s_isn = u32::MAX - 5_000;
        handshake(&mut n, 1, s_isn);
        let base = s_isn.wrapping_add(1);
        // 20 segments of 1000 B crossing 2^32, each ACKed 10 ms later in flights of 4
        let mut t = 20.0;
        for i in 0..20u32 {
            n.seg(
                false,
                t,
                ACK,
                base.wrapping_add(i * 1000),
                2,
                1000,
                TcpOptions::default(),
            );
            if i % 4 == 3 {
                n.seg(
                    true,
                    t + 0.05,
                    ACK,
                    2,
                    base.wrapping_add((i + 1) * 1000),
                    0,
                    TcpOptions::default(),
                );
                t += 10.0;
            }
        }
        let c = n.finish().remove(0);
        let h = &c.half[Side::Server.index()];
        assert_eq!(h.snd_nxt, 20_000);
        assert_eq!(h.acked, 20_000);
        assert_eq!(h.retx_count, 0);
        assert_eq!(h.dropped_bytes, 0);
        assert_eq!(c.half[1].peer_wscale, 7, "window scale from both SYNs");
    }

    #[test]
    fn new_isn_on_the_same_tuple_is_a_new_connection() {
        let mut n = Net::new();
        handshake(&mut n, 100, 900);
        n.seg(true, 20.0, FINACK, 101, 901, 0, TcpOptions::default());
        n.seg(false, 30.0, FINACK, 901, 102, 0, TcpOptions::default());
        handshake(&mut n, 5_000_000, 7_000_000);
        let done = n.finish();
        assert_eq!(done.len(), 2);
        assert_eq!(done[0].index, 0);
        assert_eq!(done[1].index, 1);
        assert_eq!(done[1].syn.map(|s| s.isn), Some(SeqNumber(5_000_000)));
    }

    #[test]
    fn syn_retransmission_counts_transmissions() {
        let mut n = Net::new();
        n.seg(true, 0.0, SYN, 7, 0, 0, wscale(7));
        n.seg(true, 1000.0, SYN, 7, 0, 0, wscale(7));
        n.seg(false, 1010.0, SYNACK, 70, 8, 0, wscale(7));
        let c = n.finish().remove(0);
        assert_eq!(c.syn.map(|s| s.count), Some(2));
        assert_eq!(
            c.rtt.h(Side::Server),
            Some(Duration::from_millis(10)),
            "h_s from the last SYN"
        );
    }

    /// Server sends `k` segments of 1000 B from offset 0 at time `t`.
    fn burst(n: &mut Net, t: f64, from: u32, k: u32) {
        for i in 0..k {
            n.seg(
                false,
                t,
                ACK,
                1001 + (from + i) * 1000,
                2,
                1000,
                TcpOptions::default(),
            );
        }
    }

    #[test]
    fn dupacks_make_a_fast_retransmit() {
        let mut n = Net::new();
        handshake(&mut n, 1, 1000);
        burst(&mut n, 20.0, 0, 6);
        // segment 1 lost after the capture point: the client ACKs 1 segment, then dupACKs
        for _ in 0..4 {
            n.seg(true, 20.1, ACK, 2, 2001, 0, TcpOptions::default());
        }
        n.seg(false, 30.2, ACK, 2001, 2, 1000, TcpOptions::default()); // retransmission
        n.seg(true, 30.3, ACK, 2, 7001, 0, TcpOptions::default());
        let c = n.finish().remove(0);
        let r = &c.half[Side::Server.index()].retx;
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].kind, RetxKind::FastRetransmit);
        assert!(r[0].dupacks >= 3 && !r[0].spurious);
        assert_eq!(r[0].original.map(|m| m.frame), Some(5));
    }

    #[test]
    fn long_silence_makes_an_rto() {
        let mut n = Net::new();
        handshake(&mut n, 1, 1000);
        burst(&mut n, 20.0, 0, 2);
        n.seg(false, 320.0, ACK, 1001, 2, 1000, TcpOptions::default());
        let c = n.finish().remove(0);
        let r = &c.half[Side::Server.index()].retx;
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].kind, RetxKind::Rto);
    }

    #[test]
    fn a_hole_filled_at_once_is_reordering_not_loss() {
        let mut n = Net::new();
        handshake(&mut n, 1, 1000);
        n.seg(false, 20.0, ACK, 2001, 2, 1000, TcpOptions::default());
        n.seg(false, 20.2, ACK, 1001, 2, 1000, TcpOptions::default());
        let c = n.finish().remove(0);
        let h = &c.half[Side::Server.index()];
        assert_eq!(h.out_of_order, 1);
        assert_eq!(h.retx_count, 0);
    }

    #[test]
    fn acked_unseen_data_is_a_capture_drop() {
        let mut n = Net::new();
        handshake(&mut n, 1, 1000);
        burst(&mut n, 20.0, 0, 1);
        // the capture missed the server's second segment; the client ACKs both
        n.seg(true, 20.5, ACK, 2, 3001, 0, TcpOptions::default());
        let c = n.finish().remove(0);
        let h = &c.half[Side::Server.index()];
        assert_eq!(h.dropped_bytes, 1000);
        assert_eq!(h.drops[0].at.frame, 5);
        assert_eq!(h.retx_count, 0);
    }

    /// Client-side capture, server 10 ms away: the server sends one
    /// segment, the client's pure ACK of it leaves `ack_after` ms later (or
    /// the client answers with data), and the server's next segment
    /// arrives 10 ms after that ACK, as if the ACK released it.
    fn lone_segment_then_ack(ack_after: f64, ack_len: u32) -> Conn {
        let mut n = Net::new();
        handshake(&mut n, 100, 900);
        let o = TcpOptions::default;
        n.seg(true, 10.2, ACK, 101, 901, 100, o()); // request
        n.seg(false, 20.3, ACK, 901, 201, 1000, o()); // y
        let t = 20.3 + ack_after;
        n.seg(true, t, ACK, 201, 1901, ack_len, o()); // ACK of y
        n.seg(false, t + 10.0, ACK, 1901, 201 + ack_len, 1000, o()); // x
        n.seg(true, t + 10.1, ACK, 201 + ack_len, 2901, 0, o());
        n.finish().remove(0)
    }

    #[test]
    fn a_held_pure_ack_that_releases_the_sender_is_an_ack_stall() {
        let c = lone_segment_then_ack(45.0, 0);
        let st = &c.half[Side::Server.index()].ack_stalls;
        assert_eq!(st.len(), 1, "{st:?}");
        assert_eq!((st[0].y.frame, st[0].ack.frame, st[0].x.frame), (5, 6, 7));
        assert_eq!(st[0].flight, 1000);
        let held = st[0].held.as_millis_f64();
        assert!((44.5..45.5).contains(&held), "held {held} ms");
    }

    /// An ACK held 45 ms that covers three segments at once was not held
    /// by the delayed-ACK rule (which ACKs every second full segment).
    #[test]
    fn a_late_ack_of_many_segments_is_no_ack_stall() {
        let mut n = Net::new();
        handshake(&mut n, 100, 900);
        let o = TcpOptions::default;
        n.seg(true, 10.2, ACK, 101, 901, 100, o());
        for i in 0..3u32 {
            n.seg(false, 20.3, ACK, 901 + i * 1400, 201, 1400, o());
        }
        n.seg(true, 65.3, ACK, 201, 901 + 4200, 0, o());
        n.seg(false, 75.3, ACK, 901 + 4200, 201, 1400, o());
        let c = n.finish().remove(0);
        assert!(c.half[Side::Server.index()].ack_stalls.is_empty());
    }

    #[test]
    fn a_prompt_ack_or_an_answer_is_no_ack_stall() {
        // acknowledged at once: the pause is the path's, not a timer's
        let quick = lone_segment_then_ack(0.1, 0);
        assert!(quick.half[Side::Server.index()].ack_stalls.is_empty());
        // the client spoke: what the server sends next may answer it
        let answered = lone_segment_then_ack(45.0, 50);
        assert!(answered.half[Side::Server.index()].ack_stalls.is_empty());
    }

    /// The server's small last segment is ACKed at once, the client closes,
    /// and the server's TLS close_notify (small) follows the FIN: an
    /// answer to the FIN, not a segment Nagle held for the ACK.
    #[test]
    fn a_segment_answering_the_peers_fin_is_not_nagle() {
        let mut n = Net::new();
        handshake(&mut n, 100, 900);
        let o = TcpOptions::default;
        n.seg(true, 10.2, ACK, 101, 901, 100, o()); // request
        n.seg(false, 20.3, ACK, 901, 201, 1448, o());
        n.seg(false, 20.3, ACK, 2349, 201, 244, o()); // small y
        n.seg(true, 20.4, ACK, 201, 2593, 0, o()); // pure ACK of y
        n.seg(true, 20.5, FINACK, 201, 2593, 0, o());
        n.seg(false, 30.5, ACK, 2593, 202, 24, o()); // close_notify
        let mut c = n.finish().remove(0);
        let h = &mut c.half[Side::Server.index()];
        h.finish_nagle(); // as the analysis does: a pending stall is confirmed
        assert!(h.nagle.is_empty(), "{:?}", h.nagle);
        assert!(h.ack_stalls.is_empty(), "{:?}", h.ack_stalls);
    }
}
