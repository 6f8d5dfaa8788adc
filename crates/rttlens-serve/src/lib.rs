//! `rttlens serve`: a Prometheus exporter that runs one rttlens probe per
//! scrape, in the shape of blackbox_exporter's multi-target pattern
//! (issue 26; docs/serve.md).
//!
//! Prometheus scrapes `GET /probe?target=URL&module=NAME`; the exporter
//! runs the probe of crate `rttlens-probe` with the module's options and
//! answers what it measured, blackbox's names where they exist
//! (`probe_success`, `probe_http_duration_seconds{phase=…}`) and rttlens'
//! own (round trips per phase, the RTT, the handshake kind, resumption,
//! 0-RTT and TFO verified, the findings and their costs). The layers, in
//! the order a request passes them:
//!
//! 1. [`config`]: the YAML file of modules, each turned into the probe's
//!    own [`rttlens_probe::ProbeConfig`] (nothing of the probe is
//!    re-implemented here), checked whole at start;
//! 2. [`server`]: the HTTP server (hyper 1 on tokio): `/probe`, `/metrics`,
//!    `/`; the concurrency limit (a semaphore: over it, 503), the timeout
//!    per module (capped by Prometheus' scrape timeout), 400 for a bad
//!    target or module;
//! 3. [`exposition`]: one probe's outcome (a report or the error naming
//!    the failed phase) as Prometheus' text exposition;
//! 4. [`exporter`]: the exporter's own metrics on `/metrics` (probes by
//!    module and outcome, their durations, probes in flight), as
//!    OpenMetrics text or, when the scrape prefers it, Prometheus' protobuf
//!    exposition (which carries native histograms).
//!
//! Beside the probes, `--interface IFACE` ([`live`]) analyses an
//! interface's traffic live in the background (the pipeline of `rttlens
//! analyze -i`) and adds what it found to `/metrics`: connections, finding
//! counts and costs by id, phase histograms, kernel drops, open
//! connections.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod config;
pub mod exporter;
pub mod exposition;
pub mod live;
pub mod server;

pub use config::{Config, ConfigError, Module};
pub use rttlens_probe::AllowList;
pub use server::{ServeError, ServeOptions, Server};
