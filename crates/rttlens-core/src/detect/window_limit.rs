//! `window-limit`: the sender's bytes in flight stay flat, round after
//! round, at the receiver's window as far as the capture can tell — but the
//! capture holds no SYN, so the receiver's window scale is inferred (a lower
//! bound) and the cap may be the receiver's window or the sender's own send
//! buffer (or a clamp). The cap itself is certain: a flight within one MSS
//! for several loss-free rounds, ACK-clocked, is held by a window, not by
//! the congestion window, which grows. Both candidates and both fixes are
//! given; the full capture (with the SYNs) tells them apart
//! (`receive-window-limit` or `sender-window-cap`).
//!
//! Source: docs/design.md §4 "Round limits" (`window`) and "Without the handshake";
//! RFC 7323 §2.2 (the scale is only in the SYNs).

use super::finding::{conf, ev, Finding, Level, Value};
use super::window::{capped_cost, capped_rounds_evidence, median, per_rtt_mb_s, window_limited};
use crate::analysis::rounds::FLAT_ROUNDS;
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
use crate::flow::rounds::Limit;

/// Finding id.
pub(crate) const ID: &str = "window-limit";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    // HTTP/2 the capture cannot read: a flight capped below the TCP window
    // may be the receiver's HTTP/2 window as well as the sender's buffer
    let found = window_limited(a, Limit::Window, FLAT_ROUNDS).or_else(|| {
        a.h2_blind
            .then(|| window_limited(a, Limit::Sndbuf, FLAT_ROUNDS))
            .flatten()
    });
    let Some((t, capped)) = found else {
        return vec![];
    };
    let h2 = a.h2_blind;
    if super::window::h2_flow_control_held(a, t.sender) {
        // the HTTP/2 window held the flight: `h2-flow-control-stall` names it
        return vec![];
    }
    let flight = median(capped.iter().map(|r| r.max_flight));
    let rwnd = median(capped.iter().map(|r| r.rwnd));
    // as for a receive window: against slow start unbounded, the rounds a
    // wider window would have saved (whichever window it was)
    let (cost, span) = capped_cost(a, t.sender, &t.rounds, capped[0].index, flight, u64::MAX);
    let receiver = t.sender.peer();
    let rate = per_rtt_mb_s(a, flight);
    let wscale_known = a.wscale_known(t.sender);
    let mut evidence = capped_rounds_evidence(&capped, |r| {
        fact!(
            "window-limit.round-flat",
            round = Value::Count(u64::from(r.index)),
            flight_bytes = Value::Bytes(r.max_flight),
            receiver = receiver,
            wscale_known = wscale_known,
            rwnd_bytes = Value::Bytes(r.rwnd),
        )
    });
    if let Some(w) = a.tcp.window_scale_inferred[t.sender.peer().index()] {
        evidence.push(ev(
            w.at.frame,
            fact!(
                "window-limit.wscale-inferred",
                flight_bytes = Value::Bytes(w.flight),
                window_field = Value::Count(w.raw),
                receiver = receiver,
                shift = Value::Count(u64::from(w.shift)),
            ),
        ));
    }
    evidence.sort_by_key(|e| e.frame);
    let rounds = capped.len();
    // whose window it may be: the receiver's TCP window (its scale not in
    // the capture), its HTTP/2 window (frames the capture cannot read), the
    // sender's send buffer
    let tcp_window = capped[0].limit == Limit::Window;
    let mut references = vec!["docs/design.md §4 (round limits)"];
    if tcp_window {
        references.push("RFC 7323 §2.2 (window scale only in the SYNs)");
    }
    if h2 {
        references.push("RFC 9113 §6.9 (HTTP/2 flow control)");
    }
    references.push(
        "Linux tcp_rcv_space_adjust(), tcp_sndbuf_expand(), net.ipv4.tcp_rmem, net.ipv4.tcp_wmem",
    );
    vec![Finding {
        facts: args!(
            sender = t.sender,
            receiver = receiver,
            flight_bytes = Value::Bytes(flight),
            rounds = Value::Count(rounds as u64),
            rwnd_bytes = Value::Bytes(rwnd),
            rate_mb_s = Value::Number(rate),
            tcp_window = tcp_window,
            h2 = h2,
        ),
        id: ID,
        connection: a.index(),
        cost,
        evidence,
        confidence: conf(
            Level::Medium,
            fact!(
                "window-limit.cap-certain",
                rounds = Value::Count(rounds as u64),
                flight_bytes = Value::Bytes(flight),
                h2 = h2,
            ),
        ),
        references,
        span,
    }]
}
