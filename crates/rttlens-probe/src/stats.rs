//! `-n N`: min / median / p90 / max of each curl time over the attempts.

use rttlens_core::detect::finding::round3;

use crate::timing::Timings;

/// Order statistics of one time, in ms.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Summary {
    /// Smallest (ms).
    pub min_ms: f64,
    /// Median (ms; the mean of the middle two for an even count).
    pub median_ms: f64,
    /// 90th percentile (ms; nearest rank).
    pub p90_ms: f64,
    /// Largest (ms).
    pub max_ms: f64,
}

/// Order statistics of `xs` (`None` when empty). NaNs are ignored.
pub fn summarize(xs: &[f64]) -> Option<Summary> {
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
    Some(Summary {
        min_ms: r(v[0]),
        median_ms: r(median),
        p90_ms: r(v[rank - 1]),
        max_ms: r(v[n - 1]),
    })
}

/// One [`Summary`] per curl time over several attempts.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TimingStats {
    /// Attempts summarised.
    pub count: usize,
    /// `time_namelookup`.
    pub namelookup: Option<Summary>,
    /// `time_connect`.
    pub connect: Option<Summary>,
    /// `time_appconnect` (TLS only).
    pub appconnect: Option<Summary>,
    /// `time_pretransfer`.
    pub pretransfer: Option<Summary>,
    /// `time_starttransfer`.
    pub starttransfer: Option<Summary>,
    /// `time_total`.
    pub total: Option<Summary>,
}

impl TimingStats {
    /// Summarise `ts`.
    pub fn of(ts: &[Timings]) -> TimingStats {
        let col = |f: fn(&Timings) -> Option<f64>| -> Option<Summary> {
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

    /// `(name, summary)` in phase order, for renderers.
    pub fn rows(&self) -> Vec<(&'static str, Summary)> {
        [
            ("namelookup", self.namelookup),
            ("connect", self.connect),
            ("appconnect", self.appconnect),
            ("pretransfer", self.pretransfer),
            ("starttransfer", self.starttransfer),
            ("total", self.total),
        ]
        .into_iter()
        .filter_map(|(n, s)| s.map(|s| (n, s)))
        .collect()
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
