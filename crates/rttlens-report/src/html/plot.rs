//! What every XY graph shares: the plotters SVG canvas and axes, the
//! findings pinned onto it, and the reduction of long series to what a
//! screen can show.
//!
//! plotters draws the axes, ticks, labels and series. Two things it does
//! not do are ours: pins with a tooltip (`<title>`) and a class the page
//! can select, which plotters' SVG backend cannot emit, are spliced into
//! its output; and series are reduced per pixel column before plotters sees
//! them, since it writes one SVG element per point given (a 1 M-packet
//! connection would make a page no browser lays out in seconds).

use std::ops::Range;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Canvas width (px); the page scales it to its column.
pub const WIDTH: u32 = 960;
/// Canvas height of one panel (px).
pub const HEIGHT: u32 = 320;
/// Pixel columns of the plot area a series is reduced to: each column keeps
/// at most its first, lowest, highest and last point.
pub const COLUMNS: usize = 860;

/// One plot area.
pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
/// A chart on an [`Area`] with linear axes.
pub type Ctx<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;
/// What plotters' drawing calls return.
pub type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// Series colours (the Tableau 10 palette, which reads in print too).
pub mod colour {
    use plotters::style::RGBColor;
    /// New data, and the server's packets.
    pub const BLUE: RGBColor = RGBColor(31, 119, 180);
    /// The client's packets.
    pub const ORANGE: RGBColor = RGBColor(255, 127, 14);
    /// ACKs.
    pub const GREEN: RGBColor = RGBColor(44, 160, 44);
    /// Retransmissions, losses.
    pub const RED: RGBColor = RGBColor(214, 39, 40);
    /// The receive window.
    pub const PURPLE: RGBColor = RGBColor(148, 103, 189);
    /// Caps and minima.
    pub const BROWN: RGBColor = RGBColor(140, 86, 75);
    /// What the application held back.
    pub const GREY: RGBColor = RGBColor(127, 127, 127);
    /// Congestion avoidance.
    pub const TEAL: RGBColor = RGBColor(23, 190, 207);
    /// Pins of findings.
    pub const PIN: RGBColor = RGBColor(230, 85, 13);
}

/// A finding pinned to a point of a graph (data coordinates).
#[derive(Debug, Clone)]
pub struct Pin {
    /// X in the graph's unit.
    pub x: f64,
    /// Y in the graph's unit.
    pub y: f64,
    /// Finding id (written beside the first pin of each finding).
    pub id: &'static str,
    /// Tooltip: frame and what it shows.
    pub text: String,
}

/// A pin placed on the canvas (pixels).
#[derive(Debug, Clone)]
struct Placed {
    x: i32,
    y: i32,
    id: &'static str,
    text: String,
}

/// Axes of one panel.
#[derive(Debug, Clone)]
pub struct Axes<'t> {
    /// Panel title.
    pub title: &'t str,
    /// X axis label.
    pub x_desc: &'t str,
    /// Y axis label.
    pub y_desc: &'t str,
    /// X range.
    pub x: Range<f64>,
    /// Y range.
    pub y: Range<f64>,
    /// Y tick labels.
    pub y_fmt: fn(&f64) -> String,
    /// X tick labels.
    pub x_fmt: fn(&f64) -> String,
    /// Draw a legend of the labelled series.
    pub legend: bool,
}

/// A range that plotters can draw (not empty, finite), padded by 3 %.
pub fn range(lo: f64, hi: f64) -> Range<f64> {
    padded(lo, hi, 0.03)
}

/// A y range with room above the data for the legend (a quarter).
pub fn y_range(hi: f64) -> Range<f64> {
    padded(0.0, hi, 0.25)
}

fn padded(lo: f64, hi: f64, pad: f64) -> Range<f64> {
    let lo = if lo.is_finite() { lo } else { 0.0 };
    let hi = if hi.is_finite() && hi > lo {
        hi
    } else {
        lo + 1.0
    };
    lo..hi + (hi - lo) * pad
}

/// Draw one panel on `area`: axes, then `body`, then the pins. Returns the
/// pins in pixels for [`canvas`] to splice in.
fn panel(
    area: &Area<'_>,
    axes: &Axes<'_>,
    pins: &[Pin],
    body: &mut dyn FnMut(&mut Ctx<'_, '_>) -> DrawResult,
) -> Result<Vec<Placed>, DrawingAreaErrorKind<std::io::Error>> {
    let mut chart = ChartBuilder::on(area)
        .caption(axes.title, ("sans-serif", 15))
        .margin(8)
        .x_label_area_size(34)
        .y_label_area_size(70)
        .build_cartesian_2d(axes.x.clone(), axes.y.clone())?;
    chart
        .configure_mesh()
        .max_light_lines(0)
        .x_labels(10)
        .y_labels(6)
        .x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .y_label_formatter(&axes.y_fmt)
        .x_label_formatter(&axes.x_fmt)
        .axis_desc_style(("sans-serif", 13))
        .label_style(("sans-serif", 12))
        .bold_line_style(BLACK.mix(0.08))
        .draw()?;
    body(&mut chart)?;
    if axes.legend {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .label_font(("sans-serif", 12))
            .draw()?;
    }
    let spec = chart.as_coord_spec();
    let placed = pins
        .iter()
        .map(|p| {
            let x = p.x.clamp(axes.x.start, axes.x.end);
            let y = p.y.clamp(axes.y.start, axes.y.end);
            let (px, py) = spec.translate(&(x, y));
            Placed {
                x: px,
                y: py,
                id: p.id,
                text: p.text.clone(),
            }
        })
        .collect();
    Ok(placed)
}

/// Most pins drawn on one graph; the rest are in the findings' evidence
/// lists.
pub const MAX_PINS: usize = 200;

/// One panel of a [`canvas`]: its axes, the pins, and what draws its
/// series.
pub type Panel<'t, 'f> = (
    Axes<'t>,
    Vec<Pin>,
    &'f mut dyn FnMut(&mut Ctx<'_, '_>) -> DrawResult,
);

/// A whole SVG of `panels` stacked top to bottom, each `(axes, pins,
/// body)`. Returns the SVG text, or the drawing error as text.
pub fn canvas(panels: &mut [Panel<'_, '_>]) -> Result<String, String> {
    canvas_sized(panels, HEIGHT)
}

/// [`canvas`] with panels `panel_height` px tall (a graph of several
/// panels stays on one screen).
pub fn canvas_sized(panels: &mut [Panel<'_, '_>], panel_height: u32) -> Result<String, String> {
    let mut svg = String::new();
    let mut placed = Vec::new();
    {
        let h = panel_height * panels.len().max(1) as u32;
        let root = SVGBackend::with_string(&mut svg, (WIDTH, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let areas = root.split_evenly((panels.len().max(1), 1));
        for (area, (axes, pins, body)) in areas.iter().zip(panels.iter_mut()) {
            pins.truncate(MAX_PINS);
            placed.extend(panel(area, axes, pins, &mut **body).map_err(|e| e.to_string())?);
        }
        root.present().map_err(|e| e.to_string())?;
    }
    splice_pins(&mut svg, &placed);
    Ok(svg)
}

/// Put the pins (circles with a tooltip, the id beside each finding's
/// first) at the end of the SVG, above the series.
fn splice_pins(svg: &mut String, placed: &[Placed]) {
    if placed.is_empty() {
        return;
    }
    let Some(end) = svg.rfind("</svg>") else {
        return;
    };
    let mut g = String::from("<g class=\"pins\">\n");
    let mut named: Vec<&str> = Vec::new();
    // where ids were written: a label near another goes a line lower
    let mut written: Vec<(i32, i32)> = Vec::new();
    let c = colour::PIN;
    for p in placed {
        g.push_str(&format!(
            "<circle class=\"pin\" data-finding=\"{}\" cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"none\" stroke=\"rgb({},{},{})\" stroke-width=\"2\"><title>{}</title></circle>\n",
            p.id,
            p.x,
            p.y,
            c.0,
            c.1,
            c.2,
            super::esc(&p.text)
        ));
        if !named.contains(&p.id) {
            named.push(p.id);
            let (x, mut y) = (p.x + 8, p.y - 6);
            while written
                .iter()
                .any(|&(wx, wy)| (wx - x).abs() < 120 && (wy - y).abs() < 13)
            {
                y += 14;
            }
            written.push((x, y));
            g.push_str(&format!(
                "<text x=\"{x}\" y=\"{y}\" font-family=\"sans-serif\" font-size=\"12\" fill=\"rgb({},{},{})\">{}</text>\n",
                c.0,
                c.1,
                c.2,
                p.id
            ));
        }
    }
    g.push_str("</g>\n");
    svg.insert_str(end, &g);
}

/// Points moved into the axes (values past the top drawn at the top):
/// plotters maps a value far outside its range to a pixel past `i32` and
/// overflows, and a line clipped at the top is what the legend says.
pub fn clip(points: Vec<(f64, f64)>, x: &Range<f64>, y: &Range<f64>) -> Vec<(f64, f64)> {
    points
        .into_iter()
        .map(|(a, b)| (a.clamp(x.start, x.end), b.clamp(y.start, y.end)))
        .collect()
}

/// [`clip`] for vertical bars `(x, low, high)`.
pub fn clip_bars(
    bars: Vec<(f64, f64, f64)>,
    x: &Range<f64>,
    y: &Range<f64>,
) -> Vec<(f64, f64, f64)> {
    bars.into_iter()
        .map(|(a, lo, hi)| {
            (
                a.clamp(x.start, x.end),
                lo.clamp(y.start, y.end),
                hi.clamp(y.start, y.end),
            )
        })
        .collect()
}

/// Reduce a polyline (points sorted by x) to at most four points per pixel
/// column of `x`: the first, lowest, highest and last of the column, in
/// that order of x, so the drawn envelope is the one the full line would
/// cover. Lines with fewer points than columns are returned as they are.
pub fn envelope(points: &[(f64, f64)], x: &Range<f64>) -> Vec<(f64, f64)> {
    if points.len() <= 2 * COLUMNS {
        return points.to_vec();
    }
    let width = (x.end - x.start).max(1e-9);
    let col = |px: f64| (((px - x.start) / width * COLUMNS as f64) as usize).min(COLUMNS - 1);
    let mut out = Vec::with_capacity(4 * COLUMNS);
    let mut i = 0;
    while i < points.len() {
        let c = col(points[i].0);
        let mut j = i;
        let (mut lo, mut hi) = (points[i], points[i]);
        while j < points.len() && col(points[j].0) == c {
            if points[j].1 < lo.1 {
                lo = points[j];
            }
            if points[j].1 > hi.1 {
                hi = points[j];
            }
            j += 1;
        }
        let (first, last) = (points[i], points[j - 1]);
        let (a, b) = if lo.0 <= hi.0 { (lo, hi) } else { (hi, lo) };
        for p in [first, a, b, last] {
            if out.last() != Some(&p) {
                out.push(p);
            }
        }
        i = j;
    }
    out
}

/// A step line through `points` (a value holds until the next point), as
/// a polyline.
pub fn steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, &(x, y)) in points.iter().enumerate() {
        if i > 0 {
            out.push((x, points[i - 1].1));
        }
        out.push((x, y));
    }
    out
}

/// Vertical bars `(x, low, high)` sorted by x, merged per pixel column when
/// there are more than the columns can show (lowest low, highest high).
pub fn bars(points: &[(f64, f64, f64)], x: &Range<f64>) -> Vec<(f64, f64, f64)> {
    if points.len() <= 2 * COLUMNS {
        return points.to_vec();
    }
    let width = (x.end - x.start).max(1e-9);
    let col = |px: f64| (((px - x.start) / width * COLUMNS as f64) as usize).min(COLUMNS - 1);
    let mut out: Vec<(f64, f64, f64)> = Vec::with_capacity(COLUMNS);
    let mut last_col = usize::MAX;
    for &(px, lo, hi) in points {
        let c = col(px);
        match out.last_mut() {
            Some(b) if c == last_col => {
                b.1 = b.1.min(lo);
                b.2 = b.2.max(hi);
            }
            _ => out.push((px, lo, hi)),
        }
        last_col = c;
    }
    out
}

/// Byte-axis tick labels in decimal units (`200 kB`, `1.5 MB`), as the
/// text report writes sizes: plotters puts ticks on round decimal values.
pub fn bytes_tick(v: &f64) -> String {
    let v = *v;
    let (x, unit) = if v.abs() >= 1e6 {
        (v / 1e6, "MB")
    } else if v.abs() >= 1e3 {
        (v / 1e3, "kB")
    } else {
        (v, "B")
    };
    if (x - x.round()).abs() < 1e-6 {
        format!("{x:.0} {unit}")
    } else {
        format!("{x:.1} {unit}")
    }
}

/// Whole-number tick labels (round indices).
pub fn integer_tick(v: &f64) -> String {
    if v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        String::new()
    }
}

/// Plain number tick labels.
pub fn number_tick(v: &f64) -> String {
    if v.fract().abs() < 1e-9 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_keeps_extremes_and_order() {
        // a sawtooth of 100 k points: every column's min and max survive
        let pts: Vec<(f64, f64)> = (0..100_000)
            .map(|i| (i as f64, (i % 1000) as f64))
            .collect();
        let r = 0.0..100_000.0;
        let e = envelope(&pts, &r);
        assert!(e.len() <= 4 * COLUMNS, "{} points", e.len());
        assert!(e.windows(2).all(|w| w[0].0 <= w[1].0), "x order kept");
        assert_eq!(e.iter().map(|p| p.1).fold(f64::MIN, f64::max), 999.0);
        assert_eq!(e.iter().map(|p| p.1).fold(f64::MAX, f64::min), 0.0);
        assert_eq!(e.first(), pts.first());
        assert_eq!(e.last(), pts.last());
        // short lines are left alone
        assert_eq!(envelope(&pts[..10], &r), pts[..10].to_vec());
    }

    #[test]
    fn bars_merge_per_column() {
        let pts: Vec<(f64, f64, f64)> = (0..10_000)
            .map(|i| (i as f64, i as f64 * 10.0, i as f64 * 10.0 + 5.0))
            .collect();
        let b = bars(&pts, &(0.0..10_000.0));
        assert!(b.len() <= COLUMNS, "{}", b.len());
        assert_eq!(b[0].1, 0.0);
        assert_eq!(b.last().map(|b| b.2), Some(99_995.0));
    }

    #[test]
    fn steps_hold_until_the_next_point() {
        assert_eq!(
            steps(&[(0.0, 1.0), (2.0, 3.0), (5.0, 4.0)]),
            vec![(0.0, 1.0), (2.0, 1.0), (2.0, 3.0), (5.0, 3.0), (5.0, 4.0)]
        );
    }

    #[test]
    fn tick_labels() {
        assert_eq!(bytes_tick(&200_000.0), "200 kB");
        assert_eq!(bytes_tick(&65_535.0), "65.5 kB");
        assert_eq!(bytes_tick(&1_500_000.0), "1.5 MB");
        assert_eq!(bytes_tick(&500.0), "500 B");
        assert_eq!(number_tick(&2.5), "2.5");
        assert_eq!(number_tick(&40.0), "40");
    }
}
