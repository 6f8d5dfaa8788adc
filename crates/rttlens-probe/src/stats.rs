//! `-n N`: min / median / p90 / max of each curl time over the attempts
//! ([`TimingStats`], rendered by `rttlens-report`).

use rttlens_core::base::cost::round3;
use rttlens_probe_model::{TimeSummary, TimingStats, Timings};

/// Order statistics of `xs` (`None` when empty). NaNs are ignored.
pub fn summarize(xs: &[f64]) -> Option<TimeSummary> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    // nearest rank: ceil(0.9 n), 1-based
    let rank = ((0.9 * n as f64).ceil() as usize).clamp(1, n);
    let r = round3;
    Some(TimeSummary {
        min_ms: r(v[0]),
        median_ms: r(median),
        p90_ms: r(v[rank - 1]),
        max_ms: r(v[n - 1]),
    })
}

/// One [`TimeSummary`] per curl time over the attempts' `ts`.
pub fn timing_stats(ts: &[Timings]) -> TimingStats {
    let col = |f: fn(&Timings) -> Option<f64>| -> Option<TimeSummary> {
        summarize(&ts.iter().filter_map(f).collect::<Vec<_>>())
    };
    TimingStats {
        count: ts.len(),
        namelookup: col(|t| Some(t.namelookup_ms)),
        connect: col(|t| Some(t.connect_ms)),
        appconnect: col(|t| t.appconnect_ms),
        pretransfer: col(|t| Some(t.pretransfer_ms)),
        starttransfer: col(|t| Some(t.starttransfer_ms)),
        total: col(|t| Some(t.total_ms)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_statistics() {
        assert_eq!(summarize(&[]), None);
        let s = summarize(&[5.0, 1.0, 3.0]).unwrap();
        assert_eq!(
            (s.min_ms, s.median_ms, s.p90_ms, s.max_ms),
            (1.0, 3.0, 5.0, 5.0)
        );
        let xs: Vec<f64> = (1..=20).map(f64::from).collect();
        let s = summarize(&xs).unwrap();
        assert_eq!((s.median_ms, s.p90_ms), (10.5, 18.0));
    }
}
