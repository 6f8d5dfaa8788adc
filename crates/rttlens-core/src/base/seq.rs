//! TCP sequence-number arithmetic modulo 2³² (RFC 9293 §3.4).
//!
//! [`SeqNumber`] compares through `wrapping_sub`, so a stream that wraps past
//! 2³² keeps its order (smoltcp `wire/tcp.rs` `SeqNumber` does the same).

use std::cmp::Ordering;
use std::fmt;

/// A TCP sequence or acknowledgment number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SeqNumber(pub u32);

impl SeqNumber {
    /// `self + n`, wrapping modulo 2³².
    #[inline]
    #[allow(clippy::should_implement_trait)] // u32 + SeqNumber arithmetic is not Add<Self>
    pub fn add(self, n: u32) -> SeqNumber {
        SeqNumber(self.0.wrapping_add(n))
    }

    /// Signed distance `self − other`, valid while the two are within 2³¹.
    #[inline]
    pub(crate) fn diff(self, other: SeqNumber) -> i64 {
        self.0.wrapping_sub(other.0) as i32 as i64
    }
}

impl PartialOrd for SeqNumber {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SeqNumber {
    /// Order modulo 2³²: `a < b` when `b − a` is in (0, 2³¹).
    fn cmp(&self, other: &Self) -> Ordering {
        self.diff(*other).cmp(&0)
    }
}

impl fmt::Display for SeqNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraparound() {
        let a = SeqNumber(u32::MAX - 10);
        let b = a.add(20);
        assert_eq!(b, SeqNumber(9));
        assert!(a < b);
        assert_eq!(b.diff(a), 20);
        assert_eq!(a.diff(b), -20);
        assert_eq!(a.max(b), b);
    }
}
