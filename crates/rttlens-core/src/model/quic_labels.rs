//! The frames a QUIC connection's ladder diagram names: what the analysis
//! placed of the handshake (RFC 9001 §4: the hellos and Finished messages in
//! CRYPTO frames, HANDSHAKE_DONE) and of the first HTTP/3 exchange
//! (RFC 9114 §4.1: HEADERS and DATA), as TCP's come from
//! `analysis::connection::frame_labels`.

use crate::analysis::quic::QuicAnalysis;
use crate::base::side::{FrameRef, Side};

/// The named frames of `a`, sorted by frame (several names may share one).
pub(crate) fn quic_frame_labels(a: &QuicAnalysis) -> Vec<(u64, &'static str)> {
    let mut v: Vec<(u64, &'static str)> = Vec::new();
    let mut put = |m: Option<FrameRef>, name: &'static str| {
        if let Some(m) = m {
            v.push((m.frame, name));
        }
    };
    let h = &a.handshake;
    put(h.first_client_hello, "ClientHello");
    put(h.client_hello.as_ref().map(|c| c.first), "ClientHello");
    put(h.hello_retry.as_ref().map(|s| s.first), "HelloRetryRequest");
    put(h.server_hello.as_ref().map(|s| s.first), "ServerHello");
    let server_finished = a.crypto_messages(Side::Server, 1, 20);
    put(server_finished.first().copied(), "server Finished");
    put(h.client_done.filter(|_| h.finished_seen), "client Finished");
    put(h.handshake_done, "HANDSHAKE_DONE");
    let first = a.h3.streams.iter().find(|s| s.request_headers.is_some());
    if let Some(s) = first {
        put(s.request_headers, "request HEADERS");
        put(s.response_headers, "response HEADERS");
        put(s.response_first_data, "first response DATA");
        put(s.response_end, "response end");
    }
    for c in a.closes() {
        put(Some(c.at), "CONNECTION_CLOSE");
    }
    v.sort_by_key(|l| l.0);
    v.dedup();
    v
}
