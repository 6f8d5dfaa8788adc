//! `tls-resumption`: did a client that offered to resume its TLS session
//! (a session id or ticket in TLS 1.2, RFC 5077; a PSK in TLS 1.3, RFC 8446
//! §2.2) get it? Informational (cost 0): an accepted resumption saves the
//! certificate exchange (and in TLS 1.2 a round trip); a declined one in
//! TLS 1.2 is costed by `tls12-full-handshake`.

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::tls::TlsKind;
use crate::analysis::Analysis;
use crate::base::cost::Cost;
use crate::base::text::{self, text};

/// Finding id.
pub(crate) const ID: &str = "tls-resumption";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let Some(t) = &a.tls else { return vec![] };
    if !t.info.resumption_offered {
        return vec![];
    }
    let mut evidence = vec![ev(
        t.client_hello.frame,
        "ClientHello offers a session to resume",
    )];
    let (title, fix) = if t.info.resumed {
        if let Some(sh) = t.server_hello {
            evidence.push(ev(
                sh.frame,
                "ServerHello resumes it (no certificate exchange)",
            ));
        }
        let saved = if t.kind == TlsKind::Tls12Abbreviated {
            "; the handshake took 1 RTT instead of 2"
        } else {
            ""
        };
        (
            text!("TLS session resumed ({}){saved}", t.kind.as_str()),
            "Nothing to fix.",
        )
    } else {
        if let Some(sh) = t.server_hello {
            evidence.push(ev(
                sh.frame,
                "ServerHello starts a new session: resumption declined",
            ));
        }
        (
            text!("the client offered to resume its TLS session; the server declined ({})", t.kind.as_str()),
            "Keep sessions resumable: nginx `ssl_session_cache shared:SSL:10m; ssl_session_timeout 1h; ssl_session_tickets on;`, and share ticket keys across the servers behind one name (`ssl_session_ticket_key`).",
        )
    };
    vec![Finding {
        facts: Default::default(),
        id: ID,
        connection: a.conn.index,
        title,
        cost: Cost::ZERO,
        evidence,
        confidence: conf(Level::High, "read from the ClientHello and ServerHello"),
        fix: text::owned(fix),
        references: vec!["RFC 5077", "RFC 8446 §2.2"],
        span: Vec::new(),
    }]
}
