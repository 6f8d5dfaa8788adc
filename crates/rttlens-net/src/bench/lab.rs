//! `rttlens bench --lab SERVER`: the generator in the lab's client
//! namespace, a server in the server namespace, the delay link (chosen
//! RTT) between them. The servers, all with the same kind of certificate
//! (ECDSA P-256, [`rttlens_lab_server::cert`]) and one core each so they
//! compare:
//!
//! - `nginx`: one worker (`master_process off`), `ssl_early_data on`,
//!   `worker_connections 16384`, `access_log off`, `backlog=4096`;
//! - `go`: `go/tls-server.go` on `crypto/tls` + `net/http`, `GOMAXPROCS=1`
//!   (Go's server does not implement 0-RTT: early data is rejected);
//! - `builtin`: rttlens' rustls server, 0-RTT up to 16 KiB.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use super::{run, BenchConfig, BenchError, BenchReport, LabInfo, Progress};
use crate::lab::go_server::GoOptions;
use crate::lab::scenario::Ctx;
use crate::lab::{Lab, LabError, Side};
use crate::LinkConfig;
use rttlens_lab_server::builtin::ServerConfig;

/// The port every lab target listens on.
pub const PORT: u16 = 443;

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

fn lab_err(e: LabError) -> BenchError {
    BenchError::Lab(e.to_string())
}

/// Set up the lab with a link of `rtt`, start `server`, and run `cfg`
/// against it from the client namespace (`cfg.url` is replaced by the
/// server's; `-k` is implied, the certificate being self-signed). Its
/// `keep` directory, if given, keeps the servers' files and logs.
///
/// # Errors
/// [`BenchError::Lab`] when the lab or the server cannot start (not root,
/// nginx or Go missing), then as [`run`].
pub fn run_in_lab(
    server: LabServer,
    rtt: Duration,
    keep: Option<PathBuf>,
    mut cfg: BenchConfig,
    cancel: Arc<AtomicBool>,
    mut progress: Box<dyn FnMut(&Progress) + Send>,
) -> Result<BenchReport, BenchError> {
    let lab = Lab::new(LinkConfig {
        rtt,
        ..LinkConfig::default()
    })
    .map_err(lab_err)?;
    // thousands of connections a second from one address to one port:
    // the whole ephemeral range, and TIME_WAIT ports reused for new
    // outgoing connections (tcp_tw_reuse, timestamps protect them)
    let client = lab.netns(Side::Client);
    client
        .set_sysctl("net/ipv4/ip_local_port_range", "1024 65535")
        .map_err(lab_err)?;
    client
        .set_sysctl("net/ipv4/tcp_tw_reuse", "1")
        .map_err(lab_err)?;
    let scratch = keep.is_none();
    let dir = keep.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("rttlens-bench-lab-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir)
        .map_err(|e| BenchError::Lab(format!("creating {}: {e}", dir.display())))?;
    let result = (|| {
        let mut ctx = Ctx::new(&lab, dir.clone());
        let port = match server {
            LabServer::Nginx => {
                ctx.nginx(PORT, |n| {
                    n.ssl_early_data = true;
                    n.access_log = false;
                    n.worker_connections = 16_384;
                    n.backlog = Some(4096);
                })
                .map_err(lab_err)?;
                PORT
            }
            LabServer::Go => {
                let o = GoOptions {
                    procs: 1,
                    ..GoOptions::default()
                };
                ctx.go_server(PORT, &o).map_err(lab_err)?;
                PORT
            }
            LabServer::Builtin => ctx
                .builtin(ServerConfig {
                    early_data: 16_384,
                    backlog: 4096,
                    ..ServerConfig::default()
                })
                .map_err(lab_err)?,
        };
        let path = crate::probe::Target::parse(&cfg.url).map_or_else(|_| "/".into(), |t| t.path);
        cfg.url = format!("https://{}:{port}{path}", Lab::SERVER_V4);
        cfg.lab = Some(LabInfo {
            server: server.name().into(),
            rtt_ms: rtt.as_secs_f64() * 1000.0,
        });
        cfg.server_pids = ctx.server_pids();
        cfg.tls.insecure = true;
        lab.run_in(Side::Client, move || run(&cfg, &cancel, &mut *progress))
            .map_err(|source| BenchError::Io {
                context: "entering the lab's client namespace".into(),
                source,
            })?
    })();
    drop(lab);
    if scratch {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}
