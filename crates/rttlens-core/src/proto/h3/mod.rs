// Over 700 lines: the HTTP/3 frame walker, the stream kinds, the control
// streams' settings and the sections QPACK blocks share private state
// (Dir, Conn, Slot); apart they would import each other.
//! HTTP/3 (RFC 9114) over one QUIC connection, with QPACK (RFC 9204).
//!
//! [`H3Tracker`] is fed the STREAM frames of one connection as their
//! packets are decrypted, in capture order: pieces may come out of order,
//! twice, or overlapping (QUIC retransmits lost data in new packets, RFC
//! 9000 §13.3). Each direction of each stream has a small reassembler that
//! trims bytes already seen and holds pieces ahead of a hole, up to
//! [`REASSEMBLY_CAP`] bytes (beyond it the stream is marked incomplete and
//! no longer followed). In-order bytes are then read by stream kind (RFC
//! 9114 §6):
//!
//! - client-initiated bidirectional streams (ID ≡ 0 mod 4) are request
//!   streams: HTTP/3 frames (§7.2), HEADERS decoded with QPACK, DATA
//!   counted, the other frames skipped; each is kept as the record HTTP/2
//!   keeps too ([`HttpStream`], `proto::http::stream`);
//! - unidirectional streams (ID ≡ 2 mod 4 from the client, 3 from the
//!   server) begin with a stream type (§6.2): the control stream (SETTINGS,
//!   GOAWAY), QPACK's encoder stream (which builds the dynamic table used
//!   for the field sections of the same sender, RFC 9204 §4.2) and decoder
//!   stream; push and reserved stream types are ignored.
//!
//! Events are timed by the packet that made their last byte available in
//! stream order ([`FrameRef`]): for bytes held behind a hole, the packet
//! that filled it, when the receiver could have read them.
//!
//! A field section whose Required Insert Count is above the inserts
//! received so far waits (at most [`BLOCKED_SECTION_CAP`] per direction) for
//! the encoder stream to catch up, as a QPACK decoder's blocked stream
//! does (RFC 9204 §2.1.2); what is still missing at the end, or was never
//! received, is left unknown and counted, never guessed.

mod qpack;
mod reasm;

use reasm::{Reasm, ReasmError};

use rustc_hash::FxHashMap;

use crate::base::side::{FrameRef, Side};
use crate::proto::http::server_timing;
use crate::proto::http::stream::{Header, HttpStream, HttpStreams, Reset};
use crate::proto::{NoteKind, Notes, PARSE_BUFFER_CAP};
use crate::wire::varint;

pub use crate::proto::http::stream::STREAM_DETAIL_CAP;
/// Out-of-order bytes held per stream direction, waiting for the bytes
/// before them; beyond it the stream is marked incomplete.
pub const REASSEMBLY_CAP: usize = 64 * 1024;
/// Out-of-order bytes held over the whole connection.
pub const CONNECTION_REASSEMBLY_CAP: usize = 4 * 1024 * 1024;
/// Stream directions followed per connection (each request stream has
/// two); STREAM frames of more are ignored and counted.
pub const LIVE_STREAM_CAP: usize = 1024;
/// Field sections waiting for the encoder stream, per direction.
pub const BLOCKED_SECTION_CAP: usize = 16;
/// Largest control-stream frame read (SETTINGS, GOAWAY), bytes.
const CONTROL_FRAME_CAP: u64 = 4096;
/// SETTINGS kept besides the QPACK ones and MAX_FIELD_SECTION_SIZE.
const OTHER_SETTINGS_CAP: usize = 16;

/// HTTP/3 frame types (RFC 9114 §7.2, Table 2; §11.2.1 for the HTTP/2
/// types reserved).
mod ty {
    pub(super) const DATA: u64 = 0x00;
    pub(super) const HEADERS: u64 = 0x01;
    pub(super) const CANCEL_PUSH: u64 = 0x03;
    pub(super) const SETTINGS: u64 = 0x04;
    pub(super) const PUSH_PROMISE: u64 = 0x05;
    pub(super) const GOAWAY: u64 = 0x07;
    pub(super) const MAX_PUSH_ID: u64 = 0x0d;
    /// HTTP/2's PRIORITY, PING, WINDOW_UPDATE and CONTINUATION: never
    /// valid in HTTP/3 (RFC 9114 §7.2.8).
    pub(super) fn http2_only(t: u64) -> bool {
        matches!(t, 0x02 | 0x06 | 0x08 | 0x09)
    }
}

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
mod stream_ty {
    pub(super) const CONTROL: u64 = 0x00;
    pub(super) const PUSH: u64 = 0x01;
    pub(super) const ENCODER: u64 = 0x02;
    pub(super) const DECODER: u64 = 0x03;
}

/// Setting identifiers (RFC 9114 §7.2.4.1, RFC 9204 §5).
mod setting {
    pub(super) const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
    pub(super) const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
    pub(super) const QPACK_BLOCKED_STREAMS: u64 = 0x07;
}

/// One side's SETTINGS frame (RFC 9114 §7.2.4).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct H3Settings {
    /// The packet that delivered the frame.
    pub at: FrameRef,
    /// `SETTINGS_QPACK_MAX_TABLE_CAPACITY` (0x01, RFC 9204 §5), bytes;
    /// `None`: absent, which means 0 (no dynamic table).
    pub qpack_max_table_capacity: Option<u64>,
    /// `SETTINGS_QPACK_BLOCKED_STREAMS` (0x07, RFC 9204 §5), streams;
    /// `None`: absent, which means 0.
    pub qpack_blocked_streams: Option<u64>,
    /// `SETTINGS_MAX_FIELD_SECTION_SIZE` (0x06, RFC 9114 §7.2.4.1), bytes;
    /// `None`: absent, which means unlimited.
    pub max_field_section_size: Option<u64>,
    /// The other settings as `(identifier, value)`, in order, the first 16
    /// (extensions such as `SETTINGS_ENABLE_CONNECT_PROTOCOL` 0x08 or
    /// `SETTINGS_H3_DATAGRAM` 0x33, and reserved ones, §7.2.4.1).
    pub other: Vec<(u64, u64)>,
}

/// What the tracker learnt of one HTTP/3 connection.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct H3Summary {
    /// The first [`STREAM_DETAIL_CAP`] request streams seen, by stream ID.
    pub streams: Vec<HttpStream>,
    /// Request streams opened in all (the highest client-initiated
    /// bidirectional stream ID seen / 4 + 1: lower ones open with it, RFC
    /// 9000 §3.2).
    pub stream_count: u64,
    /// Each side's SETTINGS, client's and server's.
    pub settings: [Option<H3Settings>; 2],
    /// GOAWAY: its packet, sender and stream or push ID (RFC 9114 §5.2).
    pub goaway: Option<(FrameRef, Side, u64)>,
    /// References to the QPACK dynamic table that were resolved.
    pub qpack_resolved: u64,
    /// References to the QPACK dynamic table that were not: the entry was
    /// never received, was evicted from our copy (over 64 KiB), or the
    /// encoder stream could not be followed. The names and values they
    /// stood for are unknown.
    pub qpack_unresolved: u64,
    /// Field sections that had to wait for the encoder stream (their
    /// Required Insert Count above the inserts received when they came):
    /// QPACK's head-of-line blocking (RFC 9204 §2.1.2).
    pub qpack_blocked_sections: u64,
    /// Field sections not decoded: malformed, larger than 64 KiB, or cut.
    pub undecoded_sections: u64,
    /// STREAM frames ignored because [`LIVE_STREAM_CAP`] stream directions
    /// were already followed.
    pub untracked_stream_frames: u64,
    /// Notes per direction, client's and server's (offsets are stream
    /// offsets, of whichever stream the note is about).
    pub notes: [Notes; 2],
}

/// What a stream direction carries.
#[derive(Debug)]
enum Kind {
    /// A request stream (either direction).
    Request,
    /// A unidirectional stream whose type is not read yet.
    UniType { buf: [u8; 8], have: usize },
    /// The sender's control stream.
    Control { settings: bool },
    /// The sender's QPACK encoder stream.
    Encoder,
    /// Anything not read: a push, decoder, reserved or duplicate stream.
    Ignored,
}

/// The frame being walked on a request or control stream.
#[derive(Debug)]
struct Cur {
    ty: u64,
    left: u64,
    /// The payload, for frames read here (HEADERS, SETTINGS, GOAWAY).
    buf: Option<Vec<u8>>,
}

/// One direction of one stream being followed.
#[derive(Debug)]
struct Dir {
    reasm: Reasm,
    kind: Kind,
    /// A frame header's bytes so far (type and length varints).
    hdr: [u8; 16],
    have: usize,
    cur: Option<Cur>,
    stopped: bool,
}

impl Dir {
    fn new(kind: Kind) -> Dir {
        Dir {
            reasm: Reasm::default(),
            kind,
            hdr: [0; 16],
            have: 0,
            cur: None,
            stopped: false,
        }
    }

    /// Moves bytes from `data` into the frame header; returns its type and
    /// length once both varints are complete (RFC 9114 §7.1).
    fn take_header(&mut self, data: &mut &[u8]) -> Option<(u64, u64)> {
        loop {
            let h = &self.hdr[..self.have];
            let (need, full) = match h.first() {
                None => (1, false),
                Some(b) => {
                    let tlen = 1usize << (b >> 6);
                    match h.get(tlen) {
                        _ if h.len() < tlen => (tlen, false),
                        None => (tlen + 1, false),
                        Some(l) => (tlen + (1usize << (l >> 6)), true),
                    }
                }
            };
            if full && self.have == need {
                self.have = 0;
                let (t, n) = varint::read(&self.hdr[..need])?;
                let (l, _) = varint::read(&self.hdr[n..need])?;
                return Some((t, l));
            }
            if data.is_empty() {
                return None;
            }
            let n = (need - self.have).min(data.len());
            self.hdr[self.have..self.have + n].copy_from_slice(&data[..n]);
            self.have += n;
            *data = &data[n..];
        }
    }

    /// Whether a frame is half read.
    fn inside_frame(&self) -> bool {
        self.have > 0 || self.cur.is_some()
    }
}

/// Followed, or done with (so that retransmissions are not read again).
#[derive(Debug)]
enum Slot {
    Live(Box<Dir>),
    Done,
}

/// A field section waiting for the encoder stream.
#[derive(Debug)]
struct Blocked {
    stream: u64,
    required: u64,
    buf: Vec<u8>,
    /// The packet that delivered the HEADERS frame.
    at: FrameRef,
}

/// Connection-level state.
#[derive(Debug)]
struct Conn {
    sum: H3Summary,
    /// The request streams kept in detail.
    streams: HttpStreams,
    /// The dynamic table each side's encoder stream builds (client's,
    /// server's): it decodes the field sections that side sends.
    tables: [qpack::DynamicTable; 2],
    /// Whether each side's control and encoder streams were seen (only one
    /// of each is allowed, RFC 9114 §6.2.1, RFC 9204 §4.2).
    control_seen: [bool; 2],
    encoder_seen: [bool; 2],
    blocked: [Vec<Blocked>; 2],
    /// Out-of-order bytes held over all streams.
    held_bytes: usize,
    huff: qpack::Huffman,
    /// Every frame header read, when kept ([`H3Tracker::keep_frames`];
    /// boxed: one pointer in every connection that keeps none).
    #[allow(clippy::box_collection)]
    frames: Option<Box<Vec<H3FrameRec>>>,
}

/// One HTTP/3 frame's header as read on a request or control stream
/// (RFC 9114 §7.1), kept for qlog ([`H3Tracker::keep_frames`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H3FrameRec {
    /// The packet that delivered the frame's header.
    pub at: FrameRef,
    /// Its sender.
    pub side: Side,
    /// The stream.
    pub stream: u64,
    /// Frame type (RFC 9114 §7.2).
    pub ty: u64,
    /// Payload length, bytes.
    pub len: u64,
}

impl Conn {
    fn note(&mut self, side: Side, offset: u64, kind: NoteKind) {
        self.sum.notes[side.index()].push(offset, kind);
    }

    /// The decoder's maximum table capacity for the field sections `side`
    /// sends: what its peer's SETTINGS said (`None`: not seen).
    fn max_capacity(&self, sender: Side) -> Option<u64> {
        self.sum.settings[sender.peer().index()]
            .as_ref()
            .map(|s| s.qpack_max_table_capacity.unwrap_or(0))
    }

    /// The request stream `id` in detail, opened on first sight while
    /// fewer than [`STREAM_DETAIL_CAP`] are kept.
    fn stream_mut(&mut self, id: u64) -> Option<&mut HttpStream> {
        self.streams.open(id)
    }

    fn mark_incomplete(&mut self, id: u64) {
        if let Some(st) = self.streams.get_mut(id) {
            st.incomplete = true;
        }
    }
}

/// Tracks the HTTP/3 streams of one QUIC connection (see the [module
/// docs](self)).
#[derive(Debug)]
pub struct H3Tracker {
    streams: FxHashMap<(u64, Side), Slot>,
    conn: Conn,
}

impl Default for H3Tracker {
    fn default() -> Self {
        H3Tracker::new()
    }
}

impl H3Tracker {
    /// A tracker that has seen nothing yet.
    pub fn new() -> H3Tracker {
        H3Tracker {
            streams: FxHashMap::default(),
            conn: Conn {
                sum: H3Summary::default(),
                streams: HttpStreams::default(),
                tables: Default::default(),
                control_seen: [false; 2],
                encoder_seen: [false; 2],
                blocked: Default::default(),
                held_bytes: 0,
                huff: qpack::Huffman::new(),
                frames: None,
            },
        }
    }

    /// From now on keeps every frame header read (for qlog).
    pub fn keep_frames(&mut self) {
        self.conn.frames.get_or_insert_with(Box::default);
    }

    /// The frame headers kept ([`H3Tracker::keep_frames`]), in the order
    /// read.
    pub fn take_frames(&mut self) -> Vec<H3FrameRec> {
        self.conn.frames.take().map(|v| *v).unwrap_or_default()
    }

    /// STREAM frame data of stream `id` sent by `side`, at stream `offset`
    /// (bytes), `fin` set on the frame (RFC 9000 §19.8), carried by the
    /// packet `at`. Pieces may come in any order, repeated or overlapping.
    pub fn stream(
        &mut self,
        side: Side,
        id: u64,
        offset: u64,
        data: &[u8],
        fin: bool,
        at: FrameRef,
    ) {
        let conn = &mut self.conn;
        let kind = match (id % 4, side) {
            (0, _) => Kind::Request,
            (2, Side::Client) | (3, Side::Server) => Kind::UniType {
                buf: [0; 8],
                have: 0,
            },
            (1, _) => {
                if !self.streams.contains_key(&(id, side)) {
                    conn.note(
                        side,
                        offset,
                        NoteKind::Malformed {
                            what: "server-initiated bidirectional stream (not used by HTTP/3)",
                        },
                    );
                }
                Kind::Ignored
            }
            _ => {
                conn.note(
                    side,
                    offset,
                    NoteKind::Malformed {
                        what: "data from the receiving side of a unidirectional stream",
                    },
                );
                return;
            }
        };
        if matches!(kind, Kind::Request) {
            conn.sum.stream_count = conn.sum.stream_count.max(id / 4 + 1);
            if conn.stream_mut(id).is_none() {
                return;
            }
        }
        let key = (id, side);
        if !self.streams.contains_key(&key) {
            if self.streams.len() >= LIVE_STREAM_CAP {
                conn.sum.untracked_stream_frames += 1;
                return;
            }
            let slot = match kind {
                Kind::Ignored => Slot::Done,
                k => Slot::Live(Box::new(Dir::new(k))),
            };
            self.streams.insert(key, slot);
        }
        let Some(slot) = self.streams.get_mut(&key) else {
            return;
        };
        let Slot::Live(dir) = slot else { return };
        let budget = CONNECTION_REASSEMBLY_CAP.saturating_sub(conn.held_bytes);
        let before = dir.reasm.held_bytes;
        let admitted = dir.reasm.admit(offset, data, fin, budget);
        conn.held_bytes = conn.held_bytes + dir.reasm.held_bytes - before;
        let done = match admitted {
            Ok(a) => {
                let mut pos = a.offset;
                walk(dir, conn, id, side, a.direct, pos, at);
                pos += a.direct.len() as u64;
                for piece in &a.drained {
                    walk(dir, conn, id, side, piece, pos, at);
                    pos += piece.len() as u64;
                }
                if dir.reasm.complete() {
                    end_of_stream(dir, conn, id, side, at);
                    true
                } else {
                    false
                }
            }
            Err(e) => {
                let what = match e {
                    ReasmError::Overflow => NoteKind::TooLarge {
                        what: "out-of-order stream data",
                        len: dir.reasm.held_bytes as u64 + data.len() as u64,
                    },
                    ReasmError::FinalSize => NoteKind::Malformed {
                        what: "stream data beyond its final size",
                    },
                };
                conn.note(side, offset, what);
                abandon(dir, conn, id, side);
                true
            }
        };
        if done {
            conn.held_bytes -= dir.reasm.held_bytes;
            *slot = Slot::Done;
        }
    }

    /// RESET_STREAM or STOP_SENDING for stream `id`, sent by `side` in the
    /// packet `at` (RFC 9000 §19.4, §19.5).
    pub fn reset(&mut self, side: Side, id: u64, at: FrameRef) {
        if id % 4 == 0 {
            if let Some(st) = self.conn.streams.get_mut(id) {
                st.reset(Reset {
                    at,
                    by: side,
                    code: None,
                });
            }
        }
    }

    /// What was learnt, ending the tracker. Field sections still waiting
    /// for the encoder stream are decoded with what it delivered.
    pub fn finish(mut self) -> H3Summary {
        for side in [Side::Client, Side::Server] {
            unblock(&mut self.conn, side, true);
        }
        let mut sum = self.conn.sum;
        sum.streams = self.conn.streams.into_vec();
        sum.streams.sort_by_key(|s| s.id);
        sum
    }
}

/// The stream direction cannot be followed any further.
fn abandon(dir: &mut Dir, conn: &mut Conn, id: u64, side: Side) {
    dir.stopped = true;
    match dir.kind {
        Kind::Request => conn.mark_incomplete(id),
        Kind::Encoder => {
            conn.tables[side.index()].set_lost();
            unblock(conn, side, false);
        }
        _ => {}
    }
}

/// All of a stream direction's bytes were delivered (FIN).
fn end_of_stream(dir: &mut Dir, conn: &mut Conn, id: u64, side: Side, at: FrameRef) {
    if dir.inside_frame() && !dir.stopped {
        let offset = dir.reasm.next;
        conn.note(
            side,
            offset,
            NoteKind::Malformed {
                what: "stream ends inside an HTTP/3 frame",
            },
        );
        if matches!(dir.kind, Kind::Request) {
            conn.mark_incomplete(id);
        }
    }
    match dir.kind {
        Kind::Request => {
            if let Some(st) = conn.stream_mut(id) {
                st.end(side, at);
            }
        }
        // closing a critical stream is a connection error (RFC 9114
        // §6.2.1, RFC 9204 §4.2)
        Kind::Control { .. } | Kind::Encoder => conn.note(
            side,
            dir.reasm.next,
            NoteKind::Malformed {
                what: "control or QPACK encoder stream closed",
            },
        ),
        _ => {}
    }
}

/// Reads in-order bytes `data` of a stream direction, at stream `offset`.
fn walk(
    dir: &mut Dir,
    conn: &mut Conn,
    id: u64,
    side: Side,
    mut data: &[u8],
    offset: u64,
    at: FrameRef,
) {
    while !data.is_empty() && !dir.stopped {
        match &mut dir.kind {
            Kind::UniType { buf, have } => {
                // the stream type, a varint (RFC 9114 §6.2)
                let need = if *have == 0 {
                    1
                } else {
                    1usize << (buf[0] >> 6)
                };
                let n = (need - *have).min(data.len());
                buf[*have..*have + n].copy_from_slice(&data[..n]);
                *have += n;
                data = &data[n..];
                if *have < 1usize << (buf[0] >> 6) {
                    continue;
                }
                let Some((t, _)) = varint::read(&buf[..*have]) else {
                    continue;
                };
                let s = side.index();
                dir.kind = match t {
                    stream_ty::CONTROL if !conn.control_seen[s] => {
                        conn.control_seen[s] = true;
                        Kind::Control { settings: false }
                    }
                    stream_ty::ENCODER if !conn.encoder_seen[s] => {
                        conn.encoder_seen[s] = true;
                        Kind::Encoder
                    }
                    stream_ty::CONTROL | stream_ty::ENCODER => {
                        conn.note(
                            side,
                            offset,
                            NoteKind::Malformed {
                                what: "second control or QPACK encoder stream",
                            },
                        );
                        Kind::Ignored
                    }
                    stream_ty::PUSH | stream_ty::DECODER => Kind::Ignored,
                    // reserved (0x1f * N + 0x21) and unknown types are
                    // ignored (RFC 9114 §6.2, §9)
                    _ => Kind::Ignored,
                };
            }
            Kind::Encoder => {
                let s = side.index();
                let table = &mut conn.tables[s];
                if let Err(what) = table.feed(data, &mut conn.huff) {
                    conn.note(side, offset, NoteKind::Unparsed { what });
                    dir.stopped = true;
                }
                unblock(conn, side, false);
                data = &[];
            }
            Kind::Ignored => data = &[],
            Kind::Request | Kind::Control { .. } => {
                if dir.cur.is_none() {
                    if let Some((t, len)) = dir.take_header(&mut data) {
                        begin_frame(dir, conn, id, side, t, len, offset, at);
                    }
                    continue;
                }
                let Some(cur) = dir.cur.as_mut() else { break };
                let n = usize::try_from(cur.left)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                let (body, rest) = data.split_at(n);
                data = rest;
                cur.left -= n as u64;
                if let Some(buf) = cur.buf.as_mut() {
                    buf.extend_from_slice(body);
                }
                if cur.ty == ty::DATA && matches!(dir.kind, Kind::Request) && n > 0 {
                    on_data(conn, id, side, n, at);
                }
                if cur.left == 0 {
                    end_frame(dir, conn, id, side, offset, at);
                }
            }
        }
    }
}

/// A frame header was read on a request or control stream.
#[allow(clippy::too_many_arguments)]
fn begin_frame(
    dir: &mut Dir,
    conn: &mut Conn,
    id: u64,
    side: Side,
    t: u64,
    len: u64,
    offset: u64,
    at: FrameRef,
) {
    let malformed = |what| NoteKind::Malformed { what };
    if let (Some(v), Kind::Request | Kind::Control { .. }) = (&mut conn.frames, &dir.kind) {
        v.push(H3FrameRec {
            at,
            side,
            stream: id,
            ty: t,
            len,
        });
    }
    let read = match &mut dir.kind {
        Kind::Request => match t {
            ty::HEADERS if len > PARSE_BUFFER_CAP as u64 => {
                conn.note(
                    side,
                    offset,
                    NoteKind::TooLarge {
                        what: "HTTP/3 HEADERS frame",
                        len,
                    },
                );
                conn.sum.undecoded_sections += 1;
                false
            }
            ty::HEADERS => true,
            ty::CANCEL_PUSH | ty::SETTINGS | ty::GOAWAY | ty::MAX_PUSH_ID => {
                conn.note(side, offset, malformed("control frame on a request stream"));
                false
            }
            t if ty::http2_only(t) => {
                conn.note(side, offset, malformed("HTTP/2 frame type in HTTP/3"));
                false
            }
            // DATA is counted as it comes; PUSH_PROMISE, reserved
            // (0x1f * N + 0x21) and unknown types are skipped (§9)
            _ => false,
        },
        Kind::Control { settings } => {
            if !*settings && t != ty::SETTINGS {
                conn.note(
                    side,
                    offset,
                    malformed("control stream does not begin with SETTINGS"),
                );
            }
            match t {
                ty::SETTINGS | ty::GOAWAY if len > CONTROL_FRAME_CAP => {
                    conn.note(
                        side,
                        offset,
                        NoteKind::TooLarge {
                            what: "HTTP/3 control frame",
                            len,
                        },
                    );
                    *settings = true;
                    false
                }
                ty::SETTINGS if *settings => {
                    conn.note(side, offset, malformed("second SETTINGS frame"));
                    false
                }
                ty::SETTINGS => {
                    *settings = true;
                    true
                }
                ty::GOAWAY => true,
                ty::DATA | ty::HEADERS | ty::PUSH_PROMISE => {
                    conn.note(
                        side,
                        offset,
                        malformed("request frame on the control stream"),
                    );
                    false
                }
                t if ty::http2_only(t) => {
                    conn.note(side, offset, malformed("HTTP/2 frame type in HTTP/3"));
                    false
                }
                _ => false,
            }
        }
        _ => false,
    };
    dir.cur = Some(Cur {
        ty: t,
        left: len,
        buf: read.then(|| Vec::with_capacity(len.min(4096) as usize)),
    });
    if len == 0 {
        end_frame(dir, conn, id, side, offset, at);
    }
}

/// DATA payload bytes of a request stream.
fn on_data(conn: &mut Conn, id: u64, side: Side, n: usize, at: FrameRef) {
    if let Some(st) = conn.stream_mut(id) {
        st.data(side, n as u64, at);
    }
}

/// A frame's last byte was read.
fn end_frame(dir: &mut Dir, conn: &mut Conn, id: u64, side: Side, offset: u64, at: FrameRef) {
    let Some(cur) = dir.cur.take() else { return };
    let Some(buf) = cur.buf else { return };
    match (&dir.kind, cur.ty) {
        (Kind::Request, ty::HEADERS) => on_headers(conn, id, side, buf, offset, at),
        (Kind::Control { .. }, ty::SETTINGS) => on_settings(conn, side, &buf, offset, at),
        (Kind::Control { .. }, ty::GOAWAY) => match varint::read(&buf) {
            Some((v, n)) if n == buf.len() => {
                conn.sum.goaway.get_or_insert((at, side, v));
            }
            _ => conn.note(
                side,
                offset,
                NoteKind::Unparsed {
                    what: "HTTP/3 GOAWAY frame",
                },
            ),
        },
        _ => {}
    }
}

/// A SETTINGS frame's payload (RFC 9114 §7.2.4).
fn on_settings(conn: &mut Conn, side: Side, buf: &[u8], offset: u64, at: FrameRef) {
    let mut s = H3Settings {
        at,
        ..H3Settings::default()
    };
    let mut c = varint::Cursor::new(buf);
    while !c.is_empty() {
        let (Some(id), Some(v)) = (c.varint(), c.varint()) else {
            conn.note(
                side,
                offset,
                NoteKind::Unparsed {
                    what: "HTTP/3 SETTINGS frame",
                },
            );
            break;
        };
        match id {
            setting::QPACK_MAX_TABLE_CAPACITY => s.qpack_max_table_capacity = Some(v),
            setting::QPACK_BLOCKED_STREAMS => s.qpack_blocked_streams = Some(v),
            setting::MAX_FIELD_SECTION_SIZE => s.max_field_section_size = Some(v),
            _ if s.other.len() < OTHER_SETTINGS_CAP => s.other.push((id, v)),
            _ => {}
        }
    }
    conn.sum.settings[side.index()].get_or_insert(s);
}

/// A request stream's HEADERS frame (RFC 9114 §4.1): timed now, decoded
/// now or once the encoder stream has delivered what it needs.
fn on_headers(conn: &mut Conn, id: u64, side: Side, buf: Vec<u8>, offset: u64, at: FrameRef) {
    if let Some(st) = conn.stream_mut(id) {
        st.headers(side, at);
    }
    let s = side.index();
    let table = &conn.tables[s];
    match qpack::prefix(&buf, table, conn.max_capacity(side)) {
        Err(what) => {
            conn.note(side, offset, NoteKind::Unparsed { what });
            conn.sum.undecoded_sections += 1;
        }
        Ok(p) => match p.required {
            Some(required)
                if required > table.inserted()
                    && !table.lost()
                    && conn.blocked[s].len() < BLOCKED_SECTION_CAP =>
            {
                conn.sum.qpack_blocked_sections += 1;
                conn.blocked[s].push(Blocked {
                    stream: id,
                    required,
                    buf,
                    at,
                });
            }
            _ => decode(conn, id, side, &buf, at),
        },
    }
}

/// Decodes the field sections of `side` waiting for inserts the encoder
/// stream has now delivered (all of them if `all`).
fn unblock(conn: &mut Conn, side: Side, all: bool) {
    let s = side.index();
    let table = &conn.tables[s];
    let (inserted, lost) = (table.inserted(), table.lost());
    if conn.blocked[s].is_empty() {
        return;
    }
    let waiting = std::mem::take(&mut conn.blocked[s]);
    for b in waiting {
        if all || lost || b.required <= inserted {
            decode(conn, b.stream, side, &b.buf, b.at);
        } else {
            conn.blocked[s].push(b);
        }
    }
}

/// Decodes one field section of `side` on stream `id`, delivered by `at`,
/// and records what it says.
fn decode(conn: &mut Conn, id: u64, side: Side, buf: &[u8], at: FrameRef) {
    let max = conn.max_capacity(side);
    let mut got: Vec<(Header, String)> = Vec::new();
    let mut timing: Vec<Vec<u8>> = Vec::new();
    let r = qpack::decode_section(
        buf,
        &conn.tables[side.index()],
        max,
        &mut conn.huff,
        |(n, v)| {
            if let (Some(h), Some(v)) = (n.and_then(Header::of), v) {
                got.push((h, Header::value(v)));
            } else if let (Some(server_timing::FIELD), Some(v), Side::Server) = (n, v, side) {
                timing.push(v.to_vec());
            }
        },
    );
    match r {
        Ok(d) => {
            conn.sum.qpack_resolved += d.resolved;
            conn.sum.qpack_unresolved += d.unresolved;
        }
        Err(what) => {
            conn.note(side, 0, NoteKind::Unparsed { what });
            conn.sum.undecoded_sections += 1;
        }
    }
    let Some(st) = conn.stream_mut(id) else {
        return;
    };
    for v in timing {
        st.server_timing(&v, at);
    }
    for (h, v) in got {
        st.field(h, v);
    }
}

#[cfg(test)]
mod tests;
