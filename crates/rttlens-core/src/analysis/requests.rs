//! Every HTTP/1.x request and every HTTP/2 or HTTP/3 stream of a
//! connection, cleartext or decrypted, as a row, built by one function
//! (`rows`) over one view of an exchange whatever its framing: when it was
//! sent, when its response began and ended, in ms and in round trips, the
//! server's think time against the path, and the wait behind other answers.
//!
//! Times are the capture point's. A request's wait (`ttfb`) runs from its
//! last byte to its response's first (inside TLS: the segments completing
//! the records that held them, when the application could read them; HTTP/2
//! and HTTP/3: the request's END_STREAM or FIN, else its HEADERS, to the
//! response's HEADERS). The server held it from that last byte until it
//! answered (inside TLS: the segment that carried the first byte of the
//! response's record, `RecordStarts` in `proto/tls/decrypt/starts.rs`: a
//! record that takes a second round of the congestion window completes an
//! RTT after the server sent it),
//! less the server's half of the path (`h_s`, docs/design.md §4 "Vantage
//! and RTT"), and less
//! the time it could not answer because the connection was busy with other
//! answers: HTTP/1.1 answers in order (RFC 9112 §9.3.2), so a pipelined
//! request waits for the response ahead of it; HTTP/2's streams share one
//! TCP stream, so a response waits while the server's DATA of other
//! streams still goes out. HTTP/3's streams are delivered apart (RFC 9000
//! §2.2): nothing is counted behind.

use crate::base::cost::round3;
use crate::base::side::FrameRef;
use crate::base::side::Side;
use crate::base::time::{Duration, Timestamp};
use crate::proto::h2::{FlowKind, H2Summary};
use crate::proto::http::server_timing::{Metric, ServerTiming};
use crate::proto::http::stream::HttpStream;
use crate::proto::http::{HttpExchange, HttpTracker};
use crate::proto::tls::decrypt::starts::RecordStarts;

/// One request/response pair of a connection.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RequestRow {
    /// Position on the connection (0 = first request).
    pub index: u64,
    /// HTTP/2 or HTTP/3 stream identifier (absent for HTTP/1.x).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<u64>,
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
    /// The server's own account of its time (the response's
    /// `Server-Timing`), beside the wire's think time; absent when the
    /// response had none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_timing: Option<ServerTimingRow>,
    /// The request's last byte.
    #[serde(skip)]
    pub(crate) request_last_at: Option<FrameRef>,
    /// When the server could start answering: the request's last byte, or
    /// the end of the response it was queued behind (pipelining), whichever
    /// came later.
    #[serde(skip)]
    pub(crate) ready_at: Option<FrameRef>,
    /// When the server answered: the response's first byte (HTTP/2: its
    /// HEADERS frame); inside TLS the segment that carried the first byte
    /// of its record.
    #[serde(skip)]
    pub(crate) response_at: Option<FrameRef>,
    /// The end of the earlier response this one waited behind.
    #[serde(skip)]
    pub(crate) behind_of: Option<FrameRef>,
}

/// A response's `Server-Timing` beside the wire's think time
/// ([`crate::proto::http::server_timing`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ServerTimingRow {
    /// The server's reported total (ms): its `total` metric's `dur`, else
    /// the sum of every `dur`; `None` when no metric gave a `dur`.
    pub total_ms: Option<f64>,
    /// Where the total comes from: `total` (a metric of that name) or
    /// `sum`.
    pub total_from: &'static str,
    /// The wire's server think time ([`RequestRow::server_think_ms`]).
    pub think_ms: Option<f64>,
    /// The think time less the reported total (ms; negative when the
    /// server reported more than the wire shows), when both are known.
    pub unaccounted_ms: Option<f64>,
    /// The metrics, in the order sent (the first 16).
    pub metrics: Vec<Metric>,
    /// Metrics past the first 16.
    #[serde(skip_serializing_if = "is_zero")]
    pub dropped: u32,
    /// The frame that delivered the (first) `Server-Timing` field.
    pub frame: u64,
    /// A field came in the trailers.
    pub trailer: bool,
    /// That frame, timed.
    #[serde(skip)]
    pub(crate) at: FrameRef,
}

/// The smallest think time beyond the reported total that is the server's
/// (ms): below it, clocks, rounding and the handler's time outside its own
/// timers (serialising, writing) explain the difference.
pub const UNACCOUNTED_MIN_MS: f64 = 5.0;
/// The same as a share of the reported total.
pub const UNACCOUNTED_MIN_SHARE: f64 = 0.2;

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl ServerTimingRow {
    fn of(st: &ServerTiming, think_ms: Option<f64>) -> ServerTimingRow {
        let total_ms = st.total_ms().map(round3);
        ServerTimingRow {
            total_ms,
            total_from: if st.has_total_metric() {
                "total"
            } else {
                "sum"
            },
            think_ms,
            unaccounted_ms: think_ms.zip(total_ms).map(|(w, t)| round3(w - t)),
            metrics: st
                .metrics
                .iter()
                .map(|m| Metric {
                    dur_ms: m.dur_ms.map(round3),
                    ..m.clone()
                })
                .collect(),
            dropped: st.dropped,
            frame: st.at.frame,
            trailer: st.trailer,
            at: st.at,
        }
    }

    /// Whether a think time of `think_ms` exceeds the reported total by
    /// at least max([`UNACCOUNTED_MIN_MS`], [`UNACCOUNTED_MIN_SHARE`] of
    /// the total): the difference is the server's, outside its timers
    /// (`server-unaccounted-time`). `None` without a total.
    pub fn unaccounted(&self, think_ms: f64) -> Option<bool> {
        let total = self.total_ms?;
        Some(think_ms - total >= UNACCOUNTED_MIN_MS.max(UNACCOUNTED_MIN_SHARE * total))
    }

    /// The metric with the longest `dur` (a `total` left out).
    pub fn dominant(&self) -> Option<&Metric> {
        self.metrics
            .iter()
            .filter(|m| !m.name.eq_ignore_ascii_case("total"))
            .filter(|m| m.dur_ms.is_some())
            .reduce(|a, b| if b.dur_ms > a.dur_ms { b } else { a })
    }
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

/// What a connection's rows are made of.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Exchanges<'a> {
    /// HTTP/1.x: request/response pairs on one TCP stream, answered in
    /// order.
    Http1(&'a HttpTracker),
    /// HTTP/2: the client's streams (odd identifiers), in the order they
    /// opened, on one TCP stream.
    H2(&'a H2Summary),
    /// HTTP/3: the request streams, by stream ID, one row each.
    H3(&'a [HttpStream]),
}

/// One exchange as the rows read it, whatever its framing.
#[derive(Debug, Clone, Copy)]
struct Exchange<'a> {
    /// Position on the connection.
    index: u64,
    /// Stream identifier (HTTP/2, HTTP/3).
    stream: Option<u64>,
    method: Option<&'a str>,
    target: Option<&'a str>,
    status: Option<u16>,
    grpc_status: Option<u32>,
    /// The request's first byte (HTTP/2, HTTP/3: its HEADERS).
    request_first: Option<FrameRef>,
    /// Its last byte (HTTP/2, HTTP/3: END_STREAM or FIN, else its HEADERS).
    request_last: Option<FrameRef>,
    /// The response's first byte (HTTP/2, HTTP/3: its HEADERS).
    response_first: Option<FrameRef>,
    /// When the server sent it (inside TLS: its record's first segment).
    response_sent: Option<FrameRef>,
    /// The response's first DATA (HTTP/2, HTTP/3).
    first_data: Option<FrameRef>,
    /// The response's last byte.
    response_last: Option<FrameRef>,
    /// Response body bytes, once the response began.
    response_bytes: Option<u64>,
    /// The response's `Server-Timing`.
    server_timing: Option<&'a ServerTiming>,
}

impl<'a> Exchange<'a> {
    /// An HTTP/1.x request and its response.
    fn http1(ex: &'a HttpExchange) -> Exchange<'a> {
        let req = ex.request.as_ref();
        let resp = ex.response.as_ref();
        Exchange {
            index: ex.index,
            stream: None,
            method: req.map(|q| q.method.as_str()),
            target: req.map(|q| q.target.as_str()),
            status: resp.map(|r| r.status),
            grpc_status: None,
            request_first: req.map(|q| q.first),
            request_last: req.map(|q| q.last.unwrap_or(q.head_complete)),
            response_first: resp.map(|r| r.first),
            response_sent: resp.map(|r| r.first),
            first_data: None,
            response_last: resp.and_then(|r| r.last),
            response_bytes: resp.map(|r| r.body_len),
            server_timing: resp.and_then(|r| r.server_timing.as_ref()),
        }
    }

    /// The `index`th request stream of HTTP/2 or HTTP/3.
    fn stream(index: usize, s: &'a HttpStream) -> Exchange<'a> {
        Exchange {
            index: index as u64,
            stream: Some(s.id),
            method: s.method.as_deref(),
            target: s.path.as_deref(),
            status: s.status,
            grpc_status: s.grpc_status,
            request_first: s.request_headers,
            request_last: s.request_end.or(s.request_headers),
            response_first: s.response_headers,
            response_sent: s.response_headers,
            first_data: s.response_first_data,
            response_last: s.response_end,
            response_bytes: s
                .response_headers
                .map(|_| s.data_bytes[Side::Server.index()]),
            server_timing: s.server_timing.as_ref(),
        }
    }

    /// Its response timed from when the server sent it, as `starts` says
    /// (inside TLS).
    fn sent_by(mut self, starts: Option<&RecordStarts>) -> Self {
        if let (Some(s), Some(r)) = (starts, self.response_first) {
            self.response_sent = Some(s.sent(r));
        }
        self
    }

    /// The request's last byte and the response's first, when the response
    /// came after it.
    fn waited(&self) -> Option<(FrameRef, FrameRef)> {
        match (self.request_last, self.response_first) {
            (Some(q), Some(r)) if r.ts >= q.ts => Some((q, r)),
            _ => None,
        }
    }

    /// The request's last byte and when the server answered it, when that
    /// came after it.
    fn answered(&self) -> Option<(FrameRef, FrameRef)> {
        match (self.request_last, self.response_sent) {
            (Some(q), Some(r)) if r.ts >= q.ts => Some((q, r)),
            _ => None,
        }
    }

    /// The row, given the end of what the answer was held behind
    /// (`behind_of`) and the time held.
    fn row(&self, path: Path, behind_of: Option<FrameRef>, behind: Duration) -> RequestRow {
        let wait = self.waited().map(|(q, r)| between(q, r));
        let h_s = if path.h_s > Duration::ZERO {
            path.h_s
        } else {
            path.rtt
        };
        let server_think_ms = self
            .answered()
            .filter(|_| path.rtt > Duration::ZERO)
            .map(|(q, r)| ms((between(q, r) - behind - h_s).max(Duration::ZERO)));
        RequestRow {
            index: self.index,
            stream: self.stream,
            method: self.method.map(str::to_string),
            target: self.target.map(str::to_string),
            status: self.status,
            grpc_status: self.grpc_status,
            request_frame: self.request_first.map(|f| f.frame),
            request_end_frame: self.request_last.map(|f| f.frame),
            response_frame: self.response_first.map(|f| f.frame),
            first_data_frame: self.first_data.map(|f| f.frame),
            response_end_frame: self.response_last.map(|f| f.frame),
            sent_ms: self
                .request_first
                .map(|q| ms((q.ts - path.start).max(Duration::ZERO))),
            ttfb_ms: wait.map(ms),
            ttfb_rtts: wait.and_then(|w| w.in_rtts(path.rtt)).map(round3),
            behind_ms: ms(behind),
            server_think_ms,
            transfer_ms: match (self.response_first, self.response_last) {
                (Some(a), Some(b)) => Some(ms(between(a, b))),
                _ => None,
            },
            response_bytes: self.response_bytes,
            server_timing: self
                .server_timing
                .map(|st| ServerTimingRow::of(st, server_think_ms)),
            request_last_at: self.request_last,
            ready_at: behind_of.or(self.request_last),
            response_at: self.response_sent,
            behind_of,
        }
    }
}

/// The rows of a connection's exchanges (at most [`ROWS_CAP`]), in order:
/// HTTP/1.x requests, HTTP/2 streams and HTTP/3 streams alike. Only what
/// held an answer behind others differs by framing. `starts`: inside TLS,
/// where the server's records began.
pub(crate) fn rows(x: Exchanges<'_>, path: Path, starts: Option<&RecordStarts>) -> Vec<RequestRow> {
    match x {
        Exchanges::Http1(h) => {
            // the last byte of the previous response (HTTP/1.1 answers in
            // order)
            let mut prev_end: Option<FrameRef> = None;
            let mut out = Vec::new();
            for ex in h.exchanges().iter().take(ROWS_CAP) {
                let e = Exchange::http1(ex).sent_by(starts);
                // sent before the previous response had ended: it could
                // not be answered before that end
                let behind_of = match (e.answered(), prev_end) {
                    (Some((q, _)), Some(p)) if p.ts > q.ts => Some(p),
                    _ => None,
                };
                let behind = match (e.answered(), behind_of) {
                    (Some((q, r)), Some(p)) => p.ts.min(r.ts) - q.ts,
                    _ => Duration::ZERO,
                };
                out.push(e.row(path, behind_of, behind));
                if let Some(l) = e.response_last {
                    prev_end = Some(l);
                }
            }
            out
        }
        Exchanges::H2(h) => h
            .streams
            .iter()
            .filter(|s| s.id % 2 == 1)
            .take(ROWS_CAP)
            .enumerate()
            .map(|(i, s)| {
                let e = Exchange::stream(i, s).sent_by(starts);
                // the server was still sending other streams' DATA: until
                // then the connection was busy, not the server thinking
                let busy = e.answered().and_then(|(q, r)| busy_until(h, s.id, q, r));
                let behind = match (e.request_last, busy) {
                    (Some(q), Some(b)) => b.ts - q.ts,
                    _ => Duration::ZERO,
                };
                e.row(path, busy, behind)
            })
            .collect(),
        Exchanges::H3(streams) => streams
            .iter()
            .take(ROWS_CAP)
            .enumerate()
            .map(|(i, s)| Exchange::stream(i, s).row(path, None, Duration::ZERO))
            .collect(),
    }
}

/// The server's last DATA frame of another stream than `id` between the
/// request's end `q` and the response's HEADERS `r` (from the flow events,
/// in capture order; `None` past their cap).
fn busy_until(h: &H2Summary, id: u64, q: FrameRef, r: FrameRef) -> Option<FrameRef> {
    let upto = h.flow.partition_point(|e| e.at.frame < r.frame);
    h.flow[..upto]
        .iter()
        .rev()
        .take_while(|e| e.at.frame > q.frame)
        .find(|e| {
            e.sender == Side::Server
                && matches!(e.kind, FlowKind::Data { stream, .. } if u64::from(stream) != id)
        })
        .map(|e| e.at)
}
