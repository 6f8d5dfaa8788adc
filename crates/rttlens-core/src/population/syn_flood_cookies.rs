//! `syn-flood-cookies`: the server answered SYNs from SYN cookies (its SYN
//! queue was full). A cookie holds no state, so a SYN-ACK sent from one can
//! only carry the options the cookie encodes: without TCP timestamps, Linux
//! clears window scaling and SACK (`tcp_conn_request`: `want_cookie &&
//! !tmp_opt.saw_tstamp` → `tcp_clear_options`). Those connections then run
//! with a window of at most 64 KB and recover from loss without SACK. Named
//! when the same server granted both to other SYNs that offered them
//! without timestamps, so a server that never grants them is not blamed.

use super::{PopCost, PopFinding, View};
use crate::detect::finding::{conf, Level};

pub(crate) const ID: &str = "syn-flood-cookies";

/// Cookie SYN-ACKs, and normal ones from the same server, it needs.
const MIN_DROPPED: u64 = 3;
const MIN_GRANTED: u64 = 3;

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
    let names: Vec<String> = servers
        .iter()
        .take(3)
        .map(|(s, (gr, d))| format!("{s}: {d} without, {gr} with"))
        .collect();
    let intervals = v.intervals_by(|c| c.options_dropped);
    let mut evidence: Vec<_> = intervals
        .iter()
        .take(3)
        .map(|&i| {
            let c = &v.cells[i];
            v.interval_evidence(
                i,
                format!(
                    "{} SYN-ACKs without window scale and SACK, {} SYNs sent again",
                    c.options_dropped, c.syn_retransmitted
                ),
            )
        })
        .collect();
    evidence.extend(g.options_dropped.evidence());
    let title = format!(
        "The server answered SYNs with SYN cookies (its SYN queue was full): {dropped} \
         SYN-ACKs to SYNs that offered window scaling or SACK without timestamps came back \
         without them, while {granted} others from the same server granted them ({}); those \
         connections run with a window of at most 64 KB and without SACK",
        names.join("; ")
    );
    Some(PopFinding {
        id: ID,
        title,
        cost: PopCost::of(g.options_dropped_window_ms, g.options_dropped_count),
        evidence,
        confidence: conf(
            Level::High,
            "the same server granted window scale and SACK to the same kind of SYN outside \
             the bursts",
        ),
        fix: "Find what fills the SYN queue and make it hold the bursts: raise \
              net.ipv4.tcp_max_syn_backlog and the listen backlog (net.core.somaxconn, nginx \
              `listen … backlog=`); a real SYN flood calls for SYNPROXY (iptables/nftables) \
              in front; keep net.ipv4.tcp_syncookies = 1 (never 2, which sends cookies \
              always). The server's kernel log says \"Possible SYN flooding on port …\"; \
              clients that send TCP timestamps keep their options under cookies."
            .to_string(),
        intervals,
        references: vec![
            "Linux tcp_conn_request(): want_cookie && !saw_tstamp → tcp_clear_options",
            "Linux net/ipv4/syncookies.c (cookie_v4_init_sequence, cookie_init_timestamp)",
            "RFC 4987 §3.6 (SYN cookies)",
            "RFC 7323 §2 (window scale), RFC 2018 (SACK)",
        ],
    })
}
