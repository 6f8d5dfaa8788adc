//! HTTP/1.x tracker: hand-built exchanges, real curl ↔ Python http.server
//! captures (fixtures in `src/proto/testdata/`, made by `regen_http.sh`), and
//! properties over random chunkings and mutations.

use proptest::prelude::*;
use rttlens_core::base::side::{FrameRef, Side};
use rttlens_core::base::time::Timestamp;
use rttlens_core::proto::http::{HttpExchange, HttpTracker, EXCHANGE_DETAIL_CAP, TARGET_CHARS};
use rttlens_core::proto::{NoteKind, PARSE_BUFFER_CAP};

fn mark(frame: u64) -> FrameRef {
    FrameRef {
        frame,
        ts: Timestamp::from_nanos(frame as i64 * 1_000_000),
    }
}

/// Segments in capture order: (side, frame, offset, bytes).
#[derive(Default, Clone)]
struct Conv {
    segs: Vec<(Side, u64, u64, Vec<u8>)>,
    next: [u64; 2],
    frame: u64,
}

impl Conv {
    fn send(&mut self, side: Side, bytes: &[u8]) -> u64 {
        self.frame += 1;
        let off = self.next[side.index()];
        self.next[side.index()] += bytes.len() as u64;
        self.segs.push((side, self.frame, off, bytes.to_vec()));
        self.frame
    }

    fn run_split(&self, piece: usize) -> HttpTracker {
        let mut t = HttpTracker::new();
        for (side, frame, off, data) in &self.segs {
            for (i, c) in data.chunks(piece.max(1)).enumerate() {
                t.push(*side, off + (i * piece) as u64, c, mark(*frame));
            }
        }
        t
    }

    fn run(&self) -> HttpTracker {
        self.run_split(usize::MAX)
    }
}

fn frame(m: Option<FrameRef>) -> Option<u64> {
    m.map(|m| m.frame)
}

#[test]
fn content_length_exchange() {
    let mut c = Conv::default();
    c.send(Side::Client, b"GET /index.html HTTP/1.1\r\nHost: a\r\n\r\n");
    c.send(Side::Server, b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n");
    c.send(Side::Server, b"\r\nhello");
    c.send(Side::Server, b"world");
    let t = c.run();
    assert_eq!(t.is_http(), Some(true));
    assert_eq!(t.exchange_count(), 1);
    let ex = &t.exchanges()[0];
    let req = ex.request.as_ref().unwrap();
    assert_eq!(
        (req.method.as_str(), req.target.as_str(), req.version),
        ("GET", "/index.html", 1)
    );
    assert_eq!((req.first.frame, frame(req.last)), (1, Some(1)));
    assert!(req.complete && req.body_len == 0);
    let resp = ex.response.as_ref().unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(
        (resp.first.frame, resp.head_complete.frame, frame(resp.last)),
        (2, 3, Some(4))
    );
    assert_eq!(
        (resp.body_len, resp.content_length, resp.chunked),
        (10, Some(10), false)
    );
    assert_eq!((resp.offset, resp.end), (0, Some(49)));
    assert!(resp.request_seen && resp.complete);
}

fn pipelined() -> Conv {
    let mut c = Conv::default();
    c.send(
        Side::Client,
        b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nHEAD /b HTTP/1.1\r\nHost: x\r\n\r\nPOST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\nGET /d HTTP/1.1\r\n\r\n",
    );
    c.send(
        Side::Server,
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
    );
    c.send(
        Side::Server,
        b"HTTP/1.1 201 Created\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5;name=v\r\nhello\r\n",
    );
    c.send(
        Side::Server,
        b"0\r\nX-Trailer: 1\r\nX-Other: 2\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 99\r\n\r\n",
    );
    c
}

#[test]
fn pipelining_pairs_in_order_and_applies_head() {
    let t = pipelined().run();
    assert_eq!((t.request_count(), t.response_count()), (4, 4));
    let ex = t.exchanges();
    let methods: Vec<&str> = ex
        .iter()
        .map(|e| e.request.as_ref().unwrap().method.as_str())
        .collect();
    assert_eq!(methods, ["GET", "HEAD", "POST", "GET"]);
    let statuses: Vec<u16> = ex
        .iter()
        .map(|e| e.response.as_ref().unwrap().status)
        .collect();
    assert_eq!(statuses, [200, 200, 201, 204]);
    // HEAD: Content-Length 1000 but no body; the next response follows.
    let head = ex[1].response.as_ref().unwrap();
    assert_eq!(
        (head.body_len, head.content_length, head.complete),
        (0, Some(1000), true)
    );
    let post = ex[2].request.as_ref().unwrap();
    assert!(post.chunked && post.complete);
    assert_eq!(post.body_len, 4);
    let created = ex[2].response.as_ref().unwrap();
    assert!(created.chunked && created.complete);
    assert_eq!(created.body_len, 5);
    assert_eq!((created.first.frame, frame(created.last)), (3, Some(4)));
    let nc = ex[3].response.as_ref().unwrap();
    assert_eq!((nc.body_len, nc.complete), (0, true));
    for side in [Side::Client, Side::Server] {
        assert!(t.direction(side).notes.items().is_empty());
    }
}

#[test]
fn byte_by_byte_is_the_same() {
    for conv in [
        pipelined(),
        continue_100(),
        until_close(),
        load_fixture(KEEPALIVE),
    ] {
        let whole = conv.run();
        for piece in [1, 2, 3, 7] {
            let t = conv.run_split(piece);
            assert_eq!(t.exchanges(), whole.exchanges(), "piece {piece}");
            assert_eq!(t.is_http(), whole.is_http());
        }
    }
}

fn continue_100() -> Conv {
    let mut c = Conv::default();
    c.send(
        Side::Client,
        b"PUT /up HTTP/1.1\r\nContent-Length: 6\r\nExpect: 100-continue\r\n\r\n",
    );
    c.send(Side::Server, b"HTTP/1.1 100 Continue\r\n\r\n");
    c.send(Side::Client, b"abcdef");
    c.send(
        Side::Server,
        b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n",
    );
    c.send(
        Side::Server,
        b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
    );
    c
}

#[test]
fn interim_responses_precede_the_final_one() {
    let t = continue_100().run();
    assert_eq!(t.exchange_count(), 1);
    let ex = &t.exchanges()[0];
    let req = ex.request.as_ref().unwrap();
    assert!(req.expect_continue);
    assert_eq!(
        (req.head_complete.frame, frame(req.last), req.body_len),
        (1, Some(3), 6)
    );
    let interim: Vec<(u16, u64)> = ex
        .interim
        .iter()
        .map(|i| (i.status, i.first.frame))
        .collect();
    assert_eq!(interim, [(100, 2), (103, 4)]);
    let resp = ex.response.as_ref().unwrap();
    assert_eq!(
        (resp.status, resp.first.frame, frame(resp.last)),
        (201, 5, Some(5))
    );
    assert_eq!(t.direction(Side::Server).messages, 3);
}

fn until_close() -> Conv {
    let mut c = Conv::default();
    c.send(Side::Client, b"GET / HTTP/1.0\r\n\r\n");
    c.send(
        Side::Server,
        b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nsome",
    );
    c.send(Side::Server, b" more bytes");
    c
}

#[test]
fn http10_body_until_close() {
    let mut t = until_close().run();
    let resp = t.exchanges()[0].response.clone().unwrap();
    assert!(resp.until_close && !resp.complete);
    assert_eq!((resp.version, resp.body_len, resp.last), (0, 15, None));
    t.end(Side::Server);
    let resp = t.exchanges()[0].response.clone().unwrap();
    assert!(resp.complete);
    assert_eq!(frame(resp.last), Some(3));
    assert_eq!(resp.end, Some(60));
}

#[test]
fn status_without_body() {
    let mut c = Conv::default();
    c.send(
        Side::Client,
        b"GET /x HTTP/1.1\r\n\r\nGET /y HTTP/1.1\r\n\r\nGET /z HTTP/1.1\r\n\r\n",
    );
    c.send(
        Side::Server,
        b"HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\nHTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno",
    );
    let t = c.run();
    let bodies: Vec<(u16, u64, bool)> = t
        .exchanges()
        .iter()
        .map(|e| {
            e.response
                .as_ref()
                .map(|r| (r.status, r.body_len, r.complete))
                .unwrap()
        })
        .collect();
    assert_eq!(bodies, [(304, 0, true), (204, 0, true), (404, 2, true)]);
}

#[test]
fn gaps_in_bodies_keep_sync_elsewhere_lose_it() {
    let mut t = HttpTracker::new();
    let req = b"GET / HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\n";
    t.push(Side::Client, 0, req, mark(1));
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
    t.push(Side::Server, 0, head, mark(2));
    let h = head.len() as u64;
    t.push(Side::Server, h, &[b'x'; 100], mark(3));
    t.gap(Side::Server, h + 100, 800);
    t.push(Side::Server, h + 900, &[b'x'; 100], mark(4));
    let second = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n";
    t.push(Side::Server, h + 1000, second, mark(5));
    let s = h + 1000 + second.len() as u64;
    t.gap(Side::Server, s, 10); // inside the 16-byte chunk
    t.push(Side::Server, s + 10, b"abcdef\r\n0\r\n\r\n", mark(6));
    let ex = t.exchanges();
    let r0 = ex[0].response.as_ref().unwrap();
    assert_eq!(
        (r0.body_len, r0.missing, frame(r0.last)),
        (1000, 800, Some(4))
    );
    let r1 = ex[1].response.as_ref().unwrap();
    assert!(r1.complete);
    assert_eq!((r1.body_len, r1.missing), (16, 10));
    let dir = t.direction(Side::Server);
    assert_eq!(dir.lost_sync_at, None);
    assert_eq!(dir.bytes_missing, 810);

    // A gap that covers a head: sync lost.
    let end = s + 10 + 13;
    t.gap(Side::Server, end, 20);
    t.push(Side::Server, end + 20, b"garbage", mark(7));
    let dir = t.direction(Side::Server);
    assert_eq!(dir.lost_sync_at, Some(end));
    assert!(dir
        .notes
        .items()
        .iter()
        .any(|n| n.kind == NoteKind::LostSync { layer: "http" }));
    // A gap that runs past the end of a body: sync lost too.
    let mut t = HttpTracker::new();
    t.push(
        Side::Client,
        0,
        b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab",
        mark(1),
    );
    t.gap(Side::Client, 40, 10); // 3 body bytes left
    assert_eq!(t.direction(Side::Client).lost_sync_at, Some(40));
}

#[test]
fn not_http() {
    let cases: [&[u8]; 6] = [
        &[0x16, 3, 1, 0, 200, 1],                            // TLS ClientHello
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",                 // HTTP/2 prior knowledge
        b"EHLO mail.example.com\r\n\r\n",                    // SMTP-ish
        b"SSH-2.0-OpenSSH_9.2\r\n",                          // SSH
        b"GETTING_VERY_LONG_TOKEN_WITHOUT_ANY_SPACE_AT_ALL", // no SP
        b"get / HTTP/1.1\r\n\r\n",                           // lowercase method
    ];
    for case in cases {
        let mut t = HttpTracker::new();
        t.push(Side::Client, 0, case, mark(1));
        assert_eq!(
            t.is_http(),
            Some(false),
            "{:?}",
            String::from_utf8_lossy(case)
        );
        // Further pushes are ignored.
        t.push(
            Side::Client,
            case.len() as u64,
            b"GET / HTTP/1.1\r\n\r\n",
            mark(2),
        );
        assert!(t.exchanges().is_empty());
    }
    // Undecided while the method is still coming.
    let mut t = HttpTracker::new();
    t.push(Side::Client, 0, b"PO", mark(1));
    assert_eq!(t.is_http(), None);
    // Server speaking first with something else.
    let mut t = HttpTracker::new();
    t.push(Side::Server, 0, b"220 smtp ready\r\n", mark(1));
    assert_eq!(t.is_http(), Some(false));
}

#[test]
fn malformed_and_oversized() {
    // Conflicting Content-Length (RFC 9112 §6.3 item 5).
    let mut t = HttpTracker::new();
    t.push(Side::Client, 0, b"GET / HTTP/1.1\r\n\r\n", mark(1));
    t.push(
        Side::Server,
        0,
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        mark(2),
    );
    assert_eq!(t.direction(Side::Server).malformed_at, Some(0));
    assert_eq!(t.is_http(), Some(true));
    // A bad chunk size.
    let mut t = HttpTracker::new();
    t.push(Side::Client, 0, b"GET / HTTP/1.1\r\n\r\n", mark(1));
    t.push(
        Side::Server,
        0,
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        mark(2),
    );
    assert!(t.direction(Side::Server).malformed_at.is_some());
    // A header block beyond the cap.
    let mut t = HttpTracker::new();
    t.push(Side::Client, 0, b"GET / HTTP/1.1\r\n", mark(1));
    let line = b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    let mut off = 16;
    for i in 0..(PARSE_BUFFER_CAP / line.len() + 2) {
        t.push(Side::Client, off, line, mark(2 + i as u64));
        off += line.len() as u64;
    }
    let dir = t.direction(Side::Client);
    assert!(matches!(
        dir.notes.items()[0].kind,
        NoteKind::TooLarge { .. }
    ));
    assert_eq!(t.is_http(), Some(false));
}

#[test]
fn upgrade_stops_parsing() {
    let mut c = Conv::default();
    c.send(
        Side::Client,
        b"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    );
    c.send(
        Side::Server,
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05hello",
    );
    c.send(Side::Client, b"\x81\x85\x00\x00\x00\x00hello");
    let t = c.run();
    assert!(t.upgraded());
    let ex = &t.exchanges()[0];
    assert_eq!(ex.response.as_ref().unwrap().status, 101);
    assert!(ex.response.as_ref().unwrap().complete);
    assert!(t.direction(Side::Client).malformed_at.is_none());
    assert_eq!(
        t.direction(Side::Client).notes.items()[0].kind,
        NoteKind::Upgraded
    );
}

#[test]
fn long_targets_are_truncated_and_detail_is_capped() {
    let mut t = HttpTracker::new();
    let target = format!("/{}", "é".repeat(500));
    let req = format!("GET {target} HTTP/1.1\r\n\r\n");
    let mut off = 0;
    for i in 0..300 {
        t.push(Side::Client, off, req.as_bytes(), mark(i));
        off += req.len() as u64;
    }
    assert_eq!(t.exchange_count(), 300);
    assert_eq!(t.exchanges().len(), EXCHANGE_DETAIL_CAP);
    let kept = &t.exchanges()[0].request.as_ref().unwrap().target;
    assert_eq!(kept.chars().count(), TARGET_CHARS);
    // Responses beyond the detail cap still pair (HEAD rule) by count.
    let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx";
    let mut off = 0;
    for i in 0..300 {
        t.push(Side::Server, off, resp, mark(1000 + i));
        off += resp.len() as u64;
    }
    assert_eq!(t.response_count(), 300);
    assert!(t.direction(Side::Server).notes.items().is_empty());
}

// ---------------------------------------------------------------------------
// Real captures (curl 7.88 ↔ Python 3.11 http.server, see regen_http.sh)

const KEEPALIVE: &str = include_str!("../src/proto/testdata/http11_keepalive.txt");
const CLOSE: &str = include_str!("../src/proto/testdata/http10_close.txt");

fn load_fixture(text: &str) -> Conv {
    let mut c = Conv::default();
    for l in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let f: Vec<&str> = l.split_whitespace().collect();
        let data = (0..f[4].len() / 2)
            .map(|i| u8::from_str_radix(&f[4][2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let side = if f[2] == "c" {
            Side::Client
        } else {
            Side::Server
        };
        c.segs
            .push((side, f[0].parse().unwrap(), f[3].parse().unwrap(), data));
    }
    c
}

fn summary(ex: &HttpExchange) -> (String, String, u16, u64, bool, bool) {
    let req = ex.request.as_ref().unwrap();
    let resp = ex.response.as_ref().unwrap();
    (
        req.method.clone(),
        req.target.clone(),
        resp.status,
        resp.body_len,
        resp.chunked,
        resp.complete,
    )
}

#[test]
fn curl_keepalive() {
    let t = load_fixture(KEEPALIVE).run();
    assert_eq!(t.is_http(), Some(true));
    let got: Vec<_> = t.exchanges().iter().map(summary).collect();
    let s = |x: &str| x.to_string();
    assert_eq!(
        got,
        [
            (s("GET"), s("/file"), 200, 3000, false, true),
            (s("GET"), s("/chunked"), 200, 1514, true, true),
            (s("HEAD"), s("/file"), 200, 0, false, true),
            (s("GET"), s("/notmod"), 304, 0, false, true),
            (s("POST"), s("/post"), 201, 2, false, true),
        ]
    );
    let ex = t.exchanges();
    // tshark: GET /file in frame 4, response head frame 6, body frame 8.
    let r0 = ex[0].response.as_ref().unwrap();
    assert_eq!(
        (r0.first.frame, r0.head_complete.frame, frame(r0.last)),
        (6, 6, Some(8))
    );
    // POST: head in frame 19, 100 Continue in 20, body in 21, 201 head in 22
    // and its 2-byte body 43 ms later in frame 24 (Nagle on loopback).
    let post = &ex[4];
    let req = post.request.as_ref().unwrap();
    assert!(req.expect_continue);
    assert_eq!(
        (req.first.frame, frame(req.last), req.body_len),
        (19, Some(21), 7)
    );
    assert_eq!(
        post.interim
            .iter()
            .map(|i| (i.status, i.first.frame))
            .collect::<Vec<_>>(),
        [(100, 20)]
    );
    let resp = post.response.as_ref().unwrap();
    assert_eq!((resp.first.frame, frame(resp.last)), (22, Some(24)));
    for side in [Side::Client, Side::Server] {
        assert!(t.direction(side).notes.items().is_empty());
    }
}

#[test]
fn python_until_close() {
    let mut t = load_fixture(CLOSE).run();
    let ex = &t.exchanges()[0];
    assert_eq!(ex.request.as_ref().unwrap().version, 0);
    let resp = ex.response.as_ref().unwrap();
    assert!(resp.until_close && !resp.complete);
    assert_eq!(resp.body_len, 2100);
    t.end(Side::Server);
    let resp = t.exchanges()[0].response.clone().unwrap();
    assert_eq!((resp.complete, frame(resp.last)), (true, Some(40)));
}

// ---------------------------------------------------------------------------
// Properties

fn all_convs() -> Vec<Conv> {
    vec![
        pipelined(),
        continue_100(),
        until_close(),
        load_fixture(KEEPALIVE),
        load_fixture(CLOSE),
    ]
}

fn run_cut(conv: &Conv, cuts: &[usize], drop: &[usize]) -> HttpTracker {
    let mut t = HttpTracker::new();
    for (i, (side, frame, off, data)) in conv.segs.iter().enumerate() {
        if drop.contains(&i) {
            t.gap(*side, *off, data.len() as u64);
            continue;
        }
        let mut points: Vec<usize> = cuts
            .iter()
            .map(|c| c.wrapping_mul(i + 1) % (data.len() + 1))
            .collect();
        points.extend([0, data.len()]);
        points.sort_unstable();
        for w in points.windows(2) {
            t.push(*side, off + w[0] as u64, &data[w[0]..w[1]], mark(*frame));
        }
    }
    t.end(Side::Server);
    t
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn chunking_is_invisible(which in 0usize..5, cuts in proptest::collection::vec(0usize..100_000, 0..12)) {
        let conv = &all_convs()[which];
        let whole = run_cut(conv, &[], &[]);
        let cut = run_cut(conv, &cuts, &[]);
        prop_assert_eq!(cut.exchanges(), whole.exchanges());
        prop_assert_eq!(cut.direction(Side::Server), whole.direction(Side::Server));
    }

    #[test]
    fn mutated_streams_never_panic(
        which in 0usize..5,
        flips in proptest::collection::vec((0usize..1_000_000, any::<u8>()), 0..8),
        drop in proptest::collection::vec(0usize..25, 0..3),
        cuts in proptest::collection::vec(0usize..100_000, 0..8),
    ) {
        let mut conv = all_convs().swap_remove(which);
        let n = conv.segs.len();
        for (pos, byte) in flips {
            let seg = &mut conv.segs[pos % n].3;
            if !seg.is_empty() {
                let i = pos % seg.len();
                seg[i] ^= byte;
            }
        }
        let t = run_cut(&conv, &cuts, &drop);
        let _ = (t.is_http(), t.exchange_count(), t.upgraded());
        let _ = serde_json::to_string(t.exchanges()).unwrap();
    }
}

#[test]
fn interim_response_without_request_counts_as_an_exchange() {
    // Found by the tls_http fuzz target.
    let mut t = HttpTracker::new();
    t.push(Side::Server, 0, b"HTTP/1.1 100 Continue\r\n\r\n", mark(1));
    assert_eq!(t.exchanges().len(), 1);
    assert_eq!(t.exchange_count(), 1);
    assert!(t.exchanges()[0].request.is_none());
}
