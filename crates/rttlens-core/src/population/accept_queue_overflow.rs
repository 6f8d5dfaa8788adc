//! `accept-queue-overflow`: the server's listen backlog was full. Linux
//! drops a SYN when the accept queue is full (`tcp_conn_request`:
//! `sk_acceptq_is_full`, counted in `ListenOverflows`), so the client sends
//! it again after its initial RTO (1 s, RFC 6298 §2), and it drops the
//! handshake's final ACK when the queue is full as the child would be
//! created (`tcp_check_req` → `listen_overflow`), so the server sends its
//! SYN-ACK again after the client's ACK. Told apart from loss on the path:
//! SYNs are lost far more often than data segments of the same capture,
//! and in the same intervals other SYNs were answered at once.

use super::over_time::ratio;
use super::{PopCost, PopFinding, View};
use crate::base::fact::{args, fact, Value};
use crate::detect::finding::{conf, Level};

pub(crate) const ID: &str = "accept-queue-overflow";

/// SYNs in the capture the finding needs.
const MIN_SYNS: u64 = 20;
/// SYN loss over data-segment loss that rules out the path.
const SYN_OVER_DATA: f64 = 5.0;

pub(crate) fn detect(v: &View<'_>) -> Option<PopFinding> {
    let g = v.signs;
    if g.syns < MIN_SYNS {
        return None;
    }
    let syn_loss = g.syns_retransmitted as f64 / g.syns as f64;
    // loss on the path, from the server's data: a full backlog drops the
    // client's packets (SYNs, the final ACK, the data after it), never the
    // server's
    let data_loss = ratio(g.retransmissions[1], g.data_segments[1]);
    let syn_sign =
        g.syns_retransmitted >= 3 && syn_loss >= 0.01 && syn_loss >= SYN_OVER_DATA * data_loss;
    let ack_loss = g.ack_ignored_count as f64 / g.syns as f64;
    let ack_sign = g.ack_ignored_count >= 2 && ack_loss >= SYN_OVER_DATA * data_loss;
    if !syn_sign && !ack_sign {
        return None;
    }
    // intervals where SYNs waited while others were answered at once
    let burst = v.intervals_by(|c| c.syn_retransmitted + c.ack_ignored);
    let prompt_beside = burst
        .iter()
        .filter(|&&i| v.cells[i].syns > v.cells[i].syn_retransmitted + v.cells[i].ack_ignored)
        .count();
    if syn_sign && !ack_sign && prompt_beside * 2 < burst.len() {
        // SYNs waited where no other SYN was answered: the server or the
        // path was down, not its backlog full
        return None;
    }
    let mut evidence: Vec<_> = burst
        .iter()
        .take(3)
        .map(|&i| {
            let c = &v.cells[i];
            v.interval_evidence(
                i,
                fact!(
                    "population.backlog-interval",
                    syns_sent_again = Value::Count(c.syn_retransmitted),
                    syns = Value::Count(c.syns),
                    syn_acks_resent = Value::Count(c.ack_ignored),
                    answered_at_once =
                        Value::Count(c.syns.saturating_sub(c.syn_retransmitted + c.ack_ignored)),
                ),
            )
        })
        .collect();
    evidence.extend(g.ack_ignored.evidence());
    evidence.extend(g.syn_retransmitted.evidence());
    let level = if ack_sign || (syn_sign && syn_loss >= 2.0 * SYN_OVER_DATA * data_loss.max(0.001))
    {
        Level::High
    } else {
        Level::Medium
    };
    let affected = g.syns_retransmitted + g.ack_ignored_count;
    let facts = args!(
        syns_sent_again = Value::Count(g.syns_retransmitted),
        syns = Value::Count(g.syns),
        syn_loss = Value::Number(syn_loss),
        data_loss = Value::Number(data_loss),
        syn_acks_resent = Value::Count(g.ack_ignored_count),
        prompt_intervals = Value::Count(prompt_beside as u64),
        burst_intervals = Value::Count(burst.len() as u64),
    );
    Some(PopFinding {
        id: ID,
        facts,
        cost: PopCost::of(g.syn_wait_ms + g.ack_ignored_ms, affected),
        evidence,
        confidence: conf(
            level,
            if ack_sign {
                fact!("population.backlog-ack-dropped")
            } else {
                fact!(
                    "population.backlog-syns-lost",
                    syn_loss = Value::Number(syn_loss),
                    data_loss = Value::Number(data_loss),
                )
            },
        ),
        intervals: burst.clone(),
        references: vec![
            "Linux tcp_conn_request(): sk_acceptq_is_full → drop (LINUX_MIB_LISTENOVERFLOWS)",
            "Linux tcp_check_req() → listen_overflow (tcp_abort_on_overflow = 0: the final ACK is dropped)",
            "RFC 6298 §2 (initial RTO of 1 s)",
        ],
    })
}
