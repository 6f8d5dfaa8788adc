//! `large-tls-record`: the response's first TLS record is larger than what
//! arrives in one round, so nothing can be decrypted until a later round
//! completes it (the first decrypted byte waits for the whole record).
//!
//! Cost: time from the record's first byte to its completion, as the client
//! sees it (both are packets it receives). Source: docs/design.md §4 "Large
//! records"; nginx `ssl_buffer_size` (default 16k); the "dynamic record
//! sizing" technique (small records for the first ~1 MB, then 16 KB).

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};

/// Finding id.
pub(crate) const ID: &str = "large-tls-record";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let Some(fr) = a.app.first_record else {
        return vec![];
    };
    let wait = fr.complete.ts - fr.first.ts;
    let cost = a.cost(wait);
    let span = [(fr.first.ts, fr.complete.ts)];
    if !super::kept(a, ID, cost, &span) {
        return vec![];
    }
    let mss = a.tcp.mss[1].max(1);
    let segments = fr.len.div_ceil(mss);
    let mut evidence = vec![
        ev(
            fr.first.frame,
            fact!(
                "large-tls-record.first-byte",
                record_bytes = Value::Bytes(fr.len),
                segments = Value::Segments(segments),
            ),
        ),
        ev(
            fr.complete.frame,
            fact!("large-tls-record.complete", wait_ms = wait),
        ),
    ];
    if let Some(t) = &a.transfer {
        let split = t
            .rounds
            .iter()
            .find(|r| r.first.frame > fr.first.frame && r.first.frame <= fr.complete.frame);
        if let Some(r) = split {
            evidence.insert(
                1,
                ev(
                    r.first.frame,
                    fact!(
                        "large-tls-record.round-starts",
                        round = Value::Count(u64::from(r.index))
                    ),
                ),
            );
        }
    }
    // the cost as the title gives it, before run_all bounds it
    let mut facts = args!(
        record_bytes = Value::Bytes(fr.len),
        cost_ms = Value::Ms(cost.ms)
    );
    if let Some(r) = cost.rtts {
        facts.set("cost_rtts", Value::Number(r));
    }
    vec![Finding {
        facts,
        id: ID,
        connection: a.index(),
        cost,
        evidence,
        confidence: conf(Level::High, fact!("large-tls-record.record-headers")),
        references: vec!["RFC 8446 §5.1 (record size)", "nginx ssl_buffer_size"],
        span: span.to_vec(),
    }]
}
