//! The words of `http1-head-of-line` (`rttlens_core::detect::http1_head_of_line`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let n = a.u64("responses");
    Some(text!(
        "HTTP/1.1 pipelining: {n} response{} waited behind earlier ones (longest: {}, {:.1} ms)",
        if n == 1 { "" } else { "s" },
        a.str("longest_request"),
        a.f64("longest_ms")
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(_f: &Finding) -> Option<Text> {
    Some(
        "HTTP/1.1 answers pipelined requests in order, so one slow or large response holds the rest: \
         use HTTP/2, where responses interleave (nginx `listen 443 ssl; http2 on;`, Go and most \
         clients negotiate it by ALPN), or send independent requests on separate connections; \
         never pipeline behind a request known to be slow."
            .into(),
    )
}

/// A fact of kind `http1-head-of-line.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "http1-head-of-line.pipelined" => text!(
            "{} sent (pipelined) while an earlier response was still going out",
            a.str("request")
        ),
        "http1-head-of-line.earlier-response-ends" => text!(
            "the earlier response's last byte, {:.1} ms later: only now could {} be answered",
            a.f64("wait_ms"),
            a.str("request")
        ),
        "http1-head-of-line.response-starts" => {
            text!("first byte of {}'s response", a.str("request"))
        }
        "http1-head-of-line.in-order" => "each request was sent before the response ahead of it ended, and HTTP/1.1 answers in order".into(),
        _ => return None,
    })
}
