//! What the population view reports (JSON: fields of `capture`,
//! docs/json.md "population view"): the distributions, the capture over
//! time, and the population findings with their cost and evidence.

use super::hist::Stats;
use super::sample::PhaseId;
use super::tail::Tail;
use crate::base::fact::{Args, Fact};
use crate::detect::finding::Confidence;

/// What the crowd of connections shows (JSON: fields of `capture`).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PopulationReport {
    /// Connections folded in.
    #[serde(skip)]
    pub connections: u64,
    /// Each phase's distribution over the capture's connections.
    pub phases: Vec<PhaseStats>,
    /// The same per server endpoint (most connections first; absent with
    /// one server).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases_by_server: Vec<Group>,
    /// The same per TLS server name (absent with one name or none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases_by_sni: Vec<Group>,
    /// First SYN → first response byte, in the client's clock (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_byte: Option<Stats>,
    /// Each `Server-Timing` metric's `dur` over the capture's responses,
    /// by name (most samples first; absent without the field).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server_timing: Vec<MetricStats>,
    /// The slowest tenth against the faster half.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail: Option<Tail>,
    /// The capture cut into intervals (absent with fewer than
    /// [`MIN_CONNECTIONS`](super::MIN_CONNECTIONS) connections).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub over_time: Option<OverTime>,
    /// What only the population proves, costliest first.
    /// Not serialized here: the JSON renderer (`rttlens_report::json`)
    /// writes them with their sentences.
    #[serde(skip)]
    pub population_findings: Vec<PopFinding>,
}

/// One `Server-Timing` metric's distribution (ms).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MetricStats {
    /// The metric's name.
    pub metric: String,
    /// Its `dur` over the responses that reported it.
    pub ms: Stats,
}

/// One phase's distribution.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PhaseStats {
    /// Which phase.
    pub phase: PhaseId,
    /// In ms.
    pub ms: Stats,
    /// In round trips of each connection's own RTT (absent when no
    /// connection's RTT is known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtts: Option<Stats>,
}

/// The distributions of one server endpoint or server name.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Group {
    /// `addr:port`, or the server name.
    pub key: String,
    /// Connections.
    pub connections: u64,
    /// Each phase.
    pub phases: Vec<PhaseStats>,
}

/// The capture over time.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OverTime {
    /// Interval width (ms).
    pub interval_ms: u64,
    /// `--interval` asked for more than 2,000 intervals: the width was
    /// doubled until it fit.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub widened: bool,
    /// From the capture's first packet on.
    pub intervals: Vec<Interval>,
}

/// One interval: the connections that began in it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Interval {
    /// Start, seconds after the capture's first packet.
    pub start_s: f64,
    /// Connections whose first packet is in the interval.
    pub new_connections: u64,
    /// The same per second.
    pub new_per_s: f64,
    /// Handshakes (first SYN → handshake done at the client) in progress,
    /// on average over the interval.
    pub handshakes_in_progress: f64,
    /// p50 and p99 of connect, TLS, server handshake processing and TTFB
    /// for the connections that began in the interval.
    pub phases: Vec<IntervalPhase>,
    /// Median of their baseline RTTs (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_p50_ms: Option<f64>,
    /// Retransmitted data segments over data segments sent.
    pub retransmission_rate: f64,
    /// Connections whose SYN was sent more than once.
    pub syn_retransmitted: u64,
    /// SYN-ACKs resent after the client's ACK.
    pub ack_ignored: u64,
    /// SYN-ACKs that dropped the window scale and SACK their SYN offered.
    pub options_dropped: u64,
    /// Population findings whose evidence names the interval.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<&'static str>,
}

/// A phase's median and 99th percentile in one interval.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IntervalPhase {
    /// Which phase.
    pub phase: PhaseId,
    /// Samples.
    pub count: u64,
    /// Median (ms).
    pub p50_ms: f64,
    /// 99th percentile (ms).
    pub p99_ms: f64,
}

/// A cause only the population proves (docs/design.md §5, for a crowd).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PopFinding {
    /// Stable kebab-case id.
    pub id: &'static str,
    /// The finding's own typed parameters (the SYNs sent again, the
    /// intervals, the RTTs…): what its title and fix are written from
    /// (`rttlens_report::words`).
    pub facts: Args,
    /// What it cost.
    pub cost: PopCost,
    /// The connections and intervals that prove it.
    pub evidence: Vec<PopEvidence>,
    /// How sure.
    pub confidence: Confidence,
    /// Sources.
    pub references: Vec<&'static str>,
    /// Every interval that shows the cause (indexes into the intervals),
    /// beyond those its evidence names: the over-time view marks them.
    #[serde(skip)]
    pub intervals: Vec<usize>,
}

/// A population finding's cost: time the affected connections waited
/// beyond the typical one, summed.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PopCost {
    /// Total extra time (ms), over all affected connections.
    pub ms: f64,
    /// Connections affected.
    pub connections: u64,
    /// Mean extra time per affected connection (ms).
    pub per_connection_ms: f64,
    /// The same in round trips of the capture's median baseline RTT
    /// (absent when no connection's RTT is known).
    pub per_connection_rtts: Option<f64>,
}

impl PopCost {
    pub(crate) fn of(ms: f64, connections: u64) -> PopCost {
        let r = crate::base::cost::round3;
        PopCost {
            ms: r(ms),
            connections,
            per_connection_ms: if connections > 0 {
                r(ms / connections as f64)
            } else {
                0.0
            },
            per_connection_rtts: None,
        }
    }
}

/// One proof of a population finding: a connection (with its frames) or
/// an interval.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PopEvidence {
    /// Connection index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection: Option<u64>,
    /// Wireshark frame numbers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<u64>,
    /// Interval (s after the capture's first packet, start and end).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<[f64; 2]>,
    /// What it shows (kind `population.*`), as data: the report writes it.
    pub fact: Fact,
}
