//! Exact copies of one packet in a capture: the same TCP segment seen twice
//! because the capture was taken on two interfaces (`tcpdump -i any` on a
//! router or bridge), or from a SPAN port mirroring both directions of a
//! link. Wireshark flags such copies as retransmissions and duplicate ACKs;
//! `editcap -d` removes them by comparing each frame with the few before it.
//!
//! Left in, a copy is a retransmission of bytes already seen, so Karn's
//! rule discards every RTT sample (a connection with a clear handshake and
//! hundreds of data/ACK pairs reads "RTT unknown"), and every segment looks
//! lost and recovered. The pipeline drops them before the flow layer and
//! counts them (`quality.duplicate_frames`).
//!
//! What makes a copy: the same ports, sequence and acknowledgment numbers,
//! flags, window and payload length as one of the last [`WINDOW`] segments
//! (the addresses are not compared: two connections on the same ports
//! whose random 32-bit sequence and acknowledgment numbers both coincide
//! within a few frames do not happen, and the key stays small on this
//! per-packet path), and
//! - with an IPv4 Identification other than 0, the same Identification
//!   within [`MAX_GAP_WITH_ID`]: a sender's retransmission carries a new one
//!   (Linux: a per-socket counter, `ip_select_ident()`; RFC 6864 §4.1), so
//!   only a copy repeats it;
//! - without one (IPv6, or stacks that send 0 with DF set), a segment
//!   carrying data within [`MAX_GAP_WITHOUT_ID`]: no sender retransmits
//!   data that fast (it needs an ACK or a timer);
//! - a pure ACK without one only when it repeats the segment captured just
//!   before it within [`MAX_GAP_PURE_ACK`]: a receiver's real duplicate
//!   ACKs each answer a segment that arrived in between (at its vantage the
//!   capture holds that segment between them; at the sender's, the path
//!   spaces them by at least the segments' serialization time, and with
//!   SACK their blocks differ).
//!
//! The TCP options are not compared, so the same frames are copies whether
//! or not they were decoded (the parallel reader skips the options).

use crate::base::seq::SeqNumber;
use crate::base::time::{Duration, Timestamp};
use crate::wire::{TcpFlags, TcpSegment};

/// Largest gap between a pure ACK without an Identification and its copy
/// (the segment captured just before it): copies made by the capture
/// itself (`-i any` on a bridge or bond) carry the same timestamp or one
/// a microsecond apart.
pub(crate) const MAX_GAP_PURE_ACK: Duration = Duration::from_micros(1);

/// Segments a copy is looked for among (`editcap -d` compares 5 frames;
/// a capture on two interfaces interleaves a few more).
pub(crate) const WINDOW: usize = 8;
/// Largest gap between a segment and its copy when an IPv4 Identification
/// tells them apart from a retransmission: the forwarding delay between two
/// capture interfaces.
pub(crate) const MAX_GAP_WITH_ID: Duration = Duration::from_millis(10);
/// Largest gap between a data segment and its copy without an
/// Identification: a SPAN port or second interface copies in microseconds.
pub(crate) const MAX_GAP_WITHOUT_ID: Duration = Duration::from_micros(100);

/// What two copies of a segment share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Key {
    seq: SeqNumber,
    ack: SeqNumber,
    ports: (u16, u16),
    flags: TcpFlags,
    window: u16,
    payload_len: u32,
    ip_id: u16,
}

impl Key {
    fn of(seg: &TcpSegment<'_>) -> Key {
        Key {
            seq: seg.seq,
            ack: seg.ack,
            ports: (seg.src_port, seg.dst_port),
            flags: seg.flags,
            window: seg.window,
            payload_len: seg.payload_len,
            ip_id: seg.ip_id,
        }
    }

    /// How far apart two segments with this key may be to be copies;
    /// `None` when the key cannot tell a copy from a real repeat.
    fn max_gap(&self) -> Option<Duration> {
        if self.ip_id != 0 {
            Some(MAX_GAP_WITH_ID)
        } else if self.payload_len > 0 {
            Some(MAX_GAP_WITHOUT_ID)
        } else {
            None
        }
    }
}

/// The last [`WINDOW`] segments, to recognise copies among them. Their
/// sequence numbers sit apart in one small array, scanned first: on this
/// per-packet path almost every segment differs from all of them there.
#[derive(Debug, Default)]
pub(crate) struct Duplicates {
    seqs: [u32; WINDOW],
    recent: [(Key, Timestamp); WINDOW],
    len: usize,
    next: usize,
}

impl Duplicates {
    /// Whether `seg`, seen at `ts`, is a copy of one of the last segments
    /// (see the module docs). A segment that is not a copy is remembered.
    pub fn is_copy(&mut self, seg: &TcpSegment<'_>, ts: Timestamp) -> bool {
        let key = Key::of(seg);
        if let Some(gap) = key.max_gap() {
            for i in 0..self.len {
                if self.seqs[i] == key.seq.0 {
                    let (k, t) = self.recent[i];
                    if k == key && ts >= t && ts - t <= gap {
                        return true;
                    }
                }
            }
        } else if self.len > 0 {
            let (k, t) = self.recent[(self.next + WINDOW - 1) % WINDOW];
            if k == key && ts >= t && ts - t <= MAX_GAP_PURE_ACK {
                return true;
            }
        }
        self.seqs[self.next] = key.seq.0;
        self.recent[self.next] = (key, ts);
        self.next = (self.next + 1) % WINDOW;
        self.len = (self.len + 1).min(WINDOW);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::TcpOptions;

    fn seg(ip_id: u16, seq: u32, len: u32) -> TcpSegment<'static> {
        TcpSegment {
            src: "10.0.0.1".parse().expect("address"),
            dst: "10.0.0.2".parse().expect("address"),
            src_port: 80,
            dst_port: 5000,
            seq: SeqNumber(seq),
            ack: SeqNumber(7),
            flags: TcpFlags::ACK,
            window: 512,
            options: TcpOptions::default(),
            payload: &[],
            payload_len: len,
            ip_id,
        }
    }

    fn at(us: i64) -> Timestamp {
        Timestamp::from_nanos(us * 1000)
    }

    #[test]
    fn a_copy_with_the_same_ip_id_is_dropped_a_retransmission_is_not() {
        let mut d = Duplicates::default();
        assert!(!d.is_copy(&seg(9, 100, 1448), at(0)));
        assert!(d.is_copy(&seg(9, 100, 1448), at(1)));
        // the sender's retransmission: same bytes, a new Identification
        assert!(!d.is_copy(&seg(10, 100, 1448), at(5)));
        // the same Identification, too late to be a copy
        assert!(!d.is_copy(&seg(9, 100, 1448), at(20_001)));
    }

    #[test]
    fn without_an_identification_only_close_data_copies_are_dropped() {
        let mut d = Duplicates::default();
        assert!(!d.is_copy(&seg(0, 100, 1448), at(0)));
        assert!(d.is_copy(&seg(0, 100, 1448), at(2)));
        assert!(!d.is_copy(&seg(0, 100, 1448), at(500)));
        // identical pure ACKs microseconds apart: a receiver's duplicate
        // ACKs, kept
        assert!(!d.is_copy(&seg(0, 200, 0), at(600)));
        assert!(!d.is_copy(&seg(0, 200, 0), at(602)));
        assert!(!d.is_copy(&seg(0, 200, 0), at(605)));
        // the same pure ACK at the same instant, right after itself: a copy
        assert!(d.is_copy(&seg(0, 200, 0), at(605)));
        assert!(d.is_copy(&seg(0, 200, 0), at(606)));
        // ... but not once another segment came between
        assert!(!d.is_copy(&seg(0, 300, 1448), at(606)));
        assert!(!d.is_copy(&seg(0, 200, 0), at(606)));
    }

    #[test]
    fn only_the_last_window_of_segments_is_searched() {
        let mut d = Duplicates::default();
        assert!(!d.is_copy(&seg(1, 0, 10), at(0)));
        for i in 0..WINDOW as u32 {
            assert!(!d.is_copy(&seg(100 + i as u16, 1000 + i, 10), at(1)));
        }
        assert!(!d.is_copy(&seg(1, 0, 10), at(2)));
    }
}
