//! `rttlens lab --verify-fix`: each scenario with a fix run as it is and
//! fixed (`rttlens_lab::verify`), and one table of the findings' predicted
//! costs against the savings measured (docs/lab.md).

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use rttlens_lab::scenario::Scenario;
use rttlens_lab::verify::{self, Verification};

use super::{name_width, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::args::{Format, LabArgs};
use crate::output;

/// The share of the verified scenarios whose fix must hold for the run to
/// succeed (issue 43's bar: 90 %).
const MUST_HOLD: f64 = 0.9;

/// Verify the fixes of `chosen` (every scenario with a fix when the user
/// named none: `chosen` is then the whole catalogue).
pub(super) fn run(
    args: &LabArgs,
    chosen: Vec<&'static Scenario>,
    rtt: Duration,
) -> anyhow::Result<ExitCode> {
    let named = !args.scenarios.is_empty();
    if let Some(s) = chosen.iter().find(|s| named && s.fix.is_none()) {
        eprintln!(
            "rttlens lab: `{}` has no fix to verify (a control, an outcome, or a cause the lab cannot take away); with a fix: {}",
            s.name,
            rttlens_lab::catalogue()
                .iter()
                .filter(|s| s.fix.is_some())
                .map(|s| s.name)
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    if let Some(k) = &args.keep {
        std::fs::create_dir_all(k).with_context(|| format!("creating {}", k.display()))?;
    }
    let started = Instant::now();
    let repeat = args.repeat as usize;
    let mut results: Vec<(&Scenario, Result<Verification, String>)> = Vec::new();
    for s in chosen.into_iter().filter(|s| s.fix.is_some()) {
        eprintln!(
            "rttlens lab: {} ({repeat}× as it is, {repeat}× fixed) …",
            s.name
        );
        let r = verify::verify_fix(s, rtt, repeat, args.keep.as_deref()).map_err(|e| e.to_string());
        if let Err(e) = &r {
            eprintln!("rttlens lab: {}: {e}", s.name);
        }
        results.push((s, r));
    }
    let took = started.elapsed();
    let held = results
        .iter()
        .filter(|(_, r)| r.as_ref().is_ok_and(Verification::held))
        .count();
    let ok = !results.is_empty() && held as f64 >= MUST_HOLD * results.len() as f64;
    let mut out = output::open(&args.pictures)?;
    match args.format {
        Format::Text => table(&mut out, &results, rtt, repeat, took)?,
        Format::Json => json(&mut out, &results, rtt, repeat, took)?,
        Format::Html => {
            let mut text = Vec::new();
            table(&mut text, &results, rtt, repeat, took)?;
            let title = format!("rttlens lab --verify-fix at {} RTT", args.rtt);
            rttlens_report::html::page(&mut out, &title, &output::preface(&text), &[])?;
        }
    }
    out.flush()?;
    Ok(ExitCode::from(if ok { EXIT_OK } else { EXIT_FAILED }))
}

/// `+12.3 (+15 %)`, or `+12.3` for a prediction of zero.
fn error_text(r: &verify::Row) -> String {
    match r.error_share() {
        Some(s) => format!("{:+.1} ({:+.0} %)", r.error_ms(), s * 100.0),
        None => format!("{:+.1}", r.error_ms()),
    }
}

fn table(
    out: &mut impl Write,
    results: &[(&Scenario, Result<Verification, String>)],
    rtt: Duration,
    repeat: usize,
    took: Duration,
) -> std::io::Result<()> {
    let w = name_width(results.iter().map(|(s, _)| s.name));
    writeln!(
        out,
        "{:<w$} {:<28} {:<22} {:<20} {:>9} {:>9} {:>16} {:>9} {:>10}  held",
        "scenario",
        "finding",
        "fix",
        "phase",
        "predicted",
        "saving",
        "error",
        "tolerance",
        "connection"
    )?;
    for (s, r) in results {
        match r {
            Err(e) => writeln!(out, "{:<w$} error: {e}", s.name)?,
            Ok(v) => {
                if v.rows.is_empty() {
                    writeln!(
                        out,
                        "{:<w$} {:<28} {:<22} no figure: {}",
                        s.name,
                        v.fix.finding,
                        v.fix.change.name(),
                        v.problems.join("; ")
                    )?;
                    continue;
                }
                for (i, row) in v.rows.iter().enumerate() {
                    let name = if i == 0 { s.name } else { "" };
                    let finding = if row.population {
                        format!("{} (population)", row.finding)
                    } else {
                        row.finding.to_string()
                    };
                    writeln!(
                        out,
                        "{name:<w$} {finding:<28} {:<22} {:<20} {:>9.1} {:>9.1} {:>16} {:>9.1} {:>10.1}  {}",
                        v.fix.change.name(),
                        row.phase,
                        row.predicted_ms,
                        row.saving_ms,
                        error_text(row),
                        row.tolerance_ms,
                        row.connection_saving_ms,
                        if row.held() { "yes" } else { "NO" }
                    )?;
                    let phases: Vec<String> = row
                        .phases
                        .iter()
                        .map(|(n, ms)| format!("{n} {ms:+.1}"))
                        .collect();
                    let on = if row.population {
                        String::new()
                    } else {
                        format!(" on conn {:?}", row.connections)
                    };
                    writeln!(
                        out,
                        "{:<w$}   saving by phase{on}: {}",
                        "",
                        phases.join(", ")
                    )?;
                }
                for p in &v.problems {
                    writeln!(out, "{:<w$}   problem: {p}", "")?;
                }
            }
        }
    }
    let held = results
        .iter()
        .filter(|(_, r)| r.as_ref().is_ok_and(Verification::held))
        .count();
    writeln!(
        out,
        "{held}/{} fixes held (saving within ±{:.0} % or ±{} RTT of the prediction; medians of {repeat} runs each) at RTT {} ms, in {:.1} s",
        results.len(),
        verify::TOLERANCE_SHARE * 100.0,
        verify::TOLERANCE_RTTS,
        rtt.as_millis(),
        took.as_secs_f64()
    )
}

fn json(
    out: &mut impl Write,
    results: &[(&Scenario, Result<Verification, String>)],
    rtt: Duration,
    repeat: usize,
    took: Duration,
) -> anyhow::Result<()> {
    let items: Vec<serde_json::Value> = results
        .iter()
        .map(|(s, r)| match r {
            Err(e) => serde_json::json!({ "scenario": s.name, "error": e, "held": false }),
            Ok(v) => serde_json::json!({
                "scenario": v.scenario,
                "finding": v.fix.finding,
                "fix": v.fix.change.name(),
                "held": v.held(),
                "runs": { "as_is": v.runs.0, "fixed": v.runs.1 },
                "rows": v.rows.iter().map(|row| serde_json::json!({
                    "finding": row.finding,
                    "population": row.population,
                    "connections": row.connections,
                    "phase": row.phase,
                    "predicted_ms": row.predicted_ms,
                    "saving_ms": row.saving_ms,
                    "error_ms": (row.error_ms() * 10.0).round() / 10.0,
                    "error_share": row.error_share().map(|s| (s * 1000.0).round() / 1000.0),
                    "tolerance_ms": row.tolerance_ms,
                    "held": row.held(),
                    "connection_saving_ms": row.connection_saving_ms,
                    "phases": row.phases.iter().map(|(n, ms)| serde_json::json!({
                        "phase": n, "saving_ms": ms,
                    })).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
                "problems": v.problems,
            }),
        })
        .collect();
    let held = results
        .iter()
        .filter(|(_, r)| r.as_ref().is_ok_and(Verification::held))
        .count();
    let doc = serde_json::json!({
        "rtt_ms": rtt.as_secs_f64() * 1000.0,
        "repeat": repeat,
        "tolerance": { "share": verify::TOLERANCE_SHARE, "rtts": verify::TOLERANCE_RTTS },
        "held": held,
        "verified": results.len(),
        "elapsed_ms": took.as_millis() as u64,
        "scenarios": items,
    });
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)?;
    Ok(())
}
