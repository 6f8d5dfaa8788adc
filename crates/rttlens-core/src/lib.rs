//! # rttlens-core: where the time went, counted in round trips
//!
//! The analysis engine of rttlens, laid out in the order of its pipeline. It
//! opens no sockets; everything here is pure computation over frames. Each
//! layer imports only the layers above it in this list (checked by
//! `tests/layers.rs`; docs/design.md §3 draws the picture):
//!
//! 0. [`base`]: time, TCP sequence numbers, the two ends of a connection and
//!    a frame reference, a finding's cost and the rounding of figures.
//! 1. [`capture`]: pcap and pcapng files (also gzip'd, also stdin) read as a
//!    stream of [`capture::Frame`]s, one record at a time.
//! 2. [`wire`]: link layer (Ethernet with VLANs, Linux SLL/SLL2, raw IP, BSD
//!    null), IPv4/IPv6 and TCP decoded into a [`wire::TcpSegment`], including
//!    the TCP options the analysis needs (MSS, window scale, SACK,
//!    timestamps, Fast Open).
//! 3. [`filter`]: `--filter`, tcpdump's syntax over decoded segments.
//! 4. [`flow`]: TCP connections keyed by 4-tuple and ISN, per-direction
//!    sequence tracking, retransmission classes, windows, stream
//!    reassembly, and the per-packet collectors (RTT samples, rounds, Nagle
//!    and delayed-ACK stall watchers). It drives any protocol layer through
//!    [`flow::reassembly::Trackers`] and knows TCP only.
//! 5. [`proto`]: TLS records and handshake ([`proto::tls`]) and HTTP/1.1
//!    messages ([`proto::http`]) placed by stream offset;
//!    [`proto::protocols::Protocols`] is the set of trackers a connection
//!    feeds.
//!    Beside them, [`quic`]: QUIC connections over UDP (RFC 9000), their
//!    packets decrypted (Initial keys always, the others from a key log),
//!    the TLS handshake in their CRYPTO frames and HTTP/3 on their streams.
//! 6. [`analysis`]: estimation and classification of a finished connection:
//!    vantage point and RTT, round limits, the application timeline, the
//!    ladder of phases.
//! 7. [`detect`]: one detector per named cause, each producing
//!    [`detect::Finding`]s with cost, evidence frames, confidence and fix.
//! 8. [`population`]: what the crowd of connections shows (phase
//!    distributions, over time, the tail, findings only a population proves).
//! 9. [`model`]: the owned, serializable report of a connection and of the
//!    capture, which the `rttlens-report` crate renders.
//! 10. [`pipeline`]: [`pipeline::run`] glues the layers together for a
//!     whole capture, on one thread or sharded by connection.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

// in pipeline order (rustfmt keeps the order of modules apart)
pub mod base;

pub mod capture;

pub mod wire;

pub mod filter;

pub mod flow;

pub mod proto;

pub mod quic;

pub mod analysis;

pub mod detect;

pub mod population;

pub mod model;

pub mod pipeline;
