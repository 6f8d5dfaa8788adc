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

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::Analysis;
use crate::base::side::Side;
use crate::base::text::text;
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
    let c = &a.conn;
    for side in [Side::Client, Side::Server] {
        let h = &c.half[side.index()];
        let (Some(last), Some(last_pkt), Some(peer_last)) = (
            h.last_send,
            c.last_seen[side.index()],
            c.last_seen[side.peer().index()],
        ) else {
            continue;
        };
        let mss = a.tcp.mss[side.index()].max(1);
        let full = FULL * mss as f64;
        let last_len = h.last_data_len();
        let min_stall = MIN_STALL.max(a.rtt_min * MIN_STALL_RTTS);
        let silence = peer_last.ts - last.ts;
        let sent_nothing_after = last_pkt.frame == last.frame
            || c.rst
                .is_some_and(|(who, m)| who == side && m.frame == last_pkt.frame);
        if h.data_segments < MIN_SEGMENTS
            || h.fin.is_some()
            || !sent_nothing_after
            || (last_len as f64) < full
            || h.acked < h.snd_nxt
            || h.scaled(h.window) < mss
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
        let (end, ended) = match c.rst {
            Some((who, m)) if m.ts > last.ts => {
                (m, text!("the {} reset the connection", who.as_str()))
            }
            _ => match c.half[receiver.index()].fin.filter(|f| f.ts > last.ts) {
                Some(f) => (
                    f,
                    text!("the {} gave up and closed (FIN)", receiver.as_str()),
                ),
                None => (peer_last, "the capture ends".to_string()),
            },
        };
        let stall = end.ts - last.ts;
        let mut evidence = vec![ev(
            last.frame,
            text!(
                "last data from the {}: a full {last_len} B segment, more was coming",
                side.as_str()
            ),
        )];
        if let Some(k) = h.full_acks.last().filter(|k| k.ts >= last.ts) {
            evidence.push(ev(
                k.frame,
                text!(
                    "the {} acknowledged everything, window {} B open",
                    receiver.as_str(),
                    h.scaled(h.window)
                ),
            ));
        }
        evidence.push(ev(
            end.frame,
            text!(
                "{:.1} s later, nothing more from the {}: {ended}",
                stall.as_secs_f64(),
                side.as_str()
            ),
        ));
        out.push(Finding {
            facts: Default::default(),
            id: ID,
            connection: c.index,
            title: text!(
                "the transfer from the {} stopped mid-stream for {:.1} s with the {}'s window open, until {ended}",
                side.as_str(),
                stall.as_secs_f64(),
                receiver.as_str()
            ),
            cost: a.cost(stall),
            evidence,
            confidence: conf(
                Level::Medium,
                "full-sized last segment, all data acknowledged, window open, no FIN: the sender had more and nothing arrived (its retransmissions were lost too, or it stalled)",
            ),
            fix: text!(
                "Capture at the {} too: retransmissions backing off there (`rto-backoff`) mean the path or a middlebox went dark (firewall/NAT/load-balancer state lost, route or MTU black hole: enable `net.ipv4.tcp_mtu_probing=1`); none mean the sender's application stalled. Bound the wait on the receiver (`TCP_USER_TIMEOUT`, curl `--speed-limit/--speed-time`, application read timeouts).",
                side.as_str()
            ),
            references: vec!["RFC 6298 §5.5", "RFC 5482 (TCP_USER_TIMEOUT)", "Linux tcp_write_timeout()"],
            span: vec![(last.ts, end.ts)],
        });
    }
    out
}
