//! What the flow recorded of a finished connection, read through named
//! accessors. The detectors, the model, the population view and the
//! pipeline read an [`Analysis`] this way; the flow state itself (the
//! `Conn` with its two `Half`s) is private to `analysis` (docs/design.md
//! §3), so a change to how the flow keeps a fact changes this file, not
//! its readers.
//!
//! Grouped by concern: the connection (index, endpoints, first and last
//! frame), its handshake and end (SYNs, TFO, FINs, reset), each sender's
//! data, windows and losses (indexed by the [`Side`] that sent), and what
//! was measured along the way (RTT samples, turns, the trace).

use std::net::SocketAddr;

use crate::analysis::Analysis;
use crate::base::side::{FrameRef, Side};
use crate::base::time::Duration;
use crate::flow::half::{AckStall, CaptureDrop, NagleStall, Retransmission, ZeroWindow};
use crate::flow::rtt::RttSample;
use crate::flow::trace::Trace;
use crate::flow::turns::Turn;
use crate::flow::{Opening, SynInfo};

/// The connection.
impl Analysis {
    /// 0-based index of the connection in order of first packet.
    pub fn index(&self) -> u64 {
        self.conn.index
    }

    /// The connecting host.
    pub fn client(&self) -> SocketAddr {
        self.conn.client
    }

    /// The accepting host.
    pub fn server(&self) -> SocketAddr {
        self.conn.server
    }

    /// The connection's first packet.
    pub fn first(&self) -> FrameRef {
        self.conn.first
    }

    /// The connection's last packet.
    pub fn last(&self) -> FrameRef {
        self.conn.last
    }

    /// Packets of the connection.
    pub fn frames(&self) -> u64 {
        self.conn.frames
    }

    /// The latest packet `side` sent.
    pub(crate) fn last_seen(&self, side: Side) -> Option<FrameRef> {
        self.conn.last_seen[side.index()]
    }
}

/// The handshake and the end.
impl Analysis {
    /// The client's SYN, with its retransmissions.
    pub(crate) fn syn(&self) -> Option<SynInfo> {
        self.conn.syn
    }

    /// The server's SYN-ACK, with its retransmissions.
    pub(crate) fn syn_ack(&self) -> Option<SynInfo> {
        self.conn.syn_ack
    }

    /// The client's ACK completing the handshake.
    pub(crate) fn handshake_ack(&self) -> Option<FrameRef> {
        self.conn.handshake_ack
    }

    /// The client sent a SYN with the TFO option, then gave up on TFO and
    /// resent a plain SYN (no option, no data): `tfo-fallback` explains
    /// that SYN retransmission, and `syn-retransmission` leaves it alone.
    pub(crate) fn tfo_fell_back(&self) -> bool {
        self.conn.syn.is_some_and(|syn| {
            syn.options.fast_open.is_some()
                && syn.count > 1
                && syn.last_fast_open.is_none()
                && syn.last_data_len == 0
        })
    }

    /// The FIN `sender` sent.
    pub(crate) fn fin(&self, sender: Side) -> Option<FrameRef> {
        self.conn.half[sender.index()].send.fin.get()
    }

    /// The first reset and who sent it.
    pub(crate) fn rst(&self) -> Option<(Side, FrameRef)> {
        self.conn.rst
    }
}

/// Each sender's data, windows and losses.
impl Analysis {
    /// The first segment of data `sender` sent.
    pub(crate) fn first_data(&self, sender: Side) -> Option<FrameRef> {
        self.conn.half[sender.index()].send.first_data.get()
    }

    /// The last segment `sender` sent (data or not).
    pub(crate) fn last_send(&self, sender: Side) -> Option<FrameRef> {
        self.conn.half[sender.index()].send.last_send.get()
    }

    /// Payload of the last segment of new data `sender` sent (bytes; 0
    /// before any).
    pub(crate) fn last_data_len(&self, sender: Side) -> u32 {
        self.conn.half[sender.index()].last_data_len()
    }

    /// Segments of data `sender` sent.
    pub(crate) fn data_segments(&self, sender: Side) -> u64 {
        self.conn.half[sender.index()].send.data_segments
    }

    /// The largest payload `sender` sent in one segment (bytes).
    pub(crate) fn max_payload(&self, sender: Side) -> u32 {
        self.conn.half[sender.index()].send.max_payload
    }

    /// The stream offset after the last byte `sender` sent.
    pub(crate) fn snd_nxt(&self, sender: Side) -> u64 {
        self.conn.half[sender.index()].send.snd_nxt
    }

    /// The stream offset up to which the peer acknowledged `sender`'s data.
    pub(crate) fn acked(&self, sender: Side) -> u64 {
        self.conn.half[sender.index()].peer.acked
    }

    /// The peer's ACKs that acknowledged all of `sender`'s data sent so far.
    pub(crate) fn full_acks(&self, sender: Side) -> &[FrameRef] {
        &self.conn.half[sender.index()].peer.full_acks
    }

    /// The window `sender`'s peer last advertised, scaled (bytes; a lower
    /// bound unless [`Analysis::wscale_known`]).
    pub(crate) fn send_window(&self, sender: Side) -> u64 {
        let h = &self.conn.half[sender.index()];
        h.scaled(h.peer.window)
    }

    /// Whether the windows `sender`'s peer advertised are scaled by a known
    /// shift (from the SYNs, or inferred exactly).
    pub(crate) fn wscale_known(&self, sender: Side) -> bool {
        self.conn.half[sender.index()].peer_flags.wscale_known
    }

    /// Episodes in which `sender` was held by its peer's zero window.
    pub(crate) fn zero_windows(&self, sender: Side) -> &[ZeroWindow] {
        self.conn.half[sender.index()].zero_windows()
    }

    /// `sender`'s retransmissions, in capture order.
    pub fn retransmissions(&self, sender: Side) -> &[Retransmission] {
        self.conn.half[sender.index()].retx()
    }

    /// `sender`'s data held back by Nagle's algorithm until the peer's ACK.
    pub(crate) fn nagle_stalls(&self, sender: Side) -> &[NagleStall] {
        self.conn.half[sender.index()].nagle()
    }

    /// `sender`'s data waiting on the peer's delayed ACK.
    pub(crate) fn ack_stalls(&self, sender: Side) -> &[AckStall] {
        self.conn.half[sender.index()].ack_stalls()
    }

    /// `sender`'s bytes the peer acknowledged that the capture never saw.
    pub(crate) fn capture_drops(&self, sender: Side) -> &[CaptureDrop] {
        self.conn.half[sender.index()].drops()
    }
}

/// What was measured along the way.
impl Analysis {
    /// The RTT samples of the half on `side` (h_c for the client, h_s for
    /// the server), in capture order.
    pub(crate) fn rtt_samples(&self, side: Side) -> &[RttSample] {
        &self.conn.rtt.half[side.index()].samples
    }

    /// The longest request/response turn at the TCP level that was not
    /// answered within the TLS handshake ([`Analysis::within_tls_handshake`]):
    /// the first turn or the longest after it.
    pub(crate) fn longest_app_turn(&self) -> Option<Turn> {
        let t = &self.conn.turns;
        [t.first, t.later.as_deref().copied()]
            .into_iter()
            .flatten()
            .filter(|t| !self.within_tls_handshake(t.response_first))
            .reduce(|a, b| if b.wait() > a.wait() { b } else { a })
    }

    /// The server's wait on the ClientHello (docs/design.md §4 "Think
    /// time"): the ClientHello's last transmission before the ServerHello
    /// (the wait for a lost one is the network's; after a
    /// HelloRetryRequest, the second ClientHello: the retry's round trip is
    /// `hello-retry-request`'s), the ServerHello, and the time between them
    /// less h_s (the path: what is left is the server's handshake work and
    /// its queue). `None` without both hellos.
    pub(crate) fn server_hello_wait(&self) -> Option<(FrameRef, FrameRef, Duration)> {
        let t = self.tls.as_ref()?;
        let sh = t.server_hello?;
        let first = t.second_client_hello.unwrap_or(t.client_hello);
        let hello = self.conn.half[Side::Client.index()]
            .retx()
            .iter()
            .filter(|r| r.offset == 0 && r.at.ts < sh.ts)
            .map(|r| r.at)
            .fold(first, |a, b| if b.ts > a.ts { b } else { a });
        Some((hello, sh, (sh.ts - hello.ts) - self.h_s()))
    }

    /// Whether the server's answer at `r` fell within the TLS handshake (up
    /// to its last server handshake packet seen): a turn answered there is
    /// the handshake's, not the application's.
    /// When the record layer could not be read (the snapshot length cut
    /// the payloads) but the client's bytes opened with a ClientHello, the
    /// server's first data is taken for its ServerHello: that turn is not
    /// claimed either (said less, never the application's).
    pub(crate) fn within_tls_handshake(&self, r: FrameRef) -> bool {
        match &self.tls {
            Some(t) => t
                .done
                .or(t.server_finished)
                .or(t.server_flight_end)
                .or(t.server_hello)
                .is_some_and(|end| r.frame <= end.frame),
            None => {
                self.conn.client_opening == Some(Opening::TlsClientHello)
                    && self
                        .first_data(Side::Server)
                        .is_some_and(|f| f.frame == r.frame)
            }
        }
    }

    /// Take the connection's trace (when kept), once.
    pub(crate) fn take_trace(&mut self) -> Option<Box<Trace>> {
        self.conn.take_trace()
    }
}
