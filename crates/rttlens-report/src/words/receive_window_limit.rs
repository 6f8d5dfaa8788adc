//! The words of `receive-window-limit` (`rttlens_core::detect::receive_window_limit`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    Some(text!(
        "{} bytes in flight held at the {}'s receive window ({} B) for {} rounds{}",
        a.str("sender"),
        a.str("receiver"),
        a.u64("rwnd_bytes"),
        a.u64("rounds"),
        if a.flag("syn_without_wscale") {
            "; its SYN had no window-scale option"
        } else {
            ""
        }
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let mut fix: String = match a.str("receiver") {
        "client" => "On the client (receiver): let its receive buffer grow — raise `net.ipv4.tcp_rmem` max (e.g. `4096 131072 16777216`), do not pin SO_RCVBUF (curl `--buffer`/app socket options), keep `net.ipv4.tcp_moderate_rcvbuf=1`.".into(),
        _ => "On the server (receiver): raise `net.ipv4.tcp_rmem` max, do not pin SO_RCVBUF (nginx `listen … rcvbuf=`), keep `net.ipv4.tcp_moderate_rcvbuf=1`.".into(),
    };
    if a.flag("syn_without_wscale") {
        fix.push_str(" Its SYN had no window-scale option: enable `net.ipv4.tcp_window_scaling=1` (or fix the middlebox stripping the option).");
    }
    if !a.flag("wscale_known") && a.flag("unscaled_max") {
        fix.push_str(" The window field sat at 65535 throughout: the receiver most likely does not scale its window (no SYN in the capture to prove it) — check `net.ipv4.tcp_window_scaling=1` and middleboxes that strip the option.");
    }
    Some(fix.into())
}

/// A fact of kind `receive-window-limit.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "receive-window-limit.syn-wscale" => text!(
            "{} SYN: window scale {}",
            a.str("receiver"),
            a.u64("shift")
        ),
        "receive-window-limit.syn-no-wscale" => text!(
            "{} SYN without a window-scale option: its window cannot exceed 65535 B",
            a.str("receiver")
        ),
        "receive-window-limit.round-at-window" => text!(
            "round {}: {} B in flight = the {} window of {} B",
            a.u64("round"),
            a.u64("flight_bytes"),
            a.str("receiver"),
            a.u64("rwnd_bytes")
        ),
        "receive-window-limit.flight-at-window" => text!(
            "flight within one MSS of the advertised window in {} rounds",
            a.u64("rounds")
        ),
        "receive-window-limit.wscale-inferred" => text!(
            "{} B in flight under a window field of {}: window scale at least {} (no SYN in the capture)",
            a.u64("flight_bytes"),
            a.u64("window_field"),
            a.u64("shift")
        ),
        "receive-window-limit.no-syn" => text!(
            "{}{}",
            if a.flag("wscale_inferred") {
                "window scale inferred (no SYN)"
            } else {
                "no SYN in the capture: no window scaling assumed"
            },
            if a.flag("unscaled_max") {
                ": the window field sat at 65535, the most an unscaled window can say"
            } else {
                ": the flight followed the window as it changed or met it to the byte"
            }
        ),
        _ => return None,
    })
}
