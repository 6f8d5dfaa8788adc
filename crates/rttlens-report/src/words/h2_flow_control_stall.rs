//! The words of `h2-flow-control-stall` (`rttlens_core::detect::h2_flow_control_stall`).

use super::prelude::*;

/// The window a fact names: `the connection window` or `stream N's window`.
fn window(a: &Args) -> Text {
    match a.str("window") {
        "stream" => text!("stream {}'s window", a.u64("stream")),
        _ => "the connection window".into(),
    }
}

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let which = match a.str("window") {
        "stream" => text!(
            "stream {}'s window of {} B",
            a.u64("stream"),
            a.u64("window_bytes")
        ),
        _ => "the connection window".into(),
    };
    let count = a.u64("stalls");
    Some(text!(
        "HTTP/2 flow control: the {} waited {} time{} for the {}'s WINDOW_UPDATE ({which})",
        a.str("sender"),
        count,
        if count == 1 { "" } else { "s" },
        a.str("receiver"),
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let receiver = a.str("receiver");
    let setting = match a.str("window") {
        "stream" => "SETTINGS_INITIAL_WINDOW_SIZE",
        _ => "its connection window (stream 0, grown only by WINDOW_UPDATE)",
    };
    let bound = a
        .get("bytes_per_sec")
        .and_then(|v| v.as_f64())
        .map(|bps| {
            text!(
                " — at most {} B per RTT, {:.2} MB/s at this path's RTT",
                a.u64("window_bytes"),
                bps / 1e6
            )
        })
        .unwrap_or_default();
    Some(text!(
        "Let the {receiver} advertise a window of at least the path's bandwidth × RTT ({setting}{bound}). \
         Go `http2.Transport`/`http2.Server` and gRPC-Go: `InitialWindowSize`/`InitialConnWindowSize` \
         (or leave gRPC's BDP estimation on); nginx as the receiver of request bodies: `http2_body_preread_size`; \
         Envoy: `initial_stream_window_size`/`initial_connection_window_size`; h2o: `http2-input-window-size`; \
         nghttp2/h2load: `-w`/`-W`. Send WINDOW_UPDATE before the window runs out (at half, as most stacks do), not after."
    ))
}

/// A fact of kind `h2-flow-control-stall.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "h2-flow-control-stall.window-used-up" => {
            let size = match a.str("window") {
                "stream" => text!(" ({} B)", a.u64("window_bytes")),
                _ => "".into(),
            };
            text!(
                "DATA uses up {}{size}: the {} must wait",
                window(a),
                a.str("sender")
            )
        }
        "h2-flow-control-stall.window-update" => text!(
            "WINDOW_UPDATE from the {} reopens {}",
            a.str("receiver"),
            window(a)
        ),
        "h2-flow-control-stall.data-resumes" => text!(
            "the {}'s next DATA, {:.1} ms after it stopped",
            a.str("sender"),
            a.f64("wait_ms")
        ),
        "h2-flow-control-stall.window-at-zero" => "DATA frames used the window up to 0 on a stream not yet ended, and resumed only after a WINDOW_UPDATE".into(),
        _ => return None,
    })
}
