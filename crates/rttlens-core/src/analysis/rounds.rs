//! Round limits: what held each round's flight where it was
//! (docs/design.md §4 "Round limits"), classified from the rounds
//! `flow::rounds` counted.

use crate::base::time::Duration;
use crate::flow::rounds::{Limit, Round};

/// How close to the receiver's window (in MSS) a flight must come to be
/// `rwnd`-limited (docs/design.md §4 "Round limits"). Two, not one: the
/// sender's silly-window avoidance leaves up to one segment of the
/// window unused (RFC 9293 §3.8.6.2.1), and seen away from the sender the
/// eligible ACK can lag one more segment, since receivers ACK every second
/// segment (RFC 5681 §4.2).
pub(crate) const RWND_SLACK_MSS: u64 = 2;

/// Share of a round's period its data must span (first to last segment)
/// for a flat run to be `bottleneck` rather than `sndbuf`: a window-limited
/// sender below the path's rate sends its round in a burst and waits.
pub(crate) const BUSY_SHARE: f64 = 0.75;

/// Rounds in a run of flat flight needed to call it `sndbuf` (docs/design.md
/// §4 "Round limits").
pub(crate) const FLAT_ROUNDS: usize = 3;
/// Smallest flat flight, in MSS, called `sndbuf`. Below it the sender is
/// not held by a buffer (Linux's smallest SO_SNDBUF is 4.5 KB and autotuning
/// starts at 16 KB, `net.ipv4.tcp_wmem`) but by its own pace: on a path of a
/// few µs every segment is ACKed before the next one leaves.
pub(crate) const FLAT_MIN_MSS: u64 = 4;
/// A segment shorter than this share of the MSS is "sub-MSS": the sender's
/// queue ran dry (a cwnd-limited sender fills segments; writes of slightly
/// less than one MSS, such as one TLS record per segment, still count as full).
pub(crate) const SUB_MSS: f64 = 0.9;
/// Growth per round at or above which a cwnd-limited round is slow start.
pub(crate) const SLOW_START_GROWTH: f64 = 1.3;
/// The largest window an unscaled window field can advertise (bytes,
/// RFC 7323 §2.3).
pub(crate) const UNSCALED_MAX_WINDOW: u64 = 65535;

/// Set each round's [`Limit`]. `mss` is the sender's segment size (bytes),
/// `rtt` the baseline RTT.
///
/// Rules (docs/design.md §4 "Round limits"): `rwnd` if flight ≥ rwnd − 2 MSS ([`RWND_SLACK_MSS`]); `sndbuf` if flat
/// (±1 MSS, and at least 4 MSS) below rwnd for ≥ 3 loss-free rounds; `app` if the round ends on
/// a sub-MSS segment (< 90 % of the MSS) with room left in the window and
/// the next round is not ACK-timed (its first segment left more than
/// max(1 ms, RTT/4) after the releasing ACK reached the sender, or it
/// follows data or a FIN from the peer and may answer it, or there is no
/// next round; a window cap that cuts its last segment short is followed
/// at once by ACK-clocked sends), or it is the last round and smaller than
/// the one before (the data ran out); else
/// cwnd, slow start when the flight grew ≥ 1.3× over the previous round.
///
/// `rwnd_exact` is false when the window scale was inferred (no SYNs in the
/// capture) and the rounds' `rwnd` are lower bounds. A flight at a lower
/// bound proves nothing by itself (the true window may be 2× or more), so
/// `rwnd` rounds are kept only when the flight *followed* the window: at
/// least [`FLAT_ROUNDS`] of them, with windows spread over more than
/// [`RWND_SLACK_MSS`] MSS (a sender capped elsewhere does not track the
/// receiver's window as it changes), when the window field sat at its
/// unscaled maximum ([`UNSCALED_MAX_WINDOW`]) in all of them, or when the
/// flight met the window to the byte in one of them; otherwise they are
/// `unknown`, except runs of at least [`FLAT_ROUNDS`] loss-free ones whose
/// flights stay within one MSS of each other: `window` (a window capped the
/// flight; the receiver's or the sender's, the capture cannot say).
pub(crate) fn classify(rounds: &mut [Round], mss: u64, rtt: Duration, rwnd_exact: bool) {
    let mss = mss.max(1);
    let ack_timed = Duration::from_millis(1).max(rtt / 4);
    let n = rounds.len();
    for i in 0..n {
        let r = &rounds[i];
        let slack = RWND_SLACK_MSS * mss;
        // flight ≥ rwnd − slack (docs/design.md §4 "Round limits")
        let room = r.rwnd > 0 && r.max_flight + slack < r.rwnd;
        let limit = if r.rwnd > 0 && r.max_flight + slack >= r.rwnd {
            Limit::Rwnd
        } else if room && {
            let next = rounds.get(i + 1);
            // a segment several MSS long (GRO/TSO in the capture) stands
            // for full segments and its remainder: the remainder is the tail
            let len = u64::from(r.last_len);
            let tail = match len % mss {
                0 if len > 0 => mss,
                rem => rem,
            };
            let sub_mss = (tail as f64) < SUB_MSS * mss as f64;
            // the last round, smaller than the one before: the data ran out
            let shrank = next.is_none() && i > 0 && r.max_flight + mss < rounds[i - 1].max_flight;
            // the next round is no ACK-clocked continuation: none, late
            // after its ACK, or an answer to the peer
            let not_clocked = next
                .is_none_or(|nx| nx.answers_peer || nx.release_delay.is_none_or(|d| d > ack_timed));
            shrank || (sub_mss && not_clocked)
        } {
            Limit::App
        } else if r.loss {
            Limit::Unknown
        } else {
            let prev = i
                .checked_sub(1)
                .map(|p| &rounds[p])
                .filter(|p| !p.loss && p.max_flight > 0);
            match prev {
                Some(p) if r.max_flight as f64 >= SLOW_START_GROWTH * p.max_flight as f64 => {
                    Limit::SlowStart
                }
                Some(_) => Limit::CongestionAvoidance,
                None => Limit::SlowStart,
            }
        };
        rounds[i].limit = limit;
    }
    if !rwnd_exact {
        let at_window = || rounds.iter().filter(|r| r.limit == Limit::Rwnd);
        let lo = at_window().map(|r| r.rwnd).min().unwrap_or(0);
        let hi = at_window().map(|r| r.rwnd).max().unwrap_or(0);
        let followed = at_window().count() >= FLAT_ROUNDS && hi - lo > RWND_SLACK_MSS * mss;
        // a window field pinned at 65535 with no shift inferred (an rwnd
        // of exactly 65535 B is the field's maximum at shift 0): the
        // signature of an unscaled window, which cannot say more (RFC 7323
        // §2.3). A scaled receiver advertises `window >> shift` and does
        // not sit on the field's maximum round after round.
        let unscaled_max = at_window().count() >= FLAT_ROUNDS
            && at_window().all(|r| r.rwnd == UNSCALED_MAX_WINDOW);
        // a flight that met the window to the byte: a sender stops at
        // exactly that byte only at the window's edge (Linux cuts a segment
        // to fit the window, `tcp_write_xmit()` → `tso_fragment()`); a cap
        // elsewhere landing on it is a one-in-an-MSS coincidence
        let to_the_byte =
            at_window().count() >= FLAT_ROUNDS && at_window().any(|r| r.max_flight == r.rwnd);
        if !followed && !unscaled_max && !to_the_byte {
            for r in rounds.iter_mut().filter(|r| r.limit == Limit::Rwnd) {
                r.limit = Limit::Unknown;
            }
            // ... but a flight flat at that window round after round is
            // capped by a window all the same, whose the capture cannot say
            let at = |r: &Round| {
                r.limit == Limit::Unknown
                    && r.rwnd > 0
                    && r.max_flight + RWND_SLACK_MSS * mss >= r.rwnd
            };
            for run in flat_runs(rounds, mss, at) {
                for r in &mut rounds[run] {
                    r.limit = Limit::Window;
                }
            }
        }
    }
    // Flat runs below rwnd: sndbuf (loss-free, non-app, non-rwnd rounds)
    let cwnd = |r: &Round| matches!(r.limit, Limit::SlowStart | Limit::CongestionAvoidance);
    for run in flat_runs(rounds, mss, cwnd) {
        // busy end to end: the median of span / period over the run
        let mut busy: Vec<f64> = run
            .clone()
            .filter_map(|k| {
                let next = rounds.get(k + 1)?;
                let period = (next.first.ts - rounds[k].first.ts).nanos;
                let span = (rounds[k].last.ts - rounds[k].first.ts).nanos;
                (period > 0).then(|| span as f64 / period as f64)
            })
            .collect();
        busy.sort_by(f64::total_cmp);
        let limit = match busy.get(busy.len() / 2) {
            Some(b) if *b >= BUSY_SHARE => Limit::Bottleneck,
            _ => Limit::Sndbuf,
        };
        for r in &mut rounds[run] {
            r.limit = limit;
        }
    }
}

/// The maximal runs of at least [`FLAT_ROUNDS`] consecutive rounds that
/// `pick` accepts, loss-free, of at least [`FLAT_MIN_MSS`] in flight, whose
/// flights stay within one MSS of each other: a flight held flat.
fn flat_runs(
    rounds: &[Round],
    mss: u64,
    pick: impl Fn(&Round) -> bool,
) -> Vec<std::ops::Range<usize>> {
    let eligible = |r: &Round| !r.loss && r.max_flight >= FLAT_MIN_MSS * mss && pick(r);
    let n = rounds.len();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < n {
        if !eligible(&rounds[i]) {
            i += 1;
            continue;
        }
        let (mut lo, mut hi) = (rounds[i].max_flight, rounds[i].max_flight);
        let mut j = i + 1;
        while j < n && eligible(&rounds[j]) {
            let f = rounds[j].max_flight;
            if f.max(hi) - f.min(lo) > mss {
                break;
            }
            lo = lo.min(f);
            hi = hi.max(f);
            j += 1;
        }
        if j - i >= FLAT_ROUNDS {
            runs.push(i..j);
        }
        i = j.max(i + 1);
    }
    runs
}

/// Duration of `rounds` transfers if the flight could grow by slow start
/// (doubling) from `start_flight`, capped at `cap` bytes per round: how many
/// rounds it takes to send `bytes`. Used to cost window limits.
pub(crate) fn slow_start_rounds(bytes: u64, start_flight: u64, cap: u64) -> u64 {
    let mut sent = 0u64;
    let mut w = start_flight.max(1);
    let cap = cap.max(1);
    let mut n = 0;
    while sent < bytes && n < 1_000_000 {
        sent += w.min(cap);
        w = w.saturating_mul(2);
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::side::FrameRef;
    use crate::base::time::Timestamp;

    fn round(i: u32, flight: u64, rwnd: u64, last_len: u32) -> Round {
        Round {
            index: i,
            first: FrameRef {
                frame: i as u64 * 10,
                ts: Timestamp::from_nanos(i as i64 * 26_000_000),
            },
            last: FrameRef {
                frame: i as u64 * 10 + 9,
                ts: Timestamp::from_nanos(i as i64 * 26_000_000 + 1_000_000),
            },
            start_offset: 0,
            new_bytes: flight,
            retx_bytes: 0,
            segments: 10,
            max_flight: flight,
            max_flight_frame: 0,
            rwnd,
            max_rwnd: rwnd,
            loss: false,
            last_len,
            release_delay: Some(Duration::ZERO),
            answers_peer: false,
            limit: Limit::Unknown,
        }
    }

    #[test]
    fn a_flat_flight_at_an_inferred_window_is_a_window_cap() {
        // no SYNs: the window (a lower bound) hardly moves and the flight
        // sits just under it for 120 rounds, short of it by more than a byte
        let rtt = Duration::from_millis(26);
        let mut rounds: Vec<Round> = (0..120)
            .map(|i| round(i, 8688, 8832 + (i as u64 % 2) * 64, 1448))
            .collect();
        classify(&mut rounds, 1448, rtt, false);
        assert!(
            rounds.iter().all(|r| r.limit == Limit::Window),
            "{:?}",
            rounds.iter().map(|r| r.limit).collect::<Vec<_>>()
        );
        // the same rounds with the SYNs seen: the receiver's window
        classify(&mut rounds, 1448, rtt, true);
        assert!(rounds.iter().all(|r| r.limit == Limit::Rwnd));
        // a flight that grows under an inferred window is no cap
        let mut growing: Vec<Round> = (0..6)
            .map(|i| round(i, 14480 << i, (14480 << i) + 100, 1448))
            .collect();
        classify(&mut growing, 1448, rtt, false);
        assert!(growing.iter().all(|r| r.limit != Limit::Window));
    }

    #[test]
    fn classify_slow_start_flat_and_rwnd() {
        let rtt = Duration::from_millis(26);
        let mut ss: Vec<Round> = [14280, 28560, 57120, 114240]
            .iter()
            .enumerate()
            .map(|(i, f)| round(i as u32, *f, 1 << 20, 1428))
            .collect();
        classify(&mut ss, 1428, rtt, true);
        assert!(ss.iter().all(|r| r.limit == Limit::SlowStart));

        let mut flat: Vec<Round> = (0..6)
            .map(|i| round(i, 65535 - (i as u64 % 2) * 500, 131072, 1413))
            .collect();
        classify(&mut flat, 1428, rtt, true);
        assert!(
            flat.iter().all(|r| r.limit == Limit::Sndbuf),
            "{:?}",
            flat.iter().map(|r| r.limit).collect::<Vec<_>>()
        );

        let mut rw: Vec<Round> = (0..4)
            .map(|i| round(i, 131072 - 100, 131072, 1428))
            .collect();
        classify(&mut rw, 1428, rtt, true);
        assert!(rw.iter().all(|r| r.limit == Limit::Rwnd));

        // one segment in flight per round, ACKed before the next leaves: the
        // sender's own pace on a µs path, not a send buffer
        let mut paced: Vec<Round> = (0..6).map(|i| round(i, 1428, 1 << 20, 1428)).collect();
        classify(&mut paced, 1428, rtt, true);
        assert!(paced.iter().all(|r| r.limit != Limit::Sndbuf));

        let mut app = vec![round(0, 3000, 1 << 20, 200)];
        classify(&mut app, 1428, rtt, true);
        assert_eq!(app[0].limit, Limit::App);
    }

    #[test]
    fn a_round_ending_short_before_an_answer_to_the_peer_is_app() {
        let rtt = Duration::from_millis(40);
        // 3508 B ending on a 244 B segment; the next round leaves right as
        // an ACK arrives: ACK-clocked, so the window, not the application
        let mut clocked = vec![round(0, 3508, 1 << 20, 244), round(1, 24, 1 << 20, 24)];
        classify(&mut clocked, 1448, rtt, true);
        assert_ne!(clocked[0].limit, Limit::App);
        // the same, but the next round follows the peer's FIN (a TLS
        // close_notify answering it): the data had run out
        let mut answered = clocked.clone();
        answered[1].answers_peer = true;
        classify(&mut answered, 1448, rtt, true);
        assert_eq!(answered[0].limit, Limit::App);
    }

    #[test]
    fn slow_start_rounds_caps() {
        assert_eq!(slow_start_rounds(14280 * 7, 14280, u64::MAX), 3);
        assert_eq!(slow_start_rounds(600_000, 65535, 65535), 10);
        assert_eq!(slow_start_rounds(0, 1, 1), 0);
    }
}
