//! Loss detection and RTT measurement as the capture point sees them (RFC
//! 9002): the packets recorded, those awaiting an ACK, the RTT samples and
//! the losses the ACKs declare.

use std::collections::VecDeque;

use super::{AckSample, Loss, PacketRec, QuicConn, EVENTS_CAP, PACKETS_KEPT};
use crate::base::side::{FrameRef, Side};
use crate::base::time::Duration;
use crate::quic::journal::{JournalLoss, JournalSample};

/// Sent packets awaiting an ACK kept per direction and space.
pub(super) const SENT_CAP: usize = 8192;
/// Initial and Handshake packets whose acknowledgement is kept
/// ([`Recovery::handshake_acked`]).
const HANDSHAKE_ACKED_KEPT: usize = 256;
/// The packet reordering threshold (RFC 9002 §6.1.1, `kPacketThreshold`).
const PACKET_THRESHOLD: u64 = 3;

/// Packets sent by one side in one space, not yet acknowledged.
#[derive(Debug, Default)]
pub(super) struct Sent {
    pub(super) q: VecDeque<(u64, FrameRef, bool)>,
    /// Largest packet number the peer acknowledged.
    pub(super) largest_acked: Option<u64>,
}

/// Recovery (RFC 9002): each packet's record (the first
/// `PACKETS_KEPT`), the packets each side sent per packet number space
/// not yet acknowledged and the largest packet number seen (§A.1), the RTT
/// samples of new largest acknowledged packets (§5.1) and the losses by
/// packet threshold (§6.1.1) or packet number gap.
#[derive(Debug, Default)]
pub struct Recovery {
    /// The first packets in detail.
    pub recs: Vec<PacketRec>,
    /// RTT samples.
    pub samples: Vec<AckSample>,
    /// Packets lost.
    pub losses: Vec<Loss>,
    /// Losses beyond the kept ones.
    pub losses_more: u64,
    /// Initial and Handshake packets acknowledged: (sender, space, packet
    /// number), the first 256. A packet sent again
    /// whose first copy is among them was not lost (its probe timer fired
    /// before the answer came: a slow peer, not the path).
    pub handshake_acked: Vec<(Side, u8, u64)>,
    /// Packets sent not yet acknowledged, by sender and space.
    pub(super) sent: [[Sent; 3]; 2],
    pub(super) largest: [[Option<u64>; 3]; 2],
}

impl Recovery {
    /// A loss, kept if fewer than `EVENTS_CAP` are, else counted.
    pub(super) fn push_loss(&mut self, l: Loss) {
        if self.losses.len() < EVENTS_CAP {
            self.losses.push(l);
        } else {
            self.losses_more += 1;
        }
    }
}

impl QuicConn {
    /// A packet: to the trace, and recorded while fewer than
    /// [`PACKETS_KEPT`] are.
    pub(super) fn record(&mut self, rec: PacketRec) {
        if let Some(t) = &mut self.trace {
            t.packet(rec.ty, rec.pn, rec.ack_eliciting, rec.crypto_again);
        }
        if self.recovery.recs.len() < PACKETS_KEPT {
            self.recovery.recs.push(rec);
        }
    }

    /// An ACK from `side` of the peer's packets in `space`: an RTT sample
    /// when the largest acknowledged is new (RFC 9002 §5.1) and packets
    /// declared lost by the packet threshold (§6.1.1).
    pub(super) fn ack(
        &mut self,
        side: Side,
        space: usize,
        largest: u64,
        delay: Duration,
        ranges: &[(u64, u64)],
        at: FrameRef,
    ) {
        let peer = side.peer();
        let sent = &mut self.recovery.sent[peer.index()][space];
        let new_largest = sent.largest_acked.is_none_or(|l| largest > l);
        if new_largest {
            sent.largest_acked = Some(largest);
        }
        let mut sample = None;
        let mut lost = Vec::new();
        let acked = |pn: u64| ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&pn));
        let early = &mut self.recovery.handshake_acked;
        let mut keep = |pn: u64| {
            if space < 2 && early.len() < HANDSHAKE_ACKED_KEPT {
                early.push((peer, space as u8, pn));
            }
        };
        while let Some(&(pn, sent_at, _)) = sent.q.front() {
            if pn > largest {
                break;
            }
            if acked(pn) {
                if pn == largest && new_largest {
                    sample = Some(sent_at);
                }
                keep(pn);
                sent.q.pop_front();
            } else if pn + PACKET_THRESHOLD <= largest {
                lost.push((pn, sent_at));
                sent.q.pop_front();
            } else {
                break;
            }
        }
        // acked packets behind one still waiting: the queue is in packet
        // number order, so only its head up to `largest` can be acked (a
        // scan of the whole queue on every ACK cost O(packets in flight))
        let mut end = sent.q.partition_point(|e| e.0 <= largest);
        let mut i = 0;
        while i < end {
            let (pn, t, _) = sent.q[i];
            if acked(pn) {
                if pn == largest && new_largest {
                    sample = Some(t);
                }
                keep(pn);
                sent.q.remove(i);
                end -= 1;
            } else {
                i += 1;
            }
        }
        for (pn, sent_at) in lost {
            let l = Loss {
                side: peer,
                space: space as u8,
                pn,
                at: sent_at,
                declared_by: Some(at),
            };
            if let Some(j) = &mut self.journal {
                j.losses.push(JournalLoss {
                    side: l.side,
                    space: l.space,
                    pn: l.pn,
                    at: l.at,
                    declared_by: l.declared_by,
                });
            }
            self.recovery.push_loss(l);
        }
        if let Some(sent_at) = sample {
            let raw = at.ts - sent_at.ts;
            let rtt = if raw - delay > Duration::ZERO {
                raw - delay
            } else {
                raw
            };
            if let Some(t) = &mut self.trace {
                t.sample(side, at, rtt);
            }
            if let Some(j) = &mut self.journal {
                j.samples.push(JournalSample {
                    acker: side,
                    ack: at,
                    space: space as u8,
                    rtt,
                    ack_delay: delay,
                });
            }
            if self.recovery.samples.len() < EVENTS_CAP {
                self.recovery.samples.push(AckSample {
                    acker: side,
                    packet: sent_at,
                    ack: at,
                    space: space as u8,
                    rtt,
                    ack_delay: delay,
                });
            }
        }
    }
}
