//! The words of `transfer-stall` (`rttlens_core::detect::transfer_stall`).

use super::prelude::*;

/// What ended the stall: `ended` (`reset` by `by`, `fin` by the receiver
/// `by`, `capture-end`).
fn ended(a: &Args) -> Text {
    match a.str("ended") {
        "reset" => text!("the {} reset the connection", a.str("by")),
        "fin" => text!("the {} gave up and closed (FIN)", a.str("by")),
        _ => "the capture ends".into(),
    }
}

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    Some(text!(
        "the transfer from the {} stopped mid-stream for {:.1} s with the {}'s window open, until {}",
        a.str("sender"),
        a.f64("stall_ms") / 1e3,
        a.str("receiver"),
        ended(a)
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    Some(text!(
        "Capture at the {} too: retransmissions backing off there (`rto-backoff`) mean the path or a middlebox went dark (firewall/NAT/load-balancer state lost, route or MTU black hole: enable `net.ipv4.tcp_mtu_probing=1`); none mean the sender's application stalled. Bound the wait on the receiver (`TCP_USER_TIMEOUT`, curl `--speed-limit/--speed-time`, application read timeouts).",
        f.facts.str("sender")
    ))
}

/// A fact of kind `transfer-stall.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "transfer-stall.last-data" => text!(
            "last data from the {}: a full {} B segment, more was coming",
            a.str("sender"),
            a.u64("len_bytes")
        ),
        "transfer-stall.all-acked" => text!(
            "the {} acknowledged everything, window {} B open",
            a.str("receiver"),
            a.u64("window_bytes")
        ),
        "transfer-stall.nothing-more" => text!(
            "{:.1} s later, nothing more from the {}: {}",
            a.f64("stall_ms") / 1e3,
            a.str("sender"),
            ended(a)
        ),
        "transfer-stall.open-window" => "full-sized last segment, all data acknowledged, window open, no FIN: the sender had more and nothing arrived (its retransmissions were lost too, or it stalled)".into(),
        _ => return None,
    })
}
