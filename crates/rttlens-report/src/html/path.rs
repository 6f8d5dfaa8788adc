//! The probe's path (`rttlens probe --path --format html`) drawn: one
//! column per hop (TTL), its RTT from min to max as a thin line, p50 to p90
//! as a thick one, the median as a dot joined hop to hop, the connection's
//! own RTT as a level line, and a pin on the hop where the RTT steps up
//! (its tooltip says by how much). Hops that never answered have no
//! column; their loss is in the table above the graph.

use std::io::{self, Write};

use plotters::prelude::*;
use rttlens_probe_model::PathReport;

use super::plot::{self, colour, Axes, Ctx, DrawResult, Pin};
use super::{esc, Figure};

/// The graph of `p` (none when nothing answered).
pub fn figure(p: &PathReport) -> Figure {
    let name = "path";
    let answered: Vec<_> = p.hops.iter().filter(|h| h.p50_ms.is_some()).collect();
    if answered.is_empty() {
        return Figure::none(name, p.note.as_deref().unwrap_or("no hop answered"));
    }
    let last_ttl = p.hops.last().map_or(1.0, |h| f64::from(h.ttl));
    let x = 0.5..last_ttl + 0.5;
    let conn = p.versus_connection.as_ref().map(|v| v.connection_rtt_ms);
    let top = answered
        .iter()
        .filter_map(|h| h.max_ms)
        .fold(conn.unwrap_or(0.0), f64::max);
    let y = plot::y_range(top);
    let pins: Vec<Pin> = p
        .step
        .iter()
        .map(|s| Pin {
            x: f64::from(s.ttl),
            y: s.to_ms,
            id: "step",
            text: format!(
                "hop {} {}: median {:.2} → {:.2} ms (+{:.2} ms)",
                s.ttl, s.addr, s.from_ms, s.to_ms, s.step_ms
            ),
        })
        .collect();
    let axes = Axes {
        title: "RTT per hop",
        x_desc: "hop (TTL)",
        y_desc: "RTT (ms)",
        x: x.clone(),
        y: y.clone(),
        y_fmt: plot::number_tick,
        x_fmt: plot::integer_tick,
        legend: true,
    };
    let mut body = |ch: &mut Ctx<'_, '_>| -> DrawResult {
        let clamp = |v: f64| v.clamp(y.start, y.end);
        ch.draw_series(answered.iter().filter_map(|h| {
            let t = f64::from(h.ttl);
            Some(PathElement::new(
                vec![(t, clamp(h.min_ms?)), (t, clamp(h.max_ms?))],
                colour::GREY.stroke_width(1),
            ))
        }))?
        .label("min to max")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour::GREY));
        ch.draw_series(answered.iter().filter_map(|h| {
            let t = f64::from(h.ttl);
            Some(PathElement::new(
                vec![(t, clamp(h.p50_ms?)), (t, clamp(h.p90_ms?))],
                colour::BLUE.stroke_width(6),
            ))
        }))?
        .label("p50 to p90")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour::BLUE.stroke_width(6)));
        let medians: Vec<(f64, f64)> = answered
            .iter()
            .filter_map(|h| Some((f64::from(h.ttl), clamp(h.p50_ms?))))
            .collect();
        ch.draw_series(std::iter::once(PathElement::new(
            medians.clone(),
            colour::BLUE.mix(0.5),
        )))?;
        ch.draw_series(
            medians
                .iter()
                .map(|&(x, y)| Circle::new((x, y), 4, colour::BLUE.filled())),
        )?
        .label("median")
        .legend(|(x, y)| Circle::new((x + 6, y), 3, colour::BLUE.filled()));
        if let Some(c) = conn {
            ch.draw_series(std::iter::once(PathElement::new(
                vec![(x.start, clamp(c)), (x.end, clamp(c))],
                colour::BROWN.stroke_width(2),
            )))?
            .label(format!("the connection's RTT {c:.2} ms"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour::BROWN));
        }
        Ok(())
    };
    let caption = format!(
        "{} probes to {} ({} rounds): each hop's RTT, min to max (thin), p50 to p90 (thick), the median dotted and joined; the pin marks the hop where the median steps up the most.",
        p.protocol.to_uppercase(),
        p.target,
        p.rounds
    );
    Figure::drawn(name, plot::canvas(&mut [(axes, pins, &mut body)]), caption)
}

/// The path's section of the page: a heading and the graph.
///
/// # Errors
/// Writing failed.
pub fn fragment(p: &PathReport, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "<section class=\"path\">\n<h2>The path to {}</h2>",
        esc(&p.target)
    )?;
    super::figure(w, &figure(p))?;
    writeln!(w, "</section>")
}
