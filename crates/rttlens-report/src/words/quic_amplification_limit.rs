//! The words of `quic-amplification-limit` (`rttlens_core::detect::quic_amplification_limit`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    Some(text!(
        "Anti-amplification limit: the server's first flight stopped at 3× the client's {} bytes and waited {:.1} ms for the client",
        a.u64("client_bytes"),
        a.f64("gap_ms")
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(_f: &Finding) -> Option<Text> {
    Some("Make the server's first flight fit in 3× the client's Initial: an ECDSA P-256 certificate instead of RSA, a shorter chain (no cross-signed or root certificate sent), certificate compression (RFC 8879: BoringSSL/quic-go and rustls `CertificateCompressor`, nginx with BoringSSL), or have the client pad its Initial larger (up to the path MTU, e.g. 1350-1472 bytes) so the budget grows.".into())
}

/// A fact of kind `quic-amplification-limit.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "quic-amplification-limit.client-flight" => text!(
            "the client's first flight: {} bytes, so the server may send {} until the client's address is validated",
            a.u64("client_bytes"),
            a.u64("budget_bytes")
        ),
        "quic-amplification-limit.server-stops" => {
            let sent = a.u64("sent_bytes");
            let budget = a.u64("budget_bytes");
            let chain = match a.get("certificate_bytes").and_then(|v| v.as_u64()) {
                Some(n) => text!("; the certificate chain is {n} bytes"),
                None => "".into(),
            };
            text!(
                "the server stops after {sent} bytes ({:.0} % of the limit){chain}",
                100.0 * sent as f64 / budget as f64
            )
        }
        "quic-amplification-limit.client-datagram" => "the client's first datagram after the server's flight began: when it reaches the server, the budget grows".into(),
        "quic-amplification-limit.resumes" => text!(
            "the server's Handshake data resumes, {:.1} ms after it stopped",
            a.f64("gap_ms")
        ),
        "quic-amplification-limit.decrypted-pause" => {
            "the handshake was decrypted: the flight paused mid-way at the limit".into()
        }
        "quic-amplification-limit.sizes-and-times" => "from datagram sizes and times (Handshake packets not decrypted): the pause comes where the server's bytes reach three times the client's".into(),
        _ => return None,
    })
}
