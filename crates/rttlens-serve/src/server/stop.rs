//! [`serve`]: the server on a runtime of its own until Ctrl-C or SIGTERM,
//! with `rttlens analyze -i`'s rule for signals that come in a burst.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{ServeError, ServeOptions, Server};

/// Signals this soon after the first are the same request to stop:
/// `timeout(1)` sends its signal to the command and then to the command's
/// whole process group, so the exporter gets it twice within microseconds
/// (the same rule as `rttlens analyze -i`).
pub const SAME_STOP: Duration = Duration::from_secs(1);

/// How [`serve`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stopped {
    /// Ctrl-C or SIGTERM: the scrapes in flight were answered (or their
    /// drain time ran out), then the server ended.
    Drained,
    /// Another signal at least [`SAME_STOP`] after the first: the server
    /// ended without waiting for the scrapes still in flight.
    Forced,
}

/// Run the server until Ctrl-C / SIGTERM, on a runtime of its own;
/// `listening` is told the address once bound. The first signal stops
/// accepting and lets the scrapes in flight finish ([`Stopped::Drained`]);
/// signals within [`SAME_STOP`] of it are the same stop; one later ends
/// at once ([`Stopped::Forced`]).
///
/// The runtime's blocking threads (each probe runs on one) are bounded
/// by `max_concurrent`, and one more for stopping the live analysis:
/// without the bound, tokio's pool (up to 512 threads) started a thread
/// whenever a probe was handed out in the moment between its slot's
/// release and its thread's return to the pool, and under a steady load
/// those threads never idled long enough to end (70 → 86 threads in
/// 200 s of bench/serve-soak.sh, each with its allocator's cache).
///
/// # Errors
/// The address cannot be bound, the runtime cannot start, or the signal
/// handlers cannot be installed.
pub fn serve(
    opts: ServeOptions,
    listening: impl FnOnce(SocketAddr),
) -> Result<Stopped, ServeError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(opts.max_concurrent.max(1) + 1)
        .enable_all()
        .build()?;
    let stopped = rt.block_on(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let int = signal(SignalKind::interrupt())?;
        let term = signal(SignalKind::terminate())?;
        let stop = Arc::new(tokio::sync::Notify::new());
        let force = Arc::new(tokio::sync::Notify::new());
        tokio::spawn(watch_signals(int, term, Arc::clone(&stop), Arc::clone(&force)));
        let server = Server::bind(opts)?;
        listening(server.local_addr());
        tokio::select! {
            r = server.run_until(async move { stop.notified().await }) => r.map(|()| Stopped::Drained),
            () = force.notified() => Ok(Stopped::Forced),
        }
    });
    if matches!(stopped, Ok(Stopped::Forced)) {
        // dropping the runtime would wait for the probes' threads
        rt.shutdown_background();
    }
    stopped
}

/// The first SIGINT or SIGTERM notifies `stop`; one at least
/// [`SAME_STOP`] later notifies `force` (a `Notify` keeps the
/// notification until it is awaited).
async fn watch_signals(
    mut int: tokio::signal::unix::Signal,
    mut term: tokio::signal::unix::Signal,
    stop: Arc<tokio::sync::Notify>,
    force: Arc<tokio::sync::Notify>,
) {
    let mut first: Option<Instant> = None;
    loop {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        match first {
            None => {
                first = Some(Instant::now());
                eprintln!(
                    "rttlens serve: stopping: answering the scrapes in flight first \
                     (signal again to stop at once)"
                );
                stop.notify_one();
            }
            Some(at) if at.elapsed() < SAME_STOP => {}
            Some(_) => {
                force.notify_one();
                return;
            }
        }
    }
}
