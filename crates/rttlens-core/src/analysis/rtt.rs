//! The RTT estimate and the vantage point it reveals (docs/design.md §4
//! "Vantage and RTT"), from the samples `flow::rtt` collected: the minimum
//! of each half is the path, the median shows the spread.

use crate::base::time::Duration;
use crate::flow::rtt::{RttMethod, RttSample, RttSamples};

/// Where the capture was taken, relative to the connection's two hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Vantage {
    /// On (or next to) the client: h_c ≈ 0.
    Client,
    /// On (or next to) the server: h_s ≈ 0.
    Server,
    /// On the path, away from both hosts.
    Middle,
    /// Not enough samples, or an RTT too small to tell (loopback).
    Unknown,
}

impl Vantage {
    /// The capture point told from the smallest sample of each half: near
    /// a host when its half is below [`NEAR_SHARE`] of the RTT, unknown
    /// below [`MIN_RTT_FOR_VANTAGE`] (docs/design.md §4 "Vantage and RTT").
    pub(crate) fn of_halves(h_c: Duration, h_s: Duration) -> Vantage {
        let min = h_c + h_s;
        if min < MIN_RTT_FOR_VANTAGE {
            return Vantage::Unknown;
        }
        let near = |h: Duration| (h.nanos as f64) < NEAR_SHARE * min.nanos as f64;
        match (near(h_c), near(h_s)) {
            (true, false) => Vantage::Client,
            (false, true) => Vantage::Server,
            (false, false) => Vantage::Middle,
            (true, true) => Vantage::Unknown,
        }
    }

    /// Stable name used in the outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            Vantage::Client => "client",
            Vantage::Server => "server",
            Vantage::Middle => "middle",
            Vantage::Unknown => "unknown",
        }
    }
}

/// The RTT figures of one connection.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct RttEstimate {
    /// Baseline RTT: min h_c + min h_s.
    pub(crate) min: Duration,
    /// Median of data/ACK and timestamp samples (h_c median + h_s median);
    /// equals `min` when there were none.
    pub(crate) median: Duration,
    /// M→client→M.
    pub(crate) h_c: Duration,
    /// M→server→M.
    pub(crate) h_s: Duration,
    /// The method that gave the larger half (the one that dominates the RTT).
    pub(crate) method: RttMethod,
    /// Capture point.
    pub(crate) vantage: Vantage,
}

/// A half is "near" the capture point when it is below this share of the RTT.
pub(crate) const NEAR_SHARE: f64 = 0.15;
/// Below this RTT the vantage point cannot be told (loopback, same host).
pub(crate) const MIN_RTT_FOR_VANTAGE: Duration = Duration::from_micros(50);

impl RttEstimate {
    /// The estimate from `samples`, once both halves have at least one sample.
    pub(crate) fn from_samples(samples: &RttSamples) -> Option<RttEstimate> {
        let (h_c, mc) = samples.half[0].min?;
        let (h_s, ms) = samples.half[1].min?;
        let min = h_c + h_s;
        let med_c = samples.half[0].median().unwrap_or(h_c).max(h_c);
        let med_s = samples.half[1].median().unwrap_or(h_s).max(h_s);
        let method = if h_s >= h_c { ms } else { mc };
        let vantage = Vantage::of_halves(h_c, h_s);
        Some(RttEstimate {
            min,
            median: med_c + med_s,
            h_c,
            h_s,
            method,
            vantage,
        })
    }
}

/// What a connection's RTT samples show over time when they rose: the
/// early and late RTT levels and the samples that show them, judged by
/// [`Analysis::rtt_rise`](super::Analysis::rtt_rise) (`rtt_rise.rs`, whose
/// module docs say how) and cached on the analysis.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RttRise {
    /// The low end (10th percentile) of the first half of the samples.
    pub(crate) early: Duration,
    /// Median RTT of the second half of the samples.
    pub(crate) late: Duration,
    /// The sample with the highest RTT.
    pub(crate) peak: RttSample,
    /// The first sample.
    pub(crate) first: RttSample,
    /// The median sample of the second half.
    pub(crate) late_sample: RttSample,
    /// Samples judged.
    pub(crate) samples: usize,
    /// The near half's minimum, added to each far sample.
    pub(crate) near: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::side::{FrameRef, Side};

    #[test]
    fn vantage_from_halves() {
        let mut s = RttSamples::default();
        assert!(RttEstimate::from_samples(&s).is_none());
        s.add(
            Side::Server,
            FrameRef::default(),
            Duration::from_micros(25_663),
            RttMethod::Handshake,
        );
        s.add(
            Side::Client,
            FrameRef::default(),
            Duration::from_micros(76),
            RttMethod::Handshake,
        );
        let e = RttEstimate::from_samples(&s).unwrap();
        assert_eq!(e.vantage, Vantage::Client);
        assert_eq!(e.min, Duration::from_micros(25_739));
        assert_eq!(e.method, RttMethod::Handshake);

        let mut m = RttSamples::default();
        m.add(
            Side::Server,
            FrameRef::default(),
            Duration::from_millis(10),
            RttMethod::DataAck,
        );
        m.add(
            Side::Client,
            FrameRef::default(),
            Duration::from_millis(15),
            RttMethod::DataAck,
        );
        m.add(
            Side::Client,
            FrameRef::default(),
            Duration::from_millis(55),
            RttMethod::DataAck,
        );
        let e = RttEstimate::from_samples(&m).unwrap();
        assert_eq!(e.vantage, Vantage::Middle);
        assert_eq!(e.median, Duration::from_millis(65));
    }
}
