//! The words of `h2-head-of-line` (`rttlens_core::detect::h2_head_of_line`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    let n = a.u64("streams");
    // the first eight, the title says
    let list: Vec<String> = a
        .list("stream_ids")
        .iter()
        .take(8)
        .filter_map(|v| v.as_u64())
        .map(|id| id.to_string())
        .collect();
    Some(text!(
        "HTTP/2 head-of-line blocking: {n} stream{} ({}{}) waited for a TCP retransmission of another stream's bytes",
        if n == 1 { "" } else { "s" },
        list.join(", "),
        if n > 8 { ", …" } else { "" }
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(_f: &Finding) -> Option<Text> {
    Some(
        "One lost TCP segment stalls every HTTP/2 stream behind it. Cut the loss at its source (see the \
         loss findings), or let streams that must not wait for each other travel independently: HTTP/3 \
         (QUIC streams are delivered independently, RFC 9000 §2.2; nginx `listen 443 quic;`), or separate \
         connections for bulk transfers and latency-sensitive requests."
            .into(),
    )
}

/// A fact of kind `h2-head-of-line.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "h2-head-of-line.hole-filled" => {
            let behind = match a.u64("behind_stream") {
                0 => "another stream's".into(),
                s => text!("stream {s}'s"),
            };
            text!("fills the hole in {behind} bytes (lost before the capture point): only now can TCP deliver what follows")
        }
        "h2-head-of-line.frame-waited" => text!(
            "stream {}'s frame captured here, {:.1} ms before TCP could deliver it",
            a.u64("stream"),
            a.f64("wait_ms")
        ),
        "h2-head-of-line.in-order-delivery" => "the waiting frames were captured before the lost bytes ahead of them were resent, and TCP delivers in order".into(),
        _ => return None,
    })
}
