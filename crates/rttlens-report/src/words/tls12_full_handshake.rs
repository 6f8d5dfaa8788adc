//! The words of `tls12-full-handshake` (`rttlens_core::detect::tls12_full_handshake`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let measured = f.facts.f64("tls_rtts");
    Some(text!("TLS 1.2 full handshake: {measured:.1} RTT before the request could go, 1 RTT more than TLS 1.3 or resumption"))
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let mut fix: String = if a.flag("client_offered_tls13") {
        "The client offered TLS 1.3 but the server chose 1.2: enable TLS 1.3 on the server (nginx `ssl_protocols TLSv1.2 TLSv1.3;` with OpenSSL ≥ 1.1.1; Go `tls.Config{MinVersion: tls.VersionTLS12}` keeps 1.3 on)".into()
    } else {
        "The client did not offer TLS 1.3: upgrade its TLS library or allow 1.3 in its configuration".into()
    };
    fix.push_str("; for returning clients enable resumption (nginx `ssl_session_cache shared:SSL:10m; ssl_session_tickets on;`), which makes a TLS 1.2 handshake 1 RTT.");
    if a.flag("resumption_offered") && !a.flag("resumed") {
        fix.push_str(" The client offered a session to resume and the server declined it: check the session cache / ticket keys are shared across servers.");
    }
    Some(fix.into())
}

/// A fact of kind `tls12-full-handshake.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "tls12-full-handshake.client-hello" => text!(
            "ClientHello offers up to TLS {}{}",
            a.str("max_version"),
            if a.flag("resumption_offered") {
                ", with a session to resume"
            } else {
                ""
            }
        ),
        "tls12-full-handshake.server-hello" => text!(
            "ServerHello selects TLS {}{}: full handshake",
            a.str("version"),
            a.get("cipher")
                .and_then(|c| c.as_str())
                .map(|c| format!(" ({c})"))
                .unwrap_or_default()
        ),
        "tls12-full-handshake.server-flight-end" => {
            "server's first flight ends (ServerHelloDone): round trip 1".into()
        }
        "tls12-full-handshake.server-finished" => {
            "server Finished reaches the client: round trip 2, the request can go".into()
        }
        "tls12-full-handshake.tls12-with-certificate" => {
            "ServerHello selected TLS 1.2 and sent a Certificate (no resumption)".into()
        }
        _ => return None,
    })
}
