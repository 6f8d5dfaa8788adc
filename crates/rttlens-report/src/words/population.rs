//! The words of the population findings (`rttlens_core::population`):
//! `server-handshake-contention`, `accept-queue-overflow`,
//! `syn-flood-cookies`, `client-side-stall`, `path-degradation`, and their
//! facts (`population.*`).

use super::prelude::*;
use rttlens_core::model::population::PopFinding;

/// Population findings are not connection findings: nothing to write for
/// a [`Finding`].
pub(super) fn title(_f: &Finding) -> Option<Text> {
    None
}

/// See [`title`].
pub(super) fn fix(_f: &Finding) -> Option<Text> {
    None
}

/// A population finding's title, from its facts.
pub(super) fn pop_title(f: &PopFinding) -> Text {
    let a = &f.facts;
    match f.id {
        "accept-queue-overflow" => text!(
            "The server's listen backlog overflowed: {} of {} SYNs sent again ({:.1} %, against \
             {:.2} % of the server's data segments retransmitted){}; in {} of {} such intervals other SYNs were \
             answered at once",
            a.u64("syns_sent_again"),
            a.u64("syns"),
            100.0 * a.f64("syn_loss"),
            100.0 * a.f64("data_loss"),
            if a.u64("syn_acks_resent") > 0 {
                text!(
                    ", {} SYN-ACKs resent after the client's ACK (the server did not take it)",
                    a.u64("syn_acks_resent")
                )
            } else {
                "".into()
            },
            a.u64("prompt_intervals"),
            a.u64("burst_intervals")
        ),
        "client-side-stall" => text!(
            "The client's own delay makes the tail: the slowest {} connections waited {:.1} ms \
             for their first byte against {:.1} ms typical, {:.1} ms of it ({:.0} %) in the client \
             (client delay p50 {:.1} ms, p99 {:.1} ms)",
            a.u64("connections"),
            a.f64("tail_ms"),
            a.f64("typical_ms"),
            a.f64("extra_ms"),
            100.0 * a.f64("share"),
            a.f64("client_delay_p50_ms"),
            a.f64("client_delay_p99_ms")
        ),
        "path-degradation" => text!(
            "The path degraded for every connection at once in {} of {} intervals: their median \
             RTT rose to as much as {:.1} ms from the usual {:.1} ms{}",
            a.u64("degraded_intervals"),
            a.u64("intervals"),
            a.f64("worst_rtt_ms"),
            a.f64("usual_rtt_ms"),
            if a.u64("lossy_intervals") > 0 {
                text!(
                    ", and in {} of them the server retransmitted in most connections",
                    a.u64("lossy_intervals")
                )
            } else {
                "".into()
            }
        ),
        "server-handshake-contention" if a.str("shape") == "burst" => text!(
            "The server served a burst of {} TLS handshakes to {} {} at a time: the \
             ClientHellos came within {:.1} ms, the ServerHellos left over {:.1} ms, one every \
             {:.1} ms, and the wait at the server grew from {:.1} ms (the first served) to \
             {:.1} ms (the last), while the RTT stayed at {:.1}–{:.1} ms (rank correlation \
             of place and wait {:.2})",
            a.u64("handshakes"),
            a.str("server"),
            at_a_time(a),
            a.f64("arrivals_ms"),
            a.f64("departures_ms"),
            a.f64("every_ms"),
            a.f64("first_wait_ms"),
            a.f64("last_wait_ms"),
            a.f64("rtt_low_ms"),
            a.f64("rtt_high_ms"),
            a.f64("rho")
        ),
        "server-handshake-contention" => text!(
            "Server handshake processing grows with the handshakes in progress: ClientHello → \
             ServerHello at the server p50 {:.1} ms, p99 {:.1} ms; {:.1} ms (p90) with \
             {:.1} handshakes in progress against {:.1} ms with {:.1}, while the RTT stayed at \
             {:.1}–{:.1} ms (rank correlation {:.2} over {} intervals)",
            a.f64("p50_ms"),
            a.f64("p99_ms"),
            a.f64("loaded_p90_ms"),
            a.f64("loaded_in_progress"),
            a.f64("quiet_p90_ms"),
            a.f64("quiet_in_progress"),
            a.f64("rtt_low_ms"),
            a.f64("rtt_high_ms"),
            a.f64("rho"),
            a.u64("intervals")
        ),
        "syn-flood-cookies" => {
            let (without, with) = (a.list("syn_acks_without"), a.list("syn_acks_with"));
            let names: Vec<String> = a
                .list("server_names")
                .iter()
                .enumerate()
                .map(|(k, name)| {
                    let count = |l: &[Value]| l.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
                    format!(
                        "{}: {} without, {} with",
                        name.as_str().unwrap_or(""),
                        count(without),
                        count(with)
                    )
                })
                .collect();
            text!(
                "The server answered SYNs with SYN cookies (its SYN queue was full): {} \
                 SYN-ACKs to SYNs that offered window scaling or SACK without timestamps came back \
                 without them, while {} others from the same server granted them ({}); those \
                 connections run with a window of at most 64 KB and without SACK",
                a.u64("dropped"),
                a.u64("granted"),
                names.join("; ")
            )
        }
        _ => "".into(),
    }
}

/// A population finding's fix, from its facts.
pub(super) fn pop_fix(f: &PopFinding) -> Text {
    let a = &f.facts;
    match f.id {
        "accept-queue-overflow" => {
            "Let the server's accept queue hold the bursts and drain it faster: raise \
              net.core.somaxconn (the cap on every listen backlog) and \
              net.ipv4.tcp_max_syn_backlog; nginx `listen 443 ssl backlog=4096` (default 511); \
              Go's net.Listen takes its backlog from net.core.somaxconn; keep the accept loop \
              free of work (hand each connection on at once). Confirm on the server with \
              `nstat -az TcpExtListenOverflows TcpExtListenDrops`. If the server is short of \
              CPU (handshakes), more workers (nginx worker_processes auto) and resumption \
              drain it faster."
                .into()
        }
        "client-side-stall" => {
            "Look at the client, not the server: give the load generator or client pool CPU \
              of its own (fewer connections per thread, more threads or hosts), check its \
              event loop and garbage-collector pauses, and for a load generator its start lag \
              (`rttlens bench` reports it); a connection pool that opens connections on demand \
              under load pays the handshake in the request path."
                .into()
        }
        "path-degradation" => {
            "The path, not the server: look at the network at those times (the link's \
              utilisation and queue, mtr to the server, a congested peering or a radio hop); \
              a queue that grows under load wants AQM (fq_codel, cake) where it builds, and \
              senders on a lossy path do better with BBR than with loss-based congestion \
              control."
                .into()
        }
        "server-handshake-contention" => {
            let resumed = if a.u64("tls_connections") > 0 {
                text!(
                    " {} of {} TLS connections resumed a session: a resumed handshake skips the \
                     certificate and its signature.",
                    a.u64("resumed"),
                    a.u64("tls_connections")
                )
            } else {
                "".into()
            };
            let queue = if a.str("shape") == "burst" {
                text!(
                    " The burst queued behind {} handshake{} at a time taking {:.1} ms each: \
                     more handshake workers drain it that many times faster, and a limit on \
                     the handshakes queued (nginx limit_conn, Go a semaphore around \
                     tls.Conn.Handshake) turns the last clients' wait into a prompt retry.",
                    at_a_time(a),
                    if a.u64("at_a_time") == 1 { "" } else { "s" },
                    a.f64("handshake_ms")
                )
            } else {
                "".into()
            };
            text!(
                "Give each handshake less CPU and the server more: Go — one shared tls.Config for \
                 every connection with session tickets on (resumption), an ECDSA P-256 \
                 certificate instead of RSA, GOMAXPROCS = the cores the server really has; nginx — \
                 worker_processes auto, ssl_session_cache shared:SSL:10m and ssl_session_tickets on, \
                 an ECDSA certificate; OpenSSL servers — one SSL_CTX shared by every connection \
                 (never one per connection), session caching on.{queue}{resumed}"
            )
        }
        "syn-flood-cookies" => "Find what fills the SYN queue and make it hold the bursts: raise \
              net.ipv4.tcp_max_syn_backlog and the listen backlog (net.core.somaxconn, nginx \
              `listen … backlog=`); a real SYN flood calls for SYNPROXY (iptables/nftables) \
              in front; keep net.ipv4.tcp_syncookies = 1 (never 2, which sends cookies \
              always). The server's kernel log says \"Possible SYN flooding on port …\"; \
              clients that send TCP timestamps keep their options under cookies."
            .into(),
        _ => "".into(),
    }
}

/// Handshakes a queue served at a time, in words ("one", "2").
fn at_a_time(a: &Args) -> Text {
    match a.u64("at_a_time") {
        1 => "one".into(),
        k => k.to_string().into(),
    }
}

/// `connection <i> (<client> → <server>)`: the connection a fact is about.
fn who(a: &Args) -> Text {
    text!(
        "connection {} ({} → {})",
        a.u64("connection"),
        a.str("client"),
        a.str("server")
    )
}

/// `<start>–<end> s: <what>`: an interval's evidence.
fn interval(a: &Args, what: Text) -> Text {
    text!("{:.3}–{:.3} s: {what}", a.f64("start_s"), a.f64("end_s"))
}

/// A fact of kind `population.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        // a connection that shows a sign most
        "population.server-handshake" => text!(
            "{}: ClientHello (frame {}) → ServerHello (frame {}): {:.1} ms at \
             the server, after the RTT",
            who(a),
            a.u64("client_hello"),
            a.u64("server_hello"),
            a.f64("server_ms")
        ),
        "population.queued-handshake" => text!(
            "connection {}: ClientHello (frame {}) → ServerHello (frame {}), served {} of {}: \
             {:.1} ms at the server, after the RTT",
            a.u64("connection"),
            a.u64("client_hello"),
            a.u64("server_hello"),
            a.u64("place"),
            a.u64("handshakes"),
            a.f64("server_ms")
        ),
        "population.client-delay" => text!(
            "{}: the client took {:.1} ms of its own, longest between frame {} \
             and its answer in frame {}",
            who(a),
            a.f64("client_ms"),
            a.u64("from"),
            a.u64("answer")
        ),
        "population.syn-sent-again" => {
            let answer = if a.flag("answered") {
                text!(
                    "SYN-ACK in frame {}, {:.0} ms after",
                    a.u64("syn_ack"),
                    a.f64("connect_ms")
                )
            } else {
                "no SYN-ACK".into()
            };
            text!(
                "{}: SYN (frame {}) sent {} times; {answer}",
                who(a),
                a.u64("syn"),
                a.u64("transmissions")
            )
        }
        "population.ack-ignored" => text!(
            "{}: the client's ACK (frame {}) completed the handshake, yet the \
             server sent its SYN-ACK again (frame {}): it had not taken the ACK",
            who(a),
            a.u64("ack"),
            a.u64("syn_ack_again")
        ),
        "population.options-dropped" => text!(
            "{}: the SYN (frame {}) offered window scaling or SACK without \
             timestamps; the SYN-ACK (frame {}) carries neither",
            who(a),
            a.u64("syn"),
            a.u64("syn_ack")
        ),
        // an interval
        "population.backlog-interval" => interval(
            a,
            text!(
                "{} of {} SYNs sent again, {} SYN-ACKs resent after the client's ACK; \
                 {} answered at once",
                a.u64("syns_sent_again"),
                a.u64("syns"),
                a.u64("syn_acks_resent"),
                a.u64("answered_at_once")
            ),
        ),
        "population.contention-interval" => interval(
            a,
            text!(
                "{:.1} handshakes in progress, {} new: server handshake p50 {:.1} ms, p99 {:.1} ms; \
                 RTT p50 {:.1} ms",
                a.f64("in_progress"),
                a.u64("new_connections"),
                a.f64("server_handshake_p50_ms"),
                a.f64("server_handshake_p99_ms"),
                a.f64("rtt_p50_ms")
            ),
        ),
        "population.cookies-interval" => interval(
            a,
            text!(
                "{} SYN-ACKs without window scale and SACK, {} SYNs sent again",
                a.u64("syn_acks_without"),
                a.u64("syns_sent_again")
            ),
        ),
        "population.path-interval" => interval(
            a,
            text!(
                "{} connections: RTT p50 {:.1} ms (usual {:.1} ms), {:.1} % of the \
                 server's data segments retransmitted, in {} connections",
                a.u64("connections"),
                a.f64("rtt_p50_ms"),
                a.f64("usual_rtt_ms"),
                100.0 * a.f64("server_retx_rate"),
                a.u64("connections_retransmitting")
            ),
        ),
        // reasons for a confidence
        "population.backlog-ack-dropped" => {
            "SYN-ACKs resent after the handshake's final ACK: the server dropped that ACK".into()
        }
        "population.backlog-syns-lost" => {
            let (syn_loss, data_loss) = (a.f64("syn_loss"), a.f64("data_loss"));
            let ratio = if data_loss > 0.0 {
                text!("{:.0}× as often as", syn_loss / data_loss)
            } else {
                "while none of".into()
            };
            text!(
                "SYNs lost {ratio} the server's data segments, in bursts beside prompt \
                 SYN-ACKs"
            )
        }
        "population.client-share" => text!(
            "{:.0} % of the tail's extra time was the client's, between packets it \
             received and its answers",
            100.0 * a.f64("share")
        ),
        "population.path-rtt-medians" => text!(
            "the median of every connection's own baseline RTT, per interval, over {} \
             intervals",
            a.u64("intervals")
        ),
        "population.queue-steady" => text!(
            "{} ServerHellos left {} at a time, each handshake taking {:.1} ms at the server \
             (coefficient of variation {:.2}), each later one waiting longer (rank correlation \
             {:.2})",
            a.u64("handshakes"),
            at_a_time(a),
            a.f64("handshake_ms"),
            a.f64("cv"),
            a.f64("rho")
        ),
        "population.contention-correlation" => text!(
            "rank correlation {:.2} of handshakes in progress and server handshake time \
             over {} intervals; the RTT's median moved {:.1} ms",
            a.f64("rho"),
            a.u64("intervals"),
            a.f64("rtt_moved_ms")
        ),
        "population.cookies-granted-elsewhere" => {
            "the same server granted window scale and SACK to the same kind of SYN outside \
             the bursts"
                .into()
        }
        _ => return None,
    })
}
