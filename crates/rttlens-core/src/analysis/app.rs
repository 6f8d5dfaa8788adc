//! From what the protocol trackers found to the [`AppTimeline`] the ladder
//! is built on and the [`TlsFacts`] the TLS detectors read.

use std::borrow::Cow;

use crate::analysis::tls::{EarlyDataFacts, TlsFacts, TlsInfo, TlsKind};
use crate::base::side::{FrameRef, Side};
use crate::flow::Conn;
use crate::proto::h2::H2Summary;
use crate::proto::http::HttpTracker;
use crate::proto::protocols::{Found, Inner, Protocols};
use crate::proto::tls::{version_name, ContentType, HandshakeKind, Step, TlsSummary};

/// The application exchange the ladder is built around: the first request
/// and its response, located by the protocol layer (TLS records, HTTP
/// messages) or, for other TCP, by the first data of each side.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct AppTimeline {
    /// `tls`, `http` or `tcp`.
    pub(crate) protocol: &'static str,
    /// First byte of the first request (client).
    pub(crate) request_first: Option<FrameRef>,
    /// Last byte of the first request.
    pub(crate) request_last: Option<FrameRef>,
    /// First byte of its response (server): TTFB.
    pub(crate) response_first: Option<FrameRef>,
    /// Stream offset of the response's first byte in the server's stream.
    pub(crate) response_offset: u64,
    /// Last byte of the response, when known.
    pub(crate) response_last: Option<FrameRef>,
    /// The first application record of the response (TLS only).
    pub(crate) first_record: Option<FirstRecord>,
    /// Requests seen on the connection.
    pub(crate) exchanges: u64,
    /// When the client could first send its request (the packet completing
    /// the TLS handshake at the client); `None` for plain TCP.
    pub(crate) client_ready: Option<FrameRef>,
}

/// The first TLS application record of the response: the first decrypted
/// byte is available when it completes.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct FirstRecord {
    /// Record length (bytes, without the 5-byte header).
    pub(crate) len: u64,
    /// Segment carrying its first byte.
    pub(crate) first: FrameRef,
    /// Segment completing it.
    pub(crate) complete: FrameRef,
}

/// Timeline and TLS facts from the trackers' findings (`None`: plain TCP).
pub(crate) fn from_found(
    found: &Found,
    conn: &Conn<Protocols>,
) -> (Option<AppTimeline>, Option<TlsFacts>) {
    match found {
        Found::Tls(t, _, inner) => {
            let s = t.summary();
            let (mut timeline, facts) = tls(s, conn);
            if let (Some(t), Some(inner)) = (timeline.as_mut(), inner) {
                decrypted(t, s, inner);
            }
            (timeline, facts)
        }
        Found::Http(h) => (http(h), None),
        Found::H2(h) => (h2c(h), None),
        Found::Neither => (None, None),
    }
}

/// `"TLS 1.2"` → `"1.2"`; a TLS 1.3 draft (`0x7fNN`, draft-ietf-tls-tls13-NN)
/// → `"1.3 draft NN"`, as Wireshark names it.
fn short_version(v: u16) -> Cow<'static, str> {
    match version_name(v) {
        Some(n) => Cow::Borrowed(n.trim_start_matches("TLS ")),
        None if (0x7f01..=0x7f1c).contains(&v) => Cow::Owned(format!("1.3 draft {}", v & 0xff)),
        None => Cow::Owned(format!("0x{v:04x}")),
    }
}

fn tls(s: &TlsSummary, conn: &Conn<Protocols>) -> (Option<AppTimeline>, Option<TlsFacts>) {
    let Some(hs) = s.handshake() else {
        return (None, None);
    };
    // SSL 3.0 to TLS 1.2 share the full and abbreviated handshakes' flights
    // (RFC 6101 §5.5, RFC 2246 §7.3, RFC 4346 §7.3, RFC 5246 §7.3)
    let tls12_family = (0x0300..=0x0303).contains(&hs.version);
    let kind = match hs.kind {
        HandshakeKind::Tls12Full if tls12_family => TlsKind::Tls12Full,
        HandshakeKind::Tls12Abbreviated if tls12_family => TlsKind::Tls12Abbreviated,
        HandshakeKind::Tls13Full => TlsKind::Tls13Full,
        HandshakeKind::Tls13Psk => TlsKind::Tls13Psk,
        HandshakeKind::Tls13ZeroRtt => TlsKind::Tls13ZeroRtt,
        _ => TlsKind::Other,
    };
    let ch = s.client_hello.as_ref();
    let client_max = ch
        .map(|c| {
            c.supported_versions
                .iter()
                .copied()
                .filter(|v| *v & 0xff00 == 0x0300)
                .max()
                .unwrap_or(c.legacy_version)
        })
        .unwrap_or(hs.version);
    let complete = |st: &Option<Step>| st.as_ref().map(|x| x.complete.unwrap_or(x.first));
    let (done, done_sent) = match kind {
        TlsKind::Tls12Abbreviated => (complete(&hs.client_finished), true),
        TlsKind::Tls12Full | TlsKind::Other => (
            complete(&hs.server_finished).or(complete(&hs.server_flight_end)),
            false,
        ),
        _ => (complete(&hs.server_flight_end), false),
    };
    let app_stats = |side: Side| s.direction(side).totals.application_data;
    let facts = TlsFacts {
        info: TlsInfo {
            version: short_version(hs.version),
            sni: s.sni().map(str::to_string),
            alpn: s.alpn_selected().map(str::to_string),
            cipher: s.cipher_suite().map(|(id, name)| match name {
                Some(name) => Cow::Borrowed(name),
                None => Cow::Owned(format!("0x{id:04x}")),
            }),
            resumption_offered: hs.resumption_offered,
            resumed: hs.resumption_accepted,
            early_data_offered: hs.early_data.offered,
            app_records: [app_stats(Side::Client).count, app_stats(Side::Server).count],
            max_app_record: [
                app_stats(Side::Client).max_len.unwrap_or(0) as u64,
                app_stats(Side::Server).max_len.unwrap_or(0) as u64,
            ],
        },
        kind,
        client_hello: hs.client_hello.first,
        client_max_version: short_version(client_max),
        server_hello: Some(hs.server_hello.first),
        server_flight_end: complete(&hs.server_flight_end),
        client_finished: hs.client_finished.as_ref().map(|x| x.first),
        server_finished: complete(&hs.server_finished),
        hello_retry: hs.hello_retry_request.as_ref().map(|x| x.first),
        second_client_hello: hs.second_client_hello.as_ref().map(|x| x.first),
        done,
        done_sent_by_client: done_sent,
        early_data: hs.early_data.offered.then(|| EarlyDataFacts {
            offered: true,
            records: hs.early_data.records,
            bytes: hs.early_data.bytes,
            first: hs.early_data.first.as_ref().map(|f| f.first),
            accepted: hs.early_data.accepted,
        }),
    };
    // The request: the client's application records (early data first)
    // before the server's first application record.
    let req = hs
        .early_data
        .first
        .as_ref()
        .or(hs.client_first_app_data.as_ref());
    let resp = hs.server_first_app_data.as_ref();
    let request_last = req.map(|q| {
        let limit = resp.map(|r| r.first.frame).unwrap_or(u64::MAX);
        s.client
            .records
            .iter()
            .filter(|r| {
                r.index() >= q.record
                    && r.content_type == ContentType::APPLICATION_DATA
                    && r.first.frame < limit
            })
            .filter_map(|r| r.complete)
            .max_by_key(|m| m.frame)
            .unwrap_or(q.complete.unwrap_or(q.first))
    });
    let timeline = AppTimeline {
        protocol: "tls",
        request_first: req.map(|q| q.first),
        request_last,
        response_first: resp.map(|r| r.first),
        response_offset: resp.map(|r| r.offset).unwrap_or(u64::MAX),
        response_last: conn.half[Side::Server.index()].send.last_new_data.get(),
        first_record: resp.and_then(|r| {
            r.complete.map(|c| FirstRecord {
                len: r.length as u64,
                first: r.first,
                complete: c,
            })
        }),
        exchanges: u64::from(req.is_some()),
        client_ready: done,
    };
    (Some(timeline), Some(facts))
}

/// With the keys, the first request and its response as the protocol
/// inside read them, replacing what record directions suggested: over
/// HTTP/2 the client's first records are its preface and SETTINGS and the
/// server's its SETTINGS (sent before any request), and a TLS 1.3
/// NewSessionTicket travels as application data. Each is placed at the
/// record that carried it (plaintext is delivered when its record
/// completes; the wire's first byte is that record's first segment).
fn decrypted(t: &mut AppTimeline, s: &TlsSummary, inner: &Inner) {
    let (req_at, req_end, resp_at, resp_end, exchanges) = match inner {
        Inner::Http1(h) => {
            let Some(ex) = h.exchanges().first() else {
                return;
            };
            let (Some(q), Some(r)) = (ex.request.as_ref(), ex.response.as_ref()) else {
                return;
            };
            (q.first, q.last, r.first, r.last, h.exchange_count())
        }
        Inner::H2(h) => {
            let Some(st) = h.streams.iter().find(|st| st.id % 2 == 1) else {
                return;
            };
            let (Some(q), Some(r)) = (st.request_headers, st.response_headers) else {
                return;
            };
            (q, st.request_end, r, st.response_end, h.stream_count)
        }
    };
    // the application record completed by `at`
    let record = |dir: &crate::proto::tls::TlsDirection, at: FrameRef| {
        dir.records
            .iter()
            .find(|r| r.content_type == ContentType::APPLICATION_DATA && r.complete == Some(at))
            .cloned()
    };
    let (Some(q), Some(r)) = (record(&s.client, req_at), record(s.server(), resp_at)) else {
        return;
    };
    t.request_first = Some(q.first);
    t.request_last = Some(req_end.unwrap_or(req_at));
    t.response_first = Some(r.first);
    t.response_offset = r.offset;
    if resp_end.is_some() {
        t.response_last = resp_end;
    }
    t.first_record = r.complete.map(|c| FirstRecord {
        len: u64::from(r.length),
        first: r.first,
        complete: c,
    });
    t.exchanges = exchanges;
}

/// HTTP/2 in clear: the first stream's request and response.
fn h2c(h: &H2Summary) -> Option<AppTimeline> {
    let s = h.streams.iter().find(|s| s.id % 2 == 1)?;
    Some(AppTimeline {
        protocol: "h2c",
        request_first: s.request_headers,
        request_last: s.request_end.or(s.request_headers),
        response_first: s.response_headers,
        // the server's data as a whole: stream offsets are HTTP/2's
        response_offset: 0,
        response_last: s.response_end,
        first_record: None,
        exchanges: h.stream_count,
        client_ready: None,
    })
}

fn http(h: &HttpTracker) -> Option<AppTimeline> {
    let ex = h.exchanges().first()?;
    let req = ex.request.as_ref();
    let resp = ex.response.as_ref();
    Some(AppTimeline {
        protocol: "http",
        request_first: req.map(|q| q.first),
        request_last: req.map(|q| q.last.unwrap_or(q.head_complete)),
        response_first: resp.map(|r| r.first),
        response_offset: resp.map(|r| r.offset).unwrap_or(u64::MAX),
        response_last: resp.and_then(|r| r.last),
        first_record: None,
        exchanges: h.exchange_count(),
        client_ready: None,
    })
}
