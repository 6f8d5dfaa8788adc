//! The words of `zero-window` (`rttlens_core::detect::zero_window`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let times = a.u64("times");
    Some(text!(
        "{} closed its receive window {} time{}: the {} had to stop sending",
        a.str("receiver"),
        times,
        if times == 1 { "" } else { "s" },
        a.str("sender")
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    let receiver = f.facts.str("receiver");
    Some(text!("The {receiver}'s application does not read fast enough (slow consumer, blocked thread, full downstream): read the socket sooner or in a dedicated thread; a larger receive buffer (`net.ipv4.tcp_rmem`, SO_RCVBUF) only absorbs bursts."))
}

/// A fact of kind `zero-window.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "zero-window.closed" => text!("{} advertises a zero window", a.str("receiver")),
        "zero-window.opened" => text!("window opens again after {:.1} ms", a.f64("closed_ms")),
        "zero-window.still-closed" => "window still closed at the end of the capture".into(),
        "zero-window.advertised" => "window 0 advertised in the ACKs".into(),
        _ => return None,
    })
}
