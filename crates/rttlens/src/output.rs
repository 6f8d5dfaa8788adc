//! Where a report goes (`-o FILE` or standard output) and the settings of
//! the pictures (`--format html`, `--svg DIR`), shared by the subcommands.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
#[cfg(feature = "lab")]
use rttlens_core::capture::CaptureReader;
#[cfg(any(feature = "probe", feature = "lab"))]
use rttlens_core::model::Connection;
use rttlens_core::pipeline;
#[cfg(any(feature = "probe", feature = "lab"))]
use rttlens_core::pipeline::CaptureSummary;
use rttlens_report::html::HtmlOptions;
#[cfg(any(feature = "probe", feature = "lab"))]
use rttlens_report::{html::HtmlRenderer, Renderer, Source};

use crate::args::{Format, PictureArgs};

/// The report's destination: the `-o` file, else standard output.
///
/// # Errors
/// The file could not be created.
pub fn open(p: &PictureArgs) -> anyhow::Result<Box<dyn Write>> {
    Ok(match &p.output {
        Some(path) => Box::new(BufWriter::new(
            File::create(path).with_context(|| format!("cannot write {}", path.display()))?,
        )),
        None => Box::new(BufWriter::new(io::stdout())),
    })
}

/// HTML settings from the arguments; `top` connections are drawn.
pub fn html_options(p: &PictureArgs, top: usize) -> HtmlOptions {
    HtmlOptions {
        top,
        io_interval_ms: p.io_interval,
        ..HtmlOptions::default()
    }
}

/// The `--svg` directory, created when missing.
///
/// # Errors
/// It could not be created.
pub fn svg_dir(p: &PictureArgs) -> anyhow::Result<Option<std::path::PathBuf>> {
    if let Some(d) = &p.svg {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    Ok(p.svg.clone())
}

/// Whether the packets must be kept for pictures.
pub fn wants_trace(format: Format, p: &PictureArgs) -> bool {
    matches!(format, Format::Html) || p.svg.is_some()
}

/// A capture's part of an HTML page, from connections already analysed
/// (with their traces).
#[cfg(any(feature = "probe", feature = "lab"))]
///
/// # Errors
/// Writing an SVG file failed.
pub fn fragment(
    html: &HtmlOptions,
    svg: Option<std::path::PathBuf>,
    (prefix, title, source): (&str, &str, &str),
    conns: Vec<Connection>,
    summary: &CaptureSummary,
) -> io::Result<Vec<u8>> {
    let mut r = HtmlRenderer::fragment(html.clone(), prefix, title).with_svg_dir(svg);
    r.begin(
        &mut io::sink(),
        &Source {
            name: source.to_string(),
        },
    )?;
    for c in conns {
        r.connection(&mut io::sink(), c)?;
    }
    let mut buf = Vec::new();
    r.end(&mut buf, summary)?;
    Ok(buf)
}

/// A capture's part of an HTML page, analysing the file at `path` (with
/// traces).
#[cfg(feature = "lab")]
///
/// # Errors
/// The capture could not be read, or an SVG file not written.
pub fn fragment_of_file(
    html: &HtmlOptions,
    svg: Option<std::path::PathBuf>,
    (prefix, title): (&str, &str),
    path: &std::path::Path,
) -> anyhow::Result<Vec<u8>> {
    let mut reader =
        CaptureReader::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut conns = Vec::new();
    let summary = pipeline::run_with(
        &mut reader,
        &pipeline::Options {
            trace: true,
            ..Default::default()
        },
        &mut |c| conns.push(c),
        &mut |_| {},
    )
    .with_context(|| format!("cannot analyse {}", path.display()))?;
    Ok(fragment(
        html,
        svg,
        (prefix, title, &path.display().to_string()),
        conns,
        &summary,
    )?)
}

/// Text output (the lab's table, the probe's report) as the HTML page's
/// preface.
#[cfg(any(feature = "probe", feature = "lab"))]
pub fn preface(text: &[u8]) -> String {
    format!(
        "<pre class=\"preface\">{}</pre>\n",
        rttlens_report::html::esc(&String::from_utf8_lossy(text))
    )
}

/// The progress of `analyze`: a bar on a terminal (bytes, packets/s, ETA),
/// plain lines on stderr about once a second with `--progress` elsewhere,
/// or nothing.
pub struct ProgressDisplay {
    bar: ProgressBar,
    /// Plain lines (`--progress` without a terminal).
    plain: bool,
    total: Option<u64>,
    started: Instant,
    last_line: Instant,
}

impl ProgressDisplay {
    /// `show`: any progress at all; `tty`: stderr is a terminal; `total`:
    /// the files' size in bytes, when known.
    pub fn new(show: bool, tty: bool, total: Option<u64>) -> ProgressDisplay {
        let bar = match (show && tty, total) {
            (true, Some(n)) => {
                let b = ProgressBar::new(n);
                b.set_style(
                    ProgressStyle::with_template(
                        "{spinner} {bytes}/{total_bytes} {wide_bar} {bytes_per_sec} {msg} eta {eta}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                b
            }
            (true, None) => ProgressBar::new_spinner(),
            (false, _) => ProgressBar::hidden(),
        };
        let now = Instant::now();
        ProgressDisplay {
            bar,
            plain: show && !tty,
            total,
            started: now,
            last_line: now,
        }
    }

    /// The pipeline's news.
    pub fn update(&mut self, p: pipeline::Progress) {
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let rate = p.frames as f64 / secs;
        self.bar.set_position(p.bytes);
        self.bar
            .set_message(format!("{:.2} M packets/s", rate / 1e6));
        if self.plain && self.last_line.elapsed() >= Duration::from_secs(1) {
            self.last_line = Instant::now();
            let mb = p.bytes as f64 / 1e6;
            match self.total {
                Some(t) if t > 0 && p.bytes > 0 => {
                    let eta = secs * (t.saturating_sub(p.bytes)) as f64 / p.bytes as f64;
                    eprintln!(
                        "rttlens: {mb:.1} of {:.1} MB ({:.0} %), {:.2} M packets/s, eta {eta:.0} s",
                        t as f64 / 1e6,
                        100.0 * p.bytes as f64 / t as f64,
                        rate / 1e6
                    );
                }
                _ => eprintln!("rttlens: {mb:.1} MB read, {:.2} M packets/s", rate / 1e6),
            }
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
