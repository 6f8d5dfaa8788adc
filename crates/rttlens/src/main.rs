//! `rttlens`: where the time went, counted in round trips, and why.
//!
//! A thin command line over `rttlens-core` (the engine) and `rttlens-report`
//! (the renderers): it parses arguments, opens the input, picks a renderer
//! and maps errors to exit codes (0 ok, 1 target failure, 2 usage or
//! unreadable input).
#![forbid(unsafe_code)]

mod args;
mod bench;
mod lab;
mod output;
mod probe;

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use rttlens_core::capture::CaptureReader;
use rttlens_core::pipeline;
use rttlens_report::html::HtmlRenderer;
use rttlens_report::json::JsonRenderer;
use rttlens_report::text::TextRenderer;
use rttlens_report::{Renderer, Source};

use args::{AnalyzeArgs, Cli, Command, ConnSelector, Format};

// mimalloc: the analysis allocates per connection (trackers, reports);
// glibc malloc/free took ~8 % of the pipeline's time on the benchmark.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Input could not be read or is not a capture.
const EXIT_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // a closed pipe (`| head`) is not an error
            if e.downcast_ref::<io::Error>()
                .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("rttlens: {e:#}");
            ExitCode::from(EXIT_INPUT)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Analyze(a) => analyze(a),
        Command::Lab(a) => lab::run(a),
        Command::Probe(a) => probe::run(a),
        Command::Bench(a) => bench::run(a),
    }
}

fn analyze(args: AnalyzeArgs) -> anyhow::Result<ExitCode> {
    let path = args.file.clone();
    let mut reader =
        CaptureReader::open(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let total = if path.as_os_str() == "-" {
        None
    } else {
        std::fs::metadata(&path).ok().map(|m| m.len())
    };
    let tty = io::stderr().is_terminal();
    let show_progress = args.progress || (!args.no_progress && tty);
    // `--progress` without a terminal: plain lines about once a second
    // (indicatif draws only on terminals)
    let plain = args.progress && !tty;
    let mut last_line = std::time::Instant::now();
    let bar = match (show_progress, total) {
        (true, Some(n)) => {
            let b = ProgressBar::new(n);
            b.set_style(
                ProgressStyle::with_template(
                    "{spinner} {bytes}/{total_bytes} {wide_bar} {bytes_per_sec} eta {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b
        }
        (true, None) => ProgressBar::new_spinner(),
        (false, _) => ProgressBar::hidden(),
    };
    let pics = &args.pictures;
    let mut out = output::open(pics)?;
    let html = output::html_options(pics, args.top);
    let svg_dir = output::svg_dir(pics)?;
    let mut renderer: Box<dyn Renderer> = match args.format {
        Format::Text => Box::new(TextRenderer::new(args.top, args.rounds)),
        Format::Json => Box::new(JsonRenderer::default()),
        Format::Html => Box::new(HtmlRenderer::new(html.clone()).with_svg_dir(svg_dir.clone())),
    };
    // `--svg` beside text or JSON: the HTML renderer draws the graphs of
    // the connections it would show and writes only the SVG files
    let mut svg_only = match (args.format, svg_dir) {
        (Format::Html, _) | (_, None) => None,
        (_, dir) => Some(HtmlRenderer::new(html).with_svg_dir(dir)),
    };
    let options = pipeline::Options {
        trace: output::wants_trace(args.format, pics),
    };
    let source = Source {
        name: path.display().to_string(),
    };
    renderer.begin(&mut out, &source)?;
    let mut io_err: Option<io::Error> = None;
    let selectors = args.conn.clone();
    let summary = pipeline::run_with(
        &mut reader,
        options,
        &mut |conn| {
            if io_err.is_some()
                || !selectors.is_empty() && !selectors.iter().any(|s| s.matches(&conn))
            {
                return;
            }
            if let Some(svg) = svg_only.as_mut().filter(|s| s.wants(&conn)) {
                if let Err(e) = svg.connection(&mut io::sink(), conn.clone()) {
                    io_err = Some(e);
                }
            }
            if let Err(e) = renderer.connection(&mut out, conn) {
                io_err = Some(e);
            }
        },
        &mut |bytes| {
            bar.set_position(bytes);
            if plain && last_line.elapsed() >= std::time::Duration::from_secs(1) {
                last_line = std::time::Instant::now();
                match total {
                    Some(t) if t > 0 => eprintln!(
                        "rttlens: {:.1} of {:.1} MB ({:.0} %)",
                        bytes as f64 / 1e6,
                        t as f64 / 1e6,
                        100.0 * bytes as f64 / t as f64
                    ),
                    _ => eprintln!("rttlens: {:.1} MB read", bytes as f64 / 1e6),
                }
            }
        },
    )
    .with_context(|| format!("cannot analyse {}", path.display()))?;
    bar.finish_and_clear();
    if let Some(e) = io_err {
        return Err(e.into());
    }
    renderer.end(&mut out, &summary)?;
    if let Some(mut svg) = svg_only {
        svg.end(&mut io::sink(), &summary)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

impl ConnSelector {
    fn matches(&self, c: &rttlens_core::report::ConnReport) -> bool {
        match self {
            ConnSelector::Index(i) => c.index == *i,
            ConnSelector::Endpoint(e) => c.client == *e || c.server == *e,
        }
    }
}
