//! The finding contract (docs/design.md §5): one named cause with its cost,
//! evidence frames, confidence and fix.

use smallvec::SmallVec;

use crate::base::cost::Cost;
pub use crate::base::fact::{Args, Fact, Value};
use crate::base::time::Timestamp;

/// One frame that proves a finding, and what it shows.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Evidence {
    /// Wireshark frame number (1-based).
    pub frame: u64,
    /// What this frame shows: typed facts the report writes as one
    /// sentence each, joined by `; ` (usually one; several requests or
    /// streams often share a segment).
    pub facts: SmallVec<[Fact; 1]>,
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

/// Confidence and the reasons for it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Confidence {
    /// Level.
    pub level: Level,
    /// Why that level: the detector's reason, then one per lowering
    /// ([`Finding::lower_confidence`]); the report joins them with `; `.
    pub why: SmallVec<[Fact; 1]>,
}

/// One named cause of lost time.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Finding {
    /// Stable kebab-case id (e.g. `sender-window-cap`).
    pub id: &'static str,
    /// Connection index.
    pub(crate) connection: u64,
    /// What it cost.
    pub cost: Cost,
    /// Frames that prove it.
    pub evidence: Vec<Evidence>,
    /// How sure.
    pub confidence: Confidence,
    /// The finding's own typed parameters (the cap in bytes, the rounds it
    /// held, the side that waited…): what its title and fix are written from.
    pub facts: Args,
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
    /// Index of the connection it was found on.
    pub fn connection(&self) -> u64 {
        self.connection
    }

    /// Lower the confidence by one level, adding the reason.
    pub fn lower_confidence(&mut self, why: Fact) {
        self.confidence.level = match self.confidence.level {
            Level::High => Level::Medium,
            _ => Level::Low,
        };
        self.confidence.why.push(why);
    }
}

/// Shorthand for an [`Evidence`] entry.
pub(crate) fn ev(frame: u64, fact: Fact) -> Evidence {
    Evidence {
        frame,
        facts: smallvec::smallvec![fact],
    }
}

/// Evidence from `(frame, fact)` pairs: one entry per frame in frame
/// order, holding that frame's facts in the order given.
pub(crate) fn ev_by_frame(facts: impl IntoIterator<Item = (u64, Fact)>) -> Vec<Evidence> {
    let mut by: std::collections::BTreeMap<u64, SmallVec<[Fact; 1]>> = Default::default();
    for (frame, fact) in facts {
        by.entry(frame).or_default().push(fact);
    }
    by.into_iter()
        .map(|(frame, facts)| Evidence { frame, facts })
        .collect()
}

/// Shorthand for a [`Confidence`].
pub(crate) fn conf(level: Level, why: Fact) -> Confidence {
    Confidence {
        level,
        why: smallvec::smallvec![why],
    }
}
