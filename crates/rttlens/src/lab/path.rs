//! `rttlens lab`'s path scenarios (rttlens-lab's `path`): listed, run
//! after the capture scenarios, and shown as rows of the same table (one
//! per expectation, what was seen beside it) and items of the same JSON.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use rttlens_lab::path::{PathOutcome, PathScenario, PATH_SCENARIOS};

/// A path scenario and its run (or why it could not run).
pub(super) type PathResult = (&'static PathScenario, Result<PathOutcome, String>);

/// `--list`'s lines for the path scenarios.
pub(super) fn list(out: &mut impl Write, w: usize) -> std::io::Result<()> {
    for s in PATH_SCENARIOS {
        writeln!(out, "{:<w$} {}", s.name, s.about)?;
        let what: Vec<String> = s.expect.iter().map(|e| format!("expect {e}")).collect();
        writeln!(out, "{:<w$} {}", "", what.join("; "))?;
    }
    Ok(())
}

/// Run each of `chosen` with the link's RTT `rtt`, keeping the probe's
/// captures under `keep` (`--keep DIR`).
pub(super) fn run(
    chosen: &[&'static PathScenario],
    rtt: Duration,
    keep: Option<&Path>,
) -> Vec<PathResult> {
    chosen
        .iter()
        .map(|s| {
            eprintln!("rttlens lab: {} …", s.name);
            let r = rttlens_lab::path::run_path(s, rtt, keep).map_err(|e| e.to_string());
            if let Err(e) = &r {
                eprintln!("rttlens lab: {}: {e}", s.name);
            }
            (*s, r)
        })
        .collect()
}

/// The table's rows of `results` (the capture scenarios' columns:
/// expectation, found, and what was seen in the cost column's place).
pub(super) fn table(out: &mut impl Write, results: &[PathResult], w: usize) -> std::io::Result<()> {
    for (s, r) in results {
        match r {
            Err(e) => writeln!(out, "{:<w$} error: {e}", s.name)?,
            Ok(o) => {
                for (i, c) in o.checks.iter().enumerate() {
                    let name = if i == 0 { s.name } else { "" };
                    let found = if c.ok { "yes" } else { "NO" };
                    writeln!(out, "{name:<w$} {:<50} {found:<5} {:>18}", c.expect, c.seen)?;
                }
            }
        }
    }
    Ok(())
}

/// The JSON items of `results`.
pub(super) fn json(results: &[PathResult]) -> Vec<serde_json::Value> {
    results
        .iter()
        .map(|(s, r)| match r {
            Err(e) => serde_json::json!({ "scenario": s.name, "error": e, "passed": false }),
            Ok(o) => serde_json::json!({
                "scenario": o.scenario,
                "passed": o.passed(),
                "checks": o.checks.iter().map(|c| serde_json::json!({
                    "expect": c.expect,
                    "held": c.ok,
                    "seen": c.seen,
                })).collect::<Vec<_>>(),
                "path": o.path,
                "elapsed_ms": o.elapsed.as_millis() as u64,
            }),
        })
        .collect()
}
