//! The words of `window-limit` (`rttlens_core::detect::window_limit`), and of
//! the window evidence the window findings share (`window-limit.still-flat`,
//! `rttlens_core::detect::util`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let (sender, receiver) = (a.str("sender"), a.str("receiver"));
    let mut candidates = Vec::new();
    if a.flag("tcp_window") {
        candidates.push(format!(
            "the {receiver}'s receive window (at least {} B; its scale is not in the capture)",
            a.u64("rwnd_bytes")
        ));
    }
    if a.flag("h2") {
        candidates.push(format!("the {receiver}'s HTTP/2 flow-control window"));
    }
    candidates.push(format!("the {sender}'s send buffer"));
    Some(text!(
        "{sender}'s bytes in flight flat at {} B for {} rounds: a window capped it — {}; throughput bound {:.2} MB/s",
        a.u64("flight_bytes"),
        a.u64("rounds"),
        candidates.join(" or "),
        a.f64("rate_mb_s")
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let (sender, receiver) = (a.str("sender"), a.str("receiver"));
    let (tcp_window, h2) = (a.flag("tcp_window"), a.flag("h2"));
    let mut fix = String::from("Find out whose window it is: ");
    if tcp_window {
        fix.push_str(&format!(
            "a capture with the connection's SYNs shows the {receiver}'s window scale; "
        ));
    }
    if h2 {
        fix.push_str("the TLS keys (`SSLKEYLOGFILE`, `rttlens analyze --keylog`) and a full snapshot length show the HTTP/2 WINDOW_UPDATEs (`h2-flow-control-stall`); ");
    }
    fix.push_str(&format!(
        "or `ss -tmi` on either host (`rcv_space`/`rcv_wnd` on the {receiver}, `snd_wnd`/`skmem` on the {sender})."
    ));
    if tcp_window {
        fix.push_str(&format!(" If the {receiver}'s TCP window: let its receive buffer grow (`net.ipv4.tcp_rmem` max, e.g. `4096 131072 16777216`; do not pin SO_RCVBUF; keep `net.ipv4.tcp_moderate_rcvbuf=1`)."));
    }
    if h2 {
        fix.push_str(&format!(" If HTTP/2's: let the {receiver} advertise a larger window (Go/gRPC `InitialWindowSize`/`InitialConnWindowSize`, Envoy `initial_stream_window_size`, nginx `http2_body_preread_size` for request bodies)."));
    }
    fix.push_str(&format!(" If the {sender}'s: raise its send buffer (`net.ipv4.tcp_wmem`, nginx `listen … sndbuf=`; do not pin SO_SNDBUF) and look for a window clamp (TCP_WINDOW_CLAMP, `ip route … window`)."));
    Some(fix.into())
}

/// A fact of kind `window-limit.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "window-limit.still-flat" => text!(
            "round {}: still {} B in flight ({} rounds flat)",
            a.u64("round"),
            a.u64("flight_bytes"),
            a.u64("rounds")
        ),
        "window-limit.round-flat" => text!(
            "round {}: {} B in flight, the {}'s TCP window {}{} B",
            a.u64("round"),
            a.u64("flight_bytes"),
            a.str("receiver"),
            if a.flag("wscale_known") {
                ""
            } else {
                "at least "
            },
            a.u64("rwnd_bytes")
        ),
        "window-limit.wscale-inferred" => text!(
            "{} B in flight under a window field of {}: the {}'s window scale is at least {} (no SYN in the capture), so its window is known only as a lower bound",
            a.u64("flight_bytes"),
            a.u64("window_field"),
            a.str("receiver"),
            a.u64("shift")
        ),
        "window-limit.cap-certain" => {
            let mut why = format!(
                "{} loss-free, ACK-clocked rounds within ±1 MSS of {} B: the cap is certain, whose window it was is not",
                a.u64("rounds"),
                a.u64("flight_bytes")
            );
            why.push_str(if a.flag("h2") {
                " (HTTP/2 runs flow control of its own, which the capture cannot show without keys or whole frames)"
            } else {
                " (no SYNs)"
            });
            why.into()
        }
        _ => return None,
    })
}
