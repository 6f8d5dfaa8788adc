//! The population view as the record carries it: the phases' distributions
//! (capture-wide, per server, per SNI), the tail's attribution, the phases
//! over time and the findings about many connections at once
//! (docs/json.md "Population").
//!
//! Defined in `population`, where the samples are gathered (an earlier
//! layer than `model`), and read from here by every renderer and consumer.

pub use crate::population::{
    Group, Interval, IntervalPhase, MetricStats, OverTime, PhaseId, PhaseStats, PopCost,
    PopEvidence, PopFinding, PopulationReport, Stats, Tail, MIN_CONNECTIONS,
};
