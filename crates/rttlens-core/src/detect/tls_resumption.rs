//! `tls-resumption`: did a client that offered to resume its TLS session
//! (a session id or ticket in TLS 1.2, RFC 5077; a PSK in TLS 1.3, RFC 8446
//! §2.2) get it? Informational (cost 0): an accepted resumption saves the
//! certificate exchange (and in TLS 1.2 a round trip); a declined one in
//! TLS 1.2 is costed by `tls12-full-handshake`.

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::Analysis;
use crate::base::cost::Cost;
use crate::base::fact::{args, fact};

/// Finding id.
pub(crate) const ID: &str = "tls-resumption";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let Some(t) = &a.tls else { return vec![] };
    if !t.info.resumption_offered {
        return vec![];
    }
    let mut evidence = vec![ev(t.client_hello.frame, fact!("tls-resumption.offered"))];
    if let Some(sh) = t.server_hello {
        evidence.push(ev(
            sh.frame,
            if t.info.resumed {
                fact!("tls-resumption.resumed")
            } else {
                fact!("tls-resumption.declined")
            },
        ));
    }
    vec![Finding {
        facts: args!(resumed = t.info.resumed, handshake = t.kind.as_str()),
        id: ID,
        connection: a.index(),
        cost: Cost::ZERO,
        evidence,
        confidence: conf(Level::High, fact!("tls-resumption.read-from-hellos")),
        references: vec!["RFC 5077", "RFC 8446 §2.2"],
        span: Vec::new(),
    }]
}
