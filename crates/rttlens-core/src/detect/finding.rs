//! The finding contract (docs/design.md §5): one named cause with its cost,
//! evidence frames, confidence and fix.

use crate::time::{Duration, Timestamp};

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
    pub const ZERO: Cost = Cost {
        ms: 0.0,
        rtts: Some(0.0),
    };

    /// Round trips, 0 when the RTT is unknown (for sorting and sums).
    pub fn rtts_or_zero(&self) -> f64 {
        self.rtts.unwrap_or(0.0)
    }
}

/// Round to three decimals (for stable outputs).
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A finding is reported only when its cost is material: at least
/// [`MATERIAL_RTTS`] round trips *and* at least [`MATERIAL_MS`] ms; when the
/// RTT is unknown, at least [`MATERIAL_MS_NO_RTT`] ms.
pub const MATERIAL_RTTS: f64 = 0.25;
/// See [`MATERIAL_RTTS`].
pub const MATERIAL_MS: f64 = 1.0;
/// Materiality without an RTT (ms): a quarter of a 40 ms path, the
/// threshold of [`MATERIAL_RTTS`] on a typical Internet RTT; on a LAN, where
/// RTTs are below 1 ms, 10 ms is material by any measure.
pub const MATERIAL_MS_NO_RTT: f64 = 10.0;

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

/// One frame that proves a finding, and what it shows.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Evidence {
    /// Wireshark frame number (1-based).
    pub frame: u64,
    /// What this frame shows, in a person's words.
    pub what: String,
}

/// How sure the detector is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Heuristic with missing data.
    Low,
    /// Inferred, with one assumption.
    Medium,
    /// Directly observed.
    High,
}

impl Level {
    /// Stable name used in the outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Low => "low",
            Level::Medium => "medium",
            Level::High => "high",
        }
    }
}

/// Confidence and the reason for it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Confidence {
    /// Level.
    pub level: Level,
    /// Why that level.
    pub why: String,
}

/// One named cause of lost time.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Finding {
    /// Stable kebab-case id (e.g. `sender-window-cap`).
    pub id: &'static str,
    /// Connection index.
    pub connection: u64,
    /// One line a person reads.
    pub title: String,
    /// What it cost.
    pub cost: Cost,
    /// Frames that prove it.
    pub evidence: Vec<Evidence>,
    /// How sure.
    pub confidence: Confidence,
    /// Concrete fix: the directive, sysctl, socket option or code change.
    pub fix: String,
    /// Sources: RFC sections, kernel functions.
    pub references: Vec<&'static str>,
    /// When the time was lost (capture clock): the intervals the cost
    /// accrued in. The cost is at most their union once clipped to the
    /// time someone waited ([`super::run_all`] clips it to the connection
    /// up to the moment both sides were done); empty for a finding that
    /// costs nothing. Not part of the outputs.
    #[serde(skip)]
    pub span: Vec<(Timestamp, Timestamp)>,
}

impl Finding {
    /// Lower the confidence by one level, adding the reason.
    pub fn lower_confidence(&mut self, why: &str) {
        self.confidence.level = match self.confidence.level {
            Level::High => Level::Medium,
            _ => Level::Low,
        };
        self.confidence.why.push_str("; ");
        self.confidence.why.push_str(why);
    }
}

/// Shorthand for an [`Evidence`] entry.
pub fn ev(frame: u64, what: impl Into<String>) -> Evidence {
    Evidence {
        frame,
        what: what.into(),
    }
}

/// Shorthand for a [`Confidence`].
pub fn conf(level: Level, why: impl Into<String>) -> Confidence {
    Confidence {
        level,
        why: why.into(),
    }
}
