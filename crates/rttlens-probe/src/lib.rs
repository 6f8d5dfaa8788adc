//! `rttlens probe URL`: time a live URL step by step and explain it in
//! round trips (docs/design.md §6, issue 4).
//!
//! The probe crate: sockets, rustls and hyper on one tokio runtime, over
//! `rttlens-live` (its self-capture: the AF_PACKET capture it shares with
//! `analyze -i`), the report model `rttlens-probe-model` and the
//! engine `rttlens-core`.
//!
//! The probe owns every step of the connection, in pipeline order:
//!
//! 1. [`resolve`]: the URL, `--resolve`, `-4`/`-6`, the system resolver
//!    (curl's `namelookup`);
//! 2. [`connect`]: the socket (bound first, optional `TCP_FASTOPEN_CONNECT`,
//!    `TCP_NODELAY`) and `connect(2)` (`connect`);
//! 3. [`tls`]: rustls with the chosen version, roots, ALPN, a session store
//!    shared across the run (resumption, 0-RTT) and a key log
//!    (`appconnect`);
//! 4. [`http`]: hyper's HTTP/1.1 or (ALPN `h2`) HTTP/2 client connection
//!    over that stream
//!    (`pretransfer`, `starttransfer`, `total`), with [`timing::Tap`]
//!    noting when bytes pass;
//! 5. [`sequence`]: what each connection of a run sets out to do and how
//!    its outcome is verified; [`stats`]: `-n N` order statistics;
//! 6. [`capture`]: the probe's own packets ([`rttlens_live::selfcap`]),
//!    captured from before the first `connect(2)` to after the last
//!    response; [`reconcile`]: that capture through the analysis engine,
//!    matched to the attempts, app set against wire;
//! 7. [`assemble`]: the report, `rttlens_probe_model`'s plain types
//!    filled in (`rttlens-report` renders them as JSON and a text
//!    waterfall).
//!
//! With `--path` ([`ProbeConfig::path`]), [`path`] traces the hops toward
//! the last connection's remote address once the connections are done.
//!
//! With `--http3` ([`ProbeConfig::http3`]) steps 2–4 are [`quic`]'s
//! instead: quinn's QUIC handshake over UDP and h3's request, the
//! self-capture takes the UDP datagrams, and [`reconcile`] reads it back
//! with the connections' key log through the engine's QUIC analysis.
//!
//! Everything runs on one current-thread tokio runtime built here: the
//! timestamps are not disturbed by other workers, and the runtime's
//! threads (the resolver's blocking pool) are spawned from the calling
//! thread, so they inherit its network namespace.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod assemble;
pub mod capture;
pub mod certinfo;
pub mod connect;
pub mod error;
pub mod http;
pub mod path;
pub mod quic;
pub mod reconcile;
pub mod resolve;
pub mod sequence;
pub mod stats;
pub mod timing;
pub mod tls;

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rttlens_core::base::cost::round3;
use rustls::pki_types::ServerName;

pub use error::{ErrorKind, ProbeError, ProbePhase};
pub use resolve::{AllowList, Family, ResolveOverride, Target};
pub use rttlens_probe_model::{
    Attempt, Check, LeafCert, NegotiatedTls, PathHop, PathReport, PathStep, PathVersus, PeerCerts,
    ProbeReport, QuicInfo, ResponseInfo, TcpInfoSnapshots, Timings, Transport,
};
pub use sequence::{ProbeStep, TfoStep, TlsStep};
pub use tls::{TlsOptions, TlsVersion};

use assemble::AttemptState;
use http::RequestSpec;
use timing::{Events, Marks, Stream, Tap};

/// Everything `rttlens probe` was asked to do.
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    /// `http://` or `https://` URL.
    pub url: String,
    /// `--resolve host:port:addr` entries.
    pub resolve: Vec<ResolveOverride>,
    /// `-4` / `-6`.
    pub family: Family,
    /// `--tfo`: `TCP_FASTOPEN_CONNECT` on every connection.
    pub tfo: bool,
    /// TLS options.
    pub tls: TlsOptions,
    /// The request.
    pub request: RequestSpec,
    /// `-L`: follow redirects (at most [`MAX_REDIRECTS`]).
    pub follow: bool,
    /// `-n N`: attempts (1 when 0).
    pub count: u32,
    /// `--sequence`.
    pub sequence: bool,
    /// With `sequence`: also make the step that sends the request as TLS
    /// 1.3 early data (default `true`); `false` ends the sequence at the
    /// resumed connection, so nothing replayable is sent (rttlens serve's
    /// `resumption` without `zero_rtt`).
    pub sequence_zero_rtt: bool,
    /// `--max-time`: the whole run.
    pub max_time: Option<Duration>,
    /// `--connect-timeout`: name lookup + connect + TLS of each connection.
    pub connect_timeout: Option<Duration>,
    /// Capture the probe's own packets (default on; off with
    /// `--no-capture`).
    pub capture: bool,
    /// `--pcap FILE`: keep the capture (pcapng).
    pub pcap: Option<PathBuf>,
    /// Keep every packet of the probe's connections in their reports
    /// ([`rttlens_core::model::ConnReport::trace`]) for the pictures.
    pub trace: bool,
    /// `--http3`: HTTP/3 over QUIC (UDP) instead of TCP ([`quic`]);
    /// `https://` only, TLS 1.3, ALPN `h3`, no TFO. `-n N` keeps one
    /// session store across the attempts (the second resumes, and sends
    /// 0-RTT when the ticket allows).
    pub http3: bool,
    /// Connect only to addresses this list permits (`rttlens serve
    /// --allow-target`): each name is checked after it is resolved, and
    /// the connection goes to the address checked (no second lookup);
    /// redirects are checked the same way. `None`: any address.
    pub allow: Option<Arc<AllowList>>,
    /// `--path`: trace the hops toward the target after the connections
    /// ([`path`]); `None`: no trace.
    pub path: Option<path::PathOptions>,
}

impl ProbeConfig {
    /// A `GET url` with defaults: one attempt, ALPN `http/1.1`, capture on.
    pub fn new(url: impl Into<String>) -> ProbeConfig {
        ProbeConfig {
            url: url.into(),
            resolve: Vec::new(),
            family: Family::Any,
            tfo: false,
            tls: TlsOptions {
                alpn: vec!["http/1.1".into()],
                ..TlsOptions::default()
            },
            request: RequestSpec::default(),
            follow: false,
            count: 1,
            sequence: false,
            sequence_zero_rtt: true,
            max_time: None,
            connect_timeout: None,
            capture: true,
            pcap: None,
            trace: false,
            http3: false,
            allow: None,
            path: None,
        }
    }
}

/// Await `fut`, or give up at `deadline` with a timeout naming the phase
/// the attempt was in, the option that set the limit and the time since
/// `since`.
async fn within<T>(
    fut: impl std::future::Future<Output = Result<T, ProbeError>>,
    deadline: Option<Instant>,
    phase: &Cell<ProbePhase>,
    option: &'static str,
    since: Instant,
) -> Result<T, ProbeError> {
    match deadline {
        None => fut.await,
        Some(d) => match tokio::time::timeout_at(d.into(), fut).await {
            Ok(r) => r,
            Err(_) => Err(ProbeError::timeout(
                phase.get(),
                option,
                timing::between_ms(since, Instant::now()),
            )),
        },
    }
}

/// Most redirects `-L` follows.
pub const MAX_REDIRECTS: usize = 10;

/// Run the probe on a fresh current-thread runtime.
///
/// # Errors
/// The first failed attempt, naming its phase ([`ProbeError`]); a usage
/// error for a bad URL or option.
pub fn run(cfg: &ProbeConfig) -> Result<ProbeReport, ProbeError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            ProbeError::new(
                ProbePhase::Setup,
                ErrorKind::Io,
                format!("tokio runtime: {e}"),
            )
        })?;
    let started = Instant::now();
    let mut report = rt.block_on(run_async(cfg))?;
    if let Some(opts) = cfg.path {
        let left = cfg.max_time.map(|m| m.saturating_sub(started.elapsed()));
        trace_path(&mut report, opts, left);
    }
    Ok(report)
}

/// `--path`: trace toward the last connection's remote address, its RTT
/// the one the last hop is compared with. `left`: what `--max-time`
/// leaves, which bounds the rounds (one a second).
fn trace_path(report: &mut ProbeReport, mut opts: path::PathOptions, left: Option<Duration>) {
    let Some(last) = report.attempts.last() else {
        return;
    };
    let Ok(remote) = last.remote.parse::<SocketAddr>() else {
        return;
    };
    let conn = last.rtt_ms.zip(last.rtt_source);
    if let Some(left) = left {
        // a round takes up to a second; the names up to DNS_BOUND more
        let budget = left.saturating_sub(path::DNS_BOUND).as_secs() as u32;
        if budget == 0 {
            report.path = Some(path::not_traced(
                remote,
                opts,
                "path not traced: --max-time left no time for a round",
            ));
            return;
        }
        opts.rounds = opts.rounds.min(budget);
    }
    report.path = Some(path::trace(remote, opts, conn));
}

async fn run_async(cfg: &ProbeConfig) -> Result<ProbeReport, ProbeError> {
    let started = Instant::now();
    let deadline = cfg.max_time.map(|d| started + d);
    let mut target = Target::parse(&cfg.url)?;
    let protocol = if cfg.http3 {
        check_http3(cfg, &target)?;
        rttlens_live::selfcap::Protocol::Udp
    } else {
        check_alpn(cfg, &target)?;
        rttlens_live::selfcap::Protocol::Tcp
    };
    let caps = RefCell::new(
        capture::Captures::new(cfg.capture, cfg.pcap.is_some()).with_protocol(protocol),
    );
    let steps = if cfg.http3 {
        sequence::plan_http3(cfg.sequence, cfg.count)
    } else {
        sequence::plan(cfg.sequence, target.tls, cfg.tfo, cfg.count).map_err(ProbeError::usage)?
    };
    // `sequence_zero_rtt: false`: no step sends early data
    let steps: Vec<_> = steps
        .into_iter()
        .filter(|s| cfg.sequence_zero_rtt || !s.early_data())
        .collect();
    let keylog = tls::KeyLogSink::for_options(&cfg.tls)?;
    // the capture is read back with the connections' secrets: QUIC has
    // nothing in clear past the Initials, TLS over TCP has its requests and
    // responses (their Server-Timing) only inside the records; so they are
    // kept in memory when no key log was asked for, and go into no file
    let own_keys = match (&keylog, cfg.capture) {
        (None, true) => Some(Arc::new(tls::KeyLogSink::in_memory())),
        (k, _) => k.clone(),
    };
    let fresh = |https: bool| {
        if cfg.http3 {
            Ok(None)
        } else {
            fresh_tls(&cfg.tls, https, own_keys.clone())
        }
    };
    let fresh_quic = || {
        cfg.http3
            .then(|| quic::QuicClient::new(&cfg.tls, own_keys.clone()))
            .transpose()
    };
    let mut tls = fresh(target.tls)?;
    let mut quic_client = fresh_quic()?;
    let mut attempts: Vec<Attempt> = Vec::new();
    let mut states: Vec<AttemptState> = Vec::new();
    let mut redirects = 0;
    let mut i = 0;
    while i < steps.len() {
        let step = steps[i];
        if !step.resumes() && i > 0 {
            // a plain attempt or a full handshake: nothing to resume from
            tls = fresh(target.tls)?;
            quic_client = fresh_quic()?;
        }
        let phase = Cell::new(ProbePhase::Namelookup);
        let (a, state) = match &quic_client {
            Some(q) => {
                let fut = quic::attempt(cfg, &target, step, q, &phase, &caps);
                within(fut, deadline, &phase, "--max-time", started).await?
            }
            None => {
                let fut = attempt(cfg, &target, step, tls.as_ref(), &phase, &caps);
                within(fut, deadline, &phase, "--max-time", started).await?
            }
        };
        let location = a.response.location.clone();
        let status = a.response.status;
        attempts.push(a);
        states.push(state);
        if cfg.follow && (300..400).contains(&status) {
            if let Some(loc) = location {
                if redirects >= MAX_REDIRECTS {
                    return Err(ProbeError::new(
                        ProbePhase::Http,
                        ErrorKind::Http,
                        format!("more than {MAX_REDIRECTS} redirects (-L)"),
                    ));
                }
                redirects += 1;
                target = Target::parse(&join_location(&target, &loc))?;
                if cfg.http3 {
                    check_http3(cfg, &target)?;
                }
                tls = fresh(target.tls)?;
                quic_client = fresh_quic()?;
                continue;
            }
        }
        i += 1;
    }
    // after the last response: stopping (≈150 ms) is in no timing
    let outcome = caps.into_inner().finish();
    let keylog = keylog.map(|k| k.contents());
    let secrets = own_keys.map(|k| k.contents());
    let mut report = assemble::report(cfg, attempts, &states, keylog);
    attach_capture(cfg, &mut report, &states, outcome, secrets.as_deref())?;
    Ok(report)
}

/// Merge the run's capture into `report` (and write `--pcap`); `secrets`:
/// the connections' key log (TLS and QUIC), to read the capture back with.
fn attach_capture(
    cfg: &ProbeConfig,
    report: &mut ProbeReport,
    states: &[AttemptState],
    outcome: capture::CaptureOutcome,
    secrets: Option<&[u8]>,
) -> Result<(), ProbeError> {
    match outcome {
        capture::CaptureOutcome::Off => {}
        capture::CaptureOutcome::Unavailable(status, why) => {
            report.capture.status = status;
            report.capture.note = Some(if cfg.http3 {
                format!("{why}: app-level timings and quinn's statistics only")
            } else {
                format!(
                    "{why}: app-level timings and TCP_INFO only; no wire ladder, no findings, \
                     no TFO check from the wire"
                )
            });
        }
        capture::CaptureOutcome::Captured {
            captured,
            start_overhead_ms,
            stop_ms,
        } => {
            let bytes = write_capture(cfg, report, &captured)?;
            // the same reading, through QUIC's attempts or TCP's
            let attach = if cfg.http3 {
                reconcile::attach_quic_bytes
            } else {
                reconcile::attach_bytes
            };
            if let Err(e) = attach(
                report,
                states,
                &bytes,
                secrets,
                &captured.interface,
                cfg.trace,
            ) {
                report.capture.status = "failed";
                report.capture.note = Some(format!("analysing the capture: {e}"));
            }
            report.capture.pcap = cfg.pcap.as_ref().map(|p| p.display().to_string());
            report.capture.start_overhead_ms = Some(round3(start_overhead_ms));
            report.capture.stop_ms = Some(round3(stop_ms));
            report.capture.truncated = captured.truncated;
            report.capture.kernel_drops = captured.kernel_drops;
        }
    }
    Ok(())
}

/// The ALPN protocols offered must be ones the probe speaks: `h2` and
/// `http/1.1`. `h2` is refused where it would be half-working: over
/// `http://` (h2c, prior knowledge or upgrade, is not spoken) and with
/// `--sequence` (its 0-RTT step would have to pick the protocol before the
/// server confirms it).
fn check_alpn(cfg: &ProbeConfig, target: &Target) -> Result<(), ProbeError> {
    if let Some(p) = cfg
        .tls
        .alpn
        .iter()
        .find(|p| !matches!(p.as_str(), "h2" | "http/1.1"))
    {
        return Err(ProbeError::usage(format!(
            "--alpn {p}: the probe speaks h2 and http/1.1 only"
        )));
    }
    if cfg.tls.alpn.iter().any(|p| p == "h2") {
        if !target.tls {
            return Err(ProbeError::usage(
                "--http2 over http:// (h2c) is not spoken: use https:// or --http1.1",
            ));
        }
        if cfg.sequence {
            return Err(ProbeError::usage(
                "--sequence speaks HTTP/1.1 (its 0-RTT step cannot wait for ALPN): drop --http2",
            ));
        }
    }
    Ok(())
}

/// The capture as pcapng (with the key log in a Decryption Secrets Block
/// when there is one), written to `--pcap` when asked.
fn write_capture(
    cfg: &ProbeConfig,
    report: &ProbeReport,
    captured: &rttlens_live::Captured,
) -> Result<Vec<u8>, ProbeError> {
    let mut bytes = Vec::new();
    captured
        .write_pcapng(&mut bytes, report.keylog.as_deref())
        .map_err(|e| ProbeError::io(ProbePhase::Setup, "writing the capture", &e))?;
    if let Some(p) = &cfg.pcap {
        std::fs::write(p, &bytes).map_err(|e| {
            ProbeError::new(
                ProbePhase::Setup,
                ErrorKind::Usage,
                format!("--pcap {}: {e}", p.display()),
            )
        })?;
    }
    Ok(bytes)
}

/// `--http3` needs `https://` and cannot take `--tfo` (no TCP).
fn check_http3(cfg: &ProbeConfig, target: &Target) -> Result<(), ProbeError> {
    if !target.tls {
        return Err(ProbeError::usage(
            "--http3 needs an https:// URL (HTTP/3 runs over QUIC, which is always encrypted)",
        ));
    }
    if cfg.tfo {
        return Err(ProbeError::usage(
            "--tfo with --http3: TCP Fast Open is TCP's; QUIC has 0-RTT instead (--sequence)",
        ));
    }
    Ok(())
}

/// `Location` relative to the current target.
fn join_location(t: &Target, loc: &str) -> String {
    if loc.contains("://") {
        return loc.to_string();
    }
    let scheme = if t.tls { "https" } else { "http" };
    let authority = t.host_header();
    if loc.starts_with('/') {
        format!("{scheme}://{authority}{loc}")
    } else {
        let base = t.path.rsplit_once('/').map_or("", |(b, _)| b);
        format!("{scheme}://{authority}{base}/{loc}")
    }
}

/// Fresh TLS configurations with an empty session store (none for
/// `http://`).
fn fresh_tls(
    o: &TlsOptions,
    https: bool,
    keylog: Option<Arc<tls::KeyLogSink>>,
) -> Result<Option<tls::TlsClient>, ProbeError> {
    if https {
        tls::TlsClient::new(o, keylog).map(Some)
    } else {
        Ok(None)
    }
}

/// One connection: resolve, connect, TLS, request, response.
async fn attempt(
    cfg: &ProbeConfig,
    target: &Target,
    step: ProbeStep,
    tls: Option<&tls::TlsClient>,
    phase: &Cell<ProbePhase>,
    caps: &RefCell<capture::Captures>,
) -> Result<(Attempt, AttemptState), ProbeError> {
    let start = Instant::now();
    let est = establish(cfg, target, step, tls, phase, start, caps);
    let limit = cfg.connect_timeout.map(|d| start + d);
    let (stream, marks0, remote, local_port, after_connect) =
        within(est, limit, phase, "--connect-timeout", start).await?;
    phase.set(ProbePhase::Http);
    let events = Arc::new(Mutex::new(Events::default()));
    let h2 = stream.tls().and_then(|c| c.alpn_protocol()) == Some(b"h2".as_slice());
    let local = stream
        .tcp()
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| format!("?:{local_port}"));
    // a second descriptor of the socket, for TCP_INFO once hyper's HTTP/2
    // connection owns the stream
    let fd = stream.tcp().as_fd().try_clone_to_owned().ok();
    // HTTP/2 keeps the stream: read the TLS facts now (the handshake is
    // complete, no early data with h2)
    let facts_h2 = h2
        .then(|| {
            stream.tls().map(|c| {
                tls::negotiated(
                    c,
                    step.early_data(),
                    tls.and_then(|t| t.anchors.as_deref().map(Vec::as_slice)),
                )
            })
        })
        .flatten();
    let pretransfer = Instant::now();
    let done = http::exchange(
        Tap::new(stream, Arc::clone(&events)),
        target,
        &cfg.request,
        h2,
    )
    .await?;
    let total = Instant::now();
    let at_end = fd.as_ref().and_then(|f| rttlens_sys::tcp_info(f).ok());
    let ev = events.lock().map(|e| *e).unwrap_or_default();
    let marks = Marks {
        appconnect: marks0.appconnect.or(ev.handshake_done),
        pretransfer,
        // HTTP/2: the response's HEADERS, not the server's SETTINGS
        starttransfer: if h2 {
            Some(done.headers_at)
        } else {
            ev.first_byte
        },
        total,
        ..marks0
    };
    let tls_facts = match &done.stream {
        Some(s) => s.tls().map(|c| {
            tls::negotiated(
                c,
                step.early_data(),
                tls.and_then(|t| t.anchors.as_deref().map(Vec::as_slice)),
            )
        }),
        None => facts_h2,
    };
    if let Some(conn) = done.h2_conn {
        // GOAWAY, close_notify and FIN, after every timing
        let _ = conn.await;
    }
    drop(done.stream);
    drop(fd);
    let (mut a, state) = assemble::attempt(
        step,
        local,
        remote,
        marks,
        target.tls,
        tls_facts,
        done.info,
        ev.bytes_out,
    );
    assemble::attach_tcp_info(
        &mut a,
        TcpInfoSnapshots {
            after_connect,
            at_end,
        },
    );
    Ok((a, state))
}

/// The stream, its marks so far, the remote, the local port and the
/// `TCP_INFO` snapshot taken when `connect(2)` returned.
type Established = (Stream, Marks, SocketAddr, u16, Option<rttlens_sys::TcpInfo>);

async fn establish(
    cfg: &ProbeConfig,
    target: &Target,
    step: ProbeStep,
    tls: Option<&tls::TlsClient>,
    phase: &Cell<ProbePhase>,
    start: Instant,
    caps: &RefCell<capture::Captures>,
) -> Result<Established, ProbeError> {
    phase.set(ProbePhase::Namelookup);
    let remote = resolve::resolve(target, &cfg.resolve, cfg.family, cfg.allow.as_deref()).await?;
    let namelookup = Instant::now();
    // the capture starts before the SYN; its start-up is cut out of the
    // attempt's clock (both marks move on by it)
    let skipped = caps.borrow_mut().ensure(remote)?;
    let (start, namelookup) = (start + skipped, namelookup + skipped);
    phase.set(ProbePhase::Connect);
    let bound = connect::bind(remote, cfg.tfo)?;
    let local_port = bound.local_port;
    let connect_start = Instant::now();
    let tcp = bound.connect(remote).await?;
    let connect = Instant::now();
    // a few µs of getsockopt, counted in the TLS phase
    let after_connect = rttlens_sys::tcp_info(&tcp).ok();
    let mut marks = Marks {
        start,
        namelookup,
        connect_start,
        connect,
        appconnect: None,
        pretransfer: connect,
        starttransfer: None,
        total: connect,
    };
    let stream = match tls {
        None => Stream::Plain(tcp),
        Some(t) => {
            phase.set(ProbePhase::Tls);
            let early = step.early_data();
            let config = if early { &t.early } else { &t.normal };
            let connector = tokio_rustls::TlsConnector::from(Arc::clone(config)).early_data(early);
            let name = ServerName::try_from(target.host.clone()).map_err(|e| {
                ProbeError::usage(format!("host '{}' as a TLS name: {e}", target.host))
            })?;
            let s = connector
                .connect(name, tcp)
                .await
                .map_err(|e| ProbeError::io(ProbePhase::Tls, "TLS handshake", &e))?;
            // with early data the connector returns before the handshake
            // (the request goes first); the Tap notes when it completes
            if !s.get_ref().1.is_handshaking() {
                marks.appconnect = Some(Instant::now());
            }
            Stream::Tls(Box::new(s))
        }
    };
    Ok((stream, marks, remote, local_port, after_connect))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations() {
        let t = Target::parse("https://h:8443/a/b?x").unwrap();
        assert_eq!(join_location(&t, "/c"), "https://h:8443/c");
        assert_eq!(join_location(&t, "c"), "https://h:8443/a/c");
        assert_eq!(join_location(&t, "http://o/"), "http://o/");
    }
}
