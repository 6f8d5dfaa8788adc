//! Streaming percentiles: a thin layer over `hdrhistogram` (Gil Tene's HDR
//! histogram, the crate `rttlens bench` uses too) that records milliseconds
//! and round-trip counts as integers and reads them back as the figures the
//! reports print.

use hdrhistogram::Histogram;

/// Units recorded per millisecond (µs resolution, as capture timestamps).
const PER_MS: f64 = 1000.0;
/// Units recorded per round trip (1/1000 of an RTT).
const PER_RTT: f64 = 1000.0;

/// One distribution, recorded in 1/1000 of its unit. The histogram is
/// allocated on the first value and grows with the largest (HDR's
/// auto-resize), so an unused or small one costs little.
#[derive(Debug, Clone)]
pub(crate) struct Dist {
    h: Option<Histogram<u32>>,
    /// Significant decimal digits kept (2: 1 % of the value; 3: 0.1 %).
    sigfig: u8,
}

impl Dist {
    pub(crate) fn new(sigfig: u8) -> Dist {
        Dist { h: None, sigfig }
    }

    /// Record `v` (in the unit, ≥ 0); a negative or non-finite value is
    /// not recorded.
    pub(crate) fn record(&mut self, v: f64) {
        if !(v.is_finite() && v >= 0.0) {
            return;
        }
        let h = self.h.get_or_insert_with(|| Self::empty(self.sigfig));
        // the unit's thousandths; values are recorded at least 1 (HDR's
        // lowest discernible value) so a zero still counts as a sample
        let units = (v * PER_MS).round().max(1.0) as u64;
        // auto-resize only fails past u64's range: no capture gets there
        let _ = h.record(units);
    }

    /// Samples recorded.
    pub(crate) fn count(&self) -> u64 {
        self.h.as_ref().map_or(0, |h| h.len())
    }

    /// Adds `other`'s samples.
    pub(crate) fn merge(&mut self, other: &Dist) {
        let Some(o) = &other.h else { return };
        match &mut self.h {
            Some(h) => {
                let _ = h.add(o);
            }
            None if other.sigfig == self.sigfig => self.h = Some(o.clone()),
            // at this one's precision: each of `other`'s buckets lies in
            // one of this one's (HDR buckets nest), so the result is what
            // recording the values here would have made
            None => {
                let mut h = Self::empty(self.sigfig);
                let _ = h.add(o);
                self.h = Some(h);
            }
        }
    }

    /// An empty histogram that grows with the values.
    fn empty(sigfig: u8) -> Histogram<u32> {
        let mut h = Histogram::new(sigfig).expect("1..=5 significant digits");
        h.auto(true);
        h
    }

    /// The value at quantile `q` (0..=1), in the unit; `None` when empty.
    pub(crate) fn quantile(&self, q: f64) -> Option<f64> {
        let h = self.h.as_ref().filter(|h| !h.is_empty())?;
        Some(from_units(h.value_at_quantile(q)))
    }

    /// Mean, in the unit.
    pub(crate) fn mean(&self) -> Option<f64> {
        let h = self.h.as_ref().filter(|h| !h.is_empty())?;
        Some(h.mean() / PER_MS)
    }

    /// Sum over the samples above `q`'s value of how far each is above
    /// `base` (the unit), and how many there are: the tail's extra time
    /// over a baseline (HDR's buckets, so within its precision).
    pub(crate) fn excess_above(&self, q: f64, base: f64) -> (f64, u64) {
        match self.quantile(q) {
            Some(cut) => self.excess_over(cut, base),
            None => (0.0, 0),
        }
    }

    /// Sum over the samples above `cut` (the unit) of how far each is
    /// above `base`, and how many there are.
    pub(crate) fn excess_over(&self, cut: f64, base: f64) -> (f64, u64) {
        let Some(h) = self.h.as_ref().filter(|h| !h.is_empty()) else {
            return (0.0, 0);
        };
        let cut = h.highest_equivalent((cut * PER_MS).round().max(0.0) as u64);
        let (mut sum, mut n) = (0.0, 0u64);
        for v in h.iter_recorded() {
            let at = h.highest_equivalent(v.value_iterated_to());
            if at <= cut {
                continue;
            }
            let c = u64::from(v.count_at_value());
            sum += (from_units(at) - base).max(0.0) * c as f64;
            n += c;
        }
        (sum, n)
    }

    /// The figures the reports print, rounded to 3 decimals.
    pub(crate) fn stats(&self) -> Option<Stats> {
        let h = self.h.as_ref().filter(|h| !h.is_empty())?;
        let r = crate::base::cost::round3;
        Some(Stats {
            count: h.len(),
            min: r(from_units(h.min())),
            p50: r(from_units(h.value_at_quantile(0.50))),
            p90: r(from_units(h.value_at_quantile(0.90))),
            p99: r(from_units(h.value_at_quantile(0.99))),
            p99_9: r(from_units(h.value_at_quantile(0.999))),
            max: r(from_units(h.max())),
            mean: r(h.mean() / PER_MS),
        })
    }
}

fn from_units(u: u64) -> f64 {
    // PER_MS and PER_RTT are the same scale: one conversion serves both
    const { assert!(PER_MS == PER_RTT) };
    u as f64 / PER_MS
}

/// A distribution's figures (in ms, or in round trips), HDR's values:
/// each within the histogram's precision (0.1 % at the capture level,
/// 1 % per server, SNI and interval) of the true one.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Stats {
    /// Samples.
    pub count: u64,
    /// Smallest.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p99_9: f64,
    /// Largest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_sample() {
        let mut d = Dist::new(3);
        for i in 1..=1000 {
            d.record(f64::from(i) / 10.0); // 0.1 … 100.0 ms
        }
        let s = d.stats().expect("samples");
        assert_eq!(s.count, 1000);
        assert!((s.p50 - 50.0).abs() <= 0.05, "{s:?}");
        assert!((s.p99 - 99.0).abs() <= 0.1, "{s:?}");
        assert!((s.max - 100.0).abs() <= 0.1, "{s:?}");
        assert!((s.min - 0.1).abs() < 1e-9, "{s:?}");
        // the 10 samples above p99 (99.1 … 100.0) are ≈ 9.55 ms over 90
        let (sum, n) = d.excess_above(0.99, 90.0);
        assert_eq!(n, 10);
        assert!((sum - 95.5).abs() < 0.5, "{sum}");
    }

    #[test]
    fn negative_and_nan_are_not_samples_and_zero_is() {
        let mut d = Dist::new(2);
        d.record(-1.0);
        d.record(f64::NAN);
        assert_eq!(d.count(), 0);
        assert!(d.stats().is_none());
        d.record(0.0);
        assert_eq!(d.count(), 1);
    }

    #[test]
    fn merge_into_a_coarser_dist_is_as_if_recorded_there() {
        // a capture-wide (3 digits) distribution copied into a group's
        // (2 digits) gives the group's figures, not finer ones
        let values = [0.012, 0.9, 8.35, 8.38, 8.41, 44.06, 57.85, 1173.5, 2193.9];
        let (mut fine, mut coarse) = (Dist::new(3), Dist::new(2));
        for v in values {
            fine.record(v);
            coarse.record(v);
        }
        let mut copied = Dist::new(2);
        copied.merge(&fine);
        assert_eq!(copied.stats(), coarse.stats());
        assert_ne!(fine.stats(), coarse.stats(), "the precisions differ here");
    }

    #[test]
    fn merge_adds_samples() {
        let (mut a, mut b) = (Dist::new(2), Dist::new(2));
        a.record(1.0);
        b.record(3000.0);
        a.merge(&b);
        let s = a.stats().expect("samples");
        assert_eq!(s.count, 2);
        assert!((s.max - 3000.0).abs() <= 30.0, "{s:?}");
    }
}
