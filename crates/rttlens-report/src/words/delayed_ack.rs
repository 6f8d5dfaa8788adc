//! The words of `delayed-ack` (`rttlens_core::detect::delayed_ack`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let n = a.u64("stalls");
    Some(text!(
        "Delayed ACK: the {} waited {} for the {}'s delayed ACK ({:.0} ms the first time) before it could send more",
        a.str("sender"),
        if n == 1 { "once".to_string() } else { format!("{n} times") },
        a.str("receiver"),
        a.f64("first_held_ms")
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    Some(text!(
        "On the {}, acknowledge at once: Linux `ip route change ROUTE quickack 1` or `setsockopt(TCP_QUICKACK, 1)` after each read; Windows `TcpAckFrequency=1`. On the {}, find why only one segment (or an odd tail) could be in flight: a small or locked congestion window (`ip route … initcwnd`/`cwnd lock`), a small SO_SNDBUF or peer window.",
        a.str("receiver"),
        a.str("sender")
    ))
}

/// A fact of kind `delayed-ack.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "delayed-ack.last-segment" => {
            let flight = a.u64("flight_bytes");
            let flight_here = a.u64("flight_here_bytes");
            let mss = a.u64("mss_bytes");
            let in_flight = if flight_here == flight {
                text!("{} B ({:.1} MSS) in flight", flight, flight as f64 / mss as f64)
            } else {
                text!(
                    "{} B in flight by the ACKs seen here ({} B, {:.1} MSS, as the {} had it: later ACKs were still on their way to it)",
                    flight_here,
                    flight,
                    flight as f64 / mss as f64,
                    a.str("sender")
                )
            };
            text!(
                "{} B from the {} with {in_flight}; nothing more follows",
                a.u64("bytes"),
                a.str("sender"),
            )
        }
        "delayed-ack.held-ack" => text!(
            "the {}'s pure ACK of it, held {:.1} ms by its delayed-ACK timer",
            a.str("receiver"),
            a.f64("held_ms")
        ),
        "delayed-ack.released" => text!(
            "the {}'s next segment leaves as soon as that ACK arrives, {:.1} ms after the previous one",
            a.str("sender"),
            a.f64("after_ms")
        ),
        "delayed-ack.released-by-held-ack" => "the next segment left exactly when a held pure ACK arrived; assumes it was ready and held back by the window, not by the application".into(),
        _ => return None,
    })
}
