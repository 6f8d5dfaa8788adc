//! The words of `sender-window-cap` (`rttlens_core::detect::sender_window_cap`).

use super::prelude::*;

/// "at least " when the window is a lower bound (its scale inferred).
fn at_least(a: &Args) -> &'static str {
    if a.flag("wscale_known") {
        ""
    } else {
        "at least "
    }
}

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    Some(text!(
        "{}'s bytes in flight flat at {} B for {} rounds while the receiver offered {}{} B: throughput bound {:.2} MB/s",
        a.str("sender"),
        a.u64("flight_bytes"),
        a.u64("rounds"),
        at_least(a),
        a.u64("rwnd_bytes"),
        a.f64("rate_mb_s")
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let (sender, flight) = (a.str("sender"), a.u64("flight_bytes"));
    let mut fix = format!(
        "Let the {sender} keep more than {flight} B in flight: raise its send buffer (nginx `listen … sndbuf=4m` or remove a small `sndbuf=`; \
         `sysctl -w net.ipv4.tcp_wmem=\"4096 131072 16777216\"` and do not pin SO_SNDBUF, which disables autotuning); \
         look for a window clamp (TCP_WINDOW_CLAMP, `ip route … window`) or a proxy/middlebox that caps the flight."
    );
    if a.flag("near_64k") {
        fix.push_str(" A cap at 65535 B is the signature of a 16-bit limit: a hop or socket without window scaling (RFC 7323) or a 64 KiB buffer.");
    }
    Some(fix.into())
}

/// A fact of kind `sender-window-cap.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "sender-window-cap.round-flat" => text!(
            "round {}: {} B in flight, receiver window {}{} B",
            a.u64("round"),
            a.u64("flight_bytes"),
            at_least(a),
            a.u64("rwnd_bytes")
        ),
        "sender-window-cap.wscale-inferred" => text!(
            "{} B in flight under a window field of {}: the receiver's window scale is at least {} (no SYN in the capture)",
            a.u64("flight_bytes"),
            a.u64("window_field"),
            a.u64("shift")
        ),
        "sender-window-cap.flat-below-window" => text!(
            "{} loss-free rounds within ±1 MSS of {} B, below the advertised window",
            a.u64("rounds"),
            a.u64("flight_bytes")
        ),
        _ => return None,
    })
}
