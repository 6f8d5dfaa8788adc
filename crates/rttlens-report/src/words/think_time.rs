//! The words of `server-think-time`, `client-think-time` (`rttlens_core::detect::think_time`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let think = a.f64("think_ms");
    if f.id == "client-think-time" {
        return Some(match a.str("before") {
            "before-client-hello" => text!(
                "client waited {think:.1} ms after connecting before sending its ClientHello"
            ),
            "in-handshake" => text!(
                "client took {think:.1} ms after the server's handshake flight to send its key exchange"
            ),
            _ => text!("client waited {think:.1} ms before sending its request"),
        });
    }
    let which = a
        .get("request")
        .and_then(|r| r.as_str())
        .map(|r| format!(" {r}"))
        .unwrap_or_default();
    Some(match a.str("timed_from") {
        "tcp-turn" => text!(
            "server took {think:.1} ms to answer after the client's data arrived (a request/response turn at the TCP level)"
        ),
        "other-streams" => text!(
            "server took {think:.1} ms to answer{which} once it had sent the other streams' data"
        ),
        "previous-response" => text!(
            "server took {think:.1} ms to answer{which} once the response ahead of it was sent"
        ),
        _ => text!(
            "server took {think:.1} ms to answer{which} after {} arrived",
            if which.is_empty() { "the request" } else { "it" }
        ),
    })
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    Some(
        if f.id == "client-think-time" && f.facts.str("before") == "before-client-hello" {
            "Client-side latency before the TLS handshake: the client opened the connection, then waited to start TLS (a connection opened ahead of its first use, a pool's warm-up, a slow TLS library start). Not a network cost; start the handshake when the connection is up, or open the connection when a request needs it.".into()
        } else if f.id == "client-think-time" && f.facts.str("before") == "in-handshake" {
            "Client-side latency inside the TLS handshake, after the server's certificate: certificate-chain verification, a revocation check (an OCSP or CRL fetch: staple the OCSP response on the server, nginx `ssl_stapling on;`), a client-certificate prompt, or the client's key exchange. Profile the client's TLS setup; TLS 1.3 or resumption also removes this turn from the critical path.".into()
        } else if f.id == "client-think-time" {
            "Client-side latency: the application was busy or slow to write the request (DNS, pool checkout, request building, certificate verification); send the request as soon as the connection is ready.".into()
        } else if let Some(m) = f.facts.get("reported_metric").and_then(|m| m.as_str()) {
            // the server's own Server-Timing covers the wait: its largest part
            text!(
            "Application latency at the server, and its own Server-Timing says where: {m} {:.1} ms of {:.1} ms reported. Profile that first (its queries, calls or locks), then the rest of the handler.",
            f.facts.f64("reported_metric_ms"),
            f.facts.f64("reported_ms")
        )
        } else if f.facts.get("reported_ms").is_some() {
            // the server's own account covers only part of it
            text!(
            "Its own Server-Timing accounts for only {:.1} ms of the {:.1} ms: the rest went before or around the handler (see server-unaccounted-time: a proxy or worker queue, the accept queue). Profile the handler for its share.",
            f.facts.f64("reported_ms"),
            f.facts.f64("think_ms")
        )
        } else {
            "Application latency at the server: profile the handler and its upstreams (nginx `$request_time` vs `$upstream_response_time` in the access log), caches, database calls.".into()
        },
    )
}

/// What the server's time to the ACK is compared with: `h_s`, or the
/// SYN-ACK's time when something nearer acknowledges for it.
fn path(a: &Args) -> &'static str {
    if a.flag("proxied") {
        "its SYN-ACK's time"
    } else {
        "h_s"
    }
}

/// A fact of kind `think-time.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "think-time.from" => match a.str("timed_from") {
            "tcp-turn" => "the client's last data before the server answered",
            "other-streams" => "the server's last DATA of other streams before this answer: it was busy sending until here",
            "previous-response" => "end of the previous response: the server could answer this pipelined request from here",
            _ => "last byte of the request",
        }
        .into(),
        "think-time.answer" => {
            let what_r = match a.str("timed_from") {
                "tcp-turn" => "the server's next data",
                "other-streams" => "the stream's response HEADERS",
                "previous-response" => "first byte of its response",
                _ => "first byte of the response",
            };
            text!(
                "{what_r}, {:.1} ms later ({} = {:.1} ms)",
                a.f64("after_ms"),
                path(a),
                a.f64("path_ms")
            )
        }
        "think-time.ack-delayed" => text!(
            "the server's TCP acknowledged it {:.2} ms later, {:.2} ms more than {}: its delayed-ACK timer, while the application had not answered",
            a.f64("after_ms"),
            a.f64("late_ms"),
            path(a)
        ),
        "think-time.ack-proxy" => text!(
            "an ACK {:.2} ms later, from nearer than the server (its SYN-ACK took {:.2} ms): a NAT or proxy acknowledges for it",
            a.f64("after_ms"),
            a.f64("path_ms")
        ),
        "think-time.ack-quick" => text!(
            "the server's TCP acknowledged it {:.2} ms later ({} = {:.2} ms): network and kernel were quick",
            a.f64("after_ms"),
            path(a),
            a.f64("path_ms")
        ),
        "think-time.ack-late" => text!(
            "the server's TCP acknowledged it {:.2} ms later, {:.2} ms more than {}: the path or the server's kernel was slow as well",
            a.f64("after_ms"),
            a.f64("late_ms"),
            path(a)
        ),
        "think-time.several-rtts" => "several RTTs long: no vantage correction could explain it".into(),
        "think-time.end-host" => "timed at an end host".into(),
        "think-time.mid-path" => "timed mid-path, corrected by h_c / h_s".into(),
        "think-time.vantage-unknown" => "vantage point unknown".into(),
        "think-time.ack-late-too" => "the server's ACK of the request was late too: part of the time may be the path's".into(),
        "think-time.client-ready" => "the client could send from here (connection / TLS handshake done)".into(),
        "think-time.request-first-byte" => "first byte of the request".into(),
        "think-time.client-connected" => "the client's ACK of the SYN-ACK: it could start TLS from here".into(),
        "think-time.client-hello" => "the client's ClientHello".into(),
        "think-time.server-flight-end" => "the server's first flight ended (ServerHelloDone)".into(),
        "think-time.client-key-exchange" => "the client's key exchange and Finished".into(),
        _ => return None,
    })
}
