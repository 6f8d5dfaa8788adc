//! What the capture missed of this direction: holes in the sequence (a
//! segment beyond the highest one seen opens one; a later segment fills it,
//! `retx.rs` says whether by reordering or retransmission; an ACK past it
//! means its bytes went by unseen) and ACKs of bytes the capture never saw
//! (Wireshark's `ack_lost_segment`), both counted as capture drops.

use crate::base::side::FrameRef;

use super::{FrameMark, Half, MAX_EVENTS_KEPT};

/// Data the capture never saw although the receiver acknowledged it.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct CaptureDrop {
    /// The ACK that revealed it.
    pub(crate) at: FrameRef,
    /// Bytes acknowledged but never seen.
    pub(crate) bytes: u64,
}

/// Stream offsets `start..end` the capture has not seen, since `opened`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Hole {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) opened: FrameRef,
}

impl Half {
    fn note_drop(&mut self, at: FrameRef, bytes: u64) {
        self.loss.dropped_bytes += bytes;
        let drops = &mut self.events_mut().drops;
        if drops.len() < MAX_EVENTS_KEPT {
            drops.push(CaptureDrop { at, bytes });
        }
    }

    /// The peer's ACK at `at` reaches stream offset `off`: past the highest
    /// byte seen (and the FIN), the receiver has bytes the capture never saw,
    /// which then count as sent.
    pub(super) fn ack_beyond_sent(&mut self, off: u64, at: FrameRef) {
        let fin_extra = self.send.fin.is_some() as u64;
        if off > self.send.snd_nxt + fin_extra {
            // ACKed unseen: the receiver has bytes the capture never saw
            let bytes = off - self.send.snd_nxt - fin_extra;
            self.note_drop(at, bytes);
            self.mark(at, FrameMark::AckedUnseen);
            self.send.snd_nxt = off - fin_extra.min(off);
        }
    }

    /// The cumulative ACK at `at` advanced to `off`: the holes below it were
    /// delivered past the capture point.
    pub(super) fn holes_acked(&mut self, off: u64, at: FrameRef) {
        let mut lost = 0;
        self.loss.holes.retain(|h| {
            if h.start < off {
                lost += h.end.min(off) - h.start;
                h.end > off
            } else {
                true
            }
        });
        for h in &mut self.loss.holes {
            h.start = h.start.max(off);
        }
        if lost > 0 {
            self.note_drop(at, lost);
        }
    }

    /// New data at `off` beyond the highest offset sent: the bytes between
    /// were not captured.
    pub(super) fn open_hole(&mut self, off: u64, at: FrameRef) {
        self.mark(at, FrameMark::PreviousSegmentLost);
        self.loss.holes.push(Hole {
            start: self.send.snd_nxt,
            end: off,
            opened: at,
        });
        if self.loss.holes.len() > 256 {
            self.loss.holes.remove(0);
        }
    }

    /// Data `off..end` filled (part of) hole `i`; what is left of it stays.
    pub(super) fn fill_hole(&mut self, i: usize, off: u64, end: u64) {
        let h = self.loss.holes[i];
        self.loss.holes.swap_remove(i);
        if off > h.start {
            self.loss.holes.push(Hole {
                start: h.start,
                end: off,
                opened: h.opened,
            });
        }
        if end < h.end {
            self.loss.holes.push(Hole {
                start: end,
                end: h.end,
                opened: h.opened,
            });
        }
    }
}
