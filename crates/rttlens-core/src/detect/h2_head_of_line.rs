//! `h2-head-of-line`: HTTP/2 streams whose bytes were already captured but
//! could not be delivered, because a TCP segment ahead of them, of another
//! stream, was lost. HTTP/2 multiplexes every stream over one TCP byte
//! stream (RFC 9113 §5), and TCP delivers in order: one lost segment stalls
//! every stream behind it for the time its retransmission takes.
//!
//! Seen where the loss happened before the capture point (a capture at or
//! near the receiver): the later segments are captured before the hole is
//! filled ([`crate::proto::h2::HolWait`]). Where the original was captured
//! and lost later (a sender-side capture), the receiver's wait is not in
//! the capture and nothing is claimed; the loss itself is still reported.
//!
//! Cost: per waiting stream, from the capture of its bytes to the frame
//! that filled the hole ahead of them, their union over the connection.

use super::finding::{conf, ev_by_frame, Finding, Level, Value};
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
use crate::base::time::union_len;

/// Finding id.
pub(crate) const ID: &str = "h2-head-of-line";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let waits = &a.h2_head_of_line;
    if waits.is_empty() {
        return vec![];
    }
    let span: Vec<_> = waits
        .iter()
        .map(|w| (w.arrived.ts, w.delivered.ts))
        .collect();
    let cost = a.cost(union_len(&span));
    let mut streams: Vec<u32> = waits.iter().map(|w| w.stream).collect();
    streams.sort_unstable();
    streams.dedup();
    let mut longest: Vec<_> = waits.iter().collect();
    longest.sort_by_key(|w| std::cmp::Reverse(w.delivered.ts - w.arrived.ts));
    let mut lines = Vec::new();
    for w in longest.iter().take(3) {
        // stream 0: the stream of the bytes that filled the hole is not known
        lines.push((
            w.delivered.frame,
            fact!(
                "h2-head-of-line.hole-filled",
                behind_stream = Value::Count(u64::from(w.behind))
            ),
        ));
        lines.push((
            w.arrived.frame,
            fact!(
                "h2-head-of-line.frame-waited",
                stream = Value::Count(u64::from(w.stream)),
                wait_ms = w.delivered.ts - w.arrived.ts,
            ),
        ));
    }
    let evidence = ev_by_frame(lines);
    let facts = args!(
        streams = Value::Count(streams.len() as u64),
        stream_ids = Value::List(
            streams
                .iter()
                .map(|&id| Value::Count(u64::from(id)))
                .collect()
        ),
    );
    vec![Finding {
        facts,
        id: ID,
        connection: a.index(),
        cost,
        evidence,
        confidence: conf(Level::High, fact!("h2-head-of-line.in-order-delivery")),
        references: vec!["RFC 9113 §5", "RFC 9000 §2.2"],
        span,
    }]
}
