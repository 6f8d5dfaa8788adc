//! # rttlens-core: where the time went, counted in round trips
//!
//! The analysis engine of rttlens, laid out in the order of its pipeline. It
//! opens no sockets; everything here is pure computation over frames.
//!
//! 1. [`capture`]: pcap and pcapng files (also gzip'd, also stdin) read as a
//!    stream of [`capture::Frame`]s, one record at a time.
//! 2. [`wire`]: link layer (Ethernet with VLANs, Linux SLL/SLL2, raw IP, BSD
//!    null), IPv4/IPv6 and TCP decoded into a [`wire::TcpSegment`], including
//!    the TCP options the analysis needs (MSS, window scale, SACK,
//!    timestamps, Fast Open).
//! 3. [`flow`]: TCP connections keyed by 4-tuple and ISN, per-direction
//!    sequence tracking, retransmission classes, windows, stream reassembly.
//! 4. [`proto`]: TLS records and handshake ([`proto::tls`]) and HTTP/1.1
//!    messages ([`proto::http`]) placed by stream offset.
//! 5. [`analysis`]: vantage point, RTT, rounds and their limits, and the
//!    ladder of phases.
//! 6. [`detect`]: one detector per named cause, each producing
//!    [`detect::Finding`]s with cost, evidence frames, confidence and fix.
//!
//! [`pipeline::run`] glues the layers together for a whole capture.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

// TRANSITION: old paths until the other crates move to `base::`
pub use base::{seq, side, time};

pub mod analysis;
pub mod base;
pub mod capture;
pub mod detect;
pub mod filter;
pub mod flow;
pub mod pipeline;
pub mod proto;
pub mod report;
pub mod wire;
