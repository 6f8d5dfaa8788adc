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
//! 2. [`nginx`]: a complete `nginx.conf` generated from a [`nginx::Config`]
//!    (self-signed certificate, docroot with files of chosen sizes, every
//!    path inside one directory), and an [`nginx::Instance`] that runs it
//!    and stops it on drop.
//!
//! Shared pieces: [`cert`] (the self-signed certificate, rcgen) and
//! [`TlsVersion`]. The binary `rttlens-lab-server` is a thin CLI over
//! [`builtin::Server`].
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod builtin;
pub mod cert;
mod error;
mod flight;
pub mod nginx;

pub use error::{Error, Result};

/// A TLS protocol version a server may offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TlsVersion {
    /// TLS 1.2 (RFC 5246).
    Tls12,
    /// TLS 1.3 (RFC 8446).
    Tls13,
}

impl TlsVersion {
    /// Both versions, the default of both servers.
    pub const ALL: [TlsVersion; 2] = [TlsVersion::Tls12, TlsVersion::Tls13];

    /// The name nginx's `ssl_protocols` uses (`TLSv1.2`, `TLSv1.3`).
    pub fn nginx_name(self) -> &'static str {
        match self {
            TlsVersion::Tls12 => "TLSv1.2",
            TlsVersion::Tls13 => "TLSv1.3",
        }
    }
}

impl std::str::FromStr for TlsVersion {
    type Err = Error;

    /// Parses `1.2`, `1.3`, `tls1.2`, `TLSv1.3` (case-insensitive).
    fn from_str(s: &str) -> Result<Self> {
        let t = s.to_ascii_lowercase();
        let t = t.trim_start_matches("tlsv").trim_start_matches("tls");
        match t {
            "1.2" | "12" => Ok(TlsVersion::Tls12),
            "1.3" | "13" => Ok(TlsVersion::Tls13),
            _ => Err(Error::Config(format!(
                "unknown TLS version '{s}' (expected 1.2 or 1.3)"
            ))),
        }
    }
}

impl std::fmt::Display for TlsVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TlsVersion::Tls12 => "1.2",
            TlsVersion::Tls13 => "1.3",
        })
    }
}
