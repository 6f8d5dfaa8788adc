//! The built-in QUIC/HTTP/3 server: quinn 0.11 (rustls 0.23 with ring) and
//! h3 0.0.8 over h3-quinn, with the knobs that cost a QUIC handshake its
//! extra round trips (issue 25).
//!
//! Routes, as the TCP server's ([`crate::builtin`]): `GET /size/N` (N bytes
//! of `x`), `GET /` (a small page), 404 otherwise (a request body, with
//! any method but GET and HEAD, is read to its end first); every response waits
//! [`QuicConfig::think`] first, plus `?think=MS` from the query (at most
//! 10 s).
//!
//! Knobs and the round trip each one can cost:
//! - [`QuicConfig::intermediates`], [`QuicConfig::cert_padding`]: the
//!   certificate chain's size. Before the client's address is validated the
//!   server may send at most 3× the bytes it received (RFC 9000 §8.1); a
//!   client Initial is 1200 bytes or more (RFC 9000 §14.1), so a first
//!   flight beyond ~3600 bytes waits for the client's next datagram.
//! - [`QuicConfig::retry`]: a Retry to every address not yet validated
//!   (RFC 9000 §8.1.2): one more round trip, after which the address is
//!   validated.
//! - [`QuicConfig::kx_groups`]: the key-exchange groups the server accepts;
//!   a client whose key share is in none of them gets a HelloRetryRequest
//!   (RFC 8446 §4.1.4): one more round trip.
//! - [`QuicConfig::receive_window`], [`QuicConfig::stream_receive_window`]:
//!   the server's `initial_max_data` and `initial_max_stream_data_*`
//!   transport parameters (RFC 9000 §18.2): how much the *client* may send
//!   before the server raises them.
//! - [`QuicConfig::early_data`]: 0-RTT (RFC 9001 §4.6) accepted or not.
//!
//! [`QuicServer::bind`] binds the UDP socket on the calling thread (so in
//! that thread's network namespace); [`QuicServer::run_until`] serves on
//! the tokio runtime it runs in.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use rustls::pki_types::CertificateDer;
use tokio::task::JoinSet;

use crate::builtin::{query_think, route, server_timing};
use crate::cert::CertChain;
use crate::{Error, Result};

/// A key-exchange group (RFC 8446 §4.2.7) the server may accept, as
/// rustls' ring provider implements it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KxGroup {
    /// X25519 (RFC 7748): what rustls, quinn, curl and browsers send a key
    /// share for first.
    X25519,
    /// secp256r1 / NIST P-256.
    Secp256r1,
    /// secp384r1 / NIST P-384.
    Secp384r1,
}

impl KxGroup {
    fn rustls(self) -> &'static dyn rustls::crypto::SupportedKxGroup {
        use rustls::crypto::ring::kx_group;
        match self {
            KxGroup::X25519 => kx_group::X25519,
            KxGroup::Secp256r1 => kx_group::SECP256R1,
            KxGroup::Secp384r1 => kx_group::SECP384R1,
        }
    }
}

impl std::str::FromStr for KxGroup {
    type Err = Error;

    /// `x25519`, `secp256r1` (`p-256`, `p256`), `secp384r1` (`p-384`,
    /// `p384`), case-insensitive.
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "x25519" => Ok(KxGroup::X25519),
            "secp256r1" | "p-256" | "p256" => Ok(KxGroup::Secp256r1),
            "secp384r1" | "p-384" | "p384" => Ok(KxGroup::Secp384r1),
            _ => Err(Error::Config(format!(
                "kx_groups: '{s}' is not x25519, secp256r1 or secp384r1"
            ))),
        }
    }
}

/// The knobs of the QUIC server. `Default` gives a plain, well-behaved
/// server: a one-certificate chain, no Retry, quinn's windows, every group
/// of rustls' ring provider, resumption on, no 0-RTT, no think time.
#[derive(Clone, Debug)]
pub struct QuicConfig {
    /// Intermediate CA certificates between the leaf and the root, all
    /// sent in the server's first flight (≈ 400 B of DER each, ECDSA
    /// P-256). Default 0.
    pub intermediates: usize,
    /// Bytes of padding in the leaf certificate (a non-critical extension,
    /// [`CertChain::generate`]). Default 0.
    pub cert_padding: usize,
    /// Answer every Initial from an address not yet validated with a Retry
    /// (quinn `Incoming::retry()`, RFC 9000 §8.1.2). Default `false`.
    pub retry: bool,
    /// `initial_max_data` (RFC 9000 §18.2), in bytes: how much the client
    /// may send on all streams together before a MAX_DATA (quinn
    /// `TransportConfig::receive_window`). Default `None`: quinn's (2⁶²−1).
    pub receive_window: Option<u64>,
    /// `initial_max_stream_data_bidi_local`, `_bidi_remote` and `_uni`
    /// (RFC 9000 §18.2), in bytes: how much the client may send on one
    /// stream before a MAX_STREAM_DATA (quinn
    /// `TransportConfig::stream_receive_window`). Default `None`: quinn's
    /// (1.25 MB).
    pub stream_receive_window: Option<u64>,
    /// Key-exchange groups accepted, in order of preference. Default empty:
    /// rustls' ring provider's (X25519, secp256r1, secp384r1). Only
    /// `[Secp256r1]` makes a client that offers an X25519 key share first
    /// (rustls, quinn, curl) take a HelloRetryRequest.
    pub kx_groups: Vec<KxGroup>,
    /// Session tickets (resumption, RFC 8446 §2.2): rustls' in-memory
    /// session cache, stateful single-use tickets. Default `true`. `false`:
    /// no tickets, every handshake is full.
    pub tickets: bool,
    /// 0-RTT accepted (RFC 9001 §4.6): rustls `max_early_data_size =
    /// u32::MAX` (§4.6.1: QUIC allows no other value) and quinn's 0-RTT
    /// path on the server (`Connecting::into_0rtt()`: requests read from
    /// 0-RTT packets are answered at once, before the handshake completes;
    /// not when `kx_groups` leaves X25519 out, see `half_rtt` in the
    /// source). Needs `tickets`. Default `false`.
    pub early_data: bool,
    /// A delay before each response. Default zero.
    pub think: Duration,
    /// Each response says how long its handler took (W3C Server Timing):
    /// `Server-Timing: app;dur=MS` in its HEADERS, and `total;dur=MS` (the
    /// handler's call to the body sent) in trailing HEADERS. Default
    /// `false`.
    pub server_timing: bool,
    /// Handshakes as a CPU-bound server does them (the built-in TCP
    /// server's [`crate::builtin::ServerConfig::handshake_cpu`]): each new
    /// connection's Initial waits for one of a few handshake workers, which
    /// holds it for a fixed time before quinn accepts it and its
    /// ServerHello leaves. Default `None`: every handshake at once.
    pub handshake_cpu: Option<crate::builtin::HandshakeCpu>,
}

impl Default for QuicConfig {
    fn default() -> Self {
        QuicConfig {
            intermediates: 0,
            cert_padding: 0,
            retry: false,
            receive_window: None,
            stream_receive_window: None,
            kx_groups: Vec::new(),
            tickets: true,
            early_data: false,
            think: Duration::ZERO,
            server_timing: false,
            handshake_cpu: None,
        }
    }
}

/// What the QUIC server saw, for tests and the lab's reports.
#[derive(Debug, Default)]
pub struct QuicStats {
    incoming: AtomicU64,
    retries: AtomicU64,
    handshakes: AtomicU64,
    requests: AtomicU64,
}

impl QuicStats {
    /// Connection attempts (Initials that opened one, Retries included).
    pub fn incoming(&self) -> u64 {
        self.incoming.load(Ordering::Relaxed)
    }

    /// Retry packets sent.
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Handshakes completed.
    pub fn handshakes(&self) -> u64 {
        self.handshakes.load(Ordering::Relaxed)
    }

    /// HTTP/3 requests answered.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

/// A bound, not yet running, QUIC server.
pub struct QuicServer {
    socket: std::net::UdpSocket,
    local_addr: SocketAddr,
    cfg: Arc<QuicConfig>,
    server_config: quinn::ServerConfig,
    chain: CertChain,
    stats: Arc<QuicStats>,
}

impl std::fmt::Debug for QuicServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicServer")
            .field("local_addr", &self.local_addr)
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl QuicServer {
    /// Generates the certificate chain, builds the TLS and QUIC
    /// configurations and binds a UDP socket on `addr` (port 0 = any free
    /// port), in the calling thread's network namespace.
    ///
    /// # Errors
    /// [`Error::Config`] for impossible knobs (0-RTT without tickets, a
    /// window beyond 2⁶²−1), [`Error::Tls`], [`Error::Cert`],
    /// [`Error::AddrInUse`], [`Error::Io`].
    pub fn bind(addr: SocketAddr, cfg: QuicConfig) -> Result<QuicServer> {
        if cfg.early_data && !cfg.tickets {
            return Err(Error::Config(
                "early_data needs tickets (resumption)".into(),
            ));
        }
        let chain = CertChain::generate(cfg.intermediates, cfg.cert_padding)?;
        let server_config = server_config(&cfg, &chain)?;
        let socket = std::net::UdpSocket::bind(addr).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AddrInUse {
                Error::AddrInUse { addr }
            } else {
                Error::io(format!("binding UDP {addr}"))(e)
            }
        })?;
        let local_addr = socket.local_addr().map_err(Error::io("local address"))?;
        Ok(QuicServer {
            socket,
            local_addr,
            cfg: Arc::new(cfg),
            server_config,
            chain,
            stats: Arc::default(),
        })
    }

    /// The address actually bound (with the port chosen by the kernel).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The root CA of the server's chain, DER, for a client's root store.
    pub fn root_der(&self) -> CertificateDer<'static> {
        self.chain.root.clone()
    }

    /// The server's certificate chain (leaf and intermediates, and the root).
    pub fn chain(&self) -> &CertChain {
        &self.chain
    }

    /// Counters shared with the running server.
    pub fn stats(&self) -> Arc<QuicStats> {
        Arc::clone(&self.stats)
    }

    /// Serves until `shutdown` completes, then closes every connection
    /// (CONNECTION_CLOSE, code 0) and waits at most 1 s for the peers'
    /// acknowledgements. Must run inside a tokio runtime.
    ///
    /// # Errors
    /// [`Error::Io`] if the socket cannot be registered with tokio.
    pub async fn run_until<F: Future<Output = ()>>(self, shutdown: F) -> Result<()> {
        let endpoint = quinn::Endpoint::new(
            quinn::EndpointConfig::default(),
            Some(self.server_config),
            self.socket,
            Arc::new(quinn::TokioRuntime),
        )
        .map_err(Error::io("registering the QUIC endpoint"))?;
        let mut conns = JoinSet::new();
        // the handshake workers (`handshake_cpu`), shared by the connections
        let workers = self
            .cfg
            .handshake_cpu
            .map(|c| Arc::new(tokio::sync::Semaphore::new(c.workers.max(1))));
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
                incoming = endpoint.accept() => {
                    let Some(incoming) = incoming else { break };
                    self.stats.incoming.fetch_add(1, Ordering::Relaxed);
                    if self.cfg.retry && !incoming.remote_address_validated() {
                        if incoming.may_retry() {
                            self.stats.retries.fetch_add(1, Ordering::Relaxed);
                            // quinn sends the Retry; the client's next
                            // Initial comes back with its token
                            let _ = incoming.retry();
                        } else {
                            incoming.refuse();
                        }
                        continue;
                    }
                    let cfg = Arc::clone(&self.cfg);
                    let stats = Arc::clone(&self.stats);
                    let workers = workers.clone();
                    conns.spawn(async move {
                        // a worker's time before quinn answers the Initial
                        // (nothing leaves for the connection until
                        // `accept`); the worker is free again as it answers
                        if let (Some(w), Some(cpu)) = (&workers, cfg.handshake_cpu) {
                            let _worker = w.acquire().await;
                            tokio::time::sleep(cpu.cost).await;
                        }
                        // A failed connection is the client's business.
                        let _ = serve_connection(incoming, cfg, stats).await;
                    });
                }
            }
        }
        endpoint.close(0u32.into(), b"shutdown");
        conns.shutdown().await;
        let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
        Ok(())
    }
}

/// quinn's server configuration from the knobs and the chain.
fn server_config(cfg: &QuicConfig, chain: &CertChain) -> Result<quinn::ServerConfig> {
    let mut provider = rustls::crypto::ring::default_provider();
    if !cfg.kx_groups.is_empty() {
        provider.kx_groups = cfg.kx_groups.iter().map(|g| g.rustls()).collect();
    }
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain.chain.clone(), chain.key_der())
        .map_err(|e| Error::Tls(e.to_string()))?;
    tls.alpn_protocols = vec![b"h3".to_vec()];
    if cfg.tickets {
        // the default in-memory session cache issues single-use stateful
        // tickets, which rustls requires for 0-RTT
        tls.max_early_data_size = if cfg.early_data { u32::MAX } else { 0 };
    } else {
        tls.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        tls.send_tls13_tickets = 0;
    }
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
        .map_err(|e| Error::Tls(e.to_string()))?;
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    let varint = |what: &str, v: u64| {
        quinn::VarInt::from_u64(v)
            .map_err(|_| Error::Config(format!("{what}: {v} is beyond 2^62-1")))
    };
    if let Some(w) = cfg.receive_window {
        transport.receive_window(varint("receive_window", w)?);
    }
    if let Some(w) = cfg.stream_receive_window {
        transport.stream_receive_window(varint("stream_receive_window", w)?);
    }
    server.transport_config(Arc::new(transport));
    Ok(server)
}

/// Whether requests are answered in 0.5-RTT (quinn's `into_0rtt()` on
/// the server): with 0-RTT on, unless the groups accepted leave X25519 out.
/// Then the usual client (X25519 key share first) gets a
/// HelloRetryRequest, which rejects its early data (RFC 8446 §4.1.2), and
/// quinn 0.11 discards the streams the server opened in 0.5-RTT with it,
/// leaving the HTTP/3 connection without its control stream; so such a
/// server answers once the handshake completes (0-RTT still accepted on
/// resumed connections, whose key share is the one the ticket's handshake
/// used).
fn half_rtt(cfg: &QuicConfig) -> bool {
    cfg.early_data && (cfg.kx_groups.is_empty() || cfg.kx_groups.contains(&KxGroup::X25519))
}

async fn serve_connection(
    incoming: quinn::Incoming,
    cfg: Arc<QuicConfig>,
    stats: Arc<QuicStats>,
) -> Result<()> {
    let quic_err =
        |e: quinn::ConnectionError| Error::io("QUIC handshake")(std::io::Error::other(e));
    let connecting = incoming.accept().map_err(quic_err)?;
    let conn = if half_rtt(&cfg) {
        // server side this always succeeds: requests in 0-RTT packets are
        // read (and answered) before the handshake completes
        match connecting.into_0rtt() {
            Ok((conn, done)) => {
                let stats = Arc::clone(&stats);
                tokio::spawn(async move {
                    if done.await {
                        stats.handshakes.fetch_add(1, Ordering::Relaxed);
                    }
                });
                conn
            }
            Err(connecting) => {
                let c = connecting.await.map_err(quic_err)?;
                stats.handshakes.fetch_add(1, Ordering::Relaxed);
                c
            }
        }
    } else {
        let c = connecting.await.map_err(quic_err)?;
        stats.handshakes.fetch_add(1, Ordering::Relaxed);
        c
    };
    let h3_err = |e: h3::error::ConnectionError| Error::io("HTTP/3")(std::io::Error::other(e));
    let mut h3: h3::server::Connection<h3_quinn::Connection, Bytes> =
        h3::server::Connection::new(h3_quinn::Connection::new(conn))
            .await
            .map_err(h3_err)?;
    let mut requests = JoinSet::new();
    // until the client closes the connection (or goes away)
    while let Ok(Some(resolver)) = h3.accept().await {
        let cfg = Arc::clone(&cfg);
        let stats = Arc::clone(&stats);
        requests.spawn(async move {
            let Ok((req, mut stream)) = resolver.resolve_request().await else {
                return;
            };
            // a request body (POST, PUT) is read to its end before the
            // answer: reading is what opens the flow-control windows
            // (`receive_window`, `stream_receive_window`) again
            if !matches!(*req.method(), http::Method::GET | http::Method::HEAD) {
                while let Ok(Some(mut chunk)) = stream.recv_data().await {
                    chunk.advance(chunk.remaining());
                }
            }
            let started = std::time::Instant::now();
            let think = cfg.think + query_think(req.uri().query());
            if !think.is_zero() {
                tokio::time::sleep(think).await;
            }
            let (status, ctype, body) = route(req.uri().path());
            let mut resp = http::Response::builder()
                .status(status)
                .header(http::header::CONTENT_TYPE, ctype)
                .header(http::header::CONTENT_LENGTH, body.len());
            if cfg.server_timing {
                resp = resp.header("server-timing", server_timing(started.elapsed()));
            }
            let resp = resp.body(());
            let Ok(resp) = resp else { return };
            if stream.send_response(resp).await.is_err() {
                return;
            }
            if !body.is_empty() && stream.send_data(body).await.is_err() {
                return;
            }
            if cfg.server_timing {
                let total = format!("total;dur={:.3}", started.elapsed().as_secs_f64() * 1000.0);
                let mut trailers = http::HeaderMap::new();
                if let Ok(v) = total.parse() {
                    trailers.insert("server-timing", v);
                }
                if stream.send_trailers(trailers).await.is_err() {
                    return;
                }
            }
            if stream.finish().await.is_ok() {
                stats.requests.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    // let the responses still being sent finish
    while requests.join_next().await.is_some() {}
    Ok(())
}
