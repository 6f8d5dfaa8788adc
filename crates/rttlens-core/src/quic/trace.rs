//! Every datagram of a QUIC connection, kept for the pictures (the HTML
//! report's ladder, IO and RTT graphs) when asked for
//! (`crate::quic::table::QuicTable::with_trace`), as
//! [`crate::flow::trace`] keeps a TCP connection's packets.
//!
//! The analysis never reads a trace. A trace costs 48 bytes per datagram
//! ([`TraceDatagram`]) and 32 per RTT sample, kept only while a picture is
//! wanted; unlike the packets the connection records for its analysis
//! (the first few thousand), it has every datagram.

use super::packet::PacketType;
use crate::base::side::{FrameRef, Side};
use crate::flow::rtt::RttSample;

/// One datagram as the pictures need it: its packets summed up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceDatagram {
    /// Frame number and capture time.
    pub at: FrameRef,
    /// Sender.
    pub side: Side,
    /// UDP payload bytes.
    pub len: u32,
    /// The packet types it holds, one bit each ([`TraceDatagram::types`]).
    kinds: u8,
    /// Packets in it (coalesced ones counted apart, RFC 9000 §12.2; at
    /// most 255).
    pub packets: u8,
    /// Every packet in it was decrypted (a Retry or Version Negotiation
    /// packet, not encrypted, never is).
    pub opened: bool,
    /// A packet in it carries a frame other than ACK, PADDING or
    /// CONNECTION_CLOSE (RFC 9002 §2); only known of decrypted packets.
    pub ack_eliciting: bool,
    /// A packet in it carries CRYPTO data sent before (a retransmission).
    pub crypto_again: bool,
    /// Packet number of its first packet that has one decrypted.
    pub first_pn: Option<u64>,
}

/// Packet types in the order a datagram coalesces them (RFC 9000 §12.2:
/// by encryption level), which is the order [`TraceDatagram::types`]
/// lists them in.
const ORDER: [PacketType; 6] = [
    PacketType::VersionNegotiation,
    PacketType::Retry,
    PacketType::Initial,
    PacketType::ZeroRtt,
    PacketType::Handshake,
    PacketType::OneRtt,
];

impl TraceDatagram {
    /// The packet types it holds, by encryption level.
    pub fn types(&self) -> impl Iterator<Item = PacketType> + '_ {
        ORDER
            .iter()
            .enumerate()
            .filter(|(i, _)| self.kinds & (1 << i) != 0)
            .map(|(_, t)| *t)
    }

    /// Whether it only acknowledges: every packet decrypted, none eliciting
    /// an ACK (ACK, PADDING, CONNECTION_CLOSE frames alone).
    pub fn ack_only(&self) -> bool {
        self.opened && !self.ack_eliciting && self.packets > 0
    }
}

/// The datagrams of one QUIC connection and its RTT samples, in capture
/// order.
#[derive(Debug, Clone, Default)]
pub struct QuicTrace {
    /// Every datagram.
    pub datagrams: Vec<TraceDatagram>,
    /// Every ACK-frame RTT sample (RFC 9002 §5), the ACK's reported delay
    /// taken off in the application space: the half it measured (the
    /// acker's, capture point → acker → capture point) and the ACK that
    /// gave it, in the shape of [`crate::flow::trace::Trace::rtt`].
    pub rtt: Vec<(Side, RttSample)>,
    /// Frames the analysis named (`ClientHello`, `ServerHello`, `client
    /// Finished`, `HANDSHAKE_DONE`, the first HTTP/3 request's HEADERS and
    /// DATA, …), sorted by frame.
    pub labels: Vec<(u64, &'static str)>,
}

impl QuicTrace {
    /// A datagram from `side` begins.
    pub(crate) fn datagram(&mut self, side: Side, at: FrameRef, len: u32) {
        self.datagrams.push(TraceDatagram {
            at,
            side,
            len,
            kinds: 0,
            packets: 0,
            opened: true,
            ack_eliciting: false,
            crypto_again: false,
            first_pn: None,
        });
    }

    /// A packet of the datagram begun last: its type, its number when
    /// decrypted, whether it elicits an ACK and resends CRYPTO data.
    pub(crate) fn packet(
        &mut self,
        ty: PacketType,
        pn: Option<u64>,
        ack_eliciting: bool,
        crypto_again: bool,
    ) {
        let Some(d) = self.datagrams.last_mut() else {
            return;
        };
        if let Some(i) = ORDER.iter().position(|t| *t == ty) {
            d.kinds |= 1 << i;
        }
        d.packets = d.packets.saturating_add(1);
        d.opened &= pn.is_some();
        d.ack_eliciting |= ack_eliciting;
        d.crypto_again |= crypto_again;
        if d.first_pn.is_none() {
            d.first_pn = pn;
        }
    }

    /// An RTT sample of the half on `side` (the acker's), closed by `at`.
    pub(crate) fn sample(&mut self, side: Side, at: FrameRef, d: crate::base::time::Duration) {
        self.rtt.push((side, RttSample { at, d }));
    }

    /// The labels of `frame` (none when the analysis did not name it).
    pub fn labels_of(&self, frame: u64) -> impl Iterator<Item = &'static str> + '_ {
        crate::flow::trace::labels_of(&self.labels, frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_documented() {
        // the module docs and docs/html.md quote these per-datagram costs
        assert_eq!(std::mem::size_of::<TraceDatagram>(), 48);
    }

    #[test]
    fn types_are_listed_by_encryption_level() {
        let mut t = QuicTrace::default();
        t.datagram(Side::Client, FrameRef::default(), 1200);
        t.packet(PacketType::Handshake, None, false, false);
        t.packet(PacketType::Initial, Some(0), true, false);
        let d = t.datagrams[0];
        let types: Vec<PacketType> = d.types().collect();
        assert_eq!(types, [PacketType::Initial, PacketType::Handshake]);
        assert_eq!(d.packets, 2);
        assert!(!d.opened, "the Handshake packet was not decrypted");
        assert!(d.ack_eliciting);
        assert_eq!(d.first_pn, Some(0));
    }
}
