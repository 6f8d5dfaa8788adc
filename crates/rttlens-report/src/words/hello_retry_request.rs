//! The words of `hello-retry-request` (`rttlens_core::detect::hello_retry_request`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(_f: &Finding) -> Option<Text> {
    Some("HelloRetryRequest: the server wanted a different key share, one extra round trip".into())
}

/// The fix, from the finding's facts.
pub(super) fn fix(_f: &Finding) -> Option<Text> {
    Some("Make the server's preferred group one the client sends a key share for, e.g. nginx `ssl_ecdh_curve X25519:prime256v1;` (OpenSSL `Groups`), or have the client send an X25519 share first.".into())
}

/// A fact of kind `hello-retry-request.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "hello-retry-request.first-client-hello" => "first ClientHello".into(),
        "hello-retry-request.second-client-hello" => text!(
            "second ClientHello, {:.1} ms after the first: the retry's cost",
            a.f64("retry_ms")
        ),
        "hello-retry-request.hello-retry" => {
            "HelloRetryRequest (ServerHello with the RFC 8446 §4.1.3 magic random)".into()
        }
        "hello-retry-request.magic-random" => {
            "ServerHello.random equals the HelloRetryRequest value".into()
        }
        _ => return None,
    })
}
