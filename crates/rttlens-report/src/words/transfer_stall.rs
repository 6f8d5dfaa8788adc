//! The words of `transfer-stall` (`rttlens_core::detect::transfer_stall`).

use super::prelude::*;

/// What ended the stall: `ended` (`reset` by `by`, `fin` by the receiver
/// `by`, `capture-end`).
fn ended(a: &Args) -> String {
    match a.str("ended") {
        "reset" => format!("the {} reset the connection", a.str("by")),
        "fin" => format!("the {} gave up and closed (FIN)", a.str("by")),
        _ => "the capture ends".to_string(),
    }
}

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<String> {
    let a = &f.facts;
    Some(format!(
        "the transfer from the {} stopped mid-stream for {:.1} s with the {}'s window open, until {}",
        a.str("sender"),
        a.f64("stall_ms") / 1e3,
        a.str("receiver"),
        ended(a)
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<String> {
    Some(format!(
        "Capture at the {} too: retransmissions backing off there (`rto-backoff`) mean the path or a middlebox went dark (firewall/NAT/load-balancer state lost, route or MTU black hole: enable `net.ipv4.tcp_mtu_probing=1`); none mean the sender's application stalled. Bound the wait on the receiver (`TCP_USER_TIMEOUT`, curl `--speed-limit/--speed-time`, application read timeouts).",
        f.facts.str("sender")
    ))
}

/// A fact of kind `transfer-stall.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<String> {
    Some(match kind {
        "transfer-stall.last-data" => format!(
            "last data from the {}: a full {} B segment, more was coming",
            a.str("sender"),
            a.u64("len_bytes")
        ),
        "transfer-stall.all-acked" => format!(
            "the {} acknowledged everything, window {} B open",
            a.str("receiver"),
            a.u64("window_bytes")
        ),
        "transfer-stall.nothing-more" => format!(
            "{:.1} s later, nothing more from the {}: {}",
            a.f64("stall_ms") / 1e3,
            a.str("sender"),
            ended(a)
        ),
        "transfer-stall.open-window" => "full-sized last segment, all data acknowledged, window open, no FIN: the sender had more and nothing arrived (its retransmissions were lost too, or it stalled)".into(),
        _ => return None,
    })
}
