//! Feeding the protocol trackers (TLS, HTTP/1.1) from the reassembled streams.
#![allow(missing_docs)]
use crate::flow::reassembly::StreamSink;
use crate::side::{Mark, Side};

/// The protocol trackers of one connection.
#[derive(Debug, Default)]
pub struct Protocols {}

impl Protocols {
    /// Whether any tracker still wants bytes.
    pub fn wants_bytes(&self) -> bool {
        false
    }
}

/// One direction's view of [`Protocols`], as a [`StreamSink`].
pub struct SideSink<'a> {
    pub side: Side,
    pub protocols: &'a mut Protocols,
}

impl StreamSink for SideSink<'_> {
    fn data(&mut self, _offset: u64, _data: &[u8], _at: Mark) {}
    fn gap(&mut self, _offset: u64, _len: u64) {}
}
