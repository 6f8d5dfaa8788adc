//! `quic-hello-retry`: the server answered the ClientHello in its Initial
//! with a HelloRetryRequest (RFC 8446 §4.1.4; RFC 9001 §4.7) because no key
//! share the client sent suits it; a second ClientHello follows: one more
//! round trip.

use super::finding::{conf, ev, Args, Finding, Level, Value};
use crate::analysis::quic::QuicAnalysis;
use crate::base::fact::{args, fact, Fact};
use crate::proto::tls::hello::group_name;

/// Finding id.
pub(crate) const ID: &str = "quic-hello-retry";

/// See the module docs.
pub(crate) fn detect(a: &QuicAnalysis) -> Vec<Finding> {
    let h = &a.handshake;
    let Some(hrr) = &h.hello_retry else {
        return vec![];
    };
    // the group asked for, by name; absent when the HelloRetryRequest
    // names none
    let asked = hrr.key_share_group.map(group_name);
    let with_asked = |mut args: Args| {
        if let Some(g) = &asked {
            args.set("asked_group", g.clone());
        }
        args
    };
    // the groups of the key shares the HelloRetryRequest turned down (the
    // first ClientHello's), by name
    let offered: Vec<Value> = match &h.first_key_shares {
        Some(groups) => groups
            .iter()
            .copied()
            .map(group_name)
            .map(Value::from)
            .collect(),
        None => h
            .client_hello
            .iter()
            .flat_map(|ch| ch.key_share_groups.iter().copied().map(group_name))
            .map(Value::from)
            .collect(),
    };
    let mut evidence = Vec::new();
    let first = h.first_client_hello.or(h.client_initial);
    if let Some(f) = first {
        evidence.push(ev(
            f.frame,
            fact!(
                "quic-hello-retry.client-hello",
                offered_groups = Value::List(offered)
            ),
        ));
    }
    evidence.push(ev(
        hrr.first.frame,
        Fact {
            kind: "quic-hello-retry.hello-retry-request",
            args: with_asked(Args::new()),
        },
    ));
    let second = h
        .client_hello
        .as_ref()
        .map(|ch| ch.first)
        .filter(|s| Some(*s) != first);
    let (d, level, why) = match (first, second) {
        (Some(f), Some(s)) => {
            evidence.push(ev(s.frame, fact!("quic-hello-retry.second-client-hello")));
            (
                s.ts - f.ts,
                Level::High,
                fact!("quic-hello-retry.second-hello-follows"),
            )
        }
        _ => match a.rtt_min() {
            Some(rtt) => (rtt, Level::High, fact!("quic-hello-retry.one-rtt-counted")),
            None => (
                hrr.first.ts - a.first().ts,
                Level::Medium,
                fact!("quic-hello-retry.time-to-hrr-counted"),
            ),
        },
    };
    vec![Finding {
        facts: with_asked(args!(lost_ms = d)),
        id: ID,
        connection: a.index(),
        cost: a.cost(d),
        evidence,
        confidence: conf(level, why),
        references: vec!["RFC 8446 §4.1.4", "RFC 9001 §4.7"],
        span: vec![],
    }]
}
