//! `rttlens serve` as users run it: a bad configuration is one message and
//! exit code 2; and Debian's real Prometheus scrapes `/probe` through the
//! relabelling blackbox_exporter's users write, and the values come back
//! through Prometheus' HTTP query API (issue 26). The Prometheus test needs
//! the `prometheus` program (scripts/packages; FAILS naming it when
//! missing). Every wait is bounded.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, scratch};
use rttlens_lab_server::builtin::{Server, ServerConfig};

fn write(name: &str, text: &str) -> std::path::PathBuf {
    let p = scratch(name);
    std::fs::write(&p, text).expect("write scratch file");
    p
}

#[test]
fn a_bad_config_is_one_message_and_exit_2() {
    let missing = scratch("no-such-config.yml");
    let cases = [
        (write("bad-yaml.yml", "modules: [\n"), "bad-yaml.yml"),
        (
            write("bad-key.yml", "modules:\n  a:\n    timout: 5s\n"),
            "unknown field `timout`",
        ),
        (
            write("bad-tls.yml", "modules:\n  a:\n    tls_version: \"1.1\"\n"),
            "module 'a': tls_version '1.1'",
        ),
        (write("empty.yml", "modules: {}\n"), "no modules"),
        (missing.clone(), "cannot read"),
    ];
    for (path, want) in cases {
        let o = bin()
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&path)
            .stdin(Stdio::null())
            .output()
            .expect("run rttlens serve");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}: {err}", path.display());
        assert!(err.contains(want), "{}: {err}", path.display());
        assert_eq!(err.trim().lines().count(), 1, "one message: {err}");
    }
}

/// Kills and reaps the child on drop (only the processes this test
/// started).
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The path of `program`, or a failure naming its Debian package.
fn require(program: &str, package: &str) -> std::path::PathBuf {
    for dir in std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .chain(["/usr/sbin", "/sbin"])
    {
        let p = std::path::Path::new(dir).join(program);
        if p.is_file() {
            return p;
        }
    }
    panic!(
        "this test needs `{program}` (Debian package `{package}`): run scripts/deps test as root \
         (apt-get install -y {package})"
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `GET path` in HTTP/1.0 (no chunked answer): (status, body).
fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Ask Prometheus `query` until it answers a sample (at most `within`):
/// the sample's labels and value.
fn query(prom: SocketAddr, q: &str, within: Duration) -> (serde_json::Value, f64) {
    let until = Instant::now() + within;
    let mut last = String::new();
    while Instant::now() < until {
        if let Some((200, body)) = get(prom, &format!("/api/v1/query?query={}", encode(q))) {
            let v: serde_json::Value =
                serde_json::from_str(&body).expect("Prometheus answers JSON");
            if let Some(sample) = v["data"]["result"].as_array().and_then(|r| r.first()) {
                let value = sample["value"][1]
                    .as_str()
                    .and_then(|s| s.parse().ok())
                    .expect("a sample value");
                return (sample["metric"].clone(), value);
            }
            last = body;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("Prometheus had no sample of `{q}` within {within:?}; last answer: {last}");
}

#[test]
fn prometheus_scrapes_probe_and_reads_the_values_back() {
    let prometheus = require("prometheus", "prometheus");

    // the target: the lab's built-in TLS server (tickets, 0-RTT), in process
    let (atx, arx) = std::sync::mpsc::channel();
    let (stx, srx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let cfg = ServerConfig {
                early_data: 16_384,
                ..ServerConfig::default()
            };
            let s = Server::bind("127.0.0.1:0".parse().expect("addr"), cfg).expect("bind");
            atx.send(s.local_addr()).expect("send addr");
            s.run_until(async {
                let _ = srx.await;
            })
            .await
            .expect("built-in server");
        });
    });
    let target = arx
        .recv_timeout(Duration::from_secs(10))
        .expect("built-in server started");

    // rttlens serve on a free port, told by its first line
    let config = write(
        "serve.yml",
        "modules:\n  resumed:\n    insecure: true\n    resumption: true\n    fail_if_not_verified: true\n",
    );
    let mut serve = Reaped(
        bin()
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start rttlens serve"),
    );
    let stderr = serve.0.stderr.take().expect("stderr");
    let (ltx, lrx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = ltx.send(line);
        }
    });
    let first = lrx
        .recv_timeout(Duration::from_secs(10))
        .expect("rttlens serve says where it listens");
    let serve_addr: SocketAddr = first
        .split("http://")
        .nth(1)
        .and_then(|s| s.split('/').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no address in `{first}`"));

    // Prometheus: blackbox's relabelling, the target URL as a parameter
    let url = format!("https://{target}/size/2000");
    let prom_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
    let dir = scratch("prometheus");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("prometheus dir");
    let prom_config = write(
        "prometheus.yml",
        &format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: rttlens\n    metrics_path: /probe\n    \
             params:\n      module: [resumed]\n    static_configs:\n      - targets: ['{url}']\n    \
             relabel_configs:\n      - source_labels: [__address__]\n        target_label: __param_target\n      \
             - source_labels: [__param_target]\n        target_label: instance\n      \
             - target_label: __address__\n        replacement: {serve_addr}\n"
        ),
    );
    let log = std::fs::File::create(dir.join("prometheus.log")).expect("log");
    let prom = Reaped(
        Command::new(&prometheus)
            .arg(format!("--config.file={}", prom_config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={prom_addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus"),
    );

    let within = Duration::from_secs(30);
    let (labels, v) = query(prom_addr, "probe_success{job=\"rttlens\"}", within);
    assert_eq!(v, 1.0, "probe_success: {labels}");
    assert_eq!(labels["instance"], url.as_str(), "the relabelled instance");
    let (_, v) = query(
        prom_addr,
        "rttlens_verified{feature=\"resumption\"}",
        within,
    );
    assert_eq!(v, 1.0, "resumption verified");
    let (labels, v) = query(
        prom_addr,
        "rttlens_phase_rtts{step=\"resumed\",phase=\"tls\"}",
        within,
    );
    assert!(
        v >= 0.0,
        "round trips of the resumed handshake: {labels} {v}"
    );
    let (_, v) = query(
        prom_addr,
        "probe_http_duration_seconds{phase=\"connect\"}",
        within,
    );
    assert!((0.0..1.0).contains(&v), "connect phase: {v}");
    let (_, v) = query(prom_addr, "rttlens_rtt_seconds{step=\"full\"}", within);
    assert!(v > 0.0, "the measured RTT: {v}");

    drop(prom);
    drop(serve);
    let _ = stx.send(());
    let _ = server.join();
    let _ = std::fs::remove_dir_all(&dir);
}
