//! The ladder of phases of one connection, from the client's point of view.
//!
//! Capture timestamps are shifted to the client's clock with the vantage
//! halves: a packet the client *sent* and M saw at `t` left the client at
//! `t − h_c/2`; a packet the client *received* reached it at `t + h_c/2`
//! (symmetric-path assumption). From a client-side capture (h_c ≈ 0) the
//! times are the capture's own. Phase names follow curl's `-w` timings
//! (`connect`, `appconnect`, `starttransfer`) where they exist.

use crate::base::fact::Fact;
use crate::base::side::FrameRef;
use crate::base::time::{Duration, Timestamp};

/// One phase of the ladder.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Phase {
    /// Stable name: `connect`, `tls`, `request`, `first-decrypted-byte`,
    /// `transfer`, `close`.
    pub name: &'static str,
    /// Frame that starts the phase.
    pub start_frame: u64,
    /// Frame that ends it.
    pub end_frame: u64,
    /// Duration in the client's clock (ms).
    pub ms: f64,
    /// Duration in round trips (`ms / rtt_min`).
    pub rtts: f64,
    /// What happened, as a typed fact (kind `ladder.<phase>`) the report
    /// writes as a sentence. Not serialized here: the JSON renderer writes
    /// it with its sentence.
    #[serde(skip)]
    pub detail: Fact,
    /// Named parts of the phase (e.g. `network`, `server-think`), in ms.
    pub parts: Vec<Part>,
}

/// A named share of a phase.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Part {
    /// Stable name (`network`, `server-think`, `server-processing`, `client-processing`).
    pub name: &'static str,
    /// Milliseconds.
    pub ms: f64,
    /// Round trips.
    pub rtts: f64,
}

/// Whether the client sent or received the packet at a [`FrameRef`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClientDir {
    /// The client sent it.
    Sent,
    /// The client received it.
    Received,
}

/// Converts capture times to the client's clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientClock {
    /// M→client→M.
    pub(crate) h_c: Duration,
    /// Baseline RTT (for counting round trips); zero when unknown.
    pub(crate) rtt: Duration,
}

impl ClientClock {
    /// The client-clock time of the packet at `m`.
    pub(crate) fn at(&self, m: FrameRef, dir: ClientDir) -> Timestamp {
        match dir {
            ClientDir::Sent => m.ts - self.h_c / 2,
            ClientDir::Received => m.ts + self.h_c / 2,
        }
    }

    /// A phase from `(start, dir)` to `(end, dir)`.
    pub(crate) fn phase(
        &self,
        name: &'static str,
        start: (FrameRef, ClientDir),
        end: (FrameRef, ClientDir),
        detail: Fact,
    ) -> Phase {
        let d = self.at(end.0, end.1) - self.at(start.0, start.1);
        let d = d.max(Duration::ZERO);
        Phase {
            name,
            start_frame: start.0.frame,
            end_frame: end.0.frame,
            ms: crate::base::cost::round3(d.as_millis_f64()),
            rtts: crate::base::cost::round3(d.in_rtts(self.rtt).unwrap_or(0.0)),
            detail,
            parts: Vec::new(),
        }
    }

    /// A named part of `d`.
    pub(crate) fn part(&self, name: &'static str, d: Duration) -> Part {
        let d = d.max(Duration::ZERO);
        Part {
            name,
            ms: crate::base::cost::round3(d.as_millis_f64()),
            rtts: crate::base::cost::round3(d.in_rtts(self.rtt).unwrap_or(0.0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_clock_adds_h_c_to_send_receive_intervals() {
        let c = ClientClock {
            h_c: Duration::from_millis(10),
            rtt: Duration::from_millis(40),
        };
        let m = |ms: i64| FrameRef {
            frame: ms as u64,
            ts: Timestamp::from_nanos(ms * 1_000_000),
        };
        // middle vantage: SYN seen at 0, SYN-ACK at 30 (h_s = 30), h_c = 10
        let p = c.phase(
            "connect",
            (m(0), ClientDir::Sent),
            (m(30), ClientDir::Received),
            Fact::new("ladder.connect"),
        );
        assert_eq!(p.ms, 40.0);
        assert_eq!(p.rtts, 1.0);
        let q = c.phase(
            "x",
            (m(30), ClientDir::Received),
            (m(35), ClientDir::Sent),
            Fact::new("ladder.connect"),
        );
        assert_eq!(q.ms, 0.0, "clamped: the send cannot precede the receipt");
    }
}
