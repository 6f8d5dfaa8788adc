//! `rttlens analyze -i IFACE`: a live capture ([`rttlens_live`]) as the
//! pipeline's frame source, ended by Ctrl-C, SIGTERM or `--duration`.

use std::time::{Duration, Instant};

use anyhow::Context;
use rttlens_core::capture::FrameSource;
use rttlens_live::{LiveCapture, StopHandle};

/// Signals this soon after the first are the same request to stop:
/// `timeout(1)` sends its signal to the command and then to the command's
/// whole process group, so the command gets it twice within microseconds
/// (once in a while the second after the first was handled: a second
/// signal that exited at once lost the summary, issue 46).
const SAME_STOP: Duration = Duration::from_secs(1);

/// Open the capture on `iface` and arrange its end: the first Ctrl-C or
/// SIGTERM stops it (the connections still open and the summary follow),
/// one more at least [`SAME_STOP`] later exits at once (130); `duration`
/// stops it too. The handler is set before the capture opens, so a signal
/// during the setup still ends with the summary. A missing interface or
/// capability is the error, named (exit 2).
pub fn open(
    iface: &str,
    duration: Option<Duration>,
) -> anyhow::Result<(Box<dyn FrameSource>, String)> {
    let stop = StopHandle::new();
    let on_signal = stop.clone();
    let mut first: Option<Instant> = None;
    ctrlc::set_handler(move || match first {
        None => {
            first = Some(Instant::now());
            on_signal.stop();
        }
        Some(at) if at.elapsed() < SAME_STOP => {}
        Some(_) => std::process::exit(130),
    })
    .context("cannot handle Ctrl-C / SIGTERM")?;
    let mut cap = LiveCapture::open(iface)?.with_stop(stop);
    if let Some(d) = duration {
        cap = cap.with_deadline(Instant::now() + d);
    }
    let until = match duration {
        Some(d) => format!("for {:?}, or until Ctrl-C", d),
        None => "until Ctrl-C or SIGTERM".to_string(),
    };
    eprintln!("rttlens: capturing on {iface} {until}");
    Ok((Box::new(cap), iface.to_string()))
}
