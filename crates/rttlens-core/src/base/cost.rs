//! What a finding costs, and the rounding every figure in the output goes
//! through: shared by the analysis (the ladder, transfer figures) and the
//! detectors, so it sits below both.

use crate::base::time::Duration;

/// What a finding costs the connection.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Cost {
    /// Milliseconds.
    pub ms: f64,
    /// Round trips (`ms / rtt_min`); `None` (JSON `null`) when the RTT is
    /// unknown: a cost is never counted in round trips nobody measured.
    pub rtts: Option<f64>,
}

impl Cost {
    /// A cost of `d`, counted in round trips of `rtt`.
    pub fn of(d: Duration, rtt: Duration) -> Cost {
        Cost {
            ms: round3(d.as_millis_f64().max(0.0)),
            rtts: d.in_rtts(rtt).map(|r| round3(r.max(0.0))),
        }
    }

    /// No cost (quality findings such as capture drops).
    pub(crate) const ZERO: Cost = Cost {
        ms: 0.0,
        rtts: Some(0.0),
    };
}

/// Round to three decimals (for stable outputs).
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A finding is reported only when its cost is material: at least
/// [`MATERIAL_RTTS`] round trips *and* at least [`MATERIAL_MS`] ms; when the
/// RTT is unknown, at least [`MATERIAL_MS_NO_RTT`] ms.
pub(crate) const MATERIAL_RTTS: f64 = 0.25;
/// See [`MATERIAL_RTTS`].
pub(crate) const MATERIAL_MS: f64 = 1.0;
/// Materiality without an RTT (ms): a quarter of a 40 ms path, the
/// threshold of [`MATERIAL_RTTS`] on a typical Internet RTT; on a LAN, where
/// RTTs are below 1 ms, 10 ms is material by any measure.
pub(crate) const MATERIAL_MS_NO_RTT: f64 = 10.0;

impl Cost {
    /// Whether this cost passes the materiality threshold.
    pub fn is_material(&self) -> bool {
        match self.rtts {
            Some(r) => self.ms >= MATERIAL_MS && r >= MATERIAL_RTTS,
            None => self.ms >= MATERIAL_MS_NO_RTT,
        }
    }

    /// `"12.5 ms (0.50 RTT)"`, or `"12.5 ms (RTT unknown)"`.
    pub fn describe(&self) -> String {
        match self.rtts {
            Some(r) => format!("{:.1} ms ({r:.2} RTT)", self.ms),
            None => format!("{:.1} ms (RTT unknown)", self.ms),
        }
    }
}
