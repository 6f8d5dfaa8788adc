//! Which end of a connection is the client: the SYN says so; without one,
//! the opening bytes of the first payload ([`Opening`]: a TLS ClientHello or
//! an HTTP request comes from the client), else the lower port is the
//! server's.

use std::net::SocketAddr;

use crate::wire::{TcpFlags, TcpSegment};

/// The client's and the server's address for a connection whose first
/// segment is `seg`, and whether a SYN told them.
pub(super) fn roles(seg: &TcpSegment<'_>) -> (SocketAddr, SocketAddr, bool) {
    let src = SocketAddr::new(seg.src, seg.src_port);
    let dst = SocketAddr::new(seg.dst, seg.dst_port);
    let syn = seg.flags.contains(TcpFlags::SYN);
    let ack = seg.flags.contains(TcpFlags::ACK);
    if syn && !ack {
        (src, dst, true)
    } else if syn && ack {
        (dst, src, true)
    } else if let Some(src_is_client) = role_from_payload(seg.payload) {
        if src_is_client {
            (src, dst, false)
        } else {
            (dst, src, false)
        }
    } else if seg.src_port > seg.dst_port {
        (src, dst, false)
    } else {
        (dst, src, false)
    }
}

/// Without a SYN: whether a first payload's sender is the client (`true`:
/// a TLS ClientHello or an HTTP request line), the server (`false`: a TLS
/// ServerHello or an HTTP status line), or cannot be told (`None`: mid-way
/// through a stream). Servers on ephemeral ports (a test server bound to
/// port 0, a load balancer's back end) defeat the port rule, the opening
/// bytes of the exchange do not. Only the first bytes are looked at (a
/// record header and a handshake type, RFC 8446 §5.1 and §4; a request
/// method or `HTTP/1.`, RFC 9112 §3 and §4), so no parser is needed.
fn role_from_payload(payload: &[u8]) -> Option<bool> {
    Opening::of(payload).map(Opening::is_client_side)
}

/// What the first bytes of a stream say it carries (see
/// `role_from_payload`): enough to tell a request from a TLS handshake
/// when the snapshot length cut the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// A TLS handshake record holding a ClientHello.
    TlsClientHello,
    /// A TLS handshake record holding a ServerHello.
    TlsServerHello,
    /// An HTTP/1.x request line (a method and a space).
    HttpRequest,
    /// An HTTP/1.x status line.
    HttpResponse,
}

impl Opening {
    /// The opening of `payload`, if it is one of these.
    pub fn of(payload: &[u8]) -> Option<Opening> {
        const METHODS: [&[u8]; 8] = [
            b"GET ",
            b"POST ",
            b"HEAD ",
            b"PUT ",
            b"DELETE ",
            b"OPTIONS ",
            b"PATCH ",
            b"CONNECT ",
        ];
        match payload {
            [0x16, 0x03, _, _, _, 1, ..] => Some(Opening::TlsClientHello),
            [0x16, 0x03, _, _, _, 2, ..] => Some(Opening::TlsServerHello),
            p if METHODS.iter().any(|m| p.starts_with(m)) => Some(Opening::HttpRequest),
            p if p.starts_with(b"HTTP/1.") => Some(Opening::HttpResponse),
            _ => None,
        }
    }

    /// A client sends it.
    pub(crate) fn is_client_side(self) -> bool {
        matches!(self, Opening::TlsClientHello | Opening::HttpRequest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_without_syn_from_the_opening_bytes() {
        // a ClientHello record header (type 22, TLS 1.0 record, length, type 1)
        assert_eq!(role_from_payload(&[0x16, 3, 1, 0, 200, 1, 0]), Some(true));
        assert_eq!(role_from_payload(&[0x16, 3, 3, 0, 90, 2, 0]), Some(false));
        assert_eq!(role_from_payload(b"GET / HTTP/1.1\r\n"), Some(true));
        assert_eq!(role_from_payload(b"HTTP/1.1 200 OK\r\n"), Some(false));
        // application data, a cut header, nothing: not told
        assert_eq!(role_from_payload(&[0x17, 3, 3, 0, 90, 1]), None);
        assert_eq!(role_from_payload(&[0x16, 3, 1]), None);
        assert_eq!(role_from_payload(b""), None);
    }
}
