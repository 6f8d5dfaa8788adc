//! What the link saw ([`LinkStats`]): packets forwarded and dropped, and
//! how far each departure was from its ideal time.

use super::config::Direction;

/// What the link saw, for checks and the bench.
#[derive(Debug, Clone, Default)]
pub struct LinkStats {
    /// Packets written to the far TUN, per direction (`[c2s, s2c]`).
    pub forwarded: [u64; 2],
    /// Packets dropped by the loss knobs: direction and payload index
    /// (0 for a dropped SYN without payload), in the order dropped.
    pub dropped: Vec<(Direction, u64)>,
    /// UDP datagrams dropped by [`super::Loss::udp_indices`]: direction and
    /// UDP index, in the order dropped.
    pub udp_dropped: Vec<(Direction, u64)>,
    /// UDP datagrams that entered the link, per direction (`[c2s, s2c]`).
    pub udp_datagrams: [u64; 2],
    /// Payload-carrying TCP segments that entered the link, per direction
    /// (`[c2s, s2c]`): the highest index the loss knobs could have seen.
    pub payload_segments: [u64; 2],
    /// Packets tail-dropped because the rate-limit queue was full.
    pub queue_drops: u64,
    /// Packets the far TUN refused (write error).
    pub write_errors: u64,
    /// Added-delay error per forwarded packet: |time the write to the far
    /// TUN starts − ideal deadline|, where the ideal is arrival + serialisation + one-way
    /// delay (± jitter). Histogram with 1 µs buckets; the last bucket
    /// holds everything ≥ its index.
    pub error_hist_us: Vec<u64>,
    /// Largest error seen (µs).
    pub error_max_us: u64,
    /// Link threads that got real-time priority (of 3).
    pub realtime_threads: u32,
    /// Thread IDs of the link's threads (two readers and the scheduler),
    /// for their CPU time in `/proc/self/task/TID/stat`.
    pub thread_ids: Vec<i32>,
}

impl LinkStats {
    /// The `q`-quantile (0.0–1.0) of the added-delay error, in µs; 0 when
    /// nothing was forwarded.
    pub fn error_quantile_us(&self, q: f64) -> u64 {
        let n: u64 = self.error_hist_us.iter().sum();
        if n == 0 {
            return 0;
        }
        let want = ((n as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (us, c) in self.error_hist_us.iter().enumerate() {
            seen += c;
            if seen >= want {
                return us as u64;
            }
        }
        self.error_max_us
    }
}

/// Buckets of [`LinkStats::error_hist_us`] (1 µs each).
pub(crate) const HIST_BUCKETS: usize = 20_000;
