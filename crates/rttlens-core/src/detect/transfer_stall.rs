//! `transfer-stall`: seen from the receiving side, a transfer that stops in
//! the middle with the window open until someone gives up. The sender's
//! last segment was full-sized (more was coming), everything it sent was
//! acknowledged, the receiver's window had room, no FIN came — and then
//! nothing from the sender while the receiver went on (its keep-alive, its
//! FIN or RST when it timed out, or the end of the capture).
//!
//! This is the receiver's view of `rto-backoff`: the sender's
//! retransmissions (and everything else) die on the way, so the capture
//! shows silence, not retransmissions. Needs no RTT; with one, the silence
//! must also be at least [`MIN_STALL_RTTS`] round trips.
//!
//! Sources: RFC 9293 §3.8.6 (a sender with an open window and data sends
//! it), RFC 6298 §5.5 (its retransmission timer backs off while nothing
//! arrives); Linux `tcp_write_timeout()`.

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
use crate::base::side::Side;
use crate::base::time::Duration;

/// Finding id.
pub(crate) const ID: &str = "transfer-stall";

/// Shortest silence called a stall: well past a 200 ms minimum RTO and its
/// first backoffs (RFC 6298 §2.4 recommends a 1 s minimum RTO).
pub(crate) const MIN_STALL: Duration = Duration::from_millis(1_000);

/// With an RTT known, the silence must also be this many RTTs.
pub(crate) const MIN_STALL_RTTS: i64 = 8;

/// Data segments a transfer needs before a stop in it is judged.
const MIN_SEGMENTS: u64 = 4;

/// A segment at least this share of the MSS is full-sized: more was coming.
const FULL: f64 = 0.9;

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let mut out = Vec::new();
    for side in [Side::Client, Side::Server] {
        let (Some(last), Some(last_pkt), Some(peer_last)) = (
            a.last_send(side),
            a.last_seen(side),
            a.last_seen(side.peer()),
        ) else {
            continue;
        };
        let mss = a.tcp.mss[side.index()].max(1);
        let full = FULL * mss as f64;
        let last_len = a.last_data_len(side);
        let min_stall = MIN_STALL.max(a.rtt_min * MIN_STALL_RTTS);
        let silence = peer_last.ts - last.ts;
        let sent_nothing_after = last_pkt.frame == last.frame
            || a.rst()
                .is_some_and(|(who, m)| who == side && m.frame == last_pkt.frame);
        if a.data_segments(side) < MIN_SEGMENTS
            || a.fin(side).is_some()
            || !sent_nothing_after
            || (last_len as f64) < full
            || a.acked(side) < a.snd_nxt(side)
            || a.send_window(side) < mss
            || silence < min_stall
            // a response the application layer saw complete (at the TCP
            // level the last data is not known to end anything)
            || a.app.protocol != "tcp"
                && a.app.response_last.is_some_and(|r| r.frame <= last.frame)
                && side == Side::Server
        {
            continue;
        }
        let receiver = side.peer();
        // what ended it: `ended` (`reset` by `by`, `fin` by the receiver,
        // `capture-end`)
        let (end, ended, by) = match a.rst() {
            Some((who, m)) if m.ts > last.ts => (m, "reset", who),
            _ => match a.fin(receiver).filter(|f| f.ts > last.ts) {
                Some(f) => (f, "fin", receiver),
                None => (peer_last, "capture-end", receiver),
            },
        };
        let stall = end.ts - last.ts;
        let mut evidence = vec![ev(
            last.frame,
            fact!(
                "transfer-stall.last-data",
                sender = side,
                len_bytes = Value::Bytes(u64::from(last_len)),
            ),
        )];
        if let Some(k) = a.full_acks(side).last().filter(|k| k.ts >= last.ts) {
            evidence.push(ev(
                k.frame,
                fact!(
                    "transfer-stall.all-acked",
                    receiver = receiver,
                    window_bytes = Value::Bytes(a.send_window(side)),
                ),
            ));
        }
        evidence.push(ev(
            end.frame,
            fact!(
                "transfer-stall.nothing-more",
                stall_ms = stall,
                sender = side,
                ended = ended,
                by = by,
            ),
        ));
        out.push(Finding {
            facts: args!(
                sender = side,
                receiver = receiver,
                stall_ms = stall,
                ended = ended,
                by = by,
            ),
            id: ID,
            connection: a.index(),
            cost: a.cost(stall),
            evidence,
            confidence: conf(Level::Medium, fact!("transfer-stall.open-window")),
            references: vec![
                "RFC 6298 §5.5",
                "RFC 5482 (TCP_USER_TIMEOUT)",
                "Linux tcp_write_timeout()",
            ],
            span: vec![(last.ts, end.ts)],
        });
    }
    out
}
