//! `receive-window-limit`: the sender filled the receiver's advertised window
//! (flight ≥ rwnd − 2 MSS, see [`crate::analysis::rounds::RWND_SLACK_MSS`]) for several rounds — the receiver's buffer, not
//! the network, set the pace.
//!
//! Source: docs/design.md §4 "Round limits" (the `rwnd` limit); RFC 7323 §2
//! (without window scale the window cannot exceed 65535 B); Linux
//! `tcp_rcv_space_adjust()` (receive buffer autotuning), `net.ipv4.tcp_rmem`.

use super::finding::{conf, ev, Finding, Level};
use super::util::{capped_cost, median, window_limited};
use crate::analysis::rounds::UNSCALED_MAX_WINDOW;
use crate::analysis::Analysis;
use crate::base::side::Side;
use crate::base::text::text;
use crate::flow::rounds::Limit;

/// Finding id.
pub(crate) const ID: &str = "receive-window-limit";

/// Rounds at the receiver's window needed to report.
const MIN_ROUNDS: usize = 2;

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let Some((t, limited)) = window_limited(a, Limit::Rwnd, MIN_ROUNDS) else {
        return vec![];
    };
    let rwnd = median(limited.iter().map(|r| r.rwnd));
    let (cost, span) = capped_cost(
        a,
        &t.rounds,
        limited[0].index,
        limited[0].max_flight,
        u64::MAX,
    );
    let receiver = t.sender.peer();
    let no_wscale = a
        .syn_of(receiver)
        .is_some_and(|s| s.options.window_scale.is_none());
    let mut evidence = Vec::new();
    if let Some(syn) = a.syn_of(receiver) {
        let what = match syn.options.window_scale {
            Some(s) => text!("{} SYN: window scale {s}", receiver.as_str()),
            None => text!(
                "{} SYN without a window-scale option: its window cannot exceed 65535 B",
                receiver.as_str()
            ),
        };
        evidence.push(ev(syn.first.frame, what));
    }
    for r in limited.iter().take(4) {
        evidence.push(ev(
            r.max_flight_frame,
            text!(
                "round {}: {} B in flight = the {} window of {} B",
                r.index,
                r.max_flight,
                receiver.as_str(),
                r.rwnd
            ),
        ));
    }
    let mut fix = match receiver {
        Side::Client => "On the client (receiver): let its receive buffer grow — raise `net.ipv4.tcp_rmem` max (e.g. `4096 131072 16777216`), do not pin SO_RCVBUF (curl `--buffer`/app socket options), keep `net.ipv4.tcp_moderate_rcvbuf=1`.".to_string(),
        Side::Server => "On the server (receiver): raise `net.ipv4.tcp_rmem` max, do not pin SO_RCVBUF (nginx `listen … rcvbuf=`), keep `net.ipv4.tcp_moderate_rcvbuf=1`.".to_string(),
    };
    if no_wscale {
        fix.push_str(" Its SYN had no window-scale option: enable `net.ipv4.tcp_window_scaling=1` (or fix the middlebox stripping the option).");
    }
    let mut confidence = conf(
        Level::High,
        text!(
            "flight within one MSS of the advertised window in {} rounds",
            limited.len()
        ),
    );
    // without the SYNs the scale is a lower bound: the rounds were kept as
    // `rwnd` only on the evidence `rounds::classify` names, said here
    if !a.conn.half[t.sender.index()].wscale_known {
        confidence.level = Level::Medium;
        match a.tcp.window_scale_inferred[receiver.index()] {
            Some(w) => {
                evidence.push(ev(
                    w.at.frame,
                    text!(
                        "{} B in flight under a window field of {}: window scale at least {} (no SYN in the capture)",
                        w.flight, w.raw, w.shift
                    ),
                ));
                confidence.why.push_str("; window scale inferred (no SYN)");
            }
            None => confidence
                .why
                .push_str("; no SYN in the capture: no window scaling assumed"),
        }
        if rwnd == UNSCALED_MAX_WINDOW {
            confidence
                .why
                .push_str(": the window field sat at 65535, the most an unscaled window can say");
            fix.push_str(" The window field sat at 65535 throughout: the receiver most likely does not scale its window (no SYN in the capture to prove it) — check `net.ipv4.tcp_window_scaling=1` and middleboxes that strip the option.");
        } else {
            confidence
                .why
                .push_str(": the flight followed the window as it changed or met it to the byte");
        }
    }
    vec![Finding {
        id: ID,
        connection: a.conn.index,
        title: text!(
            "{} bytes in flight held at the {}'s receive window ({rwnd} B) for {} rounds{}",
            t.sender.as_str(),
            receiver.as_str(),
            limited.len(),
            if no_wscale {
                "; its SYN had no window-scale option"
            } else {
                ""
            }
        ),
        cost,
        evidence,
        confidence,
        fix,
        references: vec![
            "docs/design.md §4 (round limits)",
            "RFC 7323 §2.2",
            "Linux tcp_rcv_space_adjust(), net.ipv4.tcp_rmem",
        ],
        span,
    }]
}
