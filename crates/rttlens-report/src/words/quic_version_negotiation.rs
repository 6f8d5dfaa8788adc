//! The words of `quic-version-negotiation` (`rttlens_core::detect::quic_version_negotiation`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<String> {
    Some(format!(
        "Version Negotiation: the client's first version was refused, {:.1} ms lost before the handshake began",
        f.facts.f64("lost_ms")
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(_f: &Finding) -> Option<String> {
    Some("Have the client start with a version the server speaks (QUIC v1 everywhere, RFC 9000) or let it learn it from the server's Alt-Svc/HTTPS record (RFC 9460 `alpn`); on the server, enable the version clients try first (quic-go `Config.Versions`, nginx serves v1 only).".into())
}

/// A fact of kind `quic-version-negotiation.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<String> {
    Some(match kind {
        "quic-version-negotiation.client-initial" => "the client's Initial".into(),
        "quic-version-negotiation.offers" => {
            // each version by its number in hex (`0x00000001`)
            let versions: Vec<String> = a
                .list("versions")
                .iter()
                .filter_map(|v| v.as_u64())
                .map(|v| format!("{v:#010x}"))
                .collect();
            format!(
                "Version Negotiation: the server offers {}",
                versions.join(", ")
            )
        }
        "quic-version-negotiation.initial-again" => {
            "the client's Initial again, in the version chosen".into()
        }
        "quic-version-negotiation.both-in-capture" => {
            "Version Negotiation and the new Initial are in the capture".into()
        }
        "quic-version-negotiation.one-rtt-counted" => {
            "the new Initial is not in the capture: one RTT counted".into()
        }
        "quic-version-negotiation.time-to-vn-counted" => {
            "no RTT and no new Initial: the time to the Version Negotiation counted".into()
        }
        _ => return None,
    })
}
