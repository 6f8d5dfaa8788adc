//! Memory per open connection: runs the pipeline (one thread, reports
//! dropped as they come) over each capture with a counting allocator and
//! prints, from the live heap sampled at every progress step against the
//! connections open at that moment:
//!
//! - the heap's peak (MB) and the connections open then;
//! - the most connections open at once;
//! - the **marginal bytes per open connection**: the least-squares slope of
//!   live heap bytes over open connections, what one more open connection
//!   costs beyond the fixed base (the read buffer, the histograms);
//! - the intercept (MB): that base.
//!
//! The allocator is `cap`'s counting wrapper around the system allocator
//! (no allocator statistics of our own, no `unsafe` here), so the figures
//! are requested bytes, not the allocator's pages (RSS is in
//! `bench/analyze-speed.sh`).
//!
//! `cargo run --release -p rttlens-core --example conn_memory -- CAPTURE...`
#![forbid(unsafe_code)]

use std::alloc::System;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cap::Cap;
use rttlens_core::capture::CaptureReader;
use rttlens_core::pipeline::{self, Options};

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

fn main() {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: conn_memory CAPTURE...");
        std::process::exit(2);
    }
    println!(
        "| capture | packets | connections | peak open | heap peak MB (open then) | bytes per open connection | base MB |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut failed = false;
    for p in &paths {
        match measure(Path::new(p)) {
            Ok(row) => println!("{row}"),
            Err(e) => {
                eprintln!("{p}: {e}");
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(2);
    }
}

/// One capture's row of the table.
fn measure(path: &Path) -> Result<String, Box<dyn std::error::Error>> {
    let mut reader = CaptureReader::open(path)?;
    let open = Arc::new(AtomicU64::new(0));
    let options = Options {
        threads: 1,
        open_connections: Some(Arc::clone(&open)),
        ..Options::default()
    };
    let base = ALLOC.allocated();
    // (open connections, live heap bytes above the start) at each step
    let mut samples: Vec<(f64, f64)> = Vec::with_capacity(1 << 16);
    let mut peak = (0usize, 0u64);
    let summary = pipeline::run_with(&mut reader, &options, &mut drop, &mut |_| {
        let live = ALLOC.allocated().saturating_sub(base);
        let n = open.load(Ordering::Relaxed);
        if live > peak.0 {
            peak = (live, n);
        }
        if samples.len() < samples.capacity() {
            samples.push((n as f64, live as f64));
        }
    })?;
    let (slope, intercept) = least_squares(&samples);
    let mb = |b: f64| b / f64::from(1 << 20);
    Ok(format!(
        "| {} | {} | {} | {} | {:.1} ({}) | {:.0} | {:.1} |",
        path.display(),
        summary.frames,
        summary.connections,
        summary.peak_open_connections,
        mb(peak.0 as f64),
        peak.1,
        slope,
        mb(intercept),
    ))
}

/// Slope and intercept of the least-squares line through `xy`.
fn least_squares(xy: &[(f64, f64)]) -> (f64, f64) {
    let n = xy.len() as f64;
    if xy.len() < 2 {
        return (f64::NAN, f64::NAN);
    }
    let (sx, sy) = xy.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let (sxy, sxx) = xy.iter().fold((0.0, 0.0), |(a, b), (x, y)| {
        (a + (x - mx) * (y - my), b + (x - mx) * (x - mx))
    });
    if sxx == 0.0 {
        return (f64::NAN, my);
    }
    let slope = sxy / sxx;
    (slope, my - slope * mx)
}
