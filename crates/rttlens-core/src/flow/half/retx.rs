//! Retransmission classes (docs/design.md §4 "Loss"): data that overlaps
//! what the sender sent before is reordering (a hole filled soon after it
//! opened), a retransmission of bytes the capture never saw, or a
//! retransmission of a segment it saw; each retransmission is classified as
//! a fast retransmit, a tail loss probe or a timeout ([`Half::note_retx`]),
//! and marked spurious when an ACK or a D-SACK shows the receiver already had
//! it. The unacknowledged segments kept here give the original send times
//! and the timeout backoff counts (and Karn's RTT samples, `samples.rs`).

use std::collections::VecDeque;

use crate::base::seq::SeqNumber;
use crate::base::side::FrameRef;
use crate::base::time::Duration;

use super::{FrameMark, Half};

/// Retransmissions kept in detail per direction (the rest are counted).
pub const MAX_RETX_KEPT: usize = 256;
/// Unacknowledged segments tracked per direction (for original send times
/// and Karn RTT samples); past it the oldest are forgotten.
pub const MAX_UNACKED: usize = 1 << 16;
/// Minimum retransmission timeout on Linux (`TCP_RTO_MIN`, include/net/tcp.h): 200 ms.
pub const RTO_MIN: Duration = Duration::from_millis(200);

/// How a retransmission was triggered (docs/design.md §4 "Loss", order of
/// checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RetxKind {
    /// ≥ 3 duplicate ACKs or SACK above the hole (RFC 5681 §3.2, RFC 6675),
    /// or time-based RACK loss detection (RFC 8985 §6.2) without them.
    FastRetransmit,
    /// Tail loss probe: the highest segment resent after ~2·SRTT of silence
    /// (RFC 8985 §7; Linux `tcp_schedule_loss_probe`).
    TailLossProbe,
    /// Retransmission timeout (RFC 6298 §5; ≥ 200 ms silence on Linux).
    Rto,
}

impl RetxKind {
    /// Stable name used in the outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            RetxKind::FastRetransmit => "fast-retransmit",
            RetxKind::TailLossProbe => "tail-loss-probe",
            RetxKind::Rto => "rto",
        }
    }
}

/// One retransmission.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Retransmission {
    /// The retransmitted segment.
    pub at: FrameRef,
    /// The original transmission, when the capture saw it (not when the
    /// original was lost before the capture point).
    pub(crate) original: Option<FrameRef>,
    /// Stream offset and length (bytes).
    pub(crate) offset: u64,
    /// Payload length (bytes).
    pub(crate) len: u32,
    /// Trigger.
    pub(crate) kind: RetxKind,
    /// What the sender's timer saw: time since its previous segment and
    /// since the last ACK reached it, whichever is shorter.
    pub(crate) silence: Duration,
    /// Duplicate ACKs the sender had seen.
    pub(crate) dupacks: u32,
    /// The sender had SACK blocks above this segment (RFC 6675 loss evidence).
    pub(crate) sack_above: bool,
    /// Earlier retransmissions of the same offset (RTO backoff count).
    pub(crate) backoff: u8,
    /// The receiver already had the data: an ACK covering it was seen
    /// before the retransmission, or a D-SACK reported it (RFC 2883).
    pub spurious: bool,
    /// Classified without dupACK/SACK evidence (RACK or unknown trigger).
    pub(crate) inferred: bool,
    /// The frame of an ACK covering the data that was seen long enough
    /// before for the sender to have it, yet it resent: that ACK (and any
    /// after it) was lost on the way to the sender, and its timer, not the
    /// ACKs, clocked it.
    pub(crate) lost_ack: Option<u64>,
    /// Time the data was held up: retransmission − original send (or hole
    /// opening when the original was not seen).
    pub(crate) delay: Duration,
    /// The frame of the first D-SACK that reported these bytes received
    /// twice (RFC 2883), the proof that the retransmission was not needed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) dsack: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct SentSeg {
    offset: u64,
    pub(super) end: u64,
    pub(super) at: FrameRef,
    pub(super) retx: u8,
    /// Retransmissions of it by timeout (for the backoff count).
    rtos: u8,
}

/// What the retransmission classes remember between segments.
#[derive(Debug, Default)]
pub(super) struct RetxState {
    /// Unacknowledged segments, oldest first, at most [`MAX_UNACKED`].
    pub(super) unacked: VecDeque<SentSeg>,
    /// Retransmissions since the sender's cumulative ACK last advanced.
    since_advance: u32,
    /// After a timeout, the highest offset sent then: retransmissions until
    /// the ACK passes it are the timeout's recovery (RFC 6298 §5, Linux
    /// `TCP_CA_Loss`), not new loss events.
    rto_recovery: Option<u64>,
}

impl RetxState {
    /// The sender's eligible cumulative ACK advanced to `ack`: a first
    /// retransmission may follow, and a timeout's recovery ends once the ACK
    /// passes where it started.
    pub(super) fn ack_advanced(&mut self, ack: u64) {
        self.since_advance = 0;
        if self.rto_recovery.is_some_and(|p| ack >= p) {
            self.rto_recovery = None;
        }
    }
}

/// Timing inputs of a retransmission's classification.
#[derive(Debug, Clone, Copy)]
pub(super) struct RetxTiming {
    /// Time since the sender's previous segment, at the capture point.
    pub(super) since_send: Duration,
    /// M→sender→M.
    pub(super) h_x: Duration,
    /// Baseline RTT.
    pub(super) rtt_min: Duration,
    /// The most the sender's smoothed RTT can be (its largest RTT sample),
    /// when the capture holds its SYN; `None` otherwise.
    pub(super) srtt_max: Option<Duration>,
}

/// What Linux adds to a probe timeout of 2·SRTT when one segment is in
/// flight, for the receiver's delayed ACK: `TCP_RTO_MIN`, 200 ms
/// (`tcp_schedule_loss_probe()`; RFC 8985 §7.2's WCDelAckT). With more
/// segments in flight it adds 2 ms; the larger bound is used for all.
pub const PTO_ACK_DELAY: Duration = Duration::from_millis(200);

/// The longest a tail loss probe can wait after the sender's last segment,
/// with a smoothed RTT of at most `srtt_max`: 2·SRTT + [`PTO_ACK_DELAY`]
/// (the probe timer fires at the earlier of that and the RTO, RFC 8985
/// §7.2), plus 10 % and 10 ms for timer granularity and the capture point's
/// distance from the sender. A timer that fired later was the RTO.
pub(super) fn pto_max(srtt_max: Duration) -> Duration {
    let pto = srtt_max * 2 + PTO_ACK_DELAY;
    pto + pto / 10 + Duration::from_millis(10)
}

impl Half {
    /// Data of `len` bytes at `off`, below the highest offset sent: a hole
    /// filled soon after it opened is reordering; a hole filled later is a
    /// retransmission of bytes lost before the capture point; data the
    /// capture saw before is a retransmission of it. Returns whether it was
    /// a retransmission.
    pub(super) fn on_resent(
        &mut self,
        off: u64,
        len: u32,
        at: FrameRef,
        timing: RetxTiming,
    ) -> bool {
        let end = off + len as u64;
        let hole = self
            .loss
            .holes
            .iter()
            .position(|h| off < h.end && end > h.start);
        match hole {
            Some(i) if at.ts - self.loss.holes[i].opened.ts < timing.rtt_min / 2 => {
                // filled soon after the hole opened: reordered in the network
                self.loss.out_of_order += 1;
                self.fill_hole(i, off, end);
                false
            }
            Some(i) => {
                // original lost before the capture point, then resent
                let opened = self.loss.holes[i].opened;
                self.fill_hole(i, off, end);
                self.note_retx(off, len, at, None, at.ts - opened.ts, timing, 0);
                true
            }
            None => {
                let idx = self
                    .loss
                    .retx_state
                    .unacked
                    .iter()
                    .position(|s| s.offset <= off && s.end > off);
                let (original, rtos) =
                    match idx.and_then(|i| self.loss.retx_state.unacked.get_mut(i)) {
                        Some(s) => {
                            s.retx = s.retx.saturating_add(1);
                            (Some(s.at), s.rtos)
                        }
                        None => (None, 0),
                    };
                let delay = original.map(|o| at.ts - o.ts).unwrap_or(timing.since_send);
                let kind = self.note_retx(off, len, at, original, delay, timing, rtos);
                if kind == RetxKind::Rto {
                    if let Some(s) = idx.and_then(|i| self.loss.retx_state.unacked.get_mut(i)) {
                        s.rtos = s.rtos.saturating_add(1);
                    }
                }
                true
            }
        }
    }

    /// New data from `off` (or the highest offset sent, if above) to `end`,
    /// sent at `at`: kept until acknowledged.
    pub(super) fn note_sent(&mut self, off: u64, end: u64, at: FrameRef) {
        if self.loss.retx_state.unacked.len() >= MAX_UNACKED {
            self.loss.retx_state.unacked.pop_front();
        }
        self.loss.retx_state.unacked.push_back(SentSeg {
            offset: off.max(self.send.snd_nxt),
            end,
            at,
            retx: 0,
            rtos: 0,
        });
    }

    /// The SACK blocks of an ACK at stream offset `off`: the bytes SACKed
    /// above it and the highest SACKed offset. SACK blocks (RFC 2018),
    /// D-SACK (RFC 2883 §4: a first block the cumulative ACK already covers,
    /// or one inside the second block; a block straddling the ACK is a stale
    /// SACK, not a duplicate): a D-SACK marks the retransmissions it reports
    /// spurious.
    pub(super) fn read_sack(
        &mut self,
        sack: &[(SeqNumber, SeqNumber)],
        off: u64,
        at: FrameRef,
    ) -> (u64, u64) {
        let (mut sacked, mut sack_high) = (0u64, 0u64);
        let second = sack
            .get(1)
            .and_then(|(l, r)| Some((self.offset(*l)?, self.offset(*r)?)));
        for (i, (l, r)) in sack.iter().enumerate() {
            let (Some(lo), Some(hi)) = (self.offset(*l), self.offset(*r)) else {
                continue;
            };
            if hi <= lo || hi > self.send.snd_nxt + 1 {
                continue;
            }
            let dsack = i == 0
                && (hi <= off
                    || second.is_some_and(|(l2, r2)| l2 <= lo && hi <= r2 && (l2, r2) != (lo, hi)));
            if dsack {
                let retx = self.events.as_mut().map_or(&mut [][..], |e| &mut e.retx);
                for r in retx.iter_mut().rev().take(32) {
                    if r.offset < hi && r.offset + r.len as u64 > lo {
                        r.spurious = true;
                        r.dsack.get_or_insert(at.frame);
                    }
                }
                continue;
            }
            if lo >= off {
                sacked += hi - lo;
                sack_high = sack_high.max(hi);
            }
        }
        (sacked, sack_high)
    }

    /// Classify and record one retransmission (docs/design.md §4 "Loss",
    /// with the timer checks first: stale dupACK/SACK state must not make a timeout
    /// look like a fast retransmit). Returns the kind.
    ///
    /// - **RTO recovery**: while the ACK has not passed the point a timeout
    ///   started from, retransmissions are that timeout's slow-start repair.
    /// - **Timer-driven** (the sender heard nothing for ≥ 200 ms and ≥ 2.5
    ///   RTT, since both its last segment and the last ACK): the first
    ///   retransmission since the ACK last advanced, of the highest segment,
    ///   is a tail loss probe (with one segment in flight Linux waits 2·SRTT
    ///   plus 200 ms, `tcp_schedule_loss_probe()`, RFC 8985 §7.2) unless the
    ///   silence outlasted any probe timer ([`pto_max`] of the largest RTT
    ///   sample, with the SYN in the capture); otherwise a timeout, backed
    ///   off once per earlier timeout of the same data.
    /// - ≥ 3 dupACKs or SACK above the hole: fast retransmit.
    /// - The highest segment, first since the ACK advanced, after ≥ 1.5 RTT
    ///   of silence: tail loss probe (PTO = 2·SRTT).
    /// - Otherwise a fast retransmit inferred without dupACK/SACK evidence
    ///   (RACK's time-based detection, RFC 8985 §6.2).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn note_retx(
        &mut self,
        off: u64,
        len: u32,
        at: FrameRef,
        original: Option<FrameRef>,
        delay: Duration,
        t: RetxTiming,
        rtos_before: u8,
    ) -> RetxKind {
        self.loss.retx_count += 1;
        let end = off + len as u64;
        let e = self.peer.elig;
        // any ACK seen (eligible or still on its way) already covering it
        let spurious = self.peer_flags.ack_seen && self.peer.acked >= end;
        // what the sender's timer saw: silence since its last segment and
        // since the last ACK reached it (an ACK seen at M at t_a reaches the
        // sender h_x/2 later; a segment seen at t_p left it h_x/2 earlier).
        // A sender never resends bytes it has seen acknowledged (it resends
        // from snd_una, RFC 9293 §3.10.7.4; Linux tcp_retransmit_skb()): when
        // the ACKs it can have had by now already cover these bytes, they
        // were lost on the way to it, and only its own sends timed its timer
        let lost_acks = e.seen && e.ack >= end;
        let silence = if e.seen && !lost_acks {
            t.since_send.min((at.ts - t.h_x) - e.any_ts)
        } else {
            t.since_send
        };
        let timer = silence >= RTO_MIN && silence.nanos as f64 >= 2.5 * t.rtt_min.nanos as f64;
        let highest = end >= self.send.snd_nxt;
        let first = self.loss.retx_state.since_advance == 0;
        let sack_above = e.sack_high > off;
        let in_rto_recovery = self.loss.retx_state.rto_recovery.is_some_and(|p| e.ack < p);
        let (kind, inferred) = if in_rto_recovery && !timer {
            (RetxKind::Rto, false)
        } else if timer {
            // a probe timer would have fired sooner: the RTO's
            let probe_in_time = t.srtt_max.is_none_or(|m| silence <= pto_max(m));
            if first && highest && rtos_before == 0 && probe_in_time {
                (RetxKind::TailLossProbe, false)
            } else {
                (RetxKind::Rto, false)
            }
        } else if e.dupacks >= 3 || sack_above {
            (RetxKind::FastRetransmit, false)
        } else if highest && first && silence.nanos as f64 >= 1.5 * t.rtt_min.nanos as f64 {
            (RetxKind::TailLossProbe, false)
        } else {
            (RetxKind::FastRetransmit, true)
        };
        self.loss.retx_state.since_advance += 1;
        if kind == RetxKind::Rto && !in_rto_recovery {
            self.loss.retx_state.rto_recovery = Some(self.send.snd_nxt);
        }
        self.mark(at, FrameMark::Retransmission(kind));
        let retx = &mut self.events_mut().retx;
        if retx.len() < MAX_RETX_KEPT {
            retx.push(Retransmission {
                at,
                original,
                offset: off,
                len,
                kind,
                silence,
                dupacks: e.dupacks,
                sack_above,
                backoff: if kind == RetxKind::Rto {
                    rtos_before
                } else {
                    0
                },
                spurious,
                inferred,
                lost_ack: lost_acks.then_some(e.ack_frame),
                delay,
                dsack: None,
            });
        }
        kind
    }
}
