//! The QUIC/HTTP/3 server over loopback, with a quinn + h3 client that
//! trusts its root: the routes, the chain it sends, Retry, the binary's
//! `--http3`. (Round trips each knob costs are measured in the lab by
//! `crates/rttlens/tests/probe_http3.rs`.)

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Buf;
use rttlens_lab_server::quic::{QuicConfig, QuicServer, QuicStats};
use rustls::pki_types::CertificateDer;

/// The server on its own thread and runtime, stopped on drop.
struct Running {
    addr: SocketAddr,
    root: CertificateDer<'static>,
    chain_len: usize,
    stats: Arc<QuicStats>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn start(cfg: QuicConfig) -> Running {
    let server = QuicServer::bind("127.0.0.1:0".parse().unwrap(), cfg).expect("bind");
    let (addr, root, stats) = (server.local_addr(), server.root_der(), server.stats());
    let chain_len = server.chain().chain.len();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(server.run_until(async {
            let _ = rx.await;
        }))
        .unwrap();
    });
    Running {
        addr,
        root,
        chain_len,
        stats,
        stop: Some(tx),
        thread: Some(thread),
    }
}

/// `GET https://localhost{path}` over HTTP/3: status, body bytes and the
/// number of certificates the server sent.
fn get(addr: SocketAddr, root: &CertificateDer<'static>, path: &str) -> (u16, usize, usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(root.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"h3".to_vec()];
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
        let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
        let conn = tokio::time::timeout(
            Duration::from_secs(10),
            endpoint.connect(addr, "localhost").unwrap(),
        )
        .await
        .expect("handshake within 10 s")
        .expect("handshake");
        let certs = conn
            .peer_identity()
            .and_then(|i| i.downcast::<Vec<CertificateDer<'static>>>().ok())
            .map_or(0, |v| v.len());
        let (mut driver, mut send) = h3::client::new(h3_quinn::Connection::new(conn.clone()))
            .await
            .unwrap();
        let drive = tokio::spawn(async move {
            let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        });
        let req = http::Request::get(format!("https://localhost{path}"))
            .body(())
            .unwrap();
        let mut stream = send.send_request(req).await.unwrap();
        stream.finish().await.unwrap();
        let resp = stream.recv_response().await.unwrap();
        let mut n = 0;
        while let Some(mut b) = stream.recv_data().await.unwrap() {
            n += b.remaining();
            b.advance(b.remaining());
        }
        drive.abort();
        conn.close(0u32.into(), b"");
        let _ = tokio::time::timeout(Duration::from_millis(200), endpoint.wait_idle()).await;
        (resp.status().as_u16(), n, certs)
    })
}

#[test]
fn routes_and_chain() {
    let s = start(QuicConfig {
        intermediates: 3,
        cert_padding: 1000,
        ..QuicConfig::default()
    });
    assert_eq!(s.chain_len, 4);
    let (status, n, certs) = get(s.addr, &s.root, "/size/20000");
    assert_eq!((status, n), (200, 20000));
    assert_eq!(certs, 4, "leaf and three intermediates sent");
    assert_eq!(get(s.addr, &s.root, "/").0, 200);
    assert_eq!(get(s.addr, &s.root, "/nope").0, 404);
    // think time from the query
    let t0 = Instant::now();
    assert_eq!(get(s.addr, &s.root, "/size/1?think=300").0, 200);
    assert!(t0.elapsed() >= Duration::from_millis(300));
    assert_eq!(s.stats.handshakes(), 4);
    assert_eq!(s.stats.requests(), 4);
    assert_eq!(s.stats.retries(), 0);
}

#[test]
fn retry_then_serve() {
    let s = start(QuicConfig {
        retry: true,
        ..QuicConfig::default()
    });
    assert_eq!(get(s.addr, &s.root, "/size/10").0, 200);
    assert_eq!(s.stats.retries(), 1);
    assert_eq!(
        s.stats.incoming(),
        2,
        "the Initial, then the one with the token"
    );
}

#[test]
fn impossible_knobs_are_refused() {
    let e = QuicServer::bind(
        "127.0.0.1:0".parse().unwrap(),
        QuicConfig {
            early_data: true,
            tickets: false,
            ..QuicConfig::default()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("early_data"), "{e}");
    assert!("p-256".parse::<rttlens_lab_server::quic::KxGroup>().is_ok());
    assert!("ffdhe2048"
        .parse::<rttlens_lab_server::quic::KxGroup>()
        .is_err());
}

#[test]
fn the_binary_serves_http3() {
    let bin = env!("CARGO_BIN_EXE_rttlens-lab-server");
    let mut child = Command::new(bin)
        .args(["--http3", "--listen", "127.0.0.1:0", "--intermediates", "2"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let addr: SocketAddr = first
        .trim()
        .trim_start_matches("listening on ")
        .parse()
        .unwrap();
    let mut rest = String::new();
    out.read_line(&mut rest).unwrap(); // port
    rest.clear();
    out.read_line(&mut rest).unwrap();
    assert!(rest.starts_with("chain "), "{rest}");
    // the binary's chain has its own root: a client that does not trust
    // it fails at once (a TLS alert in the handshake, not a silent UDP
    // port's 10 s), which shows it serves QUIC with that chain
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let t0 = Instant::now();
    let refused = std::panic::catch_unwind(|| {
        let any = rcgen::generate_simple_self_signed(vec!["x".to_string()]).unwrap();
        get(addr, any.cert.der(), "/")
    });
    assert!(
        refused.is_err(),
        "a client that does not trust its root fails"
    );
    assert!(t0.elapsed() < Duration::from_secs(5), "…in the handshake");
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the server did not stop on SIGTERM within 3 s");
}
