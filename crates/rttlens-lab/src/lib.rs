//! # rttlens-lab: every cause reproduced and diagnosed
//!
//! `rttlens lab` (docs/design.md §6): each scenario is a topology (the
//! shared crate's [`rttlens_lab_net::Lab`]: two namespaces and the delay
//! link), a server configuration (nginx, the built-in rustls server of
//! `rttlens-lab-server`, Go's `crypto/tls`), a client action (curl,
//! `openssl s_client`, the probe) and the findings the engine must report
//! on the capture of what happened.
//!
//! - [`scenario`]: what a scenario is, the context its run works with
//!   (servers and clients in the lab), and running one: captures,
//!   analysis, expectations, partial copies.
//! - [`mod@catalogue`]: the scenarios.
//! - [`path`]: the path scenarios: the probe's `--path` across four
//!   namespaces in a row ([`rttlens_lab_net::RoutedLab`]), its hops and
//!   their RTTs checked.
//! - [`copies`]: partial copies of a capture (mid-stream, sender-only,
//!   offload, snaplen), as captures from the wild come.
//! - [`go_server`]: the Go target, built with the machine's Go.
//! - [`h2_client`]: parallel requests over one HTTP/2 connection that
//!   honour the server's stream limit.
//! - [`verify`]: each scenario's fix applied by the lab, and the saving it
//!   measured set against the finding's predicted cost (`--verify-fix`).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod catalogue;
pub mod copies;
pub mod go_server;
pub mod h2_client;
pub mod path;
pub mod scenario;
pub mod verify;

pub use catalogue::{catalogue, find};
pub use scenario::{
    run_scenario, run_scenario_beside, Beside, BesideOutcome, ExpectationResult, Scenario,
    ScenarioCtx, ScenarioOutcome, Variant, VariantOutcome,
};
