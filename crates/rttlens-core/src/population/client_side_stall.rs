//! `client-side-stall`: the slowest connections were slow because of the
//! client itself: its own delay (SYN-ACK in → ClientHello out, its key
//! exchange, handshake done → request out) is most of what the tail waited
//! beyond the typical connection. A load generator or client pool short of
//! CPU, not the server or the path.

use super::sample::PhaseId;
use super::tail::Part;
use super::{PopCost, PopFinding, View};
use crate::base::fact::{args, fact, Value};
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
    let facts = args!(
        connections = Value::Count(tail.connections),
        tail_ms = Value::Ms(tail.tail_ms),
        typical_ms = Value::Ms(tail.typical_ms),
        extra_ms = Value::Ms(main.extra_ms),
        share = Value::Number(main.share),
        client_delay_p50_ms = Value::Ms(p50),
        client_delay_p99_ms = Value::Ms(p99),
    );
    let mut evidence = v.signs.client_delay.evidence();
    if evidence.is_empty() {
        return None;
    }
    evidence.truncate(5);
    Some(PopFinding {
        id: ID,
        facts,
        cost: PopCost::of(main.extra_ms * tail.connections as f64, tail.connections),
        evidence,
        confidence: conf(
            if main.share >= 0.75 {
                Level::High
            } else {
                Level::Medium
            },
            fact!("population.client-share", share = Value::Number(main.share)),
        ),
        intervals: Vec::new(),
        references: vec!["Gil Tene, \"How NOT to measure latency\" (2015): coordinated omission"],
    })
}
