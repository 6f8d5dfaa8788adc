//! `rttlens bench --lab SERVER`: the generator in the lab's client
//! namespace, a server in the server namespace, the delay link (chosen
//! RTT) between them. The servers, all with the same kind of certificate
//! (ECDSA P-256 by default, or RSA-2048, the key whose signature makes a
//! full handshake expensive for the server) and one core each so they
//! compare:
//!
//! - `nginx`: one worker (`master_process off`), `ssl_early_data on`,
//!   `worker_connections 16384`, `access_log off`, `backlog=4096`;
//! - `go`: `go/tls-server.go` on `crypto/tls` + `net/http`, `GOMAXPROCS=1`
//!   (Go's server does not implement 0-RTT: early data is rejected);
//! - `builtin`: rttlens' rustls server, 0-RTT up to 16 KiB.
//!
//! Each listens with a backlog of 4096 unless told otherwise
//! ([`LabTarget::backlog`]; Go's `net.Listen` takes the server namespace's
//! `net.core.somaxconn` as its backlog, so that is what is set for Go), and
//! the server namespace's `net.ipv4.tcp_syncookies` can be set
//! ([`LabTarget::syncookies`]): the accept-queue overflow and SYN-cookie
//! storms.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::{run, BenchConfig, BenchError, BenchProgress, BenchReport, LabInfo, ListenCounters};
use rttlens_lab::go_server::GoOptions;
use rttlens_lab::scenario::ScenarioCtx;
use rttlens_lab_net::LinkConfig;
use rttlens_lab_net::{Host, Lab, LabError};
use rttlens_lab_server::builtin::ServerConfig;

/// How late (p99, ms) the link may forward packets before the report says
/// the link, not the server, set the figures.
const LATE_MS: f64 = 1.0;

/// The port every lab target listens on.
pub const PORT: u16 = 443;

/// The servers' listen backlog unless [`LabTarget::backlog`] says
/// otherwise (also a fresh namespace's `net.core.somaxconn` since Linux
/// 5.4, Go's backlog).
pub const DEFAULT_BACKLOG: u32 = 4096;

/// The largest backlog (`--lab-backlog`): Go caps somaxconn there.
pub const MAX_BACKLOG: u32 = 65_535;

/// A lab target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabServer {
    /// nginx (Debian's nginx-light, OpenSSL).
    Nginx,
    /// The Go `crypto/tls` server.
    Go,
    /// The built-in rustls server.
    Builtin,
}

impl LabServer {
    /// Its name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            LabServer::Nginx => "nginx",
            LabServer::Go => "go",
            LabServer::Builtin => "builtin",
        }
    }
}

impl std::str::FromStr for LabServer {
    type Err = String;

    fn from_str(s: &str) -> Result<LabServer, String> {
        match s {
            "nginx" => Ok(LabServer::Nginx),
            "go" => Ok(LabServer::Go),
            "builtin" => Ok(LabServer::Builtin),
            _ => Err(format!("--lab '{s}': nginx, go or builtin")),
        }
    }
}

/// The server certificate's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LabCert {
    /// ECDSA P-256 (rcgen).
    #[default]
    P256,
    /// RSA 2048 (`openssl req -newkey rsa:2048`): the common web server
    /// key, whose private-key operation dominates a full handshake's cost.
    Rsa2048,
}

impl LabCert {
    /// Its name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            LabCert::P256 => "p256",
            LabCert::Rsa2048 => "rsa2048",
        }
    }
}

impl std::str::FromStr for LabCert {
    type Err = String;

    fn from_str(s: &str) -> Result<LabCert, String> {
        match s {
            "p256" => Ok(LabCert::P256),
            "rsa2048" => Ok(LabCert::Rsa2048),
            _ => Err(format!("--lab-cert '{s}': p256 or rsa2048")),
        }
    }
}

/// Where and how the lab target runs.
#[derive(Debug, Clone)]
pub struct LabTarget {
    /// The server.
    pub server: LabServer,
    /// The link's RTT.
    pub rtt: Duration,
    /// The certificate's key.
    pub cert: LabCert,
    /// Keep the servers' files and logs here (else a scratch directory,
    /// removed afterwards).
    pub keep: Option<PathBuf>,
    /// Write every packet to this pcapng, as the client end of the link
    /// sees them (a client vantage, as `tcpdump` on the client would).
    pub capture: Option<PathBuf>,
    /// The server's listen backlog (1..=[`MAX_BACKLOG`]; default
    /// [`DEFAULT_BACKLOG`]). nginx: `listen … backlog=N`; builtin: its
    /// `listen(2)`; both with the server namespace's `net.core.somaxconn`
    /// raised to N if below (it caps the backlog). Go: somaxconn set to N
    /// (Go's `net.Listen` uses it as its backlog).
    pub backlog: Option<u32>,
    /// The server namespace's `net.ipv4.tcp_syncookies` (0 never, 1 when
    /// a listener's SYN queue overflows, 2 always); default: the kernel's.
    pub syncookies: Option<u8>,
    /// The client namespace's `net.ipv4.tcp_timestamps` on or off
    /// (default: the kernel's, on). Off, the client's SYNs offer no
    /// timestamps, so a SYN-cookie SYN-ACK cannot carry the client's
    /// window scale and SACK in its TSval and carries the MSS alone.
    pub client_timestamps: Option<bool>,
}

impl LabTarget {
    /// Check the knobs' ranges.
    ///
    /// # Errors
    /// [`BenchError::Usage`] naming the option.
    pub fn validate(&self) -> Result<(), BenchError> {
        if let Some(n) = self.backlog {
            if !(1..=MAX_BACKLOG).contains(&n) {
                return Err(BenchError::Usage(format!(
                    "--lab-backlog {n}: 1 to {MAX_BACKLOG}"
                )));
            }
        }
        if let Some(c) = self.syncookies {
            if c > 2 {
                return Err(BenchError::Usage(format!(
                    "--lab-syncookies {c}: 0, 1 or 2"
                )));
            }
        }
        Ok(())
    }
}

/// An RSA-2048 self-signed pair made by `openssl req` in `dir`.
fn rsa2048(dir: &std::path::Path) -> Result<rttlens_lab_server::cert::SelfSigned, BenchError> {
    rttlens_lab_net::require_command("openssl", "openssl").map_err(lab_err)?;
    let (cert, key) = (dir.join("rsa-cert.pem"), dir.join("rsa-key.pem"));
    let out = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "7",
        ])
        .args(["-subj", "/CN=rttlens-lab", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| BenchError::Lab(format!("running openssl req: {e}")))?;
    if !out.status.success() {
        return Err(BenchError::Lab(format!(
            "openssl req -newkey rsa:2048 failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let read = |p: &std::path::Path| {
        std::fs::read_to_string(p).map_err(|e| BenchError::Lab(format!("{}: {e}", p.display())))
    };
    rttlens_lab_server::cert::SelfSigned::from_pem(&read(&cert)?, &read(&key)?)
        .map_err(|e| BenchError::Lab(e.to_string()))
}

/// Set the server namespace's `net.core.somaxconn` and
/// `net.ipv4.tcp_syncookies` for `target` (before its server listens);
/// returns the backlog the server will listen with.
fn server_sysctls(lab: &Lab, target: &LabTarget) -> Result<u32, BenchError> {
    let ns = lab.netns(Host::Server);
    const SOMAXCONN: &str = "net/core/somaxconn";
    if let Some(c) = target.syncookies {
        ns.set_sysctl("net/ipv4/tcp_syncookies", &c.to_string())
            .map_err(lab_err)?;
    }
    let somaxconn = || -> Result<u32, BenchError> {
        let v = ns.sysctl(SOMAXCONN).map_err(lab_err)?;
        v.parse()
            .map_err(|_| BenchError::Lab(format!("{SOMAXCONN} reads '{v}'")))
    };
    match (target.server, target.backlog) {
        // Go listens with somaxconn (capped at 65535)
        (LabServer::Go, Some(n)) => {
            ns.set_sysctl(SOMAXCONN, &n.to_string()).map_err(lab_err)?;
            Ok(n)
        }
        (LabServer::Go, None) => Ok(somaxconn()?.min(MAX_BACKLOG)),
        (_, n) => {
            let n = n.unwrap_or(DEFAULT_BACKLOG);
            // somaxconn caps listen(2)'s backlog
            if somaxconn()? < n {
                ns.set_sysctl(SOMAXCONN, &n.to_string()).map_err(lab_err)?;
            }
            Ok(n)
        }
    }
}

/// The server namespace's listen-queue counters (read from a thread in
/// it: `/proc/net` follows the process's first thread, `thread-self` the
/// reader's namespace).
fn server_counters(lab: &Lab) -> Option<ListenCounters> {
    let text = lab
        .netns(Host::Server)
        .run(|| std::fs::read_to_string("/proc/thread-self/net/netstat"))
        .ok()?
        .ok()?;
    ListenCounters::parse(&text)
}

fn lab_err(e: LabError) -> BenchError {
    BenchError::Lab(e.to_string())
}

/// Set up the lab with a link of `rtt`, start `server`, and run `cfg`
/// against it from the client namespace (`cfg.url` is replaced by the
/// server's; `-k` is implied, the certificate being self-signed). Its
/// `keep` directory, if given, keeps the servers' files and logs.
///
/// # Errors
/// [`BenchError::Usage`] for a backlog or syncookies value out of range,
/// [`BenchError::Lab`] when the lab or the server cannot start (not root,
/// nginx or Go missing), then as [`run`].
pub fn run_in_lab(
    target: &LabTarget,
    mut cfg: BenchConfig,
    cancel: Arc<AtomicBool>,
    mut progress: Box<dyn FnMut(&BenchProgress) + Send>,
) -> Result<BenchReport, BenchError> {
    target.validate()?;
    let (server, rtt) = (target.server, target.rtt);
    let lab = Lab::new(LinkConfig {
        rtt,
        capture: target
            .capture
            .clone()
            .map(|p| (p, rttlens_lab_net::link::CapturePoint::Ingress)),
        ..LinkConfig::default()
    })
    .map_err(lab_err)?;
    // thousands of connections a second from one address to one port:
    // the whole ephemeral range, and TIME_WAIT ports reused for new
    // outgoing connections (tcp_tw_reuse, timestamps protect them)
    let client = lab.netns(Host::Client);
    client
        .set_sysctl("net/ipv4/ip_local_port_range", "1024 65535")
        .map_err(lab_err)?;
    client
        .set_sysctl("net/ipv4/tcp_tw_reuse", "1")
        .map_err(lab_err)?;
    if let Some(on) = target.client_timestamps {
        client
            .set_sysctl("net/ipv4/tcp_timestamps", if on { "1" } else { "0" })
            .map_err(lab_err)?;
    }
    let backlog = server_sysctls(&lab, target)?;
    let scratch = target.keep.is_none();
    let dir = target.keep.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("rttlens-bench-lab-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir)
        .map_err(|e| BenchError::Lab(format!("creating {}: {e}", dir.display())))?;
    let result = (|| {
        let mut ctx = ScenarioCtx::new(&lab, dir.clone());
        let certificate = match target.cert {
            LabCert::P256 => None,
            LabCert::Rsa2048 => Some(rsa2048(&dir)?),
        };
        let port = match server {
            LabServer::Nginx => {
                if let Some(c) = &certificate {
                    // nginx's configuration keeps a certificate it finds in
                    // its directory (nginx::Config::write)
                    let d = dir.join(format!("nginx-{PORT}"));
                    let write = |name: &str, text: &str| {
                        std::fs::create_dir_all(&d)
                            .and_then(|()| std::fs::write(d.join(name), text))
                            .map_err(|e| BenchError::Lab(format!("{}: {e}", d.display())))
                    };
                    write("cert.pem", &c.cert_pem)?;
                    write("key.pem", &c.key_pem)?;
                }
                ctx.nginx(PORT, |n| {
                    n.ssl_early_data = true;
                    n.access_log = false;
                    n.worker_connections = 16_384;
                    n.backlog = Some(backlog);
                })
                .map_err(lab_err)?;
                PORT
            }
            LabServer::Go => {
                let o = GoOptions {
                    procs: 1,
                    certificate: certificate.clone(),
                    ..GoOptions::default()
                };
                ctx.go_server(PORT, &o).map_err(lab_err)?;
                PORT
            }
            LabServer::Builtin => ctx
                .builtin(ServerConfig {
                    early_data: 16_384,
                    backlog: i32::try_from(backlog).unwrap_or(i32::MAX),
                    certificate: certificate.clone(),
                    ..ServerConfig::default()
                })
                .map_err(lab_err)?,
        };
        let path = rttlens_probe::Target::parse(&cfg.url).map_or_else(|_| "/".into(), |t| t.path);
        cfg.url = format!("https://{}:{port}{path}", Lab::SERVER_V4);
        cfg.lab = Some(LabInfo {
            server: server.name().into(),
            rtt_ms: rtt.as_secs_f64() * 1000.0,
            cert: target.cert.name().into(),
            backlog: Some(backlog),
            server_tcp: None,
            client_timestamps: lab
                .netns(Host::Client)
                .sysctl("net/ipv4/tcp_timestamps")
                .ok()
                .map(|v| v != "0"),
            syncookies: lab
                .netns(Host::Server)
                .sysctl("net/ipv4/tcp_syncookies")
                .ok()
                .and_then(|v| v.parse().ok()),
        });
        cfg.server_pids = ctx.server_pids();
        cfg.link_threads = lab
            .link_stats()
            .thread_ids
            .iter()
            .filter_map(|t| u32::try_from(*t).ok())
            .collect();
        cfg.tls.insecure = true;
        let mut report = lab
            .run_in(Host::Client, move || run(&cfg, &cancel, &mut *progress))
            .map_err(|source| BenchError::Io {
                context: "entering the lab's client namespace".into(),
                source,
            })??;
        if let Some(l) = report.lab.as_mut() {
            l.server_tcp = server_counters(&lab);
        }
        let stats = lab.link_stats();
        if let Some(l) = report.link.as_mut() {
            l.late_p50_ms = Some(stats.error_quantile_us(0.5) as f64 / 1000.0);
            l.late_p99_ms = Some(stats.error_quantile_us(0.99) as f64 / 1000.0);
            l.late_max_ms = Some(stats.error_max_us as f64 / 1000.0);
            // lateness, not CPU: the scheduler thread spins before each
            // deadline, so it looks busy long before it falls behind
            if l.late_p99_ms.unwrap_or(0.0) > LATE_MS {
                report.notes.push(format!(
                    "the lab's link fell behind (packets left up to {:.1} ms late, p99 {:.2} ms; \
                     its busiest thread {:.2} cores busy): the figures measure this machine's \
                     userspace link as much as the server; lower --rate",
                    l.late_max_ms.unwrap_or(0.0),
                    l.late_p99_ms.unwrap_or(0.0),
                    l.busiest_thread_cores_busy
                ));
            }
        }
        Ok(report)
    })();
    drop(lab);
    if scratch {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}
