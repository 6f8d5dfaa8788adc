//! Rounds: the data a sender emits in one RTT, released by one batch of ACKs.
//!
//! Counted as the kernel counts them (`net/ipv4/tcp_bbr.c`, `bbr_update_round_start`):
//! when a round starts, remember the highest sequence sent so far (the
//! marker); the round ends at the first ACK that covers data sent after the
//! marker. Seen from a capture point that is not the sender, an ACK only
//! counts once the sender can have received it: an ACK seen at `t_a` can have
//! released data seen at `t_p` only if `t_p ≥ t_a + h_x − ε` (docs/design.md
//! §4 "Causality"); the flow layer does that filtering and hands each
//! segment here with the *eligible* cumulative ACK, SACKed bytes and window.
//!
//! Bytes in flight of a segment = its end − eligible ACK − eligible SACKed
//! bytes: what the sender itself counted when it sent it (RFC 6675 "pipe",
//! without the retransmission term).

use crate::base::list::push_capped;
use crate::base::side::FrameRef;
use crate::base::time::Duration;

/// At most this many rounds are kept per direction; later rounds are counted
/// in [`RoundTracker::rounds_dropped`] only (memory stays bounded).
pub(crate) const MAX_ROUNDS: usize = 4096;

/// What held a round's flight where it was (docs/design.md §4 "Round limits").
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    /// Congestion window, growing ×≥1.3 per round: slow start (RFC 5681 §3.1).
    SlowStart,
    /// Congestion window, growing slowly: congestion avoidance.
    CongestionAvoidance,
    /// The receiver's advertised window: flight ≥ rwnd − 2 MSS
    /// (`analysis::rounds::RWND_SLACK_MSS`).
    Rwnd,
    /// Flat (±1 MSS) below rwnd for ≥ 3 loss-free rounds: the sender's send
    /// buffer, a window clamp, or a middlebox/CC plateau.
    Sndbuf,
    /// Flat like `sndbuf`, but each round's data spread over most of the
    /// round (≥ `analysis::rounds::BUSY_SHARE` of it): the bottleneck link was busy end to
    /// end, so the flight is the path's rate × RTT and a bigger window would
    /// only queue more (T-RAT's "bandwidth-limited", Zhang et al., SIGCOMM
    /// 2002).
    Bottleneck,
    /// Flat (±1 MSS) for ≥ 3 loss-free rounds at the receiver's window as
    /// far as the capture can tell, with that window's scale inferred (no
    /// SYNs): a window capped the flight, the receiver's or the sender's
    /// (send buffer, clamp); the capture cannot say which.
    Window,
    /// The sender had nothing more to send (round ends on a sub-MSS segment
    /// with room left, and the next send is not ACK-timed).
    App,
    /// Loss recovery or too little data to tell.
    Unknown,
}

impl Limit {
    /// Stable name used in the outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::SlowStart => "slow-start",
            Limit::CongestionAvoidance => "congestion-avoidance",
            Limit::Rwnd => "rwnd",
            Limit::Sndbuf => "sndbuf",
            Limit::Bottleneck => "bottleneck",
            Limit::Window => "window",
            Limit::App => "app",
            Limit::Unknown => "unknown",
        }
    }

    /// True for the two congestion-window limits.
    pub fn is_cwnd(self) -> bool {
        matches!(self, Limit::SlowStart | Limit::CongestionAvoidance)
    }
}

/// One round of one sender.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Round {
    /// 0-based index within the direction.
    pub(crate) index: u32,
    /// First segment of the round.
    pub(crate) first: FrameRef,
    /// Last segment of the round.
    pub(crate) last: FrameRef,
    /// Stream offset of the first new byte sent in the round.
    pub(crate) start_offset: u64,
    /// New (never sent before) payload bytes.
    pub(crate) new_bytes: u64,
    /// Retransmitted payload bytes.
    pub(crate) retx_bytes: u64,
    /// Data segments (new and retransmitted).
    pub(crate) segments: u32,
    /// Maximum bytes in flight, as the sender saw it (bytes).
    pub(crate) max_flight: u64,
    /// Frame of the segment at which the flight peaked.
    pub(crate) max_flight_frame: u64,
    /// The peer's advertised window when the flight peaked (bytes, scaled).
    pub(crate) rwnd: u64,
    /// Largest window the peer advertised in eligible ACKs during the round (bytes).
    pub(crate) max_rwnd: u64,
    /// A retransmission happened in the round.
    pub(crate) loss: bool,
    /// Payload length of the round's last new-data segment (bytes).
    pub(crate) last_len: u32,
    /// Time from the ACK that started the round reaching the sender to the
    /// round's first segment: ≈ 0 when ACK-clocked, longer when the sender
    /// waited for its application. `None` for a round no ACK started.
    pub(crate) release_delay: Option<Duration>,
    /// The round's first segment followed data or a FIN from the peer: it
    /// may answer it, so the previous round's end was the application's.
    pub(crate) answers_peer: bool,
    /// What limited the round (set by `analysis::rounds::classify`).
    pub(crate) limit: Limit,
}

/// One data segment as the round tracker needs it.
#[derive(Debug, Clone, Copy)]
pub struct RoundSegment {
    /// Where it was seen.
    pub(crate) at: FrameRef,
    /// Stream offset of its first byte.
    pub(crate) offset: u64,
    /// Payload length (bytes).
    pub(crate) len: u32,
    /// Bytes of it never sent before.
    pub(crate) new_bytes: u64,
    /// It is a retransmission.
    pub(crate) retx: bool,
    /// Bytes in flight after sending it, as the sender saw it.
    pub(crate) flight: u64,
    /// Eligible cumulative ACK (stream offset).
    pub(crate) eligible_ack: u64,
    /// Eligible advertised window field of the peer (raw, unscaled: the
    /// shift is applied by [`RoundTracker::finish`], since without the SYNs
    /// it is only known at the end).
    pub(crate) rwnd: u64,
    /// Highest stream offset sent before this segment.
    pub(crate) snd_nxt_before: u64,
    /// Time since the latest eligible ACK that advanced the cumulative ACK
    /// reached the sender (None before any).
    pub(crate) since_ack: Option<Duration>,
    /// The peer sent data or its FIN since this sender's previous new data:
    /// this segment may answer it rather than be released by an ACK.
    pub(crate) answers_peer: bool,
}

/// Online round tracker of one sender.
#[derive(Debug, Default)]
pub struct RoundTracker {
    rounds: Vec<Round>,
    cur: Option<Round>,
    marker: u64,
    /// Rounds not kept because [`MAX_ROUNDS`] was reached.
    pub(crate) rounds_dropped: u64,
    next_index: u32,
}

impl RoundTracker {
    /// Account one data segment.
    pub fn on_segment(&mut self, s: RoundSegment) {
        let new_round = match &self.cur {
            None => true,
            Some(_) => s.eligible_ack > self.marker,
        };
        if new_round {
            self.close();
            self.marker = s.snd_nxt_before;
            self.cur = Some(Round {
                index: self.next_index,
                first: s.at,
                last: s.at,
                start_offset: s.offset.max(s.snd_nxt_before.min(s.offset + s.len as u64)),
                new_bytes: 0,
                retx_bytes: 0,
                segments: 0,
                max_flight: 0,
                max_flight_frame: s.at.frame,
                rwnd: s.rwnd,
                max_rwnd: 0,
                loss: false,
                last_len: 0,
                release_delay: s.since_ack,
                answers_peer: s.answers_peer,
                limit: Limit::Unknown,
            });
            self.next_index += 1;
        }
        let Some(r) = self.cur.as_mut() else { return };
        r.last = s.at;
        r.segments += 1;
        r.new_bytes += s.new_bytes;
        if s.retx {
            r.retx_bytes += s.len as u64;
            r.loss = true;
        }
        if s.new_bytes > 0 {
            r.last_len = s.len;
        }
        if s.flight > r.max_flight {
            r.max_flight = s.flight;
            r.max_flight_frame = s.at.frame;
            r.rwnd = s.rwnd;
        }
        r.max_rwnd = r.max_rwnd.max(s.rwnd);
    }

    fn close(&mut self) {
        if let Some(r) = self.cur.take() {
            // a short connection's sender: its request or response in a
            // round or two
            if !push_capped(&mut self.rounds, r, 2, MAX_ROUNDS) {
                self.rounds_dropped += 1;
            }
        }
    }

    /// Close the open round and return all kept rounds, their windows
    /// scaled by the peer's window-scale `shift` (RFC 7323 §2.3).
    pub(crate) fn finish(mut self, shift: u8) -> (Vec<Round>, u64) {
        self.close();
        let shift = shift.min(14);
        for r in &mut self.rounds {
            r.rwnd <<= shift;
            r.max_rwnd <<= shift;
        }
        (self.rounds, self.rounds_dropped)
    }
}
