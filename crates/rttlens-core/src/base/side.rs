//! Which end of a connection something belongs to, and where in the capture
//! it was seen.

use crate::base::time::Timestamp;

/// One end of a TCP connection. The client is the host that sent the SYN (or,
/// without a SYN, the host on the higher, ephemeral port).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The connecting host.
    Client,
    /// The accepting host.
    Server,
}

impl Side {
    /// The other end.
    pub fn peer(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }

    /// `0` for the client, `1` for the server (index into per-direction arrays).
    pub fn index(self) -> usize {
        match self {
            Side::Client => 0,
            Side::Server => 1,
        }
    }

    /// `"client"` or `"server"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Server => "server",
        }
    }
}

/// An optional [`FrameRef`] in the 16 bytes of one, for the state a
/// connection keeps while open: frames are numbered from 1, so frame 0
/// stands for none (`Option<FrameRef>` takes 24 B).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct MaybeFrame(FrameRef);

impl MaybeFrame {
    /// The frame, if one was set.
    pub(crate) fn get(self) -> Option<FrameRef> {
        (self.0.frame != 0).then_some(self.0)
    }

    /// Sets the frame (`at.frame` is 1 or more).
    pub(crate) fn set(&mut self, at: FrameRef) {
        debug_assert!(at.frame != 0, "frames are numbered from 1");
        self.0 = at;
    }

    /// Sets the frame unless one is set already.
    pub(crate) fn set_once(&mut self, at: FrameRef) {
        if self.is_none() {
            self.set(at);
        }
    }

    /// No frame was set.
    pub(crate) fn is_none(self) -> bool {
        self.0.frame == 0
    }

    /// A frame was set.
    pub(crate) fn is_some(self) -> bool {
        !self.is_none()
    }
}

/// A reference to a frame of the capture: its Wireshark number
/// (`frame.number`, 1-based, counting every
/// record in the file, TCP or not) and its capture timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize)]
pub struct FrameRef {
    /// Wireshark frame number (1-based).
    pub frame: u64,
    /// Capture timestamp.
    pub ts: Timestamp,
}

#[cfg(test)]
impl FrameRef {
    /// Frame `frame` passing `frame` milliseconds after the epoch: the
    /// frames of the unit tests' made-up captures.
    pub(crate) fn at_ms(frame: u64) -> FrameRef {
        FrameRef {
            frame,
            ts: Timestamp::from_nanos(frame as i64 * 1_000_000),
        }
    }
}
