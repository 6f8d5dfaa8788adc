//! `client-side-stall`: the slowest connections were slow because of the
//! client itself: its own delay (SYN-ACK in → ClientHello out, its key
//! exchange, handshake done → request out) is most of what the tail waited
//! beyond the typical connection. A load generator or client pool short of
//! CPU, not the server or the path.

use super::sample::PhaseId;
use super::tail::Part;
use super::{PopCost, PopFinding, View};
use crate::detect::finding::{conf, Level};

pub(crate) const ID: &str = "client-side-stall";

/// The client's share of the tail's extra time that makes it the cause.
const MIN_SHARE: f64 = 0.5;

pub(crate) fn detect(v: &View<'_>) -> Option<PopFinding> {
    let tail = v.tail?;
    let main = tail.main_part()?;
    if main.part != Part::ClientDelay || main.share < MIN_SHARE {
        return None;
    }
    let rtt = v.rtt.quantile(0.5).unwrap_or(0.0);
    if main.extra_ms < (0.25 * rtt).max(2.0) {
        return None;
    }
    let d = v.phase(PhaseId::ClientDelay);
    let (p50, p99) = (d.quantile(0.5)?, d.quantile(0.99)?);
    let title = format!(
        "The client's own delay makes the tail: the slowest {} connections waited {:.1} ms \
         for their first byte against {:.1} ms typical, {:.1} ms of it ({:.0} %) in the client \
         (client delay p50 {p50:.1} ms, p99 {p99:.1} ms)",
        tail.connections,
        tail.tail_ms,
        tail.typical_ms,
        main.extra_ms,
        100.0 * main.share
    );
    let mut evidence = v.signs.client_delay.evidence();
    if evidence.is_empty() {
        return None;
    }
    evidence.truncate(5);
    Some(PopFinding {
        id: ID,
        title,
        cost: PopCost::of(main.extra_ms * tail.connections as f64, tail.connections),
        evidence,
        confidence: conf(
            if main.share >= 0.75 {
                Level::High
            } else {
                Level::Medium
            },
            format!(
                "{:.0} % of the tail's extra time was the client's, between packets it \
                 received and its answers",
                100.0 * main.share
            ),
        ),
        fix: "Look at the client, not the server: give the load generator or client pool CPU \
              of its own (fewer connections per thread, more threads or hosts), check its \
              event loop and garbage-collector pauses, and for a load generator its start lag \
              (`rttlens bench` reports it); a connection pool that opens connections on demand \
              under load pays the handshake in the request path."
            .to_string(),
        intervals: Vec::new(),
        references: vec!["Gil Tene, \"How NOT to measure latency\" (2015): coordinated omission"],
    })
}
