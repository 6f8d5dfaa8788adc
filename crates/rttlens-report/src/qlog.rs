//! qlog from a capture: each QUIC connection's packet journal
//! ([`QuicJournal`]) as one `.sqlog` file (`--format qlog -o DIR`, or
//! `--qlog DIR` beside any format), for qvis and the other tools that read
//! what QUIC stacks log (docs/quic.md "qlog").
//!
//! Format: qlog 0.3 in JSON-SEQ (RFC 7464: each record after a Record
//! Separator, 0x1E), the main schema with the QUIC and HTTP/3 event
//! definitions of the drafts qlog 0.3 names (draft-ietf-quic-qlog-main-schema,
//! -quic-events, -h3-events): a header record with one trace (its vantage
//! point, the connection's endpoints as title, the first packet's time as
//! `reference_time`, ms since the Unix epoch), then one record per event,
//! its `time` in ms since that reference.
//!
//! The types are Cloudflare's `qlog` crate, the ones quiche writes with,
//! at its 0.15 line. Weighed against an encoder of our own over serde: the
//! crate is kept by quiche's maintainers and exercised by quiche's users,
//! so every field name, enum spelling and optional field is the schema's
//! without our transcribing it. Its later lines (0.16 on) write the newer
//! drafts (`file_schema`, `serialization_format`, `quic:` event names),
//! which qvis does not open: qvis takes a JSON-SEQ file whose header has
//! `qlog_version` and `qlog_format: "JSON-SEQ"`, as 0.15 writes it, and
//! aioquic writes qlog 0.3 too. Its one side effect: it turns on
//! serde_json's `preserve_order`, so JSON objects built as `Value`s keep
//! their insertion order (only `rttlens lab --format json` builds any).
//!
//! Events, each at the frame that shows it:
//! - `connectivity:connection_started`: the first packet (addresses,
//!   ports, the client's first Destination and Source Connection IDs);
//! - `transport:parameters_set`: each side's transport parameters, at the
//!   first packet carrying its CRYPTO data at the level that holds them
//!   (the client's Initial, the server's Handshake: EncryptedExtensions);
//! - `transport:packet_sent` / `transport:packet_received`: every packet,
//!   with its header, raw length and frames (none when it was not
//!   decrypted); `sent` for the vantage point's own packets;
//! - `recovery:metrics_updated`: each ACK frame's RTT sample (RFC 9002
//!   §5): at an endpoint the peer's half (what the endpoint measures),
//!   elsewhere the sum of both halves' latest samples, with the minimum
//!   and the smoothed RTT and variance of RFC 9002 §5.3 over them;
//! - `recovery:packet_lost`: each packet the engine declared lost
//!   (three later packets acknowledged and not it, RFC 9002 §6.1.1); gaps
//!   in packet numbers are not losses proven, and are not written;
//! - `connectivity:connection_closed`: the first CONNECTION_CLOSE;
//! - `http:frame_created` / `http:frame_parsed`: every HTTP/3 frame header
//!   read on a request or control stream, with the request's and
//!   response's pseudo-headers on their HEADERS.
//!
//! The vantage point is the host the capture point is next to, told by the
//! halves of the RTT as for TCP (docs/design.md §4 "Vantage and RTT");
//! on the path or unknown it is `network` with flow `client` (the client's
//! packets are `sent`).

use std::io::{self, Write};
use std::path::PathBuf;

use qlog::events::connectivity::{
    ConnectionClosed, ConnectionClosedTrigger, ConnectionStarted, TransportOwner,
};
use qlog::events::h3::{H3FrameCreated, H3FrameParsed, Http3Frame, HttpHeader};
use qlog::events::quic::{
    AckedRanges, ErrorSpace, MetricsUpdated, PacketHeader, PacketLost, PacketLostTrigger,
    PacketReceived, PacketSent, PacketType as QlogPacketType, QuicFrame, StreamType,
    TransportParametersSet,
};
use qlog::events::{ApplicationErrorCode, ConnectionErrorCode, Event, EventData, RawInfo};
use qlog::{CommonFields, QlogSeq, TraceSeq, VantagePoint, VantagePointType};
use rttlens_core::base::side::{FrameRef, Side};
use rttlens_core::model::journal::{
    H3FrameRec, JournalFrame, JournalPacket, PacketType, QuicJournal,
};
use rttlens_core::model::{Connection, QuicReport};
use rttlens_core::pipeline::CaptureSummary;

use crate::{Renderer, Source};

/// The qlog version written (qlog 0.3, what qvis and aioquic read).
pub const QLOG_VERSION: &str = qlog::QLOG_VERSION;

/// The file a connection's qlog is written to: `quic-INDEX.sqlog`.
pub fn file_name(q: &QuicReport) -> String {
    format!("quic-{}.sqlog", q.index)
}

/// Writes every QUIC connection's journal as a `.sqlog` file in a
/// directory (`--format qlog -o DIR`, `--qlog DIR`); writes nothing to the
/// report's own output.
#[derive(Debug)]
pub struct QlogRenderer {
    dir: PathBuf,
    source: String,
    /// Files written.
    pub written: u64,
}

impl QlogRenderer {
    /// Files in `dir` (created when missing, at [`Renderer::begin`]).
    pub fn new(dir: PathBuf) -> QlogRenderer {
        QlogRenderer {
            dir,
            source: String::new(),
            written: 0,
        }
    }

    /// Writes `q`'s journal, taken out of it, as its file (nothing when it
    /// kept none).
    ///
    /// # Errors
    /// The file could not be written.
    pub fn write_conn(&mut self, q: &mut QuicReport) -> io::Result<()> {
        let Some(j) = q.journal.take() else {
            return Ok(());
        };
        let path = self.dir.join(file_name(q));
        let mut w = io::BufWriter::new(std::fs::File::create(&path)?);
        write(&mut w, q, &j, &self.source)?;
        w.flush()?;
        self.written += 1;
        Ok(())
    }
}

impl Renderer for QlogRenderer {
    fn begin(&mut self, _w: &mut dyn Write, source: &Source) -> io::Result<()> {
        self.source = source.name.clone();
        std::fs::create_dir_all(&self.dir)
    }

    fn connection(&mut self, _w: &mut dyn Write, conn: Connection) -> io::Result<()> {
        match conn {
            Connection::Quic(mut q) => self.write_conn(&mut q),
            Connection::Tcp(_) => Ok(()),
        }
    }

    fn end(&mut self, _w: &mut dyn Write, _summary: &CaptureSummary) -> io::Result<()> {
        Ok(())
    }
}

/// Writes the qlog of connection `q` from its journal `j` to `w`:
/// the header record, then the events in capture order. `source` names
/// the capture in the header's description.
///
/// # Errors
/// Writing failed.
pub fn write(w: &mut dyn Write, q: &QuicReport, j: &QuicJournal, source: &str) -> io::Result<()> {
    let local = j.vantage.unwrap_or(Side::Client);
    let vantage_point = VantagePoint {
        name: Some("rttlens (capture)".to_string()),
        ty: match j.vantage {
            Some(Side::Client) => VantagePointType::Client,
            Some(Side::Server) => VantagePointType::Server,
            None => VantagePointType::Network,
        },
        flow: j.vantage.is_none().then_some(VantagePointType::Client),
    };
    let start = j.packets.first().map_or(q.first_ts, |p| p.at.ts);
    let header = QlogSeq {
        qlog_version: QLOG_VERSION.to_string(),
        qlog_format: "JSON-SEQ".to_string(),
        title: Some(format!("rttlens: QUIC connection {}", q.index)),
        description: Some(format!("from the capture {source}")),
        summary: None,
        trace: TraceSeq::new(
            vantage_point,
            Some(format!("{} ⇄ {}", q.client, q.server)),
            None,
            None,
            Some(CommonFields {
                group_id: None,
                protocol_type: Some(vec!["QUIC".to_string(), "HTTP3".to_string()]),
                reference_time: Some(start.nanos as f64 / 1e6),
                time_format: Some("relative".to_string()),
            }),
        ),
    };
    record(w, &header)?;
    let mut events: Vec<(u64, Event)> = Vec::new();
    let time = |at: FrameRef| ((at.ts.nanos - start.nanos) as f64 / 1e6) as f32;
    let mut push =
        |at: FrameRef, data: EventData| events.push((at.frame, Event::with_time(time(at), data)));
    if let Some(first) = j.packets.first() {
        push(first.at, started(q, j));
    }
    params(q, j, local, &mut push);
    let mut datagram_id = 0u32;
    let mut closed = false;
    for p in &j.packets {
        if p.datagram > 0 {
            datagram_id += 1;
        }
        push(p.at, packet(p, local, datagram_id));
        if !closed {
            if let Some(c) = close(p, local) {
                closed = true;
                push(p.at, c);
            }
        }
    }
    metrics(j, &mut push);
    for l in j.losses.iter().filter(|l| l.declared_by.is_some()) {
        let ty = match l.space {
            0 => QlogPacketType::Initial,
            1 => QlogPacketType::Handshake,
            _ => QlogPacketType::OneRtt,
        };
        let header = PacketHeader::new(ty, Some(l.pn), None, None, None, None, None, None);
        let data = EventData::PacketLost(PacketLost {
            header: Some(header),
            frames: None,
            trigger: Some(PacketLostTrigger::ReorderingThreshold),
        });
        push(l.declared_by.unwrap_or(l.at), data);
    }
    for f in &j.h3 {
        push(f.at, h3_frame(q, f, local));
    }
    // capture order; events of one frame in the order made
    events.sort_by_key(|(frame, _)| *frame);
    for (_, e) in &events {
        record(w, e)?;
    }
    Ok(())
}

/// One JSON-SEQ record (RFC 7464 §2.2: RS, the JSON text, LF).
fn record<T: serde::Serialize>(w: &mut dyn Write, v: &T) -> io::Result<()> {
    w.write_all(&[0x1e])?;
    serde_json::to_writer(&mut *w, v)?;
    w.write_all(b"\n")
}

fn started(q: &QuicReport, j: &QuicJournal) -> EventData {
    let split = |s: &str| match s.parse::<std::net::SocketAddr>() {
        Ok(a) => (a.ip().to_string(), Some(a.port()), a.is_ipv4()),
        Err(_) => (s.to_string(), None, true),
    };
    let (src_ip, src_port, v4) = split(&q.client);
    let (dst_ip, dst_port, _) = split(&q.server);
    let first_client = j
        .packets
        .iter()
        .find(|p| p.side == Side::Client && p.ty != PacketType::OneRtt);
    EventData::ConnectionStarted(ConnectionStarted {
        ip_version: Some(if v4 { "v4" } else { "v6" }.to_string()),
        src_ip,
        dst_ip,
        protocol: Some("QUIC".to_string()),
        src_port,
        dst_port,
        src_cid: first_client.map(|p| hex(&p.scid)),
        dst_cid: first_client.map(|p| hex(&p.dcid)),
    })
}

/// Each side's transport parameters, at the first packet carrying CRYPTO
/// data at the level that holds them.
fn params(q: &QuicReport, j: &QuicJournal, local: Side, push: &mut dyn FnMut(FrameRef, EventData)) {
    for (side, ty) in [
        (Side::Client, PacketType::Initial),
        (Side::Server, PacketType::Handshake),
    ] {
        let Some(tp) = &q.transport_parameters[side.index()] else {
            continue;
        };
        let Some(p) = j.packets.iter().find(|p| {
            p.side == side
                && p.ty == ty
                && p.frames
                    .iter()
                    .any(|f| matches!(f, JournalFrame::Crypto { .. }))
        }) else {
            continue;
        };
        let set = TransportParametersSet {
            owner: Some(owner(side, local)),
            max_idle_timeout: tp.max_idle_timeout_ms,
            max_udp_payload_size: tp
                .max_udp_payload_size
                .map(|v| v.min(u32::MAX.into()) as u32),
            ack_delay_exponent: tp.ack_delay_exponent.map(|v| v.min(u16::MAX.into()) as u16),
            max_ack_delay: tp.max_ack_delay_ms.map(|v| v.min(u16::MAX.into()) as u16),
            initial_max_data: tp.initial_max_data,
            initial_max_stream_data_bidi_local: tp.initial_max_stream_data_bidi_local,
            initial_max_stream_data_bidi_remote: tp.initial_max_stream_data_bidi_remote,
            initial_max_stream_data_uni: tp.initial_max_stream_data_uni,
            initial_max_streams_bidi: tp.initial_max_streams_bidi,
            ..TransportParametersSet::default()
        };
        push(p.at, EventData::TransportParametersSet(set));
    }
}

fn owner(side: Side, local: Side) -> TransportOwner {
    if side == local {
        TransportOwner::Local
    } else {
        TransportOwner::Remote
    }
}

fn packet(p: &JournalPacket, local: Side, datagram_id: u32) -> EventData {
    let long = !matches!(p.ty, PacketType::OneRtt | PacketType::VersionNegotiation);
    let header = PacketHeader::new(
        packet_type(p.ty),
        p.pn,
        None,
        None,
        None,
        long.then_some(p.version),
        long.then_some(p.scid.as_slice()),
        Some(p.dcid.as_slice()),
    );
    let raw = Some(RawInfo {
        length: Some(u64::from(p.len)),
        payload_length: p.pn.map(|_| u64::from(p.len.saturating_sub(p.header_len))),
        data: None,
    });
    let frames: Vec<QuicFrame> = p.frames.iter().map(frame).collect();
    let frames = p.pn.map(|_| frames);
    let supported_versions = (p.ty == PacketType::VersionNegotiation)
        .then(|| p.versions.iter().map(|v| format!("{v:08x}")).collect());
    let is_coalesced = (p.datagram == 0).then_some(true);
    if p.side == local {
        EventData::PacketSent(PacketSent {
            header,
            is_coalesced,
            supported_versions,
            raw,
            datagram_id: Some(datagram_id),
            frames: frames.map(Into::into),
            ..PacketSent::default()
        })
    } else {
        EventData::PacketReceived(PacketReceived {
            header,
            is_coalesced,
            supported_versions,
            raw,
            datagram_id: Some(datagram_id),
            frames,
            ..PacketReceived::default()
        })
    }
}

fn packet_type(t: PacketType) -> QlogPacketType {
    match t {
        PacketType::Initial => QlogPacketType::Initial,
        PacketType::ZeroRtt => QlogPacketType::ZeroRtt,
        PacketType::Handshake => QlogPacketType::Handshake,
        PacketType::Retry => QlogPacketType::Retry,
        PacketType::VersionNegotiation => QlogPacketType::VersionNegotiation,
        PacketType::OneRtt => QlogPacketType::OneRtt,
    }
}

fn frame(f: &JournalFrame) -> QuicFrame {
    let streams = |bidi: bool| match bidi {
        true => StreamType::Bidirectional,
        false => StreamType::Unidirectional,
    };
    let u32_of = |v: u64| v.min(u64::from(u32::MAX)) as u32;
    match f {
        JournalFrame::Padding { len } => QuicFrame::Padding {
            length: None,
            payload_length: u32_of(*len),
        },
        JournalFrame::Ping => QuicFrame::Ping {
            length: None,
            payload_length: None,
        },
        JournalFrame::Ack {
            ack_delay_us,
            ranges,
            ecn,
        } => QuicFrame::Ack {
            ack_delay: Some(*ack_delay_us as f32 / 1000.0),
            // smallest first, as the stacks log them
            acked_ranges: Some(AckedRanges::Double(ranges.iter().rev().copied().collect())),
            ect0: ecn.map(|e| e[0]),
            ect1: ecn.map(|e| e[1]),
            ce: ecn.map(|e| e[2]),
            length: None,
            payload_length: None,
        },
        JournalFrame::ResetStream {
            id,
            error,
            final_size,
        } => QuicFrame::ResetStream {
            stream_id: *id,
            error_code: *error,
            final_size: *final_size,
            length: None,
            payload_length: None,
        },
        JournalFrame::StopSending { id, error } => QuicFrame::StopSending {
            stream_id: *id,
            error_code: *error,
            length: None,
            payload_length: None,
        },
        JournalFrame::Crypto { offset, len } => QuicFrame::Crypto {
            offset: *offset,
            length: *len,
        },
        JournalFrame::NewToken { len } => QuicFrame::NewToken {
            token: qlog::Token {
                ty: None,
                details: None,
                raw: Some(RawInfo {
                    length: Some(*len),
                    payload_length: None,
                    data: None,
                }),
            },
        },
        JournalFrame::Stream {
            id,
            offset,
            len,
            fin,
        } => QuicFrame::Stream {
            stream_id: *id,
            offset: *offset,
            length: *len,
            fin: Some(*fin),
            raw: None,
        },
        JournalFrame::MaxData(v) => QuicFrame::MaxData { maximum: *v },
        JournalFrame::MaxStreamData { id, max } => QuicFrame::MaxStreamData {
            stream_id: *id,
            maximum: *max,
        },
        JournalFrame::MaxStreams { bidi, max } => QuicFrame::MaxStreams {
            stream_type: streams(*bidi),
            maximum: *max,
        },
        JournalFrame::DataBlocked(v) => QuicFrame::DataBlocked { limit: *v },
        JournalFrame::StreamDataBlocked { id, limit } => QuicFrame::StreamDataBlocked {
            stream_id: *id,
            limit: *limit,
        },
        JournalFrame::StreamsBlocked { bidi, limit } => QuicFrame::StreamsBlocked {
            stream_type: streams(*bidi),
            limit: *limit,
        },
        JournalFrame::NewConnectionId {
            seq,
            retire_prior_to,
            cid,
            reset_token,
        } => QuicFrame::NewConnectionId {
            sequence_number: u32_of(*seq),
            retire_prior_to: u32_of(*retire_prior_to),
            connection_id_length: Some(cid.len() as u8),
            connection_id: hex(cid),
            stateless_reset_token: Some(hex(reset_token)),
        },
        JournalFrame::RetireConnectionId { seq } => QuicFrame::RetireConnectionId {
            sequence_number: u32_of(*seq),
        },
        JournalFrame::PathChallenge(d) => QuicFrame::PathChallenge { data: Some(hex(d)) },
        JournalFrame::PathResponse(d) => QuicFrame::PathResponse { data: Some(hex(d)) },
        JournalFrame::ConnectionClose {
            app,
            error,
            frame_type,
            reason,
        } => QuicFrame::ConnectionClose {
            error_space: Some(match app {
                true => ErrorSpace::ApplicationError,
                false => ErrorSpace::TransportError,
            }),
            error_code: Some(*error),
            error_code_value: None,
            reason: Some(reason.clone()),
            trigger_frame_type: *frame_type,
        },
        JournalFrame::HandshakeDone => QuicFrame::HandshakeDone,
        JournalFrame::Datagram { len } => QuicFrame::Datagram {
            length: *len,
            raw: None,
        },
    }
}

/// `connection_closed` for the first CONNECTION_CLOSE frame of `p`.
fn close(p: &JournalPacket, local: Side) -> Option<EventData> {
    p.frames.iter().find_map(|f| match f {
        JournalFrame::ConnectionClose {
            app, error, reason, ..
        } => Some(EventData::ConnectionClosed(ConnectionClosed {
            owner: Some(owner(p.side, local)),
            connection_code: (!app).then_some(ConnectionErrorCode::Value(*error)),
            application_code: app.then_some(ApplicationErrorCode::Value(*error)),
            internal_code: None,
            reason: Some(reason.clone()),
            trigger: Some(match (app, error) {
                (_, 0) => ConnectionClosedTrigger::Clean,
                (true, _) => ConnectionClosedTrigger::Application,
                (false, _) => ConnectionClosedTrigger::Error,
            }),
        })),
        _ => None,
    })
}

/// `metrics_updated` per RTT sample: at an endpoint the peer's half (the
/// RTT the endpoint measures), elsewhere the sum of both halves' latest
/// samples once each has one; min, smoothed RTT and variance as RFC 9002
/// §5.2 and §5.3 keep them (ms).
fn metrics(j: &QuicJournal, push: &mut dyn FnMut(FrameRef, EventData)) {
    let mut latest = [None::<f64>; 2];
    let mut min = f64::INFINITY;
    let mut smoothed: Option<(f64, f64)> = None;
    for s in &j.samples {
        let ms = s.rtt.as_millis_f64();
        latest[s.acker.index()] = Some(ms);
        let rtt = match j.vantage {
            Some(v) if s.acker == v => continue,
            Some(_) => ms,
            None => match latest {
                [Some(c), Some(h)] => c + h,
                _ => continue,
            },
        };
        min = min.min(rtt);
        let (srtt, var) = match smoothed {
            None => (rtt, rtt / 2.0),
            Some((srtt, var)) => (
                0.875 * srtt + 0.125 * rtt,
                0.75 * var + 0.25 * (srtt - rtt).abs(),
            ),
        };
        smoothed = Some((srtt, var));
        let data = EventData::MetricsUpdated(MetricsUpdated {
            min_rtt: Some(min as f32),
            smoothed_rtt: Some(srtt as f32),
            latest_rtt: Some(rtt as f32),
            rtt_variance: Some(var as f32),
            ..MetricsUpdated::default()
        });
        push(s.ack, data);
    }
}

/// An HTTP/3 frame header as `frame_created` (the vantage point's) or
/// `frame_parsed`; a request's or response's HEADERS with the
/// pseudo-headers the report has of its stream.
fn h3_frame(q: &QuicReport, f: &H3FrameRec, local: Side) -> EventData {
    let frame = match f.ty {
        0x00 => Http3Frame::Data {
            raw: Some(RawInfo {
                length: None,
                payload_length: Some(f.len),
                data: None,
            }),
        },
        0x01 => Http3Frame::Headers {
            headers: headers(q, f),
        },
        0x04 => Http3Frame::Settings {
            settings: Vec::new(),
        },
        // the others (GOAWAY among them: its ID is not kept) by type
        ty => Http3Frame::Unknown {
            frame_type_value: ty,
            raw: None,
        },
    };
    if f.side == local {
        EventData::H3FrameCreated(H3FrameCreated {
            stream_id: f.stream,
            length: Some(f.len),
            frame,
            raw: None,
        })
    } else {
        EventData::H3FrameParsed(H3FrameParsed {
            stream_id: f.stream,
            length: Some(f.len),
            frame,
            raw: None,
        })
    }
}

fn headers(q: &QuicReport, f: &H3FrameRec) -> Vec<HttpHeader> {
    let Some(s) = q.streams.iter().find(|s| s.id == f.stream) else {
        return Vec::new();
    };
    let h = |name: &str, value: &Option<String>| {
        value.as_ref().map(|v| HttpHeader {
            name: name.to_string(),
            value: v.clone(),
        })
    };
    match f.side {
        Side::Client if s.request_frame == Some(f.at.frame) => [
            h(":method", &s.method),
            h(":authority", &s.authority),
            h(":path", &s.path),
        ]
        .into_iter()
        .flatten()
        .collect(),
        Side::Server if s.response_frame == Some(f.at.frame) => {
            h(":status", &s.status.map(|c| c.to_string()))
                .into_iter()
                .collect()
        }
        _ => Vec::new(),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
