//! `hello-retry-request`: the server answered the ClientHello with a
//! HelloRetryRequest (RFC 8446 §4.1.4) because no offered key share suited
//! it; the client must send a second ClientHello: one more round trip.
//!
//! Its cost is the time from the first ClientHello to the second, as the
//! capture saw them: the round trip, the server's work on the
//! HelloRetryRequest and the client's on its second hello, all of which a
//! key share the server accepts saves. Without the second ClientHello (cut
//! capture) it is one minimum RTT.

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
    let mut evidence = vec![
        ev(
            t.client_hello.frame,
            fact!("hello-retry-request.first-client-hello"),
        ),
        ev(hrr.frame, fact!("hello-retry-request.hello-retry")),
    ];
    // the retry as measured, when the second ClientHello followed the
    // HelloRetryRequest (the span a working key share removes)
    let second = t
        .second_client_hello
        .filter(|c| c.frame > hrr.frame && c.ts > t.client_hello.ts);
    let (cost, span) = match second {
        Some(c) => {
            let retry = c.ts - t.client_hello.ts;
            evidence.push(ev(
                c.frame,
                fact!("hello-retry-request.second-client-hello", retry_ms = retry),
            ));
            (retry, (t.client_hello.ts, c.ts))
        }
        None => (a.rtt_min, (hrr.ts, hrr.ts + a.rtt_min)),
    };
    vec![Finding {
        facts: Default::default(),
        id: ID,
        connection: a.index(),
        cost: a.cost(cost),
        evidence,
        confidence: conf(Level::High, fact!("hello-retry-request.magic-random")),
        references: vec!["RFC 8446 §4.1.3", "RFC 8446 §4.1.4"],
        span: vec![span],
    }]
}
