//! `quic-amplification-limit`: before the client's address is validated a
//! server may send at most three times the bytes it received (RFC 9000
//! §8.1). A first flight larger than that (a long certificate chain, an RSA
//! key) stops at the limit and waits for the client's next datagram: one
//! more round trip before the client has the server's Finished.
//!
//! Read from datagram sizes and times alone, so it works without keys: the
//! server's bytes up to the longest pause in its Initial and Handshake
//! packets are near three times the client's bytes before them (or past
//! it by the last datagram only, as a stack that checks the limit before
//! each packet sends), the client
//! sent a datagram in the pause, and Handshake packets follow it. With a
//! key log the certificate chain's size is named too.

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::quic::QuicAnalysis;
use crate::base::fact::{args, fact};
use crate::base::side::Side;
use crate::base::time::Duration;
use crate::quic::conn::PacketRec;
use crate::quic::packet::PacketType;

/// Finding id.
pub(crate) const ID: &str = "quic-amplification-limit";

/// The limit's factor (RFC 9000 §8.1).
const FACTOR: u64 = 3;
/// Share of the limit the server's bytes before the pause must reach.
const NEAR_LIMIT: f64 = 0.8;

fn long(r: &PacketRec) -> bool {
    matches!(r.ty, PacketType::Initial | PacketType::Handshake)
}

/// See the module docs.
pub(crate) fn detect(a: &QuicAnalysis) -> Vec<Finding> {
    // a Retry's token validates the address; a missing client Initial
    // leaves the budget unknown
    if !a.retries().is_empty() || !a.roles_known() || a.handshake.client_initial.is_none() {
        return vec![];
    }
    let server: Vec<&PacketRec> = a
        .recs()
        .iter()
        .filter(|r| r.side == Side::Server && long(r) && r.datagram > 0)
        .collect();
    let Some(s0) = server.first() else {
        return vec![];
    };
    let budget = FACTOR
        * a.recs()
            .iter()
            .filter(|r| r.side == Side::Client && r.at.ts < s0.at.ts)
            .map(|r| u64::from(r.datagram))
            .sum::<u64>();
    // the longest pause between the server's handshake datagrams, before
    // the handshake ends
    let end = a.handshake.client_done.map(|f| f.ts);
    let Some((i, gap)) = server
        .windows(2)
        .enumerate()
        .filter(|(_, w)| end.is_none_or(|e| w[1].at.ts <= e))
        .map(|(i, w)| (i, w[1].at.ts - w[0].at.ts))
        .max_by_key(|(_, g)| *g)
    else {
        return vec![];
    };
    let before = &server[..=i];
    let after = server[i + 1];
    let sent: u64 = before.iter().map(|r| u64::from(r.datagram)).sum();
    let last = before[before.len() - 1];
    let unlock = a.recs().iter().find(|r| {
        r.side == Side::Client && r.datagram > 0 && r.at.ts > s0.at.ts && r.at.ts < after.at.ts
    });
    let pause_big = match a.rtt_min() {
        Some(rtt) => gap >= rtt / 2,
        None => gap >= Duration::from_millis(5),
    };
    // at most the limit (5 % for what the client's count leaves out), or
    // one datagram past it: quic-go checks the limit before each packet
    // (`isAmplificationLimited`: bytes sent ≥ 3× received), so its last
    // datagram leaves while it is still under and may end past it
    let under_before_last = sent.saturating_sub(u64::from(last.datagram)) < budget;
    let near = budget > 0
        && sent as f64 >= NEAR_LIMIT * budget as f64
        && (sent <= budget + budget / 20 || under_before_last);
    let resumes_handshake = after.ty == PacketType::Handshake && !after.crypto_again;
    if !(pause_big && near && resumes_handshake) || unlock.is_none() {
        return vec![];
    }
    let unlock = unlock.expect("checked");
    let mut stops = fact!(
        "quic-amplification-limit.server-stops",
        sent_bytes = Value::Bytes(sent),
        budget_bytes = Value::Bytes(budget),
    );
    if let Some(n) = a.handshake.certificate_bytes {
        stops = stops.with("certificate_bytes", Value::Bytes(u64::from(n)));
    }
    let mut evidence = vec![
        ev(
            a.handshake.client_initial.expect("checked").frame,
            fact!(
                "quic-amplification-limit.client-flight",
                client_bytes = Value::Bytes(budget / FACTOR),
                budget_bytes = Value::Bytes(budget),
            ),
        ),
        ev(last.at.frame, stops),
        ev(
            unlock.at.frame,
            fact!("quic-amplification-limit.client-datagram"),
        ),
        ev(
            after.at.frame,
            fact!("quic-amplification-limit.resumes", gap_ms = gap),
        ),
    ];
    evidence.sort_by_key(|e| e.frame);
    let (level, why) = if a.handshake.certificate_bytes.is_some() {
        (
            Level::High,
            fact!("quic-amplification-limit.decrypted-pause"),
        )
    } else {
        (
            Level::Medium,
            fact!("quic-amplification-limit.sizes-and-times"),
        )
    };
    let mut facts = args!(
        client_bytes = Value::Bytes(budget / FACTOR),
        budget_bytes = Value::Bytes(budget),
        sent_bytes = Value::Bytes(sent),
        gap_ms = gap,
    );
    if let Some(n) = a.handshake.certificate_bytes {
        facts.set("certificate_bytes", Value::Bytes(u64::from(n)));
    }
    vec![Finding {
        facts,
        id: ID,
        connection: a.index(),
        cost: a.cost(gap),
        evidence,
        confidence: conf(level, why),
        references: vec!["RFC 9000 §8.1", "RFC 9001 §4.1.3", "RFC 8879"],
        span: vec![],
    }]
}
