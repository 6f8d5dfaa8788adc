//! Analysis of a finished connection: vantage, RTT and its rise, rounds and
//! limits, the RTO backoff chain, the transfer, and the ladder of phases.
//! The flow state stays private to this layer: the detectors and the
//! layers after them read an [`Analysis`] through its accessors
//! (`flow_facts.rs`).

pub(crate) mod app;
pub(crate) mod backoff;
pub(crate) mod connection;
mod flow_facts;
pub mod h2;
pub mod ladder;
pub mod quic;
pub mod requests;
pub mod rounds;
pub(crate) mod rtt;
pub(crate) mod rtt_rise;
pub(crate) mod rtt_swing;
pub mod tls;
pub(crate) mod transfer;

pub use app::{AppTimeline, FirstRecord};
pub use connection::{analyze, Analysis};
