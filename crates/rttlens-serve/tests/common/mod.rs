//! What the exporter's tests share: servers on threads of their own (the
//! exporter, the lab's built-in TLS server), a bounded HTTP GET, the
//! exposition read back.

#![allow(dead_code)] // each test file uses a part

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use rttlens_lab_server::builtin::{Server as Builtin, ServerConfig};
use rttlens_serve::{Config, ServeOptions, Server};

/// A server run on a thread of its own, stopped on drop.
pub struct Running {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub fn run_on_thread<F, Fut>(start: F) -> Running
where
    F: FnOnce(tokio::sync::oneshot::Receiver<()>, std::sync::mpsc::Sender<SocketAddr>) -> Fut
        + Send
        + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let (atx, arx) = std::sync::mpsc::channel();
    let (stx, srx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(start(srx, atx));
    });
    let addr = arx
        .recv_timeout(Duration::from_secs(10))
        .expect("server started within 10 s");
    Running {
        addr,
        stop: Some(stx),
        thread: Some(thread),
    }
}

/// The built-in TLS server: tickets, 0-RTT up to 16 KiB, optionally a
/// think time before each response.
pub fn target(think: Duration) -> Running {
    target_with(ServerConfig {
        early_data: 16_384,
        think,
        ..ServerConfig::default()
    })
}

/// The built-in TLS server with `cfg`, on a loopback port.
pub fn target_with(cfg: ServerConfig) -> Running {
    run_on_thread(move |stop, addr| async move {
        let server = Builtin::bind("127.0.0.1:0".parse().expect("addr"), cfg).expect("bind");
        addr.send(server.local_addr()).expect("send addr");
        server
            .run_until(async {
                let _ = stop.await;
            })
            .await
            .expect("built-in server");
    })
}

pub const CONFIG: &str = "\
modules:
  https:
    insecure: true
    timeout: 10s
  resumed:
    insecure: true
    tls_version: \"1.3\"
    resumption: true
    zero_rtt: true
    fail_if_not_verified: true
  quick:
    insecure: true
    timeout: 1s
";

pub fn exporter(max_concurrent: usize) -> Running {
    exporter_with(CONFIG, max_concurrent, &[])
}

/// An exporter of the modules in `config` (YAML), with `allow` as its
/// `--allow-target` entries.
pub fn exporter_with(config: &str, max_concurrent: usize, allow: &[&str]) -> Running {
    let config = Config::parse(config, Path::new("test.yml")).expect("config");
    let allow_targets = allow.iter().map(|s| s.to_string()).collect();
    run_on_thread(move |stop, addr| async move {
        let server = Server::bind(ServeOptions {
            listen: "127.0.0.1:0".parse().expect("addr"),
            config,
            max_concurrent,
            interface: None,
            allow_targets,
        })
        .expect("bind");
        addr.send(server.local_addr()).expect("send addr");
        server
            .run_until(async {
                let _ = stop.await;
            })
            .await
            .expect("serve");
    })
}

/// `GET path` over a fresh connection: (status, body). Bounded by a 60 s
/// read timeout.
pub fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("response");
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a response head");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status code");
    // hyper answers small bodies with Content-Length; decode chunked in
    // case it does not
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    (status, body)
}

pub fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((len, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(len.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

/// The samples of an exposition: `name{labels}` → value.
pub fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

pub fn value(s: &BTreeMap<String, f64>, key: &str) -> f64 {
    *s.get(key)
        .unwrap_or_else(|| panic!("{key} is missing from {s:#?}"))
}

pub fn probe_path(target: &str, module: &str) -> String {
    format!(
        "/probe?target={}&module={module}",
        target.replace(':', "%3A").replace('/', "%2F")
    )
}
