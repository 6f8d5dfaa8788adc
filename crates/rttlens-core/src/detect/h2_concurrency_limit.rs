//! `h2-concurrency-limit`: requests queued client-side behind the server's
//! `SETTINGS_MAX_CONCURRENT_STREAMS` (RFC 9113 §5.1.2, §6.5.2). A client may
//! not open more streams than the server allows; the rest wait in the
//! client until a stream closes. The capture shows it as streams opened the
//! moment another closed, while as many streams as the server allows were
//! open ([`crate::analysis::h2::queue`]).
//!
//! Cost: from the first stream released in a run of them to the last (the
//! requests sent in a chain of releases were waiting by the first, had
//! they been wanted together; the first itself may only then have been
//! wanted, so its wait is not counted), over every run. The client's wish
//! to send is not in the capture, hence the confidence: medium for two
//! releases, high for more.

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
use crate::base::time::union_len;

/// Finding id.
pub(crate) const ID: &str = "h2-concurrency-limit";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let Some(q) = &a.h2_queue else {
        return vec![];
    };
    let cost = a.cost(union_len(&q.spans));
    let n = q.released.len();
    let limit = Value::Count(u64::from(q.limit));
    let mut evidence = vec![ev(
        q.settings.frame,
        fact!("h2-concurrency-limit.settings", limit = limit.clone()),
    )];
    for r in q.released.iter().take(3) {
        evidence.push(ev(
            r.freed_by.frame,
            fact!("h2-concurrency-limit.stream-closes"),
        ));
        evidence.push(ev(
            r.headers.frame,
            fact!(
                "h2-concurrency-limit.stream-opens",
                stream = Value::Count(u64::from(r.stream)),
                wait_ms = r.headers.ts - r.freed_by.ts,
                limit = limit.clone(),
            ),
        ));
    }
    evidence.sort_by_key(|e| e.frame);
    evidence.dedup_by_key(|e| e.frame);
    let why = if n > 2 {
        conf(Level::High, fact!("h2-concurrency-limit.each-time"))
    } else {
        conf(Level::Medium, fact!("h2-concurrency-limit.two-streams"))
    };
    vec![Finding {
        facts: args!(
            limit = limit,
            requests = Value::Count(n as u64),
            refused = Value::Count(u64::from(q.refused)),
        ),
        id: ID,
        connection: a.index(),
        cost,
        evidence,
        confidence: why,
        references: vec!["RFC 9113 §5.1.2", "RFC 9113 §6.5.2"],
        span: q.spans.clone(),
    }]
}
