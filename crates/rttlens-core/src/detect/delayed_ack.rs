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

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
use crate::base::side::Side;
use crate::base::time::union_len;
use crate::flow::half::AckStall;

/// Finding id.
pub(crate) const ID: &str = "delayed-ack";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let mut out = Vec::new();
    for sender in [Side::Client, Side::Server] {
        // a stall Nagle explains is reported by `nagle`
        let nagle = a.nagle_stalls(sender);
        let stalls: Vec<&AckStall> = a
            .ack_stalls(sender)
            .iter()
            .filter(|st| !nagle.iter().any(|n| n.x.frame == st.x.frame))
            .collect();
        let Some(first) = stalls.first() else {
            continue;
        };
        let span: Vec<_> = stalls
            .iter()
            .map(|st| (st.ack.ts - st.held, st.ack.ts))
            .collect();
        let cost = a.cost(union_len(&span));
        let receiver = sender.peer();
        let mss = a.tcp.mss[sender.index()].max(1);
        let mut evidence = Vec::new();
        for st in stalls.iter().take(3) {
            evidence.push(ev(
                st.y.frame,
                fact!(
                    "delayed-ack.last-segment",
                    bytes = Value::Bytes(u64::from(st.y_len)),
                    sender = sender,
                    flight_bytes = Value::Bytes(st.flight),
                    flight_here_bytes = Value::Bytes(st.flight_here),
                    mss_bytes = Value::Bytes(mss),
                ),
            ));
            evidence.push(ev(
                st.ack.frame,
                fact!(
                    "delayed-ack.held-ack",
                    receiver = receiver,
                    held_ms = st.held,
                ),
            ));
            evidence.push(ev(
                st.x.frame,
                fact!(
                    "delayed-ack.released",
                    sender = sender,
                    after_ms = st.x.ts - st.y.ts,
                ),
            ));
        }
        out.push(Finding {
            facts: args!(
                sender = sender,
                receiver = receiver,
                stalls = Value::Count(stalls.len() as u64),
                first_held_ms = first.held,
            ),
            id: ID,
            connection: a.index(),
            cost,
            evidence,
            confidence: conf(Level::Medium, fact!("delayed-ack.released-by-held-ack")),
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
