//! `rttlens analyze -i IFACE`: a live capture ([`rttlens_live`]) as the
//! pipeline's frame source, ended by Ctrl-C, SIGTERM or `--duration`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use rttlens_core::capture::FrameSource;
use rttlens_live::LiveCapture;

/// Open the capture on `iface` and arrange its end: the first Ctrl-C or
/// SIGTERM stops it (the summary follows), a second one exits at once
/// (130); `duration` stops it too. A missing interface or capability is
/// the error, named (exit 2).
pub fn open(
    iface: &str,
    duration: Option<Duration>,
) -> anyhow::Result<(Box<dyn FrameSource>, String)> {
    let mut cap = LiveCapture::open(iface)?;
    if let Some(d) = duration {
        cap = cap.with_deadline(Instant::now() + d);
    }
    let stop = cap.stop_handle();
    let signals = AtomicU32::new(0);
    ctrlc::set_handler(move || {
        if signals.fetch_add(1, Ordering::Relaxed) > 0 {
            std::process::exit(130);
        }
        stop.stop();
    })
    .context("cannot handle Ctrl-C / SIGTERM")?;
    let until = match duration {
        Some(d) => format!("for {:?}, or until Ctrl-C", d),
        None => "until Ctrl-C or SIGTERM".to_string(),
    };
    eprintln!("rttlens: capturing on {iface} {until}");
    Ok((Box::new(cap), iface.to_string()))
}
