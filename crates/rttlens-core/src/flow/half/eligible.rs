//! ACK eligibility (docs/design.md §4 "Causality"): an ACK seen at the
//! capture point counts for the sender only once it can have reached it.
//! The peer's ACKs queue here ([`Half::queue_ack`]) until the sender's next
//! segment shows how far its view had got ([`Half::advance_eligible`],
//! corrected by [`Half::advance_to_cover`]); [`Eligible`] is what the sender
//! had seen of them, which the retransmission classes, the window checks
//! and the rounds read.

use crate::base::side::FrameRef;
use crate::base::time::{Duration, Timestamp};

use super::Half;

/// ACKs still on their way to a sender that [`Half::advance_to_cover`]
/// looks through for one whose window covers its new data.
const COVER_SCAN: usize = 64;

/// One ACK from the peer, or a run of ACKs that differ only in time.
#[derive(Debug, Clone, Copy)]
pub(super) struct AckEv {
    ts: Timestamp,
    /// Frame of the run's first ACK.
    frame: u64,
    /// The latest ACK of the run: a repeat of the one before (same ACK,
    /// window and SACK, not a duplicate ACK) only moves the time the sender
    /// last heard from the peer ([`Eligible::any_ts`]), so it joins the run
    /// rather than the queue. Without that, the peer's data segments of a
    /// download, each repeating the same ACK of the request, would queue
    /// one event each until this side sends again: memory growing with the
    /// connection's length.
    last_ts: Timestamp,
    ack: u64,
    /// The raw window field (16 bits on the wire; a word here would pad
    /// the event from 56 B to 64).
    window: u32,
    sacked: u64,
    sack_high: u64,
    dup: bool,
}

/// What the sender had seen of the peer's ACKs (the causally eligible ones).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Eligible {
    /// The highest cumulative ACK (stream offset).
    pub(super) ack: u64,
    /// The latest window field (raw).
    pub(super) window: u64,
    /// Bytes SACKed above the ACK, by the latest ACK.
    pub(super) sacked: u64,
    /// The highest SACKed offset since the ACK last advanced.
    pub(super) sack_high: u64,
    /// Duplicate ACKs since the ACK last advanced.
    pub(super) dupacks: u32,
    /// Any ACK was eligible.
    pub(super) seen: bool,
    /// When the latest advancing ACK was seen at the capture point.
    pub(super) ack_ts: Timestamp,
    /// Its frame.
    pub(super) ack_frame: u64,
    /// When the latest ACK of any kind (dupACKs too) was seen.
    pub(super) any_ts: Timestamp,
}

impl Half {
    /// Queue the peer's ACK seen at `at` (stream offset `ack`, raw window
    /// field, SACKed bytes and highest SACKed offset, duplicate or not) until
    /// it is eligible; a repeat of the last one joins its run.
    pub(super) fn queue_ack(
        &mut self,
        at: FrameRef,
        ack: u64,
        window: u64,
        (sacked, sack_high): (u64, u64),
        dup: bool,
    ) {
        let ev = AckEv {
            ts: at.ts,
            frame: at.frame,
            last_ts: at.ts,
            ack,
            // a raw window field, or the last one: never above 16 bits
            window: u32::try_from(window).unwrap_or(u32::MAX),
            sacked,
            sack_high,
            dup,
        };
        match self.peer.hist.back_mut() {
            Some(b)
                if !dup
                    && !b.dup
                    && (b.ack, b.window, b.sacked, b.sack_high)
                        == (ev.ack, ev.window, ev.sacked, ev.sack_high) =>
            {
                b.last_ts = ev.ts;
            }
            _ => self.peer.hist.push_back(ev),
        }
    }

    /// Make the ACKs the sender can have received by `now` eligible.
    /// `h_x` is M→sender→M; an ACK seen at `t_a` is eligible for data seen at
    /// `t_p` when `t_a ≤ t_p − h_x + ε`, ε = h_x/10 + 20 µs (timing noise).
    pub(super) fn advance_eligible(&mut self, now: Timestamp, h_x: Duration) {
        let eps = Duration::from_nanos(h_x.nanos / 10) + Duration::from_micros(20);
        self.eligible_until(now - h_x + eps);
    }

    /// New data ending at `end` beyond the right edge of the window the
    /// sender is taken to have seen: a sender never sends past the window it
    /// was offered (RFC 9293 §3.8.6), so it had already received a later ACK
    /// (the path's delay estimate was long by a little). Make ACKs eligible
    /// up to the first one whose window covers `end`; when none does (a
    /// sender that overran the window, or a scale not known), nothing moves.
    pub(super) fn advance_to_cover(&mut self, end: u64) {
        if !self.peer_flags.wscale_known || !self.peer.elig.seen {
            return;
        }
        if end <= self.peer.elig.ack + self.scaled(self.peer.elig.window) {
            return;
        }
        // the next few ACKs on their way (bounded: a sender that overran
        // every window would otherwise rescan them all per segment)
        let covering = self
            .peer
            .hist
            .iter()
            .take(COVER_SCAN)
            .find(|a| {
                a.ack >= self.peer.elig.ack && end <= a.ack + self.scaled(u64::from(a.window))
            })
            .map(|a| a.ts);
        if let Some(ts) = covering {
            self.eligible_until(ts);
        }
    }

    /// Make the ACKs seen at the capture point up to `horizon` eligible.
    fn eligible_until(&mut self, horizon: Timestamp) {
        while let Some(a) = self.peer.hist.front_mut() {
            if a.ts > horizon {
                break;
            }
            let a = if a.last_ts > horizon {
                // a run only partly eligible: its repeats before the horizon
                // are not kept, so the sender is taken to have heard from the
                // peer at the horizon (the latest it can have; a silence
                // computed from it is never longer than the true one)
                let part = AckEv {
                    last_ts: horizon,
                    ..*a
                };
                a.ts = horizon + Duration::from_nanos(1);
                part
            } else {
                let a = *a;
                self.peer.hist.pop_front();
                a
            };
            if !self.peer.elig.seen || a.ack > self.peer.elig.ack {
                self.peer.elig.dupacks = 0;
                self.peer.elig.ack = a.ack;
                self.peer.elig.ack_ts = a.ts;
                self.peer.elig.ack_frame = a.frame;
                self.loss.retx_state.ack_advanced(a.ack);
                self.peer.elig.sack_high = 0;
            } else if a.dup {
                self.peer.elig.dupacks += 1;
            }
            self.peer.elig.seen = true;
            self.peer.elig.any_ts = a.last_ts;
            self.peer.elig.window = u64::from(a.window);
            self.peer.elig.sacked = a.sacked;
            self.peer.elig.sack_high = self.peer.elig.sack_high.max(a.sack_high);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::seq::SeqNumber;
    use crate::base::side::Side;
    use crate::flow::rtt::RttSamples;

    fn mark(frame: u64, ms: i64) -> FrameRef {
        FrameRef {
            frame,
            ts: Timestamp::from_nanos(ms * 1_000_000),
        }
    }

    /// A client that sent its request and then only receives: every one of
    /// the server's data segments repeats the ACK of the request.
    fn downloading_client(acks: u64) -> Half {
        let mut h = Half::new(Side::Client);
        let mut rtt = RttSamples::default();
        let zero = Duration::from_nanos(0);
        let rtt_min = Duration::from_millis(10);
        h.on_data(
            SeqNumber(1000),
            100,
            &[0; 100],
            mark(1, 0),
            zero,
            zero,
            rtt_min,
            None,
            None,
        );
        for i in 0..acks {
            let at = mark(2 + i, 10 + i as i64);
            h.on_peer_ack(SeqNumber(1100), Some(512), &[], false, at, &mut rtt, None);
        }
        h
    }

    #[test]
    fn repeated_acks_queue_as_one_run() {
        let h = downloading_client(100_000);
        // the first ACK of the request, then one run of its repeats
        assert_eq!(h.peer.hist.len(), 1, "{:?}", h.peer.hist.front());
        let run = h.peer.hist.front().copied();
        assert_eq!(
            run.map(|a| (a.ts, a.last_ts)),
            Some((mark(0, 10).ts, mark(0, 100_009).ts))
        );
    }

    /// The client's second request at `ms`, with h_x = 10 ms.
    fn second_request(h: &mut Half, ms: i64) -> (FrameRef, Duration) {
        let (at, h_x) = (mark(5_000, ms), Duration::from_millis(10));
        h.on_data(
            SeqNumber(1100),
            100,
            &[0; 100],
            at,
            h_x,
            Duration::from_nanos(0),
            h_x,
            None,
            None,
        );
        (at, h_x)
    }

    #[test]
    fn a_run_makes_the_last_repeat_eligible() {
        let mut h = downloading_client(1_000);
        // long after the last ACK: all eligible, the sender last heard from
        // the peer at the last repeat (1,009 ms)
        second_request(&mut h, 2_000);
        assert!(h.peer.hist.is_empty());
        assert_eq!(h.peer.elig.any_ts, mark(0, 1_009).ts);
        assert_eq!(h.peer.elig.ack, 100);
    }

    #[test]
    fn a_run_straddling_the_horizon_stays_for_the_rest() {
        let mut h = downloading_client(1_000);
        // horizon = 520 ms − 10 ms + ε (1 ms + 20 µs): halfway through the run
        let (at, h_x) = second_request(&mut h, 520);
        let horizon = at.ts - h_x + Duration::from_micros(1_020);
        // never later than the horizon: a silence measured from it is not
        // longer than the true one
        assert_eq!(h.peer.elig.any_ts, horizon);
        assert_eq!(h.peer.elig.ack, 100);
        let rest = h.peer.hist.front().copied();
        assert_eq!(h.peer.hist.len(), 1);
        assert!(rest.is_some_and(|a| a.ts > horizon && a.last_ts == mark(0, 1_009).ts));
    }

    /// A closed connection's queues are trimmed while it waits for late
    /// segments: what it holds and does with what comes later is unchanged.
    #[test]
    fn trimmed_queues_hold_and_do_the_same() {
        let mut kept = downloading_client(3);
        let mut trimmed = downloading_client(3);
        // the request acknowledged: nothing unacknowledged; the ACK waits
        assert!(trimmed.loss.retx_state.unacked.is_empty());
        assert_eq!(trimmed.peer.hist.len(), 1);
        let hist_room = trimmed.peer.hist.capacity();
        trimmed.trim_queues();
        assert_eq!(trimmed.loss.retx_state.unacked.capacity(), 0);
        assert!(trimmed.peer.hist.capacity() <= hist_room);
        assert_eq!(format!("{trimmed:?}"), format!("{kept:?}"));
        // a late request (queues grow again): the same as untrimmed
        second_request(&mut kept, 520);
        second_request(&mut trimmed, 520);
        assert_eq!(format!("{trimmed:?}"), format!("{kept:?}"));
    }
}
