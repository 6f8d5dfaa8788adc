//! The peer's receive window as this sender had it: the window fields and
//! their scale ([`Half::scaled`]), zero-window episodes, new data that
//! filled the window (Wireshark's `window_full`), and, without the SYNs, the
//! window-scale shift the sender's flight proves ([`WscaleEvidence`]).

use crate::base::side::FrameRef;

use super::{FrameMark, Half, MAX_EVENTS_KEPT};

/// The peer advertised a zero window for a while.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct ZeroWindow {
    /// The ACK advertising window 0.
    pub(crate) start: FrameRef,
    /// The ACK that opened the window again (None: never, within the capture).
    pub(crate) end: Option<FrameRef>,
}

/// Why the peer's window-scale shift is at least what it is, when the SYNs
/// that negotiated it are not in the capture: a sender never sends past the
/// right edge of the offered window (RFC 9293 §3.8.6, snd_una + snd_wnd),
/// so data reaching `flight` bytes beyond the eligible ACK under a raw
/// window field `raw` proves `raw << shift ≥ flight`. Nothing bounds the
/// shift from above: scaled windows are lower bounds.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct WscaleEvidence {
    /// The data segment that reached past `raw << (shift − 1)`.
    pub(crate) at: FrameRef,
    /// Its end − the eligible cumulative ACK (bytes).
    pub(crate) flight: u64,
    /// The window field the sender had last heard (unscaled).
    pub(crate) raw: u64,
    /// The smallest shift with `raw << shift ≥ flight` (≤ 14).
    pub shift: u8,
}

impl Half {
    /// A window field of the peer in bytes: `raw << peer_wscale` (a lower
    /// bound unless [`Half::wscale_known`]).
    pub(crate) fn scaled(&self, raw: u64) -> u64 {
        raw << self.peer_flags.peer_wscale.min(14)
    }

    /// Raise the inferred window-scale shift until the peer's window (as
    /// last heard by the sender) covers data ending at `end` (see
    /// [`WscaleEvidence`]). Only without the SYNs.
    pub(super) fn infer_wscale(&mut self, end: u64, at: FrameRef) {
        if self.peer_flags.wscale_known || !self.peer.elig.seen || self.peer.elig.window == 0 {
            return;
        }
        let flight = end.saturating_sub(self.peer.elig.ack);
        if self.scaled(self.peer.elig.window) >= flight {
            return;
        }
        while self.peer_flags.peer_wscale < 14 && self.scaled(self.peer.elig.window) < flight {
            self.peer_flags.peer_wscale += 1;
        }
        let evidence = WscaleEvidence {
            at,
            flight,
            raw: self.peer.elig.window,
            shift: self.peer_flags.peer_wscale,
        };
        match &mut self.peer.wscale_evidence {
            Some(e) => **e = evidence,
            None => self.peer.wscale_evidence = Some(Box::new(evidence)),
        }
    }

    /// The peer's ACK at `at` carried the raw window field `window`
    /// (`known` false for a RST, whose field means nothing: then `window` is
    /// the last one): zero-window episodes, and the latest and largest
    /// window.
    pub(super) fn on_peer_window(&mut self, window: u64, known: bool, at: FrameRef) {
        if known {
            self.note_zero_window(window, at);
        }
        self.peer.window = window;
        self.peer.max_window = self.peer.max_window.max(window);
    }

    /// Zero-window episodes, from the raw window field `window` of the
    /// peer's ACK at `at`: a zero window is zero at any scale and whatever
    /// the ACK number, so the first ACK a mid-stream capture holds counts
    /// too, and so does an ACK seen before this sender's first segment (the
    /// receiver's windows shrinking to zero, then its window update, then
    /// the data it let through).
    pub(super) fn note_zero_window(&mut self, window: u64, at: FrameRef) {
        if window == 0 {
            self.mark(at, FrameMark::ZeroWindow);
            if self.zero_windows().last().is_none_or(|z| z.end.is_some())
                && self.zero_windows().len() < MAX_EVENTS_KEPT
            {
                self.events_mut().zero_windows.push(ZeroWindow {
                    start: at,
                    end: None,
                });
            }
        } else if let Some(z) = self.events.as_mut().and_then(|e| e.zero_windows.last_mut()) {
            if z.end.is_none() {
                z.end = Some(at);
            }
        }
    }

    /// New data ending at `end`, sent at `at`: it filled the window when it
    /// reached the right edge the sender had seen (eligible ACK + window).
    pub(super) fn check_window_full(&mut self, end: u64, at: FrameRef) {
        if self.peer.elig.seen
            && self.peer.elig.window > 0
            && end == self.peer.elig.ack + self.scaled(self.peer.elig.window)
        {
            self.peer.window_full += 1;
            self.mark(at, FrameMark::WindowFull);
        }
    }
}
