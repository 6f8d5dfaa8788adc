//! QUIC frames (RFC 9000 §12.4, §19; DATAGRAM RFC 9221 §4) read from a
//! decrypted packet payload.
//!
//! [`frames`] walks a payload without copying or allocating: each
//! [`Frame`] borrows its byte strings (CRYPTO and STREAM data, tokens,
//! connection IDs, reasons) from the payload, and an ACK frame's ranges are
//! decoded lazily by [`AckRanges`], checked once while the frame is parsed.
//! The walk stops after the first [`FrameError`]: a frame's length is only
//! known by parsing it, so nothing after a malformed frame can be found.

use crate::wire::varint::Cursor;

/// Largest value a variable-length integer holds, and the largest stream or
/// CRYPTO offset plus length (RFC 9000 §16, §19.6, §19.8).
const VARINT_MAX: u64 = (1 << 62) - 1;

/// Frame types (RFC 9000 §19, Table 3; RFC 9221 §4).
mod ty {
    pub(super) const PADDING: u64 = 0x00;
    pub(super) const PING: u64 = 0x01;
    pub(super) const ACK: u64 = 0x02;
    pub(super) const ACK_ECN: u64 = 0x03;
    pub(super) const RESET_STREAM: u64 = 0x04;
    pub(super) const STOP_SENDING: u64 = 0x05;
    pub(super) const CRYPTO: u64 = 0x06;
    pub(super) const NEW_TOKEN: u64 = 0x07;
    /// STREAM is 0x08..=0x0f: OFF (0x04), LEN (0x02), FIN (0x01) bits.
    pub(super) const STREAM: u64 = 0x08;
    pub(super) const STREAM_LAST: u64 = 0x0f;
    pub(super) const MAX_DATA: u64 = 0x10;
    pub(super) const MAX_STREAM_DATA: u64 = 0x11;
    pub(super) const MAX_STREAMS_BIDI: u64 = 0x12;
    pub(super) const MAX_STREAMS_UNI: u64 = 0x13;
    pub(super) const DATA_BLOCKED: u64 = 0x14;
    pub(super) const STREAM_DATA_BLOCKED: u64 = 0x15;
    pub(super) const STREAMS_BLOCKED_BIDI: u64 = 0x16;
    pub(super) const STREAMS_BLOCKED_UNI: u64 = 0x17;
    pub(super) const NEW_CONNECTION_ID: u64 = 0x18;
    pub(super) const RETIRE_CONNECTION_ID: u64 = 0x19;
    pub(super) const PATH_CHALLENGE: u64 = 0x1a;
    pub(super) const PATH_RESPONSE: u64 = 0x1b;
    pub(super) const CONNECTION_CLOSE: u64 = 0x1c;
    pub(super) const CONNECTION_CLOSE_APP: u64 = 0x1d;
    pub(super) const HANDSHAKE_DONE: u64 = 0x1e;
    /// DATAGRAM without (0x30) and with (0x31) a Length field (RFC 9221 §4).
    pub(super) const DATAGRAM: u64 = 0x30;
    pub(super) const DATAGRAM_LEN: u64 = 0x31;
}

/// Why a payload's frames could not be read further.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The payload ended inside a frame (RFC 9000 §12.4: a
    /// FRAME_ENCODING_ERROR).
    #[error("{frame} frame at payload offset {at} truncated")]
    Truncated {
        /// The frame's name ([`Frame::name`]'s spelling).
        frame: &'static str,
        /// Payload offset of the frame's type byte.
        at: usize,
    },
    /// A frame type this parser does not know (RFC 9000 §12.4: a
    /// FRAME_ENCODING_ERROR unless an extension was negotiated); its length
    /// is unknown, so the walk stops.
    #[error("unknown frame type {ty:#x} at payload offset {at}")]
    UnknownType {
        /// The frame type.
        ty: u64,
        /// Payload offset of the frame's type.
        at: usize,
    },
    /// An ACK range that reaches below packet number 0 (RFC 9000 §19.3.1:
    /// a FRAME_ENCODING_ERROR).
    #[error("ACK frame at payload offset {at} acknowledges a negative packet number")]
    BadAckRange {
        /// Payload offset of the frame's type.
        at: usize,
    },
    /// A field out of its range: a stream or CRYPTO offset plus length
    /// above 2^62 − 1, a connection ID not 1 to 20 bytes long, Retire Prior
    /// To above the Sequence Number, a length that does not fit in memory.
    #[error("{frame} frame at payload offset {at}: {what}")]
    Invalid {
        /// The frame's name.
        frame: &'static str,
        /// Payload offset of the frame's type.
        at: usize,
        /// What was wrong.
        what: &'static str,
    },
}

/// One QUIC frame (RFC 9000 §19, RFC 9221 §4), borrowing from the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A run of PADDING bytes (type 0x00, RFC 9000 §19.1), coalesced.
    Padding {
        /// Bytes in the run.
        len: usize,
    },
    /// PING (RFC 9000 §19.2).
    Ping,
    /// ACK, with ECN counts for type 0x03 (RFC 9000 §19.3).
    Ack {
        /// Largest Acknowledged packet number.
        largest: u64,
        /// ACK Delay as sent: in units of 2^`ack_delay_exponent` µs (the
        /// sender's transport parameter, default 3; RFC 9000 §18.2).
        ack_delay: u64,
        /// First ACK Range: packets acknowledged below `largest`.
        first_range: u64,
        /// Every acknowledged range, first range included.
        ranges: AckRanges<'a>,
        /// ECT(0), ECT(1) and ECN-CE counts (type 0x03 only).
        ecn: Option<[u64; 3]>,
    },
    /// RESET_STREAM (RFC 9000 §19.4).
    ResetStream {
        /// Stream ID.
        id: u64,
        /// Application Protocol Error Code.
        error: u64,
        /// Final Size of the stream, bytes.
        final_size: u64,
    },
    /// STOP_SENDING (RFC 9000 §19.5).
    StopSending {
        /// Stream ID.
        id: u64,
        /// Application Protocol Error Code.
        error: u64,
    },
    /// CRYPTO (RFC 9000 §19.6): TLS handshake bytes.
    Crypto {
        /// Offset in the packet number space's crypto stream, bytes.
        offset: u64,
        /// The data.
        data: &'a [u8],
    },
    /// NEW_TOKEN (RFC 9000 §19.7).
    NewToken {
        /// The token.
        token: &'a [u8],
    },
    /// STREAM (types 0x08 to 0x0f, RFC 9000 §19.8).
    Stream {
        /// Stream ID.
        id: u64,
        /// Offset of `data` in the stream, bytes (0 when the OFF bit is
        /// clear).
        offset: u64,
        /// FIN bit: `data` ends the stream.
        fin: bool,
        /// The data (to the end of the payload when the LEN bit is clear).
        data: &'a [u8],
    },
    /// MAX_DATA (RFC 9000 §19.9): the connection's limit, bytes.
    MaxData(u64),
    /// MAX_STREAM_DATA (RFC 9000 §19.10).
    MaxStreamData {
        /// Stream ID.
        id: u64,
        /// Maximum Stream Data, bytes.
        max: u64,
    },
    /// MAX_STREAMS (RFC 9000 §19.11).
    MaxStreams {
        /// Bidirectional (type 0x12) or unidirectional (0x13) streams.
        bidi: bool,
        /// Maximum Streams: a cumulative count.
        max: u64,
    },
    /// DATA_BLOCKED (RFC 9000 §19.12): the connection limit at which the
    /// sender is blocked, bytes.
    DataBlocked(u64),
    /// STREAM_DATA_BLOCKED (RFC 9000 §19.13).
    StreamDataBlocked {
        /// Stream ID.
        id: u64,
        /// The stream's limit at which the sender is blocked, bytes.
        limit: u64,
    },
    /// STREAMS_BLOCKED (RFC 9000 §19.14).
    StreamsBlocked {
        /// Bidirectional (type 0x16) or unidirectional (0x17) streams.
        bidi: bool,
        /// The stream limit at the time the frame was sent.
        limit: u64,
    },
    /// NEW_CONNECTION_ID (RFC 9000 §19.15).
    NewConnectionId {
        /// Sequence Number.
        seq: u64,
        /// Retire Prior To.
        retire_prior_to: u64,
        /// The connection ID, 1 to 20 bytes.
        cid: &'a [u8],
        /// Stateless Reset Token, 16 bytes.
        reset_token: &'a [u8],
    },
    /// RETIRE_CONNECTION_ID (RFC 9000 §19.16).
    RetireConnectionId {
        /// Sequence Number of the connection ID retired.
        seq: u64,
    },
    /// PATH_CHALLENGE (RFC 9000 §19.17).
    PathChallenge([u8; 8]),
    /// PATH_RESPONSE (RFC 9000 §19.18).
    PathResponse([u8; 8]),
    /// CONNECTION_CLOSE (RFC 9000 §19.19).
    ConnectionClose {
        /// Type 0x1d: an application error; 0x1c: a transport error.
        app: bool,
        /// Error Code (transport error codes RFC 9000 §20.1, or the
        /// application's).
        error: u64,
        /// The frame type that caused a transport error (0: unknown);
        /// `None` for an application close.
        frame_type: Option<u64>,
        /// Reason Phrase (UTF-8 by the RFC, unchecked here).
        reason: &'a [u8],
    },
    /// HANDSHAKE_DONE (RFC 9000 §19.20).
    HandshakeDone,
    /// DATAGRAM (RFC 9221 §4), to the end of the payload for type 0x30.
    Datagram {
        /// The datagram.
        data: &'a [u8],
    },
}

impl Frame<'_> {
    /// Whether the frame elicits an acknowledgement: all but ACK, PADDING
    /// and CONNECTION_CLOSE (RFC 9002 §2).
    pub fn is_ack_eliciting(&self) -> bool {
        !matches!(
            self,
            Frame::Ack { .. } | Frame::Padding { .. } | Frame::ConnectionClose { .. }
        )
    }

    /// The frame type's name as Wireshark spells it (`"ACK"`, `"CRYPTO"`,
    /// `"STREAM"`, `"MAX_STREAMS (BIDI)"`, `"CONNECTION_CLOSE
    /// (Transport)"`, …).
    pub fn name(&self) -> &'static str {
        match self {
            Frame::Padding { .. } => "PADDING",
            Frame::Ping => "PING",
            Frame::Ack { ecn: None, .. } => "ACK",
            Frame::Ack { ecn: Some(_), .. } => "ACK_ECN",
            Frame::ResetStream { .. } => "RESET_STREAM",
            Frame::StopSending { .. } => "STOP_SENDING",
            Frame::Crypto { .. } => "CRYPTO",
            Frame::NewToken { .. } => "NEW_TOKEN",
            Frame::Stream { .. } => "STREAM",
            Frame::MaxData(_) => "MAX_DATA",
            Frame::MaxStreamData { .. } => "MAX_STREAM_DATA",
            Frame::MaxStreams { bidi: true, .. } => "MAX_STREAMS (BIDI)",
            Frame::MaxStreams { bidi: false, .. } => "MAX_STREAMS (UNI)",
            Frame::DataBlocked(_) => "DATA_BLOCKED",
            Frame::StreamDataBlocked { .. } => "STREAM_DATA_BLOCKED",
            Frame::StreamsBlocked { bidi: true, .. } => "STREAMS_BLOCKED (BIDI)",
            Frame::StreamsBlocked { bidi: false, .. } => "STREAMS_BLOCKED (UNI)",
            Frame::NewConnectionId { .. } => "NEW_CONNECTION_ID",
            Frame::RetireConnectionId { .. } => "RETIRE_CONNECTION_ID",
            Frame::PathChallenge(_) => "PATH_CHALLENGE",
            Frame::PathResponse(_) => "PATH_RESPONSE",
            Frame::ConnectionClose { app: false, .. } => "CONNECTION_CLOSE (Transport)",
            Frame::ConnectionClose { app: true, .. } => "CONNECTION_CLOSE (Application)",
            Frame::HandshakeDone => "HANDSHAKE_DONE",
            Frame::Datagram { .. } => "DATAGRAM",
        }
    }
}

/// The packet number ranges an ACK frame acknowledges (RFC 9000 §19.3.1):
/// inclusive `(smallest, largest)` pairs, largest first, the First ACK
/// Range included. The arithmetic was checked when the frame was parsed,
/// so iterating cannot fail.
#[derive(Debug, Clone, Copy)]
pub struct AckRanges<'a> {
    /// The range to yield next (`None`: done).
    next: Option<(u64, u64)>,
    /// The (Gap, ACK Range Length) pairs still to decode.
    rest: &'a [u8],
    /// How many of those pairs are left.
    left: u64,
}

impl AckRanges<'_> {
    /// The ranges following `(smallest, largest)` given the next Gap and
    /// ACK Range Length (RFC 9000 §19.3.1): `None` below packet number 0.
    fn step(smallest: u64, gap: u64, len: u64) -> Option<(u64, u64)> {
        let largest = smallest.checked_sub(gap)?.checked_sub(2)?;
        Some((largest.checked_sub(len)?, largest))
    }
}

impl Iterator for AckRanges<'_> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        let cur = self.next?;
        self.next = None;
        if self.left > 0 {
            let mut c = Cursor::new(self.rest);
            if let (Some(gap), Some(len)) = (c.varint(), c.varint()) {
                self.next = AckRanges::step(cur.0, gap, len);
                self.rest = c.rest();
                self.left -= 1;
            }
        }
        Some(cur)
    }
}

impl PartialEq for AckRanges<'_> {
    /// Equal when they yield the same ranges, however the varints were
    /// encoded.
    fn eq(&self, other: &Self) -> bool {
        (*self).eq(*other)
    }
}

impl Eq for AckRanges<'_> {}

/// The frames of a decrypted packet payload, in order; see [`frames`].
#[derive(Debug, Clone)]
pub struct Frames<'a> {
    cur: Cursor<'a>,
    done: bool,
}

/// Walks the frames of a decrypted packet payload (RFC 9000 §12.4). The
/// iterator yields `Err` once, for the first frame that does not parse,
/// then ends; it allocates nothing.
pub fn frames(payload: &[u8]) -> Frames<'_> {
    Frames {
        cur: Cursor::new(payload),
        done: false,
    }
}

/// Whether a payload holds an ack-eliciting frame (RFC 9002 §2), looking
/// only at frames before the first malformed one.
pub fn is_ack_eliciting_payload(payload: &[u8]) -> bool {
    frames(payload)
        .map_while(Result::ok)
        .any(|f| f.is_ack_eliciting())
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<Frame<'a>, FrameError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.cur.is_empty() {
            return None;
        }
        let r = parse(&mut self.cur);
        if r.is_err() {
            self.done = true;
        }
        Some(r)
    }
}

impl std::iter::FusedIterator for Frames<'_> {}

/// The name of frame type `ty`, for errors.
fn type_name(ty: u64) -> &'static str {
    match ty {
        ty::PADDING => "PADDING",
        ty::PING => "PING",
        ty::ACK => "ACK",
        ty::ACK_ECN => "ACK_ECN",
        ty::RESET_STREAM => "RESET_STREAM",
        ty::STOP_SENDING => "STOP_SENDING",
        ty::CRYPTO => "CRYPTO",
        ty::NEW_TOKEN => "NEW_TOKEN",
        ty::STREAM..=ty::STREAM_LAST => "STREAM",
        ty::MAX_DATA => "MAX_DATA",
        ty::MAX_STREAM_DATA => "MAX_STREAM_DATA",
        ty::MAX_STREAMS_BIDI => "MAX_STREAMS (BIDI)",
        ty::MAX_STREAMS_UNI => "MAX_STREAMS (UNI)",
        ty::DATA_BLOCKED => "DATA_BLOCKED",
        ty::STREAM_DATA_BLOCKED => "STREAM_DATA_BLOCKED",
        ty::STREAMS_BLOCKED_BIDI => "STREAMS_BLOCKED (BIDI)",
        ty::STREAMS_BLOCKED_UNI => "STREAMS_BLOCKED (UNI)",
        ty::NEW_CONNECTION_ID => "NEW_CONNECTION_ID",
        ty::RETIRE_CONNECTION_ID => "RETIRE_CONNECTION_ID",
        ty::PATH_CHALLENGE => "PATH_CHALLENGE",
        ty::PATH_RESPONSE => "PATH_RESPONSE",
        ty::CONNECTION_CLOSE => "CONNECTION_CLOSE (Transport)",
        ty::CONNECTION_CLOSE_APP => "CONNECTION_CLOSE (Application)",
        ty::HANDSHAKE_DONE => "HANDSHAKE_DONE",
        ty::DATAGRAM | ty::DATAGRAM_LEN => "DATAGRAM",
        _ => "unknown",
    }
}

/// Parses one frame at the cursor; on error the cursor is left anywhere.
fn parse<'a>(c: &mut Cursor<'a>) -> Result<Frame<'a>, FrameError> {
    let at = c.pos();
    let Some(t) = c.varint() else {
        return Err(FrameError::Truncated {
            frame: "unknown",
            at,
        });
    };
    let frame = type_name(t);
    let trunc = FrameError::Truncated { frame, at };
    let invalid = |what| FrameError::Invalid { frame, at, what };
    let v = |c: &mut Cursor<'a>| c.varint().ok_or(trunc);
    let f = match t {
        ty::PADDING => {
            let run = c.rest().iter().take_while(|b| **b == 0).count();
            c.bytes(run).ok_or(trunc)?;
            Frame::Padding { len: run + 1 }
        }
        ty::PING => Frame::Ping,
        ty::ACK | ty::ACK_ECN => {
            let largest = v(c)?;
            let ack_delay = v(c)?;
            let count = v(c)?;
            let first_range = v(c)?;
            let smallest = largest
                .checked_sub(first_range)
                .ok_or(FrameError::BadAckRange { at })?;
            // check every range now, so that iterating cannot fail
            let start = c.rest();
            let mut low = smallest;
            for _ in 0..count {
                let (gap, len) = (v(c)?, v(c)?);
                (low, _) = AckRanges::step(low, gap, len).ok_or(FrameError::BadAckRange { at })?;
            }
            let used = start.len() - c.rest().len();
            let ecn = if t == ty::ACK_ECN {
                Some([v(c)?, v(c)?, v(c)?])
            } else {
                None
            };
            Frame::Ack {
                largest,
                ack_delay,
                first_range,
                ranges: AckRanges {
                    next: Some((smallest, largest)),
                    rest: &start[..used],
                    left: count,
                },
                ecn,
            }
        }
        ty::RESET_STREAM => Frame::ResetStream {
            id: v(c)?,
            error: v(c)?,
            final_size: v(c)?,
        },
        ty::STOP_SENDING => Frame::StopSending {
            id: v(c)?,
            error: v(c)?,
        },
        ty::CRYPTO => {
            let offset = v(c)?;
            let data = sized(c, frame, at)?;
            check_end(offset, data.len()).ok_or(invalid("offset + length above 2^62 - 1"))?;
            Frame::Crypto { offset, data }
        }
        ty::NEW_TOKEN => Frame::NewToken {
            token: sized(c, frame, at)?,
        },
        ty::STREAM..=ty::STREAM_LAST => {
            let id = v(c)?;
            let offset = if t & 0x04 != 0 { v(c)? } else { 0 };
            let data = if t & 0x02 != 0 {
                sized(c, frame, at)?
            } else {
                let rest = c.rest();
                c.bytes(rest.len()).ok_or(trunc)?
            };
            check_end(offset, data.len()).ok_or(invalid("offset + length above 2^62 - 1"))?;
            Frame::Stream {
                id,
                offset,
                fin: t & 0x01 != 0,
                data,
            }
        }
        ty::MAX_DATA => Frame::MaxData(v(c)?),
        ty::MAX_STREAM_DATA => Frame::MaxStreamData {
            id: v(c)?,
            max: v(c)?,
        },
        ty::MAX_STREAMS_BIDI | ty::MAX_STREAMS_UNI => Frame::MaxStreams {
            bidi: t == ty::MAX_STREAMS_BIDI,
            max: v(c)?,
        },
        ty::DATA_BLOCKED => Frame::DataBlocked(v(c)?),
        ty::STREAM_DATA_BLOCKED => Frame::StreamDataBlocked {
            id: v(c)?,
            limit: v(c)?,
        },
        ty::STREAMS_BLOCKED_BIDI | ty::STREAMS_BLOCKED_UNI => Frame::StreamsBlocked {
            bidi: t == ty::STREAMS_BLOCKED_BIDI,
            limit: v(c)?,
        },
        ty::NEW_CONNECTION_ID => {
            let seq = v(c)?;
            let retire_prior_to = v(c)?;
            let len = c.u8().ok_or(trunc)?;
            let cid = c.bytes(usize::from(len)).ok_or(trunc)?;
            let reset_token = c.bytes(16).ok_or(trunc)?;
            if !(1..=20).contains(&len) {
                return Err(invalid("connection ID length not 1 to 20"));
            }
            if retire_prior_to > seq {
                return Err(invalid("Retire Prior To above Sequence Number"));
            }
            Frame::NewConnectionId {
                seq,
                retire_prior_to,
                cid,
                reset_token,
            }
        }
        ty::RETIRE_CONNECTION_ID => Frame::RetireConnectionId { seq: v(c)? },
        ty::PATH_CHALLENGE | ty::PATH_RESPONSE => {
            let mut data = [0u8; 8];
            data.copy_from_slice(c.bytes(8).ok_or(trunc)?);
            if t == ty::PATH_CHALLENGE {
                Frame::PathChallenge(data)
            } else {
                Frame::PathResponse(data)
            }
        }
        ty::CONNECTION_CLOSE | ty::CONNECTION_CLOSE_APP => {
            let app = t == ty::CONNECTION_CLOSE_APP;
            let error = v(c)?;
            let frame_type = if app { None } else { Some(v(c)?) };
            Frame::ConnectionClose {
                app,
                error,
                frame_type,
                reason: sized(c, frame, at)?,
            }
        }
        ty::HANDSHAKE_DONE => Frame::HandshakeDone,
        ty::DATAGRAM => {
            let rest = c.rest();
            Frame::Datagram {
                data: c.bytes(rest.len()).ok_or(trunc)?,
            }
        }
        ty::DATAGRAM_LEN => Frame::Datagram {
            data: sized(c, frame, at)?,
        },
        _ => return Err(FrameError::UnknownType { ty: t, at }),
    };
    Ok(f)
}

/// A varint-length-prefixed byte string.
fn sized<'a>(c: &mut Cursor<'a>, frame: &'static str, at: usize) -> Result<&'a [u8], FrameError> {
    let len = c.varint().ok_or(FrameError::Truncated { frame, at })?;
    // a length beyond the payload is a truncation, whatever its size
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    c.bytes(len).ok_or(FrameError::Truncated { frame, at })
}

/// `Some` when `offset + len` stays within 2^62 − 1 (RFC 9000 §19.6, §19.8).
fn check_end(offset: u64, len: usize) -> Option<()> {
    let end = offset.checked_add(u64::try_from(len).ok()?)?;
    (end <= VARINT_MAX).then_some(())
}

#[cfg(test)]
mod tests;
