//! Analysis of a finished connection: vantage, RTT, rounds and limits, the
//! transfer, and the ladder of phases.

pub(crate) mod app;
pub(crate) mod connection;
pub mod h2;
pub mod ladder;
pub mod quic;
pub mod requests;
pub mod rounds;
pub(crate) mod rtt;
pub mod tls;
pub(crate) mod transfer;

pub use app::{AppTimeline, FirstRecord};
pub use connection::{analyze, Analysis};
