//! Lab scenarios: each one is a topology (link knobs, sysctls), a server
//! configuration, a client action and the findings the engine must report
//! on a capture of what happened.
//!
//! [`catalogue`] lists them; [`run_scenario`] builds a fresh [`Lab`] for
//! one, captures on the client's TUN device (tcpdump; the server's for
//! scenarios whose [`Scenario::vantage`] says so) and at the link's
//! middle, runs it, analyses the client capture with
//! [`rttlens_core::pipeline::run`] and checks the expectations.
//!
//! The built-in server runs in-process: a thread inside the server
//! namespace ([`Lab::thread_in`]) with its own single-threaded tokio
//! runtime, so no binary has to be found. nginx, curl and `openssl
//! s_client` run as processes inside the namespaces.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rttlens_core::capture::CaptureReader;
use rttlens_core::pipeline;
use rttlens_core::report::ConnReport;
use rttlens_lab_server::builtin::{Server, ServerConfig};
use rttlens_lab_server::nginx;

use rttlens_net::link::{CapturePoint, LinkConfig};
use rttlens_net::{Host, Lab, LabError, Sysctls};

use crate::catalogue::catalogue;
use crate::copies;

/// The programs a scenario run may start, with their Debian packages.
pub const PROGRAMS: [(&str, &str); 4] = [
    ("nginx", "nginx-light"),
    ("curl", "curl"),
    ("openssl", "openssl"),
    ("tcpdump", "tcpdump"),
];

/// How long any one client command may take.
const CLIENT_TIMEOUT_S: u32 = 20;

/// One lab experiment.
#[derive(Debug)]
pub struct Scenario {
    /// Stable name (`nagle-response`).
    pub name: &'static str,
    /// One line: what it shows.
    pub about: &'static str,
    /// Findings that must appear. Syntax `[N:]id[|id…]`: any of the `|`
    /// alternatives; with `N:` on the N-th connection (0-based, in capture
    /// order), otherwise on any connection.
    pub expect: &'static [&'static str],
    /// Findings that must not appear (same syntax; for controls).
    pub forbid: &'static [&'static str],
    /// The ladder phase whose line is shown (`tls`, `request`, `transfer`).
    pub key: &'static str,
    /// Where the analysed capture is taken: tcpdump on this side's TUN
    /// device. The client for most; the server for loss the link inflicts
    /// server→client, whose originals only the server vantage sees.
    pub vantage: Host,
    /// Adjusts the link before the lab is built (loss, rate).
    pub link: fn(&mut LinkConfig),
    /// Starts the server(s) and runs the client action.
    pub run: fn(&mut ScenarioCtx) -> Result<(), LabError>,
    /// Partial copies of the capture analysed again, as captures from the
    /// wild come (see [`Variant`]).
    pub variants: &'static [Variant],
}

/// A partial copy of a scenario's capture, analysed again: it must name
/// its expectations on the same connection, citing frames the full
/// capture's finding cites (mapped back), and never say what the full
/// capture does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// The vantage capture from its first payload segment on: tcpdump
    /// started after the three-way handshake, so there is no SYN, no
    /// handshake RTT and no window scale option. The scenario's own
    /// expectations must hold, the connection must say it started
    /// mid-stream, and its RTT must be known (data/ACK pairs, timestamps).
    MidStream,
    /// The same copy, where one direction's packets cannot prove the
    /// scenario's cause without the handshake (`why` says what is missing):
    /// `expect` is what the copy still proves (a less specific finding, such
    /// as `window-limit` for a `receive-window-limit` whose window scale is
    /// only in the SYNs), and every other check of [`Variant::MidStream`]
    /// holds: nothing the full capture does not say, a header that says it
    /// started mid-stream, an RTT.
    MidStreamSaysLess {
        /// What the copy cannot prove, and why.
        why: &'static str,
        /// What it still proves.
        expect: &'static [&'static str],
    },
    /// The vantage capture as a host with receive offload (GRO) on would
    /// have taken it: runs of full-sized segments merged into segments of
    /// up to 64 KB ([`copies::coalesce`]). The scenario's expectations must
    /// hold, and the capture-quality note must count the oversized segments.
    Offload,
    /// Only the server's packets, captured at the server (the data sender
    /// in every scenario that has this variant): one direction, as a
    /// `src host` filter or asymmetric routing leaves it. `expect` replaces
    /// the scenario's expectations (what one direction can prove); the
    /// connection must say that only one side was seen.
    SenderOnly {
        /// Findings that must appear (the scenario's syntax).
        expect: &'static [&'static str],
    },
    /// The vantage capture cut to [`SNAPLEN`] bytes a frame, as `tcpdump
    /// -s 96` takes it: TLS and HTTP unreadable. Run for every scenario.
    /// The expectations the headers alone prove
    /// ([`rttlens_core::detect::HEADER_ONLY`]) must hold; the others may go.
    Snaplen,
}

impl Scenario {
    /// What the [`Variant::Snaplen`] copy must still prove: the
    /// expectations the headers alone prove (every alternative of one,
    /// [`rttlens_core::detect::HEADER_ONLY`]).
    pub fn header_only(&self) -> Vec<&'static str> {
        self.expect
            .iter()
            .copied()
            .filter(|e| {
                parse_expect(e)
                    .1
                    .iter()
                    .all(|id| rttlens_core::detect::HEADER_ONLY.contains(id))
            })
            .collect()
    }
}

/// Bytes a frame kept by the [`Variant::Snaplen`] copies.
pub const SNAPLEN: u32 = 96;

impl Variant {
    /// Short name (`mid-stream`, `sender-only`).
    pub fn name(&self) -> &'static str {
        match self {
            Variant::MidStream | Variant::MidStreamSaysLess { .. } => "mid-stream",
            Variant::Offload => "offload",
            Variant::SenderOnly { .. } => "sender-only",
            Variant::Snaplen => "snaplen",
        }
    }
}

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
            prefix: vec![
                "ip".into(),
                "netns".into(),
                "exec".into(),
                self.lab.ns_name(Host::Server).to_string(),
            ],
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

/// One expectation's result.
#[derive(Debug, Clone)]
pub struct ExpectationResult {
    /// The expectation as written (`nagle-stall|nagle-delayed-ack`, `1:tfo-accepted`).
    pub expect: &'static str,
    /// Whether it held.
    pub found: bool,
    /// The finding id that matched.
    pub id: Option<&'static str>,
    /// Its title (empty when not found): what the outcome was, e.g.
    /// "0-RTT rejected: …".
    pub title: String,
    /// The matching finding's cost in ms (0 when not found).
    pub cost_ms: f64,
    /// The matching finding's cost in round trips (`None` when not found
    /// or when the connection's RTT is unknown).
    pub cost_rtts: Option<f64>,
}

/// What a scenario run produced.
#[derive(Debug, Clone)]
pub struct ScenarioOutcome {
    /// Scenario name.
    pub scenario: &'static str,
    /// One entry per expectation.
    pub found: Vec<ExpectationResult>,
    /// Forbidden findings that appeared (`id` or `N:id`).
    pub unexpected_forbidden: Vec<String>,
    /// The ladder line that matters, e.g. `tls 2.03 RTT (81.2 ms)`.
    pub key_line: String,
    /// Connections in the client capture.
    pub connections: usize,
    /// Every finding id per connection (for reports when it fails).
    pub findings: Vec<Vec<&'static str>>,
    /// The analysed capture (pcap, `client.pcap` or `server.pcap` as the
    /// scenario's vantage says) — kept only with `keep`.
    pub client_capture: PathBuf,
    /// Middle-of-link capture (pcapng) — kept only with `keep`.
    pub middle_capture: PathBuf,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
    /// One per [`Scenario::variants`].
    pub variants: Vec<VariantOutcome>,
}

impl ScenarioOutcome {
    /// Every expectation held, no forbidden finding appeared, and every
    /// variant held.
    pub fn passed(&self) -> bool {
        self.found.iter().all(|f| f.found)
            && self.unexpected_forbidden.is_empty()
            && self.variants.iter().all(VariantOutcome::passed)
    }
}

/// What the analysis of one partial copy showed.
#[derive(Debug, Clone)]
pub struct VariantOutcome {
    /// Which copy.
    pub variant: Variant,
    /// One entry per expectation of the variant.
    pub found: Vec<ExpectationResult>,
    /// Every check that failed, in words (forbidden findings, findings the
    /// full capture does not have, evidence that does not map back, a
    /// header that does not say what is missing).
    pub problems: Vec<String>,
    /// Every finding id per connection.
    pub findings: Vec<Vec<&'static str>>,
    /// The RTT the copy's first connection was given (ms; `None`: unknown).
    pub rtt_ms: Option<f64>,
}

impl VariantOutcome {
    /// Every expectation held and no check failed.
    pub fn passed(&self) -> bool {
        self.found.iter().all(|f| f.found) && self.problems.is_empty()
    }
}

/// Find a scenario by name.
pub fn find(name: &str) -> Option<&'static Scenario> {
    catalogue().iter().find(|s| s.name == name)
}

/// `[N:]id[|id…]` → (connection, alternatives).
fn parse_expect(e: &str) -> (Option<usize>, Vec<&str>) {
    let (conn, ids) = match e.split_once(':') {
        Some((n, rest)) => match n.parse::<usize>() {
            Ok(n) => (Some(n), rest),
            Err(_) => (None, e),
        },
        None => (None, e),
    };
    (conn, ids.split('|').collect())
}

/// The first finding matching `e` on the connections it names.
fn lookup<'c>(
    conns: &'c [ConnReport],
    e: &str,
) -> Option<(usize, &'c rttlens_core::detect::finding::Finding)> {
    let (conn, ids) = parse_expect(e);
    conns
        .iter()
        .enumerate()
        .filter(|(i, _)| conn.is_none_or(|n| n == *i))
        .find_map(|(i, c)| {
            c.findings
                .iter()
                .find(|f| ids.contains(&f.id))
                .map(|f| (i, f))
        })
}

static RUNS: AtomicU64 = AtomicU64::new(0);

/// Removes a scratch directory on drop unless it is kept.
struct Scratch {
    path: PathBuf,
    keep: bool,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
            rttlens_net::unregister_scratch(&self.path);
        }
    }
}

/// Run one scenario on a fresh lab with this RTT. With `keep`, its files
/// (captures `client.pcap` and `middle.pcapng`, nginx configuration and
/// logs) stay in `keep/NAME/`; otherwise they go to a temporary directory
/// removed afterwards. The namespaces and every process in them are
/// removed before this returns, on error too.
///
/// # Errors
/// The lab could not be built, a server or client failed, or the capture
/// could not be analysed. Expectations that do not hold are not errors:
/// see [`ScenarioOutcome::passed`].
pub fn run_scenario(
    s: &Scenario,
    rtt: Duration,
    keep: Option<&Path>,
) -> Result<ScenarioOutcome, LabError> {
    let started = Instant::now();
    let path = match keep {
        Some(k) => k.join(s.name),
        None => std::env::temp_dir().join(format!(
            "rttlens-lab-{}-{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed),
            s.name
        )),
    };
    if keep.is_some() {
        let _ = std::fs::remove_dir_all(&path);
    }
    std::fs::create_dir_all(&path).map_err(|e| LabError::Io {
        context: format!("creating {}", path.display()),
        source: e,
    })?;
    let scratch = Scratch {
        path: path.clone(),
        keep: keep.is_some(),
    };
    if keep.is_none() {
        rttlens_net::register_scratch(&path);
    }
    let client_capture = path.join(match s.vantage {
        Host::Client => "client.pcap",
        Host::Server => "server.pcap",
    });
    let middle_capture = path.join("middle.pcapng");
    let mut cfg = LinkConfig::with_rtt(rtt);
    cfg.capture = Some((middle_capture.clone(), CapturePoint::Middle));
    (s.link)(&mut cfg);
    let mut lab = Lab::new(cfg)?;
    let dump = lab.tcpdump(s.vantage, &client_capture)?;
    // the sender-only variant is cut from the server's vantage
    let server_capture = path.join("server.pcap");
    let wants_server = s
        .variants
        .iter()
        .any(|v| matches!(v, Variant::SenderOnly { .. }));
    let server_dump = if wants_server && s.vantage == Host::Client {
        Some(lab.tcpdump(Host::Server, &server_capture)?)
    } else {
        None
    };
    let mut ctx = ScenarioCtx::new(&lab, path.clone());
    let result = (s.run)(&mut ctx);
    // the last FIN/ACK exchange
    std::thread::sleep(rtt * 2 + Duration::from_millis(50));
    dump.stop();
    let server_dump_taken = server_dump.is_some();
    if let Some(d) = server_dump {
        d.stop();
    }
    drop(ctx);
    lab.stop_link();
    drop(lab);
    result?;
    let conns = analyze(&client_capture)?;
    let found = expectations(&conns, s.expect);
    let unexpected_forbidden = forbidden(&conns, s.forbid);
    // the key line: on the connection of the last expectation met, or
    // the one the last expectation names, or the first connection (the
    // last expectation is the one a scenario builds up to: `1:tfo-accepted`)
    let key_conn = s
        .expect
        .last()
        .and_then(|e| lookup(&conns, e).map(|(i, _)| i).or(parse_expect(e).0))
        .unwrap_or(0);
    let key_line = match conns.get(key_conn) {
        None => "no connection in the capture".to_string(),
        Some(c) => match c.ladder.iter().find(|p| p.name == s.key) {
            Some(p) => format!(
                "{} {:.2} RTT ({:.1} ms), conn {key_conn} of {:.0} ms",
                p.name, p.rtts, p.ms, c.duration_ms
            ),
            None => format!("no {} phase on conn {key_conn}", s.key),
        },
    };
    // the sender-only copies are cut from the server's capture: the analysed
    // one when the vantage is the server, the extra tcpdump's otherwise
    let server_conns = if server_dump_taken {
        Some(analyze(&server_capture)?)
    } else {
        None
    };
    let mut variants = Vec::new();
    for &v in s.variants {
        let (source, full) = match v {
            Variant::SenderOnly { .. } => {
                (&server_capture, server_conns.as_deref().unwrap_or(&conns))
            }
            _ => (&client_capture, &conns[..]),
        };
        variants.push(run_variant(s, v, source, full, &path)?);
    }
    variants.push(run_variant(
        s,
        Variant::Snaplen,
        &client_capture,
        &conns,
        &path,
    )?);
    let findings = conns
        .iter()
        .map(|c| c.findings.iter().map(|f| f.id).collect())
        .collect();
    drop(scratch);
    Ok(ScenarioOutcome {
        scenario: s.name,
        found,
        unexpected_forbidden,
        key_line,
        connections: conns.len(),
        findings,
        client_capture,
        middle_capture,
        elapsed: started.elapsed(),
        variants,
    })
}

/// One [`ExpectationResult`] per expectation, looked up in `conns`.
fn expectations(conns: &[ConnReport], expect: &[&'static str]) -> Vec<ExpectationResult> {
    expect
        .iter()
        .map(|&e| match lookup(conns, e) {
            Some((_, f)) => ExpectationResult {
                expect: e,
                found: true,
                id: Some(f.id),
                title: f.title.clone(),
                cost_ms: f.cost.ms,
                cost_rtts: f.cost.rtts,
            },
            None => ExpectationResult {
                expect: e,
                found: false,
                id: None,
                title: String::new(),
                cost_ms: 0.0,
                cost_rtts: None,
            },
        })
        .collect()
}

/// The forbidden findings that appear in `conns`, as `N:id`.
fn forbidden(conns: &[ConnReport], forbid: &[&str]) -> Vec<String> {
    let mut seen = Vec::new();
    for &e in forbid {
        let (conn, ids) = parse_expect(e);
        for (i, c) in conns.iter().enumerate() {
            if conn.is_some_and(|n| n != i) {
                continue;
            }
            for f in &c.findings {
                if ids.contains(&f.id) {
                    seen.push(format!("{i}:{}", f.id));
                }
            }
        }
    }
    seen.dedup();
    seen
}

/// Cut `source` as `v` says, analyse the copy and compare it with `full`
/// (the analysis of the capture it was cut from).
fn run_variant(
    s: &Scenario,
    v: Variant,
    source: &Path,
    full: &[ConnReport],
    dir: &Path,
) -> Result<VariantOutcome, LabError> {
    let out = dir.join(format!("{}.pcap", v.name()));
    let (copy, expect) = match v {
        Variant::MidStream => (
            copies::copy(source, &out, copies::Cut::AfterHandshake)?,
            s.expect,
        ),
        Variant::MidStreamSaysLess { expect, .. } => (
            copies::copy(source, &out, copies::Cut::AfterHandshake)?,
            expect,
        ),
        Variant::Offload => (copies::coalesce(source, &out)?, s.expect),
        Variant::SenderOnly { expect } => (
            copies::copy(source, &out, copies::Cut::FromHost(Lab::SERVER_V4.into()))?,
            expect,
        ),
        Variant::Snaplen => (
            copies::copy(source, &out, copies::Cut::Snaplen(SNAPLEN))?,
            &[][..],
        ),
    };
    let header_only = s.header_only();
    let expect: &[&'static str] = if v == Variant::Snaplen {
        &header_only
    } else {
        expect
    };
    let (conns, summary) = analyze_summary(&copy.path)?;
    let found = expectations(&conns, expect);
    let mut problems = forbidden(&conns, s.forbid)
        .into_iter()
        .map(|f| format!("forbidden {f}"))
        .collect::<Vec<_>>();
    // never more than the full capture says, on the same connection (a
    // window cap whose owner the copy cannot tell is what the full capture's
    // receive-window-limit or sender-window-cap says)
    let says = |id: &str, full_id: &str| {
        id == full_id
            || (id == "window-limit"
                && matches!(full_id, "receive-window-limit" | "sender-window-cap"))
    };
    for (i, c) in conns.iter().enumerate() {
        for f in &c.findings {
            if !full
                .get(i)
                .is_some_and(|fc| fc.findings.iter().any(|g| says(f.id, g.id)))
            {
                problems.push(format!("{i}:{} (the full capture does not say it)", f.id));
            }
        }
    }
    // the evidence is the full capture's, frame numbers shifted
    for &e in expect {
        let (Some((i, f)), Some((j, g))) = (lookup(&conns, e), lookup(full, e)) else {
            continue;
        };
        if i != j {
            problems.push(format!("{e}: on connection {i}, the full capture's on {j}"));
            continue;
        }
        let mapped: Vec<(u64, u64)> = f
            .evidence
            .iter()
            .filter_map(|ev| copy.original(ev.frame))
            .collect();
        if !g
            .evidence
            .iter()
            .any(|ev| mapped.iter().any(|&(a, b)| (a..=b).contains(&ev.frame)))
        {
            problems.push(format!(
                "{e}: evidence frames {mapped:?} (original numbering) share none with the full capture's {:?}",
                g.evidence.iter().map(|ev| ev.frame).collect::<Vec<_>>()
            ));
        }
    }
    let first = conns.first();
    match v {
        Variant::MidStream | Variant::MidStreamSaysLess { .. } => {
            if !first.is_some_and(|c| c.coverage.mid_stream) {
                problems.push("the first connection does not say it started mid-stream".into());
            }
            if first.is_none_or(|c| c.rtt.is_none()) {
                problems.push("no RTT without the handshake".into());
            }
        }
        Variant::Offload => {
            // GRO merges only segments with the same TCP options: a response
            // whose segments all straddle a timestamp tick leaves nothing
            // to merge, and the copy nothing to check
            if copy.merged() > 0 && summary.quality.oversized_segments == 0 {
                problems.push("no oversized segment counted in the capture quality".into());
            }
        }
        Variant::SenderOnly { .. } => {
            for (i, c) in conns.iter().enumerate() {
                if c.coverage.only != Some(rttlens_core::side::Side::Server) {
                    problems.push(format!(
                        "connection {i} does not say only the server was seen"
                    ));
                }
            }
        }
        Variant::Snaplen => {
            // every connection with data says its payloads were cut
            if summary.quality.snaplen_cut == 0 {
                problems.push("no segment counted as cut by the snapshot length".into());
            }
        }
    }
    Ok(VariantOutcome {
        variant: v,
        found,
        problems,
        findings: conns
            .iter()
            .map(|c| c.findings.iter().map(|f| f.id).collect())
            .collect(),
        rtt_ms: first.and_then(|c| c.rtt.as_ref()).map(|r| r.min_ms),
    })
}

/// The connections of the capture at `path`, in capture order.
fn analyze(path: &Path) -> Result<Vec<ConnReport>, LabError> {
    analyze_summary(path).map(|(c, _)| c)
}

fn analyze_summary(path: &Path) -> Result<(Vec<ConnReport>, pipeline::CaptureSummary), LabError> {
    let mut reader = CaptureReader::open(path)
        .map_err(|e| LabError::Analysis(format!("{}: {e}", path.display())))?;
    let mut conns = Vec::new();
    let summary = pipeline::run(&mut reader, &mut |c| conns.push(c), &mut |_| {})
        .map_err(|e| LabError::Analysis(format!("{}: {e}", path.display())))?;
    conns.sort_by_key(|c| c.index);
    Ok((conns, summary))
}
