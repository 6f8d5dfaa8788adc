//! The base layer: leaf types every layer of the pipeline shares — time in
//! the capture's clock, TCP sequence numbers, the two ends of a connection
//! and a frame reference, a finding's cost and the rounding of every
//! figure, per-connection lists sized for a crowd, and the typed facts a
//! finding is made of (the report writes their sentences).
//! Nothing here imports any other module of the crate.

pub mod cost;
pub mod fact;
pub(crate) mod list;
pub mod seq;
pub mod side;
pub mod time;
