//! HTML report: one self-contained file (inline SVG, CSS and a few lines of
//! script; no network, no external fonts) with the pictures people read.
//!
//! Per capture: an overview (the capture's summary, a count per finding id,
//! for 20 connections or more the population view of [`population`] with
//! the capture over time, a sortable table of every connection linking to
//! its section); per connection shown in full (the `top` costliest, as in
//! the text output):
//! the ladder of phases, the findings with their evidence and fix, and five
//! graphs with the findings pinned to their frames: a ladder diagram, the
//! time-sequence graph, bytes in flight per round, an IO graph and the RTT
//! samples. [`figures`] gives the graphs alone (`--svg DIR`). Per QUIC
//! connection (every one, after the TCP ones, [`quic`]): its ladder of
//! phases, findings and the graphs that apply to QUIC, the ladder diagram,
//! IO graph and RTT samples, drawn by the same code ([`traced`]).
//!
//! The probe's `--path` gets its own graph ([`path`]).
//!
//! The graphs need the packets: run the pipeline with
//! [`rttlens_core::pipeline::Options::trace`]. Only the connections kept
//! for a section hold their traces until the end.

pub mod charts;
pub mod ladder;
mod page;
pub mod path;
pub mod plot;
pub mod population;
pub mod quic;
mod requests;
pub mod traced;

use std::cmp::Ordering;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use rttlens_core::model::Finding;
use rttlens_core::model::Phase;
use rttlens_core::model::{ConnReport, Connection, QuicReport, Transport};
use rttlens_core::pipeline::CaptureSummary;

use crate::{costliest_first, slowest_first, Renderer, Source};

pub use page::page;

/// One graph of a connection.
#[derive(Debug, Clone)]
pub struct Figure {
    /// Stable name: `ladder`, `time-sequence`, `flight`, `io`, `rtt`.
    pub name: &'static str,
    /// The SVG document, or why there is none.
    pub svg: Result<String, String>,
    /// What the graph shows and how to read it.
    pub caption: String,
}

impl Figure {
    /// A graph that could not be drawn, and why.
    pub fn none(name: &'static str, why: &str) -> Figure {
        Figure {
            name,
            svg: Err(why.to_string()),
            caption: String::new(),
        }
    }

    /// What the graph is called on the page.
    pub fn title(&self) -> &'static str {
        match self.name {
            "ladder" => "Ladder diagram",
            "time-sequence" => "Time-sequence graph",
            "flight" => "Bytes in flight per round",
            "io" => "IO graph",
            "rtt" => "RTT samples",
            "over-time" => "The capture over time",
            "path" => "The path, hop by hop",
            _ => "Graph",
        }
    }

    /// A drawn graph (or the drawing error).
    pub fn drawn(name: &'static str, svg: Result<String, String>, caption: String) -> Figure {
        Figure { name, svg, caption }
    }
}

/// Settings of the HTML report and of `--svg`.
#[derive(Debug, Clone)]
pub struct HtmlOptions {
    /// Connections shown in full with their graphs (the costliest).
    pub top: usize,
    /// Interval of the IO graph (ms).
    pub io_interval_ms: f64,
    /// Packets drawn in the ladder diagram.
    pub ladder_packets: usize,
}

impl Default for HtmlOptions {
    fn default() -> Self {
        HtmlOptions {
            top: 10,
            io_interval_ms: 1.0,
            ladder_packets: 60,
        }
    }
}

/// Rows of the connections table at most (the costliest first); the
/// counts per finding id cover every connection.
pub const MAX_ROWS: usize = 5000;

/// The graphs of one connection, in reading order. Without a trace only
/// the flight per round can be drawn.
pub fn figures(c: &ConnReport, o: &HtmlOptions) -> Vec<Figure> {
    let Some(t) = c.trace.as_deref() else {
        return vec![charts::flight(c)];
    };
    let v = traced::View { c, t };
    vec![
        ladder::ladder(&v, o.ladder_packets),
        charts::time_sequence(c, t),
        charts::flight(c),
        charts::io(&v, o.io_interval_ms),
        charts::rtt(&v),
    ]
}

/// Write each drawn graph of a connection to `dir/PREFIXCONN-NAME.svg`,
/// `conn` naming it (`conn-INDEX` for TCP, `quic-INDEX` for QUIC);
/// returns the paths written.
///
/// # Errors
/// A file could not be written.
pub fn write_svgs(
    dir: &Path,
    prefix: &str,
    conn: &str,
    figs: &[Figure],
) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for f in figs {
        if let Ok(svg) = &f.svg {
            let p = dir.join(format!("{prefix}{conn}-{}.svg", f.name));
            std::fs::write(&p, svg)?;
            out.push(p);
        }
    }
    Ok(out)
}

/// Escape text for HTML and SVG (element content and quoted attributes).
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// One line of the connections table.
#[derive(Debug, Clone)]
struct Row {
    transport: Transport,
    index: u64,
    client: String,
    server: String,
    protocol: &'static str,
    frames: u64,
    start_s: f64,
    duration_ms: f64,
    ttfb_ms: Option<f64>,
    findings: Vec<(&'static str, f64)>,
    findings_ms: f64,
}

impl Row {
    fn of(c: &ConnReport) -> Row {
        Row {
            transport: Transport::Tcp,
            index: c.index,
            client: c.client.clone(),
            server: c.server.clone(),
            protocol: c.protocol,
            frames: c.frames,
            start_s: c.start_s,
            duration_ms: c.duration_ms,
            ttfb_ms: c.ladder.iter().find(|p| p.name == "request").map(|p| p.ms),
            findings: c.findings.iter().map(|f| (f.id, f.cost.ms)).collect(),
            findings_ms: c.findings_ms(),
        }
    }

    fn of_quic(q: &QuicReport) -> Row {
        Row {
            transport: Transport::Quic,
            index: q.index,
            client: q.client.clone(),
            server: q.server.clone(),
            protocol: "quic",
            frames: q.datagrams[0] + q.datagrams[1],
            start_s: q.start_s,
            duration_ms: q.duration_ms,
            ttfb_ms: q.ladder.iter().find(|p| p.name == "request").map(|p| p.ms),
            findings: q.findings.iter().map(|f| (f.id, f.cost.ms)).collect(),
            findings_ms: q.findings_ms(),
        }
    }

    fn order(a: &Row, b: &Row) -> Ordering {
        costliest_first(
            (a.findings_ms, a.duration_ms, a.index),
            (b.findings_ms, b.duration_ms, b.index),
        )
        .then(a.transport.cmp(&b.transport))
    }
}

/// Renders one capture's analysis as HTML: a whole page, or (for `lab`,
/// several captures in one page) a fragment for [`page`].
#[derive(Debug)]
pub struct HtmlRenderer {
    opts: HtmlOptions,
    /// Prefix of every id in the fragment (unique per capture in a page).
    prefix: String,
    /// Heading of the capture's section.
    title: String,
    /// Write a whole page (else a fragment).
    standalone: bool,
    /// Also write each graph to this directory.
    svg_dir: Option<PathBuf>,
    rows: Vec<Row>,
    kept: Vec<ConnReport>,
    /// The QUIC connections, each shown in full after the TCP ones.
    quic: Vec<QuicReport>,
    source: String,
}

impl HtmlRenderer {
    /// A renderer writing a whole page.
    pub fn new(opts: HtmlOptions) -> HtmlRenderer {
        HtmlRenderer {
            opts,
            prefix: String::new(),
            title: String::new(),
            standalone: true,
            svg_dir: None,
            rows: Vec::new(),
            kept: Vec::new(),
            quic: Vec::new(),
            source: String::new(),
        }
    }

    /// A renderer writing a fragment for [`page`]: `prefix` keeps its ids
    /// apart from the other fragments', `title` heads it.
    pub fn fragment(opts: HtmlOptions, prefix: &str, title: &str) -> HtmlRenderer {
        HtmlRenderer {
            prefix: prefix.to_string(),
            title: title.to_string(),
            standalone: false,
            ..HtmlRenderer::new(opts)
        }
    }

    /// Also write each graph of the connections shown to `dir` as SVG.
    pub fn with_svg_dir(mut self, dir: Option<PathBuf>) -> HtmlRenderer {
        self.svg_dir = dir;
        self
    }

    /// Whether `c` would be shown in full (among the `top` costliest so
    /// far): a caller feeding several renderers clones only those.
    pub fn wants(&self, c: &ConnReport) -> bool {
        self.kept.len() < self.opts.top.max(1)
            || self
                .kept
                .last()
                .is_some_and(|last| slowest_first(c, last) == Ordering::Less)
    }

    fn keep(&mut self, c: ConnReport) {
        if !self.wants(&c) {
            return;
        }
        let at = self
            .kept
            .partition_point(|k| slowest_first(k, &c) != Ordering::Greater);
        self.kept.insert(at, c);
        self.kept.truncate(self.opts.top.max(1));
    }

    /// The capture's part of the page (overview and sections).
    fn body(&mut self, w: &mut dyn Write, summary: &CaptureSummary) -> io::Result<()> {
        let p = &self.prefix;
        self.rows.sort_by(Row::order);
        let shown: Vec<u64> = self.kept.iter().map(|c| c.index).collect();
        writeln!(w, "<section class=\"capture\" id=\"{p}overview\">")?;
        if !self.title.is_empty() {
            writeln!(w, "<h2>{}</h2>", esc(&self.title))?;
        }
        self.quic.sort_by_key(|q| q.index);
        summary_list(w, &self.source, summary, self.quic.len())?;
        finding_counts(w, &self.rows)?;
        if crate::population::shown(summary) {
            let over_time = population::over_time(summary);
            if let (Some(dir), Some(Ok(svg))) = (&self.svg_dir, over_time.as_ref().map(|f| &f.svg))
            {
                std::fs::write(dir.join(format!("{p}population-over-time.svg")), svg)?;
            }
            population::section(w, p, summary, &shown, over_time.as_ref())?;
        }
        writeln!(
            w,
            "<h3>Connections</h3>\n<p class=\"note\">{} connection{}; click a heading to sort. {} shown in full below{}.</p>",
            self.rows.len(),
            if self.rows.len() == 1 { "" } else { "s" },
            // every QUIC connection is shown in full, after the TCP ones
            match shown.len() + self.quic.len() {
                n if n == self.rows.len() && n == 1 => "It is".to_string(),
                n if n == self.rows.len() => "All are".to_string(),
                n => format!("The {n} costliest are"),
            },
            if self.rows.len() > MAX_ROWS {
                format!("; the table lists the {MAX_ROWS} costliest")
            } else {
                String::new()
            }
        )?;
        writeln!(
            w,
            "<table class=\"conns sortable\"><thead><tr><th data-type=\"num\">#</th><th>client</th><th>server</th><th>protocol</th><th data-type=\"num\">frames</th><th data-type=\"num\">start s</th><th data-type=\"num\">total ms</th><th data-type=\"num\">TTFB ms</th><th data-type=\"num\">findings ms</th><th>findings</th></tr></thead><tbody>"
        )?;
        for r in self.rows.iter().take(MAX_ROWS) {
            let idx = match r.transport {
                Transport::Quic => format!("<a href=\"#{p}quic-{0}\">q{0}</a>", r.index),
                Transport::Tcp if shown.contains(&r.index) => {
                    format!("<a href=\"#{p}conn-{0}\">{0}</a>", r.index)
                }
                Transport::Tcp => r.index.to_string(),
            };
            let ids: Vec<&str> = r.findings.iter().map(|f| f.0).collect();
            writeln!(
                w,
                "<tr><td data-v=\"{}\">{idx}</td><td>{}</td><td>{}</td><td>{}</td><td data-v=\"{}\">{}</td><td data-v=\"{}\">{:.3}</td><td data-v=\"{}\">{:.1}</td><td data-v=\"{}\">{}</td><td data-v=\"{}\">{:.1}</td><td>{}</td></tr>",
                r.index,
                esc(&r.client),
                esc(&r.server),
                r.protocol,
                r.frames,
                r.frames,
                r.start_s,
                r.start_s,
                r.duration_ms,
                r.duration_ms,
                r.ttfb_ms.unwrap_or(-1.0),
                r.ttfb_ms.map_or("–".to_string(), |v| format!("{v:.1}")),
                r.findings_ms,
                r.findings_ms,
                esc(&ids.join(", "))
            )?;
        }
        writeln!(w, "</tbody></table>\n</section>")?;
        let kept = std::mem::take(&mut self.kept);
        for c in &kept {
            let figs = figures(c, &self.opts);
            if let Some(dir) = &self.svg_dir {
                write_svgs(dir, p, &format!("conn-{}", c.index), &figs)?;
            }
            connection(w, p, c, &figs)?;
        }
        quic::section(w, p, &self.quic, &self.opts, self.svg_dir.as_deref())?;
        Ok(())
    }
}

impl Renderer for HtmlRenderer {
    fn begin(&mut self, _w: &mut dyn Write, source: &Source) -> io::Result<()> {
        // the page is written at the end: its overview comes first
        self.source = source.name.clone();
        Ok(())
    }

    fn connection(&mut self, _w: &mut dyn Write, conn: Connection) -> io::Result<()> {
        match conn {
            Connection::Tcp(c) => {
                self.rows.push(Row::of(&c));
                self.keep(*c);
            }
            Connection::Quic(q) => {
                self.rows.push(Row::of_quic(&q));
                self.quic.push(*q);
            }
        }
        Ok(())
    }

    fn end(&mut self, w: &mut dyn Write, summary: &CaptureSummary) -> io::Result<()> {
        if self.standalone {
            let mut body = Vec::new();
            self.body(&mut body, summary)?;
            page(w, &self.source, "", &[body])
        } else {
            self.body(w, summary)
        }
    }
}

fn summary_list(
    w: &mut dyn Write,
    source: &str,
    s: &CaptureSummary,
    quic: usize,
) -> io::Result<()> {
    writeln!(w, "<dl class=\"summary\">")?;
    let mut item = |k: &str, v: String| writeln!(w, "<dt>{k}</dt><dd>{}</dd>", esc(&v));
    item("capture", source.to_string())?;
    item("format", s.format.clone())?;
    let frames = match s.quic_datagrams {
        0 => format!(
            "{} ({} TCP segments, {} other)",
            s.frames, s.tcp_segments, s.other_packets
        ),
        q => format!(
            "{} ({} TCP segments, {q} QUIC datagrams, {} other)",
            s.frames, s.tcp_segments, s.other_packets
        ),
    };
    item("frames", frames)?;
    item("duration", format!("{:.3} s", s.duration_s))?;
    let connections = match quic {
        0 => format!(
            "{} (at most {} open at once)",
            s.connections, s.peak_open_connections
        ),
        q => format!(
            "{} TCP (at most {} open at once), {q} QUIC",
            s.connections, s.peak_open_connections
        ),
    };
    item("connections", connections)?;
    let q = &s.quality;
    let quality = if q.is_clean() {
        "clean".to_string()
    } else {
        q.notes().join("; ")
    };
    item("quality", quality)?;
    writeln!(w, "</dl>")
}

fn finding_counts(w: &mut dyn Write, rows: &[Row]) -> io::Result<()> {
    let mut by: Vec<(&str, u64, f64)> = Vec::new();
    for (id, ms) in rows.iter().flat_map(|r| r.findings.iter()) {
        match by.iter_mut().find(|b| b.0 == *id) {
            Some(b) => {
                b.1 += 1;
                b.2 += ms;
            }
            None => by.push((id, 1, *ms)),
        }
    }
    by.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(b.0)));
    writeln!(w, "<h3>Findings</h3>")?;
    if by.is_empty() {
        return writeln!(
            w,
            "<p class=\"note\">No finding: nothing cost more than it should.</p>"
        );
    }
    writeln!(
        w,
        "<table class=\"finding-counts sortable\"><thead><tr><th>finding</th><th data-type=\"num\">connections</th><th data-type=\"num\">total cost ms</th></tr></thead><tbody>"
    )?;
    for (id, n, ms) in by {
        writeln!(
            w,
            "<tr><td>{id}</td><td data-v=\"{n}\">{n}</td><td data-v=\"{ms}\">{ms:.1}</td></tr>"
        )?;
    }
    writeln!(w, "</tbody></table>")
}

fn connection(w: &mut dyn Write, p: &str, c: &ConnReport, figs: &[Figure]) -> io::Result<()> {
    writeln!(
        w,
        "<section class=\"conn\" id=\"{p}conn-{}\">\n<h3>connection {} <span class=\"ends\">{} → {}</span></h3>",
        c.index,
        c.index,
        esc(&c.client),
        esc(&c.server)
    )?;
    let mut meta = format!(
        "{} · {} frames ({}–{}) · {:.1} ms · vantage {}",
        c.protocol,
        c.frames,
        c.first_frame,
        c.last_frame,
        c.duration_ms,
        c.vantage.as_str()
    );
    match &c.rtt {
        Some(r) => meta.push_str(&format!(
            " · RTT {:.2} ms min, {:.2} ms median ({})",
            r.min_ms,
            r.median_ms,
            r.method.as_str()
        )),
        None => meta.push_str(" · RTT unknown"),
    }
    if let Some(t) = &c.tls {
        meta.push_str(&format!(" · TLS {} {}", t.info.version, t.kind));
        if let Some(a) = &t.info.alpn {
            meta.push_str(&format!(" · ALPN {a}"));
        }
        if let Some(d) = &t.decryption {
            meta.push_str(&format!(
                " · decryption {}: {} + {} records opened{}",
                serde_json::to_value(d.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                d.records[0],
                d.records[1],
                if d.failed + d.cut > 0 {
                    format!(", {} did not open, {} cut", d.failed, d.cut)
                } else {
                    String::new()
                }
            ));
        }
    }
    if c.coverage.mid_stream {
        meta.push_str(" · started mid-connection");
    }
    if let Some(s) = c.coverage.only {
        meta.push_str(&format!(" · only the {}'s packets", s.as_str()));
    }
    writeln!(w, "<p class=\"meta\">{}</p>", esc(&meta))?;
    for n in &c.notes {
        writeln!(w, "<p class=\"note\">{}</p>", esc(n))?;
    }
    phases(w, c)?;
    requests::requests(w, c)?;
    finding_articles(w, &c.findings)?;
    for f in figs {
        figure(w, f)?;
    }
    writeln!(w, "</section>")
}

/// Each finding with its cost, evidence frames and fix (or a note that
/// there is none).
fn finding_articles(w: &mut dyn Write, findings: &[Finding]) -> io::Result<()> {
    if findings.is_empty() {
        writeln!(w, "<p class=\"note\">No finding on this connection.</p>")?;
    }
    for f in findings {
        writeln!(
            w,
            "<article class=\"finding\" data-finding=\"{}\"><h4><code>{}</code> {}</h4>\n<p class=\"cost\">cost {} · confidence {} ({})</p>\n<ul class=\"evidence\">",
            f.id,
            f.id,
            esc(&crate::words::title(f)),
            esc(&f.cost.describe()),
            f.confidence.level.as_str(),
            esc(&crate::words::why(&f.confidence))
        )?;
        for e in &f.evidence {
            writeln!(
                w,
                "<li><span class=\"frame\">frame {}</span> {}</li>",
                e.frame,
                esc(&crate::words::evidence(e))
            )?;
        }
        writeln!(
            w,
            "</ul>\n<p class=\"fix\"><b>fix</b> {}</p>\n<p class=\"refs\">{}</p></article>",
            esc(&crate::words::fix(f)),
            esc(&f.references.join("; "))
        )?;
    }
    Ok(())
}

/// A graph with its caption, or why it was not drawn.
fn figure(w: &mut dyn Write, f: &Figure) -> io::Result<()> {
    match &f.svg {
        Ok(svg) => writeln!(
            w,
            "<figure class=\"graph\" data-graph=\"{}\">\n{}<figcaption><b>{}.</b> {}</figcaption>\n</figure>",
            f.name,
            svg,
            f.title(),
            esc(&f.caption)
        ),
        Err(why) => writeln!(
            w,
            "<p class=\"nograph\" data-graph=\"{}\"><b>{}:</b> not drawn, {}.</p>",
            f.name,
            f.title(),
            esc(why)
        ),
    }
}

/// The ladder of phases as a table with a bar per phase (its share of the
/// connection's time).
fn phases(w: &mut dyn Write, c: &ConnReport) -> io::Result<()> {
    phase_table(w, &c.ladder)
}

/// [`phases`] of any ladder (a TCP or a QUIC connection's).
fn phase_table(w: &mut dyn Write, ladder: &[Phase]) -> io::Result<()> {
    if ladder.is_empty() {
        return Ok(());
    }
    let total: f64 = ladder.iter().map(|p| p.ms).sum::<f64>().max(1e-9);
    writeln!(
        w,
        "<table class=\"phases\"><thead><tr><th>phase</th><th>ms</th><th>RTTs</th><th>frames</th><th class=\"bar\"></th><th>what</th></tr></thead><tbody>"
    )?;
    for ph in ladder {
        writeln!(
            w,
            "<tr><td>{}</td><td class=\"n\">{:.2}</td><td class=\"n\">{:.2}</td><td class=\"n\">{}→{}</td><td class=\"bar\"><span style=\"width:{:.1}%\"></span></td><td>{}</td></tr>",
            ph.name,
            ph.ms,
            ph.rtts,
            ph.start_frame,
            ph.end_frame,
            100.0 * ph.ms / total,
            esc(&crate::words::phase_detail(ph))
        )?;
    }
    writeln!(w, "</tbody></table>")
}
