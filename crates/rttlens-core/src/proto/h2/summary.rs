//! What the HTTP/2 tracker tells the analysis of a connection: its
//! streams, flow-control stalls and windows, and the frames held behind a
//! TCP hole (head-of-line waits).

use crate::base::side::{FrameRef, Side};
use crate::proto::http::stream::HttpStream;
use crate::proto::{NoteKind, Notes};

/// A stream's frame captured before bytes that precede it in the TCP
/// stream: the segment ahead was lost before the capture point, so the
/// receiver's TCP held this frame until the retransmission filled the hole
/// (one TCP byte stream for every stream, RFC 9113 §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HolWait {
    /// The sender.
    pub sender: Side,
    /// The waiting stream.
    pub stream: u32,
    /// The frame that carried its bytes (captured first).
    pub arrived: FrameRef,
    /// The frame that filled the hole ahead of it: when it could be
    /// delivered.
    pub delivered: FrameRef,
    /// The stream whose bytes filled the hole (0: not known).
    pub behind: u32,
}

/// Which window a sender waited on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "stream")]
pub enum Window {
    /// The connection's (stream 0).
    Connection,
    /// One stream's.
    Stream(u32),
}

/// A sender stopped at an exhausted window until a WINDOW_UPDATE came
/// (found by `analysis::h2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Stall {
    /// The sender that waited.
    pub sender: Side,
    /// The window it waited on.
    pub window: Window,
    /// The window's size: the receiver's initial window (stream) or the
    /// connection window the sender had had (bytes).
    pub size: i64,
    /// The DATA frame that left the window at 0.
    pub exhausted: FrameRef,
    /// The first WINDOW_UPDATE that opened it again.
    pub update: FrameRef,
    /// The sender's next DATA frame.
    pub resumed: FrameRef,
}

/// One flow-control event, in capture order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowEvent {
    /// The frame that delivered it.
    pub at: FrameRef,
    /// The sender whose windows it concerns (for a WINDOW_UPDATE or a
    /// SETTINGS: the peer of the side that sent it).
    pub sender: Side,
    /// What happened.
    pub kind: FlowKind,
}

/// What a [`FlowEvent`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowKind {
    /// The sender's DATA frame: stream, payload length, END_STREAM.
    Data {
        /// Stream.
        stream: u32,
        /// Payload length (padding included, as flow control counts it).
        len: u32,
        /// END_STREAM set.
        end: bool,
    },
    /// A WINDOW_UPDATE for the sender (stream 0: the connection).
    Update {
        /// Stream (0 = connection).
        stream: u32,
        /// Increment, bytes.
        inc: u32,
    },
    /// The receiver's `SETTINGS_INITIAL_WINDOW_SIZE`.
    InitialWindow(u32),
}

/// What the tracker learnt of one HTTP/2 connection.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct H2Summary {
    /// The first [`STREAM_DETAIL_CAP`](super::STREAM_DETAIL_CAP) streams, in the order they opened.
    pub streams: Vec<HttpStream>,
    /// Streams seen in all.
    pub stream_count: u64,
    /// `SETTINGS_INITIAL_WINDOW_SIZE` each side announced (bytes; `None`:
    /// the default 65535).
    pub initial_window: [Option<u32>; 2],
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` each side announced.
    pub max_concurrent_streams: [Option<u32>; 2],
    /// The SETTINGS frame that last set each side's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`.
    #[serde(skip)]
    pub max_concurrent_streams_at: [Option<FrameRef>; 2],
    /// Flow-control events (the first [`FLOW_EVENT_CAP`](super::FLOW_EVENT_CAP)).
    #[serde(skip)]
    pub flow: Vec<FlowEvent>,
    /// Flow-control events past the cap.
    pub flow_events_dropped: u64,
    /// PING round trips at the capture point (PING → its ACK), ms.
    pub ping_rtts_ms: Vec<f64>,
    /// GOAWAY: its frame, sender and error code.
    pub goaway: Option<(FrameRef, Side, u32)>,
    /// Frames captured before the TCP bytes ahead of them (the first
    /// [`HOL_DETAIL_CAP`](super::HOL_DETAIL_CAP)): held by the receiver's TCP until a hole in
    /// another stream's bytes was filled.
    #[serde(skip)]
    pub head_of_line: Vec<HolWait>,
    /// Header blocks that could not be decoded.
    pub undecoded_blocks: u64,
    /// Notes per direction, client's and server's.
    pub notes: [Notes; 2],
}

impl H2Summary {
    /// Whether the frames could not be followed in either direction (a
    /// capture gap where framing was, bytes cut by the snapshot length,
    /// garbage): flow control and streams are then partly unknown.
    pub fn lost_frames(&self) -> bool {
        self.notes.iter().any(|n| {
            n.dropped() > 0
                || n.items().iter().any(|i| {
                    matches!(
                        i.kind,
                        NoteKind::LostSync { .. } | NoteKind::Malformed { .. }
                    )
                })
        })
    }
}
