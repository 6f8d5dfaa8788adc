//! `quic-flow-control-stall`: a sender stopped at the limit its peer set
//! (RFC 9000 §4.1: MAX_DATA for the connection, MAX_STREAM_DATA for a
//! stream) and said so with DATA_BLOCKED or STREAM_DATA_BLOCKED (§19.12,
//! §19.13); it waited until the peer raised the limit.
//!
//! Needs decrypted 1-RTT packets (a key log). Stacks that never send the
//! BLOCKED frames are not caught here.
//!
//! Cost: the time blocked (each BLOCKED to the raise that answered it,
//! their union), less the round trips slow start would have needed for the
//! bytes sent from the first limit to the last, starting from the first
//! limit's flight (RFC 5681 §3.1, RFC 9002 §7.3.1): a wider window wins
//! back only what the congestion window would not have taken anyway.

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::quic::QuicAnalysis;
use crate::analysis::rounds::slow_start_rounds;
use crate::base::fact::{args, fact};
use crate::base::time::{union_len, Duration, Timestamp};

/// Finding id.
pub(crate) const ID: &str = "quic-flow-control-stall";

/// Most stalls named in the evidence.
const EVIDENCE_CAP: usize = 4;

/// See the module docs.
pub(crate) fn detect(a: &QuicAnalysis) -> Vec<Finding> {
    let mut spans: Vec<(Timestamp, Timestamp)> = Vec::new();
    let mut evidence = Vec::new();
    let mut limit_named = None;
    let mut first_limit: Option<(&'static str, crate::base::side::Side, Option<u64>, u64)> = None;
    let mut last_limit = 0u64;
    for b in a
        .flow_control()
        .iter()
        .filter(|e| e.kind.ends_with("BLOCKED"))
    {
        let raise = if b.kind == "DATA_BLOCKED" {
            "MAX_DATA"
        } else {
            "MAX_STREAM_DATA"
        };
        let raised = a.flow_control().iter().find(|e| {
            e.side != b.side
                && e.kind == raise
                && e.stream == b.stream
                && e.value > b.value
                && e.at.ts >= b.at.ts
        });
        let until = raised.map_or(a.last().ts, |r| r.at.ts);
        if until <= b.at.ts {
            continue;
        }
        spans.push((b.at.ts, until));
        limit_named.get_or_insert((b.kind, b.value, b.side));
        // the limits one sender met on one stream (or the connection)
        if first_limit.is_none_or(|(k, sd, st, _)| (k, sd, st) == (b.kind, b.side, b.stream)) {
            let low = first_limit.map_or(b.value, |f| f.3.min(b.value));
            first_limit = Some((b.kind, b.side, b.stream, low));
            last_limit = last_limit.max(b.value);
        }
        if evidence.len() < EVIDENCE_CAP * 2 {
            let mut blocked = fact!(
                "quic-flow-control-stall.blocked",
                frame_type = b.kind,
                sender = b.side,
                limit_bytes = Value::Bytes(b.value),
            );
            if let Some(s) = b.stream {
                blocked = blocked.with("stream", Value::Count(s));
            }
            evidence.push(ev(b.at.frame, blocked));
            if let Some(r) = raised {
                evidence.push(ev(
                    r.at.frame,
                    fact!(
                        "quic-flow-control-stall.raised",
                        frame_type = r.kind,
                        limit_bytes = Value::Bytes(r.value),
                        receiver = r.side,
                        after_ms = r.at.ts - b.at.ts,
                    ),
                ));
            }
        }
    }
    let Some((kind, value, side)) = limit_named else {
        return vec![];
    };
    let d = union_len(&spans);
    // without the limit the sender's congestion window still paces it:
    // slow start from the first limit's flight would have needed rounds
    // for the bytes sent between the first limit and the last (issue 43:
    // the lab's `quic-flow-control` won back 460-490 ms of 648 ms blocked,
    // the rest being the 256 KB upload's own slow start)
    let ideal = match (first_limit, a.rtt_min()) {
        (Some((_, _, _, low)), Some(rtt)) if last_limit > low && low > 0 => {
            rtt * slow_start_rounds(last_limit - low, low, u64::MAX).saturating_sub(1) as i64
        }
        _ => Duration::ZERO,
    };
    evidence.sort_by_key(|e| e.frame);
    let receiver = side.peer();
    let tp = a.transport_parameters(receiver);
    let initial = tp.and_then(|t| {
        if kind == "DATA_BLOCKED" {
            t.initial_max_data
        } else {
            t.initial_max_stream_data_bidi_local
                .or(t.initial_max_stream_data_bidi_remote)
        }
    });
    let mut facts = args!(
        frame_type = kind,
        sender = side,
        receiver = receiver,
        limit_bytes = Value::Bytes(value),
        blocked_ms = d,
    );
    if let Some(v) = initial {
        facts.set("initial_limit_bytes", Value::Bytes(v));
    }
    vec![Finding {
        facts,
        id: ID,
        connection: a.index(),
        cost: a.cost((d - ideal).max(Duration::ZERO)),
        evidence,
        confidence: conf(
            Level::High,
            fact!("quic-flow-control-stall.blocked-then-raised"),
        ),
        references: vec!["RFC 9000 §4.1", "RFC 9000 §19.12", "RFC 9000 §19.13"],
        span: vec![],
    }]
}
