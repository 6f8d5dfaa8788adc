//! One request stream of HTTP/2 or HTTP/3, as both keep it.
//!
//! HTTP/2 (`proto::h2`, frames in a TCP byte stream, HPACK) and HTTP/3
//! (`proto::h3`, frames in QUIC streams, QPACK) frame a request and its
//! response differently, but what they learn of it is the same, and is
//! kept here: the header fields read ([`Header`]), the packet that
//! delivered each side's first HEADERS, the response's first DATA and each
//! side's end of stream (HTTP/2's END_STREAM, RFC 9113 §8.1; HTTP/3's FIN,
//! RFC 9114 §4.1), the DATA payload bytes, a reset. [`HttpStreams`] keeps
//! the first [`STREAM_DETAIL_CAP`] of a connection by stream identifier.
//! `analysis::requests` turns them, and HTTP/1.x exchanges, into rows.

use rustc_hash::FxHashMap;

use crate::base::side::{FrameRef, Side};
use crate::proto::http::server_timing::ServerTiming;
use crate::proto::lossy_truncated;

/// Streams kept in detail per connection; later ones are only counted.
pub const STREAM_DETAIL_CAP: usize = 256;
/// Longest header value kept (`:path`, `:authority`, `content-type`), in
/// characters.
pub const VALUE_CHARS: usize = 200;

/// The header fields kept of a stream's field sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header {
    /// `:method`.
    Method,
    /// `:path`.
    Path,
    /// `:authority`.
    Authority,
    /// `host` (stands for `:authority` when that is absent).
    Host,
    /// `:status`.
    Status,
    /// `content-type`.
    ContentType,
    /// `grpc-status` (gRPC's trailers, or a trailers-only response).
    GrpcStatus,
}

impl Header {
    /// The kept field named `name` (lower case, as HTTP/2 and HTTP/3 send
    /// field names: RFC 9113 §8.2.1, RFC 9114 §4.2).
    pub fn of(name: &[u8]) -> Option<Header> {
        Some(match name {
            b":method" => Header::Method,
            b":path" => Header::Path,
            b":authority" => Header::Authority,
            b"host" => Header::Host,
            b":status" => Header::Status,
            b"content-type" => Header::ContentType,
            b"grpc-status" => Header::GrpcStatus,
            _ => return None,
        })
    }

    /// A field's value as kept: lossy UTF-8, at most [`VALUE_CHARS`]
    /// characters.
    pub fn value(value: &[u8]) -> String {
        lossy_truncated(value, VALUE_CHARS)
    }
}

/// A stream reset: HTTP/2's RST_STREAM (RFC 9113 §6.4), QUIC's
/// RESET_STREAM or STOP_SENDING (RFC 9000 §19.4, §19.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Reset {
    /// The packet that carried it.
    pub at: FrameRef,
    /// Its sender.
    pub by: Side,
    /// The error code, when the tracker read it.
    pub code: Option<u64>,
}

/// One request stream: a request and its response.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct HttpStream {
    /// Stream identifier (HTTP/2: odd when the client opened it; HTTP/3:
    /// a client-initiated bidirectional QUIC stream, ≡ 0 mod 4).
    pub id: u64,
    /// `:method`.
    pub method: Option<String>,
    /// `:path` (lossy UTF-8, at most 200 characters); for gRPC the method,
    /// `/package.Service/Method`.
    pub path: Option<String>,
    /// `:authority`, else `host` (lossy UTF-8, at most 200 characters).
    pub authority: Option<String>,
    /// `:status` of the final response (200 and above).
    pub status: Option<u16>,
    /// The response's `content-type` (the first one).
    pub content_type: Option<String>,
    /// `grpc-status` (in the trailers, or a trailers-only response).
    pub grpc_status: Option<u32>,
    /// The packet completing the request's (first) HEADERS frame.
    pub request_headers: Option<FrameRef>,
    /// The packet completing the request: its END_STREAM (on HEADERS, DATA
    /// or trailers), or the client's stream up to its FIN.
    pub request_end: Option<FrameRef>,
    /// The packet completing the response's (first) HEADERS frame (an
    /// interim 1xx response included).
    pub response_headers: Option<FrameRef>,
    /// The packet delivering the response's first DATA.
    pub response_first_data: Option<FrameRef>,
    /// The packet completing the response: its END_STREAM, or the
    /// server's stream up to its FIN.
    pub response_end: Option<FrameRef>,
    /// DATA payload bytes, client's and server's.
    pub data_bytes: [u64; 2],
    /// The first reset of the stream.
    pub reset: Option<Reset>,
    /// A direction of the stream could not be followed to its end (HTTP/3:
    /// out-of-order bytes beyond the reassembly cap, malformed frames).
    pub incomplete: bool,
    /// The response's `Server-Timing` fields, its HEADERS' and its
    /// trailers' ([`crate::proto::http::server_timing`]).
    #[serde(skip)]
    pub server_timing: Option<ServerTiming>,
}

impl HttpStream {
    /// A HEADERS frame of `sender` delivered by `at` (only the first one of
    /// each side is timed).
    pub fn headers(&mut self, sender: Side, at: FrameRef) {
        match sender {
            Side::Client => self.request_headers.get_or_insert(at),
            Side::Server => self.response_headers.get_or_insert(at),
        };
    }

    /// `len` DATA payload bytes of `sender` delivered by `at`.
    pub fn data(&mut self, sender: Side, len: u64, at: FrameRef) {
        self.data_bytes[sender.index()] += len;
        if sender == Side::Server {
            self.response_first_data.get_or_insert(at);
        }
    }

    /// `sender`'s side of the stream ended (END_STREAM, FIN) with `at`.
    pub fn end(&mut self, sender: Side, at: FrameRef) {
        match sender {
            Side::Client => self.request_end.get_or_insert(at),
            Side::Server => self.response_end.get_or_insert(at),
        };
    }

    /// A `Server-Timing` field `value` of the response, in the field
    /// section delivered by `at`: a trailer when the final `:status` came
    /// in an earlier section (call it before that section's
    /// [`field`](Self::field)s).
    pub fn server_timing(&mut self, value: &[u8], at: FrameRef) {
        let trailer = self.status.is_some();
        ServerTiming::add(&mut self.server_timing, value, at, trailer);
    }

    /// The stream was reset (the first reset is kept).
    pub fn reset(&mut self, reset: Reset) {
        self.reset.get_or_insert(reset);
    }

    /// A decoded header field, its value as [`Header::value`] keeps it.
    /// Pseudo-headers and `grpc-status` take the last value sent, `host` and
    /// `content-type` the first, `:status` the first final one (interim 1xx
    /// responses do not count).
    pub fn field(&mut self, header: Header, value: String) {
        match header {
            Header::Method => self.method = Some(value),
            Header::Path => self.path = Some(value),
            Header::Authority => self.authority = Some(value),
            Header::Host => {
                self.authority.get_or_insert(value);
            }
            Header::Status => {
                self.status = self.status.or(value.parse().ok().filter(|s| *s >= 200));
            }
            Header::ContentType => {
                self.content_type.get_or_insert(value);
            }
            Header::GrpcStatus => self.grpc_status = value.parse().ok(),
        }
    }
}

/// The streams of one connection kept in detail: the first
/// [`STREAM_DETAIL_CAP`], in the order they were first seen.
#[derive(Debug, Clone, Default)]
pub struct HttpStreams {
    list: Vec<HttpStream>,
    index: FxHashMap<u64, usize>,
}

impl HttpStreams {
    /// The stream `id`, opened on first sight while fewer than
    /// [`STREAM_DETAIL_CAP`] are kept (`None` past the cap).
    pub fn open(&mut self, id: u64) -> Option<&mut HttpStream> {
        let i = match self.index.get(&id) {
            Some(&i) => i,
            None => {
                if self.list.len() >= STREAM_DETAIL_CAP {
                    return None;
                }
                let i = self.list.len();
                self.list.push(HttpStream {
                    id,
                    ..HttpStream::default()
                });
                self.index.insert(id, i);
                i
            }
        };
        self.list.get_mut(i)
    }

    /// The stream `id` if it is kept, never opening it.
    pub fn get_mut(&mut self, id: u64) -> Option<&mut HttpStream> {
        let i = *self.index.get(&id)?;
        self.list.get_mut(i)
    }

    /// The streams, in the order they were first seen.
    pub fn into_vec(self) -> Vec<HttpStream> {
        self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(frame: u64) -> FrameRef {
        FrameRef::at_ms(frame)
    }

    #[test]
    fn the_first_of_each_event_is_kept_and_the_cap_holds() {
        let mut streams = HttpStreams::default();
        let st = streams.open(1).unwrap();
        st.headers(Side::Client, at(1));
        st.headers(Side::Client, at(2));
        st.end(Side::Client, at(2));
        st.field(Header::Status, "103".into());
        st.field(Header::Status, "200".into());
        st.field(Header::Status, "204".into());
        st.field(Header::Host, "a".into());
        st.field(Header::Authority, "b".into());
        st.data(Side::Server, 10, at(3));
        st.data(Side::Server, 5, at(4));
        st.reset(Reset {
            at: at(5),
            by: Side::Server,
            code: Some(7),
        });
        st.reset(Reset {
            at: at(6),
            by: Side::Client,
            code: None,
        });
        let st = streams.get_mut(1).unwrap().clone();
        assert_eq!(st.request_headers.map(|f| f.frame), Some(1));
        assert_eq!(st.request_end.map(|f| f.frame), Some(2));
        assert_eq!(st.status, Some(200));
        assert_eq!(st.authority.as_deref(), Some("b"));
        assert_eq!(st.response_first_data.map(|f| f.frame), Some(3));
        assert_eq!(st.data_bytes, [0, 15]);
        assert_eq!(st.reset.map(|r| r.by), Some(Side::Server));
        for id in 2..=STREAM_DETAIL_CAP as u64 + 10 {
            let _ = streams.open(id);
        }
        assert!(streams.get_mut(STREAM_DETAIL_CAP as u64 + 1).is_none());
        assert_eq!(streams.into_vec().len(), STREAM_DETAIL_CAP);
    }
}
