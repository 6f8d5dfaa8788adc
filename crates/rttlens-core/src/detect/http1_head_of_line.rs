//! `http1-head-of-line`: pipelined HTTP/1.1 requests whose responses waited
//! behind an earlier response still going out. HTTP/1.1 answers a
//! connection's requests in the order they came (RFC 9112 §9.3.2), so a slow
//! or large response holds every pipelined request behind it, however ready
//! its own answer was.
//!
//! Cost: per waiting request, from its last byte to the end of the response
//! ahead of it (or its own first byte, if that came earlier), their union.
//! Each row of the requests table shows its wait (`behind`).

use super::finding::{conf, ev_by_frame, Finding, Level, Value};
use crate::analysis::requests::RequestRow;
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
use crate::base::time::{union_len, Duration};

/// Finding id.
pub(crate) const ID: &str = "http1-head-of-line";

/// A row that waited behind an earlier response: its wait and when.
fn waited(w: &RequestRow) -> Option<(Duration, &RequestRow)> {
    if w.stream.is_some() {
        return None;
    }
    let (q, p, r) = (w.request_last_at?, w.behind_of?, w.response_at?);
    let end = p.ts.min(r.ts);
    (end > q.ts).then(|| (end - q.ts, w))
}

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let mut rows: Vec<(Duration, &RequestRow)> = a
        .requests
        .iter()
        .filter_map(waited)
        .filter(|(d, _)| a.cost(*d).is_material())
        .collect();
    if rows.is_empty() {
        return vec![];
    }
    let span: Vec<_> = rows
        .iter()
        .filter_map(|(d, w)| w.request_last_at.map(|q| (q.ts, q.ts + *d)))
        .collect();
    let cost = a.cost(union_len(&span));
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    let (longest, worst) = rows[0];
    let mut lines = Vec::new();
    for (d, w) in rows.iter().take(3) {
        if let Some(q) = w.request_last_at {
            lines.push((
                q.frame,
                fact!("http1-head-of-line.pipelined", request = w.label()),
            ));
        }
        if let Some(p) = w.behind_of {
            lines.push((
                p.frame,
                fact!(
                    "http1-head-of-line.earlier-response-ends",
                    wait_ms = *d,
                    request = w.label(),
                ),
            ));
        }
        if let Some(r) = w.response_at {
            lines.push((
                r.frame,
                fact!("http1-head-of-line.response-starts", request = w.label()),
            ));
        }
    }
    let evidence = ev_by_frame(lines);
    let n = rows.len();
    vec![Finding {
        facts: args!(
            responses = Value::Count(n as u64),
            longest_request = worst.label(),
            longest_ms = longest,
        ),
        id: ID,
        connection: a.index(),
        cost,
        evidence,
        confidence: conf(Level::High, fact!("http1-head-of-line.in-order")),
        references: vec!["RFC 9112 §9.3.2", "RFC 9113 §5"],
        span,
    }]
}
