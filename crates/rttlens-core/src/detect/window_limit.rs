//! `window-limit`: the sender's bytes in flight stay flat, round after
//! round, at the receiver's window as far as the capture can tell — but the
//! capture holds no SYN, so the receiver's window scale is inferred (a lower
//! bound) and the cap may be the receiver's window or the sender's own send
//! buffer (or a clamp). The cap itself is certain: a flight within one MSS
//! for several loss-free rounds, ACK-clocked, is held by a window, not by
//! the congestion window, which grows. Both candidates and both fixes are
//! given; the full capture (with the SYNs) tells them apart
//! (`receive-window-limit` or `sender-window-cap`).
//!
//! Source: docs/design.md §4 "Round limits" (`window`) and "Without the handshake";
//! RFC 7323 §2.2 (the scale is only in the SYNs).

use super::finding::{conf, ev, Finding, Level};
use super::util::{capped_cost, capped_rounds_evidence, median, per_rtt_mb_s, window_limited};
use crate::analysis::rounds::FLAT_ROUNDS;
use crate::analysis::Analysis;
use crate::flow::rounds::Limit;

/// Finding id.
pub(crate) const ID: &str = "window-limit";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let Some((t, capped)) = window_limited(a, Limit::Window, FLAT_ROUNDS) else {
        return vec![];
    };
    let flight = median(capped.iter().map(|r| r.max_flight));
    let rwnd = median(capped.iter().map(|r| r.rwnd));
    // as for a receive window: against slow start unbounded, the rounds a
    // wider window would have saved (whichever window it was)
    let (cost, span) = capped_cost(a, &t.rounds, capped[0].index, flight, u64::MAX);
    let sender = t.sender.as_str();
    let receiver = t.sender.peer().as_str();
    let rate = per_rtt_mb_s(a, flight);
    let mut evidence = capped_rounds_evidence(&capped, |r| {
        format!(
            "round {}: {} B in flight, the {receiver}'s window at least {} B",
            r.index, r.max_flight, r.rwnd
        )
    });
    if let Some(w) = a.tcp.window_scale_inferred[t.sender.peer().index()] {
        evidence.push(ev(
            w.at.frame,
            format!(
                "{} B in flight under a window field of {}: the {receiver}'s window scale is at least {} (no SYN in the capture), so its window is known only as a lower bound",
                w.flight, w.raw, w.shift
            ),
        ));
    }
    evidence.sort_by_key(|e| e.frame);
    vec![Finding {
        id: ID,
        connection: a.conn.index,
        title: format!(
            "{sender}'s bytes in flight flat at {flight} B for {} rounds: a window capped it — the {receiver}'s receive window (at least {rwnd} B; its scale is not in the capture) or the {sender}'s send buffer; throughput bound {rate:.2} MB/s",
            capped.len()
        ),
        cost,
        evidence,
        confidence: conf(
            Level::Medium,
            format!(
                "{} loss-free, ACK-clocked rounds within ±1 MSS of {flight} B: the cap is certain, whose window it was is not (no SYNs)",
                capped.len()
            ),
        ),
        fix: format!(
            "Find out whose window it is: a capture with the connection's SYNs shows the {receiver}'s window scale (or `ss -tmi` on either host: `rcv_space`/`rcv_wnd` on the {receiver}, `snd_wnd`/`skmem` on the {sender}). \
             If the {receiver}'s: let its receive buffer grow (`net.ipv4.tcp_rmem` max, e.g. `4096 131072 16777216`; do not pin SO_RCVBUF; keep `net.ipv4.tcp_moderate_rcvbuf=1`). \
             If the {sender}'s: raise its send buffer (`net.ipv4.tcp_wmem`, nginx `listen … sndbuf=`; do not pin SO_SNDBUF) and look for a window clamp (TCP_WINDOW_CLAMP, `ip route … window`)."
        ),
        references: vec![
            "docs/design.md §4 (round limits)",
            "RFC 7323 §2.2 (window scale only in the SYNs)",
            "Linux tcp_rcv_space_adjust(), tcp_sndbuf_expand(), net.ipv4.tcp_rmem, net.ipv4.tcp_wmem",
        ],
        span,
    }]
}
