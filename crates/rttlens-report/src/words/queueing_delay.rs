//! The words of `queueing-delay` (`rttlens_core::detect::queueing_delay`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let mut title = format!(
        "RTT rose from {:.1} ms to {:.1} ms while data was in flight: packets waited {:.1} ms in a queue on the path",
        a.f64("early_ms"),
        a.f64("late_ms"),
        a.f64("extra_ms")
    );
    if a.get("bytes_per_sec").is_some() {
        title.push_str(&format!(
            "; the bottleneck delivered {:.2} Mbit/s with about {:.0} kB queued in front of it",
            a.f64("bytes_per_sec") * 8.0 / 1e6,
            a.f64("queued_bytes") / 1e3
        ));
    }
    Some(title.into())
}

/// The fix, from the finding's facts.
pub(super) fn fix(_f: &Finding) -> Option<Text> {
    Some("Queueing at the bottleneck (bufferbloat): a bigger window or buffer cannot help, the link is full. Give the bottleneck an AQM (`tc qdisc replace dev <dev> root fq_codel`, or `cake bandwidth <rate>` on a shaped link), pace and use a delay-based congestion control on the sender (`net.core.default_qdisc=fq`, `net.ipv4.tcp_congestion_control=bbr`), shrink oversized device queues (`txqueuelen`, BQL), and keep unsent data out of the socket (`net.ipv4.tcp_notsent_lowat=131072`).".into())
}

/// A fact of kind `queueing-delay.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "queueing-delay.first-sample" => text!(
            "first RTT sample: {:.1} ms (minimum {:.1} ms)",
            a.f64("rtt_ms"),
            a.f64("min_rtt_ms")
        ),
        "queueing-delay.later" => text!(
            "later in the transfer: {:.1} ms, {:.1} ms above the minimum (median of the later samples)",
            a.f64("rtt_ms"),
            a.f64("extra_ms")
        ),
        "queueing-delay.highest" => text!("highest: {:.1} ms", a.f64("rtt_ms")),
        "queueing-delay.rise" => text!(
            "{} RTT samples: the later half's median {:.1} ms against {:.1} ms early on; random jitter does not rise over time",
            a.u64("samples"),
            a.f64("late_ms"),
            a.f64("early_ms")
        ),
        _ => return None,
    })
}
