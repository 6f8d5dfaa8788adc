//! `quic-version-negotiation`: the server did not speak the version of the
//! client's first Initial and answered with Version Negotiation (RFC 9000
//! §6, §17.2.1); the client starts again with another version: one more
//! round trip.

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::quic::QuicAnalysis;
use crate::base::fact::{args, fact};
use crate::base::side::Side;
use crate::quic::packet::PacketType;

/// Finding id.
pub(crate) const ID: &str = "quic-version-negotiation";

/// See the module docs.
pub(crate) fn detect(a: &QuicAnalysis) -> Vec<Finding> {
    let Some(vn) = a.version_negotiations().first() else {
        return vec![];
    };
    let first = a.handshake.client_initial;
    let again = a
        .recs()
        .iter()
        .find(|r| r.side == Side::Client && r.ty == PacketType::Initial && r.at.ts > vn.at.ts);
    let mut evidence = Vec::new();
    if let Some(f) = first {
        evidence.push(ev(
            f.frame,
            fact!("quic-version-negotiation.client-initial"),
        ));
    }
    evidence.push(ev(
        vn.at.frame,
        fact!(
            "quic-version-negotiation.offers",
            versions = Value::List(
                vn.versions
                    .iter()
                    .map(|&v| Value::Count(u64::from(v)))
                    .collect()
            ),
            version_count = Value::Count(vn.versions.len() as u64),
        ),
    ));
    let (d, level, why) = match (first, again) {
        (Some(f), Some(g)) => {
            evidence.push(ev(
                g.at.frame,
                fact!("quic-version-negotiation.initial-again"),
            ));
            (
                g.at.ts - f.ts,
                Level::High,
                fact!("quic-version-negotiation.both-in-capture"),
            )
        }
        _ => match a.rtt_min() {
            Some(rtt) => (
                rtt,
                Level::Medium,
                fact!("quic-version-negotiation.one-rtt-counted"),
            ),
            None => (
                vn.at.ts - a.first().ts,
                Level::Low,
                fact!("quic-version-negotiation.time-to-vn-counted"),
            ),
        },
    };
    let mut facts = args!(
        lost_ms = d,
        server_versions = Value::List(
            vn.versions
                .iter()
                .map(|&v| Value::Count(u64::from(v)))
                .collect()
        ),
    );
    if let Some(v) = a.first_version() {
        facts.set("first_version", Value::Count(u64::from(v)));
    }
    vec![Finding {
        facts,
        id: ID,
        connection: a.index(),
        cost: a.cost(d),
        evidence,
        confidence: conf(level, why),
        references: vec!["RFC 9000 §6", "RFC 9000 §17.2.1", "RFC 9368"],
        span: vec![],
    }]
}
