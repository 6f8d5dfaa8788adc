//! The TLS handshake carried in QUIC's CRYPTO frames (RFC 9001 §4): one
//! byte stream per direction and encryption level, reassembled from
//! frames that may come out of order or again, cut into handshake
//! messages, the hellos read with the TLS tracker's parsers; and QUIC's
//! transport parameters (RFC 9000 §18).

use std::collections::BTreeMap;

use crate::base::side::FrameRef;
use crate::wire::varint::Cursor;

/// Longest handshake message kept whole for parsing, bytes (a
/// certificate chain is seldom above 16 KB; beyond this only its length is
/// kept).
const MESSAGE_CAP: usize = 64 * 1024;
/// Most bytes held out of order per stream before it is given up.
const PENDING_CAP: usize = 256 * 1024;
/// Most distinct ranges of CRYPTO data remembered per stream.
const RANGES_CAP: usize = 64;
/// Most handshake messages kept per stream.
const MESSAGES_CAP: usize = 32;

/// One handshake message seen whole in a CRYPTO stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Message {
    /// HandshakeType (RFC 8446 §4).
    pub(crate) ty: u8,
    /// Body length, bytes.
    pub(crate) len: u32,
    /// Stream offset of the message header.
    pub(crate) offset: u64,
    /// The packet that carried its first byte.
    pub(crate) first: FrameRef,
    /// The packet that completed it.
    pub(crate) done: FrameRef,
    /// The body, when at most [`MESSAGE_CAP`] bytes and of a type read
    /// later (hellos, EncryptedExtensions, NewSessionTicket).
    pub(crate) body: Option<Vec<u8>>,
}

/// The message types whose bodies are kept: ClientHello, ServerHello,
/// NewSessionTicket, EncryptedExtensions.
fn keeps_body(ty: u8) -> bool {
    matches!(ty, 1 | 2 | 4 | 8)
}

/// One CRYPTO stream (a direction at one encryption level).
#[derive(Debug, Default)]
pub(crate) struct CryptoStream {
    /// Next offset expected in order.
    next: u64,
    /// Pieces beyond `next`, with the packet that carried each.
    pending: BTreeMap<u64, (Vec<u8>, FrameRef)>,
    pending_bytes: usize,
    /// Bytes of the message being assembled (header included).
    partial: Vec<u8>,
    /// Where `partial` starts and the packet of its first byte.
    partial_at: Option<(u64, FrameRef)>,
    /// Bytes of a message too long to keep still to skip.
    skip: u64,
    /// The ranges of CRYPTO data seen, merged and sorted (for
    /// retransmissions); at most [`RANGES_CAP`], the last ones merged
    /// beyond that.
    seen: Vec<(u64, u64)>,
    /// Whole messages, in order.
    pub(crate) messages: Vec<Message>,
    /// Data was given up (a hole held too long or too much out of order).
    pub(crate) broken: bool,
}

impl CryptoStream {
    /// CRYPTO data at `offset` carried by the packet at `at`. Returns
    /// whether any of it had been seen before (a retransmission).
    pub(crate) fn push(&mut self, offset: u64, data: &[u8], at: FrameRef) -> bool {
        let end = offset.saturating_add(data.len() as u64);
        let again = !data.is_empty() && self.seen_before(offset, end);
        if self.broken || end <= self.next {
            return again;
        }
        if offset > self.next {
            if self.pending_bytes + data.len() > PENDING_CAP {
                self.broken = true;
                return again;
            }
            self.pending_bytes += data.len();
            self.pending.insert(offset, (data.to_vec(), at));
            return again;
        }
        let skip = usize::try_from(self.next - offset).unwrap_or(data.len());
        self.take(&data[skip..], at);
        while let Some(e) = self.pending.first_entry() {
            let o = *e.key();
            if o > self.next {
                break;
            }
            let (piece, p_at) = e.remove();
            self.pending_bytes -= piece.len();
            let end = o + piece.len() as u64;
            if end > self.next {
                let skip = usize::try_from(self.next - o).unwrap_or(piece.len());
                // the packet that completes a message is the one being read
                let _ = p_at;
                self.take(&piece[skip..], at);
            }
        }
        again
    }

    /// Whether any of `offset..end` was seen before; notes it as seen.
    fn seen_before(&mut self, offset: u64, end: u64) -> bool {
        let again = self.seen.iter().any(|&(a, b)| offset < b && a < end);
        let i = self.seen.partition_point(|&(_, b)| b < offset);
        let mut lo = offset;
        let mut hi = end;
        let mut j = i;
        while j < self.seen.len() && self.seen[j].0 <= end {
            lo = lo.min(self.seen[j].0);
            hi = hi.max(self.seen[j].1);
            j += 1;
        }
        self.seen.splice(i..j, [(lo, hi)]);
        if self.seen.len() > RANGES_CAP {
            // merge the last two: later data counts as seen a little early
            let (_, b) = self.seen.pop().unwrap_or_default();
            if let Some(last) = self.seen.last_mut() {
                last.1 = last.1.max(b);
            }
        }
        again
    }

    /// In-order bytes at `self.next`.
    fn take(&mut self, mut data: &[u8], at: FrameRef) {
        while !data.is_empty() {
            if self.skip > 0 {
                let n = usize::try_from(self.skip)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                self.skip -= n as u64;
                self.next += n as u64;
                data = &data[n..];
                continue;
            }
            if self.partial_at.is_none() {
                self.partial_at = Some((self.next, at));
            }
            // the header first, then the body up to its length
            let want = if self.partial.len() < 4 {
                4 - self.partial.len()
            } else {
                let len =
                    u32::from_be_bytes([0, self.partial[1], self.partial[2], self.partial[3]]);
                4 + len as usize - self.partial.len()
            };
            let n = want.min(data.len());
            self.partial.extend_from_slice(&data[..n]);
            self.next += n as u64;
            data = &data[n..];
            if self.partial.len() < 4 {
                continue;
            }
            let ty = self.partial[0];
            let len = u32::from_be_bytes([0, self.partial[1], self.partial[2], self.partial[3]]);
            let (offset, first) = self.partial_at.unwrap_or((self.next, at));
            if len as usize > MESSAGE_CAP {
                // too long to keep: note it and skip its body
                let got = self.partial.len() as u64 - 4;
                self.skip = u64::from(len) - got;
                self.push_message(Message {
                    ty,
                    len,
                    offset,
                    first,
                    done: at,
                    body: None,
                });
                self.partial.clear();
                self.partial_at = None;
                continue;
            }
            if self.partial.len() == 4 + len as usize {
                let body = keeps_body(ty).then(|| self.partial[4..].to_vec());
                self.push_message(Message {
                    ty,
                    len,
                    offset,
                    first,
                    done: at,
                    body,
                });
                self.partial.clear();
                self.partial_at = None;
            }
        }
    }

    fn push_message(&mut self, m: Message) {
        if self.messages.len() < MESSAGES_CAP {
            self.messages.push(m);
        }
    }

    /// The first whole message of type `ty`.
    pub(crate) fn message(&self, ty: u8) -> Option<&Message> {
        self.messages.iter().find(|m| m.ty == ty)
    }
}

/// QUIC transport parameters (RFC 9000 §18.2) that the analysis uses;
/// `None` when absent (the default then applies).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TransportParameters {
    /// `max_idle_timeout` (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_idle_timeout_ms: Option<u64>,
    /// `max_udp_payload_size` (bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_udp_payload_size: Option<u64>,
    /// `initial_max_data`: the connection's flow-control limit (bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_max_data: Option<u64>,
    /// `initial_max_stream_data_bidi_local` (bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_max_stream_data_bidi_local: Option<u64>,
    /// `initial_max_stream_data_bidi_remote` (bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_max_stream_data_bidi_remote: Option<u64>,
    /// `initial_max_stream_data_uni` (bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_max_stream_data_uni: Option<u64>,
    /// `initial_max_streams_bidi`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_max_streams_bidi: Option<u64>,
    /// `ack_delay_exponent` (default 3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_delay_exponent: Option<u64>,
    /// `max_ack_delay` (ms, default 25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_ack_delay_ms: Option<u64>,
    /// `retry_source_connection_id` present: the server sent a Retry.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub retry_source_connection_id: bool,
}

impl TransportParameters {
    /// Reads the `quic_transport_parameters` extension's data; unknown and
    /// malformed parameters are skipped.
    pub(crate) fn parse(data: &[u8]) -> TransportParameters {
        let mut tp = TransportParameters::default();
        let mut c = Cursor::new(data);
        while let (Some(id), Some(value)) = (c.varint(), c.bytes_varint_len()) {
            let v = || crate::wire::varint::read(value).map(|(v, _)| v);
            match id {
                0x01 => tp.max_idle_timeout_ms = v(),
                0x03 => tp.max_udp_payload_size = v(),
                0x04 => tp.initial_max_data = v(),
                0x05 => tp.initial_max_stream_data_bidi_local = v(),
                0x06 => tp.initial_max_stream_data_bidi_remote = v(),
                0x07 => tp.initial_max_stream_data_uni = v(),
                0x08 => tp.initial_max_streams_bidi = v(),
                0x0a => tp.ack_delay_exponent = v(),
                0x0b => tp.max_ack_delay_ms = v(),
                0x10 => tp.retry_source_connection_id = true,
                _ => {}
            }
        }
        tp
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::Timestamp;

    fn at(frame: u64) -> FrameRef {
        FrameRef {
            frame,
            ts: Timestamp::from_nanos(frame as i64),
        }
    }

    #[test]
    fn messages_out_of_order_and_again_come_out_whole() {
        // two messages: type 1 with a 5-byte body, type 2 with a 3-byte body
        let stream = [1, 0, 0, 5, 10, 11, 12, 13, 14, 2, 0, 0, 3, 20, 21, 22];
        let mut s = CryptoStream::default();
        assert!(!s.push(6, &stream[6..], at(1)));
        assert!(s.messages.is_empty());
        assert!(!s.push(0, &stream[..6], at(2)));
        assert!(s.push(0, &stream[..4], at(3)));
        assert_eq!(s.messages.len(), 2);
        assert_eq!(
            s.messages[0].body.as_deref(),
            Some(&[10, 11, 12, 13, 14][..])
        );
        assert_eq!(s.messages[0].first.frame, 2);
        assert_eq!(s.messages[1].offset, 9);
        assert_eq!(s.messages[1].done.frame, 2);
    }

    #[test]
    fn transport_parameters_rfc9000_18() {
        // initial_max_data 1048576 (4-byte varint), max_ack_delay 25,
        // an unknown GREASE parameter, retry_source_connection_id
        let data = [
            0x04, 0x04, 0x80, 0x10, 0x00, 0x00, 0x0b, 0x01, 25, 0x40, 0x5a, 0x01, 0xff, 0x10, 0x02,
            1, 2,
        ];
        let tp = TransportParameters::parse(&data);
        assert_eq!(tp.initial_max_data, Some(1 << 20));
        assert_eq!(tp.max_ack_delay_ms, Some(25));
        assert!(tp.retry_source_connection_id);
    }
}
