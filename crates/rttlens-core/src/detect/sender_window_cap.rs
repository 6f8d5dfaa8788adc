//! `sender-window-cap`: the sender's bytes in flight stay flat below the
//! receiver's window for several loss-free rounds — its send buffer, a window
//! clamp, or a middlebox holds it, not the network and not the receiver.
//!
//! Source: docs/design.md §4 "Round limits" (`sndbuf`: flat ±1 MSS below rwnd
//! for ≥ 3 loss-free rounds); Linux `tcp_sndbuf_expand()` / `net.ipv4.tcp_wmem`.

use super::finding::{conf, ev, Finding, Level};
use super::util::{
    capped_cost, capped_rounds_evidence, h2_flow_control_held, median, per_rtt_mb_s, window_limited,
};
use crate::analysis::Analysis;
use crate::base::text::text;
use crate::flow::rounds::Limit;

/// Finding id.
pub(crate) const ID: &str = "sender-window-cap";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let Some((t, capped)) = window_limited(a, Limit::Sndbuf, 1) else {
        return vec![];
    };
    if h2_flow_control_held(a, t.sender) || a.h2_blind {
        // the HTTP/2 window held the flight (`h2-flow-control-stall` names
        // it), or may have: HTTP/2 the capture cannot read (`window-limit`
        // names both candidates)
        return vec![];
    }
    let flight = median(capped.iter().map(|r| r.max_flight));
    let rwnd = median(capped.iter().map(|r| r.rwnd));
    let (cost, span) = capped_cost(a, &t.rounds, capped[0].index, flight, rwnd.max(flight));
    let sender = t.sender.as_str();
    // without the SYNs the windows are lower bounds (inferred scale): the
    // true window is at least this, so "below the window" still holds
    let inferred = a.tcp.window_scale_inferred[t.sender.peer().index()];
    let at_least = if a.conn.half[t.sender.index()].wscale_known {
        ""
    } else {
        "at least "
    };
    let rate = per_rtt_mb_s(a, flight);
    let mut evidence = capped_rounds_evidence(&capped, |r| {
        text!(
            "round {}: {} B in flight, receiver window {at_least}{} B",
            r.index,
            r.max_flight,
            r.rwnd
        )
    });
    let near_64k = flight.abs_diff(65535) <= t.mss;
    let mut fix = text!(
        "Let the {sender} keep more than {flight} B in flight: raise its send buffer (nginx `listen … sndbuf=4m` or remove a small `sndbuf=`; \
         `sysctl -w net.ipv4.tcp_wmem=\"4096 131072 16777216\"` and do not pin SO_SNDBUF, which disables autotuning); \
         look for a window clamp (TCP_WINDOW_CLAMP, `ip route … window`) or a proxy/middlebox that caps the flight."
    );
    if near_64k {
        fix.push_str(" A cap at 65535 B is the signature of a 16-bit limit: a hop or socket without window scaling (RFC 7323) or a 64 KiB buffer.");
    }
    let level = if capped.len() >= 6 && rwnd as f64 >= 1.5 * flight as f64 {
        Level::High
    } else {
        Level::Medium
    };
    if let Some(w) = inferred {
        evidence.push(ev(
            w.at.frame,
            text!(
                "{} B in flight under a window field of {}: the receiver's window scale is at least {} (no SYN in the capture)",
                w.flight, w.raw, w.shift
            ),
        ));
    }
    vec![Finding {
        facts: Default::default(),
        id: ID,
        connection: a.conn.index,
        title: text!(
            "{sender}'s bytes in flight flat at {flight} B for {} rounds while the receiver offered {at_least}{rwnd} B: throughput bound {rate:.2} MB/s",
            capped.len()
        ),
        cost,
        evidence,
        confidence: conf(level, text!("{} loss-free rounds within ±1 MSS of {flight} B, below the advertised window", capped.len())),
        fix,
        references: vec!["docs/design.md §4 (round limits)", "RFC 7323 §2 (window scale)", "Linux tcp_sndbuf_expand(), net.ipv4.tcp_wmem"],
        span,
    }]
}
