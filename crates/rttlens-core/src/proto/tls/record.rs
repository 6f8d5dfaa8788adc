//! The per-direction walker: records by their 5-byte headers, plaintext
//! handshake messages by their 4-byte headers (both through
//! [`crate::proto::stream::Framer`]), alerts by their two bytes.

use super::decrypt::Sealed;
use super::hello::{parse_client_hello, parse_server_hello, ClientHelloInfo, ServerHelloInfo};
use super::{
    ContentType, HandshakeMessage, HandshakeType, TlsAlert, TlsDirection, TlsRecord,
    ALERT_DETAIL_CAP, MAX_RECORD_LEN, MESSAGE_DETAIL_CAP, RECORD_DETAIL_CAP,
};
use crate::base::list::push_capped;
use crate::base::side::FrameRef;
use crate::proto::stream::{Framer, InOrder};
use crate::proto::{NoteKind, PARSE_BUFFER_CAP};

/// Room for this many records in a direction's first allocation: a TLS
/// 1.3 client's hello, ChangeCipherSpec, Finished and request.
const FIRST_RECORDS: usize = 4;

/// Where a direction's parser writes what it finds: its own
/// [`TlsDirection`] and the hello slots its side can fill.
pub(super) enum Out<'a> {
    Client {
        dir: &'a mut TlsDirection,
        client_hello: &'a mut Option<ClientHelloInfo>,
        second_client_hello: &'a mut Option<Box<ClientHelloInfo>>,
    },
    Server {
        dir: &'a mut TlsDirection,
        hello_retry_request: &'a mut Option<Box<ServerHelloInfo>>,
        server_hello: &'a mut Option<ServerHelloInfo>,
    },
}

impl Out<'_> {
    fn dir(&mut self) -> &mut TlsDirection {
        match self {
            Out::Client { dir, .. } | Out::Server { dir, .. } => dir,
        }
    }

    fn is_client(&self) -> bool {
        matches!(self, Out::Client { .. })
    }

    fn note(&mut self, offset: u64, kind: NoteKind) {
        self.dir().notes.push(offset, kind);
    }

    fn record_mut(&mut self, index: u64) -> Option<&mut TlsRecord> {
        let i = usize::try_from(index).ok()?;
        self.dir().records.get_mut(i)
    }
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
    handshake: HandshakeLayer,
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
            self.handshake.interrupt(offset, out);
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
            position: u16::try_from(index).unwrap_or(u16::MAX),
            length,
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

    fn on_payload(&mut self, body: &[u8], start: u64, at: FrameRef, out: &mut Out<'_>) {
        let body_done = self.framer.body_left() == 0;
        let Some(cur) = self.current.as_mut() else {
            return;
        };
        if let Some((_, buf)) = cur.sealed.as_mut() {
            buf.extend_from_slice(body);
        }
        if cur.index == 0 && out.is_client() && self.looks_tls.is_none() {
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
            Payload::Handshake => {
                let index = cur.index;
                self.handshake.feed(body, start, at, index, out);
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
                    self.handshake.feed(&buf, payload_start, first, index, out);
                    self.handshake
                        .feed(&body[k..], start + k as u64, at, index, out);
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
                    self.handshake.missing(len, at, out);
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
                cur.offset + 5 + u64::from(cur.length)
            }
            (None, Some((offset, _))) if !self.framer.at_boundary() => offset,
            _ => at,
        };
        out.dir().lost_sync_at = Some(lost_at);
        out.note(lost_at, NoteKind::LostSync { layer: "record" });
        self.stop();
    }
}

/// The message being walked by the handshake layer.
#[derive(Debug, Clone)]
struct Message {
    msg_type: HandshakeType,
    length: u32,
    record: u64,
    offset: u64,
    first: FrameRef,
    missing: u64,
    /// The body, for the messages parsed here (hellos within the cap).
    body: Option<Vec<u8>>,
}

/// Handshake messages over the plaintext handshake records of one direction
/// (RFC 8446 §5.1: a message may span records, a record may hold several).
#[derive(Debug, Clone, Default)]
struct HandshakeLayer {
    framer: Framer<4>,
    start: Option<(u64, FrameRef, u64)>,
    current: Option<Message>,
    lost: bool,
}

impl HandshakeLayer {
    /// Plaintext handshake bytes starting at stream offset `pos`, from record
    /// `record`, delivered by `at`.
    fn feed(
        &mut self,
        mut data: &[u8],
        mut pos: u64,
        at: FrameRef,
        record: u64,
        out: &mut Out<'_>,
    ) {
        while !data.is_empty() && !self.lost {
            if !self.framer.in_body() {
                if self.framer.at_boundary() {
                    self.start = Some((pos, at, record));
                }
                let before = data.len();
                let header = self.framer.take_header(&mut data);
                pos += (before - data.len()) as u64;
                if let Some(h) = header {
                    self.on_header(h, pos, at, record, out);
                }
            } else {
                let body = self.framer.take_body(&mut data);
                pos += body.len() as u64;
                if let Some(m) = self.current.as_mut() {
                    if let Some(buf) = m.body.as_mut() {
                        buf.extend_from_slice(body);
                    }
                }
                if self.framer.body_left() == 0 {
                    self.finish(Some(at), out);
                }
            }
        }
    }

    fn on_header(&mut self, h: [u8; 4], pos: u64, at: FrameRef, record: u64, out: &mut Out<'_>) {
        let (offset, first, record) = self.start.take().unwrap_or((pos - 4, at, record));
        let msg_type = HandshakeType(h[0]);
        let length = u32::from_be_bytes([0, h[1], h[2], h[3]]);
        let parsed = matches!(
            msg_type,
            HandshakeType::CLIENT_HELLO | HandshakeType::SERVER_HELLO
        );
        let body = if parsed && length as usize <= PARSE_BUFFER_CAP {
            Some(Vec::new())
        } else {
            if parsed {
                let what = if msg_type == HandshakeType::CLIENT_HELLO {
                    "ClientHello"
                } else {
                    "ServerHello"
                };
                out.note(
                    offset,
                    NoteKind::TooLarge {
                        what,
                        len: u64::from(length),
                    },
                );
            }
            None
        };
        self.current = Some(Message {
            msg_type,
            length,
            record,
            offset,
            first,
            missing: 0,
            body,
        });
        self.framer.begin_body(u64::from(length));
        if length == 0 {
            self.finish(Some(at), out);
        }
    }

    fn finish(&mut self, complete: Option<FrameRef>, out: &mut Out<'_>) {
        self.framer.end_item();
        let Some(m) = self.current.take() else {
            return;
        };
        let dir = out.dir();
        let message = HandshakeMessage {
            msg_type: m.msg_type,
            length: m.length,
            record: m.record,
            offset: m.offset,
            first: m.first,
            complete,
            missing: u32::try_from(m.missing).unwrap_or(u32::MAX),
        };
        // TLS 1.3 shows one plaintext message each way (the hellos)
        push_capped(&mut dir.messages, message, 1, MESSAGE_DETAIL_CAP);
        let (Some(body), Some(complete)) = (m.body, complete) else {
            return;
        };
        if m.missing > 0 {
            return;
        }
        let result = match (m.msg_type, &mut *out) {
            (
                HandshakeType::CLIENT_HELLO,
                Out::Client {
                    client_hello,
                    second_client_hello,
                    ..
                },
            ) => parse_client_hello(&body).map(|(mut ch, problem)| {
                ch.length = m.length;
                ch.record = m.record;
                ch.offset = m.offset;
                ch.first = m.first;
                ch.complete = complete;
                if client_hello.is_none() {
                    **client_hello = Some(ch);
                } else {
                    second_client_hello.get_or_insert_with(|| Box::new(ch));
                }
                problem
            }),
            (
                HandshakeType::SERVER_HELLO,
                Out::Server {
                    hello_retry_request,
                    server_hello,
                    ..
                },
            ) => parse_server_hello(&body).map(|(mut sh, problem)| {
                sh.length = m.length;
                sh.record = m.record;
                sh.offset = m.offset;
                sh.first = m.first;
                sh.complete = complete;
                if sh.hello_retry_request {
                    hello_retry_request.get_or_insert_with(|| Box::new(sh));
                } else {
                    server_hello.get_or_insert(sh);
                }
                problem
            }),
            _ => Ok(None),
        };
        if let Err(what) | Ok(Some(what)) = result {
            out.note(m.offset, NoteKind::Unparsed { what });
        }
    }

    /// `len` bytes of handshake payload at `at_offset` were never seen.
    fn missing(&mut self, len: u64, at_offset: u64, out: &mut Out<'_>) {
        if self.lost {
            return;
        }
        if self.framer.skip_body(len) {
            if let Some(m) = self.current.as_mut() {
                m.missing += len;
                m.body = None;
            }
            if self.framer.body_left() == 0 {
                self.finish(None, out);
            }
        } else {
            self.lose(at_offset, NoteKind::LostSync { layer: "handshake" }, out);
        }
    }

    /// Another record type (or an encrypted record) arrived: a handshake
    /// message in progress can no longer complete (RFC 8446 §5.1 forbids
    /// interleaving).
    fn interrupt(&mut self, at_offset: u64, out: &mut Out<'_>) {
        if !self.lost && !self.framer.at_boundary() {
            let what = "handshake message interrupted by another record type";
            self.lose(at_offset, NoteKind::Malformed { what }, out);
        }
    }

    fn lose(&mut self, at_offset: u64, kind: NoteKind, out: &mut Out<'_>) {
        self.lost = true;
        self.current = None;
        out.note(at_offset, kind);
    }
}
