//! The RTO backoff chain of each sender: the same bytes sent again and
//! again with growing gaps and no ACK ever coming back for them, a
//! retransmission timer backing off towards a dead, unreachable or
//! black-holed peer (RFC 6298 §5.5: the RTO doubles after each expiry).
//! `rto-backoff` reports the chain; `loss` leaves its retransmissions to
//! it (they repaired nothing).

use crate::analysis::Analysis;
use crate::base::side::{FrameRef, Side};
use crate::base::time::Duration;
use crate::flow::half::{Half, Retransmission};

/// Retransmissions of the same bytes needed: the first may come from fast
/// recovery or a probe, the two timer gaps after it show the backoff.
pub(crate) const MIN_RETRANSMISSIONS: usize = 3;

/// Smallest gap between attempts that a retransmission timer leaves: Linux's
/// `TCP_RTO_MIN` (200 ms, include/net/tcp.h) less timing noise.
pub(crate) const MIN_GAP: Duration = Duration::from_millis(150);

/// One backoff episode: the attempts at one stream offset.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    /// Stream offset of the bytes retried.
    pub(crate) offset: u64,
    /// Every transmission: the original (when the capture saw it) then each
    /// retransmission.
    pub(crate) attempts: Vec<FrameRef>,
    /// The capture saw the original transmission (`attempts[0]`).
    pub(crate) original: bool,
    /// Index in `attempts` of the first timer-driven retransmission: the
    /// backoff runs from there to the last attempt (earlier ones may be
    /// fast retransmissions or a probe).
    pub(crate) timer_from: usize,
}

impl Backoff {
    /// Gaps between successive attempts.
    pub fn gaps(&self) -> Vec<Duration> {
        self.attempts
            .windows(2)
            .map(|w| w[1].ts - w[0].ts)
            .collect()
    }

    /// Gaps between the timer-driven retransmissions.
    pub(crate) fn timer_gaps(&self) -> Vec<Duration> {
        let mut g = self.gaps();
        g.drain(..self.timer_from.min(g.len()));
        g
    }

    /// Median ratio of successive timer gaps (2.0 for RFC 6298 doubling).
    pub(crate) fn factor(&self) -> f64 {
        let g = self.timer_gaps();
        let mut r: Vec<f64> = g
            .windows(2)
            .filter(|w| w[0].nanos > 0)
            .map(|w| w[1].nanos as f64 / w[0].nanos as f64)
            .collect();
        if r.is_empty() {
            return 1.0;
        }
        r.sort_by(f64::total_cmp);
        r[r.len() / 2]
    }
}

/// The backoff episodes of `half`: an offset retransmitted at least
/// [`MIN_RETRANSMISSIONS`] times, every gap between retransmissions at
/// least [`MIN_GAP`] and none shorter than the one before (a timer backing
/// off; the first retransmission may have been fast), and never
/// acknowledged within the capture.
fn episodes(half: &Half) -> Vec<Backoff> {
    let mut by_offset: Vec<(u64, Vec<&Retransmission>)> = Vec::new();
    for r in half.retx() {
        // acknowledged later: the loss was repaired (an `rto`, not this)
        if half.peer.acked > r.offset {
            continue;
        }
        match by_offset.iter_mut().find(|(o, _)| *o == r.offset) {
            Some((_, v)) => v.push(r),
            None => by_offset.push((r.offset, vec![r])),
        }
    }
    let mut out = Vec::new();
    for (offset, list) in by_offset {
        if list.len() < MIN_RETRANSMISSIONS {
            continue;
        }
        let mut attempts: Vec<FrameRef> = list[0].original.into_iter().collect();
        attempts.extend(list.iter().map(|r| r.at));
        let original = list[0].original.is_some();
        // the timer's run: the longest tail of gaps each at least MIN_GAP
        // and none shorter than the one before (RFC 6298 §5.5: the timer
        // never fires sooner than the time before; allow 10 % of jitter)
        let gaps: Vec<Duration> = attempts.windows(2).map(|w| w[1].ts - w[0].ts).collect();
        let first_retx = usize::from(original);
        let mut from = gaps.len();
        while from > first_retx
            && gaps[from - 1] >= MIN_GAP
            && gaps.get(from).is_none_or(|next| {
                i128::from(next.nanos) * 10 >= i128::from(gaps[from - 1].nanos) * 9
            })
        {
            from -= 1;
        }
        // gaps[from..] are timer gaps; attempts[from] is where the run starts
        if gaps.len() - from + 1 >= MIN_RETRANSMISSIONS {
            out.push(Backoff {
                offset,
                attempts,
                original,
                timer_from: from,
            });
        }
    }
    out
}

impl Analysis {
    /// The backoff episodes of `sender` (see [`episodes`]), in the order
    /// of their first retransmission's offset.
    pub(crate) fn backoffs(&self, sender: Side) -> Vec<Backoff> {
        episodes(&self.conn.half[sender.index()])
    }
}
