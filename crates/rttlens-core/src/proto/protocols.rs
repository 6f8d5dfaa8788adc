//! Feeding the protocol trackers (TLS, HTTP/1.1, HTTP/2) from the
//! reassembled streams.
//!
//! The TLS tracker gets the first bytes of every connection, the HTTP/1.1
//! tracker every byte and gap TLS has not claimed by then (it is made by the
//! first of them, so a TLS stream never makes one); each says as soon as it
//! can whether the stream is its protocol, and one that says no is dropped,
//! so a connection costs at most one tracker after its first bytes and none
//! when it is neither. HTTP/2 in clear (`h2c` by
//! prior knowledge) is recognised by the client's connection preface or the
//! server's first SETTINGS frame at the stream's start. Inside TLS, with
//! keys, the decrypted application data goes to HTTP/2 when ALPN chose `h2`
//! and to HTTP/1.1 otherwise.

use crate::base::side::{FrameRef, Side};
use crate::capture::keylog::KeyStore;
use crate::flow::reassembly::Trackers;
use crate::proto::h2::{H2Summary, H2Tracker};
use crate::proto::http::HttpTracker;
use crate::proto::tls::decrypt::{Decryption, Plain};
use crate::proto::tls::TlsTracker;

/// The protocol trackers of one connection.
#[derive(Debug)]
pub struct Protocols {
    /// No byte seen yet: the TLS tracker is made by the first bytes or gap
    /// (`start`), the HTTP one when it is to see them (`http_made`), so a
    /// connection that never carries data (a storm's SYNs sent again and
    /// again) holds none. `Some` with the keys
    /// the connection's TLS tracker gets, when the key store had any as the
    /// connection began.
    pending: Option<Option<KeyStore>>,
    tls: Option<Box<TlsTracker>>,
    http: Option<Box<HttpTracker>>,
    /// HTTP/1.x is a candidate whose tracker is not made yet: it is made
    /// by the first bytes or gap it is to see, so a stream whose first
    /// bytes are TLS never allocates one.
    http_unmade: bool,
    /// HTTP/2 in clear.
    h2: Option<Box<H2Tracker>>,
    /// Where HTTP/2 in clear begins in each direction's stream (0 by prior
    /// knowledge; after the `101` with `Upgrade: h2c`).
    h2_from: [u64; 2],
    /// A `101 Switching Protocols` seen, the new protocol not yet known.
    upgrade: Option<Box<Upgrade>>,
    /// The protocol inside TLS, fed with the decrypted application data.
    inner: Option<InnerTracker>,
}

/// An HTTP/1.1 protocol switch that may be to HTTP/2 in clear (h2c).
#[derive(Debug)]
struct Upgrade {
    /// Where the new protocol begins in each direction.
    from: [u64; 2],
    /// HTTP/2 with the upgraded request as stream 1, taken when the bytes
    /// after the switch open HTTP/2.
    h2: H2Tracker,
}

impl Default for Protocols {
    /// Trackers for a connection without keys, made by its first bytes.
    fn default() -> Self {
        Protocols {
            pending: Some(None),
            tls: None,
            http: None,
            http_unmade: false,
            h2: None,
            h2_from: [0; 2],
            upgrade: None,
            inner: None,
        }
    }
}

/// The tracker of what TLS carries.
#[derive(Debug)]
enum InnerTracker {
    Http1(Box<HttpTracker>),
    H2(Box<H2Tracker>),
}

impl InnerTracker {
    fn feed(&mut self, p: Plain) {
        match p {
            Plain::Data {
                side,
                offset,
                data,
                at,
            } => match self {
                InnerTracker::Http1(h) => h.push(side, offset, &data, at),
                InnerTracker::H2(h) => h.push(side, offset, &data, at),
            },
            Plain::Lost { side, offset, len } => match self {
                InnerTracker::Http1(h) => h.gap(side, offset, len),
                InnerTracker::H2(h) => h.gap(side, offset, len),
            },
        }
    }
}

/// What TLS carried, decrypted.
#[derive(Debug)]
pub(crate) enum Inner {
    /// HTTP/1.x messages.
    Http1(Box<HttpTracker>),
    /// HTTP/2 frames and streams.
    H2(Box<H2Summary>),
}

/// What the trackers found, once the connection is over.
#[derive(Debug, Default)]
pub(crate) enum Found {
    /// TLS records and handshake; with keys, what decryption did and the
    /// protocol inside. The tracker is kept whole (its summary read through
    /// [`TlsTracker::summary`]): moving the summary into a box of its own
    /// would cost an allocation and a 1 KB copy per connection.
    Tls(Box<TlsTracker>, Option<Decryption>, Option<Inner>),
    /// HTTP/1.x messages.
    Http(Box<HttpTracker>),
    /// HTTP/2 in clear.
    H2(Box<H2Summary>),
    /// Neither (or undecided).
    #[default]
    Neither,
}

impl Protocols {
    /// The first bytes (or gap): TLS and HTTP/1.x are both candidates.
    fn start(&mut self) {
        if let Some(keys) = self.pending.take() {
            self.tls = Some(Box::new(match keys {
                Some(keys) => TlsTracker::with_keys(keys),
                None => TlsTracker::default(),
            }));
            self.http_unmade = true;
        }
    }

    /// HTTP/1.x is still a candidate (its tracker made or not).
    fn http_candidate(&self) -> bool {
        self.http.is_some() || self.http_unmade
    }

    /// HTTP/1.x is not this stream's protocol.
    fn drop_http(&mut self) {
        self.http = None;
        self.http_unmade = false;
    }

    /// The HTTP/1.x tracker, made now if it is a candidate not made yet.
    fn http_made(&mut self) -> Option<&mut HttpTracker> {
        if std::mem::take(&mut self.http_unmade) {
            self.http = Some(Box::default());
        }
        self.http.as_deref_mut()
    }

    fn settle(&mut self) {
        match self.tls.as_ref().and_then(|t| t.is_tls()) {
            Some(false) => self.tls = None,
            // a TLS stream is not plain HTTP, and `finish` keeps TLS: the
            // HTTP tracker would only scan ciphertext for header ends
            Some(true) => self.drop_http(),
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

    /// Whether `data`, the first bytes of `side`'s stream, start HTTP/2:
    /// the client's preface, or a SETTINGS frame on stream 0 (the server's
    /// first frame, RFC 9113 §3.4).
    fn opens_h2(side: Side, data: &[u8]) -> bool {
        match side {
            Side::Client => H2Tracker::starts_preface(data),
            Side::Server => {
                data.len() >= 9 && data[3] == 4 && data[4] & !1 == 0 && data[5..9] == [0; 4]
            }
        }
    }

    /// Feeds the plaintext the TLS tracker decrypted to the protocol inside:
    /// HTTP/2 when ALPN chose it or the first plaintext opens HTTP/2 (TLS
    /// 1.3 sends ALPN's choice encrypted), HTTP/1.x otherwise.
    fn inside(&mut self) {
        let (Some(t), inner) = (self.tls.as_mut(), &mut self.inner) else {
            return;
        };
        let alpn_h2 = t
            .summary()
            .alpn_selected()
            .is_some_and(|a| a == "h2" || a.starts_with("h2-"));
        t.take_plaintext(|p| {
            let tracker = inner.get_or_insert_with(|| {
                let h2 = alpn_h2
                    || matches!(&p, Plain::Data { side, data, .. } if Self::opens_h2(*side, data));
                if h2 {
                    InnerTracker::H2(Box::default())
                } else {
                    InnerTracker::Http1(Box::default())
                }
            });
            tracker.feed(p);
        });
    }

    /// HTTP/1.1 switched protocols: if it was a `101` to a request, where
    /// the new protocol begins, to be told by its first bytes.
    fn switched(&mut self) {
        let Some(h) = self.http.as_ref() else { return };
        let Some(ex) = h.exchanges().last() else {
            return;
        };
        let (Some(q), Some(r)) = (ex.request.as_ref(), ex.response.as_ref()) else {
            return;
        };
        if r.status != 101 {
            return;
        }
        let q_end = q
            .end
            .unwrap_or(q.offset + u64::from(q.head_len) + q.body_len);
        let last = q.last.unwrap_or(q.head_complete);
        self.upgrade = Some(Box::new(Upgrade {
            from: [q_end, r.offset + u64::from(r.head_len)],
            h2: H2Tracker::after_upgrade(&q.method, &q.target, q.first, last),
        }));
        self.drop_http();
    }

    /// Bytes after a protocol switch: HTTP/2 if they open it (the client's
    /// preface, the server's SETTINGS), nothing otherwise (a WebSocket, a
    /// tunnel).
    fn after_switch(&mut self, side: Side, offset: u64, data: &[u8]) {
        let Some(u) = self.upgrade.as_ref() else {
            return;
        };
        let from = u.from[side.index()];
        let end = offset + data.len() as u64;
        if from < offset || from >= end {
            return;
        }
        let first = &data[usize::try_from(from - offset).unwrap_or(data.len())..];
        // the server's SETTINGS needs a frame header to be told
        if side == Side::Server && first.len() < 9 {
            return;
        }
        let Some(u) = self.upgrade.take() else { return };
        if Self::opens_h2(side, first) {
            self.h2_from = u.from;
            self.h2 = Some(Box::new(u.h2));
            self.tls = None;
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
            let inner = match self.inner.take() {
                Some(InnerTracker::Http1(mut h)) => {
                    h.end(Side::Client);
                    h.end(Side::Server);
                    (h.is_http() == Some(true)).then_some(Inner::Http1(h))
                }
                Some(InnerTracker::H2(h)) => Some(Inner::H2(Box::new(h.finish()))),
                None => None,
            };
            return Found::Tls(t, decryption, inner);
        }
        if let Some(h) = self.h2 {
            return Found::H2(Box::new(h.finish()));
        }
        match self.http {
            Some(h) if h.is_http() == Some(true) => Found::Http(h),
            _ => Found::Neither,
        }
    }
}

impl Trackers for Protocols {
    type Ctx = KeyStore;

    fn new(keys: &KeyStore) -> Self {
        Protocols {
            pending: Some((!keys.is_empty()).then(|| keys.clone())),
            ..Protocols::default()
        }
    }

    fn wants_bytes(&self) -> bool {
        self.pending.is_some()
            || self.tls.is_some()
            || self.http_candidate()
            || self.h2.is_some()
            || self.upgrade.is_some()
    }

    fn data(&mut self, side: Side, offset: u64, data: &[u8], at: FrameRef) {
        self.start();
        if offset == 0 && self.h2.is_none() && self.http_candidate() && Self::opens_h2(side, data) {
            // HTTP/2 in clear by prior knowledge: neither TLS nor HTTP/1.x
            self.h2 = Some(Box::default());
            self.drop_http();
            self.tls = None;
        }
        if self.upgrade.is_some() {
            self.after_switch(side, offset, data);
        }
        if let Some(h) = self.h2.as_mut() {
            let from = self.h2_from[side.index()];
            let skip = from.saturating_sub(offset);
            if let Some(rest) = usize::try_from(skip).ok().and_then(|k| data.get(k..)) {
                if !rest.is_empty() {
                    h.push(side, offset + skip - from, rest, at);
                }
            }
            return;
        }
        if let Some(t) = self.tls.as_mut() {
            t.push(side, offset, data, at);
            self.inside();
            // a stream its first bytes show to be TLS is dropped by the HTTP
            // tracker below anyway (`settle`): its tracker need not be made,
            // nor copy a ClientHello into its header buffer first
            if self.http_candidate() && self.tls.as_ref().is_some_and(|t| t.is_tls() == Some(true))
            {
                self.drop_http();
            }
        }
        if let Some(h) = self.http_made() {
            h.push(side, offset, data, at);
            if h.upgraded() {
                self.switched();
                if self.upgrade.is_some() {
                    self.after_switch(side, offset, data);
                    if self.h2.is_some() {
                        // the rest of this chunk is HTTP/2's
                        return self.data(side, offset, data, at);
                    }
                }
            }
        }
        self.settle();
    }

    fn gap(&mut self, side: Side, offset: u64, len: u64) {
        self.start();
        if let Some(h) = self.h2.as_mut() {
            let from = self.h2_from[side.index()];
            let end = offset.saturating_add(len);
            if end > from {
                let start = offset.max(from);
                h.gap(side, start - from, end - start);
            }
            return;
        }
        if self.upgrade.is_some() {
            // what followed the switch is unknown: not guessed
            self.upgrade = None;
        }
        if let Some(t) = self.tls.as_mut() {
            t.gap(side, offset, len);
            self.inside();
        }
        if let Some(h) = self.http_made() {
            h.gap(side, offset, len);
        }
        self.settle();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // the frames do not matter here
    const AT: FrameRef = FrameRef {
        frame: 4,
        ts: crate::base::time::Timestamp { nanos: 0 },
    };

    #[test]
    fn a_tls_stream_never_makes_an_http_tracker() {
        let mut p = Protocols::default();
        assert!(p.wants_bytes());
        // a handshake record header and the ClientHello's type byte
        p.data(Side::Client, 0, &[22, 3, 1, 0, 5, 1, 0, 0, 1, 0], AT);
        assert_eq!(p.tls.as_ref().and_then(|t| t.is_tls()), Some(true));
        assert!(p.http.is_none() && !p.http_unmade);
        assert!(matches!(p.finish(), Found::Tls(..)));
    }

    #[test]
    fn the_http_tracker_is_made_by_the_first_bytes_tls_does_not_claim() {
        let mut p = Protocols::default();
        p.data(Side::Client, 0, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", AT);
        assert!(p.tls.is_none());
        assert!(p.http.is_some() && !p.http_unmade);
        p.data(Side::Server, 0, b"HTTP/1.1 204 No Content\r\n\r\n", AT);
        assert!(matches!(p.finish(), Found::Http(h) if h.exchanges().len() == 1));

        // a gap first: the HTTP tracker is made to see it (and, its stream's
        // start lost, drops out as it did when made with the TLS tracker)
        let mut p = Protocols::default();
        p.gap(Side::Client, 0, 100);
        assert!(!p.http_unmade && p.http.is_none());
        assert!(p.tls.is_some() && p.wants_bytes());
    }
}
