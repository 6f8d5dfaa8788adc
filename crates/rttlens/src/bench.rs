//! `rttlens bench`: the options made into a `BenchConfig`, the run (a
//! server on loopback, one the user runs with `--allow-remote`, or a lab
//! server), progress on stderr, the result as text or JSON; `--compare`.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use rttlens_bench::{
    self as bench, BenchConfig, BenchError, BenchProgress, BenchReport, Kind, Load, Stop,
};
use rttlens_probe::TlsOptions;

use crate::args::{BenchArgs, BenchFormat};

/// The run completed (whatever its error counts).
const EXIT_OK: u8 = 0;
/// The target failed: it did not resolve or its first connection failed.
const EXIT_TARGET: u8 = 1;
/// Usage error, a missing prerequisite, or an unreadable `--compare` file.
const EXIT_USAGE: u8 = 2;
/// Stopped by Ctrl-C (the partial result is printed).
const EXIT_INTERRUPTED: u8 = 130;

/// Run `rttlens bench`.
pub fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    if let Some(files) = &args.compare {
        return compare(files, &args);
    }
    let cfg = match config(&args) {
        Ok(c) => c,
        Err(m) => {
            eprintln!("rttlens bench: {m}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    if let Err(e) = cfg.validate() {
        eprintln!("rttlens bench: {e}");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let cancel = Arc::new(AtomicBool::new(false));
    bench::stop_on_interrupt(Arc::clone(&cancel));
    let tty = std::io::stderr().is_terminal();
    let show = args.progress || (!args.no_progress && tty);
    let bar = if show && tty {
        let b = ProgressBar::new(1);
        b.set_style(
            ProgressStyle::with_template("{spinner} {elapsed_precise} {wide_bar} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let progress = progress_sink(bar.clone(), show && !tty);
    let result = match args.lab {
        Some(server) => {
            let rtt = crate::args::duration_ms(&args.rtt, "ms")
                .and_then(|ms| {
                    if (0.0..=2000.0).contains(&ms) {
                        Ok(Duration::from_secs_f64(ms / 1000.0))
                    } else {
                        Err("the RTT must be between 0 and 2 s".into())
                    }
                })
                .map_err(|e| anyhow::anyhow!("--rtt {}: {e}", args.rtt));
            let rtt = match rtt {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("rttlens bench: {e}");
                    return Ok(ExitCode::from(EXIT_USAGE));
                }
            };
            let target = bench::lab::LabTarget {
                server,
                rtt,
                cert: args.lab_cert,
                keep: args.keep.clone(),
                capture: args.capture.clone(),
                backlog: args.lab_backlog,
                syncookies: args.lab_syncookies,
                client_timestamps: args.lab_client_timestamps,
            };
            bench::lab::run_in_lab(&target, cfg, cancel, progress)
        }
        None => {
            let mut p = progress;
            bench::run(&cfg, &cancel, &mut *p)
        }
    };
    bar.finish_and_clear();
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rttlens bench: {e}");
            let code = match e {
                BenchError::Usage(_) | BenchError::Lab(_) => EXIT_USAGE,
                _ => EXIT_TARGET,
            };
            return Ok(ExitCode::from(code));
        }
    };
    let mut out = open(&args)?;
    match args.format {
        BenchFormat::Text => report.write_text(&mut out)?,
        BenchFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &report)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::from(if report.interrupted {
        EXIT_INTERRUPTED
    } else {
        EXIT_OK
    }))
}

/// Standard output, or `-o FILE`.
fn open(args: &BenchArgs) -> anyhow::Result<Box<dyn Write>> {
    Ok(match &args.output {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    })
}

/// The options as a run configuration.
fn config(a: &BenchArgs) -> Result<BenchConfig, String> {
    let url = a.url.clone().unwrap_or_else(|| "https://lab/".into());
    let mut c = BenchConfig::new(&url);
    c.resolve = a.resolve.clone();
    c.tls = TlsOptions {
        version: a.tls,
        alpn: vec!["http/1.1".into()],
        cacert: a.cacert.clone(),
        insecure: a.insecure,
        keylog: None,
        ciphers: a.ciphers.clone(),
    };
    c.load = match (a.rate, a.concurrency) {
        (_, Some(concurrency)) => Load::Closed { concurrency },
        (Some(rate), None) => Load::Open { rate },
        (None, None) => Load::Open { rate: 100.0 },
    };
    let secs = |flag: &str, s: &str| {
        crate::args::duration_ms(s, "s")
            .map_err(|e| format!("{flag} {s}: {e}"))
            .and_then(|ms| {
                if ms > 0.0 {
                    Ok(Duration::from_secs_f64(ms / 1000.0))
                } else {
                    Err(format!("{flag} {s}: must be above 0"))
                }
            })
    };
    c.stop = match (a.connections, &a.duration) {
        (Some(n), _) => Stop::Count(n),
        (None, Some(d)) => Stop::Duration(secs("--duration", d)?),
        (None, None) => Stop::Duration(Duration::from_secs(10)),
    };
    c.mix = a.mix.clone();
    c.requests = a.requests.unwrap_or(u32::from(a.request));
    if c.mix.has(Kind::ZeroRtt) && c.requests == 0 {
        c.requests = 1;
        eprintln!(
            "rttlens bench: 0-RTT sends the request as early data: every connection sends one (--request)"
        );
    }
    c.timeout = secs("--timeout", &a.timeout)?;
    if let Some(t) = a.threads {
        c.threads = t;
    }
    c.max_in_flight = a.max_in_flight;
    c.warmup = a.warmup;
    c.server_pids = a
        .server_pid
        .iter()
        .map(|p| ("server pid".into(), *p))
        .collect();
    c.allow_remote = a.allow_remote;
    Ok(c)
}

/// The progress callback: the bar's position and message, or (`plain`)
/// a line on stderr about once a second.
fn progress_sink(bar: ProgressBar, plain: bool) -> Box<dyn FnMut(&BenchProgress) + Send> {
    let mut last_line = std::time::Instant::now();
    Box::new(move |p: &BenchProgress| {
        let secs = p.elapsed.as_secs_f64().max(1e-3);
        let msg = format!(
            "{} done, {} failed, {} in flight, {:.0}/s",
            p.finished,
            p.failed,
            p.in_flight,
            p.finished as f64 / secs
        );
        match (p.expected, p.planned) {
            (Some(n), _) => {
                bar.set_length(n);
                bar.set_position(p.finished.min(n));
            }
            (None, Some(d)) => {
                bar.set_length(d.as_millis() as u64);
                bar.set_position((p.elapsed.as_millis() as u64).min(d.as_millis() as u64));
            }
            (None, None) => {}
        }
        bar.set_message(msg.clone());
        if plain && last_line.elapsed() >= Duration::from_secs(1) {
            last_line = std::time::Instant::now();
            eprintln!("rttlens bench: {:.0} s: {msg}", p.elapsed.as_secs_f64());
        }
    })
}

/// `--compare A B`.
fn compare(files: &[std::path::PathBuf], args: &BenchArgs) -> anyhow::Result<ExitCode> {
    let mut reports: Vec<BenchReport> = Vec::new();
    for f in files {
        let read = std::fs::read(f)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<BenchReport>(&b).map_err(|e| e.to_string()));
        match read {
            Ok(r) if r.schema == bench::SCHEMA => reports.push(r),
            Ok(r) => {
                eprintln!(
                    "rttlens bench: --compare {}: schema '{}', expected '{}'",
                    f.display(),
                    r.schema,
                    bench::SCHEMA
                );
                return Ok(ExitCode::from(EXIT_USAGE));
            }
            Err(e) => {
                eprintln!(
                    "rttlens bench: --compare {}: not a `rttlens bench --format json` result: {e}",
                    f.display()
                );
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        }
    }
    let [a, b] = &reports[..] else {
        eprintln!("rttlens bench: --compare takes two files");
        return Ok(ExitCode::from(EXIT_USAGE));
    };
    let mut out = open(args)?;
    bench::write_compare(a, b, &mut out)?;
    out.flush()?;
    Ok(ExitCode::from(EXIT_OK))
}
