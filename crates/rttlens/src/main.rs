//! `rttlens`: where the time went, counted in round trips, and why.
//!
//! A thin command line over `rttlens-core` (the engine) and `rttlens-report`
//! (the renderers): it parses arguments, opens the input, picks a renderer
//! and maps errors to exit codes (0 ok, 1 target failure, 2 usage or
//! unreadable input). The products are features, all on by default:
//! `probe` (`rttlens-probe`), `lab` (`rttlens-lab`), `bench`
//! (`rttlens-bench`), `serve` (`rttlens-serve`), `live` (`rttlens-live`:
//! `analyze -i IFACE`), `parquet` (`rttlens-columnar`: `--format parquet`
//! and `--format arrow`); without them (`--no-default-features`) the binary
//! is `rttlens analyze` of files alone, and the other subcommands do not
//! exist.
#![forbid(unsafe_code)]

mod args;
#[cfg(feature = "bench")]
mod bench;
#[cfg(feature = "parquet")]
mod columnar;
#[cfg(feature = "lab")]
mod lab;
#[cfg(feature = "live")]
mod live;
mod mapped;
mod output;
#[cfg(feature = "probe")]
mod probe;
#[cfg(feature = "serve")]
mod serve;

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use rttlens_core::capture::{CaptureSet, FrameSource};
use rttlens_core::model::Connection;
use rttlens_core::pipeline;
use rttlens_report::html::HtmlRenderer;
use rttlens_report::json::{JsonRenderer, JsonlRenderer};
use rttlens_report::qlog::QlogRenderer;
use rttlens_report::text::TextRenderer;
use rttlens_report::{Renderer, Source};

use args::{AnalyzeArgs, AnalyzeFormat, Cli, Command, ConnSelector};

// mimalloc: the analysis allocates per connection (trackers, reports);
// glibc malloc/free took ~8 % of the pipeline's time on the benchmark, and
// with `--threads 2` it was 40 % slower than mimalloc. Its v2 without
// transparent huge pages (features `v2`, `no_thp`): v3 kept ~25 MB more
// resident with several threads, and huge pages cost 2 MB zeroed per fault
// (measured on bench/data/conns.pcap, see bench/README.md).
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
        #[cfg(feature = "lab")]
        Command::Lab(a) => lab::run(a),
        #[cfg(feature = "probe")]
        Command::Probe(a) => probe::run(a),
        #[cfg(feature = "bench")]
        Command::Bench(a) => bench::run(a),
        #[cfg(feature = "serve")]
        Command::Serve(a) => serve::run(a),
    }
}

fn analyze(args: AnalyzeArgs) -> anyhow::Result<ExitCode> {
    let (mut reader, name, live) = open_input(&args)?;
    let keys = reader.key_store();
    for path in &args.keylog {
        let text = std::fs::read(path)
            .with_context(|| format!("cannot read the key log {}", path.display()))?;
        keys.add(&text);
    }
    let total: Option<u64> = args
        .files
        .iter()
        .map(|p| {
            (p.as_os_str() != "-")
                .then(|| std::fs::metadata(p).ok().map(|m| m.len()))
                .flatten()
        })
        .sum();
    let tty = io::stderr().is_terminal();
    // live: no bar unless asked (there is no end to show)
    let show_progress = args.progress || (!args.no_progress && tty && !live);
    let mut progress = output::ProgressDisplay::new(show_progress, tty, total);
    let pics = &args.pictures;
    #[cfg(feature = "parquet")]
    if args.format == AnalyzeFormat::Parquet && pics.output.is_none() {
        anyhow::bail!("--format parquet writes three files: name their directory with -o DIR");
    }
    #[cfg(feature = "parquet")]
    if args.rotate.is_some() && args.format != AnalyzeFormat::Parquet {
        anyhow::bail!("--rotate rotates Parquet files: use it with --format parquet -o DIR");
    }
    if args.format == AnalyzeFormat::Qlog && pics.output.is_none() {
        anyhow::bail!(
            "--format qlog writes one file per QUIC connection: name their directory with -o DIR"
        );
    }
    let mut out = match args.format {
        #[cfg(feature = "parquet")]
        AnalyzeFormat::Parquet => Box::new(io::sink()),
        AnalyzeFormat::Qlog => Box::new(io::sink()),
        _ => output::open(pics)?,
    };
    let html = output::html_options(pics, args.top);
    let svg_dir = output::svg_dir(pics)?;
    let mut renderer: Box<dyn Renderer> = match args.format {
        AnalyzeFormat::Text => Box::new(TextRenderer::new(args.top, args.rounds)),
        AnalyzeFormat::Json => Box::new(JsonRenderer::default()),
        AnalyzeFormat::Jsonl => Box::new(JsonlRenderer::default()),
        AnalyzeFormat::Html => {
            Box::new(HtmlRenderer::new(html.clone()).with_svg_dir(svg_dir.clone()))
        }
        AnalyzeFormat::Qlog => Box::new(QlogRenderer::new(pics.output.clone().unwrap_or_default())),
        #[cfg(feature = "parquet")]
        AnalyzeFormat::Parquet => match args.rotate {
            Some(r) => Box::new(columnar::RotatingRenderer::new(
                pics.output.clone().unwrap_or_default(),
                r,
            )),
            None => Box::new(columnar::ParquetRenderer::new(
                pics.output.clone().unwrap_or_default(),
            )),
        },
        #[cfg(feature = "parquet")]
        AnalyzeFormat::Arrow => Box::new(columnar::ArrowRenderer::default()),
    };
    // `--svg` beside text or JSON: the HTML renderer draws the graphs of
    // the connections it would show and writes only the SVG files
    let mut svg_only = match (args.format, svg_dir) {
        (AnalyzeFormat::Html, _) | (_, None) => None,
        (_, dir) => Some(HtmlRenderer::new(html).with_svg_dir(dir)),
    };
    // live: one thread unless asked; the threaded pipeline hands frames
    // on in batches, so its connections would come out late at low rates
    let threads = args.threads.map_or_else(
        || match live {
            true => 1,
            false => std::thread::available_parallelism().map_or(1, |n| n.get()),
        },
        usize::from,
    );
    // `--qlog DIR` beside another format: each QUIC connection's journal
    // is written there and taken out before the report's renderer sees it
    let mut qlog_beside = match (&args.qlog, args.format) {
        (Some(dir), f) if f != AnalyzeFormat::Qlog => {
            let mut r = QlogRenderer::new(dir.clone());
            r.begin(&mut io::sink(), &Source { name: name.clone() })?;
            Some(r)
        }
        _ => None,
    };
    let options = pipeline::Options {
        trace: output::wants_trace(args.format.pictures(), pics),
        journal: args.format == AnalyzeFormat::Qlog || args.qlog.is_some(),
        threads,
        filter: args.filter.clone(),
        interval_ms: args.interval,
        open_connections: None,
        community_id_seed: args.community_id_seed,
        shard: args.shard,
        // JSON and JSON Lines write each TCP connection on the flow thread
        // that made its report (the merging thread copies the bytes)
        prerender: matches!(args.format, AnalyzeFormat::Json | AnalyzeFormat::Jsonl)
            .then_some(rttlens_report::json::prerender as rttlens_core::model::Prerender),
    };
    renderer.begin(&mut out, &Source { name: name.clone() })?;
    // live: the header (jsonl's first line) at once, before any connection
    if live {
        out.flush()?;
    }
    let selectors = args.conn.clone();
    // the renderer and its output, and the first write error
    let mut sink = (renderer, out, None::<io::Error>);
    let summary = pipeline::run_with(
        reader.as_mut(),
        &options,
        &mut |mut conn| {
            let (renderer, out, io_err) = &mut sink;
            if io_err.is_some() {
                return;
            }
            if let (Some(q), Connection::Quic(c)) = (qlog_beside.as_mut(), &mut conn) {
                if let Err(e) = q.write_conn(c) {
                    *io_err = Some(e);
                    return;
                }
            }
            // `--conn` selects TCP connections; every QUIC one is shown
            // (and drawn)
            let drawn = match &conn {
                Connection::Tcp(c) => {
                    if !selectors.is_empty() && !selectors.iter().any(|s| s.matches(c)) {
                        return;
                    }
                    svg_only.as_ref().is_some_and(|s| s.wants(c))
                }
                Connection::Quic(_) => true,
            };
            if let Some(svg) = svg_only.as_mut().filter(|_| drawn) {
                if let Err(e) = svg.connection(&mut io::sink(), conn.clone()) {
                    *io_err = Some(e);
                }
            }
            if let Err(e) = renderer.connection(out, conn) {
                *io_err = Some(e);
            }
            // live: each connection's output (a jsonl line) as it ends
            if live {
                if let Err(e) = out.flush() {
                    *io_err = Some(e);
                }
            }
        },
        &mut |p| progress.update(p),
    )
    .with_context(|| format!("cannot analyse {name}"))?;
    progress.finish();
    let (mut renderer, mut out, io_err) = sink;
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

/// What `analyze` reads, its name in the report, and whether it is live
/// (`-i`).
fn open_input(args: &AnalyzeArgs) -> anyhow::Result<(Box<dyn FrameSource>, String, bool)> {
    #[cfg(feature = "live")]
    if let Some(iface) = &args.interface {
        return live::open(iface, args.duration).map(|(r, n)| (r, n, true));
    }
    let (reader, name) = open_captures(&args.files)?;
    Ok((reader, name, false))
}

/// The captures to read, and their name in the report: one file as it is,
/// several merged in time order.
fn open_captures(files: &[PathBuf]) -> anyhow::Result<(Box<dyn FrameSource>, String)> {
    if let [path] = files {
        let reader =
            mapped::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        return Ok((Box::new(reader), path.display().to_string()));
    }
    if files.iter().any(|p| p.as_os_str() == "-") {
        anyhow::bail!("standard input (-) can only be read alone, not with other files");
    }
    let mut set = CaptureSet::with_opener(mapped::open);
    for path in files {
        set.add(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
    }
    let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    Ok((Box::new(set), names.join(" ")))
}

impl ConnSelector {
    fn matches(&self, c: &rttlens_core::model::ConnReport) -> bool {
        match self {
            ConnSelector::Index(i) => c.index == *i,
            ConnSelector::Endpoint(e) => c.client == *e || c.server == *e,
        }
    }
}
