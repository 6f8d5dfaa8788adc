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
//!
//! [`stream`] holds the request stream HTTP/2 (`proto::h2`) and HTTP/3
//! (`proto::h3`) both fill: one record of a request and its response for
//! the two framings.

mod head;
mod parser;
pub mod server_timing;
pub mod stream;

use crate::base::side::{FrameRef, Side};
use crate::proto::Notes;
pub use head::{response_head, Framing};
use parser::{Parser, Shared};

/// Exchanges kept in detail ([`HttpTracker::exchanges`]); later ones are only
/// counted ([`HttpTracker::exchange_count`]).
pub const EXCHANGE_DETAIL_CAP: usize = 256;
/// Longest request target kept, in characters (lossy UTF-8).
pub const TARGET_CHARS: usize = 200;
/// Interim (`1xx`) responses kept per exchange.
pub const INTERIM_DETAIL_CAP: usize = 4;

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
    pub(crate) offset: u64,
    /// Segment that carried the first byte.
    pub first: FrameRef,
    /// Segment that completed the header block.
    pub head_complete: FrameRef,
    /// Header block length in bytes (request line to the empty line).
    pub(crate) head_len: u32,
    /// Segment that delivered the last byte (`None` until complete, or when
    /// the last byte fell in a gap).
    pub last: Option<FrameRef>,
    /// The whole message (head and body) was walked.
    pub complete: bool,
    /// Stream offset just past the message (when complete).
    pub(crate) end: Option<u64>,
    /// Body bytes walked so far: the `Content-Length` body, or the sum of the
    /// chunk sizes (decoded length) for chunked bodies; gaps included.
    pub body_len: u64,
    /// Body bytes missing from the capture.
    pub(crate) missing: u64,
    /// `Content-Length` header value.
    pub(crate) content_length: Option<u64>,
    /// Chunked transfer coding.
    pub chunked: bool,
    /// `Expect: 100-continue` (the body waits for an interim response or a
    /// timeout, RFC 9110 §10.1.1).
    pub expect_continue: bool,
}

/// A final response (server → client).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// Minor version: 1 for HTTP/1.1, 0 for HTTP/1.0.
    pub version: u8,
    /// Stream offset of the message's first byte.
    pub offset: u64,
    /// Segment that carried the first byte.
    pub first: FrameRef,
    /// Segment that completed the header block.
    pub head_complete: FrameRef,
    /// Header block length in bytes.
    pub(crate) head_len: u32,
    /// Segment that delivered the last byte (`None` until complete, or when
    /// the last byte fell in a gap). For an until-close body it is set by
    /// [`HttpTracker::end`].
    pub last: Option<FrameRef>,
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
    /// Its `Server-Timing` fields, header section and chunked trailers
    /// ([`server_timing`]).
    #[serde(skip)]
    pub server_timing: Option<server_timing::ServerTiming>,
}

/// An interim (`1xx`) response.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HttpInterim {
    /// Status code (100, 102, 103).
    pub status: u16,
    /// Segment that carried its first byte.
    pub first: FrameRef,
    /// Segment that completed its header block.
    pub(crate) head_complete: FrameRef,
}

/// A request and its response (either may be missing: not yet seen, or lost
/// to a gap).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
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
    pub(crate) side: Side,
    /// Stream bytes seen (gaps excluded).
    pub(crate) bytes_seen: u64,
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
    pub(crate) fn new(side: Side) -> Self {
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
    pub fn push(&mut self, side: Side, offset: u64, data: &[u8], at: FrameRef) {
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
        parser.gap(offset, len, dir, &mut self.shared);
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
        match (self.client.looks_http(), self.server.looks_http()) {
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
                parser.upgraded(dir);
            }
        }
    }
}
