//! The words of `tfo-cookie`, `tfo-accepted`, `tfo-refused`, `tfo-fallback` (`rttlens_core::detect::tfo`).

use super::prelude::*;

/// The title, from the finding's facts.
pub(super) fn title(f: &Finding) -> Option<Text> {
    let a = &f.facts;
    Some(match f.id {
        "tfo-fallback" => text!("TCP Fast Open SYN went unanswered; the client fell back to a plain SYN {:.0} ms later", a.f64("fallback_after_ms")),
        "tfo-cookie" if a.flag("granted") => text!("TCP Fast Open cookie obtained ({} B): the next connection to this server can carry its request in the SYN, saving 1 RTT", a.u64("cookie_bytes")),
        "tfo-cookie" => "the client asked for a TCP Fast Open cookie; the server did not give one".into(),
        "tfo-accepted" => text!("TCP Fast Open: {} B of data sent in the SYN and accepted; the request left 1 RTT earlier", a.u64("data_bytes")),
        "tfo-refused" => text!("TCP Fast Open data refused: the {} B in the SYN waited for the handshake (1 RTT)", a.u64("data_bytes")),
        _ => return None,
    })
}

/// The fix, from the finding's facts.
pub(super) fn fix(f: &Finding) -> Option<Text> {
    Some(match f.id {
        "tfo-fallback" => "Something on the path drops SYNs with data or unknown options: fix or bypass the middlebox, or turn TFO off for this path (Linux then blackholes TFO for `net.ipv4.tcp_fastopen_blackhole_timeout_sec`).",
        "tfo-cookie" if f.facts.flag("granted") => "Nothing to fix: keep the client's TFO cache (curl `--tcp-fastopen`, `TCP_FASTOPEN_CONNECT`) so later connections use the cookie.",
        "tfo-cookie" => "Enable TFO on the server: `sysctl -w net.ipv4.tcp_fastopen=3` and a listen queue (nginx `listen … fastopen=256`, or `TCP_FASTOPEN` on the listening socket).",
        "tfo-accepted" => "Nothing to fix: TFO saved the connect round trip.",
        "tfo-refused" => "The server refused the cookie or its TFO queue was full: check `nstat -az TcpExtTCPFastOpenPassiveFail TcpExtTCPFastOpenListenOverflow`, the listen queue (nginx `listen … fastopen=N`), and that all servers behind one address share `net.ipv4.tcp_fastopen_key`.",
        _ => return None,
    }.into())
}

/// `" and N B of data"` for a SYN that carried data, else `none`.
fn data_in(a: &Args, none: &str) -> Text {
    match a.u64("data_bytes") {
        0 => none.to_string().into(),
        n => text!(" and {n} B of data"),
    }
}

/// A fact of kind `tfo.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "tfo.syn-with-option" => text!("SYN with a TFO option{}", data_in(a, "")),
        "tfo.plain-syn" => text!(
            "plain SYN {:.0} ms after the first: TFO given up",
            a.f64("after_ms")
        ),
        "tfo.syn-ack-before-fallback" => "SYN-ACK seen before the client gave up on TFO".into(),
        "tfo.syn-ack-to-plain-syn" => "SYN-ACK to the plain SYN".into(),
        "tfo.same-isn-without-option" => "the same ISN was resent without the TFO option".into(),
        "tfo.cookie-request" => "SYN with a TFO cookie request".into(),
        "tfo.syn-ack-cookie" => text!("SYN-ACK carries a {} B cookie", a.u64("cookie_bytes")),
        "tfo.syn-ack-no-cookie" => "SYN-ACK without a cookie".into(),
        "tfo.options-read" => "TFO options read from the SYN and SYN-ACK".into(),
        "tfo.syn-with-cookie" => text!(
            "SYN with a {} B cookie{}",
            a.u64("cookie_bytes"),
            data_in(a, " but no data")
        ),
        "tfo.syn-ack-takes-data" => "SYN-ACK acknowledges the SYN's data".into(),
        "tfo.data-acknowledged" => "the SYN-ACK's acknowledgment number covers the SYN data".into(),
        "tfo.syn-ack-refuses-data" => {
            "SYN-ACK acknowledges the SYN only: the data was not taken".into()
        }
        "tfo.data-sent-again" => "the client sends the data again after the handshake".into(),
        "tfo.data-not-acknowledged" => "the SYN-ACK did not acknowledge the SYN data".into(),
        _ => return None,
    })
}
