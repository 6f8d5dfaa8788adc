//! The run's accumulator: one HDR histogram per kind and phase
//! (hdrhistogram 7.6, microseconds, 3 significant digits, up to one hour),
//! counts, verified resumption and 0-RTT, errors by class and phase.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::conn::{ErrorClass, Sample};
use crate::mix::Kind;
use crate::results::{ErrorCount, KindReport, LatencySummary, PhaseLatencies};
use rttlens_probe::ProbePhase;

/// Largest value a histogram holds: one hour, in µs.
const MAX_US: u64 = 3_600_000_000;
/// How many error messages are kept per class and phase (the first one).
const EXAMPLES: usize = 1;

/// The timed phases, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timed {
    Connect,
    Tls,
    Ttfb,
    Total,
}

impl Timed {
    const ALL: [Timed; 4] = [Timed::Connect, Timed::Tls, Timed::Ttfb, Timed::Total];
}

fn histogram() -> Histogram<u64> {
    // bounds are constants that hdrhistogram accepts
    Histogram::new_with_bounds(1, MAX_US, 3).expect("valid histogram bounds")
}

fn record(h: &mut Histogram<u64>, d: Duration) {
    let us = u64::try_from(d.as_micros())
        .unwrap_or(MAX_US)
        .clamp(1, MAX_US);
    h.saturating_record(us);
}

/// One kind's counts and histograms.
#[derive(Debug, Clone)]
struct PerKind {
    attempted: u64,
    succeeded: u64,
    resumed: u64,
    early_sent: u64,
    early_accepted: u64,
    phases: [Histogram<u64>; 4],
    lag: Histogram<u64>,
}

impl PerKind {
    fn new() -> PerKind {
        PerKind {
            attempted: 0,
            succeeded: 0,
            resumed: 0,
            early_sent: 0,
            early_accepted: 0,
            phases: [histogram(), histogram(), histogram(), histogram()],
            lag: histogram(),
        }
    }
}

/// What the samples add up to so far.
#[derive(Debug, Clone)]
pub(crate) struct Stats {
    kinds: [PerKind; 3],
    errors: BTreeMap<(ErrorClass, ProbePhase), (u64, Vec<String>)>,
    first: Option<Instant>,
    last_end: Option<Instant>,
    done: u64,
    failed: u64,
}

impl Stats {
    pub fn new() -> Stats {
        Stats {
            kinds: [PerKind::new(), PerKind::new(), PerKind::new()],
            errors: BTreeMap::new(),
            first: None,
            last_end: None,
            done: 0,
            failed: 0,
        }
    }

    /// Add one connection's sample.
    pub fn add(&mut self, s: &Sample) {
        self.done += 1;
        self.first = Some(self.first.map_or(s.intended, |f| f.min(s.intended)));
        let end = s.end();
        self.last_end = Some(self.last_end.map_or(end, |l| l.max(end)));
        let k = &mut self.kinds[s.kind.index()];
        k.attempted += 1;
        if let Some(f) = &s.failure {
            self.failed += 1;
            let e = self.errors.entry((f.class, f.phase)).or_default();
            e.0 += 1;
            if e.1.len() < EXAMPLES {
                e.1.push(f.message.clone());
            }
            return;
        }
        k.succeeded += 1;
        k.resumed += u64::from(s.resumed);
        k.early_sent += u64::from(s.early_sent);
        k.early_accepted += u64::from(s.early_accepted);
        record(&mut k.lag, s.lag);
        let values = [s.connect, s.tls, s.ttfb, Some(s.total)];
        for (h, v) in k.phases.iter_mut().zip(values) {
            if let Some(d) = v {
                record(h, d);
            }
        }
    }

    /// Connections finished (succeeded or failed).
    pub fn done(&self) -> u64 {
        self.done
    }

    /// Connections that failed.
    pub fn failed(&self) -> u64 {
        self.failed
    }

    /// Connections that succeeded.
    pub fn succeeded(&self) -> u64 {
        self.done - self.failed
    }

    /// From the first intended start to the last end.
    pub fn span(&self) -> Duration {
        match (self.first, self.last_end) {
            (Some(f), Some(l)) => l.saturating_duration_since(f),
            _ => Duration::ZERO,
        }
    }

    /// The errors, most frequent first.
    pub fn errors(&self) -> Vec<ErrorCount> {
        let mut v: Vec<ErrorCount> = self
            .errors
            .iter()
            .map(|((class, phase), (count, ex))| ErrorCount {
                class: *class,
                phase: *phase,
                count: *count,
                example: ex.first().cloned().unwrap_or_default(),
            })
            .collect();
        v.sort_by_key(|e| std::cmp::Reverse(e.count));
        v
    }

    fn phases_of(lag: &Histogram<u64>, phases: &[Histogram<u64>; 4]) -> PhaseLatencies {
        let get = |t: Timed| summary(&phases[Timed::ALL.iter().position(|x| *x == t).unwrap_or(0)]);
        PhaseLatencies {
            start_lag: summary(lag),
            connect: get(Timed::Connect),
            tls: get(Timed::Tls),
            ttfb: get(Timed::Ttfb),
            total: get(Timed::Total),
        }
    }

    /// Every kind together.
    pub fn all_phases(&self) -> PhaseLatencies {
        let mut lag = histogram();
        let mut phases = [histogram(), histogram(), histogram(), histogram()];
        for k in &self.kinds {
            // same bounds everywhere: adding cannot fail
            let _ = lag.add(&k.lag);
            for (a, b) in phases.iter_mut().zip(&k.phases) {
                let _ = a.add(b);
            }
        }
        Stats::phases_of(&lag, &phases)
    }

    /// Per kind, the kinds that were attempted.
    pub fn kinds(&self) -> Vec<KindReport> {
        Kind::ALL
            .iter()
            .zip(&self.kinds)
            .filter(|(_, k)| k.attempted > 0)
            .map(|(kind, k)| KindReport {
                kind: *kind,
                attempted: k.attempted,
                succeeded: k.succeeded,
                resumed: k.resumed,
                early_data_sent: k.early_sent,
                early_data_accepted: k.early_accepted,
                phases: Stats::phases_of(&k.lag, &k.phases),
            })
            .collect()
    }
}

/// Percentiles of `h` in ms (`None` when empty). hdrhistogram reports the
/// highest value equivalent to the quantile's bucket (within 0.1 %).
fn summary(h: &Histogram<u64>) -> Option<LatencySummary> {
    if h.is_empty() {
        return None;
    }
    let ms = |us: u64| us as f64 / 1000.0;
    Some(LatencySummary {
        count: h.len(),
        min_ms: ms(h.min()),
        mean_ms: h.mean() / 1000.0,
        p50_ms: ms(h.value_at_quantile(0.50)),
        p90_ms: ms(h.value_at_quantile(0.90)),
        p99_ms: ms(h.value_at_quantile(0.99)),
        p99_9_ms: ms(h.value_at_quantile(0.999)),
        max_ms: ms(h.max()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::Failure;

    fn sample(kind: Kind, total_ms: u64, fail: Option<ErrorClass>) -> Sample {
        let t0 = Instant::now();
        Sample {
            kind,
            intended: t0,
            lag: Duration::from_micros(5),
            connect: Some(Duration::from_micros(100)),
            tls: Some(Duration::from_micros(400)),
            ttfb: None,
            total: Duration::from_millis(total_ms),
            resumed: kind != Kind::Full,
            early_sent: kind == Kind::ZeroRtt,
            early_accepted: kind == Kind::ZeroRtt,
            failure: fail.map(|class| Failure {
                class,
                phase: ProbePhase::Tls,
                message: "x".into(),
            }),
        }
    }

    #[test]
    fn percentiles_counts_and_errors() {
        let mut s = Stats::new();
        for i in 0..1000 {
            s.add(&sample(Kind::Full, 1 + i % 10, None));
        }
        s.add(&sample(Kind::Full, 500, None));
        s.add(&sample(Kind::Resumed, 2, None));
        s.add(&sample(Kind::Resumed, 2, Some(ErrorClass::Timeout)));
        assert_eq!((s.done(), s.failed(), s.succeeded()), (1003, 1, 1002));
        let all = s.all_phases();
        let total = all.total.unwrap();
        assert_eq!(total.count, 1002);
        assert!((total.max_ms - 500.0).abs() < 1.0);
        assert!((total.p50_ms - 5.0).abs() < 0.1, "{total:?}");
        // one 500 ms sample in 1002 is beyond p99.9's rank
        assert!(total.p99_9_ms < 11.0, "{total:?}");
        assert!(all.ttfb.is_none());
        let kinds = s.kinds();
        assert_eq!(kinds.len(), 2);
        assert_eq!(
            (kinds[1].attempted, kinds[1].succeeded, kinds[1].resumed),
            (2, 1, 1)
        );
        let e = s.errors();
        assert_eq!(
            (e[0].class, e[0].phase, e[0].count),
            (ErrorClass::Timeout, ProbePhase::Tls, 1)
        );
    }
}
