//! `zero-window`: the receiver advertised a zero window and the sender had to
//! wait (RFC 9293 §3.8.6.1, zero-window probing).
//!
//! Cost: the time from the zero-window ACK to the ACK that opened the window
//! again (or the end of the capture). Source: Linux `tcp_probe_timer()`,
//! `tcp_select_window()`.

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::Analysis;
use crate::base::side::Side;
use crate::base::text::text;
use crate::base::time::union_len;

/// Finding id.
pub(crate) const ID: &str = "zero-window";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let mut out = Vec::new();
    for sender in [Side::Client, Side::Server] {
        let h = &a.conn.half[sender.index()];
        if h.zero_windows().is_empty() {
            continue;
        }
        let receiver = sender.peer().as_str();
        let end_of = |z: &crate::flow::half::ZeroWindow| z.end.unwrap_or(a.conn.last);
        let span: Vec<_> = h
            .zero_windows()
            .iter()
            .map(|z| (z.start.ts, end_of(z).ts))
            .collect();
        let cost = a.cost(union_len(&span));
        let mut evidence = Vec::new();
        for z in h.zero_windows().iter().take(3) {
            evidence.push(ev(
                z.start.frame,
                text!("{receiver} advertises a zero window"),
            ));
            match z.end {
                Some(e) => evidence.push(ev(
                    e.frame,
                    text!(
                        "window opens again after {:.1} ms",
                        (e.ts - z.start.ts).as_millis_f64()
                    ),
                )),
                None => evidence.push(ev(
                    a.conn.last.frame,
                    "window still closed at the end of the capture",
                )),
            }
        }
        out.push(Finding {
            facts: Default::default(),
            id: ID,
            connection: a.conn.index,
            title: text!("{receiver} closed its receive window {} time{}: the {} had to stop sending", h.zero_windows().len(), if h.zero_windows().len() == 1 { "" } else { "s" }, sender.as_str()),
            cost,
            evidence,
            confidence: conf(Level::High, "window 0 advertised in the ACKs"),
            fix: text!("The {receiver}'s application does not read fast enough (slow consumer, blocked thread, full downstream): read the socket sooner or in a dedicated thread; a larger receive buffer (`net.ipv4.tcp_rmem`, SO_RCVBUF) only absorbs bursts."),
            references: vec!["RFC 9293 §3.8.6.1", "Linux tcp_probe_timer()"],
            span,
        });
    }
    out
}
