//! How much a half of the path swung: the spread of its RTT samples above
//! their minimum. A wait no longer than the swing may be the path's own
//! (a jittery or queued path answers late now and then), so the detectors
//! of time an end spent (`server-think-time`, `server-handshake-time`)
//! claim only what exceeds it (docs/design.md §4 "Think time").

use crate::analysis::Analysis;
use crate::base::side::Side;
use crate::base::time::Duration;
use smallvec::SmallVec;

/// RTT samples of a half needed to judge its swing.
pub(crate) const SWING_MIN_SAMPLES: usize = 5;

impl Analysis {
    /// How much the path's half on `side` swung: the 90th percentile of its
    /// RTT samples less their minimum (`worst`: the largest sample less the
    /// minimum), or their median less the minimum plus three standard
    /// deviations if that is more, leaving out the sample the frame
    /// `exclude` gave (an answer's own sample holds the wait itself). Zero
    /// with fewer than [`SWING_MIN_SAMPLES`] samples.
    pub(crate) fn rtt_swing(&self, side: Side, exclude: u64, worst: bool) -> Duration {
        // on the stack for the common few dozen samples
        let mut v: SmallVec<[Duration; 64]> = self
            .rtt_samples(side)
            .iter()
            .filter(|s| s.at.frame != exclude)
            .map(|s| s.d)
            .collect();
        if v.len() < SWING_MIN_SAMPLES {
            return Duration::ZERO;
        }
        v.sort();
        let top = if worst {
            v.len() - 1
        } else {
            (v.len() - 1) * 9 / 10
        };
        // a few samples rarely catch a jittery path at its worst: its spread
        // is also taken as the median's height over the minimum plus three
        // standard deviations (a stable path's is a fraction of a ms)
        let n = v.len() as f64;
        let secs = || v.iter().map(|d| d.as_secs_f64());
        let mean = secs().sum::<f64>() / n;
        let sd = (secs().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        // f64 seconds of a capture: far from i64 nanoseconds' range
        let spread = Duration::from_nanos(
            ((v[v.len() / 2].as_secs_f64() - v[0].as_secs_f64() + 3.0 * sd).max(0.0) * 1e9) as i64,
        );
        (v[top] - v[0]).max(spread)
    }
}
