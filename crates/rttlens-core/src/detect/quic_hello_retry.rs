//! `quic-hello-retry`: the server answered the ClientHello in its Initial
//! with a HelloRetryRequest (RFC 8446 §4.1.4; RFC 9001 §4.7) because no key
//! share the client sent suits it; a second ClientHello follows: one more
//! round trip.

use super::finding::{conf, ev, Finding, Level};
use super::util::{quic_cost as cost, quic_ms as ms};
use crate::analysis::quic::QuicAnalysis;
use crate::base::text::text;
use crate::proto::tls::hello::group_name;

/// Finding id.
pub(crate) const ID: &str = "quic-hello-retry";

/// See the module docs.
pub(crate) fn detect(a: &QuicAnalysis) -> Vec<Finding> {
    let h = &a.handshake;
    let Some(hrr) = &h.hello_retry else {
        return vec![];
    };
    let asked = hrr
        .key_share_group
        .map(group_name)
        .unwrap_or_else(|| "another group".to_string());
    let offered: Vec<String> = h
        .client_hello
        .iter()
        .flat_map(|ch| ch.key_share_groups.iter().copied().map(group_name))
        .collect();
    let mut evidence = Vec::new();
    let first = h.first_client_hello.or(h.client_initial);
    if let Some(f) = first {
        evidence.push(ev(
            f.frame,
            text!(
                "ClientHello with key shares for {}",
                if offered.is_empty() {
                    "no group".to_string()
                } else {
                    offered.join(", ")
                }
            ),
        ));
    }
    evidence.push(ev(
        hrr.first.frame,
        text!("HelloRetryRequest: the server asks for {asked}"),
    ));
    let second = h
        .client_hello
        .as_ref()
        .map(|ch| ch.first)
        .filter(|s| Some(*s) != first);
    let (d, level, why) = match (first, second) {
        (Some(f), Some(s)) => {
            evidence.push(ev(s.frame, "second ClientHello"));
            (s.ts - f.ts, Level::High, "ServerHello.random equals the HelloRetryRequest value and the second ClientHello follows".to_string())
        }
        _ => match a.rtt_min() {
            Some(rtt) => (
                rtt,
                Level::High,
                "ServerHello.random equals the HelloRetryRequest value: one RTT counted"
                    .to_string(),
            ),
            None => (
                hrr.first.ts - a.conn.first.ts,
                Level::Medium,
                "no RTT: the time to the HelloRetryRequest counted".to_string(),
            ),
        },
    };
    vec![Finding {
        facts: Default::default(),
        id: ID,
        connection: a.conn.index,
        title: text!("HelloRetryRequest in the QUIC handshake: the server wanted {asked}, {} lost", ms(d)),
        cost: cost(a, d),
        evidence,
        confidence: conf(level, why),
        fix: text!("Have the client send a key share for {asked} first (or the server accept the client's): quic-go `tls.Config.CurvePreferences`, rustls `CryptoProvider::kx_groups`, OpenSSL `Groups`; X25519 is what most clients send."),
        references: vec!["RFC 8446 §4.1.4", "RFC 9001 §4.7"],
        span: vec![],
    }]
}
