//! Feeding the protocol trackers (TLS, HTTP/1.1) from the reassembled streams.
//!
//! Both trackers get the first bytes of every connection; each says as soon
//! as it can whether the stream is its protocol, and one that says no is
//! dropped, so a connection costs at most one tracker after its first bytes
//! and none when it is neither.

use crate::base::side::{FrameRef, Side};
use crate::flow::reassembly::Trackers;
use crate::proto::http::HttpTracker;
use crate::proto::tls::{TlsSummary, TlsTracker};

/// The protocol trackers of one connection.
#[derive(Debug)]
pub struct Protocols {
    tls: Option<Box<TlsTracker>>,
    http: Option<Box<HttpTracker>>,
}

impl Default for Protocols {
    fn default() -> Self {
        Protocols {
            tls: Some(Box::default()),
            http: Some(Box::default()),
        }
    }
}

/// What the trackers found, once the connection is over.
#[derive(Debug, Default)]
pub(crate) enum Found {
    /// TLS records and handshake.
    Tls(Box<TlsSummary>),
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
        if let Some(t) = self.tls.filter(|t| t.is_tls() == Some(true)) {
            return Found::Tls(Box::new(t.into_summary()));
        }
        match self.http {
            Some(h) if h.is_http() == Some(true) => Found::Http(h),
            _ => Found::Neither,
        }
    }
}

impl Trackers for Protocols {
    fn wants_bytes(&self) -> bool {
        self.tls.is_some() || self.http.is_some()
    }

    fn data(&mut self, side: Side, offset: u64, data: &[u8], at: FrameRef) {
        if let Some(t) = self.tls.as_mut() {
            t.push(side, offset, data, at);
        }
        if let Some(h) = self.http.as_mut() {
            h.push(side, offset, data, at);
        }
        self.settle();
    }

    fn gap(&mut self, side: Side, offset: u64, len: u64) {
        if let Some(t) = self.tls.as_mut() {
            t.gap(side, offset, len);
        }
        if let Some(h) = self.http.as_mut() {
            h.gap(side, offset, len);
        }
        self.settle();
    }
}
