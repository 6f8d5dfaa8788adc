//! `initial-window` and `slow-start`: the transfer began with a small
//! congestion window and spent rounds growing it.
//!
//! - `initial-window`: the first transfer round carried fewer than 10
//!   segments (RFC 6928 raised the IW to 10; older stacks and some CDNs use
//!   less) and the transfer needed more rounds because of it.
//! - `slow-start`: the flight grew ≥ 1.3× per round (RFC 5681 §3.1) for
//!   several rounds; the cost is the rounds spent against sending the same
//!   bytes at the window finally reached.
//!
//! Source: RFC 5681 §3.1, RFC 6928; Linux `tcp_slow_start()`,
//! `tcp_init_cwnd()` (route `initcwnd`), `net.ipv4.tcp_slow_start_after_idle`.

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::connection::OPTIONS_MAX;
use crate::analysis::rounds::slow_start_rounds;
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
use crate::flow::rounds::Limit;

/// Finding id of a small initial window.
pub(crate) const ID_INITIAL_WINDOW: &str = "initial-window";
/// Finding id of rounds spent in slow start.
pub(crate) const ID_SLOW_START: &str = "slow-start";
/// RFC 6928 initial window, in segments.
pub(crate) const IW10: u64 = 10;
/// Slow-start rounds (after the first) needed to report `slow-start`.
const MIN_SLOW_START_ROUNDS: usize = 3;

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let Some(t) = &a.transfer else { return vec![] };
    let mut out = Vec::new();
    let mss = t.mss.max(1);
    let ss: Vec<_> = t
        .rounds
        .iter()
        .take_while(|r| matches!(r.limit, Limit::SlowStart))
        .collect();
    let Some(iw) = t.initial_window else {
        return out;
    };
    // a window is only measured where it limited the sender: a first round
    // shorter than one full segment is the application's write (a 256 B
    // header, a small response), not its cwnd, which always allows a full
    // segment (RFC 5681 §3.1: IW ≥ 1 SMSS; Linux counts cwnd in segments,
    // tcp_cwnd_test()); full is the MSS, or the largest segment the sender
    // ever sent when that is smaller (a path MTU below the MSS)
    let full = mss.min(u64::from(a.max_payload(t.sender)).max(1));
    let first_cwnd_limited = t
        .rounds
        .first()
        .is_some_and(|r| r.limit.is_cwnd() && iw.bytes + OPTIONS_MAX >= full)
        && t.rounds.len() >= 2;
    if first_cwnd_limited && iw.bytes + mss / 2 < IW10 * mss {
        let rounds_now = slow_start_rounds(t.bytes, iw.bytes, u64::MAX);
        let rounds_iw10 = slow_start_rounds(t.bytes, IW10 * mss, u64::MAX);
        let cost = a.cost(a.rtt_min * rounds_now.saturating_sub(rounds_iw10) as i64);
        out.push(Finding {
            facts: args!(
                iw_bytes = Value::Bytes(iw.bytes),
                iw_segments = Value::Number(iw.segments),
                mss_bytes = Value::Bytes(mss),
            ),
            id: ID_INITIAL_WINDOW,
            connection: a.index(),
            cost,
            evidence: vec![ev(
                iw.frame,
                fact!(
                    "slow-start.first-round-mss",
                    flight_bytes = Value::Bytes(iw.bytes),
                    segments = Value::Number(iw.segments),
                    mss_bytes = Value::Bytes(mss),
                ),
            )],
            confidence: conf(Level::Medium, fact!("slow-start.first-round-measured")),
            references: vec!["RFC 6928", "Linux tcp_init_cwnd()"],
            span: vec![(t.first.ts, t.last.ts)],
        });
    }
    if ss.len() > MIN_SLOW_START_ROUNDS {
        let peak = ss.iter().map(|r| r.max_flight).max().unwrap_or(0).max(1);
        let bytes: u64 = ss.iter().map(|r| r.new_bytes).sum();
        let ideal = bytes.div_ceil(peak);
        let spent = ss.len() as u64;
        let cost = a.cost(a.rtt_min * spent.saturating_sub(ideal) as i64);
        let facts = args!(
            rounds = Value::Count(spent),
            iw_bytes = Value::Bytes(iw.bytes),
            flights_bytes = Value::List(ss.iter().map(|r| Value::Bytes(r.max_flight)).collect()),
        );
        let mut evidence = vec![ev(
            iw.frame,
            fact!(
                "slow-start.first-round",
                flight_bytes = Value::Bytes(iw.bytes),
                segments = Value::Number(iw.segments),
            ),
        )];
        for r in ss.iter().skip(1).take(4) {
            evidence.push(ev(
                r.max_flight_frame,
                fact!(
                    "slow-start.round",
                    round = Value::Count(u64::from(r.index)),
                    flight_bytes = Value::Bytes(r.max_flight),
                ),
            ));
        }
        out.push(Finding {
            facts,
            id: ID_SLOW_START,
            connection: a.index(),
            cost,
            evidence,
            confidence: conf(Level::Medium, fact!("slow-start.flight-grew")),
            references: vec![
                "RFC 5681 §3.1",
                "RFC 6928",
                "Linux tcp_slow_start(), tcp_slow_start_after_idle",
            ],
            span: ss
                .first()
                .zip(ss.last())
                .map(|(f, l)| (f.first.ts, l.last.ts))
                .into_iter()
                .collect(),
        });
    }
    out
}
