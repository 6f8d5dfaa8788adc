//! The population view on the page: what the text report's population
//! part says (crate::population), as tables, and the capture over time as
//! one graph of four panels with the intervals a population finding names
//! shaded. Shown for captures of at least
//! [`MIN_CONNECTIONS`](crate::population::MIN_CONNECTIONS) connections.

use std::io::{self, Write};

use plotters::prelude::*;
use rttlens_core::model::population::{Group, PhaseId, PopFinding, PopulationReport};
use rttlens_core::pipeline::CaptureSummary;

use super::plot::colour;
use super::{esc, Figure};

/// Groups (servers, server names) in a table, as in the text report.
const GROUPS_SHOWN: usize = 5;
/// Intervals the over-time graph needs.
const MIN_INTERVALS: usize = 3;
/// Height of each panel of the over-time graph (px).
const PANEL_HEIGHT: u32 = 270;
/// Intervals up to which each point gets a marker.
const MARKERS_UP_TO: usize = 80;

/// The phases with percentiles per interval and per group, and their
/// colours in the graph.
const PHASES: [(PhaseId, RGBColor); 4] = [
    (PhaseId::Connect, colour::BLUE),
    (PhaseId::Tls, colour::ORANGE),
    (PhaseId::ServerHandshake, colour::PURPLE),
    (PhaseId::Ttfb, colour::GREEN),
];

/// Shades of the intervals a population finding names (one per finding).
const SHADES: [RGBColor; 4] = [
    colour::RED,
    RGBColor(188, 189, 34),
    colour::TEAL,
    RGBColor(227, 119, 194),
];

/// Milliseconds as the text report writes them.
fn num(x: f64) -> String {
    if x >= 1000.0 {
        format!("{x:.0}")
    } else if x >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// A numeric cell (sortable value and text).
fn cell(x: f64) -> String {
    format!("<td class=\"n\" data-v=\"{x}\">{}</td>", num(x))
}

/// The population section: nothing below the text report's threshold.
/// `shown` are the connections with a section on the page (evidence links
/// to them); `over_time` the graph, drawn by [`over_time`].
///
/// # Errors
/// Writing failed.
pub fn section(
    w: &mut dyn Write,
    prefix: &str,
    s: &CaptureSummary,
    shown: &[u64],
    over_time: Option<&Figure>,
) -> io::Result<()> {
    if !crate::population::shown(s) {
        return Ok(());
    }
    let p = &s.population;
    writeln!(
        w,
        "<section class=\"population\" id=\"{prefix}population\">\n<h3>Population</h3>"
    )?;
    let mut intro = format!(
        "What the {} connections show together (percentiles over the connections that have each phase).",
        p.connections
    );
    if let Some(fb) = &p.first_byte {
        intro.push_str(&format!(
            " First SYN → first response byte: p50 {} ms, p99 {} ms, max {} ms.",
            num(fb.p50),
            num(fb.p99),
            num(fb.max)
        ));
    }
    writeln!(w, "<p class=\"note\">{}</p>", esc(&intro))?;
    phases(w, p)?;
    groups(w, "server", "By server", &p.phases_by_server)?;
    groups(w, "server name", "By server name (SNI)", &p.phases_by_sni)?;
    tail(w, p)?;
    if let Some(f) = over_time {
        super::figure(w, f)?;
    }
    findings(w, prefix, p, shown)
}

fn phases(w: &mut dyn Write, p: &PopulationReport) -> io::Result<()> {
    writeln!(
        w,
        "<table class=\"pop-phases\"><thead><tr><th>phase (ms)</th><th class=\"n\">count</th><th class=\"n\">p50</th><th class=\"n\">p90</th><th class=\"n\">p99</th><th class=\"n\">p99.9</th><th class=\"n\">max</th><th class=\"n\" title=\"in round trips of each connection's own RTT\">RTTs p50</th><th class=\"n\" title=\"in round trips of each connection's own RTT\">RTTs p99</th></tr></thead><tbody>"
    )?;
    for ph in &p.phases {
        let s = &ph.ms;
        let rtts = ph.rtts.as_ref().map_or_else(
            || "<td class=\"n\">–</td><td class=\"n\">–</td>".to_string(),
            |r| {
                format!(
                    "<td class=\"n\">{:.2}</td><td class=\"n\">{:.2}</td>",
                    r.p50, r.p99
                )
            },
        );
        writeln!(
            w,
            "<tr data-phase=\"{0}\"><td>{0}</td><td class=\"n\">{1}</td>{2}{3}{4}{5}{6}{rtts}</tr>",
            ph.phase.as_str(),
            s.count,
            cell(s.p50),
            cell(s.p90),
            cell(s.p99),
            cell(s.p99_9),
            cell(s.max),
        )?;
    }
    // the servers' own accounts, per Server-Timing metric
    for m in &p.server_timing {
        let s = &m.ms;
        writeln!(
            w,
            "<tr data-metric=\"{0}\"><td>Server-Timing {0}</td><td class=\"n\">{1}</td>{2}{3}{4}{5}{6}<td class=\"n\">–</td><td class=\"n\">–</td></tr>",
            esc(&m.metric),
            s.count,
            cell(s.p50),
            cell(s.p90),
            cell(s.p99),
            cell(s.p99_9),
            cell(s.max),
        )?;
    }
    writeln!(w, "</tbody></table>")
}

fn groups(w: &mut dyn Write, what: &str, heading: &str, groups: &[Group]) -> io::Result<()> {
    if groups.is_empty() {
        return Ok(());
    }
    writeln!(
        w,
        "<h4>{heading} <span class=\"count\">({} of {}; p50 / p99 ms)</span></h4>",
        groups.len().min(GROUPS_SHOWN),
        groups.len()
    )?;
    write!(
        w,
        "<table class=\"pop-groups\"><thead><tr><th rowspan=\"2\">{what}</th><th rowspan=\"2\" class=\"n\">connections</th>"
    )?;
    for (id, _) in PHASES {
        write!(w, "<th colspan=\"2\" class=\"ph\">{}</th>", id.as_str())?;
    }
    writeln!(
        w,
        "</tr><tr>{}</tr></thead><tbody>",
        "<th class=\"n\">p50</th><th class=\"n\">p99</th>".repeat(PHASES.len())
    )?;
    for g in groups.iter().take(GROUPS_SHOWN) {
        write!(
            w,
            "<tr><td><code>{}</code></td><td class=\"n\">{}</td>",
            esc(&g.key),
            g.connections
        )?;
        for (id, _) in PHASES {
            match g.phases.iter().find(|x| x.phase == id) {
                Some(s) => write!(w, "{}{}", cell(s.ms.p50), cell(s.ms.p99))?,
                None => write!(w, "<td class=\"n\">–</td><td class=\"n\">–</td>")?,
            }
        }
        writeln!(w, "</tr>")?;
    }
    writeln!(w, "</tbody></table>")
}

fn tail(w: &mut dyn Write, p: &PopulationReport) -> io::Result<()> {
    let Some(t) = &p.tail else {
        return Ok(());
    };
    let grew: Vec<String> = t
        .parts
        .iter()
        // what rounds to nothing says nothing
        .filter(|x| num(x.extra_ms) != num(0.0))
        .map(|x| {
            format!(
                "+{} ms {} ({:.0} %)",
                num(x.extra_ms),
                x.part.as_str(),
                100.0 * x.share
            )
        })
        .collect();
    writeln!(
        w,
        "<h4>The tail</h4>\n<p class=\"tail\">The slowest {} connections (first byte ≥ {} ms, the p90; p50 {} ms) waited {} ms on average against {} ms for the faster half: {}.</p>",
        t.connections,
        num(t.first_byte_p90_ms),
        num(t.first_byte_p50_ms),
        num(t.tail_ms),
        num(t.typical_ms),
        esc(&if grew.is_empty() {
            "no part grew".to_string()
        } else {
            grew.join(", ")
        })
    )?;
    writeln!(
        w,
        "<table class=\"pop-tail\"><thead><tr><th>part of the time to first byte</th><th class=\"n\">faster half ms</th><th class=\"n\">tail ms</th><th class=\"n\">extra ms</th><th class=\"n\">share of the extra</th><th class=\"bar\"></th></tr></thead><tbody>"
    )?;
    for x in &t.parts {
        writeln!(
            w,
            "<tr><td>{}</td>{}{}{}<td class=\"n\">{:.0} %</td><td class=\"bar\"><span style=\"width:{:.1}%\"></span></td></tr>",
            x.part.as_str(),
            cell(x.typical_ms),
            cell(x.tail_ms),
            cell(x.extra_ms),
            100.0 * x.share,
            (100.0 * x.share).clamp(0.0, 100.0)
        )?;
    }
    writeln!(w, "</tbody></table>")
}

/// `what` with its leading "connection N" linked to N's section when it
/// is on the page.
fn evidence_text(prefix: &str, conn: Option<u64>, what: &str, shown: &[u64]) -> String {
    let Some(n) = conn.filter(|n| shown.contains(n)) else {
        return esc(what);
    };
    let head = format!("connection {n}");
    match what.strip_prefix(&head) {
        Some(rest) => format!("<a href=\"#{prefix}conn-{n}\">{head}</a>{}", esc(rest)),
        None => format!(
            "<a href=\"#{prefix}conn-{n}\">connection {n}</a>: {}",
            esc(what)
        ),
    }
}

fn findings(
    w: &mut dyn Write,
    prefix: &str,
    p: &PopulationReport,
    shown: &[u64],
) -> io::Result<()> {
    writeln!(w, "<h4>Population findings</h4>")?;
    if p.population_findings.is_empty() {
        return writeln!(
            w,
            "<p class=\"note\">No population finding: nothing the crowd shows that its connections do not.</p>\n</section>"
        );
    }
    for x in &p.population_findings {
        finding(w, prefix, x, shown)?;
    }
    writeln!(w, "</section>")
}

fn finding(w: &mut dyn Write, prefix: &str, x: &PopFinding, shown: &[u64]) -> io::Result<()> {
    writeln!(
        w,
        "<article class=\"finding population\" data-population-finding=\"{}\"><h4><code>{}</code> {}</h4>\n<p class=\"cost\">cost {} ms over {} connections ({} ms each) · confidence {} ({})</p>\n<ul class=\"evidence\">",
        x.id,
        x.id,
        esc(&crate::words::pop_title(x)),
        num(x.cost.ms),
        x.cost.connections,
        num(x.cost.per_connection_ms),
        x.confidence.level.as_str(),
        esc(&crate::words::why(&x.confidence))
    )?;
    for e in &x.evidence {
        let tag = match (e.connection, e.interval) {
            (Some(_), _) => "connection",
            (None, Some(_)) => "interval",
            (None, None) => "other",
        };
        writeln!(
            w,
            "<li data-evidence=\"{tag}\">{}</li>",
            evidence_text(prefix, e.connection, &crate::words::fact(&e.fact), shown)
        )?;
    }
    writeln!(
        w,
        "</ul>\n<p class=\"fix\"><b>fix</b> {}</p>\n<p class=\"refs\">{}</p></article>",
        esc(&crate::words::pop_fix(x)),
        esc(&x.references.join("; "))
    )
}

mod over_time;
pub use over_time::over_time;

#[cfg(test)]
mod tests;
