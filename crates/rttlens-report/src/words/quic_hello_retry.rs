//! The words of `quic-hello-retry` (`rttlens_core::detect::quic_hello_retry`).

use super::prelude::*;

/// The group the server asked for: its name, or `another group` when the
/// HelloRetryRequest named none.
fn asked(a: &Args) -> &str {
    a.get("asked_group")
        .and_then(|v| v.as_str())
        .unwrap_or("another group")
}

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    Some(text!(
        "HelloRetryRequest in the QUIC handshake: the server wanted {}, {:.1} ms lost",
        asked(a),
        a.f64("lost_ms")
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    Some(text!("Have the client send a key share for {} first (or the server accept the client's): quic-go `tls.Config.CurvePreferences`, rustls `CryptoProvider::kx_groups`, OpenSSL `Groups`; X25519 is what most clients send.", asked(&f.facts)))
}

/// A fact of kind `quic-hello-retry.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "quic-hello-retry.client-hello" => {
            let groups: Vec<&str> = a
                .list("offered_groups")
                .iter()
                .filter_map(|v| v.as_str())
                .collect();
            text!(
                "ClientHello with key shares for {}",
                match groups.join(", ") {
                    g if g.is_empty() => "no group".into(),
                    g => g,
                }
            )
        }
        "quic-hello-retry.hello-retry-request" => {
            text!("HelloRetryRequest: the server asks for {}", asked(a))
        }
        "quic-hello-retry.second-client-hello" => "second ClientHello".into(),
        "quic-hello-retry.second-hello-follows" => "ServerHello.random equals the HelloRetryRequest value and the second ClientHello follows".into(),
        "quic-hello-retry.one-rtt-counted" => {
            "ServerHello.random equals the HelloRetryRequest value: one RTT counted".into()
        }
        "quic-hello-retry.time-to-hrr-counted" => {
            "no RTT: the time to the HelloRetryRequest counted".into()
        }
        _ => return None,
    })
}
