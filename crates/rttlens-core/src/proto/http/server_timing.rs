//! The `Server-Timing` response field (W3C Server Timing, §3 "The
//! Server-Timing Header Field"): the server's own account of where a
//! request's time went, `db;dur=53, app;dur=47.2;desc="render"`, in a
//! response's header section or its trailers (HTTP/1.1 chunked trailers,
//! HTTP/2 and HTTP/3 trailing HEADERS).
//!
//! ```text
//! Server-Timing             = #server-timing-metric
//! server-timing-metric      = metric-name *( OWS ";" OWS server-timing-param )
//! metric-name               = token
//! server-timing-param       = server-timing-param-name OWS "=" OWS server-timing-param-value
//! server-timing-param-value = token / quoted-string
//! ```
//!
//! Parsed as the specification's processing model does (§3, "parse a
//! server-timing header field"): metrics are split at commas outside
//! quoted strings; of each parameter only its first occurrence counts;
//! `dur` is a number of milliseconds (one that does not parse is 0); a
//! metric whose name is not a token is skipped. Our own code, not a crate:
//! no maintained Rust crate parses this field, and the grammar is RFC 9110's
//! token and quoted-string (§5.6.2, §5.6.4) and nothing else.

use crate::base::side::FrameRef;
use crate::proto::lossy_truncated;

/// Metrics kept per response; later ones are counted
/// ([`ServerTiming::dropped`]).
pub const METRIC_CAP: usize = 16;
/// Longest metric name or `desc` kept, in characters.
pub const NAME_CHARS: usize = 64;

/// One metric of a `Server-Timing` field.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Metric {
    /// The metric's name (a token; lossy UTF-8, at most [`NAME_CHARS`]).
    pub name: String,
    /// `dur`: the time it took, in ms; absent when the metric gave none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dur_ms: Option<f64>,
    /// `desc`: what it is, for people (unquoted; at most [`NAME_CHARS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desc: Option<String>,
}

/// What a response's `Server-Timing` fields said, all of them: several
/// fields, header section and trailers alike, in the order sent.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerTiming {
    /// The metrics (the first [`METRIC_CAP`]).
    pub metrics: Vec<Metric>,
    /// Metrics past the cap.
    pub dropped: u32,
    /// The packet that delivered the first `Server-Timing` field (the
    /// header section's, or the trailers' when only they had one).
    pub at: FrameRef,
    /// At least one field came in the trailers.
    pub trailer: bool,
}

impl ServerTiming {
    /// The server's reported total, ms: the `dur` of a metric named
    /// `total` (any case) when there is one, else the sum of every `dur`
    /// (the specification names no total; `total` is the name servers and
    /// frameworks use for one). `None` when no metric has a `dur`.
    pub fn total_ms(&self) -> Option<f64> {
        if let Some(t) = self
            .metrics
            .iter()
            .find(|m| m.name.eq_ignore_ascii_case("total") && m.dur_ms.is_some())
        {
            return t.dur_ms;
        }
        let durs = self.metrics.iter().filter_map(|m| m.dur_ms);
        let mut any = false;
        let sum = durs.inspect(|_| any = true).sum();
        any.then_some(sum)
    }

    /// Whether the total is a `total` metric's (else a sum).
    pub fn has_total_metric(&self) -> bool {
        self.metrics
            .iter()
            .any(|m| m.name.eq_ignore_ascii_case("total") && m.dur_ms.is_some())
    }

    /// Adds one field's `value`, delivered by `at`, `trailer` if it came in
    /// the trailers; `into` is created on the first field.
    pub fn add(into: &mut Option<ServerTiming>, value: &[u8], at: FrameRef, trailer: bool) {
        let st = into.get_or_insert_with(|| ServerTiming {
            metrics: Vec::new(),
            dropped: 0,
            at,
            trailer: false,
        });
        st.trailer |= trailer;
        for m in parse(value) {
            if st.metrics.len() < METRIC_CAP {
                st.metrics.push(m);
            } else {
                st.dropped = st.dropped.saturating_add(1);
            }
        }
    }
}

/// The field name, lower case (HTTP/2 and HTTP/3 send names in lower case;
/// HTTP/1.1 compares without case).
pub const FIELD: &[u8] = b"server-timing";

/// Whether `name` is `Server-Timing` (any case).
pub fn is_field(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(FIELD)
}

/// RFC 9110 §5.6.2 `tchar`.
fn tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// One field value's metrics.
pub fn parse(value: &[u8]) -> Vec<Metric> {
    let mut out = Vec::new();
    let mut p = Cursor { b: value, i: 0 };
    loop {
        p.ows();
        if p.at_end() {
            break;
        }
        if p.peek() == Some(b',') {
            p.i += 1;
            continue;
        }
        let name = p.token();
        if name.is_empty() {
            // not a metric: skip to the next comma outside quotes
            p.skip_to_comma();
            continue;
        }
        let mut m = Metric {
            name: lossy_truncated(name, NAME_CHARS),
            dur_ms: None,
            desc: None,
        };
        let (mut seen_dur, mut seen_desc) = (false, false);
        loop {
            p.ows();
            if p.peek() != Some(b';') {
                break;
            }
            p.i += 1;
            p.ows();
            let pname = p.token();
            p.ows();
            let pvalue = if p.peek() == Some(b'=') {
                p.i += 1;
                p.ows();
                if p.peek() == Some(b'"') {
                    p.quoted()
                } else {
                    p.token().to_vec()
                }
            } else {
                Vec::new()
            };
            if pname.eq_ignore_ascii_case(b"dur") && !seen_dur {
                seen_dur = true;
                let v = std::str::from_utf8(&pvalue)
                    .ok()
                    .and_then(|s| s.trim().parse::<f64>().ok())
                    .filter(|v| v.is_finite())
                    .unwrap_or(0.0);
                m.dur_ms = Some(v);
            } else if pname.eq_ignore_ascii_case(b"desc") && !seen_desc {
                seen_desc = true;
                m.desc = Some(lossy_truncated(&pvalue, NAME_CHARS));
            }
            if pname.is_empty() && p.peek() != Some(b';') {
                break;
            }
        }
        out.push(m);
        // anything else before the next comma is not the grammar's: skipped
        p.skip_to_comma();
    }
    out
}

/// A position in a field value.
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn at_end(&self) -> bool {
        self.i >= self.b.len()
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Optional white space (RFC 9110 §5.6.3).
    fn ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn token(&mut self) -> &'a [u8] {
        let start = self.i;
        while self.peek().is_some_and(tchar) {
            self.i += 1;
        }
        self.b.get(start..self.i).unwrap_or_default()
    }

    /// A quoted-string (RFC 9110 §5.6.4) at the cursor, unquoted; an
    /// unterminated one runs to the end.
    fn quoted(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        self.i += 1;
        while let Some(b) = self.peek() {
            self.i += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    if let Some(e) = self.peek() {
                        out.push(e);
                        self.i += 1;
                    }
                }
                _ => out.push(b),
            }
        }
        out
    }

    /// Past the next comma outside a quoted string (or to the end).
    fn skip_to_comma(&mut self) {
        while let Some(b) = self.peek() {
            match b {
                b',' => {
                    self.i += 1;
                    return;
                }
                b'"' => {
                    let _ = self.quoted();
                }
                _ => self.i += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::side::Side;
    use crate::base::time::Timestamp;
    use crate::proto::http::HttpTracker;

    fn at_ns(frame: u64) -> FrameRef {
        FrameRef {
            frame,
            ts: Timestamp::from_nanos(frame as i64),
        }
    }

    fn m(name: &str, dur: Option<f64>, desc: Option<&str>) -> Metric {
        Metric {
            name: name.into(),
            dur_ms: dur,
            desc: desc.map(Into::into),
        }
    }

    #[test]
    fn the_specifications_examples() {
        // W3C Server Timing §3's examples
        assert_eq!(
            parse(b"miss, db;dur=53, app;dur=47.2"),
            vec![
                m("miss", None, None),
                m("db", Some(53.0), None),
                m("app", Some(47.2), None)
            ]
        );
        assert_eq!(
            parse(b"customView, dc;desc=atl"),
            vec![m("customView", None, None), m("dc", None, Some("atl"))]
        );
        assert_eq!(
            parse(b"cache;desc=\"Cache Read\";dur=23.2"),
            vec![m("cache", Some(23.2), Some("Cache Read"))]
        );
        assert_eq!(
            parse(b"total;dur=123.4"),
            vec![m("total", Some(123.4), None)]
        );
    }

    #[test]
    fn the_processing_model() {
        // first occurrence of a parameter wins; a bad dur is 0; spaces
        // around ';' and '='; a quoted comma does not split
        assert_eq!(
            parse(b"a ; dur = 1 ; dur=2;desc=\"x, \\\"y\\\"\" , b;dur=abc,,c;DUR=3"),
            vec![
                m("a", Some(1.0), Some("x, \"y\"")),
                m("b", Some(0.0), None),
                m("c", Some(3.0), None)
            ]
        );
        // not a token: skipped up to the next comma
        assert_eq!(
            parse(b"\"x\";dur=1, ok;dur=2"),
            vec![m("ok", Some(2.0), None)]
        );
        assert_eq!(parse(b""), vec![]);
        assert_eq!(parse(b"  ,  "), vec![]);
        assert_eq!(parse(b"a;dur=inf"), vec![m("a", Some(0.0), None)]);
        assert_eq!(parse(b"a;desc=\"open"), vec![m("a", None, Some("open"))]);
    }

    #[test]
    fn totals_fields_and_cap() {
        let at = FrameRef {
            frame: 7,
            ts: Timestamp::from_nanos(0),
        };
        let mut st = None;
        ServerTiming::add(&mut st, b"db;dur=53, app;dur=47", at, false);
        let s = st.clone().unwrap();
        assert_eq!(s.total_ms(), Some(100.0));
        assert!(!s.has_total_metric());
        let later = FrameRef { frame: 9, ..at };
        ServerTiming::add(&mut st, b"total;dur=120", later, true);
        let s = st.clone().unwrap();
        assert_eq!((s.at.frame, s.trailer), (7, true));
        assert_eq!(s.total_ms(), Some(120.0));
        assert!(s.has_total_metric());
        let many = vec!["x;dur=1"; METRIC_CAP + 3].join(",");
        ServerTiming::add(&mut st, many.as_bytes(), later, false);
        let s = st.unwrap();
        assert_eq!((s.metrics.len(), s.dropped), (METRIC_CAP, 6));
        let mut none = None;
        ServerTiming::add(&mut none, b"miss", at, false);
        assert_eq!(none.unwrap().total_ms(), None);
        assert!(is_field(b"Server-Timing"));
    }

    #[test]
    fn header_fields_and_chunked_trailers() {
        let mut t = HttpTracker::new();
        let req =
            b"GET /a HTTP/1.1\r\nHost: x\r\nTE: trailers\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n";
        t.push(Side::Client, 0, req, at_ns(1));
        // two fields in the head, then a chunked body whose trailers hold a
        // third; the second response has none
        let r1 = b"HTTP/1.1 200 OK\r\nServer-Timing: db;dur=53\r\nTransfer-Encoding: chunked\r\nserver-timing: app;dur=47.2\r\n\r\n4\r\nbody\r\n0\r\n";
        let r2 = b"Server-Timing: total;dur=110\r\nX-Other: 1\r\n\r\n";
        let r3 = b"HTTP/1.1 204 No Content\r\n\r\n";
        t.push(Side::Server, 0, r1, at_ns(2));
        t.push(Side::Server, r1.len() as u64, r2, at_ns(3));
        t.push(Side::Server, (r1.len() + r2.len()) as u64, r3, at_ns(4));
        let ex = t.exchanges();
        let resp = ex[0].response.as_ref().unwrap();
        assert!(resp.complete);
        let st = resp.server_timing.as_ref().expect("server timing");
        let names: Vec<&str> = st.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["db", "app", "total"]);
        assert_eq!((st.at.frame, st.trailer), (2, true));
        assert_eq!(st.total_ms(), Some(110.0));
        assert!(ex[1].response.as_ref().unwrap().server_timing.is_none());
    }
}
