//! `server-think-time` and `client-think-time`: time an end spent before
//! answering, beyond what the network took.
//!
//! - server think = first response byte − last request byte − h_s
//!   (docs/design.md §4 "Think time"): time at the server between having the
//!   request and sending its answer. The request is the application's
//!   first exchange or, when longer, the longest request/response turn at
//!   the TCP level ([`crate::flow::turns`]): any protocol, cut payloads,
//!   later requests on a keep-alive connection. A turn answered within the
//!   TLS handshake is not the application's: `server-handshake-time`
//!   reports the server's wait on the ClientHello.
//! - client think = first request byte − the moment the client could send
//!   it (connection or TLS handshake done) − h_c; over TLS also the
//!   client's waits inside the handshake: after connecting, before its
//!   ClientHello (between its own ACK of the SYN-ACK and the ClientHello),
//!   and in a TLS 1.2 full handshake between the server's flight and its
//!   key exchange (the ladder's `client-processing`). Each is its own
//!   finding, with `before` saying which.
//!
//! Neither is a network cost; both are reported so the network is not
//! blamed for the application's time. Neither is claimed against its own
//! evidence (docs/design.md §4 "Think time"):
//!
//! - if the server's pure ACK of the request came back as late as the
//!   response (within a quarter of the think time, and delayed by at least
//!   three quarters of it), the time went to the path or the server's
//!   kernel, not the application: no `server-think-time`;
//! - if the RTT samples of the same half vary by as much as the think time
//!   (p90 − minimum, without the sample the response itself gave), the path's
//!   swing explains it: not claimed.

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::requests::RequestRow;
use crate::analysis::rtt::Vantage;
use crate::analysis::tls::TlsKind;
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
use crate::base::side::{FrameRef, Side};
use crate::base::time::Duration;

/// Finding id of server think time.
pub const ID_SERVER: &str = "server-think-time";
/// Finding id of client think time.
pub(crate) const ID_CLIENT: &str = "client-think-time";

/// How sure a think time of `think` is, and the kind of the fact saying
/// why: the vantage correction can be off by at most one RTT, so a think
/// time of several RTTs is sure wherever the capture was taken.
fn confidence(a: &Analysis, think: crate::base::time::Duration) -> (Level, &'static str) {
    if think.nanos >= a.rtt_min.nanos.saturating_mul(4) {
        return (Level::High, "think-time.several-rtts");
    }
    match a.vantage() {
        Vantage::Client | Vantage::Server => (Level::High, "think-time.end-host"),
        Vantage::Middle => (Level::Medium, "think-time.mid-path"),
        Vantage::Unknown => (Level::Low, "think-time.vantage-unknown"),
    }
}

/// How far the server's application is from the capture point (M→server→M):
/// h_s, unless the SYN-ACK took more than [`PROXY_RATIO`] times as long.
/// Then something closer than the server acknowledges its data (a NAT or a
/// split-TCP proxy that opens the upstream connection before answering the
/// SYN, and ACKs data itself): the application answers from as far as the
/// SYN-ACK came, and a think time measured against the near ACKs would
/// count the path as the server's time. A SYN-ACK slowed by the server
/// (SYN backlog, cookies) only makes think times smaller: said less, never
/// more.
/// Returns the time, and whether it is the SYN-ACK's (a proxy's ACKs).
fn path_to_server(a: &Analysis) -> (Duration, bool) {
    let h_s = a.h_s();
    let handshake = match (a.syn(), a.syn_ack()) {
        (Some(s), Some(sa)) if sa.first.frame > s.last.frame => sa.first.ts - s.last.ts,
        _ => return (h_s, false),
    };
    if handshake.nanos > h_s.nanos.saturating_mul(PROXY_RATIO) {
        (handshake, true)
    } else {
        (h_s, false)
    }
}

/// See `path_to_server`.
pub(crate) const PROXY_RATIO: i64 = 4;

/// The shortest wait before a ClientHello claimed as the client's (see
/// `client_waits`): longer than a client takes to build its hello.
const HELLO_SETUP: Duration = Duration::from_millis(100);

/// The longest a delayed-ACK timer holds an ACK (Linux `TCP_DELACK_MAX`
/// 200 ms, Windows' 200 ms default), with jitter.
const DELAYED_ACK_MAX: Duration = Duration::from_millis(220);

/// The server's think time between the client's last byte `q` and the
/// server's answer `r`, as a finding when it is material and not explained
/// by the path (see the module docs). `turn` carries the server's ACK of a
/// turn seen at the TCP level (the protocol was not read there).
fn server_think(
    a: &Analysis,
    q: FrameRef,
    r: FrameRef,
    turn: Option<FrameRef>,
    row: Option<&RequestRow>,
) -> Option<(Duration, Finding)> {
    let (h_s, proxied) = path_to_server(a);
    // time the server's kernel held the answer (Nagle) is not think time
    let think = (r.ts - q.ts) - h_s - a.held_by_nagle(Side::Server, q.ts, r.ts);
    // up to 256 rows per connection: the path's swing (a sort of its
    // samples) only for a wait that can be a finding
    if !a.cost(think).is_material() {
        return None;
    }
    let (mut level, mut why) = confidence(a, think);
    // a turn at the TCP level proves no request: the path's worst swing
    // may explain it (a jittery path's late answer is not think time)
    let path_swing = a.rtt_swing(Side::Server, r.frame, turn.is_some());
    // the server's TCP acknowledged the request before the response
    // (an answer that carries the ACK itself says nothing of the path)
    // (not for a pipelined request timed from the response ahead of it:
    // its ACK came long before)
    let quick = if row.is_some_and(|w| w.behind_of.is_some()) {
        None
    } else {
        turn.filter(|k| k.frame != r.frame).or_else(|| {
            a.full_acks(Side::Client)
                .iter()
                .find(|m| m.frame > q.frame && m.frame < r.frame)
                .copied()
        })
    };
    let ack_late = quick.map(|k| (k, (k.ts - q.ts) - h_s));
    let ack_with_answer = ack_late.is_some_and(|(k, late)| {
        // i128: a damaged capture's timestamps can be anything
        i128::from(late.nanos) * 4 >= i128::from(think.nanos) * 3
            && i128::from((r.ts - k.ts).nanos) * 4 <= i128::from(think.nanos)
    });
    let quick_ack = Duration::from_millis(1).max(a.rtt_min / 4);
    // an ACK the server's delayed-ACK timer sent while the application
    // thought (Linux 40 ms and up to 200 ms, Windows 200 ms), well before
    // the answer, says nothing against the path
    let delack = |late: Duration| {
        late >= crate::flow::half::DELAYED_ACK_MIN
            && late <= DELAYED_ACK_MAX
            && i128::from(late.nanos) * 2 <= i128::from(think.nanos)
    };
    if ack_late.is_some_and(|(_, late)| late > quick_ack && !delack(late)) {
        level = level.min(Level::Medium);
        why = "think-time.ack-late-too";
    }
    // a turn at the TCP level answered by the ACK itself holds no proof
    // that the path did not take the extra time: a path whose RTT swings
    // (jitter, queues) by half of it is common, so such a wait must pass
    // h_s by more than half an RTT
    let unproven = turn.is_some_and(|k| k.frame == r.frame) && think <= a.rtt_min / 2;
    if think <= path_swing || ack_with_answer || unproven {
        return None;
    }
    // what the answer was timed from: a turn at the TCP level, the other
    // streams' data, the response ahead of a pipelined request, or the request
    let from = if turn.is_some() {
        "tcp-turn"
    } else if row.is_some_and(|w| w.behind_of.is_some() && w.stream.is_some()) {
        "other-streams"
    } else if row.is_some_and(|w| w.behind_of.is_some()) {
        "previous-response"
    } else {
        "request"
    };
    let mut facts = args!(think_ms = think, timed_from = from);
    // one request of several is named (its row in the requests table)
    if let Some(w) = row.filter(|_| a.requests.len() > 1) {
        facts.set("request", w.label());
    }
    // the server's own account covers the wire's think time: its largest
    // metric is where to look (`server-unaccounted-time` reports the
    // other case)
    if let Some(st) = row.and_then(|w| w.server_timing.as_ref()) {
        let covered = st
            .total_ms
            .filter(|_| st.unaccounted(think.as_millis_f64()) == Some(false));
        if let (Some(total), Some(m)) = (covered, st.dominant()) {
            facts.set("reported_ms", crate::base::fact::Value::Ms(total));
            facts.set("reported_metric", m.name.clone());
            facts.set(
                "reported_metric_ms",
                crate::base::fact::Value::Ms(m.dur_ms.unwrap_or(0.0)),
            );
        } else if let Some(total) = st
            .total_ms
            .filter(|_| st.unaccounted(think.as_millis_f64()) == Some(true))
        {
            // most of it is not the handler's: `server-unaccounted-time`
            facts.set("reported_ms", crate::base::fact::Value::Ms(total));
        }
    }
    let mut e = vec![ev(q.frame, fact!("think-time.from", timed_from = from))];
    if let Some((k, late)) = ack_late {
        let after = k.ts - q.ts;
        let what = if delack(late) {
            fact!(
                "think-time.ack-delayed",
                after_ms = after,
                late_ms = late,
                proxied = proxied
            )
        } else if proxied {
            fact!("think-time.ack-proxy", after_ms = after, path_ms = h_s)
        } else if late <= quick_ack {
            fact!(
                "think-time.ack-quick",
                after_ms = after,
                proxied = proxied,
                path_ms = h_s
            )
        } else {
            fact!(
                "think-time.ack-late",
                after_ms = after,
                late_ms = late,
                proxied = proxied
            )
        };
        e.push(ev(k.frame, what));
    }
    e.push(ev(
        r.frame,
        fact!(
            "think-time.answer",
            timed_from = from,
            after_ms = r.ts - q.ts,
            proxied = proxied,
            path_ms = h_s,
        ),
    ));
    Some((
        think,
        Finding {
            facts,
            id: ID_SERVER,
            connection: a.index(),
            cost: a.cost(think),
            evidence: e,
            confidence: conf(level, fact!(why)),
            references: vec!["docs/design.md §4 (think time)"],
            span: vec![(r.ts - think, r.ts)],
        },
    ))
}

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let mut out = Vec::new();
    let app = &a.app;
    let from_app = match (app.request_last, app.response_first) {
        (Some(q), Some(r)) => server_think(a, q, r, None, None),
        _ => None,
    };
    // every request and stream read from the connection (keep-alive,
    // pipelining, HTTP/2): the one the server held longest
    let from_rows = a
        .requests
        .iter()
        .filter_map(|w| server_think(a, w.ready_at?, w.response_at?, None, Some(w)))
        .max_by_key(|(think, _)| *think);
    // the longest turn at the TCP level, when the application layer did not
    // time that one (another request, a protocol not read, cut payloads)
    // (a turn answered within the TLS handshake is the handshake's work,
    // `server-handshake-time`, not the application's)
    let from_turn = a
        .longest_app_turn()
        .filter(|t| {
            app.request_last.is_none()
                || app
                    .response_first
                    .is_none_or(|r| r.frame != t.response_first.frame)
        })
        .filter(|t| {
            a.requests.iter().all(|w| {
                w.response_at
                    .is_none_or(|r| r.frame != t.response_first.frame)
            })
        })
        .and_then(|t| server_think(a, t.request_last, t.response_first, Some(t.ack), None));
    // the longest; a row's over the first request's timeline on a tie (it
    // names the request)
    let best = [from_rows, from_app, from_turn]
        .into_iter()
        .flatten()
        .reduce(|x, y| if y.0 > x.0 { y } else { x });
    out.extend(best.map(|(_, f)| f));
    out.extend(client_waits(a));
    out
}

/// The client's waits: before its ClientHello once connected, inside a
/// TLS 1.2 full handshake between the server's flight and its key
/// exchange (the ladder's `client-processing`), and before its request
/// once it could send it. The last two are `(q − m) − h_c`: the moment `m`
/// it could send passed the capture point `h_c` before it reached the
/// client; the first is timed between two of the client's own packets. Spans never overlap: the wait before the ClientHello is left
/// out when the request's wait already starts at the connection.
fn client_waits(a: &Analysis) -> Vec<Finding> {
    let mut out = Vec::new();
    // over TLS the client is ready once its handshake is done (a request
    // sent with the client's Finished waited for nothing); never from the
    // connection, which would count the handshake as the client's
    let ready = a.app.request_first.and_then(|q| {
        let m = match a.tls {
            Some(_) => a.app.client_ready.filter(|m| m.frame <= q.frame),
            None => a.syn_ack().map(|s| s.first).filter(|m| m.frame < q.frame),
        };
        m.map(|m| (m, q))
    });
    let tls = a.tls.as_ref();
    // connected, then the ClientHello: timed from the client's own ACK of
    // the SYN-ACK, which it sends as the SYN-ACK arrives, so the path's
    // share (h_c) is in neither end and the wait is the client's whatever
    // the vantage (a ClientHello carrying that ACK, or sent with the SYN
    // under TFO, waited for nothing)
    let hello = tls.and_then(|t| {
        let m = a.handshake_ack()?;
        let q = t.client_hello;
        let covered = ready.is_some_and(|(r, _)| r.frame <= q.frame);
        (m.frame < q.frame && !covered).then_some((m, q))
    });
    // TLS 1.2 full: the server's flight, then the client's key exchange
    let handshake = tls.and_then(|t| match (t.kind, t.server_flight_end, t.client_finished) {
        (TlsKind::Tls12Full, Some(m), Some(q)) if m.frame < q.frame => Some((m, q)),
        _ => None,
    });
    let waits = [
        (hello, "before-client-hello"),
        (handshake, "in-handshake"),
        (ready, "before-request"),
    ];
    for (wait, before) in waits {
        let Some((m, q)) = wait else { continue };
        let think = if before == "before-client-hello" {
            q.ts - m.ts
        } else {
            (q.ts - m.ts) - a.h_c() - a.held_by_nagle(Side::Client, m.ts, q.ts)
        };
        // before the ClientHello the client also builds it (its TLS
        // library's start, a CA store loaded, key shares made: tens of ms
        // on a busy machine), which no fix of the connection's timing
        // removes: only a wait past that and past a round trip is claimed
        let setup = before == "before-client-hello" && (think < HELLO_SETUP || think < a.rtt_min);
        if !a.cost(think).is_material() || setup {
            continue;
        }
        let (level, why) = confidence(a, think);
        let (ready_fact, sent_fact) = match before {
            "before-client-hello" => ("think-time.client-connected", "think-time.client-hello"),
            "in-handshake" => (
                "think-time.server-flight-end",
                "think-time.client-key-exchange",
            ),
            _ => ("think-time.client-ready", "think-time.request-first-byte"),
        };
        out.push(Finding {
            facts: args!(think_ms = think, before = before),
            id: ID_CLIENT,
            connection: a.index(),
            cost: a.cost(think),
            evidence: vec![
                ev(m.frame, fact!(ready_fact)),
                ev(q.frame, fact!(sent_fact)),
            ],
            confidence: conf(level, fact!(why)),
            references: vec!["docs/design.md §4 (think time)"],
            span: vec![(q.ts - think, q.ts)],
        });
    }
    out
}
