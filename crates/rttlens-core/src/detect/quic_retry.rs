//! `quic-retry`: the server answered the client's Initial with a Retry
//! (RFC 9000 §8.1.2, §17.2.5) to validate the client's address before doing
//! any work; the client sends its Initial again with the token: one more
//! round trip.

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::quic::QuicAnalysis;
use crate::base::fact::{args, fact};
use crate::base::side::Side;
use crate::quic::packet::PacketType;

/// Finding id.
pub(crate) const ID: &str = "quic-retry";

/// See the module docs.
pub(crate) fn detect(a: &QuicAnalysis) -> Vec<Finding> {
    let Some(retry) = a.retries().first() else {
        return vec![];
    };
    let first = a.handshake.client_initial;
    let again = a
        .recs()
        .iter()
        .find(|r| r.side == Side::Client && r.ty == PacketType::Initial && r.at.ts > retry.at.ts);
    let mut evidence = Vec::new();
    if let Some(f) = first {
        evidence.push(ev(f.frame, fact!("quic-retry.client-initial")));
    }
    evidence.push(ev(
        retry.at.frame,
        fact!(
            "quic-retry.retry",
            token_bytes = Value::Bytes(retry.token_len as u64)
        ),
    ));
    if a.retries().len() > 1 {
        evidence.push(ev(
            a.retries()[1].at.frame,
            fact!(
                "quic-retry.retries",
                retries = Value::Count(a.retries().len() as u64)
            ),
        ));
    }
    let (d, level, why) = match (first, again) {
        (Some(f), Some(g)) => {
            evidence.push(ev(g.at.frame, fact!("quic-retry.initial-again")));
            (
                g.at.ts - f.ts,
                Level::High,
                fact!("quic-retry.both-in-capture"),
            )
        }
        _ => match a.rtt_min() {
            Some(rtt) => (rtt, Level::Medium, fact!("quic-retry.one-rtt-counted")),
            None => (
                retry.at.ts - a.first().ts,
                Level::Low,
                fact!("quic-retry.time-to-retry-counted"),
            ),
        },
    };
    vec![Finding {
        facts: args!(
            token_bytes = Value::Bytes(retry.token_len as u64),
            retries = Value::Count(a.retries().len() as u64),
            lost_ms = d,
        ),
        id: ID,
        connection: a.index(),
        cost: a.cost(d),
        evidence,
        confidence: conf(level, why),
        references: vec!["RFC 9000 §8.1.2", "RFC 9000 §17.2.5"],
        span: vec![],
    }]
}
