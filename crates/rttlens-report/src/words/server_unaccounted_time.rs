//! The words of `server-unaccounted-time` (`rttlens_core::detect::server_unaccounted_time`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let which = a
        .get("request")
        .and_then(|r| r.as_str())
        .map(|r| format!(" {r}"))
        .unwrap_or_default();
    let more = match a.u64("requests") {
        0 | 1 => "".into(),
        n => text!(" ({n} requests short of their account; the largest named)"),
    };
    Some(text!(
        "server held{which} {:.1} ms but its Server-Timing accounts for {:.1} ms: {:.1} ms went before or around the handler{more}",
        a.f64("think_ms"),
        a.f64("reported_ms"),
        a.f64("unaccounted_ms"),
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(_: &Finding) -> Option<Text> {
    Some("The time is between the socket and the handler, where the handler's timers do not run: a proxy's queue (nginx `limit_req … burst=` delaying requests, upstream `max_conns`/`queue`, a load balancer's surge queue), a worker or thread pool with every worker busy (raise the pool or `worker_connections`, find what holds the workers), the accept queue and its backlog (`ss -lnt` Recv-Q against `listen … backlog=`, `net.core.somaxconn`), or TLS termination on a busy CPU. Start the server's timer where the request is read from the socket (nginx `$request_time` against the upstream's `$upstream_response_time`), or add a Server-Timing metric for the queue, so the two accounts meet.".into())
}

/// A fact of kind `server-unaccounted-time.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "server-unaccounted-time.request-end" => "last byte of the request".into(),
        "server-unaccounted-time.ack-prompt" => text!(
            "the server's TCP acknowledged it {:.2} ms later: the request was in the server's kernel at once",
            a.f64("after_ms")
        ),
        "server-unaccounted-time.ack-late" => text!(
            "the server's TCP acknowledged it only {:.2} ms later: the path or the server's kernel may hold part of the difference",
            a.f64("after_ms")
        ),
        "server-unaccounted-time.response" => text!(
            "first byte of the response, {:.1} ms later: the server held the request {:.1} ms",
            a.f64("after_ms"),
            a.f64("think_ms")
        ),
        "server-unaccounted-time.header" => {
            let place = if a.flag("trailer") {
                "Server-Timing (trailers included)"
            } else {
                "Server-Timing header"
            };
            let total = if a.str("total_from") == "total" {
                "its total metric"
            } else if a.get("metric").is_some() {
                "its metrics add up to"
            } else {
                "it reports"
            };
            let metric = match a.get("metric").and_then(|m| m.as_str()) {
                Some(m) => text!(" ({m} {:.1} ms the largest)", a.f64("metric_ms")),
                None => "".into(),
            };
            text!("{place}: {total} {:.1} ms{metric}", a.f64("reported_ms"))
        }
        "server-unaccounted-time.prompt-ack" => "the server's ACK of the request was prompt: the time was spent above its kernel".into(),
        "server-unaccounted-time.late-ack" => "the server's ACK of the request was late: part of the difference may be the path's or the kernel's".into(),
        "server-unaccounted-time.no-ack" => "the answer itself acknowledged the request: part of the difference may be the path's".into(),
        "server-unaccounted-time.quic" => "QUIC: no prompt ACK shows the request reached the server at once (ACK frames follow the endpoint's own schedule)".into(),
        _ => return None,
    })
}
