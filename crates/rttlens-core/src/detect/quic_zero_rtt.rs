//! QUIC 0-RTT (RFC 9001 §4.6, RFC 9000 §17.2.3): `quic-zero-rtt-rejected`,
//! early data sent and refused, so it goes again after the handshake; and
//! `quic-zero-rtt-unused`, a resumed connection (a ticket in hand) that
//! sent no early data and waited a round trip for the handshake first.

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::quic::QuicAnalysis;
use crate::base::fact::{args, fact};
use crate::base::side::Side;

/// Finding id: 0-RTT rejected.
pub(crate) const ID_REJECTED: &str = "quic-zero-rtt-rejected";
/// Finding id: resumed without 0-RTT.
pub(crate) const ID_UNUSED: &str = "quic-zero-rtt-unused";

/// See the module docs.
pub(crate) fn detect(a: &QuicAnalysis) -> Vec<Finding> {
    let h = &a.handshake;
    let (Some(ch), Some(ci)) = (&h.client_hello, h.client_initial) else {
        return vec![];
    };
    let wait = match (h.client_done, a.rtt_min()) {
        (Some(done), _) => done.ts - ci.ts,
        (None, Some(rtt)) => rtt,
        (None, None) => return vec![],
    };
    if ch.early_data && h.early_data_accepted == Some(false) {
        let mut evidence = vec![ev(ch.first.frame, fact!("quic-zero-rtt.offers-early-data"))];
        if let Some((z, n, bytes)) = a.zero_rtt() {
            evidence.push(ev(
                z.frame,
                fact!(
                    "quic-zero-rtt.early-packets",
                    packets = Value::Segments(n),
                    bytes = Value::Bytes(bytes),
                ),
            ));
        }
        if let Some(ee) = a.message(Side::Server, 1, 8) {
            evidence.push(ev(
                ee.first.frame,
                fact!("quic-zero-rtt.encrypted-extensions-without-early-data"),
            ));
        }
        // the request sent again once the handshake is done: the round trip
        // the rejection cost is its wait (issue 43: `--verify-fix` found the
        // saving in the request phase, after the handshake)
        if let (Some(again), Some(done)) = (a.first_stream(Side::Client), h.client_done) {
            if again.ts >= done.ts {
                evidence.push(ev(again.frame, fact!("quic-zero-rtt.sent-again")));
            }
        }
        return vec![Finding {
            facts: args!(wait_ms = wait),
            id: ID_REJECTED,
            connection: a.index(),
            cost: a.cost(wait),
            evidence,
            confidence: conf(Level::High, fact!("quic-zero-rtt.rejection-decrypted")),
            references: vec!["RFC 9001 §4.6.2", "RFC 8446 §4.2.10"],
            span: vec![],
        }];
    }
    let resumed = h.resumed == Some(true);
    let requested = a.first_stream(Side::Client).is_some() || !a.h3.streams.is_empty();
    if ch.pre_shared_key && !ch.early_data && resumed && requested && a.zero_rtt().is_none() {
        let mut evidence = vec![ev(
            ch.first.frame,
            fact!("quic-zero-rtt.resumes-without-early-data"),
        )];
        if let Some(sh) = &h.server_hello {
            evidence.push(ev(sh.first.frame, fact!("quic-zero-rtt.psk-accepted")));
        }
        if let Some(done) = h.client_done {
            evidence.push(ev(
                done.frame,
                fact!("quic-zero-rtt.handshake-done", wait_ms = wait),
            ));
        }
        return vec![Finding {
            facts: args!(wait_ms = wait),
            id: ID_UNUSED,
            connection: a.index(),
            cost: a.cost(wait),
            evidence,
            confidence: conf(
                Level::Medium,
                fact!("quic-zero-rtt.resumed-without-early-data"),
            ),
            references: vec!["RFC 9001 §4.6.1", "RFC 8470"],
            span: vec![],
        }];
    }
    vec![]
}
