//! `server-handshake-contention`: the server's handshake processing
//! (ClientHello in → ServerHello out, less the RTT to the server) grows with
//! the number of handshakes in progress while the network's RTT does not:
//! handshakes wait for the server's CPU (the certificate's signature, key
//! exchange) or its locks and scheduler, not for the path. The founding
//! case: a Go service whose handshake p99 went from ~15 ms to ~217 ms
//! under a handshake storm while p50 barely moved.

use super::hist::Dist;
use super::sample::PhaseId;
use super::{spearman, PopCost, PopFinding, View};
use crate::base::fact::{args, fact, Value};
use crate::detect::finding::{conf, Level};

pub(crate) const ID: &str = "server-handshake-contention";

/// Connections with a measured server handshake the finding needs.
const MIN_SAMPLES: u64 = 30;
/// Intervals with at least [`MIN_PER_INTERVAL`] samples it needs.
const MIN_INTERVALS: usize = 5;
const MIN_PER_INTERVAL: u64 = 3;
/// Rank correlation of handshakes in progress and server handshake time
/// that counts as "grows with".
const MIN_RHO: f64 = 0.5;
/// Handshakes in progress in the more loaded half of the intervals over
/// the less loaded half's.
const MIN_LOAD_RATIO: f64 = 1.5;

pub(crate) fn detect(v: &View<'_>) -> Option<PopFinding> {
    let hs = v.phase(PhaseId::ServerHandshake);
    if hs.count() < MIN_SAMPLES {
        return None;
    }
    let (p1, p50, p99) = (hs.quantile(0.01)?, hs.quantile(0.5)?, hs.quantile(0.99)?);
    let rtt = v.rtt.quantile(0.5).unwrap_or(0.0);
    // a spread worth naming (under a steady storm most handshakes may be
    // slow, so not only p99 over p50): a quarter of an RTT, at least 3 ms
    let material = (0.25 * rtt).max(3.0);
    if p99 - p1 < material {
        return None;
    }
    let idx: Vec<usize> = (0..v.cells.len())
        .filter(|&i| v.cells[i].phases[2].count() >= MIN_PER_INTERVAL)
        .collect();
    if idx.len() < MIN_INTERVALS {
        return None;
    }
    let load: Vec<f64> = idx.iter().map(|&i| v.in_progress(i)).collect();
    let mean: Vec<f64> = idx
        .iter()
        .map(|&i| v.cells[i].phases[2].mean().unwrap_or(0.0))
        .collect();
    let rho = spearman(&load, &mean)?;
    if rho < MIN_RHO {
        return None;
    }
    // the less loaded half of the intervals against the more loaded half
    let mut by_load = idx.clone();
    by_load.sort_by(|&a, &b| v.in_progress(a).total_cmp(&v.in_progress(b)));
    let half = by_load.len() / 2;
    let pool = |ids: &[usize], f: &dyn Fn(usize) -> Dist| {
        let mut d = Dist::new(2);
        for &i in ids {
            d.merge(&f(i));
        }
        d
    };
    let (low, high) = (&by_load[..half], &by_load[half..]);
    let hs_of = |i: usize| v.cells[i].phases[2].clone();
    let rtt_of = |i: usize| v.cells[i].rtt.clone();
    let (hs_low, hs_high) = (pool(low, &hs_of), pool(high, &hs_of));
    let (rtt_low, rtt_high) = (pool(low, &rtt_of), pool(high, &rtt_of));
    let grew = hs_high.quantile(0.9)? - hs_low.quantile(0.9)?;
    if grew < material {
        return None;
    }
    // the load itself moved: slow handshakes alone keep more in progress
    // (a server slow for another reason shows a weak correlation of that
    // kind), so the loaded half must carry half as many again
    let load_of =
        |ids: &[usize]| ids.iter().map(|&i| v.in_progress(i)).sum::<f64>() / ids.len() as f64;
    let (load_low, load_high) = (load_of(low), load_of(high));
    if load_high < MIN_LOAD_RATIO * load_low || load_high - load_low < 1.0 {
        return None;
    }
    // the network did not move with it
    let (r_low, r_high) = (
        rtt_low.quantile(0.5).unwrap_or(0.0),
        rtt_high.quantile(0.5).unwrap_or(0.0),
    );
    let rtt_grew = r_high - r_low;
    if rtt_grew > (0.1 * r_low).max(1.0) && rtt_grew > 0.1 * grew {
        return None;
    }
    // the tail's extra time over the typical handshake; when most were
    // slow, over the quickest's
    let (extra, n) = if p99 - p50 >= material {
        hs.excess_above(0.9, p50)
    } else {
        hs.excess_over(p1 + material, p1)
    };
    let facts = args!(
        p50_ms = Value::Ms(p50),
        p99_ms = Value::Ms(p99),
        loaded_p90_ms = Value::Ms(hs_high.quantile(0.9)?),
        loaded_in_progress = Value::Number(load_high),
        quiet_p90_ms = Value::Ms(hs_low.quantile(0.9)?),
        quiet_in_progress = Value::Number(load_low),
        rtt_low_ms = Value::Ms(r_low),
        rtt_high_ms = Value::Ms(r_high),
        rho = Value::Number(rho),
        intervals = Value::Count(idx.len() as u64),
        tls_connections = Value::Count(v.signs.tls),
        resumed = Value::Count(v.signs.resumed),
    );
    // the loaded intervals whose handshakes were slow
    let cut = hs_low.quantile(0.9)? + material;
    let mut marks: Vec<usize> = high
        .iter()
        .copied()
        .filter(|&i| v.cells[i].phases[2].quantile(0.9).is_some_and(|q| q >= cut))
        .collect();
    marks.sort_unstable();
    let mut evidence = Vec::new();
    let describe = |i: usize| {
        let c = &v.cells[i];
        fact!(
            "population.contention-interval",
            in_progress = Value::Number(v.in_progress(i)),
            new_connections = Value::Count(c.new_connections),
            server_handshake_p50_ms = Value::Ms(c.phases[2].quantile(0.5).unwrap_or(0.0)),
            server_handshake_p99_ms = Value::Ms(c.phases[2].quantile(0.99).unwrap_or(0.0)),
            rtt_p50_ms = Value::Ms(c.rtt.quantile(0.5).unwrap_or(0.0)),
        )
    };
    for &i in by_load.iter().rev().take(3) {
        evidence.push(v.interval_evidence(i, describe(i)));
    }
    for &i in by_load.iter().take(2) {
        evidence.push(v.interval_evidence(i, describe(i)));
    }
    evidence.extend(v.signs.server_handshake.evidence());
    let level = if rho >= 0.7 && idx.len() >= 8 {
        Level::High
    } else {
        Level::Medium
    };
    Some(PopFinding {
        id: ID,
        facts,
        cost: PopCost::of(extra, n),
        evidence,
        confidence: conf(
            level,
            fact!(
                "population.contention-correlation",
                rho = Value::Number(rho),
                intervals = Value::Count(idx.len() as u64),
                rtt_moved_ms = Value::Ms(rtt_grew),
            ),
        ),
        intervals: marks,
        references: vec![
            "RFC 8446 §2.2 (resumption and PSK: no certificate, no signature)",
            "Go crypto/tls Config (SessionTicketsDisabled, GetConfigForClient)",
            "nginx ngx_http_ssl_module (ssl_session_cache, ssl_session_tickets)",
        ],
    })
}
