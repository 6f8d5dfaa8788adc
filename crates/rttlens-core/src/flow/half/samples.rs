//! The RTT samples one direction gives of the peer's side of the path
//! (docs/design.md §4 "Vantage and RTT"): an ACK advancing over data, with
//! Karn's rule (RFC 6298 §3), and the peer's echo of this side's TSval
//! (RFC 7323 §4).

use std::collections::VecDeque;

use crate::base::side::FrameRef;
use crate::base::time::Timestamp;
use crate::flow::rtt::{RttMethod, RttSamples};

use super::Half;

/// TSvals kept waiting for their echo per side: about 4 s of a TSval
/// clock ticking every ms, enough for any queue; a bound on memory per
/// connection whatever the peer does.
const TS_PENDING_MAX: usize = 4096;

/// `a` is a later TSval than `b` (32-bit wrap-around, RFC 7323 §5.2).
fn ts_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// This side's TSvals and the peer's echoes of them: RTT samples from the
/// timestamp option (RFC 7323 §4, TSval/TSecr; Linux `rx_opt.rcv_tsecr`).
#[derive(Debug, Default)]
pub(super) struct TsEcho {
    /// This side's TSvals not yet echoed by the peer, oldest first, with
    /// when each was first seen: as long as the path holds them (a deep
    /// queue holds hundreds of ms of them), at most [`TS_PENDING_MAX`].
    pending: VecDeque<(u32, Timestamp)>,
    /// The TSecr last looked up (consecutive segments echo the same value).
    last_tsecr: Option<u32>,
}

impl TsEcho {
    /// The TSvals awaiting their echo trimmed to what they hold (for
    /// [`Half::trim_queues`]).
    pub(super) fn trim(&mut self) {
        self.pending.shrink_to_fit();
    }
}

impl Half {
    /// Karn RTT sample: the newest never-retransmitted segment the peer's
    /// ACK at `at`, advancing to stream offset `off`, covers; the segments
    /// it covers are forgotten.
    pub(super) fn karn_sample(&mut self, off: u64, at: FrameRef, rtt: &mut RttSamples) {
        let mut sample = None;
        while let Some(s) = self.loss.retx_state.unacked.front() {
            if s.end > off {
                break;
            }
            if s.retx == 0 {
                sample = Some(s.at.ts);
            } else {
                sample = None;
            }
            self.loss.retx_state.unacked.pop_front();
        }
        if let Some(t) = sample {
            rtt.add(self.side.peer(), at, at.ts - t, RttMethod::DataAck);
        }
    }

    /// Record this side's TSval (for echo samples).
    pub(crate) fn note_tsval(&mut self, tsval: u32, ts: Timestamp) {
        // TSval ticks once per ms or so: most segments repeat the last one,
        // and a value not newer than the last (reordering) is no new sample
        if self
            .ts_echo
            .pending
            .back()
            .is_some_and(|&(v, _)| !ts_after(tsval, v))
        {
            return;
        }
        if self.ts_echo.pending.len() >= TS_PENDING_MAX {
            self.ts_echo.pending.pop_front();
        }
        self.ts_echo.pending.push_back((tsval, ts));
    }

    /// The peer echoed `tsecr` in the segment `at`: a sample of h_peer.
    /// The peer's TS.Recent only moves forward (RFC 7323 §4.3), so values
    /// older than the echo will not be echoed any more and are dropped.
    pub(crate) fn on_tsecr(&mut self, tsecr: u32, at: FrameRef, rtt: &mut RttSamples) {
        if self.ts_echo.last_tsecr == Some(tsecr) {
            return; // looked up already: only the first echo is a sample
        }
        self.ts_echo.last_tsecr = Some(tsecr);
        while let Some(&(v, t)) = self.ts_echo.pending.front() {
            if ts_after(v, tsecr) {
                break;
            }
            self.ts_echo.pending.pop_front();
            if v == tsecr {
                rtt.add(self.side.peer(), at, at.ts - t, RttMethod::Timestamps);
                break;
            }
        }
    }
}
