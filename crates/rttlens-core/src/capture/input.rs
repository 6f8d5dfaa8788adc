//! [`Input`]: the byte source of a capture, the record buffer, and the
//! per-record bookkeeping the format modules update.
//!
//! The format modules (`pcap`, `pcapng`) frame and parse records in the
//! buffer of an [`Input`]; the reader owns one and dispatches to the format.
//!
//! The bytes come from a stream (`read` into a chunk of memory: a file,
//! stdin, a pipe, a gzip decoder) or from a whole capture already in memory
//! ([`CaptureBytes`]: a file the caller mapped). A whole capture is read in
//! place, without a copy; its window over the bytes moves in the very steps
//! a stream's buffer would (the same sizes, the same compactions), so every
//! record, error and [`Input::bytes_read`] is the one the stream gives.

use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use flate2::read::MultiGzDecoder;

use super::keylog::KeyStore;
use super::{CaptureBytes, CaptureError, CaptureNotes, Chunk, LinkType, SharedFrame};
use crate::base::time::Timestamp;

/// Initial size of the record buffer: small, so that opening a tiny input
/// (a test, a fuzz case) costs little.
const INITIAL_BUFFER: usize = 64 << 10;
/// Size the buffer doubles up to while the input keeps it full, so that
/// reads and compactions are rare.
const STEADY_BUFFER: usize = 1 << 20;

/// The largest record (pcap record header + data, or pcapng block) the reader
/// accepts. Real packets are at most 256 KiB (Wireshark's limit); anything
/// larger than this is taken as a corrupt length field.
pub(super) const MAX_RECORD: usize = 64 << 20;

/// A whole capture in memory gives back its pages this far behind the
/// reader ([`CaptureBytes::release_before`]): the frames handed to other
/// threads (a few batches of 1 MiB) are read well within it.
const KEEP_BEHIND: usize = 4 << 20;
/// …in steps of this many bytes.
const RELEASE_STEP: usize = 1 << 20;

/// The input of a capture: the (possibly decompressed) byte stream, the
/// buffer of its unconsumed bytes, and what the records read so far left
/// behind (frame number, last timestamp, notes, snapshot length).
pub(super) struct Input {
    src: Box<dyn Read + Send>,
    /// Compressed bytes read from the underlying input (shared with the
    /// [`Counting`] wrapper below any decompressor).
    raw_count: Arc<AtomicU64>,
    gzip: bool,
    /// The unconsumed bytes.
    pub(super) buf: RecordBuffer,
    /// Bytes of the current record still to be consumed by the next call.
    pending: usize,
    /// Number of the last packet record seen.
    pub(super) number: u64,
    /// Timestamp of the last frame returned.
    pub(super) last_ts: Option<Timestamp>,
    /// Capture-quality notes counted so far.
    pub(super) notes: CaptureNotes,
    /// TLS secrets of the pcapng Decryption Secrets Blocks read so far.
    pub(super) key_log: KeyStore,
    /// Snapshot length that applied to the last frame (0 = unknown).
    pub(super) last_snaplen: u32,
}

impl Input {
    /// Starts reading `reader`: sniffs its first bytes for the gzip magic
    /// and puts a decompressor in front when it is there; the sniffed bytes
    /// are not lost.
    ///
    /// # Errors
    ///
    /// [`CaptureError::Io`] when the first read fails.
    pub(super) fn new(reader: Box<dyn Read + Send>) -> Result<Input, CaptureError> {
        let raw_count = Arc::new(AtomicU64::new(0));
        let mut counting = Counting {
            inner: reader,
            count: Arc::clone(&raw_count),
        };
        let mut head = [0u8; 4];
        let n = read_up_to(&mut counting, &mut head)?;
        let head = head.get(..n).unwrap_or(&[]);
        let gzip = head.starts_with(&[0x1f, 0x8b]);
        let mut buf = RecordBuffer::new();
        let src: Box<dyn Read + Send> = if gzip {
            let replay = io::Cursor::new(head.to_vec()).chain(counting);
            Box::new(MultiGzDecoder::new(replay))
        } else {
            buf.preload(head);
            Box::new(counting)
        };
        Ok(Input::with(src, raw_count, gzip, buf))
    }

    /// Starts reading a whole capture in place. A gzip'd one is
    /// decompressed as a stream (through [`Input::new`]).
    pub(super) fn from_bytes(bytes: Arc<dyn CaptureBytes>) -> Result<Input, CaptureError> {
        if bytes.bytes().starts_with(&[0x1f, 0x8b]) {
            return Input::new(Box::new(WholeReader { bytes, pos: 0 }));
        }
        let buf = RecordBuffer::whole(bytes);
        Ok(Input::with(
            Box::new(io::empty()),
            Arc::new(AtomicU64::new(0)),
            false,
            buf,
        ))
    }

    fn with(
        src: Box<dyn Read + Send>,
        raw_count: Arc<AtomicU64>,
        gzip: bool,
        buf: RecordBuffer,
    ) -> Input {
        Input {
            src,
            raw_count,
            gzip,
            buf,
            pending: 0,
            number: 0,
            last_ts: None,
            notes: CaptureNotes::default(),
            key_log: KeyStore::default(),
            last_snaplen: 0,
        }
    }

    /// Whether the input is gzip-compressed.
    pub(super) fn is_gzip(&self) -> bool {
        self.gzip
    }

    /// Bytes consumed so far from the underlying input (compressed bytes for
    /// a gzip file; for a whole capture, those a stream would have read).
    pub(super) fn bytes_read(&self) -> u64 {
        match self.buf.whole_read() {
            Some(n) => n,
            None => self.raw_count.load(Ordering::Relaxed),
        }
    }

    /// Whether the bytes are read in place ([`Input::from_bytes`], not
    /// gzip'd).
    pub(super) fn is_whole(&self) -> bool {
        self.buf.whole_read().is_some()
    }

    /// Consumes the record returned or skipped by the previous step.
    pub(super) fn consume_pending(&mut self) {
        let n = std::mem::take(&mut self.pending);
        self.buf.consume(n);
    }

    /// Marks `len` bytes at the front of the buffer as the current record.
    pub(super) fn set_pending(&mut self, len: usize) {
        self.pending = len;
        self.buf.touch_ahead(len);
    }

    /// Offset in the (decompressed) stream of the first unconsumed byte.
    pub(super) fn offset(&self) -> u64 {
        self.buf.offset
    }

    /// Makes sure at least `need` unconsumed bytes are buffered. Returns
    /// `false` when the input ends first.
    pub(super) fn fill(&mut self, need: usize) -> Result<bool, CaptureError> {
        match self.buf.fill(&mut self.src, need, self.gzip) {
            Ok(ok) => Ok(ok),
            Err(e) if self.gzip && is_corrupt_data(&e) => Err(CaptureError::Gzip {
                offset: self.buf.offset + self.buf.data().len() as u64,
                error: e,
            }),
            Err(e) => Err(CaptureError::Io(e)),
        }
    }
}

/// Where a record's packet bytes are, as offsets into the buffer's
/// unconsumed data, plus the frame's metadata.
#[derive(Clone, Copy)]
pub(super) struct RecordMeta {
    /// Total length of the record (header, data, padding, trailer).
    pub(crate) record_len: usize,
    /// Offset of the packet bytes from the start of the record.
    pub(crate) data_start: usize,
    /// Captured length.
    pub(crate) data_len: usize,
    /// Capture timestamp.
    pub(crate) ts: Timestamp,
    /// Link-layer header type of the frame's interface.
    pub(crate) link_type: LinkType,
    /// Length of the packet on the wire.
    pub(crate) orig_len: u32,
}

/// What reading one record produced.
pub(super) enum Record {
    /// A packet to return.
    Packet(RecordMeta),
    /// A record that was consumed without producing a frame (a non-packet
    /// block, or a packet block that had to be skipped).
    Skipped,
    /// Clean end of input at a record boundary.
    End,
}

/// Whether an I/O error from the gzip decoder means corrupt compressed data
/// (rather than a failing underlying read).
fn is_corrupt_data(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData
    )
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while let Some(space) = buf.get_mut(n..).filter(|s| !s.is_empty()) {
        match r.read(space) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A whole capture read as a stream (a gzip'd one, for the decoder).
struct WholeReader {
    bytes: Arc<dyn CaptureBytes>,
    pos: usize,
}

impl Read for WholeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let rest = self.bytes.bytes().get(self.pos..).unwrap_or(&[]);
        let n = rest.len().min(buf.len());
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), rest.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.pos += n;
        Ok(n)
    }
}

/// Counts the bytes read through it (for [`Input::bytes_read`]).
struct Counting {
    inner: Box<dyn Read + Send>,
    count: Arc<AtomicU64>,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A byte buffer holding the unconsumed part of the input: `buf[start..end]`
/// of a window `cap` bytes long.
///
/// A stream's bytes live in a reference-counted chunk so that the frames in
/// it can be handed to other threads without a copy ([`RecordBuffer::share`]):
/// a chunk that others still hold is never written again; reading goes on
/// in another chunk (a free one from `spare`, else a new one), into which
/// only the unconsumed bytes (part of one record) are copied, at the same
/// place.
///
/// A whole capture ([`CaptureBytes`]) is its own chunk: the window is
/// `bytes[base..base + cap]`, and reading, growing and compacting only move
/// `end`, `cap` and `base`, in the steps a stream of the same bytes takes.
pub(super) struct RecordBuffer {
    buf: Chunk,
    /// Where the window starts in a whole capture (0 for a stream).
    base: usize,
    start: usize,
    end: usize,
    /// The window's length (a stream: its chunk's).
    cap: usize,
    /// Offset in the stream of `buf[start]`.
    pub(crate) offset: u64,
    eof: bool,
    /// Chunks handed out before, reused once nobody else holds them.
    spare: Vec<Arc<Vec<u8>>>,
    /// A whole capture: the bytes before this were given back.
    released: usize,
}

/// Chunks kept for reuse (more are dropped when the threads let go of them).
const SPARE_CHUNKS: usize = 8;

impl RecordBuffer {
    fn new() -> Self {
        RecordBuffer {
            buf: Chunk::Buffer(Arc::new(vec![0; INITIAL_BUFFER])),
            base: 0,
            start: 0,
            end: 0,
            cap: INITIAL_BUFFER,
            offset: 0,
            eof: false,
            spare: Vec::new(),
            released: 0,
        }
    }

    /// A whole capture, its first bytes "read" as [`Input::new`] sniffs
    /// a stream's.
    fn whole(bytes: Arc<dyn CaptureBytes>) -> Self {
        let sniffed = bytes.bytes().len().min(4);
        RecordBuffer {
            buf: Chunk::Whole(bytes),
            base: 0,
            start: 0,
            end: sniffed,
            cap: INITIAL_BUFFER,
            offset: 0,
            eof: false,
            spare: Vec::new(),
            released: 0,
        }
    }

    /// For a whole capture, the bytes a stream would have read so far.
    fn whole_read(&self) -> Option<u64> {
        matches!(self.buf, Chunk::Whole(_)).then_some((self.base + self.end) as u64)
    }

    /// Puts bytes already read (the sniffed magic) at the front.
    fn preload(&mut self, bytes: &[u8]) {
        if let Some(dst) = self.writable().and_then(|b| b.get_mut(..bytes.len())) {
            dst.copy_from_slice(bytes);
            self.start = 0;
            self.end = bytes.len();
        }
    }

    /// The unconsumed bytes.
    pub(crate) fn data(&self) -> &[u8] {
        self.buf
            .bytes()
            .get(self.base + self.start..self.base + self.end)
            .unwrap_or(&[])
    }

    /// The chunk and the absolute range of `data()[from..from + len]`, for
    /// a frame handed to another thread.
    pub(crate) fn share(&self, from: usize, len: usize) -> SharedFrame<'_> {
        SharedFrame {
            chunk: &self.buf,
            start: self.base + self.start + from,
            len: len.min(self.end.saturating_sub(self.start + from)),
        }
    }

    /// The buffer to write into: this chunk when nobody else holds it,
    /// else another one holding the unconsumed bytes at the same offsets.
    /// A whole capture is never written: `None`.
    fn writable(&mut self) -> Option<&mut Vec<u8>> {
        let Chunk::Buffer(buf) = &mut self.buf else {
            return None;
        };
        if Arc::get_mut(buf).is_none() {
            let len = buf.len();
            let free = self
                .spare
                .iter()
                .position(|c| Arc::strong_count(c) == 1 && Arc::weak_count(c) == 0);
            let mut fresh = match free.map(|i| self.spare.swap_remove(i)) {
                Some(c) => Arc::try_unwrap(c).unwrap_or_else(|c| (*c).clone()),
                None => Vec::new(),
            };
            fresh.resize(len, 0);
            // the live bytes keep their place: the reads that follow are
            // those of an unshared buffer, so the input is read in the same
            // steps (and a broken file read as far) on one thread or several
            let live = self.start..self.end;
            if let (Some(dst), Some(src)) = (fresh.get_mut(live.clone()), buf.get(live)) {
                dst.copy_from_slice(src);
            }
            let old = std::mem::replace(buf, Arc::new(fresh));
            if self.spare.len() < SPARE_CHUNKS {
                self.spare.push(old);
            }
        }
        // unique now: no copy
        Some(Arc::make_mut(buf))
    }

    /// A whole capture: asks for the bytes just past the current record
    /// (the next record's header and the packet headers after it) to be
    /// brought into the CPU's cache while this one is processed
    /// ([`CaptureBytes::prefetch`]).
    fn touch_ahead(&self, len: usize) {
        if let Chunk::Whole(bytes) = &self.buf {
            bytes.prefetch(self.base + self.start + len);
        }
    }

    /// Drops `n` bytes from the front (at most what is buffered).
    pub(crate) fn consume(&mut self, n: usize) {
        let n = n.min(self.end - self.start);
        self.start += n;
        self.offset += n as u64;
        let whole = matches!(self.buf, Chunk::Whole(_));
        if self.start == self.end {
            if whole {
                self.base += self.start;
            }
            self.start = 0;
            self.end = 0;
        }
        if let Chunk::Whole(bytes) = &self.buf {
            let at = self.base + self.start;
            if at >= self.released + KEEP_BEHIND + RELEASE_STEP {
                self.released = at - KEEP_BEHIND;
                bytes.release_before(self.released);
            }
        }
    }

    /// Reads until `need` bytes are buffered or the input ends.
    ///
    /// When the tail is full the buffer doubles up to 1 MiB; beyond that it
    /// is compacted, and grown (doubling, capped at `need`) only when the
    /// unconsumed data fills the whole buffer, so a bogus length field costs
    /// memory only as data arrives. A whole capture's window takes the same
    /// steps, without allocating or copying.
    fn fill(&mut self, src: &mut dyn Read, need: usize, gzip: bool) -> io::Result<bool> {
        loop {
            if self.end - self.start >= need {
                return Ok(true);
            }
            if self.eof {
                return Ok(false);
            }
            if let Chunk::Whole(bytes) = &self.buf {
                let total = bytes.bytes().len();
                if self.end == self.cap {
                    self.make_room(need);
                }
                // a regular file's read(2) fills the space or reaches the end
                let n = (self.cap - self.end).min(total.saturating_sub(self.base + self.end));
                if n == 0 {
                    self.eof = true;
                }
                self.end += n;
                continue;
            }
            if self.end == self.cap {
                self.make_room(need);
            }
            let end = self.end;
            let Some(buf) = self.writable() else {
                return Ok(false);
            };
            let Some(space) = buf.get_mut(end..) else {
                return Ok(false);
            };
            match src.read(space) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n.min(space.len()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // A gzip stream cut short is a truncated capture, not a
                // broken one: the record parser reports where it ended.
                Err(e) if gzip && e.kind() == io::ErrorKind::UnexpectedEof => self.eof = true,
                Err(e) => return Err(e),
            }
        }
    }

    /// The window is full: it doubles up to 1 MiB; beyond that it is
    /// compacted, or grown (doubling, capped at `need`) when the unconsumed
    /// data fills it all. A stream's chunk follows; a whole capture only
    /// moves its window.
    fn make_room(&mut self, need: usize) {
        let (start, end) = (self.start, self.end);
        let compact = self.cap >= STEADY_BUFFER && start > 0;
        let cap = if compact {
            self.cap
        } else if self.cap < STEADY_BUFFER {
            (self.cap * 2).clamp(1, STEADY_BUFFER)
        } else {
            let len = self.cap.max(1);
            len.saturating_mul(2).min(need).max(len + 1)
        };
        match self.writable() {
            Some(buf) if compact => buf.copy_within(start..end, 0),
            Some(buf) => buf.resize(cap, 0),
            None if compact => self.base += start,
            None => {}
        }
        if compact {
            self.end -= start;
            self.start = 0;
        }
        self.cap = cap;
    }
}
