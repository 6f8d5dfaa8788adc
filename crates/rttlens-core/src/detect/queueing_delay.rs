//! `queueing-delay`: the connection's RTT samples rise well above their
//! early level while data is in flight, and stay up: packets wait in a
//! queue at a bottleneck (bufferbloat, a congested or shaped hop).
//!
//! The test is a rise *over time*, not a spread: random jitter spreads the
//! samples around the same level from first to last, queueing that the
//! transfer builds (or meets) lifts the later samples (the median of the
//! second half) above the early ones (the low end of the first half, where
//! the first rounds are: a sender in slow start fills a deep queue within
//! a quarter of its transfer)
//! (Sundaresan et al., "TCP Congestion Signatures", IMC 2017: a flow that
//! fills its own bottleneck queue shows its RTT growing with its flight).
//! Samples are the far half's (h_s from a client capture, h_c from a server
//! capture: data/ACK pairs and timestamp echoes) plus the near half's
//! minimum.
//!
//! When the RTT rises like this, a flat flight is the bottleneck's rate
//! times the inflated RTT: a bigger window would only queue more, so the
//! window findings (`sender-window-cap`, `receive-window-limit`) are not
//! reported alongside it (see [`queue`]).

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::rtt::RttRise;
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
use crate::base::side::Side;
use crate::base::time::Duration;
use crate::flow::rtt::RttSample;
use smallvec::SmallVec;

/// Finding id.
pub(crate) const ID: &str = "queueing-delay";

/// Samples needed to judge a trend.
pub(crate) const MIN_SAMPLES: usize = 12;

/// The later samples' median must exceed the early ones' by this share of
/// the baseline RTT (the RTT doubled: a lab's userspace delay line or a
/// busy host queues a few ms under any bulk transfer, which is not worth a
/// finding) …
pub(crate) const RISE_SHARE: f64 = 1.0;

/// … and by at least this much (timer and scheduling noise, and the
/// few-ms queues of any busy path).
pub(crate) const RISE_MIN: Duration = Duration::from_millis(10);

/// The early level: this quantile of the first half of the samples.
pub(crate) const EARLY_QUANTILE: f64 = 0.1;

/// The `q`-quantile (0.0–1.0) of `v` by RTT.
fn quantile(v: &[RttSample], q: f64) -> Option<RttSample> {
    // on the stack for the common few dozen samples
    let mut s: SmallVec<[RttSample; 32]> = SmallVec::from_slice(v);
    if s.is_empty() {
        return None;
    }
    let k = ((s.len() - 1) as f64 * q).round() as usize;
    s.select_nth_unstable_by_key(k, |x| x.d);
    Some(s[k])
}

fn median(v: &[RttSample]) -> Option<RttSample> {
    quantile(v, 0.5)
}

/// The rise of the connection's RTT, if it is one (see the module docs);
/// judged once per connection.
pub(crate) fn queue(a: &Analysis) -> Option<RttRise> {
    *a.queue.get_or_init(|| judge(a))
}

fn judge(a: &Analysis) -> Option<RttRise> {
    let r = a.rtt?;
    let (far, near) = if r.h_s >= r.h_c {
        (Side::Server, r.h_c)
    } else {
        (Side::Client, r.h_s)
    };
    let s = &a.conn.rtt.half[far.index()].samples;
    if s.len() < MIN_SAMPLES {
        return None;
    }
    // a flow that fills its own queue does so within its first rounds (slow
    // start doubles the flight every round): the early level is the low
    // end of the first half, where those rounds are, not its median
    let early = quantile(&s[..(s.len() / 2).max(3)], EARLY_QUANTILE)?;
    let late = median(&s[s.len() / 2..])?;
    let peak = *s.iter().max_by_key(|x| x.d)?;
    let q = RttRise {
        early: early.d + near,
        late: late.d + near,
        peak,
        first: s[0],
        late_sample: late,
        samples: s.len(),
        near,
    };
    let base = a.rtt_min;
    let rise = RISE_MIN.max(Duration::from_nanos(
        (base.nanos as f64 * RISE_SHARE) as i64,
    ));
    let risen =
        q.late >= q.early + rise && q.late.nanos as f64 >= (1.0 + RISE_SHARE) * base.nanos as f64;
    risen.then_some(q)
}

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let Some(q) = queue(a) else { return vec![] };
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
        connection: a.conn.index,
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
