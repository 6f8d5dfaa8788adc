//! `delayed-ack`: the sender could not send more until its last segment was
//! acknowledged, and the receiver held that ACK on its delayed-ACK timer
//! (the flow layer finds the stalls, see [`crate::flow::half::AckStall`]).
//!
//! A receiver acknowledges every second full-sized segment at once but
//! holds the ACK of a lone segment (RFC 1122 §4.2.3.2, RFC 5681 §4.2;
//! Linux `__tcp_ack_snd_check()` → `tcp_send_delayed_ack()`, at least
//! `TCP_DELACK_MIN` = 40 ms; Windows 200 ms). A sender with one segment, or
//! an odd tail, in flight and nothing more allowed out (congestion window,
//! the peer's window, its send buffer) then waits for that timer every
//! time. When the held segment was small and Nagle held the next one, the
//! cause is reported as `nagle-delayed-ack` instead.
//!
//! Cost: the time each ACK was held beyond the path, summed over the stalls
//! (overlaps counted once).

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::Analysis;
use crate::base::side::Side;
use crate::base::text::text;
use crate::base::time::union_len;
use crate::flow::half::AckStall;

/// Finding id.
pub(crate) const ID: &str = "delayed-ack";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let mut out = Vec::new();
    for sender in [Side::Client, Side::Server] {
        let half = &a.conn.half[sender.index()];
        // a stall Nagle explains is reported by `nagle`
        let stalls: Vec<&AckStall> = half
            .ack_stalls()
            .iter()
            .filter(|st| !half.nagle().iter().any(|n| n.x.frame == st.x.frame))
            .collect();
        let Some(first) = stalls.first() else {
            continue;
        };
        let span: Vec<_> = stalls
            .iter()
            .map(|st| (st.ack.ts - st.held, st.ack.ts))
            .collect();
        let cost = a.cost(union_len(&span));
        let receiver = sender.peer().as_str();
        let mss = a.tcp.mss[sender.index()].max(1);
        let mut evidence = Vec::new();
        for st in stalls.iter().take(3) {
            let in_flight = if st.flight_here == st.flight {
                text!(
                    "{} B ({:.1} MSS) in flight",
                    st.flight,
                    st.flight as f64 / mss as f64
                )
            } else {
                text!(
                    "{} B in flight by the ACKs seen here ({} B, {:.1} MSS, as the {} had it: later ACKs were still on their way to it)",
                    st.flight_here,
                    st.flight,
                    st.flight as f64 / mss as f64,
                    sender.as_str()
                )
            };
            evidence.push(ev(
                st.y.frame,
                text!(
                    "{} B from the {} with {in_flight}; nothing more follows",
                    st.y_len,
                    sender.as_str(),
                ),
            ));
            evidence.push(ev(
                st.ack.frame,
                text!(
                    "the {receiver}'s pure ACK of it, held {:.1} ms by its delayed-ACK timer",
                    st.held.as_millis_f64()
                ),
            ));
            evidence.push(ev(
                st.x.frame,
                text!(
                    "the {}'s next segment leaves as soon as that ACK arrives, {:.1} ms after the previous one",
                    sender.as_str(),
                    (st.x.ts - st.y.ts).as_millis_f64()
                ),
            ));
        }
        let n = stalls.len();
        let title = text!(
            "Delayed ACK: the {} waited {} for the {receiver}'s delayed ACK ({:.0} ms the first time) before it could send more",
            sender.as_str(),
            if n == 1 { "once".to_string() } else { text!("{n} times") },
            first.held.as_millis_f64()
        );
        out.push(Finding {
            facts: Default::default(),
            id: ID,
            connection: a.conn.index,
            title,
            cost,
            evidence,
            confidence: conf(
                Level::Medium,
                "the next segment left exactly when a held pure ACK arrived; assumes it was ready and held back by the window, not by the application",
            ),
            fix: text!(
                "On the {receiver}, acknowledge at once: Linux `ip route change ROUTE quickack 1` or `setsockopt(TCP_QUICKACK, 1)` after each read; Windows `TcpAckFrequency=1`. On the {}, find why only one segment (or an odd tail) could be in flight: a small or locked congestion window (`ip route … initcwnd`/`cwnd lock`), a small SO_SNDBUF or peer window.",
                sender.as_str()
            ),
            references: vec![
                "RFC 1122 §4.2.3.2",
                "RFC 5681 §4.2",
                "Linux __tcp_ack_snd_check(), tcp_send_delayed_ack(), TCP_DELACK_MIN",
            ],
            span,
        });
    }
    out
}
