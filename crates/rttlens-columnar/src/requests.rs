//! The `requests` table: one row per HTTP/1.x request and HTTP/2 or
//! HTTP/3 stream (docs/schema.md "requests").

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, MapBuilder, StringBuilder,
};
use rttlens_core::model::{Connection, ServerTimingRow};

use crate::facts::int;
use crate::key::KeyCols;
use crate::{Columns, Key};

/// The columns being filled.
pub(crate) struct Cols {
    rows: usize,
    key: KeyCols,
    index: Int64Builder,
    http: StringBuilder,
    stream: Int64Builder,
    method: StringBuilder,
    target: StringBuilder,
    authority: StringBuilder,
    status: Int32Builder,
    grpc_status: Int64Builder,
    /// `request_frame`, `request_end_frame`, `response_frame`,
    /// `first_data_frame`, `response_end_frame`.
    frames: [Int64Builder; 5],
    /// `sent_ms`, `ttfb_ms`, `ttfb_rtts`, `behind_ms`, `server_think_ms`,
    /// `transfer_ms`.
    times: [Float64Builder; 6],
    response_bytes: Int64Builder,
    reset_by: StringBuilder,
    /// The response's `Server-Timing`: `server_timing_total_ms`,
    /// `server_timing_unaccounted_ms`, its metrics (name → dur), frame and
    /// whether trailers held some.
    st_total: Float64Builder,
    st_unaccounted: Float64Builder,
    st_metrics: MapBuilder<StringBuilder, Float64Builder>,
    st_frame: Int64Builder,
    st_trailer: BooleanBuilder,
}

const FRAMES: [&str; 5] = [
    "request_frame",
    "request_end_frame",
    "response_frame",
    "first_data_frame",
    "response_end_frame",
];
const TIMES: [(&str, &str); 6] = [
    ("sent_ms", "ms"),
    ("ttfb_ms", "ms"),
    ("ttfb_rtts", "RTTs"),
    ("behind_ms", "ms"),
    ("server_think_ms", "ms"),
    ("transfer_ms", "ms"),
];

impl Default for Cols {
    fn default() -> Self {
        Cols {
            rows: 0,
            key: KeyCols::default(),
            index: Int64Builder::new(),
            http: StringBuilder::new(),
            stream: Int64Builder::new(),
            method: StringBuilder::new(),
            target: StringBuilder::new(),
            authority: StringBuilder::new(),
            status: Int32Builder::new(),
            grpc_status: Int64Builder::new(),
            frames: std::array::from_fn(|_| Int64Builder::new()),
            times: std::array::from_fn(|_| Float64Builder::new()),
            response_bytes: Int64Builder::new(),
            reset_by: StringBuilder::new(),
            st_total: Float64Builder::new(),
            st_unaccounted: Float64Builder::new(),
            st_metrics: MapBuilder::new(None, StringBuilder::new(), Float64Builder::new()),
            st_frame: Int64Builder::new(),
            st_trailer: BooleanBuilder::new(),
        }
    }
}

impl Cols {
    /// Rows so far.
    pub(crate) fn len(&self) -> usize {
        self.rows
    }

    /// A row's `Server-Timing` columns (null without one).
    fn server_timing(&mut self, st: Option<&ServerTimingRow>) {
        self.st_total.append_option(st.and_then(|s| s.total_ms));
        self.st_unaccounted
            .append_option(st.and_then(|s| s.unaccounted_ms));
        self.st_frame.append_option(st.map(|s| int(s.frame)));
        self.st_trailer.append_option(st.map(|s| s.trailer));
        for m in st.map_or(&[][..], |s| &s.metrics[..]) {
            self.st_metrics.keys().append_value(&m.name);
            self.st_metrics.values().append_option(m.dur_ms);
        }
        // a map builder's append fails only when keys and values differ
        // in length, which the loop above never lets happen
        let _ = self.st_metrics.append(st.is_some());
    }

    fn key(&mut self, key: &Key<'_>, index: usize) {
        self.rows += 1;
        self.key.append(key);
        self.index.append_value(index as i64);
    }

    /// A row per request (TCP) or stream (QUIC) of `c`, in its order.
    pub(crate) fn push(&mut self, c: &Connection, key: &Key<'_>) {
        match c {
            Connection::Tcp(t) => {
                for (i, r) in t.requests.iter().enumerate() {
                    self.key(key, i);
                    self.http
                        .append_value(if r.stream.is_some() { "2" } else { "1" });
                    self.stream.append_option(r.stream.map(int));
                    self.method.append_option(r.method.as_deref());
                    self.target.append_option(r.target.as_deref());
                    self.authority.append_null();
                    self.status.append_option(r.status.map(i32::from));
                    self.grpc_status.append_option(r.grpc_status.map(i64::from));
                    let frames = [
                        r.request_frame,
                        r.request_end_frame,
                        r.response_frame,
                        r.first_data_frame,
                        r.response_end_frame,
                    ];
                    for (b, v) in self.frames.iter_mut().zip(frames) {
                        b.append_option(v.map(int));
                    }
                    let times = [
                        r.sent_ms,
                        r.ttfb_ms,
                        r.ttfb_rtts,
                        Some(r.behind_ms),
                        r.server_think_ms,
                        r.transfer_ms,
                    ];
                    for (b, v) in self.times.iter_mut().zip(times) {
                        b.append_option(v);
                    }
                    self.response_bytes.append_option(r.response_bytes.map(int));
                    self.reset_by.append_null();
                    self.server_timing(r.server_timing.as_ref());
                }
            }
            Connection::Quic(q) => {
                for (i, s) in q.streams.iter().enumerate() {
                    self.key(key, i);
                    self.http.append_value("3");
                    self.stream.append_value(int(s.id));
                    self.method.append_option(s.method.as_deref());
                    self.target.append_option(s.path.as_deref());
                    self.authority.append_option(s.authority.as_deref());
                    self.status.append_option(s.status.map(i32::from));
                    self.grpc_status.append_null();
                    let frames = [
                        s.request_frame,
                        None,
                        s.response_frame,
                        s.first_data_frame,
                        s.end_frame,
                    ];
                    for (b, v) in self.frames.iter_mut().zip(frames) {
                        b.append_option(v.map(int));
                    }
                    for (b, (name, _)) in self.times.iter_mut().zip(TIMES) {
                        b.append_option(s.ttfb_ms.filter(|_| name == "ttfb_ms"));
                    }
                    self.response_bytes.append_value(int(s.response_bytes));
                    self.reset_by.append_option(s.reset_by);
                    self.server_timing(s.server_timing.as_ref());
                }
            }
        }
    }

    /// The rows so far as columns, and a fresh start.
    pub(crate) fn finish(&mut self) -> Columns {
        self.rows = 0;
        let mut c = Columns::default();
        self.key.finish(&mut c);
        c.add("index", "count", false, Arc::new(self.index.finish()));
        c.add("http", "name", false, Arc::new(self.http.finish()));
        c.add("stream", "stream ID", true, Arc::new(self.stream.finish()));
        c.add("method", "text", true, Arc::new(self.method.finish()));
        c.add("target", "text", true, Arc::new(self.target.finish()));
        c.add("authority", "text", true, Arc::new(self.authority.finish()));
        c.add(
            "status",
            "HTTP status code",
            true,
            Arc::new(self.status.finish()),
        );
        c.add(
            "grpc_status",
            "gRPC status code",
            true,
            Arc::new(self.grpc_status.finish()),
        );
        for (name, b) in FRAMES.iter().zip(&mut self.frames) {
            c.add(name, "frame", true, Arc::new(b.finish()));
        }
        for ((name, unit), b) in TIMES.iter().zip(&mut self.times) {
            c.add(name, unit, true, Arc::new(b.finish()));
        }
        c.add(
            "response_bytes",
            "bytes",
            true,
            Arc::new(self.response_bytes.finish()),
        );
        c.add("reset_by", "name", true, Arc::new(self.reset_by.finish()));
        c.add(
            "server_timing_total_ms",
            "ms",
            true,
            Arc::new(self.st_total.finish()),
        );
        c.add(
            "server_timing_unaccounted_ms",
            "ms",
            true,
            Arc::new(self.st_unaccounted.finish()),
        );
        c.add(
            "server_timing_metrics",
            "ms",
            true,
            Arc::new(self.st_metrics.finish()),
        );
        c.add(
            "server_timing_frame",
            "frame",
            true,
            Arc::new(self.st_frame.finish()),
        );
        c.add(
            "server_timing_trailer",
            "flag",
            true,
            Arc::new(self.st_trailer.finish()),
        );
        c
    }
}
