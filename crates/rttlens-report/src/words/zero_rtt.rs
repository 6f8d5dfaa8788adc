//! The words of `zero-rtt` (`rttlens_core::detect::zero_rtt`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    Some(match a.str("outcome") {
        "accepted" => text!("0-RTT: {} B of early data accepted; the request rode with the ClientHello (1 RTT saved)", a.u64("early_data_bytes")),
        "rejected" => text!("0-RTT rejected: the {} B of early data had to be sent again after the handshake", a.u64("early_data_bytes")),
        _ => "0-RTT offered; whether the server accepted it could not be told".into(),
    })
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    Some(match f.facts.str("outcome") {
        "accepted" => "Nothing to fix (make sure the request is idempotent: early data can be replayed, RFC 8446 §8).",
        "rejected" => "The server declined early data: enable it (nginx `ssl_early_data on;`, rustls `max_early_data_size`), keep ticket keys shared, and keep the client's ticket fresh (a HelloRetryRequest also rejects 0-RTT).",
        _ => "Capture the whole handshake (both directions) to tell.",
    }.into())
}

/// A fact of kind `zero-rtt.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "zero-rtt.offered" => "ClientHello offers early data".into(),
        "zero-rtt.early-data" => text!(
            "{} B of early data in {} record(s)",
            a.u64("early_data_bytes"),
            a.u64("records")
        ),
        "zero-rtt.client-finished" => "client Finished".into(),
        "zero-rtt.read-from-record-sizes" => {
            "early data and its acceptance read from record sizes (RFC 8446 §4.5)".into()
        }
        _ => return None,
    })
}
