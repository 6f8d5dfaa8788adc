//! `hello-retry-request`: the server answered the ClientHello with a
//! HelloRetryRequest (RFC 8446 §4.1.4) because no offered key share suited
//! it; the client must send a second ClientHello: one more round trip.

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::Analysis;
use crate::base::fact::fact;

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
        connection: a.index(),
        cost: a.cost(a.rtt_min),
        evidence: vec![
            ev(
                t.client_hello.frame,
                fact!("hello-retry-request.first-client-hello"),
            ),
            ev(hrr.frame, fact!("hello-retry-request.hello-retry")),
        ],
        confidence: conf(Level::High, fact!("hello-retry-request.magic-random")),
        references: vec!["RFC 8446 §4.1.3", "RFC 8446 §4.1.4"],
        span: vec![(hrr.ts, hrr.ts + a.rtt_min)],
    }]
}
