//! What `--trace` keeps of a connection for the graphs: TCP's packets
//! (`Trace`) and QUIC's datagrams (`QuicTrace`), each with its RTT samples.
//!
//! Defined beside the tables that record them (`flow::trace`,
//! `quic::trace`) and read from here by the renderers.

pub use crate::flow::rounds::Limit;
pub use crate::flow::trace::{RttSample, Trace, TracePacket};
pub use crate::quic::packet::PacketType;
pub use crate::quic::trace::QuicTrace;
