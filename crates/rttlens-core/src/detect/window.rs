//! What the window detectors share (`sender-window-cap`,
//! `receive-window-limit`, `window-limit`): which rounds a window held
//! ([`window_limited`]), what the cap cost against slow start
//! ([`capped_cost`]), and the evidence of a run of capped rounds. A shared
//! module of `detect`, not a detector: the detectors import it, never each
//! other (`tests/layers.rs`).

use super::finding::{ev, Fact, Value};
use crate::analysis::rounds::slow_start_rounds;
use crate::analysis::Analysis;
use crate::base::cost::Cost;
use crate::base::fact::fact;
use crate::base::side::Side;
use crate::base::time::{union_len, Duration, Timestamp};
use crate::flow::rounds::{Limit, Round};

/// Median of a sequence of byte counts (0 when empty).
pub(crate) fn median(it: impl Iterator<Item = u64>) -> u64 {
    let mut v: Vec<u64> = it.collect();
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[v.len() / 2]
}

/// Cost of a window limit that first held round `first` of `sender`'s
/// `rounds`, and the interval it accrued in: the time the stretch the limit
/// held actually took, against slow start growing from `start_flight`
/// (doubling per round, RFC 5681 §3.1) up to `cap` bytes per round for the
/// same bytes, one RTT a round. A lower bound on the rounds: the sender's
/// cwnd may have been larger still.
///
/// The stretch runs from round `first` through the first round after it
/// that the application limited (the end of that burst, whose bytes a wider
/// window would have sent sooner); later rounds were paced by the
/// application, not by the window, and cost the window nothing (issue 21:
/// a cap seen in 3 rounds of a long connection was charged every later,
/// application-limited round).
///
/// The stretch is timed, from its first round's first segment to its last
/// round's last, not counted in round trips: a capped round often takes
/// longer than one (a sender held by its send buffer waits for the ACKs
/// that free it, `sndbuf-cap` in the lab: 28 rounds in 1303 ms at a 40 ms
/// RTT), and the fix wins back the time (issue 43: the lab's
/// `--verify-fix` measured 1156 ms won back where 20 rounds, 801 ms, were
/// predicted). The ideal takes `ideal − 1` round trips from its first
/// round to its last. Time within the stretch that another cause held is
/// left out: the receiver's window closed (`zero-window`'s cost, the lab's
/// `slow-reader`), lost data waiting for its retransmission (the loss
/// findings' cost: a response whose last round was resent for 81 s before
/// a reset was charged those 81 s, `rto-backoff`'s), and the wait before a
/// round that answers the peer (its next request, the application's turn).
pub(crate) fn capped_cost(
    a: &Analysis,
    sender: Side,
    rounds: &[Round],
    first: u32,
    start_flight: u64,
    cap: u64,
) -> (Cost, Vec<(Timestamp, Timestamp)>) {
    let mut stretch: Vec<&Round> = Vec::new();
    for r in rounds.iter().filter(|r| r.index >= first) {
        stretch.push(r);
        if r.limit == Limit::App {
            break;
        }
    }
    let (Some(s), Some(e)) = (stretch.first(), stretch.last()) else {
        return (a.cost(Duration::ZERO), Vec::new());
    };
    let (from, to) = (s.first.ts, e.last.ts);
    let bytes: u64 = stretch.iter().map(|r| r.new_bytes).sum();
    let ideal = slow_start_rounds(bytes, start_flight, cap);
    // time within the stretch that other causes held, not the window: the
    // receiver's window closed (`zero-window`'s cost), lost data waiting
    // for its retransmission (from the original to the resend, as the loss
    // findings `fast-retransmit`, `tail-loss-probe`, `rto`, `rto-backoff`
    // charge it), and the turns of an exchange, from a round's end to the
    // next round that answers the peer (its next request: the application's
    // time)
    let closed = a
        .zero_windows(sender)
        .iter()
        .map(|z| (z.start.ts, z.end.map_or(to, |e| e.ts)));
    let losses = a
        .retransmissions(sender)
        .iter()
        .filter(|r| !r.spurious)
        .map(|r| (r.at.ts - r.delay, r.at.ts));
    let turns = stretch
        .windows(2)
        .filter(|w| w[1].answers_peer)
        .map(|w| (w[0].last.ts, w[1].first.ts));
    let others: Vec<(Timestamp, Timestamp)> = closed
        .chain(losses)
        .chain(turns)
        .filter_map(|(s, e)| {
            let (s, e) = (s.max(from), e.min(to));
            (s < e).then_some((s, e))
        })
        .collect();
    let took = (to - from) - union_len(&others);
    let ideal_took = a.rtt_min * ideal.saturating_sub(1) as i64;
    (
        a.cost((took - ideal_took).max(Duration::ZERO)),
        vec![(from, to)],
    )
}

/// `sender-window-cap` is not claimed when the transfer had more than this
/// many times as many `bottleneck` rounds as `sndbuf` ones (docs/design.md §4
/// "Rounds").
pub(crate) const BOTTLENECK_MAJORITY: usize = 3;

/// Share of round-trip time in the rounds' periods below which a window
/// limit is not what paced the transfer (see [`back_to_back`]).
pub(crate) const BINDING_SHARE: f64 = 0.5;

/// Whether window-limited `rounds` actually paced the transfer: a sender held
/// by a window waits for ACKs, so its rounds follow each other one RTT apart.
/// True when the median of `rtt_min / period` (period = start of the next
/// round − start of this one) is at least [`BINDING_SHARE`]. Rounds spaced
/// far wider (a client reading at a limited rate, a CPU-bound sender on a µs
/// path) were paced by something else, even if their flight was flat.
pub(crate) fn back_to_back(a: &Analysis, all: &[Round], limited: &[&Round]) -> bool {
    if a.rtt_min.nanos <= 0 {
        return false;
    }
    let mut shares: Vec<f64> = limited
        .iter()
        .filter_map(|r| {
            let next = all.iter().find(|n| n.index == r.index + 1)?;
            let period = (next.first.ts - r.first.ts).nanos.max(1);
            Some(a.rtt_min.nanos as f64 / period as f64)
        })
        .collect();
    if shares.is_empty() {
        return true; // a single limited round at the end: nothing contradicts it
    }
    shares.sort_by(f64::total_cmp);
    shares[shares.len() / 2] >= BINDING_SHARE
}

/// Evidence of a run of window-capped rounds: the first three, each said by
/// `say`, and the last one when there are more (`window-limit.still-flat`:
/// still N B in flight).
pub(crate) fn capped_rounds_evidence(
    capped: &[&Round],
    say: impl Fn(&Round) -> Fact,
) -> Vec<super::finding::Evidence> {
    let mut evidence: Vec<_> = capped
        .iter()
        .take(3)
        .map(|r| ev(r.max_flight_frame, say(r)))
        .collect();
    if let Some(r) = capped.last().filter(|_| capped.len() > 3) {
        evidence.push(ev(
            r.max_flight_frame,
            fact!(
                "window-limit.still-flat",
                round = Value::Count(u64::from(r.index)),
                flight_bytes = Value::Bytes(r.max_flight),
                rounds = Value::Count(capped.len() as u64),
            ),
        ));
    }
    evidence
}

/// The transfer of `a` and its rounds that `limit` held, when there are at
/// least `min` of them, they paced the transfer ([`back_to_back`]) and no
/// queue under the transfer explains the flight (an RTT that rose: the
/// flight sits in a queue at the bottleneck and no bigger window could
/// help; `queueing-delay` says so, from the same [`Analysis::rtt_rise`]).
/// What every window finding starts from.
pub(crate) fn window_limited(
    a: &Analysis,
    limit: Limit,
    min: usize,
) -> Option<(&crate::analysis::transfer::Transfer, Vec<&Round>)> {
    let t = a.transfer.as_ref()?;
    if a.rtt_rise().is_some() {
        return None;
    }
    let rounds: Vec<_> = t.rounds_with(limit).collect();
    // a transfer held by a busy bottleneck: a few flat rounds below the
    // window among many that kept the link full are its queue's doing, not
    // the send buffer's (a flight that met the receiver's window, `rwnd` or
    // `window`, is that window's whatever the other rounds were: a window
    // -limited flight spread over the round is also classed `bottleneck`)
    let bottleneck = t.rounds_with(Limit::Bottleneck).count();
    if limit == Limit::Sndbuf && bottleneck > BOTTLENECK_MAJORITY * rounds.len() {
        return None;
    }
    (rounds.len() >= min.max(1) && back_to_back(a, &t.rounds, &rounds)).then_some((t, rounds))
}

/// `bytes` per RTT in MB/s (0 with the RTT unknown): the throughput a
/// window of that many bytes allows.
pub(crate) fn per_rtt_mb_s(a: &Analysis, bytes: u64) -> f64 {
    if a.rtt_min.nanos > 0 {
        bytes as f64 / a.rtt_min.as_secs_f64() / 1e6
    } else {
        0.0
    }
}

/// Whether `sender` waited on HTTP/2 flow control: its flight was then held
/// by the receiver's HTTP/2 window, not by a TCP buffer.
pub(crate) fn h2_flow_control_held(a: &Analysis, sender: crate::base::side::Side) -> bool {
    a.h2_stalls.0.iter().any(|s| s.sender == sender)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::{union_len, Duration};

    #[test]
    fn union_merges_overlaps() {
        let t = |ms: i64| Timestamp::from_nanos(ms * 1_000_000);
        let u = union_len(&[(t(0), t(10)), (t(5), t(12)), (t(20), t(21))]);
        assert_eq!(u, Duration::from_millis(13));
        assert_eq!(median([3, 1, 2].into_iter()), 2);
        assert_eq!(median(std::iter::empty()), 0);
    }
}
