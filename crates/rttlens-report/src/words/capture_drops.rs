//! The words of `capture-drops` (`rttlens_core::detect::capture_drops`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    Some(text!(
        "capture missed {} B of {} data that the {} acknowledged",
        a.u64("dropped_bytes"),
        a.str("sender"),
        a.str("receiver")
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(_f: &Finding) -> Option<Text> {
    Some("Capture again with fewer drops: a larger buffer (`tcpdump -B 65536`), headers only (`-s 128`), a capture filter for the hosts involved, and on the end host rather than a SPAN port.".into())
}

/// A fact of kind `capture-drops.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "capture-drops.acked-unseen" => text!(
            "ACK covers {} B of {} data the capture never saw",
            a.u64("bytes"),
            a.str("sender")
        ),
        "capture-drops.acked-never-seen" => {
            "acknowledged sequence numbers never seen in the capture".into()
        }
        _ => return None,
    })
}
