//! The words of `large-tls-record` (`rttlens_core::detect::large_tls_record`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    // the cost as `Cost::describe` writes it
    let cost = match a.get("cost_rtts").and_then(|r| r.as_f64()) {
        Some(r) => text!("{:.1} ms ({r:.2} RTT)", a.f64("cost_ms")),
        None => text!("{:.1} ms (RTT unknown)", a.f64("cost_ms")),
    };
    Some(text!(
        "first TLS record of the response is {} B: the first decrypted byte waited {} for it to complete",
        a.u64("record_bytes"),
        cost
    ))
}

/// The fix, from the finding's facts.
pub(super) fn fix(_f: &Finding) -> Option<Text> {
    Some("Send small records at the start of a response: nginx `ssl_buffer_size 4k;` (default 16k), HAProxy `tune.ssl.maxrecord 1400`, or a server with dynamic record sizing (small records for the first flights, 16 KB once the window is open).".into())
}

/// A fact of kind `large-tls-record.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "large-tls-record.first-byte" => text!(
            "first byte of a {} B application record (spans ~{} segments)",
            a.u64("record_bytes"),
            a.u64("segments")
        ),
        "large-tls-record.complete" => text!(
            "record complete {:.1} ms later: first decrypted byte",
            a.f64("wait_ms")
        ),
        "large-tls-record.round-starts" => text!(
            "round {} starts: the record did not fit in the previous round",
            a.u64("round")
        ),
        "large-tls-record.record-headers" => {
            "record boundaries read from the TLS record headers".into()
        }
        _ => return None,
    })
}
