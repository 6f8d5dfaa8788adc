//! The population's over-time figure: each phase's median and 99th
//! percentile per interval, new connections per second, handshakes in
//! progress, and the intervals the population findings name.

use plotters::element::DashedPathElement;
use plotters::prelude::*;
use rttlens_core::model::population::{Interval, OverTime, PhaseId};
use rttlens_core::pipeline::CaptureSummary;

use super::super::plot::{self, colour, Axes, Ctx, DrawResult, Panel};
use super::super::Figure;
use super::{MARKERS_UP_TO, MIN_INTERVALS, PANEL_HEIGHT, PHASES, SHADES};

/// A phase's (p50, p99) in an interval.
pub(super) fn interval_phase(iv: &Interval, id: PhaseId) -> Option<(f64, f64)> {
    iv.phases
        .iter()
        .find(|x| x.phase == id && x.count > 0)
        .map(|x| (x.p50_ms, x.p99_ms))
}

/// One entry of a panel's legend row.
pub(super) enum Key {
    /// A line (dashed or not).
    Line(RGBColor, bool),
    /// A shaded band.
    Band(RGBColor),
}

/// Estimated width (px) of `s` at 12 px sans-serif.
pub(super) fn text_width(s: &str) -> i32 {
    (s.chars().count() as f64 * 5.9).ceil() as i32
}

/// Rows the legend entries take across the plot area.
pub(super) fn legend_rows(entries: &[(Key, String)]) -> usize {
    layout(entries, 860).last().map_or(0, |l| l.1 + 1)
}

/// Each entry's x (px from the plot's left) and row.
pub(super) fn layout(entries: &[(Key, String)], width: i32) -> Vec<(i32, usize)> {
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
pub(super) fn legend_row(ch: &mut Ctx<'_, '_>, entries: &[(Key, String)]) -> DrawResult {
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
pub(super) fn y_linear(hi: f64, rows: usize) -> std::ops::Range<f64> {
    let hi = if hi.is_finite() && hi > 0.0 { hi } else { 1.0 };
    0.0..hi * (1.04 + 0.14 * rows as f64)
}

/// A log10 axis over the positive `values`: from the decade below the
/// smallest to the largest (at least 1.5 decades), with room above for
/// `rows` of legend. The axis holds at most 6 labels, so up to 5 decades
/// are each labelled.
pub(super) fn y_log(values: &[f64], rows: usize) -> std::ops::Range<f64> {
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
pub(super) fn to_log(v: f64, y: &std::ops::Range<f64>) -> f64 {
    if v > 0.0 {
        v.log10().max(y.start)
    } else {
        y.start
    }
}

/// Tick labels with three significant digits at most (RTTs of 0.02 ms and
/// of 200 ms alike).
pub(super) fn value_tick(v: &f64) -> String {
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
pub(super) fn decade_tick(v: &f64) -> String {
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
pub(super) type Lines = Vec<Vec<(f64, f64)>>;

/// Runs of consecutive points (a missing value breaks the line).
pub(super) fn runs(points: &[Option<(f64, f64)>]) -> Lines {
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
pub(super) fn held(points: &[(f64, f64)], width_s: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for &(x, y) in points {
        out.push((x, y));
        out.push((x + width_s, y));
    }
    out
}

/// The intervals each named finding covers, merged into runs
/// `(finding index, start s, end s)`.
pub(super) fn shaded(ot: &OverTime, ids: &[&'static str], width_s: f64) -> Vec<(usize, f64, f64)> {
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
pub(super) fn secs(s: f64) -> String {
    if (s - s.round()).abs() < 1e-9 {
        format!("{s:.0}")
    } else {
        let t = format!("{s:.3}");
        t.trim_end_matches('0').to_string()
    }
}

/// A line at each decade of a log axis.
pub(super) fn decades(
    ch: &mut Ctx<'_, '_>,
    x: &std::ops::Range<f64>,
    y: &std::ops::Range<f64>,
) -> DrawResult {
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
