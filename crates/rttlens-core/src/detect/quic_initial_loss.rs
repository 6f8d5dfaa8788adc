//! `quic-initial-loss`: an Initial or Handshake packet was lost and its
//! CRYPTO data sent again after a probe timeout (RFC 9002 §6.2: during the
//! handshake the PTO starts at twice the initial RTT of 333 ms when no RTT
//! is known yet, §6.2.2), so the handshake waited.
//!
//! Initial packets are always decrypted (RFC 9001 §5.2), so a client
//! Initial sent again is seen without keys; Handshake packets need a key
//! log. CRYPTO data sent again because of a Retry or Version Negotiation
//! is no loss.

use super::finding::{conf, ev, Finding, Level};
use super::util::{quic_cost as cost, quic_ms as ms};
use crate::analysis::quic::QuicAnalysis;
use crate::base::side::Side;
use crate::base::text::{self, text};
use crate::quic::conn::PacketRec;
use crate::quic::packet::PacketType;

/// Finding id.
pub(crate) const ID: &str = "quic-initial-loss";

/// See the module docs.
pub(crate) fn detect(a: &QuicAnalysis) -> Vec<Finding> {
    let c = &a.conn;
    let restart = c
        .retry
        .iter()
        .chain(&c.version_negotiation)
        .map(|r| r.at.ts)
        .max();
    let end = a.handshake.client_done.map(|f| f.ts);
    let hs = |r: &&PacketRec| matches!(r.ty, PacketType::Initial | PacketType::Handshake);
    let mut waits = Vec::new();
    for side in [Side::Client, Side::Server] {
        let mut first: Option<(&PacketRec, &PacketRec)> = None;
        let mut last: Option<&PacketRec> = None;
        for r in c
            .recs
            .iter()
            .filter(hs)
            .filter(|r| r.side == side && r.crypto_again)
        {
            if end.is_some_and(|e| r.at.ts > e) {
                break;
            }
            let (off, _) = r.crypto.unwrap_or_default();
            // the packet that first carried the data sent again
            let Some(orig) = c.recs.iter().find(|o| {
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
    let what = |r: &PacketRec| {
        text!(
            "{} packet{}",
            r.ty.as_str(),
            r.pn.map(|p| text!(" {p}")).unwrap_or_default()
        )
    };
    let mut evidence = vec![
        ev(
            orig.at.frame,
            text!(
                "{} from the {}: CRYPTO data first sent",
                what(orig),
                side.as_str()
            ),
        ),
        ev(
            retx.at.frame,
            text!(
                "{}: the same CRYPTO data sent again {} later (probe timeout)",
                what(retx),
                ms(retx.at.ts - orig.at.ts)
            ),
        ),
    ];
    if last.at != retx.at {
        evidence.push(ev(
            last.at.frame,
            text!(
                "{}: sent again once more, {} after the first",
                what(last),
                ms(d)
            ),
        ));
    }
    let gaps = c
        .losses
        .iter()
        .filter(|l| l.space < 2 && l.declared_by.is_none())
        .count();
    let why = if gaps > 0 {
        text!("CRYPTO data sent again, and {gaps} handshake packet number(s) missing at the capture point")
    } else {
        "CRYPTO data sent again; the lost copy may have been lost before or after the capture point"
            .to_string()
    };
    vec![Finding {
        facts: Default::default(),
        id: ID,
        connection: c.index,
        title: text!("Handshake packet lost: the {} sent its {} data again after {}, the handshake waited", side.as_str(), retx.ty.as_str(), ms(d)),
        cost: cost(a, d),
        evidence,
        confidence: conf(if gaps > 0 { Level::High } else { Level::Medium }, why),
        fix: text::owned("Find the loss on the path (a policer dropping UDP bursts, a small buffer, Wi-Fi); on the server, send the first flight paced and small (ECDSA certificate, certificate compression) so fewer packets can be lost; clients with a cached RTT for the server start the PTO lower (RFC 9002 §6.2.2, `initial_rtt`)."),
        references: vec!["RFC 9002 §6.2", "RFC 9002 §6.2.2", "RFC 9000 §12.3"],
        span: vec![],
    }]
}
