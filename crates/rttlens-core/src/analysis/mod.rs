//! Analysis of a finished connection: vantage, RTT, rounds and limits, the
//! transfer, and the ladder of phases.

pub mod app;
pub mod connection;
pub mod ladder;
pub mod rounds;
pub mod rtt;
pub mod tls;
pub mod transfer;

pub use app::{AppTimeline, FirstRecord};
pub use connection::{analyze, Analysis};
