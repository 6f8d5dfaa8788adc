//! `hello-retry-request`: the server answered the ClientHello with a
//! HelloRetryRequest (RFC 8446 §4.1.4) because no offered key share suited
//! it; the client must send a second ClientHello: one more round trip.

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::Analysis;

/// Finding id.
pub(crate) const ID: &str = "hello-retry-request";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let Some(t) = &a.tls else { return vec![] };
    let Some(hrr) = t.hello_retry else {
        return vec![];
    };
    vec![Finding {
        facts: Default::default(),
        id: ID,
        connection: a.conn.index,
        title: "HelloRetryRequest: the server wanted a different key share, one extra round trip".to_string(),
        cost: a.cost(a.rtt_min),
        evidence: vec![
            ev(t.client_hello.frame, "first ClientHello"),
            ev(hrr.frame, "HelloRetryRequest (ServerHello with the RFC 8446 §4.1.3 magic random)"),
        ],
        confidence: conf(Level::High, "ServerHello.random equals the HelloRetryRequest value"),
        fix: "Make the server's preferred group one the client sends a key share for, e.g. nginx `ssl_ecdh_curve X25519:prime256v1;` (OpenSSL `Groups`), or have the client send an X25519 share first.".to_string(),
        references: vec!["RFC 8446 §4.1.3", "RFC 8446 §4.1.4"],
        span: vec![(hrr.ts, hrr.ts + a.rtt_min)],
    }]
}
