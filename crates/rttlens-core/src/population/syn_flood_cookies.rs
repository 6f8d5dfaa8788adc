//! `syn-flood-cookies`: the server answered SYNs from SYN cookies (its SYN
//! queue was full). A cookie holds no state, so a SYN-ACK sent from one can
//! only carry the options the cookie encodes: without TCP timestamps, Linux
//! clears window scaling and SACK (`tcp_conn_request`: `want_cookie &&
//! !tmp_opt.saw_tstamp` → `tcp_clear_options`). Those connections then run
//! with a window of at most 64 KB and recover from loss without SACK. Named
//! when the same server granted both to other SYNs that offered them
//! without timestamps, so a server that never grants them is not blamed.

use super::{PopCost, PopFinding, View};
use crate::base::fact::{fact, Args, Value};
use crate::detect::finding::{conf, Level};

pub(crate) const ID: &str = "syn-flood-cookies";

/// Cookie SYN-ACKs, and normal ones from the same server, it needs.
const MIN_DROPPED: u64 = 3;
const MIN_GRANTED: u64 = 3;
/// Servers the title names (most cookies first).
const NAMED: usize = 3;

pub(crate) fn detect(v: &View<'_>) -> Option<PopFinding> {
    let g = v.signs;
    let mut servers: Vec<(&String, &(u64, u64))> = g
        .shape_by_server
        .iter()
        .filter(|(_, &(granted, dropped))| granted >= MIN_GRANTED && dropped >= MIN_DROPPED)
        .collect();
    if servers.is_empty() {
        return None;
    }
    servers.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(a.0.cmp(b.0)));
    let (dropped, granted): (u64, u64) = servers
        .iter()
        .fold((0, 0), |(d, gr), (_, &(g2, d2))| (d + d2, gr + g2));
    // the first servers, most cookies first: each one's name, SYN-ACKs
    // without the options and with them, three lists in the same order
    let named = || servers.iter().take(NAMED);
    let facts = Args::new()
        .with("dropped", Value::Count(dropped))
        .with("granted", Value::Count(granted))
        .with("servers", Value::Count(servers.len() as u64))
        .with(
            "server_names",
            Value::List(named().map(|(s, _)| Value::from((*s).clone())).collect()),
        )
        .with(
            "syn_acks_without",
            Value::List(named().map(|(_, &(_, d))| Value::Count(d)).collect()),
        )
        .with(
            "syn_acks_with",
            Value::List(named().map(|(_, &(gr, _))| Value::Count(gr)).collect()),
        );
    let intervals = v.intervals_by(|c| c.options_dropped);
    let mut evidence: Vec<_> = intervals
        .iter()
        .take(3)
        .map(|&i| {
            let c = &v.cells[i];
            v.interval_evidence(
                i,
                fact!(
                    "population.cookies-interval",
                    syn_acks_without = Value::Count(c.options_dropped),
                    syns_sent_again = Value::Count(c.syn_retransmitted),
                ),
            )
        })
        .collect();
    evidence.extend(g.options_dropped.evidence());
    Some(PopFinding {
        id: ID,
        facts,
        cost: PopCost::of(g.options_dropped_window_ms, g.options_dropped_count),
        evidence,
        confidence: conf(Level::High, fact!("population.cookies-granted-elsewhere")),
        intervals,
        references: vec![
            "Linux tcp_conn_request(): want_cookie && !saw_tstamp → tcp_clear_options",
            "Linux net/ipv4/syncookies.c (cookie_v4_init_sequence, cookie_init_timestamp)",
            "RFC 4987 §3.6 (SYN cookies)",
            "RFC 7323 §2 (window scale), RFC 2018 (SACK)",
        ],
    })
}
