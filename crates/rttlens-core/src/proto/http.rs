//! HTTP/1.1 (and 1.0) messages over cleartext TCP (RFC 9112), both
//! directions of one connection.
//!
//! [`HttpTracker`] parses request heads from the client's stream and
//! response heads from the server's with httparse, each head buffered up to
//! [`crate::proto::PARSE_BUFFER_CAP`] bytes, then walks the
//! body without buffering it (RFC 9112 §6.3):
//!
//! - a response to `HEAD`, and `1xx`, `204` and `304` responses, have no body;
//! - `Transfer-Encoding` ending in `chunked`: chunk sizes are walked
//!   incrementally (httparse's `parse_chunk_size` on a bounded line buffer),
//!   then the trailer section up to its empty line;
//! - else `Content-Length`;
//! - else a request has no body and a response runs until the server closes
//!   (HTTP/1.0 style); [`HttpTracker::end`] marks it complete.
//!
//! Responses pair with requests in order (pipelining); `1xx` interim
//! responses (`100 Continue`, `103 Early Hints`) attach to the exchange whose
//! final response follows. `101 Switching Protocols`, a `2xx` answer to
//! `CONNECT` and a `CONNECT` request itself end parsing (the bytes after are
//! another protocol).
//!
//! A gap inside a body of known length (`Content-Length`, a chunk's data, an
//! until-close body) keeps sync; anywhere else (a head, a chunk-size line,
//! trailers) parsing of that direction stops with
//! [`HttpDirection::lost_sync_at`]. Garbage stops the direction with
//! [`HttpDirection::malformed_at`]; on the first message it makes
//! [`HttpTracker::is_http`] `Some(false)`.

use std::collections::VecDeque;

use crate::proto::stream::InOrder;
use crate::proto::{lossy_truncated, NoteKind, Notes, PARSE_BUFFER_CAP};
use crate::side::{Mark, Side};

/// Exchanges kept in detail ([`HttpTracker::exchanges`]); later ones are only
/// counted ([`HttpTracker::exchange_count`]).
pub const EXCHANGE_DETAIL_CAP: usize = 256;
/// Longest request target kept, in characters (lossy UTF-8).
pub const TARGET_CHARS: usize = 200;
/// Interim (`1xx`) responses kept per exchange.
pub const INTERIM_DETAIL_CAP: usize = 4;
/// Requests remembered while awaiting their response (pipelining depth), to
/// apply the `HEAD`/`CONNECT` rules to the response.
const PENDING_CAP: usize = 1024;
/// Longest chunk-size line (with extensions) accepted, bytes.
const CHUNK_LINE_CAP: usize = 4096;
/// Longest method kept, in characters.
const METHOD_CHARS: usize = 32;
/// Most header fields parsed in one header block.
const MAX_HEADERS: usize = 512;

/// A request (client → server).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HttpRequest {
    /// Method (`GET`, …).
    pub method: String,
    /// Request target, lossy UTF-8, truncated to [`TARGET_CHARS`].
    pub target: String,
    /// Minor version: 1 for HTTP/1.1, 0 for HTTP/1.0.
    pub version: u8,
    /// Stream offset of the message's first byte.
    pub offset: u64,
    /// Segment that carried the first byte.
    pub first: Mark,
    /// Segment that completed the header block.
    pub head_complete: Mark,
    /// Header block length in bytes (request line to the empty line).
    pub head_len: u32,
    /// Segment that delivered the last byte (`None` until complete, or when
    /// the last byte fell in a gap).
    pub last: Option<Mark>,
    /// The whole message (head and body) was walked.
    pub complete: bool,
    /// Stream offset just past the message (when complete).
    pub end: Option<u64>,
    /// Body bytes walked so far: the `Content-Length` body, or the sum of the
    /// chunk sizes (decoded length) for chunked bodies; gaps included.
    pub body_len: u64,
    /// Body bytes missing from the capture.
    pub missing: u64,
    /// `Content-Length` header value.
    pub content_length: Option<u64>,
    /// Chunked transfer coding.
    pub chunked: bool,
    /// `Expect: 100-continue` (the body waits for an interim response or a
    /// timeout, RFC 9110 §10.1.1).
    pub expect_continue: bool,
}

/// A final response (server → client).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// Minor version: 1 for HTTP/1.1, 0 for HTTP/1.0.
    pub version: u8,
    /// Stream offset of the message's first byte.
    pub offset: u64,
    /// Segment that carried the first byte.
    pub first: Mark,
    /// Segment that completed the header block.
    pub head_complete: Mark,
    /// Header block length in bytes.
    pub head_len: u32,
    /// Segment that delivered the last byte (`None` until complete, or when
    /// the last byte fell in a gap). For an until-close body it is set by
    /// [`HttpTracker::end`].
    pub last: Option<Mark>,
    /// The whole message was walked (an until-close body: once
    /// [`HttpTracker::end`] was called).
    pub complete: bool,
    /// Stream offset just past the message (when complete).
    pub end: Option<u64>,
    /// Body bytes walked so far (decoded length for chunked bodies; gaps
    /// included).
    pub body_len: u64,
    /// Body bytes missing from the capture.
    pub missing: u64,
    /// `Content-Length` header value.
    pub content_length: Option<u64>,
    /// Chunked transfer coding.
    pub chunked: bool,
    /// No length given: the body runs until the server closes.
    pub until_close: bool,
    /// The request this answers was parsed (if not, a `HEAD` could not be
    /// taken into account).
    pub request_seen: bool,
}

/// An interim (`1xx`) response.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HttpInterim {
    /// Status code (100, 102, 103).
    pub status: u16,
    /// Segment that carried its first byte.
    pub first: Mark,
    /// Segment that completed its header block.
    pub head_complete: Mark,
}

/// A request and its response (either may be missing: not yet seen, or lost
/// to a gap).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HttpExchange {
    /// Position on the connection (0 = first request/response pair).
    pub index: u64,
    /// The request.
    pub request: Option<HttpRequest>,
    /// Interim responses before the final one (the first
    /// [`INTERIM_DETAIL_CAP`]).
    pub interim: Vec<HttpInterim>,
    /// The final response.
    pub response: Option<HttpResponse>,
}

/// What was seen of one direction.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HttpDirection {
    /// The sender.
    pub side: Side,
    /// Stream bytes seen (gaps excluded).
    pub bytes_seen: u64,
    /// Stream bytes reported missing by gaps.
    pub bytes_missing: u64,
    /// Messages whose header block was parsed (interim responses included).
    pub messages: u64,
    /// Stream offset of the first missing byte that made framing unknown;
    /// parsing of this direction stopped there.
    pub lost_sync_at: Option<u64>,
    /// Stream offset of the message that did not parse; parsing of this
    /// direction stopped there.
    pub malformed_at: Option<u64>,
    /// Notes on this direction.
    pub notes: Notes,
}

impl HttpDirection {
    fn new(side: Side) -> Self {
        HttpDirection {
            side,
            bytes_seen: 0,
            bytes_missing: 0,
            messages: 0,
            lost_sync_at: None,
            malformed_at: None,
            notes: Notes::default(),
        }
    }
}

/// How a message's body is framed, from its head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

/// Where the chunked-body walker is.
#[derive(Debug, Clone)]
enum Chunk {
    /// Reading a chunk-size line (up to its LF).
    Size { line: Vec<u8> },
    /// Inside chunk data.
    Data { left: u64 },
    /// Expecting the CRLF after chunk data.
    DataEnd { seen_cr: bool },
    /// Inside the trailer section, up to its empty line.
    Trailers { eol: Eol, len: usize },
}

/// Progress towards an empty line (end of a header block or trailer
/// section, RFC 9112 §2.1); a bare LF is accepted as a line end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Eol {
    /// Inside a line.
    InLine,
    /// Just after a LF (at a line start).
    LineStart,
    /// After a LF and a CR.
    LineStartCr,
}

impl Eol {
    /// Feeds bytes; returns how many were consumed up to and including the
    /// LF that ends an empty line, if one is in `data`.
    fn scan(&mut self, data: &[u8]) -> Option<usize> {
        for (i, &b) in data.iter().enumerate() {
            *self = match (b, *self) {
                (b'\n', Eol::LineStart | Eol::LineStartCr) => return Some(i + 1),
                (b'\n', Eol::InLine) => Eol::LineStart,
                (b'\r', Eol::LineStart) => Eol::LineStartCr,
                _ => Eol::InLine,
            };
        }
        None
    }
}

#[derive(Debug, Clone)]
enum State {
    /// Collecting a header block.
    Head {
        buf: Vec<u8>,
        eol: Eol,
        start: Option<(u64, Mark)>,
    },
    /// Walking a body of `Content-Length` bytes.
    Length { left: u64 },
    /// Walking a chunked body.
    Chunked(Chunk),
    /// Walking a body that ends when the sender closes.
    UntilClose,
    /// Parsing stopped.
    Stopped,
}

impl State {
    fn head() -> State {
        State::Head {
            buf: Vec::new(),
            eol: Eol::InLine,
            start: None,
        }
    }
}

/// The `HEAD`/`CONNECT` facts of a request awaiting its response.
#[derive(Debug, Clone, Copy)]
struct Pending {
    index: u64,
    head: bool,
    connect: bool,
}

/// State shared by the two directions: the exchanges and the pairing.
#[derive(Debug, Clone, Default)]
struct Shared {
    exchanges: Vec<HttpExchange>,
    /// Exchanges touched (by a request, an interim or a final response).
    seen: u64,
    requests: u64,
    responses: u64,
    pending: VecDeque<Pending>,
    /// Set when a `101` or a `2xx` to `CONNECT` switched protocols.
    upgraded: bool,
}

impl Shared {
    /// The detailed exchange `index`, created if within the cap.
    fn exchange(&mut self, index: u64) -> Option<&mut HttpExchange> {
        self.seen = self.seen.max(index.saturating_add(1));
        let i = usize::try_from(index)
            .ok()
            .filter(|&i| i < EXCHANGE_DETAIL_CAP)?;
        while self.exchanges.len() <= i {
            let index = self.exchanges.len() as u64;
            self.exchanges.push(HttpExchange {
                index,
                request: None,
                interim: Vec::new(),
                response: None,
            });
        }
        self.exchanges.get_mut(i)
    }

    /// The request facts for response `index` (`None` if never seen).
    fn take_pending(&mut self, index: u64) -> Option<Pending> {
        while let Some(p) = self.pending.front().copied() {
            if p.index > index {
                return None;
            }
            self.pending.pop_front();
            if p.index == index {
                return Some(p);
            }
        }
        None
    }
}

/// Body progress reported to the message being walked.
enum Progress {
    Bytes(u64),
    Missing(u64),
}

/// Parser of one direction.
#[derive(Debug, Clone)]
struct Parser {
    side: Side,
    stream: InOrder,
    pos: u64,
    state: State,
    /// Exchange index of the message whose body is being walked.
    current: Option<u64>,
    /// Whether this direction's first bytes look like HTTP.
    looks_http: Option<bool>,
    /// Mark of the last body byte of an until-close body.
    last_data: Option<Mark>,
}

impl Parser {
    fn new(side: Side) -> Self {
        Parser {
            side,
            stream: InOrder::default(),
            pos: 0,
            state: State::head(),
            current: None,
            looks_http: None,
            last_data: None,
        }
    }

    fn stopped(&self) -> bool {
        matches!(self.state, State::Stopped)
    }

    fn stop(&mut self) {
        self.state = State::Stopped;
        self.current = None;
    }

    fn malformed(&mut self, offset: u64, what: &'static str, dir: &mut HttpDirection) {
        dir.notes.push(offset, NoteKind::Malformed { what });
        dir.malformed_at = Some(offset);
        if self.looks_http.is_none() {
            self.looks_http = Some(false);
        }
        self.stop();
    }

    fn push(
        &mut self,
        offset: u64,
        data: &[u8],
        at: Mark,
        dir: &mut HttpDirection,
        sh: &mut Shared,
    ) {
        let Some((hole, fresh)) = self.stream.admit(offset, data) else {
            return;
        };
        if hole > 0 {
            self.missing(hole, dir, sh);
        }
        dir.bytes_seen += fresh.len() as u64;
        let mut data = fresh;
        while !data.is_empty() && !self.stopped() {
            let before = data.len();
            self.step(&mut data, at, dir, sh);
            self.pos += (before - data.len()) as u64;
        }
    }

    /// Consumes a prefix of `data` in the current state.
    fn step(&mut self, data: &mut &[u8], at: Mark, dir: &mut HttpDirection, sh: &mut Shared) {
        let pos = self.pos;
        match &mut self.state {
            State::Stopped => *data = &[],
            State::Head { buf, eol, start } => {
                let (first, _) = *start.get_or_insert((pos, at));
                let found = eol.scan(data);
                let n = found.unwrap_or(data.len());
                if buf.len() + n > PARSE_BUFFER_CAP {
                    let len = (buf.len() + n) as u64;
                    let what = "HTTP header block";
                    dir.notes.push(first, NoteKind::TooLarge { what, len });
                    dir.malformed_at = Some(first);
                    self.looks_http.get_or_insert(false);
                    self.stop();
                    return;
                }
                buf.extend_from_slice(&data[..n]);
                *data = &data[n..];
                let probe = if self.looks_http.is_none() && dir.messages == 0 {
                    plausible_start(self.side, buf)
                } else {
                    None
                };
                let complete = found.map(|_| (std::mem::take(buf), start.take()));
                if probe == Some(false) {
                    self.malformed(first, "does not start like an HTTP/1.x message", dir);
                } else if let Some((buf, start)) = complete {
                    let start = start.unwrap_or((pos, at));
                    self.on_head(&buf, start, pos + n as u64, at, dir, sh);
                }
            }
            State::Length { left } => {
                let n = take(data, *left);
                *left -= n;
                let done = *left == 0;
                self.progress(Progress::Bytes(n), sh);
                if done {
                    self.message_done(Some(at), pos + n, sh);
                }
            }
            State::UntilClose => {
                let n = data.len() as u64;
                *data = &[];
                self.last_data = Some(at);
                self.progress(Progress::Bytes(n), sh);
            }
            State::Chunked(chunk) => match chunk {
                Chunk::Size { line } => {
                    let nl = data.iter().position(|&b| b == b'\n');
                    let n = nl.map_or(data.len(), |i| i + 1);
                    if line.len() + n > CHUNK_LINE_CAP {
                        let len = (line.len() + n) as u64;
                        let what = "chunk-size line";
                        dir.notes.push(pos, NoteKind::TooLarge { what, len });
                        dir.malformed_at = Some(pos);
                        self.stop();
                        return;
                    }
                    line.extend_from_slice(&data[..n]);
                    *data = &data[n..];
                    if nl.is_none() {
                        return;
                    }
                    match httparse::parse_chunk_size(line) {
                        Ok(httparse::Status::Complete((_, 0))) => {
                            *chunk = Chunk::Trailers {
                                eol: Eol::LineStart,
                                len: 0,
                            };
                        }
                        Ok(httparse::Status::Complete((_, size))) => {
                            *chunk = Chunk::Data { left: size };
                        }
                        _ => self.malformed(pos, "invalid chunk-size line", dir),
                    }
                }
                Chunk::Data { left } => {
                    let n = take(data, *left);
                    *left -= n;
                    if *left == 0 {
                        *chunk = Chunk::DataEnd { seen_cr: false };
                    }
                    self.progress(Progress::Bytes(n), sh);
                }
                Chunk::DataEnd { seen_cr } => {
                    let b = data[0];
                    *data = &data[1..];
                    match b {
                        b'\r' if !*seen_cr => *seen_cr = true,
                        b'\n' => *chunk = Chunk::Size { line: Vec::new() },
                        _ => self.malformed(pos, "chunk data not followed by CRLF", dir),
                    }
                }
                Chunk::Trailers { eol, len } => {
                    let found = eol.scan(data);
                    let n = found.unwrap_or(data.len());
                    *len += n;
                    *data = &data[n..];
                    if *len > PARSE_BUFFER_CAP {
                        let (what, len) = ("trailer section", *len as u64);
                        dir.notes.push(pos, NoteKind::TooLarge { what, len });
                        dir.malformed_at = Some(pos);
                        self.stop();
                    } else if found.is_some() {
                        self.message_done(Some(at), pos + n as u64, sh);
                    }
                }
            },
        }
    }

    /// Adds body progress to the current message.
    fn progress(&mut self, p: Progress, sh: &mut Shared) {
        let Some(index) = self.current else {
            return;
        };
        let Some(ex) = sh.exchange(index) else {
            return;
        };
        let (body_len, missing) = match (self.side, ex) {
            (
                Side::Client,
                HttpExchange {
                    request: Some(r), ..
                },
            ) => (&mut r.body_len, &mut r.missing),
            (
                Side::Server,
                HttpExchange {
                    response: Some(r), ..
                },
            ) => (&mut r.body_len, &mut r.missing),
            _ => return,
        };
        match p {
            Progress::Bytes(n) => *body_len += n,
            Progress::Missing(n) => {
                *body_len += n;
                *missing += n;
            }
        }
    }

    /// The current message ended at stream offset `end`; the next byte
    /// starts a new head.
    fn message_done(&mut self, last: Option<Mark>, end: u64, sh: &mut Shared) {
        self.state = State::head();
        self.last_data = None;
        let Some(index) = self.current.take() else {
            return;
        };
        let Some(ex) = sh.exchange(index) else {
            return;
        };
        match (self.side, ex) {
            (
                Side::Client,
                HttpExchange {
                    request: Some(r), ..
                },
            ) => {
                r.last = last;
                r.complete = true;
                r.end = Some(end);
            }
            (
                Side::Server,
                HttpExchange {
                    response: Some(r), ..
                },
            ) => {
                r.last = last;
                r.complete = true;
                r.end = Some(end);
            }
            _ => {}
        }
    }

    /// A complete header block `buf` that started at `start` and ended at
    /// stream offset `end`, completed by `at`.
    fn on_head(
        &mut self,
        buf: &[u8],
        start: (u64, Mark),
        end: u64,
        at: Mark,
        dir: &mut HttpDirection,
        sh: &mut Shared,
    ) {
        if buf.iter().all(|b| matches!(b, b'\r' | b'\n')) {
            // Empty lines between messages (RFC 9112 §2.2): ignore.
            return;
        }
        let parsed = match self.side {
            Side::Client => parse_head::<true>(buf),
            Side::Server => parse_head::<false>(buf),
        };
        let head = match parsed {
            Ok(h) => h,
            Err(what) => return self.malformed(start.0, what, dir),
        };
        self.looks_http = Some(true);
        dir.messages += 1;
        let head_len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        let framing = match self.side {
            Side::Client => self.on_request(head, start, head_len, at, sh),
            Side::Server => self.on_response(head, start, head_len, at, sh),
        };
        let framing = match framing {
            Ok(f) => f,
            Err(kind) => {
                if matches!(kind, NoteKind::Malformed { .. }) {
                    dir.malformed_at = Some(start.0);
                } else {
                    // Switched protocols: this message is complete.
                    self.message_done(Some(at), end, sh);
                }
                dir.notes.push(start.0, kind);
                self.stop();
                return;
            }
        };
        match framing {
            Framing::None => self.message_done(Some(at), end, sh),
            Framing::Length(0) => self.message_done(Some(at), end, sh),
            Framing::Length(n) => self.state = State::Length { left: n },
            Framing::Chunked => self.state = State::Chunked(Chunk::Size { line: Vec::new() }),
            Framing::UntilClose => self.state = State::UntilClose,
        }
    }

    fn on_request(
        &mut self,
        head: Head,
        (offset, first): (u64, Mark),
        head_len: u32,
        at: Mark,
        sh: &mut Shared,
    ) -> Result<Framing, NoteKind> {
        // RFC 9112 §6.3: a request without Transfer-Encoding or
        // Content-Length has no body; a Transfer-Encoding not ending in
        // chunked is an error (item 4).
        let framing = if head.transfer_encoding {
            if !head.chunked {
                let what = "request Transfer-Encoding does not end in chunked";
                return Err(NoteKind::Malformed { what });
            }
            Framing::Chunked
        } else {
            head.content_length.map_or(Framing::None, Framing::Length)
        };
        let index = sh.requests;
        sh.requests += 1;
        let connect = head.method.eq_ignore_ascii_case("CONNECT");
        if sh.pending.len() < PENDING_CAP {
            sh.pending.push_back(Pending {
                index,
                head: head.method.eq_ignore_ascii_case("HEAD"),
                connect,
            });
        }
        if let Some(ex) = sh.exchange(index) {
            ex.request = Some(HttpRequest {
                method: head.method,
                target: head.target,
                version: head.version,
                offset,
                first,
                head_complete: at,
                head_len,
                last: None,
                complete: false,
                end: None,
                body_len: 0,
                missing: 0,
                content_length: head.content_length,
                chunked: framing == Framing::Chunked,
                expect_continue: head.expect_continue,
            });
        }
        self.current = Some(index);
        if connect {
            // What follows a CONNECT is tunnel data (once answered 2xx).
            return Err(NoteKind::Upgraded);
        }
        Ok(framing)
    }

    fn on_response(
        &mut self,
        head: Head,
        (offset, first): (u64, Mark),
        head_len: u32,
        at: Mark,
        sh: &mut Shared,
    ) -> Result<Framing, NoteKind> {
        let status = head.status;
        let index = sh.responses;
        if (100..200).contains(&status) && status != 101 {
            if let Some(ex) = sh.exchange(index) {
                if ex.interim.len() < INTERIM_DETAIL_CAP {
                    ex.interim.push(HttpInterim {
                        status,
                        first,
                        head_complete: at,
                    });
                }
            }
            return Ok(Framing::None);
        }
        sh.responses += 1;
        let request = sh.take_pending(index);
        let head_request = request.is_some_and(|p| p.head);
        let connect = request.is_some_and(|p| p.connect);
        // RFC 9112 §6.3 items 1–2, 4–7.
        let framing = if head_request || status == 204 || status == 304 || status < 200 {
            Framing::None
        } else if head.transfer_encoding {
            if head.chunked {
                Framing::Chunked
            } else {
                Framing::UntilClose
            }
        } else {
            head.content_length
                .map_or(Framing::UntilClose, Framing::Length)
        };
        if let Some(ex) = sh.exchange(index) {
            ex.response = Some(HttpResponse {
                status,
                version: head.version,
                offset,
                first,
                head_complete: at,
                head_len,
                last: None,
                complete: false,
                end: None,
                body_len: 0,
                missing: 0,
                content_length: head.content_length,
                chunked: framing == Framing::Chunked,
                until_close: framing == Framing::UntilClose,
                request_seen: request.is_some(),
            });
        }
        self.current = Some(index);
        if status == 101 || (connect && (200..300).contains(&status)) {
            sh.upgraded = true;
            return Err(NoteKind::Upgraded);
        }
        Ok(framing)
    }

    /// `len` bytes at [`Self::pos`] were never seen.
    fn missing(&mut self, len: u64, dir: &mut HttpDirection, sh: &mut Shared) {
        dir.bytes_missing += len;
        let at = self.pos;
        self.pos += len;
        let keeps_sync = match &mut self.state {
            State::Stopped => return,
            State::Length { left } | State::Chunked(Chunk::Data { left }) if len <= *left => {
                *left -= len;
                true
            }
            State::UntilClose => true,
            _ => false,
        };
        if !keeps_sync {
            dir.lost_sync_at = Some(at);
            dir.notes.push(at, NoteKind::LostSync { layer: "http" });
            self.stop();
            return;
        }
        dir.notes.push(at, NoteKind::Gap { len });
        self.progress(Progress::Missing(len), sh);
        match &mut self.state {
            State::Length { left: 0 } => self.message_done(None, self.pos, sh),
            State::Chunked(chunk @ Chunk::Data { left: 0 }) => {
                *chunk = Chunk::DataEnd { seen_cr: false };
            }
            State::UntilClose => self.last_data = None,
            _ => {}
        }
    }

    /// The sender closed: an until-close body is complete.
    fn end(&mut self, sh: &mut Shared) {
        if let State::UntilClose = self.state {
            let last = self.last_data;
            self.message_done(last, self.pos, sh);
        }
    }
}

/// Takes up to `left` bytes from the front of `data`; returns how many.
fn take(data: &mut &[u8], left: u64) -> u64 {
    let n = usize::try_from(left).unwrap_or(usize::MAX).min(data.len());
    *data = &data[n..];
    n as u64
}

/// Do the first bytes of a direction look like HTTP/1.x? Requests: a method
/// token of uppercase letters (RFC 9110 §9.1 registry style) then a space;
/// responses: `HTTP/`. `None` while too short to tell.
fn plausible_start(side: Side, buf: &[u8]) -> Option<bool> {
    let buf = match buf.iter().position(|b| !matches!(b, b'\r' | b'\n')) {
        Some(i) => &buf[i..],
        None => return None,
    };
    match side {
        Side::Client => {
            for (i, &b) in buf.iter().enumerate().take(METHOD_CHARS + 1) {
                match b {
                    b' ' if i > 0 => return Some(true),
                    b'A'..=b'Z' | b'-' | b'_' => {}
                    _ => return Some(false),
                }
            }
            if buf.len() <= METHOD_CHARS {
                None
            } else {
                Some(false)
            }
        }
        Side::Server => {
            let n = buf.len().min(5);
            if buf[..n] != b"HTTP/"[..n] {
                Some(false)
            } else if n == 5 {
                Some(true)
            } else {
                None
            }
        }
    }
}

/// What the tracker needs from a header block.
#[derive(Debug, Clone, Default)]
struct Head {
    method: String,
    target: String,
    status: u16,
    version: u8,
    content_length: Option<u64>,
    transfer_encoding: bool,
    chunked: bool,
    expect_continue: bool,
}

/// Parses a complete header block with httparse (a request if `REQUEST`).
fn parse_head<const REQUEST: bool>(buf: &[u8]) -> Result<Head, &'static str> {
    // Every header takes a line: this many slots never run out below the
    // cap, and more than MAX_HEADERS is "too many headers".
    let lines = buf.iter().filter(|&&b| b == b'\n').count();
    let mut headers = vec![httparse::EMPTY_HEADER; lines.min(MAX_HEADERS)];
    let mut head = Head::default();
    let status = if REQUEST {
        let mut req = httparse::Request::new(&mut headers);
        let status = req.parse(buf);
        head.method = lossy_truncated(req.method.unwrap_or("").as_bytes(), METHOD_CHARS);
        head.target = lossy_truncated(req.path.unwrap_or("").as_bytes(), TARGET_CHARS);
        head.version = req.version.unwrap_or(1);
        status
    } else {
        let mut resp = httparse::Response::new(&mut headers);
        let status = resp.parse(buf);
        head.status = resp.code.unwrap_or(0);
        head.version = resp.version.unwrap_or(1);
        status
    };
    match status {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err("incomplete header block"),
        Err(e) => return Err(httparse_error(e)),
    }
    for h in headers.iter().take_while(|h| !h.name.is_empty()) {
        if h.name.eq_ignore_ascii_case("content-length") {
            // RFC 9110 §8.6: a list of identical values is the value;
            // anything else is unrecoverable (RFC 9112 §6.3 item 5).
            let mut value = head.content_length;
            for part in h.value.split(|&b| b == b',') {
                let n = std::str::from_utf8(part)
                    .ok()
                    .map(str::trim)
                    .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|s| s.parse::<u64>().ok())
                    .ok_or("invalid Content-Length")?;
                if value.is_some_and(|v| v != n) {
                    return Err("conflicting Content-Length values");
                }
                value = Some(n);
            }
            head.content_length = value;
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            // RFC 9112 §6.1: chunked must be the final coding.
            head.transfer_encoding = true;
            head.chunked = h
                .value
                .split(|&b| b == b',')
                .rfind(|c| !c.trim_ascii().is_empty())
                .is_some_and(|c| c.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if h.name.eq_ignore_ascii_case("expect") {
            head.expect_continue = h.value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
        }
    }
    Ok(head)
}

fn httparse_error(e: httparse::Error) -> &'static str {
    match e {
        httparse::Error::HeaderName => "invalid header name",
        httparse::Error::HeaderValue => "invalid header value",
        httparse::Error::NewLine => "invalid line ending",
        httparse::Error::Status => "invalid response status",
        httparse::Error::Token => "invalid token",
        httparse::Error::TooManyHeaders => "too many headers",
        httparse::Error::Version => "not HTTP/1.x",
    }
}

/// Tracks the HTTP/1.x messages of one cleartext TCP connection, both
/// directions (see the [module docs](self) and [`crate::proto`] for the
/// input model).
#[derive(Debug, Clone)]
pub struct HttpTracker {
    client: Parser,
    server: Parser,
    client_dir: HttpDirection,
    server_dir: HttpDirection,
    shared: Shared,
}

impl Default for HttpTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpTracker {
    /// A tracker that has seen nothing yet.
    pub fn new() -> Self {
        HttpTracker {
            client: Parser::new(Side::Client),
            server: Parser::new(Side::Server),
            client_dir: HttpDirection::new(Side::Client),
            server_dir: HttpDirection::new(Side::Server),
            shared: Shared::default(),
        }
    }

    /// Bytes `data` sent by `side` at stream `offset`, delivered by the
    /// segment `at`. Cheap no-op once [`HttpTracker::is_http`] is
    /// `Some(false)`.
    pub fn push(&mut self, side: Side, offset: u64, data: &[u8], at: Mark) {
        if self.is_http() == Some(false) {
            return;
        }
        let (parser, dir) = match side {
            Side::Client => (&mut self.client, &mut self.client_dir),
            Side::Server => (&mut self.server, &mut self.server_dir),
        };
        parser.push(offset, data, at, dir, &mut self.shared);
        self.after_upgrade();
    }

    /// `len` bytes sent by `side` at stream `offset` that the capture never
    /// saw.
    pub fn gap(&mut self, side: Side, offset: u64, len: u64) {
        let (parser, dir) = match side {
            Side::Client => (&mut self.client, &mut self.client_dir),
            Side::Server => (&mut self.server, &mut self.server_dir),
        };
        let missing = parser.stream.admit_gap(offset, len);
        if missing > 0 {
            parser.missing(missing, dir, &mut self.shared);
        }
    }

    /// `side` closed its direction (FIN), or the capture ended: a response
    /// body delimited by the close is complete.
    pub fn end(&mut self, side: Side) {
        let parser = match side {
            Side::Client => &mut self.client,
            Side::Server => &mut self.server,
        };
        parser.end(&mut self.shared);
    }

    /// Does this connection carry HTTP/1.x? `Some(true)` once the client's
    /// first request head parsed; `Some(false)` as soon as the client's first
    /// bytes cannot start a request (a method token and a space) or its first
    /// head does not parse (HTTP/2 prior knowledge, `PRI * HTTP/2.0`,
    /// included), or when the server speaks first with something other than
    /// `HTTP/`; `None` while undecided.
    pub fn is_http(&self) -> Option<bool> {
        match (self.client.looks_http, self.server.looks_http) {
            (Some(c), _) => Some(c),
            (None, Some(false)) => Some(false),
            (None, s) if self.client.stopped() => s.or(Some(false)),
            _ => None,
        }
    }

    /// The first [`EXCHANGE_DETAIL_CAP`] exchanges, in order.
    pub fn exchanges(&self) -> &[HttpExchange] {
        &self.shared.exchanges
    }

    /// All exchanges seen (a request, or a response, interim or final,
    /// without its request), detailed or not.
    pub fn exchange_count(&self) -> u64 {
        self.shared.seen
    }

    /// Requests whose head was parsed.
    pub fn request_count(&self) -> u64 {
        self.shared.requests
    }

    /// Final responses whose head was parsed.
    pub fn response_count(&self) -> u64 {
        self.shared.responses
    }

    /// One direction's state and notes.
    pub fn direction(&self, side: Side) -> &HttpDirection {
        match side {
            Side::Client => &self.client_dir,
            Side::Server => &self.server_dir,
        }
    }

    /// The connection switched protocols (`101`, or `2xx` to `CONNECT`).
    pub fn upgraded(&self) -> bool {
        self.shared.upgraded
    }

    /// After a protocol switch, neither direction is HTTP any more.
    fn after_upgrade(&mut self) {
        if self.shared.upgraded {
            for (parser, dir) in [
                (&mut self.client, &mut self.client_dir),
                (&mut self.server, &mut self.server_dir),
            ] {
                if !parser.stopped() {
                    dir.notes.push(parser.pos, NoteKind::Upgraded);
                    parser.stop();
                }
            }
        }
    }
}
