//! `rttlens bench URL`: a TLS handshake load generator that tells the
//! truth about tails (docs/design.md §6).
//!
//! - **Open loop** (`--rate R`): connection *i* is meant to start at
//!   `t0 + i/R` whatever happened to the others, and its latency counts
//!   from that intended start. A server that stalls for 500 ms delays every
//!   arrival of those 500 ms, and all of them show it: no coordinated
//!   omission (Tene, "How NOT to measure latency", 2015; wrk2). The
//!   schedule runs on its own thread with a 1 µs timer slack; how late each
//!   connection really started is reported as the start lag.
//! - **Closed loop** (`-c N`): N connections at a time, each starting when
//!   the previous one of its worker ends; latency counts from the actual
//!   start. It measures capacity, and hides stalls (the report says so).
//! - Each connection: TCP connect, TLS handshake by rustls (full, resumed
//!   or 0-RTT as the [`Mix`] says, verified with rustls'
//!   `handshake_kind` and `is_early_data_accepted`), optionally HTTP/1.1
//!   requests; phases in HDR histograms (hdrhistogram, µs, 3 significant
//!   digits); failures by class and phase.
//! - The generator's CPU time (its own threads, from `/proc`) per
//!   connection, and a server's when its PID is known, so a reader can
//!   tell which side was the bottleneck.
//!
//! Session tickets come from a pool ([`tickets::TicketPool`]) that full
//! connections and a warm-up fill; each resumed or 0-RTT connection takes
//! one ticket (RFC 8446 §8.1).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod conn;
mod cpu;
pub mod lab;
pub mod mix;
pub mod results;
mod stats;
pub mod tickets;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::client::{ClientSessionStore, Resumption};
use rustls::pki_types::ServerName;

pub use conn::{ErrorClass, Failure, Sample};
pub use cpu::process_seconds;
pub use mix::{Kind, Mix};
pub use results::{
    write_compare, BenchReport, Counts, Cpu, ErrorCount, KindReport, LabInfo, LatencySummary,
    LinkReport, LoadInfo, LoadMode, PhaseLatencies, Rates, Tickets, SCHEMA,
};

use conn::Plan;
use rttlens_probe::resolve::{resolve, Family, ResolveOverride, Target};
use rttlens_probe::tls::TlsOptions;
use stats::Stats;
use tickets::{FillOnly, TicketPool};

/// Highest `--rate` (connections per second).
pub const MAX_RATE: f64 = 200_000.0;
/// Lowest `--rate`.
pub const MIN_RATE: f64 = 0.1;
/// Longest `--duration`.
pub const MAX_DURATION: Duration = Duration::from_secs(3600);
/// Largest `-n`.
pub const MAX_COUNT: u64 = 100_000_000;
/// Largest `-c`.
pub const MAX_CONCURRENCY: u32 = 20_000;
/// Largest `--max-in-flight`.
pub const MAX_IN_FLIGHT: usize = 50_000;
/// Longest `--timeout`.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(120);
/// Most requests per connection.
pub const MAX_REQUESTS: u32 = 1000;
/// Most worker threads.
pub const MAX_THREADS: usize = 256;
/// Tickets the pool keeps.
const POOL_TICKETS: usize = 8192;
/// Warm-up connections at a time.
const WARMUP_PARALLEL: usize = 32;
/// Warm-up connections when the mix needs no ticket.
const WARMUP_NO_TICKETS: u32 = 16;
/// How long Ctrl-C waits for the connections in flight.
const GRACE: Duration = Duration::from_secs(1);
/// The schedule starts this long after it is set up.
const LEAD: Duration = Duration::from_millis(5);
/// How often the collector takes the samples sent.
const COLLECT_EVERY: Duration = Duration::from_millis(10);
/// How often the progress callback runs.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// How connections arrive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// Open loop: `rate` arrivals per second on a fixed schedule.
    Open {
        /// Arrivals per second.
        rate: f64,
    },
    /// Closed loop: `concurrency` connections at a time.
    Closed {
        /// Connections at a time.
        concurrency: u32,
    },
}

/// When the run stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After this long (no new connection starts after it).
    Duration(Duration),
    /// After this many connections.
    Count(u64),
}

/// What to run. [`BenchConfig::new`] gives the defaults of the command
/// line.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// The `https://` URL (its path is requested when `requests` > 0).
    pub url: String,
    /// `--resolve host:port:addr` entries.
    pub resolve: Vec<ResolveOverride>,
    /// `-4` / `-6`.
    pub family: Family,
    /// Versions, trust (`--cacert`, `-k`); the ALPN is `http/1.1`.
    pub tls: TlsOptions,
    /// Open or closed loop. Default open, 100/s.
    pub load: Load,
    /// Duration or count. Default 10 s.
    pub stop: Stop,
    /// The mix. Default all full handshakes.
    pub mix: Mix,
    /// Requests per connection: 0 (default) = handshakes only, 1 = one
    /// request with `Connection: close`, more = keep-alive between them.
    /// 0-RTT needs at least one (the request is the early data).
    pub requests: u32,
    /// Per-connection time limit. Default 10 s.
    pub timeout: Duration,
    /// Worker threads. Default: the machine's cores.
    pub threads: usize,
    /// Open loop: most connections open at once; an arrival beyond it is
    /// counted as `not-started`. Default 10,000 (and never more than the
    /// open-files limit allows).
    pub max_in_flight: usize,
    /// Unmeasured full connections before the run, which fill the ticket
    /// pool. `None` (default): 16 when the mix needs no ticket; otherwise
    /// as many as it takes to hold a ticket for every resumed and 0-RTT
    /// connection the run will make (at most the pool's 8,192, and at most
    /// twice as many connections), since servers differ in how many
    /// tickets they send (nginx/OpenSSL: two after a full handshake, none
    /// after a resumed one).
    pub warmup: Option<u32>,
    /// Server processes (or threads of this process) whose CPU time to
    /// report: (what, ID), e.g. `("nginx pid", 1234)`.
    pub server_pids: Vec<(String, u32)>,
    /// Thread IDs of the lab link's threads (with `--lab`), whose CPU time
    /// to report: on a small machine the userspace link can be the limit.
    pub link_threads: Vec<u32>,
    /// Allow a target that is not on loopback (`--allow-remote`).
    pub allow_remote: bool,
    /// Set when the target is a lab server (allowed without
    /// `allow_remote`; recorded in the report).
    pub lab: Option<LabInfo>,
}

impl BenchConfig {
    /// The command line's defaults for `url`.
    pub fn new(url: &str) -> BenchConfig {
        BenchConfig {
            url: url.to_string(),
            resolve: Vec::new(),
            family: Family::Any,
            tls: TlsOptions::default(),
            load: Load::Open { rate: 100.0 },
            stop: Stop::Duration(Duration::from_secs(10)),
            mix: Mix::default(),
            requests: 0,
            timeout: Duration::from_secs(10),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            max_in_flight: 10_000,
            warmup: None,
            server_pids: Vec::new(),
            link_threads: Vec::new(),
            allow_remote: false,
            lab: None,
        }
    }

    /// Check every bound.
    ///
    /// # Errors
    /// [`BenchError::Usage`] naming the option.
    pub fn validate(&self) -> Result<(), BenchError> {
        let usage = |m: String| Err(BenchError::Usage(m));
        match self.load {
            Load::Open { rate } if !(MIN_RATE..=MAX_RATE).contains(&rate) => {
                return usage(format!(
                    "--rate {rate}: between {MIN_RATE} and {MAX_RATE} connections per second"
                ))
            }
            Load::Closed { concurrency } if !(1..=MAX_CONCURRENCY).contains(&concurrency) => {
                return usage(format!("-c {concurrency}: between 1 and {MAX_CONCURRENCY}"))
            }
            _ => {}
        }
        match self.stop {
            Stop::Duration(d) if d.is_zero() || d > MAX_DURATION => {
                return usage(format!(
                    "--duration: above 0 and at most {} s",
                    MAX_DURATION.as_secs()
                ))
            }
            Stop::Count(n) if !(1..=MAX_COUNT).contains(&n) => {
                return usage(format!("-n {n}: between 1 and {MAX_COUNT}"))
            }
            _ => {}
        }
        if self.timeout.is_zero() || self.timeout > MAX_TIMEOUT {
            return usage(format!(
                "--timeout: above 0 and at most {} s",
                MAX_TIMEOUT.as_secs()
            ));
        }
        if self.requests > MAX_REQUESTS {
            return usage(format!("--requests: at most {MAX_REQUESTS}"));
        }
        if self.mix.has(Kind::ZeroRtt) && self.requests == 0 {
            return usage(
                "0-RTT sends the request as early data: it needs --request (or --requests N)"
                    .into(),
            );
        }
        if !(1..=MAX_THREADS).contains(&self.threads) {
            return usage(format!("--threads: between 1 and {MAX_THREADS}"));
        }
        if !(1..=MAX_IN_FLIGHT).contains(&self.max_in_flight) {
            return usage(format!("--max-in-flight: between 1 and {MAX_IN_FLIGHT}"));
        }
        Ok(())
    }
}

/// Why a run could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// A URL or option the generator cannot use.
    #[error("{0}")]
    Usage(String),
    /// The target did not resolve, or its first connection failed.
    #[error("{0}")]
    Target(String),
    /// The lab could not be set up (`--lab`).
    #[error("lab: {0}")]
    Lab(String),
    /// The generator itself failed (runtime, file descriptors).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
}

/// How the run is going, for a progress bar (about 5 times a second).
#[derive(Debug, Clone)]
pub struct BenchProgress {
    /// Since the schedule started.
    pub elapsed: Duration,
    /// Connections finished (succeeded or failed).
    pub finished: u64,
    /// Of which failed.
    pub failed: u64,
    /// Open right now.
    pub in_flight: usize,
    /// Connections the run will make, when known.
    pub expected: Option<u64>,
    /// `--duration`, when the run stops on time.
    pub planned: Option<Duration>,
}

/// Run the benchmark. `cancel` (set by a Ctrl-C handler) stops the
/// schedule; the connections in flight get 1 s, and the report covers
/// what was measured (`interrupted`).
///
/// # Errors
/// [`BenchError::Usage`] for bad options or a non-loopback target without
/// `allow_remote`; [`BenchError::Target`] when the name does not resolve
/// or the first (unmeasured) connection fails; [`BenchError::Io`].
pub fn run(
    cfg: &BenchConfig,
    cancel: &Arc<AtomicBool>,
    progress: &mut (dyn FnMut(&BenchProgress) + Send),
) -> Result<BenchReport, BenchError> {
    cfg.validate()?;
    let target = Target::parse(&cfg.url).map_err(|e| BenchError::Usage(e.message))?;
    if !target.tls {
        return Err(BenchError::Usage(format!(
            "{}: rttlens bench measures TLS handshakes: the URL must be https://",
            cfg.url
        )));
    }
    let mut notes = Vec::new();
    let max_in_flight = fd_limit(cfg.max_in_flight, &mut notes);
    let threads = Arc::new(cpu::Threads::default());
    let rt = {
        let t = Arc::clone(&threads);
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cfg.threads)
            .enable_all()
            .thread_name("rttlens-bench")
            .on_thread_start(move || t.register_current())
            .build()
            .map_err(|source| BenchError::Io {
                context: "starting the tokio runtime".into(),
                source,
            })?
    };
    let addr = rt
        .block_on(resolve(&target, &cfg.resolve, cfg.family))
        .map_err(|e| BenchError::Target(e.message))?;
    if !addr.ip().is_loopback() && cfg.lab.is_none() && !cfg.allow_remote {
        return Err(BenchError::Usage(format!(
            "{addr} is not a loopback address: a load generator aimed at someone else's \
             server is an attack; pass --allow-remote for a server you run (or use --lab)"
        )));
    }
    let pool = Arc::new(TicketPool::new(POOL_TICKETS));
    let plan = Arc::new(make_plan(cfg, &target, addr, &pool)?);
    rt.block_on(warm_up(&plan, cfg, &pool, &mut notes))?;
    let misses_before = pool.misses();

    let cycle = Arc::new(cfg.mix.cycle());
    let in_flight = Arc::new(AtomicUsize::new(0));
    let finished = AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::channel::<Sample>();
    let expected = match (cfg.load, cfg.stop) {
        (_, Stop::Count(n)) => Some(n),
        (Load::Open { rate }, Stop::Duration(d)) => Some((rate * d.as_secs_f64()).ceil() as u64),
        (Load::Closed { .. }, Stop::Duration(_)) => None,
    };
    let planned = match cfg.stop {
        Stop::Duration(d) => Some(d),
        Stop::Count(_) => None,
    };
    let server_cpu = |pids: &[(String, u32)]| -> f64 {
        pids.iter().filter_map(|(_, p)| process_seconds(*p)).sum()
    };
    threads.register_current();
    let t0 = Instant::now() + LEAD;
    let client0 = threads.seconds();
    let server0 = server_cpu(&cfg.server_pids);
    let link_each = || -> Vec<f64> {
        cfg.link_threads
            .iter()
            .map(|t| process_seconds(*t).unwrap_or(0.0))
            .collect()
    };
    let link0 = link_each();
    let (stats, abandoned, wall, client1, server1, link1) = std::thread::scope(|scope| {
        let collector = {
            let (threads, in_flight, finished) = (&threads, &in_flight, &finished);
            scope.spawn(move || {
                threads.register_current();
                let shape = (expected, planned);
                collect(rx, progress, t0, in_flight, finished, shape)
            })
        };
        let ctx = Schedule {
            rt: &rt,
            plan: &plan,
            cycle: &cycle,
            stop: cfg.stop,
            t0,
            tx: &tx,
            in_flight: &in_flight,
            cancel,
        };
        match cfg.load {
            Load::Open { rate } => ctx.open_loop(rate, max_in_flight),
            Load::Closed { concurrency } => ctx.closed_loop(concurrency),
        }
        let abandoned = wait_in_flight(&in_flight, cfg.timeout, cancel);
        let wall = t0.elapsed();
        let client1 = threads.seconds();
        let server1 = server_cpu(&cfg.server_pids);
        let link1 = link_each();
        finished.store(true, Ordering::Release);
        // a panic in the collector is a bug: keep what the others measured
        let stats = collector.join().unwrap_or_else(|_| Stats::new());
        (stats, abandoned, wall, client1, server1, link1)
    });
    drop(tx);
    let misses = pool.misses() - misses_before;
    rt.shutdown_timeout(Duration::from_millis(100));

    let interrupted = cancel.load(Ordering::Relaxed);
    let succeeded = stats.succeeded();
    let wall_s = wall.as_secs_f64().max(1e-9);
    let cpu = |what: String, seconds: f64| Cpu {
        what,
        seconds,
        per_handshake_us: (succeeded > 0).then(|| seconds * 1e6 / succeeded as f64),
        cores_busy: seconds / wall_s,
    };
    let client_cpu = cpu(
        format!("rttlens bench, {} worker threads", cfg.threads),
        client1 - client0,
    );
    let server_cpu = (!cfg.server_pids.is_empty()).then(|| {
        let names: Vec<String> = cfg
            .server_pids
            .iter()
            .map(|(n, p)| format!("{n} {p}"))
            .collect();
        cpu(names.join(", "), server1 - server0)
    });
    let link = (!cfg.link_threads.is_empty()).then(|| {
        let each: Vec<f64> = link1.iter().zip(&link0).map(|(b, a)| b - a).collect();
        LinkReport {
            cpu: cpu(
                format!("lab link, {} threads", each.len()),
                each.iter().sum(),
            ),
            busiest_thread_cores_busy: each.iter().fold(0.0, |m: f64, x| m.max(*x)) / wall_s,
            late_p99_ms: None,
            late_max_ms: None,
        }
    });
    let span = stats.span();
    let kinds = stats.kinds();
    let phases = stats.all_phases();
    let mut report = BenchReport {
        schema: SCHEMA.into(),
        target: cfg.url.clone(),
        addr: addr.to_string(),
        lab: cfg.lab.clone(),
        load: LoadInfo {
            mode: match cfg.load {
                Load::Open { .. } => LoadMode::Open,
                Load::Closed { .. } => LoadMode::Closed,
            },
            rate_per_s: match cfg.load {
                Load::Open { rate } => Some(rate),
                Load::Closed { .. } => None,
            },
            concurrency: match cfg.load {
                Load::Closed { concurrency } => Some(concurrency),
                Load::Open { .. } => None,
            },
            duration_ms: planned.map(|d| d.as_secs_f64() * 1000.0),
            count: match cfg.stop {
                Stop::Count(n) => Some(n),
                Stop::Duration(_) => None,
            },
            timeout_ms: cfg.timeout.as_secs_f64() * 1000.0,
            max_in_flight,
        },
        mix: cfg.mix.to_string(),
        tls_version: cfg.tls.version.map(|v| {
            match v {
                rttlens_probe::TlsVersion::Tls12 => "1.2",
                rttlens_probe::TlsVersion::Tls13 => "1.3",
            }
            .to_string()
        }),
        requests_per_connection: cfg.requests,
        threads: cfg.threads,
        interrupted,
        elapsed_ms: span.as_secs_f64() * 1000.0,
        connections: Counts {
            finished: stats.done(),
            succeeded,
            failed: stats.failed(),
            abandoned: abandoned as u64,
        },
        handshakes_per_s: Rates {
            offered: match cfg.load {
                Load::Open { rate } => Some(rate),
                Load::Closed { .. } => None,
            },
            achieved: succeeded as f64 / span.as_secs_f64().max(1e-9),
        },
        phases,
        kinds,
        errors: stats.errors(),
        client_cpu,
        server_cpu,
        link,
        tickets: Tickets {
            received: pool.received(),
            used: pool.taken(),
            left: pool.len(),
        },
        notes: Vec::new(),
    };
    notes.extend(interpret(&report, cfg, misses));
    report.notes = notes;
    Ok(report)
}

/// What the figures mean for the reader: which side was the limit, what
/// the loop hides, why a kind did not do what it was asked.
fn interpret(r: &BenchReport, cfg: &BenchConfig, misses: u64) -> Vec<String> {
    let mut notes = Vec::new();
    if r.load.mode == LoadMode::Closed {
        notes.push(
            "closed loop: a connection starts only when another ends, so a stalled server \
             also stalls the arrivals and the tail is under-counted (coordinated omission); \
             measure latency with --rate"
                .to_string(),
        );
    }
    if let Some(lag) = &r.phases.start_lag {
        if r.load.mode == LoadMode::Open && (lag.p99_ms > 1.0 || lag.max_ms > 10.0) {
            notes.push(format!(
                "the generator started connections late (start lag p99 {:.2} ms, max {:.1} ms, \
                 {:.2} cores busy): latencies include that delay; lower --rate or add --threads",
                lag.p99_ms, lag.max_ms, r.client_cpu.cores_busy
            ));
        }
    }
    if r.client_cpu.cores_busy >= 0.9 * cfg.threads as f64 {
        notes.push(format!(
            "the generator kept {:.2} of its {} threads' cores busy: it may be the bottleneck",
            r.client_cpu.cores_busy, cfg.threads
        ));
    }
    if let Some(e) = r.errors.iter().find(|e| e.class == ErrorClass::NotStarted) {
        notes.push(format!(
            "{} arrivals were not started: {} connections were already open (--max-in-flight); \
             the server fell behind the offered rate",
            e.count, r.load.max_in_flight
        ));
    }
    for k in &r.kinds {
        let missing = k.succeeded.saturating_sub(k.resumed);
        if k.kind != Kind::Full && missing > 0 {
            let dry = misses.min(missing);
            notes.push(format!(
                "{} of {} {} connections did not resume: {} found the ticket pool empty, \
                 {} had their ticket refused by the server",
                missing,
                k.succeeded,
                k.kind,
                dry,
                missing - dry
            ));
        }
        if k.kind == Kind::ZeroRtt && k.early_data_sent < k.succeeded {
            notes.push(format!(
                "{} of {} 0-RTT connections could not send early data (no ticket, or the \
                 server's tickets do not allow it: max_early_data_size 0)",
                k.succeeded - k.early_data_sent,
                k.succeeded
            ));
        }
        if k.kind == Kind::ZeroRtt && k.early_data_accepted < k.early_data_sent {
            notes.push(format!(
                "the server rejected the early data of {} of {} connections; the request \
                 was sent again after the handshake (RFC 8446 §4.2.10)",
                k.early_data_sent - k.early_data_accepted,
                k.early_data_sent
            ));
        }
    }
    notes
}

/// Raise the open-files limit to its hard limit and keep `want` connections
/// (plus those closing) under it.
fn fd_limit(want: usize, notes: &mut Vec<String>) -> usize {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return want;
    };
    let limit = if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        hard
    } else {
        soft
    };
    // what the process itself holds, and connections still closing (each
    // for at most 2 s) aside
    let room = usize::try_from(limit.saturating_sub(1024)).unwrap_or(usize::MAX);
    if room < want {
        notes.push(format!(
            "the open-files limit ({limit}) allows {room} connections in flight, not {want}"
        ));
        room.max(1)
    } else {
        want
    }
}

/// The connectors, the request and the limits every connection shares.
fn make_plan(
    cfg: &BenchConfig,
    target: &Target,
    addr: SocketAddr,
    pool: &Arc<TicketPool>,
) -> Result<Plan, BenchError> {
    let mut tls = cfg.tls.clone();
    tls.alpn = vec!["http/1.1".into()];
    let base = rttlens_probe::tls::base_config(&tls).map_err(|e| BenchError::Usage(e.message))?;
    let with = |store: Arc<dyn ClientSessionStore>, early: bool| {
        let mut c = base.clone();
        c.resumption = Resumption::store(store);
        c.enable_early_data = early;
        conn::connector(Arc::new(c), early)
    };
    let connectors = [
        with(Arc::new(FillOnly(Arc::clone(pool))), false),
        with(Arc::clone(pool) as Arc<dyn ClientSessionStore>, false),
        with(Arc::clone(pool) as Arc<dyn ClientSessionStore>, true),
    ];
    let server_name = ServerName::try_from(target.host.clone())
        .map_err(|e| BenchError::Usage(format!("{}: not a server name: {e}", target.host)))?;
    let server_closes = cfg.requests == 1;
    let request = (cfg.requests > 0).then(|| {
        format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: rttlens-bench/{}\r\nAccept: */*\r\nConnection: {}\r\n\r\n",
            target.path,
            target.host_header(),
            env!("CARGO_PKG_VERSION"),
            if server_closes { "close" } else { "keep-alive" }
        )
        .into_bytes()
    });
    Ok(Plan {
        addr,
        server_name,
        connectors,
        request,
        requests: cfg.requests,
        server_closes,
        timeout: cfg.timeout,
    })
}

/// One connection must work before anything is measured; then full
/// connections (32 at a time) fill the ticket pool (see
/// [`BenchConfig::warmup`]).
async fn warm_up(
    plan: &Arc<Plan>,
    cfg: &BenchConfig,
    pool: &Arc<TicketPool>,
    notes: &mut Vec<String>,
) -> Result<(), BenchError> {
    let first = conn::measure(plan, Kind::Full, Instant::now()).await;
    if let Some(f) = first.failure {
        return Err(BenchError::Target(format!(
            "the first connection to {} failed in {} ({}): {}",
            plan.addr,
            f.phase,
            f.class.name(),
            f.message
        )));
    }
    let needs_tickets = cfg.mix.has(Kind::Resumed) || cfg.mix.has(Kind::ZeroRtt);
    // tickets wanted, and connections allowed to get them
    let (want, n) = match (cfg.warmup, needs_tickets) {
        (Some(n), _) => (usize::MAX, n),
        (None, false) => (usize::MAX, WARMUP_NO_TICKETS),
        (None, true) => {
            let share = cfg.mix.share(Kind::Resumed) + cfg.mix.share(Kind::ZeroRtt);
            let conns = match (cfg.load, cfg.stop) {
                (_, Stop::Count(n)) => n as f64,
                (Load::Open { rate }, Stop::Duration(d)) => rate * d.as_secs_f64(),
                (Load::Closed { .. }, Stop::Duration(_)) => POOL_TICKETS as f64,
            };
            let want = ((conns * share).ceil() as usize).clamp(1, POOL_TICKETS);
            (want, u32::try_from(2 * want + 16).unwrap_or(u32::MAX))
        }
    };
    let next = Arc::new(AtomicU64::new(0));
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..WARMUP_PARALLEL.min(n as usize) {
        let (plan, next, pool) = (Arc::clone(plan), Arc::clone(&next), Arc::clone(pool));
        set.spawn(async move {
            // bounded by `n` connections, each by the timeout
            while pool.len() < want && next.fetch_add(1, Ordering::Relaxed) < u64::from(n) {
                let _ = conn::measure(&plan, Kind::Full, Instant::now()).await;
            }
        });
    }
    while set.join_next().await.is_some() {}
    if needs_tickets {
        // the tickets arrive while the warm-up connections close
        let deadline = Instant::now() + Duration::from_secs(2);
        while pool.is_empty() && !pool.has_tls12_session() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if pool.is_empty() && !pool.has_tls12_session() {
            notes.push(
                "the server sent no session ticket during the warm-up: resumed and 0-RTT \
                 connections will make full handshakes"
                    .into(),
            );
        }
    }
    Ok(())
}

/// What the schedulers share.
struct Schedule<'a> {
    rt: &'a tokio::runtime::Runtime,
    plan: &'a Arc<Plan>,
    cycle: &'a Arc<Vec<Kind>>,
    stop: Stop,
    t0: Instant,
    tx: &'a Sender<Sample>,
    in_flight: &'a Arc<AtomicUsize>,
    cancel: &'a Arc<AtomicBool>,
}

impl Schedule<'_> {
    fn kind(cycle: &[Kind], i: u64) -> Kind {
        cycle[usize::try_from(i % cycle.len() as u64).unwrap_or(0)]
    }

    /// Open loop on this thread: sleep until each intended start, spawn
    /// the connection, never wait for one. Bounded by `stop` and `cancel`.
    fn open_loop(&self, rate: f64, max_in_flight: usize) {
        // wake-ups within 1 µs of the asked time instead of the default
        // 50 µs timer slack (prctl(2) PR_SET_TIMERSLACK)
        let _ = nix::sys::prctl::set_timerslack(1000);
        let interval = 1.0 / rate;
        let mut i: u64 = 0;
        'schedule: loop {
            let offset = Duration::from_secs_f64(i as f64 * interval);
            match self.stop {
                Stop::Count(n) if i >= n => break,
                Stop::Duration(d) if offset >= d => break,
                _ => {}
            }
            let intended = self.t0 + offset;
            // sleep in steps of at most 50 ms so Ctrl-C is seen
            loop {
                if self.cancel.load(Ordering::Relaxed) {
                    break 'schedule;
                }
                let now = Instant::now();
                if now >= intended {
                    break;
                }
                std::thread::sleep((intended - now).min(Duration::from_millis(50)));
            }
            let kind = Schedule::kind(self.cycle, i);
            let open = self.in_flight.load(Ordering::Acquire);
            if open >= max_in_flight {
                let _ = self.tx.send(Sample::not_started(kind, intended, open));
            } else {
                self.in_flight.fetch_add(1, Ordering::AcqRel);
                let (plan, tx, inf) = (
                    Arc::clone(self.plan),
                    self.tx.clone(),
                    Arc::clone(self.in_flight),
                );
                self.rt.spawn(async move {
                    let s = conn::measure(&plan, kind, intended).await;
                    let _ = tx.send(s);
                    inf.fetch_sub(1, Ordering::AcqRel);
                });
            }
            i += 1;
        }
    }

    /// Closed loop: `c` workers, each starting a connection when its last
    /// one ended. Returns when they are done or `cancel` is set.
    fn closed_loop(&self, c: u32) {
        let next = Arc::new(AtomicU64::new(0));
        let left = Arc::new(AtomicUsize::new(c as usize));
        let until = match self.stop {
            Stop::Duration(d) => Some(self.t0 + d),
            Stop::Count(_) => None,
        };
        let count = match self.stop {
            Stop::Count(n) => Some(n),
            Stop::Duration(_) => None,
        };
        let start = tokio::time::Instant::from_std(self.t0);
        for _ in 0..c {
            let (plan, tx, inf) = (
                Arc::clone(self.plan),
                self.tx.clone(),
                Arc::clone(self.in_flight),
            );
            let (next, left, cancel, cycle) = (
                Arc::clone(&next),
                Arc::clone(&left),
                Arc::clone(self.cancel),
                Arc::clone(self.cycle),
            );
            self.rt.spawn(async move {
                tokio::time::sleep_until(start).await;
                // bounded by the count or the deadline, and by `cancel`
                while !cancel.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let now = Instant::now();
                    if count.is_some_and(|n| i >= n) || until.is_some_and(|u| now >= u) {
                        break;
                    }
                    inf.fetch_add(1, Ordering::AcqRel);
                    let s = conn::measure(&plan, Schedule::kind(&cycle, i), now).await;
                    let _ = tx.send(s);
                    inf.fetch_sub(1, Ordering::AcqRel);
                }
                left.fetch_sub(1, Ordering::AcqRel);
            });
        }
        // bounded: each worker ends after its last connection (≤ timeout)
        while left.load(Ordering::Acquire) > 0 && !self.cancel.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Wait until no connection is open: up to the per-connection timeout
/// (each one ends by then), or [`GRACE`] after Ctrl-C. Returns how many
/// were still open.
fn wait_in_flight(in_flight: &AtomicUsize, timeout: Duration, cancel: &AtomicBool) -> usize {
    let start = Instant::now();
    // bounded by the deadlines below
    loop {
        let open = in_flight.load(Ordering::Acquire);
        if open == 0 {
            return 0;
        }
        let limit = if cancel.load(Ordering::Relaxed) {
            GRACE
        } else {
            timeout + GRACE
        };
        if start.elapsed() >= limit {
            return open;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The collector thread: add every sample to the histograms, call
/// `progress` about 5 times a second, end once `finished` is set and the
/// channel is empty.
fn collect(
    rx: Receiver<Sample>,
    progress: &mut (dyn FnMut(&BenchProgress) + Send),
    t0: Instant,
    in_flight: &AtomicUsize,
    finished: &AtomicBool,
    (expected, planned): (Option<u64>, Option<Duration>),
) -> Stats {
    let mut stats = Stats::new();
    let mut last = Instant::now();
    let report = |stats: &Stats, progress: &mut (dyn FnMut(&BenchProgress) + Send)| {
        progress(&BenchProgress {
            elapsed: t0.elapsed(),
            finished: stats.done(),
            failed: stats.failed(),
            in_flight: in_flight.load(Ordering::Relaxed),
            expected,
            planned,
        });
    };
    // Polls instead of blocking in recv: a receiver that sleeps in the
    // channel is woken (futex, context switch) by every send, a cost the
    // connections' threads would pay (measured: ~5 % of the generator's
    // CPU at 5,000 connections/s). Bounded: ends when `finished` is set.
    loop {
        let done = finished.load(Ordering::Acquire);
        loop {
            match rx.try_recv() {
                Ok(s) => stats.add(&s),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return stats,
            }
        }
        if done {
            break;
        }
        if last.elapsed() >= PROGRESS_EVERY {
            report(&stats, progress);
            last = Instant::now();
        }
        std::thread::sleep(COLLECT_EVERY);
    }
    report(&stats, progress);
    stats
}

/// Make Ctrl-C (SIGINT; SIGTERM and SIGHUP too) set `cancel`, so the run
/// stops and reports what it measured; a second one removes any lab
/// ([`rttlens_net::cleanup_all`]) and exits with status 130. Call it before
/// a lab is set up: the lab then leaves signals to this handler. Returns
/// `false` when the program already had a handler.
pub fn stop_on_interrupt(cancel: Arc<AtomicBool>) -> bool {
    ctrlc::set_handler(move || {
        if cancel.swap(true, Ordering::SeqCst) {
            rttlens_net::cleanup_all();
            std::process::exit(130);
        }
        eprintln!("rttlens bench: stopping (Ctrl-C again to quit at once)");
    })
    .is_ok()
}
