//! Memory per open connection: runs the pipeline (one thread, reports
//! dropped as they come) over each capture with a counting allocator and
//! prints, from the live heap sampled at every progress step against the
//! connections open at that moment:
//!
//! - the heap's peak (MB) and the connections open then;
//! - the most connections open at once;
//! - the **marginal bytes per open connection**: what one more open
//!   connection costs beyond the fixed base, from a least-squares fit of
//!   the live heap to the connections open and to those handed on in the
//!   last 60 s of capture time (the table's tombstones, ~24 B each, which
//!   grow with the connection rate as the open ones do: without them the
//!   slope would take them for connection state);
//! - the intercept (MB): the base (the read buffer, the histograms).
//!
//! The allocator is `cap`'s counting wrapper around the system allocator
//! (no allocator statistics of our own, no `unsafe` here), so the figures
//! are requested bytes, not the allocator's pages (RSS is in
//! `bench/analyze-speed.sh`).
//!
//! `cargo run --release -p rttlens-core --example conn_memory -- CAPTURE...`
#![forbid(unsafe_code)]

use std::alloc::System;
use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cap::Cap;
use rttlens_core::capture::CaptureReader;
use rttlens_core::flow::TOMBSTONE;
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
    // (open connections, handed on in the last 60 s, live heap bytes above
    // the start) at each step
    let mut samples: Vec<[f64; 3]> = Vec::with_capacity(1 << 16);
    let base = ALLOC.allocated();
    let mut peak = (0usize, 0u64);
    // the end (s) of each connection handed on in the last 60 s
    let recent = std::cell::RefCell::new(VecDeque::<f64>::new());
    let tombstone_s = TOMBSTONE.as_millis_f64() / 1e3;
    let summary = pipeline::run_with(
        &mut reader,
        &options,
        &mut |c| {
            // the TCP table's tombstones: QUIC connections are not in it
            if c.as_tcp().is_none() {
                return;
            }
            let end = c.start_s() + c.duration_ms() / 1e3;
            let mut r = recent.borrow_mut();
            let latest = r.back().map_or(end, |&b| b.max(end));
            r.push_back(latest);
            // the table keeps the 4-tuples of closed connections this long
            while r.front().is_some_and(|&f| f < latest - tombstone_s) {
                r.pop_front();
            }
        },
        &mut |_| {
            // the heap but for this program's own list of ends
            let own = recent.borrow().capacity() * std::mem::size_of::<f64>();
            let live = ALLOC.allocated().saturating_sub(base + own);
            let n = open.load(Ordering::Relaxed);
            if live > peak.0 {
                peak = (live, n);
            }
            if samples.len() < samples.capacity() {
                let closed = recent.borrow().len();
                samples.push([n as f64, closed as f64, live as f64]);
            }
        },
    )?;
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

/// The least-squares fit `y = b0 + b1·x1 + b2·x2` through `[x1, x2, y]`:
/// (b1, b0). With `x2` constant (no connection closed) it is the line
/// through (x1, y).
fn least_squares(s: &[[f64; 3]]) -> (f64, f64) {
    if s.len() < 3 {
        return (f64::NAN, f64::NAN);
    }
    let n = s.len() as f64;
    let mean = |i: usize| s.iter().map(|r| r[i]).sum::<f64>() / n;
    let m = [mean(0), mean(1), mean(2)];
    let cov = |i: usize, j: usize| s.iter().map(|r| (r[i] - m[i]) * (r[j] - m[j])).sum::<f64>();
    let (s11, s22, s12, s1y, s2y) = (cov(0, 0), cov(1, 1), cov(0, 1), cov(0, 2), cov(1, 2));
    if s11 == 0.0 {
        return (f64::NAN, m[2]);
    }
    let det = s11 * s22 - s12 * s12;
    // x2 constant or moving with x1: the line through (x1, y) alone
    let (b1, b2) = if s22 == 0.0 || det.abs() < 1e-9 * s11 * s22 {
        (s1y / s11, 0.0)
    } else {
        ((s1y * s22 - s2y * s12) / det, (s2y * s11 - s1y * s12) / det)
    };
    (b1, m[2] - b1 * m[0] - b2 * m[1])
}
