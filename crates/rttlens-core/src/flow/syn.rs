//! The handshake: the SYN and SYN-ACK as first seen, with their
//! retransmissions ([`SynInfo`]); the handshake RTT samples; the MSS and
//! window scale both SYNs negotiate; and data on the client's SYN (TCP Fast
//! Open, RFC 7413), held until the SYN-ACK says whether the server took it.

use crate::base::seq::SeqNumber;
use crate::base::side::{FrameRef, Side};
use crate::base::time::Duration;
use crate::flow::reassembly::{SideSink, StreamSink, Trackers};
use crate::flow::rtt::RttMethod;
use crate::wire::{FastOpen, TcpOptions, TcpSegment};

use super::Conn;

/// TCP timestamp option length with padding (RFC 7323 §3), bytes per segment.
pub const TS_OPTION_LEN: u64 = 12;

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
    pub options: SynOptions,
    /// Raw window field (never scaled in a SYN, RFC 7323 §2.2).
    pub window: u16,
    /// Payload carried (TCP Fast Open data, RFC 7413), bytes.
    pub(crate) data_len: u32,
    /// The acknowledgment number (SYN-ACK only: whether it covers the SYN's
    /// data tells if TFO data was accepted, RFC 7413 §4.2).
    pub(crate) ack: SeqNumber,
    /// Payload of the latest transmission (a client that gave up on TFO
    /// resends its SYN without data, RFC 7413 §4.1.3).
    pub(crate) last_data_len: u32,
    /// Fast Open option of the latest transmission.
    pub(crate) last_fast_open: Option<FastOpen>,
    /// The first transmission without a Fast Open option after one with it:
    /// where a client gave up on TFO (RFC 7413 §4.1.3).
    pub(crate) first_plain: Option<FrameRef>,
}

/// The options of a SYN or SYN-ACK: [`TcpOptions`] but for the SACK blocks,
/// which a SYN does not carry (RFC 2018 §3: SACK-permitted only), and which
/// would take 33 B in each of a connection's two [`SynInfo`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SynOptions {
    /// Maximum segment size (kind 2, RFC 9293 §3.7.1).
    pub mss: Option<u16>,
    /// Window scale shift (kind 3, RFC 7323 §2), clamped to 14.
    pub window_scale: Option<u8>,
    /// SACK permitted (kind 4, RFC 2018).
    pub sack_permitted: bool,
    /// Timestamps (kind 8, RFC 7323 §3): (TSval, TSecr).
    pub(crate) timestamps: Option<(u32, u32)>,
    /// TCP Fast Open (kind 34, or 254 + ExID `0xF989`).
    pub(crate) fast_open: Option<FastOpen>,
    /// The option list was malformed: options after the bad one are missing.
    pub malformed: bool,
}

impl From<&TcpOptions> for SynOptions {
    fn from(o: &TcpOptions) -> SynOptions {
        SynOptions {
            mss: o.mss,
            window_scale: o.window_scale,
            sack_permitted: o.sack_permitted,
            timestamps: o.timestamps,
            fast_open: o.fast_open,
            malformed: o.malformed,
        }
    }
}

/// Data carried by the client's SYN (TCP Fast Open), held until the SYN-ACK
/// says whether the server took it: taken data is the start of the stream;
/// refused data is resent by the client after the handshake and counted then.
#[derive(Debug, Clone)]
pub(super) struct SynData {
    seq: SeqNumber,
    len: u32,
    bytes: Vec<u8>,
    at: FrameRef,
}

impl<P: Trackers> Conn<P> {
    /// The client's ACK at `at`: the one completing the handshake when it
    /// acknowledges the SYN-ACK, a sample of the client's side of the path
    /// when the SYN-ACK was sent once.
    pub(super) fn check_handshake_ack(&mut self, seg: &TcpSegment<'_>, at: FrameRef) {
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

    /// Data on the client's SYN (TFO): fed to the stream once the SYN-ACK
    /// accepts it.
    pub(super) fn hold_syn_data(&mut self, seg: &TcpSegment<'_>, at: FrameRef) {
        if self.syn_data.is_none() && self.syn_ack.is_none() {
            self.syn_data = Some(Box::new(SynData {
                seq: seg.seq.add(1),
                len: seg.payload_len,
                bytes: seg.payload.to_vec(),
                at,
            }));
        }
    }

    pub(super) fn on_syn(&mut self, side: Side, seg: &TcpSegment<'_>, at: FrameRef) {
        let info = SynInfo {
            first: at,
            last: at,
            count: 1,
            isn: seg.seq,
            options: SynOptions::from(&seg.options),
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
                self.half[side.index()].mark_syn_retransmission(at);
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
                    let sink: Option<&mut dyn StreamSink> =
                        if wants { Some(&mut sink) } else { None };
                    self.half[Side::Client.index()].on_data(
                        d.seq,
                        d.len,
                        &d.bytes,
                        d.at,
                        Duration::ZERO,
                        Duration::ZERO,
                        Duration::from_millis(1),
                        None,
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
            self.half[Side::Client.index()].send.mss =
                sa.options.mss.map_or(0, |m| (m as u64).saturating_sub(ts));
            self.half[Side::Server.index()].send.mss =
                syn.options.mss.map_or(0, |m| (m as u64).saturating_sub(ts));
            let (c, s) = match (syn.options.window_scale, sa.options.window_scale) {
                (Some(c), Some(s)) => (c.min(14), s.min(14)),
                _ => (0, 0),
            };
            self.half[Side::Client.index()].peer_flags.peer_wscale = s;
            self.half[Side::Server.index()].peer_flags.peer_wscale = c;
            self.half[Side::Client.index()].peer_flags.wscale_known = true;
            self.half[Side::Server.index()].peer_flags.wscale_known = true;
        }
    }
}
