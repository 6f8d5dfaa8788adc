//! `zero-rtt`: TLS 1.3 early data (RFC 8446 §2.3, §4.2.10). Accepted, the
//! request rode with the ClientHello and saved a round trip (informational,
//! cost 0); rejected, the client had to send it again after the handshake
//! (cost 1 RTT). Acceptance is read from the client's EndOfEarlyData, which
//! it sends only when the server accepted (RFC 8446 §4.5).

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::Analysis;
use crate::base::cost::Cost;
use crate::base::text::text;

/// Finding id.
pub(crate) const ID: &str = "zero-rtt";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let Some(t) = &a.tls else { return vec![] };
    let Some(e) = &t.early_data else {
        return vec![];
    };
    if !e.offered {
        return vec![];
    }
    let mut evidence = vec![ev(t.client_hello.frame, "ClientHello offers early data")];
    if let Some(f) = e.first {
        evidence.push(ev(
            f.frame,
            text!("{} B of early data in {} record(s)", e.bytes, e.records),
        ));
    }
    let (title, cost, level, fix) = match e.accepted {
        Some(true) => (
            text!("0-RTT: {} B of early data accepted; the request rode with the ClientHello (1 RTT saved)", e.bytes),
            Cost::ZERO,
            Level::High,
            "Nothing to fix (make sure the request is idempotent: early data can be replayed, RFC 8446 §8).",
        ),
        Some(false) => (
            text!("0-RTT rejected: the {} B of early data had to be sent again after the handshake", e.bytes),
            if e.bytes > 0 { a.cost(a.rtt_min) } else { Cost::ZERO },
            Level::Medium,
            "The server declined early data: enable it (nginx `ssl_early_data on;`, rustls `max_early_data_size`), keep ticket keys shared, and keep the client's ticket fresh (a HelloRetryRequest also rejects 0-RTT).",
        ),
        None => (
            "0-RTT offered; whether the server accepted it could not be told".to_string(),
            Cost::ZERO,
            Level::Low,
            "Capture the whole handshake (both directions) to tell.",
        ),
    };
    if let Some(c) = t.client_finished {
        evidence.push(ev(c.frame, "client Finished"));
    }
    vec![Finding {
        facts: Default::default(),
        id: ID,
        connection: a.conn.index,
        title,
        cost,
        evidence,
        confidence: conf(
            level,
            "early data and its acceptance read from record sizes (RFC 8446 §4.5)",
        ),
        fix: fix.to_string(),
        references: vec!["RFC 8446 §2.3", "RFC 8446 §4.2.10", "RFC 8446 §4.5"],
        span: if cost.ms > 0.0 {
            vec![(
                t.client_hello.ts,
                t.done.map_or(t.client_hello.ts + a.rtt_min * 2, |d| d.ts),
            )]
        } else {
            Vec::new()
        },
    }]
}
