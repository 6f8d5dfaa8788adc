//! The words of `tls-resumption` (`rttlens_core::detect::tls_resumption`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let kind = a.str("handshake");
    Some(if a.flag("resumed") {
        let saved = if kind == "tls12-abbreviated" {
            "; the handshake took 1 RTT instead of 2"
        } else {
            ""
        };
        text!("TLS session resumed ({kind}){saved}")
    } else {
        text!("the client offered to resume its TLS session; the server declined ({kind})")
    })
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    Some(if f.facts.flag("resumed") {
        "Nothing to fix.".into()
    } else {
        "Keep sessions resumable: nginx `ssl_session_cache shared:SSL:10m; ssl_session_timeout 1h; ssl_session_tickets on;`, and share ticket keys across the servers behind one name (`ssl_session_ticket_key`).".into()
    })
}

/// A fact of kind `tls-resumption.*` as a sentence.
pub(super) fn fact(kind: &str, _a: &Args) -> Option<Text> {
    Some(match kind {
        "tls-resumption.offered" => "ClientHello offers a session to resume".into(),
        "tls-resumption.resumed" => "ServerHello resumes it (no certificate exchange)".into(),
        "tls-resumption.declined" => "ServerHello starts a new session: resumption declined".into(),
        "tls-resumption.read-from-hellos" => "read from the ClientHello and ServerHello".into(),
        _ => return None,
    })
}
