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
//!
//! Here: [`Conn`] and what each segment does to it. Beside it: the table
//! (`table.rs`), the handshake and Fast Open data (`syn.rs`), the roles
//! without a SYN (`roles.rs`), and the connection-level tests (`tests.rs`).

pub mod half;
pub mod reassembly;
mod roles;
pub mod rounds;
pub(crate) mod rtt;
pub mod shard;
mod syn;
mod table;
#[cfg(test)]
mod tests;
pub mod trace;
pub mod turns;

use std::net::SocketAddr;

use crate::base::side::{FrameRef, Side};
use crate::base::time::Duration;
use crate::flow::rtt::RttSamples;
use crate::wire::{TcpFlags, TcpSegment};
use half::Half;
use reassembly::{SideSink, Trackers};
use syn::SynData;
use trace::{Trace, TracePacket};
use turns::Turns;

pub use roles::Opening;
pub use syn::{SynInfo, SynOptions, TS_OPTION_LEN};
pub use table::conn_hash;
pub(crate) use table::Leaving;
pub use table::{
    FlowTable, CLOSED_LINGER, IDLE_TIMEOUT, SWEEP_EVERY, SWEEP_INTERVAL, SWEEP_MIN, TOMBSTONE,
};

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
    /// Every packet, when the table keeps traces (`FlowTable::with_trace`).
    pub trace: Option<Box<Trace>>,
    /// Data on the client's SYN (TFO, rare): boxed, a word when absent.
    syn_data: Option<Box<SynData>>,
}

impl<P: Trackers> Conn<P> {
    fn new(index: u64, seg: &TcpSegment<'_>, at: FrameRef, ctx: &P::Ctx) -> Conn<P> {
        Self::with_protocols(index, seg, at, P::new(ctx))
    }

    /// [`Conn::new`] with its trackers made already.
    fn with_protocols(index: u64, seg: &TcpSegment<'_>, at: FrameRef, protocols: P) -> Conn<P> {
        let (client, server, from_syn) = roles::roles(seg);
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
            protocols,
            turns: Turns::default(),
            client_opening: None,
            trace: None,
            syn_data: None,
        }
    }

    /// Both directions closed by FIN, or reset.
    pub fn is_closed(&self) -> bool {
        self.rst.is_some() || (self.half[0].send.fin.is_some() && self.half[1].send.fin.is_some())
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
            self.check_handshake_ack(seg, at);
        }
        if flags.contains(TcpFlags::RST) && self.rst.is_none() {
            self.rst = Some((side, at));
        }
        let wants = self.protocols.wants_bytes();
        let retx_before = self.half[s].loss.retx_count;
        if is_ack {
            // the half scales the window field it is given; a SYN's is never
            // scaled (RFC 7323 §2.2), so hand it over as the field that
            // scales back to (about) its value
            // a RST's window field means nothing (RFC 9293 §3.10.7: the
            // receiver of a RST checks only its sequence number; Wireshark
            // marks no zero window or duplicate ACK on one): keep the last
            let rst = flags.contains(TcpFlags::RST);
            let window = if is_syn {
                Some((seg.window as u64) >> self.half[p].peer_flags.peer_wscale.min(14))
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
                    .is_none_or(|o| o >= self.half[s].send.snd_nxt);
            let n = seg.options.sack_count.min(4) as usize;
            let sack = &seg.options.sack_blocks[..n];
            let mut sink = SideSink {
                side: side.peer(),
                protocols: &mut self.protocols,
            };
            let sink: Option<&mut dyn reassembly::StreamSink> =
                if wants { Some(&mut sink) } else { None };
            self.half[p].on_peer_ack(seg.ack, window, sack, pure, at, &mut self.rtt, sink);
            if side == Side::Server && self.half[p].peer.last_full_ack.get() == Some(at) {
                if let Some(q) = self.half[p].send.last_new_data.get() {
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
            self.hold_syn_data(seg, at);
        } else if seg.payload_len > 0 {
            let seq = if is_syn { seg.seq.add(1) } else { seg.seq };
            let h_x = self.rtt.h(side).unwrap_or(Duration::ZERO);
            let rtt_min = self.rtt_min().unwrap_or(Duration::from_millis(1));
            // the most the sender's smoothed RTT can be: its largest sample
            // (each half's largest), when the capture holds its SYN and so
            // every sample it took
            let srtt_max = self.half[s]
                .isn
                .and(self.rtt.h_max(side))
                .zip(self.rtt.h_max(side.peer()))
                .map(|(a, b)| a + b);
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
                && self.turns.pending(self.half[p].send.last_new_data.get())
                && self.half[s].ack_seen_all()
                && self.half[s].peer.last_full_ack.get().is_some_and(|k| {
                    (at.ts - k.ts) - h_x > Duration::from_millis(1).max(rtt_min / 4)
                });
            if side == Side::Client && self.half[s].send.first_data.is_none() {
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
                srtt_max,
                sink,
            );
            if self.half[s].send.last_new_data.get() == Some(at) {
                match side {
                    Side::Client => self.turns.on_client_data(),
                    Side::Server if self.turns.pending(self.half[p].send.last_new_data.get()) => {
                        // this answer acknowledges all the client sent
                        let c = &self.half[p];
                        let acks = c
                            .send
                            .last_new_data
                            .get()
                            .filter(|_| is_ack && c.peer.acked >= c.send.snd_nxt);
                        let (full, drops) = (
                            self.half[s].send.segment_size(),
                            self.half[s].loss.dropped_bytes,
                        );
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
            self.half[p].peer_flags.peer_spoke = true;
            self.half[p].peer_flags.peer_spoke_since_data = true;
        }
        if flags.contains(TcpFlags::FIN) && self.half[s].send.fin.is_none() {
            self.half[s].send.fin.set(at);
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
                retransmission: self.half[s].loss.retx_count > retx_before,
            });
        }
    }

    /// Take the trace (if kept) with its windows scaled and its RTT samples,
    /// once the connection is over.
    pub fn take_trace(&mut self) -> Option<Box<Trace>> {
        let mut t = self.trace.take()?;
        // side i's window field is scaled by its own shift, which the
        // other half holds as `peer_wscale`
        t.scale_windows([
            self.half[1].peer_flags.peer_wscale,
            self.half[0].peer_flags.peer_wscale,
        ]);
        t.wscale_known = [
            self.half[1].peer_flags.wscale_known,
            self.half[0].peer_flags.wscale_known,
        ];
        t.rtt = self.rtt.all.take().map(|a| *a).unwrap_or_default();
        Some(t)
    }
}
