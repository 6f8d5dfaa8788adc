//! `rttlens-lab-server`: the built-in lab server as a process. Prints
//! `listening on ADDR` (then `port PORT`) on stdout once bound and serves
//! until SIGTERM or SIGINT. With `--http3` it serves HTTP/3 over QUIC
//! (UDP) on that address instead, with the QUIC knobs below.
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use rttlens_lab_server::builtin::{AcceptStall, HandshakeWrites, Server, ServerConfig};
use rttlens_lab_server::quic::{KxGroup, QuicConfig, QuicServer};
use rttlens_lab_server::TlsVersion;

/// Built-in TLS/HTTP server of the rttlens lab: GET /size/N returns N bytes.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Address to listen on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// TCP_NODELAY on accepted sockets (off = Nagle on).
    #[arg(long, default_value = "on", value_parser = on_off, action = clap::ArgAction::Set)]
    nodelay: bool,
    /// The server's TLS handshake flight in `one` or `two` writes.
    #[arg(long, default_value = "one")]
    handshake_writes: HandshakeWrites,
    /// Maximum TLS record size in bytes, header included (32..=16389).
    #[arg(long)]
    record_size: Option<usize>,
    /// Session tickets / resumption.
    #[arg(long, default_value = "on", value_parser = on_off, action = clap::ArgAction::Set)]
    tickets: bool,
    /// 0-RTT: maximum early data in bytes (0 = off).
    #[arg(long, default_value_t = 0)]
    early_data: u32,
    /// TLS versions, comma-separated: 1.2,1.3.
    #[arg(long, value_delimiter = ',', default_value = "1.2,1.3")]
    tls_versions: Vec<TlsVersion>,
    /// TCP Fast Open queue length on the listener.
    #[arg(long)]
    tfo: Option<u32>,
    /// SO_SNDBUF on accepted sockets, in bytes.
    #[arg(long)]
    sndbuf: Option<usize>,
    /// Delay before each response, in milliseconds.
    #[arg(long, default_value_t = 0)]
    think_ms: u64,
    /// Say in each response how long its handler took (`Server-Timing:
    /// app;dur=MS`; over HTTP/3 also `total;dur=MS` in trailers).
    #[arg(long)]
    server_timing: bool,
    /// Serve HTTP/1.1 without TLS.
    #[arg(long)]
    plain_http: bool,
    /// Offer HTTP/2 over TLS (ALPN h2, then http/1.1).
    #[arg(long)]
    http2: bool,
    /// Stop accepting once, after this many accepted connections (with
    /// --stall-ms).
    #[arg(long, requires = "stall_ms")]
    stall_after: Option<u64>,
    /// How long the accept stall lasts, in milliseconds.
    #[arg(long, requires = "stall_after")]
    stall_ms: Option<u64>,
    /// Serve HTTP/3 over QUIC (UDP) instead of TLS over TCP; --tickets,
    /// --early-data (any N > 0 turns 0-RTT on: QUIC allows no other limit)
    /// and --think-ms apply, the TCP and TLS-record knobs do not.
    #[arg(long)]
    http3: bool,
    /// QUIC: intermediate CA certificates sent with the leaf (each ≈ 400 B).
    #[arg(long, default_value_t = 0, requires = "http3")]
    intermediates: usize,
    /// QUIC: bytes of padding in the leaf certificate.
    #[arg(long, default_value_t = 0, requires = "http3")]
    cert_padding: usize,
    /// QUIC: a Retry to every address not yet validated.
    #[arg(long, default_value = "off", value_parser = on_off, action = clap::ArgAction::Set, requires = "http3")]
    retry: bool,
    /// QUIC: initial_max_data, in bytes.
    #[arg(long, requires = "http3")]
    max_data: Option<u64>,
    /// QUIC: initial_max_stream_data_{bidi_local,bidi_remote,uni}, in bytes.
    #[arg(long, requires = "http3")]
    max_stream_data: Option<u64>,
    /// QUIC: key-exchange groups accepted, comma-separated (x25519,
    /// secp256r1, secp384r1; default all three).
    #[arg(long, value_delimiter = ',', requires = "http3")]
    kx_groups: Vec<KxGroup>,
}

fn on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" | "1" | "yes" => Ok(true),
        "off" | "false" | "0" | "no" => Ok(false),
        _ => Err(format!("'{s}': expected on or off")),
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.http3 {
        return main_http3(args);
    }
    let cfg = ServerConfig {
        nodelay: args.nodelay,
        handshake_writes: args.handshake_writes,
        record_size: args.record_size,
        tickets: args.tickets,
        early_data: args.early_data,
        tls_versions: args.tls_versions,
        tfo: args.tfo,
        sndbuf: args.sndbuf,
        think: Duration::from_millis(args.think_ms),
        server_timing: args.server_timing,
        plain_http: args.plain_http,
        http2: args.http2,
        accept_stall: args
            .stall_after
            .zip(args.stall_ms)
            .map(|(after, ms)| AcceptStall {
                after,
                pause: Duration::from_millis(ms),
            }),
        ..ServerConfig::default()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    rt.block_on(async move {
        let server = Server::bind(args.listen, cfg)?;
        let addr = server.local_addr();
        println!("listening on {addr}");
        println!("port {}", addr.port());
        use std::io::Write as _;
        std::io::stdout().flush().ok();
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        let shutdown = async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        };
        server.run_until(shutdown).await?;
        Ok(())
    })
}

/// `--http3`: the QUIC server on the same address, over UDP.
fn main_http3(args: Args) -> anyhow::Result<()> {
    let cfg = QuicConfig {
        intermediates: args.intermediates,
        cert_padding: args.cert_padding,
        retry: args.retry,
        receive_window: args.max_data,
        stream_receive_window: args.max_stream_data,
        kx_groups: args.kx_groups,
        tickets: args.tickets,
        early_data: args.early_data > 0,
        think: Duration::from_millis(args.think_ms),
        server_timing: args.server_timing,
        handshake_cpu: None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    rt.block_on(async move {
        let server = QuicServer::bind(args.listen, cfg)?;
        let addr = server.local_addr();
        println!("listening on {addr}");
        println!("port {}", addr.port());
        println!("chain {} B", server.chain().chain_bytes());
        use std::io::Write as _;
        std::io::stdout().flush().ok();
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        let shutdown = async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        };
        server.run_until(shutdown).await?;
        Ok(())
    })
}
