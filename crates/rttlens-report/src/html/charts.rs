//! The four XY graphs of a connection: time-sequence (Stevens/tcptrace),
//! bytes in flight per round, IO graph and RTT samples, each with the
//! connection's findings pinned to the frames they cite. The IO graph and
//! the RTT samples read any [`Traced`] connection, TCP or QUIC; the other
//! two are TCP's alone.

use plotters::prelude::*;
use rttlens_core::base::side::Side;
use rttlens_core::base::time::Timestamp;
use rttlens_core::model::trace::Limit;
use rttlens_core::model::trace::{Trace, TracePacket};
use rttlens_core::model::ConnReport;
use rttlens_core::model::Finding;

use super::plot::{self, colour, Axes, Ctx, DrawResult, Pin, COLUMNS};
use super::traced::Traced;
use super::Figure;

/// Milliseconds of `ts` after the trace's first packet.
fn ms(t0: Timestamp, ts: Timestamp) -> f64 {
    (ts - t0).as_millis_f64()
}

/// The packet of `frame`, if the trace has it (packets are in frame order).
fn packet(t: &Trace, frame: u64) -> Option<&TracePacket> {
    t.packets
        .binary_search_by_key(&frame, |p| p.at.frame)
        .ok()
        .map(|i| &t.packets[i])
}

/// The side whose data the time-sequence graph follows: the transfer's
/// sender, else the side that sent more bytes.
pub fn data_sender(c: &ConnReport, t: &Trace) -> Side {
    if let Some(tr) = &c.transfer {
        return tr.sender;
    }
    let sent = |s: Side| -> u64 {
        t.packets
            .iter()
            .filter(|p| p.side == s)
            .map(|p| u64::from(p.len))
            .sum()
    };
    if sent(Side::Client) > sent(Side::Server) {
        Side::Client
    } else {
        Side::Server
    }
}

/// Every evidence frame of every finding, with its tooltip.
fn evidence(findings: &[Finding]) -> impl Iterator<Item = (&'static str, u64, String)> + '_ {
    findings.iter().flat_map(|f| {
        f.evidence.iter().map(move |e| {
            (
                f.id,
                e.frame,
                format!(
                    "{} · frame {}: {}",
                    f.id,
                    e.frame,
                    crate::words::evidence(e)
                ),
            )
        })
    })
}

/// The window line runs far above the data when the receiver offers much
/// more than is sent; the time-sequence graph keeps it to this many times
/// the data's height (the data stays readable) and says so.
const WINDOW_HEADROOM: f64 = 1.5;

/// The same for the flight per round, where a window several times the
/// flight is the story (PKU: 65535 B in flight against 128 KB offered).
const RWND_HEADROOM: f64 = 3.0;

/// Sequence number (stream offset) over time for the data direction, with
/// the ACK line and the receive-window line (ACK + rwnd), as tcptrace and
/// Wireshark's Stevens graph draw them.
pub fn time_sequence(c: &ConnReport, t: &Trace) -> Figure {
    let name = "time-sequence";
    let sender = data_sender(c, t);
    let Some(t0) = t.packets.first().map(|p| p.at.ts) else {
        return Figure::none(name, "no packets");
    };
    let (mut new, mut retx, mut acks, mut wins) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for p in &t.packets {
        let x = ms(t0, p.at.ts);
        if p.side == sender {
            if let (Some(s), true) = (p.seq, p.len > 0) {
                let bar = (x, s as f64, (s + u64::from(p.len)) as f64);
                if p.retransmission {
                    retx.push(bar);
                } else {
                    new.push(bar);
                }
            }
        } else if let Some(a) = p.ack {
            acks.push((x, a as f64));
            wins.push((x, (a + p.window) as f64));
        }
    }
    if new.is_empty() && retx.is_empty() {
        return Figure::none(name, &format!("no data from the {}", sender.as_str()));
    }
    let top = |v: &[(f64, f64, f64)]| v.iter().map(|b| b.2).fold(0.0, f64::max);
    let data_max = top(&new).max(top(&retx));
    let ack_max = acks.iter().map(|a| a.1).fold(0.0, f64::max);
    let win_max = wins.iter().map(|a| a.1).fold(0.0, f64::max);
    let y_top = data_max.max(ack_max);
    let clipped = win_max > y_top * WINDOW_HEADROOM;
    let y = plot::y_range(y_top.max(win_max.min(y_top * WINDOW_HEADROOM)));
    let end = t.packets.last().map_or(0.0, |p| ms(t0, p.at.ts));
    let x = plot::range(0.0, end);
    let new_bars = plot::clip_bars(plot::bars(&new, &x), &x, &y);
    let retx_bars = plot::clip_bars(plot::bars(&retx, &x), &x, &y);
    let ack_line = plot::clip(plot::envelope(&plot::steps(&acks), &x), &x, &y);
    let win_line = plot::clip(plot::envelope(&plot::steps(&wins), &x), &x, &y);
    let pins: Vec<Pin> = evidence(&c.findings)
        .filter_map(|(id, frame, text)| {
            let p = packet(t, frame)?;
            let y = match (p.side == sender, p.seq, p.ack) {
                (true, Some(s), _) => (s + u64::from(p.len)) as f64,
                (false, _, Some(a)) => a as f64,
                (_, Some(s), _) => s as f64,
                _ => 0.0,
            };
            Some(Pin {
                x: ms(t0, p.at.ts),
                y,
                id,
                text,
            })
        })
        .collect();
    let title = format!(
        "time-sequence: {} → {} data, ACKs and receive window",
        sender.as_str(),
        sender.peer().as_str()
    );
    let axes = Axes {
        title: &title,
        x_desc: "ms since the connection's first packet",
        y_desc: "stream offset (bytes)",
        x,
        y,
        y_fmt: plot::bytes_tick,
        x_fmt: plot::number_tick,
        legend: true,
    };
    let mut body =
        |ch: &mut Ctx<'_, '_>| -> DrawResult {
            let style = |c: RGBColor| c.stroke_width(1);
            if !ack_line.is_empty() {
                ch.draw_series(std::iter::once(PathElement::new(
                    ack_line.clone(),
                    style(colour::GREEN),
                )))?
                .label("ACK")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour::GREEN));
                ch.draw_series(std::iter::once(PathElement::new(
                    win_line.clone(),
                    style(colour::PURPLE),
                )))?
                .label(if clipped {
                    "ACK + receive window (clipped above)"
                } else {
                    "ACK + receive window"
                })
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour::PURPLE));
            }
            ch.draw_series(new_bars.iter().map(|&(x, lo, hi)| {
                PathElement::new(vec![(x, lo), (x, hi)], style(colour::BLUE))
            }))?
            .label(format!("data segment ({})", new.len()))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour::BLUE));
            if !retx_bars.is_empty() {
                ch.draw_series(retx_bars.iter().map(|&(x, lo, hi)| {
                    PathElement::new(vec![(x, lo), (x, hi)], colour::RED.stroke_width(2))
                }))?
                .label(format!("retransmission ({})", retx.len()))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour::RED));
            }
            Ok(())
        };
    let mut caption = format!(
        "Each vertical bar is a data segment from the {} (its byte range); the green step line is the highest byte the {} has acknowledged, the purple one how far its receive window reaches.",
        sender.as_str(),
        sender.peer().as_str()
    );
    if c.coverage.only.is_some() {
        caption.push_str(
            " The capture holds one direction only, so there are no ACK and window lines.",
        );
    }
    if !t.wscale_known[sender.peer().index()] {
        caption.push_str(
            " The window scale was not in the capture: the window line is a lower bound.",
        );
    }
    Figure::drawn(name, plot::canvas(&mut [(axes, pins, &mut body)]), caption)
}

/// A round limit's colour.
fn limit_colour(l: Limit) -> RGBColor {
    match l {
        Limit::SlowStart => colour::BLUE,
        Limit::CongestionAvoidance => colour::TEAL,
        Limit::Rwnd => colour::PURPLE,
        Limit::Sndbuf => colour::RED,
        Limit::Bottleneck => colour::BROWN,
        Limit::Window => RGBColor(227, 119, 194),
        Limit::App => colour::GREY,
        Limit::Unknown => RGBColor(199, 199, 199),
    }
}

const LIMITS: [Limit; 8] = [
    Limit::SlowStart,
    Limit::CongestionAvoidance,
    Limit::Rwnd,
    Limit::Sndbuf,
    Limit::Bottleneck,
    Limit::Window,
    Limit::App,
    Limit::Unknown,
];

/// Bytes in flight per round (bars coloured by what limited the round),
/// the receiver's window per round, and the flight the dominant window
/// limit held.
pub fn flight(c: &ConnReport) -> Figure {
    let name = "flight";
    let Some(tr) = c.transfer.as_ref().filter(|t| !t.rounds.is_empty()) else {
        return Figure::none(name, "no rounds: too little data, or one direction only");
    };
    let rounds = &tr.rounds;
    let flight_max = rounds.iter().map(|r| r.flight as f64).fold(0.0, f64::max);
    let rwnd_max = rounds.iter().map(|r| r.rwnd as f64).fold(0.0, f64::max);
    let clipped = rwnd_max > flight_max * RWND_HEADROOM;
    let y = plot::y_range(flight_max.max(rwnd_max.min(flight_max * RWND_HEADROOM)));
    let first = rounds[0].index as f64;
    let last = rounds[rounds.len() - 1].index as f64;
    let x = (first - 0.6)..(last + 0.6);
    // many rounds: one bar per pixel column, the highest flight in it
    let bars: Vec<(f64, f64, Limit)> = if rounds.len() > COLUMNS {
        let pts: Vec<(f64, f64, f64)> = rounds
            .iter()
            .map(|r| (r.index as f64, 0.0, r.flight as f64))
            .collect();
        plot::bars(&pts, &x)
            .into_iter()
            .map(|(x, _, hi)| (x, hi, Limit::Unknown))
            .collect()
    } else {
        rounds
            .iter()
            .map(|r| (r.index as f64, r.flight as f64, r.limit))
            .collect()
    };
    let half_width = if rounds.len() > COLUMNS {
        0.5 * (last - first) / COLUMNS as f64
    } else {
        0.4
    };
    let rwnd: Vec<(f64, f64)> = rounds
        .iter()
        .map(|r| (r.index as f64, r.rwnd as f64))
        .collect();
    let rwnd = plot::clip(plot::envelope(&rwnd, &x), &x, &y);
    let cap = tr.bound.filter(|b| {
        matches!(
            b.limit,
            Limit::Sndbuf | Limit::Rwnd | Limit::Bottleneck | Limit::Window
        )
    });
    let pins: Vec<Pin> = evidence(&c.findings)
        .filter_map(|(id, frame, text)| {
            let r = rounds
                .iter()
                .find(|r| (r.first_frame..=r.last_frame).contains(&frame))?;
            Some(Pin {
                x: r.index as f64,
                y: r.flight as f64,
                id,
                text,
            })
        })
        .collect();
    let title = format!(
        "bytes in flight per round: {} → {}",
        tr.sender.as_str(),
        tr.sender.peer().as_str()
    );
    let axes = Axes {
        title: &title,
        x_desc: "round (one RTT each)",
        y_desc: "bytes in flight",
        x,
        y,
        y_fmt: plot::bytes_tick,
        x_fmt: plot::integer_tick,
        legend: true,
    };
    let mut body = |ch: &mut Ctx<'_, '_>| -> DrawResult {
        for l in LIMITS {
            let of: Vec<&(f64, f64, Limit)> = bars.iter().filter(|b| b.2 == l).collect();
            if of.is_empty() {
                continue;
            }
            let col = limit_colour(l);
            ch.draw_series(of.iter().map(|&&(x, h, _)| {
                Rectangle::new([(x - half_width, 0.0), (x + half_width, h)], col.filled())
            }))?
            .label(if rounds.len() > COLUMNS {
                "highest flight per column".to_string()
            } else {
                format!("limit: {}", l.as_str())
            })
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], col.filled()));
        }
        ch.draw_series(std::iter::once(PathElement::new(
            rwnd.clone(),
            colour::PURPLE.stroke_width(2),
        )))?
        .label(if clipped {
            "receiver's window (clipped above)"
        } else {
            "receiver's window"
        })
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour::PURPLE));
        if let Some(b) = cap {
            let (x0, x1) = (first - 0.6, last + 0.6);
            let f = b.flight as f64;
            ch.draw_series(std::iter::once(PathElement::new(
                vec![(x0, f), (x1, f)],
                colour::BROWN.stroke_width(1),
            )))?
            .label(format!("held at {} B ({})", b.flight, b.limit.as_str()))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour::BROWN));
        }
        Ok(())
    };
    let mut caption = String::from(
        "One bar per round (about one RTT, as the kernel counts rounds): the most bytes the sender had in flight, coloured by what limited the round; the purple line is the window the receiver offered.",
    );
    if let Some(b) = cap {
        caption.push_str(&format!(
            " The brown line is the flight the {} limit held: {} B per RTT.",
            b.limit.as_str(),
            b.flight
        ));
    }
    if tr.rounds_dropped > 0 {
        caption.push_str(&format!(
            " {} later rounds were not kept.",
            tr.rounds_dropped
        ));
    }
    Figure::drawn(name, plot::canvas(&mut [(axes, pins, &mut body)]), caption)
}

/// Per-interval counts of the IO graph.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Slot {
    client: u64,
    server: u64,
    bytes: u64,
}

impl Slot {
    fn max(self, o: Slot) -> Slot {
        Slot {
            client: self.client.max(o.client),
            server: self.server.max(o.server),
            bytes: self.bytes.max(o.bytes),
        }
    }
}

/// Packets or datagrams (per direction) and payload bytes per
/// `interval_ms`, as Wireshark's IO graph counts them. With more intervals
/// than pixel columns each column shows the busiest interval in it, so
/// batches one RTT apart stay visible however long the connection.
pub fn io<T: Traced>(t: &T, interval_ms: f64) -> Figure {
    let name = "io";
    if t.is_empty() {
        return Figure::none(name, &format!("no {}", T::UNIT));
    }
    let (first, last) = (t.row(0), t.row(t.len() - 1));
    let iv = interval_ms.max(1e-3);
    let t0 = first.at.ts;
    let n = ((ms(t0, last.at.ts) / iv).floor() as usize).saturating_add(1);
    let reduce = n > 2 * COLUMNS;
    let slots_n = if reduce { COLUMNS } else { n };
    let slot_of = |k: usize| {
        if reduce {
            // in floating point: k × COLUMNS overflows for a capture whose
            // clock spans years at 1 µs intervals
            ((k as f64 * COLUMNS as f64 / n as f64) as usize).min(COLUMNS - 1)
        } else {
            k
        }
    };
    let mut slots = vec![Slot::default(); slots_n];
    let mut cur = (usize::MAX, Slot::default());
    let flush = |(k, s): (usize, Slot), slots: &mut Vec<Slot>| {
        if k != usize::MAX {
            let i = slot_of(k);
            slots[i] = slots[i].max(s);
        }
    };
    for p in t.rows() {
        let k = ((ms(t0, p.at.ts) / iv).floor() as usize).min(n - 1);
        if k != cur.0 {
            flush(cur, &mut slots);
            cur = (k, Slot::default());
        }
        match p.side {
            Side::Client => cur.1.client += 1,
            Side::Server => cur.1.server += 1,
        }
        cur.1.bytes += u64::from(p.len);
    }
    flush(cur, &mut slots);
    let width = if reduce {
        n as f64 * iv / COLUMNS as f64
    } else {
        iv
    };
    let x = 0.0..(slots_n as f64 * width);
    let busy: Vec<(f64, Slot)> = slots
        .iter()
        .enumerate()
        .filter(|(_, s)| **s != Slot::default())
        .map(|(i, s)| ((i as f64 + 0.5) * width, *s))
        .collect();
    let pkt_max = busy
        .iter()
        .map(|(_, s)| (s.client + s.server) as f64)
        .fold(1.0, f64::max);
    let byte_max = busy.iter().map(|(_, s)| s.bytes as f64).fold(1.0, f64::max);
    let per = if reduce {
        format!("busiest {iv} ms interval per pixel column")
    } else {
        format!("per {iv} ms")
    };
    let t_pkts = format!("IO graph: {} {per}", T::UNIT);
    let t_bytes = format!("IO graph: {} {per}", T::BYTES);
    let y_pk = format!("{} / {iv} ms", T::UNIT);
    let y_by = format!("bytes / {iv} ms");
    let stroke = if reduce { 1 } else { 2 };
    let mut packets = |ch: &mut Ctx<'_, '_>| -> DrawResult {
        ch.draw_series(busy.iter().filter(|(_, s)| s.server > 0).map(|&(x, s)| {
            PathElement::new(
                vec![(x, 0.0), (x, s.server as f64)],
                colour::BLUE.stroke_width(stroke),
            )
        }))?
        .label("server → client")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour::BLUE));
        ch.draw_series(busy.iter().filter(|(_, s)| s.client > 0).map(|&(x, s)| {
            let base = s.server as f64;
            PathElement::new(
                vec![(x, base), (x, base + s.client as f64)],
                colour::ORANGE.stroke_width(stroke),
            )
        }))?
        .label("client → server (stacked)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour::ORANGE));
        Ok(())
    };
    let mut bytes = |ch: &mut Ctx<'_, '_>| -> DrawResult {
        ch.draw_series(busy.iter().filter(|(_, s)| s.bytes > 0).map(|&(x, s)| {
            PathElement::new(
                vec![(x, 0.0), (x, s.bytes as f64)],
                colour::GREEN.stroke_width(stroke),
            )
        }))?;
        Ok(())
    };
    let x_desc = "ms since the connection's first packet";
    let svg = plot::canvas(&mut [
        (
            Axes {
                title: &t_pkts,
                x_desc,
                y_desc: &y_pk,
                x: x.clone(),
                y: plot::y_range(pkt_max),
                y_fmt: plot::number_tick,
                x_fmt: plot::number_tick,
                legend: true,
            },
            Vec::new(),
            &mut packets,
        ),
        (
            Axes {
                title: &t_bytes,
                x_desc,
                y_desc: &y_by,
                x,
                y: plot::range(0.0, byte_max),
                y_fmt: plot::bytes_tick,
                x_fmt: plot::number_tick,
                legend: false,
            },
            Vec::new(),
            &mut bytes,
        ),
    ]);
    Figure::drawn(
        name,
        svg,
        format!(
            "{} and {} per {iv} ms (`--io-interval`). A sender held back by a window sends in batches one RTT apart: spikes with silence between them.",
            capitalized(T::UNIT),
            T::BYTES
        ),
    )
}

/// Findings about the path's RTT itself, pinned on the RTT graph (the
/// others cite samples only by chance).
const RTT_FINDINGS: [&str; 1] = ["queueing-delay"];

/// Every RTT sample over time (data/ACK and timestamp echoes), as a full
/// round trip: the half it measured plus the other half's minimum. The
/// minimum RTT is the baseline; queueing shows as a band rising above it.
pub fn rtt<T: Traced>(t: &T) -> Figure {
    let name = "rtt";
    if t.is_empty() {
        return Figure::none(name, &format!("no {}", T::UNIT));
    }
    let t0 = t.row(0).at.ts;
    if t.samples().is_empty() {
        return Figure::none(name, T::NO_RTT);
    }
    let (h_c, h_s) = t.halves();
    let series = |side: Side| -> Vec<(f64, f64)> {
        let other = match side {
            Side::Client => h_s,
            Side::Server => h_c,
        };
        t.samples()
            .iter()
            .filter(|(s, _)| *s == side)
            .map(|(_, r)| (ms(t0, r.at.ts), r.d.as_millis_f64() + other))
            .collect()
    };
    let via_server = series(Side::Server);
    let via_client = series(Side::Client);
    let end = ms(t0, t.row(t.len() - 1).at.ts);
    let x = plot::range(0.0, end);
    let y_max = via_server
        .iter()
        .chain(&via_client)
        .map(|p| p.1)
        .fold(0.0, f64::max);
    let min = t.min_rtt();
    let y = plot::y_range(y_max.max(min.unwrap_or(0.0)));
    let pins: Vec<Pin> = evidence(t.findings())
        .filter(|(id, _, _)| RTT_FINDINGS.contains(id))
        .filter_map(|(id, frame, text)| {
            let (side, r) = t.samples().iter().find(|(_, r)| r.at.frame == frame)?;
            let other = if *side == Side::Client { h_s } else { h_c };
            Some(Pin {
                x: ms(t0, r.at.ts),
                y: r.d.as_millis_f64() + other,
                id,
                text,
            })
        })
        .collect();
    let (n_s, n_c) = (via_server.len(), via_client.len());
    let via_server = plot::clip(plot::envelope(&via_server, &x), &x, &y);
    let via_client = plot::clip(plot::envelope(&via_client, &x), &x, &y);
    let axes = Axes {
        title: "RTT samples over time",
        x_desc: "ms since the connection's first packet",
        y_desc: "RTT (ms)",
        x: x.clone(),
        y,
        y_fmt: plot::number_tick,
        x_fmt: plot::number_tick,
        legend: true,
    };
    let mut body = |ch: &mut Ctx<'_, '_>| -> DrawResult {
        for (pts, n, col, what) in [
            (&via_server, n_s, colour::BLUE, "server's half"),
            (&via_client, n_c, colour::ORANGE, "client's half"),
        ] {
            if pts.is_empty() {
                continue;
            }
            ch.draw_series(
                pts.iter()
                    .map(|&(x, y)| Circle::new((x, y), 2, col.filled())),
            )?
            .label(format!("sample of the {what} ({n})"))
            .legend(move |(x, y)| Circle::new((x + 6, y), 3, col.filled()));
        }
        if let Some(m) = min {
            ch.draw_series(std::iter::once(PathElement::new(
                vec![(x.start, m), (x.end, m)],
                colour::BROWN.stroke_width(2),
            )))?
            .label(format!("minimum RTT {m:.2} ms"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour::BROWN));
        }
        Ok(())
    };
    let mut caption = String::from(T::RTT_CAPTION);
    if min.is_none() {
        caption.push_str(" One half of the path was never sampled: the dots are that half alone.");
    }
    Figure::drawn(name, plot::canvas(&mut [(axes, pins, &mut body)]), caption)
}

/// `s` with its first letter in capitals.
fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
