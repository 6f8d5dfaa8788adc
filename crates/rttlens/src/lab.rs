//! `rttlens lab`: list and run the lab scenarios (rttlens-lab) and print
//! one table of what was expected and what was found.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use rttlens_lab::scenario::{self, Scenario, ScenarioOutcome, Variant};

use crate::args::{Format, LabArgs};
use crate::output;

mod path;
mod verify;

/// Every expectation held.
const EXIT_OK: u8 = 0;
/// An expectation failed (or a scenario could not run).
const EXIT_FAILED: u8 = 1;
/// Usage error or a missing prerequisite.
const EXIT_USAGE: u8 = 2;

/// Run `rttlens lab`.
pub fn run(args: LabArgs) -> anyhow::Result<ExitCode> {
    let all = rttlens_lab::catalogue();
    if args.list {
        list(all)?;
        return Ok(ExitCode::from(EXIT_OK));
    }
    let mut chosen: Vec<&'static Scenario> = Vec::new();
    let mut chosen_paths = Vec::new();
    for name in &args.scenarios {
        match (rttlens_lab::find(name), rttlens_lab::path::find_path(name)) {
            (Some(s), _) => chosen.push(s),
            (None, Some(p)) => chosen_paths.push(p),
            (None, None) => {
                let names: Vec<&str> = all
                    .iter()
                    .map(|s| s.name)
                    .chain(rttlens_lab::path::PATH_SCENARIOS.iter().map(|s| s.name))
                    .collect();
                eprintln!(
                    "rttlens lab: unknown scenario `{name}`; known: {}",
                    names.join(", ")
                );
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        }
    }
    if chosen.is_empty() && chosen_paths.is_empty() {
        chosen = all.iter().collect();
        chosen_paths = rttlens_lab::path::PATH_SCENARIOS.iter().collect();
    }
    let rtt = parse_duration(&args.rtt).map_err(|e| {
        eprintln!("rttlens lab: --rtt {}: {e}", args.rtt);
    });
    let Ok(rtt) = rtt else {
        return Ok(ExitCode::from(EXIT_USAGE));
    };
    let prereq = rttlens_lab_net::check_prerequisites().and_then(|()| {
        scenario::PROGRAMS
            .iter()
            .try_for_each(|&(c, p)| rttlens_lab_net::require_command(c, p))
    });
    if let Err(e) = prereq {
        eprintln!("rttlens lab: {e}");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    if args.verify_fix {
        return verify::run(&args, chosen, rtt);
    }
    let pics = &args.pictures;
    let pictures = output::wants_trace(args.format, pics);
    // the pictures are drawn from the captures: kept until then, in a
    // scratch directory unless `--keep` names one
    let scratch = (pictures && args.keep.is_none())
        .then(|| std::env::temp_dir().join(format!("rttlens-lab-pictures-{}", std::process::id())));
    let keep = args.keep.clone().or_else(|| scratch.clone());
    if let Some(k) = &keep {
        std::fs::create_dir_all(k).with_context(|| format!("creating {}", k.display()))?;
    }
    let started = Instant::now();
    let mut results: Vec<(&Scenario, Result<ScenarioOutcome, String>)> = Vec::new();
    for s in chosen {
        eprintln!("rttlens lab: {} …", s.name);
        let r = scenario::run_scenario(s, rtt, keep.as_deref()).map_err(|e| e.to_string());
        if let Err(e) = &r {
            eprintln!("rttlens lab: {}: {e}", s.name);
        }
        results.push((s, r));
    }
    let paths = path::run(&chosen_paths, rtt, args.keep.as_deref());
    let ok = results
        .iter()
        .all(|(_, r)| r.as_ref().is_ok_and(ScenarioOutcome::passed))
        && paths
            .iter()
            .all(|(_, r)| r.as_ref().is_ok_and(rttlens_lab::path::PathOutcome::passed));
    let took = started.elapsed();
    let drawn = if pictures {
        draw(&results, pics)
    } else {
        Ok(Vec::new())
    };
    if let Some(d) = &scratch {
        let _ = std::fs::remove_dir_all(d);
    }
    let drawn = drawn?;
    let mut out = output::open(pics)?;
    match args.format {
        Format::Text => table(&mut out, &results, &paths, rtt, took)?,
        Format::Json => json(&mut out, &results, &paths, rtt, took)?,
        Format::Html => {
            let mut text = Vec::new();
            table(&mut text, &results, &paths, rtt, took)?;
            let title = format!("rttlens lab at {} RTT", args.rtt);
            rttlens_report::html::page(&mut out, &title, &output::preface(&text), &drawn)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::from(if ok { EXIT_OK } else { EXIT_FAILED }))
}

/// Each scenario's capture (the one its expectations are checked on) as
/// a fragment of the HTML page, with every connection drawn.
fn draw(
    results: &[(&Scenario, Result<ScenarioOutcome, String>)],
    pics: &crate::args::PictureArgs,
) -> anyhow::Result<Vec<Vec<u8>>> {
    let svg = output::svg_dir(pics)?;
    let html = output::html_options(pics, usize::MAX);
    let mut frags = Vec::new();
    for (s, r) in results {
        let Ok(o) = r else { continue };
        let title = format!(
            "{} ({}): {}",
            s.name,
            if o.passed() { "held" } else { "FAILED" },
            s.about
        );
        let prefix = format!("{}-", s.name);
        frags.push(output::fragment_of_file(
            &html,
            svg.clone(),
            (&prefix, &title),
            &o.client_capture,
        )?);
    }
    Ok(frags)
}

/// Width of the scenario-name column: the longest name.
pub(crate) fn name_width<'a>(names: impl Iterator<Item = &'a str>) -> usize {
    names.map(str::len).max().unwrap_or(0).max("scenario".len())
}

fn list(all: &[Scenario]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    let paths = rttlens_lab::path::PATH_SCENARIOS.iter().map(|s| s.name);
    let w = name_width(all.iter().map(|s| s.name).chain(paths));
    for s in all {
        writeln!(out, "{:<w$} {}", s.name, s.about)?;
        let mut what: Vec<String> = s.expect.iter().map(|e| format!("expect {e}")).collect();
        what.extend(s.forbid.iter().map(|e| format!("forbid {e}")));
        what.extend(s.variants.iter().map(|v| match v {
            Variant::MidStream => "mid-stream copy: the same".to_string(),
            Variant::Offload => "offload (GRO) copy: the same".to_string(),
            Variant::MidStreamSaysLess { why, expect } => {
                format!("mid-stream copy: expect {} ({why})", expect.join(", "))
            }
            Variant::SenderOnly { expect } => {
                format!("sender-only copy: expect {}", expect.join(", "))
            }
            Variant::Snaplen => "snaplen copy: what the headers prove".to_string(),
            Variant::Keyless => "keyless analysis: what the Initials prove".to_string(),
        }));
        // a QUIC scenario's capture is also read without its key log
        if s.key.starts_with("quic-") {
            let keyless = s.keyless();
            what.push(format!(
                "keyless analysis: {}",
                if keyless.is_empty() {
                    "no expectation the Initials alone prove".to_string()
                } else {
                    format!("expect {}", keyless.join(", "))
                }
            ));
        }
        // every scenario's capture is also cut to 96 B a frame
        let header_only = s.header_only();
        what.push(format!(
            "snaplen ({} B) copy: {}",
            rttlens_lab::scenario::SNAPLEN,
            if header_only.is_empty() {
                "no expectation the headers alone prove".to_string()
            } else {
                format!("expect {}", header_only.join(", "))
            }
        ));
        writeln!(out, "{:<w$} {}", "", what.join("; "))?;
    }
    path::list(&mut out, w)
}

/// `40ms`, `0.1s`, `40` (milliseconds).
fn parse_duration(s: &str) -> Result<Duration, String> {
    let ms = crate::args::duration_ms(s, "ms")?;
    if !(1.0..=2000.0).contains(&ms) {
        return Err("the RTT must be between 1 ms and 2 s".into());
    }
    Ok(Duration::from_secs_f64(ms / 1000.0))
}

fn table(
    out: &mut impl Write,
    results: &[(&Scenario, Result<ScenarioOutcome, String>)],
    paths: &[path::PathResult],
    rtt: Duration,
    took: Duration,
) -> std::io::Result<()> {
    let w = name_width(
        results
            .iter()
            .map(|(s, _)| s.name)
            .chain(paths.iter().map(|(s, _)| s.name)),
    );
    writeln!(
        out,
        "{:<w$} {:<50} {:<5} {:>18}  key ladder line",
        "scenario", "expected finding", "found", "cost"
    )?;
    for (s, r) in results {
        match r {
            Err(e) => writeln!(out, "{:<w$} error: {e}", s.name)?,
            Ok(o) => {
                let mut rows: Vec<(String, String, String)> = o
                    .found
                    .iter()
                    .map(|f| {
                        let cost = cost_text(f);
                        let exp = match f.id {
                            Some(id) if f.expect.contains('|') => format!("{} ({id})", f.expect),
                            _ => f.expect.to_string(),
                        };
                        (exp, if f.found { "yes" } else { "NO" }.into(), cost)
                    })
                    .collect();
                for &fb in s.forbid {
                    let hit = o.unexpected_forbidden.iter().any(|u| {
                        fb.split('|')
                            .any(|id| u.ends_with(id) || (id == "quic-*" && u.starts_with("quic ")))
                    });
                    rows.push((
                        format!("none of {fb}"),
                        if hit { "FOUND" } else { "none" }.into(),
                        "-".into(),
                    ));
                }
                for p in &o.problems {
                    rows.push((p.clone(), "NO".into(), "-".into()));
                }
                let mut keys = vec![o.key_line.clone()];
                for v in &o.variants {
                    keys.resize(rows.len(), String::new());
                    keys.push(match v.rtt_ms {
                        Some(ms) => format!("{} copy: RTT {ms:.1} ms", v.variant.name()),
                        None => format!("{} copy: RTT unknown", v.variant.name()),
                    });
                    for f in &v.found {
                        rows.push((
                            format!("{}: {}", v.variant.name(), f.expect),
                            if f.found { "yes" } else { "NO" }.into(),
                            cost_text(f),
                        ));
                    }
                    for p in &v.problems {
                        rows.push((
                            format!("{}: {p}", v.variant.name()),
                            "NO".into(),
                            "-".into(),
                        ));
                    }
                    // a keyless analysis with nothing to prove still had
                    // its checks: nothing the keys do not say
                    if v.variant == Variant::Keyless && v.found.is_empty() && v.problems.is_empty()
                    {
                        rows.push((
                            "keyless: nothing the keys do not say".into(),
                            "yes".into(),
                            "-".into(),
                        ));
                    }
                }
                for (i, (exp, found, cost)) in rows.iter().enumerate() {
                    let name = if i == 0 { s.name } else { "" };
                    let key = keys.get(i).map_or("", String::as_str);
                    writeln!(out, "{name:<w$} {exp:<50} {found:<5} {cost:>18}  {key}")?;
                }
                if !o.passed() {
                    writeln!(out, "{:<w$} findings per connection: {:?}", "", o.findings)?;
                    if o.quic_connections > 0 {
                        writeln!(
                            out,
                            "{:<w$} findings per QUIC connection: {:?}",
                            "", o.quic_findings
                        )?;
                    }
                    for v in o.variants.iter().filter(|v| !v.passed()) {
                        writeln!(
                            out,
                            "{:<w$} {} copy, findings per connection: {:?}",
                            "",
                            v.variant.name(),
                            v.findings
                        )?;
                    }
                }
            }
        }
    }
    path::table(out, paths, w)?;
    let passed = results
        .iter()
        .filter(|(_, r)| r.as_ref().is_ok_and(ScenarioOutcome::passed))
        .count()
        + paths
            .iter()
            .filter(|(_, r)| r.as_ref().is_ok_and(rttlens_lab::path::PathOutcome::passed))
            .count();
    writeln!(
        out,
        "{passed}/{} scenarios held at RTT {} ms, in {:.1} s",
        results.len() + paths.len(),
        rtt.as_millis(),
        took.as_secs_f64()
    )
}

/// `12.3 ms 0.62 RTT`, or `-` when not found.
fn cost_text(f: &scenario::ExpectationResult) -> String {
    if f.found {
        match f.cost_rtts {
            Some(r) => format!("{:.1} ms {r:.2} RTT", f.cost_ms),
            None => format!("{:.1} ms", f.cost_ms),
        }
    } else {
        "-".into()
    }
}

/// One expectation's result in the JSON document.
fn found_json(f: &scenario::ExpectationResult) -> serde_json::Value {
    serde_json::json!({
        "expect": f.expect,
        "found": f.found,
        "id": f.id,
        "cost_ms": f.cost_ms,
        "cost_rtts": f.cost_rtts,
    })
}

fn json(
    out: &mut impl Write,
    results: &[(&Scenario, Result<ScenarioOutcome, String>)],
    paths: &[path::PathResult],
    rtt: Duration,
    took: Duration,
) -> anyhow::Result<()> {
    let mut items: Vec<serde_json::Value> = results
        .iter()
        .map(|(s, r)| match r {
            Err(e) => serde_json::json!({ "scenario": s.name, "error": e, "passed": false }),
            Ok(o) => serde_json::json!({
                "scenario": o.scenario,
                "passed": o.passed(),
                "expected": o.found.iter().map(found_json).collect::<Vec<_>>(),
                "forbid": s.forbid,
                "unexpected_forbidden": o.unexpected_forbidden,
                "key_line": o.key_line,
                "connections": o.connections,
                "findings": o.findings,
                "quic_connections": o.quic_connections,
                "quic_findings": o.quic_findings,
                "problems": o.problems,
                "variants": o.variants.iter().map(|v| serde_json::json!({
                    "variant": v.variant.name(),
                    "passed": v.passed(),
                    "expected": v.found.iter().map(found_json).collect::<Vec<_>>(),
                    "problems": v.problems,
                    "findings": v.findings,
                    "rtt_ms": v.rtt_ms,
                })).collect::<Vec<_>>(),
                "elapsed_ms": o.elapsed.as_millis() as u64,
            }),
        })
        .collect();
    items.extend(path::json(paths));
    let doc = serde_json::json!({
        "rtt_ms": rtt.as_secs_f64() * 1000.0,
        "elapsed_ms": took.as_millis() as u64,
        "scenarios": items,
    });
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)?;
    Ok(())
}
