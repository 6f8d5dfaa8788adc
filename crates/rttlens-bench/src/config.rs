//! What to run ([`BenchConfig`]): the target, how connections arrive
//! ([`Load`]), when the run stops ([`Stop`]), the mix and the limits of
//! every option.

use std::time::Duration;

use rttlens_probe::resolve::{Family, ResolveOverride};
use rttlens_probe::tls::TlsOptions;

use crate::mix::{Kind, Mix};
use crate::results::LabInfo;
use crate::BenchError;

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
