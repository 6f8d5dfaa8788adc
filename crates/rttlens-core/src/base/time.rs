//! Time in the capture's clock: [`Timestamp`] (an instant) and [`Duration`]
//! (a signed span), both in nanoseconds.
//!
//! Newtypes rather than `u64`/`f64` so that instants and spans cannot be mixed
//! up (smoltcp `src/time.rs` does the same). Pcap gives µs or ns; pcapng gives
//! any power of ten or two; everything is converted to ns on input.

use std::fmt;
use std::ops::{Add, Sub};

/// An instant in the capture's clock, in nanoseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize)]
pub struct Timestamp {
    /// Nanoseconds since 1970-01-01T00:00:00Z.
    pub nanos: i64,
}

/// A signed span of time in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize)]
pub struct Duration {
    /// Nanoseconds (negative when the span runs backwards).
    pub(crate) nanos: i64,
}

impl Timestamp {
    /// An instant from nanoseconds since the epoch.
    pub const fn from_nanos(nanos: i64) -> Self {
        Timestamp { nanos }
    }

    /// Seconds since the epoch as a float (for display).
    pub(crate) fn as_secs_f64(self) -> f64 {
        self.nanos as f64 / 1e9
    }
}

impl Duration {
    /// Zero.
    pub const ZERO: Duration = Duration { nanos: 0 };

    /// A span of `nanos` nanoseconds.
    pub(crate) const fn from_nanos(nanos: i64) -> Self {
        Duration { nanos }
    }

    /// A span of `micros` microseconds.
    pub(crate) const fn from_micros(micros: i64) -> Self {
        Duration {
            nanos: micros * 1_000,
        }
    }

    /// A span of `millis` milliseconds.
    pub(crate) const fn from_millis(millis: i64) -> Self {
        Duration {
            nanos: millis * 1_000_000,
        }
    }

    /// A span from fractional milliseconds (rounded to the nanosecond).
    pub(crate) fn from_millis_f64(millis: f64) -> Self {
        Duration {
            nanos: (millis * 1e6).round() as i64,
        }
    }

    /// The span in milliseconds as a float.
    pub fn as_millis_f64(self) -> f64 {
        self.nanos as f64 / 1e6
    }

    /// The span in seconds as a float.
    pub(crate) fn as_secs_f64(self) -> f64 {
        self.nanos as f64 / 1e9
    }

    /// The larger of two spans.
    pub(crate) fn max(self, other: Duration) -> Duration {
        if self >= other {
            self
        } else {
            other
        }
    }

    /// The smaller of two spans.
    pub(crate) fn min(self, other: Duration) -> Duration {
        if self <= other {
            self
        } else {
            other
        }
    }

    /// This span divided by `rtt`, i.e. the span counted in round trips.
    /// `None` when `rtt` is not positive.
    pub(crate) fn in_rtts(self, rtt: Duration) -> Option<f64> {
        (rtt.nanos > 0).then(|| self.nanos as f64 / rtt.nanos as f64)
    }
}

impl Add<Duration> for Timestamp {
    type Output = Timestamp;
    fn add(self, rhs: Duration) -> Timestamp {
        Timestamp {
            nanos: self.nanos.saturating_add(rhs.nanos),
        }
    }
}

impl Sub<Duration> for Timestamp {
    type Output = Timestamp;
    fn sub(self, rhs: Duration) -> Timestamp {
        Timestamp {
            nanos: self.nanos.saturating_sub(rhs.nanos),
        }
    }
}

impl Sub for Timestamp {
    type Output = Duration;
    fn sub(self, rhs: Timestamp) -> Duration {
        Duration {
            nanos: self.nanos.saturating_sub(rhs.nanos),
        }
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, rhs: Duration) -> Duration {
        Duration {
            nanos: self.nanos.saturating_add(rhs.nanos),
        }
    }
}

impl Sub for Duration {
    type Output = Duration;
    fn sub(self, rhs: Duration) -> Duration {
        Duration {
            nanos: self.nanos.saturating_sub(rhs.nanos),
        }
    }
}

impl std::ops::Div<i64> for Duration {
    type Output = Duration;
    fn div(self, rhs: i64) -> Duration {
        Duration {
            nanos: self.nanos.checked_div(rhs).unwrap_or(0),
        }
    }
}

impl std::ops::Mul<i64> for Duration {
    type Output = Duration;
    fn mul(self, rhs: i64) -> Duration {
        Duration {
            nanos: self.nanos.saturating_mul(rhs),
        }
    }
}

impl fmt::Display for Duration {
    /// Milliseconds with three decimals, e.g. `25.712 ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} ms", self.as_millis_f64())
    }
}

/// Total length of the union of time intervals `[start, end]`.
pub(crate) fn union_len(iv: &[(Timestamp, Timestamp)]) -> Duration {
    // sorted in a copy, on the stack for the usual few intervals
    let mut iv: smallvec::SmallVec<[(Timestamp, Timestamp); 8]> = iv.into();
    iv.sort_unstable();
    let mut total = Duration::ZERO;
    let mut cur: Option<(Timestamp, Timestamp)> = None;
    for (s, e) in iv {
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total = total + (ce - cs);
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    if let Some((cs, ce)) = cur {
        total = total + (ce - cs);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_and_rtts() {
        let t0 = Timestamp::from_nanos(1_000_000_000);
        let t1 = t0 + Duration::from_millis(52);
        assert_eq!(t1 - t0, Duration::from_millis(52));
        assert_eq!((t1 - t0).in_rtts(Duration::from_millis(26)), Some(2.0));
        assert_eq!(Duration::from_millis(1).in_rtts(Duration::ZERO), None);
        assert_eq!(format!("{}", Duration::from_micros(25_712)), "25.712 ms");
    }
}
