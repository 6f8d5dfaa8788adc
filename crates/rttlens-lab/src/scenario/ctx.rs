//! What a scenario's `run` works with ([`ScenarioCtx`]): the lab, a
//! scratch directory, the servers it starts in the server namespace
//! (nginx, the built-in server in-process, Go) and the clients it runs in
//! the client namespace (curl, `openssl s_client`, the probe).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use rttlens_lab_net::{Host, Lab, LabError, Sysctls};
use rttlens_lab_server::builtin::{Server, ServerConfig};
use rttlens_lab_server::nginx;
use rttlens_lab_server::quic::{QuicConfig, QuicServer};

use super::fix::Change;

/// How long any one client command may take.
const CLIENT_TIMEOUT_S: u32 = 20;

/// The key log's name in the scenario's directory (beside its captures).
pub(crate) const KEYLOG_FILE: &str = "keylog.txt";

/// aioquic as the lab's HTTP/3 client ([`ScenarioCtx::aioquic_client`]),
/// written into the scenario's directory and run with python3.
const AIOQUIC_CLIENT: &str = include_str!("../../python/aioquic_client.py");

/// Where the quic-go client's stdout (a line per connection) and stderr
/// are kept in the scenario's directory, after the command each time.
pub(crate) const QUIC_GO_CLIENT_FILE: &str = "quic-go-client.txt";

/// What runs between the quic-go client's first connection and the next
/// ([`ScenarioCtx::quic_go_client`]): a server restart.
pub type Between = fn(&mut ScenarioCtx) -> Result<(), LabError>;

/// What a scenario's `run` works with: the lab, a scratch directory, and
/// the servers it started (stopped when the context drops).
pub struct ScenarioCtx<'a> {
    lab: &'a Lab,
    dir: PathBuf,
    nginx: Vec<nginx::Instance>,
    builtin: Vec<BuiltinHandle>,
    go: Vec<crate::go_server::GoServer>,
    /// Go servers started so far (stopped ones too): each gets its own
    /// directory.
    go_started: usize,
    /// The fix applied to what the scenario starts (its fixed variant).
    change: Option<Change>,
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
            go_started: 0,
            change: None,
        }
    }

    /// The same context making the scenario's fixed variant: `change`
    /// applied to every server, sysctl and curl command it starts.
    pub fn with_change(mut self, change: Option<Change>) -> ScenarioCtx<'a> {
        self.change = change;
        self
    }

    /// The fix this run applies (`None`: the scenario as it is), for a
    /// `run` that builds a client command itself.
    pub fn change(&self) -> Option<Change> {
        self.change
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
        let mut s = s.clone();
        if let Some(c) = self.change {
            c.sysctls(&mut s);
        }
        self.lab.set_sysctls(host, &s)
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
        if let Some(c) = self.change {
            c.nginx(&mut cfg);
        }
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
    pub fn builtin(&mut self, mut cfg: ServerConfig) -> Result<u16, LabError> {
        if let Some(c) = self.change {
            c.builtin(&mut cfg);
        }
        self.in_process("built-in server", move |started, stop| async move {
            let server = Server::bind(SocketAddr::new(Lab::SERVER_V4.into(), 0), cfg)
                .map_err(|e| e.to_string())?;
            started(server.local_addr().port());
            server
                .run_until(async {
                    let _ = stop.await;
                })
                .await
                .map_err(|e| e.to_string())
        })
    }

    /// Start the built-in QUIC/HTTP/3 server
    /// ([`rttlens_lab_server::quic`]) in the server namespace (in-process,
    /// its own tokio runtime on a thread there) on a free UDP port; returns
    /// the port. The lab's delay link carries its datagrams as it does TCP.
    ///
    /// # Errors
    /// [`LabError::Server`] when it cannot bind or refuses the knobs.
    pub fn quic_server(&mut self, mut cfg: QuicConfig) -> Result<u16, LabError> {
        if let Some(c) = self.change {
            c.quic(&mut cfg);
        }
        self.in_process("QUIC server", move |started, stop| async move {
            let server = QuicServer::bind(SocketAddr::new(Lab::SERVER_V4.into(), 0), cfg)
                .map_err(|e| e.to_string())?;
            started(server.local_addr().port());
            server
                .run_until(async {
                    let _ = stop.await;
                })
                .await
                .map_err(|e| e.to_string())
        })
    }

    /// Runs `serve` on a thread in the server namespace, on its own tokio
    /// runtime: it binds, calls `started` with its port, and serves until
    /// `stop` fires (when the scenario's handle is dropped). Returns the
    /// port once `started` was called (`what` names the server in errors).
    fn in_process<F, Fut>(&mut self, what: &'static str, serve: F) -> Result<u16, LabError>
    where
        F: FnOnce(Box<dyn FnOnce(u16) + Send>, tokio::sync::oneshot::Receiver<()>) -> Fut
            + Send
            + 'static,
        Fut: std::future::Future<Output = Result<(), String>>,
    {
        let (ptx, prx) = std::sync::mpsc::channel::<Result<(u16, i32), String>>();
        let (stx, srx) = tokio::sync::oneshot::channel::<()>();
        let thread = self.lab.thread_in(Host::Server, move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            let tell = ptx.clone();
            let started = Box::new(move |port: u16| {
                let _ = tell.send(Ok((port, nix::unistd::gettid().as_raw())));
            });
            let served = rt.block_on(serve(started, srx));
            if let Err(e) = &served {
                // before `started`: the reason it did not start (after it,
                // nobody waits for this any more)
                let _ = ptx.send(Err(e.clone()));
            }
            served
        });
        let mut handle = BuiltinHandle {
            tid: 0,
            stop: Some(stx),
            thread: Some(thread),
        };
        let (port, tid) = prx
            .recv_timeout(Duration::from_secs(10))
            .map_err(|_| LabError::Server(format!("{what} did not start within 10 s")))?
            .map_err(|e| LabError::Server(format!("{what}: {e}")))?;
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

    /// Start the quic-go HTTP/3 server ([`crate::go_server::GoServer::quic`],
    /// built on first use) in the server namespace on UDP `SERVER_V4:port`.
    /// Each start logs to its own directory, so a restarted server's log
    /// is kept beside the first one's.
    ///
    /// # Errors
    /// [`LabError::CommandMissing`] without Go, [`LabError::Server`].
    pub fn quic_go_server(
        &mut self,
        port: u16,
        o: &crate::go_server::QuicGoOptions,
    ) -> Result<(), LabError> {
        self.go_started += 1;
        let dir = self.dir.join(format!("quic-go-{port}-{}", self.go_started));
        let mut o = o.clone();
        if let Some(c) = self.change {
            c.quic_go(&mut o);
        }
        let server = crate::go_server::GoServer::quic(self.lab, &dir, port, &o)?;
        self.go.push(server);
        Ok(())
    }

    /// Stop every Go server this scenario started (to restart one with
    /// other knobs).
    pub fn stop_go(&mut self) {
        self.go.clear();
    }

    /// Run the quic-go client (`rttlens-quic-peer -get URL ARGS…`, built on
    /// first use) in the client namespace, its TLS secrets appended to
    /// [`ScenarioCtx::keylog`]; returns its stdout (a line per connection),
    /// also kept with its stderr in the scenario's directory
    /// (`quic-go-client.txt`, beside the captures `--keep` keeps).
    /// With `between`, the client is started with `-pause`: once its first
    /// connection is done, `between` runs (a server restart), then the
    /// client goes on with the others.
    ///
    /// # Errors
    /// [`LabError::CommandMissing`] without Go; [`LabError::Client`] when the
    /// client fails, does not pause, or takes longer than 20 s after the
    /// pause; what `between` returns.
    pub fn quic_go_client(
        &mut self,
        url: &str,
        args: &[&str],
        between: Option<Between>,
    ) -> Result<String, LabError> {
        use std::io::{BufRead, BufReader, Write};
        let bin = crate::go_server::build_quic_peer()?;
        let what = format!("rttlens-quic-peer -get {url} {}", args.join(" "));
        let failed = |stderr: String| LabError::Client {
            command: what.clone(),
            stderr,
        };
        let mut cmd = Command::new(&bin);
        cmd.arg("-get")
            .arg(url)
            .arg("-keylog")
            .arg(self.keylog())
            .args(args);
        if between.is_some() {
            cmd.arg("-pause");
        }
        let mut child = self
            .lab
            .netns(Host::Client)
            .command(&cmd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| failed(e.to_string()))?;
        let stdout = child.stdout.take();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            let Some(out) = stdout else { return };
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut lines = Vec::new();
        let limit = Duration::from_secs(u64::from(CLIENT_TIMEOUT_S));
        if let Some(between) = between {
            let deadline = std::time::Instant::now() + limit;
            loop {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                match rx.recv_timeout(left) {
                    Ok(l) if l == "paused" => break,
                    Ok(l) => lines.push(l),
                    Err(_) => {
                        let _ = child.kill();
                        let out = child
                            .wait_with_output()
                            .map_err(|e| failed(e.to_string()))?;
                        return Err(failed(format!(
                            "did not pause after its first connection: {}",
                            String::from_utf8_lossy(&out.stderr).trim()
                        )));
                    }
                }
            }
            if let Err(e) = between(self) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e);
            }
            let go_on = child
                .stdin
                .as_mut()
                .map(|i| i.write_all(b"go\n").and_then(|()| i.flush()));
            if let Some(Err(e)) = go_on {
                let _ = child.kill();
                let _ = child.wait();
                return Err(failed(format!("writing to its stdin: {e}")));
            }
        }
        drop(child.stdin.take());
        let out = crate::go_server::wait_bounded(child, limit).map_err(failed)?;
        lines.extend(rx.try_iter());
        // the reader thread may still hold the last lines: it ends with the pipe
        while let Ok(l) = rx.recv_timeout(Duration::from_millis(200)) {
            lines.push(l);
        }
        // its account kept beside the captures (`--keep`), a line per
        // connection
        let said = self.dir.join(QUIC_GO_CLIENT_FILE);
        let kept = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&said)
            .and_then(|mut f| {
                writeln!(f, "$ {what}")?;
                lines.iter().try_for_each(|l| writeln!(f, "{l}"))?;
                writeln!(f, "{}", String::from_utf8_lossy(&out.stderr).trim_end())
            });
        if let Err(source) = kept {
            return Err(LabError::Io {
                context: format!("writing {}", said.display()),
                source,
            });
        }
        if !out.status.success() {
            return Err(failed(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        Ok(lines.join("\n"))
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
        let changed;
        let args = match self.change {
            Some(c) => {
                changed = c.curl(args);
                &changed[..]
            }
            None => args,
        };
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

    /// Run aioquic as the HTTP/3 client (`python/aioquic_client.py`) in
    /// the client namespace: `connections` connections started at once,
    /// each with one request to `url`, a POST of `post` bytes when given
    /// (aioquic sends no BLOCKED frame while flow control holds it), else a
    /// GET; their TLS secrets appended to [`ScenarioCtx::keylog`]. Returns
    /// its stdout (a line per connection).
    ///
    /// # Errors
    /// [`LabError::CommandMissing`] without python3; [`LabError::Client`]
    /// without aioquic (`scripts/deps lab` installs it), when a request
    /// fails or when they take longer than 20 s.
    pub fn aioquic_client(
        &self,
        url: &str,
        post: Option<u64>,
        connections: u32,
    ) -> Result<String, LabError> {
        rttlens_lab_net::require_command("python3", "python3")?;
        let what = format!("aioquic_client.py {url} (post {post:?}, {connections} connections)");
        let script = self.dir.join("aioquic_client.py");
        std::fs::write(&script, AIOQUIC_CLIENT).map_err(|e| LabError::Io {
            context: format!("writing {}", script.display()),
            source: e,
        })?;
        let has_aioquic = Command::new("python3")
            .args(["-c", "import aioquic"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !has_aioquic {
            return Err(LabError::Client {
                command: what,
                stderr: "the Python package aioquic is missing: scripts/deps lab installs it (python3 -m pip install aioquic)".into(),
            });
        }
        let mut cmd = Command::new("timeout");
        cmd.arg("30")
            .arg("python3")
            .arg(&script)
            .arg(url)
            .arg(self.keylog())
            .arg("--connections")
            .arg(connections.to_string());
        if let Some(n) = post {
            cmd.arg("--post").arg(n.to_string());
        }
        self.client_output(cmd, &what, true)
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
