//! The words of `quic-initial-loss` (`rttlens_core::detect::quic_initial_loss`).

use super::prelude::*;

/// The packet a fact names: `Initial packet 3`, or without a number when
/// none is known.
fn what(a: &Args) -> Text {
    text!(
        "{} packet{}",
        a.str("packet_type"),
        a.get("pn")
            .and_then(|v| v.as_u64())
            .map(|p| format!(" {p}"))
            .unwrap_or_default()
    )
}

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    Some(text!(
        "Handshake packet lost: the {} sent its {} data again after {:.1} ms, the handshake waited",
        a.str("sender"),
        a.str("packet_type"),
        a.f64("waited_ms")
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(_f: &Finding) -> Option<Text> {
    Some("Find the loss on the path (a policer dropping UDP bursts, a small buffer, Wi-Fi); on the server, send the first flight paced and small (ECDSA certificate, certificate compression) so fewer packets can be lost; clients with a cached RTT for the server start the PTO lower (RFC 9002 §6.2.2, `initial_rtt`).".into())
}

/// A fact of kind `quic-initial-loss.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "quic-initial-loss.first-sent" => text!(
            "{} from the {}: CRYPTO data first sent",
            what(a),
            a.str("sender")
        ),
        "quic-initial-loss.sent-again" => text!(
            "{}: the same CRYPTO data sent again {:.1} ms later{}",
            what(a),
            a.f64("after_ms"),
            match a.get("trigger").map(|_| a.str("trigger")) {
                Some("peer-ack") => " (the peer had acknowledged a later packet: declared lost, RFC 9002 §6.1)",
                Some("unknown") => "",
                // a finding recorded before the trigger was told: a probe
                // timeout, as it then said
                _ => " (probe timeout)",
            }
        ),
        "quic-initial-loss.sent-again-more" => text!(
            "{}: sent again once more, {:.1} ms after the first",
            what(a),
            a.f64("after_ms")
        ),
        "quic-initial-loss.crypto-again" => match a.u64("missing_packets") {
            0 => "CRYPTO data sent again; the lost copy may have been lost before or after the capture point".into(),
            gaps => text!("CRYPTO data sent again, and {gaps} handshake packet number(s) missing at the capture point"),
        },
        _ => return None,
    })
}
