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
use crate::analysis::backoff::MIN_GAP;
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
use crate::base::side::{FrameRef, Side};

/// Finding id.
pub(crate) const ID: &str = "rto-backoff";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let mut out = Vec::new();
    for side in [Side::Client, Side::Server] {
        let Some(b) = a.backoffs(side).into_iter().next() else {
            continue;
        };
        let (first, last) = (b.attempts[0], b.attempts[b.attempts.len() - 1]);
        // what ended it: the sender giving up (its RST), the peer's reset,
        // or the end of the capture; said by `ended` (`gave-up`, `reset`
        // by `by`, `fin` by the peer in `fin_frame`, `capture-end`)
        let (end, ended) = match a.rst() {
            Some((who, m)) if m.ts >= last.ts => (
                m,
                if who == side {
                    args!(ended = "gave-up", by = side)
                } else {
                    args!(ended = "reset", by = who)
                },
            ),
            _ => match a.fin(side.peer()).filter(|f| f.ts > first.ts) {
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
            connection: a.index(),
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
