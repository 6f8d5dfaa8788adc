//! Handshake messages by their 4-byte headers (through
//! [`crate::proto::stream::Framer`]) over the plaintext handshake records
//! the record walker ([`super::record`]) hands on; the hellos parsed.

use super::hello::{parse_client_hello, parse_server_hello};
use super::hello::{ClientHelloInfo, ServerHelloInfo};
use super::{HandshakeMessage, HandshakeType, TlsDirection, TlsRecord, MESSAGE_DETAIL_CAP};
use crate::base::list::push_capped;
use crate::base::side::FrameRef;
use crate::proto::stream::Framer;
use crate::proto::{NoteKind, PARSE_BUFFER_CAP};

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
    pub(super) fn dir(&mut self) -> &mut TlsDirection {
        match self {
            Out::Client { dir, .. } | Out::Server { dir, .. } => dir,
        }
    }

    pub(super) fn is_client(&self) -> bool {
        matches!(self, Out::Client { .. })
    }

    pub(super) fn note(&mut self, offset: u64, kind: NoteKind) {
        self.dir().notes.push(offset, kind);
    }

    pub(super) fn record_mut(&mut self, index: u64) -> Option<&mut TlsRecord> {
        let i = usize::try_from(index).ok()?;
        self.dir().records.get_mut(i)
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
pub(super) struct HandshakeLayer {
    framer: Framer<4>,
    start: Option<(u64, FrameRef, u64)>,
    current: Option<Message>,
    lost: bool,
}

impl HandshakeLayer {
    /// Runs `f` on the layer in `slot`, made for it if there is none, and
    /// drops the layer if `f` leaves it between messages.
    pub(super) fn with(
        slot: &mut Option<Box<HandshakeLayer>>,
        f: impl FnOnce(&mut HandshakeLayer),
    ) {
        let h = slot.get_or_insert_with(Box::default);
        f(h);
        if h.idle() {
            *slot = None;
        }
    }

    /// Between messages, framing not lost: the same as a new layer (the
    /// header bytes left in the framer are written over before they are
    /// read).
    fn idle(&self) -> bool {
        !self.lost && self.current.is_none() && self.start.is_none() && self.framer.at_boundary()
    }

    /// Plaintext handshake bytes starting at stream offset `pos`, from record
    /// `record`, delivered by `at`.
    pub(super) fn feed(
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
    pub(super) fn missing(&mut self, len: u64, at_offset: u64, out: &mut Out<'_>) {
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
    pub(super) fn interrupt(&mut self, at_offset: u64, out: &mut Out<'_>) {
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
