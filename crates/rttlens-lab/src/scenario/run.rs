//! Running one scenario ([`run_scenario`]): a fresh lab, captures at the
//! vantage and at the link's middle, the scenario's run, the analysis and
//! its expectations; then each partial copy of the capture analysed again
//! ([`Variant`], `variants.rs`) and compared with the full capture. [`run_scenario_beside`]
//! does the same with a program of the caller's kept running in one of the
//! lab's namespaces for the whole scenario ([`Beside`]: `rttlens analyze -i
//! rtl0` live beside the lab's own capture).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rttlens_core::model::{CaptureSummary, ConnReport, QuicReport};
use rttlens_lab_net::link::{CapturePoint, LinkConfig};
use rttlens_lab_net::{Host, Lab, LabError};

use super::check::{analyze, analyze_summary, expectations, forbidden, ExpectationResult};
use super::variants::{run_keyless, run_variant, VariantOutcome};
use super::{lookup, parse_expect, Change, Scenario, ScenarioCtx, Variant};

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
    /// QUIC connections in the capture.
    pub quic_connections: usize,
    /// Every finding id per QUIC connection.
    pub quic_findings: Vec<Vec<&'static str>>,
    /// Checks of the run itself that failed, in words (a QUIC scenario
    /// whose capture holds no QUIC connection).
    pub problems: Vec<String>,
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
            && self.problems.is_empty()
            && self.variants.iter().all(VariantOutcome::passed)
    }
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
            rttlens_lab_net::unregister_scratch(&self.path);
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
    run(s, rtt, keep, None, Run::default()).map(|(o, _, _)| o)
}

/// The analysis of a scenario run's capture (its vantage's), connections
/// in capture order.
#[derive(Debug)]
pub struct Analysed {
    /// The TCP connections.
    pub conns: Vec<ConnReport>,
    /// The QUIC connections.
    pub quic: Vec<QuicReport>,
    /// The capture's summary (its population view among it).
    pub summary: CaptureSummary,
}

/// Run one scenario as [`run_scenario`] does, with `change` applied to
/// what it starts (its fixed variant, see [`crate::scenario::Fix`]) when
/// given, and without the partial copies; returns the analysis of its
/// capture beside the outcome.
///
/// # Errors
/// As [`run_scenario`].
pub fn run_analysed(
    s: &Scenario,
    rtt: Duration,
    change: Option<Change>,
    keep: Option<&Path>,
) -> Result<(ScenarioOutcome, Analysed), LabError> {
    let how = Run {
        change,
        copies: false,
    };
    run(s, rtt, keep, None, how).map(|(o, _, a)| (o, a))
}

/// How a scenario is run.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// The fix applied (its fixed variant), or none.
    change: Option<Change>,
    /// Whether its partial copies are analysed too.
    copies: bool,
}

impl Default for Run {
    fn default() -> Run {
        Run {
            change: None,
            copies: true,
        }
    }
}

/// How long a [`Beside`] program may take to say it is ready.
pub const BESIDE_READY: Duration = Duration::from_secs(10);
/// How long a [`Beside`] program may take to exit once told to stop
/// (SIGINT); then it is killed.
pub const BESIDE_STOP: Duration = Duration::from_secs(15);

/// A program kept running in one of the lab's namespaces for the whole of
/// a scenario ([`run_scenario_beside`]): started once the lab is up and
/// its vantage capture (tcpdump) listens, before the scenario starts its
/// servers; sent SIGINT (as Ctrl-C) once the scenario's last packets are
/// through, just before the vantage capture stops. Its stdout and stderr
/// are collected.
///
/// The lab's interface in each namespace is [`rttlens_lab_net::TUN_NAME`]
/// (`rtl0`): `rttlens analyze -i rtl0 --format jsonl` in
/// [`Host::Client`] sees the packets of the client's capture.
#[derive(Debug)]
pub struct Beside {
    /// The namespace it runs in.
    pub host: Host,
    /// The program, its arguments and environment (its stdio is the
    /// run's: stdin null, stdout and stderr collected).
    pub command: Command,
    /// Start the scenario only once a line of the program's stderr holds
    /// this (`capturing on`), at most [`BESIDE_READY`] after its start;
    /// `None`: start at once.
    pub ready: Option<String>,
}

/// What the program beside a scenario did.
#[derive(Debug, Clone)]
pub struct BesideOutcome {
    /// Its exit status; `None` when it had not exited [`BESIDE_STOP`]
    /// after SIGINT and was killed.
    pub status: Option<ExitStatus>,
    /// All it wrote on stdout.
    pub stdout: String,
    /// All it wrote on stderr (lines, each ended by `\n`).
    pub stderr: String,
}

/// Run one scenario as [`run_scenario`] does, with `beside` running in
/// its namespace for the whole of it (see [`Beside`]).
///
/// # Errors
/// As [`run_scenario`]; and [`LabError::Client`] when the program cannot
/// be started or does not say it is ready in time (its stderr in the
/// message; it is killed).
pub fn run_scenario_beside(
    s: &Scenario,
    rtt: Duration,
    keep: Option<&Path>,
    beside: Beside,
) -> Result<(ScenarioOutcome, BesideOutcome), LabError> {
    let (o, b, _) = run(s, rtt, keep, Some(beside), Run::default())?;
    let b = b.ok_or_else(|| LabError::Analysis("the program beside the scenario ran".into()))?;
    Ok((o, b))
}

/// A [`Beside`] program running: the child and the threads draining its
/// pipes.
struct Running {
    child: Child,
    what: String,
    stdout: Option<JoinHandle<String>>,
    stderr_lines: mpsc::Receiver<String>,
    stderr: Vec<String>,
}

impl Running {
    fn start(lab: &Lab, b: Beside) -> Result<Running, LabError> {
        let what = format!(
            "{} {}",
            b.command.get_program().to_string_lossy(),
            b.command
                .get_args()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
        );
        let mut child = lab
            .netns(b.host)
            .command(&b.command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| LabError::Client {
                command: what.clone(),
                stderr: e.to_string(),
            })?;
        let mut out = child.stdout.take();
        let stdout = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(o) = out.as_mut() {
                let _ = o.read_to_string(&mut s);
            }
            s
        });
        let err = child.stderr.take();
        let (tx, stderr_lines) = mpsc::channel();
        std::thread::spawn(move || {
            let Some(err) = err else { return };
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut r = Running {
            child,
            what,
            stdout: Some(stdout),
            stderr_lines,
            stderr: Vec::new(),
        };
        if let Some(want) = b.ready {
            let deadline = Instant::now() + BESIDE_READY;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match r.stderr_lines.recv_timeout(left) {
                    Ok(l) => {
                        let ready = l.contains(&want);
                        r.stderr.push(l);
                        if ready {
                            break;
                        }
                    }
                    Err(_) => {
                        let _ = r.child.kill();
                        let _ = r.child.wait();
                        r.stderr.extend(r.stderr_lines.try_iter());
                        return Err(LabError::Client {
                            command: r.what.clone(),
                            stderr: format!(
                                "did not say '{want}' within {BESIDE_READY:?}: {}",
                                r.stderr.join(" / ")
                            ),
                        });
                    }
                }
            }
        }
        Ok(r)
    }

    /// SIGINT, wait (at most [`BESIDE_STOP`], then kill), collect.
    fn stop(mut self) -> BesideOutcome {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGINT,
            );
        }
        let deadline = Instant::now() + BESIDE_STOP;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(st)) => break Some(st),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
            }
        };
        let stdout = self
            .stdout
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        // the pipe closed with the child: the drain thread ends
        let deadline = Instant::now() + Duration::from_secs(2);
        while let Ok(l) = self
            .stderr_lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            self.stderr.push(l);
        }
        let mut stderr = self.stderr.join("\n");
        if !stderr.is_empty() {
            stderr.push('\n');
        }
        BesideOutcome {
            status,
            stdout,
            stderr,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // stopped on an error path: kill (by its own PID) and reap
        if self.stdout.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn run(
    s: &Scenario,
    rtt: Duration,
    keep: Option<&Path>,
    beside: Option<Beside>,
    how: Run,
) -> Result<(ScenarioOutcome, Option<BesideOutcome>, Analysed), LabError> {
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
        rttlens_lab_net::register_scratch(&path);
    }
    let client_capture = path.join(match s.vantage {
        Host::Client => "client.pcap",
        Host::Server => "server.pcap",
    });
    let middle_capture = path.join("middle.pcapng");
    let mut cfg = LinkConfig::with_rtt(rtt);
    cfg.capture = Some((middle_capture.clone(), CapturePoint::Middle));
    (s.link)(&mut cfg);
    if let Some(c) = how.change {
        c.link(&mut cfg);
    }
    let mut lab = Lab::new(cfg)?;
    let dump = lab.tcpdump(s.vantage, &client_capture)?;
    // the sender-only variant is cut from the server's vantage
    let server_capture = path.join("server.pcap");
    let wants_server = how.copies
        && s.variants
            .iter()
            .any(|v| matches!(v, Variant::SenderOnly { .. }));
    let server_dump = if wants_server && s.vantage == Host::Client {
        Some(lab.tcpdump(Host::Server, &server_capture)?)
    } else {
        None
    };
    let running = beside.map(|b| Running::start(&lab, b)).transpose()?;
    let mut ctx = ScenarioCtx::new(&lab, path.clone()).with_change(how.change);
    let result = (s.run)(&mut ctx);
    // the last FIN/ACK exchange
    std::thread::sleep(rtt * 2 + Duration::from_millis(50));
    let beside = running.map(Running::stop);
    dump.stop();
    let server_dump_taken = server_dump.is_some();
    if let Some(d) = server_dump {
        d.stop();
    }
    drop(ctx);
    lab.stop_link();
    drop(lab);
    result?;
    let (conns, quic, summary) = analyze_summary(&client_capture)?;
    let found = expectations(&conns, &quic, &summary.population, s.expect);
    let unexpected_forbidden = forbidden(&conns, &quic, &summary.population, s.forbid);
    let quic_key = s.key.starts_with("quic-");
    let mut problems = Vec::new();
    if quic_key && quic.is_empty() {
        problems.push("no QUIC connection in the capture".to_string());
    }
    // the key line: on the connection of the last expectation met, or
    // the one the last expectation names, or the first connection (the
    // last expectation is the one a scenario builds up to: `1:tfo-accepted`;
    // the last QUIC connection for a QUIC control: the resumed one)
    let key_conn = s
        .expect
        .last()
        .and_then(|e| {
            lookup(&conns, &quic, e)
                .map(|(i, _)| i)
                .or(parse_expect(e).0)
        })
        .unwrap_or(if quic_key {
            quic.len().saturating_sub(1)
        } else {
            0
        });
    let ladder = if quic_key {
        quic.get(key_conn).map(|q| (&q.ladder, q.duration_ms))
    } else {
        conns.get(key_conn).map(|c| (&c.ladder, c.duration_ms))
    };
    let what = if quic_key { "QUIC conn" } else { "conn" };
    let key_line = match ladder {
        None => format!("no {what} in the capture"),
        Some((ladder, duration_ms)) => match ladder.iter().find(|p| p.name == s.key) {
            Some(p) => format!(
                "{} {:.2} RTT ({:.1} ms), {what} {key_conn} of {duration_ms:.0} ms",
                p.name, p.rtts, p.ms
            ),
            None => format!("no {} phase on {what} {key_conn}", s.key),
        },
    };
    // a QUIC connection's 0-RTT outcome as the engine read it
    let key_line = match quic.get(key_conn).map(|q| q.handshake.zero_rtt) {
        Some(z) if quic_key && z != "not-offered" => format!("{key_line}, 0-RTT {z}"),
        _ => key_line,
    };
    // the sender-only copies are cut from the server's capture: the analysed
    // one when the vantage is the server, the extra tcpdump's otherwise
    let server_conns = if server_dump_taken {
        Some(analyze(&server_capture)?)
    } else {
        None
    };
    let mut variants = Vec::new();
    for &v in s.variants.iter().filter(|_| how.copies) {
        let (source, full) = match v {
            Variant::SenderOnly { .. } => {
                (&server_capture, server_conns.as_deref().unwrap_or(&conns))
            }
            _ => (&client_capture, &conns[..]),
        };
        variants.push(run_variant(s, v, source, full, &path)?);
    }
    // the snaplen copy checks what TCP headers prove: not run on a capture
    // of QUIC alone (its packets are all encrypted payload)
    if how.copies && (!conns.is_empty() || quic.is_empty()) {
        variants.push(run_variant(
            s,
            Variant::Snaplen,
            &client_capture,
            &conns,
            &path,
        )?);
    }
    // the QUIC connections again without the key log the clients wrote
    if how.copies && !quic.is_empty() && path.join(super::ctx::KEYLOG_FILE).exists() {
        variants.push(run_keyless(s, &client_capture, &quic)?);
    }
    let findings = conns
        .iter()
        .map(|c| c.findings.iter().map(|f| f.id).collect())
        .collect();
    let quic_findings = quic
        .iter()
        .map(|q| q.findings.iter().map(|f| f.id).collect())
        .collect();
    drop(scratch);
    let outcome = ScenarioOutcome {
        scenario: s.name,
        found,
        unexpected_forbidden,
        key_line,
        connections: conns.len(),
        findings,
        quic_connections: quic.len(),
        quic_findings,
        problems,
        client_capture,
        middle_capture,
        elapsed: started.elapsed(),
        variants,
    };
    let analysed = Analysed {
        conns,
        quic,
        summary,
    };
    Ok((outcome, beside, analysed))
}
