//! The population view (docs/design.md §4 "Populations"): what the crowd
//! of connections in a capture shows that no single connection does. Phase
//! distributions for the capture, per server endpoint and per SNI (HDR
//! histograms), the same over time, the tail set against the typical
//! connection, and the findings only a population proves:
//! `server_handshake_contention`, `accept_queue_overflow`,
//! `syn_flood_cookies`, `client_side_stall`, `path_degradation` (one file
//! each, named after the finding).
//!
//! Streaming: each connection's [`Sample`] is folded in as it ends and
//! dropped; memory is a fixed number of histograms (at most
//! [`MAX_GROUPS`] groups of each kind, at most 64 intervals while reading)
//! and the burst rule's bounded list of handshakes, whatever the number of
//! connections.

pub(crate) mod accept_queue_overflow;
pub(crate) mod client_side_stall;
pub(crate) mod hist;
pub(crate) mod over_time;
pub(crate) mod path_degradation;
pub mod report;
pub mod sample;
pub(crate) mod server_handshake_contention;
pub(crate) mod syn_flood_cookies;
pub mod tail;

use std::collections::HashMap;

use crate::base::fact::{fact, Fact, Value};
use hist::Dist;
pub use hist::Stats;
use over_time::{Cell, Cells, CELL_PHASES};
pub use report::{
    Group, Interval, IntervalPhase, MetricStats, OverTime, PhaseStats, PopCost, PopEvidence,
    PopFinding, PopulationReport,
};
use sample::N_PHASES;
pub use sample::{PhaseId, Sample};
pub use tail::Tail;

/// Server endpoints and SNIs with their own distributions; connections to
/// others are counted apart.
pub const MAX_GROUPS: usize = 16;
/// Connections a capture needs for its over-time view (fewer say more
/// one by one).
pub const MIN_CONNECTIONS: u64 = 20;
/// Server endpoints whose SYN-ACK options are tallied.
const MAX_SERVERS_SHAPED: usize = 64;
/// Per-connection findings a missing window scale makes worse.
pub const WINDOW_IDS: [&str; 3] = ["receive-window-limit", "window-limit", "sender-window-cap"];
/// Connections kept as evidence per sign.
const EVIDENCE_KEPT: usize = 5;

/// Each phase's distribution in ms and in round trips.
#[derive(Debug, Clone)]
struct PhaseDists {
    ms: [Dist; N_PHASES],
    rtts: [Dist; N_PHASES],
    connections: u64,
}

impl PhaseDists {
    fn new(sigfig: u8) -> PhaseDists {
        PhaseDists {
            ms: std::array::from_fn(|_| Dist::new(sigfig)),
            rtts: std::array::from_fn(|_| Dist::new(sigfig)),
            connections: 0,
        }
    }

    fn add(&mut self, s: &Sample) {
        self.connections += 1;
        for (i, v) in s.phases.iter().enumerate() {
            if let Some((ms, rtts)) = v {
                self.ms[i].record(*ms);
                if let Some(r) = rtts {
                    self.rtts[i].record(*r);
                }
            }
        }
    }

    /// Adds `other`'s connections and samples.
    fn merge(&mut self, other: &PhaseDists) {
        self.connections += other.connections;
        for (a, b) in self.ms.iter_mut().zip(&other.ms) {
            a.merge(b);
        }
        for (a, b) in self.rtts.iter_mut().zip(&other.rtts) {
            a.merge(b);
        }
    }

    fn report(&self) -> Vec<PhaseStats> {
        PhaseId::ALL
            .iter()
            .filter_map(|&p| {
                let i = p.index();
                Some(PhaseStats {
                    phase: p,
                    ms: self.ms[i].stats()?,
                    rtts: self.rtts[i].stats(),
                })
            })
            .collect()
    }
}

/// Significant digits of the distributions per server and per SNI.
const GROUP_SIGFIG: u8 = 2;

/// Distributions per key (server endpoint, SNI), for the first
/// [`MAX_GROUPS`] keys seen. While every connection so far had the same
/// key, that key's distributions are the capture's own: they are copied
/// from them only when a second key (or a connection without one) comes,
/// so a capture of one server records each value once.
#[derive(Debug, Clone, Default)]
struct Groups {
    by_key: HashMap<String, PhaseDists>,
    order: Vec<String>,
    others: u64,
    /// The one key of every connection so far, its distributions not yet
    /// apart from the capture's.
    shadow: Option<String>,
}

impl Groups {
    /// Fold in a connection with `key`; `all` is the capture's
    /// distributions *before* it.
    fn add(&mut self, key: Option<&str>, s: &Sample, all: &PhaseDists) {
        match (&self.shadow, key) {
            (Some(k), Some(key)) if k == key => return,
            (Some(_), _) => {
                let k = self.shadow.take().unwrap_or_default();
                // at the groups' precision, as if recorded apart from the
                // start: a group's figures do not depend on which came first
                let mut g = PhaseDists::new(GROUP_SIGFIG);
                g.merge(all);
                self.by_key.insert(k.clone(), g);
                self.order.push(k);
            }
            (None, Some(key)) if all.connections == 0 => {
                self.shadow = Some(key.to_string());
                return;
            }
            (None, _) => {}
        }
        let Some(key) = key else { return };
        if let Some(g) = self.by_key.get_mut(key) {
            g.add(s);
        } else if self.by_key.len() < MAX_GROUPS {
            let mut g = PhaseDists::new(GROUP_SIGFIG);
            g.add(s);
            self.by_key.insert(key.to_string(), g);
            self.order.push(key.to_string());
        } else {
            self.others += 1;
        }
    }

    /// Most connections first; nothing when there is one group only (the
    /// capture's own figures say it all).
    fn report(&self) -> Vec<Group> {
        if self.by_key.len() < 2 {
            return Vec::new();
        }
        let mut v: Vec<Group> = self
            .order
            .iter()
            .map(|k| {
                let g = &self.by_key[k];
                Group {
                    key: k.clone(),
                    connections: g.connections,
                    phases: g.report(),
                }
            })
            .collect();
        v.sort_by_key(|g| std::cmp::Reverse(g.connections));
        v
    }
}

/// The `k` connections with the largest value of a sign, as evidence.
#[derive(Debug, Clone, Default)]
pub(crate) struct TopK {
    items: Vec<(f64, PopEvidence)>,
}

impl TopK {
    /// Offer a connection with value `v`; `make` builds its evidence only
    /// when it is kept. Ties keep the earlier connection.
    pub(crate) fn offer(&mut self, v: f64, make: impl FnOnce() -> PopEvidence) {
        if self.items.len() >= EVIDENCE_KEPT
            && self.items.last().is_some_and(|(least, _)| v <= *least)
        {
            return;
        }
        let at = self.items.partition_point(|(x, _)| *x >= v);
        self.items.insert(at, (v, make()));
        self.items.truncate(EVIDENCE_KEPT);
    }

    /// The evidence, largest value first.
    pub(crate) fn evidence(&self) -> Vec<PopEvidence> {
        self.items.iter().map(|(_, e)| e.clone()).collect()
    }
}

/// Evidence kept for the population findings: the connections that show
/// each sign most.
#[derive(Debug, Clone, Default)]
pub(crate) struct Signs {
    /// Longest server handshake processing.
    pub(crate) server_handshake: TopK,
    /// Longest connect among connections whose SYN was sent again.
    pub(crate) syn_retransmitted: TopK,
    /// SYN-ACKs resent after the client's ACK.
    pub(crate) ack_ignored: TopK,
    /// SYN-ACKs that dropped the window scale and SACK their SYN offered.
    pub(crate) options_dropped: TopK,
    /// Per server endpoint (the first [`MAX_SERVERS_SHAPED`]): SYN-ACKs
    /// to SYNs offering window scale or SACK without timestamps that
    /// granted them, and that dropped them.
    pub(crate) shape_by_server: HashMap<String, (u64, u64)>,
    /// SYN-ACKs that dropped them, and what the window findings of those
    /// connections cost (ms).
    pub(crate) options_dropped_count: u64,
    pub(crate) options_dropped_window_ms: f64,
    /// Σ over connections whose SYN was sent again of their connect time
    /// beyond one RTT (ms).
    pub(crate) syn_wait_ms: f64,
    /// SYN-ACKs resent after the client's ACK, and Σ of the ACK → resent
    /// SYN-ACK times (ms).
    pub(crate) ack_ignored_count: u64,
    pub(crate) ack_ignored_ms: f64,
    /// Longest client delay.
    pub(crate) client_delay: TopK,
    /// Connections with a SYN in the capture, and whose SYN was sent again.
    pub(crate) syns: u64,
    pub(crate) syns_retransmitted: u64,
    /// Data segments and retransmissions over the capture, per side
    /// (client, server).
    pub(crate) data_segments: [u64; 2],
    pub(crate) retransmissions: [u64; 2],
    /// Connections with a TLS handshake, and resumed ones.
    pub(crate) tls: u64,
    pub(crate) resumed: u64,
}

/// What the population keeps of a connection beside its [`Sample`].
#[derive(Debug, Clone, Copy)]
pub struct Conn<'a> {
    /// Index.
    pub index: u64,
    /// Client and server `addr:port`.
    pub client: &'a str,
    /// Server `addr:port`.
    pub server: &'a str,
    /// TLS server name.
    pub sni: Option<&'a str>,
    /// A TLS connection.
    pub tls: bool,
    /// What its window findings ([`WINDOW_IDS`]) cost (ms): a SYN-ACK
    /// without window scale makes them worse.
    pub window_ms: f64,
}

/// The population accumulator: fold in each connection's report with
/// [`Population::add`], then [`Population::finish`].
#[derive(Debug, Clone)]
pub struct Population {
    all: PhaseDists,
    first_byte: Dist,
    /// Each `Server-Timing` metric's `dur`, by name (the first
    /// [`METRIC_NAMES`] names).
    server_timing: std::collections::BTreeMap<String, Dist>,
    rtt: Dist,
    servers: Groups,
    snis: Groups,
    cells: Cells,
    bands: tail::Bands,
    signs: Signs,
    /// The handshakes a burst of them is judged on.
    queue: server_handshake_contention::Queue,
}

impl Population {
    /// An empty population; `interval_ms` the over-time view's interval
    /// (`None`: automatic, at most 60 intervals).
    pub fn new(interval_ms: Option<u64>) -> Population {
        Population {
            all: PhaseDists::new(3),
            first_byte: Dist::new(3),
            server_timing: std::collections::BTreeMap::new(),
            rtt: Dist::new(3),
            servers: Groups::default(),
            snis: Groups::default(),
            cells: Cells::new(interval_ms),
            bands: tail::Bands::new(),
            signs: Signs::default(),
            queue: server_handshake_contention::Queue::default(),
        }
    }

    /// Fold in one finished connection: `c` names it, `s` is its sample
    /// (a connection report's `population_conn()` and `sample` give both).
    pub fn add(&mut self, c: &Conn<'_>, s: &Sample) {
        self.servers.add(Some(c.server), s, &self.all);
        self.snis.add(c.sni, s, &self.all);
        self.all.add(s);
        if let Some(fb) = s.first_byte_ms {
            self.first_byte.record(fb);
        }
        if let Some(r) = s.rtt_ms {
            self.rtt.record(r);
        }
        for (name, ms) in &s.server_timing {
            if let Some(d) = self.server_timing.get_mut(name) {
                d.record(*ms);
            } else if self.server_timing.len() < METRIC_NAMES {
                let mut d = Dist::new(2);
                d.record(*ms);
                self.server_timing.insert(name.clone(), d);
            }
        }
        self.cells.add(s);
        self.bands.add(s);
        self.queue.add(c.index, c.server, s);
        self.collect_signs(c, s);
    }

    fn collect_signs(&mut self, c: &Conn<'_>, s: &Sample) {
        let g = &mut self.signs;
        // the connection a fact of `kind` is about
        let who = |kind: &'static str| {
            fact!(
                kind,
                connection = Value::Count(c.index),
                client = c.client.to_string(),
                server = c.server.to_string(),
            )
        };
        for i in 0..2 {
            g.data_segments[i] += s.data_segments[i];
            g.retransmissions[i] += s.retransmissions[i];
        }
        if c.tls {
            g.tls += 1;
            g.resumed += u64::from(s.resumed);
        }
        if let (Some(ms), Some((ch, sh))) = (s.ms(PhaseId::ServerHandshake), s.hello_frames) {
            g.server_handshake.offer(ms, || PopEvidence {
                connection: Some(c.index),
                frames: vec![ch, sh],
                interval: None,
                fact: who("population.server-handshake")
                    .with("client_hello", Value::Frame(ch))
                    .with("server_hello", Value::Frame(sh))
                    .with("server_ms", Value::Ms(ms)),
            });
        }
        if let (Some(ms), Some((from, to))) = (s.ms(PhaseId::ClientDelay), s.client_wait_frames) {
            g.client_delay.offer(ms, || PopEvidence {
                connection: Some(c.index),
                frames: vec![from, to],
                interval: None,
                fact: who("population.client-delay")
                    .with("client_ms", Value::Ms(ms))
                    .with("from", Value::Frame(from))
                    .with("answer", Value::Frame(to)),
            });
        }
        let Some(syn) = &s.syn else { return };
        g.syns += 1;
        if syn.syn_count > 1 {
            g.syns_retransmitted += 1;
            let connect = s.ms(PhaseId::Connect).unwrap_or(0.0);
            g.syn_wait_ms += (connect - s.rtt_ms.unwrap_or(0.0)).max(0.0);
            g.syn_retransmitted.offer(connect, || {
                let mut f = who("population.syn-sent-again")
                    .with("syn", Value::Frame(syn.syn_frame))
                    .with("transmissions", Value::Count(u64::from(syn.syn_count)))
                    .with("answered", syn.syn_ack_frame.is_some())
                    .with("connect_ms", Value::Ms(connect));
                if let Some(sa) = syn.syn_ack_frame {
                    f = f.with("syn_ack", Value::Frame(sa));
                }
                PopEvidence {
                    connection: Some(c.index),
                    frames: std::iter::once(syn.syn_frame)
                        .chain(syn.syn_ack_frame)
                        .collect(),
                    interval: None,
                    fact: f,
                }
            });
        }
        if let Some((ack, again, wait)) = syn.ack_ignored {
            g.ack_ignored_ms += wait;
            g.ack_ignored_count += 1;
            let n = g.ack_ignored.items.len() as f64;
            // keep the first ones seen: every one says the same
            g.ack_ignored.offer(-n - 1.0, || PopEvidence {
                connection: Some(c.index),
                frames: vec![ack, again],
                interval: None,
                fact: who("population.ack-ignored")
                    .with("ack", Value::Frame(ack))
                    .with("syn_ack_again", Value::Frame(again)),
            });
        }
        if let Some(shape) = syn.shape.filter(|sh| sh.offered_without_ts) {
            let key = c.server;
            if g.shape_by_server.len() < MAX_SERVERS_SHAPED || g.shape_by_server.contains_key(key) {
                let e = g.shape_by_server.entry(key.to_string()).or_default();
                if shape.granted {
                    e.0 += 1;
                } else {
                    e.1 += 1;
                }
            }
            if !shape.granted {
                g.options_dropped_count += 1;
                g.options_dropped_window_ms += c.window_ms;
            }
            if let (false, Some(sa)) = (shape.granted, syn.syn_ack_frame) {
                let n = g.options_dropped.items.len() as f64;
                g.options_dropped.offer(-n - 1.0, || PopEvidence {
                    connection: Some(c.index),
                    frames: vec![syn.syn_frame, sa],
                    interval: None,
                    fact: who("population.options-dropped")
                        .with("syn", Value::Frame(syn.syn_frame))
                        .with("syn_ack", Value::Frame(sa)),
                });
            }
        }
    }

    /// The population's report, its findings judged.
    pub fn finish(self) -> PopulationReport {
        let widened = self.cells.widened;
        let (interval_ms, cells) = self.cells.finish();
        let tail = match (self.first_byte.quantile(0.5), self.first_byte.quantile(0.9)) {
            (Some(p50), Some(p90)) => self.bands.finish(p50, p90),
            _ => None,
        };
        let view = View {
            all: &self.all,
            rtt: &self.rtt,
            interval_ms,
            cells: &cells,
            tail: tail.as_ref(),
            signs: &self.signs,
            queue: &self.queue,
        };
        let mut findings: Vec<PopFinding> = [
            server_handshake_contention::detect,
            accept_queue_overflow::detect,
            syn_flood_cookies::detect,
            client_side_stall::detect,
            path_degradation::detect,
        ]
        .iter()
        .filter_map(|d| d(&view))
        .collect();
        findings.sort_by(|a, b| b.cost.ms.total_cmp(&a.cost.ms));
        if let Some(rtt) = self.rtt.quantile(0.5).filter(|r| *r > 0.0) {
            for f in &mut findings {
                f.cost.per_connection_rtts =
                    Some(crate::base::cost::round3(f.cost.per_connection_ms / rtt));
            }
        }
        let mut intervals = intervals_of(interval_ms, &cells);
        for f in &findings {
            let named = f
                .evidence
                .iter()
                .filter_map(|e| e.interval)
                .map(|[a, _]| (a * 1000.0 / interval_ms as f64).round() as usize);
            for i in named.chain(f.intervals.iter().copied()) {
                if let Some(iv) = intervals.get_mut(i) {
                    if !iv.findings.contains(&f.id) {
                        iv.findings.push(f.id);
                    }
                }
            }
        }
        PopulationReport {
            connections: self.all.connections,
            phases: self.all.report(),
            phases_by_server: self.servers.report(),
            phases_by_sni: self.snis.report(),
            first_byte: self.first_byte.stats(),
            server_timing: metric_stats(&self.server_timing),
            tail,
            over_time: (self.all.connections >= MIN_CONNECTIONS && !intervals.is_empty())
                .then_some(OverTime {
                    interval_ms,
                    widened,
                    intervals,
                }),
            population_findings: findings,
        }
    }
}

/// `Server-Timing` metric names kept by the population view; a capture's
/// later names are not counted.
pub const METRIC_NAMES: usize = 64;

/// Each metric's distribution, most samples first (then by name).
fn metric_stats(m: &std::collections::BTreeMap<String, Dist>) -> Vec<report::MetricStats> {
    let mut out: Vec<report::MetricStats> = m
        .iter()
        .filter_map(|(name, d)| {
            Some(report::MetricStats {
                metric: name.clone(),
                ms: d.stats()?,
            })
        })
        .collect();
    out.sort_by(|a, b| b.ms.count.cmp(&a.ms.count).then(a.metric.cmp(&b.metric)));
    out
}

/// What the population detectors read.
pub(crate) struct View<'a> {
    /// The capture's phase distributions.
    all: &'a PhaseDists,
    /// Connections' baseline RTTs (ms).
    pub(crate) rtt: &'a Dist,
    /// Interval width (ms) and the intervals.
    pub(crate) interval_ms: u64,
    pub(crate) cells: &'a [Cell],
    pub(crate) tail: Option<&'a Tail>,
    pub(crate) signs: &'a Signs,
    /// The handshakes of [`server_handshake_contention`]'s burst rule.
    pub(crate) queue: &'a server_handshake_contention::Queue,
}

impl View<'_> {
    /// The capture's distribution of a phase (ms).
    pub(crate) fn phase(&self, p: PhaseId) -> &Dist {
        &self.all.ms[p.index()]
    }

    /// Interval `i`'s time span (s).
    pub(crate) fn span(&self, i: usize) -> [f64; 2] {
        let w = self.interval_ms as f64 / 1000.0;
        [i as f64 * w, (i + 1) as f64 * w]
    }

    /// The intervals where `count` is above 0, largest count first (ties
    /// in time order).
    pub(crate) fn intervals_by(&self, count: impl Fn(&Cell) -> u64) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.cells.len())
            .filter(|&i| count(&self.cells[i]) > 0)
            .collect();
        v.sort_by(|&a, &b| {
            count(&self.cells[b])
                .cmp(&count(&self.cells[a]))
                .then(a.cmp(&b))
        });
        v
    }

    /// Mean handshakes in progress in interval `i`.
    pub(crate) fn in_progress(&self, i: usize) -> f64 {
        self.cells[i].handshake_ms / self.interval_ms as f64
    }

    /// Evidence naming interval `i`: `what` shows, with the interval's
    /// start and end (`start_s`, `end_s`) first among its values.
    pub(crate) fn interval_evidence(&self, i: usize, what: Fact) -> PopEvidence {
        let [a, b] = self.span(i);
        let mut fact = fact!(
            what.kind,
            start_s = Value::Number(a),
            end_s = Value::Number(b)
        );
        for (n, v) in what.args.iter() {
            fact.args.set(n, v.clone());
        }
        PopEvidence {
            connection: None,
            frames: Vec::new(),
            interval: Some([a, b]),
            fact,
        }
    }
}

fn intervals_of(width_ms: u64, cells: &[Cell]) -> Vec<Interval> {
    let w = width_ms as f64;
    let r = crate::base::cost::round3;
    cells
        .iter()
        .enumerate()
        .map(|(i, c)| Interval {
            start_s: r(i as f64 * w / 1000.0),
            new_connections: c.new_connections,
            new_per_s: r(c.new_connections as f64 * 1000.0 / w),
            handshakes_in_progress: r(c.handshake_ms / w),
            phases: CELL_PHASES
                .iter()
                .zip(&c.phases)
                .filter_map(|(&p, d)| {
                    Some(IntervalPhase {
                        phase: p,
                        count: d.count(),
                        p50_ms: r(d.quantile(0.5)?),
                        p99_ms: r(d.quantile(0.99)?),
                    })
                })
                .collect(),
            rtt_p50_ms: c.rtt.quantile(0.5).map(r),
            retransmission_rate: r(c.retx_rate()),
            syn_retransmitted: c.syn_retransmitted,
            ack_ignored: c.ack_ignored,
            options_dropped: c.options_dropped,
            findings: Vec::new(),
        })
        .collect()
}

/// Spearman's rank correlation of `xs` and `ys` (ties get their mean
/// rank); `None` with fewer than 3 pairs or a constant series.
pub(crate) fn spearman(xs: &[f64], ys: &[f64]) -> Option<f64> {
    fn ranks(v: &[f64]) -> Vec<f64> {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
        let mut r = vec![0.0; v.len()];
        let mut i = 0;
        while i < idx.len() {
            let mut j = i;
            while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
                j += 1;
            }
            let mean = (i + j) as f64 / 2.0;
            for &k in &idx[i..=j] {
                r[k] = mean;
            }
            i = j + 1;
        }
        r
    }
    if xs.len() != ys.len() || xs.len() < 3 {
        return None;
    }
    let (rx, ry) = (ranks(xs), ranks(ys));
    let n = rx.len() as f64;
    let (mx, my) = (rx.iter().sum::<f64>() / n, ry.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in rx.iter().zip(&ry) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_of_monotone_and_reversed_series() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let y = [10.0, 20.0, 25.0, 100.0, 101.0];
        assert!((spearman(&x, &y).expect("rho") - 1.0).abs() < 1e-9);
        let z: Vec<f64> = y.iter().rev().copied().collect();
        assert!((spearman(&x, &z).expect("rho") + 1.0).abs() < 1e-9);
        assert!(spearman(&x, &[1.0; 5]).is_none());
        assert!(spearman(&x[..2], &y[..2]).is_none());
    }

    #[test]
    fn top_k_keeps_the_largest_and_the_earliest_of_ties() {
        let mut t = TopK::default();
        for (i, v) in [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0]
            .iter()
            .enumerate()
        {
            t.offer(*v, || PopEvidence {
                connection: Some(i as u64),
                frames: Vec::new(),
                interval: None,
                fact: Fact::new("population.test"),
            });
        }
        let kept: Vec<u64> = t.evidence().iter().filter_map(|e| e.connection).collect();
        assert_eq!(kept, vec![5, 7, 4, 8, 2]);
    }
}

#[cfg(test)]
mod detector_tests;
