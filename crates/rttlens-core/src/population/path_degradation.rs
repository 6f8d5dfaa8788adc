//! `path-degradation`: in some intervals the RTT of the connections as a
//! crowd rose (their median baseline RTT), or most of them lost packets,
//! together: the path changed, not a server or a connection. The cost is
//! what the higher RTT added to their time to first byte.

use super::{PopCost, PopFinding, View};
use crate::base::fact::{args, fact, Value};
use crate::detect::finding::{conf, Level};

pub(crate) const ID: &str = "path-degradation";

/// Connections with an RTT an interval needs to be judged.
const MIN_PER_INTERVAL: u64 = 5;
/// Intervals so judged the finding needs.
const MIN_INTERVALS: usize = 4;

pub(crate) fn detect(v: &View<'_>) -> Option<PopFinding> {
    let idx: Vec<usize> = (0..v.cells.len())
        .filter(|&i| v.cells[i].rtt.count() >= MIN_PER_INTERVAL)
        .collect();
    if idx.len() < MIN_INTERVALS {
        return None;
    }
    let mut medians: Vec<f64> = idx
        .iter()
        .filter_map(|&i| v.cells[i].rtt.quantile(0.5))
        .collect();
    medians.sort_by(f64::total_cmp);
    // the path's usual RTT: the first quartile of the intervals' medians
    let base = medians[medians.len() / 4];
    // loss from the server's data: the client's retransmissions may be a
    // full backlog at the server dropping them (`accept-queue-overflow`)
    let rates: Vec<f64> = idx.iter().map(|&i| v.cells[i].server_retx_rate()).collect();
    let mut sorted_rates = rates.clone();
    sorted_rates.sort_by(f64::total_cmp);
    let usual_rate = sorted_rates[sorted_rates.len() / 2];
    let degraded: Vec<(usize, bool, bool)> = idx
        .iter()
        .zip(&rates)
        .filter_map(|(&i, &rate)| {
            let c = &v.cells[i];
            let r = c.rtt.quantile(0.5)?;
            let slow = r >= 1.5 * base && r - base >= 5.0;
            let lossy = rate >= 0.05
                && rate >= 5.0 * usual_rate
                && c.server_conns_with_retx >= 3
                && 2 * c.server_conns_with_retx >= c.new_connections;
            (slow || lossy).then_some((i, slow, lossy))
        })
        .collect();
    // the path changed: some intervals, not all
    if degraded.is_empty() || degraded.len() == idx.len() {
        return None;
    }
    let mut cost = 0.0;
    let mut conns = 0;
    for &(i, slow, _) in &degraded {
        let c = &v.cells[i];
        conns += c.new_connections;
        if slow {
            cost += (c.first_byte_ms - base * c.first_byte_per_rtt).max(0.0);
        }
    }
    let worst = degraded.iter().copied().max_by(|a, b| {
        let r = |i: usize| v.cells[i].rtt.quantile(0.5).unwrap_or(0.0);
        r(a.0).total_cmp(&r(b.0)).then(b.0.cmp(&a.0))
    })?;
    let worst_rtt = v.cells[worst.0].rtt.quantile(0.5).unwrap_or(base);
    let lossy = degraded.iter().filter(|d| d.2).count();
    let facts = args!(
        degraded_intervals = Value::Count(degraded.len() as u64),
        intervals = Value::Count(idx.len() as u64),
        worst_rtt_ms = Value::Ms(worst_rtt),
        usual_rtt_ms = Value::Ms(base),
        lossy_intervals = Value::Count(lossy as u64),
    );
    let evidence = degraded
        .iter()
        .take(8)
        .map(|&(i, _, _)| {
            let c = &v.cells[i];
            v.interval_evidence(
                i,
                fact!(
                    "population.path-interval",
                    connections = Value::Count(c.new_connections),
                    rtt_p50_ms = Value::Ms(c.rtt.quantile(0.5).unwrap_or(0.0)),
                    usual_rtt_ms = Value::Ms(base),
                    server_retx_rate = Value::Number(c.server_retx_rate()),
                    connections_retransmitting = Value::Count(c.server_conns_with_retx),
                ),
            )
        })
        .collect();
    Some(PopFinding {
        id: ID,
        facts,
        cost: PopCost::of(cost, conns),
        evidence,
        confidence: conf(
            if idx.len() >= 8 {
                Level::High
            } else {
                Level::Medium
            },
            fact!(
                "population.path-rtt-medians",
                intervals = Value::Count(idx.len() as u64),
            ),
        ),
        intervals: degraded.iter().map(|d| d.0).collect(),
        references: vec!["RFC 7567 (active queue management)", "RFC 8289 (CoDel)"],
    })
}
