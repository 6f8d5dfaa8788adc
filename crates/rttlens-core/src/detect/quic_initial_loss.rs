//! `quic-initial-loss`: an Initial or Handshake packet was lost and its
//! CRYPTO data sent again after a probe timeout (RFC 9002 §6.2: during the
//! handshake the PTO starts at twice the initial RTT of 333 ms when no RTT
//! is known yet, §6.2.2), so the handshake waited.
//!
//! Initial packets are always decrypted (RFC 9001 §5.2), so a client
//! Initial sent again is seen without keys; Handshake packets need a key
//! log. CRYPTO data sent again because of a Retry or Version Negotiation
//! is no loss, nor is a copy sent again after the peer acknowledged the
//! first one (RFC 9002 §6.2: the probe timer fired before a slow peer
//! answered; the wait is the peer's, a queue of handshakes say).

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::quic::QuicAnalysis;
use crate::base::fact::{args, fact};
use crate::base::side::Side;
use crate::quic::conn::PacketRec;
use crate::quic::packet::PacketType;

/// Finding id.
pub(crate) const ID: &str = "quic-initial-loss";

/// See the module docs.
pub(crate) fn detect(a: &QuicAnalysis) -> Vec<Finding> {
    let restart = a
        .retries()
        .iter()
        .chain(a.version_negotiations())
        .map(|r| r.at.ts)
        .max();
    let end = a.handshake.client_done.map(|f| f.ts);
    let hs = |r: &&PacketRec| matches!(r.ty, PacketType::Initial | PacketType::Handshake);
    let mut waits = Vec::new();
    for side in [Side::Client, Side::Server] {
        let mut first: Option<(&PacketRec, &PacketRec)> = None;
        let mut last: Option<&PacketRec> = None;
        for r in a
            .recs()
            .iter()
            .filter(hs)
            .filter(|r| r.side == side && r.crypto_again)
        {
            if end.is_some_and(|e| r.at.ts > e) {
                break;
            }
            let (off, _) = r.crypto.unwrap_or_default();
            // the packet that first carried the data sent again
            let Some(orig) = a.recs().iter().find(|o| {
                o.side == side
                    && o.ty == r.ty
                    && o.at.ts < r.at.ts
                    && o.crypto
                        .is_some_and(|(oo, n)| oo <= off && off < oo + u64::from(n).max(1))
            }) else {
                continue;
            };
            if restart.is_some_and(|t| orig.at.ts < t && t < r.at.ts) {
                continue;
            }
            // the first copy was acknowledged: it arrived, and the probe
            // timer fired before a slow peer answered (a handshake queue,
            // named by the population view), no loss
            let space = u8::from(orig.ty == PacketType::Handshake);
            if orig.pn.is_some_and(|pn| a.handshake_acked(side, space, pn)) {
                continue;
            }
            first.get_or_insert((orig, r));
            last = Some(r);
        }
        if let (Some((orig, retx)), Some(last)) = (first, last) {
            waits.push((side, orig, retx, last));
        }
    }
    let Some(&(side, orig, retx, last)) = waits.iter().max_by_key(|(_, o, _, l)| l.at.ts - o.at.ts)
    else {
        return vec![];
    };
    let d = last.at.ts - orig.at.ts;
    // a fact naming the packet `r`: its type and, when known, its number
    let about = |kind: &'static str, r: &PacketRec| {
        let f = fact!(kind, packet_type = r.ty.as_str());
        match r.pn {
            Some(p) => f.with("pn", Value::Count(p)),
            None => f,
        }
    };
    // what made the sender resend (RFC 9002 §6): the peer's ACK of a
    // later packet of the space, come between the two (a packet or time
    // threshold, §6.1), or nothing from the peer at all (the probe timer,
    // §6.2); else it cannot be told
    let space = u8::from(orig.ty == PacketType::Handshake);
    let peer_between = a
        .recs()
        .iter()
        .any(|r| r.side != side && r.ty == orig.ty && orig.at.ts < r.at.ts && r.at.ts < retx.at.ts);
    let later_acked = orig.pn.is_some_and(|pn| {
        a.recs()
            .iter()
            .filter(|r| r.side == side && r.ty == orig.ty)
            .filter_map(|r| r.pn)
            .any(|p| p > pn && a.handshake_acked(side, space, p))
    });
    let trigger = match (peer_between, later_acked) {
        (false, _) => "probe-timeout",
        (true, true) => "peer-ack",
        (true, false) => "unknown",
    };
    let mut evidence = vec![
        ev(
            orig.at.frame,
            about("quic-initial-loss.first-sent", orig).with("sender", side),
        ),
        ev(
            retx.at.frame,
            about("quic-initial-loss.sent-again", retx)
                .with("after_ms", retx.at.ts - orig.at.ts)
                .with("trigger", trigger),
        ),
    ];
    if last.at != retx.at {
        evidence.push(ev(
            last.at.frame,
            about("quic-initial-loss.sent-again-more", last).with("after_ms", d),
        ));
    }
    let gaps = a
        .losses()
        .iter()
        .filter(|l| l.space < 2 && l.declared_by.is_none())
        .count();
    let why = fact!(
        "quic-initial-loss.crypto-again",
        missing_packets = Value::Count(gaps as u64)
    );
    vec![Finding {
        facts: args!(sender = side, packet_type = retx.ty.as_str(), waited_ms = d,),
        id: ID,
        connection: a.index(),
        cost: a.cost(d),
        evidence,
        confidence: conf(if gaps > 0 { Level::High } else { Level::Medium }, why),
        references: vec!["RFC 9002 §6.2", "RFC 9002 §6.2.2", "RFC 9000 §12.3"],
        span: vec![],
    }]
}
