//! Tests of the population section of the page (the parent module) and
//! of its over-time figure.

use super::over_time::*;
use super::*;
use rttlens_core::model::finding::{Args, Confidence, Fact, Level, Value};
use rttlens_core::model::population::{
    Interval, IntervalPhase, OverTime, PhaseStats, PopCost, PopEvidence,
};

fn report() -> PopulationReport {
    let intervals = (0..6)
        .map(|i| Interval {
            start_s: i as f64,
            new_connections: 100,
            new_per_s: 100.0,
            handshakes_in_progress: 3.0 + i as f64,
            phases: PHASES
                .iter()
                .map(|(id, _)| IntervalPhase {
                    phase: *id,
                    count: 100,
                    p50_ms: 2.0 + i as f64,
                    p99_ms: 40.0 * (1.0 + i as f64),
                })
                .collect(),
            rtt_p50_ms: Some(1.5),
            retransmission_rate: 0.01,
            syn_retransmitted: if i == 3 { 40 } else { 0 },
            ack_ignored: 0,
            options_dropped: 0,
            findings: if (2..4).contains(&i) {
                vec!["accept-queue-overflow"]
            } else {
                Vec::new()
            },
        })
        .collect();
    PopulationReport {
        connections: 600,
        phases: vec![PhaseStats {
            phase: PhaseId::Connect,
            ms: stats(2.5),
            rtts: Some(stats(1.0)),
        }],
        first_byte: Some(stats(9.0)),
        over_time: Some(OverTime {
            interval_ms: 1000,
            widened: false,
            intervals,
        }),
        population_findings: vec![PopFinding {
            id: "accept-queue-overflow",
            facts: Args::new()
                .with("syns_sent_again", Value::Count(40))
                .with("syns", Value::Count(600)),
            cost: PopCost {
                ms: 1000.0,
                connections: 40,
                per_connection_ms: 25.0,
                per_connection_rtts: Some(2.5),
            },
            evidence: vec![
                PopEvidence {
                    connection: Some(7),
                    frames: vec![10, 20],
                    interval: None,
                    fact: syn_sent_again(7, "<a>", 3),
                },
                PopEvidence {
                    connection: Some(8),
                    frames: vec![30],
                    interval: None,
                    fact: syn_sent_again(8, "a", 2),
                },
            ],
            confidence: Confidence {
                level: Level::High,
                why: std::iter::once(rttlens_core::model::finding::Fact::new(
                    "population.backlog-ack-dropped",
                ))
                .collect(),
            },
            references: vec!["RFC 9293"],
            intervals: Vec::new(),
        }],
        ..PopulationReport::default()
    }
}

/// Connection `i`'s SYN (frame 10) sent `n` times, unanswered.
fn syn_sent_again(i: u64, client: &'static str, n: u64) -> Fact {
    Fact::new("population.syn-sent-again")
        .with("connection", Value::Count(i))
        .with("client", client)
        .with("server", "b")
        .with("syn", Value::Frame(10))
        .with("transmissions", Value::Count(n))
        .with("answered", false)
}

fn summary(population: PopulationReport) -> CaptureSummary {
    let mut s = CaptureSummary::default();
    s.duration_s = 6.0;
    s.population = population;
    s
}

#[test]
fn the_graph_has_four_panels_and_names_the_shaded_intervals() {
    let f = over_time(&summary(report())).expect("a graph");
    let svg = f.svg.expect("drawn");
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains("log scale"));
    assert!(svg.contains("named by accept-queue-overflow"));
    assert!(
        f.caption.contains("accept-queue-overflow (2–4 s)"),
        "{}",
        f.caption
    );
    let mut short = report();
    if let Some(o) = short.over_time.as_mut() {
        o.intervals.truncate(2);
    }
    assert!(
        over_time(&summary(short)).is_none(),
        "two intervals: no graph"
    );
}

#[test]
fn evidence_links_only_connections_on_the_page() {
    let r = report();
    let e = &r.population_findings[0].evidence;
    let what = |k: usize| crate::words::fact(&e[k].fact);
    assert_eq!(
        evidence_text("x-", e[0].connection, &what(0), &[7]),
        "<a href=\"#x-conn-7\">connection 7</a> (&lt;a&gt; → b): SYN (frame 10) sent 3 times; no SYN-ACK"
    );
    assert_eq!(
        evidence_text("x-", e[1].connection, &what(1), &[7]),
        "connection 8 (a → b): SYN (frame 10) sent 2 times; no SYN-ACK"
    );
}

#[test]
fn decades_are_labelled() {
    assert_eq!(decade_tick(&-2.0), "0.01");
    assert_eq!(decade_tick(&0.0), "1");
    assert_eq!(decade_tick(&4.0), "10000");
    assert_eq!(decade_tick(&0.5), "");
    assert_eq!(value_tick(&0.015), "0.015");
    assert_eq!(value_tick(&1.5), "1.5");
    assert_eq!(value_tick(&2000.0), "2000");
    assert_eq!(value_tick(&0.0), "0");
    assert_eq!(value_tick(&0.05), "0.05");
    assert_eq!(value_tick(&0.15), "0.15");
}

/// One value as a whole distribution.
fn stats(v: f64) -> rttlens_core::model::population::Stats {
    use rttlens_core::model::population::Stats;
    Stats {
        count: 10,
        min: v,
        p50: v,
        p90: v,
        p99: v,
        p99_9: v,
        max: v,
        mean: v,
    }
}
