//! Lab servers over loopback: the built-in server with a rustls client,
//! curl and openssl; nginx with curl and openssl. Needs curl, openssl and
//! nginx-light installed (each test says which package is missing).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rttlens_lab_server::builtin::{
    HandshakeCpu, HandshakeWrites, Server, ServerConfig, ServerStats,
};
use rttlens_lab_server::nginx;
use rttlens_lab_server::TlsVersion;
use rustls::pki_types::{CertificateDer, ServerName};

// ---------- helpers ----------

/// Fails with the package to install when `tool` is missing.
fn require(tool: &str, package: &str) {
    let found = Command::new("sh")
        .args([
            "-c",
            &format!("command -v {tool} || test -x /usr/sbin/{tool}"),
        ])
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        found,
        "`{tool}` not found: install it with apt-get install -y {package}"
    );
}

/// The built-in server running on its own thread and runtime.
struct Running {
    addr: SocketAddr,
    cert: CertificateDer<'static>,
    stats: Arc<ServerStats>,
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

fn start(cfg: ServerConfig) -> Running {
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), cfg).expect("bind");
    let (addr, cert, stats) = (server.local_addr(), server.cert_der(), server.stats());
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
        cert,
        stats,
        stop: Some(tx),
        thread: Some(thread),
    }
}

fn client_config(cert: &CertificateDer<'static>, version: TlsVersion) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.clone()).unwrap();
    let v: &'static rustls::SupportedProtocolVersion = match version {
        TlsVersion::Tls12 => &rustls::version::TLS12,
        TlsVersion::Tls13 => &rustls::version::TLS13,
    };
    let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[v])
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(cfg)
}

/// A TCP stream that keeps every byte it reads (the raw TLS records).
struct Tap {
    sock: TcpStream,
    seen: Vec<u8>,
}

impl Read for Tap {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.sock.read(buf)?;
        self.seen.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

impl Write for Tap {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.sock.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.sock.flush()
    }
}

struct Fetched {
    body_len: usize,
    kind: Option<rustls::HandshakeKind>,
    version: Option<rustls::ProtocolVersion>,
    /// (content type, length) of every record the server sent.
    records: Vec<(u8, usize)>,
}

/// GET `path` over TLS with rustls, `Connection: close`, reading to the end.
fn fetch(addr: SocketAddr, cfg: &Arc<rustls::ClientConfig>, path: &str) -> Fetched {
    let sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let conn =
        rustls::ClientConnection::new(Arc::clone(cfg), ServerName::try_from("localhost").unwrap())
            .unwrap();
    let mut tls = rustls::StreamOwned::new(
        conn,
        Tap {
            sock,
            seen: Vec::new(),
        },
    );
    write!(
        tls,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = Vec::new();
    match tls.read_to_end(&mut resp) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {}
        Err(e) => panic!("reading the response: {e}"),
    }
    let head_end = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("HTTP head")
        + 4;
    assert!(
        resp.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&resp[..head_end])
    );
    let mut records = Vec::new();
    let raw = &tls.sock.seen;
    let mut i = 0;
    while i + 5 <= raw.len() {
        let len = usize::from(u16::from_be_bytes([raw[i + 3], raw[i + 4]]));
        records.push((raw[i], len));
        i += 5 + len;
    }
    Fetched {
        body_len: resp.len() - head_end,
        kind: tls.conn.handshake_kind(),
        version: tls.conn.protocol_version(),
        records,
    }
}

/// curl -k over `version`; returns (bytes downloaded, verbose stderr).
fn curl(url: &str, version: TlsVersion) -> (usize, String) {
    let v: &[&str] = match version {
        TlsVersion::Tls12 => &["--tlsv1.2", "--tls-max", "1.2"],
        TlsVersion::Tls13 => &["--tlsv1.3"],
    };
    let out = Command::new("curl")
        .args([
            "-skv",
            "--max-time",
            "10",
            "-o",
            "/dev/null",
            "-w",
            "%{size_download}",
        ])
        .args(v)
        .arg(url)
        .output()
        .expect("running curl");
    assert!(
        out.status.success(),
        "curl {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let size = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    (size, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `openssl s_client` against `addr` with extra args, sending `stdin`,
/// reading until the server closes (`-ign_eof`), bounded by `timeout 10`.
fn s_client(addr: SocketAddr, args: &[&str], stdin: &[u8]) -> String {
    let mut child = Command::new("timeout")
        .args([
            "10",
            "openssl",
            "s_client",
            "-connect",
            &addr.to_string(),
            "-ign_eof",
        ])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running openssl");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

const GET_CLOSE: &[u8] = b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rttlens-lab-server-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

fn process_gone(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

// ---------- built-in server ----------

#[test]
fn builtin_tls13_and_tls12_serve_sizes_to_rustls() {
    let srv = start(ServerConfig::default());
    for v in TlsVersion::ALL {
        let f = fetch(srv.addr, &client_config(&srv.cert, v), "/size/100000");
        assert_eq!(f.body_len, 100_000, "{v}");
        let want = match v {
            TlsVersion::Tls12 => rustls::ProtocolVersion::TLSv1_2,
            TlsVersion::Tls13 => rustls::ProtocolVersion::TLSv1_3,
        };
        assert_eq!(f.version, Some(want));
        assert_eq!(f.kind, Some(rustls::HandshakeKind::Full));
    }
}

#[test]
fn builtin_serves_curl_over_tls13_and_tls12_and_plain_http() {
    require("curl", "curl");
    let srv = start(ServerConfig::default());
    for (v, name) in [
        (TlsVersion::Tls13, "TLSv1.3"),
        (TlsVersion::Tls12, "TLSv1.2"),
    ] {
        let (n, log) = curl(
            &format!("https://127.0.0.1:{}/size/100000", srv.addr.port()),
            v,
        );
        assert_eq!(n, 100_000);
        assert!(
            log.contains(&format!("SSL connection using {name}")),
            "{log}"
        );
    }
    let plain = start(ServerConfig {
        plain_http: true,
        ..ServerConfig::default()
    });
    let (n, _) = curl(
        &format!("http://127.0.0.1:{}/size/12345", plain.addr.port()),
        TlsVersion::Tls13,
    );
    assert_eq!(n, 12345);
}

/// The client keeps the raw bytes it read and splits them into records.
#[test]
fn builtin_record_size_changes_the_records_on_the_wire() {
    let big = start(ServerConfig::default());
    let small = start(ServerConfig {
        record_size: Some(1400),
        ..ServerConfig::default()
    });
    let max_len = |srv: &Running| {
        let f = fetch(
            srv.addr,
            &client_config(&srv.cert, TlsVersion::Tls13),
            "/size/100000",
        );
        assert_eq!(f.body_len, 100_000);
        let app: Vec<usize> = f
            .records
            .iter()
            .filter(|r| r.0 == 23)
            .map(|r| r.1)
            .collect();
        (app.iter().copied().max().unwrap(), app.len())
    };
    let (big_max, big_n) = max_len(&big);
    let (small_max, small_n) = max_len(&small);
    // 16 KiB of plaintext + inner type + 16-byte tag (RFC 8446 §5.2).
    assert_eq!(big_max, 16384 + 17, "default records");
    // max_fragment_size counts the 5-byte header of the plaintext record:
    // 1395 bytes of plaintext + 17 of TLS 1.3 overhead.
    assert_eq!(small_max, 1400 - 5 + 17, "small records");
    assert!(
        small_n > 70 && big_n < 15,
        "record counts {small_n} vs {big_n}"
    );
}

#[test]
fn builtin_resumption_follows_tickets() {
    for v in TlsVersion::ALL {
        let on = start(ServerConfig::default());
        let cfg = client_config(&on.cert, v);
        assert_eq!(
            fetch(on.addr, &cfg, "/").kind,
            Some(rustls::HandshakeKind::Full)
        );
        assert_eq!(
            fetch(on.addr, &cfg, "/").kind,
            Some(rustls::HandshakeKind::Resumed),
            "{v}"
        );

        let off = start(ServerConfig {
            tickets: false,
            ..ServerConfig::default()
        });
        let cfg = client_config(&off.cert, v);
        assert_eq!(
            fetch(off.addr, &cfg, "/").kind,
            Some(rustls::HandshakeKind::Full)
        );
        assert_eq!(
            fetch(off.addr, &cfg, "/").kind,
            Some(rustls::HandshakeKind::Full),
            "{v}"
        );
    }
}

#[test]
fn builtin_openssl_resumes_and_sends_accepted_early_data() {
    require("openssl", "openssl");
    let srv = start(ServerConfig {
        early_data: 16384,
        ..ServerConfig::default()
    });
    let dir = temp_dir("zero-rtt");
    let sess = dir.join("sess.pem");
    let early = dir.join("early.txt");
    std::fs::write(&early, GET_CLOSE).unwrap();
    let sess_s = sess.to_str().unwrap();
    let first = s_client(srv.addr, &["-tls1_3", "-sess_out", sess_s], GET_CLOSE);
    assert!(first.contains("New, TLSv1.3"), "{first}");
    // With 0-RTT on, rustls's tickets are single use (its anti-replay
    // measure): the resumed connection stores its fresh ticket for the next.
    let second = s_client(
        srv.addr,
        &["-tls1_3", "-sess_in", sess_s, "-sess_out", sess_s],
        GET_CLOSE,
    );
    assert!(second.contains("Reused, TLSv1.3"), "{second}");
    let third = s_client(
        srv.addr,
        &[
            "-tls1_3",
            "-sess_in",
            sess_s,
            "-early_data",
            early.to_str().unwrap(),
        ],
        b"",
    );
    assert!(third.contains("Early data was accepted"), "{third}");
    assert!(third.contains("HTTP/1.1 200"), "{third}");
    assert_eq!(srv.stats.early_data_bytes(), GET_CLOSE.len() as u64);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The wrapper counts the `write` calls of each handshake.
#[test]
fn builtin_handshake_cpu_serves_handshakes_one_at_a_time() {
    // one worker, 150 ms a handshake: three clients at once finish about
    // 150, 300 and 450 ms after they start, whatever order they are served
    let cost = Duration::from_millis(150);
    let srv = start(ServerConfig {
        handshake_cpu: Some(HandshakeCpu { workers: 1, cost }),
        ..ServerConfig::default()
    });
    let cfg = client_config(&srv.cert, TlsVersion::Tls13);
    let t0 = std::time::Instant::now();
    let clients: Vec<_> = (0..3)
        .map(|_| {
            let cfg = Arc::clone(&cfg);
            let addr = srv.addr;
            std::thread::spawn(move || {
                let f = fetch(addr, &cfg, "/size/100");
                assert_eq!(f.body_len, 100);
                t0.elapsed()
            })
        })
        .collect();
    let mut done: Vec<Duration> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    done.sort();
    for (i, d) in done.iter().enumerate() {
        let least = cost * (i as u32 + 1);
        assert!(
            *d >= least,
            "client {i} done after {d:?}, before {least:?}: handshakes overlapped"
        );
    }
    // without the knob the same three take a fraction of one cost
    let fast = start(ServerConfig::default());
    let cfg = client_config(&fast.cert, TlsVersion::Tls13);
    let t1 = std::time::Instant::now();
    let _ = fetch(fast.addr, &cfg, "/size/100");
    assert!(
        t1.elapsed() < cost,
        "a plain handshake took {:?}",
        t1.elapsed()
    );
}

#[test]
fn builtin_handshake_writes_one_or_two() {
    for (mode, nodelay, want) in [
        (HandshakeWrites::One, true, 1),
        (HandshakeWrites::Two, true, 2),
        (HandshakeWrites::Two, false, 2),
    ] {
        let srv = start(ServerConfig {
            handshake_writes: mode,
            nodelay,
            ..ServerConfig::default()
        });
        for v in TlsVersion::ALL {
            let f = fetch(srv.addr, &client_config(&srv.cert, v), "/size/10");
            assert_eq!(f.body_len, 10);
        }
        let writes = srv.stats.handshake_writes();
        assert_eq!(writes.len(), 2);
        for w in &writes {
            // TLS 1.3 handshakes write only the flight; TLS 1.2 also the
            // server's CCS+Finished later (one more write).
            let flight = &w[..want];
            assert!(w.len() == want || w.len() == want + 1, "{mode:?}: {w:?}");
            if want == 2 {
                assert_eq!(
                    flight[1],
                    rttlens_lab_server::builtin::SECOND_WRITE_BYTES,
                    "{w:?}"
                );
            }
        }
    }
}

#[test]
fn builtin_config_errors_name_the_knob() {
    let err = Server::bind(
        "127.0.0.1:0".parse().unwrap(),
        ServerConfig {
            early_data: 1,
            tickets: false,
            ..ServerConfig::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("early_data"), "{err}");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let err = Server::bind(taken.local_addr().unwrap(), ServerConfig::default()).unwrap_err();
    assert!(err.to_string().contains("already in use"), "{err}");
}

// ---------- nginx ----------

fn nginx_config(addr: SocketAddr) -> nginx::Config {
    nginx::Config {
        ssl_session_cache: Some("shared:SSL:1m".into()),
        files: vec![100_000, 1_000_000],
        ..nginx::Config::new(addr)
    }
}

#[test]
fn nginx_generated_config_passes_nginx_t_with_every_knob() {
    require("nginx", "nginx-light");
    let dir = temp_dir("nginx-t");
    let cfg = nginx::Config {
        tcp_nodelay: false,
        ssl_buffer_size: Some(4096),
        ssl_early_data: true,
        ssl_session_tickets: false,
        fastopen: Some(16),
        sndbuf: Some(32768),
        backlog: Some(128),
        ssl_protocols: vec![TlsVersion::Tls13],
        http2: true,
        ..nginx_config(free_port())
    };
    let conf = cfg.write(&dir).unwrap();
    let out = Command::new(nginx::find_nginx().unwrap())
        .arg("-p")
        .arg(&dir)
        .arg("-c")
        .arg(&conf)
        .arg("-e")
        .arg(dir.join("error.log"))
        .arg("-t")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&conf).unwrap();
    for d in [
        "tcp_nodelay off;",
        "ssl_buffer_size 4096;",
        "ssl_early_data on;",
        "ssl_session_tickets off;",
        "fastopen=16 sndbuf=32768 backlog=128",
        "ssl_protocols TLSv1.3;",
    ] {
        assert!(text.contains(d), "{d} missing in:\n{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nginx_instance_serves_resumes_and_stops() {
    require("nginx", "nginx-light");
    require("curl", "curl");
    require("openssl", "openssl");
    let dir = temp_dir("nginx-run");
    let addr = free_port();
    let mut inst = nginx::Instance::start(&dir, &nginx_config(addr)).expect("nginx start");
    let pid = inst.pid().unwrap();
    for (v, name) in [
        (TlsVersion::Tls13, "TLSv1.3"),
        (TlsVersion::Tls12, "TLSv1.2"),
    ] {
        let (n, log) = curl(
            &format!("https://127.0.0.1:{}/size/1000000", addr.port()),
            v,
        );
        assert_eq!(n, 1_000_000);
        assert!(
            log.contains(&format!("SSL connection using {name}")),
            "{log}"
        );
    }
    let sess = dir.join("sess.pem");
    let sess_s = sess.to_str().unwrap();
    let first = s_client(addr, &["-tls1_3", "-sess_out", sess_s], GET_CLOSE);
    assert!(first.contains("New, TLSv1.3"), "{first}");
    let second = s_client(addr, &["-tls1_3", "-sess_in", sess_s], GET_CLOSE);
    assert!(second.contains("Reused, TLSv1.3"), "{second}");

    // A second instance on the same port fails clearly.
    let err = nginx::Instance::start(&temp_dir("nginx-busy"), &nginx_config(addr)).unwrap_err();
    assert!(err.to_string().contains("already in use"), "{err}");

    inst.stop();
    assert!(process_gone(pid), "nginx {pid} still running");
    assert!(inst.pid().is_none());
    drop(inst);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(temp_dir("nginx-busy"));
}

#[test]
fn nginx_config_test_failure_includes_stderr() {
    require("nginx", "nginx-light");
    let dir = temp_dir("nginx-bad");
    let cfg = nginx::Config {
        ssl_session_cache: Some("bogus".into()),
        ..nginx_config(free_port())
    };
    let err = nginx::Instance::start(&dir, &cfg).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("nginx -t rejected") && msg.contains("session cache \"bogus\""),
        "{msg}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// TFO and SO_SNDBUF are applied without error and the server still serves
/// (their wire effects are the lab scenarios' business).
#[test]
fn builtin_tfo_sndbuf_think_are_accepted() {
    let srv = start(ServerConfig {
        tfo: Some(16),
        sndbuf: Some(32 * 1024),
        think: Duration::from_millis(50),
        nodelay: false,
        ..ServerConfig::default()
    });
    let t0 = std::time::Instant::now();
    let f = fetch(
        srv.addr,
        &client_config(&srv.cert, TlsVersion::Tls13),
        "/size/300000",
    );
    assert_eq!(f.body_len, 300_000);
    assert!(t0.elapsed() >= Duration::from_millis(50));
}
