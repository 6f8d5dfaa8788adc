//! The TLS handshake carried in CRYPTO frames (RFC 9001 §4): the streams
//! per sender and encryption level, the hellos and transport parameters
//! read from them.

use super::QuicConn;
use crate::base::side::{FrameRef, Side};
use crate::proto::tls::hello::{self, ClientHelloInfo, ServerHelloInfo};
use crate::quic::crypto::{CryptoStream, Message, TransportParameters};

/// The handshake (RFC 9001 §4): CRYPTO streams by sender and level, each
/// side's transport parameters (RFC 9000 §7.4), the client's 0-RTT (RFC
/// 9001 §4.6), and HANDSHAKE_DONE (§4.1.2).
#[derive(Default)]
pub struct Handshake {
    /// CRYPTO streams by sender and level (Initial, Handshake, 1-RTT).
    pub(crate) crypto: [[CryptoStream; 3]; 2],
    /// Each side's transport parameters (ClientHello, EncryptedExtensions).
    pub transport: [Option<TransportParameters>; 2],
    /// First packet of 0-RTT from the client, its packet count and bytes.
    pub zero_rtt: Option<(FrameRef, u64, u64)>,
    /// HANDSHAKE_DONE (RFC 9001 §4.1.2).
    pub done: Option<FrameRef>,
}

impl QuicConn {
    /// The ClientHello, once whole.
    pub(crate) fn client_hello(&self) -> Option<(ClientHelloInfo, &Message)> {
        let m = self.handshake.crypto[Side::Client.index()][0].message(1)?;
        let (mut info, _) = hello::parse_client_hello(m.body.as_deref()?).ok()?;
        info.first = m.first;
        info.complete = m.done;
        Some((info, m))
    }

    /// The last ClientHello (the second, after a HelloRetryRequest).
    pub(crate) fn client_hello_last(&self) -> Option<(ClientHelloInfo, &Message)> {
        let m = self.handshake.crypto[Side::Client.index()][0]
            .messages
            .iter()
            .rev()
            .find(|m| m.ty == 1)?;
        Self::client_hello_of(m)
    }

    /// The client's first ClientHello, parsed (the one a HelloRetryRequest
    /// answered, when there were two).
    pub(crate) fn client_hello_first(&self) -> Option<(ClientHelloInfo, &Message)> {
        let m = self.handshake.crypto[Side::Client.index()][0]
            .messages
            .iter()
            .find(|m| m.ty == 1)?;
        Self::client_hello_of(m)
    }

    fn client_hello_of(m: &Message) -> Option<(ClientHelloInfo, &Message)> {
        let (mut info, _) = hello::parse_client_hello(m.body.as_deref()?).ok()?;
        info.first = m.first;
        info.complete = m.done;
        Some((info, m))
    }

    /// Where each handshake message of type `ty` sent by `side` at
    /// `level` started.
    pub fn crypto_messages(&self, side: Side, level: usize, ty: u8) -> Vec<FrameRef> {
        self.handshake.crypto[side.index()][level]
            .messages
            .iter()
            .filter(|m| m.ty == ty)
            .map(|m| m.first)
            .collect()
    }

    /// The ServerHellos and HelloRetryRequests, in order.
    pub(crate) fn server_hellos(&self) -> Vec<(ServerHelloInfo, &Message)> {
        self.handshake.crypto[Side::Server.index()][0]
            .messages
            .iter()
            .filter(|m| m.ty == 2)
            .filter_map(|m| {
                let (mut info, _) = hello::parse_server_hello(m.body.as_deref()?).ok()?;
                info.first = m.first;
                info.complete = m.done;
                Some((info, m))
            })
            .collect()
    }

    /// The handshake message of type `ty` sent by `side` at level `level`
    /// (0 Initial, 1 Handshake, 2 1-RTT).
    pub(crate) fn message(&self, side: Side, level: usize, ty: u8) -> Option<&Message> {
        self.handshake.crypto[side.index()][level].message(ty)
    }

    /// Whether the client offered HTTP/3 (ALPN `h3`, or a draft's `h3-NN`,
    /// RFC 9114 §3.1): only then are the streams read as HTTP/3.
    pub(super) fn speaks_http3(&mut self) -> bool {
        if self.http3.is_none() {
            let Some((ch, _)) = self.client_hello() else {
                return false;
            };
            self.http3 = Some(ch.alpn.iter().any(|a| a == "h3" || a.starts_with("h3-")));
        }
        self.http3 == Some(true)
    }

    /// The client's transport parameters once its ClientHello is whole.
    pub(super) fn hellos_read(&mut self, side: Side) {
        if side != Side::Client || self.handshake.transport[0].is_some() {
            return;
        }
        let Some(m) = self.handshake.crypto[0][0].message(1) else {
            return;
        };
        if let Some(tp) = m
            .body
            .as_deref()
            .and_then(|b| hello::client_hello_extension(b, 0x39))
        {
            self.handshake.transport[0] = Some(TransportParameters::parse(tp));
        }
    }

    /// The server's transport parameters from its EncryptedExtensions.
    pub(super) fn encrypted_extensions(&mut self) {
        let Some(body) = self.handshake.crypto[1][1]
            .message(8)
            .and_then(|m| m.body.as_deref())
        else {
            return;
        };
        let block = body.get(2..).unwrap_or_default();
        if let Some(tp) = hello::extension_in_block(block, 0x39) {
            self.handshake.transport[1] = Some(TransportParameters::parse(tp));
        }
    }
}
