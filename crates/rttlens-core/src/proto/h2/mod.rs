//! HTTP/2 (RFC 9113) over one connection, both directions: decrypted `h2`
//! or cleartext `h2c` by prior knowledge.
//!
//! [`H2Tracker`] walks each direction's frames by their 9-byte headers
//! (RFC 9113 §4.1), decodes header blocks (HEADERS + CONTINUATION) with
//! loona-hpack, one decoder per direction as the peer's encoder requires
//! (RFC 7541 §2.2), and keeps per stream the record HTTP/3 keeps too
//! ([`HttpStream`]): the request's HEADERS and END_STREAM, the response's
//! HEADERS, first DATA and END_STREAM, with `:method`, `:path`,
//! `:authority`, `:status`, `content-type` and `grpc-status`.
//! SETTINGS, WINDOW_UPDATE, RST_STREAM, GOAWAY and PING are tracked:
//!
//! - flow control (RFC 9113 §6.9): every DATA frame, WINDOW_UPDATE and
//!   `SETTINGS_INITIAL_WINDOW_SIZE` as a [`FlowEvent`] (the first
//!   [`FLOW_EVENT_CAP`]), from which `analysis::h2` replays each sender's
//!   windows as the sender had them (a WINDOW_UPDATE seen at the capture
//!   point reaches the sender later) and finds the [`Stall`]s;
//! - a PING and its ACK (same 8 bytes, RFC 9113 §6.7) is an RTT sample at
//!   the capture point.
//!
//! Frames are timed by the segment that delivered their last byte (inside
//! TLS: the segment completing the record), as Wireshark numbers them.
//! DATA payloads are walked by length, never buffered. A header block
//! larger than [`PARSE_BUFFER_CAP`] is not decoded, and once one block is
//! lost (a capture gap, a decoding error) the direction's HPACK state is
//! unknown and later blocks are not decoded either; framing goes on.

use crate::base::side::{FrameRef, Side};
use crate::base::time::Duration;
use crate::proto::http::server_timing;
use crate::proto::http::stream::{Header, HttpStream, HttpStreams, Reset};
use crate::proto::stream::{Framer, InOrder};
use crate::proto::{NoteKind, PARSE_BUFFER_CAP};

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub use crate::proto::http::stream::STREAM_DETAIL_CAP;
/// PING round trips kept.
const PING_CAP: usize = 64;
/// Flow-control events kept per connection (DATA frames, WINDOW_UPDATEs,
/// initial window changes); a transfer of 16 KB frames needs one per 16 KB.
pub const FLOW_EVENT_CAP: usize = 1 << 16;

/// Frame types (RFC 9113 §6).
mod ty {
    pub(super) const DATA: u8 = 0;
    pub(super) const HEADERS: u8 = 1;
    pub(super) const RST_STREAM: u8 = 3;
    pub(super) const SETTINGS: u8 = 4;
    pub(super) const PUSH_PROMISE: u8 = 5;
    pub(super) const PING: u8 = 6;
    pub(super) const GOAWAY: u8 = 7;
    pub(super) const WINDOW_UPDATE: u8 = 8;
    pub(super) const CONTINUATION: u8 = 9;
}

/// Frame flags (RFC 9113 §6).
mod flag {
    pub(super) const END_STREAM: u8 = 0x1;
    pub(super) const ACK: u8 = 0x1;
    pub(super) const END_HEADERS: u8 = 0x4;
    pub(super) const PADDED: u8 = 0x8;
    pub(super) const PRIORITY: u8 = 0x20;
}

/// Head-of-line waits kept per connection.
pub const HOL_DETAIL_CAP: usize = 256;

pub use summary::{FlowEvent, FlowKind, H2Summary, HolWait, Stall, Window};

/// The frame being walked.
#[derive(Debug)]
struct Current {
    ty: u8,
    flags: u8,
    stream: u32,
    len: u32,
    /// The payload, for the frames read here (not DATA).
    buf: Option<Vec<u8>>,
    missing: bool,
}

/// A header block being gathered (HEADERS or PUSH_PROMISE, then
/// CONTINUATION frames).
#[derive(Debug)]
struct Block {
    stream: u32,
    push: bool,
    buf: Vec<u8>,
    broken: bool,
}

/// One direction's parser.
struct Dir {
    side: Side,
    stream: InOrder,
    preface_left: usize,
    framer: Framer<9>,
    cur: Option<Current>,
    block: Option<Block>,
    hpack: loona_hpack::Decoder<'static>,
    /// The HPACK state is unknown (a block was lost or did not decode).
    hpack_lost: bool,
    stopped: bool,
    /// The latest capture time of bytes walked so far.
    latest: Option<FrameRef>,
    /// While walking bytes captured before `latest`: the frame that
    /// delivered the bytes ahead of them, and the stream those were of.
    held: Option<(FrameRef, Option<u32>)>,
    /// The stream whose bytes the latest on-time chunk began with.
    filler: Option<u32>,
}

impl std::fmt::Debug for Dir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dir")
            .field("side", &self.side)
            .field("stopped", &self.stopped)
            .finish_non_exhaustive()
    }
}

impl Dir {
    fn new(side: Side) -> Dir {
        Dir {
            side,
            stream: InOrder::default(),
            preface_left: if side == Side::Client {
                PREFACE.len()
            } else {
                0
            },
            framer: Framer::default(),
            cur: None,
            block: None,
            hpack: loona_hpack::Decoder::new(),
            hpack_lost: false,
            stopped: false,
            latest: None,
            held: None,
            filler: None,
        }
    }
}

/// Connection-level state the two directions share.
#[derive(Debug, Default)]
struct Conn {
    sum: H2Summary,
    streams: HttpStreams,
    /// PINGs sent and not yet acknowledged: payload → when.
    pings: Vec<([u8; 8], Side, FrameRef)>,
    /// Highest stream id seen (streams open in increasing order, RFC 9113
    /// §5.1.1), to count those past the detail cap once.
    max_id: u32,
}

/// Tracks the HTTP/2 frames of one connection (see the [module docs](self)
/// and [`crate::proto`] for the input model).
#[derive(Debug)]
pub struct H2Tracker {
    dirs: [Dir; 2],
    conn: Conn,
}

impl Default for H2Tracker {
    fn default() -> Self {
        H2Tracker::new()
    }
}

impl H2Tracker {
    /// A tracker that has seen nothing yet. The client's stream must begin
    /// with the connection preface.
    pub fn new() -> H2Tracker {
        let conn = Conn::default();
        H2Tracker {
            dirs: [Dir::new(Side::Client), Dir::new(Side::Server)],
            conn,
        }
    }

    /// A tracker for HTTP/2 begun by an HTTP/1.1 `Upgrade: h2c` (RFC 7540
    /// §3.2, kept by RFC 9113 only as a reference): the upgraded request is
    /// stream 1, half-closed by the client, answered in HTTP/2. Offsets
    /// given to [`push`](Self::push) then count from where HTTP/2 begins in
    /// each direction (after the request, after the `101` response).
    pub fn after_upgrade(
        method: &str,
        path: &str,
        request_first: FrameRef,
        request_last: FrameRef,
    ) -> H2Tracker {
        let mut t = H2Tracker::new();
        if let Some(st) = stream_mut(&mut t.conn, 1) {
            st.field(Header::Method, method.to_string());
            st.field(Header::Path, Header::value(path.as_bytes()));
            st.headers(Side::Client, request_first);
            st.end(Side::Client, request_last);
        }
        t
    }

    /// Whether `data`, the first bytes of a client's stream, can start
    /// HTTP/2's connection preface.
    pub fn starts_preface(data: &[u8]) -> bool {
        let n = data.len().min(PREFACE.len());
        n >= 4 && data[..n] == PREFACE[..n]
    }

    /// Bytes `data` sent by `side` at stream `offset` (0 = the first byte
    /// of its HTTP/2 stream), delivered by `at`.
    pub fn push(&mut self, side: Side, offset: u64, data: &[u8], at: FrameRef) {
        let dir = &mut self.dirs[side.index()];
        let Some((hole, fresh)) = dir.stream.admit(offset, data) else {
            return;
        };
        if hole > 0 {
            missing(dir, &mut self.conn, hole, offset.saturating_sub(hole));
        }
        // bytes captured before bytes ahead of them were held by TCP
        match dir.latest.filter(|l| at.ts < l.ts) {
            Some(l) => dir.held = Some((l, dir.filler)),
            None => {
                dir.latest = Some(at);
                dir.held = None;
                dir.filler = dir.cur.as_ref().map(|c| c.stream);
            }
        }
        walk(dir, &mut self.conn, fresh, offset, at);
        if dir.held.is_none() && dir.filler.is_none() {
            dir.filler = dir.cur.as_ref().map(|c| c.stream);
        }
    }

    /// `len` bytes sent by `side` at `offset` that were never seen.
    pub fn gap(&mut self, side: Side, offset: u64, len: u64) {
        let dir = &mut self.dirs[side.index()];
        let missing_len = dir.stream.admit_gap(offset, len);
        if missing_len > 0 {
            missing(dir, &mut self.conn, missing_len, offset);
        }
    }

    /// What was learnt, ending the tracker.
    pub fn finish(self) -> H2Summary {
        let mut sum = self.conn.sum;
        sum.streams = self.conn.streams.into_vec();
        sum
    }
}

/// Walks fresh in-order bytes of `dir`.
fn walk(dir: &mut Dir, conn: &mut Conn, mut data: &[u8], offset: u64, at: FrameRef) {
    if dir.preface_left > 0 {
        let n = dir.preface_left.min(data.len());
        let start = PREFACE.len() - dir.preface_left;
        if data[..n] != PREFACE[start..start + n] {
            conn.sum.notes[dir.side.index()].push(
                offset,
                NoteKind::Malformed {
                    what: "client stream does not begin with the HTTP/2 preface",
                },
            );
            dir.stopped = true;
        }
        dir.preface_left -= n;
        data = &data[n..];
    }
    while !data.is_empty() && !dir.stopped {
        if !dir.framer.in_body() {
            if let Some(h) = dir.framer.take_header(&mut data) {
                on_header(dir, conn, h, at);
            }
        } else {
            let body = dir.framer.take_body(&mut data);
            if let Some(buf) = dir.cur.as_mut().and_then(|c| c.buf.as_mut()) {
                buf.extend_from_slice(body);
            }
            if dir.framer.body_left() == 0 {
                end_frame(dir, conn, at);
            }
        }
    }
}

/// `len` bytes missing from `dir`'s stream at `offset`.
fn missing(dir: &mut Dir, conn: &mut Conn, len: u64, offset: u64) {
    if dir.stopped {
        return;
    }
    if dir.preface_left > 0 || !dir.framer.skip_body(len) {
        conn.sum.notes[dir.side.index()].push(offset, NoteKind::LostSync { layer: "http2" });
        dir.stopped = true;
        return;
    }
    conn.sum.notes[dir.side.index()].push(offset, NoteKind::Gap { len });
    if let Some(c) = dir.cur.as_mut() {
        c.missing = true;
        c.buf = None;
    }
    if dir.framer.body_left() == 0 {
        // the frame's end fell in the gap: it is over, untimed
        dir.framer.end_item();
        if let Some(c) = dir.cur.take() {
            if matches!(c.ty, ty::HEADERS | ty::CONTINUATION | ty::PUSH_PROMISE) {
                dir.hpack_lost = true;
                dir.block = None;
            }
        }
    }
}

fn on_header(dir: &mut Dir, conn: &mut Conn, h: [u8; 9], at: FrameRef) {
    let len = u32::from_be_bytes([0, h[0], h[1], h[2]]);
    let (ty, flags) = (h[3], h[4]);
    let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
    let read = match ty {
        ty::DATA => false,
        ty::HEADERS | ty::CONTINUATION | ty::PUSH_PROMISE => (len as usize) <= PARSE_BUFFER_CAP,
        _ => len <= 4096,
    };
    dir.cur = Some(Current {
        ty,
        flags,
        stream,
        len,
        buf: read.then(|| Vec::with_capacity(len as usize)),
        missing: false,
    });
    dir.framer.begin_body(u64::from(len));
    if len == 0 {
        end_frame(dir, conn, at);
    }
}

/// The stream `id` (opened on first sight; stream 0 is the connection's).
fn stream_mut(conn: &mut Conn, id: u32) -> Option<&mut HttpStream> {
    if id == 0 {
        return None;
    }
    // streams open in increasing order (RFC 9113 §5.1.1): a higher id
    // than any seen is a new stream, counted once past the detail cap too
    if id > conn.max_id {
        conn.max_id = id;
        conn.sum.stream_count += 1;
    }
    conn.streams.open(u64::from(id))
}

fn end_frame(dir: &mut Dir, conn: &mut Conn, at: FrameRef) {
    dir.framer.end_item();
    let Some(cur) = dir.cur.take() else { return };
    let side = dir.side;
    let s = side.index();
    let end_stream = cur.flags & flag::END_STREAM != 0;
    if matches!(cur.ty, ty::DATA | ty::HEADERS) && cur.stream != 0 {
        match dir.held {
            Some((delivered, behind)) if behind != Some(cur.stream) => {
                held_back(conn, side, cur.stream, at, delivered, behind);
            }
            None if dir.filler.is_none() => dir.filler = Some(cur.stream),
            _ => {}
        }
    }
    match cur.ty {
        ty::DATA => on_data(conn, side, &cur, at),
        ty::HEADERS | ty::PUSH_PROMISE => {
            let push = cur.ty == ty::PUSH_PROMISE;
            let mut buf = cur.buf.unwrap_or_default();
            let broken = cur.missing || buf.len() != cur.len as usize;
            if !broken {
                let mut skip = 0usize;
                let mut pad = 0usize;
                if cur.flags & flag::PADDED != 0 {
                    pad = usize::from(buf.first().copied().unwrap_or(0));
                    skip += 1;
                }
                if push {
                    skip += 4; // promised stream id
                } else if cur.flags & flag::PRIORITY != 0 {
                    skip += 5;
                }
                let end = buf.len().saturating_sub(pad);
                buf = buf.get(skip..end).map(<[u8]>::to_vec).unwrap_or_default();
            }
            if !push {
                if let Some(st) = stream_mut(conn, cur.stream) {
                    st.headers(side, at);
                    if end_stream {
                        st.end(side, at);
                    }
                }
            }
            dir.block = Some(Block {
                stream: cur.stream,
                push,
                buf,
                broken,
            });
            if cur.flags & flag::END_HEADERS != 0 {
                decode_block(dir, conn, at);
            }
        }
        ty::CONTINUATION => {
            match dir.block.as_mut() {
                Some(b) if b.stream == cur.stream => match cur.buf {
                    Some(more) if !cur.missing && b.buf.len() + more.len() <= PARSE_BUFFER_CAP => {
                        b.buf.extend_from_slice(&more)
                    }
                    _ => b.broken = true,
                },
                _ => {
                    conn.sum.notes[s].push(
                        0,
                        NoteKind::Malformed {
                            what: "CONTINUATION without a header block",
                        },
                    );
                }
            }
            if cur.flags & flag::END_HEADERS != 0 {
                decode_block(dir, conn, at);
            }
        }
        ty::SETTINGS if cur.flags & flag::ACK == 0 => {
            if let Some(buf) = cur.buf.filter(|_| !cur.missing) {
                for kv in buf.chunks_exact(6) {
                    let id = u16::from_be_bytes([kv[0], kv[1]]);
                    let v = u32::from_be_bytes([kv[2], kv[3], kv[4], kv[5]]);
                    match id {
                        // SETTINGS_MAX_CONCURRENT_STREAMS
                        3 => {
                            conn.sum.max_concurrent_streams[s] = Some(v);
                            conn.sum.max_concurrent_streams_at[s] = Some(at);
                        }
                        // SETTINGS_INITIAL_WINDOW_SIZE: the peer's stream
                        // windows change by the difference (RFC 9113 §6.9.2)
                        4 => {
                            conn.sum.initial_window[s] = Some(v);
                            flow(conn, at, side.peer(), FlowKind::InitialWindow(v));
                        }
                        _ => {}
                    }
                }
            }
        }
        ty::WINDOW_UPDATE => {
            let Some(b) = cur.buf.filter(|b| b.len() == 4) else {
                return;
            };
            let inc = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & 0x7fff_ffff;
            // an update from `side` opens a window of its peer, the sender
            let kind = FlowKind::Update {
                stream: cur.stream,
                inc,
            };
            flow(conn, at, side.peer(), kind);
        }
        ty::RST_STREAM => {
            let code = cur
                .buf
                .filter(|b| b.len() == 4)
                .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            if let Some(st) = stream_mut(conn, cur.stream) {
                st.reset(Reset {
                    at,
                    by: side,
                    code: Some(u64::from(code)),
                });
            }
        }
        ty::GOAWAY => {
            let code = cur
                .buf
                .filter(|b| b.len() >= 8)
                .map_or(0, |b| u32::from_be_bytes([b[4], b[5], b[6], b[7]]));
            conn.sum.goaway.get_or_insert((at, side, code));
        }
        ty::PING => {
            let Some(b) = cur.buf.filter(|b| b.len() == 8) else {
                return;
            };
            let mut payload = [0u8; 8];
            payload.copy_from_slice(&b);
            if cur.flags & flag::ACK == 0 {
                if conn.pings.len() < PING_CAP {
                    conn.pings.push((payload, side, at));
                }
            } else if let Some(i) = conn
                .pings
                .iter()
                .position(|(p, from, _)| *p == payload && *from != side)
            {
                let (_, _, sent) = conn.pings.swap_remove(i);
                if conn.sum.ping_rtts_ms.len() < PING_CAP {
                    let rtt = (at.ts - sent.ts).max(Duration::ZERO);
                    conn.sum
                        .ping_rtts_ms
                        .push(crate::base::cost::round3(rtt.as_millis_f64()));
                }
            }
        }
        _ => {}
    }
}

/// Records a flow-control event.
fn flow(conn: &mut Conn, at: FrameRef, sender: Side, kind: FlowKind) {
    if conn.sum.flow.len() < FLOW_EVENT_CAP {
        conn.sum.flow.push(FlowEvent { at, sender, kind });
    } else {
        conn.sum.flow_events_dropped += 1;
    }
}

/// A DATA frame from `side`: bytes, END_STREAM, flow control.
fn on_data(conn: &mut Conn, side: Side, cur: &Current, at: FrameRef) {
    let end_stream = cur.flags & flag::END_STREAM != 0;
    let kind = FlowKind::Data {
        stream: cur.stream,
        len: cur.len,
        end: end_stream,
    };
    flow(conn, at, side, kind);
    let Some(st) = stream_mut(conn, cur.stream) else {
        return;
    };
    st.data(side, u64::from(cur.len), at);
    if end_stream {
        st.end(side, at);
    }
}

/// A frame of `stream` captured at `arrived` waited for the bytes ahead of
/// it, delivered at `delivered`: one wait per stream and hole, the longest.
fn held_back(
    conn: &mut Conn,
    sender: Side,
    stream: u32,
    arrived: FrameRef,
    delivered: FrameRef,
    behind: Option<u32>,
) {
    let waits = &mut conn.sum.head_of_line;
    if let Some(w) = waits
        .iter_mut()
        .find(|w| w.stream == stream && w.delivered == delivered && w.sender == sender)
    {
        w.arrived = w.arrived.min(arrived);
        return;
    }
    if waits.len() < HOL_DETAIL_CAP {
        waits.push(HolWait {
            sender,
            stream,
            arrived,
            delivered,
            behind: behind.unwrap_or(0),
        });
    }
}

/// Decodes the header block gathered in `dir` (HPACK state permitting),
/// completed by `at`.
fn decode_block(dir: &mut Dir, conn: &mut Conn, at: FrameRef) {
    let Some(b) = dir.block.take() else { return };
    if b.broken || dir.hpack_lost {
        dir.hpack_lost = true;
        conn.sum.undecoded_blocks += 1;
        return;
    }
    let mut fields: Vec<(Header, String)> = Vec::new();
    let mut timing: Vec<Vec<u8>> = Vec::new();
    let server = dir.side == Side::Server;
    let decoded = dir.hpack.decode_with_cb(&b.buf, |n, v| {
        if let Some(h) = Header::of(&n) {
            fields.push((h, Header::value(&v)));
        } else if server && n.as_ref() == server_timing::FIELD {
            timing.push(v.into_owned());
        }
    });
    if decoded.is_err() {
        dir.hpack_lost = true;
        conn.sum.undecoded_blocks += 1;
        return;
    }
    if b.push {
        return;
    }
    let Some(st) = stream_mut(conn, b.stream) else {
        return;
    };
    for v in timing {
        st.server_timing(&v, at);
    }
    for (h, v) in fields {
        st.field(h, v);
    }
}

mod summary;
#[cfg(test)]
mod tests;
