//! The per-direction HTTP/1.x walker: header blocks (httparse), bodies by
//! `Content-Length`, chunks or until close, and the request/response pairing.

use std::collections::VecDeque;

use super::head::{
    parse_head, plausible_start, response_framing, trailer_server_timing, Framing, Head,
};
use super::server_timing::ServerTiming;
use super::{
    HttpDirection, HttpExchange, HttpInterim, HttpRequest, HttpResponse, EXCHANGE_DETAIL_CAP,
    INTERIM_DETAIL_CAP,
};
use crate::base::side::{FrameRef, Side};
use crate::proto::stream::InOrder;
use crate::proto::{NoteKind, PARSE_BUFFER_CAP};

/// Requests remembered while awaiting their response (pipelining depth), to
/// apply the `HEAD`/`CONNECT` rules to the response.
const PENDING_CAP: usize = 1024;
/// Longest chunk-size line (with extensions) accepted, bytes.
const CHUNK_LINE_CAP: usize = 4096;
/// Where the chunked-body walker is.
#[derive(Debug, Clone)]
enum Chunk {
    /// Reading a chunk-size line (up to its LF).
    Size { line: Vec<u8> },
    /// Inside chunk data.
    Data { left: u64 },
    /// Expecting the CRLF after chunk data.
    DataEnd { seen_cr: bool },
    /// Inside the trailer section, up to its empty line; a response's
    /// trailers are kept (`buf`) to read `Server-Timing` from.
    Trailers { eol: Eol, len: usize, buf: Vec<u8> },
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
        let mut i = 0;
        while let Some(&b) = data.get(i) {
            if *self == Eol::InLine {
                // inside a line only its LF matters: jump to it (memchr
                // scans a word at a time)
                let lf = memchr::memchr(b'\n', data.get(i..).unwrap_or_default())?;
                i += lf + 1;
                *self = Eol::LineStart;
                continue;
            }
            *self = match (b, *self) {
                (b'\n', Eol::LineStart | Eol::LineStartCr) => return Some(i + 1),
                (b'\n', Eol::InLine) => Eol::LineStart,
                (b'\r', Eol::LineStart) => Eol::LineStartCr,
                _ => Eol::InLine,
            };
            i += 1;
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
        start: Option<(u64, FrameRef)>,
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
pub(super) struct Shared {
    /// The first [`EXCHANGE_DETAIL_CAP`] exchanges.
    pub(super) exchanges: Vec<HttpExchange>,
    /// Exchanges touched (by a request, an interim or a final response).
    pub(super) seen: u64,
    /// Request heads parsed.
    pub(super) requests: u64,
    /// Final response heads parsed.
    pub(super) responses: u64,
    /// Requests awaiting their response (at most [`PENDING_CAP`]).
    pending: VecDeque<Pending>,
    /// Set when a `101` or a `2xx` to `CONNECT` switched protocols.
    pub(super) upgraded: bool,
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

/// The fields that track a message's body, request or response alike.
struct Tail<'a> {
    last: &'a mut Option<FrameRef>,
    complete: &'a mut bool,
    end: &'a mut Option<u64>,
    body_len: &'a mut u64,
    missing: &'a mut u64,
}

/// Parser of one direction.
#[derive(Debug, Clone)]
pub(super) struct Parser {
    side: Side,
    stream: InOrder,
    pos: u64,
    state: State,
    /// Exchange index of the message whose body is being walked.
    current: Option<u64>,
    /// Whether this direction's first bytes look like HTTP.
    looks_http: Option<bool>,
    /// FrameRef of the last body byte of an until-close body.
    last_data: Option<FrameRef>,
}

impl Parser {
    pub(super) fn new(side: Side) -> Self {
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

    pub(super) fn stopped(&self) -> bool {
        matches!(self.state, State::Stopped)
    }

    /// Whether this direction's first bytes look like HTTP/1.x.
    pub(super) fn looks_http(&self) -> Option<bool> {
        self.looks_http
    }

    /// The other direction switched protocols: stop here too.
    pub(super) fn upgraded(&mut self, dir: &mut HttpDirection) {
        if !self.stopped() {
            dir.notes.push(self.pos, NoteKind::Upgraded);
            self.stop();
        }
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

    pub(super) fn push(
        &mut self,
        offset: u64,
        data: &[u8],
        at: FrameRef,
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
    fn step(&mut self, data: &mut &[u8], at: FrameRef, dir: &mut HttpDirection, sh: &mut Shared) {
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
                self.progress(n, false, sh);
                if done {
                    self.message_done(Some(at), pos + n, sh);
                }
            }
            State::UntilClose => {
                let n = data.len() as u64;
                *data = &[];
                self.last_data = Some(at);
                self.progress(n, false, sh);
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
                                buf: Vec::new(),
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
                    self.progress(n, false, sh);
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
                Chunk::Trailers { eol, len, buf } => {
                    let found = eol.scan(data);
                    let n = found.unwrap_or(data.len());
                    *len += n;
                    if *len <= PARSE_BUFFER_CAP && self.side == Side::Server {
                        buf.extend_from_slice(&data[..n]);
                    }
                    *data = &data[n..];
                    if *len > PARSE_BUFFER_CAP {
                        let (what, len) = ("trailer section", *len as u64);
                        dir.notes.push(pos, NoteKind::TooLarge { what, len });
                        dir.malformed_at = Some(pos);
                        self.stop();
                    } else if found.is_some() {
                        let fields = if *len > 2 {
                            trailer_server_timing(buf)
                        } else {
                            Vec::new()
                        };
                        self.trailers(&fields, at, sh);
                        self.message_done(Some(at), pos + n as u64, sh);
                    }
                }
            },
        }
    }

    /// The progress fields of the current message (request or response).
    fn tail<'a>(&self, sh: &'a mut Shared) -> Option<Tail<'a>> {
        let ex = sh.exchange(self.current?)?;
        match self.side {
            Side::Client => ex.request.as_mut().map(|r| Tail {
                last: &mut r.last,
                complete: &mut r.complete,
                end: &mut r.end,
                body_len: &mut r.body_len,
                missing: &mut r.missing,
            }),
            Side::Server => ex.response.as_mut().map(|r| Tail {
                last: &mut r.last,
                complete: &mut r.complete,
                end: &mut r.end,
                body_len: &mut r.body_len,
                missing: &mut r.missing,
            }),
        }
    }

    /// Adds `len` body bytes (`missing` of them lost to a gap) to the current
    /// message.
    fn progress(&mut self, len: u64, missing: bool, sh: &mut Shared) {
        if let Some(t) = self.tail(sh) {
            *t.body_len += len;
            if missing {
                *t.missing += len;
            }
        }
    }

    /// The `Server-Timing` values of the current response's trailers,
    /// delivered by `at`.
    fn trailers(&mut self, fields: &[Vec<u8>], at: FrameRef, sh: &mut Shared) {
        if fields.is_empty() || self.side != Side::Server {
            return;
        }
        let Some(resp) = self
            .current
            .and_then(|i| sh.exchange(i))
            .and_then(|ex| ex.response.as_mut())
        else {
            return;
        };
        for v in fields {
            ServerTiming::add(&mut resp.server_timing, v, at, true);
        }
    }

    /// The current message ended at stream offset `end`; the next byte
    /// starts a new head.
    fn message_done(&mut self, last: Option<FrameRef>, end: u64, sh: &mut Shared) {
        if let Some(t) = self.tail(sh) {
            *t.last = last;
            *t.complete = true;
            *t.end = Some(end);
        }
        self.state = State::head();
        self.last_data = None;
        self.current = None;
    }

    /// A complete header block `buf` that started at `start` and ended at
    /// stream offset `end`, completed by `at`.
    fn on_head(
        &mut self,
        buf: &[u8],
        start: (u64, FrameRef),
        end: u64,
        at: FrameRef,
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
        (offset, first): (u64, FrameRef),
        head_len: u32,
        at: FrameRef,
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
        (offset, first): (u64, FrameRef),
        head_len: u32,
        at: FrameRef,
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
        let framing = response_framing(&head, head_request);
        let mut server_timing = None;
        for v in &head.server_timing {
            ServerTiming::add(&mut server_timing, v, at, false);
        }
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
                server_timing,
            });
        }
        self.current = Some(index);
        if status == 101 || (connect && (200..300).contains(&status)) {
            sh.upgraded = true;
            return Err(NoteKind::Upgraded);
        }
        Ok(framing)
    }

    /// `len` bytes at stream `offset` were never seen.
    pub(super) fn gap(&mut self, offset: u64, len: u64, dir: &mut HttpDirection, sh: &mut Shared) {
        let missing = self.stream.admit_gap(offset, len);
        if missing > 0 {
            self.missing(missing, dir, sh);
        }
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
        self.progress(len, true, sh);
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
    pub(super) fn end(&mut self, sh: &mut Shared) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_line_detection_across_chunks() {
        let mut eol = Eol::InLine;
        assert_eq!(eol.scan(b"GET / HTTP/1.1\r\nHost: a\r"), None);
        assert_eq!(eol.scan(b"\n\r"), None);
        assert_eq!(eol.scan(b"\nbody"), Some(1));
        let mut eol = Eol::InLine;
        assert_eq!(eol.scan(b"a\n\nrest"), Some(3), "bare LF");
        let mut eol = Eol::LineStart;
        assert_eq!(eol.scan(b"\r\n"), Some(2), "no trailers");
    }
}
