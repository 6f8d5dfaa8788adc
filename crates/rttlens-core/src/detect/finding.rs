//! The finding contract (docs/design.md §5): one named cause with its cost,
//! evidence frames, confidence and fix.

use crate::base::cost::Cost;
use crate::base::text;
use crate::base::time::Timestamp;

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
    pub(crate) connection: u64,
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
    pub(crate) span: Vec<(Timestamp, Timestamp)>,
}

impl Finding {
    /// Lower the confidence by one level, adding the reason.
    pub fn lower_confidence(&mut self, why: &str) {
        self.confidence.level = match self.confidence.level {
            Level::High => Level::Medium,
            _ => Level::Low,
        };
        if text::wanted() {
            self.confidence.why.push_str("; ");
            self.confidence.why.push_str(why);
        }
    }
}

/// Shorthand for an [`Evidence`] entry.
pub(crate) fn ev(frame: u64, what: impl Into<String>) -> Evidence {
    Evidence {
        frame,
        what: text::owned(what),
    }
}

/// Evidence from `(frame, what)` lines, one per frame in frame order, the
/// lines of a frame joined by `; ` (several requests or streams often
/// share a segment).
pub(crate) fn ev_by_frame(lines: impl IntoIterator<Item = (u64, String)>) -> Vec<Evidence> {
    let mut by: std::collections::BTreeMap<u64, Vec<String>> = Default::default();
    for (frame, what) in lines {
        by.entry(frame).or_default().push(what);
    }
    by.into_iter()
        .map(|(frame, what)| ev(frame, what.join("; ")))
        .collect()
}

/// Shorthand for a [`Confidence`].
pub(crate) fn conf(level: Level, why: impl Into<String>) -> Confidence {
    Confidence {
        level,
        why: text::owned(why),
    }
}
