//! What a scenario's analysis is checked with: its expectations and
//! forbidden findings looked up in the connections of a capture, and the
//! capture analysed as the lab reads it (with the key log its clients
//! wrote beside it).

use std::path::Path;

use rttlens_core::capture::CaptureReader;
use rttlens_core::model::finding::Finding;
use rttlens_core::model::population::PopulationReport;
use rttlens_core::model::{ConnReport, Connection, QuicReport};
use rttlens_core::pipeline;
use rttlens_lab_net::LabError;

use super::{is_quic, lookup, parse_expect};

/// One expectation's result.
#[derive(Debug, Clone)]
pub struct ExpectationResult {
    /// The expectation as written (`nagle-stall|nagle-delayed-ack`, `1:tfo-accepted`).
    pub expect: &'static str,
    /// Whether it held.
    pub found: bool,
    /// The finding id that matched.
    pub id: Option<&'static str>,
    /// Its title (empty when not found): what the outcome was, e.g.
    /// "0-RTT rejected: …".
    pub title: String,
    /// The matching finding's cost in ms (0 when not found).
    pub cost_ms: f64,
    /// The matching finding's cost in round trips (`None` when not found
    /// or when the connection's RTT is unknown).
    pub cost_rtts: Option<f64>,
    /// The frames its evidence cites (1-based, in the analysed capture;
    /// empty when not found).
    pub evidence: Vec<u64>,
}

/// Written before a population finding's id in an expectation or a
/// forbidden list: `population:server-handshake-contention` is about the
/// capture's population view (docs/design.md §4 "Populations"), not about
/// one connection.
pub(crate) const POPULATION: &str = "population:";

/// Each expectation of `expect` looked up in `conns` and `quic`, or with
/// [`POPULATION`] in `pop`'s findings.
pub(super) fn expectations(
    conns: &[ConnReport],
    quic: &[QuicReport],
    pop: &PopulationReport,
    expect: &[&'static str],
) -> Vec<ExpectationResult> {
    expect
        .iter()
        .map(|&e| {
            let found = match e.strip_prefix(POPULATION) {
                Some(ids) => {
                    let ids: Vec<&str> = ids.split('|').collect();
                    pop.population_findings
                        .iter()
                        .find(|f| ids.contains(&f.id))
                        .map(|f| ExpectationResult {
                            expect: e,
                            found: true,
                            id: Some(f.id),
                            title: rttlens_report::words::pop_title(f).into_owned(),
                            cost_ms: f.cost.ms,
                            cost_rtts: f.cost.per_connection_rtts,
                            evidence: f.evidence.iter().flat_map(|e| e.frames.clone()).collect(),
                        })
                }
                None => lookup(conns, quic, e).map(|(_, f)| ExpectationResult {
                    expect: e,
                    found: true,
                    id: Some(f.id),
                    title: rttlens_report::words::title(f).into_owned(),
                    cost_ms: f.cost.ms,
                    cost_rtts: f.cost.rtts,
                    evidence: f.evidence.iter().map(|e| e.frame).collect(),
                }),
            };
            found.unwrap_or(ExpectationResult {
                expect: e,
                found: false,
                id: None,
                title: String::new(),
                cost_ms: 0.0,
                cost_rtts: None,
                evidence: Vec::new(),
            })
        })
        .collect()
}

/// The forbidden findings that appear in `conns`, as `N:id` (in `quic`
/// for QUIC's ids, as `quic N:id`; `quic-*` matches any of them).
pub(super) fn forbidden(
    conns: &[ConnReport],
    quic: &[QuicReport],
    pop: &PopulationReport,
    forbid: &[&str],
) -> Vec<String> {
    let mut seen = Vec::new();
    for &e in forbid {
        if let Some(ids) = e.strip_prefix(POPULATION) {
            let ids: Vec<&str> = ids.split('|').collect();
            for f in pop
                .population_findings
                .iter()
                .filter(|f| ids.contains(&f.id))
            {
                seen.push(format!("{POPULATION}{}", f.id));
            }
            continue;
        }
        let (conn, ids) = parse_expect(e);
        let (lists, prefix): (Vec<&[Finding]>, &str) = if is_quic(e) {
            (quic.iter().map(|q| &q.findings[..]).collect(), "quic ")
        } else {
            (conns.iter().map(|c| &c.findings[..]).collect(), "")
        };
        for (i, fs) in lists.into_iter().enumerate() {
            if conn.is_some_and(|n| n != i) {
                continue;
            }
            for f in fs {
                if ids.iter().any(|&id| id == f.id || id == "quic-*") {
                    seen.push(format!("{prefix}{i}:{}", f.id));
                }
            }
        }
    }
    seen.dedup();
    seen
}

/// The connections of the capture at `path`, in capture order.
pub(super) fn analyze(path: &Path) -> Result<Vec<ConnReport>, LabError> {
    analyze_summary(path).map(|(c, _, _)| c)
}

/// The connections and the summary of the capture at `path`, read with
/// the key log beside it.
pub(super) fn analyze_summary(path: &Path) -> Result<Analysis, LabError> {
    analyze_with(path, true)
}

/// The same without the key log ([`super::Variant::Keyless`]).
pub(super) fn analyze_keyless(path: &Path) -> Result<Analysis, LabError> {
    analyze_with(path, false)
}

/// TCP connections, QUIC connections (each in capture order) and the
/// capture's summary.
type Analysis = (Vec<ConnReport>, Vec<QuicReport>, pipeline::CaptureSummary);

fn analyze_with(path: &Path, keys: bool) -> Result<Analysis, LabError> {
    let mut reader = CaptureReader::open(path)
        .map_err(|e| LabError::Analysis(format!("{}: {e}", path.display())))?;
    // the keys the scenario's TLS clients wrote beside the capture
    let keylog = path.with_file_name(super::ctx::KEYLOG_FILE);
    if keys {
        if let Ok(text) = std::fs::read(&keylog) {
            reader.key_store().add(&text);
        }
    }
    let mut conns = Vec::new();
    let mut quic = Vec::new();
    let summary = pipeline::run(
        &mut reader,
        &mut |c| match c {
            Connection::Tcp(c) => conns.push(*c),
            Connection::Quic(q) => quic.push(*q),
        },
        &mut |_| {},
    )
    .map_err(|e| LabError::Analysis(format!("{}: {e}", path.display())))?;
    conns.sort_by_key(|c| c.index);
    quic.sort_by_key(|q| q.index);
    Ok((conns, quic, summary))
}
