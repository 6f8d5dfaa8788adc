//! The ladder diagram of a connection's first packets: the client's and the
//! server's timelines, each packet an arrow from its sender to its receiver,
//! TLS and HTTP messages named, bands one RTT tall, findings pinned to the
//! frames they cite.
//!
//! Written by hand: plotters (and the other Rust plotting crates checked)
//! draw XY charts, not sequence diagrams.
//!
//! Geometry: a packet M saw at `t` left its sender at `t − h_sender/2` and
//! reached its receiver at `t + h_receiver/2`, with `h_c` and `h_s` the
//! two halves of the RTT as seen from the capture point and a symmetric
//! path assumed (the ladder of phases makes the same assumption). Time runs
//! downward; consecutive packets are kept at least one row (22 px) apart and a
//! long silence is cut to 150 px with its length written, so the
//! scale is linear within each gap, not across them.

use std::fmt::Write as _;

use rttlens_core::base::side::Side;
use rttlens_core::base::time::Timestamp;

use super::plot::colour;
use super::traced::{Row, Traced};
use super::{esc, Figure};

/// Canvas width (px).
const WIDTH: f64 = 960.0;
/// The client's timeline.
const X_CLIENT: f64 = 230.0;
/// The server's timeline.
const X_SERVER: f64 = 730.0;
/// Least vertical distance between two packets (px).
const ROW: f64 = 22.0;
/// Most vertical distance between two packets; longer silences are cut.
const GAP_MAX: f64 = 150.0;
/// Space above the first packet (px).
const TOP: f64 = 60.0;

/// Piecewise-linear map from capture time (ms after the first packet) to
/// y (px): through `(t_i, y_i)` of each packet shown, extended before the
/// first and after the last at the scale of the nearest gap.
struct TimeAxis {
    /// `(t, y of the first row at t, y of the last row at t)`.
    knots: Vec<(f64, f64, f64)>,
    /// px per ms where no gap says otherwise.
    scale: f64,
}

impl TimeAxis {
    /// The axis through packets at `times` (sorted), each packet's row,
    /// and the silences cut (y of the cut, its length in ms). Packets seen
    /// at the same instant get rows of their own below the first.
    fn new(times: &[f64], scale: f64) -> (TimeAxis, Vec<f64>, Vec<(f64, f64)>) {
        let mut knots: Vec<(f64, f64, f64)> = Vec::with_capacity(times.len());
        let mut rows: Vec<f64> = Vec::with_capacity(times.len());
        let mut cuts = Vec::new();
        for (i, &t) in times.iter().enumerate() {
            let y = match (i, rows.last()) {
                (0, _) | (_, None) => TOP,
                (_, Some(&py)) => {
                    let natural = (t - times[i - 1]) * scale;
                    if natural > GAP_MAX {
                        cuts.push((py + GAP_MAX / 2.0, t - times[i - 1]));
                    }
                    py + natural.clamp(ROW, GAP_MAX)
                }
            };
            rows.push(y);
            match knots.last_mut() {
                Some(k) if k.0 >= t => k.2 = y,
                _ => knots.push((t, y, y)),
            }
        }
        (TimeAxis { knots, scale }, rows, cuts)
    }

    /// y of time `t`: a packet time maps to its first row; between two
    /// packet times, linearly from the last row of the one to the first
    /// row of the next.
    fn y(&self, t: f64) -> f64 {
        // an arrow's far end stays near the drawing, whatever the RTT says
        let lo = self.knots.first().map_or(TOP, |p| p.1) - 2.0 * GAP_MAX;
        let hi = self.knots.last().map_or(TOP, |p| p.2) + 4.0 * GAP_MAX;
        self.unclamped(t).clamp(lo.max(0.0), hi)
    }

    fn unclamped(&self, t: f64) -> f64 {
        let k = &self.knots;
        let i = k.partition_point(|p| p.0 < t);
        if let Some(p) = k.get(i).filter(|p| p.0 == t) {
            return p.1;
        }
        match i {
            0 => k.first().map_or(TOP, |p| p.1 - (p.0 - t) * self.scale),
            i if i >= k.len() => k
                .last()
                .map_or(TOP, |p| p.2 + (t - p.0) * self.scale.min(4.0)),
            i => {
                let (a, b) = (k[i - 1], k[i]);
                a.2 + (t - a.0) / (b.0 - a.0) * (b.1 - a.2)
            }
        }
    }
}

/// The ladder diagram of the first `max_packets` packets (or datagrams).
pub fn ladder<T: Traced>(v: &T, max_packets: usize) -> Figure {
    let name = "ladder";
    if v.is_empty() {
        return Figure::none(name, &format!("no {}", T::UNIT));
    }
    let shown: Vec<Row> = v.rows().take(max_packets.max(1)).collect();
    let t0 = shown[0].at.ts;
    let ms = |ts: Timestamp| (ts - t0).as_millis_f64();
    let (h_c, h_s) = v.halves();
    let rtt = v.min_rtt().filter(|r| *r > 0.0);
    let times: Vec<f64> = shown.iter().map(|p| ms(p.at.ts)).collect();
    let span = times.last().copied().unwrap_or(0.0).max(1e-3);
    // about 28 px per packet on average, before the rows and cuts
    let scale = (28.0 * shown.len() as f64 / span).max(1e-3);
    let (axis, rows, cuts) = TimeAxis::new(&times, scale);
    let half = |s: Side| match s {
        Side::Client => h_c / 2.0,
        Side::Server => h_s / 2.0,
    };
    let x_of = |s: Side| match s {
        Side::Client => X_CLIENT,
        Side::Server => X_SERVER,
    };
    // the end at the capture point (a side whose half is at most 15 % of
    // the RTT) sits on the packet's row; the far end at its time. Seen from
    // the middle, both ends are at their times, moved by the row's offset.
    let middle = h_c > 0.15 * (h_c + h_s) && h_s > 0.15 * (h_c + h_s);
    let near = |s: Side| {
        let h = match s {
            Side::Client => h_c,
            Side::Server => h_s,
        };
        !middle && h <= 0.15 * (h_c + h_s)
    };
    let ends = |i: usize, p: &Row| -> (f64, f64) {
        let t_m = times[i];
        let shift = if middle { rows[i] - axis.y(t_m) } else { 0.0 };
        let at = |s: Side, t: f64| if near(s) { rows[i] } else { axis.y(t) + shift };
        (
            at(p.side, t_m - half(p.side)),
            at(p.side.peer(), t_m + half(p.side.peer())),
        )
    };
    let last_y = shown
        .iter()
        .enumerate()
        .map(|(i, p)| ends(i, p).1.max(rows[i]))
        .fold(TOP, f64::max);
    let height = (last_y + 50.0).ceil();
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height}\" fill=\"#ffffff\"/>\n"
    );
    // RTT bands from the first packet, in the client's clock
    if let Some(r) = rtt {
        let start = times[0] - half(shown[0].side);
        let mut k = 0u32;
        let mut g = String::from("<g class=\"rtt-bands\">\n");
        let mut last_ya = f64::MIN;
        loop {
            let (a, b) = (start + f64::from(k) * r, start + f64::from(k + 1) * r);
            let (ya, yb) = (axis.y(a), axis.y(b).min(height));
            // past the drawing, or stuck where the axis stops
            if ya >= height || ya <= last_ya || k >= 400 {
                break;
            }
            last_ya = ya;
            if k % 2 == 0 {
                let _ = writeln!(
                    g,
                    "<rect x=\"{}\" y=\"{ya:.1}\" width=\"{}\" height=\"{:.1}\" fill=\"#eef3fa\"/>",
                    X_CLIENT,
                    X_SERVER - X_CLIENT,
                    (yb - ya).max(0.0)
                );
            }
            let _ = writeln!(
                g,
                "<text x=\"{}\" y=\"{:.1}\" fill=\"#6b7a90\" text-anchor=\"end\">RTT {}</text>",
                X_CLIENT - 8.0,
                ya + 12.0,
                k + 1
            );
            k += 1;
        }
        g.push_str("</g>\n");
        s.push_str(&g);
    }
    // the two timelines
    for (x, who, addr) in [
        (X_CLIENT, "client", v.client()),
        (X_SERVER, "server", v.server()),
    ] {
        let _ = writeln!(
            s,
            "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{height}\" stroke=\"#333\" stroke-width=\"2\"/>\n<text x=\"{x}\" y=\"18\" text-anchor=\"middle\" font-weight=\"bold\">{who}</text>\n<text x=\"{x}\" y=\"34\" text-anchor=\"middle\" fill=\"#555\">{}</text>",
            TOP - 16.0,
            esc(addr)
        );
    }
    let _ = writeln!(s, "<text x=\"8\" y=\"34\" fill=\"#555\">frame · ms</text>");
    // silences cut short
    for (y, gap) in &cuts {
        let _ = writeln!(
            s,
            "<text class=\"cut\" x=\"{:.0}\" y=\"{y:.1}\" text-anchor=\"middle\" fill=\"#888\">⋯ {gap:.1} ms ⋯</text>",
            (X_CLIENT + X_SERVER) / 2.0
        );
    }
    // the arrows
    let mut pinned = String::new();
    s.push_str("<g class=\"packets\">\n");
    for (i, p) in shown.iter().enumerate() {
        let t_m = times[i];
        let (x1, x2) = (x_of(p.side), x_of(p.side.peer()));
        let (y1, y2) = ends(i, p);
        let col = if p.again {
            colour::RED
        } else if p.side == Side::Client {
            colour::ORANGE
        } else {
            colour::BLUE
        };
        let rgb = format!("rgb({},{},{})", col.0, col.1, col.2);
        let width = if p.thin { 1.0 } else { 2.0 };
        // arrowhead: a triangle at the receiver's end
        let (dx, dy) = (x2 - x1, y2 - y1);
        let len = (dx * dx + dy * dy).sqrt().max(1e-6);
        let (ux, uy) = (dx / len, dy / len);
        let (bx, by) = (x2 - ux * 9.0, y2 - uy * 9.0);
        let (px, py) = (-uy * 4.0, ux * 4.0);
        let words = v.words(i);
        let tip = format!(
            "frame {} at {:.3} ms: {} → {}, {}; {}",
            p.at.frame,
            t_m,
            p.side.as_str(),
            p.side.peer().as_str(),
            words,
            v.detail(i)
        );
        let _ = writeln!(
            s,
            "<g class=\"packet\" data-frame=\"{}\"><title>{}</title><line x1=\"{x1}\" y1=\"{y1:.1}\" x2=\"{bx:.1}\" y2=\"{by:.1}\" stroke=\"{rgb}\" stroke-width=\"{width}\"{}/><polygon points=\"{x2:.1},{y2:.1} {:.1},{:.1} {:.1},{:.1}\" fill=\"{rgb}\"/>",
            p.at.frame,
            esc(&tip),
            if p.again { " stroke-dasharray=\"5 3\"" } else { "" },
            bx + px,
            by + py,
            bx - px,
            by - py,
        );
        // the label sits over the arrow, nearer the end at the capture
        // point, where the rows keep labels apart
        let f = if near(p.side) && !near(p.side.peer()) {
            0.3
        } else if near(p.side.peer()) && !near(p.side) {
            0.7
        } else {
            0.5
        };
        let (mx, my) = (x1 + (x2 - x1) * f, y1 + (y2 - y1) * f - 4.0);
        let _ = writeln!(
            s,
            "<text x=\"{mx:.1}\" y=\"{my:.1}\" text-anchor=\"middle\" fill=\"{rgb}\">{}</text>",
            esc(&words)
        );
        // frame number and time at the left, at the capture time
        let _ = writeln!(
            s,
            "<text x=\"8\" y=\"{:.1}\" fill=\"#555\">{} · {:.2}</text></g>",
            rows[i] + 4.0,
            p.at.frame,
            t_m
        );
        // findings citing this frame, at the right
        let cited: Vec<(&str, String)> = v
            .findings()
            .iter()
            .flat_map(|f| {
                f.evidence
                    .iter()
                    .filter(|e| e.frame == p.at.frame)
                    .map(move |e| (f.id, crate::words::evidence(e).into_owned()))
            })
            .collect();
        if !cited.is_empty() {
            let mut ids: Vec<&str> = cited.iter().map(|c| c.0).collect();
            ids.dedup();
            let whats: Vec<String> = cited.iter().map(|(id, w)| format!("{id}: {w}")).collect();
            let pc = colour::PIN;
            let _ = writeln!(
                pinned,
                "<text class=\"pin\" data-frame=\"{}\" x=\"{}\" y=\"{:.1}\" fill=\"rgb({},{},{})\" font-weight=\"bold\">◀ {}<title>{}</title></text>",
                p.at.frame,
                X_SERVER + 12.0,
                rows[i] + 4.0,
                pc.0,
                pc.1,
                pc.2,
                esc(&ids.join(", ")),
                esc(&whats.join("\n"))
            );
        }
    }
    s.push_str("</g>\n");
    if !pinned.is_empty() {
        s.push_str("<g class=\"pins\">\n");
        s.push_str(&pinned);
        s.push_str("</g>\n");
    }
    s.push_str("</svg>\n");
    let mut caption = format!(
        "The first {} of {} {}. Each arrow leaves its sender h/2 of the sender's side before the capture saw the packet and reaches the receiver h/2 of the receiver's side after it (h_c = {h_c:.2} ms, h_s = {h_s:.2} ms: the RTT's two halves seen from the capture point, a symmetric path assumed). Time runs downward, at least one row per packet; silences longer than the page allows are cut and their length written.",
        shown.len(),
        v.len(),
        T::UNIT,
    );
    if rtt.is_none() {
        caption = format!(
            "The first {} of {} {}. The RTT is not known, so each arrow is drawn at the time the capture saw it.",
            shown.len(),
            v.len(),
            T::UNIT
        );
    }
    let beyond: Vec<String> = v
        .findings()
        .iter()
        .flat_map(|f| {
            f.evidence
                .iter()
                .filter(|e| shown.last().is_some_and(|l| e.frame > l.at.frame))
                .map(move |e| format!("{} ({})", e.frame, f.id))
        })
        .take(12)
        .collect();
    if !beyond.is_empty() {
        caption.push_str(&format!(
            " Evidence frames further on (see the graphs below): {}.",
            beyond.join(", ")
        ));
    }
    Figure::drawn(name, Ok(s), caption)
}
