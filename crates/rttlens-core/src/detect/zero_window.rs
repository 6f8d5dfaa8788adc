//! `zero-window`: the receiver advertised a zero window and the sender had to
//! wait (RFC 9293 §3.8.6.1, zero-window probing).
//!
//! Cost: the time from the zero-window ACK to the ACK that opened the window
//! again (or the end of the capture). Source: Linux `tcp_probe_timer()`,
//! `tcp_select_window()`.

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
use crate::base::side::Side;
use crate::base::time::union_len;

/// Finding id.
pub(crate) const ID: &str = "zero-window";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let mut out = Vec::new();
    for sender in [Side::Client, Side::Server] {
        let zero_windows = a.zero_windows(sender);
        if zero_windows.is_empty() {
            continue;
        }
        let receiver = sender.peer();
        let end_of = |z: &crate::flow::half::ZeroWindow| z.end.unwrap_or(a.last());
        let span: Vec<_> = zero_windows
            .iter()
            .map(|z| (z.start.ts, end_of(z).ts))
            .collect();
        let cost = a.cost(union_len(&span));
        let mut evidence = Vec::new();
        for z in zero_windows.iter().take(3) {
            evidence.push(ev(
                z.start.frame,
                fact!("zero-window.closed", receiver = receiver),
            ));
            match z.end {
                Some(e) => evidence.push(ev(
                    e.frame,
                    fact!("zero-window.opened", closed_ms = e.ts - z.start.ts),
                )),
                None => evidence.push(ev(a.last().frame, fact!("zero-window.still-closed"))),
            }
        }
        out.push(Finding {
            facts: args!(
                receiver = receiver,
                sender = sender,
                times = Value::Count(zero_windows.len() as u64),
            ),
            id: ID,
            connection: a.index(),
            cost,
            evidence,
            confidence: conf(Level::High, fact!("zero-window.advertised")),
            references: vec!["RFC 9293 §3.8.6.1", "Linux tcp_probe_timer()"],
            span,
        });
    }
    out
}
