//! One connection record for every transport: what the renderers, JSON
//! Lines streaming and the population view take, through one
//! `on_connection`, in capture order at any thread count.
//!
//! The header every transport shares — index, transport, endpoints,
//! Community ID, first and last frame, start, duration, RTT, ladder,
//! findings — is read through [`Connection`]'s methods; the body is the
//! transport's own report ([`ConnReport`] for TCP with TLS and HTTP on
//! top, [`QuicReport`] for QUIC and HTTP/3).

use super::{ConnReport, QuicReport};
use crate::analysis::ladder::Phase;
use crate::detect::Finding;

/// The transport of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// TCP (with TLS, HTTP/1.1 and HTTP/2 on top).
    Tcp,
    /// QUIC (with HTTP/3 on top).
    Quic,
}

impl Transport {
    /// Stable name used in the outputs: `tcp`, `quic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Quic => "quic",
        }
    }
}

/// One analysed connection of either transport.
#[derive(Debug, Clone)]
pub enum Connection {
    /// A TCP connection.
    Tcp(Box<ConnReport>),
    /// A QUIC connection.
    Quic(Box<QuicReport>),
}

impl From<ConnReport> for Connection {
    fn from(c: ConnReport) -> Connection {
        Connection::Tcp(Box::new(c))
    }
}

impl From<QuicReport> for Connection {
    fn from(q: QuicReport) -> Connection {
        Connection::Quic(Box::new(q))
    }
}

impl Connection {
    /// Its transport.
    pub fn transport(&self) -> Transport {
        match self {
            Connection::Tcp(_) => Transport::Tcp,
            Connection::Quic(_) => Transport::Quic,
        }
    }

    /// 0-based index among the capture's connections of its transport,
    /// in order of first packet.
    pub fn index(&self) -> u64 {
        match self {
            Connection::Tcp(c) => c.index,
            Connection::Quic(q) => q.index,
        }
    }

    /// Client `address:port`.
    pub fn client(&self) -> &str {
        match self {
            Connection::Tcp(c) => &c.client,
            Connection::Quic(q) => &q.client,
        }
    }

    /// Server `address:port`.
    pub fn server(&self) -> &str {
        match self {
            Connection::Tcp(c) => &c.server,
            Connection::Quic(q) => &q.server,
        }
    }

    /// Community ID v1 of its 4-tuple.
    pub fn community_id(&self) -> &str {
        match self {
            Connection::Tcp(c) => &c.community_id,
            Connection::Quic(q) => &q.community_id,
        }
    }

    /// First frame (Wireshark's numbering).
    pub fn first_frame(&self) -> u64 {
        match self {
            Connection::Tcp(c) => c.first_frame,
            Connection::Quic(q) => q.first_frame,
        }
    }

    /// Last frame.
    pub fn last_frame(&self) -> u64 {
        match self {
            Connection::Tcp(c) => c.last_frame,
            Connection::Quic(q) => q.last_frame,
        }
    }

    /// Seconds from the capture's first packet to this connection's first.
    pub fn start_s(&self) -> f64 {
        match self {
            Connection::Tcp(c) => c.start_s,
            Connection::Quic(q) => q.start_s,
        }
    }

    /// Its first packet's time (capture clock).
    pub fn first_ts(&self) -> crate::base::time::Timestamp {
        match self {
            Connection::Tcp(c) => c.first_ts,
            Connection::Quic(q) => q.first_ts,
        }
    }

    /// First to last packet (ms).
    pub fn duration_ms(&self) -> f64 {
        match self {
            Connection::Tcp(c) => c.duration_ms,
            Connection::Quic(q) => q.duration_ms,
        }
    }

    /// The smallest RTT (ms), when measured.
    pub fn rtt_min_ms(&self) -> Option<f64> {
        match self {
            Connection::Tcp(c) => c.rtt.as_ref().map(|r| r.min_ms),
            Connection::Quic(q) => q.rtt.as_ref().map(|r| r.min_ms),
        }
    }

    /// The ladder of phases.
    pub fn ladder(&self) -> &[Phase] {
        match self {
            Connection::Tcp(c) => &c.ladder,
            Connection::Quic(q) => &q.ladder,
        }
    }

    /// Findings, highest cost first.
    pub fn findings(&self) -> &[Finding] {
        match self {
            Connection::Tcp(c) => &c.findings,
            Connection::Quic(q) => &q.findings,
        }
    }

    /// Total cost of the findings (ms), for "slowest first" ordering.
    pub fn findings_ms(&self) -> f64 {
        match self {
            Connection::Tcp(c) => c.findings_ms(),
            Connection::Quic(q) => q.findings_ms(),
        }
    }

    /// The TCP report, when it is one (owned).
    pub fn into_tcp(self) -> Option<ConnReport> {
        match self {
            Connection::Tcp(c) => Some(*c),
            Connection::Quic(_) => None,
        }
    }

    /// The QUIC report, when it is one (owned).
    pub fn into_quic(self) -> Option<QuicReport> {
        match self {
            Connection::Quic(q) => Some(*q),
            Connection::Tcp(_) => None,
        }
    }

    /// The TCP report, when it is one.
    pub fn as_tcp(&self) -> Option<&ConnReport> {
        match self {
            Connection::Tcp(c) => Some(c),
            Connection::Quic(_) => None,
        }
    }

    /// The QUIC report, when it is one.
    pub fn as_quic(&self) -> Option<&QuicReport> {
        match self {
            Connection::Quic(q) => Some(q),
            Connection::Tcp(_) => None,
        }
    }
}
