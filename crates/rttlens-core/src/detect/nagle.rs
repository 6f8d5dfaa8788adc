//! `nagle-stall` and `nagle-delayed-ack`: a small segment held back by
//! Nagle's algorithm until the ACK of the previous small segment came back
//! (docs/design.md §4 "Nagle"; the flow layer finds the stalls, see
//! [`crate::flow::half::NagleStall`]).
//!
//! - `nagle-stall`: the ACK came back after about one RTT: the held segment
//!   lost that round trip (the seed case: a TLS 1.3 server flight written
//!   in two writes without TCP_NODELAY takes 2 RTT instead of 1).
//! - `nagle-delayed-ack`: the receiver also delayed its ACK (Linux
//!   `TCP_DELACK_MIN` 40 ms, Windows 200 ms; RFC 1122 §4.2.3.2), so the
//!   stall is RTT + the delayed-ACK wait.
//!
//! Cost: from the small segment y to the held segment x (x is assumed ready
//! when y left; confidence says so). Sources: RFC 896, RFC 1122 §4.2.3.4,
//! Linux `tcp_nagle_check()`, `tcp_minshall_check()`, `tcp_send_delayed_ack()`.

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
use crate::base::side::Side;
use crate::base::time::union_len;
use crate::base::time::Duration;
use crate::flow::half::NagleStall;
use crate::flow::half::DELAYED_ACK_MIN;

/// Finding id: Nagle held a segment for about one round trip.
pub(crate) const ID_STALL: &str = "nagle-stall";
/// Finding id: Nagle held a segment behind a delayed ACK.
pub(crate) const ID_DELAYED_ACK: &str = "nagle-delayed-ack";

/// How long the receiver held its ACK of y: ACK − y − h of the receiver.
fn ack_wait(a: &Analysis, sender: Side, st: &NagleStall) -> Duration {
    let h_receiver = match sender.peer() {
        Side::Client => a.h_c(),
        Side::Server => a.h_s(),
    };
    ((st.ack.ts - st.y.ts) - h_receiver).max(Duration::ZERO)
}

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let mut out = Vec::new();
    for sender in [Side::Client, Side::Server] {
        let stalls = a.nagle_stalls(sender);
        if stalls.is_empty() {
            continue;
        }
        let (delayed, plain): (Vec<&NagleStall>, Vec<&NagleStall>) = stalls
            .iter()
            .partition(|st| ack_wait(a, sender, st) >= DELAYED_ACK_MIN);
        for (id, list) in [(ID_DELAYED_ACK, delayed), (ID_STALL, plain)] {
            let Some(first) = list.first() else { continue };
            let span: Vec<_> = list.iter().map(|st| (st.y.ts, st.x.ts)).collect();
            let cost = a.cost(union_len(&span));
            let wait = ack_wait(a, sender, first);
            let receiver = sender.peer();
            let mut evidence = Vec::new();
            for st in list.iter().take(3) {
                let w = ack_wait(a, sender, st);
                evidence.push(ev(
                    st.y.frame,
                    fact!(
                        "nagle.small-segment",
                        bytes = Value::Bytes(u64::from(st.y_len)),
                        sender = sender,
                    ),
                ));
                evidence.push(ev(
                    st.ack.frame,
                    fact!(
                        "nagle.pure-ack",
                        receiver = receiver,
                        delayed = w >= DELAYED_ACK_MIN,
                        held_ms = w,
                    ),
                ));
                evidence.push(ev(
                    st.x.frame,
                    fact!(
                        "nagle.released",
                        bytes = Value::Bytes(u64::from(st.x_len)),
                        after_ms = st.x.ts - st.y.ts,
                    ),
                ));
            }
            out.push(Finding {
                facts: args!(
                    sender = sender,
                    receiver = receiver,
                    wait_ms = wait,
                    stalls = Value::Count(list.len() as u64),
                ),
                id,
                connection: a.index(),
                cost,
                evidence,
                confidence: conf(Level::Medium, fact!("nagle.released-by-ack")),
                references: vec![
                    "RFC 896",
                    "RFC 1122 §4.2.3.4",
                    "RFC 1122 §4.2.3.2",
                    "Linux tcp_nagle_check(), tcp_minshall_check(), TCP_DELACK_MIN",
                ],
                span,
            });
        }
    }
    out
}
