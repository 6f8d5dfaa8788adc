//! The words of `nagle-stall`, `nagle-delayed-ack` (`rttlens_core::detect::nagle`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    Some(if f.id == "nagle-delayed-ack" {
        text!(
            "Nagle × delayed ACK: the {} held a small segment until the {}'s delayed ACK ({:.0} ms) came back",
            a.str("sender"),
            a.str("receiver"),
            a.f64("wait_ms")
        )
    } else {
        text!(
            "Nagle: the {} held a small segment for a round trip, until the ACK of the previous one came back",
            a.str("sender")
        )
    })
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    Some(text!(
        "Set TCP_NODELAY on the {} (nginx `tcp_nodelay on;`, Go's default, `setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, 1)`), or write what belongs together in one write (`writev`, TCP_CORK then uncork){}.",
        f.facts.str("sender"),
        if f.id == "nagle-delayed-ack" {
            "; the receiver's delayed ACK (TCP_QUICKACK, Windows `TcpAckFrequency`) is the other half"
        } else {
            ""
        }
    ))
}

/// A fact of kind `nagle.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "nagle.small-segment" => text!(
            "small segment ({} B) from the {}; nothing more follows",
            a.u64("bytes"),
            a.str("sender")
        ),
        "nagle.pure-ack" => {
            if a.flag("delayed") {
                text!(
                    "the {}'s pure ACK of it, held {:.1} ms by delayed ACK",
                    a.str("receiver"),
                    a.f64("held_ms")
                )
            } else {
                text!("the {}'s pure ACK of it", a.str("receiver"))
            }
        }
        "nagle.released" => text!(
            "the next small segment ({} B) leaves as soon as that ACK arrives, {:.1} ms after the first",
            a.u64("bytes"),
            a.f64("after_ms")
        ),
        "nagle.released-by-ack" => "small segment released exactly by a pure ACK; assumes its data was ready when the previous segment left".into(),
        _ => return None,
    })
}
