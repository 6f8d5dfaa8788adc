//! The words of `initial-window` and `slow-start` (`rttlens_core::detect::slow_start`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    Some(match f.id {
        "initial-window" => text!(
            "initial window of {} B ({:.1} segments) is below IW10",
            a.u64("iw_bytes"),
            a.f64("iw_segments")
        ),
        _ => {
            // the flight of each slow-start round, in order
            let growth: Vec<String> = a
                .list("flights_bytes")
                .iter()
                .filter_map(|v| v.as_u64())
                .map(|b| b.to_string())
                .collect();
            text!(
                "{} rounds of slow start from {} B (flight {} B)",
                a.u64("rounds"),
                a.u64("iw_bytes"),
                growth.join(" → ")
            )
        }
    })
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    Some(match f.id {
        "initial-window" => "On the sender: use the RFC 6928 initial window (Linux ≥ 3.0 default; `ip route change <route> initcwnd 10 initrwnd 10`).".into(),
        _ => "Start with an open window: reuse connections (HTTP keep-alive, HTTP/2, connection pools) and set `net.ipv4.tcp_slow_start_after_idle=0` so idle keep-alive connections keep their cwnd; on the sender, a larger initial window (`ip route change <route> initcwnd 32`) if the path allows.".into(),
    })
}

/// A fact of kind `slow-start.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "slow-start.first-round-mss" => text!(
            "first round: {} B in flight ({:.1} × {} B)",
            a.u64("flight_bytes"),
            a.f64("segments"),
            a.u64("mss_bytes")
        ),
        "slow-start.first-round-measured" => {
            "first transfer round measured from the capture; the sender may also have been app-limited".into()
        }
        "slow-start.first-round" => text!(
            "first round: {} B in flight ({:.1} segments)",
            a.u64("flight_bytes"),
            a.f64("segments")
        ),
        "slow-start.round" => text!(
            "round {}: {} B in flight",
            a.u64("round"),
            a.u64("flight_bytes")
        ),
        "slow-start.flight-grew" => "flight grew ≥ 1.3× per round; the cost assumes the final window was available from the start".into(),
        _ => return None,
    })
}
