//! Every packet of a connection, kept for the pictures (the HTML report's
//! ladder, time-sequence, IO and RTT graphs) when asked for
//! (`crate::flow::FlowTable::with_trace`).
//!
//! The analysis itself never reads a trace: it streams. A trace costs 64
//! bytes per packet ([`TracePacket`]) and 32 per RTT sample, so it is kept
//! only while a picture is wanted.

use crate::base::side::{FrameRef, Side};
use crate::wire::TcpFlags;

/// An RTT sample as a trace keeps it (TCP's and QUIC's alike).
pub use crate::flow::rtt::RttSample;

/// One packet as the pictures need it.
#[derive(Debug, Clone, Copy)]
pub struct TracePacket {
    /// Frame number and capture time.
    pub at: FrameRef,
    /// Sender.
    pub side: Side,
    /// TCP flags.
    pub flags: TcpFlags,
    /// Stream offset of the first payload byte in the sender's stream
    /// (bytes from ISN + 1, or from the first byte seen mid-stream); `None`
    /// when the sender's stream has no origin yet.
    pub seq: Option<u64>,
    /// Payload bytes on the wire.
    pub len: u32,
    /// Stream offset the ACK field acknowledges in the peer's stream; `None`
    /// without the ACK flag or before the peer's stream has an origin.
    pub ack: Option<u64>,
    /// Receive window the sender advertised (bytes: the window field
    /// scaled by the sender's window-scale shift as finally known, RFC 7323
    /// §2.2; a SYN's field is never scaled).
    pub window: u64,
    /// The flow layer counted this segment as a retransmission (any class).
    pub retransmission: bool,
}

/// The packets of one connection and its RTT samples, in capture order.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// Every packet.
    pub packets: Vec<TracePacket>,
    /// Every data/ACK and timestamp RTT sample: the half it measured
    /// (M→side→M) and the packet that closed it.
    pub rtt: Vec<(Side, RttSample)>,
    /// Frames the analysis named (`ClientHello`, `server Finished`,
    /// `request`, `first response byte`, …), sorted by
    /// frame.
    pub labels: Vec<(u64, &'static str)>,
    /// Whether each side's window scale is known from the SYNs (else the
    /// windows are lower bounds), indexed by [`Side::index`].
    pub wscale_known: [bool; 2],
}

impl Trace {
    /// Scale every packet's raw window field once the connection is over:
    /// `shift[i]` is side `i`'s window-scale shift as finally known.
    pub fn scale_windows(&mut self, shift: [u8; 2]) {
        for p in &mut self.packets {
            if !p.flags.contains(TcpFlags::SYN) {
                p.window <<= shift[p.side.index()].min(14);
            }
        }
    }

    /// The labels of `frame` (none when the analysis did not name it).
    pub fn labels_of(&self, frame: u64) -> impl Iterator<Item = &'static str> + '_ {
        labels_of(&self.labels, frame)
    }
}

/// The labels of `frame` in `labels` (sorted by frame), for the traces of
/// either transport.
pub fn labels_of<'a>(
    labels: &'a [(u64, &'static str)],
    frame: u64,
) -> impl Iterator<Item = &'static str> + 'a {
    let i = labels.partition_point(|l| l.0 < frame);
    labels[i..]
        .iter()
        .take_while(move |l| l.0 == frame)
        .map(|l| l.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_documented() {
        // the module docs and docs/html.md quote these per-packet costs
        assert_eq!(std::mem::size_of::<TracePacket>(), 64);
        assert_eq!(std::mem::size_of::<(Side, RttSample)>(), 32);
    }
}
