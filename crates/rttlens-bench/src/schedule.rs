//! The schedule and the collector: open loop on a thread of its own
//! ([`Schedule::open_loop`]), closed loop as worker tasks
//! ([`Schedule::closed_loop`]), waiting for the connections in flight, and
//! the collector thread that adds every sample to the histograms and
//! reports progress ([`BenchProgress`]).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::Stop;
use crate::conn::{self, Plan, Sample};
use crate::mix::Kind;
use crate::stats::Stats;

/// How long Ctrl-C waits for the connections in flight.
const GRACE: Duration = Duration::from_secs(1);
/// How often the collector takes the samples sent.
const COLLECT_EVERY: Duration = Duration::from_millis(10);
/// How often the progress callback runs.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// How the run is going, for a progress bar (about 5 times a second).
#[derive(Debug, Clone)]
pub struct BenchProgress {
    /// Since the schedule started.
    pub elapsed: Duration,
    /// Connections finished (succeeded or failed).
    pub finished: u64,
    /// Of which failed.
    pub failed: u64,
    /// Open right now.
    pub in_flight: usize,
    /// Connections the run will make, when known.
    pub expected: Option<u64>,
    /// `--duration`, when the run stops on time.
    pub planned: Option<Duration>,
}

/// What the schedulers share.
pub(crate) struct Schedule<'a> {
    pub(crate) rt: &'a tokio::runtime::Runtime,
    pub(crate) plan: &'a Arc<Plan>,
    pub(crate) cycle: &'a Arc<Vec<Kind>>,
    pub(crate) stop: Stop,
    pub(crate) t0: Instant,
    pub(crate) tx: &'a Sender<Sample>,
    pub(crate) in_flight: &'a Arc<AtomicUsize>,
    pub(crate) cancel: &'a Arc<AtomicBool>,
}

impl Schedule<'_> {
    fn kind(cycle: &[Kind], i: u64) -> Kind {
        cycle[usize::try_from(i % cycle.len() as u64).unwrap_or(0)]
    }

    /// Open loop on this thread: sleep until each intended start, spawn
    /// the connection, never wait for one. Bounded by `stop` and `cancel`.
    pub(crate) fn open_loop(&self, rate: f64, max_in_flight: usize) {
        // wake-ups within 1 µs of the asked time instead of the default
        // 50 µs timer slack (prctl(2) PR_SET_TIMERSLACK)
        let _ = nix::sys::prctl::set_timerslack(1000);
        let interval = 1.0 / rate;
        let mut i: u64 = 0;
        'schedule: loop {
            let offset = Duration::from_secs_f64(i as f64 * interval);
            match self.stop {
                Stop::Count(n) if i >= n => break,
                Stop::Duration(d) if offset >= d => break,
                _ => {}
            }
            let intended = self.t0 + offset;
            // sleep in steps of at most 50 ms so Ctrl-C is seen
            loop {
                if self.cancel.load(Ordering::Relaxed) {
                    break 'schedule;
                }
                let now = Instant::now();
                if now >= intended {
                    break;
                }
                std::thread::sleep((intended - now).min(Duration::from_millis(50)));
            }
            let kind = Schedule::kind(self.cycle, i);
            let open = self.in_flight.load(Ordering::Acquire);
            if open >= max_in_flight {
                let _ = self.tx.send(Sample::not_started(kind, intended, open));
            } else {
                self.in_flight.fetch_add(1, Ordering::AcqRel);
                let (plan, tx, inf) = (
                    Arc::clone(self.plan),
                    self.tx.clone(),
                    Arc::clone(self.in_flight),
                );
                self.rt.spawn(async move {
                    let s = conn::measure(&plan, kind, intended).await;
                    let _ = tx.send(s);
                    inf.fetch_sub(1, Ordering::AcqRel);
                });
            }
            i += 1;
        }
    }

    /// Closed loop: `c` workers, each starting a connection when its last
    /// one ended. Returns when they are done or `cancel` is set.
    pub(crate) fn closed_loop(&self, c: u32) {
        let next = Arc::new(AtomicU64::new(0));
        let left = Arc::new(AtomicUsize::new(c as usize));
        let until = match self.stop {
            Stop::Duration(d) => Some(self.t0 + d),
            Stop::Count(_) => None,
        };
        let count = match self.stop {
            Stop::Count(n) => Some(n),
            Stop::Duration(_) => None,
        };
        let start = tokio::time::Instant::from_std(self.t0);
        for _ in 0..c {
            let (plan, tx, inf) = (
                Arc::clone(self.plan),
                self.tx.clone(),
                Arc::clone(self.in_flight),
            );
            let (next, left, cancel, cycle) = (
                Arc::clone(&next),
                Arc::clone(&left),
                Arc::clone(self.cancel),
                Arc::clone(self.cycle),
            );
            self.rt.spawn(async move {
                tokio::time::sleep_until(start).await;
                // bounded by the count or the deadline, and by `cancel`
                while !cancel.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let now = Instant::now();
                    if count.is_some_and(|n| i >= n) || until.is_some_and(|u| now >= u) {
                        break;
                    }
                    inf.fetch_add(1, Ordering::AcqRel);
                    let s = conn::measure(&plan, Schedule::kind(&cycle, i), now).await;
                    let _ = tx.send(s);
                    inf.fetch_sub(1, Ordering::AcqRel);
                }
                left.fetch_sub(1, Ordering::AcqRel);
            });
        }
        // bounded: each worker ends after its last connection (≤ timeout)
        while left.load(Ordering::Acquire) > 0 && !self.cancel.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Wait until no connection is open: up to the per-connection timeout
/// (each one ends by then), or [`GRACE`] after Ctrl-C. Returns how many
/// were still open.
pub(crate) fn wait_in_flight(
    in_flight: &AtomicUsize,
    timeout: Duration,
    cancel: &AtomicBool,
) -> usize {
    let start = Instant::now();
    // bounded by the deadlines below
    loop {
        let open = in_flight.load(Ordering::Acquire);
        if open == 0 {
            return 0;
        }
        let limit = if cancel.load(Ordering::Relaxed) {
            GRACE
        } else {
            timeout + GRACE
        };
        if start.elapsed() >= limit {
            return open;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The collector thread: add every sample to the histograms, call
/// `progress` about 5 times a second, end once `finished` is set and the
/// channel is empty.
pub(crate) fn collect(
    rx: Receiver<Sample>,
    progress: &mut (dyn FnMut(&BenchProgress) + Send),
    t0: Instant,
    in_flight: &AtomicUsize,
    finished: &AtomicBool,
    (expected, planned): (Option<u64>, Option<Duration>),
) -> Stats {
    let mut stats = Stats::new();
    let mut last = Instant::now();
    let report = |stats: &Stats, progress: &mut (dyn FnMut(&BenchProgress) + Send)| {
        progress(&BenchProgress {
            elapsed: t0.elapsed(),
            finished: stats.done(),
            failed: stats.failed(),
            in_flight: in_flight.load(Ordering::Relaxed),
            expected,
            planned,
        });
    };
    // Polls instead of blocking in recv: a receiver that sleeps in the
    // channel is woken (futex, context switch) by every send, a cost the
    // connections' threads would pay (measured: ~5 % of the generator's
    // CPU at 5,000 connections/s). Bounded: ends when `finished` is set.
    loop {
        let done = finished.load(Ordering::Acquire);
        loop {
            match rx.try_recv() {
                Ok(s) => stats.add(&s),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return stats,
            }
        }
        if done {
            break;
        }
        if last.elapsed() >= PROGRESS_EVERY {
            report(&stats, progress);
            last = Instant::now();
        }
        std::thread::sleep(COLLECT_EVERY);
    }
    report(&stats, progress);
    stats
}
