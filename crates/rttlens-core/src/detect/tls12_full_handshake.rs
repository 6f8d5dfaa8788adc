//! `tls12-full-handshake`: a full TLS 1.2 handshake costs two round trips
//! before the request can go; TLS 1.3 (RFC 8446 §2) or TLS 1.2 resumption
//! (RFC 5077, abbreviated handshake) need one.

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::tls::TlsKind;
use crate::analysis::Analysis;
use crate::base::text::text;

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
        text!(
            "ClientHello offers up to TLS {}{}",
            t.client_max_version,
            if t.info.resumption_offered {
                ", with a session to resume"
            } else {
                ""
            }
        ),
    )];
    if let Some(sh) = t.server_hello {
        evidence.push(ev(
            sh.frame,
            text!(
                "ServerHello selects TLS {}{}: full handshake",
                t.info.version,
                t.info
                    .cipher
                    .as_deref()
                    .map(|c| text!(" ({c})"))
                    .unwrap_or_default()
            ),
        ));
    }
    if let Some(e) = t.server_flight_end {
        evidence.push(ev(
            e.frame,
            "server's first flight ends (ServerHelloDone): round trip 1",
        ));
    }
    if let Some(f) = t.server_finished {
        evidence.push(ev(
            f.frame,
            "server Finished reaches the client: round trip 2, the request can go",
        ));
    }
    let measured = a.phase("tls").map(|p| p.rtts).unwrap_or(2.0);
    let mut fix = if client_offers_13 {
        "The client offered TLS 1.3 but the server chose 1.2: enable TLS 1.3 on the server (nginx `ssl_protocols TLSv1.2 TLSv1.3;` with OpenSSL ≥ 1.1.1; Go `tls.Config{MinVersion: tls.VersionTLS12}` keeps 1.3 on)".to_string()
    } else {
        "The client did not offer TLS 1.3: upgrade its TLS library or allow 1.3 in its configuration".to_string()
    };
    fix.push_str("; for returning clients enable resumption (nginx `ssl_session_cache shared:SSL:10m; ssl_session_tickets on;`), which makes a TLS 1.2 handshake 1 RTT.");
    if t.info.resumption_offered && !t.info.resumed {
        fix.push_str(" The client offered a session to resume and the server declined it: check the session cache / ticket keys are shared across servers.");
    }
    vec![Finding {
        facts: Default::default(),
        id: ID,
        connection: a.conn.index,
        title: text!("TLS 1.2 full handshake: {measured:.1} RTT before the request could go, 1 RTT more than TLS 1.3 or resumption"),
        cost: a.cost(a.rtt_min),
        evidence,
        confidence: conf(Level::High, "ServerHello selected TLS 1.2 and sent a Certificate (no resumption)"),
        fix,
        references: vec!["RFC 5246 §7.3", "RFC 8446 §2", "RFC 5077"],
        span: vec![(t.client_hello.ts, t.done.map_or(t.client_hello.ts + a.rtt_min * 2, |d| d.ts))],
    }]
}
