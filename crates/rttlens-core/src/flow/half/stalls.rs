//! The stall watchers: a segment the sender held until the peer's pure ACK
//! of its previous one arrived, by Nagle's algorithm ([`NagleStall`],
//! docs/design.md §4 "Nagle") or behind a delayed ACK ([`AckStall`]). They
//! remember the sender's last segments and the first ACK covering each.

use crate::base::side::FrameRef;
use crate::base::time::Duration;

use super::{Half, MAX_EVENTS_KEPT};

/// A small segment held back until the ACK of the previous small segment
/// reached the sender: the signature of Nagle's algorithm (RFC 896; Linux's
/// Minshall variant, `tcp_nagle_check()`: a sub-MSS segment waits while the
/// last small segment sent is unacknowledged).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct NagleStall {
    /// The earlier small segment (y).
    pub(crate) y: FrameRef,
    /// Its payload (bytes).
    pub(crate) y_len: u32,
    /// The peer's pure ACK covering y.
    pub(crate) ack: FrameRef,
    /// The held segment (x), sent as soon as that ACK arrived.
    pub(crate) x: FrameRef,
    /// Its payload (bytes).
    pub(crate) x_len: u32,
}

/// The sender went quiet until the peer's pure ACK of its last segment
/// arrived, that ACK covered at most one segment of new data, and the peer
/// had held it for at least [`DELAYED_ACK_MIN`] beyond the path: the
/// signature of a delayed ACK
/// (RFC 1122 §4.2.3.2; Linux `tcp_send_delayed_ack()`) stalling a sender
/// that could not send more until it was acknowledged (congestion window,
/// peer window or send buffer), whatever the segment sizes.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct AckStall {
    /// The sender's last segment before the stall (y).
    pub(crate) y: FrameRef,
    /// Its payload (bytes).
    pub(crate) y_len: u32,
    /// Bytes in flight once y was sent, as the sender saw it (the ACKs that
    /// could have reached it).
    pub(crate) flight: u64,
    /// The same by the ACKs seen at the capture point (Wireshark's
    /// `tcp.analysis.bytes_in_flight`): less at a receiver's vantage, where
    /// the latest ACKs had not yet reached the sender.
    pub(crate) flight_here: u64,
    /// The peer's pure ACK covering y.
    pub(crate) ack: FrameRef,
    /// How long the peer held that ACK: ACK − y − the peer's side of the
    /// path.
    pub(crate) held: Duration,
    /// The next new data, sent as soon as that ACK arrived (x).
    pub(crate) x: FrameRef,
}

/// An ACK held at least this long beyond the path was delayed by the
/// receiver's delayed-ACK timer (Linux `TCP_DELACK_MIN` is 40 ms; allow for
/// jitter).
pub const DELAYED_ACK_MIN: Duration = Duration::from_millis(30);

/// What the stall watchers remember between segments: the sender's last
/// small segment and the ACK that released it (Nagle's algorithm, RFC 896,
/// RFC 1122 §4.2.3.4; Linux `tcp_nagle_check`), and its last data segment
/// and the peer's ACK a delayed ACK held (RFC 1122 §4.2.3.2, RFC 9293
/// §3.8.6.3; Linux `icsk_ack.ato`).
#[derive(Debug, Default)]
pub(super) struct StallWatch {
    /// The last new-data segment if it was small: (end offset, mark, length).
    last_small: Option<(u64, FrameRef, u32)>,
    /// The first ACK from the peer covering `last_small`, and whether it was pure.
    last_small_ack: Option<(FrameRef, bool)>,
    /// A candidate stall, confirmed once the sender stays quiet after it
    /// (boxed: few connections have one, and inline it took 64 B of each
    /// direction).
    pending_nagle: Option<Box<NagleStall>>,
    /// The last new-data segment, any size: (end offset, mark, length,
    /// bytes in flight after it).
    last_data: Option<(u64, FrameRef, u32, u64, u64)>,
    /// The first ACK from the peer covering `last_data`, whether it was
    /// pure, and how many bytes it newly acknowledged.
    last_data_ack: Option<(FrameRef, bool, u64)>,
}

/// The shortest pause before a segment that counts as a stall: max(1 ms,
/// RTT/2).
fn min_stall(rtt_min: Duration) -> Duration {
    Duration::from_millis(1).max(rtt_min / 2)
}

/// Whether segment x (seen at `x`) was held back until the peer's ACK `a`
/// of the sender's earlier segment y reached the sender: x left when the
/// ACK arrived there (seen `h_x` after `a` at the capture point; queueing
/// only makes it later, so the window is from max(0.3 ms, RTT/20) before to
/// max(1 ms, RTT/4) after), at least [`min_stall`] after y. Shared by the
/// Nagle and delayed-ACK stalls.
fn released_by_ack(
    x: FrameRef,
    y: FrameRef,
    a: FrameRef,
    h_x: Duration,
    rtt_min: Duration,
) -> bool {
    let released = x.ts - (a.ts + h_x);
    let early = Duration::from_micros(300).max(rtt_min / 20);
    let late = Duration::from_millis(1).max(rtt_min / 4);
    released.nanos >= -early.nanos && released <= late && x.ts - y.ts >= min_stall(rtt_min)
}

impl Half {
    /// Payload of the last segment that carried new data (bytes; 0 before any).
    pub(crate) fn last_data_len(&self) -> u32 {
        self.stalls.last_data.map_or(0, |d| d.2)
    }

    /// The peer's ACK at `at` reaches stream offset `off` (`acked_before`
    /// was the cumulative ACK before it): the first ACK covering the last
    /// small segment and the last new-data segment.
    pub(super) fn stall_acks(&mut self, off: u64, at: FrameRef, pure: bool, acked_before: u64) {
        if let Some((y_end, _, _)) = self.stalls.last_small {
            if self.stalls.last_small_ack.is_none() && off >= y_end {
                self.stalls.last_small_ack = Some((at, pure));
            }
        }
        if let Some((y_end, ..)) = self.stalls.last_data {
            if self.stalls.last_data_ack.is_none() && off >= y_end {
                self.stalls.last_data_ack = Some((at, pure, off.saturating_sub(acked_before)));
            }
        }
    }

    /// New data of `len` bytes at `at` (not a retransmission), with
    /// `flight` bytes in flight after it as the sender saw it: the last
    /// new-data segment from now on.
    pub(super) fn note_last_data(&mut self, len: u32, at: FrameRef, flight: u64) {
        // in flight by the ACKs seen here (Wireshark's bytes in flight)
        let here = self.send.snd_nxt.saturating_sub(self.peer.acked);
        self.stalls.last_data = Some((self.send.snd_nxt, at, len, flight, here));
        self.stalls.last_data_ack = None;
        self.peer_flags.peer_spoke_since_data = false;
    }

    /// A candidate Nagle stall holds only if the sender then went quiet: a
    /// held segment is the end of the send queue (else the kernel would
    /// have filled it), while a window-limited sender that cut a segment
    /// short goes on sending at once. `at` is the sender's next new data.
    pub(super) fn settle_nagle(&mut self, at: FrameRef, rtt_min: Duration) {
        if let Some(p) = self.stalls.pending_nagle.take() {
            if at.ts - p.x.ts >= Duration::from_millis(1).max(rtt_min / 4) {
                self.confirm_nagle(*p);
            }
        }
    }

    fn confirm_nagle(&mut self, st: NagleStall) {
        let nagle = &mut self.events_mut().nagle;
        if nagle.len() < MAX_EVENTS_KEPT {
            nagle.push(st);
        }
    }

    /// The connection is over: a pending stall followed by nothing holds.
    pub(crate) fn finish_nagle(&mut self) {
        if let Some(p) = self.stalls.pending_nagle.take() {
            self.confirm_nagle(*p);
        }
    }

    /// Nagle (docs/design.md §4 "Nagle"): the small segment x at `off`
    /// follows the small segment y (only full-size segments in between, and no data from the
    /// peer that x could be answering, and no new data at all during the
    /// stall), and left when the peer's *pure* ACK of y reached the sender
    /// (from max(0.3 ms, RTT/20) before to max(1 ms, RTT/4) after), after a
    /// pause of at least max(1 ms, RTT/2). A pure ACK carries nothing an
    /// application could react to, so x was ready and held by the kernel.
    pub(super) fn check_nagle(
        &mut self,
        off: u64,
        len: u32,
        at: FrameRef,
        h_x: Duration,
        rtt_min: Duration,
    ) {
        // full-size segments are never held, and leave Minshall's state
        // (the last small segment sent, `tp->snd_sml`) as it is
        if self.send.mss == 0 || len as u64 >= self.send.full_size() {
            return;
        }
        let last = self.stalls.last_small.take();
        let ack = self.stalls.last_small_ack.take();
        if let (Some((y_end, y, y_len)), Some((a, true)), false) =
            (last, ack, self.peer_flags.peer_spoke)
        {
            // silent right up to x: nothing new left during the stall
            let silent = self
                .send
                .last_new_data
                .get()
                .is_none_or(|l| at.ts - l.ts >= min_stall(rtt_min));
            if y_end <= off && released_by_ack(at, y, a, h_x, rtt_min) && silent {
                self.stalls.pending_nagle = Some(Box::new(NagleStall {
                    y,
                    y_len,
                    ack: a,
                    x: at,
                    x_len: len,
                }));
            }
        }
        self.stalls.last_small = Some((off + len as u64, at, len));
        self.peer_flags.peer_spoke = false;
    }

    /// Delayed ACK (see [`AckStall`]): the new segment x at `off` left when
    /// the peer's *pure* ACK of the sender's previous segment y reached the
    /// sender (the same window as [`Half::check_nagle`]), after a pause of
    /// at least max(1 ms, RTT/2) with no data from the peer in between (so
    /// x answers nothing), and the peer held that ACK at least
    /// [`DELAYED_ACK_MIN`] beyond its side of the path (`h_peer`).
    pub(super) fn check_ack_stall(
        &mut self,
        off: u64,
        at: FrameRef,
        h_x: Duration,
        h_peer: Duration,
        rtt_min: Duration,
    ) {
        let (Some((y_end, y, y_len, flight, flight_here)), Some((a, true, newly_acked)), false) = (
            self.stalls.last_data,
            self.stalls.last_data_ack,
            self.peer_flags.peer_spoke_since_data,
        ) else {
            return;
        };
        // a receiver ACKs a second full-sized segment at once (RFC 1122
        // §4.2.3.2; Linux `__tcp_ack_snd_check()`): a delayed ACK covers at
        // most one segment's worth of new data. An ACK of many segments at
        // once was held for another reason (a receiver that stopped
        // reading, ACK coalescing), which the window findings cover.
        // (without the SYNs, the largest segment seen stands for the MSS)
        if newly_acked > self.send.segment_size() {
            return;
        }
        let held = (a.ts - y.ts) - h_peer;
        if y_end <= off
            && released_by_ack(at, y, a, h_x, rtt_min)
            && held >= DELAYED_ACK_MIN
            && self.ack_stalls().len() < MAX_EVENTS_KEPT
        {
            self.events_mut().ack_stalls.push(AckStall {
                y,
                y_len,
                flight,
                flight_here,
                ack: a,
                held,
                x: at,
            });
        }
    }
}
