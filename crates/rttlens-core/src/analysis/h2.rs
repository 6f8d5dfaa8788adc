//! HTTP/2 flow control replayed as each sender had it (RFC 9113 §6.9): the
//! windows a sender could send into, and where it stopped at 0 until a
//! WINDOW_UPDATE came.
//!
//! The capture point sees a WINDOW_UPDATE before the sender does, and the
//! sender's DATA after it left: an update seen at time `u` can first show in
//! DATA seen at `u + h`, where `h` is the round trip from the capture point
//! to the sender and back (`h_s` for the server, `h_c` for the client,
//! docs/design.md §4 "Vantage and RTT"). Replaying the events with updates delayed
//! by `h` gives the sender's windows; counted at the capture point without
//! the delay, a client-side capture of a download would see every window
//! refilled before it ran out. With the RTT unknown, `h` is 0: fewer stalls
//! are found, never false ones.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::base::side::{FrameRef, Side};
use crate::base::time::Duration;
use crate::proto::h2::{FlowEvent, FlowKind, Stall, Window};

/// The default initial window of connections and streams (RFC 9113 §6.9.2).
const DEFAULT_WINDOW: i64 = 65_535;
/// Stalls kept per connection.
pub const STALL_DETAIL_CAP: usize = 64;

/// A window left at 0.
#[derive(Debug, Clone, Copy)]
struct Blocked {
    at: FrameRef,
    size: i64,
    update: Option<FrameRef>,
}

/// The stalls of both senders; `h` is each sender's round trip from the
/// capture point (client's, server's), zero when unknown.
pub(crate) fn stalls(flow: &[FlowEvent], h: [Duration; 2]) -> (Vec<Stall>, u64) {
    let mut out = Vec::new();
    let mut count = 0u64;
    for sender in [Side::Client, Side::Server] {
        replay(flow, sender, h[sender.index()], &mut out, &mut count);
    }
    out.sort_by_key(|s| s.exhausted.frame);
    (out, count)
}

fn replay(flow: &[FlowEvent], sender: Side, h: Duration, out: &mut Vec<Stall>, count: &mut u64) {
    let mut conn_win = DEFAULT_WINDOW;
    let mut conn_total = DEFAULT_WINDOW;
    let mut initial = DEFAULT_WINDOW;
    let mut streams: FxHashMap<u32, i64> = FxHashMap::default();
    let mut pending: VecDeque<FlowEvent> = VecDeque::new();
    let mut blocked_conn: Option<Blocked> = None;
    let mut blocked: FxHashMap<u32, Blocked> = FxHashMap::default();
    for e in flow.iter().filter(|e| e.sender == sender) {
        let FlowKind::Data { stream, len, end } = e.kind else {
            pending.push_back(*e);
            continue;
        };
        // what reached the sender before it sent this frame
        while let Some(p) = pending.front().filter(|p| p.at.ts + h <= e.at.ts).copied() {
            pending.pop_front();
            match p.kind {
                FlowKind::Update { stream: 0, inc } => {
                    conn_win += i64::from(inc);
                    conn_total += i64::from(inc);
                    if let Some(b) = blocked_conn.as_mut() {
                        b.update.get_or_insert(p.at);
                    }
                }
                FlowKind::Update { stream, inc } => {
                    *streams.entry(stream).or_insert(initial) += i64::from(inc);
                    if let Some(b) = blocked.get_mut(&stream) {
                        b.update.get_or_insert(p.at);
                    }
                }
                FlowKind::InitialWindow(v) => {
                    let delta = i64::from(v) - initial;
                    initial = i64::from(v);
                    streams.values_mut().for_each(|w| *w += delta);
                }
                FlowKind::Data { .. } => {}
            }
        }
        // sending again: a window that was at 0 was opened by an update
        let resumed = [
            (Window::Stream(stream), blocked.remove(&stream)),
            (Window::Connection, blocked_conn.take()),
        ];
        for (window, b) in resumed {
            if let Some((b, update)) = b.and_then(|b| b.update.map(|u| (b, u))) {
                *count += 1;
                if out.len() < STALL_DETAIL_CAP {
                    out.push(Stall {
                        sender,
                        window,
                        size: b.size,
                        exhausted: b.at,
                        update,
                        resumed: e.at,
                    });
                }
            }
        }
        let w = streams.entry(stream).or_insert(initial);
        *w -= i64::from(len);
        conn_win -= i64::from(len);
        if end || len == 0 {
            continue;
        }
        if *w <= 0 {
            blocked.insert(
                stream,
                Blocked {
                    at: e.at,
                    size: initial,
                    update: None,
                },
            );
        }
        if conn_win <= 0 {
            blocked_conn = Some(Blocked {
                at: e.at,
                size: conn_total,
                update: None,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::Timestamp;

    fn ev(ms: i64, sender: Side, kind: FlowKind) -> FlowEvent {
        FlowEvent {
            at: FrameRef {
                frame: ms as u64,
                ts: Timestamp::from_nanos(ms * 1_000_000),
            },
            sender,
            kind,
        }
    }

    /// A 16 KB stream window used up at 40 ms, the client's update seen at
    /// 41 ms, the server's next DATA at `next` ms.
    fn download(next: i64) -> [FlowEvent; 4] {
        use FlowKind::*;
        let s = Side::Server;
        let data = |len, end| Data {
            stream: 1,
            len,
            end,
        };
        [
            ev(0, s, InitialWindow(16_384)),
            ev(40, s, data(16_384, false)),
            ev(
                41,
                s,
                Update {
                    stream: 1,
                    inc: 16_384,
                },
            ),
            ev(next, s, data(100, true)),
        ]
    }

    /// A client-side capture at 40 ms RTT: each update is seen at once, but
    /// reaches the server 20 ms later and shows in its DATA 40 ms later.
    #[test]
    fn updates_count_once_they_could_have_reached_the_sender() {
        let h = [Duration::ZERO, Duration::from_millis(40)];
        let (found, n) = stalls(&download(81), h);
        assert_eq!(n, 1);
        let st = found[0];
        let got = (
            st.window,
            st.size,
            st.exhausted.frame,
            st.update.frame,
            st.resumed.frame,
        );
        assert_eq!(got, (Window::Stream(1), 16_384, 40, 41, 81));
        // with the round trip unknown (0) the update still follows the
        // block here
        assert_eq!(stalls(&download(81), [Duration::ZERO; 2]).1, 1);
        // a sender that sent again before the update could reach it was not
        // held by the window (another cause): no stall
        let (found, n) = stalls(&download(50), h);
        assert_eq!((found.len(), n), (0, 0));
    }
}
