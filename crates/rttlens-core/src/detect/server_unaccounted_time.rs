//! `server-unaccounted-time`: the wire shows the server holding a request
//! longer than the server's own account of it (its `Server-Timing`, W3C
//! Server Timing) says it took: the difference went before or around the
//! handler, where the handler's timers do not run: the listen socket's
//! accept queue, a worker pool's queue, a proxy's queue, TLS on a busy
//! core (docs/design.md §4 "Server-Timing").
//!
//! Per request or stream whose response carried `Server-Timing` with a
//! `dur`: the wire's think time (the row's `server_think_ms`: the wait less
//! what it was held behind and less `h_s`, and less what Nagle held) must
//! exceed the reported total by at least max(5 ms, 20 % of that total)
//! (`analysis::requests::UNACCOUNTED_MIN_MS`, `UNACCOUNTED_MIN_SHARE`): below that, clocks, rounding and the
//! time a handler spends outside its timers (serialising, writing) explain
//! it. The row with the largest difference is named; its difference is the
//! cost.
//!
//! Confidence is high when the server's TCP acknowledged the request
//! promptly (within max(1 ms, RTT/4) beyond `h_s`): the request had reached
//! the server's kernel, and the time is above it. Without such an ACK (the
//! answer carried it, or it came late) the path may hold part of the
//! difference: medium. QUIC's streams are judged alike, at medium (its
//! ACK frames are sent on the endpoint's own schedule, RFC 9000 §13.2.1).

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::quic::QuicAnalysis;
use crate::analysis::requests::RequestRow;
use crate::analysis::Analysis;
use crate::base::fact::{args, fact, Value};
use crate::base::side::{FrameRef, Side};
use crate::base::time::Duration;

/// Finding id.
pub const ID: &str = "server-unaccounted-time";

/// A row whose wire think time exceeds its reported total by a claimable
/// difference: (the difference, the think time, the reported total).
fn unaccounted(row: &RequestRow, nagle: Duration) -> Option<(f64, f64, f64)> {
    let st = row.server_timing.as_ref()?;
    let total = st.total_ms?;
    let think = row.server_think_ms? - nagle.as_millis_f64();
    st.unaccounted(think)?
        .then_some((think - total, think, total))
}

/// What the finding of one connection is made of.
struct Claim<'a> {
    /// The row with the largest difference.
    row: &'a RequestRow,
    /// Its (difference, think time, reported total), ms.
    figures: (f64, f64, f64),
    /// Rows of the connection.
    rows: usize,
    /// Rows with a claimable difference.
    claimed: usize,
    /// The server's ACK of the request, when it came before the answer:
    /// the frame, its time after the request, and whether it was prompt.
    ack: Option<(FrameRef, Duration, bool)>,
    /// A QUIC connection's stream.
    quic: bool,
    /// The connection's index.
    index: u64,
    /// The cost of the difference.
    cost: crate::base::cost::Cost,
}

/// The finding of a [`Claim`].
fn finding(c: Claim<'_>) -> Option<Finding> {
    let Claim {
        row,
        figures: (gap, think, total),
        rows,
        claimed,
        ack,
        quic,
        index,
        cost,
    } = c;
    let st = row.server_timing.as_ref()?;
    let q = row.request_last_at?;
    let r = row.response_at?;
    let mut facts = args!(
        unaccounted_ms = Value::Ms(gap),
        think_ms = Value::Ms(think),
        reported_ms = Value::Ms(total),
        total_from = st.total_from,
    );
    if rows > 1 {
        facts.set("request", row.label());
    }
    if claimed > 1 {
        facts.set("requests", Value::Count(claimed as u64));
    }
    let mut e = vec![ev(q.frame, fact!("server-unaccounted-time.request-end"))];
    let (level, why) = match ack {
        Some((k, after, true)) => {
            e.push(ev(
                k.frame,
                fact!("server-unaccounted-time.ack-prompt", after_ms = after),
            ));
            (Level::High, "server-unaccounted-time.prompt-ack")
        }
        Some((k, after, false)) => {
            e.push(ev(
                k.frame,
                fact!("server-unaccounted-time.ack-late", after_ms = after),
            ));
            (Level::Medium, "server-unaccounted-time.late-ack")
        }
        None if quic => (Level::Medium, "server-unaccounted-time.quic"),
        None => (Level::Medium, "server-unaccounted-time.no-ack"),
    };
    e.push(ev(
        r.frame,
        fact!(
            "server-unaccounted-time.response",
            after_ms = r.ts - q.ts,
            think_ms = Value::Ms(think)
        ),
    ));
    let mut header = fact!(
        "server-unaccounted-time.header",
        reported_ms = Value::Ms(total),
        total_from = st.total_from,
        trailer = st.trailer,
    );
    if let Some(m) = row
        .server_timing
        .as_ref()
        .and_then(|s| s.dominant())
        .filter(|_| st.metrics.len() > 1)
    {
        header.args.set("metric", m.name.clone());
        header
            .args
            .set("metric_ms", Value::Ms(m.dur_ms.unwrap_or(0.0)));
    }
    e.push(ev(st.frame, header));
    let gap_d = Duration::from_nanos((gap * 1e6) as i64);
    let start = r.ts - Duration::from_nanos((think * 1e6) as i64);
    Some(Finding {
        facts,
        id: ID,
        connection: index,
        cost,
        evidence: e,
        confidence: conf(level, fact!(why)),
        references: vec![
            "https://www.w3.org/TR/server-timing/#the-server-timing-header-field",
            "docs/design.md §4 (Server-Timing)",
        ],
        span: vec![(start, start + gap_d)],
    })
}

/// See the module docs (TCP).
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let h_s = a.h_s();
    let claims: Vec<(&RequestRow, (f64, f64, f64))> = a
        .requests
        .iter()
        .filter_map(|w| {
            let (q, r) = (w.ready_at?, w.response_at?);
            let nagle = a.held_by_nagle(Side::Server, q.ts, r.ts);
            Some((w, unaccounted(w, nagle)?))
        })
        .collect();
    let Some(&(row, worst)) = claims
        .iter()
        .reduce(|x, y| if y.1 .0 > x.1 .0 { y } else { x })
    else {
        return Vec::new();
    };
    let prompt = Duration::from_millis(1).max(a.rtt_min / 4);
    // the server's TCP acknowledged the request before answering (not for
    // a pipelined request: its ACK came long before it was its turn)
    let ack = match (row.request_last_at, row.response_at, row.behind_of) {
        (Some(q), Some(r), None) => a
            .full_acks(Side::Client)
            .iter()
            .find(|m| m.frame > q.frame && m.frame < r.frame)
            .map(|k| {
                let after = k.ts - q.ts;
                (*k, after, after - h_s <= prompt)
            }),
        _ => None,
    };
    let cost = a.cost(Duration::from_nanos((worst.0 * 1e6) as i64));
    finding(Claim {
        row,
        figures: worst,
        rows: a.requests.len(),
        claimed: claims.len(),
        ack,
        quic: false,
        index: a.index(),
        cost,
    })
    .into_iter()
    .collect()
}

/// See the module docs (QUIC: HTTP/3 streams).
pub(crate) fn detect_quic(a: &QuicAnalysis) -> Vec<Finding> {
    let claims: Vec<(&RequestRow, (f64, f64, f64))> = a
        .requests
        .iter()
        .filter_map(|w| Some((w, unaccounted(w, Duration::ZERO)?)))
        .collect();
    let Some(&(row, worst)) = claims
        .iter()
        .reduce(|x, y| if y.1 .0 > x.1 .0 { y } else { x })
    else {
        return Vec::new();
    };
    let cost = a.cost(Duration::from_nanos((worst.0 * 1e6) as i64));
    finding(Claim {
        row,
        figures: worst,
        rows: a.requests.len(),
        claimed: claims.len(),
        ack: None,
        quic: true,
        index: a.index(),
        cost,
    })
    .into_iter()
    .collect()
}
