//! QUIC 0-RTT (RFC 9001 §4.6, RFC 9000 §17.2.3): `quic-zero-rtt-rejected`,
//! early data sent and refused, so it goes again after the handshake; and
//! `quic-zero-rtt-unused`, a resumed connection (a ticket in hand) that
//! sent no early data and waited a round trip for the handshake first.

use super::finding::{conf, ev, Finding, Level};
use super::util::{quic_cost as cost, quic_ms as ms};
use crate::analysis::quic::QuicAnalysis;
use crate::base::side::Side;
use crate::base::text::{self, text};

/// Finding id: 0-RTT rejected.
pub(crate) const ID_REJECTED: &str = "quic-zero-rtt-rejected";
/// Finding id: resumed without 0-RTT.
pub(crate) const ID_UNUSED: &str = "quic-zero-rtt-unused";

/// See the module docs.
pub(crate) fn detect(a: &QuicAnalysis) -> Vec<Finding> {
    let h = &a.handshake;
    let c = &a.conn;
    let (Some(ch), Some(ci)) = (&h.client_hello, h.client_initial) else {
        return vec![];
    };
    let wait = match (h.client_done, a.rtt_min()) {
        (Some(done), _) => done.ts - ci.ts,
        (None, Some(rtt)) => rtt,
        (None, None) => return vec![],
    };
    if ch.early_data && h.early_data_accepted == Some(false) {
        let mut evidence = vec![ev(
            ch.first.frame,
            "ClientHello offers early data (a ticket with early_data in hand)",
        )];
        if let Some((z, n, bytes)) = c.zero_rtt {
            evidence.push(ev(
                z.frame,
                text!("0-RTT: {n} packet(s), {bytes} bytes sent before the handshake"),
            ));
        }
        if let Some(ee) = c.message(Side::Server, 1, 8) {
            evidence.push(ev(
                ee.first.frame,
                "EncryptedExtensions without early_data: 0-RTT rejected",
            ));
        }
        return vec![Finding {
            facts: Default::default(),
            id: ID_REJECTED,
            connection: c.index,
            title: text!("0-RTT rejected: the early request waited for the handshake ({}) and went again", ms(wait)),
            cost: cost(a, wait),
            evidence,
            confidence: conf(Level::High, "the EncryptedExtensions was decrypted and has no early_data"),
            fix: text::owned("On the server keep 0-RTT on and its ticket keys shared across the servers behind the address (nginx `ssl_early_data on;` with `ssl_session_ticket_key` files on every node; quic-go `Config.Allow0RTT`); a server restart or a different node rejects tickets it did not issue, and a server whose transport limits (initial_max_data, initial_max_stream_data_*, stream counts) fell below what the ticket remembers must reject 0-RTT (RFC 9000 §7.4.1): lower them only with new tickets."),
            references: vec!["RFC 9001 §4.6.2", "RFC 8446 §4.2.10"],
            span: vec![],
        }];
    }
    let resumed = h.resumed == Some(true);
    let requested = c.first_stream[Side::Client.index()].is_some() || !a.h3.streams.is_empty();
    if ch.pre_shared_key && !ch.early_data && resumed && requested && c.zero_rtt.is_none() {
        let mut evidence = vec![ev(
            ch.first.frame,
            "ClientHello resumes a session (pre_shared_key) but offers no early data",
        )];
        if let Some(sh) = &h.server_hello {
            evidence.push(ev(sh.first.frame, "ServerHello accepts the PSK: resumed"));
        }
        if let Some(done) = h.client_done {
            evidence.push(ev(
                done.frame,
                text!(
                    "the client's handshake done {} after its Initial: only then the request",
                    ms(wait)
                ),
            ));
        }
        return vec![Finding {
            facts: Default::default(),
            id: ID_UNUSED,
            connection: c.index,
            title: text!("Resumed without 0-RTT: the request waited {} for the handshake", ms(wait)),
            cost: cost(a, wait),
            evidence,
            confidence: conf(Level::Medium, "the session was resumed with no early data; whether the ticket allowed 0-RTT is in the earlier connection's NewSessionTicket"),
            fix: text::owned("Let the server issue tickets that allow early data (nginx `ssl_early_data on;`, quic-go `Config.Allow0RTT`, rustls `max_early_data_size`) and have the client send idempotent requests as 0-RTT (curl/ngtcp2 `--ca-native` builds do for GET; quic-go `DialEarly`, quinn `Connecting::into_0rtt`)."),
            references: vec!["RFC 9001 §4.6.1", "RFC 8470"],
            span: vec![],
        }];
    }
    vec![]
}
