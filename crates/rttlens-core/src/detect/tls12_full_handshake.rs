//! `tls12-full-handshake`: a full TLS 1.2 handshake costs two round trips
//! before the request can go; TLS 1.3 (RFC 8446 §2) or TLS 1.2 resumption
//! (RFC 5077, abbreviated handshake) need one.

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::tls::TlsKind;
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};

/// Finding id.
pub(crate) const ID: &str = "tls12-full-handshake";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let Some(t) = &a.tls else { return vec![] };
    if t.kind != TlsKind::Tls12Full {
        return vec![];
    }
    let client_offers_13 = t.client_max_version == "1.3";
    let mut evidence = vec![ev(
        t.client_hello.frame,
        fact!(
            "tls12-full-handshake.client-hello",
            max_version = t.client_max_version.clone(),
            resumption_offered = t.info.resumption_offered,
        ),
    )];
    if let Some(sh) = t.server_hello {
        let mut f = fact!(
            "tls12-full-handshake.server-hello",
            version = t.info.version.clone()
        );
        if let Some(c) = &t.info.cipher {
            f = f.with("cipher", c.clone());
        }
        evidence.push(ev(sh.frame, f));
    }
    if let Some(e) = t.server_flight_end {
        evidence.push(ev(e.frame, fact!("tls12-full-handshake.server-flight-end")));
    }
    if let Some(f) = t.server_finished {
        evidence.push(ev(f.frame, fact!("tls12-full-handshake.server-finished")));
    }
    let measured = a.phase("tls").map(|p| p.rtts).unwrap_or(2.0);
    vec![Finding {
        facts: args!(
            tls_rtts = Value::Number(measured),
            client_max_version = t.client_max_version.clone(),
            client_offered_tls13 = client_offers_13,
            resumption_offered = t.info.resumption_offered,
            resumed = t.info.resumed,
        ),
        id: ID,
        connection: a.index(),
        cost: a.cost(a.rtt_min),
        evidence,
        confidence: conf(
            Level::High,
            fact!("tls12-full-handshake.tls12-with-certificate"),
        ),
        references: vec!["RFC 5246 §7.3", "RFC 8446 §2", "RFC 5077"],
        span: vec![(
            t.client_hello.ts,
            t.done.map_or(t.client_hello.ts + a.rtt_min * 2, |d| d.ts),
        )],
    }]
}
