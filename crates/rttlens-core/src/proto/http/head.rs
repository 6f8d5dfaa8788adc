//! HTTP/1.x header blocks (httparse) and what they say about the body's
//! framing (RFC 9112 §6.3); the parser in `parser.rs` walks the streams
//! around them.

use super::TARGET_CHARS;
use crate::base::side::Side;
use crate::proto::lossy_truncated;

/// Longest method kept, in characters.
pub(super) const METHOD_CHARS: usize = 32;
/// Most header fields parsed in one header block.
pub(super) const MAX_HEADERS: usize = 512;

/// How a message's body ends, from its head (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body (1xx, 204, 304, a response to HEAD).
    None,
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding` with `chunked` last.
    Chunked,
    /// Until the sender closes (a response without length).
    UntilClose,
}

/// The error of [`parse_head`] for a block that is not complete yet.
pub(super) const INCOMPLETE: &str = "incomplete header block";

/// A response head at the start of `buf`, as the client that sent a GET
/// reads it: the head's length in bytes, the status and how the body ends
/// (RFC 9112 §6.3, with the same `Content-Length` and
/// `Transfer-Encoding` rules as the capture parser). `Ok(None)` while the
/// head is incomplete.
///
/// # Errors
/// What makes the head unusable (not HTTP/1.x, conflicting
/// `Content-Length` values, …), in words.
pub fn response_head(buf: &[u8]) -> Result<Option<(usize, u16, Framing)>, &'static str> {
    match parse_head::<false>(buf) {
        Ok(head) => Ok(Some((
            head.len,
            head.status,
            response_framing(&head, false),
        ))),
        Err(e) if e == INCOMPLETE => Ok(None),
        Err(e) => Err(e),
    }
}

/// RFC 9112 §6.3 items 1–2, 4–7 for a response; `head_request`: it
/// answers a HEAD.
pub(super) fn response_framing(head: &Head, head_request: bool) -> Framing {
    let status = head.status;
    if head_request || status == 204 || status == 304 || status < 200 {
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
    }
}

/// Do the first bytes of a direction look like HTTP/1.x? Requests: a method
/// token of uppercase letters (RFC 9110 §9.1 registry style) then a space;
/// responses: `HTTP/`. `None` while too short to tell.
pub(super) fn plausible_start(side: Side, buf: &[u8]) -> Option<bool> {
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
pub(super) struct Head {
    /// Bytes of the header block.
    pub(super) len: usize,
    pub(super) method: String,
    pub(super) target: String,
    pub(super) status: u16,
    pub(super) version: u8,
    pub(super) content_length: Option<u64>,
    pub(super) transfer_encoding: bool,
    pub(super) chunked: bool,
    pub(super) expect_continue: bool,
    /// The values of its `Server-Timing` fields, in order.
    pub(super) server_timing: Vec<Vec<u8>>,
}

/// Parses a complete header block with httparse (a request if `REQUEST`).
pub(super) fn parse_head<const REQUEST: bool>(buf: &[u8]) -> Result<Head, &'static str> {
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
        Ok(httparse::Status::Complete(n)) => head.len = n,
        Ok(httparse::Status::Partial) => return Err(INCOMPLETE),
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
        } else if !REQUEST && super::server_timing::is_field(h.name.as_bytes()) {
            head.server_timing.push(h.value.to_vec());
        }
    }
    Ok(head)
}

/// The `Server-Timing` values of a complete trailer section (RFC 9112
/// §7.1.2: field lines up to an empty line); none when it does not parse.
pub(super) fn trailer_server_timing(buf: &[u8]) -> Vec<Vec<u8>> {
    let lines = buf.iter().filter(|&&b| b == b'\n').count();
    let mut headers = vec![httparse::EMPTY_HEADER; lines.clamp(1, MAX_HEADERS)];
    match httparse::parse_headers(buf, &mut headers) {
        Ok(httparse::Status::Complete((_, fields))) => fields
            .iter()
            .filter(|h| super::server_timing::is_field(h.name.as_bytes()))
            .map(|h| h.value.to_vec())
            .collect(),
        _ => Vec::new(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_heads_for_a_client() {
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 7, 7\r\n\r\nbody";
        assert_eq!(
            response_head(r),
            Ok(Some((r.len() - 4, 200, Framing::Length(7))))
        );
        assert_eq!(response_head(b"HTTP/1.1 200 OK\r\nContent-Len"), Ok(None));
        let te = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n";
        assert_eq!(
            response_head(te),
            Ok(Some((te.len(), 200, Framing::Chunked)))
        );
        let close = b"HTTP/1.0 200 OK\r\n\r\n";
        assert_eq!(
            response_head(close),
            Ok(Some((close.len(), 200, Framing::UntilClose)))
        );
        let none = b"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n";
        assert_eq!(
            response_head(none).map(|h| h.map(|h| h.2)),
            Ok(Some(Framing::None))
        );
        assert!(response_head(b"HTTP/1.1 200 OK\r\nContent-Length: 7, 8\r\n\r\n").is_err());
        assert!(response_head(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
    }

    #[test]
    fn framing_headers() {
        let h = parse_head::<false>(b"HTTP/1.1 200 OK\r\nContent-Length: 7, 7\r\n\r\n").unwrap();
        assert_eq!(h.content_length, Some(7));
        assert!(parse_head::<false>(b"HTTP/1.1 200 OK\r\nContent-Length: 7, 8\r\n\r\n").is_err());
        assert!(parse_head::<false>(b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n").is_err());
        assert!(parse_head::<false>(b"HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\n").is_err());
        let h = parse_head::<false>(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n")
            .unwrap();
        assert!(h.transfer_encoding && !h.chunked);
        let h = parse_head::<true>(
            b"PUT /x HTTP/1.1\r\nTRANSFER-ENCODING: Chunked \r\nExpect: 100-Continue\r\n\r\n",
        )
        .unwrap();
        assert!(h.chunked && h.expect_continue);
        assert_eq!((h.method.as_str(), h.target.as_str()), ("PUT", "/x"));
        assert_eq!(
            parse_head::<true>(b"GET / HTTP/2.0\r\n\r\n").unwrap_err(),
            "not HTTP/1.x"
        );
    }

    #[test]
    fn plausible_starts() {
        assert_eq!(plausible_start(Side::Client, b"\r\nGE"), None);
        assert_eq!(plausible_start(Side::Client, b"GET "), Some(true));
        assert_eq!(plausible_start(Side::Client, b"G\x00"), Some(false));
        assert_eq!(plausible_start(Side::Client, b" GET"), Some(false));
        assert_eq!(plausible_start(Side::Server, b"HTT"), None);
        assert_eq!(plausible_start(Side::Server, b"HTTP/1.1"), Some(true));
        assert_eq!(plausible_start(Side::Server, b"SSH-"), Some(false));
    }
}
