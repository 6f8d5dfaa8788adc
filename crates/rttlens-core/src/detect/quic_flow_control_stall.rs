//! `quic-flow-control-stall`: a sender stopped at the limit its peer set
//! (RFC 9000 §4.1: MAX_DATA for the connection, MAX_STREAM_DATA for a
//! stream) and waited until the peer raised it.
//!
//! Needs decrypted 1-RTT packets (a key log). Two ways to see it:
//!
//! - **said**: the sender sent DATA_BLOCKED or STREAM_DATA_BLOCKED (§19.12,
//!   §19.13) and the peer's raise came later. High confidence.
//! - **inferred**, for stacks that never send the BLOCKED frames (§4.1
//!   makes them a SHOULD; aioquic sends neither): the sender's STREAM data
//!   ended exactly at the limit the capture knows of (the transport
//!   parameters' `initial_max_*`, raised by MAX_*), the peer raised it, and
//!   only then did the sender send past it (`quic::conn::credit`). Medium
//!   confidence: the capture point sees the limits half an RTT from the
//!   receiver, and a sender whose data happened to end at the limit while
//!   its application had nothing more would look the same (it sent more
//!   only after the raise, so the wait is at most the raise's). A
//!   connection with BLOCKED frames is read by them alone.
//!
//! Cost: the time blocked (each stall to the raise that answered it, their
//! union), less the round trips slow start would have needed for the
//! bytes sent from the first limit to the last, starting from the first
//! limit's flight (RFC 5681 §3.1, RFC 9002 §7.3.1): a wider window wins
//! back only what the congestion window would not have taken anyway.

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::quic::QuicAnalysis;
use crate::analysis::rounds::slow_start_rounds;
use crate::base::fact::{args, fact};
use crate::base::side::{FrameRef, Side};
use crate::base::time::{union_len, Duration, Timestamp};
use crate::quic::conn::FlowEvent;

/// Finding id.
pub(crate) const ID: &str = "quic-flow-control-stall";

/// Most stalls named in the evidence.
const EVIDENCE_CAP: usize = 4;

/// One stall: a sender at a limit, and the raise that freed it.
struct Stall<'a> {
    /// `DATA_BLOCKED` or `STREAM_DATA_BLOCKED` (the frame sent, or the one
    /// that would have been).
    kind: &'static str,
    sender: Side,
    stream: Option<u64>,
    limit: u64,
    at: FrameRef,
    raised: Option<&'a FlowEvent>,
}

/// The receiver's first raise past `limit` at or after `from`.
fn raise_after<'a>(
    a: &'a QuicAnalysis,
    kind: &str,
    sender: Side,
    stream: Option<u64>,
    limit: u64,
    from: Timestamp,
) -> Option<&'a FlowEvent> {
    let raise = if kind == "DATA_BLOCKED" {
        "MAX_DATA"
    } else {
        "MAX_STREAM_DATA"
    };
    a.flow_control().iter().find(|e| {
        e.side != sender
            && e.kind == raise
            && e.stream == stream
            && e.value > limit
            && e.at.ts >= from
    })
}

/// The stalls the BLOCKED frames said.
fn said(a: &QuicAnalysis) -> Vec<Stall<'_>> {
    a.flow_control()
        .iter()
        .filter(|e| e.kind.ends_with("BLOCKED"))
        .map(|b| Stall {
            kind: b.kind,
            sender: b.side,
            stream: b.stream,
            limit: b.value,
            at: b.at,
            raised: raise_after(a, b.kind, b.side, b.stream, b.value, b.at.ts),
        })
        .collect()
}

/// The stalls the credit shows: data at the limit, the raise, then data
/// past it (and nothing past it before the raise).
fn inferred(a: &QuicAnalysis) -> Vec<Stall<'_>> {
    a.at_limit()
        .iter()
        .filter_map(|m| {
            let resumed = m.resumed?;
            let kind = if m.stream.is_some() {
                "STREAM_DATA_BLOCKED"
            } else {
                "DATA_BLOCKED"
            };
            let raised = raise_after(a, kind, m.sender, m.stream, m.limit, m.at.ts)?;
            (raised.at.ts <= resumed.ts).then_some(Stall {
                kind,
                sender: m.sender,
                stream: m.stream,
                limit: m.limit,
                at: m.at,
                raised: Some(raised),
            })
        })
        .collect()
}

/// See the module docs.
pub(crate) fn detect(a: &QuicAnalysis) -> Vec<Finding> {
    let mut stalls = said(a);
    let told = !stalls.is_empty();
    if !told {
        stalls = inferred(a);
    }
    let mut spans: Vec<(Timestamp, Timestamp)> = Vec::new();
    let mut evidence = Vec::new();
    let mut limit_named = None;
    let mut first_limit: Option<(&'static str, Side, Option<u64>, u64)> = None;
    let mut last_limit = 0u64;
    for b in &stalls {
        let until = b.raised.map_or(a.last().ts, |r| r.at.ts);
        if until <= b.at.ts {
            continue;
        }
        spans.push((b.at.ts, until));
        limit_named.get_or_insert((b.kind, b.limit, b.sender));
        // the limits one sender met on one stream (or the connection)
        if first_limit.is_none_or(|(k, sd, st, _)| (k, sd, st) == (b.kind, b.sender, b.stream)) {
            let low = first_limit.map_or(b.limit, |f| f.3.min(b.limit));
            first_limit = Some((b.kind, b.sender, b.stream, low));
            last_limit = last_limit.max(b.limit);
        }
        if evidence.len() < EVIDENCE_CAP * 2 {
            let mut stop = if told {
                fact!(
                    "quic-flow-control-stall.blocked",
                    frame_type = b.kind,
                    sender = b.sender,
                    limit_bytes = Value::Bytes(b.limit),
                )
            } else {
                fact!(
                    "quic-flow-control-stall.at-limit",
                    sender = b.sender,
                    limit_bytes = Value::Bytes(b.limit),
                )
            };
            if let Some(s) = b.stream {
                stop = stop.with("stream", Value::Count(s));
            }
            evidence.push(ev(b.at.frame, stop));
            if let Some(r) = b.raised {
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
    // `frame_type` is the BLOCKED frame the sender sent; an inferred stall
    // names the limit it met instead (no such frame was on the wire)
    let mut facts = if told {
        args!(frame_type = kind)
    } else {
        let limit = if kind == "DATA_BLOCKED" {
            "MAX_DATA"
        } else {
            "MAX_STREAM_DATA"
        };
        args!(limit_frame_type = limit)
    }
    .with("sender", side)
    .with("receiver", receiver)
    .with("limit_bytes", Value::Bytes(value))
    .with("blocked_ms", d);
    if let Some(v) = initial {
        facts.set("initial_limit_bytes", Value::Bytes(v));
    }
    let confidence = if told {
        conf(
            Level::High,
            fact!("quic-flow-control-stall.blocked-then-raised"),
        )
    } else {
        facts.set("blocked_frames", Value::Flag(false));
        conf(
            Level::Medium,
            fact!("quic-flow-control-stall.inferred-from-limits"),
        )
    };
    vec![Finding {
        facts,
        id: ID,
        connection: a.index(),
        cost: a.cost((d - ideal).max(Duration::ZERO)),
        evidence,
        confidence,
        references: vec!["RFC 9000 §4.1", "RFC 9000 §19.12", "RFC 9000 §19.13"],
        span: vec![],
    }]
}
