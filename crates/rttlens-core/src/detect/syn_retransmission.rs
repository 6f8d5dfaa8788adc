//! `syn-retransmission`: the SYN (or SYN-ACK) was sent more than once, so the
//! connection waited for the initial retransmission timeout (1 s, RFC 6298
//! §2.1 / 5.7; Linux `TCP_TIMEOUT_INIT`) before it could even start. A SYN
//! resent without the TCP Fast Open it first carried is `tfo-fallback`'s.

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
use crate::base::side::Side;

/// Finding id.
pub(crate) const ID: &str = "syn-retransmission";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let mut out = Vec::new();
    for (info, what) in [(a.syn(), "SYN"), (a.syn_ack(), "SYN-ACK")] {
        let Some(s) = info.filter(|s| s.count > 1) else {
            continue;
        };
        if what == "SYN" && a.tfo_fell_back() {
            continue;
        }
        let mut evidence = vec![
            ev(
                s.first.frame,
                fact!("syn-retransmission.first", packet = what),
            ),
            ev(
                s.last.frame,
                fact!(
                    "syn-retransmission.again",
                    packet = what,
                    transmissions = Value::Count(u64::from(s.count))
                ),
            ),
        ];
        if what == "SYN" {
            if let Some(sa) = a.syn_ack() {
                evidence.push(ev(
                    sa.first.frame,
                    if sa.first.frame < s.last.frame {
                        fact!("syn-retransmission.syn-ack-lost")
                    } else {
                        fact!("syn-retransmission.syn-ack-answers")
                    },
                ));
            }
        }
        // once the client's data flows the connection has started: later
        // copies of a SYN cost no one anything (a SYN-ACK seen here may
        // still have been lost on its way to the client, so it proves
        // nothing)
        let until = a
            .first_data(Side::Client)
            .map_or(s.last.ts, |d| d.ts.min(s.last.ts))
            .max(s.first.ts);
        let lost = until - s.first.ts;
        out.push(Finding {
            id: ID,
            connection: a.index(),
            facts: args!(
                packet = what,
                transmissions = Value::Count(u64::from(s.count)),
                lost = lost,
            ),
            cost: a.cost(lost),
            evidence,
            confidence: conf(
                Level::High,
                fact!(
                    "syn-retransmission.same-isn",
                    transmissions = Value::Count(u64::from(s.count))
                ),
            ),
            references: vec![
                "RFC 6298 §5.7",
                "Linux TCP_TIMEOUT_INIT, tcp_retransmit_timer()",
            ],
            span: vec![(s.first.ts, until)],
        });
    }
    out
}
