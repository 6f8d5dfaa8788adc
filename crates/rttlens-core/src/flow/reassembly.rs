//! In-order delivery of one direction's byte stream to the protocol layer.
//!
//! Segments arrive in capture order, which is not stream order when packets
//! were reordered, lost upstream of the capture point and retransmitted, or
//! dropped by the capture itself. [`Reassembler`] hands the protocol layer
//! bytes strictly in stream order, each chunk tagged with the [`FrameRef`] of the
//! segment that completed it, and a gap when the bytes are known to be lost
//! to the capture (the receiver acknowledged them, so they will never come).
//!
//! Written here rather than taken from a library: the protocol trackers need
//! offsets, frame marks and gap notices, and must not buffer payload they do
//! not need; no reassembly crate we checked offers that shape.

use crate::base::side::{FrameRef, Side};

/// Upper bound on out-of-order bytes held per direction (bytes). Past it the
/// oldest hole is declared a gap, so memory stays bounded per connection.
pub(crate) const MAX_OUT_OF_ORDER_BYTES: usize = 1 << 20;

/// What the reassembler feeds: the protocol trackers of one connection.
pub trait StreamSink {
    /// In-order bytes `[offset, offset + data.len())` of the stream, completed
    /// by the segment at `at`.
    fn data(&mut self, offset: u64, data: &[u8], at: FrameRef);
    /// Bytes `[offset, offset + len)` that the capture never saw.
    fn gap(&mut self, offset: u64, len: u64);
}

/// The protocol layer of one connection as the flow layer drives it: both
/// directions' bytes in stream order, and the holes the capture left. The
/// flow layer knows TCP only; `proto::protocols::Protocols` (TLS, HTTP/1.1)
/// is the implementation the pipeline uses, and a new protocol tracker goes
/// there, not here.
pub trait Trackers: Default {
    /// What every connection's trackers share (the pipeline's, e.g. the
    /// TLS key store); `Default` is "nothing".
    type Ctx: Default + std::fmt::Debug;
    /// The trackers of a new connection.
    fn new(ctx: &Self::Ctx) -> Self;
    /// Whether any tracker still wants bytes (when none does, the flow layer
    /// stops reassembling the connection's streams).
    fn wants_bytes(&self) -> bool;
    /// In-order bytes of `side`'s stream at `offset`, completed at `at`.
    fn data(&mut self, side: Side, offset: u64, data: &[u8], at: FrameRef);
    /// Bytes `[offset, offset + len)` of `side`'s stream the capture never saw.
    fn gap(&mut self, side: Side, offset: u64, len: u64);
}

/// One direction's view of a connection's [`Trackers`], as a [`StreamSink`].
pub(crate) struct SideSink<'a, P> {
    /// The sender of the bytes.
    pub(crate) side: Side,
    /// The trackers.
    pub(crate) protocols: &'a mut P,
}

impl<P: Trackers> StreamSink for SideSink<'_, P> {
    fn data(&mut self, offset: u64, data: &[u8], at: FrameRef) {
        self.protocols.data(self.side, offset, data, at);
    }

    fn gap(&mut self, offset: u64, len: u64) {
        self.protocols.gap(self.side, offset, len);
    }
}

#[derive(Debug)]
struct Pending {
    offset: u64,
    data: Vec<u8>,
    at: FrameRef,
}

/// Per-direction in-order reassembly by stream offset (0 = first byte after the SYN).
#[derive(Debug, Default)]
pub struct Reassembler {
    next: u64,
    pending: Vec<Pending>,
    pending_bytes: usize,
}

impl Reassembler {
    /// The out-of-order list trimmed to what it holds (all its room given
    /// back when empty).
    pub(crate) fn trim(&mut self) {
        self.pending.shrink_to_fit();
    }

    /// The next stream offset expected in order.
    pub fn next_offset(&self) -> u64 {
        self.next
    }

    /// Offer the captured bytes of a segment at stream `offset`. `wire_len` is
    /// its payload length on the wire; when the capture cut the packet
    /// (snaplen) the missing tail is reported as a gap.
    pub(crate) fn push(
        &mut self,
        offset: u64,
        data: &[u8],
        wire_len: u64,
        at: FrameRef,
        sink: &mut dyn StreamSink,
    ) {
        let end = offset + wire_len;
        if end <= self.next {
            return; // all seen already
        }
        if offset > self.next {
            self.hold(offset, data, at, sink);
            return;
        }
        self.deliver(offset, data, wire_len, at, sink);
        self.drain(sink);
    }

    fn deliver(
        &mut self,
        offset: u64,
        data: &[u8],
        wire_len: u64,
        at: FrameRef,
        sink: &mut dyn StreamSink,
    ) {
        let skip = (self.next - offset) as usize;
        if skip < data.len() {
            sink.data(self.next, &data[skip..], at);
            self.next = offset + data.len() as u64;
        }
        let end = offset + wire_len;
        if end > self.next {
            // captured bytes ended before the wire length: snaplen cut
            sink.gap(self.next, end - self.next);
            self.next = end;
        }
    }

    fn hold(&mut self, offset: u64, data: &[u8], at: FrameRef, sink: &mut dyn StreamSink) {
        if self.pending.iter().any(|p| p.offset == offset) {
            return;
        }
        self.pending_bytes += data.len();
        self.pending.push(Pending {
            offset,
            data: data.to_vec(),
            at,
        });
        while self.pending_bytes > MAX_OUT_OF_ORDER_BYTES {
            // too much held: give up on the first hole
            let first = self
                .pending
                .iter()
                .map(|p| p.offset)
                .min()
                .unwrap_or(self.next);
            self.skip_to(first, sink);
        }
    }

    fn drain(&mut self, sink: &mut dyn StreamSink) {
        while let Some(i) = self.pending.iter().position(|p| p.offset <= self.next) {
            let p = self.pending.swap_remove(i);
            self.pending_bytes -= p.data.len();
            let len = p.data.len() as u64;
            if p.offset + len > self.next {
                self.deliver(p.offset, &p.data, len, p.at, sink);
            }
        }
    }

    /// The bytes before `offset` will never be seen (the peer acknowledged
    /// them, or the capture ended): report the hole as a gap and move on.
    pub(crate) fn skip_to(&mut self, offset: u64, sink: &mut dyn StreamSink) {
        if offset > self.next {
            sink.gap(self.next, offset - self.next);
            self.next = offset;
        }
        self.drain(sink);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect {
        bytes: Vec<u8>,
        gaps: Vec<(u64, u64)>,
        frames: Vec<u64>,
    }
    impl StreamSink for Collect {
        fn data(&mut self, offset: u64, data: &[u8], at: FrameRef) {
            assert_eq!(
                offset as usize,
                self.bytes.len() + self.gaps.iter().map(|g| g.1 as usize).sum::<usize>()
            );
            self.bytes.extend_from_slice(data);
            self.frames.push(at.frame);
        }
        fn gap(&mut self, offset: u64, len: u64) {
            self.gaps.push((offset, len));
        }
    }
    fn m(frame: u64) -> FrameRef {
        FrameRef {
            frame,
            ..FrameRef::default()
        }
    }

    #[test]
    fn reorders_and_dedups() {
        let mut r = Reassembler::default();
        let mut c = Collect::default();
        r.push(3, b"def", 3, m(2), &mut c);
        r.push(0, b"abc", 3, m(3), &mut c);
        r.push(0, b"abc", 3, m(4), &mut c); // retransmission
        r.push(5, b"fgh", 3, m(5), &mut c); // overlap
        assert_eq!(c.bytes, b"abcdefgh");
        assert_eq!(c.frames, vec![3, 2, 5]);
        assert!(c.gaps.is_empty());
    }

    #[test]
    fn gaps_from_skip_and_snaplen() {
        let mut r = Reassembler::default();
        let mut c = Collect::default();
        r.push(0, b"ab", 4, m(1), &mut c); // cut by snaplen
        r.push(6, b"gh", 2, m(2), &mut c);
        r.skip_to(6, &mut c);
        assert_eq!(c.bytes, b"abgh");
        assert_eq!(c.gaps, vec![(2, 2), (4, 2)]);
        assert_eq!(r.next_offset(), 8);
    }
}
