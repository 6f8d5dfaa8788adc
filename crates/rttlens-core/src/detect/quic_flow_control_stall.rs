//! `quic-flow-control-stall`: a sender stopped at the limit its peer set
//! (RFC 9000 §4.1: MAX_DATA for the connection, MAX_STREAM_DATA for a
//! stream) and said so with DATA_BLOCKED or STREAM_DATA_BLOCKED (§19.12,
//! §19.13); it waited until the peer raised the limit.
//!
//! Needs decrypted 1-RTT packets (a key log). Stacks that never send the
//! BLOCKED frames are not caught here.

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::quic::QuicAnalysis;
use crate::base::fact::{args, fact};
use crate::base::time::{union_len, Timestamp};

/// Finding id.
pub(crate) const ID: &str = "quic-flow-control-stall";

/// Most stalls named in the evidence.
const EVIDENCE_CAP: usize = 4;

/// See the module docs.
pub(crate) fn detect(a: &QuicAnalysis) -> Vec<Finding> {
    let mut spans: Vec<(Timestamp, Timestamp)> = Vec::new();
    let mut evidence = Vec::new();
    let mut limit_named = None;
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
        cost: a.cost(d),
        evidence,
        confidence: conf(
            Level::High,
            fact!("quic-flow-control-stall.blocked-then-raised"),
        ),
        references: vec!["RFC 9000 §4.1", "RFC 9000 §19.12", "RFC 9000 §19.13"],
        span: vec![],
    }]
}
