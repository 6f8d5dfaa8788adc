//! The probe's capture of its own packets ([`rttlens_live::selfcap`]) over a
//! whole run: one [`SelfCapture`] per remote `addr:port` (a redirect to
//! another server starts another), started once the name is resolved and
//! before the first `connect(2)`, shared by every attempt to that remote
//! (`-n N`, `--sequence`; the attempts are told apart by local port in
//! [`crate::reconcile`]), and stopped after the last response.
//!
//! The capture's own cost is kept out of the timings: starting it (an
//! `AF_PACKET` socket and a thread, well under 1 ms) happens between the
//! name lookup and `connect(2)`, and the attempt's clock is moved on by
//! the time it took ([`Captures::ensure`] returns it); stopping it (up to
//! about 150 ms, [`SelfCapture::stop`]) happens after the last attempt's
//! `total`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rttlens_live::selfcap::{CaptureLimits, Captured, Protocol, SelfCapture, SelfCaptureError};

use crate::error::ProbeError;

/// The run's captures.
#[derive(Debug)]
pub struct Captures {
    /// Capturing was asked for (not `--no-capture`).
    wanted: bool,
    /// `--pcap` was given: a capture that cannot start is an error.
    pcap: bool,
    running: Vec<(SocketAddr, SelfCapture)>,
    /// Why capturing stopped being tried (status, message).
    problem: Option<(&'static str, String)>,
    /// Time spent starting captures (kept out of the timings).
    start_overhead: Duration,
    /// TCP segments, or UDP datagrams for `--http3`.
    protocol: Protocol,
}

/// How the run's capture ended.
#[derive(Debug)]
pub enum CaptureOutcome {
    /// `--no-capture`.
    Off,
    /// The packets of every remote, merged in timestamp order.
    Captured {
        /// The packets.
        captured: Captured,
        /// Time spent starting the captures (ms), not in any timing.
        start_overhead_ms: f64,
        /// Time `stop` took (ms), after the last attempt.
        stop_ms: f64,
    },
    /// Capturing was not possible: `not-permitted` (no `CAP_NET_RAW`) or
    /// `failed`, and why.
    Unavailable(&'static str, String),
}

impl Captures {
    /// Captures for a run; `wanted` false for `--no-capture`, `pcap` true
    /// for `--pcap FILE`.
    pub fn new(wanted: bool, pcap: bool) -> Captures {
        Captures {
            wanted,
            pcap,
            running: Vec::new(),
            problem: None,
            start_overhead: Duration::ZERO,
            protocol: Protocol::Tcp,
        }
    }

    /// The same, capturing `protocol` (UDP for `--http3`).
    pub fn with_protocol(mut self, protocol: Protocol) -> Captures {
        self.protocol = protocol;
        self
    }

    /// Make sure packets to and from `remote` are being captured; returns
    /// the time that took (zero when already capturing or not capturing),
    /// for the caller to keep out of its timings.
    ///
    /// # Errors
    /// With `--pcap`, a capture that cannot start (a usage error: the file
    /// asked for cannot be written), naming why.
    pub fn ensure(&mut self, remote: SocketAddr) -> Result<Duration, ProbeError> {
        if !self.wanted || self.problem.is_some() || self.running.iter().any(|(r, _)| *r == remote)
        {
            return Ok(Duration::ZERO);
        }
        let t0 = Instant::now();
        let r = SelfCapture::start_protocol(remote, None, self.protocol, CaptureLimits::default());
        let took = t0.elapsed();
        self.start_overhead += took;
        match r {
            Ok(c) => self.running.push((remote, c)),
            Err(e) => {
                let status = match e {
                    SelfCaptureError::NotPermitted(_) => "not-permitted",
                    _ => "failed",
                };
                if self.pcap {
                    return Err(ProbeError::usage(format!("--pcap: {e}")));
                }
                self.problem = Some((status, e.to_string()));
            }
        }
        Ok(took)
    }

    /// Stop every capture and merge what they saw.
    pub fn finish(self) -> CaptureOutcome {
        if !self.wanted {
            return CaptureOutcome::Off;
        }
        let t0 = Instant::now();
        let mut merged: Option<Captured> = None;
        let mut failure = None;
        for (_, c) in self.running {
            match c.stop() {
                Ok(c) => merged = Some(merge(merged, c)),
                Err(e) => failure = Some(e.to_string()),
            }
        }
        let stop_ms = t0.elapsed().as_secs_f64() * 1e3;
        if let Some((status, why)) = self.problem {
            return CaptureOutcome::Unavailable(status, why);
        }
        if let Some(why) = failure {
            return CaptureOutcome::Unavailable("failed", why);
        }
        match merged {
            Some(captured) => CaptureOutcome::Captured {
                captured,
                start_overhead_ms: self.start_overhead.as_secs_f64() * 1e3,
                stop_ms,
            },
            None => CaptureOutcome::Unavailable("failed", "no connection was captured".into()),
        }
    }
}

/// `b`'s packets added to `a`'s, in timestamp order.
fn merge(a: Option<Captured>, b: Captured) -> Captured {
    let Some(mut a) = a else { return b };
    a.packets.extend(b.packets);
    a.packets.sort_by_key(|p| p.ts_ns);
    if !a.interface.split(',').any(|i| i == b.interface) {
        a.interface = format!("{},{}", a.interface, b.interface);
    }
    a.truncated += b.truncated;
    a.kernel_drops = match (a.kernel_drops, b.kernel_drops) {
        (Some(x), Some(y)) => Some(x + y),
        _ => None,
    };
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use rttlens_live::selfcap::CapturedPacket;

    fn cap(iface: &str, ts: &[u64], drops: Option<u64>) -> Captured {
        Captured {
            packets: ts
                .iter()
                .map(|&ts_ns| CapturedPacket {
                    ts_ns,
                    orig_len: 40,
                    data: vec![0; 40],
                })
                .collect(),
            interface: iface.into(),
            truncated: 1,
            kernel_drops: drops,
        }
    }

    #[test]
    fn merge_orders_packets_and_sums_counters() {
        let m = merge(
            Some(cap("eth0", &[1, 5], Some(0))),
            cap("eth0", &[3], Some(2)),
        );
        let ts: Vec<u64> = m.packets.iter().map(|p| p.ts_ns).collect();
        assert_eq!(ts, [1, 3, 5]);
        assert_eq!((m.interface.as_str(), m.truncated), ("eth0", 2));
        assert_eq!(m.kernel_drops, Some(2));
        let m = merge(Some(m), cap("lo", &[0], None));
        assert_eq!((m.interface.as_str(), m.kernel_drops), ("eth0,lo", None));
    }

    #[test]
    fn off_is_off() {
        let mut c = Captures::new(false, false);
        assert_eq!(
            c.ensure("127.0.0.1:1".parse().unwrap()).unwrap(),
            Duration::ZERO
        );
        assert!(matches!(c.finish(), CaptureOutcome::Off));
    }
}
