//! # rttlens-lab-server: the servers of the rttlens lab
//!
//! The lab (docs/design.md §6) reproduces each latency cause on real
//! kernels. This crate provides its two servers; the topology (namespaces,
//! delay link) lives elsewhere.
//!
//! 1. [`builtin`]: a TLS/HTTP server (rustls 0.23 + hyper 1) with the knobs
//!    nginx lacks: TCP_NODELAY, the server's handshake flight in one or two
//!    `write(2)` calls, TLS record size, tickets, 0-RTT, TCP Fast Open,
//!    SO_SNDBUF and an artificial think time. It answers `GET /size/N` with
//!    N bytes and `GET /` with a small page.
//! 2. [`quic`]: a QUIC/HTTP/3 server (quinn 0.11 + h3) with the knobs that
//!    cost a QUIC handshake round trips: certificate chain size (the
//!    anti-amplification limit), Retry, key-exchange groups (a
//!    HelloRetryRequest), `initial_max_data` / `initial_max_stream_data_*`,
//!    0-RTT and a think time; the same routes as [`builtin`], over UDP.
//! 3. [`nginx`]: a complete `nginx.conf` generated from a [`nginx::Config`]
//!    (self-signed certificate, docroot with files of chosen sizes, every
//!    path inside one directory), and an [`nginx::Instance`] that runs it
//!    and stops it on drop.
//!
//! Shared pieces: [`cert`] (the self-signed certificate and the QUIC
//! server's chain of chosen length, rcgen) and
//! [`TlsVersion`] (the one type of the lab's servers, the probe and the
//! bench, from `rttlens-probe-model`: plain data, no lab code). The binary
//! `rttlens-lab-server` is a thin CLI over [`builtin::Server`] (and, with
//! `--http3`, [`quic::QuicServer`]).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod builtin;
pub mod cert;
mod error;
mod flight;
pub mod nginx;
pub mod quic;

pub use error::{Error, Result};

pub use rttlens_probe_model::TlsVersion;
