//! `zero-rtt`: TLS 1.3 early data (RFC 8446 §2.3, §4.2.10). Accepted, the
//! request rode with the ClientHello and saved a round trip (informational,
//! cost 0); rejected, the client had to send it again after the handshake
//! (cost 1 RTT). Acceptance is read from the client's EndOfEarlyData, which
//! it sends only when the server accepted (RFC 8446 §4.5).

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::Analysis;
use crate::base::cost::Cost;
use crate::base::fact::{args, fact};

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
    let mut evidence = vec![ev(t.client_hello.frame, fact!("zero-rtt.offered"))];
    if let Some(f) = e.first {
        evidence.push(ev(
            f.frame,
            fact!(
                "zero-rtt.early-data",
                early_data_bytes = Value::Bytes(e.bytes),
                records = Value::Count(u64::from(e.records)),
            ),
        ));
    }
    let (outcome, cost, level) = match e.accepted {
        Some(true) => ("accepted", Cost::ZERO, Level::High),
        Some(false) => (
            "rejected",
            if e.bytes > 0 {
                a.cost(a.rtt_min)
            } else {
                Cost::ZERO
            },
            Level::Medium,
        ),
        None => ("unknown", Cost::ZERO, Level::Low),
    };
    if let Some(c) = t.client_finished {
        evidence.push(ev(c.frame, fact!("zero-rtt.client-finished")));
    }
    vec![Finding {
        facts: args!(outcome = outcome, early_data_bytes = Value::Bytes(e.bytes),),
        id: ID,
        connection: a.index(),
        cost,
        evidence,
        confidence: conf(level, fact!("zero-rtt.read-from-record-sizes")),
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
