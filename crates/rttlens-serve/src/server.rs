//! The HTTP server: hyper 1's HTTP/1.1 connection server on tokio.
//!
//! - `GET /probe?target=URL&module=NAME[&debug=true]`: one probe
//!   ([`rttlens_probe::run`], on a blocking thread of its own: the probe
//!   runs its own current-thread runtime so its timestamps are not
//!   disturbed) answered as [`crate::exposition`]; `debug=true` answers
//!   the probe's text report and the metrics instead. A missing or bad
//!   target, or an unknown module: 400 naming it. More than
//!   `max_concurrent` probes at once: 503. With an allow-list
//!   (`--allow-target`, `allow_targets:`), a target whose address is
//!   outside it: 403, and no connection (the probe checks the address it
//!   resolved and connects to that one, [`rttlens_probe::AllowList`]).
//! - `GET /metrics`: [`crate::exporter`], in Prometheus' protobuf format
//!   when the scrape's `Accept` prefers it ([`wants_protobuf`]: Prometheus
//!   with native histograms on), else OpenMetrics text.
//! - `GET /`: a short index (the modules, links).
//!
//! Time limits: a probe gets its module's `timeout`, lowered to
//! Prometheus' scrape timeout (`X-Prometheus-Scrape-Timeout-Seconds`) less
//! [`SCRAPE_TIMEOUT_OFFSET`], as blackbox_exporter does; the probe keeps
//! to it itself (its `--max-time`), and the server waits
//! [`GRACE`] longer before it answers a failure without it (the probe's
//! thread then ends on its own, still holding its place in the limit).
//!
//! Bounds: a request's head (request line and headers) at most
//! [`MAX_HEAD`] bytes (hyper answers 431 past it), its query at most
//! [`MAX_QUERY`] (414), the head read within [`HEAD_TIMEOUT`] (a client
//! that sends it slowly is dropped). `/metrics` and `/` run on the
//! runtime's own workers and never wait for a probe slot. On Ctrl-C or
//! SIGTERM the server stops accepting, answers the scrapes in flight
//! (each within its limit and [`GRACE`]) and then ends.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rttlens_probe::{AllowList, ErrorKind, ProbeError, ProbePhase, Target};
use tokio::sync::Semaphore;

use crate::config::Config;
use crate::exporter::{ExporterMetrics, Outcome, PROTOBUF_CONTENT_TYPE};
use crate::exposition;
use crate::live::LiveRun;

mod stop;
pub use stop::{serve, Stopped, SAME_STOP};

/// What Prometheus' scrape timeout is lowered by to give the probe's
/// limit (blackbox_exporter's default `--timeout-offset`).
pub const SCRAPE_TIMEOUT_OFFSET: Duration = Duration::from_millis(500);

/// How long past its limit a probe may run (stopping its capture and
/// analysing it) before the server answers a failure without it.
pub const GRACE: Duration = Duration::from_secs(5);

/// The default of `--max-concurrent`.
pub const DEFAULT_MAX_CONCURRENT: usize = 8;

/// The most bytes a request's head (request line and headers) may take
/// (hyper's read buffer; past it hyper answers 431 and closes).
pub const MAX_HEAD: usize = 16 * 1024;

/// The most bytes a request's query may take (past it: 414).
pub const MAX_QUERY: usize = 4 * 1024;

/// How long a client may take to send a request's head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// What `rttlens serve` was asked to do.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// `--listen ADDR`.
    pub listen: SocketAddr,
    /// The modules (`--config FILE`, already loaded and checked).
    pub config: Config,
    /// `--max-concurrent N` (at least 1).
    pub max_concurrent: usize,
    /// `--interface IFACE`: analyse this interface's traffic live in the
    /// background and show it on `/metrics` ([`crate::live`]).
    pub interface: Option<String>,
    /// `--allow-target HOST|CIDR` (repeatable), joined with the
    /// configuration's `allow_targets`; both empty: any target.
    pub allow_targets: Vec<String>,
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// `--listen` could not be bound.
    #[error("--listen {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
    /// Another I/O error (the runtime, accepting).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// `--interface`: the live capture could not start (no such
    /// interface, no `CAP_NET_RAW`).
    #[error("--interface: {0}")]
    Live(#[from] rttlens_live::LiveError),
    /// An `--allow-target` entry is not a host name, address or network.
    #[error("--allow-target {0}")]
    AllowTarget(String),
}

/// Shared by every request.
#[derive(Debug)]
struct State {
    config: Config,
    allow: Option<Arc<AllowList>>,
    permits: Arc<Semaphore>,
    max_concurrent: usize,
    metrics: ExporterMetrics,
}

/// A bound server, not yet serving.
#[derive(Debug)]
pub struct Server {
    listener: std::net::TcpListener,
    state: Arc<State>,
    live: Option<LiveRun>,
}

impl Server {
    /// Bind `opts.listen` (port 0: any free port, see
    /// [`Server::local_addr`]). Needs no runtime.
    ///
    /// # Errors
    /// [`ServeError::Bind`].
    pub fn bind(opts: ServeOptions) -> Result<Server, ServeError> {
        let bind_err = |source| ServeError::Bind {
            addr: opts.listen,
            source,
        };
        let listener = std::net::TcpListener::bind(opts.listen).map_err(bind_err)?;
        listener.set_nonblocking(true).map_err(bind_err)?;
        let max = opts.max_concurrent.max(1);
        let entries: Vec<&String> = opts
            .config
            .allow_targets
            .iter()
            .chain(&opts.allow_targets)
            .collect();
        let allow = if entries.is_empty() {
            None
        } else {
            Some(Arc::new(
                AllowList::new(&entries).map_err(ServeError::AllowTarget)?,
            ))
        };
        let live = opts.interface.as_deref().map(LiveRun::start).transpose()?;
        let mut metrics = ExporterMetrics::new(max);
        if let Some(l) = &live {
            metrics.register_live(l.metrics());
        }
        Ok(Server {
            listener,
            state: Arc::new(State {
                config: opts.config,
                allow,
                permits: Arc::new(Semaphore::new(max)),
                max_concurrent: max,
                metrics,
            }),
            live,
        })
    }

    /// The address bound.
    pub fn local_addr(&self) -> SocketAddr {
        // a bound listener has an address
        self.listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// The longest a scrape may take: the longest module timeout and
    /// [`GRACE`].
    fn longest_scrape(&self) -> Duration {
        let longest = self
            .state
            .config
            .modules
            .values()
            .filter_map(|m| m.timeout().ok())
            .max()
            .unwrap_or(crate::config::DEFAULT_TIMEOUT);
        longest + GRACE
    }

    /// Serve until `shutdown` completes (inside a tokio runtime), then
    /// stop accepting, let the scrapes in flight finish (at most
    /// the longest scrape timeout of any module) and return.
    ///
    /// # Errors
    /// The listener cannot join the runtime.
    pub async fn run_until<F: Future<Output = ()>>(self, shutdown: F) -> Result<(), ServeError> {
        let drain = self.longest_scrape() + Duration::from_secs(1);
        let listener = tokio::net::TcpListener::from_std(self.listener)?;
        let live = self.live;
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        tokio::pin!(shutdown);
        loop {
            let (stream, _) = tokio::select! {
                () = &mut shutdown => {
                    drop(listener);
                    // idle connections close now; one with a request in
                    // flight answers it first
                    if tokio::time::timeout(drain, graceful.shutdown()).await.is_err() {
                        eprintln!(
                            "rttlens serve: scrapes still open after {:.0} s; stopping",
                            drain.as_secs_f64()
                        );
                    }
                    if let Some(l) = live {
                        // the analysis finishes the connections still open
                        let _ = tokio::task::spawn_blocking(move || l.stop()).await;
                    }
                    return Ok(());
                }
                r = listener.accept() => match r {
                    Ok(s) => s,
                    // a connection that failed before accept (reset,
                    // out of descriptors for a moment): go on
                    Err(e) => {
                        eprintln!("rttlens serve: accept: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let state = Arc::clone(&self.state);
            let service = hyper::service::service_fn(move |req| {
                let state = Arc::clone(&state);
                async move { Ok::<_, Infallible>(handle(state, req).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .max_buf_size(MAX_HEAD)
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            let conn = graceful.watch(conn);
            tokio::spawn(async move {
                // a client that goes away mid-request is not an error here
                let _ = conn.await;
            });
        }
    }
}

type Answer = Response<Full<Bytes>>;

fn answer(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Answer {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn text(status: StatusCode, body: impl Into<String>) -> Answer {
    let mut b: String = body.into();
    if !b.ends_with('\n') {
        b.push('\n');
    }
    answer(status, "text/plain; charset=utf-8", b)
}

async fn handle(state: Arc<State>, req: Request<Incoming>) -> Answer {
    if req.method() != Method::GET {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{} {}: only GET", req.method(), req.uri().path()),
        );
    }
    match req.uri().path() {
        "/" => answer(StatusCode::OK, "text/html; charset=utf-8", index(&state)),
        "/metrics" => metrics(&state, &req),
        "/probe" => probe(&state, &req).await,
        other => text(
            StatusCode::NOT_FOUND,
            format!("{other}: not found (try /probe?target=URL&module=NAME, /metrics or /)"),
        ),
    }
}

/// `/metrics`: protobuf when the scrape prefers it, else OpenMetrics text.
fn metrics(state: &State, req: &Request<Incoming>) -> Answer {
    let accept = req
        .headers()
        .get_all(ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    if wants_protobuf(&accept) {
        match state.metrics.encode_protobuf() {
            Ok(body) => return answer(StatusCode::OK, PROTOBUF_CONTENT_TYPE, body),
            Err(e) => eprintln!("rttlens serve: /metrics in protobuf: {e}; answering text"),
        }
    }
    answer(
        StatusCode::OK,
        exposition::CONTENT_TYPE,
        state.metrics.encode(),
    )
}

/// Whether an `Accept` header (RFC 9110 §12.5.1) prefers Prometheus'
/// protobuf exposition: it names `application/vnd.google.protobuf` with
/// `proto=io.prometheus.client.MetricFamily` and `encoding=delimited` at a
/// weight (`q`, default 1) above 0 and at least that of any other range it
/// names. Prometheus asks so (`q=0.7` before the text formats' 0.5 and
/// lower) when its native histograms are on; otherwise it, curl and a
/// browser get text.
pub fn wants_protobuf(accept: &str) -> bool {
    let mut proto_q: Option<f64> = None;
    let mut other_q = 0.0f64;
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        if media.is_empty() {
            continue;
        }
        let (mut q, mut proto, mut delimited) = (1.0f64, false, false);
        for p in parts {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            let v = v.trim().trim_matches('"');
            match k.trim().to_ascii_lowercase().as_str() {
                "q" => q = v.parse().unwrap_or(0.0),
                "proto" => proto = v == "io.prometheus.client.MetricFamily",
                "encoding" => delimited = v == "delimited",
                _ => {}
            }
        }
        if media == "application/vnd.google.protobuf" {
            if proto && delimited {
                proto_q = Some(proto_q.unwrap_or(0.0).max(q));
            }
        } else {
            other_q = other_q.max(q);
        }
    }
    proto_q.is_some_and(|q| q > 0.0 && q >= other_q)
}

/// The parameters of `/probe` (the last of each name wins).
#[derive(Debug, Default, PartialEq, Eq)]
struct Params {
    target: Option<String>,
    module: Option<String>,
    debug: bool,
}

fn params(query: Option<&str>) -> Result<Params, String> {
    let mut p = Params::default();
    for pair in query.unwrap_or("").split('&').filter(|s| !s.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let v = percent_decode(v).ok_or_else(|| format!("parameter '{k}': bad %-encoding"))?;
        match k {
            "target" => p.target = Some(v),
            "module" => p.module = Some(v),
            "debug" => p.debug = v == "true" || v == "1",
            _ => {}
        }
    }
    Ok(p)
}

/// `application/x-www-form-urlencoded` value decoding (`+` is a space);
/// `None` for a bad escape or bytes that are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = b.get(i + 1..i + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The probe's limit: the module's timeout, lowered to the scrape's.
fn limit(module_timeout: Duration, req: &Request<Incoming>) -> Duration {
    let scrape = req
        .headers()
        .get("x-prometheus-scrape-timeout-seconds")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(|s| Duration::from_secs_f64(s).saturating_sub(SCRAPE_TIMEOUT_OFFSET));
    match scrape {
        Some(s) if s < module_timeout => s.max(Duration::from_millis(100)),
        _ => module_timeout,
    }
}

async fn probe(state: &Arc<State>, req: &Request<Incoming>) -> Answer {
    let bad = |module: &str, msg: String| {
        state.metrics.request(module, Outcome::BadRequest);
        text(StatusCode::BAD_REQUEST, msg)
    };
    if req.uri().query().is_some_and(|q| q.len() > MAX_QUERY) {
        state.metrics.request("", Outcome::BadRequest);
        return text(
            StatusCode::URI_TOO_LONG,
            format!("the query is over {MAX_QUERY} bytes"),
        );
    }
    let p = match params(req.uri().query()) {
        Ok(p) => p,
        Err(e) => return bad("", e),
    };
    let Some(target) = p.target.filter(|t| !t.is_empty()) else {
        return bad(
            "",
            "target parameter is missing (/probe?target=URL&module=NAME)".into(),
        );
    };
    // no module named: blackbox_exporter's default, when it is a module
    let name = p.module.filter(|m| !m.is_empty()).or_else(|| {
        state
            .config
            .modules
            .contains_key(crate::config::DEFAULT_MODULE)
            .then(|| crate::config::DEFAULT_MODULE.to_string())
    });
    let Some(name) = name else {
        return bad(
            "",
            "module parameter is missing (/probe?target=URL&module=NAME)".into(),
        );
    };
    let Some(module) = state.config.modules.get(&name) else {
        let known: Vec<&str> = state.config.modules.keys().map(String::as_str).collect();
        return bad(
            "",
            format!("unknown module '{name}' (known: {})", known.join(", ")),
        );
    };
    if let Err(e) = Target::parse(&target) {
        return bad(&name, format!("target: {}", e.message));
    }
    let timeout = match module.timeout() {
        Ok(t) => limit(t, req),
        Err(e) => return bad(&name, e),
    };
    let mut cfg = match module.probe_config(&target, Some(timeout)) {
        Ok(c) => c,
        Err(e) => return bad(&name, format!("module '{name}': {e}")),
    };
    cfg.allow = state.allow.clone();
    let Ok(permit) = Arc::clone(&state.permits).try_acquire_owned() else {
        state.metrics.request(&name, Outcome::Overloaded);
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "{} probes are running already (--max-concurrent {}): try again later",
                state.max_concurrent, state.max_concurrent
            ),
        );
    };
    state.metrics.in_flight(1);
    let started = Instant::now();
    let st = Arc::clone(state);
    let job = tokio::task::spawn_blocking(move || {
        let r = rttlens_probe::run(&cfg);
        st.metrics.in_flight(-1);
        drop(permit);
        r
    });
    let result = match tokio::time::timeout(timeout + GRACE, job).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => Err(ProbeError::new(
            ProbePhase::Setup,
            ErrorKind::Io,
            format!("the probe's thread ended abnormally: {e}"),
        )),
        Err(_) => Err(ProbeError::new(
            ProbePhase::Setup,
            ErrorKind::Timeout,
            format!(
                "the probe did not end within its limit of {:.1} s and {} s more",
                timeout.as_secs_f64(),
                GRACE.as_secs()
            ),
        )),
    };
    let took = started.elapsed();
    if let Some(e) = result
        .as_ref()
        .err()
        .filter(|e| e.kind == ErrorKind::Forbidden)
    {
        state.metrics.request(&name, Outcome::Forbidden);
        eprintln!("rttlens serve: module={name} target={target}: {e}");
        return text(
            StatusCode::FORBIDDEN,
            format!("target {target}: {}", e.message),
        );
    }
    let metrics = exposition::render(module, &result, took);
    let ok = matches!(&result, Ok(r) if exposition::success(module, r));
    state.metrics.request(
        &name,
        if ok {
            Outcome::Success
        } else {
            Outcome::Failure
        },
    );
    state.metrics.observe(&name, took.as_secs_f64());
    if let Err(e) = &result {
        // the message as a log line, never a label (unbounded values)
        eprintln!("rttlens serve: module={name} target={target}: {e}");
    }
    if p.debug {
        return text(
            StatusCode::OK,
            debug_text(&name, &target, &result, &metrics),
        );
    }
    answer(StatusCode::OK, exposition::CONTENT_TYPE, metrics)
}

/// `?debug=true`: the probe's text report (or its error), then the
/// metrics the scrape would have got.
fn debug_text(
    module: &str,
    target: &str,
    result: &Result<rttlens_probe::ProbeReport, ProbeError>,
    metrics: &str,
) -> String {
    let mut out = format!("rttlens serve: module {module}, target {target}\n\n");
    match result {
        Ok(r) => {
            let mut buf = Vec::new();
            match rttlens_report::probe::write_text(r, &mut buf) {
                Ok(()) => out.push_str(&String::from_utf8_lossy(&buf)),
                Err(e) => out.push_str(&format!("(the report could not be written: {e})\n")),
            }
        }
        Err(e) => out.push_str(&format!("probe failed: {e}\n")),
    }
    out.push_str("\nMetrics that would have been returned:\n");
    out.push_str(metrics);
    out
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn index(state: &State) -> String {
    let mut modules = String::new();
    for name in state.config.modules.keys() {
        modules.push_str(&format!("<li><code>{}</code></li>\n", html_escape(name)));
    }
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>rttlens serve</title></head>\n\
         <body>\n<h1>rttlens serve</h1>\n\
         <p>A Prometheus exporter of rttlens probes: where a connection's time went, in round trips.</p>\n\
         <p>Probe: <code>/probe?target=https://example.com/&amp;module=NAME</code> \
         (add <code>&amp;debug=true</code> for the probe's report). \
         The exporter's own metrics: <a href=\"/metrics\">/metrics</a>.</p>\n\
         <p>Modules:</p>\n<ul>\n{modules}</ul>\n\
         <p>At most {} probes at once.</p>\n</body></html>\n",
        state.max_concurrent
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters() {
        let p = params(Some(
            "target=https%3A%2F%2Fa.test%2Fx%3Fy%3D1&module=m&debug=true",
        ))
        .unwrap();
        assert_eq!(p.target.as_deref(), Some("https://a.test/x?y=1"));
        assert_eq!(p.module.as_deref(), Some("m"));
        assert!(p.debug);
        assert_eq!(params(None).unwrap(), Params::default());
        assert!(params(Some("target=%zz")).is_err());
        assert_eq!(percent_decode("a+b%20c").as_deref(), Some("a b c"));
        assert_eq!(percent_decode("%"), None);
        assert_eq!(percent_decode("%ff"), None);
    }

    #[test]
    fn accept_negotiation() {
        // Prometheus 2.42 with --enable-feature=native-histograms
        assert!(wants_protobuf(
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
             encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
        ));
        // and without it; curl; a browser; nothing
        for text in [
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
             version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
            "*/*",
            "text/html,application/xhtml+xml,*/*;q=0.8",
            "",
            // protobuf, but not the delimited MetricFamily stream
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily",
            // asked for, but below text
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
             encoding=delimited;q=0.2,text/plain;q=0.5",
            // refused
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
             encoding=delimited;q=0",
        ] {
            assert!(!wants_protobuf(text), "{text}");
        }
    }

    #[test]
    fn escapes() {
        assert_eq!(html_escape("<a&\">"), "&lt;a&amp;&quot;&gt;");
    }
}
