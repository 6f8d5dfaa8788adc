//! Every packet of a QUIC connection with its header fields and frames,
//! the RTT samples and the losses as the engine judged them, kept when
//! asked for (`crate::quic::table::QuicTable::with_journal`) for writers
//! that replay a connection packet by packet (`rttlens_report::qlog`).
//!
//! The analysis never reads a journal. Unlike the packet records the
//! analysis keeps (the first few thousand, [`super::conn::PacketRec`]), it
//! has every packet, and owns what it keeps of each frame (numbers and
//! lengths, no payload bytes): about 100 bytes per packet and 40 per
//! frame, kept only while a writer wants them.

use super::frame::Frame;
use super::packet::{Header, PacketType};
use crate::base::side::{FrameRef, Side};
use crate::base::time::Duration;
use crate::proto::h3::H3FrameRec;

/// One frame of a decrypted packet (RFC 9000 §19, RFC 9221 §4), as the
/// journal keeps it: [`Frame`]'s fields, with data replaced by its length.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)] // the fields are `Frame`'s, documented there
pub enum JournalFrame {
    /// A run of PADDING bytes, coalesced.
    Padding { len: u64 },
    /// PING.
    Ping,
    /// ACK: the delay decoded with the sender's `ack_delay_exponent` (µs),
    /// the ranges acknowledged (inclusive, largest first) and ECN counts.
    Ack {
        ack_delay_us: u64,
        ranges: Vec<(u64, u64)>,
        ecn: Option<[u64; 3]>,
    },
    /// RESET_STREAM.
    ResetStream {
        id: u64,
        error: u64,
        final_size: u64,
    },
    /// STOP_SENDING.
    StopSending { id: u64, error: u64 },
    /// CRYPTO: offset and length of its data.
    Crypto { offset: u64, len: u64 },
    /// NEW_TOKEN: the token's length.
    NewToken { len: u64 },
    /// STREAM: offset, length of its data and FIN.
    Stream {
        id: u64,
        offset: u64,
        len: u64,
        fin: bool,
    },
    /// MAX_DATA.
    MaxData(u64),
    /// MAX_STREAM_DATA.
    MaxStreamData { id: u64, max: u64 },
    /// MAX_STREAMS.
    MaxStreams { bidi: bool, max: u64 },
    /// DATA_BLOCKED.
    DataBlocked(u64),
    /// STREAM_DATA_BLOCKED.
    StreamDataBlocked { id: u64, limit: u64 },
    /// STREAMS_BLOCKED.
    StreamsBlocked { bidi: bool, limit: u64 },
    /// NEW_CONNECTION_ID.
    NewConnectionId {
        seq: u64,
        retire_prior_to: u64,
        cid: Vec<u8>,
        reset_token: Vec<u8>,
    },
    /// RETIRE_CONNECTION_ID.
    RetireConnectionId { seq: u64 },
    /// PATH_CHALLENGE.
    PathChallenge([u8; 8]),
    /// PATH_RESPONSE.
    PathResponse([u8; 8]),
    /// CONNECTION_CLOSE (reason as lossy UTF-8).
    ConnectionClose {
        app: bool,
        error: u64,
        frame_type: Option<u64>,
        reason: String,
    },
    /// HANDSHAKE_DONE.
    HandshakeDone,
    /// DATAGRAM: its length.
    Datagram { len: u64 },
}

impl JournalFrame {
    /// The frame `f`, an ACK's delay decoded with `ack_delay_exponent`
    /// (RFC 9000 §19.3: the sender's transport parameter, 3 when unknown).
    pub(crate) fn of(f: &Frame<'_>, ack_delay_exponent: u64) -> JournalFrame {
        let n = |d: &[u8]| d.len() as u64;
        match *f {
            Frame::Padding { len } => JournalFrame::Padding { len: len as u64 },
            Frame::Ping => JournalFrame::Ping,
            Frame::Ack {
                ack_delay,
                ranges,
                ecn,
                ..
            } => JournalFrame::Ack {
                ack_delay_us: ack_delay.saturating_mul(1 << ack_delay_exponent.min(20)),
                ranges: ranges.collect(),
                ecn,
            },
            Frame::ResetStream {
                id,
                error,
                final_size,
            } => JournalFrame::ResetStream {
                id,
                error,
                final_size,
            },
            Frame::StopSending { id, error } => JournalFrame::StopSending { id, error },
            Frame::Crypto { offset, data } => JournalFrame::Crypto {
                offset,
                len: n(data),
            },
            Frame::NewToken { token } => JournalFrame::NewToken { len: n(token) },
            Frame::Stream {
                id,
                offset,
                fin,
                data,
            } => JournalFrame::Stream {
                id,
                offset,
                len: n(data),
                fin,
            },
            Frame::MaxData(v) => JournalFrame::MaxData(v),
            Frame::MaxStreamData { id, max } => JournalFrame::MaxStreamData { id, max },
            Frame::MaxStreams { bidi, max } => JournalFrame::MaxStreams { bidi, max },
            Frame::DataBlocked(v) => JournalFrame::DataBlocked(v),
            Frame::StreamDataBlocked { id, limit } => JournalFrame::StreamDataBlocked { id, limit },
            Frame::StreamsBlocked { bidi, limit } => JournalFrame::StreamsBlocked { bidi, limit },
            Frame::NewConnectionId {
                seq,
                retire_prior_to,
                cid,
                reset_token,
            } => JournalFrame::NewConnectionId {
                seq,
                retire_prior_to,
                cid: cid.to_vec(),
                reset_token: reset_token.to_vec(),
            },
            Frame::RetireConnectionId { seq } => JournalFrame::RetireConnectionId { seq },
            Frame::PathChallenge(d) => JournalFrame::PathChallenge(d),
            Frame::PathResponse(d) => JournalFrame::PathResponse(d),
            Frame::ConnectionClose {
                app,
                error,
                frame_type,
                reason,
            } => JournalFrame::ConnectionClose {
                app,
                error,
                frame_type,
                reason: String::from_utf8_lossy(reason).into_owned(),
            },
            Frame::HandshakeDone => JournalFrame::HandshakeDone,
            Frame::Datagram { data } => JournalFrame::Datagram { len: n(data) },
        }
    }
}

/// One packet as it passed the capture point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalPacket {
    /// The frame that carried it.
    pub at: FrameRef,
    /// Its sender.
    pub side: Side,
    /// Its type.
    pub ty: PacketType,
    /// Version field (long headers; 0 for a short header and Version
    /// Negotiation).
    pub version: u32,
    /// Destination Connection ID.
    pub dcid: Vec<u8>,
    /// Source Connection ID (long headers).
    pub scid: Vec<u8>,
    /// Initial: its Token's length; Retry: the Retry Token's (bytes).
    pub token_len: u32,
    /// Packet number, when its header protection was removed.
    pub pn: Option<u64>,
    /// Bytes of the packet (header, payload and tag).
    pub len: u32,
    /// Bytes of its header (up to and with the packet number, when
    /// decrypted; else up to the packet number field).
    pub header_len: u32,
    /// UDP payload bytes of the datagram, on the datagram's first packet
    /// (0 on packets coalesced after it).
    pub datagram: u32,
    /// Version Negotiation: the versions offered.
    pub versions: Vec<u32>,
    /// Its frames, in order (empty when it was not decrypted).
    pub frames: Vec<JournalFrame>,
}

/// An RTT sample from an ACK frame (RFC 9002 §5), as
/// [`super::conn::AckSample`] without the cap on their number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalSample {
    /// The side that sent the ACK.
    pub acker: Side,
    /// The ACK.
    pub ack: FrameRef,
    /// Packet number space (0 Initial, 1 Handshake, 2 application).
    pub space: u8,
    /// Time from packet to ACK less the reported ack delay.
    pub rtt: Duration,
    /// The ack delay the ACK reported (application space; 0 elsewhere).
    pub ack_delay: Duration,
}

/// A packet declared lost by the peer's ACKs (RFC 9002 §6.1.1: three
/// later packets acknowledged and not it), or a packet number its sender
/// skipped at the capture point (lost before it, not captured, or skipped
/// on purpose, RFC 9000 §21.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalLoss {
    /// Its sender.
    pub side: Side,
    /// Packet number space (0 Initial, 1 Handshake, 2 application).
    pub space: u8,
    /// Packet number.
    pub pn: u64,
    /// The packet, when the capture holds it (a declared loss); for a
    /// gap, the first packet after it.
    pub at: FrameRef,
    /// The ACK that declared it lost (`None` for a gap).
    pub declared_by: Option<FrameRef>,
}

/// A connection's packets, RTT samples and losses, in capture order.
#[derive(Debug, Clone, Default)]
pub struct QuicJournal {
    /// Every packet.
    pub packets: Vec<JournalPacket>,
    /// Every RTT sample.
    pub samples: Vec<JournalSample>,
    /// Every loss: declared by the peer's ACKs (`declared_by`), or a gap in
    /// a sender's packet numbers.
    pub losses: Vec<JournalLoss>,
    /// Every HTTP/3 frame header read on a request or control stream
    /// (decrypted 1-RTT packets of an `h3` connection).
    pub h3: Vec<H3FrameRec>,
    /// The host the capture point is next to, told by the halves of the
    /// RTT as a TCP connection's vantage point is (docs/design.md §4
    /// "Vantage and RTT"); `None`: on the path between them, or not known
    /// (filled when the analysis hands the journal on).
    pub vantage: Option<Side>,
}

impl QuicJournal {
    /// A packet of `side` begins: its header read, not yet opened.
    pub(crate) fn packet(&mut self, side: Side, at: FrameRef, h: &Header<'_>, datagram: u32) {
        self.packets.push(JournalPacket {
            at,
            side,
            ty: h.ty,
            version: h.version,
            dcid: h.dcid.to_vec(),
            scid: h.scid.to_vec(),
            token_len: h.token.len() as u32,
            pn: None,
            len: h.packet.len() as u32,
            header_len: h.pn_offset as u32,
            datagram,
            versions: h
                .versions
                .chunks_exact(4)
                .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            frames: Vec::new(),
        });
    }

    /// The packet begun last was opened: its number and packet number
    /// length.
    pub(crate) fn opened(&mut self, pn: u64, pn_len: usize) {
        if let Some(p) = self.packets.last_mut() {
            p.pn = Some(pn);
            p.header_len += pn_len as u32;
        }
    }

    /// A frame of the packet begun last.
    pub(crate) fn frame(&mut self, f: JournalFrame) {
        if let Some(p) = self.packets.last_mut() {
            p.frames.push(f);
        }
    }
}
