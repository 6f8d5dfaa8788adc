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

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::Analysis;
use crate::base::text::text;
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
    let mut evidence = vec![ev(
        q.settings.frame,
        text!(
            "the server's SETTINGS: SETTINGS_MAX_CONCURRENT_STREAMS = {}",
            q.limit
        ),
    )];
    for r in q.released.iter().take(3) {
        evidence.push(ev(
            r.freed_by.frame,
            "a stream closes: a slot frees".to_string(),
        ));
        evidence.push(ev(
            r.headers.frame,
            text!(
                "stream {} opens {:.1} ms later: until that close the {} stream{} the server allows were open",
                r.stream,
                (r.headers.ts - r.freed_by.ts).as_millis_f64(),
                q.limit,
                if q.limit == 1 { "" } else { "s" }
            ),
        ));
    }
    evidence.sort_by_key(|e| e.frame);
    evidence.dedup_by_key(|e| e.frame);
    let refused = if q.refused > 0 {
        text!(
            "; {} stream{} sent before the client knew the limit were refused (REFUSED_STREAM) and sent again",
            q.refused,
            if q.refused == 1 { "" } else { "s" }
        )
    } else {
        String::new()
    };
    let (level, why) = if n > 2 {
        (
            Level::High,
            "stream after stream opened the moment another closed, the server's limit reached each time",
        )
    } else {
        (
            Level::Medium,
            "two streams opened the moment another closed at the server's limit; the client may only then have wanted them",
        )
    };
    vec![Finding {
        facts: Default::default(),
        id: ID,
        connection: a.conn.index,
        title: text!(
            "HTTP/2: {n} requests went out one by one as earlier streams closed: the server allows {} at once{refused}",
            q.limit
        ),
        cost,
        evidence,
        confidence: conf(level, why),
        fix: text!(
            "Raise the server's concurrent stream limit to what its clients send at once (it is {}): nginx \
             `http2_max_concurrent_streams` (default 128), Go `http2.Server.MaxConcurrentStreams` / gRPC-Go \
             `grpc.MaxConcurrentStreams`, Envoy `max_concurrent_streams`, h2o `http2-max-concurrent-requests-per-connection`; \
             or let the client open more connections when one is full (Go `http.Transport` does unless \
             `StrictMaxConcurrentRequests`; gRPC: several channels).",
            q.limit
        ),
        references: vec!["RFC 9113 §5.1.2", "RFC 9113 §6.5.2"],
        span: q.spans.clone(),
    }]
}
