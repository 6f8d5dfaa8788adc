//! `rto-backoff`: the same bytes sent again and again with growing gaps and
//! no ACK ever coming back for them: a retransmission timer backing off
//! towards a dead, unreachable or black-holed peer (RFC 6298 §5.5: the RTO
//! doubles after each expiry; Linux `tcp_retransmit_timer()` gives up after
//! `net.ipv4.tcp_retries2` tries, ~15 by default, or `TCP_USER_TIMEOUT`).
//!
//! Unlike `rto` (a timeout that repaired a loss, after which ACKs resumed),
//! nothing here was repaired within the capture: the whole time from the
//! first transmission to the last attempt (and on to the give-up, when the
//! sender reset the connection) is lost. Needs no RTT: the timer gaps and
//! the missing ACKs are the proof, so it works on captures without the
//! handshake or with one direction only.

use super::finding::{conf, ev, Fact, Finding, Level, Value};
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
use crate::base::side::{FrameRef, Side};
use crate::base::time::Duration;
use crate::flow::half::{Half, Retransmission};

/// Finding id.
pub(crate) const ID: &str = "rto-backoff";

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
pub(crate) fn episodes(half: &Half) -> Vec<Backoff> {
    let mut by_offset: Vec<(u64, Vec<&Retransmission>)> = Vec::new();
    for r in half.retx() {
        // acknowledged later: the loss was repaired (an `rto`, not this)
        if half.acked > r.offset {
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

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let mut out = Vec::new();
    for side in [Side::Client, Side::Server] {
        let h = &a.conn.half[side.index()];
        let Some(b) = episodes(h).into_iter().next() else {
            continue;
        };
        let (first, last) = (b.attempts[0], b.attempts[b.attempts.len() - 1]);
        // what ended it: the sender giving up (its RST), the peer's reset,
        // or the end of the capture; said by `ended` (`gave-up`, `reset`
        // by `by`, `fin` by the peer in `fin_frame`, `capture-end`)
        let (end, ended) = match a.conn.rst {
            Some((who, m)) if m.ts >= last.ts => (
                m,
                if who == side {
                    args!(ended = "gave-up", by = side)
                } else {
                    args!(ended = "reset", by = who)
                },
            ),
            _ => match a.conn.half[side.peer().index()]
                .fin
                .filter(|f| f.ts > first.ts)
            {
                Some(f) => (
                    last,
                    args!(
                        ended = "fin",
                        by = side.peer(),
                        fin_frame = Value::Frame(f.frame)
                    ),
                ),
                None => (last, args!(ended = "capture-end")),
            },
        };
        let lost = end.ts - first.ts;
        let retries = b.attempts.len() - usize::from(b.original);
        let mut evidence: Vec<_> = Vec::new();
        let mut prev: Option<FrameRef> = None;
        for (i, m) in b.attempts.iter().enumerate() {
            let attempt = Value::Count(i as u64 + 1);
            let what = match (i, prev) {
                (0, _) if b.original => {
                    fact!("rto-backoff.original", offset = Value::Bytes(b.offset))
                }
                (_, Some(p)) => fact!(
                    "rto-backoff.attempt",
                    attempt = attempt,
                    gap_ms = m.ts - p.ts
                ),
                (_, None) => fact!("rto-backoff.attempt-uncaptured-original", attempt = attempt),
            };
            evidence.push(ev(m.frame, what));
            prev = Some(*m);
        }
        if end.frame != last.frame {
            evidence.push(ev(
                end.frame,
                Fact {
                    kind: "rto-backoff.ended",
                    args: ended.clone(),
                },
            ));
        }
        let factor = b.factor();
        let mut facts = args!(
            sender = side,
            peer = side.peer(),
            transmissions = Value::Count(b.attempts.len() as u64),
            lost_ms = lost,
            factor = Value::Number(factor),
        );
        for (n, v) in ended.iter() {
            facts.set(n, v.clone());
        }
        out.push(Finding {
            facts,
            id: ID,
            connection: a.conn.index,
            cost: a.cost(lost),
            evidence,
            confidence: conf(
                Level::High,
                fact!(
                    "rto-backoff.never-acked",
                    retransmissions = Value::Count(retries as u64),
                    offset = Value::Bytes(b.offset),
                    min_gap_ms = MIN_GAP,
                ),
            ),
            references: vec![
                "RFC 6298 §5.5 (backoff)",
                "RFC 5482 (TCP_USER_TIMEOUT)",
                "Linux tcp_retransmit_timer(), tcp_write_timeout(), net.ipv4.tcp_retries2",
            ],
            span: vec![(first.ts, end.ts)],
        });
    }
    out
}
