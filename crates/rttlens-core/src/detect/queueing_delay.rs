//! `queueing-delay`: the connection's RTT samples rise well above their
//! early level while data is in flight, and stay up: packets wait in a
//! queue at a bottleneck (bufferbloat, a congested or shaped hop). The rise
//! is judged in `analysis` ([`Analysis::rtt_rise`], its module docs say how);
//! this detector reports it.
//!
//! When the RTT rises like this, a flat flight is the bottleneck's rate
//! times the inflated RTT: a bigger window would only queue more, so the
//! window findings (`sender-window-cap`, `receive-window-limit`) are not
//! reported alongside it (they read the same estimate).

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::rtt_rise::MIN_SAMPLES;
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};

/// Finding id.
pub(crate) const ID: &str = "queueing-delay";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let Some(q) = a.rtt_rise() else { return vec![] };
    let base = a.rtt_min;
    let extra = q.late - base;
    let mut evidence = vec![
        ev(
            q.first.at.frame,
            fact!(
                "queueing-delay.first-sample",
                rtt_ms = q.first.d + q.near,
                min_rtt_ms = base,
            ),
        ),
        ev(
            q.late_sample.at.frame,
            fact!("queueing-delay.later", rtt_ms = q.late, extra_ms = extra,),
        ),
        ev(
            q.peak.at.frame,
            fact!("queueing-delay.highest", rtt_ms = q.peak.d + q.near),
        ),
    ];
    evidence.sort_by_key(|e| e.frame);
    evidence.dedup_by_key(|e| e.frame);
    let mut facts = args!(early_ms = q.early, late_ms = q.late, extra_ms = extra,);
    if let Some(t) = a.transfer.as_ref().filter(|t| t.bytes_per_sec > 0.0) {
        let queued = t.bytes_per_sec * extra.as_secs_f64();
        facts.set("bytes_per_sec", Value::Number(t.bytes_per_sec));
        facts.set("queued_bytes", Value::Number(queued));
    }
    let level = if q.samples >= 4 * MIN_SAMPLES && q.late.nanos >= 2 * base.nanos {
        Level::High
    } else {
        Level::Medium
    };
    vec![Finding {
        facts,
        id: ID,
        connection: a.index(),
        cost: a.cost(extra),
        evidence,
        confidence: conf(
            level,
            fact!(
                "queueing-delay.rise",
                samples = Value::Count(q.samples as u64),
                late_ms = q.late,
                early_ms = q.early,
            ),
        ),
        references: vec![
            "RFC 8289 (CoDel)",
            "RFC 8290 (fq_codel)",
            "Sundaresan et al., TCP Congestion Signatures, IMC 2017",
            "Linux sch_fq_codel, sch_cake, tcp_bbr.c",
        ],
        span: vec![(q.late_sample.at.ts - extra, q.late_sample.at.ts)],
    }]
}
