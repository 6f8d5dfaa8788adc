//! The engine's self-check: what must hold of every analysis and its
//! findings, whatever the capture (issue 21, "a cost is time someone
//! waited, and an evidence line must agree with the packets").
//!
//! [`check`] returns every violation; the pipeline runs it on every
//! connection in builds with debug assertions (every test that analyses a
//! capture, and the fuzz targets, which cargo-fuzz builds with them) and
//! panics on the first connection that breaks a rule, so a violation is a
//! bug the tests and the fuzzers find. Release builds skip it.
//!
//! The rules:
//! - a finding's cost is finite, not negative, and no longer than the
//!   connection lasted; a finding that costs time says when it accrued
//!   (its span), the span lies within the connection and the cost is at
//!   most the span's length; the union of all findings' spans is at most
//!   the connection's duration;
//! - evidence frames lie within the connection's frames, in capture order;
//! - each sender's MSS is at least what its SYN announced allows, or
//!   [`MIN_MSS`] without one, and fits a 16-bit option;
//! - a round's peak bytes in flight is never above what the sender sent.

use super::finding::Finding;
use crate::analysis::connection::OPTIONS_MAX;
use crate::analysis::Analysis;
use crate::base::side::Side;
use crate::base::time::union_len;
use crate::base::time::Duration;
use crate::flow::half::MIN_MSS;

/// Rounding slack of costs (ms): costs are rounded to 3 decimals.
const SLACK_MS: f64 = 0.002;

/// Every rule of the module docs that `a` and its `findings` break, each as
/// one line naming the finding or value; empty when all hold.
pub fn check(a: &Analysis, findings: &[Finding]) -> Vec<String> {
    let mut bad = Vec::new();
    let (first, last) = (a.first(), a.last());
    // a damaged capture's clock can run backwards: its connection then
    // lasted nothing, and no cost fits in it
    let duration = (last.ts - first.ts).max(Duration::ZERO);
    let duration_ms = duration.as_millis_f64();
    let mut spans = Vec::new();
    for f in findings {
        let id = f.id;
        if !f.cost.ms.is_finite() || f.cost.ms < 0.0 {
            bad.push(format!("{id}: cost {} ms", f.cost.ms));
        }
        if f.cost.ms > duration_ms + SLACK_MS {
            bad.push(format!(
                "{id}: cost {:.3} ms is longer than the connection ({duration_ms:.3} ms)",
                f.cost.ms
            ));
        }
        if f.cost.ms > 0.0 && f.span.is_empty() {
            bad.push(format!("{id}: costs {:.3} ms but says not when", f.cost.ms));
        }
        for &(s, e) in &f.span {
            if s < first.ts || e > last.ts.max(first.ts) || e < s {
                bad.push(format!(
                    "{id}: span {:.3}–{:.3} s outside the connection ({:.3}–{:.3} s)",
                    s.as_secs_f64(),
                    e.as_secs_f64(),
                    first.ts.as_secs_f64(),
                    last.ts.as_secs_f64()
                ));
            }
        }
        let within = union_len(&f.span).as_millis_f64();
        if !f.span.is_empty() && f.cost.ms > within + SLACK_MS {
            bad.push(format!(
                "{id}: cost {:.3} ms is longer than the time it accrued in ({within:.3} ms)",
                f.cost.ms
            ));
        }
        spans.extend(f.span.iter().copied());
        let mut prev = 0;
        for e in &f.evidence {
            if e.frame < first.frame || e.frame > last.frame {
                bad.push(format!(
                    "{id}: evidence frame {} outside the connection's frames {}–{}",
                    e.frame, first.frame, last.frame
                ));
            }
            if e.frame < prev {
                bad.push(format!(
                    "{id}: evidence frame {} after frame {prev}: not in capture order",
                    e.frame
                ));
            }
            prev = e.frame;
        }
    }
    let all = union_len(&spans);
    if all > duration + Duration::from_micros(2) {
        bad.push(format!(
            "findings' union {:.3} ms is longer than the connection ({duration_ms:.3} ms)",
            all.as_millis_f64()
        ));
    }
    for side in [Side::Client, Side::Server] {
        let i = side.index();
        // what a side may send is announced in its peer's SYN; the
        // segments' own options come out of it
        let announced = a.tcp.mss_option[side.peer().index()];
        let mss = a.tcp.mss[i];
        let floor = announced
            .map_or(MIN_MSS, |m| u64::from(m).min(MIN_MSS))
            .saturating_sub(OPTIONS_MAX)
            .max(1);
        if mss < floor || mss > u64::from(u16::MAX) {
            bad.push(format!(
                "{} MSS {mss} B is implausible (the {}'s SYN announced {announced:?})",
                side.as_str(),
                side.peer().as_str()
            ));
        }
        // the stream offsets count from the first byte the capture saw of
        // the sender (its ISN + 1 with the SYN)
        let sent = a.snd_nxt(side);
        for r in &a.rounds[i] {
            if r.max_flight > sent {
                bad.push(format!(
                    "{} round {}: {} B in flight at frame {} but only {sent} B sent in all",
                    side.as_str(),
                    r.index,
                    r.max_flight,
                    r.max_flight_frame
                ));
            }
        }
    }
    bad
}
