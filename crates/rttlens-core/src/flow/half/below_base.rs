//! Holes below the first byte a capture saw: a capture that began
//! mid-connection (no SYN) whose peer ACKs bytes below the first sequence
//! number it saw from this sender. The hole's bytes were sent before the
//! capture began; the peer's ACKs at it are duplicate ACKs, and the
//! retransmission that fills it is classified here as `retx.rs` classifies
//! the others.

use crate::base::seq::SeqNumber;
use crate::base::side::FrameRef;
use crate::base::time::Duration;

use super::{FrameMark, Half, Retransmission, RetxKind, MAX_RETX_KEPT, RTO_MIN};

/// How far below the first sequence number a mid-stream capture saw from a
/// sender the peer's ACKs may point and still be taken as a hole there
/// (bytes): a few windows' worth.
pub const BELOW_BASE_MAX: u64 = 1 << 24;

/// A capture that began mid-connection (no SYN) whose peer ACKs bytes below
/// the first sequence number it saw from this sender: the hole's bytes were
/// sent before the capture began, and their retransmission is coming.
#[derive(Debug, Clone, Copy)]
pub(super) struct BelowBase {
    /// The peer's cumulative ACK (below the first byte seen).
    ack: SeqNumber,
    /// The window field that came with it.
    window: u64,
    /// The first ACK at this number.
    first: FrameRef,
    /// Duplicate ACKs at this number since.
    dupacks: u32,
    /// A SACK block reported bytes above the hole.
    sack_above: bool,
}

impl Half {
    /// The peer ACKs `ack`, below the first byte the capture saw from this
    /// sender (a capture that began mid-connection, no SYN): a hole whose
    /// bytes were sent before the capture began. Repeats are duplicate ACKs
    /// (Wireshark flags them so), SACK blocks above it say the data after
    /// the hole arrived; the retransmission that fills it is counted by
    /// [`Half::data_below_base`].
    pub(super) fn ack_below_base(
        &mut self,
        ack: SeqNumber,
        window: u64,
        sack: &[(SeqNumber, SeqNumber)],
        pure: bool,
        at: FrameRef,
    ) {
        let Some(base) = self.base.filter(|_| self.isn.is_none()) else {
            return;
        };
        let gap = base.diff(ack);
        if gap <= 0 || gap as u64 > BELOW_BASE_MAX {
            return;
        }
        let sack_above = sack.iter().any(|(l, _)| l.diff(ack) > 0);
        match &mut self.loss.below {
            Some(b) if b.ack == ack => {
                let dup = pure && window != 0 && window == b.window;
                b.dupacks += u32::from(dup);
                b.window = window;
                b.sack_above |= sack_above;
                if dup {
                    self.mark(at, FrameMark::DuplicateAck);
                }
            }
            _ => {
                self.loss.below = Some(Box::new(BelowBase {
                    ack,
                    window,
                    first: at,
                    dupacks: 0,
                    sack_above,
                }))
            }
        }
    }

    /// Data at `seq`, below the first byte the capture saw from this sender:
    /// a retransmission of bytes first sent before the capture began, when
    /// the peer's ACKs showed the hole there (else an old duplicate, left
    /// alone). Classified as [`Half::note_retx`] would with the hole's ACKs:
    /// fast after ≥ 3 duplicate ACKs or a SACK above it, a timeout after a
    /// silence of [`RTO_MIN`] and 2.5 RTT, else time-based (RACK).
    pub(super) fn data_below_base(
        &mut self,
        seq: SeqNumber,
        len: u32,
        at: FrameRef,
        rtt_min: Duration,
    ) {
        let Some(b) = self.loss.below.as_deref().copied() else {
            return;
        };
        let Some(base) = self.base else { return };
        if seq.diff(b.ack) < 0 || base.diff(seq) <= 0 {
            return;
        }
        self.loss.below = None;
        self.loss.retx_count += 1;
        self.send.bytes_sent += len as u64;
        self.send.data_segments += 1;
        let silence = at.ts - b.first.ts;
        let timer = silence >= RTO_MIN && silence.nanos as f64 >= 2.5 * rtt_min.nanos as f64;
        let (kind, inferred) = if b.dupacks >= 3 || b.sack_above {
            (RetxKind::FastRetransmit, false)
        } else if timer {
            (RetxKind::Rto, false)
        } else {
            (RetxKind::FastRetransmit, true)
        };
        self.mark(at, FrameMark::Retransmission(kind));
        let retx = &mut self.events_mut().retx;
        if retx.len() < MAX_RETX_KEPT {
            retx.push(Retransmission {
                at,
                original: None,
                // the first byte the capture saw: the hole's bytes are
                // before it, in no offset the capture numbers
                offset: 0,
                len: len.min(base.diff(seq).unsigned_abs() as u32),
                kind,
                silence,
                dupacks: b.dupacks,
                sack_above: b.sack_above,
                backoff: 0,
                spurious: false,
                inferred,
                lost_ack: None,
                // held up at least from the first ACK that showed the hole
                delay: silence,
                dsack: None,
            });
        }
    }
}
