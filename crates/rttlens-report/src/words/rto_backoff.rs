//! The words of `rto-backoff` (`rttlens_core::detect::rto_backoff`).

use super::prelude::*;

/// What ended the backoff: `ended` (`gave-up` by the sender `by`, `reset`
/// by `by`, `fin` by the peer `by` in `fin_frame`, `capture-end`).
fn ended(a: &Args) -> Text {
    match a.str("ended") {
        "gave-up" => text!("the {} gave up and reset the connection", a.str("by")),
        "reset" => text!("the {} reset the connection", a.str("by")),
        "fin" => text!(
            "the {} closed its side meanwhile (FIN, frame {})",
            a.str("by"),
            a.u64("fin_frame")
        ),
        _ => "the capture ends with no ACK for them".into(),
    }
}

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    Some(text!(
        "the {} sent the same bytes {} times over {:.1} s with the timer backing off ×{:.1}, never acknowledged: the {} or the path went dark; {}",
        a.str("sender"),
        a.u64("transmissions"),
        a.f64("lost_ms") / 1e3,
        a.f64("factor"),
        a.str("peer"),
        ended(a)
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    let peer = f.facts.str("peer");
    Some(text!(
        "Find out why the {peer} stopped answering: a host down or restarted without a RST, a firewall/NAT/load balancer that dropped the flow's state (idle timeouts), a route or MTU black hole (try `ping -M do -s 1472`; enable `net.ipv4.tcp_mtu_probing=1`). To fail faster, bound the wait: `TCP_USER_TIMEOUT` on the socket, a lower `net.ipv4.tcp_retries2`, or application timeouts (nginx `proxy_read_timeout`, `send_timeout`)."
    ))
}

/// A fact of kind `rto-backoff.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "rto-backoff.original" => text!(
            "first transmission of the bytes at offset {}",
            a.u64("offset")
        ),
        "rto-backoff.attempt" => text!(
            "attempt {}: {:.0} ms after the previous one",
            a.u64("attempt"),
            a.f64("gap_ms")
        ),
        "rto-backoff.attempt-uncaptured-original" => text!(
            "attempt {} (the original was not captured)",
            a.u64("attempt")
        ),
        "rto-backoff.ended" => ended(a),
        "rto-backoff.never-acked" => text!(
            "{} retransmissions of offset {}, gaps ≥ {} ms and growing, never acknowledged",
            a.u64("retransmissions"),
            a.u64("offset"),
            a.f64("min_gap_ms")
        ),
        _ => return None,
    })
}
