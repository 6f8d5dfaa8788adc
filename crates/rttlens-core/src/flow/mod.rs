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
//! sender before they count (DESIGN.md §4), retransmission classes, zero
//! windows, capture drops, rounds and in-order reassembly.

pub mod half;
pub mod protocols;
pub mod reassembly;

use std::net::{IpAddr, SocketAddr};

use rustc_hash::FxHashMap;

use crate::analysis::rtt::{RttMethod, RttSamples};
use crate::seq::SeqNumber;
use crate::side::{Mark, Side};
use crate::time::{Duration, Timestamp};
use crate::wire::{TcpFlags, TcpOptions, TcpSegment};
use half::Half;
use protocols::{Protocols, SideSink};

/// A connection closed (FIN both ways or RST) and quiet this long is handed on.
pub const CLOSED_LINGER: Duration = Duration::from_millis(1_000);
/// After a closed connection is handed on, segments on its 4-tuple without a
/// SYN (a late retransmitted FIN, the last ACK) are ignored this long, like
/// TIME_WAIT (RFC 9293 §3.6.1), instead of opening a phantom connection.
pub const TOMBSTONE: Duration = Duration::from_millis(60_000);
/// A connection without a packet for this long is handed on.
pub const IDLE_TIMEOUT: Duration = Duration::from_millis(300_000);
/// Every this many segments the table looks for connections to hand on.
const SWEEP_EVERY: u64 = 16_384;

/// A SYN or SYN-ACK as first seen, with its retransmissions.
#[derive(Debug, Clone, Copy)]
pub struct SynInfo {
    /// First transmission.
    pub first: Mark,
    /// Latest transmission.
    pub last: Mark,
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
}

/// One TCP connection.
#[derive(Debug)]
pub struct Conn {
    /// 0-based index in order of first packet (matches Wireshark's `tcp.stream`
    /// for captures that start before their connections).
    pub index: u64,
    /// The connecting host.
    pub client: SocketAddr,
    /// The accepting host.
    pub server: SocketAddr,
    /// Roles come from a SYN (else guessed: the lower port is the server).
    pub roles_from_syn: bool,
    /// First and last packet.
    pub first: Mark,
    /// Last packet.
    pub last: Mark,
    /// Packets of this connection.
    pub frames: u64,
    /// Per direction, indexed by [`Side::index`] of the sender.
    pub half: [Half; 2],
    /// The client's SYN.
    pub syn: Option<SynInfo>,
    /// The server's SYN-ACK.
    pub syn_ack: Option<SynInfo>,
    /// The client's ACK completing the handshake.
    pub handshake_ack: Option<Mark>,
    /// First reset and who sent it.
    pub rst: Option<(Side, Mark)>,
    /// RTT samples.
    pub rtt: RttSamples,
    /// Protocol trackers fed by the reassembled streams.
    pub protocols: Protocols,
    /// Segments whose TCP options did not parse.
    pub malformed_options: u64,
}

impl Conn {
    fn new(index: u64, seg: &TcpSegment<'_>, at: Mark) -> Conn {
        let src = SocketAddr::new(seg.src, seg.src_port);
        let dst = SocketAddr::new(seg.dst, seg.dst_port);
        let syn = seg.flags.contains(TcpFlags::SYN);
        let ack = seg.flags.contains(TcpFlags::ACK);
        let (client, server, from_syn) = if syn && !ack {
            (src, dst, true)
        } else if syn && ack {
            (dst, src, true)
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
            half: [Half::new(Side::Client), Half::new(Side::Server)],
            syn: None,
            syn_ack: None,
            handshake_ack: None,
            rst: None,
            rtt: RttSamples::default(),
            protocols: Protocols::default(),
            malformed_options: 0,
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

    fn push(&mut self, seg: &TcpSegment<'_>, at: Mark) {
        self.frames += 1;
        self.last = at;
        let side = if SocketAddr::new(seg.src, seg.src_port) == self.client {
            Side::Client
        } else {
            Side::Server
        };
        let s = side.index();
        let p = side.peer().index();
        let flags = seg.flags;
        let is_syn = flags.contains(TcpFlags::SYN);
        let is_ack = flags.contains(TcpFlags::ACK);
        if seg.options.malformed {
            self.malformed_options += 1;
        }
        if is_syn {
            self.on_syn(side, seg, at);
        } else if side == Side::Client && is_ack && self.handshake_ack.is_none() {
            if let Some(sa) = self.syn_ack {
                if seg.ack == sa.isn.add(1) {
                    self.handshake_ack = Some(at);
                    if sa.count == 1 {
                        self.rtt
                            .add(Side::Client, at.ts - sa.last.ts, RttMethod::Handshake);
                    }
                }
            }
        }
        if flags.contains(TcpFlags::RST) && self.rst.is_none() {
            self.rst = Some((side, at));
        }
        let wants = self.protocols.wants_bytes();
        if is_ack {
            // the window field of a SYN is never scaled (RFC 7323 §2.2)
            let shift = if is_syn { 0 } else { self.half[p].peer_wscale };
            let window = (seg.window as u64) << shift;
            let pure = seg.payload_len == 0 && !is_syn && !flags.contains(TcpFlags::FIN);
            let n = seg.options.sack_count.min(4) as usize;
            let sack = &seg.options.sack_blocks[..n];
            let mut sink = SideSink {
                side: side.peer(),
                protocols: &mut self.protocols,
            };
            let sink: Option<&mut dyn reassembly::StreamSink> =
                if wants { Some(&mut sink) } else { None };
            self.half[p].on_peer_ack(seg.ack, window, sack, pure, at, &mut self.rtt, sink);
        }
        if let Some((tsval, tsecr)) = seg.options.timestamps {
            self.half[s].note_tsval(tsval, at.ts);
            if is_ack && tsecr != 0 {
                self.half[p].on_tsecr(tsecr, at.ts, &mut self.rtt);
            }
        }
        if seg.payload_len > 0 {
            let seq = if is_syn { seg.seq.add(1) } else { seg.seq };
            let h_x = self.rtt.h(side).unwrap_or(Duration::ZERO);
            let rtt_min = self.rtt_min().unwrap_or(Duration::from_millis(1));
            let mut sink = SideSink {
                side,
                protocols: &mut self.protocols,
            };
            let sink: Option<&mut dyn reassembly::StreamSink> =
                if wants { Some(&mut sink) } else { None };
            self.half[s].on_data(seq, seg.payload_len, seg.payload, at, h_x, rtt_min, sink);
        }
        if flags.contains(TcpFlags::FIN) && self.half[s].fin.is_none() {
            self.half[s].fin = Some(at);
        }
    }

    fn on_syn(&mut self, side: Side, seg: &TcpSegment<'_>, at: Mark) {
        let info = SynInfo {
            first: at,
            last: at,
            count: 1,
            isn: seg.seq,
            options: seg.options,
            window: seg.window,
            data_len: seg.payload_len,
        };
        let slot = match side {
            Side::Client => &mut self.syn,
            Side::Server => &mut self.syn_ack,
        };
        match slot {
            Some(prev) if prev.isn == seg.seq => {
                prev.count += 1;
                prev.last = at;
                return;
            }
            Some(_) => return, // a different ISN on a live connection: keep the first
            None => *slot = Some(info),
        }
        self.half[side.index()].set_isn(seg.seq);
        if side == Side::Server {
            if let Some(syn) = self.syn {
                self.rtt
                    .add(Side::Server, at.ts - syn.last.ts, RttMethod::Handshake);
            }
        }
        // window scaling applies only when both SYNs carried the option (RFC 7323 §2.2)
        if let (Some(syn), Some(sa)) = (self.syn, self.syn_ack) {
            let (c, s) = match (syn.options.window_scale, sa.options.window_scale) {
                (Some(c), Some(s)) => (c.min(14), s.min(14)),
                _ => (0, 0),
            };
            self.half[Side::Client.index()].peer_wscale = s;
            self.half[Side::Server.index()].peer_wscale = c;
            self.half[0].wscale_known = true;
            self.half[1].wscale_known = true;
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

/// The connection table.
#[derive(Debug, Default)]
pub struct FlowTable {
    conns: FxHashMap<FlowKey, Box<Conn>>,
    /// Closed connections handed on, and when.
    closed: FxHashMap<FlowKey, Timestamp>,
    /// Segments ignored because their connection had closed.
    pub late_segments: u64,
    next_index: u64,
    pushes: u64,
    now: Timestamp,
    /// Most connections open at once.
    pub peak_open: usize,
}

impl FlowTable {
    /// An empty table.
    pub fn new() -> FlowTable {
        FlowTable::default()
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.conns.len()
    }

    /// Account one segment seen at `at`; connections that are over are
    /// passed to `done`.
    pub fn push(&mut self, seg: &TcpSegment<'_>, at: Mark, done: &mut dyn FnMut(Box<Conn>)) {
        self.pushes += 1;
        self.now = self.now.max(at.ts);
        let key = FlowKey::of(seg);
        let syn_only = seg.flags.contains(TcpFlags::SYN) && !seg.flags.contains(TcpFlags::ACK);
        if syn_only {
            if let Some(c) = self.conns.get(&key) {
                let same = c.syn.is_some_and(|s| s.isn == seg.seq);
                if !same {
                    if let Some(old) = self.conns.remove(&key) {
                        done(old);
                    }
                }
            }
        }
        let conn = match self.conns.get_mut(&key) {
            Some(c) => c,
            None if !syn_only && !self.closed.is_empty() && self.closed.contains_key(&key) => {
                self.late_segments += 1;
                return;
            }
            None => {
                let c = Box::new(Conn::new(self.next_index, seg, at));
                self.next_index += 1;
                self.conns.entry(key).or_insert(c)
            }
        };
        conn.push(seg, at);
        self.peak_open = self.peak_open.max(self.conns.len());
        if self.pushes % SWEEP_EVERY == 0 {
            self.sweep(done);
        }
    }

    fn sweep(&mut self, done: &mut dyn FnMut(Box<Conn>)) {
        let now = self.now;
        let over: Vec<FlowKey> = self
            .conns
            .iter()
            .filter(|(_, c)| {
                let quiet = now - c.last.ts;
                (c.is_closed() && quiet > CLOSED_LINGER) || quiet > IDLE_TIMEOUT
            })
            .map(|(k, _)| *k)
            .collect();
        for k in over {
            if let Some(c) = self.conns.remove(&k) {
                if c.is_closed() {
                    self.closed.insert(k, now);
                }
                done(c);
            }
        }
        self.closed.retain(|_, t| now - *t < TOMBSTONE);
    }

    /// End of capture: hand on every connection still open, in index order.
    pub fn finish(self, done: &mut dyn FnMut(Box<Conn>)) {
        let mut rest: Vec<Box<Conn>> = self.conns.into_values().collect();
        rest.sort_by_key(|c| c.index);
        for c in rest {
            done(c);
        }
    }
}
