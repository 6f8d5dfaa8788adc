//! The built-in TLS/HTTP server: rustls 0.23 + tokio-rustls 0.26 + hyper 1
//! (`hyper::server::conn::http1`, and `http2` when
//! [`ServerConfig::http2`] offers it in ALPN), with the knobs nginx lacks.
//!
//! Routes (HTTP/1.1 keep-alive, or HTTP/2 streams):
//! - `GET /size/N`: `N` bytes of `x` (`Content-Length: N`, at most
//!   [`MAX_BODY_BYTES`]);
//! - `GET /`: a small HTML page;
//! - anything else: 404.
//!
//! Every response waits [`ServerConfig::think`] first, and `?think=MS` in
//! a request's query adds that many ms to it (at most 10 s): a slow request
//! among quick ones on a keep-alive connection. With
//! [`ServerConfig::server_timing`] it says how long it took.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rustls::pki_types::CertificateDer;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;

use crate::cert::SelfSigned;
use crate::flight::FlightStream;
use crate::{Error, Result, TlsVersion};

pub use crate::flight::{HandshakeWrites, SECOND_WRITE_BYTES};

/// Largest body `GET /size/N` serves: 1 GiB.
pub const MAX_BODY_BYTES: usize = 1 << 30;

/// The knobs of the built-in server. `Default` gives a plain, well-behaved
/// server: TLS 1.2 and 1.3, TCP_NODELAY on, one flight write, 16 KiB
/// records, stateless tickets, no 0-RTT, no TFO, kernel SO_SNDBUF, no think
/// time.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// TCP_NODELAY on accepted sockets (`false` = Nagle on, RFC 896).
    /// Default `true`, like nginx's `tcp_nodelay on`.
    pub nodelay: bool,
    /// The server flight in one or two writes. Default [`HandshakeWrites::One`].
    pub handshake_writes: HandshakeWrites,
    /// Maximum TLS plaintext record size in bytes, its 5-byte header
    /// included (rustls `ServerConfig::max_fragment_size`; valid
    /// 32..=16389): a record carries at most `record_size - 5` bytes of
    /// plaintext, and TLS 1.3 adds 17 bytes on the wire (inner content type
    /// and AEAD tag, RFC 8446 §5.2), so 1400 gives 1417-byte records. Applies
    /// to handshake and application records. Default `None`: 16 KiB of
    /// plaintext per record (RFC 8446 §5.1).
    pub record_size: Option<usize>,
    /// Session resumption (RFC 8446 §2.2, §4.6.1; RFC 5077 for TLS 1.2).
    /// `true` (default): stateless tickets (rustls `Ticketer`), or, when
    /// [`early_data`](Self::early_data) > 0, single-use stateful tickets
    /// (rustls accepts 0-RTT only with those, as its anti-replay measure).
    /// `false`: no tickets, no session cache, every handshake is full.
    pub tickets: bool,
    /// 0-RTT: the largest early data accepted, in bytes (rustls
    /// `max_early_data_size`, RFC 8446 §4.2.10). Default 0 = off. Needs
    /// `tickets` and TLS 1.3. The request read as early data is answered
    /// once the handshake completes (no 0.5-RTT data).
    pub early_data: u32,
    /// Versions offered. Default both. Must not be empty.
    pub tls_versions: Vec<TlsVersion>,
    /// TCP Fast Open queue length on the listener (`TCP_FASTOPEN`, RFC
    /// 7413). Default `None` = off. The namespace's `net.ipv4.tcp_fastopen`
    /// must have bit 0x2 for the server side.
    pub tfo: Option<u32>,
    /// SO_SNDBUF on accepted sockets, in bytes, as passed to
    /// `setsockopt(2)` (the kernel doubles it, `sock_setsockopt`). Default
    /// `None` = the kernel's autotuned `tcp_wmem`.
    pub sndbuf: Option<usize>,
    /// An artificial delay before each response. Default zero.
    pub think: Duration,
    /// Each response says how long its handler took (`Server-Timing:
    /// app;dur=MS`, W3C Server Timing), timed from the handler's call (the
    /// request head read) to the response built. Default `false`.
    pub server_timing: bool,
    /// Whether `?think=MS` in a request adds a think time to it. Default
    /// `true` (the lab's fixed variant of a slow request turns it off).
    pub query_think: bool,
    /// Serve HTTP/1.1 in cleartext, no TLS. Default `false`.
    pub plain_http: bool,
    /// Offer HTTP/2 over TLS (ALPN `h2` before `http/1.1`, RFC 9113 §3.2)
    /// and speak it on the connections whose client picks it. Default
    /// `false`: ALPN `http/1.1` only.
    pub http2: bool,
    /// listen(2) backlog. Default 1024.
    pub backlog: i32,
    /// Stop accepting for a while once, as a server stuck in a garbage
    /// collection or a blocking call would. Default `None`.
    pub accept_stall: Option<AcceptStall>,
    /// The certificate and key. Default `None`: a fresh self-signed ECDSA
    /// P-256 one ([`SelfSigned::generate`]).
    pub certificate: Option<SelfSigned>,
    /// Handshakes as a CPU-bound server does them: each ClientHello waits
    /// for one of a few handshake workers, which spends a fixed time on it
    /// before the ServerHello leaves (an RSA-4096 signature takes a core
    /// several milliseconds; a Go or nginx server has as many workers as
    /// cores). Default `None`: every handshake at once, at rustls' own cost.
    pub handshake_cpu: Option<HandshakeCpu>,
}

/// Handshake workers and the time each handshake holds one
/// ([`ServerConfig::handshake_cpu`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandshakeCpu {
    /// Handshakes served at once.
    pub workers: usize,
    /// Time a handshake holds its worker, between the ClientHello read and
    /// the ServerHello written.
    pub cost: Duration,
}

/// A pause of the accept loop: after the `after`-th accepted connection,
/// nothing is accepted for `pause`. Connections already accepted are
/// served meanwhile; new ones wait in the kernel's accept queue (their TCP
/// handshake completes, their ClientHello is not read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcceptStall {
    /// Accepted connections before the pause.
    pub after: u64,
    /// How long accepting stops.
    pub pause: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            nodelay: true,
            handshake_writes: HandshakeWrites::One,
            record_size: None,
            tickets: true,
            early_data: 0,
            tls_versions: TlsVersion::ALL.to_vec(),
            tfo: None,
            sndbuf: None,
            think: Duration::ZERO,
            server_timing: false,
            query_think: true,
            plain_http: false,
            http2: false,
            backlog: 1024,
            accept_stall: None,
            certificate: None,
            handshake_cpu: None,
        }
    }
}

/// What the server saw, for tests and the lab's reports.
#[derive(Debug, Default)]
pub struct ServerStats {
    connections: AtomicU64,
    early_data_bytes: AtomicU64,
    handshake_writes: Arc<Mutex<Vec<Vec<usize>>>>,
}

impl ServerStats {
    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// Bytes of TLS early data (0-RTT) received, over all connections.
    pub fn early_data_bytes(&self) -> u64 {
        self.early_data_bytes.load(Ordering::Relaxed)
    }

    /// For each completed TLS handshake (in completion order), the sizes in
    /// bytes of the `write` calls the server made during it: one entry per
    /// system call that accepted data.
    pub fn handshake_writes(&self) -> Vec<Vec<usize>> {
        self.handshake_writes
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default()
    }
}

/// A bound, not yet running, built-in server.
pub struct Server {
    listener: std::net::TcpListener,
    local_addr: SocketAddr,
    cfg: ServerConfig,
    tls: Option<Arc<rustls::ServerConfig>>,
    cert: SelfSigned,
    stats: Arc<ServerStats>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("local_addr", &self.local_addr)
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Generates a certificate, builds the TLS configuration, and binds and
    /// listens on `addr` (port 0 = any free port) with SO_REUSEADDR and, if
    /// asked, TCP_FASTOPEN.
    ///
    /// # Errors
    /// [`Error::Config`] for impossible knobs (no TLS version, 0-RTT without
    /// tickets or TLS 1.3, a record size rustls refuses),
    /// [`Error::AddrInUse`], [`Error::SockOpt`], [`Error::Io`].
    pub fn bind(addr: SocketAddr, cfg: ServerConfig) -> Result<Server> {
        let cert = match &cfg.certificate {
            Some(c) => c.clone(),
            None => SelfSigned::generate()?,
        };
        let tls = if cfg.plain_http {
            None
        } else {
            Some(Arc::new(tls_config(&cfg, &cert)?))
        };
        let domain = socket2::Domain::for_address(addr);
        let sock =
            socket2::Socket::new(domain, socket2::Type::STREAM, Some(socket2::Protocol::TCP))
                .map_err(Error::io("creating the listening socket"))?;
        sock.set_reuse_address(true)
            .map_err(|source| Error::SockOpt {
                option: "SO_REUSEADDR",
                source,
            })?;
        if let Some(qlen) = cfg.tfo {
            rttlens_sys::set_tcp_fastopen(&sock, qlen).map_err(|source| Error::SockOpt {
                option: "TCP_FASTOPEN",
                source,
            })?;
        }
        sock.bind(&addr.into()).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AddrInUse {
                Error::AddrInUse { addr }
            } else {
                Error::io(format!("binding {addr}"))(e)
            }
        })?;
        sock.listen(cfg.backlog)
            .map_err(Error::io(format!("listening on {addr}")))?;
        sock.set_nonblocking(true)
            .map_err(Error::io("making the listener non-blocking"))?;
        let listener: std::net::TcpListener = sock.into();
        let local_addr = listener.local_addr().map_err(Error::io("local address"))?;
        Ok(Server {
            listener,
            local_addr,
            cfg,
            tls,
            cert,
            stats: Arc::default(),
        })
    }

    /// The address actually bound (with the port chosen by the kernel).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The server's self-signed certificate, for a client's root store.
    pub fn cert_der(&self) -> CertificateDer<'static> {
        self.cert.cert_der()
    }

    /// Counters shared with the running server.
    pub fn stats(&self) -> Arc<ServerStats> {
        Arc::clone(&self.stats)
    }

    /// Serves until `shutdown` completes, then stops accepting and aborts
    /// the connections still open. Must run inside a tokio runtime.
    ///
    /// # Errors
    /// [`Error::Io`] if the listener cannot be registered with tokio.
    pub async fn run_until<F: Future<Output = ()>>(self, shutdown: F) -> Result<()> {
        let listener = tokio::net::TcpListener::from_std(self.listener)
            .map_err(Error::io("registering the listener"))?;
        let cfg = Arc::new(self.cfg);
        let acceptor = self.tls.map(tokio_rustls::TlsAcceptor::from);
        // the handshake workers (`handshake_cpu`), shared by the connections
        let workers = cfg
            .handshake_cpu
            .map(|h| Arc::new(tokio::sync::Semaphore::new(h.workers.max(1))));
        let mut conns = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
                accepted = listener.accept() => {
                    let (stream, _peer) = match accepted {
                        Ok(a) => a,
                        // ECONNABORTED, EMFILE…: keep serving the others.
                        Err(_) => continue,
                    };
                    let n = self.stats.connections.fetch_add(1, Ordering::Relaxed) + 1;
                    if stream.set_nodelay(cfg.nodelay).is_err() {
                        continue;
                    }
                    if let Some(bytes) = cfg.sndbuf {
                        if socket2::SockRef::from(&stream).set_send_buffer_size(bytes).is_err() {
                            continue;
                        }
                    }
                    let cfg = Arc::clone(&cfg);
                    let acceptor = acceptor.clone();
                    let stats = Arc::clone(&self.stats);
                    let stall = cfg.accept_stall.filter(|s| s.after == n);
                    let workers = workers.clone();
                    conns.spawn(async move {
                        // A failed connection is the client's business.
                        let _ = serve_connection(stream, acceptor, cfg, stats, workers).await;
                    });
                    if let Some(s) = stall {
                        // only this loop sleeps: the connections run on
                        tokio::time::sleep(s.pause).await;
                    }
                }
            }
        }
        conns.shutdown().await;
        Ok(())
    }
}

fn tls_config(cfg: &ServerConfig, cert: &SelfSigned) -> Result<rustls::ServerConfig> {
    if cfg.tls_versions.is_empty() {
        return Err(Error::Config(
            "tls_versions: at least one version is needed".into(),
        ));
    }
    if cfg.early_data > 0 && !cfg.tickets {
        return Err(Error::Config(
            "early_data > 0 needs tickets (resumption)".into(),
        ));
    }
    if cfg.early_data > 0 && !cfg.tls_versions.contains(&TlsVersion::Tls13) {
        return Err(Error::Config("early_data > 0 needs TLS 1.3".into()));
    }
    let mut versions: Vec<&'static rustls::SupportedProtocolVersion> = Vec::new();
    if cfg.tls_versions.contains(&TlsVersion::Tls13) {
        versions.push(&rustls::version::TLS13);
    }
    if cfg.tls_versions.contains(&TlsVersion::Tls12) {
        versions.push(&rustls::version::TLS12);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert_der()], cert.key_der())
        .map_err(|e| Error::Tls(e.to_string()))?;
    tls.alpn_protocols = if cfg.http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    tls.max_fragment_size = cfg.record_size;
    if cfg.tickets {
        if cfg.early_data == 0 {
            tls.ticketer =
                rustls::crypto::ring::Ticketer::new().map_err(|e| Error::Tls(e.to_string()))?;
        }
        // else: the default in-memory session cache (256 entries) issues
        // single-use stateful tickets, which rustls requires for 0-RTT.
        tls.max_early_data_size = cfg.early_data;
    } else {
        tls.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        tls.send_tls13_tickets = 0;
    }
    Ok(tls)
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    cfg: Arc<ServerConfig>,
    stats: Arc<ServerStats>,
    workers: Option<Arc<tokio::sync::Semaphore>>,
) -> Result<()> {
    let Some(acceptor) = acceptor else {
        return serve_http(stream, cfg, false).await;
    };
    let wrapped = FlightStream::new(stream, cfg.handshake_writes);
    let mut tls = match (cfg.handshake_cpu, workers) {
        (Some(cpu), Some(workers)) => {
            // the ClientHello read, then a worker's time before the
            // ServerHello: rustls writes nothing until `into_stream`
            let start =
                tokio_rustls::LazyConfigAcceptor::new(rustls::server::Acceptor::default(), wrapped)
                    .await
                    .map_err(Error::io("reading the ClientHello"))?;
            let _worker = workers
                .acquire()
                .await
                .map_err(|e| Error::Config(e.to_string()))?;
            tokio::time::sleep(cpu.cost).await;
            start
                .into_stream(Arc::clone(acceptor.config()))
                .await
                .map_err(Error::io("TLS handshake"))?
        }
        _ => acceptor
            .accept(wrapped)
            .await
            .map_err(Error::io("TLS handshake"))?,
    };
    let (io, conn) = tls.get_mut();
    io.finish_handshake(&stats.handshake_writes);
    let h2 = conn.alpn_protocol() == Some(b"h2".as_slice());
    // Early data stays readable in rustls after the handshake; hand it to
    // hyper ahead of the rest of the stream.
    let mut early = Vec::new();
    if let Some(mut reader) = conn.early_data() {
        std::io::Read::read_to_end(&mut reader, &mut early)
            .map_err(Error::io("reading early data"))?;
    }
    stats
        .early_data_bytes
        .fetch_add(early.len() as u64, Ordering::Relaxed);
    serve_http(Prefixed::new(early, tls), cfg, h2).await
}

/// HTTP/1.1 on `stream`, or HTTP/2 when ALPN agreed on `h2`.
async fn serve_http<S>(stream: S, cfg: Arc<ServerConfig>, h2: bool) -> Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
        // `?think=MS` adds a think time to this one request (at most 10 s)
        let timed = cfg.server_timing.then(std::time::Instant::now);
        let asked = if cfg.query_think {
            query_think(req.uri().query())
        } else {
            Duration::ZERO
        };
        let think = cfg.think + asked;
        async move {
            if !think.is_zero() {
                tokio::time::sleep(think).await;
            }
            let mut r = respond(req.uri().path());
            if let Some(v) = timed.and_then(|t| server_timing(t.elapsed()).parse().ok()) {
                r.headers_mut().insert("server-timing", v);
            }
            Ok::<_, std::convert::Infallible>(r)
        }
    });
    let io = TokioIo::new(stream);
    let served = if h2 {
        hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .serve_connection(io, service)
            .await
    } else {
        hyper::server::conn::http1::Builder::new()
            .serve_connection(io, service)
            .await
    };
    served.map_err(|e| Error::io("HTTP")(std::io::Error::other(e)))
}

/// A `Server-Timing` value saying the handler took `took` (W3C Server
/// Timing: `app;dur=MS`, ms with µs precision).
pub(crate) fn server_timing(took: Duration) -> String {
    format!("app;dur={:.3}", took.as_secs_f64() * 1000.0)
}

/// The think time `?think=MS` in a request's query adds (at most 10 s;
/// zero without it).
pub(crate) fn query_think(query: Option<&str>) -> Duration {
    query
        .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("think=")))
        .and_then(|ms| ms.parse::<u64>().ok())
        .map_or(Duration::ZERO, |ms| Duration::from_millis(ms.min(10_000)))
}

/// The response to a path: `/size/N`, `/`, or 404 (a query such as
/// `?think=MS` is read by the service, not here).
fn respond(path: &str) -> Response<Full<Bytes>> {
    let (status, ctype, body) = route(path);
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    if let Ok(v) = ctype.parse() {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

/// What a path is answered with — status, content type and body — shared
/// by the TCP server and the QUIC one ([`crate::quic`]): `/size/N`, `/`,
/// or 404.
pub(crate) fn route(path: &str) -> (StatusCode, &'static str, Bytes) {
    if path == "/" {
        return (
            StatusCode::OK,
            "text/html",
            Bytes::from_static(b"<!doctype html><title>rttlens lab</title><p>rttlens lab server: GET /size/N for N bytes.\n"),
        );
    }
    match path.strip_prefix("/size/").map(str::parse::<usize>) {
        Some(Ok(n)) if n <= MAX_BODY_BYTES => (
            StatusCode::OK,
            "application/octet-stream",
            Bytes::from(vec![b'x'; n]),
        ),
        Some(_) => (
            StatusCode::BAD_REQUEST,
            "text/plain",
            Bytes::from(format!("size must be an integer ≤ {MAX_BODY_BYTES}\n")),
        ),
        None => (
            StatusCode::NOT_FOUND,
            "text/plain",
            Bytes::from_static(b"not found\n"),
        ),
    }
}

/// A stream that yields `prefix` before reading from `inner` (the 0-RTT
/// request, read out of rustls, goes first).
struct Prefixed<S> {
    prefix: Vec<u8>,
    pos: usize,
    inner: S,
}

impl<S> Prefixed<S> {
    fn new(prefix: Vec<u8>, inner: S) -> Self {
        Prefixed {
            prefix,
            pos: 0,
            inner,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.pos < self.prefix.len() {
            let n = (self.prefix.len() - self.pos).min(buf.remaining());
            let start = self.pos;
            buf.put_slice(&self.prefix[start..start + n]);
            self.pos += n;
            return std::task::Poll::Ready(Ok(()));
        }
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
