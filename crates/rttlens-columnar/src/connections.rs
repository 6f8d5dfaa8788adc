//! The `connections` table: one row per connection, TCP or QUIC
//! (docs/schema.md "connections").

use std::net::SocketAddr;
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow_array::{Float64Array, Int64Array, ListArray, StringArray, StructArray};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Fields};
use rttlens_core::model::{ConnReport, Connection, QuicReport};

use crate::facts::int;
use crate::{Columns, Key};

/// The ladder's phases that get columns of their own (`NAME_ms`,
/// `NAME_rtts`, `-` written `_`); every phase is in `ladder` too.
pub(crate) const PHASES: [&str; 7] = [
    "connect",
    "tls",
    "request",
    "first-decrypted-byte",
    "transfer",
    "close",
    "quic-handshake",
];

/// The columns being filled.
pub(crate) struct Cols {
    rows: usize,
    ts: TimestampMicrosecondBuilder,
    uid: StringBuilder,
    orig_h: StringBuilder,
    orig_p: Int32Builder,
    resp_h: StringBuilder,
    resp_p: Int32Builder,
    proto: StringBuilder,
    service: StringBuilder,
    duration: Float64Builder,
    orig_bytes: Int64Builder,
    resp_bytes: Int64Builder,
    history: StringBuilder,
    community_id: StringBuilder,
    transport: StringBuilder,
    index: Int64Builder,
    protocol: StringBuilder,
    first_frame: Int64Builder,
    last_frame: Int64Builder,
    frames: Int64Builder,
    start_s: Float64Builder,
    vantage: StringBuilder,
    mid_stream: BooleanBuilder,
    rtt_min_ms: Float64Builder,
    rtt_median_ms: Float64Builder,
    rtt_client_half_ms: Float64Builder,
    rtt_server_half_ms: Float64Builder,
    rtt_method: StringBuilder,
    phases: Vec<(Float64Builder, Float64Builder)>,
    ladder: Ladder,
    tls_version: StringBuilder,
    tls_handshake: StringBuilder,
    tls_cipher: StringBuilder,
    tls_sni: StringBuilder,
    tls_alpn: StringBuilder,
    tls_resumed: BooleanBuilder,
    tls_nominal_rtts: Int64Builder,
    tls_measured_rtts: Float64Builder,
    quic_version: StringBuilder,
    quic_zero_rtt: StringBuilder,
    quic_retry: BooleanBuilder,
    orig_retransmissions: Int64Builder,
    resp_retransmissions: Int64Builder,
    orig_lost_packets: Int64Builder,
    resp_lost_packets: Int64Builder,
    findings: Int64Builder,
    cost_ms: Float64Builder,
    cost_rtts: Float64Builder,
    requests: Int64Builder,
}

impl Default for Cols {
    fn default() -> Self {
        Cols {
            rows: 0,
            ts: TimestampMicrosecondBuilder::new().with_timezone("UTC"),
            uid: StringBuilder::new(),
            orig_h: StringBuilder::new(),
            orig_p: Int32Builder::new(),
            resp_h: StringBuilder::new(),
            resp_p: Int32Builder::new(),
            proto: StringBuilder::new(),
            service: StringBuilder::new(),
            duration: Float64Builder::new(),
            orig_bytes: Int64Builder::new(),
            resp_bytes: Int64Builder::new(),
            history: StringBuilder::new(),
            community_id: StringBuilder::new(),
            transport: StringBuilder::new(),
            index: Int64Builder::new(),
            protocol: StringBuilder::new(),
            first_frame: Int64Builder::new(),
            last_frame: Int64Builder::new(),
            frames: Int64Builder::new(),
            start_s: Float64Builder::new(),
            vantage: StringBuilder::new(),
            mid_stream: BooleanBuilder::new(),
            rtt_min_ms: Float64Builder::new(),
            rtt_median_ms: Float64Builder::new(),
            rtt_client_half_ms: Float64Builder::new(),
            rtt_server_half_ms: Float64Builder::new(),
            rtt_method: StringBuilder::new(),
            phases: PHASES
                .iter()
                .map(|_| (Float64Builder::new(), Float64Builder::new()))
                .collect(),
            ladder: Ladder::default(),
            tls_version: StringBuilder::new(),
            tls_handshake: StringBuilder::new(),
            tls_cipher: StringBuilder::new(),
            tls_sni: StringBuilder::new(),
            tls_alpn: StringBuilder::new(),
            tls_resumed: BooleanBuilder::new(),
            tls_nominal_rtts: Int64Builder::new(),
            tls_measured_rtts: Float64Builder::new(),
            quic_version: StringBuilder::new(),
            quic_zero_rtt: StringBuilder::new(),
            quic_retry: BooleanBuilder::new(),
            orig_retransmissions: Int64Builder::new(),
            resp_retransmissions: Int64Builder::new(),
            orig_lost_packets: Int64Builder::new(),
            resp_lost_packets: Int64Builder::new(),
            findings: Int64Builder::new(),
            cost_ms: Float64Builder::new(),
            cost_rtts: Float64Builder::new(),
            requests: Int64Builder::new(),
        }
    }
}

/// `address:port` (IPv6 as `[address]:port`) as the address and the port.
fn split(endpoint: &str) -> (Option<String>, Option<i32>) {
    match endpoint.parse::<SocketAddr>() {
        Ok(a) => (Some(a.ip().to_string()), Some(i32::from(a.port()))),
        Err(_) => (None, None),
    }
}

impl Cols {
    /// Rows so far.
    pub(crate) fn len(&self) -> usize {
        self.rows
    }

    /// `c`'s row.
    pub(crate) fn push(&mut self, c: &Connection, key: &Key<'_>) {
        self.rows += 1;
        self.ts.append_value(key.ts_us);
        self.uid.append_value(&key.uid);
        let (oh, op) = split(c.client());
        let (rh, rp) = split(c.server());
        self.orig_h.append_option(oh);
        self.orig_p.append_option(op);
        self.resp_h.append_option(rh);
        self.resp_p.append_option(rp);
        // ms to s, kept to the µs (no float noise: 8.304022, not 8.304022000000002)
        self.duration
            .append_value((c.duration_ms() * 1000.0).round() / 1e6);
        self.community_id.append_value(key.community_id);
        self.transport.append_value(key.transport);
        self.index.append_value(key.index);
        self.first_frame.append_value(int(c.first_frame()));
        self.last_frame.append_value(int(c.last_frame()));
        self.start_s.append_value(c.start_s());
        for (name, (ms, rtts)) in PHASES.iter().zip(&mut self.phases) {
            let p = c.ladder().iter().find(|p| p.name == *name);
            ms.append_option(p.map(|p| p.ms));
            rtts.append_option(p.map(|p| p.rtts));
        }
        self.ladder.push(c);
        let findings = c.findings();
        self.findings.append_value(findings.len() as i64);
        self.cost_ms
            .append_value(findings.iter().map(|f| f.cost.ms).sum());
        self.cost_rtts
            .append_option(findings.iter().map(|f| f.cost.rtts).sum::<Option<f64>>());
        match c {
            Connection::Tcp(t) => self.tcp(t),
            Connection::Quic(q) => self.quic(q),
        }
    }

    fn tcp(&mut self, t: &ConnReport) {
        self.proto.append_value("tcp");
        // Zeek's service names: `ssl` for TLS, `http`
        self.service.append_option(match t.protocol {
            "tls" => Some("ssl"),
            "http" => Some("http"),
            _ => None,
        });
        self.orig_bytes.append_value(int(t.tcp.bytes[0]));
        self.resp_bytes.append_value(int(t.tcp.bytes[1]));
        self.history.append_value(&t.history);
        self.protocol.append_value(t.protocol);
        self.frames.append_value(int(t.frames));
        self.vantage.append_value(t.vantage.as_str());
        self.mid_stream.append_value(t.coverage.mid_stream);
        let r = t.rtt.as_ref();
        self.rtt_min_ms.append_option(r.map(|r| r.min_ms));
        self.rtt_median_ms.append_option(r.map(|r| r.median_ms));
        self.rtt_client_half_ms.append_option(r.map(|r| r.h_c_ms));
        self.rtt_server_half_ms.append_option(r.map(|r| r.h_s_ms));
        self.rtt_method.append_option(r.map(|r| r.method.as_str()));
        let tls = t.tls.as_ref();
        self.tls_version
            .append_option(tls.map(|t| &*t.info.version));
        self.tls_handshake.append_option(tls.map(|t| &t.kind));
        self.tls_cipher
            .append_option(tls.and_then(|t| t.info.cipher.as_deref()));
        self.tls_sni
            .append_option(tls.and_then(|t| t.info.sni.as_deref()));
        self.tls_alpn
            .append_option(tls.and_then(|t| t.info.alpn.as_deref()));
        self.tls_resumed.append_option(tls.map(|t| t.info.resumed));
        self.tls_nominal_rtts
            .append_option(tls.map(|t| i64::from(t.nominal_rtts)));
        self.tls_measured_rtts
            .append_option(tls.map(|t| t.measured_rtts));
        self.quic_version.append_null();
        self.quic_zero_rtt.append_null();
        self.quic_retry.append_null();
        self.orig_retransmissions
            .append_value(int(t.tcp.retransmissions[0]));
        self.resp_retransmissions
            .append_value(int(t.tcp.retransmissions[1]));
        self.orig_lost_packets.append_null();
        self.resp_lost_packets.append_null();
        self.requests.append_value(t.requests.len() as i64);
    }

    fn quic(&mut self, q: &QuicReport) {
        let h = &q.handshake;
        self.proto.append_value("udp");
        self.service.append_value("quic");
        self.orig_bytes.append_value(int(q.bytes[0]));
        self.resp_bytes.append_value(int(q.bytes[1]));
        self.history.append_null();
        self.protocol.append_value("quic");
        self.frames
            .append_value(int(q.datagrams[0] + q.datagrams[1]));
        self.vantage.append_null();
        self.mid_stream.append_null();
        let r = q.rtt.as_ref();
        self.rtt_min_ms.append_option(r.map(|r| r.min_ms));
        self.rtt_median_ms.append_null();
        self.rtt_client_half_ms
            .append_option(r.and_then(|r| r.client_half_ms));
        self.rtt_server_half_ms
            .append_option(r.and_then(|r| r.server_half_ms));
        self.rtt_method.append_option(r.map(|_| "ack-frame"));
        // QUIC's handshake is TLS 1.3's (RFC 9001 §4)
        self.tls_version.append_value("1.3");
        self.tls_handshake.append_null();
        self.tls_cipher.append_option(h.cipher.as_deref());
        self.tls_sni.append_option(h.sni.as_deref());
        self.tls_alpn.append_null();
        self.tls_resumed.append_option(h.resumed);
        self.tls_nominal_rtts.append_null();
        self.tls_measured_rtts.append_option(h.rtts);
        self.quic_version.append_value(&q.version);
        self.quic_zero_rtt.append_value(h.zero_rtt);
        self.quic_retry.append_value(h.retry);
        self.orig_retransmissions.append_null();
        self.resp_retransmissions.append_null();
        self.orig_lost_packets.append_value(int(q.lost[0]));
        self.resp_lost_packets.append_value(int(q.lost[1]));
        self.requests.append_value(q.streams.len() as i64);
    }

    /// The rows so far as columns, and a fresh start.
    pub(crate) fn finish(&mut self) -> Columns {
        self.rows = 0;
        let mut c = Columns::default();
        c.add(
            "ts",
            "µs since 1970-01-01 UTC",
            false,
            Arc::new(self.ts.finish()),
        );
        c.add("uid", "text", false, Arc::new(self.uid.finish()));
        c.add(
            "id.orig_h",
            "IP address",
            true,
            Arc::new(self.orig_h.finish()),
        );
        c.add("id.orig_p", "port", true, Arc::new(self.orig_p.finish()));
        c.add(
            "id.resp_h",
            "IP address",
            true,
            Arc::new(self.resp_h.finish()),
        );
        c.add("id.resp_p", "port", true, Arc::new(self.resp_p.finish()));
        c.add("proto", "name", false, Arc::new(self.proto.finish()));
        c.add("service", "name", true, Arc::new(self.service.finish()));
        c.add("duration", "s", false, Arc::new(self.duration.finish()));
        c.add(
            "orig_bytes",
            "bytes",
            false,
            Arc::new(self.orig_bytes.finish()),
        );
        c.add(
            "resp_bytes",
            "bytes",
            false,
            Arc::new(self.resp_bytes.finish()),
        );
        c.add(
            "history",
            "Zeek history letters",
            true,
            Arc::new(self.history.finish()),
        );
        c.add(
            "community_id",
            "text",
            false,
            Arc::new(self.community_id.finish()),
        );
        c.add(
            "transport",
            "name",
            false,
            Arc::new(self.transport.finish()),
        );
        c.add("index", "count", false, Arc::new(self.index.finish()));
        c.add("protocol", "name", false, Arc::new(self.protocol.finish()));
        c.add(
            "first_frame",
            "frame",
            false,
            Arc::new(self.first_frame.finish()),
        );
        c.add(
            "last_frame",
            "frame",
            false,
            Arc::new(self.last_frame.finish()),
        );
        c.add("frames", "count", false, Arc::new(self.frames.finish()));
        c.add("start_s", "s", false, Arc::new(self.start_s.finish()));
        c.add("vantage", "name", true, Arc::new(self.vantage.finish()));
        c.add(
            "mid_stream",
            "flag",
            true,
            Arc::new(self.mid_stream.finish()),
        );
        c.add("rtt_min_ms", "ms", true, Arc::new(self.rtt_min_ms.finish()));
        c.add(
            "rtt_median_ms",
            "ms",
            true,
            Arc::new(self.rtt_median_ms.finish()),
        );
        c.add(
            "rtt_client_half_ms",
            "ms",
            true,
            Arc::new(self.rtt_client_half_ms.finish()),
        );
        c.add(
            "rtt_server_half_ms",
            "ms",
            true,
            Arc::new(self.rtt_server_half_ms.finish()),
        );
        c.add(
            "rtt_method",
            "name",
            true,
            Arc::new(self.rtt_method.finish()),
        );
        for (name, (ms, rtts)) in PHASES.iter().zip(&mut self.phases) {
            let name = name.replace('-', "_");
            c.add(&format!("{name}_ms"), "ms", true, Arc::new(ms.finish()));
            c.add(
                &format!("{name}_rtts"),
                "RTTs",
                true,
                Arc::new(rtts.finish()),
            );
        }
        c.add(
            "ladder",
            "list of phases",
            false,
            Arc::new(self.ladder.finish()),
        );
        c.add(
            "tls_version",
            "name",
            true,
            Arc::new(self.tls_version.finish()),
        );
        c.add(
            "tls_handshake",
            "name",
            true,
            Arc::new(self.tls_handshake.finish()),
        );
        c.add(
            "tls_cipher",
            "name",
            true,
            Arc::new(self.tls_cipher.finish()),
        );
        c.add("tls_sni", "text", true, Arc::new(self.tls_sni.finish()));
        c.add("tls_alpn", "name", true, Arc::new(self.tls_alpn.finish()));
        c.add(
            "tls_resumed",
            "flag",
            true,
            Arc::new(self.tls_resumed.finish()),
        );
        c.add(
            "tls_nominal_rtts",
            "RTTs",
            true,
            Arc::new(self.tls_nominal_rtts.finish()),
        );
        c.add(
            "tls_measured_rtts",
            "RTTs",
            true,
            Arc::new(self.tls_measured_rtts.finish()),
        );
        c.add(
            "quic_version",
            "name",
            true,
            Arc::new(self.quic_version.finish()),
        );
        c.add(
            "quic_zero_rtt",
            "name",
            true,
            Arc::new(self.quic_zero_rtt.finish()),
        );
        c.add(
            "quic_retry",
            "flag",
            true,
            Arc::new(self.quic_retry.finish()),
        );
        for (name, b) in [
            ("orig_retransmissions", &mut self.orig_retransmissions),
            ("resp_retransmissions", &mut self.resp_retransmissions),
            ("orig_lost_packets", &mut self.orig_lost_packets),
            ("resp_lost_packets", &mut self.resp_lost_packets),
        ] {
            c.add(name, "count", true, Arc::new(b.finish()));
        }
        c.add("findings", "count", false, Arc::new(self.findings.finish()));
        c.add("cost_ms", "ms", false, Arc::new(self.cost_ms.finish()));
        c.add("cost_rtts", "RTTs", true, Arc::new(self.cost_rtts.finish()));
        c.add("requests", "count", false, Arc::new(self.requests.finish()));
        c
    }
}

/// The `ladder` column: a list of phases per connection.
#[derive(Debug)]
struct Ladder {
    offsets: Vec<i32>,
    name: Vec<&'static str>,
    start_frame: Vec<i64>,
    end_frame: Vec<i64>,
    ms: Vec<f64>,
    rtts: Vec<f64>,
}

impl Default for Ladder {
    fn default() -> Self {
        Ladder {
            offsets: vec![0],
            name: Vec::new(),
            start_frame: Vec::new(),
            end_frame: Vec::new(),
            ms: Vec::new(),
            rtts: Vec::new(),
        }
    }
}

impl Ladder {
    fn push(&mut self, c: &Connection) {
        for p in c.ladder() {
            self.name.push(p.name);
            self.start_frame.push(int(p.start_frame));
            self.end_frame.push(int(p.end_frame));
            self.ms.push(p.ms);
            self.rtts.push(p.rtts);
        }
        self.offsets.push(self.name.len() as i32);
    }

    fn finish(&mut self) -> ListArray {
        let done = std::mem::take(self);
        let fields = Fields::from(vec![
            Field::new("name", DataType::Utf8, false),
            Field::new("start_frame", DataType::Int64, false),
            Field::new("end_frame", DataType::Int64, false),
            Field::new("ms", DataType::Float64, false),
            Field::new("rtts", DataType::Float64, false),
        ]);
        let items = StructArray::new(
            fields.clone(),
            vec![
                Arc::new(StringArray::from(done.name)),
                Arc::new(Int64Array::from(done.start_frame)),
                Arc::new(Int64Array::from(done.end_frame)),
                Arc::new(Float64Array::from(done.ms)),
                Arc::new(Float64Array::from(done.rtts)),
            ],
            None,
        );
        ListArray::new(
            Arc::new(Field::new_list_field(DataType::Struct(fields), true)),
            OffsetBuffer::new(done.offsets.into()),
            Arc::new(items),
            None,
        )
    }
}
