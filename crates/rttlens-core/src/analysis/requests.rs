//! Every HTTP/1.x request and every HTTP/2 stream of a connection,
//! cleartext or decrypted from TLS, as a row: when it was sent, when its response began and ended, in ms
//! and in round trips, the server's think time against the path, and the
//! wait behind earlier responses when requests were pipelined.
//!
//! Times are the capture point's. A request's wait (`ttfb`) runs from its
//! last byte to its response's first (inside TLS: the segments completing
//! the records that held them, when the application could read them).
//! The server held it for that wait less the server's half of the path
//! (`h_s`, docs/design.md §4 "Vantage and RTT"), and less the time it could not
//! answer because an earlier response on the connection was still going out
//! (HTTP/1.1 answers in order, RFC 9112 §9.3.2).

use crate::base::cost::round3;
use crate::base::side::FrameRef;
use crate::base::side::Side;
use crate::base::time::{Duration, Timestamp};
use crate::proto::h2::{FlowKind, H2Summary};
use crate::proto::http::HttpTracker;

/// One request/response pair of a connection.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RequestRow {
    /// Position on the connection (0 = first request).
    pub index: u64,
    /// HTTP/2 stream identifier (absent for HTTP/1.x).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<u32>,
    /// Request method (`GET`, …), when the request was seen.
    pub method: Option<String>,
    /// Request target (path), lossy UTF-8, at most 200 characters.
    pub target: Option<String>,
    /// Response status code, when the response was seen.
    pub status: Option<u16>,
    /// `grpc-status` of a gRPC call (HTTP/2 with `application/grpc`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grpc_status: Option<u32>,
    /// Frame of the request's first byte.
    pub request_frame: Option<u64>,
    /// Frame of the request's last byte.
    pub request_end_frame: Option<u64>,
    /// Frame of the response's first byte (HTTP/2: its HEADERS frame).
    pub response_frame: Option<u64>,
    /// HTTP/2: the frame of the response's first DATA frame.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_data_frame: Option<u64>,
    /// Frame of the response's last byte.
    pub response_end_frame: Option<u64>,
    /// The request's first byte, ms after the connection's first packet.
    pub sent_ms: Option<f64>,
    /// Request's last byte → response's first byte (ms).
    pub ttfb_ms: Option<f64>,
    /// The same in round trips of the path's minimum RTT.
    pub ttfb_rtts: Option<f64>,
    /// Of the wait, the time the response was held behind earlier responses
    /// still going out (HTTP/1.1 pipelining), or (HTTP/2) behind the
    /// server's DATA of other streams (ms).
    pub behind_ms: f64,
    /// The server's think time: the wait less `behind_ms` and less the
    /// server's half of the path (ms); `None` when the RTT is unknown.
    pub server_think_ms: Option<f64>,
    /// Response's first → last byte (ms).
    pub transfer_ms: Option<f64>,
    /// Response body bytes (decoded length for chunked bodies).
    pub response_bytes: Option<u64>,
    /// The request's last byte.
    #[serde(skip)]
    pub(crate) request_last_at: Option<FrameRef>,
    /// When the server could start answering: the request's last byte, or
    /// the end of the response it was queued behind (pipelining), whichever
    /// came later.
    #[serde(skip)]
    pub(crate) ready_at: Option<FrameRef>,
    /// The response's first byte (HTTP/2: its HEADERS frame).
    #[serde(skip)]
    pub(crate) response_at: Option<FrameRef>,
    /// The end of the earlier response this one waited behind.
    #[serde(skip)]
    pub(crate) behind_of: Option<FrameRef>,
}

impl RequestRow {
    /// `GET /path` (HTTP/2: `stream 5 GET /path`), for titles; the target
    /// cut at 60 characters.
    pub(crate) fn label(&self) -> String {
        let mut out = match self.stream {
            Some(id) => format!("stream {id}"),
            None => format!("request {}", self.index + 1),
        };
        if let Some(m) = &self.method {
            out.push_str(&format!(" ({m}"));
            if let Some(t) = &self.target {
                let cut: String = t.chars().take(60).collect();
                out.push(' ');
                out.push_str(&cut);
                if cut.len() < t.len() {
                    out.push('…');
                }
            }
            out.push(')');
        }
        out
    }
}

/// Rows of HTTP/1.x requests longer than this many are cut; the count
/// stays in the timeline.
pub const ROWS_CAP: usize = crate::proto::http::EXCHANGE_DETAIL_CAP;

/// The path as the rows need it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Path {
    /// The connection's first packet.
    pub(crate) start: Timestamp,
    /// The minimum RTT (zero when unknown).
    pub(crate) rtt: Duration,
    /// Capture point → server → capture point (zero when unknown).
    pub(crate) h_s: Duration,
}

fn ms(d: Duration) -> f64 {
    round3(d.as_millis_f64())
}

fn between(a: FrameRef, b: FrameRef) -> Duration {
    (b.ts - a.ts).max(Duration::ZERO)
}

/// The rows of `h`'s exchanges.
pub(crate) fn rows(h: &HttpTracker, path: Path) -> Vec<RequestRow> {
    let mut out: Vec<RequestRow> = Vec::new();
    // the last byte of the previous response (HTTP/1.1 answers in order)
    let mut prev_end: Option<FrameRef> = None;
    for ex in h.exchanges().iter().take(ROWS_CAP) {
        let req = ex.request.as_ref();
        let resp = ex.response.as_ref();
        let req_last = req.map(|q| q.last.unwrap_or(q.head_complete));
        let wait = match (req_last, resp) {
            (Some(q), Some(r)) if r.first.ts >= q.ts => Some(between(q, r.first)),
            _ => None,
        };
        // sent before the previous response had ended: it could not be
        // answered before that end
        let behind_of = match (req_last, prev_end, resp) {
            (Some(q), Some(p), Some(r)) if p.ts > q.ts && r.first.ts >= q.ts => Some(p),
            _ => None,
        };
        let behind = match (req_last, behind_of, resp) {
            (Some(q), Some(p), Some(r)) => p.ts.min(r.first.ts) - q.ts,
            _ => Duration::ZERO,
        };
        let known = path.rtt > Duration::ZERO;
        let think = wait.filter(|_| known).map(|w| {
            let h_s = if path.h_s > Duration::ZERO {
                path.h_s
            } else {
                path.rtt
            };
            (w - behind - h_s).max(Duration::ZERO)
        });
        out.push(RequestRow {
            index: ex.index,
            stream: None,
            method: req.map(|q| q.method.clone()),
            target: req.map(|q| q.target.clone()),
            status: resp.map(|r| r.status),
            grpc_status: None,
            request_frame: req.map(|q| q.first.frame),
            request_end_frame: req_last.map(|q| q.frame),
            response_frame: resp.map(|r| r.first.frame),
            first_data_frame: None,
            response_end_frame: resp.and_then(|r| r.last).map(|l| l.frame),
            sent_ms: req.map(|q| ms((q.first.ts - path.start).max(Duration::ZERO))),
            ttfb_ms: wait.map(ms),
            ttfb_rtts: wait.and_then(|w| w.in_rtts(path.rtt)).map(round3),
            behind_ms: ms(behind),
            server_think_ms: think.map(ms),
            transfer_ms: resp.and_then(|r| r.last.map(|l| ms(between(r.first, l)))),
            response_bytes: resp.map(|r| r.body_len),
            request_last_at: req_last,
            ready_at: match (req_last, behind_of) {
                (Some(_), Some(p)) => Some(p),
                (q, _) => q,
            },
            response_at: resp.map(|r| r.first),
            behind_of,
        });
        if let Some(l) = resp.and_then(|r| r.last) {
            prev_end = Some(l);
        }
    }
    out
}

/// The server's last DATA frame of another stream than `id` between the
/// request's end `q` and the response's HEADERS `r` (from the flow events,
/// in capture order; `None` past their cap).
fn busy_until(h: &H2Summary, id: u32, q: FrameRef, r: FrameRef) -> Option<FrameRef> {
    let upto = h.flow.partition_point(|e| e.at.frame < r.frame);
    h.flow[..upto]
        .iter()
        .rev()
        .take_while(|e| e.at.frame > q.frame)
        .find(|e| {
            e.sender == Side::Server
                && matches!(e.kind, FlowKind::Data { stream, .. } if stream != id)
        })
        .map(|e| e.at)
}

/// The rows of an HTTP/2 connection's streams: the request's HEADERS to its
/// END_STREAM, then the response's HEADERS, first DATA and END_STREAM. The
/// wait runs from the request's END_STREAM (its last byte) to the response's
/// HEADERS; of it, the time the server was still sending other streams'
/// DATA is `behind` (the connection was busy), not think time.
pub(crate) fn rows_h2(h: &H2Summary, path: Path) -> Vec<RequestRow> {
    h.streams
        .iter()
        .filter(|s| s.id % 2 == 1)
        .take(ROWS_CAP)
        .enumerate()
        .map(|(i, s)| {
            let req_last = s.request_end.or(s.request_headers);
            let wait = match (req_last, s.response_headers) {
                (Some(q), Some(r)) if r.ts >= q.ts => Some(between(q, r)),
                _ => None,
            };
            // the server was still sending other streams' DATA: until
            // then the connection was busy, not the server thinking
            let busy = match (req_last, s.response_headers) {
                (Some(q), Some(r)) if wait.is_some() => busy_until(h, s.id, q, r),
                _ => None,
            };
            let behind = match (req_last, busy) {
                (Some(q), Some(b)) => b.ts - q.ts,
                _ => Duration::ZERO,
            };
            let h_s = if path.h_s > Duration::ZERO {
                path.h_s
            } else {
                path.rtt
            };
            RequestRow {
                index: i as u64,
                stream: Some(s.id),
                method: s.method.clone(),
                target: s.path.clone(),
                status: s.status,
                grpc_status: s.grpc_status,
                request_frame: s.request_headers.map(|f| f.frame),
                request_end_frame: req_last.map(|f| f.frame),
                response_frame: s.response_headers.map(|f| f.frame),
                first_data_frame: s.response_first_data.map(|f| f.frame),
                response_end_frame: s.response_end.map(|f| f.frame),
                sent_ms: s
                    .request_headers
                    .map(|q| ms((q.ts - path.start).max(Duration::ZERO))),
                ttfb_ms: wait.map(ms),
                ttfb_rtts: wait.and_then(|w| w.in_rtts(path.rtt)).map(round3),
                behind_ms: ms(behind),
                server_think_ms: wait
                    .filter(|_| path.rtt > Duration::ZERO)
                    .map(|w| ms((w - behind - h_s).max(Duration::ZERO))),
                transfer_ms: match (s.response_headers, s.response_end) {
                    (Some(a), Some(b)) => Some(ms(between(a, b))),
                    _ => None,
                },
                response_bytes: s.response_headers.map(|_| s.data_bytes[1]),
                request_last_at: req_last,
                ready_at: busy.or(req_last),
                response_at: s.response_headers,
                behind_of: busy,
            }
        })
        .collect()
}
