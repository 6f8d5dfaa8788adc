//! Tests of the QUIC frame parsers (the parent module): each frame type read from its RFC 9000 §19 bytes, truncated and malformed input.

use super::*;

/// Encodes `v` as the shortest varint (RFC 9000 §16).
fn varint(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=0x3f => out.push(v as u8),
        0x40..=0x3fff => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
        0x4000..=0x3fff_ffff => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Encodes a frame (the inverse of `parse`, lengths always present
/// except where `last` asks the data to run to the end).
fn encode(f: &Frame<'_>, out: &mut Vec<u8>) {
    match *f {
        Frame::Padding { len } => out.extend(std::iter::repeat_n(0, len)),
        Frame::Ping => out.push(0x01),
        Frame::Ack {
            largest,
            ack_delay,
            first_range,
            ranges,
            ecn,
        } => {
            out.push(if ecn.is_some() { 0x03 } else { 0x02 });
            let all: Vec<(u64, u64)> = ranges.collect();
            varint(out, largest);
            varint(out, ack_delay);
            varint(out, all.len() as u64 - 1);
            varint(out, first_range);
            for w in all.windows(2) {
                let ((lo, _), (next_lo, next_hi)) = (w[0], w[1]);
                varint(out, lo - next_hi - 2);
                varint(out, next_hi - next_lo);
            }
            for n in ecn.iter().flatten() {
                varint(out, *n);
            }
        }
        Frame::ResetStream {
            id,
            error,
            final_size,
        } => {
            out.push(0x04);
            for n in [id, error, final_size] {
                varint(out, n);
            }
        }
        Frame::StopSending { id, error } => {
            out.push(0x05);
            varint(out, id);
            varint(out, error);
        }
        Frame::Crypto { offset, data } => {
            out.push(0x06);
            varint(out, offset);
            bytes(out, data);
        }
        Frame::NewToken { token } => {
            out.push(0x07);
            bytes(out, token);
        }
        Frame::Stream {
            id,
            offset,
            fin,
            data,
        } => {
            out.push(0x08 | 0x04 | 0x02 | u8::from(fin));
            varint(out, id);
            varint(out, offset);
            bytes(out, data);
        }
        Frame::MaxData(n) => {
            out.push(0x10);
            varint(out, n);
        }
        Frame::MaxStreamData { id, max } => {
            out.push(0x11);
            varint(out, id);
            varint(out, max);
        }
        Frame::MaxStreams { bidi, max } => {
            out.push(if bidi { 0x12 } else { 0x13 });
            varint(out, max);
        }
        Frame::DataBlocked(n) => {
            out.push(0x14);
            varint(out, n);
        }
        Frame::StreamDataBlocked { id, limit } => {
            out.push(0x15);
            varint(out, id);
            varint(out, limit);
        }
        Frame::StreamsBlocked { bidi, limit } => {
            out.push(if bidi { 0x16 } else { 0x17 });
            varint(out, limit);
        }
        Frame::NewConnectionId {
            seq,
            retire_prior_to,
            cid,
            reset_token,
        } => {
            out.push(0x18);
            varint(out, seq);
            varint(out, retire_prior_to);
            out.push(cid.len() as u8);
            out.extend_from_slice(cid);
            out.extend_from_slice(reset_token);
        }
        Frame::RetireConnectionId { seq } => {
            out.push(0x19);
            varint(out, seq);
        }
        Frame::PathChallenge(d) => {
            out.push(0x1a);
            out.extend_from_slice(&d);
        }
        Frame::PathResponse(d) => {
            out.push(0x1b);
            out.extend_from_slice(&d);
        }
        Frame::ConnectionClose {
            app,
            error,
            frame_type,
            reason,
        } => {
            out.push(if app { 0x1d } else { 0x1c });
            varint(out, error);
            if let Some(t) = frame_type {
                varint(out, t);
            }
            bytes(out, reason);
        }
        Frame::HandshakeDone => out.push(0x1e),
        Frame::Datagram { data } => {
            out.push(0x31);
            bytes(out, data);
        }
    }
}

fn parse_all(payload: &[u8]) -> Vec<Result<Frame<'_>, FrameError>> {
    frames(payload).collect()
}

fn ack_bytes(ty: u8, fields: &[u64]) -> Vec<u8> {
    let mut b = vec![ty];
    for f in fields {
        varint(&mut b, *f);
    }
    b
}

#[test]
fn rfc9001_a2_client_initial_payload() {
    // RFC 9001 §A.2: the client Initial's payload before protection is
    // a CRYPTO frame (offset 0, 241 bytes of ClientHello) padded to
    // 1162 bytes
    let mut payload = vec![0x06, 0x00, 0x40, 0xf1, 0x01, 0x00, 0x00, 0xed, 0x03, 0x03];
    payload.resize(4 + 241, 0xaa);
    payload.resize(1162, 0);
    let got = parse_all(&payload);
    assert_eq!(got.len(), 2);
    let Ok(Frame::Crypto { offset, data }) = got[0] else {
        panic!("{:?}", got[0]);
    };
    assert_eq!((offset, data.len(), data[0]), (0, 241, 0x01));
    assert_eq!(got[1], Ok(Frame::Padding { len: 1162 - 245 }));
    assert!(is_ack_eliciting_payload(&payload));
    assert!(!is_ack_eliciting_payload(&[0, 0, 0]));
}

#[test]
fn rfc9001_a3_server_initial_payload() {
    // RFC 9001 §A.3: ACK of packet 0, then CRYPTO (the ServerHello)
    let mut payload = vec![0x02, 0x00, 0x00, 0x00, 0x00, 0x06, 0x00, 0x40, 0x5a, 0x02];
    payload.resize(5 + 4 + 0x5a, 0x11);
    let got = parse_all(&payload);
    let Ok(Frame::Ack {
        largest,
        ack_delay,
        first_range,
        ranges,
        ecn,
    }) = got[0]
    else {
        panic!("{:?}", got[0]);
    };
    assert_eq!((largest, ack_delay, first_range, ecn), (0, 0, 0, None));
    assert_eq!(ranges.collect::<Vec<_>>(), [(0, 0)]);
    assert!(matches!(got[1], Ok(Frame::Crypto { offset: 0, data }) if data.len() == 0x5a));
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].as_ref().map(Frame::name), Ok("ACK"));
}

#[test]
fn every_frame_type_round_trips() {
    let token = [7u8; 16];
    let ack_src = ack_bytes(0x02, &[100, 3, 2, 4, 1, 5, 0, 10]);
    let Ok(ack) = frames(&ack_src).next().unwrap() else {
        panic!()
    };
    let ack_ecn_src = ack_bytes(0x03, &[5, 0, 0, 5, 1, 2, 3]);
    let Ok(ack_ecn) = frames(&ack_ecn_src).next().unwrap() else {
        panic!()
    };
    let all = [
        Frame::Padding { len: 3 },
        Frame::Ping,
        ack,
        ack_ecn,
        Frame::ResetStream {
            id: 4,
            error: 0x10c,
            final_size: 1 << 40,
        },
        Frame::StopSending { id: 8, error: 0 },
        Frame::Crypto {
            offset: 1200,
            data: b"hello",
        },
        Frame::NewToken { token: &token },
        Frame::Stream {
            id: 0,
            offset: 0,
            fin: true,
            data: b"GET",
        },
        Frame::Stream {
            id: 3,
            offset: 99_999,
            fin: false,
            data: b"",
        },
        Frame::MaxData(1 << 20),
        Frame::MaxStreamData { id: 4, max: 65536 },
        Frame::MaxStreams {
            bidi: true,
            max: 100,
        },
        Frame::MaxStreams {
            bidi: false,
            max: 3,
        },
        Frame::DataBlocked(1 << 20),
        Frame::StreamDataBlocked { id: 4, limit: 9 },
        Frame::StreamsBlocked {
            bidi: true,
            limit: 100,
        },
        Frame::StreamsBlocked {
            bidi: false,
            limit: 3,
        },
        Frame::NewConnectionId {
            seq: 2,
            retire_prior_to: 1,
            cid: &[1, 2, 3, 4, 5, 6, 7, 8],
            reset_token: &token,
        },
        Frame::RetireConnectionId { seq: 1 },
        Frame::PathChallenge(*b"abcdefgh"),
        Frame::PathResponse(*b"abcdefgh"),
        Frame::ConnectionClose {
            app: false,
            error: 0x0a,
            frame_type: Some(0x06),
            reason: b"bad",
        },
        Frame::ConnectionClose {
            app: true,
            error: 0x100,
            frame_type: None,
            reason: b"",
        },
        Frame::HandshakeDone,
        Frame::Datagram { data: b"dgram" },
    ];
    let mut buf = Vec::new();
    for f in &all {
        let mut one = Vec::new();
        encode(f, &mut one);
        assert_eq!(parse_all(&one), [Ok(*f)], "{}", f.name());
        buf.extend(one);
    }
    let got: Vec<Frame<'_>> = frames(&buf).map(Result::unwrap).collect();
    assert_eq!(got, all);
    let eliciting: Vec<bool> = all.iter().map(Frame::is_ack_eliciting).collect();
    assert_eq!(eliciting.iter().filter(|e| !**e).count(), 5);
    assert!(!Frame::Padding { len: 1 }.is_ack_eliciting());
    assert!(Frame::Ping.is_ack_eliciting());
}

#[test]
fn stream_and_datagram_without_length_run_to_the_end() {
    // STREAM with OFF and FIN, no LEN: id 4, offset 10
    let got = parse_all(&[0x0d, 0x04, 0x0a, b'a', b'b']);
    assert_eq!(
        got,
        [Ok(Frame::Stream {
            id: 4,
            offset: 10,
            fin: true,
            data: b"ab"
        })]
    );
    // STREAM with no OFF, no LEN
    assert_eq!(
        parse_all(&[0x08, 0x00]),
        [Ok(Frame::Stream {
            id: 0,
            offset: 0,
            fin: false,
            data: b""
        })]
    );
    assert_eq!(
        parse_all(&[0x30, 1, 2]),
        [Ok(Frame::Datagram { data: &[1, 2] })]
    );
    assert_eq!(
        parse_all(&[0x01, 0x00, 0x00, 0x01]),
        [
            Ok(Frame::Ping),
            Ok(Frame::Padding { len: 2 }),
            Ok(Frame::Ping)
        ]
    );
}

#[test]
fn ack_ranges_with_gaps() {
    // largest 100, first range 4 → 96..=100; gap 1 → largest 93, len 5
    // → 88..=93; gap 0 → largest 86, len 10 → 76..=86
    let b = ack_bytes(0x02, &[100, 3, 2, 4, 1, 5, 0, 10]);
    let Some(Ok(Frame::Ack { ranges, .. })) = frames(&b).next() else {
        panic!()
    };
    assert_eq!(ranges.collect::<Vec<_>>(), [(96, 100), (88, 93), (76, 86)]);
    // down to exactly 0
    let b = ack_bytes(0x02, &[10, 0, 1, 2, 0, 6]);
    let Some(Ok(Frame::Ack { ranges, .. })) = frames(&b).next() else {
        panic!()
    };
    assert_eq!(ranges.collect::<Vec<_>>(), [(8, 10), (0, 6)]);
}

#[test]
fn ack_range_underflow_is_an_error() {
    // first range larger than largest
    let b = ack_bytes(0x02, &[3, 0, 0, 4]);
    assert_eq!(parse_all(&b), [Err(FrameError::BadAckRange { at: 0 })]);
    // gap below 0
    let b = ack_bytes(0x02, &[10, 0, 1, 2, 7, 0]);
    assert_eq!(parse_all(&b), [Err(FrameError::BadAckRange { at: 0 })]);
    // range length below 0
    let b = ack_bytes(0x02, &[10, 0, 1, 2, 0, 7]);
    assert_eq!(parse_all(&b), [Err(FrameError::BadAckRange { at: 0 })]);
    // a huge range count with few bytes is a truncation, quickly
    let mut b = ack_bytes(0x02, &[u64::from(u32::MAX), 0]);
    varint(&mut b, (1 << 62) - 1);
    varint(&mut b, 0);
    b.extend_from_slice(&[0, 0, 0, 0]);
    assert_eq!(
        parse_all(&b),
        [Err(FrameError::Truncated {
            frame: "ACK",
            at: 0
        })]
    );
}

#[test]
fn malformed_inputs_give_errors() {
    let err = |p: &[u8]| parse_all(p).pop().unwrap().unwrap_err();
    // truncated varint in the type
    assert_eq!(
        err(&[0x40]),
        FrameError::Truncated {
            frame: "unknown",
            at: 0
        }
    );
    // CRYPTO with a huge length
    assert_eq!(
        err(&[0x06, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1]),
        FrameError::Truncated {
            frame: "CRYPTO",
            at: 0
        }
    );
    // STREAM beyond 2^62 - 1
    let mut b = vec![0x0e, 0x00];
    varint(&mut b, (1 << 62) - 1);
    bytes(&mut b, b"x");
    assert!(matches!(
        err(&b),
        FrameError::Invalid {
            frame: "STREAM",
            ..
        }
    ));
    // NEW_CONNECTION_ID with a 21-byte and a 0-byte connection ID
    let mut b = vec![0x18, 1, 0, 21];
    b.extend_from_slice(&[0; 21 + 16]);
    assert!(matches!(err(&b), FrameError::Invalid { .. }));
    let mut b = vec![0x18, 1, 0, 0];
    b.extend_from_slice(&[0; 16]);
    assert!(matches!(err(&b), FrameError::Invalid { .. }));
    // Retire Prior To above Sequence Number
    let mut b = vec![0x18, 1, 2, 1, 9];
    b.extend_from_slice(&[0; 16]);
    assert!(matches!(err(&b), FrameError::Invalid { .. }));
    // PATH_CHALLENGE short
    assert!(matches!(err(&[0x1a, 1, 2]), FrameError::Truncated { .. }));
    // unknown types stop the walk after the good frames
    let got = parse_all(&[0x01, 0x1f, 0x01]);
    assert_eq!(
        got,
        [
            Ok(Frame::Ping),
            Err(FrameError::UnknownType { ty: 0x1f, at: 1 })
        ]
    );
    assert_eq!(
        parse_all(&[0x40, 0x21]),
        [Err(FrameError::UnknownType { ty: 0x21, at: 0 })]
    );
    // truncated ECN counts, CONNECTION_CLOSE reason
    assert!(matches!(
        err(&[0x03, 0, 0, 0, 0, 1]),
        FrameError::Truncated { .. }
    ));
    assert!(matches!(
        err(&[0x1c, 0, 0, 5, b'a']),
        FrameError::Truncated { .. }
    ));
    let e = err(&[0x1c, 0, 0, 5, b'a']).to_string();
    assert_eq!(
        e,
        "CONNECTION_CLOSE (Transport) frame at payload offset 0 truncated"
    );
}

proptest::proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(payload in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
        let mut errors = 0;
        for f in frames(&payload) {
            match f {
                Ok(Frame::Ack { ranges, .. }) => {
                    // ranges descend and never underflow
                    let mut prev: Option<u64> = None;
                    for (lo, hi) in ranges {
                        proptest::prop_assert!(lo <= hi);
                        if let Some(p) = prev {
                            proptest::prop_assert!(hi + 1 < p);
                        }
                        prev = Some(lo);
                    }
                }
                Ok(f) => { let _ = (f.name(), f.is_ack_eliciting()); }
                Err(e) => { errors += 1; let _ = e.to_string(); }
            }
        }
        proptest::prop_assert!(errors <= 1);
        let _ = is_ack_eliciting_payload(&payload);
    }
}
