//! The TLS handshake as the ladder and the detectors need it: its kind and
//! the frames of its milestones. Filled from the protocol layer's summary
//! ([`crate::proto::tls`]) by `crate::analysis::app`.

use std::borrow::Cow;

use crate::base::side::FrameRef;

/// Handshake kinds (docs/design.md §2 "Handshake kinds") with their round
/// trips by design.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum TlsKind {
    /// TLS 1.2 full handshake: 2 RTT (RFC 5246 §7.3).
    Tls12Full,
    /// TLS 1.2 abbreviated (session id or ticket resumption): 1 RTT (RFC 5246 §7.3, RFC 5077).
    Tls12Abbreviated,
    /// TLS 1.3 full: 1 RTT (RFC 8446 §2).
    Tls13Full,
    /// TLS 1.3 PSK resumption: 1 RTT (RFC 8446 §2.2).
    Tls13Psk,
    /// TLS 1.3 with 0-RTT early data: the request rides with the ClientHello (RFC 8446 §2.3).
    Tls13ZeroRtt,
    /// Older or unrecognised versions.
    Other,
}

impl TlsKind {
    /// Stable name used in the outputs.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TlsKind::Tls12Full => "tls12-full",
            TlsKind::Tls12Abbreviated => "tls12-abbreviated",
            TlsKind::Tls13Full => "tls13-full",
            TlsKind::Tls13Psk => "tls13-psk",
            TlsKind::Tls13ZeroRtt => "tls13-0rtt",
            TlsKind::Other => "other",
        }
    }

    /// Round trips the kind needs before the client can send its request.
    /// A resumed handshake (session id, ticket or PSK): no certificate,
    /// no signature.
    pub(crate) fn resumed(self) -> bool {
        matches!(
            self,
            TlsKind::Tls12Abbreviated | TlsKind::Tls13Psk | TlsKind::Tls13ZeroRtt
        )
    }

    pub(crate) fn nominal_rtts(self) -> u32 {
        match self {
            TlsKind::Tls12Full => 2,
            TlsKind::Tls13ZeroRtt => 0,
            _ => 1,
        }
    }
}

/// What a TLS connection negotiated, as people and the JSON output read it.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct TlsInfo {
    /// Negotiated version, e.g. `1.2` (borrowed for the known ones: no
    /// allocation per connection).
    pub version: Cow<'static, str>,
    /// Server name (SNI), when sent.
    pub sni: Option<String>,
    /// ALPN protocol selected, when any.
    pub alpn: Option<String>,
    /// Cipher suite selected (name, or hex code).
    pub cipher: Option<Cow<'static, str>>,
    /// The client offered resumption (session id, ticket or PSK).
    pub(crate) resumption_offered: bool,
    /// The server resumed the session.
    pub resumed: bool,
    /// The client offered 0-RTT early data.
    pub(crate) early_data_offered: bool,
    /// Application-data records each side sent (client, server).
    pub(crate) app_records: [u64; 2],
    /// Largest application record of each side (bytes).
    pub(crate) max_app_record: [u64; 2],
}

/// The handshake of one TLS connection: what was negotiated, its kind, and
/// the frames of its milestones.
#[derive(Debug, Clone)]
pub struct TlsFacts {
    /// What was negotiated.
    pub info: TlsInfo,
    /// Kind.
    pub(crate) kind: TlsKind,
    /// The ClientHello (first segment).
    pub(crate) client_hello: FrameRef,
    /// Highest version the client offered, e.g. `1.3`.
    pub(crate) client_max_version: Cow<'static, str>,
    /// The ServerHello.
    pub(crate) server_hello: Option<FrameRef>,
    /// Segment completing the server's first flight (ServerHelloDone in 1.2,
    /// the server Finished in 1.3).
    pub(crate) server_flight_end: Option<FrameRef>,
    /// The client's Finished (its last handshake record).
    pub(crate) client_finished: Option<FrameRef>,
    /// The server's Finished in a TLS 1.2 full handshake (after its CCS).
    pub(crate) server_finished: Option<FrameRef>,
    /// HelloRetryRequest, if the server asked for another key share.
    pub(crate) hello_retry: Option<FrameRef>,
    /// The ClientHello sent again after the HelloRetryRequest.
    pub(crate) second_client_hello: Option<FrameRef>,
    /// Segment after which the client could send application data: the
    /// handshake is done at the client when this packet reaches it.
    pub(crate) done: Option<FrameRef>,
    /// Whether `done` is a packet the client sent (abbreviated 1.2: its own
    /// Finished) rather than received.
    pub(crate) done_sent_by_client: bool,
    /// TLS 1.3 early data, when the ClientHello offered it.
    pub(crate) early_data: Option<EarlyDataFacts>,
}

/// TLS 1.3 early data (0-RTT).
#[derive(Debug, Clone, Copy)]
pub struct EarlyDataFacts {
    /// The ClientHello carried `early_data`.
    pub offered: bool,
    /// Early-data records and their payload bytes.
    pub(crate) records: u32,
    /// Payload bytes.
    pub(crate) bytes: u64,
    /// The first early-data record.
    pub(crate) first: Option<FrameRef>,
    /// Accepted (`Some(true)`), rejected, or unknown.
    pub(crate) accepted: Option<bool>,
}
