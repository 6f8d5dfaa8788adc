//! `quic-retry`: the server answered the client's Initial with a Retry
//! (RFC 9000 §8.1.2, §17.2.5) to validate the client's address before doing
//! any work; the client sends its Initial again with the token: one more
//! round trip.

use super::finding::{conf, ev, Finding, Level};
use super::util::{quic_cost as cost, quic_ms as ms};
use crate::analysis::quic::QuicAnalysis;
use crate::base::side::Side;
use crate::base::text::{self, text};
use crate::quic::packet::PacketType;

/// Finding id.
pub(crate) const ID: &str = "quic-retry";

/// See the module docs.
pub(crate) fn detect(a: &QuicAnalysis) -> Vec<Finding> {
    let c = &a.conn;
    let Some(retry) = c.retry.first() else {
        return vec![];
    };
    let first = a.handshake.client_initial;
    let again = c
        .recs
        .iter()
        .find(|r| r.side == Side::Client && r.ty == PacketType::Initial && r.at.ts > retry.at.ts);
    let mut evidence = Vec::new();
    if let Some(f) = first {
        evidence.push(ev(f.frame, "the client's Initial"));
    }
    evidence.push(ev(
        retry.at.frame,
        text!(
            "Retry with a {}-byte token: the server asks the client to prove its address",
            retry.token_len
        ),
    ));
    if c.retry.len() > 1 {
        evidence.push(ev(
            c.retry[1].at.frame,
            text!("{} Retry packets in all", c.retry.len()),
        ));
    }
    let (d, level, why) = match (first, again) {
        (Some(f), Some(g)) => {
            evidence.push(ev(g.at.frame, "the client's Initial again, with the token"));
            (
                g.at.ts - f.ts,
                Level::High,
                "the Retry and the Initial with its token are in the capture".to_string(),
            )
        }
        _ => match a.rtt_min() {
            Some(rtt) => (
                rtt,
                Level::Medium,
                "the Initial with the token is not in the capture: one RTT counted".to_string(),
            ),
            None => (
                retry.at.ts - c.first.ts,
                Level::Low,
                "no RTT and no second Initial: the time to the Retry counted".to_string(),
            ),
        },
    };
    vec![Finding {
        facts: Default::default(),
        id: ID,
        connection: c.index,
        title: text!("Retry: the server validated the client's address first, {} before the handshake began", ms(d)),
        cost: cost(a, d),
        evidence,
        confidence: conf(level, why),
        fix: text::owned("Send Retry only under load or attack (an address-validation token is worth its round trip when spoofed Initials flood the server): nginx leaves `quic_retry off` (the default); quic-go `Transport.VerifySourceAddress` returning true only above a handshake rate; quinn `Incoming::retry()` only when `Incoming::remote_address_validated()` is false and the server is busy. Clients can skip it next time with the NEW_TOKEN the server sends (RFC 9000 §8.1.3)."),
        references: vec!["RFC 9000 §8.1.2", "RFC 9000 §17.2.5"],
        span: vec![],
    }]
}
