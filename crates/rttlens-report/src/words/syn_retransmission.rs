//! The words of `syn-retransmission` (`rttlens_core::detect::syn_retransmission`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    Some(text!(
        "{} sent {} times: {:.0} ms lost before the connection could start",
        a.str("packet"),
        a.u64("transmissions"),
        a.f64("lost")
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(_f: &Finding) -> Option<Text> {
    Some("The handshake packet was lost or dropped: check the server's accept queue (`nstat -az TcpExtListenOverflows TcpExtListenDrops`; raise `net.core.somaxconn` and the listen backlog, nginx `listen … backlog=`), SYN floods/`net.ipv4.tcp_syncookies`, firewall or conntrack drops (`nf_conntrack` table full).".into())
}

/// A fact of kind `syn-retransmission.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "syn-retransmission.first" => text!("first {}", a.str("packet")),
        "syn-retransmission.again" => text!(
            "{} sent again ({} transmissions in all)",
            a.str("packet"),
            a.u64("transmissions")
        ),
        "syn-retransmission.syn-ack-lost" => {
            "SYN-ACK seen here, yet the client sent its SYN again: lost on its way to the client"
                .into()
        }
        "syn-retransmission.syn-ack-answers" => "SYN-ACK finally answers".into(),
        "syn-retransmission.same-isn" => {
            text!("same ISN sent {} times", a.u64("transmissions"))
        }
        _ => return None,
    })
}
