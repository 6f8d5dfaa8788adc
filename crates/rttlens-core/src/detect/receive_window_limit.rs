//! `receive-window-limit`: the sender filled the receiver's advertised window
//! (flight ≥ rwnd − 2 MSS, see [`crate::analysis::rounds::RWND_SLACK_MSS`]) for several rounds — the receiver's buffer, not
//! the network, set the pace.
//!
//! Source: docs/design.md §4 "Round limits" (the `rwnd` limit); RFC 7323 §2
//! (without window scale the window cannot exceed 65535 B); Linux
//! `tcp_rcv_space_adjust()` (receive buffer autotuning), `net.ipv4.tcp_rmem`.

use super::finding::{conf, ev, Finding, Level, Value};
use super::window::{capped_cost, median, window_limited};
use crate::analysis::rounds::UNSCALED_MAX_WINDOW;
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
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
        t.sender,
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
        let fact = match syn.options.window_scale {
            Some(s) => fact!(
                "receive-window-limit.syn-wscale",
                receiver = receiver,
                shift = Value::Count(u64::from(s))
            ),
            None => fact!("receive-window-limit.syn-no-wscale", receiver = receiver),
        };
        evidence.push(ev(syn.first.frame, fact));
    }
    for r in limited.iter().take(4) {
        evidence.push(ev(
            r.max_flight_frame,
            fact!(
                "receive-window-limit.round-at-window",
                round = Value::Count(u64::from(r.index)),
                flight_bytes = Value::Bytes(r.max_flight),
                receiver = receiver,
                rwnd_bytes = Value::Bytes(r.rwnd),
            ),
        ));
    }
    let mut confidence = conf(
        Level::High,
        fact!(
            "receive-window-limit.flight-at-window",
            rounds = Value::Count(limited.len() as u64)
        ),
    );
    // without the SYNs the scale is a lower bound: the rounds were kept as
    // `rwnd` only on the evidence `rounds::classify` names, said here
    let wscale_known = a.wscale_known(t.sender);
    if !wscale_known {
        confidence.level = Level::Medium;
        let inferred = a.tcp.window_scale_inferred[receiver.index()];
        if let Some(w) = inferred {
            evidence.push(ev(
                w.at.frame,
                fact!(
                    "receive-window-limit.wscale-inferred",
                    flight_bytes = Value::Bytes(w.flight),
                    window_field = Value::Count(w.raw),
                    shift = Value::Count(u64::from(w.shift)),
                ),
            ));
        }
        confidence.why.push(fact!(
            "receive-window-limit.no-syn",
            wscale_inferred = inferred.is_some(),
            unscaled_max = rwnd == UNSCALED_MAX_WINDOW,
        ));
    }
    vec![Finding {
        facts: args!(
            sender = t.sender,
            receiver = receiver,
            rwnd_bytes = Value::Bytes(rwnd),
            rounds = Value::Count(limited.len() as u64),
            syn_without_wscale = no_wscale,
            wscale_known = wscale_known,
            unscaled_max = rwnd == UNSCALED_MAX_WINDOW,
        ),
        id: ID,
        connection: a.index(),
        cost,
        evidence,
        confidence,
        references: vec![
            "docs/design.md §4 (round limits)",
            "RFC 7323 §2.2",
            "Linux tcp_rcv_space_adjust(), net.ipv4.tcp_rmem",
        ],
        span,
    }]
}
