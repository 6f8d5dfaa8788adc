//! The words of `fast-retransmit`, `tail-loss-probe`, `rto`, `spurious-retransmission` (`rttlens_core::detect::loss`).

use super::prelude::*;

/// "s" unless `n` is 1.
fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let n = a.u64("count");
    let who = a.str("sender");
    Some(match f.id {
        "fast-retransmit" => text!("{n} segment{} from the {who} lost and fast-retransmitted", plural(n)),
        "tail-loss-probe" => text!("{n} tail loss probe{} by the {who}: the last segment of a flight went unacknowledged", plural(n)),
        "rto" => text!("{n} retransmission timeout{} at the {who}: the connection stalled until the timer fired", plural(n)),
        _ if a.flag("acks_lost") => text!("{n} spurious retransmission{} by the {who}: data the receiver already had, resent on a timeout because the ACKs were lost on the way to the {who}, which sent nothing new until its timer fired", plural(n)),
        _ => text!("{n} spurious retransmission{} by the {who}: data the receiver already had (no time lost by itself; a spurious RTO cuts cwnd unless undone)", plural(n)),
    })
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    Some(match f.id {
        "fast-retransmit" => "Packet loss on the path: look for drops (`ip -s link`, `tc -s qdisc`, `nstat -az TcpExtTCPLostRetransmit`), a policer or a full queue; keep SACK on (`net.ipv4.tcp_sack=1`); a loss-tolerant congestion control (`net.ipv4.tcp_congestion_control=bbr`) loses less throughput.",
        "tail-loss-probe" => "Tail loss (the last packets of a burst): TLP (RFC 8985) already shortened the stall; keep `net.ipv4.tcp_early_retrans=3`; if frequent, look for a policer dropping burst tails or pace the sender (`tc qdisc add … fq`).",
        "rto" => "A timeout stall: the loss could not be repaired by ACKs (whole flight or retransmission lost, or no SACK). Keep SACK and RACK-TLP on (`net.ipv4.tcp_sack=1`, `net.ipv4.tcp_recovery=1`); on low-RTT paths lower the minimum RTO (`ip route change <route> rto_min 20ms`); find the loss (queue drops, flapping link).",
        _ if f.facts.flag("acks_lost") => "ACKs lost between the receiver and the sender: look for loss on the return path (a policer, a full queue, a flapping link); a lower minimum RTO on low-RTT paths shortens the stall (`ip route change <route> rto_min 20ms`); keep `net.ipv4.tcp_frto=2` so the cwnd cut is undone.",
        _ => "The sender's timers fired too early or ACKs were lost/delayed: a delay spike on the path, or ACK loss. Keep `net.ipv4.tcp_frto=2` (F-RTO undoes the cwnd cut) and D-SACK (`net.ipv4.tcp_dsack=1`); look for ACK-path loss or bufferbloat.",
    }.into())
}

/// A fact of kind `loss.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "loss.original" => text!(
            "original transmission of {} B at offset {}",
            a.u64("len_bytes"),
            a.u64("offset")
        ),
        // fewer than 3 duplicate ACKs and not RACK: SACK blocks above the
        // segment triggered it (ACKs whose window moved are no duplicates)
        "loss.fast-retransmission" if a.u64("dupacks") < 3 && !a.flag("rack") => {
            "fast retransmission after SACK blocks reported data above it".into()
        }
        "loss.fast-retransmission" => text!(
            "fast retransmission after {} duplicate ACKs{}",
            a.u64("dupacks"),
            if a.flag("rack") {
                " (time-based: RACK)"
            } else {
                ""
            }
        ),
        "loss.tail-loss-probe" => text!(
            "tail loss probe after {:.1} ms of silence",
            a.f64("silence_ms")
        ),
        "loss.timeout" => {
            let factor = a.u64("backoff_factor");
            text!(
                "retransmission timeout after {:.1} ms of silence{}",
                a.f64("silence_ms"),
                if factor > 1 {
                    text!(" (backoff ×{factor})")
                } else {
                    "".into()
                }
            )
        }
        "loss.timeout-acks-lost" => text!(
            "timeout after {:.1} ms of silence, resending data the capture saw acknowledged: the ACKs were lost on the way to the {}",
            a.f64("silence_ms"),
            a.str("sender")
        ),
        "loss.already-had" => "retransmission of data the receiver already had".into(),
        "loss.spurious-timeout" => text!(
            "retransmission timeout after {:.1} ms of silence, of data the receiver already had",
            a.f64("silence_ms")
        ),
        "loss.dsack" => text!(
            "D-SACK from the {}: it received these bytes twice, the resend was not needed",
            a.str("receiver")
        ),
        "loss.ack-never-heard" => text!(
            "the {}'s ACK of these bytes: seen here in time, never heard by the {}",
            a.str("receiver"),
            a.str("sender")
        ),
        "loss.fast-trigger" => if a.flag("rack") {
            "retransmitted without 3 dupACKs or SACK seen: RACK or a trigger the capture missed"
        } else {
            "duplicate ACKs / SACK blocks preceded the retransmission"
        }
        .into(),
        "loss.tail-silence" => "highest segment resent after ~2·SRTT of silence without dupACKs".into(),
        "loss.timeout-silence" => text!(
            "≥ {} ms of silence before the retransmission",
            a.f64("min_silence_ms")
        ),
        "loss.acks-seen-in-time" => "the ACKs covering the data were seen in time for the sender, which resent it after a timer's silence".into(),
        "loss.acked-before" => "an ACK covering the data was seen before the retransmission, or a D-SACK reported it".into(),
        _ => return None,
    })
}
