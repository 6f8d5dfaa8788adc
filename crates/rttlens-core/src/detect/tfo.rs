//! TCP Fast Open (RFC 7413): `tfo-cookie`, `tfo-accepted`, `tfo-refused`,
//! `tfo-fallback`.
//!
//! Read from the SYN and SYN-ACK (docs/design.md §4 "TFO"): option kind 34
//! (or 254 with ExID 0xF989); an empty option is a cookie request, a longer one
//! carries a cookie. A SYN with data and a cookie is an attempt; the
//! SYN-ACK acknowledging ISN + 1 + data length means the server took the data
//! (RFC 7413 §4.2), saving the round trip the request would otherwise wait
//! for. Linux: `tcp_fastopen_cookie_check()`, `tcp_try_fastopen()`.

use super::finding::{conf, ev, Args, Finding, Level, Value};
use crate::analysis::Analysis;
use crate::base::cost::Cost;
use crate::base::fact::{args, fact, Fact};
use crate::base::side::Side;
use crate::base::time::Timestamp;
use crate::flow::SynInfo;
use crate::wire::FastOpen;

/// A cookie was requested (and perhaps granted): informational.
pub(crate) const ID_COOKIE: &str = "tfo-cookie";
/// Data in the SYN accepted: informational (1 RTT saved).
pub(crate) const ID_ACCEPTED: &str = "tfo-accepted";
/// Data in the SYN refused: the request waited for the handshake.
pub(crate) const ID_REFUSED: &str = "tfo-refused";
/// The client gave up on TFO and resent a plain SYN.
pub(crate) const ID_FALLBACK: &str = "tfo-fallback";

const REFS: &[&str] = &[
    "RFC 7413",
    "Linux tcp_fastopen.c: tcp_try_fastopen(), tcp_fastopen_cookie_check()",
];

/// The bytes of data a SYN carried.
fn data_bytes(syn: &SynInfo) -> Value {
    Value::Bytes(u64::from(syn.data_len))
}

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let (Some(syn), Some(sa)) = (a.syn(), a.syn_ack()) else {
        return vec![];
    };
    let Some(tfo) = syn.options.fast_open else {
        return vec![];
    };
    let granted = match sa.options.fast_open {
        Some(FastOpen::Cookie { len, .. }) => Some(len),
        _ => None,
    };
    let finding = |id: &'static str,
                   facts: Args,
                   (cost, span): (Cost, Vec<(Timestamp, Timestamp)>),
                   evidence,
                   level,
                   why: Fact| Finding {
        facts,
        id,
        connection: a.index(),
        cost,
        evidence,
        confidence: conf(level, why),
        references: REFS.to_vec(),
        span,
    };
    let free = || (Cost::ZERO, Vec::new());
    // a plain SYN resent after a SYN with TFO: the client fell back
    if a.tfo_fell_back() {
        // the first plain SYN is where TFO was given up; the time lost ends
        // there, or sooner when the client's data shows the connection had
        // started (later copies of the SYN cost nothing)
        let plain = syn.first_plain.unwrap_or(syn.last);
        let until = a
            .first_data(Side::Client)
            .map_or(plain.ts, |d| d.ts.min(plain.ts))
            .max(syn.first.ts);
        let lost = until - syn.first.ts;
        let after = plain.ts - syn.first.ts;
        let mut evidence = vec![ev(
            syn.first.frame,
            fact!("tfo.syn-with-option", data_bytes = data_bytes(&syn)),
        )];
        // evidence is sorted into capture order by run_all
        evidence.push(ev(plain.frame, fact!("tfo.plain-syn", after_ms = after)));
        evidence.push(ev(
            sa.first.frame,
            if sa.first.frame < plain.frame {
                fact!("tfo.syn-ack-before-fallback")
            } else {
                fact!("tfo.syn-ack-to-plain-syn")
            },
        ));
        return vec![finding(
            ID_FALLBACK,
            args!(fallback_after_ms = after, data_bytes = data_bytes(&syn)),
            (a.cost(lost), vec![(syn.first.ts, until)]),
            evidence,
            Level::High,
            fact!("tfo.same-isn-without-option"),
        )];
    }
    match tfo {
        FastOpen::CookieRequest { .. } => {
            let mut facts = args!(granted = granted.is_some());
            if let Some(len) = granted {
                facts.set("cookie_bytes", Value::Bytes(u64::from(len)));
            }
            let mut evidence = vec![ev(syn.first.frame, fact!("tfo.cookie-request"))];
            evidence.push(ev(
                sa.first.frame,
                match granted {
                    Some(len) => fact!(
                        "tfo.syn-ack-cookie",
                        cookie_bytes = Value::Bytes(u64::from(len))
                    ),
                    None => fact!("tfo.syn-ack-no-cookie"),
                },
            ));
            vec![finding(
                ID_COOKIE,
                facts,
                free(),
                evidence,
                Level::High,
                fact!("tfo.options-read"),
            )]
        }
        FastOpen::Cookie { len, .. } => {
            let accepted = syn.data_len > 0 && sa.ack == syn.isn.add(1 + syn.data_len);
            let syn_fact = fact!(
                "tfo.syn-with-cookie",
                cookie_bytes = Value::Bytes(u64::from(len)),
                data_bytes = data_bytes(&syn),
            );
            let facts = args!(
                cookie_bytes = Value::Bytes(u64::from(len)),
                data_bytes = data_bytes(&syn),
            );
            if accepted {
                vec![finding(
                    ID_ACCEPTED,
                    facts,
                    free(),
                    vec![
                        ev(syn.first.frame, syn_fact),
                        ev(sa.first.frame, fact!("tfo.syn-ack-takes-data")),
                    ],
                    Level::High,
                    fact!("tfo.data-acknowledged"),
                )]
            } else {
                let resend = a
                    .first_data(Side::Client)
                    .filter(|m| m.frame > sa.first.frame);
                let mut evidence = vec![
                    ev(syn.first.frame, syn_fact),
                    ev(sa.first.frame, fact!("tfo.syn-ack-refuses-data")),
                ];
                if let Some(r) = resend {
                    evidence.push(ev(r.frame, fact!("tfo.data-sent-again")));
                }
                // the data waited from the SYN-ACK to its resend: one RTT
                let cost = match resend.filter(|_| syn.data_len > 0) {
                    Some(r) => (
                        a.cost(a.rtt_min),
                        vec![(sa.first.ts, r.ts.max(sa.first.ts + a.rtt_min))],
                    ),
                    None if syn.data_len > 0 => (
                        a.cost(a.rtt_min),
                        vec![(syn.first.ts, sa.first.ts.max(syn.first.ts + a.rtt_min))],
                    ),
                    None => free(),
                };
                vec![finding(
                    ID_REFUSED,
                    facts,
                    cost,
                    evidence,
                    Level::High,
                    fact!("tfo.data-not-acknowledged"),
                )]
            }
        }
    }
}
