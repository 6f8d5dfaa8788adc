//! RTT samples and the vantage point they reveal (docs/design.md §4 "Vantage
//! and RTT").
//!
//! For a capture point M, `h_c` is the time M→client→M and `h_s` the time
//! M→server→M; RTT = h_c + h_s. Three sources give samples of each half:
//!
//! - the handshake: `t(SYN-ACK) − t(SYN)` = h_s and `t(ACK) − t(SYN-ACK)` = h_c;
//! - data/ACK pairs: data from X seen at t₁, the first ACK from Y covering it
//!   at t₂ gives a sample of h_Y = t₂ − t₁; Karn's rule (RFC 6298 §3): no
//!   samples from retransmitted ranges;
//! - TSval/TSecr echoes (RFC 7323 §4): X's first segment carrying TSval v at
//!   t₁, Y's first segment echoing v in TSecr at t₂ gives h_Y = t₂ − t₁.
//!
//! Data/ACK and timestamp samples include the receiver's delayed-ACK wait, so
//! the minimum is the estimate of the path and the median shows the spread.

use crate::side::{Mark, Side};
use crate::time::Duration;

/// How many samples per half are kept for the median (the first ones; the
/// minimum is tracked over all of them).
pub const MAX_SAMPLES: usize = 4096;

/// Where an RTT figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RttMethod {
    /// SYN → SYN-ACK → ACK timing.
    Handshake,
    /// Data segments and the ACKs that cover them (Karn's rule).
    DataAck,
    /// TCP timestamp option echoes.
    Timestamps,
}

impl RttMethod {
    /// Stable name used in the outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            RttMethod::Handshake => "handshake",
            RttMethod::DataAck => "data-ack",
            RttMethod::Timestamps => "timestamps",
        }
    }
}

/// One sample of a half: the packet that closed it (the ACK or the echo)
/// and the time M→host→M it measured.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct RttSample {
    /// The ACK or timestamp echo that gave the sample.
    pub at: Mark,
    /// M→host→M.
    pub d: Duration,
}

/// Samples of one half (M→side→M).
#[derive(Debug, Default, Clone)]
pub struct HalfSamples {
    /// Minimum over all samples, with the method that gave it.
    pub min: Option<(Duration, RttMethod)>,
    /// The first [`MAX_SAMPLES`] data/ACK and timestamp samples, in capture
    /// order (queueing shows as a rise over time).
    pub samples: Vec<RttSample>,
}

impl HalfSamples {
    /// Record one sample taken at `at`; negative samples (clock steps) are
    /// ignored.
    pub fn add(&mut self, at: Mark, d: Duration, method: RttMethod) {
        if d.nanos < 0 {
            return;
        }
        if self.min.is_none_or(|(m, _)| d < m) {
            self.min = Some((d, method));
        }
        if method != RttMethod::Handshake && self.samples.len() < MAX_SAMPLES {
            self.samples.push(RttSample { at, d });
        }
    }

    /// The `q`-quantile (0.0–1.0) of the data/ACK and timestamp samples.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        if self.samples.is_empty() {
            return None;
        }
        let mut v: Vec<Duration> = self.samples.iter().map(|s| s.d).collect();
        let k = ((v.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
        let (_, m, _) = v.select_nth_unstable(k);
        Some(*m)
    }

    fn median(&self) -> Option<Duration> {
        self.quantile(0.5)
    }
}

/// RTT samples of one connection, per half.
#[derive(Debug, Default, Clone)]
pub struct RttSamples {
    /// Indexed by [`Side::index`]: samples of h_c (client) and h_s (server).
    pub half: [HalfSamples; 2],
    /// Every data/ACK and timestamp sample with its half, when a trace is
    /// kept ([`crate::flow::trace::Trace::rtt`]); `None` otherwise.
    pub all: Option<Vec<(Side, RttSample)>>,
}

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
    pub min: Duration,
    /// Median of data/ACK and timestamp samples (h_c median + h_s median);
    /// equals `min` when there were none.
    pub median: Duration,
    /// M→client→M.
    pub h_c: Duration,
    /// M→server→M.
    pub h_s: Duration,
    /// The method that gave the larger half (the one that dominates the RTT).
    pub method: RttMethod,
    /// Capture point.
    pub vantage: Vantage,
}

/// A half is "near" the capture point when it is below this share of the RTT.
pub const NEAR_SHARE: f64 = 0.15;
/// Below this RTT the vantage point cannot be told (loopback, same host).
pub const MIN_RTT_FOR_VANTAGE: Duration = Duration::from_micros(50);

impl RttSamples {
    /// Add a sample of the half on `side`, taken at `at`.
    pub fn add(&mut self, side: Side, at: Mark, d: Duration, method: RttMethod) {
        self.half[side.index()].add(at, d, method);
        if let Some(all) = &mut self.all {
            if method != RttMethod::Handshake && d.nanos >= 0 {
                all.push((side, RttSample { at, d }));
            }
        }
    }

    /// Current estimate of the half on `side` (its minimum), if any.
    pub fn h(&self, side: Side) -> Option<Duration> {
        self.half[side.index()].min.map(|(d, _)| d)
    }

    /// The estimate, once both halves have at least one sample.
    pub fn estimate(&self) -> Option<RttEstimate> {
        let (h_c, mc) = self.half[0].min?;
        let (h_s, ms) = self.half[1].min?;
        let min = h_c + h_s;
        let med_c = self.half[0].median().unwrap_or(h_c).max(h_c);
        let med_s = self.half[1].median().unwrap_or(h_s).max(h_s);
        let method = if h_s >= h_c { ms } else { mc };
        let vantage = if min < MIN_RTT_FOR_VANTAGE {
            Vantage::Unknown
        } else {
            let near = |h: Duration| (h.nanos as f64) < NEAR_SHARE * min.nanos as f64;
            match (near(h_c), near(h_s)) {
                (true, false) => Vantage::Client,
                (false, true) => Vantage::Server,
                (false, false) => Vantage::Middle,
                (true, true) => Vantage::Unknown,
            }
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vantage_from_halves() {
        let mut s = RttSamples::default();
        assert!(s.estimate().is_none());
        s.add(
            Side::Server,
            Mark::default(),
            Duration::from_micros(25_663),
            RttMethod::Handshake,
        );
        s.add(
            Side::Client,
            Mark::default(),
            Duration::from_micros(76),
            RttMethod::Handshake,
        );
        let e = s.estimate().unwrap();
        assert_eq!(e.vantage, Vantage::Client);
        assert_eq!(e.min, Duration::from_micros(25_739));
        assert_eq!(e.method, RttMethod::Handshake);

        let mut m = RttSamples::default();
        m.add(
            Side::Server,
            Mark::default(),
            Duration::from_millis(10),
            RttMethod::DataAck,
        );
        m.add(
            Side::Client,
            Mark::default(),
            Duration::from_millis(15),
            RttMethod::DataAck,
        );
        m.add(
            Side::Client,
            Mark::default(),
            Duration::from_millis(55),
            RttMethod::DataAck,
        );
        let e = m.estimate().unwrap();
        assert_eq!(e.vantage, Vantage::Middle);
        assert_eq!(e.median, Duration::from_millis(65));
    }
}
