//! Debian's real Prometheus for the tests: started on a configuration,
//! asked through its HTTP query API. Every wait is bounded.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills and reaps the child on drop (only the processes a test started,
/// by their own PID).
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The path of `program`, or a failure naming its Debian package.
pub fn require(program: &str, package: &str) -> PathBuf {
    for dir in std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .chain(["/usr/sbin", "/sbin"])
    {
        let p = Path::new(dir).join(program);
        if p.is_file() {
            return p;
        }
    }
    panic!(
        "this test needs `{program}` (Debian package `{package}`): run scripts/deps test as root \
         (apt-get install -y {package})"
    );
}

/// A free port on 127.0.0.1 of this thread's network namespace.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `GET path` in HTTP/1.0 (no chunked answer) from this thread's network
/// namespace: (status, body).
pub fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
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

/// %-encoding of a query parameter's value.
pub fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Ask Prometheus at `prom` the instant query `q` until it answers a
/// sample (at most `within`): the first sample's labels and value. Asked
/// from this thread's network namespace.
pub fn query(prom: SocketAddr, q: &str, within: Duration) -> (serde_json::Value, f64) {
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

/// Ask `q` once: Prometheus' status code and answer (JSON: `status`
/// `success` with `data`, or `error` naming what it could not parse).
pub fn query_once(prom: SocketAddr, q: &str) -> (u16, serde_json::Value) {
    let (status, body) = get(prom, &format!("/api/v1/query?query={}", encode(q)))
        .unwrap_or_else(|| panic!("Prometheus did not answer `{q}`"));
    let v = serde_json::from_str(&body)
        .unwrap_or_else(|e| panic!("Prometheus answered `{q}` with no JSON ({e}): {body}"));
    (status, v)
}

/// [`query`] until the value satisfies `ok` (at most `within`): the last
/// sample's labels and value.
pub fn query_until(
    prom: SocketAddr,
    q: &str,
    within: Duration,
    ok: impl Fn(f64) -> bool,
) -> (serde_json::Value, f64) {
    let until = Instant::now() + within;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let (labels, v) = query(prom, q, left.max(Duration::from_secs(1)));
        if ok(v) {
            return (labels, v);
        }
        assert!(
            Instant::now() < until,
            "`{q}` was still {v} after {within:?}: {labels}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// blackbox_exporter's relabelling: the target as the `target`
/// parameter and the `instance` label, the scrape to `exporter`. One job
/// `job` of `module` over `targets`, every `interval`.
pub fn probe_job(
    job: &str,
    module: &str,
    targets: &[&str],
    exporter: SocketAddr,
    interval: &str,
) -> String {
    let targets: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
    format!(
        "  - job_name: {job}\n    metrics_path: /probe\n    scrape_interval: {interval}\n    \
         scrape_timeout: {interval}\n    params:\n      module: [{module}]\n    static_configs:\n      \
         - targets: [{}]\n    relabel_configs:\n      - source_labels: [__address__]\n        \
         target_label: __param_target\n      - source_labels: [__param_target]\n        \
         target_label: instance\n      - target_label: __address__\n        replacement: {exporter}\n",
        targets.join(", ")
    )
}

/// Start `prometheus` with `jobs` (the `scrape_configs` items) in `dir`
/// (made afresh), listening on `listen`, with `extra` flags; `wrap` makes
/// the command that runs it (`|c| netns.command(&c)` to put it in a
/// namespace, `|c| c` otherwise). Its log is `dir/prometheus.log`.
pub fn start(
    dir: &Path,
    jobs: &str,
    listen: SocketAddr,
    extra: &[&str],
    wrap: impl FnOnce(Command) -> Command,
) -> Reaped {
    let prometheus = require("prometheus", "prometheus");
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("prometheus dir");
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n{jobs}"),
    )
    .expect("write prometheus.yml");
    let log = std::fs::File::create(dir.join("prometheus.log")).expect("log");
    let mut cmd = Command::new(prometheus);
    cmd.arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={listen}"))
        .args(extra);
    Reaped(
        wrap(cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus"),
    )
}
