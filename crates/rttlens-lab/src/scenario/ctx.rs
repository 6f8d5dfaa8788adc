//! What a scenario's `run` works with ([`ScenarioCtx`]): the lab, a
//! scratch directory, the servers it starts in the server namespace
//! (nginx, the built-in server in-process, Go) and the clients it runs in
//! the client namespace (curl, `openssl s_client`, the probe).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use rttlens_lab_server::builtin::{Server, ServerConfig};
use rttlens_lab_server::nginx;
use rttlens_lab_server::quic::{QuicConfig, QuicServer};
use rttlens_net::{Host, Lab, LabError, Sysctls};

/// How long any one client command may take.
const CLIENT_TIMEOUT_S: u32 = 20;

/// The key log's name in the scenario's directory (beside its captures).
pub(crate) const KEYLOG_FILE: &str = "keylog.txt";

/// What a scenario's `run` works with: the lab, a scratch directory, and
/// the servers it started (stopped when the context drops).
pub struct ScenarioCtx<'a> {
    lab: &'a Lab,
    dir: PathBuf,
    nginx: Vec<nginx::Instance>,
    builtin: Vec<BuiltinHandle>,
    go: Vec<crate::go_server::GoServer>,
}

struct BuiltinHandle {
    /// The thread's ID (its CPU time is the server's).
    tid: i32,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<std::io::Result<Result<(), String>>>>,
}

impl Drop for BuiltinHandle {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl std::fmt::Debug for ScenarioCtx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScenarioCtx")
            .field("dir", &self.dir)
            .field("nginx", &self.nginx.len())
            .field("builtin", &self.builtin.len())
            .finish()
    }
}

impl<'a> ScenarioCtx<'a> {
    /// A context on `lab` with scratch directory `dir` (created by the
    /// caller), for experiments outside the catalogue (the probe's tests).
    /// Its servers stop when it drops.
    pub fn new(lab: &'a Lab, dir: PathBuf) -> ScenarioCtx<'a> {
        ScenarioCtx {
            lab,
            dir,
            nginx: Vec::new(),
            builtin: Vec::new(),
            go: Vec::new(),
        }
    }

    /// The lab.
    pub fn lab(&self) -> &Lab {
        self.lab
    }

    /// The scenario's scratch directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Apply per-namespace sysctls.
    ///
    /// # Errors
    /// See [`Lab::set_sysctls`].
    pub fn sysctls(&self, host: Host, s: &Sysctls) -> Result<(), LabError> {
        self.lab.set_sysctls(host, s)
    }

    /// Start nginx in the server namespace on `SERVER_V4:port` with the
    /// configuration `edit` makes from nginx's defaults (TLS on).
    ///
    /// # Errors
    /// [`LabError::Server`] with nginx's complaint.
    pub fn nginx(
        &mut self,
        port: u16,
        edit: impl FnOnce(&mut nginx::Config),
    ) -> Result<(), LabError> {
        let mut cfg = nginx::Config::new(SocketAddr::new(Lab::SERVER_V4.into(), port));
        edit(&mut cfg);
        let launch = nginx::Launch {
            prefix: self.lab.exec_prefix(Host::Server),
            ..nginx::Launch::default()
        };
        let dir = self.dir.join(format!("nginx-{port}"));
        let inst = nginx::Instance::start_with(&dir, &cfg, &launch)
            .map_err(|e| LabError::Server(format!("nginx: {e}")))?;
        self.nginx.push(inst);
        Ok(())
    }

    /// Stop every nginx this scenario started (to restart one with another
    /// configuration).
    pub fn stop_nginx(&mut self) {
        self.nginx.clear();
    }

    /// Start the built-in server in the server namespace (in-process, its
    /// own tokio runtime on a thread there) on a free port; returns the port.
    ///
    /// # Errors
    /// [`LabError::Server`] when it cannot bind or refuses the knobs.
    pub fn builtin(&mut self, cfg: ServerConfig) -> Result<u16, LabError> {
        let (ptx, prx) = std::sync::mpsc::channel::<Result<(u16, i32), String>>();
        let (stx, srx) = tokio::sync::oneshot::channel::<()>();
        let thread = self.lab.thread_in(Host::Server, move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async move {
                let server = match Server::bind(SocketAddr::new(Lab::SERVER_V4.into(), 0), cfg) {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ptx.send(Err(e.to_string()));
                        return Ok(());
                    }
                };
                let tid = nix::unistd::gettid().as_raw();
                let _ = ptx.send(Ok((server.local_addr().port(), tid)));
                server
                    .run_until(async {
                        let _ = srx.await;
                    })
                    .await
                    .map_err(|e| e.to_string())
            })
        });
        let mut handle = BuiltinHandle {
            tid: 0,
            stop: Some(stx),
            thread: Some(thread),
        };
        let (port, tid) = prx
            .recv_timeout(Duration::from_secs(10))
            .map_err(|_| LabError::Server("built-in server did not start within 10 s".into()))?
            .map_err(|e| LabError::Server(format!("built-in server: {e}")))?;
        handle.tid = tid;
        self.builtin.push(handle);
        Ok(port)
    }

    /// Start the built-in QUIC/HTTP/3 server
    /// ([`rttlens_lab_server::quic`]) in the server namespace (in-process,
    /// its own tokio runtime on a thread there) on a free UDP port; returns
    /// the port. The lab's delay link carries its datagrams as it does TCP.
    ///
    /// # Errors
    /// [`LabError::Server`] when it cannot bind or refuses the knobs.
    pub fn quic_server(&mut self, cfg: QuicConfig) -> Result<u16, LabError> {
        let (ptx, prx) = std::sync::mpsc::channel::<Result<(u16, i32), String>>();
        let (stx, srx) = tokio::sync::oneshot::channel::<()>();
        let thread = self.lab.thread_in(Host::Server, move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async move {
                let addr = SocketAddr::new(Lab::SERVER_V4.into(), 0);
                let server = match QuicServer::bind(addr, cfg) {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ptx.send(Err(e.to_string()));
                        return Ok(());
                    }
                };
                let tid = nix::unistd::gettid().as_raw();
                let _ = ptx.send(Ok((server.local_addr().port(), tid)));
                server
                    .run_until(async {
                        let _ = srx.await;
                    })
                    .await
                    .map_err(|e| e.to_string())
            })
        });
        let mut handle = BuiltinHandle {
            tid: 0,
            stop: Some(stx),
            thread: Some(thread),
        };
        let (port, tid) = prx
            .recv_timeout(Duration::from_secs(10))
            .map_err(|_| LabError::Server("QUIC server did not start within 10 s".into()))?
            .map_err(|e| LabError::Server(format!("QUIC server: {e}")))?;
        handle.tid = tid;
        self.builtin.push(handle);
        Ok(port)
    }

    /// Start the Go server (`go/tls-server.go`, built on first use) in the
    /// server namespace on `SERVER_V4:port`.
    ///
    /// # Errors
    /// [`LabError::CommandMissing`] without Go, [`LabError::Server`].
    pub fn go_server(
        &mut self,
        port: u16,
        o: &crate::go_server::GoOptions,
    ) -> Result<(), LabError> {
        let dir = self.dir.join(format!("go-{port}"));
        let server = crate::go_server::GoServer::start(self.lab, &dir, port, o)?;
        self.go.push(server);
        Ok(())
    }

    /// The servers running, as (what, ID): nginx and Go processes (`nginx
    /// pid`, `go pid`), and the built-in server's thread (`builtin thread`,
    /// its thread ID in this process).
    pub fn server_pids(&self) -> Vec<(String, u32)> {
        let mut v: Vec<(String, u32)> = Vec::new();
        v.extend(
            self.nginx
                .iter()
                .filter_map(|n| n.pid())
                .map(|p| ("nginx pid".into(), p)),
        );
        v.extend(
            self.go
                .iter()
                .filter_map(|g| g.pid())
                .map(|p| ("go pid".into(), p)),
        );
        v.extend(
            self.builtin
                .iter()
                .filter_map(|b| u32::try_from(b.tid).ok())
                .map(|t| ("builtin thread".into(), t)),
        );
        v
    }

    /// Run `curl -sS -k -o /dev/null --max-time 20 ARGS…` in the client
    /// namespace.
    ///
    /// # Errors
    /// [`LabError::Client`] when curl fails.
    pub fn curl(&self, args: &[&str]) -> Result<String, LabError> {
        self.run_curl(CLIENT_TIMEOUT_S, args, true)
    }

    /// Run `curl -sS -k -o /dev/null --max-time MAX_TIME_S ARGS…` in the
    /// client namespace when the transfer is expected to fail (a dead
    /// path): curl's exit status is not checked.
    ///
    /// # Errors
    /// [`LabError::Client`] when curl cannot be run.
    pub fn curl_may_fail(&self, max_time_s: u32, args: &[&str]) -> Result<String, LabError> {
        self.run_curl(max_time_s.min(CLIENT_TIMEOUT_S), args, false)
    }

    fn run_curl(&self, max_time_s: u32, args: &[&str], check: bool) -> Result<String, LabError> {
        let mut cmd = Command::new("curl");
        let t = max_time_s.to_string();
        cmd.args(["-sS", "-k", "-o", "/dev/null", "--max-time", &t])
            .args(args);
        self.client_output(cmd, &format!("curl {}", args.join(" ")), check)
    }

    /// Where the scenario's TLS clients write their keys (NSS key log
    /// format: curl's and OpenSSL's `SSLKEYLOGFILE`, `openssl s_client
    /// -keylogfile`); the analysis of the scenario's captures reads it.
    pub fn keylog(&self) -> PathBuf {
        self.dir.join(KEYLOG_FILE)
    }

    /// Run the project's probe (`rttlens probe`) in the client namespace.
    ///
    /// # Errors
    /// [`LabError::Client`] when the probe fails (naming the phase) or one
    /// of its checks (resumed, early data accepted, TFO) did not hold.
    pub fn probe(
        &self,
        cfg: rttlens_probe::ProbeConfig,
    ) -> Result<rttlens_probe::ProbeReport, LabError> {
        let what = format!("rttlens probe {}", cfg.url);
        let failed_with = |stderr: String| LabError::Client {
            command: what.clone(),
            stderr,
        };
        let report = self
            .lab
            .run_in(Host::Client, move || rttlens_probe::run(&cfg))
            .map_err(|e| failed_with(e.to_string()))?
            .map_err(|e| failed_with(e.to_string()))?;
        let failed: Vec<String> = report
            .attempts
            .iter()
            .flat_map(|a| a.checks.iter().map(move |c| (a.index, c)))
            .filter(|(_, c)| c.ok != Some(true))
            .map(|(i, c)| format!("attempt {i}: {} {:?} ({})", c.what, c.ok, c.how))
            .collect();
        if !failed.is_empty() {
            return Err(LabError::Client {
                command: what,
                stderr: format!("checks did not hold: {}", failed.join("; ")),
            });
        }
        Ok(report)
    }

    /// Run `sh -c SCRIPT` in the client namespace (bounded by `timeout`)
    /// and return its stdout; the exit status is not checked (openssl
    /// s_client exits non-zero on benign closes).
    ///
    /// # Errors
    /// [`LabError::Client`] when it cannot be run.
    pub fn sh(&self, script: &str) -> Result<String, LabError> {
        let mut cmd = Command::new("timeout");
        cmd.arg(CLIENT_TIMEOUT_S.to_string())
            .args(["sh", "-c", script]);
        self.client_output(cmd, script, false)
    }

    fn client_output(&self, cmd: Command, what: &str, check: bool) -> Result<String, LabError> {
        let out = self
            .lab
            .netns(Host::Client)
            .command(&cmd)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| LabError::Client {
                command: what.to_string(),
                stderr: e.to_string(),
            })?;
        if check && !out.status.success() {
            return Err(LabError::Client {
                command: what.to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}
