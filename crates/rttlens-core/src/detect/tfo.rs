//! TCP Fast Open (RFC 7413): `tfo-cookie`, `tfo-accepted`, `tfo-refused`,
//! `tfo-fallback`.
//!
//! Read from the SYN and SYN-ACK (docs/design.md §4 "TFO"): option kind 34
//! (or 254 with ExID 0xF989); an empty option is a cookie request, a longer one
//! carries a cookie. A SYN with data and a cookie is an attempt; the
//! SYN-ACK acknowledging ISN + 1 + data length means the server took the data
//! (RFC 7413 §4.2), saving the round trip the request would otherwise wait
//! for. Linux: `tcp_fastopen_cookie_check()`, `tcp_try_fastopen()`.

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::Analysis;
use crate::base::cost::Cost;
use crate::base::text::{self, text};
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

/// The client sent a SYN with the TFO option, then gave up on TFO and
/// resent a plain SYN (no option, no data): `tfo-fallback` explains that
/// SYN retransmission.
pub(crate) fn fell_back(syn: &SynInfo) -> bool {
    syn.options.fast_open.is_some()
        && syn.count > 1
        && syn.last_fast_open.is_none()
        && syn.last_data_len == 0
}

/// `" and N B of data"` for a SYN that carried data, else `none`.
fn data_in(syn: &SynInfo, none: &str) -> String {
    if syn.data_len > 0 {
        text!(" and {} B of data", syn.data_len)
    } else {
        none.to_string()
    }
}

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let (Some(syn), Some(sa)) = (a.conn.syn, a.conn.syn_ack) else {
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
                   title: String,
                   (cost, span): (Cost, Vec<(Timestamp, Timestamp)>),
                   evidence,
                   level,
                   why: &str,
                   fix: &str| Finding {
        facts: Default::default(),
        id,
        connection: a.conn.index,
        title,
        cost,
        evidence,
        confidence: conf(level, why),
        fix: text::owned(fix),
        references: REFS.to_vec(),
        span,
    };
    let free = || (Cost::ZERO, Vec::new());
    // a plain SYN resent after a SYN with TFO: the client fell back
    if fell_back(&syn) {
        // the first plain SYN is where TFO was given up; the time lost ends
        // there, or sooner when the client's data shows the connection had
        // started (later copies of the SYN cost nothing)
        let plain = syn.first_plain.unwrap_or(syn.last);
        let until = a.conn.half[0]
            .first_data
            .map_or(plain.ts, |d| d.ts.min(plain.ts))
            .max(syn.first.ts);
        let lost = until - syn.first.ts;
        let mut evidence = vec![ev(
            syn.first.frame,
            text!("SYN with a TFO option{}", data_in(&syn, "")),
        )];
        // evidence is sorted into capture order by run_all
        evidence.push(ev(
            plain.frame,
            text!(
                "plain SYN {:.0} ms after the first: TFO given up",
                (plain.ts - syn.first.ts).as_millis_f64()
            ),
        ));
        evidence.push(ev(
            sa.first.frame,
            if sa.first.frame < plain.frame {
                "SYN-ACK seen before the client gave up on TFO"
            } else {
                "SYN-ACK to the plain SYN"
            },
        ));
        return vec![finding(
            ID_FALLBACK,
            text!("TCP Fast Open SYN went unanswered; the client fell back to a plain SYN {:.0} ms later", (plain.ts - syn.first.ts).as_millis_f64()),
            (a.cost(lost), vec![(syn.first.ts, until)]),
            evidence,
            Level::High,
            "the same ISN was resent without the TFO option",
            "Something on the path drops SYNs with data or unknown options: fix or bypass the middlebox, or turn TFO off for this path (Linux then blackholes TFO for `net.ipv4.tcp_fastopen_blackhole_timeout_sec`).",
        )];
    }
    match tfo {
        FastOpen::CookieRequest { .. } => {
            let (title, fix) = match granted {
                Some(len) => (
                    text!("TCP Fast Open cookie obtained ({len} B): the next connection to this server can carry its request in the SYN, saving 1 RTT"),
                    "Nothing to fix: keep the client's TFO cache (curl `--tcp-fastopen`, `TCP_FASTOPEN_CONNECT`) so later connections use the cookie.",
                ),
                None => (
                    "the client asked for a TCP Fast Open cookie; the server did not give one".to_string(),
                    "Enable TFO on the server: `sysctl -w net.ipv4.tcp_fastopen=3` and a listen queue (nginx `listen … fastopen=256`, or `TCP_FASTOPEN` on the listening socket).",
                ),
            };
            let mut evidence = vec![ev(syn.first.frame, "SYN with a TFO cookie request")];
            evidence.push(ev(
                sa.first.frame,
                match granted {
                    Some(len) => text!("SYN-ACK carries a {len} B cookie"),
                    None => "SYN-ACK without a cookie".to_string(),
                },
            ));
            vec![finding(
                ID_COOKIE,
                title,
                free(),
                evidence,
                Level::High,
                "TFO options read from the SYN and SYN-ACK",
                fix,
            )]
        }
        FastOpen::Cookie { len, .. } => {
            let accepted = syn.data_len > 0 && sa.ack == syn.isn.add(1 + syn.data_len);
            if accepted {
                vec![finding(
                    ID_ACCEPTED,
                    text!("TCP Fast Open: {} B of data sent in the SYN and accepted; the request left 1 RTT earlier", syn.data_len),
                    free(),
                    vec![ev(syn.first.frame, text!("SYN with a {len} B cookie and {} B of data", syn.data_len)), ev(sa.first.frame, "SYN-ACK acknowledges the SYN's data")],
                    Level::High,
                    "the SYN-ACK's acknowledgment number covers the SYN data",
                    "Nothing to fix: TFO saved the connect round trip.",
                )]
            } else {
                let resend = a.conn.half[0]
                    .first_data
                    .filter(|m| m.frame > sa.first.frame);
                let mut evidence = vec![
                    ev(
                        syn.first.frame,
                        text!("SYN with a {len} B cookie{}", data_in(&syn, " but no data")),
                    ),
                    ev(
                        sa.first.frame,
                        "SYN-ACK acknowledges the SYN only: the data was not taken",
                    ),
                ];
                if let Some(r) = resend {
                    evidence.push(ev(
                        r.frame,
                        "the client sends the data again after the handshake",
                    ));
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
                    text!("TCP Fast Open data refused: the {} B in the SYN waited for the handshake (1 RTT)", syn.data_len),
                    cost,
                    evidence,
                    Level::High,
                    "the SYN-ACK did not acknowledge the SYN data",
                    "The server refused the cookie or its TFO queue was full: check `nstat -az TcpExtTCPFastOpenPassiveFail TcpExtTCPFastOpenListenOverflow`, the listen queue (nginx `listen … fastopen=N`), and that all servers behind one address share `net.ipv4.tcp_fastopen_key`.",
                )]
            }
        }
    }
}
