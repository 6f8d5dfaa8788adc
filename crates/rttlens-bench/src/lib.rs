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

mod config;
pub mod conn;
mod cpu;
pub mod lab;
pub mod mix;
pub mod results;
mod schedule;
mod stats;
pub mod tickets;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::client::{ClientSessionStore, Resumption};
use rustls::pki_types::ServerName;

pub use config::{
    BenchConfig, Load, Stop, MAX_CONCURRENCY, MAX_COUNT, MAX_DURATION, MAX_IN_FLIGHT, MAX_RATE,
    MAX_REQUESTS, MAX_THREADS, MAX_TIMEOUT, MIN_RATE,
};
pub use conn::{ErrorClass, Failure, Sample};
pub use cpu::process_seconds;
pub use mix::{Kind, Mix};
pub use results::{
    write_compare, BenchReport, Counts, Cpu, ErrorCount, KindReport, LabInfo, LatencySummary,
    LinkReport, ListenCounters, LoadInfo, LoadMode, PhaseLatencies, Rates, Tickets, SCHEMA,
};
pub use schedule::BenchProgress;

use conn::Plan;
use rttlens_probe::resolve::{resolve, Target};
use schedule::{collect, wait_in_flight, Schedule};
use stats::Stats;
use tickets::{FillOnly, TicketPool};

/// Tickets the pool keeps.
const POOL_TICKETS: usize = 8192;
/// Warm-up connections at a time.
const WARMUP_PARALLEL: usize = 32;
/// Warm-up connections when the mix needs no ticket.
const WARMUP_NO_TICKETS: u32 = 16;
/// The schedule starts this long after it is set up.
const LEAD: Duration = Duration::from_millis(5);

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
        .block_on(resolve(&target, &cfg.resolve, cfg.family, None))
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
            late_p50_ms: None,
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

/// Make Ctrl-C (SIGINT; SIGTERM and SIGHUP too) set `cancel`, so the run
/// stops and reports what it measured; a second one removes any lab
/// ([`rttlens_lab_net::cleanup_all`]) and exits with status 130. Call it before
/// a lab is set up: the lab then leaves signals to this handler. Returns
/// `false` when the program already had a handler.
pub fn stop_on_interrupt(cancel: Arc<AtomicBool>) -> bool {
    ctrlc::set_handler(move || {
        if cancel.swap(true, Ordering::SeqCst) {
            rttlens_lab_net::cleanup_all();
            std::process::exit(130);
        }
        eprintln!("rttlens bench: stopping (Ctrl-C again to quit at once)");
    })
    .is_ok()
}
