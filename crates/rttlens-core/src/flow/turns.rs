//! Request/response turns at the TCP level, whatever the protocol: the
//! client sends data, the server's TCP acknowledges all of it (a pure ACK,
//! or the answer's own ACK field: so the server had it), and the server's
//! next data comes later. The
//! wait from the client's last byte to the server's answer, less the path,
//! is time the server's application took (docs/design.md §4 "Think time").
//!
//! This needs no payload: it times the requests of a protocol rttlens does
//! not read, of a capture whose snapshot length cut the payloads, and of
//! any later request on a keep-alive connection, where the application
//! layer times only the first exchange. Only the first turn and the
//! longest of the later ones are kept, so a connection's state does not
//! grow with its requests (the first turn of a TLS connection is its
//! handshake, which the analysis sets apart).

use crate::base::side::FrameRef;

/// One turn: the client's last data, the server's ACK covering it, and the
/// server's next new data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turn {
    /// The client's last data segment before the answer.
    pub(crate) request_last: FrameRef,
    /// The server's first ACK covering everything the client had sent: a
    /// pure ACK before the answer, or the answer itself.
    pub(crate) ack: FrameRef,
    /// The server's first new data after it.
    pub(crate) response_first: FrameRef,
}

impl Turn {
    /// From the client's last byte to the server's answer (ns).
    pub(crate) fn wait(&self) -> i64 {
        (self.response_first.ts - self.request_last.ts).nanos
    }
}

/// The turns of one connection, as the segments come.
#[derive(Debug, Default, Clone)]
pub struct Turns {
    /// The client's last data and the server's ACK of it, while the server
    /// has not answered.
    open: Option<(FrameRef, FrameRef)>,
    /// A turn whose answer so far is shorter than a full segment (a TLS
    /// NewSessionTicket, response headers written apart), and its bytes:
    /// when the server then falls silent with all its data acknowledged,
    /// the data after the silence is the answer proper.
    preamble: Option<(FrameRef, FrameRef, u64, u64)>,
    /// The frame of the client's data the server last answered (its data
    /// acknowledging all of it): a later ACK of it opens no turn.
    answered: Option<u64>,
    /// The first complete turn.
    pub first: Option<Turn>,
    /// The longest complete turn after the first (boxed: a connection of
    /// one request has none, and inline it took 56 B of every connection).
    pub(crate) later: Option<Box<Turn>>,
    /// Complete turns.
    pub(crate) count: u32,
}

impl Turns {
    /// The server's pure ACK `ack` covered all the client's data, the last
    /// of which was `request_last` (unless the server's data had already
    /// answered it).
    pub fn on_server_full_ack(&mut self, request_last: FrameRef, ack: FrameRef) {
        if self.answered != Some(request_last.frame) && self.open.is_none() {
            self.open = Some((request_last, ack));
        }
    }

    /// Whether the server's next data can end or time a turn, the
    /// client's last data being `request_last`: a turn is open, an answer
    /// is short so far, or that data is not answered yet. (Most server
    /// segments of a transfer are none of these: they skip the rest.)
    pub(crate) fn pending(&self, request_last: Option<FrameRef>) -> bool {
        self.open.is_some()
            || self.preamble.is_some()
            || request_last.is_some_and(|q| self.answered != Some(q.frame))
    }

    /// The client sent new data: a turn still open is not over (the
    /// request goes on).
    pub(crate) fn on_client_data(&mut self) {
        self.open = None;
        self.preamble = None;
    }

    /// The server sent new data at `at`: an open turn ends here. Without
    /// one, `acks` is the client's last data when this segment acknowledges
    /// all of it: unless answered before, the answer carries the ACK. (Data
    /// that crossed the client's in flight, a TLS NewSessionTicket passing
    /// the request, answers nothing.)
    ///
    /// `len` is the segment's payload and `full` a full segment's size;
    /// `paused` says all the server's earlier data was acknowledged and the
    /// server then waited longer than the ACK's way to it (it was not
    /// waiting for that ACK: its application paused); `drops` counts the
    /// server's bytes the capture missed so far. A turn answered so far by
    /// less than one full segment, then such a pause with nothing missed,
    /// is timed to the data after the pause (the answer proper).
    pub(crate) fn on_server_data(
        &mut self,
        at: FrameRef,
        acks: Option<FrameRef>,
        len: u64,
        paused: bool,
        full: u64,
        drops: u64,
    ) {
        let turn = match self.open.take() {
            Some((request_last, ack)) => Some((request_last, ack)),
            None => acks
                .filter(|q| self.answered != Some(q.frame))
                .map(|q| (q, at)),
        };
        if let Some((request_last, ack)) = turn {
            self.answered = Some(request_last.frame);
            self.record(Turn {
                request_last,
                ack,
                response_first: at,
            });
            self.count = self.count.saturating_add(1);
            self.preamble = (len < full).then_some((request_last, ack, len, drops));
            return;
        }
        let Some((request_last, ack, bytes, drops_then)) = self.preamble else {
            return;
        };
        if drops != drops_then {
            // the capture missed some of the answer: no pause is proven
            self.preamble = None;
        } else if paused {
            self.preamble = None;
            self.record(Turn {
                request_last,
                ack,
                response_first: at,
            });
        } else if bytes + len >= full {
            self.preamble = None;
        } else {
            self.preamble = Some((request_last, ack, bytes + len, drops));
        }
    }

    fn record(&mut self, t: Turn) {
        if self.first.is_none() {
            self.first = Some(t);
        } else {
            match &mut self.later {
                Some(l) if t.wait() > l.wait() => **l = t,
                Some(_) => {}
                None => self.later = Some(Box::new(t)),
            }
        }
    }

    /// The longest complete turn (the earlier on a tie).
    #[cfg(test)]
    fn longest(&self) -> Option<Turn> {
        match (self.first, self.later.as_deref().copied()) {
            (Some(f), Some(l)) if l.wait() > f.wait() => Some(l),
            (f, l) => f.or(l),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_short_first_answer_then_silence_is_timed_to_the_answer_proper() {
        let mut t = Turns::default();
        // request at 0, a 250 B ticket at 41 ms carrying the ACK, the
        // response 200 ms later once the ticket was acknowledged
        t.on_server_data(m(3, 41), Some(m(2, 0)), 250, false, 1448, 0);
        t.on_server_data(m(5, 241), None, 1448, true, 1448, 0);
        assert_eq!(t.longest().map(|l| l.response_first.frame), Some(5));
        assert_eq!(t.first.map(|l| l.response_first.frame), Some(3));
        // a full first answer: later data is the answer going on
        let mut t = Turns::default();
        t.on_server_data(m(3, 41), Some(m(2, 0)), 1448, false, 1448, 0);
        t.on_server_data(m(5, 1041), None, 1448, true, 1448, 0);
        assert_eq!(t.longest().map(|l| l.response_first.frame), Some(3));
        // data the capture missed between: no pause is proven
        let mut t = Turns::default();
        t.on_server_data(m(3, 41), Some(m(2, 0)), 250, false, 1448, 0);
        t.on_server_data(m(5, 241), None, 1448, true, 1448, 1448);
        assert_eq!(t.longest().map(|l| l.response_first.frame), Some(3));
    }

    use super::*;
    use crate::base::time::Timestamp;

    fn m(frame: u64, ms: i64) -> FrameRef {
        FrameRef {
            frame,
            ts: Timestamp::from_nanos(ms * 1_000_000),
        }
    }

    #[test]
    fn the_longest_acknowledged_wait_is_kept() {
        let mut t = Turns::default();
        t.on_server_full_ack(m(1, 0), m(2, 10));
        t.on_server_data(m(3, 30), None, 1448, false, 1448, 0);
        t.on_client_data();
        t.on_server_full_ack(m(4, 100), m(5, 110));
        t.on_server_data(m(6, 500), None, 1448, false, 1448, 0);
        t.on_server_full_ack(m(7, 600), m(8, 610));
        t.on_server_data(m(9, 620), None, 1448, false, 1448, 0);
        assert_eq!(t.count, 3);
        assert_eq!(t.longest().map(|l| l.response_first.frame), Some(6));
        assert_eq!(t.first.map(|l| l.response_first.frame), Some(3));
    }

    #[test]
    fn more_client_data_or_an_earlier_answer_opens_no_turn() {
        let mut t = Turns::default();
        // the request goes on after the ACK
        t.on_server_full_ack(m(1, 0), m(2, 10));
        t.on_client_data();
        t.on_server_data(m(3, 500), None, 1448, false, 1448, 0);
        assert_eq!(t.count, 0);
        // an answer carrying the ACK, then a pure ACK of the same request
        // and more data: one turn
        let mut t = Turns::default();
        t.on_server_data(m(5, 610), Some(m(4, 600)), 1448, false, 1448, 0);
        t.on_server_full_ack(m(4, 600), m(6, 620));
        t.on_server_data(m(7, 900), Some(m(4, 600)), 1448, false, 1448, 0);
        assert_eq!(t.count, 1);
        let mut t = Turns::default();
        assert_eq!(t.count, 0);
        assert!(t.longest().is_none());
        // an answer that acknowledges the whole request itself
        t.on_server_data(m(8, 1500), Some(m(7, 1000)), 1448, false, 1448, 0);
        assert_eq!(
            t.longest().map(|l| (l.ack.frame, l.request_last.frame)),
            Some((8, 7))
        );
    }
}
