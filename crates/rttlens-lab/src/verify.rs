//! The fix, verified (`rttlens lab --verify-fix`): a scenario with a
//! [`Fix`] runs as it is and with the fix applied by the lab
//! ([`crate::scenario::run_analysed`]), a few times each, alternating; the
//! finding's predicted cost is then set against the time the fix won back
//! on the ladder.
//!
//! - **Which findings**: every finding of the expectation's ids
//!   (`nagle-stall|nagle-delayed-ack`: both) on every connection of the
//!   as-is capture bearing one (the expectation's `N:` narrows it to one
//!   connection), set against the connections at the same places in the
//!   fixed capture; predicted and measured are sums over them (a
//!   reconnect burst's twelve waits, a stall in the handshake and one in
//!   the answer).
//! - **Where**: the cost lands in one phase of the ladder: the narrowest
//!   phase of the first such connection whose frames hold all of its
//!   findings' evidence frames (a Nagle stall in the handshake is `tls`,
//!   one in the answer `request`; a large first record
//!   `first-decrypted-byte`); when no phase holds them all (a
//!   retransmission after the last new byte, stalls in two phases), the
//!   whole connection.
//! - **Measured saving**: the median over the as-is runs of that phase's
//!   ms (summed over the connections) less the median over the fixed runs;
//!   the same for every phase and for the whole connection (first to last
//!   packet). Medians, because lab timing moves with the machine's load.
//! - **Held**: the saving within ±20 % of the predicted cost, or ±0.25 RTT
//!   of the link, whichever is larger ([`TOLERANCE_SHARE`],
//!   [`TOLERANCE_RTTS`]).
//! - **A population finding** (docs/design.md §4 "Populations") on the
//!   as-is capture is verified the same way on the population's
//!   distribution of its phase: the saving is the drop of the phase's mean
//!   times the connections (what its cost sums), with the drops of p50,
//!   p90 and p99 beside it.

use std::path::Path;
use std::time::Duration;

use rttlens_core::model::finding::Finding;
use rttlens_core::model::population::{PhaseId, PopulationReport};
use rttlens_core::model::Phase;
use rttlens_lab_net::LabError;

use crate::scenario::{self, is_quic, parse_expect, Analysed, Fix, Scenario};

/// A prediction holds within this share of itself…
pub const TOLERANCE_SHARE: f64 = 0.20;
/// …or within this many round trips of the link, whichever is larger.
pub const TOLERANCE_RTTS: f64 = 0.25;

/// What `--verify-fix` found for one scenario.
#[derive(Debug, Clone)]
pub struct Verification {
    /// The scenario.
    pub scenario: &'static str,
    /// Its fix.
    pub fix: Fix,
    /// The link's RTT.
    pub rtt: Duration,
    /// Runs of each variant that completed (as it is, fixed).
    pub runs: (usize, usize),
    /// One row per finding verified: the scenario's connection finding
    /// first, then any population finding of the as-is capture.
    pub rows: Vec<Row>,
    /// Runs that failed, in words (the scenario could not run, the finding
    /// did not appear, the fixed capture lacks the connection).
    pub problems: Vec<String>,
}

/// One finding's prediction against the saving its fix measured.
#[derive(Debug, Clone)]
pub struct Row {
    /// The finding's id.
    pub finding: &'static str,
    /// A population finding (of the capture, not of one connection).
    pub population: bool,
    /// The connections it was found on (as-is capture order; empty for a
    /// population finding).
    pub connections: Vec<usize>,
    /// Where the saving is measured: a ladder phase (`request`), a
    /// population phase (`server-handshake`), or `connection` (the whole
    /// connection).
    pub phase: &'static str,
    /// The predicted cost (ms, median over the as-is runs; summed over
    /// the connections).
    pub predicted_ms: f64,
    /// The measured saving where the cost lands (ms).
    pub saving_ms: f64,
    /// The measured saving of the whole connection (ms; for a population
    /// finding, of the first byte's mean times the connections).
    pub connection_saving_ms: f64,
    /// The saving of each phase of the ladder (or, for a population
    /// finding, of its phase's `p50`, `p90` and `p99`), in ms.
    pub phases: Vec<(&'static str, f64)>,
    /// The tolerance (ms): the larger of [`TOLERANCE_SHARE`] of the
    /// prediction and [`TOLERANCE_RTTS`] of the link's RTT.
    pub tolerance_ms: f64,
}

impl Row {
    /// Measured saving less predicted cost (ms): negative when the fix won
    /// back less than promised.
    pub fn error_ms(&self) -> f64 {
        self.saving_ms - self.predicted_ms
    }

    /// The error as a share of the prediction (`None` for a prediction of
    /// zero).
    pub fn error_share(&self) -> Option<f64> {
        (self.predicted_ms > 0.0).then(|| self.error_ms() / self.predicted_ms)
    }

    /// The saving is within the tolerance of the prediction.
    pub fn held(&self) -> bool {
        self.error_ms().abs() <= self.tolerance_ms
    }
}

impl Verification {
    /// Every row held and every run completed with its finding.
    pub fn held(&self) -> bool {
        !self.rows.is_empty() && self.rows.iter().all(Row::held) && self.problems.is_empty()
    }
}

/// The connection finding's figures in one as-is run and its fixed twin.
struct Pair {
    /// Σ cost over the connections.
    predicted: f64,
    /// The finding's id (of the expectation's alternatives, the one found).
    id: &'static str,
    /// The phase where the cost lands (or `connection`).
    phase: &'static str,
    /// Σ of the whole connections' ms, as-is and fixed.
    whole: (f64, f64),
    /// Σ of each phase's ms, as-is and fixed.
    phases: Vec<(&'static str, f64, f64)>,
    /// The connections.
    conns: Vec<usize>,
}

/// Run `s` `repeat` times as it is and `repeat` times with its fix
/// (alternating, so both see the same machine), and set the finding's
/// predicted cost against the measured saving. With `keep`, the last
/// runs' files stay in `keep/NAME/` (as-is) and `keep/NAME-fixed/`.
///
/// # Errors
/// [`LabError::Analysis`] when the scenario has no fix. A run that fails
/// is not an error: it is counted and said in
/// [`Verification::problems`].
pub fn verify_fix(
    s: &Scenario,
    rtt: Duration,
    repeat: usize,
    keep: Option<&Path>,
) -> Result<Verification, LabError> {
    let fix = s
        .fix
        .ok_or_else(|| LabError::Analysis(format!("{}: the scenario has no fix", s.name)))?;
    let mut problems = Vec::new();
    let mut pairs: Vec<Pair> = Vec::new();
    let mut pops: Vec<(Analysed, Analysed)> = Vec::new();
    let mut runs = (0, 0);
    for r in 0..repeat.max(1) {
        let asis = scenario::run_analysed(s, rtt, None, keep);
        let fixed_keep = keep.map(|k| k.join(format!("{}-fixed", s.name)));
        let fixed = scenario::run_analysed(s, rtt, Some(fix.change), fixed_keep.as_deref());
        if fixed_keep.is_some() {
            // run_analysed keeps in DIR/NAME: move it up a level
            if let Some(k) = &fixed_keep {
                let inner = k.join(s.name);
                let tmp = k.with_extension("tmp");
                let _ = std::fs::rename(&inner, &tmp);
                let _ = std::fs::remove_dir_all(k);
                let _ = std::fs::rename(&tmp, k);
            }
        }
        let (asis, fixed) = match (asis, fixed) {
            (Ok((_, a)), Ok((_, f))) => {
                runs.0 += 1;
                runs.1 += 1;
                (a, f)
            }
            (a, f) => {
                if let Err(e) = &a {
                    problems.push(format!("run {r} as it is: {e}"));
                } else {
                    runs.0 += 1;
                }
                if let Err(e) = &f {
                    problems.push(format!("run {r} fixed: {e}"));
                } else {
                    runs.1 += 1;
                }
                continue;
            }
        };
        match pair(&asis, &fixed, fix.finding) {
            Ok(p) => pairs.push(p),
            Err(e) => problems.push(format!("run {r}: {e}")),
        }
        pops.push((asis, fixed));
    }
    let mut rows = Vec::new();
    if let Some(first) = pairs.first() {
        let phase = first.phase;
        let conns = first.conns.clone();
        let med = |f: &dyn Fn(&Pair) -> f64| median(pairs.iter().map(f).collect());
        let predicted_ms = med(&|p| p.predicted);
        // the phase of the first run: a run whose evidence fell elsewhere
        // is measured at that phase all the same
        let at = |p: &Pair, fixed: bool| {
            p.phases
                .iter()
                .find(|(n, _, _)| *n == phase)
                .map(|&(_, a, f)| if fixed { f } else { a })
                .unwrap_or(if fixed { p.whole.1 } else { p.whole.0 })
        };
        let saving_ms = if phase == CONNECTION {
            med(&|p| p.whole.0) - med(&|p| p.whole.1)
        } else {
            med(&|p| at(p, false)) - med(&|p| at(p, true))
        };
        let phases = first
            .phases
            .iter()
            .map(|&(name, _, _)| {
                let get = |p: &Pair, fixed: bool| {
                    p.phases
                        .iter()
                        .find(|(n, _, _)| *n == name)
                        .map_or(0.0, |&(_, a, f)| if fixed { f } else { a })
                };
                (
                    name,
                    round1(med(&|p| get(p, false)) - med(&|p| get(p, true))),
                )
            })
            .collect();
        rows.push(Row {
            finding: first.id,
            population: false,
            connections: conns,
            phase,
            predicted_ms: round1(predicted_ms),
            saving_ms: round1(saving_ms),
            connection_saving_ms: round1(med(&|p| p.whole.0) - med(&|p| p.whole.1)),
            phases,
            tolerance_ms: tolerance(predicted_ms, rtt),
        });
    }
    rows.extend(population_rows(&pops, rtt));
    Ok(Verification {
        scenario: s.name,
        fix,
        rtt,
        runs,
        rows,
        problems,
    })
}

/// The name [`Row::phase`] gives the whole connection.
pub const CONNECTION: &str = "connection";

fn tolerance(predicted_ms: f64, rtt: Duration) -> f64 {
    round1((TOLERANCE_SHARE * predicted_ms.abs()).max(TOLERANCE_RTTS * rtt.as_secs_f64() * 1000.0))
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A connection's ladder, duration and findings (a QUIC one's for a QUIC
/// expectation).
fn view(a: &Analysed, quic: bool, i: usize) -> Option<(&[Phase], f64, &[Finding])> {
    if quic {
        a.quic
            .get(i)
            .map(|q| (&q.ladder[..], q.duration_ms, &q.findings[..]))
    } else {
        a.conns
            .get(i)
            .map(|c| (&c.ladder[..], c.duration_ms, &c.findings[..]))
    }
}

/// The finding `e` in one as-is run against its fixed twin.
fn pair(asis: &Analysed, fixed: &Analysed, e: &'static str) -> Result<Pair, String> {
    let quic = is_quic(e);
    let (only, ids) = parse_expect(e);
    let n = if quic {
        asis.quic.len()
    } else {
        asis.conns.len()
    };
    // every finding of the expectation's ids: the fix takes them all away
    // (a Nagle stall in the handshake and a delayed-ACK one in the answer)
    let mut conns = Vec::new();
    let mut found: Vec<Vec<&Finding>> = Vec::new();
    for i in (0..n).filter(|i| only.is_none_or(|o| o == *i)) {
        let Some((_, _, fs)) = view(asis, quic, i) else {
            continue;
        };
        let on: Vec<&Finding> = fs.iter().filter(|f| ids.contains(&f.id)).collect();
        if !on.is_empty() {
            conns.push(i);
            found.push(on);
        }
    }
    let (Some(&first_conn), Some(first)) = (conns.first(), found.first()) else {
        return Err(format!("no {e} in the capture as it is"));
    };
    let (ladder, _, _) = view(asis, quic, first_conn).ok_or("no connection")?;
    let phase = phase_of(ladder, first);
    let id = first[0].id;
    let mut whole = (0.0, 0.0);
    let mut phases: Vec<(&'static str, f64, f64)> =
        ladder.iter().map(|p| (p.name, 0.0, 0.0)).collect();
    for &i in &conns {
        let (la, da, _) = view(asis, quic, i).ok_or("no connection")?;
        let (lf, df, _) = view(fixed, quic, i)
            .ok_or_else(|| format!("the fixed capture has no connection {i}"))?;
        let ms = |l: &[Phase], name: &str| l.iter().find(|p| p.name == name).map_or(0.0, |p| p.ms);
        whole.0 += da;
        whole.1 += df;
        for (name, a, f) in &mut phases {
            *a += ms(la, name);
            *f += ms(lf, name);
        }
    }
    Ok(Pair {
        predicted: found.iter().flatten().map(|f| f.cost.ms).sum(),
        id,
        phase,
        whole,
        phases,
        conns,
    })
}

/// The narrowest phase of `ladder` whose frames hold every evidence frame
/// of `fs`; [`CONNECTION`] when none does.
fn phase_of(ladder: &[Phase], fs: &[&Finding]) -> &'static str {
    let frames = || fs.iter().flat_map(|f| f.evidence.iter().map(|e| e.frame));
    let (Some(lo), Some(hi)) = (frames().min(), frames().max()) else {
        return CONNECTION;
    };
    ladder
        .iter()
        .filter(|p| p.start_frame <= lo && hi <= p.end_frame)
        .min_by(|a, b| {
            (a.end_frame - a.start_frame)
                .cmp(&(b.end_frame - b.start_frame))
                .then(a.ms.total_cmp(&b.ms))
        })
        .map_or(CONNECTION, |p| p.name)
}

/// The population phase a population finding's cost is counted in.
fn population_phase(id: &str) -> Option<PhaseId> {
    match id {
        "server-handshake-contention" => Some(PhaseId::ServerHandshake),
        "accept-queue-overflow" | "syn-flood-cookies" => Some(PhaseId::Connect),
        "client-side-stall" => Some(PhaseId::ClientDelay),
        "path-degradation" => Some(PhaseId::Ttfb),
        _ => None,
    }
}

fn pop(a: &Analysed) -> &PopulationReport {
    &a.summary.population
}

/// One row per population finding of the first as-is capture.
fn population_rows(pops: &[(Analysed, Analysed)], rtt: Duration) -> Vec<Row> {
    let Some((first, _)) = pops.first() else {
        return Vec::new();
    };
    let mut rows = Vec::new();
    for pf in &pop(first).population_findings {
        let Some(phase) = population_phase(pf.id) else {
            continue;
        };
        let stat = |a: &Analysed, pick: &dyn Fn(&rttlens_core::model::population::Stats) -> f64| {
            pop(a)
                .phases
                .iter()
                .find(|p| p.phase == phase)
                .map_or(0.0, |p| pick(&p.ms))
        };
        let drop = |pick: &dyn Fn(&rttlens_core::model::population::Stats) -> f64| {
            median(pops.iter().map(|(a, _)| stat(a, pick)).collect())
                - median(pops.iter().map(|(_, f)| stat(f, pick)).collect())
        };
        let total = |s: &rttlens_core::model::population::Stats| s.mean * s.count as f64;
        let predicted = median(
            pops.iter()
                .filter_map(|(a, _)| {
                    pop(a)
                        .population_findings
                        .iter()
                        .find(|g| g.id == pf.id)
                        .map(|g| g.cost.ms)
                })
                .collect(),
        );
        let first_byte = |a: &Analysed| {
            pop(a)
                .first_byte
                .as_ref()
                .map_or(0.0, |s| s.mean * s.count as f64)
        };
        let whole = median(pops.iter().map(|(a, _)| first_byte(a)).collect())
            - median(pops.iter().map(|(_, f)| first_byte(f)).collect());
        rows.push(Row {
            finding: pf.id,
            population: true,
            connections: Vec::new(),
            phase: phase.as_str(),
            predicted_ms: round1(predicted),
            saving_ms: round1(drop(&total)),
            connection_saving_ms: round1(whole),
            phases: vec![
                ("p50", round1(drop(&|s| s.p50))),
                ("p90", round1(drop(&|s| s.p90))),
                ("p99", round1(drop(&|s| s.p99))),
            ],
            tolerance_ms: tolerance(predicted, rtt),
        });
    }
    rows
}
