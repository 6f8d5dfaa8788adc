//! The RTT's rise over a connection: its samples climb well above their
//! early level while data is in flight, and stay up, because packets wait
//! in a queue at a bottleneck (bufferbloat, a congested or shaped hop).
//!
//! The test is a rise *over time*, not a spread: random jitter spreads the
//! samples around the same level from first to last, queueing that the
//! transfer builds (or meets) lifts the later samples (the median of the
//! second half) above the early ones (the low end of the first half, where
//! the first rounds are: a sender in slow start fills a deep queue within
//! a quarter of its transfer)
//! (Sundaresan et al., "TCP Congestion Signatures", IMC 2017: a flow that
//! fills its own bottleneck queue shows its RTT growing with its flight).
//! Samples are the far half's (h_s from a client capture, h_c from a server
//! capture: data/ACK pairs and timestamp echoes) plus the near half's
//! minimum.
//!
//! Judged once per connection ([`Analysis::rtt_rise`]) and read by the
//! detectors: `queueing-delay` reports it, and the window detectors
//! (`sender-window-cap`, `receive-window-limit`, `window-limit`) stand down
//! when it holds: a flat flight is then the bottleneck's rate times the
//! inflated RTT, and a bigger window would only queue more.

use crate::analysis::rtt::RttRise;
use crate::analysis::Analysis;
use crate::base::side::Side;
use crate::base::time::Duration;
use crate::flow::rtt::RttSample;
use smallvec::SmallVec;

/// Samples needed to judge a trend.
pub(crate) const MIN_SAMPLES: usize = 12;

/// The later samples' median must exceed the early ones' by this share of
/// the baseline RTT (the RTT doubled: a lab's userspace delay line or a
/// busy host queues a few ms under any bulk transfer, which is not worth a
/// finding) …
pub(crate) const RISE_SHARE: f64 = 1.0;

/// … and by at least this much (timer and scheduling noise, and the
/// few-ms queues of any busy path).
pub(crate) const RISE_MIN: Duration = Duration::from_millis(10);

/// The early level: this quantile of the first half of the samples.
pub(crate) const EARLY_QUANTILE: f64 = 0.1;

impl Analysis {
    /// The rise of the connection's RTT, if it is one (see the module
    /// docs); judged once per connection.
    pub(crate) fn rtt_rise(&self) -> Option<RttRise> {
        *self.rtt_rise.get_or_init(|| judge(self))
    }
}

/// The `q`-quantile (0.0–1.0) of `v` by RTT.
fn quantile(v: &[RttSample], q: f64) -> Option<RttSample> {
    // on the stack for the common few dozen samples
    let mut s: SmallVec<[RttSample; 32]> = SmallVec::from_slice(v);
    if s.is_empty() {
        return None;
    }
    let k = ((s.len() - 1) as f64 * q).round() as usize;
    s.select_nth_unstable_by_key(k, |x| x.d);
    Some(s[k])
}

fn median(v: &[RttSample]) -> Option<RttSample> {
    quantile(v, 0.5)
}

fn judge(a: &Analysis) -> Option<RttRise> {
    let r = a.rtt?;
    let (far, near) = if r.h_s >= r.h_c {
        (Side::Server, r.h_c)
    } else {
        (Side::Client, r.h_s)
    };
    let s = a.rtt_samples(far);
    if s.len() < MIN_SAMPLES {
        return None;
    }
    // a flow that fills its own queue does so within its first rounds (slow
    // start doubles the flight every round): the early level is the low
    // end of the first half, where those rounds are, not its median
    let early = quantile(&s[..(s.len() / 2).max(3)], EARLY_QUANTILE)?;
    let late = median(&s[s.len() / 2..])?;
    let peak = *s.iter().max_by_key(|x| x.d)?;
    let q = RttRise {
        early: early.d + near,
        late: late.d + near,
        peak,
        first: s[0],
        late_sample: late,
        samples: s.len(),
        near,
    };
    let base = a.rtt_min;
    let rise = RISE_MIN.max(Duration::from_nanos(
        (base.nanos as f64 * RISE_SHARE) as i64,
    ));
    let risen =
        q.late >= q.early + rise && q.late.nanos as f64 >= (1.0 + RISE_SHARE) * base.nanos as f64;
    risen.then_some(q)
}
