//! Flow-control credit as the capture point sees it (RFC 9000 §4): how far
//! each sender has sent on each stream and on the connection, against the
//! limits its peer set (the transport parameters' `initial_max_data` and
//! `initial_max_stream_data_*`, raised by MAX_DATA and MAX_STREAM_DATA).
//!
//! A sender whose data ends exactly at its peer's limit and who later
//! sends past it has waited for the raise in between: that is a
//! flow-control stall even when the sender never says so with a
//! DATA_BLOCKED or STREAM_DATA_BLOCKED frame (§4.1 makes them a SHOULD;
//! aioquic, for one, sends neither). [`Credit::reached`] keeps each such
//! moment for `detect::quic_flow_control_stall`.
//!
//! The limits are those seen at the capture point, which lags the
//! receiver's own view by the half RTT to it: a raise sent before the
//! sender met the old limit but seen after it makes no stall here (the
//! sender's data then ends past the limit the capture knows of, or the
//! raise comes first). Said less, never wrong.

use crate::base::side::{FrameRef, Side};

/// Streams whose credit is followed per connection; data on further
/// streams only counts toward the connection's limit.
const STREAMS_KEPT: usize = 64;
/// Moments at a limit kept per connection.
const REACHED_KEPT: usize = 256;

/// One sender's data ending exactly at its peer's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtLimit {
    /// The sender.
    pub sender: Side,
    /// The stream, or `None` for the connection's limit (MAX_DATA).
    pub stream: Option<u64>,
    /// The limit (bytes: a stream offset, or the sum of the streams'
    /// highest offsets for the connection, RFC 9000 §4.1).
    pub limit: u64,
    /// The packet whose STREAM frame reached it.
    pub at: FrameRef,
    /// The sender's first packet with data past the limit, once the limit
    /// was raised.
    pub resumed: Option<FrameRef>,
}

/// One stream of one sender.
#[derive(Debug, Clone, Copy)]
struct StreamCredit {
    sender: Side,
    id: u64,
    /// Highest offset sent (end of the furthest STREAM frame).
    sent: u64,
    /// The largest MAX_STREAM_DATA its receiver sent for it.
    raised: Option<u64>,
    /// Index in `reached` of its last moment at a limit not yet resumed.
    open: Option<usize>,
}

/// See the module docs.
#[derive(Debug, Default)]
pub struct Credit {
    streams: Vec<StreamCredit>,
    /// Per sender: the sum of its streams' highest offsets.
    conn_sent: [u64; 2],
    /// Per receiver: the largest MAX_DATA it sent.
    max_data: [Option<u64>; 2],
    /// Per sender: index in `reached` of its last moment at the
    /// connection's limit not yet resumed.
    conn_open: [Option<usize>; 2],
    /// Moments at a limit, in capture order.
    pub reached: Vec<AtLimit>,
}

impl Credit {
    /// A MAX_DATA (`stream` `None`) or MAX_STREAM_DATA frame sent by
    /// `receiver`.
    pub(crate) fn raise(&mut self, receiver: Side, stream: Option<u64>, value: u64) {
        let sender = receiver.peer();
        match stream {
            None => {
                let m = &mut self.max_data[receiver.index()];
                *m = Some(m.map_or(value, |v| v.max(value)));
            }
            Some(id) => {
                if let Some(s) = self.find(sender, id) {
                    s.raised = Some(s.raised.map_or(value, |v| v.max(value)));
                } else if self.streams.len() < STREAMS_KEPT {
                    self.streams.push(StreamCredit {
                        sender,
                        id,
                        sent: 0,
                        raised: Some(value),
                        open: None,
                    });
                }
            }
        }
    }

    /// A STREAM frame from `sender` on stream `id` ending at offset `end`.
    /// `initial` is the receiver's transport parameters' limits for this
    /// stream and for the connection, when known.
    pub(crate) fn sent(
        &mut self,
        sender: Side,
        id: u64,
        end: u64,
        initial: (Option<u64>, Option<u64>),
        at: FrameRef,
    ) {
        let pos = self
            .streams
            .iter()
            .position(|s| s.sender == sender && s.id == id);
        let (pos, grew) = match pos {
            Some(i) => {
                let s = &mut self.streams[i];
                let grew = end.saturating_sub(s.sent);
                s.sent = s.sent.max(end);
                (Some(i), grew)
            }
            None if self.streams.len() < STREAMS_KEPT => {
                self.streams.push(StreamCredit {
                    sender,
                    id,
                    sent: end,
                    raised: None,
                    open: None,
                });
                (Some(self.streams.len() - 1), end)
            }
            // an untracked stream: its bytes before this frame are unknown,
            // so the connection's sum is too from here on
            None => {
                self.conn_sent[sender.index()] = u64::MAX;
                (None, 0)
            }
        };
        if grew > 0 {
            if let Some(i) = pos {
                let limit = max_opt(self.streams[i].raised, initial.0);
                let open = self.streams[i].open;
                let reached = &mut self.reached;
                self.streams[i].open = step(reached, open, sender, Some(id), end, limit, at);
            }
            let c = &mut self.conn_sent[sender.index()];
            if *c != u64::MAX {
                *c = c.saturating_add(grew);
                let limit = max_opt(self.max_data[sender.peer().index()], initial.1);
                let open = self.conn_open[sender.index()];
                let total = *c;
                self.conn_open[sender.index()] =
                    step(&mut self.reached, open, sender, None, total, limit, at);
            }
        }
    }

    fn find(&mut self, sender: Side, id: u64) -> Option<&mut StreamCredit> {
        self.streams
            .iter_mut()
            .find(|s| s.sender == sender && s.id == id)
    }
}

fn max_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// The sender's data now ends at `sent` against `limit`: an open moment at
/// a lower limit is resumed; data ending exactly at the limit opens a new
/// one. Returns the index of the moment left open.
fn step(
    reached: &mut Vec<AtLimit>,
    open: Option<usize>,
    sender: Side,
    stream: Option<u64>,
    sent: u64,
    limit: Option<u64>,
    at: FrameRef,
) -> Option<usize> {
    let mut open = open;
    if let Some(i) = open {
        if sent > reached[i].limit {
            reached[i].resumed = Some(at);
            open = None;
        }
    }
    match limit {
        Some(l) if l > 0 && sent == l && open.is_none() && reached.len() < REACHED_KEPT => {
            reached.push(AtLimit {
                sender,
                stream,
                limit: l,
                at,
                resumed: None,
            });
            Some(reached.len() - 1)
        }
        _ => open,
    }
}

/// The limit the receiver's transport parameters set for stream `id` sent
/// by `sender` (RFC 9000 §18.2): a bidirectional stream the sender opened
/// takes the receiver's `initial_max_stream_data_bidi_remote`, one the
/// receiver opened its `..._bidi_local`, a unidirectional one its
/// `..._uni`. Bit 0 of a stream ID is its initiator (0 client), bit 1
/// whether it is unidirectional (§2.1).
pub(crate) fn initial_stream_limit(
    tp: Option<&crate::quic::crypto::TransportParameters>,
    sender: Side,
    id: u64,
) -> Option<u64> {
    let tp = tp?;
    let initiator = if id & 1 == 0 {
        Side::Client
    } else {
        Side::Server
    };
    if id & 2 != 0 {
        tp.initial_max_stream_data_uni
    } else if initiator == sender {
        tp.initial_max_stream_data_bidi_remote
    } else {
        tp.initial_max_stream_data_bidi_local
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(frame: u64) -> FrameRef {
        FrameRef::at_ms(frame)
    }

    #[test]
    fn data_at_the_stream_limit_then_past_its_raise_is_one_moment() {
        let mut c = Credit::default();
        let init = (Some(16384), Some(1 << 20));
        c.sent(Side::Client, 0, 8192, init, at(1));
        c.sent(Side::Client, 0, 16384, init, at(2));
        // the same bytes sent again open nothing new
        c.sent(Side::Client, 0, 16384, init, at(3));
        c.raise(Side::Server, Some(0), 32768);
        c.sent(Side::Client, 0, 20000, init, at(5));
        c.sent(Side::Client, 0, 32768, init, at(6));
        assert_eq!(c.reached.len(), 2, "{:?}", c.reached);
        assert_eq!(c.reached[0].limit, 16384);
        assert_eq!(c.reached[0].at.frame, 2);
        assert_eq!(c.reached[0].resumed.map(|r| r.frame), Some(5));
        assert_eq!(c.reached[1].limit, 32768);
        assert_eq!(c.reached[1].resumed, None);
    }

    #[test]
    fn the_connection_limit_counts_every_stream() {
        let mut c = Credit::default();
        let init = (Some(1 << 20), Some(10_000));
        c.sent(Side::Server, 1, 6000, init, at(1));
        c.sent(Side::Server, 3, 4000, init, at(2));
        assert_eq!(c.reached.len(), 1);
        assert_eq!(c.reached[0].stream, None);
        c.raise(Side::Client, None, 20_000);
        c.sent(Side::Server, 3, 5000, init, at(4));
        assert_eq!(c.reached[0].resumed.map(|r| r.frame), Some(4));
    }

    #[test]
    fn without_a_known_limit_nothing_is_reached() {
        let mut c = Credit::default();
        c.sent(Side::Client, 0, 16384, (None, None), at(1));
        c.sent(Side::Client, 0, 32768, (None, None), at(2));
        assert!(c.reached.is_empty());
    }

    #[test]
    fn stream_ids_take_the_receivers_parameter_for_their_kind() {
        let tp = crate::quic::crypto::TransportParameters {
            initial_max_stream_data_bidi_local: Some(1),
            initial_max_stream_data_bidi_remote: Some(2),
            initial_max_stream_data_uni: Some(3),
            ..Default::default()
        };
        // the client's own bidi stream 0, sent to the server
        assert_eq!(initial_stream_limit(Some(&tp), Side::Client, 0), Some(2));
        // the server answering on the client's stream 0
        assert_eq!(initial_stream_limit(Some(&tp), Side::Server, 0), Some(1));
        // the client's unidirectional stream 2
        assert_eq!(initial_stream_limit(Some(&tp), Side::Client, 2), Some(3));
        assert_eq!(initial_stream_limit(None, Side::Client, 0), None);
    }
}
