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
//! RTO among them (Linux cuts cwnd to 1 unless F-RTO/D-SACK undo it; a lone
//! one too, at cost 0: wasted resends) or at least [`SPURIOUS_REPORT_MIN`]
//! of them, with the D-SACK frame that proves each when the receiver sent
//! one (RFC 2883). One exception has a cost: a
//! timeout whose ACKs the capture saw in time for the sender, which resent
//! anyway — the ACKs were lost on the way to it, and it sent nothing new
//! until its timer fired: from one RTT after its last segment (when the
//! ACK would have released more) to the retransmission.
//!
//! Sources: RFC 5681 §3.2 (fast retransmit), RFC 6675 (SACK recovery),
//! RFC 8985 (RACK-TLP), RFC 6298 (RTO), RFC 2883 (D-SACK); Linux
//! `tcp_fastretrans_alert()`, `tcp_send_loss_probe()`, `tcp_retransmit_timer()`.

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::Analysis;
use crate::base::cost::Cost;
use crate::base::fact::{args, fact};
use crate::base::side::Side;
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
                fact!(
                    "loss.original",
                    len_bytes = Value::Bytes(u64::from(r.len)),
                    offset = Value::Bytes(r.offset),
                ),
            ));
        }
        let what = match id {
            ID_FAST => fact!(
                "loss.fast-retransmission",
                dupacks = Value::Count(u64::from(r.dupacks)),
                rack = r.inferred,
            ),
            ID_TLP => fact!("loss.tail-loss-probe", silence_ms = r.silence),
            ID_RTO => fact!(
                "loss.timeout",
                silence_ms = r.silence,
                backoff_factor = Value::Count(1u64 << r.backoff.min(16)),
            ),
            _ if r.kind == RetxKind::Rto && r.lost_ack.is_some() => fact!(
                "loss.timeout-acks-lost",
                silence_ms = r.silence,
                sender = sender,
            ),
            // a timer resent it (the RTO, not a probe: the flow layer
            // calls a lone resend past any probe timer an RTO)
            _ if r.kind == RetxKind::Rto => {
                fact!("loss.spurious-timeout", silence_ms = r.silence)
            }
            _ => fact!("loss.already-had"),
        };
        if let Some(k) = r
            .lost_ack
            .filter(|_| id == ID_SPURIOUS && r.kind == RetxKind::Rto)
        {
            evidence.push(ev(
                k,
                fact!(
                    "loss.ack-never-heard",
                    receiver = sender.peer(),
                    sender = sender,
                ),
            ));
        }
        evidence.push(ev(r.at.frame, what));
        // the receiver's D-SACK: it had these bytes twice (RFC 2883)
        if let Some(d) = r.dsack.filter(|d| id == ID_SPURIOUS && !shown.contains(d)) {
            shown.push(d);
            evidence.push(ev(d, fact!("loss.dsack", receiver = sender.peer())));
        }
    }
    let n = list.len();
    let acks_lost = !span.is_empty();
    let (refs, level, why): (Vec<&'static str>, Level, _) = match id {
        ID_FAST => (
            vec![
                "RFC 5681 §3.2",
                "RFC 6675",
                "RFC 8985 §6",
                "Linux tcp_fastretrans_alert()",
            ],
            if first.inferred {
                Level::Medium
            } else {
                Level::High
            },
            fact!("loss.fast-trigger", rack = first.inferred),
        ),
        ID_TLP => (
            vec!["RFC 8985 §7", "Linux tcp_send_loss_probe()"],
            Level::Medium,
            fact!("loss.tail-silence"),
        ),
        ID_RTO => (
            vec!["RFC 6298 §5", "Linux tcp_retransmit_timer(), TCP_RTO_MIN"],
            Level::High,
            fact!(
                "loss.timeout-silence",
                min_silence_ms = crate::flow::half::RTO_MIN
            ),
        ),
        _ if acks_lost => (
            vec![
                "RFC 6298 §5",
                "RFC 5682 (F-RTO)",
                "Linux tcp_retransmit_timer(), tcp_try_undo_*()",
            ],
            Level::Medium,
            fact!("loss.acks-seen-in-time"),
        ),
        _ => (
            vec![
                "RFC 2883 (D-SACK)",
                "RFC 5682 (F-RTO)",
                "Linux tcp_try_undo_*()",
            ],
            Level::High,
            fact!("loss.acked-before"),
        ),
    };
    Some(Finding {
        facts: args!(
            sender = sender,
            count = Value::Count(n as u64),
            acks_lost = acks_lost,
        ),
        id,
        connection: a.index(),
        cost,
        evidence,
        confidence: conf(level, why),
        references: refs,
        span,
    })
}

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let mut out = Vec::new();
    for side in [Side::Client, Side::Server] {
        let retx = a.retransmissions(side);
        // a timer backing off towards a dead peer is `rto-backoff`, not a
        // loss that recovery repaired
        let dark: Vec<u64> = a.backoffs(side).iter().map(|b| b.offset).collect();
        for (id, kind) in [
            (ID_FAST, RetxKind::FastRetransmit),
            (ID_TLP, RetxKind::TailLossProbe),
            (ID_RTO, RetxKind::Rto),
        ] {
            let list: Vec<&Retransmission> = retx
                .iter()
                .filter(|r| r.kind == kind && !r.spurious && !dark.contains(&r.offset))
                .collect();
            out.extend(finding(a, id, side, &list));
        }
        let spurious: Vec<&Retransmission> = retx.iter().filter(|r| r.spurious).collect();
        if spurious.len() >= SPURIOUS_REPORT_MIN || spurious.iter().any(|r| r.kind == RetxKind::Rto)
        {
            out.extend(finding(a, ID_SPURIOUS, side, &spurious));
        }
    }
    out
}
