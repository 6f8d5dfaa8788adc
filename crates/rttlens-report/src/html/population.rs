//! The population view on the page: what the text report's population
//! part says (crate::population), as tables, and the capture over time as
//! one graph of four panels with the intervals a population finding names
//! shaded. Shown for captures of at least
//! [`MIN_CONNECTIONS`](crate::population::MIN_CONNECTIONS) connections.

use std::io::{self, Write};

use plotters::element::DashedPathElement;
use plotters::prelude::*;
use rttlens_core::pipeline::CaptureSummary;
use rttlens_core::population::{Group, Interval, OverTime, PhaseId, PopFinding, PopulationReport};

use super::plot::{self, colour, Axes, Ctx, DrawResult, Panel};
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

/// A phase's (p50, p99) in an interval.
fn interval_phase(iv: &Interval, id: PhaseId) -> Option<(f64, f64)> {
    iv.phases
        .iter()
        .find(|x| x.phase == id && x.count > 0)
        .map(|x| (x.p50_ms, x.p99_ms))
}

/// One entry of a panel's legend row.
enum Key {
    /// A line (dashed or not).
    Line(RGBColor, bool),
    /// A shaded band.
    Band(RGBColor),
}

/// Estimated width (px) of `s` at 12 px sans-serif.
fn text_width(s: &str) -> i32 {
    (s.chars().count() as f64 * 5.9).ceil() as i32
}

/// Rows the legend entries take across the plot area.
fn legend_rows(entries: &[(Key, String)]) -> usize {
    layout(entries, 860).last().map_or(0, |l| l.1 + 1)
}

/// Each entry's x (px from the plot's left) and row.
fn layout(entries: &[(Key, String)], width: i32) -> Vec<(i32, usize)> {
    let (mut x, mut row) = (8, 0);
    let mut out = Vec::with_capacity(entries.len());
    for (_, label) in entries {
        let w = 24 + text_width(label) + 18;
        if x + w > width && x > 8 {
            x = 8;
            row += 1;
        }
        out.push((x, row));
        x += w;
    }
    out
}

/// Draw a legend as rows across the top of the plot area (the plot's own
/// legend box stacks entries and would cover the data).
fn legend_row(ch: &mut Ctx<'_, '_>, entries: &[(Key, String)]) -> DrawResult {
    let area = ch.plotting_area().strip_coord_spec();
    let (xs, _) = ch.plotting_area().get_pixel_range();
    let places = layout(entries, xs.end - xs.start);
    let rows = places.last().map_or(0, |l| l.1 + 1) as i32;
    if rows == 0 {
        return Ok(());
    }
    let right = places
        .iter()
        .zip(entries)
        .map(|(&(x, _), (_, l))| x + 24 + text_width(l))
        .max()
        .unwrap_or(0);
    area.draw(&Rectangle::new(
        [(2, 2), (right + 8, 6 + 17 * rows)],
        WHITE.mix(0.85).filled(),
    ))?;
    let font = ("sans-serif", 12).into_font().color(&BLACK);
    for ((x, row), (key, label)) in places.into_iter().zip(entries) {
        let y = 13 + 17 * row as i32;
        match key {
            Key::Line(c, false) => {
                area.draw(&PathElement::new(
                    vec![(x, y), (x + 18, y)],
                    c.stroke_width(2),
                ))?;
            }
            Key::Line(c, true) => {
                area.draw(&DashedPathElement::new(
                    vec![(x, y), (x + 18, y)],
                    4,
                    3,
                    c.stroke_width(2),
                ))?;
            }
            Key::Band(c) => {
                area.draw(&Rectangle::new(
                    [(x, y - 6), (x + 18, y + 6)],
                    c.mix(0.2).filled(),
                ))?;
            }
        }
        area.draw(&Text::new(label.clone(), (x + 24, y - 6), font.clone()))?;
    }
    Ok(())
}

/// A y range from 0 with room above for `rows` of legend.
fn y_linear(hi: f64, rows: usize) -> std::ops::Range<f64> {
    let hi = if hi.is_finite() && hi > 0.0 { hi } else { 1.0 };
    0.0..hi * (1.04 + 0.14 * rows as f64)
}

/// A log10 axis over the positive `values`: from the decade below the
/// smallest to the largest (at least 1.5 decades), with room above for
/// `rows` of legend. The axis holds at most 6 labels, so up to 5 decades
/// are each labelled.
fn y_log(values: &[f64], rows: usize) -> std::ops::Range<f64> {
    let pos = values.iter().copied().filter(|v| *v > 0.0 && v.is_finite());
    let (lo, hi) = pos.fold((f64::MAX, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
    let (mut lo, hi) = if hi > 0.0 {
        (lo.log10().floor(), hi.log10())
    } else {
        (0.0, 1.0)
    };
    if hi - lo < 1.5 {
        lo = (hi - 1.5).floor();
    }
    lo..hi + (hi - lo) * (0.06 + 0.16 * rows as f64)
}

/// `v` on a [`y_log`] axis: zero and what is below the axis drawn on its
/// floor.
fn to_log(v: f64, y: &std::ops::Range<f64>) -> f64 {
    if v > 0.0 {
        v.log10().max(y.start)
    } else {
        y.start
    }
}

/// Tick labels with three significant digits at most (RTTs of 0.02 ms and
/// of 200 ms alike).
fn value_tick(v: &f64) -> String {
    let v = *v;
    if v == 0.0 {
        return "0".to_string();
    }
    let decimals = (2 - v.abs().log10().floor() as i32).clamp(0, 4) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Log-scale tick labels: the axis is log10 of the value, labelled at
/// whole decades only.
fn decade_tick(v: &f64) -> String {
    if (v - v.round()).abs() > 1e-6 {
        return String::new();
    }
    let e = v.round() as i32;
    if e >= 0 {
        format!("{:.0}", 10f64.powi(e))
    } else {
        format!("{:.*}", (-e) as usize, 10f64.powi(e))
    }
}

/// Polylines of one series (a gap between them).
type Lines = Vec<Vec<(f64, f64)>>;

/// Runs of consecutive points (a missing value breaks the line).
fn runs(points: &[Option<(f64, f64)>]) -> Lines {
    let mut out: Lines = Vec::new();
    let mut cur = Vec::new();
    for p in points {
        match p {
            Some(p) => cur.push(*p),
            None if !cur.is_empty() => out.push(std::mem::take(&mut cur)),
            None => {}
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A value held over each interval (x from its start to its end).
fn held(points: &[(f64, f64)], width_s: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for &(x, y) in points {
        out.push((x, y));
        out.push((x + width_s, y));
    }
    out
}

/// The intervals each named finding covers, merged into runs
/// `(finding index, start s, end s)`.
fn shaded(ot: &OverTime, ids: &[&'static str], width_s: f64) -> Vec<(usize, f64, f64)> {
    let mut out: Vec<(usize, f64, f64)> = Vec::new();
    for (k, id) in ids.iter().enumerate() {
        for iv in ot.intervals.iter().filter(|iv| iv.findings.contains(id)) {
            let (a, b) = (iv.start_s, iv.start_s + width_s);
            match out.last_mut() {
                Some(last) if last.0 == k && (last.2 - a).abs() < width_s * 1e-6 => last.2 = b,
                _ => out.push((k, a, b)),
            }
        }
    }
    out
}

/// Seconds as the caption writes them.
fn secs(s: f64) -> String {
    if (s - s.round()).abs() < 1e-9 {
        format!("{s:.0}")
    } else {
        let t = format!("{s:.3}");
        t.trim_end_matches('0').to_string()
    }
}

/// A line at each decade of a log axis.
fn decades(ch: &mut Ctx<'_, '_>, x: &std::ops::Range<f64>, y: &std::ops::Range<f64>) -> DrawResult {
    let mut d = y.start.ceil();
    while d <= y.end {
        ch.draw_series(std::iter::once(PathElement::new(
            vec![(x.start, d), (x.end, d)],
            BLACK.mix(0.12),
        )))?;
        d += 1.0;
    }
    Ok(())
}

/// The capture over time: new connections and handshakes in progress;
/// each phase's p50 and p99 per interval (log scale); the median RTT; the
/// signs of loss. Intervals a population finding names are shaded. `None`
/// without at least three intervals.
pub fn over_time(s: &CaptureSummary) -> Option<Figure> {
    let name = "over-time";
    let p = &s.population;
    let ot = p
        .over_time
        .as_ref()
        .filter(|o| o.intervals.len() >= MIN_INTERVALS)?;
    let ivs = &ot.intervals;
    let width_s = ot.interval_ms as f64 / 1000.0;
    let end = ivs.last().map_or(1.0, |l| l.start_s + width_s);
    let x = plot::range(0.0, end);
    let mid = |iv: &Interval| iv.start_s + width_s / 2.0;
    let markers = ivs.len() <= MARKERS_UP_TO;
    // the findings that name intervals, in the report's order
    let mut ids: Vec<&'static str> = Vec::new();
    for f in &p.population_findings {
        if ivs.iter().any(|iv| iv.findings.contains(&f.id)) && !ids.contains(&f.id) {
            ids.push(f.id);
        }
    }
    for iv in ivs {
        for id in &iv.findings {
            if !ids.contains(id) {
                ids.push(id);
            }
        }
    }
    let bands = shaded(ot, &ids, width_s);
    let shade = |k: usize| SHADES[k % SHADES.len()];

    // panel 1: new connections per second, handshakes in progress
    let new: Vec<(f64, f64)> = ivs.iter().map(|iv| (iv.start_s, iv.new_per_s)).collect();
    let hs: Vec<(f64, f64)> = ivs
        .iter()
        .map(|iv| (iv.start_s, iv.handshakes_in_progress))
        .collect();
    let mut keys1 = vec![
        (
            Key::Line(colour::BLUE, false),
            "new connections per second".to_string(),
        ),
        (
            Key::Line(colour::ORANGE, false),
            "handshakes in progress (mean over the interval)".to_string(),
        ),
    ];
    for (k, id) in ids.iter().enumerate() {
        keys1.push((Key::Band(shade(k)), format!("named by {id}")));
    }
    // one series far below the other (100 new a second, 3 handshakes in
    // progress): a log scale shows both
    let top = |v: &[(f64, f64)]| v.iter().map(|p| p.1).fold(0.0, f64::max);
    let (top_new, top_hs) = (top(&new), top(&hs));
    let log1 =
        top_new.max(top_hs) > 8.0 * top_new.min(top_hs).max(1e-9) && top_new.min(top_hs) > 0.0;
    let rows1 = legend_rows(&keys1);
    let y1 = if log1 {
        let v: Vec<f64> = new.iter().chain(&hs).map(|p| p.1).collect();
        y_log(&v, rows1)
    } else {
        y_linear(top_new.max(top_hs), rows1)
    };
    let scale1 = |pts: &[(f64, f64)]| -> Vec<(f64, f64)> {
        if log1 {
            pts.iter().map(|&(x, v)| (x, to_log(v, &y1))).collect()
        } else {
            pts.to_vec()
        }
    };
    let (new, hs) = (scale1(&new), scale1(&hs));

    // panel 2: p50 and p99 of each phase, log10(ms)
    let all: Vec<f64> = ivs
        .iter()
        .flat_map(|iv| PHASES.iter().filter_map(|(id, _)| interval_phase(iv, *id)))
        .flat_map(|(a, b)| [a, b])
        .filter(|v| *v > 0.0 && v.is_finite())
        .collect();
    // the phases some interval has
    let mut keys2: Vec<(Key, String)> = PHASES
        .iter()
        .filter(|(id, _)| ivs.iter().any(|iv| interval_phase(iv, *id).is_some()))
        .map(|(id, c)| (Key::Line(*c, false), id.as_str().to_string()))
        .collect();
    keys2.push((Key::Line(colour::GREY, false), "p50 (solid)".to_string()));
    keys2.push((Key::Line(colour::GREY, true), "p99 (dashed)".to_string()));
    let y2 = y_log(&all, legend_rows(&keys2));
    let log = |v: f64| to_log(v, &y2);
    let phase_lines: Vec<(RGBColor, Lines, Lines)> = PHASES
        .iter()
        .map(|(id, c)| {
            let pts: Vec<Option<(f64, f64)>> =
                ivs.iter().map(|iv| interval_phase(iv, *id)).collect();
            let p50: Vec<Option<(f64, f64)>> = ivs
                .iter()
                .zip(&pts)
                .map(|(iv, v)| v.map(|v| (mid(iv), log(v.0))))
                .collect();
            let p99: Vec<Option<(f64, f64)>> = ivs
                .iter()
                .zip(&pts)
                .map(|(iv, v)| v.map(|v| (mid(iv), log(v.1))))
                .collect();
            (*c, runs(&p50), runs(&p99))
        })
        .collect();

    // panel 3: the median RTT
    let rtt: Vec<Option<(f64, f64)>> = ivs
        .iter()
        .map(|iv| iv.rtt_p50_ms.map(|r| (mid(iv), r)))
        .collect();
    let keys3 = vec![(
        Key::Line(colour::BROWN, false),
        "RTT p50 (the connections' baseline RTTs)".to_string(),
    )];
    let top3 = rtt.iter().flatten().map(|p| p.1).fold(0.0, f64::max);
    let y3 = y_linear(top3, legend_rows(&keys3));
    let rtt = runs(&rtt);
    let has_rtt = !rtt.is_empty();

    // panel 4: loss and the handshake's packets sent again, in %
    let share = |n: u64, of: u64| {
        if of > 0 {
            100.0 * n as f64 / of as f64
        } else {
            0.0
        }
    };
    let retx: Vec<(f64, f64)> = ivs
        .iter()
        .map(|iv| (iv.start_s, 100.0 * iv.retransmission_rate))
        .collect();
    let syn: Vec<(f64, f64)> = ivs
        .iter()
        .map(|iv| (iv.start_s, share(iv.syn_retransmitted, iv.new_connections)))
        .collect();
    let ack: Vec<(f64, f64)> = ivs
        .iter()
        .map(|iv| (iv.start_s, share(iv.ack_ignored, iv.new_connections)))
        .collect();
    let has_ack = ivs.iter().any(|iv| iv.ack_ignored > 0);
    let mut keys4 = vec![
        (
            Key::Line(colour::RED, false),
            "data segments retransmitted".to_string(),
        ),
        (
            Key::Line(colour::PURPLE, false),
            "new connections whose SYN was sent again".to_string(),
        ),
    ];
    if has_ack {
        keys4.push((
            Key::Line(colour::BROWN, false),
            "SYN-ACKs resent after the client's ACK (per new connection)".to_string(),
        ));
    }
    let top4 = retx
        .iter()
        .chain(&syn)
        .chain(if has_ack { &ack[..] } else { &[] })
        .map(|p| p.1)
        .fold(0.0, f64::max)
        .max(1.0);
    let y4 = y_linear(top4, legend_rows(&keys4));

    let draw_bands = |ch: &mut Ctx<'_, '_>, y: &std::ops::Range<f64>| -> DrawResult {
        ch.draw_series(bands.iter().map(|&(k, a, b)| {
            Rectangle::new(
                [(a.max(x.start), y.start), (b.min(x.end), y.end)],
                shade(k).mix(0.14).filled(),
            )
        }))?;
        Ok(())
    };
    let line = |c: RGBColor| c.stroke_width(2);
    let held_line = |ch: &mut Ctx<'_, '_>, pts: &[(f64, f64)], c: RGBColor| -> DrawResult {
        ch.draw_series(std::iter::once(PathElement::new(
            held(pts, width_s),
            line(c),
        )))?;
        Ok(())
    };
    let dots = |ch: &mut Ctx<'_, '_>, run: &[(f64, f64)], c: RGBColor| -> DrawResult {
        if markers {
            ch.draw_series(run.iter().map(|&p| Circle::new(p, 2, c.filled())))?;
        }
        Ok(())
    };

    let mut body1 = |ch: &mut Ctx<'_, '_>| -> DrawResult {
        draw_bands(ch, &y1)?;
        if log1 {
            decades(ch, &x, &y1)?;
        }
        held_line(ch, &new, colour::BLUE)?;
        held_line(ch, &hs, colour::ORANGE)?;
        legend_row(ch, &keys1)
    };
    let mut body2 = |ch: &mut Ctx<'_, '_>| -> DrawResult {
        draw_bands(ch, &y2)?;
        decades(ch, &x, &y2)?;
        for (c, p50, p99) in &phase_lines {
            for r in p99 {
                ch.draw_series(std::iter::once(DashedPathElement::new(
                    r.clone(),
                    5,
                    3,
                    c.stroke_width(1),
                )))?;
            }
            for r in p50 {
                ch.draw_series(std::iter::once(PathElement::new(r.clone(), line(*c))))?;
                dots(ch, r, *c)?;
            }
        }
        legend_row(ch, &keys2)
    };
    let mut body3 = |ch: &mut Ctx<'_, '_>| -> DrawResult {
        draw_bands(ch, &y3)?;
        for r in &rtt {
            ch.draw_series(std::iter::once(PathElement::new(
                r.clone(),
                line(colour::BROWN),
            )))?;
            dots(ch, r, colour::BROWN)?;
        }
        legend_row(ch, &keys3)
    };
    let mut body4 = |ch: &mut Ctx<'_, '_>| -> DrawResult {
        draw_bands(ch, &y4)?;
        held_line(ch, &retx, colour::RED)?;
        held_line(ch, &syn, colour::PURPLE)?;
        if has_ack {
            held_line(ch, &ack, colour::BROWN)?;
        }
        legend_row(ch, &keys4)
    };
    let axes = |title: &'static str, y_desc: &'static str, y, y_fmt: fn(&f64) -> String| Axes {
        title,
        x_desc: "s since the capture's first packet",
        y_desc,
        x: x.clone(),
        y,
        y_fmt,
        x_fmt: value_tick,
        legend: false,
    };
    let mut panels: Vec<Panel<'_, '_>> = vec![
        (
            if log1 {
                axes(
                    "new connections and handshakes in progress (log scale)",
                    "connections (log scale)",
                    y1.clone(),
                    decade_tick,
                )
            } else {
                axes(
                    "new connections and handshakes in progress",
                    "connections",
                    y1.clone(),
                    value_tick,
                )
            },
            Vec::new(),
            &mut body1,
        ),
        (
            axes(
                "p50 and p99 of each phase, connections begun in the interval (log scale)",
                "ms (log scale)",
                y2.clone(),
                decade_tick,
            ),
            Vec::new(),
            &mut body2,
        ),
    ];
    if has_rtt {
        panels.push((
            axes(
                "median RTT of the connections begun in the interval",
                "RTT (ms)",
                y3.clone(),
                value_tick,
            ),
            Vec::new(),
            &mut body3,
        ));
    }
    panels.push((
        axes(
            "retransmissions and handshakes sent again",
            "% per interval",
            y4.clone(),
            value_tick,
        ),
        Vec::new(),
        &mut body4,
    ));
    let svg = plot::canvas_sized(&mut panels, PANEL_HEIGHT);

    let mut caption = format!(
        "The capture cut into {} intervals of {} ms{}; x is seconds since the capture's first packet, and each interval holds the connections that began in it. From the top: new connections per second and the mean number of handshakes (first SYN → handshake done at the client) in progress{}; the p50 (solid) and p99 (dashed) of connect, tls, the server's handshake processing and TTFB, on a log scale (each decade line ten times the one below; a gap: no connection of the interval had the phase);{} the share of data segments retransmitted and of new connections whose SYN was sent more than once{}.",
        ivs.len(),
        ot.interval_ms,
        if ot.widened {
            " (widened from the `--interval` asked for, to hold the capture in 2,000)"
        } else {
            ""
        },
        if log1 {
            " (log scale: one is far below the other)"
        } else {
            ""
        },
        if has_rtt {
            " the median of their baseline RTTs;"
        } else {
            ""
        },
        if has_ack {
            ", and of SYN-ACKs the server resent after the client's ACK (it had not taken the ACK)"
        } else {
            ""
        },
    );
    // the capture ends inside the last interval: its rates count part of it
    let cut = end - s.duration_s;
    if s.duration_s > 0.0 && cut > 0.05 * width_s {
        caption.push_str(&format!(
            " The capture ends {} s into the last interval: its rates (per second, in progress) count that part only and read low.",
            secs((width_s - cut).max(0.0))
        ));
    }
    if !ids.is_empty() {
        let named: Vec<String> = ids
            .iter()
            .enumerate()
            .map(|(k, id)| {
                let when: Vec<String> = bands
                    .iter()
                    .filter(|b| b.0 == k)
                    .map(|b| format!("{}–{} s", secs(b.1), secs(b.2)))
                    .collect();
                format!("{id} ({})", when.join(", "))
            })
            .collect();
        caption.push_str(&format!(
            " Shaded: the intervals a population finding names as its evidence: {}.",
            named.join("; ")
        ));
    }
    Some(Figure::drawn(name, svg, caption))
}

/// One value as a whole distribution.
#[cfg(test)]
fn stats(v: f64) -> rttlens_core::population::Stats {
    use rttlens_core::population::Stats;
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

#[cfg(test)]
mod tests {
    use super::*;
    use rttlens_core::detect::finding::{Args, Confidence, Fact, Level, Value};
    use rttlens_core::population::{IntervalPhase, PhaseStats, PopCost, PopEvidence};

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
                    why: std::iter::once(rttlens_core::detect::finding::Fact::new(
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
}
