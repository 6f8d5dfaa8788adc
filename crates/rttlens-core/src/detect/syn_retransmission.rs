//! `syn-retransmission`: the SYN (or SYN-ACK) was sent more than once, so the
//! connection waited for the initial retransmission timeout (1 s, RFC 6298
//! §2.1 / 5.7; Linux `TCP_TIMEOUT_INIT`) before it could even start. A SYN
//! resent without the TCP Fast Open it first carried is `tfo-fallback`'s.

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::Analysis;
use crate::base::text::{self, text};

/// Finding id.
pub(crate) const ID: &str = "syn-retransmission";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let mut out = Vec::new();
    for (info, what) in [(a.conn.syn, "SYN"), (a.conn.syn_ack, "SYN-ACK")] {
        let Some(s) = info.filter(|s| s.count > 1) else {
            continue;
        };
        if what == "SYN" && super::tfo::fell_back(&s) {
            continue;
        }
        let mut evidence = vec![
            ev(s.first.frame, text!("first {what}")),
            ev(
                s.last.frame,
                text!("{what} sent again ({} transmissions in all)", s.count),
            ),
        ];
        if what == "SYN" {
            if let Some(sa) = a.conn.syn_ack {
                evidence.push(ev(
                    sa.first.frame,
                    if sa.first.frame < s.last.frame {
                        "SYN-ACK seen here, yet the client sent its SYN again: lost on its way to the client"
                    } else {
                        "SYN-ACK finally answers"
                    },
                ));
            }
        }
        // once the client's data flows the connection has started: later
        // copies of a SYN cost no one anything (a SYN-ACK seen here may
        // still have been lost on its way to the client, so it proves
        // nothing)
        let until = a.conn.half[0]
            .first_data
            .map_or(s.last.ts, |d| d.ts.min(s.last.ts))
            .max(s.first.ts);
        let lost = until - s.first.ts;
        out.push(Finding {
            id: ID,
            connection: a.conn.index,
            title: text!("{what} sent {} times: {:.0} ms lost before the connection could start", s.count, lost.as_millis_f64()),
            cost: a.cost(lost),
            evidence,
            confidence: conf(Level::High, text!("same ISN sent {} times", s.count)),
            fix: text::owned("The handshake packet was lost or dropped: check the server's accept queue (`nstat -az TcpExtListenOverflows TcpExtListenDrops`; raise `net.core.somaxconn` and the listen backlog, nginx `listen … backlog=`), SYN floods/`net.ipv4.tcp_syncookies`, firewall or conntrack drops (`nf_conntrack` table full)."),
            references: vec!["RFC 6298 §5.7", "Linux TCP_TIMEOUT_INIT, tcp_retransmit_timer()"],
            span: vec![(s.first.ts, until)],
        });
    }
    out
}
