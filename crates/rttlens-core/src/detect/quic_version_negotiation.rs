//! `quic-version-negotiation`: the server did not speak the version of the
//! client's first Initial and answered with Version Negotiation (RFC 9000
//! §6, §17.2.1); the client starts again with another version: one more
//! round trip.

use super::finding::{conf, ev, Finding, Level};
use super::util::{quic_cost as cost, quic_ms as ms};
use crate::analysis::quic::QuicAnalysis;
use crate::base::side::Side;
use crate::base::text::{self, text};
use crate::quic::packet::PacketType;

/// Finding id.
pub(crate) const ID: &str = "quic-version-negotiation";

/// See the module docs.
pub(crate) fn detect(a: &QuicAnalysis) -> Vec<Finding> {
    let c = &a.conn;
    let Some(vn) = c.version_negotiation.first() else {
        return vec![];
    };
    let first = a.handshake.client_initial;
    let again = c
        .recs
        .iter()
        .find(|r| r.side == Side::Client && r.ty == PacketType::Initial && r.at.ts > vn.at.ts);
    let versions: Vec<String> = vn.versions.iter().map(|v| text!("{v:#010x}")).collect();
    let mut evidence = Vec::new();
    if let Some(f) = first {
        evidence.push(ev(f.frame, "the client's Initial"));
    }
    evidence.push(ev(
        vn.at.frame,
        text!(
            "Version Negotiation: the server offers {}",
            versions.join(", ")
        ),
    ));
    let (d, level, why) = match (first, again) {
        (Some(f), Some(g)) => {
            evidence.push(ev(
                g.at.frame,
                "the client's Initial again, in the version chosen",
            ));
            (
                g.at.ts - f.ts,
                Level::High,
                "Version Negotiation and the new Initial are in the capture".to_string(),
            )
        }
        _ => match a.rtt_min() {
            Some(rtt) => (
                rtt,
                Level::Medium,
                "the new Initial is not in the capture: one RTT counted".to_string(),
            ),
            None => (
                vn.at.ts - c.first.ts,
                Level::Low,
                "no RTT and no new Initial: the time to the Version Negotiation counted"
                    .to_string(),
            ),
        },
    };
    vec![Finding {
        facts: Default::default(),
        id: ID,
        connection: c.index,
        title: text!("Version Negotiation: the client's first version was refused, {} lost before the handshake began", ms(d)),
        cost: cost(a, d),
        evidence,
        confidence: conf(level, why),
        fix: text::owned("Have the client start with a version the server speaks (QUIC v1 everywhere, RFC 9000) or let it learn it from the server's Alt-Svc/HTTPS record (RFC 9460 `alpn`); on the server, enable the version clients try first (quic-go `Config.Versions`, nginx serves v1 only)."),
        references: vec!["RFC 9000 §6", "RFC 9000 §17.2.1", "RFC 9368"],
        span: vec![],
    }]
}
