//! `sender-window-cap`: the sender's bytes in flight stay flat below the
//! receiver's window for several loss-free rounds — its send buffer, a window
//! clamp, or a middlebox holds it, not the network and not the receiver.
//!
//! Source: docs/design.md §4 "Round limits" (`sndbuf`: flat ±1 MSS below rwnd
//! for ≥ 3 loss-free rounds); Linux `tcp_sndbuf_expand()` / `net.ipv4.tcp_wmem`.

use super::finding::{conf, ev, Finding, Level, Value};
use super::window::{
    capped_cost, capped_rounds_evidence, h2_flow_control_held, median, per_rtt_mb_s, window_limited,
};
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
use crate::flow::rounds::Limit;

/// Finding id.
pub(crate) const ID: &str = "sender-window-cap";

/// A receive window that grew to this many times its first value over the
/// transfer is taken as autotuned: no bound on the slow start the cost is
/// measured against.
const AUTOTUNED_GROWTH: u64 = 2;

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
    // a receive window that at least doubled over the transfer is
    // autotuned (Linux tcp_rcv_space_adjust()): it would have kept growing
    // with a larger flight, so it bounds no slow start a wider send buffer
    // allows (issue 43: the lab's `sndbuf-cap`, its window grown from 63 KB
    // to 296 KB, won back 1162 ms where slow start held at 296 KB predicted
    // 942 ms); a window that stayed where it was bounds it
    let first_rwnd = t.rounds.iter().map(|r| r.rwnd).find(|&w| w > 0);
    let top_rwnd = t.rounds.iter().map(|r| r.rwnd).max().unwrap_or(0);
    let autotuned = first_rwnd.is_some_and(|w| top_rwnd >= AUTOTUNED_GROWTH * w);
    let cap = if autotuned {
        u64::MAX
    } else {
        rwnd.max(flight)
    };
    let (cost, span) = capped_cost(a, t.sender, &t.rounds, capped[0].index, flight, cap);
    // without the SYNs the windows are lower bounds (inferred scale): the
    // true window is at least this, so "below the window" still holds
    let inferred = a.tcp.window_scale_inferred[t.sender.peer().index()];
    let wscale_known = a.wscale_known(t.sender);
    let rate = per_rtt_mb_s(a, flight);
    let mut evidence = capped_rounds_evidence(&capped, |r| {
        fact!(
            "sender-window-cap.round-flat",
            round = Value::Count(u64::from(r.index)),
            flight_bytes = Value::Bytes(r.max_flight),
            wscale_known = wscale_known,
            rwnd_bytes = Value::Bytes(r.rwnd),
        )
    });
    let near_64k = flight.abs_diff(65535) <= t.mss;
    let level = if capped.len() >= 6 && rwnd as f64 >= 1.5 * flight as f64 {
        Level::High
    } else {
        Level::Medium
    };
    if let Some(w) = inferred {
        evidence.push(ev(
            w.at.frame,
            fact!(
                "sender-window-cap.wscale-inferred",
                flight_bytes = Value::Bytes(w.flight),
                window_field = Value::Count(w.raw),
                shift = Value::Count(u64::from(w.shift)),
            ),
        ));
    }
    let rounds = Value::Count(capped.len() as u64);
    vec![Finding {
        facts: args!(
            sender = t.sender,
            flight_bytes = Value::Bytes(flight),
            rounds = rounds.clone(),
            wscale_known = wscale_known,
            rwnd_bytes = Value::Bytes(rwnd),
            rate_mb_s = Value::Number(rate),
            near_64k = near_64k,
        ),
        id: ID,
        connection: a.index(),
        cost,
        evidence,
        confidence: conf(
            level,
            fact!(
                "sender-window-cap.flat-below-window",
                rounds = rounds,
                flight_bytes = Value::Bytes(flight),
            ),
        ),
        references: vec![
            "docs/design.md §4 (round limits)",
            "RFC 7323 §2 (window scale)",
            "Linux tcp_sndbuf_expand(), net.ipv4.tcp_wmem",
        ],
        span,
    }]
}
