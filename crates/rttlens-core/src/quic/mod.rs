//! QUIC (RFC 9000, v2 RFC 9369) and HTTP/3 (RFC 9114) read from captures.
//!
//! A layer beside [`crate::flow`] for UDP: [`table::QuicTable`] matches
//! datagrams to connections (4-tuple, then connection IDs), and
//! [`conn::QuicConn`] reads each packet:
//!
//! - [`packet`]: long and short headers, coalesced packets, Version
//!   Negotiation and Retry (RFC 9000 §17);
//! - `protect`: packet protection (RFC 9001 §5). Initial packets open
//!   without any key (§5.2: their keys come from the client's first
//!   Destination Connection ID); Handshake, 0-RTT and 1-RTT packets open
//!   with a key log's TLS 1.3 secrets, found by the ClientHello's random;
//! - [`frame`]: the frames of an opened packet (RFC 9000 §19);
//! - `crypto`: the TLS handshake in CRYPTO frames, cut into messages and
//!   read by the TLS layer's hello parsers; transport parameters;
//! - [`trace`]: every datagram and RTT sample, kept for the HTML report's
//!   graphs when asked for;
//! - [`journal`]: every packet with its frames, the RTT samples and the
//!   losses, kept for qlog when asked for.
//!
//! Without keys only what Initials, headers, sizes and timing prove is
//! kept: nothing is guessed about packets that did not open.

pub mod conn;
pub(crate) mod crypto;
pub mod frame;
pub mod journal;
pub mod packet;
pub(crate) mod protect;
pub mod table;
pub mod trace;

pub use crypto::TransportParameters;
