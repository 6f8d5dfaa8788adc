//! `server-handshake-contention`: the server's handshake processing
//! (ClientHello in → ServerHello out, less the RTT to the server) grows with
//! the number of handshakes in progress while the network's RTT does not:
//! handshakes wait for the server's CPU (the certificate's signature, key
//! exchange) or its locks and scheduler, not for the path. The founding
//! case: a Go service whose handshake p99 went from ~15 ms to ~217 ms
//! under a handshake storm while p50 barely moved.
//!
//! Two shapes. A **storm** keeps handshakes coming: the processing of each
//! interval grows with the handshakes in progress in it ([`detect`]'s
//! interval rule). A **burst** begins them all at once (a reconnect after
//! a restart or a failover), so every one falls in the same interval and
//! the load cannot be compared across intervals; the queue shows in the
//! order they were served instead ([`Queue`], [`detect_burst`]):
//! ServerHellos leaving at a steady rate, one (or k) at a time, long after
//! the ClientHellos all came, each waiting longer the later it was served,
//! while the RTT stays flat.

use std::collections::HashMap;

use super::hist::Dist;
use super::sample::{PhaseId, Sample};
use super::{spearman, PopCost, PopEvidence, PopFinding, View};
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
    detect_storm(v).or_else(|| detect_burst(v))
}

/// The storm rule: processing grows with the handshakes in progress, from
/// interval to interval.
fn detect_storm(v: &View<'_>) -> Option<PopFinding> {
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

/// Handshakes a burst needs.
const MIN_BURST: usize = 8;
/// Handshakes [`Queue`] keeps; when full it keeps the largest burst so
/// far (at most half of this) and drops the rest.
const QUEUE_CAP: usize = 8192;
/// Server endpoints [`Queue`] keeps handshakes of.
const QUEUE_SERVERS: usize = 1024;
/// Workers the burst rule tries (handshakes served k at a time).
const MAX_WORKERS: usize = 4;
/// Coefficient of variation of the time between the k-th next
/// departures that counts as "steady": a server handshake queue drains
/// at its CPU's rate (about 0.1–0.3 on a loaded lab machine), where
/// parallel handshakes slow for another reason leave at random (an
/// exponential spacing: 1, or 1/√k for the k-th next).
const MAX_CV: f64 = 0.4;
/// Rank correlation of the place in the queue and the wait.
const MIN_QUEUE_RHO: f64 = 0.8;

/// One handshake, as the burst rule reads it.
#[derive(Debug, Clone, Copy)]
struct Hello {
    /// ClientHello and ServerHello at the capture point (s after the
    /// capture's first packet).
    client_s: f64,
    server_s: f64,
    /// The server's processing (ms; the `server-handshake` phase).
    wait_ms: f64,
    /// The connection's baseline RTT (ms; NaN when unknown).
    rtt_ms: f64,
    connection: u64,
    frames: (u64, u64),
    /// Index into [`Queue::servers`].
    server: u32,
}

/// The handshakes the burst rule judges, in a fixed amount of memory:
/// at most [`QUEUE_CAP`] of them (56 B each), of at most
/// [`QUEUE_SERVERS`] server endpoints.
#[derive(Debug, Clone, Default)]
pub(crate) struct Queue {
    hellos: Vec<Hello>,
    servers: Vec<String>,
    server_ids: HashMap<String, u32>,
}

impl Queue {
    /// Keep `s`'s handshake with `server`, when it has one.
    pub(crate) fn add(&mut self, index: u64, server: &str, s: &Sample) {
        let (Some((client_s, server_s)), Some(wait_ms), Some(frames)) =
            (s.hello_s, s.ms(PhaseId::ServerHandshake), s.hello_frames)
        else {
            return;
        };
        let id = match self.server_ids.get(server) {
            Some(&id) => id,
            None if self.servers.len() < QUEUE_SERVERS => {
                let id = self.servers.len() as u32;
                self.servers.push(server.to_string());
                self.server_ids.insert(server.to_string(), id);
                id
            }
            None => return,
        };
        if self.hellos.len() >= QUEUE_CAP {
            self.compact();
        }
        self.hellos.push(Hello {
            client_s,
            server_s,
            wait_ms,
            rtt_ms: s.rtt_ms.unwrap_or(f64::NAN),
            connection: index,
            frames,
            server: id,
        });
    }

    /// Keep the largest burst so far (its first [`QUEUE_CAP`] / 2
    /// handshakes), drop the rest.
    fn compact(&mut self) {
        let mut hellos = std::mem::take(&mut self.hellos);
        sort(&mut hellos);
        let best = bursts(&hellos, gap_s(&hellos))
            .into_iter()
            .max_by_key(|r| (r.len(), std::cmp::Reverse(r.start)))
            .unwrap_or(0..0);
        let end = best.end.min(best.start + QUEUE_CAP / 2);
        self.hellos = hellos[best.start..end].to_vec();
    }
}

/// By server, then ClientHello.
fn sort(h: &mut [Hello]) {
    h.sort_by(|a, b| {
        a.server
            .cmp(&b.server)
            .then(a.client_s.total_cmp(&b.client_s))
            .then(a.connection.cmp(&b.connection))
    });
}

/// The longest pause between ClientHellos of one burst (s): 10 ms, or
/// half the median RTT when that is longer.
fn gap_s(h: &[Hello]) -> f64 {
    let mut rtts: Vec<f64> = h
        .iter()
        .map(|x| x.rtt_ms)
        .filter(|r| r.is_finite())
        .collect();
    rtts.sort_by(f64::total_cmp);
    let rtt = rtts.get(rtts.len() / 2).copied().unwrap_or(0.0);
    (0.5 * rtt).max(10.0) / 1000.0
}

/// Runs of `h` (sorted by [`sort`]) to one server whose ClientHellos
/// follow each other within `gap` seconds, with at least [`MIN_BURST`].
fn bursts(h: &[Hello], gap: f64) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=h.len() {
        let split = i == h.len()
            || h[i].server != h[i - 1].server
            || h[i].client_s - h[i - 1].client_s > gap;
        if split {
            if i - start >= MIN_BURST {
                out.push(start..i);
            }
            start = i;
        }
    }
    out
}

/// Mean and coefficient of variation of `v`.
fn mean_cv(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (
        mean,
        if mean > 0.0 {
            var.sqrt() / mean
        } else {
            f64::INFINITY
        },
    )
}

/// The median of `v` (NaNs left out).
fn median(v: impl Iterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = v.filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// What a burst's handshakes show when a queue served them.
struct Served {
    /// In the order served (by ServerHello).
    hellos: Vec<Hello>,
    arrivals_ms: f64,
    departures_ms: f64,
    /// Handshakes served at a time, the time between the k-th next
    /// ServerHellos (ms: each handshake's time at the server) with its
    /// coefficient of variation, and between one ServerHello and the
    /// next (ms).
    workers: usize,
    handshake_ms: f64,
    cv: f64,
    every_ms: f64,
    rho: f64,
    rtt_early_ms: f64,
    rtt_late_ms: f64,
    /// Σ of each wait beyond the shortest (ms), and the connections that
    /// waited longer than it.
    extra_ms: f64,
    waited: u64,
}

/// The burst's signs of a queue, or `None` when one is missing.
fn served(burst: &[Hello], material: f64) -> Option<Served> {
    let mut h = burst.to_vec();
    h.sort_by(|a, b| {
        a.server_s
            .total_cmp(&b.server_s)
            .then(a.connection.cmp(&b.connection))
    });
    let n = h.len();
    let ms = |a: f64, b: f64| (b - a) * 1000.0;
    let arrivals_ms = ms(
        burst
            .iter()
            .map(|x| x.client_s)
            .fold(f64::INFINITY, f64::min),
        burst
            .iter()
            .map(|x| x.client_s)
            .fold(f64::NEG_INFINITY, f64::max),
    );
    let departures_ms = ms(h[0].server_s, h[n - 1].server_s);
    // served long after they all came
    if departures_ms < 3.0 * arrivals_ms || departures_ms < 2.0 * material {
        return None;
    }
    // at a steady rate, k at a time. With one worker the time to the k-th
    // next ServerHello is a sum of k services (its variation falls as
    // 1/√k) and it spans k gaps (jitter in when each left falls as 1/k):
    // k workers only where the k-th next comes at least twice as steadily
    // as the second explains.
    let mut best: Option<(usize, f64, f64)> = None;
    for k in (1..=MAX_WORKERS).filter(|&k| n >= 4 * k) {
        let d: Vec<f64> = (0..n - k)
            .map(|i| ms(h[i].server_s, h[i + k].server_s))
            .collect();
        let (mean, cv) = mean_cv(&d);
        let norm = |(k, _, cv): (usize, f64, f64)| cv * k as f64;
        if best.is_none_or(|b| norm((k, mean, cv)) < 0.5 * norm(b)) {
            best = Some((k, mean, cv));
        }
    }
    let (workers, handshake_ms, cv) = best?;
    if cv > MAX_CV || handshake_ms <= 0.0 {
        return None;
    }
    let every_ms = handshake_ms / workers as f64;
    // each waiting longer the later it was served, the first about one
    // handshake's time
    let place: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let waits: Vec<f64> = h.iter().map(|x| x.wait_ms).collect();
    let rho = spearman(&place, &waits)?;
    let third = n / 3;
    let early = median(waits[..third].iter().copied())?;
    let late = median(waits[n - third..].iter().copied())?;
    let shortest = waits.iter().copied().fold(f64::INFINITY, f64::min);
    if rho < MIN_QUEUE_RHO || late - early < material || shortest > 2.0 * every_ms + material {
        return None;
    }
    // the path did not move with it
    let rtt_early_ms = median(h[..third].iter().map(|x| x.rtt_ms)).unwrap_or(0.0);
    let rtt_late_ms = median(h[n - third..].iter().map(|x| x.rtt_ms)).unwrap_or(0.0);
    let rtt_grew = rtt_late_ms - rtt_early_ms;
    if rtt_grew > (0.1 * rtt_early_ms).max(1.0) && rtt_grew > 0.1 * (late - early) {
        return None;
    }
    let extra_ms = waits.iter().map(|w| w - shortest).sum();
    let waited = waits.iter().filter(|&&w| w > shortest).count() as u64;
    Some(Served {
        hellos: h,
        arrivals_ms,
        departures_ms,
        workers,
        handshake_ms,
        cv,
        every_ms,
        rho,
        rtt_early_ms,
        rtt_late_ms,
        extra_ms,
        waited,
    })
}

/// The burst rule: the costliest burst whose handshakes a queue served.
fn detect_burst(v: &View<'_>) -> Option<PopFinding> {
    let q = v.queue;
    let mut h = q.hellos.clone();
    sort(&mut h);
    let rtt = v.rtt.quantile(0.5).unwrap_or(0.0);
    let material = (0.25 * rtt).max(3.0);
    let (range, b) = bursts(&h, gap_s(&h))
        .into_iter()
        .filter_map(|r| Some((r.clone(), served(&h[r], material)?)))
        .max_by(|a, b| a.1.extra_ms.total_cmp(&b.1.extra_ms))?;
    let n = b.hellos.len();
    let (first, last) = (b.hellos[0], b.hellos[n - 1]);
    let facts = args!(
        shape = "burst",
        server = q.servers[h[range.start].server as usize].clone(),
        handshakes = Value::Count(n as u64),
        arrivals_ms = Value::Ms(b.arrivals_ms),
        departures_ms = Value::Ms(b.departures_ms),
        at_a_time = Value::Count(b.workers as u64),
        handshake_ms = Value::Ms(b.handshake_ms),
        every_ms = Value::Ms(b.every_ms),
        first_wait_ms = Value::Ms(first.wait_ms),
        last_wait_ms = Value::Ms(last.wait_ms),
        rtt_low_ms = Value::Ms(b.rtt_early_ms.min(b.rtt_late_ms)),
        rtt_high_ms = Value::Ms(b.rtt_early_ms.max(b.rtt_late_ms)),
        rho = Value::Number(b.rho),
        tls_connections = Value::Count(v.signs.tls),
        resumed = Value::Count(v.signs.resumed),
    );
    // the first, middle and last served
    let evidence: Vec<PopEvidence> = [0, n / 2, n - 1]
        .into_iter()
        .map(|i| {
            let x = b.hellos[i];
            PopEvidence {
                connection: Some(x.connection),
                frames: vec![x.frames.0, x.frames.1],
                interval: None,
                fact: fact!(
                    "population.queued-handshake",
                    connection = Value::Count(x.connection),
                    client_hello = Value::Frame(x.frames.0),
                    server_hello = Value::Frame(x.frames.1),
                    place = Value::Count(i as u64 + 1),
                    handshakes = Value::Count(n as u64),
                    server_ms = Value::Ms(x.wait_ms),
                ),
            }
        })
        .collect();
    // the intervals the burst spans, ClientHellos to the last ServerHello
    let at = |s: f64| (s * 1000.0 / v.interval_ms as f64) as usize;
    let from = at(h[range.clone()]
        .iter()
        .map(|x| x.client_s)
        .fold(f64::INFINITY, f64::min));
    let intervals: Vec<usize> = (from..=at(last.server_s))
        .filter(|&i| i < v.cells.len())
        .collect();
    let level = if n >= 20 && b.cv <= 0.25 && b.rho >= 0.9 {
        Level::High
    } else {
        Level::Medium
    };
    Some(PopFinding {
        id: ID,
        facts,
        cost: PopCost::of(b.extra_ms, b.waited),
        evidence,
        confidence: conf(
            level,
            fact!(
                "population.queue-steady",
                at_a_time = Value::Count(b.workers as u64),
                handshake_ms = Value::Ms(b.handshake_ms),
                cv = Value::Number(b.cv),
                rho = Value::Number(b.rho),
                handshakes = Value::Count(n as u64),
            ),
        ),
        intervals,
        references: vec![
            "RFC 8446 §2.2 (resumption and PSK: no certificate, no signature)",
            "RFC 8446 §4.4.3 (CertificateVerify: the server's signature on every full handshake)",
            "nginx ngx_http_ssl_module (ssl_session_cache, ssl_session_tickets)",
        ],
    })
}
