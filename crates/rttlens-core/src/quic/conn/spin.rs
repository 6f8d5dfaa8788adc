//! The latency spin bit (RFC 9000 §17.4): bit 0x20 of a short header's
//! first byte, outside header protection, so read without keys. A client
//! that spins sends the opposite of the last value it saw from the server,
//! the server reflects the client's: in each direction the bit flips once
//! per round trip, and the time between two flips (edges) seen in the
//! same direction is one RTT, wherever the capture point is (RFC 9312
//! §4.1: the endpoints' delays included). Endpoints may leave it off
//! (RFC 9000 §17.4: at least one connection in 16, or always): then it
//! never flips, and no sample is claimed.
//!
//! Without packet numbers (no keys) a reordered packet shows as two edges
//! close together; the samples are an RTT estimate, not a finding.

use crate::base::side::{FrameRef, Side};
use crate::base::time::Duration;

/// Spin-bit samples kept per connection.
const SAMPLES_CAP: usize = 512;

/// What one connection's short-header packets showed of the spin bit.
#[derive(Debug, Default)]
pub struct Spin {
    /// Short-header (1-RTT) packets seen, per sender.
    pub packets: [u64; 2],
    /// Times the bit changed between two consecutive short-header packets
    /// of one sender, per sender.
    pub flips: [u64; 2],
    /// The last value each sender sent, and its last edge.
    last: [Option<bool>; 2],
    edge: [Option<FrameRef>; 2],
    /// Each sample: the sender whose edges gave it, the later edge, the
    /// time since its previous edge (one RTT). The first 512.
    pub samples: Vec<(Side, FrameRef, Duration)>,
}

impl Spin {
    /// A short-header packet from `side` with spin bit `bit`, at `at`.
    pub(crate) fn observe(&mut self, side: Side, bit: bool, at: FrameRef) {
        let s = side.index();
        self.packets[s] += 1;
        let last = self.last[s].replace(bit);
        if last.is_none_or(|l| l == bit) {
            return;
        }
        self.flips[s] += 1;
        if let Some(prev) = self.edge[s].replace(at) {
            if self.samples.len() < SAMPLES_CAP {
                self.samples.push((side, at, at.ts - prev.ts));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::Timestamp;

    fn at(ms: i64) -> FrameRef {
        FrameRef {
            frame: ms as u64,
            ts: Timestamp {
                nanos: ms * 1_000_000,
            },
        }
    }

    #[test]
    fn edges_in_one_direction_give_one_rtt_each() {
        let mut s = Spin::default();
        // the client's bit: 0 0 1 1 0 at 0, 5, 40, 45, 80 ms
        for (ms, bit) in [(0, false), (5, false), (40, true), (45, true), (80, false)] {
            s.observe(Side::Client, bit, at(ms));
        }
        assert_eq!(s.flips, [2, 0]);
        assert_eq!(s.samples.len(), 1);
        assert_eq!(s.samples[0].2, Duration::from_millis(40));
    }

    #[test]
    fn a_bit_that_never_flips_gives_nothing() {
        let mut s = Spin::default();
        for ms in 0..10 {
            s.observe(Side::Server, false, at(ms));
        }
        assert_eq!(s.packets, [0, 10]);
        assert_eq!(s.flips, [0, 0]);
        assert!(s.samples.is_empty());
    }
}
