//! The words of `quic-zero-rtt-rejected`, `quic-zero-rtt-unused` (`rttlens_core::detect::quic_zero_rtt`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let wait = f.facts.f64("wait_ms");
    Some(match f.id {
        "quic-zero-rtt-rejected" => text!(
            "0-RTT rejected: the early request waited for the handshake ({wait:.1} ms) and went again"
        ),
        _ => text!("Resumed without 0-RTT: the request waited {wait:.1} ms for the handshake"),
    })
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    Some(match f.id {
        "quic-zero-rtt-rejected" => "On the server keep 0-RTT on and its ticket keys shared across the servers behind the address (nginx `ssl_early_data on;` with `ssl_session_ticket_key` files on every node; quic-go `Config.Allow0RTT`); a server restart or a different node rejects tickets it did not issue, and a server whose transport limits (initial_max_data, initial_max_stream_data_*, stream counts) fell below what the ticket remembers must reject 0-RTT (RFC 9000 §7.4.1): lower them only with new tickets.".into(),
        _ => "Let the server issue tickets that allow early data (nginx `ssl_early_data on;`, quic-go `Config.Allow0RTT`, rustls `max_early_data_size`) and have the client send idempotent requests as 0-RTT (curl/ngtcp2 `--ca-native` builds do for GET; quic-go `DialEarly`, quinn `Connecting::into_0rtt`).".into(),
    })
}

/// A fact of kind `quic-zero-rtt.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        // quic-zero-rtt-rejected
        "quic-zero-rtt.offers-early-data" => {
            "ClientHello offers early data (a ticket with early_data in hand)".into()
        }
        "quic-zero-rtt.early-packets" => text!(
            "0-RTT: {} packet(s), {} bytes sent before the handshake",
            a.u64("packets"),
            a.u64("bytes")
        ),
        "quic-zero-rtt.encrypted-extensions-without-early-data" => {
            "EncryptedExtensions without early_data: 0-RTT rejected".into()
        }
        "quic-zero-rtt.sent-again" => {
            "the request goes again in 1-RTT, once the handshake is done".into()
        }
        "quic-zero-rtt.rejection-decrypted" => {
            "the EncryptedExtensions was decrypted and has no early_data".into()
        }
        // quic-zero-rtt-unused
        "quic-zero-rtt.resumes-without-early-data" => {
            "ClientHello resumes a session (pre_shared_key) but offers no early data".into()
        }
        "quic-zero-rtt.psk-accepted" => "ServerHello accepts the PSK: resumed".into(),
        "quic-zero-rtt.handshake-done" => text!(
            "the client's handshake done {:.1} ms after its Initial: only then the request",
            a.f64("wait_ms")
        ),
        "quic-zero-rtt.resumed-without-early-data" => "the session was resumed with no early data; whether the ticket allowed 0-RTT is in the earlier connection's NewSessionTicket".into(),
        _ => return None,
    })
}
