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
use crate::base::time::{Duration, Timestamp};
use crate::proto::h2::{FlowEvent, FlowKind, H2Summary, Stall, Window};

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

/// Client requests held back by the server's
/// `SETTINGS_MAX_CONCURRENT_STREAMS` (RFC 9113 §5.1.2): streams the client
/// opened the moment another closed, while as many streams as the server
/// allows were open.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Queue {
    /// The server's limit.
    pub(crate) limit: u32,
    /// The SETTINGS frame that set it.
    pub(crate) settings: FrameRef,
    /// Each stream opened as a slot freed: its HEADERS, and the frame that
    /// closed the stream whose slot it took.
    pub(crate) released: Vec<Release>,
    /// When the client had requests waiting, at least: from the first
    /// stream released in a run (the limit held since a stream the client
    /// opened on its own reached it) to the last; the first may have been
    /// wanted only then, the later ones were wanted by then.
    pub(crate) spans: Vec<(Timestamp, Timestamp)>,
    /// Streams the server refused (`RST_STREAM` `REFUSED_STREAM`).
    pub(crate) refused: u32,
}

/// A stream opened as another's slot freed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Release {
    pub(crate) stream: u32,
    pub(crate) headers: FrameRef,
    pub(crate) freed_by: FrameRef,
}

/// `RST_STREAM` error code `REFUSED_STREAM` (RFC 9113 §7).
const REFUSED_STREAM: u64 = 0x7;

/// Fewer released streams than this are not called a queue: one stream
/// opened right after another closed may be a request the client only
/// then wanted (a page's subresource).
pub(crate) const QUEUE_MIN_RELEASES: usize = 2;

/// The queue behind the server's stream limit, if the streams show one.
/// `h_c` is the round trip capture point → client → capture point (a
/// stream's close seen at `t` reaches the client's actions at `t + h_c`);
/// `quick` how soon after that a stream must open to count as waiting.
pub(crate) fn queue(h: &H2Summary, h_c: Duration, quick: Duration) -> Option<Queue> {
    let s = Side::Server.index();
    let limit = h.max_concurrent_streams[s].filter(|&l| l > 0)?;
    let settings = h.max_concurrent_streams_at[s]?;
    let known = settings.ts + h_c;
    // client streams: open at their HEADERS, closed for the client when it
    // saw the response's END_STREAM or a reset
    let mut streams: Vec<(FrameRef, u32, Option<FrameRef>)> = h
        .streams
        .iter()
        .filter(|st| st.id % 2 == 1)
        .filter_map(|st| {
            let open = st.request_headers?;
            let close = match (st.response_end, st.reset) {
                (Some(e), Some(r)) => Some(e.min(r.at)),
                (e, r) => e.or(r.map(|r| r.at)),
            };
            // HTTP/2 stream identifiers are 31 bits (RFC 9113 §5.1.1)
            Some((open, u32::try_from(st.id).ok()?, close))
        })
        .collect();
    streams.sort_by_key(|x| x.0);
    let refused = h
        .streams
        .iter()
        .filter(|st| {
            st.reset
                .is_some_and(|r| r.by == Side::Server && r.code == Some(REFUSED_STREAM))
        })
        .count() as u32;
    // how many streams were open for the client at `t`, leaving out one
    let open_at = |t: Timestamp, except: u32| {
        streams
            .iter()
            .filter(|(o, id, c)| *id != except && o.ts < t && c.is_none_or(|c| c.ts + h_c >= t))
            .count()
    };
    let mut released: Vec<Release> = Vec::new();
    for &(open, id, _) in &streams {
        if open.ts < known {
            continue;
        }
        // the latest close the client had seen before opening this one
        let Some(freed) = streams
            .iter()
            .filter_map(|(_, other, c)| c.filter(|_| *other != id))
            .filter(|c| c.ts + h_c <= open.ts)
            .max_by_key(|c| c.ts)
        else {
            continue;
        };
        let free_at = freed.ts + h_c;
        // opened at once, and as many as the server allows were open until
        // that close
        if open.ts - free_at > quick
            || open_at(free_at - Duration::from_nanos(1), id) < limit as usize
        {
            continue;
        }
        released.push(Release {
            stream: id,
            headers: open,
            freed_by: freed,
        });
    }
    // each run of waiting began when the limit was reached by a stream the
    // client opened on its own (not one released by a close)
    let just = Duration::from_nanos(1);
    let edges: Vec<Timestamp> = streams
        .iter()
        .filter(|(_, id, _)| !released.iter().any(|r| r.stream == *id))
        .map(|(o, ..)| o.ts)
        .filter(|&t| open_at(t, 0) < limit as usize && open_at(t + just, 0) >= limit as usize)
        .collect();
    let mut spans: Vec<(Timestamp, Timestamp)> = Vec::new();
    let mut runs: Vec<Timestamp> = Vec::new();
    for r in &released {
        let start = edges
            .iter()
            .copied()
            .filter(|t| *t <= r.headers.ts)
            .max()
            .unwrap_or(r.freed_by.ts);
        match (spans.last_mut(), runs.last()) {
            (Some(last), Some(&run)) if run == start => last.1 = r.headers.ts,
            _ => {
                runs.push(start);
                spans.push((r.headers.ts, r.headers.ts));
            }
        }
    }
    (released.len() >= QUEUE_MIN_RELEASES).then_some(Queue {
        limit,
        settings,
        released,
        spans,
        refused,
    })
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

    fn at(ms: i64) -> FrameRef {
        FrameRef {
            frame: ms as u64,
            ts: Timestamp::from_nanos(ms * 1_000_000),
        }
    }

    /// Streams `(id, HEADERS ms, response END_STREAM ms)` under a server
    /// limit announced at 10 ms.
    fn summary(limit: Option<u32>, streams: &[(u32, i64, i64)]) -> H2Summary {
        let mut h = H2Summary::default();
        if let Some(l) = limit {
            h.max_concurrent_streams[Side::Server.index()] = Some(l);
            h.max_concurrent_streams_at[Side::Server.index()] = Some(at(10));
        }
        h.streams = streams
            .iter()
            .map(|&(id, open, end)| crate::proto::http::stream::HttpStream {
                id: u64::from(id),
                request_headers: Some(at(open)),
                request_end: Some(at(open)),
                response_end: Some(at(end)),
                ..Default::default()
            })
            .collect();
        h
    }

    const QUICK: Duration = Duration::from_millis(1);

    #[test]
    fn a_chain_of_streams_opened_as_others_closed_at_the_limit_is_a_queue() {
        // limit 1: stream 1 opens at 20, then each next one as the last ends
        let h = summary(
            Some(1),
            &[(1, 20, 60), (3, 60, 100), (5, 100, 140), (7, 140, 180)],
        );
        let q = queue(&h, Duration::ZERO, QUICK).expect("a queue");
        assert_eq!(q.limit, 1);
        let ids: Vec<u32> = q.released.iter().map(|r| r.stream).collect();
        assert_eq!(ids, [3, 5, 7]);
        // from the first release to the last: 80 ms
        assert_eq!(
            q.spans,
            [(at(60).ts, at(140).ts)],
            "the first released stream's own wait is not claimed"
        );
        // seen from the server side, the client's reaction shows h_c later
        let late = summary(
            Some(1),
            &[(1, 20, 60), (3, 100, 100), (5, 140, 180), (7, 220, 260)],
        );
        assert!(queue(&late, Duration::ZERO, QUICK).is_none());
        assert!(queue(&late, Duration::from_millis(40), QUICK).is_some());
    }

    #[test]
    fn no_queue_below_the_limit_without_the_settings_or_for_one_release() {
        // limit 4, never more than one stream open: requests one after another
        let serial = summary(Some(4), &[(1, 20, 60), (3, 60, 100), (5, 100, 140)]);
        assert!(queue(&serial, Duration::ZERO, QUICK).is_none());
        // the server's SETTINGS not captured: nothing said
        let chain = [(1, 20, 60), (3, 60, 100), (5, 100, 140)];
        assert!(queue(&summary(None, &chain), Duration::ZERO, QUICK).is_none());
        // one release may be a request only then wanted
        let one = summary(Some(1), &[(1, 20, 60), (3, 60, 100)]);
        assert!(queue(&one, Duration::ZERO, QUICK).is_none());
        // streams opened a while after the close: the client was not waiting
        let slow = summary(Some(1), &[(1, 20, 60), (3, 70, 100), (5, 110, 140)]);
        assert!(queue(&slow, Duration::ZERO, QUICK).is_none());
    }
}
