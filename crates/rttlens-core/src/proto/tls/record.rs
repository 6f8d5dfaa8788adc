//! The per-direction walker: records by their 5-byte headers (through
//! [`crate::proto::stream::Framer`]), alerts by their two bytes, an SSL
//! 2.0-format ClientHello as the client's first record; the plaintext
//! handshake messages inside are walked by [`super::messages`].

use super::decrypt::Sealed;
use super::hello::parse_sslv2_client_hello;
use super::messages::{HandshakeLayer, Out};
use super::{
    ContentType, HandshakeMessage, HandshakeType, TlsAlert, TlsRecord, ALERT_DETAIL_CAP,
    MAX_RECORD_LEN, MESSAGE_DETAIL_CAP, RECORD_DETAIL_CAP,
};
use crate::base::list::push_capped;
use crate::base::side::FrameRef;
use crate::proto::stream::{Framer, InOrder};
use crate::proto::NoteKind;

/// Room for this many records in a direction's first allocation: a TLS
/// 1.3 client's hello, ChangeCipherSpec, Finished and request.
const FIRST_RECORDS: usize = 4;

/// A client's first 5 bytes as an SSL 2.0 record holding a ClientHello
/// that offers SSL 3.0 or TLS 1.x (RFC 5246 Appendix E.2, RFC 6101
/// Appendix E): a 2-byte header with the high bit set (no padding), the
/// message type CLIENT-HELLO (1), the version 3.x. Its version and record
/// length (what follows the 2-byte header), or `None`.
fn sslv2_client_hello(h: [u8; 5]) -> Option<(u16, u16)> {
    let length = u16::from_be_bytes([h[0] & 0x7f, h[1]]);
    // type, version and the three 2-byte lengths at least
    (h[0] & 0x80 != 0 && h[2] == 1 && h[3] == 3 && h[4] <= 3 && length >= 9)
        .then(|| (u16::from_be_bytes([h[3], h[4]]), length))
}

/// What happens to the payload of the record being walked.
#[derive(Debug, Clone)]
enum Payload {
    /// Skipped (encrypted, or nothing to read).
    Opaque,
    /// Plaintext handshake bytes, fed to the handshake layer.
    Handshake,
    /// A handshake record after this direction's ChangeCipherSpec: encrypted
    /// (TLS 1.2 Finished) unless its first 4 bytes read as a whole plaintext
    /// hello (TLS 1.3 compatibility CCS around a HelloRetryRequest, RFC 8446
    /// §D.4). Holds those bytes and the mark of the first one.
    Pending {
        buf: [u8; 4],
        n: usize,
        first: FrameRef,
    },
    /// A 2-byte alert (level, description).
    Alert { buf: [u8; 2], n: usize },
    /// The client's first record in SSL 2.0's format, holding a
    /// ClientHello that offers SSL 3.0 or TLS (RFC 5246 Appendix E.2):
    /// its version and the body after it, read at the record's end.
    Sslv2Hello { version: u16, body: Vec<u8> },
}

/// The record being walked (its header was read).
#[derive(Debug, Clone)]
struct Current {
    index: u64,
    offset: u64,
    content_type: ContentType,
    length: u16,
    first: FrameRef,
    missing: u64,
    payload: Payload,
    /// The header as on the wire and the payload so far, when the record
    /// may go to the decryptor.
    sealed: Option<([u8; 5], Vec<u8>)>,
}

impl Current {
    /// Stream offset just past the record: an SSL 2.0 hello's header is 2
    /// bytes, a TLS record's 5.
    fn end_offset(&self) -> u64 {
        let header = match self.payload {
            Payload::Sslv2Hello { .. } => 2,
            _ => 5,
        };
        self.offset + header + u64::from(self.length)
    }
}

/// Parser state of one direction.
#[derive(Debug, Default)]
pub(super) struct DirParser {
    stream: InOrder,
    /// Stream offset of the next byte to walk.
    pos: u64,
    framer: Framer<5>,
    /// Offset and mark of the first byte of the header being read.
    header_start: Option<(u64, FrameRef)>,
    current: Option<Current>,
    records: u64,
    /// The handshake layer while a message is in progress (or framing was
    /// lost); none between messages, where a fresh one is the same: most
    /// of a TLS connection's life is spent there, and inline it took 144 B
    /// a direction.
    handshake: Option<Box<HandshakeLayer>>,
    ccs_seen: bool,
    stopped: bool,
    looks_tls: Option<bool>,
    /// Keep the records this walker cannot read, whole, for the decryptor.
    pub(super) collect: bool,
    /// Records kept for the decryptor, drained by the tracker.
    pub(super) sealed: Vec<Sealed>,
}

impl DirParser {
    /// Does this direction's first record look like TLS (see
    /// [`super::TlsTracker::is_tls`])?
    pub(super) fn looks_tls(&self) -> Option<bool> {
        self.looks_tls
    }

    /// Parsing of this direction has stopped (lost sync or malformed).
    pub(super) fn stopped(&self) -> bool {
        self.stopped
    }

    pub(super) fn push(&mut self, offset: u64, data: &[u8], at: FrameRef, out: &mut Out<'_>) {
        let Some((hole, fresh)) = self.stream.admit(offset, data) else {
            return;
        };
        if hole > 0 {
            self.missing(hole, out);
        }
        out.dir().bytes_seen += fresh.len() as u64;
        if !self.stopped {
            self.walk(fresh, at, out);
        }
    }

    pub(super) fn gap(&mut self, offset: u64, len: u64, out: &mut Out<'_>) {
        let missing = self.stream.admit_gap(offset, len);
        if missing > 0 {
            self.missing(missing, out);
        }
    }

    fn walk(&mut self, mut data: &[u8], at: FrameRef, out: &mut Out<'_>) {
        while !data.is_empty() && !self.stopped {
            if !self.framer.in_body() {
                if self.framer.at_boundary() {
                    self.header_start = Some((self.pos, at));
                }
                let before = data.len();
                let header = self.framer.take_header(&mut data);
                self.pos += (before - data.len()) as u64;
                if let Some(h) = header {
                    self.on_header(h, at, out);
                }
            } else {
                let start = self.pos;
                let body = self.framer.take_body(&mut data);
                self.pos += body.len() as u64;
                self.on_payload(body, start, at, out);
                if self.framer.body_left() == 0 {
                    self.end_record(Some(at), out);
                }
            }
        }
    }

    fn stop(&mut self) {
        self.stopped = true;
        self.current = None;
    }

    fn on_header(&mut self, h: [u8; 5], at: FrameRef, out: &mut Out<'_>) {
        if self.records == 0 && out.is_client() {
            if let Some((version, length)) = sslv2_client_hello(h) {
                self.on_sslv2_hello(version, length, at, out);
                return;
            }
        }
        let (offset, first) = self.header_start.take().unwrap_or((self.pos - 5, at));
        let content_type = ContentType(h[0]);
        let length = u16::from_be_bytes([h[3], h[4]]);
        let problem = if !(20..=24).contains(&h[0]) {
            Some("unknown record content type")
        } else if h[1] != 3 {
            Some("record version is not 3.x")
        } else if length > MAX_RECORD_LEN {
            Some("record length above 2^14 + 2048")
        } else {
            None
        };
        if self.records == 0 {
            // The first record decides whether this is TLS at all: a client
            // starts with a handshake record (its ClientHello, checked on the
            // first payload byte), a server with a handshake or an alert.
            let fits = if out.is_client() {
                content_type == ContentType::HANDSHAKE && length > 0
            } else {
                content_type == ContentType::HANDSHAKE || content_type == ContentType::ALERT
            };
            if problem.is_some() || !fits {
                self.looks_tls = Some(false);
            } else if !out.is_client() {
                self.looks_tls = Some(true);
            }
        }
        if self.records == 1 && self.looks_tls.is_none() {
            // The first record's content was lost to a gap, but two valid
            // record headers in a row are TLS enough.
            self.looks_tls = Some(problem.is_none());
        }
        if let Some(what) = problem {
            out.note(offset, NoteKind::Malformed { what });
            out.dir().malformed_at = Some(offset);
            self.stop();
            return;
        }
        if self.looks_tls == Some(false) {
            self.stop();
            return;
        }

        let index = self.records;
        self.records += 1;
        let interleaved = content_type != ContentType::HANDSHAKE || self.ccs_seen;
        if interleaved {
            // between messages (no layer) there is nothing to interrupt
            if let Some(h) = self.handshake.as_mut() {
                h.interrupt(offset, out);
            }
        }
        let payload = match content_type {
            ContentType::HANDSHAKE if self.ccs_seen => Payload::Pending {
                buf: [0; 4],
                n: 0,
                first: at, // replaced by the first payload byte's mark
            },
            ContentType::HANDSHAKE => Payload::Handshake,
            ContentType::ALERT if length == 2 => Payload::Alert { buf: [0; 2], n: 0 },
            _ => Payload::Opaque,
        };
        let opaque = matches!(payload, Payload::Opaque);
        let dir = out.dir();
        let totals = &mut dir.totals;
        totals.all.add(length);
        match content_type {
            ContentType::CHANGE_CIPHER_SPEC => totals.change_cipher_spec.add(length),
            ContentType::ALERT => totals.alert.add(length),
            ContentType::HANDSHAKE => totals.handshake.add(length),
            ContentType::APPLICATION_DATA => totals.application_data.add(length),
            _ => totals.heartbeat.add(length),
        }
        let record = TlsRecord {
            offset,
            first,
            complete: None,
            // a record past the detailed ones is not kept
            position: u8::try_from(index).unwrap_or(u8::MAX),
            length,
            header_len: 5,
            missing: 0,
            content_type,
            opaque,
        };
        push_capped(&mut dir.records, record, FIRST_RECORDS, RECORD_DETAIL_CAP);
        if content_type == ContentType::CHANGE_CIPHER_SPEC {
            self.ccs_seen = true;
            dir.change_cipher_spec.get_or_insert(index);
        }
        // what may be encrypted: application data (and heartbeat) always,
        // anything but a ChangeCipherSpec after one
        let sealed = (self.collect
            && content_type != ContentType::CHANGE_CIPHER_SPEC
            && (self.ccs_seen || content_type.0 >= 23))
            .then(|| (h, Vec::with_capacity(usize::from(length))));
        self.current = Some(Current {
            index,
            offset,
            content_type,
            length,
            first,
            missing: 0,
            payload,
            sealed,
        });
        self.framer.begin_body(u64::from(length));
        if length == 0 {
            self.end_record(Some(at), out);
        }
    }

    /// The client's first record is an SSL 2.0-format ClientHello: its
    /// 2-byte header and the message type and version after it were
    /// read as the 5 bytes of a TLS record header.
    fn on_sslv2_hello(&mut self, version: u16, length: u16, at: FrameRef, out: &mut Out<'_>) {
        let (offset, first) = self.header_start.take().unwrap_or((self.pos - 5, at));
        // TLS once the hello parses (five bytes alone can be anything)
        self.records = 1;
        let dir = out.dir();
        dir.totals.all.add(length);
        dir.totals.handshake.add(length);
        let record = TlsRecord {
            offset,
            first,
            complete: None,
            position: 0,
            length,
            header_len: 2,
            missing: 0,
            content_type: ContentType::HANDSHAKE,
            opaque: false,
        };
        push_capped(&mut dir.records, record, FIRST_RECORDS, RECORD_DETAIL_CAP);
        // the message type and version were in the 5 bytes read
        let body = u64::from(length) - 3;
        self.current = Some(Current {
            index: 0,
            offset,
            content_type: ContentType::HANDSHAKE,
            length,
            first,
            missing: 0,
            payload: Payload::Sslv2Hello {
                version,
                body: Vec::new(),
            },
            sealed: None,
        });
        self.framer.begin_body(body);
    }

    fn on_payload(&mut self, body: &[u8], start: u64, at: FrameRef, out: &mut Out<'_>) {
        let body_done = self.framer.body_left() == 0;
        let Some(cur) = self.current.as_mut() else {
            return;
        };
        if let Some((_, buf)) = cur.sealed.as_mut() {
            buf.extend_from_slice(body);
        }
        let sslv2 = matches!(cur.payload, Payload::Sslv2Hello { .. });
        if cur.index == 0 && out.is_client() && self.looks_tls.is_none() && !sslv2 {
            // Handshake type of the first message: ClientHello (1).
            let yes = body.first() == Some(&1);
            self.looks_tls = Some(yes);
            if !yes {
                self.stop();
                return;
            }
        }
        match &mut cur.payload {
            Payload::Opaque => {}
            // at most 2^15 − 1 bytes by its header
            Payload::Sslv2Hello { body: buf, .. } => buf.extend_from_slice(body),
            Payload::Handshake => {
                let index = cur.index;
                HandshakeLayer::with(&mut self.handshake, |h| {
                    h.feed(body, start, at, index, out);
                });
            }
            Payload::Alert { buf, n } => {
                let k = (buf.len() - *n).min(body.len());
                buf[*n..*n + k].copy_from_slice(&body[..k]);
                *n += k;
            }
            Payload::Pending { buf, n, first } => {
                if *n == 0 {
                    *first = at;
                }
                let k = (buf.len() - *n).min(body.len());
                buf[*n..*n + k].copy_from_slice(&body[..k]);
                *n += k;
                if *n < buf.len() && !body_done {
                    return;
                }
                // RFC 8446 §D.4: in TLS 1.3 a compatibility CCS may come
                // before a second ClientHello (client) or right after a
                // HelloRetryRequest, before the ServerHello (server); those
                // hellos stay plaintext. Accept the record as plaintext only if
                // it starts this side's hello and the hello fills it exactly
                // (or overflows a full-size record); random ciphertext passes
                // this with probability ~2^-16.
                let (buf, n, first) = (*buf, *n, *first);
                let hello = if out.is_client() {
                    HandshakeType::CLIENT_HELLO
                } else {
                    HandshakeType::SERVER_HELLO
                };
                let announced = u32::from_be_bytes([0, buf[1], buf[2], buf[3]]) + 4;
                let len = u32::from(cur.length);
                let plaintext = n == 4
                    && buf[0] == hello.0
                    && (announced == len || (announced > len && len >= 1 << 14));
                let index = cur.index;
                if plaintext {
                    cur.payload = Payload::Handshake;
                    let payload_start = cur.offset + 5;
                    HandshakeLayer::with(&mut self.handshake, |h| {
                        h.feed(&buf, payload_start, first, index, out);
                        h.feed(&body[k..], start + k as u64, at, index, out);
                    });
                } else {
                    cur.payload = Payload::Opaque;
                    self.mark_opaque(index, out);
                }
            }
        }
    }

    fn mark_opaque(&mut self, index: u64, out: &mut Out<'_>) {
        if let Some(r) = out.record_mut(index) {
            r.opaque = true;
        }
        out.dir().encrypted_handshake.get_or_insert(index);
    }

    fn end_record(&mut self, complete: Option<FrameRef>, out: &mut Out<'_>) {
        self.framer.end_item();
        let Some(cur) = self.current.take() else {
            return;
        };
        let missing = u16::try_from(cur.missing).unwrap_or(u16::MAX);
        if let Some(r) = out.record_mut(cur.index) {
            r.complete = complete;
            r.missing = missing;
        }
        if cur.missing > 0 {
            out.dir().totals.with_gaps += 1;
        }
        if let Some((header, payload)) = cur.sealed {
            if matches!(cur.payload, Payload::Opaque | Payload::Pending { .. }) {
                self.sealed.push(Sealed {
                    header,
                    payload,
                    first: cur.first,
                    complete,
                    cut: cur.missing > 0,
                });
            }
        }
        match cur.payload {
            Payload::Pending { .. } => {
                // Ended (or lost bytes) before its first 4 bytes were known:
                // cannot be a whole plaintext ClientHello.
                self.mark_opaque(cur.index, out);
            }
            Payload::Alert { buf, n } if n == 2 && cur.missing == 0 => {
                self.alert(cur.index, cur.first, Some(buf), out);
            }
            Payload::Sslv2Hello { version, body } => {
                let message = HandshakeMessage {
                    msg_type: HandshakeType::CLIENT_HELLO,
                    length: u32::from(cur.length) - 3,
                    record: 0,
                    offset: cur.offset,
                    first: cur.first,
                    complete,
                    missing: u32::try_from(cur.missing).unwrap_or(u32::MAX),
                };
                push_capped(&mut out.dir().messages, message, 1, MESSAGE_DETAIL_CAP);
                let (Some(complete), 0) = (complete, cur.missing) else {
                    return;
                };
                match parse_sslv2_client_hello(version, &body) {
                    Ok(mut ch) => {
                        self.looks_tls = Some(true);
                        ch.length = u32::from(cur.length) - 3;
                        ch.offset = cur.offset;
                        ch.first = cur.first;
                        ch.complete = complete;
                        if let Out::Client { client_hello, .. } = out {
                            client_hello.get_or_insert(ch);
                        }
                    }
                    Err(_) => {
                        self.looks_tls = Some(false);
                        self.stop();
                    }
                }
            }
            _ if cur.content_type == ContentType::ALERT => {
                self.alert(cur.index, cur.first, None, out);
            }
            _ => {}
        }
    }

    fn alert(&mut self, record: u64, first: FrameRef, bytes: Option<[u8; 2]>, out: &mut Out<'_>) {
        let dir = out.dir();
        dir.alert_count += 1;
        if dir.alerts.len() < ALERT_DETAIL_CAP {
            dir.alerts.push(TlsAlert {
                record,
                first,
                level: bytes.map(|b| b[0]),
                description: bytes.map(|b| b[1]),
            });
        }
    }

    /// `len` bytes at [`Self::pos`] were never seen.
    fn missing(&mut self, len: u64, out: &mut Out<'_>) {
        out.dir().bytes_missing += len;
        let at = self.pos;
        self.pos += len;
        if self.stopped {
            return;
        }
        if self.framer.skip_body(len) {
            out.note(at, NoteKind::Gap { len });
            let body_done = self.framer.body_left() == 0;
            if let Some(cur) = self.current.as_mut() {
                cur.missing += len;
                if matches!(cur.payload, Payload::Handshake) {
                    HandshakeLayer::with(&mut self.handshake, |h| h.missing(len, at, out));
                }
            }
            if body_done {
                self.end_record(None, out);
            }
            return;
        }
        // The gap covers header bytes: where the next record starts is lost.
        let lost_at = match (&self.current, self.header_start) {
            (Some(cur), _) => {
                let left = self.framer.body_left();
                let (index, missing) = (cur.index, cur.missing + left);
                if let Some(r) = out.record_mut(index) {
                    r.missing = u16::try_from(missing).unwrap_or(u16::MAX);
                }
                cur.end_offset()
            }
            (None, Some((offset, _))) if !self.framer.at_boundary() => offset,
            _ => at,
        };
        out.dir().lost_sync_at = Some(lost_at);
        out.note(lost_at, NoteKind::LostSync { layer: "record" });
        self.stop();
    }
}
