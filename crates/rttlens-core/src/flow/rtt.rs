//! RTT samples, collected per packet (docs/design.md §4 "Vantage and RTT").
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
//! The estimate and the vantage point it reveals are
//! `analysis::rtt::RttEstimate`'s.

use crate::base::side::{FrameRef, Side};
use crate::base::time::Duration;
use smallvec::SmallVec;

/// How many samples per half are kept for the median (the first ones; the
/// minimum is tracked over all of them).
pub(crate) const MAX_SAMPLES: usize = 4096;
/// Room made for a half's samples at its first (grown after).
const FIRST_SAMPLES: usize = 8;

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
    pub at: FrameRef,
    /// M→host→M.
    pub d: Duration,
}

/// Samples of one half (M→side→M).
#[derive(Debug, Default, Clone)]
pub struct HalfSamples {
    /// Minimum over all samples, with the method that gave it.
    pub(crate) min: Option<(Duration, RttMethod)>,
    /// Maximum over all samples, the handshake's included.
    pub(crate) max: Option<Duration>,
    /// The first [`MAX_SAMPLES`] data/ACK and timestamp samples, in capture
    /// order (queueing shows as a rise over time).
    pub(crate) samples: Vec<RttSample>,
}

impl HalfSamples {
    /// Record one sample taken at `at`; negative samples (clock steps) are
    /// ignored.
    pub fn add(&mut self, at: FrameRef, d: Duration, method: RttMethod) {
        if d.nanos < 0 {
            return;
        }
        if self.min.is_none_or(|(m, _)| d < m) {
            self.min = Some((d, method));
        }
        if self.max.is_none_or(|m| d > m) {
            self.max = Some(d);
        }
        if method != RttMethod::Handshake && self.samples.len() < MAX_SAMPLES {
            if self.samples.capacity() == 0 {
                // most connections take a handful: one allocation, not
                // growth from 4
                self.samples.reserve_exact(FIRST_SAMPLES);
            }
            self.samples.push(RttSample { at, d });
        }
    }

    /// The `q`-quantile (0.0–1.0) of the data/ACK and timestamp samples.
    pub(crate) fn quantile(&self, q: f64) -> Option<Duration> {
        if self.samples.is_empty() {
            return None;
        }
        // on the stack for the common handful of samples
        let mut v: SmallVec<[Duration; 64]> = self.samples.iter().map(|s| s.d).collect();
        let k = ((v.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
        let (_, m, _) = v.select_nth_unstable(k);
        Some(*m)
    }

    pub(crate) fn median(&self) -> Option<Duration> {
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
    /// Boxed: a word, not three, in every connection of a table that keeps
    /// no traces (the extra allocation is only a traced table's).
    #[allow(clippy::box_collection)]
    pub(crate) all: Option<Box<Vec<(Side, RttSample)>>>,
}

impl RttSamples {
    /// Add a sample of the half on `side`, taken at `at`.
    pub fn add(&mut self, side: Side, at: FrameRef, d: Duration, method: RttMethod) {
        self.half[side.index()].add(at, d, method);
        if let Some(all) = &mut self.all {
            if method != RttMethod::Handshake && d.nanos >= 0 {
                all.push((side, RttSample { at, d }));
            }
        }
    }

    /// The largest sample of the half on `side` so far, if any.
    pub(crate) fn h_max(&self, side: Side) -> Option<Duration> {
        self.half[side.index()].max
    }

    /// Current estimate of the half on `side` (its minimum), if any.
    pub(crate) fn h(&self, side: Side) -> Option<Duration> {
        self.half[side.index()].min.map(|(d, _)| d)
    }
}
