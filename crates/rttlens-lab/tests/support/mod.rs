//! The live tests' fixture over the shared lab ([`rttlens_lab_net::Lab`]: a
//! client and a server namespace joined by the userspace delay link):
//! real Linux TCP, a 2 × 5 ms link, servers in the server namespace
//! (nginx, or a plain HTTP server whose responses have exact sizes), loss
//! injected with nftables, captures taken with tcpdump at both hosts, and
//! the tests' own pcap reader (`rttlens-core/tests/support/pcap.rs`), an
//! oracle independent of the engine.
//!
//! Loss is injected *after* both capture points (the receiving namespace's
//! nftables input hook; tcpdump taps a packet before netfilter sees it),
//! so both captures see every transmission, as a capture at either end
//! host sees a loss on the path. The link's own loss knobs drop before the
//! receiver's capture, which is not what these tests are about.
//!
//! Needs root, `/dev/net/tun`, `ip` (iproute2), `nft` (nftables),
//! `tcpdump`, `nginx`, `curl` and `openssl`; [`TestLab::new`] fails naming
//! whatever is missing. Labs run one at a time (a process-wide lock): the
//! tests time real traffic and the machines are small.

#![allow(dead_code)] // each test binary uses its own part of the fixture

#[path = "../../../rttlens-core/tests/support/pcap.rs"]
mod pcap;

// each test binary uses its own part of the reader
#[allow(unused_imports)]
pub use pcap::{read_pcap, seq_after, Packet, Tcp};

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{sleep, JoinHandle};
use std::time::{Duration, Instant};

use rttlens_core::capture::CaptureReader;
use rttlens_core::model::ConnReport;
use rttlens_core::model::Finding;
use rttlens_core::pipeline::{self, CaptureSummary};
use rttlens_lab_net::{Host, Lab, LinkConfig, Tcpdump};
use rttlens_lab_server::nginx;

/// One-way delay of the link (ms): the RTT is twice this.
pub const DELAY_MS: u64 = 5;
/// SYN segments cross the link this much faster (µs): see
/// [`LinkConfig::syn_lead`].
pub const SYN_LEAD_US: u64 = 500;
/// Client address ([`Lab::CLIENT_V4`]).
pub const CLIENT_IP: &str = "10.77.0.1";
/// Server address ([`Lab::SERVER_V4`]).
pub const SERVER_IP: &str = "10.77.0.2";
/// Port nginx serves plain HTTP on.
pub const NGINX_PORT: u16 = 80;
/// HTTPS port of [`TestLab::nginx_tls`].
pub const TLS_PORT: u16 = 443;
/// Port the exact-size server ([`TestLab::exact_server`]) listens on.
pub const EXACT_PORT: u16 = 8080;
/// Payload bytes per full segment: MTU 1500 − IPv4 20 − TCP 20 − timestamps 12.
pub const MSS: usize = 1448;
/// Byte that marks the stream bytes the drop rules act on; the bodies the
/// servers send are otherwise lowercase letters, and HTTP headers have no run
/// of 8 of it.
pub const MARK: u8 = b'Z';

/// Environment variable: copy the lab's captures into this directory.
const KEEP_ENV: &str = "RTTLENS_KEEP_CAPTURES";

static SERIAL: Mutex<()> = Mutex::new(());
static COUNTER: AtomicU32 = AtomicU32::new(0);

fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Check what the lab needs; panic naming everything that is missing.
fn require() {
    let mut missing = Vec::new();
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        missing.push(e.to_string());
    }
    for (program, package) in [
        ("nft", "nftables"),
        ("tcpdump", "tcpdump"),
        ("nginx", "nginx-light"),
        ("curl", "curl"),
        ("openssl", "openssl"),
    ] {
        if let Err(e) = rttlens_lab_net::require_command(program, package) {
            missing.push(e.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "the lab tests need: {}",
        missing.join("; ")
    );
}

/// Run a command to completion within `limit`; kill it past that. For
/// commands with little output: the pipes are read once it has exited.
fn run_bounded(cmd: &mut Command, limit: Duration) -> Output {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < limit => sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what} did not finish within {limit:?}");
            }
        }
    }
    child.wait_with_output().expect("collect output")
}

/// Run a command that must succeed (within 10 s).
fn must(cmd: &mut Command) -> Output {
    let what = format!("{cmd:?}");
    let out = run_bounded(cmd, Duration::from_secs(10));
    assert!(
        out.status.success(),
        "{what} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    out
}

/// A running capture: tcpdump on a host's TUN device.
pub struct Capture {
    host: Host,
    dump: Tcpdump,
    /// The capture file.
    pub path: PathBuf,
}

/// The exact-size server's thread, stopped on drop.
struct ExactServer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<std::io::Result<std::io::Result<()>>>>,
}

impl Drop for ExactServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The lab of one test: the shared crate's [`Lab`] with a 10 ms link, the
/// servers started in it, and a scratch directory. Dropping it stops the
/// servers, removes the namespaces and the directory (captures are copied
/// first when `RTTLENS_KEEP_CAPTURES` names a directory).
pub struct TestLab {
    test: String,
    // field order is drop order: servers before the namespaces
    nginx: Vec<nginx::Instance>,
    exact: Vec<ExactServer>,
    lab: Lab,
    /// Scratch directory: configurations, docroots, captures.
    pub dir: PathBuf,
    /// Held for the lab's life; dropped last.
    _serial: MutexGuard<'static, ()>,
}

impl TestLab {
    /// Build the lab for the test named `test` (used in names and kept
    /// capture files), with a 10 ms RTT link whose SYNs lead by 0.5 ms.
    pub fn new(test: &str) -> TestLab {
        TestLab::with_link(test, |_| {})
    }

    /// [`TestLab::new`] with the link's knobs changed by `link` (a rate
    /// limit, …).
    pub fn with_link(test: &str, link: impl FnOnce(&mut LinkConfig)) -> TestLab {
        require();
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let dir = std::env::temp_dir().join(format!(
            "rttlens-labtest-{}-{}-{test}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&dir).expect("create the lab directory");
        let mut cfg = LinkConfig {
            rtt: Duration::from_millis(2 * DELAY_MS),
            syn_lead: Duration::from_micros(SYN_LEAD_US),
            ..LinkConfig::default()
        };
        link(&mut cfg);
        let lab = Lab::new(cfg).unwrap_or_else(|e| panic!("building the lab: {e}"));
        assert_eq!(SERVER_IP, Lab::SERVER_V4.to_string());
        assert_eq!(CLIENT_IP, Lab::CLIENT_V4.to_string());
        TestLab {
            test: test.to_string(),
            nginx: Vec::new(),
            exact: Vec::new(),
            lab,
            dir,
            _serial: serial,
        }
    }

    /// The shared lab underneath.
    pub fn lab(&self) -> &Lab {
        &self.lab
    }

    /// `program` with `args` in `host`'s namespace.
    fn command_in(&self, host: Host, program: &Path) -> Command {
        self.lab.netns(host).command(&Command::new(program))
    }

    /// Write `data` to `name` in the lab directory.
    pub fn write(&self, name: &str, data: &[u8]) -> PathBuf {
        let p = self.dir.join(name);
        fs::write(&p, data).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
        p
    }

    /// Set a sysctl (e.g. `net.ipv4.tcp_fastopen`) inside `host`'s namespace.
    pub fn sysctl(&self, host: Host, key: &str, value: &str) {
        self.lab
            .netns(host)
            .set_sysctl(&key.replace('.', "/"), value)
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// Run `program args…` in `host`'s namespace (at most 20 s) and return
    /// its output, successful or not.
    pub fn run_in(&self, host: Host, program: &str, args: &[&str]) -> Output {
        let path = find_tool(program).unwrap_or_else(|| panic!("`{program}` is missing"));
        run_bounded(
            self.command_in(host, &path).args(args),
            Duration::from_secs(20),
        )
    }

    /// Start nginx in the server namespace with the configuration `edit`
    /// makes from nginx's defaults on `SERVER_IP:port`, serving `files`
    /// (name, content) from its docroot.
    fn start_nginx(
        &mut self,
        port: u16,
        tls: bool,
        files: &[(&str, Vec<u8>)],
        edit: &dyn Fn(&mut nginx::Config),
    ) {
        let mut cfg = nginx::Config::new(SocketAddr::new(Lab::SERVER_V4.into(), port));
        cfg.tls = tls;
        cfg.files = Vec::new();
        cfg.access_log = false;
        edit(&mut cfg);
        let launch = nginx::Launch {
            prefix: self.lab.exec_prefix(Host::Server),
            ..nginx::Launch::default()
        };
        let dir = self.dir.join(format!("nginx-{port}"));
        let inst = nginx::Instance::start_with(&dir, &cfg, &launch)
            .unwrap_or_else(|e| panic!("nginx on port {port}: {e}"));
        let root = inst.dir().join("docroot");
        for (name, data) in files {
            fs::write(root.join(name), data).expect("web file");
        }
        self.nginx.push(inst);
    }

    /// Serve `files` (name, content) with nginx on the server, port 80.
    pub fn nginx(&mut self, files: &[(&str, Vec<u8>)]) {
        self.start_nginx(NGINX_PORT, false, files, &|_| {});
    }

    /// Serve `files` over HTTPS with nginx on the server, port [`TLS_PORT`]
    /// (self-signed certificate, TLS 1.2 and 1.3, a shared session cache and
    /// tickets), and over plain HTTP on port 80, both with the
    /// configuration `edit` makes (`fastopen`, `ssl_early_data`,
    /// `tcp_nodelay`).
    pub fn nginx_tls(&mut self, files: &[(&str, Vec<u8>)], edit: impl Fn(&mut nginx::Config)) {
        let edit = |c: &mut nginx::Config| {
            c.ssl_session_cache = Some("shared:SSL:1m".into());
            c.ssl_session_tickets = true;
            edit(c);
        };
        self.start_nginx(NGINX_PORT, false, files, &edit);
        self.start_nginx(TLS_PORT, true, files, &edit);
    }

    /// Serve responses of exactly `total` stream bytes (headers included,
    /// one write, so segment boundaries fall at multiples of the MSS) on
    /// port [`EXACT_PORT`]; the stream bytes in `mark` are [`MARK`]. Serves
    /// up to 4 connections, one at a time, each until the client closes.
    pub fn exact_server(&mut self, total: usize, mark: std::ops::Range<usize>) {
        assert!(
            mark.start <= mark.end && mark.end <= total,
            "mark within the response"
        );
        let head = |n: usize| {
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {n:010}\r\n\r\n"
            )
        };
        let body_len = total - head(0).len();
        let mut resp = head(body_len).into_bytes();
        resp.extend(body(body_len));
        resp[mark].fill(MARK);
        let stop = Arc::new(AtomicBool::new(false));
        let (ready, is_ready) = std::sync::mpsc::channel::<std::io::Result<()>>();
        let halt = Arc::clone(&stop);
        let thread = self.lab.thread_in(Host::Server, move || {
            let listener = match TcpListener::bind((Lab::SERVER_V4, EXACT_PORT)) {
                Ok(l) => l,
                Err(e) => {
                    let _ = ready.send(Err(e));
                    return Ok(());
                }
            };
            listener.set_nonblocking(true)?;
            let _ = ready.send(Ok(()));
            let end = Instant::now() + Duration::from_secs(60);
            let mut served = 0;
            // bounded: 4 connections, 60 s, or the lab dropping
            while served < 4 && Instant::now() < end && !halt.load(Ordering::Relaxed) {
                let (mut c, _) = match listener.accept() {
                    Ok(c) => c,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        sleep(Duration::from_millis(2));
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                served += 1;
                c.set_nonblocking(false)?;
                c.set_read_timeout(Some(Duration::from_secs(20)))?;
                let mut req = Vec::new();
                let mut buf = [0u8; 4096];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 65536 {
                    match c.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                c.write_all(&resp)?;
                // until the client closes (or 20 s)
                while matches!(c.read(&mut buf), Ok(n) if n > 0) {}
            }
            Ok(())
        });
        is_ready
            .recv_timeout(Duration::from_secs(10))
            .expect("the exact-size server started")
            .expect("the exact-size server bound its port");
        self.exact.push(ExactServer {
            stop,
            thread: Some(thread),
        });
    }

    /// Load an nftables ruleset in `host`'s namespace.
    pub fn nft(&self, host: Host, rules: &str) {
        let name = match host {
            Host::Client => "client",
            Host::Server => "server",
        };
        let f = self.write(&format!("{name}.nft"), rules.as_bytes());
        let nft = find_tool("nft").expect("`nft` (Debian package nftables)");
        must(self.command_in(host, &nft).arg("-f").arg(&f));
    }

    /// At the client, drop the first `times` transmissions of every segment
    /// from server port `sport` whose payload starts with 8 marker bytes
    /// (a set of sequence numbers per transmission: the k-th arrival of a
    /// sequence number is dropped while it is not yet in set k). Applied in
    /// the input hook, after the client's capture point.
    pub fn drop_marked(&self, sport: u16, times: usize) {
        let mark = format!("0x{}", format!("{MARK:02x}").repeat(8));
        let mut rules = String::from("table inet lab {\n");
        for k in 1..=times {
            rules +=
                &format!("  set seen{k} {{ typeof tcp sequence; flags dynamic; size 4096; }}\n");
        }
        rules += "  chain input {\n    type filter hook input priority 0; policy accept;\n";
        for k in 1..=times {
            rules += &format!(
                "    tcp sport {sport} @ih,0,64 {mark} tcp sequence != @seen{k} \
                 add @seen{k} {{ tcp sequence }} counter drop\n"
            );
        }
        rules += "  }\n}\n";
        self.nft(Host::Client, &rules);
    }

    /// At the server, drop the first transmission of every SYN to `dport`
    /// (after the server's capture point).
    pub fn drop_first_syn(&self, dport: u16) {
        self.nft(
            Host::Server,
            &format!(
                "table inet lab {{\n  set seen {{ typeof tcp sequence; flags dynamic; size 64; }}\n  \
                 chain input {{\n    type filter hook input priority 0; policy accept;\n    \
                 tcp dport {dport} tcp flags & (syn|ack) == syn tcp sequence != @seen \
                 add @seen {{ tcp sequence }} counter drop\n  }}\n}}\n"
            ),
        );
    }

    /// Packets the lab's nftables rules in `host` dropped.
    pub fn nft_drops(&self, host: Host) -> u64 {
        let nft = find_tool("nft").expect("`nft` (Debian package nftables)");
        let out = must(self.command_in(host, &nft).args(["list", "ruleset"]));
        let text = String::from_utf8_lossy(&out.stdout);
        text.split("counter packets ")
            .skip(1)
            .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .sum()
    }

    /// The kernel's TCP counters in `host`'s namespace (`/proc/net/snmp` and
    /// `/proc/net/netstat`, as `nstat` names them: `TcpRetransSegs`,
    /// `TcpExtTCPLossProbes`, `TcpExtTCPTimeouts`, …). The namespace is the
    /// lab's own, so they count this lab's connections only.
    pub fn tcp_counters(&self, host: Host) -> BTreeMap<String, u64> {
        let cat = find_tool("cat").expect("`cat` (Debian package coreutils)");
        let mut out = BTreeMap::new();
        for file in ["/proc/net/snmp", "/proc/net/netstat"] {
            let text = must(self.command_in(host, &cat).arg(file)).stdout;
            let text = String::from_utf8_lossy(&text);
            let lines: Vec<&str> = text.lines().collect();
            // pairs of lines: "Tcp: names…" then "Tcp: values…"
            for pair in lines.chunks(2) {
                let [names, values] = pair else { continue };
                let mut n = names.split_whitespace();
                let mut v = values.split_whitespace();
                let prefix = n
                    .next()
                    .unwrap_or_default()
                    .trim_end_matches(':')
                    .to_string();
                v.next();
                for (name, value) in n.zip(v) {
                    if let Ok(value) = value.parse() {
                        out.insert(format!("{prefix}{name}"), value);
                    }
                }
            }
        }
        out
    }

    /// Start tcpdump on `host`'s TUN device (2048 B a packet: every packet
    /// of the 1500 B MTU whole); returns once it listens.
    pub fn capture(&mut self, host: Host) -> Capture {
        let name = match host {
            Host::Client => "client",
            Host::Server => "server",
        };
        let path = self.dir.join(format!("{name}.pcap"));
        // a snapshot length above the MTU: a ring that holds a 4 MiB burst
        // (see Tcpdump::start_snaplen)
        let dump =
            Tcpdump::start_snaplen(self.lab.netns(host), rttlens_lab_net::TUN_NAME, &path, 2048)
                .unwrap_or_else(|e| panic!("tcpdump at the {name}: {e}"));
        Capture { host, dump, path }
    }

    /// Start captures at both hosts: [client, server].
    pub fn capture_both(&mut self) -> [Capture; 2] {
        [self.capture(Host::Client), self.capture(Host::Server)]
    }

    /// Stop a capture once its file has been quiet for 150 ms (at most 5 s),
    /// with SIGINT so tcpdump completes the file; check that it kept every
    /// packet it received.
    pub fn stop(&mut self, cap: Capture) -> PathBuf {
        let size = || fs::metadata(&cap.path).map(|m| m.len()).unwrap_or(0);
        let start = Instant::now();
        let (mut last, mut quiet) = (size(), 0);
        while quiet < 3 && start.elapsed() < Duration::from_secs(5) {
            sleep(Duration::from_millis(50));
            let now = size();
            quiet = if now == last { quiet + 1 } else { 0 };
            last = now;
        }
        let host = cap.host;
        let counts = cap.dump.stop_counted();
        // Linux tcpdump counts in "received by filter" a packet that reaches
        // the socket after its last read, while SIGINT stops it; the file
        // was quiet for 150 ms before, so such a packet is not part of the
        // exchange under test. More than one, or any kernel drop, and the
        // capture cannot be judged.
        let complete = match (counts.captured, counts.received) {
            (Some(c), Some(r)) => c <= r && r - c <= 1,
            _ => false,
        };
        assert!(
            complete && counts.dropped == Some(0),
            "the capture at the {host:?} is incomplete, the test cannot judge it: {counts:?}"
        );
        cap.path
    }

    /// Stop both captures: [client, server].
    pub fn stop_both(&mut self, caps: [Capture; 2]) -> [PathBuf; 2] {
        let [c, s] = caps;
        [self.stop(c), self.stop(s)]
    }

    /// `curl` from the client (at most 20 s); returns the body bytes it got.
    pub fn curl(&self, url: &str) -> u64 {
        let out = self.run_in(
            Host::Client,
            "curl",
            &[
                "-sS",
                "-o",
                "/dev/null",
                "--max-time",
                "15",
                "-w",
                "%{size_download}",
                url,
            ],
        );
        assert!(
            out.status.success(),
            "curl {url} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("curl size_download")
    }

    /// A slow reader from the client: a receive buffer of `rcvbuf` bytes,
    /// a pause of `pause_ms` before the first read of `GET path` (the
    /// sender fills the window and meets window 0), then reads to EOF
    /// (8 s at most); returns the bytes it read (headers included).
    pub fn slow_reader(&self, port: u16, path: &str, rcvbuf: u32, pause_ms: u32) -> u64 {
        let path = path.to_string();
        self.lab
            .run_in(Host::Client, move || -> std::io::Result<u64> {
                use socket2::{Domain, Socket, Type};
                let end = Instant::now() + Duration::from_secs(8);
                let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
                s.set_recv_buffer_size(rcvbuf as usize)?;
                s.set_read_timeout(Some(Duration::from_secs(8)))?;
                s.connect(&SocketAddr::new(Lab::SERVER_V4.into(), port).into())?;
                let mut s = std::net::TcpStream::from(s);
                s.write_all(
                    format!("GET {path} HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n")
                        .as_bytes(),
                )?;
                sleep(Duration::from_millis(u64::from(pause_ms)));
                let mut got = 0u64;
                let mut buf = vec![0u8; 1 << 16];
                while Instant::now() < end {
                    match s.read(&mut buf)? {
                        0 => break,
                        n => got += n as u64,
                    }
                }
                Ok(got)
            })
            .expect("enter the client namespace")
            .expect("the slow reader's exchange")
    }
}

impl Drop for TestLab {
    fn drop(&mut self) {
        self.nginx.clear();
        self.exact.clear();
        if let Some(keep) = std::env::var_os(KEEP_ENV) {
            let keep = PathBuf::from(keep);
            let _ = fs::create_dir_all(&keep);
            if let Ok(entries) = fs::read_dir(&self.dir) {
                for e in entries.flatten() {
                    let name = e.file_name();
                    if name.to_string_lossy().ends_with(".pcap") {
                        let to = keep.join(format!("{}-{}", self.test, name.to_string_lossy()));
                        let _ = fs::copy(e.path(), to);
                    }
                }
            }
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// A body of `len` lowercase letters (no [`MARK`] anywhere).
pub fn body(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| b'a' + ((i * 7 + (i >> 8)) % 26) as u8)
        .collect()
}

/// The payload starts with 8 marker bytes (what the drop rules match).
pub fn starts_marked(t: &Tcp) -> bool {
    t.payload.len() >= 8 && t.payload[..8].iter().all(|b| *b == MARK)
}

/// Transmissions of every marked segment from port `sport`, in the order of
/// their first transmission: the frames carrying each sequence number, in
/// capture order (the first is the original).
pub fn marked_transmissions(packets: &[Packet], sport: u16) -> Vec<Vec<&Packet>> {
    let mut by_seq: BTreeMap<u32, usize> = BTreeMap::new();
    let mut out: Vec<Vec<&Packet>> = Vec::new();
    for p in packets {
        if let Some(t) = &p.tcp {
            if t.sport == sport && starts_marked(t) {
                let i = *by_seq.entry(t.seq).or_insert_with(|| {
                    out.push(Vec::new());
                    out.len() - 1
                });
                out[i].push(p);
            }
        }
    }
    out
}

/// What the engine made of one capture.
pub struct Analyzed {
    /// The capture file.
    pub path: PathBuf,
    /// Its connections.
    pub conns: Vec<ConnReport>,
    /// The capture summary.
    pub summary: CaptureSummary,
    /// The packets, as the test's own reader sees them.
    pub packets: Vec<Packet>,
}

impl Analyzed {
    /// The only connection.
    pub fn conn(&self) -> &ConnReport {
        assert_eq!(
            self.conns.len(),
            1,
            "{}: expected one connection",
            self.name()
        );
        &self.conns[0]
    }

    /// Finding ids of the only connection.
    pub fn ids(&self) -> Vec<&'static str> {
        self.conn().findings.iter().map(|f| f.id).collect()
    }

    /// The finding `id` of the only connection; panics listing the others.
    pub fn finding(&self, id: &str) -> &Finding {
        let c = self.conn();
        c.findings.iter().find(|f| f.id == id).unwrap_or_else(|| {
            panic!(
                "{}: no {id} finding; findings: {:#?}",
                self.name(),
                c.findings
            )
        })
    }

    /// Where the capture was taken, for messages.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// Run the pipeline on `path` and read the packets with the test's reader.
/// Checks the finding contract on every finding (docs/design.md §5).
pub fn analyze(path: &Path) -> Analyzed {
    let mut reader = CaptureReader::open(path).expect("open capture");
    let mut conns = Vec::new();
    let summary = pipeline::run(
        &mut reader,
        &mut |c| conns.extend(c.into_tcp()),
        &mut |_| {},
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let a = Analyzed {
        path: path.to_path_buf(),
        conns,
        summary,
        packets: read_pcap(path).packets(),
    };
    check_contract(&a);
    a
}

/// Analyse the client and the server capture of one run. Both taps sit
/// before the injected loss, so they must hold the same TCP segments: if not,
/// the link lost some and the run cannot be judged.
pub fn analyze_both(paths: &[PathBuf; 2]) -> [Analyzed; 2] {
    let [c, s] = [analyze(&paths[0]), analyze(&paths[1])];
    let tcp = |a: &Analyzed| a.packets.iter().filter(|p| p.tcp.is_some()).count();
    assert_eq!(
        tcp(&c),
        tcp(&s),
        "the client and server captures differ in TCP segments: the link lost packets, \
         the run cannot be judged"
    );
    [c, s]
}

/// Every finding: evidence with frames inside the capture, a fix, a title,
/// a non-negative cost.
pub fn check_contract(a: &Analyzed) {
    for c in &a.conns {
        for f in &c.findings {
            let at = format!("{} connection {} finding {}", a.name(), c.index, f.id);
            assert!(!f.evidence.is_empty(), "{at}: no evidence");
            for e in &f.evidence {
                assert!(
                    e.frame >= 1 && e.frame <= a.summary.frames,
                    "{at}: evidence frame {} outside the capture's 1..={}",
                    e.frame,
                    a.summary.frames
                );
                assert!(
                    !rttlens_report::words::evidence(e).trim().is_empty(),
                    "{at}: evidence without text"
                );
            }
            assert!(
                !rttlens_report::words::fix(f).trim().is_empty(),
                "{at}: no fix"
            );
            assert!(
                !rttlens_report::words::title(f).trim().is_empty(),
                "{at}: no title"
            );
            assert!(
                f.cost.ms >= 0.0 && f.cost.rtts.is_none_or(|r| r >= 0.0),
                "{at}: negative cost {:?}",
                f.cost
            );
        }
    }
}
