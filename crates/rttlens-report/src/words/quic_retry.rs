//! The words of `quic-retry` (`rttlens_core::detect::quic_retry`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    Some(text!(
        "Retry: the server validated the client's address first, {:.1} ms before the handshake began",
        f.facts.f64("lost_ms")
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(_f: &Finding) -> Option<Text> {
    Some("Send Retry only under load or attack (an address-validation token is worth its round trip when spoofed Initials flood the server): nginx leaves `quic_retry off` (the default); quic-go `Transport.VerifySourceAddress` returning true only above a handshake rate; quinn `Incoming::retry()` only when `Incoming::remote_address_validated()` is false and the server is busy. Clients can skip it next time with the NEW_TOKEN the server sends (RFC 9000 §8.1.3).".into())
}

/// A fact of kind `quic-retry.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "quic-retry.client-initial" => "the client's Initial".into(),
        "quic-retry.retry" => text!(
            "Retry with a {}-byte token: the server asks the client to prove its address",
            a.u64("token_bytes")
        ),
        "quic-retry.retries" => text!("{} Retry packets in all", a.u64("retries")),
        "quic-retry.initial-again" => "the client's Initial again, with the token".into(),
        "quic-retry.both-in-capture" => {
            "the Retry and the Initial with its token are in the capture".into()
        }
        "quic-retry.one-rtt-counted" => {
            "the Initial with the token is not in the capture: one RTT counted".into()
        }
        "quic-retry.time-to-retry-counted" => {
            "no RTT and no second Initial: the time to the Retry counted".into()
        }
        _ => return None,
    })
}
