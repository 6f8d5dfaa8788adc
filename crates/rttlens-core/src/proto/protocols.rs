//! Feeding the protocol trackers (TLS, HTTP/1.1) from the reassembled streams.
//!
//! Both trackers get the first bytes of every connection; each says as soon
//! as it can whether the stream is its protocol, and one that says no is
//! dropped, so a connection costs at most one tracker after its first bytes
//! and none when it is neither.

use crate::base::side::{FrameRef, Side};
use crate::capture::keylog::KeyStore;
use crate::flow::reassembly::Trackers;
use crate::proto::http::HttpTracker;
use crate::proto::tls::decrypt::{Decryption, Plain};
use crate::proto::tls::{TlsSummary, TlsTracker};

/// The protocol trackers of one connection.
#[derive(Debug)]
pub struct Protocols {
    tls: Option<Box<TlsTracker>>,
    http: Option<Box<HttpTracker>>,
    /// HTTP/1.x inside TLS, fed with the decrypted application data.
    inner: Option<Box<HttpTracker>>,
}

impl Default for Protocols {
    fn default() -> Self {
        Protocols {
            tls: Some(Box::default()),
            http: Some(Box::default()),
            inner: None,
        }
    }
}

/// What the trackers found, once the connection is over.
#[derive(Debug, Default)]
pub(crate) enum Found {
    /// TLS records and handshake; with keys, what decryption did and the
    /// HTTP/1.x messages inside.
    Tls(
        Box<TlsSummary>,
        Option<Decryption>,
        Option<Box<HttpTracker>>,
    ),
    /// HTTP/1.x messages.
    Http(Box<HttpTracker>),
    /// Neither (or undecided).
    #[default]
    Neither,
}

impl Protocols {
    fn settle(&mut self) {
        match self.tls.as_ref().and_then(|t| t.is_tls()) {
            Some(false) => self.tls = None,
            // a TLS stream is not plain HTTP, and `finish` keeps TLS: the
            // HTTP tracker would only scan ciphertext for header ends
            Some(true) => self.http = None,
            None => {}
        }
        if self
            .http
            .as_ref()
            .is_some_and(|h| h.is_http() == Some(false))
        {
            self.http = None;
        }
    }

    /// The connection is over: keep the tracker that recognised its protocol.
    pub(crate) fn finish(mut self) -> Found {
        if let Some(h) = self.http.as_mut() {
            h.end(Side::Client);
            h.end(Side::Server);
        }
        if let Some(mut t) = self.tls.filter(|t| t.is_tls() == Some(true)) {
            let decryption = t.take_decryption();
            let mut inner = self.inner.take();
            if let Some(h) = inner.as_mut() {
                h.end(Side::Client);
                h.end(Side::Server);
            }
            let inner = inner.filter(|h| h.is_http() == Some(true));
            return Found::Tls(Box::new(t.into_summary()), decryption, inner);
        }
        match self.http {
            Some(h) if h.is_http() == Some(true) => Found::Http(h),
            _ => Found::Neither,
        }
    }
}

impl Protocols {
    /// Feeds the plaintext the TLS tracker decrypted to the protocol inside.
    fn inside(&mut self) {
        let (Some(t), inner) = (self.tls.as_mut(), &mut self.inner) else {
            return;
        };
        t.take_plaintext(|p| {
            let h = inner.get_or_insert_with(Box::default);
            match p {
                Plain::Data {
                    side,
                    offset,
                    data,
                    at,
                } => h.push(side, offset, &data, at),
                Plain::Lost { side, offset, len } => h.gap(side, offset, len),
            }
        });
    }
}

impl Trackers for Protocols {
    type Ctx = KeyStore;

    fn new(keys: &KeyStore) -> Self {
        if keys.is_empty() {
            return Protocols::default();
        }
        Protocols {
            tls: Some(Box::new(TlsTracker::with_keys(keys.clone()))),
            http: Some(Box::default()),
            inner: None,
        }
    }

    fn wants_bytes(&self) -> bool {
        self.tls.is_some() || self.http.is_some()
    }

    fn data(&mut self, side: Side, offset: u64, data: &[u8], at: FrameRef) {
        if let Some(t) = self.tls.as_mut() {
            t.push(side, offset, data, at);
            self.inside();
        }
        if let Some(h) = self.http.as_mut() {
            h.push(side, offset, data, at);
        }
        self.settle();
    }

    fn gap(&mut self, side: Side, offset: u64, len: u64) {
        if let Some(t) = self.tls.as_mut() {
            t.gap(side, offset, len);
            self.inside();
        }
        if let Some(h) = self.http.as_mut() {
            h.gap(side, offset, len);
        }
        self.settle();
    }
}
