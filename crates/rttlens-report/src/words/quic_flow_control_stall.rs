//! The words of `quic-flow-control-stall` (`rttlens_core::detect::quic_flow_control_stall`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let initial = a
        .get("initial_limit_bytes")
        .and_then(|v| v.as_u64())
        .map(|v| format!(" (its transport parameters allowed {v} bytes at first)"))
        .unwrap_or_default();
    Some(text!(
        "Flow control: the {} was blocked at {} bytes by the {}'s limit{initial}, {:.1} ms waiting",
        a.str("sender"),
        a.u64("limit_bytes"),
        a.str("receiver"),
        a.f64("blocked_ms")
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    Some(text!("Raise the {}'s receive windows to at least the bandwidth-delay product: quic-go `Config.InitialConnectionReceiveWindow`/`InitialStreamReceiveWindow` (and the Max… bounds), quinn `TransportConfig::receive_window`/`stream_receive_window`, nginx `http3_stream_buffer_size`, lsquic `es_init_max_data`; a CDN edge serving large objects on mobile tuned `initial_max_data` from 1 MB to 4 MB.", f.facts.str("receiver")))
}

/// A fact of kind `quic-flow-control-stall.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "quic-flow-control-stall.blocked" => {
            let stream = a
                .get("stream")
                .and_then(|v| v.as_u64())
                .map(|s| format!(" on stream {s}"))
                .unwrap_or_default();
            text!(
                "{}: the {} is blocked at {} bytes{stream}",
                a.str("frame_type"),
                a.str("sender"),
                a.u64("limit_bytes")
            )
        }
        "quic-flow-control-stall.at-limit" => {
            let stream = a
                .get("stream")
                .and_then(|v| v.as_u64())
                .map(|s| format!("stream {s}'s"))
                .unwrap_or_else(|| "the connection's".into());
            text!(
                "the {}'s data reaches {stream} limit, {} bytes, and goes no further until it is raised",
                a.str("sender"),
                a.u64("limit_bytes")
            )
        }
        "quic-flow-control-stall.raised" => text!(
            "{} {} from the {}: {:.1} ms later",
            a.str("frame_type"),
            a.u64("limit_bytes"),
            a.str("receiver"),
            a.f64("after_ms")
        ),
        "quic-flow-control-stall.blocked-then-raised" => {
            "the sender said it was blocked (BLOCKED frame) and the limit was raised later".into()
        }
        "quic-flow-control-stall.inferred-from-limits" => {
            "inferred: the sender sent no BLOCKED frame; its data stopped exactly at the limit the capture saw and went past it only after the raise (the capture sees the limits half a round trip from the receiver)".into()
        }
        _ => return None,
    })
}
