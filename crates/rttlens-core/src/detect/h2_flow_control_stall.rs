//! `h2-flow-control-stall`: an HTTP/2 sender with more to send stopped at an
//! exhausted stream or connection window until the receiver's WINDOW_UPDATE
//! came (RFC 9113 §5.2, §6.9). A window smaller than the path's
//! bandwidth-delay product bounds a stream at window / RTT, whatever TCP's
//! congestion window allows.
//!
//! Cost: per stall, from the DATA frame that left the window at 0 to the
//! sender's next DATA frame (the time it had data and could not send it),
//! their union over the connection.

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::Analysis;
use crate::base::text::text;
use crate::base::time::union_len;
use crate::proto::h2::Window;

/// Finding id.
pub(crate) const ID: &str = "h2-flow-control-stall";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let (stalls, count) = (&a.h2_stalls.0, a.h2_stalls.1);
    let Some(&first) = stalls.first() else {
        return vec![];
    };
    let span: Vec<_> = stalls
        .iter()
        .map(|s| (s.exhausted.ts, s.resumed.ts))
        .collect();
    let cost = a.cost(union_len(&span));
    let sender = first.sender.as_str();
    let receiver = first.sender.peer().as_str();
    let (which, setting) = match first.window {
        Window::Connection => (
            "the connection window".to_string(),
            "its connection window (stream 0, grown only by WINDOW_UPDATE)",
        ),
        Window::Stream(id) => (
            text!("stream {id}'s window of {} B", first.size),
            "SETTINGS_INITIAL_WINDOW_SIZE",
        ),
    };
    let bound = (a.rtt_min.as_secs_f64() > 0.0 && matches!(first.window, Window::Stream(_)))
        .then(|| first.size as f64 / a.rtt_min.as_secs_f64())
        .map(|bps| {
            text!(
                " — at most {} B per RTT, {:.2} MB/s at this path's RTT",
                first.size,
                bps / 1e6
            )
        })
        .unwrap_or_default();
    let mut evidence = Vec::new();
    for s in stalls.iter().take(3) {
        let (w, size) = match s.window {
            Window::Connection => ("the connection window".to_string(), String::new()),
            Window::Stream(id) => (text!("stream {id}'s window"), text!(" ({} B)", s.size)),
        };
        evidence.push(ev(
            s.exhausted.frame,
            text!("DATA uses up {w}{size}: the {sender} must wait"),
        ));
        evidence.push(ev(
            s.update.frame,
            text!("WINDOW_UPDATE from the {receiver} reopens {w}"),
        ));
        evidence.push(ev(
            s.resumed.frame,
            text!(
                "the {sender}'s next DATA, {:.1} ms after it stopped",
                (s.resumed.ts - s.exhausted.ts).as_millis_f64()
            ),
        ));
    }
    let fix = text!(
        "Let the {receiver} advertise a window of at least the path's bandwidth × RTT ({setting}{bound}). \
         Go `http2.Transport`/`http2.Server` and gRPC-Go: `InitialWindowSize`/`InitialConnWindowSize` \
         (or leave gRPC's BDP estimation on); nginx as the receiver of request bodies: `http2_body_preread_size`; \
         Envoy: `initial_stream_window_size`/`initial_connection_window_size`; h2o: `http2-input-window-size`; \
         nghttp2/h2load: `-w`/`-W`. Send WINDOW_UPDATE before the window runs out (at half, as most stacks do), not after."
    );
    vec![Finding {
        facts: Default::default(),
        id: ID,
        connection: a.conn.index,
        title: text!(
            "HTTP/2 flow control: the {sender} waited {} time{} for the {receiver}'s WINDOW_UPDATE ({which})",
            count,
            if count == 1 { "" } else { "s" },
        ),
        cost,
        evidence,
        confidence: conf(
            Level::High,
            "DATA frames used the window up to 0 on a stream not yet ended, and resumed only after a WINDOW_UPDATE",
        ),
        fix,
        references: vec!["RFC 9113 §5.2", "RFC 9113 §6.9", "RFC 9113 §6.5.2"],
        span,
    }]
}
