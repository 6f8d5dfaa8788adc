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
use crate::base::text::text;
use crate::flow::rounds::Limit;

/// Finding id.
pub(crate) const ID: &str = "window-limit";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    // HTTP/2 the capture cannot read: a flight capped below the TCP window
    // may be the receiver's HTTP/2 window as well as the sender's buffer
    let found = window_limited(a, Limit::Window, FLAT_ROUNDS).or_else(|| {
        a.h2_blind
            .then(|| window_limited(a, Limit::Sndbuf, FLAT_ROUNDS))
            .flatten()
    });
    let Some((t, capped)) = found else {
        return vec![];
    };
    let h2 = a.h2_blind;
    if super::util::h2_flow_control_held(a, t.sender) {
        // the HTTP/2 window held the flight: `h2-flow-control-stall` names it
        return vec![];
    }
    let flight = median(capped.iter().map(|r| r.max_flight));
    let rwnd = median(capped.iter().map(|r| r.rwnd));
    // as for a receive window: against slow start unbounded, the rounds a
    // wider window would have saved (whichever window it was)
    let (cost, span) = capped_cost(a, &t.rounds, capped[0].index, flight, u64::MAX);
    let sender = t.sender.as_str();
    let receiver = t.sender.peer().as_str();
    let rate = per_rtt_mb_s(a, flight);
    let mut evidence = capped_rounds_evidence(&capped, |r| {
        text!(
            "round {}: {} B in flight, the {receiver}'s TCP window {}{} B",
            r.index,
            r.max_flight,
            if a.conn.half[t.sender.index()].wscale_known {
                ""
            } else {
                "at least "
            },
            r.rwnd
        )
    });
    if let Some(w) = a.tcp.window_scale_inferred[t.sender.peer().index()] {
        evidence.push(ev(
            w.at.frame,
            text!(
                "{} B in flight under a window field of {}: the {receiver}'s window scale is at least {} (no SYN in the capture), so its window is known only as a lower bound",
                w.flight, w.raw, w.shift
            ),
        ));
    }
    evidence.sort_by_key(|e| e.frame);
    let rounds = capped.len();
    // whose window it may be: the receiver's TCP window (its scale not in
    // the capture), its HTTP/2 window (frames the capture cannot read), the
    // sender's send buffer
    let tcp_window = capped[0].limit == Limit::Window;
    let mut candidates = Vec::new();
    if tcp_window {
        candidates.push(text!(
            "the {receiver}'s receive window (at least {rwnd} B; its scale is not in the capture)"
        ));
    }
    if h2 {
        candidates.push(text!("the {receiver}'s HTTP/2 flow-control window"));
    }
    candidates.push(text!("the {sender}'s send buffer"));
    let mut why = text!(
        "{rounds} loss-free, ACK-clocked rounds within ±1 MSS of {flight} B: the cap is certain, whose window it was is not"
    );
    why.push_str(if h2 {
        " (HTTP/2 runs flow control of its own, which the capture cannot show without keys or whole frames)"
    } else {
        " (no SYNs)"
    });
    let mut fix = String::from("Find out whose window it is: ");
    if tcp_window {
        fix.push_str(&text!(
            "a capture with the connection's SYNs shows the {receiver}'s window scale; "
        ));
    }
    if h2 {
        fix.push_str("the TLS keys (`SSLKEYLOGFILE`, `rttlens analyze --keylog`) and a full snapshot length show the HTTP/2 WINDOW_UPDATEs (`h2-flow-control-stall`); ");
    }
    fix.push_str(&text!(
        "or `ss -tmi` on either host (`rcv_space`/`rcv_wnd` on the {receiver}, `snd_wnd`/`skmem` on the {sender})."
    ));
    if tcp_window {
        fix.push_str(&text!(" If the {receiver}'s TCP window: let its receive buffer grow (`net.ipv4.tcp_rmem` max, e.g. `4096 131072 16777216`; do not pin SO_RCVBUF; keep `net.ipv4.tcp_moderate_rcvbuf=1`)."));
    }
    if h2 {
        fix.push_str(&text!(" If HTTP/2's: let the {receiver} advertise a larger window (Go/gRPC `InitialWindowSize`/`InitialConnWindowSize`, Envoy `initial_stream_window_size`, nginx `http2_body_preread_size` for request bodies)."));
    }
    fix.push_str(&text!(" If the {sender}'s: raise its send buffer (`net.ipv4.tcp_wmem`, nginx `listen … sndbuf=`; do not pin SO_SNDBUF) and look for a window clamp (TCP_WINDOW_CLAMP, `ip route … window`)."));
    let mut references = vec!["docs/design.md §4 (round limits)"];
    if tcp_window {
        references.push("RFC 7323 §2.2 (window scale only in the SYNs)");
    }
    if h2 {
        references.push("RFC 9113 §6.9 (HTTP/2 flow control)");
    }
    references.push(
        "Linux tcp_rcv_space_adjust(), tcp_sndbuf_expand(), net.ipv4.tcp_rmem, net.ipv4.tcp_wmem",
    );
    vec![Finding {
        facts: Default::default(),
        id: ID,
        connection: a.conn.index,
        title: text!(
            "{sender}'s bytes in flight flat at {flight} B for {rounds} rounds: a window capped it — {}; throughput bound {rate:.2} MB/s",
            candidates.join(" or ")
        ),
        cost,
        evidence,
        confidence: conf(Level::Medium, why),
        fix,
        references,
        span,
    }]
}
