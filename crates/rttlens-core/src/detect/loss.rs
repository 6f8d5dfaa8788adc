//! Loss and its recovery: `fast-retransmit`, `tail-loss-probe`, `rto` and
//! `spurious-retransmission`, from the retransmissions the flow layer
//! classified (order of checks: docs/design.md §4 "Loss").
//!
//! Cost of an episode: the time the data was held up, from the original
//! transmission (or the hole opening, when the original was lost before the
//! capture point) to the retransmission; overlapping episodes count once.
//!
//! A spurious retransmission costs no time by itself: the stall before it
//! belongs to whatever delayed the ACK (think time, delayed ACK, a delay
//! spike), which other findings cost. It is reported when it matters: an
//! RTO among them (Linux cuts cwnd to 1 unless F-RTO/D-SACK undo it) or at
//! least [`SPURIOUS_REPORT_MIN`] of them. One exception has a cost: a
//! timeout whose ACKs the capture saw in time for the sender, which resent
//! anyway — the ACKs were lost on the way to it, and it sent nothing new
//! until its timer fired: from one RTT after its last segment (when the
//! ACK would have released more) to the retransmission.
//!
//! Sources: RFC 5681 §3.2 (fast retransmit), RFC 6675 (SACK recovery),
//! RFC 8985 (RACK-TLP), RFC 6298 (RTO), RFC 2883 (D-SACK); Linux
//! `tcp_fastretrans_alert()`, `tcp_send_loss_probe()`, `tcp_retransmit_timer()`.

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::Analysis;
use crate::base::cost::Cost;
use crate::base::side::Side;
use crate::base::text::{self, text};
use crate::base::time::union_len;
use crate::flow::half::{Retransmission, RetxKind};

/// Finding id of fast retransmissions.
pub(crate) const ID_FAST: &str = "fast-retransmit";
/// Finding id of tail loss probes.
pub(crate) const ID_TLP: &str = "tail-loss-probe";
/// Finding id of retransmission timeouts.
pub(crate) const ID_RTO: &str = "rto";
/// Finding id of spurious retransmissions.
pub(crate) const ID_SPURIOUS: &str = "spurious-retransmission";
/// Spurious retransmissions on one side worth reporting without an RTO among them.
pub(crate) const SPURIOUS_REPORT_MIN: usize = 3;

fn finding(
    a: &Analysis,
    id: &'static str,
    sender: Side,
    list: &[&Retransmission],
) -> Option<Finding> {
    let first = list.first()?;
    let span: Vec<_> = if id == ID_SPURIOUS {
        list.iter()
            .filter(|r| r.kind == RetxKind::Rto && r.lost_ack.is_some() && r.silence > a.rtt_min)
            .map(|r| (r.at.ts - r.silence + a.rtt_min, r.at.ts))
            .collect()
    } else {
        list.iter().map(|r| (r.at.ts - r.delay, r.at.ts)).collect()
    };
    let cost = if span.is_empty() {
        Cost::ZERO
    } else {
        a.cost(union_len(&span))
    };
    let mut evidence = Vec::new();
    let mut shown = Vec::new();
    for r in list.iter().take(4) {
        if let Some(o) = r.original.filter(|o| !shown.contains(&o.frame)) {
            shown.push(o.frame);
            evidence.push(ev(
                o.frame,
                text!(
                    "original transmission of {} B at offset {}",
                    r.len,
                    r.offset
                ),
            ));
        }
        let what = match id {
            ID_FAST => text!(
                "fast retransmission after {} duplicate ACKs{}",
                r.dupacks,
                if r.inferred {
                    " (time-based: RACK)"
                } else {
                    ""
                }
            ),
            ID_TLP => text!(
                "tail loss probe after {:.1} ms of silence",
                r.silence.as_millis_f64()
            ),
            ID_RTO => text!(
                "retransmission timeout after {:.1} ms of silence{}",
                r.silence.as_millis_f64(),
                if r.backoff > 0 {
                    text!(" (backoff ×{})", 1u32 << r.backoff.min(16))
                } else {
                    String::new()
                }
            ),
            _ if r.kind == RetxKind::Rto && r.lost_ack.is_some() => text!(
                "timeout after {:.1} ms of silence, resending data the capture saw acknowledged: the ACKs were lost on the way to the {}",
                r.silence.as_millis_f64(),
                sender.as_str()
            ),
            _ => "retransmission of data the receiver already had".to_string(),
        };
        if let Some(k) = r
            .lost_ack
            .filter(|_| id == ID_SPURIOUS && r.kind == RetxKind::Rto)
        {
            evidence.push(ev(
                k,
                text!(
                    "the {}'s ACK of these bytes: seen here in time, never heard by the {}",
                    sender.peer().as_str(),
                    sender.as_str()
                ),
            ));
        }
        evidence.push(ev(r.at.frame, what));
    }
    let n = list.len();
    let who = sender.as_str();
    let (title, fix, refs, level, why): (String, &str, Vec<&'static str>, Level, String) = match id {
        ID_FAST => (
            text!("{n} segment{} from the {who} lost and fast-retransmitted", if n == 1 { "" } else { "s" }),
            "Packet loss on the path: look for drops (`ip -s link`, `tc -s qdisc`, `nstat -az TcpExtTCPLostRetransmit`), a policer or a full queue; keep SACK on (`net.ipv4.tcp_sack=1`); a loss-tolerant congestion control (`net.ipv4.tcp_congestion_control=bbr`) loses less throughput.",
            vec!["RFC 5681 §3.2", "RFC 6675", "RFC 8985 §6", "Linux tcp_fastretrans_alert()"],
            if first.inferred { Level::Medium } else { Level::High },
            if first.inferred { "retransmitted without 3 dupACKs or SACK seen: RACK or a trigger the capture missed".to_string() } else { "duplicate ACKs / SACK blocks preceded the retransmission".to_string() },
        ),
        ID_TLP => (
            text!("{n} tail loss probe{} by the {who}: the last segment of a flight went unacknowledged", if n == 1 { "" } else { "s" }),
            "Tail loss (the last packets of a burst): TLP (RFC 8985) already shortened the stall; keep `net.ipv4.tcp_early_retrans=3`; if frequent, look for a policer dropping burst tails or pace the sender (`tc qdisc add … fq`).",
            vec!["RFC 8985 §7", "Linux tcp_send_loss_probe()"],
            Level::Medium,
            "highest segment resent after ~2·SRTT of silence without dupACKs".to_string(),
        ),
        ID_RTO => (
            text!("{n} retransmission timeout{} at the {who}: the connection stalled until the timer fired", if n == 1 { "" } else { "s" }),
            "A timeout stall: the loss could not be repaired by ACKs (whole flight or retransmission lost, or no SACK). Keep SACK and RACK-TLP on (`net.ipv4.tcp_sack=1`, `net.ipv4.tcp_recovery=1`); on low-RTT paths lower the minimum RTO (`ip route change <route> rto_min 20ms`); find the loss (queue drops, flapping link).",
            vec!["RFC 6298 §5", "Linux tcp_retransmit_timer(), TCP_RTO_MIN"],
            Level::High,
            text!("≥ {} ms of silence before the retransmission", crate::flow::half::RTO_MIN.as_millis_f64()),
        ),
        _ if !span.is_empty() => (
            text!("{n} spurious retransmission{} by the {who}: data the receiver already had, resent on a timeout because the ACKs were lost on the way to the {who}, which sent nothing new until its timer fired", if n == 1 { "" } else { "s" }),
            "ACKs lost between the receiver and the sender: look for loss on the return path (a policer, a full queue, a flapping link); a lower minimum RTO on low-RTT paths shortens the stall (`ip route change <route> rto_min 20ms`); keep `net.ipv4.tcp_frto=2` so the cwnd cut is undone.",
            vec!["RFC 6298 §5", "RFC 5682 (F-RTO)", "Linux tcp_retransmit_timer(), tcp_try_undo_*()"],
            Level::Medium,
            "the ACKs covering the data were seen in time for the sender, which resent it after a timer's silence".to_string(),
        ),
        _ => (
            text!("{n} spurious retransmission{} by the {who}: data the receiver already had (no time lost by itself; a spurious RTO cuts cwnd unless undone)", if n == 1 { "" } else { "s" }),
            "The sender's timers fired too early or ACKs were lost/delayed: a delay spike on the path, or ACK loss. Keep `net.ipv4.tcp_frto=2` (F-RTO undoes the cwnd cut) and D-SACK (`net.ipv4.tcp_dsack=1`); look for ACK-path loss or bufferbloat.",
            vec!["RFC 2883 (D-SACK)", "RFC 5682 (F-RTO)", "Linux tcp_try_undo_*()"],
            Level::High,
            "an ACK covering the data was seen before the retransmission, or a D-SACK reported it".to_string(),
        ),
    };
    Some(Finding {
        facts: Default::default(),
        id,
        connection: a.conn.index,
        title,
        cost,
        evidence,
        confidence: conf(level, why),
        fix: text::owned(fix),
        references: refs,
        span,
    })
}

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let mut out = Vec::new();
    for side in [Side::Client, Side::Server] {
        let h = &a.conn.half[side.index()];
        // a timer backing off towards a dead peer is `rto-backoff`, not a
        // loss that recovery repaired
        let dark: Vec<u64> = super::rto_backoff::episodes(h)
            .iter()
            .map(|b| b.offset)
            .collect();
        for (id, kind) in [
            (ID_FAST, RetxKind::FastRetransmit),
            (ID_TLP, RetxKind::TailLossProbe),
            (ID_RTO, RetxKind::Rto),
        ] {
            let list: Vec<&Retransmission> = h
                .retx()
                .iter()
                .filter(|r| r.kind == kind && !r.spurious && !dark.contains(&r.offset))
                .collect();
            out.extend(finding(a, id, side, &list));
        }
        let spurious: Vec<&Retransmission> = h.retx().iter().filter(|r| r.spurious).collect();
        if spurious.len() >= SPURIOUS_REPORT_MIN || spurious.iter().any(|r| r.kind == RetxKind::Rto)
        {
            out.extend(finding(a, ID_SPURIOUS, side, &spurious));
        }
    }
    out
}
