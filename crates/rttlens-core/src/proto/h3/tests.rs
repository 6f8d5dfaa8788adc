use super::*;

fn at(frame: u64) -> FrameRef {
    FrameRef::at_ms(frame)
}

fn varint(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=0x3f => out.push(v as u8),
        0x40..=0x3fff => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
        0x4000..=0x3fff_ffff => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

/// An HTTP/3 frame (RFC 9114 §7.1).
fn frame(t: u64, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    varint(&mut f, t);
    varint(&mut f, payload.len() as u64);
    f.extend_from_slice(payload);
    f
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// A control stream: type 0x00, SETTINGS with a 220-byte table, 16
/// blocked streams and a reserved setting.
fn control() -> Vec<u8> {
    let mut s = vec![0x00];
    let mut settings = Vec::new();
    for (id, v) in [(0x01, 220), (0x07, 16), (0x06, 16384), (0x21, 7)] {
        varint(&mut settings, id);
        varint(&mut settings, v);
    }
    s.extend(frame(0x04, &settings));
    s
}

/// The client's encoder stream: RFC 9204 §B.2's inserts.
fn client_encoder() -> Vec<u8> {
    let mut s = vec![0x02];
    s.extend(hex("3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d
         c10c 2f73 616d 706c 652f 7061 7468"));
    s
}

/// The request: HEADERS (dynamic :authority and :path, static :method GET)
/// then a reserved frame type, FIN.
fn request() -> Vec<u8> {
    let mut s = frame(0x01, &hex("0381 10 11 d1"));
    s.extend(frame(0x21, b"grease"));
    s
}

/// The response: HEADERS (:status 200, content-type text/plain), DATA of
/// 3000 bytes in two frames, FIN.
fn response() -> Vec<u8> {
    let mut s = frame(0x01, &hex("0000 d9 f5"));
    s.extend(frame(0x00, &[b'x'; 1000]));
    s.extend(frame(0x00, &[b'y'; 2000]));
    s
}

/// The summary with every FrameRef blanked (to compare deliveries in
/// different orders, whose timing differs by design).
fn untimed(mut s: H3Summary) -> H3Summary {
    for st in &mut s.streams {
        st.request_headers = None;
        st.request_end = None;
        st.response_headers = None;
        st.response_first_data = None;
        st.response_end = None;
    }
    for x in s.settings.iter_mut().flatten() {
        x.at = FrameRef::default();
    }
    s
}

fn setup(t: &mut H3Tracker) {
    t.stream(Side::Client, 2, 0, &control(), false, at(1));
    t.stream(Side::Server, 3, 0, &control(), false, at(2));
    t.stream(Side::Client, 6, 0, &client_encoder(), false, at(3));
}

fn in_order() -> H3Summary {
    let mut t = H3Tracker::new();
    setup(&mut t);
    t.stream(Side::Client, 0, 0, &request(), true, at(4));
    t.stream(Side::Server, 0, 0, &response(), true, at(5));
    t.finish()
}

#[test]
fn a_request_and_its_response() {
    let sum = in_order();
    assert_eq!(sum.stream_count, 1);
    let st = &sum.streams[0];
    assert_eq!(
        (
            st.method.as_deref(),
            st.path.as_deref(),
            st.authority.as_deref(),
            st.status,
            st.content_type.as_deref()
        ),
        (
            Some("GET"),
            Some("/sample/path"),
            Some("www.example.com"),
            Some(200),
            Some("text/plain")
        )
    );
    let f = |r: Option<FrameRef>| r.map(|r| r.frame);
    assert_eq!(
        (
            f(st.request_headers),
            f(st.request_end),
            f(st.response_headers),
            f(st.response_first_data),
            f(st.response_end)
        ),
        (Some(4), Some(4), Some(5), Some(5), Some(5))
    );
    assert_eq!(st.data_bytes, [0, 3000]);
    assert!(!st.incomplete);
    assert_eq!((sum.qpack_resolved, sum.qpack_unresolved), (2, 0));
    assert_eq!(sum.qpack_blocked_sections, 0);
    let s = sum.settings[1].as_ref().unwrap();
    assert_eq!(
        (
            s.qpack_max_table_capacity,
            s.qpack_blocked_streams,
            s.max_field_section_size,
            &s.other[..]
        ),
        (Some(220), Some(16), Some(16384), &[(0x21, 7)][..])
    );
    assert_eq!(s.at.frame, 2);
    assert!(
        sum.notes.iter().all(|n| n.items().is_empty()),
        "{:?}",
        sum.notes
    );
    let json = serde_json::to_value(&sum).unwrap();
    assert_eq!(json["streams"][0]["path"], "/sample/path");
}

#[test]
fn out_of_order_and_overlapping_delivery_gives_the_same_summary() {
    let req = request();
    let resp = response();
    let mut t = H3Tracker::new();
    // the encoder stream split in two, its second half first
    let enc = client_encoder();
    t.stream(Side::Client, 6, 10, &enc[10..], false, at(1));
    t.stream(Side::Server, 3, 0, &control(), false, at(2));
    t.stream(Side::Client, 2, 0, &control(), false, at(3));
    // the request's end (FIN) before its start
    t.stream(Side::Client, 0, 5, &req[5..], true, at(4));
    t.stream(Side::Client, 0, 0, &req[..7], false, at(5));
    // the response: last piece, first piece, then a retransmission
    // overlapping the first and filling the hole, then a duplicate
    t.stream(Side::Server, 0, 2000, &resp[2000..], true, at(6));
    t.stream(Side::Server, 0, 0, &resp[..500], false, at(7));
    t.stream(Side::Server, 0, 400, &resp[400..2000], false, at(8));
    t.stream(Side::Server, 0, 0, &resp, true, at(9));
    // the encoder stream's first half last: the request's field section
    // waited for it
    t.stream(Side::Client, 6, 0, &enc[..10], false, at(10));
    let sum = t.finish();
    let mut want = untimed(in_order());
    want.qpack_blocked_sections = 1;
    assert_eq!(untimed(sum.clone()), want);
    let st = &sum.streams[0];
    let f = |r: Option<FrameRef>| r.map(|r| r.frame);
    assert_eq!(
        (
            f(st.request_headers),
            f(st.request_end),
            f(st.response_headers),
            f(st.response_first_data),
            f(st.response_end)
        ),
        (Some(5), Some(5), Some(7), Some(7), Some(8))
    );
}

#[test]
fn every_split_point_gives_the_same_summary() {
    let want = untimed(in_order());
    let resp = response();
    let req = request();
    for cut in 1..req.len().max(40) {
        let mut t = H3Tracker::new();
        setup(&mut t);
        let c = cut.min(req.len());
        t.stream(Side::Client, 0, c as u64, &req[c..], true, at(4));
        t.stream(Side::Client, 0, 0, &req[..c], false, at(5));
        let c = cut.min(resp.len());
        t.stream(Side::Server, 0, 0, &resp[..c], false, at(6));
        t.stream(Side::Server, 0, c as u64, &resp[c..], true, at(7));
        assert_eq!(untimed(t.finish()), want, "cut at {cut}");
    }
}

#[test]
fn a_missing_encoder_stream_leaves_names_unknown() {
    let mut t = H3Tracker::new();
    t.stream(Side::Client, 2, 0, &control(), false, at(1));
    t.stream(Side::Server, 3, 0, &control(), false, at(2));
    t.stream(Side::Client, 0, 0, &request(), true, at(4));
    let sum = t.finish();
    let st = &sum.streams[0];
    assert_eq!(
        (
            st.method.as_deref(),
            st.path.as_deref(),
            st.authority.as_deref()
        ),
        (Some("GET"), None, None)
    );
    assert_eq!((sum.qpack_resolved, sum.qpack_unresolved), (0, 2));
    assert_eq!(sum.qpack_blocked_sections, 1);
    assert_eq!(st.request_headers.map(|f| f.frame), Some(4));
}

#[test]
fn reset_reserved_streams_and_malformed_frames() {
    let mut t = H3Tracker::new();
    // a reserved unidirectional stream type (0x1f * 2 + 0x21 = 0x5f) and a
    // push stream are ignored
    t.stream(Side::Client, 10, 0, &[0x40, 0x5f, 1, 2, 3], false, at(1));
    t.stream(Side::Server, 7, 0, &[0x01, 0x00, 9, 9], false, at(1));
    // a SETTINGS frame on a request stream, then HEADERS
    let mut req = frame(0x04, &[]);
    req.extend(frame(0x01, &hex("0000 d1")));
    t.stream(Side::Client, 4, 0, &req, false, at(2));
    t.reset(Side::Client, 4, at(3));
    // data on the receiving side of a unidirectional stream
    t.stream(Side::Server, 2, 0, b"x", false, at(4));
    // a server-initiated bidirectional stream
    t.stream(Side::Server, 1, 0, b"x", false, at(4));
    // a malformed field section: static index beyond the table
    t.stream(
        Side::Client,
        8,
        0,
        &frame(0x01, &hex("0000 ff 7f")),
        true,
        at(5),
    );
    // a stream ending inside a frame
    t.stream(
        Side::Client,
        12,
        0,
        &frame(0x01, &hex("0000 d1"))[..3],
        true,
        at(6),
    );
    let sum = t.finish();
    assert_eq!(sum.stream_count, 4);
    let ids: Vec<u64> = sum.streams.iter().map(|s| s.id).collect();
    assert_eq!(ids, [4, 8, 12]);
    assert_eq!(sum.streams[0].method.as_deref(), Some("GET"));
    assert_eq!(
        sum.streams[0].reset.map(|r| (r.at, r.by)),
        Some((at(3), Side::Client))
    );
    assert_eq!(sum.undecoded_sections, 1);
    assert!(sum.streams[2].incomplete);
    assert_eq!(sum.notes[0].items().len(), 3, "{:?}", sum.notes[0]);
    assert_eq!(sum.notes[1].items().len(), 2, "{:?}", sum.notes[1]);
}

#[test]
fn caps_hold() {
    let mut t = H3Tracker::new();
    for i in 0..300u64 {
        t.stream(
            Side::Client,
            i * 4,
            0,
            &frame(0x01, &hex("0000 d1")),
            true,
            at(i),
        );
    }
    // out-of-order bytes beyond the per-stream cap
    let chunk = vec![0u8; 1000];
    for i in 0..70u64 {
        t.stream(Side::Server, 0, 10 + i * 1000, &chunk, false, at(400));
    }
    let sum = t.finish();
    assert_eq!(sum.streams.len(), STREAM_DETAIL_CAP);
    assert_eq!(sum.stream_count, 300);
    assert!(sum.streams[0].incomplete);
    assert!(matches!(
        sum.notes[1].items()[0].kind,
        NoteKind::TooLarge { .. }
    ));
}

#[test]
fn reassembler_trims_and_holds() {
    let mut r = Reasm::default();
    let a = r.admit(0, b"abc", false, usize::MAX).unwrap();
    assert_eq!((a.offset, a.direct, a.drained.len()), (0, &b"abc"[..], 0));
    let a = r.admit(6, b"ghi", true, usize::MAX).unwrap();
    assert!(a.direct.is_empty());
    assert_eq!(r.held_bytes, 3);
    let a = r.admit(1, b"bcde", false, usize::MAX).unwrap();
    assert_eq!((a.offset, a.direct), (3, &b"de"[..]));
    let a = r.admit(4, b"ef", false, usize::MAX).unwrap();
    assert_eq!((a.offset, a.direct), (5, &b"f"[..]));
    assert_eq!(a.drained, [b"ghi".to_vec()]);
    assert!(r.complete());
    assert_eq!(r.held_bytes, 0);
    assert_eq!(
        r.admit(2, b"cdefghij", false, usize::MAX).err(),
        Some(ReasmError::FinalSize)
    );
    assert_eq!(
        r.admit(0, b"ab", true, usize::MAX).err(),
        Some(ReasmError::FinalSize)
    );
    let mut r = Reasm::default();
    assert!(r.admit(u64::MAX - 1, b"xyz", false, usize::MAX).is_ok());
    assert_eq!(
        r.admit(10, &[0; 10], false, 5).err(),
        Some(ReasmError::Overflow)
    );
}

proptest::proptest! {
    #[test]
    fn arbitrary_stream_data_never_panics(ops in proptest::collection::vec(
        (proptest::bool::ANY, 0u64..16, 0u64..300, proptest::collection::vec(proptest::num::u8::ANY, 0..80), proptest::bool::ANY),
        0..60,
    )) {
        let mut t = H3Tracker::new();
        for (i, (server, id, offset, data, fin)) in ops.iter().enumerate() {
            let side = if *server { Side::Server } else { Side::Client };
            t.stream(side, *id, *offset, data, *fin, at(i as u64));
            if i % 7 == 3 {
                t.reset(side, *id, at(i as u64));
            }
        }
        let sum = t.finish();
        proptest::prop_assert!(sum.streams.len() <= STREAM_DETAIL_CAP);
        for n in &sum.notes {
            proptest::prop_assert!(n.items().len() <= Notes::CAP);
        }
        for s in sum.settings.iter().flatten() {
            proptest::prop_assert!(s.other.len() <= OTHER_SETTINGS_CAP);
        }
    }

    #[test]
    fn arbitrary_request_bytes_after_valid_setup_never_panic(
        req in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
        enc in proptest::collection::vec(proptest::num::u8::ANY, 0..100),
    ) {
        let mut t = H3Tracker::new();
        setup(&mut t);
        t.stream(Side::Client, 6, client_encoder().len() as u64, &enc, false, at(5));
        t.stream(Side::Client, 0, 0, &req, true, at(6));
        let mut hdr = frame(0x01, &req);
        hdr.truncate(hdr.len().min(150));
        t.stream(Side::Server, 0, 0, &hdr, false, at(7));
        let _ = t.finish();
    }
}

/// A QPACK field line with a literal name and value, no Huffman (RFC 9204
/// §4.5.6: `001N H name-length(3)`, then `H value-length(7)`).
fn literal(name: &[u8], value: &[u8]) -> Vec<u8> {
    assert!(name.len() < 7 + 255 && value.len() < 127);
    let mut out = Vec::new();
    if name.len() < 7 {
        out.push(0x20 | name.len() as u8);
    } else {
        out.push(0x27);
        out.push((name.len() - 7) as u8);
    }
    out.extend_from_slice(name);
    out.push(value.len() as u8);
    out.extend_from_slice(value);
    out
}

#[test]
fn server_timing_in_the_headers_and_the_trailers() {
    let mut t = H3Tracker::new();
    setup(&mut t);
    t.stream(Side::Client, 0, 0, &request(), true, at(4));
    // HEADERS: :status 200 and Server-Timing; DATA; trailing HEADERS with
    // another Server-Timing field, FIN
    let mut head = hex("0000 d9");
    head.extend(literal(b"server-timing", b"db;dur=53, app;dur=47.2"));
    let mut s = frame(0x01, &head);
    s.extend(frame(0x00, b"body"));
    t.stream(Side::Server, 0, 0, &s, false, at(5));
    let mut trailer = hex("0000");
    trailer.extend(literal(b"server-timing", b"total;dur=120;desc=\"all\""));
    t.stream(
        Side::Server,
        0,
        s.len() as u64,
        &frame(0x01, &trailer),
        true,
        at(6),
    );
    let sum = t.finish();
    let st = sum.streams[0]
        .server_timing
        .as_ref()
        .expect("server timing");
    let names: Vec<&str> = st.metrics.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["db", "app", "total"]);
    assert_eq!((st.at.frame, st.trailer), (5, true));
    assert_eq!(st.total_ms(), Some(120.0));
    assert_eq!(st.metrics[2].desc.as_deref(), Some("all"));
    assert_eq!(sum.streams[0].status, Some(200));
}
