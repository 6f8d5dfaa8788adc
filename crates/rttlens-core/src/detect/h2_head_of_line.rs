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

use super::finding::{conf, ev_by_frame, Finding, Level};
use crate::analysis::Analysis;
use crate::base::text::text;
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
        let behind = if w.behind == 0 {
            "another stream's".to_string()
        } else {
            text!("stream {}'s", w.behind)
        };
        lines.push((
            w.delivered.frame,
            text!("fills the hole in {behind} bytes (lost before the capture point): only now can TCP deliver what follows"),
        ));
        lines.push((
            w.arrived.frame,
            text!(
                "stream {}'s frame captured here, {:.1} ms before TCP could deliver it",
                w.stream,
                (w.delivered.ts - w.arrived.ts).as_millis_f64()
            ),
        ));
    }
    let evidence = ev_by_frame(lines);
    let n = streams.len();
    let list: Vec<String> = streams.iter().take(8).map(u32::to_string).collect();
    vec![Finding {
        facts: Default::default(),
        id: ID,
        connection: a.conn.index,
        title: text!(
            "HTTP/2 head-of-line blocking: {n} stream{} ({}{}) waited for a TCP retransmission of another stream's bytes",
            if n == 1 { "" } else { "s" },
            list.join(", "),
            if n > 8 { ", …" } else { "" }
        ),
        cost,
        evidence,
        confidence: conf(
            Level::High,
            "the waiting frames were captured before the lost bytes ahead of them were resent, and TCP delivers in order",
        ),
        fix: "One lost TCP segment stalls every HTTP/2 stream behind it. Cut the loss at its source (see the \
              loss findings), or let streams that must not wait for each other travel independently: HTTP/3 \
              (QUIC streams are delivered independently, RFC 9000 §2.2; nginx `listen 443 quic;`), or separate \
              connections for bulk transfers and latency-sensitive requests."
            .to_string(),
        references: vec!["RFC 9113 §5", "RFC 9000 §2.2"],
        span,
    }]
}
