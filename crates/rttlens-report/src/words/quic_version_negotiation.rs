//! The words of `quic-version-negotiation` (`rttlens_core::detect::quic_version_negotiation`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    Some(text!(
        "Version Negotiation: the client's first version was refused, {:.1} ms lost before the handshake began",
        f.facts.f64("lost_ms")
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    // the versions the server named and the one the client tried, when
    // the finding carries them
    let offered: Vec<Text> = match f.facts.get("server_versions") {
        // a reserved version (0x?a?a?a?a, RFC 9000 §15) is greasing,
        // never spoken
        Some(Value::List(vs)) => vs
            .iter()
            .filter_map(Value::as_u64)
            .filter(|v| v & 0x0f0f_0f0f != 0x0a0a_0a0a)
            .map(quic_version)
            .collect(),
        _ => Vec::new(),
    };
    let which = match (
        offered.is_empty(),
        f.facts.get("first_version").and_then(Value::as_u64),
    ) {
        (false, Some(first)) => text!(
            " (this server speaks {}; the client tried {} first)",
            offered.join(", "),
            quic_version(first)
        ),
        (false, None) => text!(" (this server speaks {})", offered.join(", ")),
        _ => " (QUIC v1 is spoken everywhere, RFC 9000)".into(),
    };
    Some(text!("Have the client start with a version the server speaks{which}, or let it learn it from the server's Alt-Svc/HTTPS record (RFC 9460 `alpn`); on the server, enable the version clients try first (quic-go `Config.Versions`, nginx serves v1 only)."))
}

/// A QUIC version by name: `QUIC v1` (RFC 9000), `QUIC v2` (RFC 9369),
/// an IETF draft (`0xff0000NN`: `draft-NN`), else its number in hex.
fn quic_version(v: u64) -> Text {
    match v {
        1 => "QUIC v1".into(),
        0x6b33_43cf => "QUIC v2".into(),
        v if v & 0xffff_ff00 == 0xff00_0000 => text!("draft-{}", v & 0xff),
        v => text!("version {v:#010x}"),
    }
}

/// A fact of kind `quic-version-negotiation.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
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
            text!(
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
