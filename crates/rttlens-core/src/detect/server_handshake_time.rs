//! `server-handshake-time`: time the server took between the ClientHello
//! and its ServerHello, beyond what the path took (docs/design.md §4
//! "Think time"):
//!
//! wait = ServerHello − the ClientHello's last transmission before it − h_s
//!
//! the ladder's `server-processing` part of its `tls` phase. It is the TLS
//! stack's work (the key exchange and, in a full handshake, the
//! certificate's signature: an RSA-4096 signature takes a core several
//! milliseconds, an ECDSA P-256 one a small fraction of that, as
//! `openssl speed` shows) and the ClientHello's wait for
//! a core or a handshake worker (in a reconnect burst, the queue of
//! ClientHellos). It is never the application's think time: the request
//! has not been sent yet, so `server-think-time` leaves this turn alone and
//! the fix is about handshake CPU, not the handler.
//!
//! As for think time, a wait no longer than the path's swing (its RTT
//! samples' spread, the ServerHello's own sample left out) is not claimed.
//! The server's TCP ACK of the ClientHello, when it came well before the
//! ServerHello, shows the kernel had the ClientHello while the TLS stack
//! had not answered.

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::rtt::Vantage;
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
use crate::base::side::Side;

/// Finding id.
pub const ID: &str = "server-handshake-time";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let Some((hello, sh, wait)) = a.server_hello_wait() else {
        return Vec::new();
    };
    let cost = a.cost(wait);
    if !cost.is_material() || wait <= a.rtt_swing(Side::Server, sh.frame, false) {
        return Vec::new();
    }
    // how sure: several RTTs are the server's wherever the capture was
    // taken (the vantage correction is off by at most one RTT)
    let (level, why) = if wait.nanos >= a.rtt_min.nanos.saturating_mul(4) {
        (Level::High, "server-handshake-time.several-rtts")
    } else {
        match a.vantage() {
            Vantage::Client | Vantage::Server => (Level::High, "server-handshake-time.end-host"),
            Vantage::Middle => (Level::Medium, "server-handshake-time.mid-path"),
            Vantage::Unknown => (Level::Low, "server-handshake-time.vantage-unknown"),
        }
    };
    let resumed = a.tls.as_ref().is_some_and(|t| t.kind.resumed());
    let mut evidence = vec![ev(hello.frame, fact!("server-handshake-time.client-hello"))];
    // the server's kernel acknowledged the ClientHello before the answer
    let ack = a
        .full_acks(Side::Client)
        .iter()
        .find(|m| m.frame > hello.frame && m.frame < sh.frame)
        .copied();
    if let Some(k) = ack {
        evidence.push(ev(
            k.frame,
            fact!("server-handshake-time.ack", after_ms = k.ts - hello.ts),
        ));
    }
    evidence.push(ev(
        sh.frame,
        fact!(
            "server-handshake-time.server-hello",
            after_ms = sh.ts - hello.ts,
            path_ms = a.h_s()
        ),
    ));
    vec![Finding {
        facts: args!(wait_ms = wait, resumed = resumed),
        id: ID,
        connection: a.index(),
        cost,
        evidence,
        confidence: conf(level, fact!(why)),
        references: vec!["docs/design.md §4 (think time)", "RFC 8446 §2"],
        span: vec![(sh.ts - wait, sh.ts)],
    }]
}
