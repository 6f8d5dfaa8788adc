//! What the TLS tracker learnt of one connection ([`TlsSummary`]), the
//! server's side of it made at the server's first byte. Its handshake's
//! classification is in `handshake.rs` (`TlsSummary::handshake`).

use super::hello::{self, ClientHelloInfo, ServerHelloInfo};
use super::TlsDirection;
use crate::base::side::Side;

/// Everything the tracker learnt of one TLS connection.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TlsSummary {
    /// The client's direction.
    pub client: TlsDirection,
    /// The first ClientHello.
    pub client_hello: Option<ClientHelloInfo>,
    /// The ClientHello sent in answer to a HelloRetryRequest (boxed: rare,
    /// and every open TLS connection would carry its room).
    pub second_client_hello: Option<Box<ClientHelloInfo>>,
    /// The server's direction and hellos, made at the server's first byte
    /// (or gap): boxed, as a server that never answers a ClientHello (an
    /// accept queue that overflowed, a scan) is common among the open
    /// connections of a busy capture and its room, 544 B, would be empty.
    /// Read through [`TlsSummary::server`], [`TlsSummary::server_hello`] and
    /// [`TlsSummary::hello_retry_request`].
    pub(super) server_side: Option<Box<ServerSide>>,
}

/// What was seen of the server's side of a TLS connection (see
/// [`TlsSummary`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(super) struct ServerSide {
    pub(super) dir: TlsDirection,
    /// The HelloRetryRequest, if the server sent one (boxed: rare).
    pub(super) hello_retry_request: Option<Box<ServerHelloInfo>>,
    /// The (first real) ServerHello.
    pub(super) server_hello: Option<ServerHelloInfo>,
}

impl ServerSide {
    pub(super) fn new() -> Self {
        ServerSide {
            dir: TlsDirection::new(Side::Server),
            hello_retry_request: None,
            server_hello: None,
        }
    }
}

/// The server's direction of a connection whose server sent nothing.
static SERVER_SILENT: std::sync::LazyLock<TlsDirection> =
    std::sync::LazyLock::new(|| TlsDirection::new(Side::Server));

impl TlsSummary {
    pub(super) fn new() -> Self {
        TlsSummary {
            client: TlsDirection::new(Side::Client),
            client_hello: None,
            second_client_hello: None,
            server_side: None,
        }
    }

    /// The server's direction (empty when the server sent nothing).
    pub fn server(&self) -> &TlsDirection {
        self.server_side.as_ref().map_or(&SERVER_SILENT, |s| &s.dir)
    }

    /// The (first real) ServerHello.
    pub fn server_hello(&self) -> Option<&ServerHelloInfo> {
        self.server_side.as_ref()?.server_hello.as_ref()
    }

    /// The HelloRetryRequest, if the server sent one.
    pub fn hello_retry_request(&self) -> Option<&ServerHelloInfo> {
        self.server_side.as_ref()?.hello_retry_request.as_deref()
    }

    /// One direction.
    pub(crate) fn direction(&self, side: Side) -> &TlsDirection {
        match side {
            Side::Client => &self.client,
            Side::Server => self.server(),
        }
    }

    /// The negotiated protocol version (`0x0303`, `0x0304`, …).
    pub fn version(&self) -> Option<u16> {
        self.server_hello().map(ServerHelloInfo::version)
    }

    /// The server name the client asked for (SNI).
    pub fn sni(&self) -> Option<&str> {
        self.client_hello.as_ref()?.sni.as_deref()
    }

    /// ALPN protocols the client offered.
    pub fn alpn_offered(&self) -> &[String] {
        self.client_hello
            .as_ref()
            .map_or(&[][..], |ch| ch.alpn.as_slice())
    }

    /// ALPN protocol the server selected.
    pub fn alpn_selected(&self) -> Option<&str> {
        self.server_hello()?.alpn.as_deref()
    }

    /// The selected cipher suite and its IANA name, if known.
    pub fn cipher_suite(&self) -> Option<(u16, Option<&'static str>)> {
        let sh = self.server_hello()?;
        Some((sh.cipher_suite, sh.cipher_suite_name))
    }

    /// Did the client offer to resume? TLS 1.3 (or a client offering it):
    /// a `pre_shared_key` extension; TLS 1.2: a non-empty session id or
    /// session ticket. The session id does not count for a TLS 1.3 client,
    /// which sends a random one for middlebox compatibility (RFC 8446 §D.4).
    pub fn resumption_offered(&self) -> bool {
        let Some(ch) = &self.client_hello else {
            return false;
        };
        let tls13 = match self.version() {
            Some(v) => hello::is_tls13(v),
            None => ch.offers_tls13(),
        };
        ch.pre_shared_key
            || (!tls13 && (!ch.session_id.is_empty() || ch.session_ticket.unwrap_or(0) > 0))
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod size {
    /// The server side a TLS connection makes at the server's first byte
    /// fits mimalloc's 640-byte class and its walker the 256-byte one
    /// (tests/state_size.rs holds the tracker's).
    #[test]
    fn the_server_side_fits_its_size_classes() {
        let side = std::mem::size_of::<super::ServerSide>();
        let walker = std::mem::size_of::<super::super::record::DirParser>();
        assert!(side <= 640, "ServerSide is {side} B");
        assert!(walker <= 256, "DirParser is {walker} B");
    }
}
