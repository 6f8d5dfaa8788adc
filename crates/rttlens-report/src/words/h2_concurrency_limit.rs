//! The words of `h2-concurrency-limit` (`rttlens_core::detect::h2_concurrency_limit`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let n = a.u64("requests");
    let refused = match a.u64("refused") {
        0 => "".into(),
        r => text!(
            "; {} stream{} sent before the client knew the limit were refused (REFUSED_STREAM) and sent again",
            r,
            if r == 1 { "" } else { "s" }
        ),
    };
    Some(text!(
        "HTTP/2: {n} requests went out one by one as earlier streams closed: the server allows {} at once{refused}",
        a.u64("limit")
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    Some(text!(
        "Raise the server's concurrent stream limit to what its clients send at once (it is {}): nginx \
         `http2_max_concurrent_streams` (default 128), Go `http2.Server.MaxConcurrentStreams` / gRPC-Go \
         `grpc.MaxConcurrentStreams`, Envoy `max_concurrent_streams`, h2o `http2-max-concurrent-requests-per-connection`; \
         or let the client open more connections when one is full (Go `http.Transport` does unless \
         `StrictMaxConcurrentRequests`; gRPC: several channels).",
        f.facts.u64("limit")
    ))
}

/// A fact of kind `h2-concurrency-limit.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "h2-concurrency-limit.settings" => text!(
            "the server's SETTINGS: SETTINGS_MAX_CONCURRENT_STREAMS = {}",
            a.u64("limit")
        ),
        "h2-concurrency-limit.stream-closes" => "a stream closes: a slot frees".into(),
        "h2-concurrency-limit.stream-opens" => {
            let limit = a.u64("limit");
            text!(
                "stream {} opens {:.1} ms later: until that close the {} stream{} the server allows were open",
                a.u64("stream"),
                a.f64("wait_ms"),
                limit,
                if limit == 1 { "" } else { "s" }
            )
        }
        "h2-concurrency-limit.each-time" => "stream after stream opened the moment another closed, the server's limit reached each time".into(),
        "h2-concurrency-limit.two-streams" => "two streams opened the moment another closed at the server's limit; the client may only then have wanted them".into(),
        _ => return None,
    })
}
