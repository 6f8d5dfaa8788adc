//! The transfer phase: rounds of the sender of the response, the initial
//! window, what limited each round, and the throughput bound that follows.

use crate::base::side::{FrameRef, Side};
use crate::base::time::Duration;
use crate::flow::rounds::{Limit, Round};

/// The initial window, measured as the first transfer round's flight.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct InitialWindow {
    /// Bytes in flight in the first round.
    pub bytes: u64,
    /// The same in segments of the sender's MSS.
    pub segments: f64,
    /// Frame where the flight peaked.
    pub(crate) frame: u64,
}

/// The bound a window limit puts on throughput: flight / RTT.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Bound {
    /// The limit that held most transfer rounds.
    pub limit: Limit,
    /// Typical flight of those rounds (bytes, median).
    pub flight: u64,
    /// `flight / rtt_min` (bytes per second).
    pub bytes_per_sec: f64,
}

/// Rounds spent under one limit.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct LimitCount {
    /// The limit.
    pub limit: Limit,
    /// Rounds.
    pub rounds: u32,
}

/// The transfer of one direction's bulk data.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Transfer {
    /// Who sends.
    pub(crate) sender: Side,
    /// New payload bytes sent during the transfer.
    pub(crate) bytes: u64,
    /// First segment.
    pub(crate) first: FrameRef,
    /// Last new-data segment.
    pub(crate) last: FrameRef,
    /// Duration (capture clock).
    pub(crate) duration: Duration,
    /// `bytes / duration` (bytes per second); 0 for a single instant.
    pub(crate) bytes_per_sec: f64,
    /// The sender's MSS (bytes).
    pub(crate) mss: u64,
    /// Rounds of the transfer, each with its limit.
    pub(crate) rounds: Vec<Round>,
    /// Rounds not kept (very long connections).
    pub(crate) rounds_dropped: u64,
    /// First round's flight.
    pub(crate) initial_window: Option<InitialWindow>,
    /// Rounds per limit.
    pub(crate) limits: Vec<LimitCount>,
    /// The throughput bound of the dominant window limit, if one held.
    pub(crate) bound: Option<Bound>,
}

impl Transfer {
    /// Build from the sender's classified rounds, keeping those that carry
    /// bytes at or after stream offset `from`.
    pub fn new(
        sender: Side,
        all_rounds: &[Round],
        rounds_dropped: u64,
        from: u64,
        mss: u64,
        rtt: Duration,
    ) -> Option<Transfer> {
        let rounds: Vec<Round> = all_rounds
            .iter()
            .filter(|r| {
                r.start_offset + r.new_bytes > from && (r.new_bytes > 0 || r.retx_bytes > 0)
            })
            .cloned()
            .collect();
        let first = rounds.first()?;
        let last = rounds
            .iter()
            .rev()
            .find(|r| r.new_bytes > 0)
            .unwrap_or(first);
        let bytes: u64 = rounds.iter().map(|r| r.new_bytes).sum();
        let duration = last.last.ts - first.first.ts;
        let bytes_per_sec = if duration.nanos > 0 {
            bytes as f64 / duration.as_secs_f64()
        } else {
            0.0
        };
        let initial_window = Some(InitialWindow {
            bytes: first.max_flight,
            segments: crate::base::cost::round3(first.max_flight as f64 / mss.max(1) as f64),
            frame: first.max_flight_frame,
        });
        let mut limits: Vec<LimitCount> = Vec::new();
        for r in &rounds {
            match limits.iter_mut().find(|l| l.limit == r.limit) {
                Some(l) => l.rounds += 1,
                None => limits.push(LimitCount {
                    limit: r.limit,
                    rounds: 1,
                }),
            }
        }
        let bound = [Limit::Sndbuf, Limit::Rwnd, Limit::Bottleneck, Limit::Window]
            .into_iter()
            .find_map(|lim| {
                let mut f: Vec<u64> = rounds
                    .iter()
                    .filter(|r| r.limit == lim)
                    .map(|r| r.max_flight)
                    .collect();
                let n = f.len();
                let dominant =
                    n >= 2 && n * 2 >= rounds.iter().filter(|r| r.limit != Limit::App).count();
                if !dominant || rtt.nanos <= 0 {
                    return None;
                }
                f.sort_unstable();
                let flight = f[n / 2];
                Some(Bound {
                    limit: lim,
                    flight,
                    bytes_per_sec: flight as f64 / rtt.as_secs_f64(),
                })
            });
        Some(Transfer {
            sender,
            bytes,
            first: first.first,
            last: last.last,
            duration,
            bytes_per_sec,
            mss,
            rounds_dropped,
            initial_window,
            limits,
            bound,
            rounds,
        })
    }

    /// Rounds under `limit`.
    pub(crate) fn rounds_with(&self, limit: Limit) -> impl Iterator<Item = &Round> {
        self.rounds.iter().filter(move |r| r.limit == limit)
    }
}
