//! The words of `server-handshake-time` (`rttlens_core::detect::server_handshake_time`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    Some(text!(
        "server took {:.1} ms to answer the ClientHello with its ServerHello: TLS handshake work and the queue before it, before any request",
        f.facts.f64("wait_ms")
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    Some(if f.facts.flag("resumed") {
        "Handshake CPU or the queue before it at the server (the accept queue, busy workers), not the application: a resumed handshake signs nothing, so the wait is a queue of handshakes (a reconnect burst) or a starved TLS terminator. Give handshakes more cores or workers (nginx `worker_processes auto;`, Go `GOMAXPROCS`), limit the queue (`listen … backlog=`) so clients retry instead of waiting, and spread reconnects (jittered backoff).".into()
    } else {
        "Handshake CPU or the queue before it at the server (the accept queue, busy workers), not the application: use an ECDSA P-256 certificate instead of RSA (its signature costs a small fraction of an RSA one: `openssl speed rsa2048 rsa4096 ecdsap256` on the server shows by how much), give handshakes more cores or workers (nginx `worker_processes auto;`, Go `GOMAXPROCS`), let clients resume (`ssl_session_tickets on;` / `ssl_session_cache shared:SSL:10m;`) so repeat handshakes skip the signature, and limit the queue (`listen … backlog=`) so a burst is refused early rather than served seconds late.".into()
    })
}

/// A fact of kind `server-handshake-time.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "server-handshake-time.client-hello" => {
            "the ClientHello (its last transmission before the ServerHello)".into()
        }
        "server-handshake-time.ack" => text!(
            "the server's TCP acknowledged the ClientHello {:.2} ms later: its kernel had it, the TLS stack had not answered",
            a.f64("after_ms")
        ),
        "server-handshake-time.server-hello" => text!(
            "the ServerHello, {:.1} ms after the ClientHello (h_s = {:.1} ms)",
            a.f64("after_ms"),
            a.f64("path_ms")
        ),
        "server-handshake-time.several-rtts" => {
            "several RTTs long: no vantage correction could explain it".into()
        }
        "server-handshake-time.end-host" => "timed at an end host".into(),
        "server-handshake-time.mid-path" => "timed mid-path, corrected by h_s".into(),
        "server-handshake-time.vantage-unknown" => "vantage point unknown".into(),
        _ => return None,
    })
}
