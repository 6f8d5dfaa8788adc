//! `--http3`: the connection over QUIC (quinn 0.11, RFC 9000) and the
//! request over HTTP/3 (h3 0.0.8 over h3-quinn, RFC 9114), each step timed
//! with curl's names and each outcome taken from the stack's own account.
//!
//! curl's times over HTTP/3: `connect` and `appconnect` are both the
//! moment the QUIC handshake completed (TLS is inside it, RFC 9001), so the
//! `tls` phase is 0 ms; `pretransfer` is when the HTTP/3 connection is set
//! up and the request is about to go; `starttransfer` is when the
//! response's HEADERS frame was decoded, as for HTTP/2.
//!
//! What is verified, and how:
//! - **resumption**: the run's rustls session store is shared by its
//!   attempts (one [`QuicClient`]), and rustls verifies the server's
//!   certificate only in a full handshake (a resumed TLS 1.3 handshake
//!   carries no Certificate, RFC 8446 §2.2): no verification call during
//!   an attempt means the server accepted the ticket.
//! - **0-RTT**: quinn's `Connecting::into_0rtt()` succeeds only with a
//!   ticket that allows early data; its `ZeroRttAccepted` future says
//!   whether the server accepted it (RFC 9001 §4.6.2). A rejected 0-RTT
//!   request is sent again once the handshake completes, as RFC 9001 §4.6.2
//!   asks of clients.
//! - **HelloRetryRequest**: how many key shares rustls generated for the
//!   connection (RFC 8446 §4.1.4): 2 means the server asked for another
//!   group. Counted per thread: the probe's runtime is current-thread, and
//!   quinn runs each connection's TLS on it.
//! - **RTT**: quinn's `PathStats::min_rtt` (RFC 9002 §5.2) counts the
//!   phases; its smoothed RTT, congestion window, packets, losses and MTU
//!   are in the report's `quic` object.
//!
//! Where UDP gets no answer, the handshake ends with one error naming
//! that, after [`ANSWER_TIMEOUT`] (or `--connect-timeout`).

mod stack;

use std::cell::{Cell, RefCell};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};

use rttlens_probe_model::{Check, NegotiatedTls, QuicInfo, ResponseInfo, Transport};

use crate::assemble::{self, AttemptState};
use crate::capture::Captures;
use crate::error::{ErrorKind, ProbeError, ProbePhase};
use crate::http::RequestSpec;
use crate::resolve::{self, Target};
use crate::sequence::{ProbeStep, TlsStep};
use crate::timing::{between_ms, Marks};
use crate::{Attempt, ProbeConfig};

pub use stack::QuicClient;

/// How long the probe waits for any answer to its first Initial before
/// saying UDP may be blocked, when `--connect-timeout` does not say: 5 s
/// (quinn retransmits the Initial after its PTO, 3 × the initial RTT of
/// 333 ms at first, RFC 9002 §6.2.2, doubling each time).
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the probe lets a closed connection's CONNECTION_CLOSE go out
/// before dropping its endpoint (after `total`: in no timing).
const CLOSE_WAIT: Duration = Duration::from_millis(100);

/// The app's instants of one HTTP/3 exchange, each next to one packet of
/// the capture (the request's HEADERS, the response's HEADERS, its first
/// DATA bytes, its FIN): what [`crate::reconcile`] sets against the wire.
#[derive(Debug, Clone, Copy)]
struct ExchangeTimes {
    /// h3 wrote the request's HEADERS frame to the stream: it goes out
    /// when quinn next drives the connection.
    request_sent: Instant,
    /// The response's HEADERS decoded (curl's `starttransfer`).
    headers: Instant,
    /// The response's first DATA bytes read (`None`: no body).
    first_data: Option<Instant>,
    /// The response stream's end (its FIN) read.
    end: Instant,
}

/// How the QUIC handshake of one attempt went.
struct Handshake {
    conn: quinn::Connection,
    /// Handshake complete (0-RTT: when the server's answer confirmed it).
    done: Option<Instant>,
    /// `None`: no 0-RTT; else the `ZeroRttAccepted` still to be awaited.
    zero_rtt: Option<tokio::task::JoinHandle<(bool, Instant)>>,
}

/// One connection over QUIC: resolve, handshake, HTTP/3 request and
/// response, then quinn's own account of it.
///
/// # Errors
/// The failed phase ([`ProbeError`]): no answer to the Initial (UDP
/// blocked), a TLS failure, the HTTP/3 exchange.
pub async fn attempt(
    cfg: &ProbeConfig,
    target: &Target,
    step: ProbeStep,
    client: &QuicClient,
    phase: &Cell<ProbePhase>,
    caps: &RefCell<Captures>,
) -> Result<(Attempt, AttemptState), ProbeError> {
    let start = Instant::now();
    phase.set(ProbePhase::Namelookup);
    let remote = resolve::resolve(target, &cfg.resolve, cfg.family, cfg.allow.as_deref()).await?;
    let namelookup = Instant::now();
    // the capture starts before the first Initial; its start-up is cut out
    // of the attempt's clock
    let skipped = caps.borrow_mut().ensure(remote)?;
    let (start, namelookup) = (start + skipped, namelookup + skipped);
    phase.set(ProbePhase::Connect);
    let local_ip = source_ip(remote)?;
    let endpoint = quinn::Endpoint::client(SocketAddr::new(local_ip, 0))
        .map_err(|e| ProbeError::io(ProbePhase::Connect, "binding the QUIC socket", &e))?;
    let local = endpoint
        .local_addr()
        .map_or_else(|_| format!("{local_ip}:?"), |a| a.to_string());
    let verified_before = client.verifications.load(Ordering::Relaxed);
    stack::reset_counts();
    let connect_start = Instant::now();
    let connecting = endpoint
        .connect_with(client.config.clone(), remote, &target.host)
        .map_err(|e| ProbeError::usage(format!("QUIC connect to {remote}: {e}")))?;
    // quinn's connect built the ClientHello (rustls makes it at once): the
    // first Initial leaves when this task first yields and the runtime
    // drives the connection (with 0-RTT that is after the request is
    // written, so it goes in the same datagram), and the wire's handshake
    // starts there, not at `connect_start`
    let first_yield = Cell::new(None);
    let hs = until_yield(
        handshake(cfg, connecting, step, remote, connect_start),
        &first_yield,
    )
    .await?;
    let zero_rtt_offered = hs.zero_rtt.is_some();
    let conn = hs.conn.clone();
    phase.set(ProbePhase::Http);
    let pretransfer = Instant::now();
    let (first, zero_rtt, done) = match hs.zero_rtt {
        None => (
            Some(exchange(&conn, target, &cfg.request).await),
            None,
            hs.done,
        ),
        // the request rides in 0-RTT while the handshake completes: whichever
        // ends first, the answer or the server's verdict on the early data
        Some(mut verdict) => {
            let ex = until_yield(exchange(&conn, target, &cfg.request), &first_yield);
            tokio::pin!(ex);
            let verdict_of = |j: Result<(bool, Instant), tokio::task::JoinError>| {
                j.map_or((false, None), |(ok, at)| (ok, Some(at)))
            };
            tokio::select! {
                r = &mut ex => {
                    let (ok, at) = verdict_of(verdict.await);
                    (Some(r), Some(ok), at)
                }
                j = &mut verdict => match verdict_of(j) {
                    (true, at) => (Some(ex.await), Some(true), at),
                    // rejected: the 0-RTT streams are gone
                    (false, at) => (None, Some(false), at),
                },
            }
        }
    };
    let (info, times) = match (first, zero_rtt) {
        (Some(Ok(r)), _) => r,
        // 0-RTT rejected: the request goes again over the completed
        // handshake (RFC 9001 §4.6.2)
        (None, _) | (Some(Err(_)), Some(false)) => exchange(&conn, target, &cfg.request).await?,
        (Some(Err(e)), _) => return Err(e),
    };
    let total = Instant::now();
    let stats = conn.stats();
    let srtt = conn.rtt();
    let alpn = handshake_alpn(&conn);
    conn.close(0u32.into(), b"");
    drop(conn);
    let _ = tokio::time::timeout(CLOSE_WAIT, endpoint.wait_idle()).await;
    let key_shares = stack::key_shares();
    let suite = stack::last_suite();
    let full = client.verifications.load(Ordering::Relaxed) > verified_before;
    let done = done.unwrap_or(total);
    let starttransfer = times.headers;
    let marks = Marks {
        start,
        namelookup,
        connect_start,
        connect: done,
        appconnect: Some(done),
        pretransfer,
        starttransfer: Some(starttransfer),
        total,
    };
    let facts = NegotiatedTls {
        version: "TLSv1.3".into(),
        // quinn does not say which suite the handshake chose: the one whose
        // packet keys rustls made last (`stack::SuiteSeen`)
        cipher: suite.map(|s| format!("{s:?}")).unwrap_or_default(),
        alpn,
        handshake: match (full, key_shares > 1) {
            (false, _) => "resumed",
            (true, true) => "full-with-hello-retry",
            (true, false) => "full",
        },
        early_data: match zero_rtt {
            None => "not-offered",
            Some(true) => "accepted",
            Some(false) => "rejected",
        },
        certs: None,
    };
    let request_bytes = cfg.request.body.as_ref().map_or(0, |b| b.len() as u64);
    let (mut a, mut state) = assemble::attempt(
        step,
        local,
        remote,
        marks,
        true,
        Some(facts.clone()),
        info,
        request_bytes,
    );
    let min_rtt_ms = stats.path.min_rtt.as_secs_f64() * 1e3;
    let handshake_ms = between_ms(connect_start, done);
    a.transport = Transport::Quic;
    a.quic = Some(QuicInfo {
        srtt_ms: round3(srtt.as_secs_f64() * 1e3),
        min_rtt_ms: round3(min_rtt_ms),
        handshake_rtts: (min_rtt_ms > 0.0 && zero_rtt.is_none())
            .then(|| (handshake_ms / min_rtt_ms).round() as u32),
        key_shares,
        cwnd_bytes: stats.path.cwnd,
        congestion_events: stats.path.congestion_events,
        sent_packets: stats.path.sent_packets,
        lost_packets: stats.path.lost_packets,
        lost_bytes: stats.path.lost_bytes,
        mtu_bytes: stats.path.current_mtu,
        datagrams_out: stats.udp_tx.datagrams,
        bytes_out: stats.udp_tx.bytes,
        datagrams_in: stats.udp_rx.datagrams,
        bytes_in: stats.udp_rx.bytes,
    });
    a.checks = checks(step, &facts, zero_rtt_offered);
    let initial_leaves = first_yield.get().unwrap_or(connect_start);
    state.quic = Some(assemble::QuicDurations {
        handshake_ms: between_ms(initial_leaves, done),
        request_ms: between_ms(times.request_sent, times.headers),
        transfer_ms: times.first_data.map(|f| between_ms(f, times.end)),
        total_ms: between_ms(initial_leaves, times.end),
    });
    Ok((a, state))
}

/// The checks of a step over QUIC, from what rustls and quinn said.
fn checks(step: ProbeStep, t: &NegotiatedTls, zero_rtt_offered: bool) -> Vec<Check> {
    let resumed = t.handshake == "resumed";
    let how_resumed = if resumed {
        "rustls verified no certificate: the server accepted the ticket (PSK, RFC 8446 §2.2)"
    } else {
        "rustls verified the server's certificate: a full handshake"
    };
    let resumed_check = || Check {
        what: "resumed",
        ok: Some(resumed),
        how: how_resumed.into(),
    };
    let early_check = || Check {
        what: "early-data-accepted",
        ok: Some(t.early_data == "accepted"),
        how: if zero_rtt_offered {
            "quinn ZeroRttAccepted".into()
        } else {
            "quinn into_0rtt() refused: no ticket allowing early data".into()
        },
    };
    match step.tls {
        Some(TlsStep::Full) => vec![Check {
            what: "full-handshake",
            ok: Some(!resumed),
            how: how_resumed.into(),
        }],
        Some(TlsStep::Resumed) => vec![resumed_check()],
        Some(TlsStep::ZeroRtt) => vec![resumed_check(), early_check()],
        Some(TlsStep::Reuse) if zero_rtt_offered => vec![resumed_check(), early_check()],
        Some(TlsStep::Reuse) => vec![resumed_check()],
        Some(TlsStep::Any) | None => Vec::new(),
    }
}

/// ALPN as the handshake agreed it (quinn's `handshake_data()`).
fn handshake_alpn(conn: &quinn::Connection) -> Option<String> {
    conn.handshake_data()
        .and_then(|d| d.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
        .and_then(|d| d.protocol)
        .map(|p| String::from_utf8_lossy(&p).into_owned())
}

/// The source address the kernel picks for `remote` (a connected UDP
/// socket's local address; nothing is sent), so the attempt's `local`
/// names the address its packets carry.
fn source_ip(remote: SocketAddr) -> Result<std::net::IpAddr, ProbeError> {
    let any: SocketAddr = if remote.is_ipv4() {
        SocketAddr::from(([0, 0, 0, 0], 0))
    } else {
        SocketAddr::from(([0u16; 8], 0))
    };
    let io =
        |e: std::io::Error| ProbeError::io(ProbePhase::Connect, &format!("route to {remote}"), &e);
    let s = UdpSocket::bind(any).map_err(io)?;
    s.connect(remote).map_err(io)?;
    Ok(s.local_addr().map_err(io)?.ip())
}

/// The handshake: 0-RTT when the step asks for it and the ticket allows
/// it, else wait for the server's first answer (bounded: no answer means
/// UDP is likely blocked) and then for the handshake to complete.
async fn handshake(
    cfg: &ProbeConfig,
    mut connecting: quinn::Connecting,
    step: ProbeStep,
    remote: SocketAddr,
    connect_start: Instant,
) -> Result<Handshake, ProbeError> {
    if step.tries_early_data() {
        match connecting.into_0rtt() {
            Ok((conn, accepted)) => {
                let zero_rtt = tokio::spawn(async move {
                    let ok = accepted.await;
                    (ok, Instant::now())
                });
                return Ok(Handshake {
                    conn,
                    done: None,
                    zero_rtt: Some(zero_rtt),
                });
            }
            Err(c) => connecting = c,
        }
    }
    let limit = cfg.connect_timeout.unwrap_or(ANSWER_TIMEOUT);
    match tokio::time::timeout(limit, connecting.handshake_data()).await {
        Err(_) => {
            return Err(ProbeError::new(
                ProbePhase::Connect,
                ErrorKind::Timeout,
                format!(
                    "no answer to the QUIC Initial from {remote} within {} s: UDP may be blocked \
                     on this path; try without --http3",
                    fmt_secs(limit)
                ),
            ))
        }
        Ok(Err(e)) => return Err(quic_error(&e, remote)),
        Ok(Ok(_)) => {}
    }
    let rest = match cfg.connect_timeout {
        None => connecting.await,
        Some(d) => {
            let deadline = connect_start + d;
            match tokio::time::timeout_at(deadline.into(), connecting).await {
                Ok(r) => r,
                Err(_) => {
                    return Err(ProbeError::timeout(
                        ProbePhase::Connect,
                        "--connect-timeout",
                        between_ms(connect_start, Instant::now()),
                    ))
                }
            }
        }
    };
    let conn = rest.map_err(|e| quic_error(&e, remote))?;
    Ok(Handshake {
        conn,
        done: Some(Instant::now()),
        zero_rtt: None,
    })
}

/// Runs `f`, noting in `at` (when still unset) the instant it first
/// returned `Pending`: when the task yields, and the runtime drives quinn's
/// connection, which sends what is queued.
async fn until_yield<F: std::future::Future>(f: F, at: &Cell<Option<Instant>>) -> F::Output {
    let mut f = std::pin::pin!(f);
    std::future::poll_fn(|cx| {
        let r = f.as_mut().poll(cx);
        if r.is_pending() && at.get().is_none() {
            at.set(Some(Instant::now()));
        }
        r
    })
    .await
}

/// `5`, `2.5`: seconds without trailing zeros.
fn fmt_secs(d: Duration) -> String {
    let s = format!("{:.3}", d.as_secs_f64());
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A failed QUIC handshake as the probe's error: certificate trouble and
/// TLS alerts as for TCP, the rest in the `connect` phase.
fn quic_error(e: &quinn::ConnectionError, remote: SocketAddr) -> ProbeError {
    use quinn::ConnectionError as E;
    let crypto = |code: u64| (0x100..0x200).contains(&code).then(|| code - 0x100);
    match e {
        E::TransportError(t) if t.reason.contains("certificate") => ProbeError::new(
            ProbePhase::Tls,
            ErrorKind::BadCertificate,
            format!(
                "bad certificate: {} (use --cacert FILE to trust it, or -k to skip verification)",
                t.reason
            ),
        ),
        E::TransportError(t) => match crypto(u64::from(t.code)) {
            Some(_) => ProbeError::new(
                ProbePhase::Tls,
                ErrorKind::Tls,
                format!("TLS handshake failed: {}", t.reason),
            ),
            None => ProbeError::new(
                ProbePhase::Connect,
                ErrorKind::Io,
                format!("QUIC handshake with {remote}: {t}"),
            ),
        },
        E::ConnectionClosed(c) => match crypto(u64::from(c.error_code)) {
            Some(alert) => ProbeError::new(
                ProbePhase::Tls,
                ErrorKind::TlsAlert,
                format!("the server sent a TLS alert: {alert} ({c})"),
            ),
            None => ProbeError::new(
                ProbePhase::Connect,
                ErrorKind::Io,
                format!("the server closed the QUIC handshake: {c}"),
            ),
        },
        E::VersionMismatch => ProbeError::new(
            ProbePhase::Connect,
            ErrorKind::Io,
            format!("{remote} speaks no QUIC version the probe does (v1, RFC 9000)"),
        ),
        E::Reset => ProbeError::new(
            ProbePhase::Connect,
            ErrorKind::Refused,
            format!("{remote} reset the QUIC connection (stateless reset)"),
        ),
        E::TimedOut => ProbeError::new(
            ProbePhase::Connect,
            ErrorKind::Timeout,
            format!("the QUIC handshake with {remote} timed out (idle timeout)"),
        ),
        other => ProbeError::new(
            ProbePhase::Connect,
            ErrorKind::Io,
            format!("QUIC handshake with {remote}: {other}"),
        ),
    }
}

/// Set up HTTP/3 on `conn`, send the request and read the whole response:
/// what came back and when each step of it passed.
async fn exchange(
    conn: &quinn::Connection,
    target: &Target,
    spec: &RequestSpec,
) -> Result<(ResponseInfo, ExchangeTimes), ProbeError> {
    let http = |what: &str, e: &dyn std::fmt::Display| {
        ProbeError::new(ProbePhase::Http, ErrorKind::Http, format!("{what}: {e}"))
    };
    let (mut driver, mut send) = h3::client::new(h3_quinn::Connection::new(conn.clone()))
        .await
        .map_err(|e| http("HTTP/3 connection", &e))?;
    // the connection's control streams run beside the request
    let drive = tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    let method = spec.method.clone().unwrap_or_else(|| {
        if spec.body.is_some() {
            "POST".into()
        } else {
            "GET".into()
        }
    });
    let mut req = http::Request::builder()
        .method(method.as_str())
        .uri(format!("https://{}{}", target.host_header(), target.path))
        .header(
            http::header::USER_AGENT,
            concat!("rttlens/", env!("CARGO_PKG_VERSION")),
        )
        .header(http::header::ACCEPT, "*/*");
    for (k, v) in &spec.headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let req = req
        .body(())
        .map_err(|e| ProbeError::usage(format!("the request: {e}")))?;
    let result = async {
        let mut stream = send
            .send_request(req)
            .await
            .map_err(|e| http("sending the request", &e))?;
        // the HEADERS frame is in quinn's send buffer: it leaves when the
        // connection is next driven
        let request_sent = Instant::now();
        if let Some(body) = &spec.body {
            stream
                .send_data(Bytes::from(body.clone()))
                .await
                .map_err(|e| http("sending the body", &e))?;
        }
        stream
            .finish()
            .await
            .map_err(|e| http("finishing the request", &e))?;
        let resp = stream
            .recv_response()
            .await
            .map_err(|e| http("reading the response", &e))?;
        let headers_at = Instant::now();
        let mut body_bytes = 0u64;
        let mut first_data = None;
        while let Some(mut chunk) = stream
            .recv_data()
            .await
            .map_err(|e| http("reading the body", &e))?
        {
            first_data.get_or_insert_with(Instant::now);
            let n = chunk.remaining();
            body_bytes += n as u64;
            chunk.advance(n);
        }
        let info = ResponseInfo {
            status: resp.status().as_u16(),
            version: "HTTP/3".into(),
            body_bytes,
            location: resp
                .headers()
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
        };
        let times = ExchangeTimes {
            request_sent,
            headers: headers_at,
            first_data,
            end: Instant::now(),
        };
        Ok::<_, ProbeError>((info, times))
    }
    .await;
    drive.abort();
    result
}

fn round3(x: f64) -> f64 {
    rttlens_core::base::cost::round3(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_print_short() {
        assert_eq!(fmt_secs(Duration::from_secs(5)), "5");
        assert_eq!(fmt_secs(Duration::from_millis(2500)), "2.5");
    }
}
