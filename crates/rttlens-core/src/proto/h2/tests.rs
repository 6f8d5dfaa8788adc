//! Tests of the HTTP/2 tracker (the parent module).

use super::*;

fn at(frame: u64) -> FrameRef {
    FrameRef::at_ms(frame)
}

fn frame(ty: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = len.to_be_bytes()[1..].to_vec();
    f.extend_from_slice(&[ty, flags]);
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

#[test]
fn a_request_its_response_and_flow_control_events() {
    let mut t = H2Tracker::new();
    let mut c = PREFACE.to_vec();
    // client SETTINGS: initial window 100
    c.extend(frame(ty::SETTINGS, 0, 0, &[0, 4, 0, 0, 0, 100]));
    // HEADERS: :method GET (0x82), :path / (0x84), END_STREAM|END_HEADERS
    c.extend(frame(ty::HEADERS, 0x5, 1, &[0x82, 0x84]));
    t.push(Side::Client, 0, &c, at(1));
    let mut s = frame(ty::SETTINGS, 0, 0, &[]);
    // :status 200 (0x88)
    s.extend(frame(ty::HEADERS, 0x4, 1, &[0x88]));
    s.extend(frame(ty::DATA, 0, 1, &[b'x'; 100]));
    t.push(Side::Server, 0, &s, at(2));
    let upd = frame(ty::WINDOW_UPDATE, 0, 1, &100u32.to_be_bytes());
    t.push(Side::Client, c.len() as u64, &upd, at(3));
    let more = frame(ty::DATA, 0x1, 1, &[b'x'; 10]);
    t.push(Side::Server, s.len() as u64, &more, at(4));
    let sum = t.finish();
    let st = &sum.streams[0];
    assert_eq!(
        (st.method.as_deref(), st.path.as_deref(), st.status),
        (Some("GET"), Some("/"), Some(200))
    );
    assert_eq!(st.request_end.map(|f| f.frame), Some(1));
    assert_eq!(st.response_first_data.map(|f| f.frame), Some(2));
    assert_eq!(st.response_end.map(|f| f.frame), Some(4));
    assert_eq!(st.data_bytes, [0, 110]);
    assert_eq!(sum.initial_window[0], Some(100));
    let kinds: Vec<(u64, Side, FlowKind)> = sum
        .flow
        .iter()
        .map(|e| (e.at.frame, e.sender, e.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            (1, Side::Server, FlowKind::InitialWindow(100)),
            (
                2,
                Side::Server,
                FlowKind::Data {
                    stream: 1,
                    len: 100,
                    end: false
                }
            ),
            (
                3,
                Side::Server,
                FlowKind::Update {
                    stream: 1,
                    inc: 100
                }
            ),
            (
                4,
                Side::Server,
                FlowKind::Data {
                    stream: 1,
                    len: 10,
                    end: true
                }
            ),
        ]
    );
}

#[test]
fn garbage_and_gaps_do_not_panic() {
    let mut t = H2Tracker::new();
    t.push(Side::Client, 0, b"GET / HTTP/1.1\r\n", at(1));
    t.push(Side::Server, 0, &[0xff; 40], at(2));
    t.gap(Side::Server, 40, 1000);
    let sum = t.finish();
    assert!(!sum.notes[0].items().is_empty());
    assert!(H2Tracker::starts_preface(b"PRI * HT"));
    assert!(!H2Tracker::starts_preface(b"GET / HTTP/1.1"));
}

/// An HPACK literal without indexing, new name, no Huffman (RFC 7541
/// §6.2.2).
fn literal(name: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = vec![0x00, name.len() as u8];
    out.extend_from_slice(name);
    out.push(value.len() as u8);
    out.extend_from_slice(value);
    out
}

#[test]
fn server_timing_in_the_headers_and_the_trailers() {
    let mut t = H2Tracker::new();
    let mut c = PREFACE.to_vec();
    c.extend(frame(ty::HEADERS, 0x5, 1, &[0x82, 0x84]));
    t.push(Side::Client, 0, &c, at(1));
    // a client's Server-Timing is not the server's account: ignored
    let mut block = vec![0x82, 0x84];
    block.extend(literal(b"server-timing", b"x;dur=1"));
    let c2 = frame(ty::HEADERS, 0x5, 3, &block);
    t.push(Side::Client, c.len() as u64, &c2, at(1));
    let mut block = vec![0x88];
    block.extend(literal(b"server-timing", b"db;dur=53, app;dur=47.2"));
    let mut s = frame(ty::HEADERS, 0x4, 1, &block);
    s.extend(frame(ty::DATA, 0, 1, b"body"));
    t.push(Side::Server, 0, &s, at(2));
    // trailers: HEADERS with END_STREAM
    let trailer = frame(
        ty::HEADERS,
        0x5,
        1,
        &literal(b"server-timing", b"cache;desc=miss"),
    );
    t.push(Side::Server, s.len() as u64, &trailer, at(3));
    let sum = t.finish();
    let st = sum.streams[0]
        .server_timing
        .as_ref()
        .expect("server timing");
    let names: Vec<&str> = st.metrics.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["db", "app", "cache"]);
    assert_eq!((st.at.frame, st.trailer), (2, true));
    assert_eq!(st.total_ms(), Some(100.2));
    assert_eq!(sum.streams[0].response_end.map(|f| f.frame), Some(3));
    assert_eq!(sum.streams[1].method.as_deref(), Some("GET"));
    assert!(sum.streams[1].server_timing.is_none());
}
