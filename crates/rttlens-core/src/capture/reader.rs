//! [`CaptureReader`]: format detection, the record buffer, and the frame loop.
//!
//! pcap-parser's own `PcapNGReader`/`LegacyPcapReader` are not used: their
//! constructor needs the whole file header from a single `read()` call (a
//! pipe or a gzip stream may return less), their errors borrow the buffer,
//! and an `Incomplete` from *inside* a complete pcapng block is
//! indistinguishable from "read more". This module frames records itself
//! (block lengths, pcap record headers) and hands each complete record to
//! pcap-parser's parsing functions.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use flate2::read::MultiGzDecoder;

use super::pcap::PcapState;
use super::pcapng::{NgState, NG_SHB_MAGIC};
use super::{CaptureError, CaptureFormat, CaptureNotes, Frame, LinkType, SharedFrame};
use crate::time::Timestamp;

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

/// Reads frames from a pcap or pcapng capture, optionally gzip'd.
///
/// Memory is bounded: one buffer of 1 MiB (starting at 64 KiB) that grows
/// further only when a single record does not fit (up to 64 MiB; a longer
/// record is [`CaptureError::Malformed`]).
///
/// ```no_run
/// # fn main() -> Result<(), rttlens_core::capture::CaptureError> {
/// use rttlens_core::capture::CaptureReader;
/// let mut reader = CaptureReader::open(std::path::Path::new("trace.pcapng.gz"))?;
/// while let Some(frame) = reader.next_frame()? {
///     println!("{} {} bytes", frame.number, frame.data.len());
/// }
/// # Ok(()) }
/// ```
pub struct CaptureReader {
    src: Box<dyn Read + Send>,
    /// Compressed bytes read from the underlying input (shared with the
    /// [`Counting`] wrapper below any decompressor).
    raw_count: Arc<AtomicU64>,
    gzip: bool,
    pub(super) buf: RecordBuffer,
    format: Format,
    /// Bytes of the current record still to be consumed by the next call.
    pending: usize,
    /// Number of the last packet record seen.
    pub(super) number: u64,
    /// Timestamp of the last frame returned.
    pub(super) last_ts: Option<Timestamp>,
    pub(super) notes: CaptureNotes,
    /// Snapshot length that applied to the last frame (0 = unknown).
    pub(super) last_snaplen: u32,
    /// An error or the end of input was reported: return `None` from now on.
    finished: bool,
    /// A record read ahead by [`peek_ts`](Self::peek_ts), not yet returned.
    loaded: Option<RecordMeta>,
    /// The record of the frame returned last (its bytes are at the front
    /// of `buf.data()` until the next call).
    last: Option<RecordMeta>,
}

enum Format {
    Pcap(PcapState),
    PcapNg(NgState),
}

/// Where a record's packet bytes are, as offsets into the buffer's
/// unconsumed data, plus the frame's metadata.
#[derive(Clone, Copy)]
pub(super) struct RecordMeta {
    /// Total length of the record (header, data, padding, trailer).
    pub record_len: usize,
    /// Offset of the packet bytes from the start of the record.
    pub data_start: usize,
    /// Captured length.
    pub data_len: usize,
    pub ts: Timestamp,
    pub link_type: LinkType,
    pub orig_len: u32,
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

impl CaptureReader {
    /// Opens the capture at `path`; `-` reads standard input. gzip is
    /// detected by its magic bytes and decompressed transparently.
    ///
    /// # Errors
    ///
    /// [`CaptureError::Io`] when the file cannot be opened or read, and any
    /// error of [`CaptureReader::new`].
    pub fn open(path: &Path) -> Result<CaptureReader, CaptureError> {
        if path.as_os_str() == "-" {
            CaptureReader::new(Box::new(io::stdin()))
        } else {
            CaptureReader::new(Box::new(File::open(path)?))
        }
    }

    /// Starts reading a capture from `reader`. The file header (pcap) or
    /// first section header (pcapng) is read and checked before this returns,
    /// so [`format`](Self::format) is known.
    ///
    /// # Errors
    ///
    /// - [`CaptureError::Empty`]: the input has no bytes.
    /// - [`CaptureError::NotACapture`]: the first bytes are not a pcap,
    ///   pcapng or gzip magic number.
    /// - [`CaptureError::Truncated`]: the input ends inside the file header.
    /// - [`CaptureError::Malformed`]: the pcapng section header is broken.
    /// - [`CaptureError::Gzip`], [`CaptureError::Io`]: reading failed.
    pub fn new(reader: Box<dyn Read + Send>) -> Result<CaptureReader, CaptureError> {
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
        let mut reader = CaptureReader {
            src,
            raw_count,
            gzip,
            buf,
            format: Format::PcapNg(NgState::default()),
            pending: 0,
            number: 0,
            last_ts: None,
            notes: CaptureNotes::default(),
            last_snaplen: 0,
            finished: false,
            loaded: None,
            last: None,
        };
        reader.detect()?;
        Ok(reader)
    }

    /// Reads the magic number and the file header.
    fn detect(&mut self) -> Result<(), CaptureError> {
        if !self.fill(4)? {
            let avail = self.buf.data();
            if avail.is_empty() {
                return Err(CaptureError::Empty);
            }
            let mut magic = [0u8; 4];
            for (m, b) in magic.iter_mut().zip(avail) {
                *m = *b;
            }
            return Err(CaptureError::NotACapture { magic });
        }
        let magic = match self.buf.data().first_chunk::<4>() {
            Some(m) => *m,
            None => return Err(CaptureError::Truncated { offset: 0 }),
        };
        if u32::from_le_bytes(magic) == NG_SHB_MAGIC {
            self.format = Format::PcapNg(NgState::default());
            // The first block must be a section header; read it now so that
            // a broken one is reported by `new`.
            match self.read_pcapng_record()? {
                Record::Skipped => {
                    self.consume_pending();
                    Ok(())
                }
                Record::Packet(_) | Record::End => Err(CaptureError::Truncated { offset: 0 }),
            }
        } else if let Some(state) = PcapState::from_magic(magic) {
            let header_len = state.header_len();
            if !self.fill(header_len)? {
                return Err(CaptureError::Truncated { offset: 0 });
            }
            let state = state.read_header(self.buf.data())?;
            self.last_snaplen = state.snaplen;
            self.buf.consume(header_len);
            self.format = Format::Pcap(state);
            Ok(())
        } else {
            Err(CaptureError::NotACapture { magic })
        }
    }

    /// The next frame, or `None` at the end of the capture.
    ///
    /// The returned frame borrows the reader's buffer; its record is consumed
    /// by the next call.
    ///
    /// # Errors
    ///
    /// [`CaptureError::Truncated`] after the last complete record when the
    /// input ends inside a record; [`CaptureError::Malformed`] when the
    /// container structure is broken; [`CaptureError::Gzip`] and
    /// [`CaptureError::Io`] when reading fails. After any error, and after
    /// the end, every further call returns `Ok(None)`.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        let meta = match self.loaded.take() {
            Some(meta) => meta,
            None => match self.load()? {
                Some(meta) => meta,
                None => return Ok(None),
            },
        };
        self.last = Some(meta);
        Ok(self.last_frame())
    }

    /// The frame returned last, again.
    fn last_frame(&self) -> Option<Frame<'_>> {
        let meta = self.last.as_ref()?;
        let end = meta.data_start.saturating_add(meta.data_len);
        let data = self.buf.data().get(meta.data_start..end).unwrap_or(&[]);
        Some(Frame {
            number: self.number,
            ts: meta.ts,
            link_type: meta.link_type,
            data,
            orig_len: meta.orig_len,
        })
    }

    /// [`next_frame`](Self::next_frame), with its bytes also as a
    /// [`SharedFrame`] of the reader's buffer (the parallel pipeline hands
    /// them to another thread without a copy; the reader then goes on in
    /// another buffer).
    ///
    /// # Errors
    ///
    /// As [`next_frame`](Self::next_frame).
    pub fn next_shared(&mut self) -> Result<Option<(Frame<'_>, SharedFrame<'_>)>, CaptureError> {
        if self.next_frame()?.is_none() {
            return Ok(None);
        }
        let this: &CaptureReader = self;
        Ok(this.last_frame().zip(this.shared_frame()))
    }

    /// The bytes of the frame returned last, as a share of the buffer.
    fn shared_frame(&self) -> Option<SharedFrame<'_>> {
        let meta = self.last.as_ref()?;
        Some(self.buf.share(meta.data_start, meta.data_len))
    }

    /// The timestamp of the frame the next [`next_frame`](Self::next_frame)
    /// will return, `None` at the end: reads that record ahead (it is then
    /// returned, not read again), so several captures can be merged in time
    /// order.
    ///
    /// # Errors
    ///
    /// As [`next_frame`](Self::next_frame).
    pub fn peek_ts(&mut self) -> Result<Option<Timestamp>, CaptureError> {
        if self.loaded.is_none() {
            self.loaded = self.load()?;
        }
        Ok(self.loaded.map(|m| m.ts))
    }

    /// Reads the next packet record (consuming the one returned before)
    /// and counts its notes.
    fn load(&mut self) -> Result<Option<RecordMeta>, CaptureError> {
        if self.finished {
            return Ok(None);
        }
        self.consume_pending();
        let meta = loop {
            let record = match &self.format {
                Format::Pcap(_) => self.read_pcap_record(),
                Format::PcapNg(_) => self.read_pcapng_record(),
            };
            match record {
                Ok(Record::Packet(meta)) => break meta,
                Ok(Record::Skipped) => self.consume_pending(),
                Ok(Record::End) => {
                    self.finished = true;
                    return Ok(None);
                }
                Err(e) => {
                    self.finished = true;
                    return Err(e);
                }
            }
        };
        if let Some(last) = self.last_ts {
            if meta.ts < last {
                self.notes.ts_backwards += 1;
            }
        }
        self.last_ts = Some(meta.ts);
        if (meta.data_len as u64) < u64::from(meta.orig_len) {
            self.notes.cut_by_snaplen += 1;
        } else if (meta.data_len as u64) > u64::from(meta.orig_len) {
            self.notes.caplen_above_orig_len += 1;
        }
        Ok(Some(meta))
    }

    /// The container format.
    pub fn format(&self) -> CaptureFormat {
        match &self.format {
            Format::Pcap(state) => state.format(),
            Format::PcapNg(_) => CaptureFormat::PcapNg,
        }
    }

    /// Whether the input is gzip-compressed.
    pub fn is_gzip(&self) -> bool {
        self.gzip
    }

    /// Bytes consumed so far from the underlying input (compressed bytes for
    /// a gzip file), for a progress bar. Runs ahead of the frames returned by
    /// up to one buffer.
    pub fn bytes_read(&self) -> u64 {
        self.raw_count.load(Ordering::Relaxed)
    }

    /// The last frame number given out so far (counting skipped records and
    /// the non-packet blocks Wireshark numbers).
    pub fn frames_seen(&self) -> u64 {
        self.number
    }

    /// Snapshot length that applied to the last frame returned (pcap: the
    /// file header's; pcapng: its interface's), `None` when unknown or 0.
    pub fn snaplen(&self) -> Option<u32> {
        (self.last_snaplen != 0).then_some(self.last_snaplen)
    }

    /// Capture-quality notes counted so far.
    pub fn notes(&self) -> CaptureNotes {
        self.notes
    }

    /// Consumes the record returned or skipped by the previous step.
    fn consume_pending(&mut self) {
        let n = std::mem::take(&mut self.pending);
        self.buf.consume(n);
    }

    /// Marks `len` bytes at the front of the buffer as the current record.
    pub(super) fn set_pending(&mut self, len: usize) {
        self.pending = len;
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
                source: e,
            }),
            Err(e) => Err(CaptureError::Io(e)),
        }
    }

    fn state_pcap(&self) -> Option<&PcapState> {
        match &self.format {
            Format::Pcap(s) => Some(s),
            Format::PcapNg(_) => None,
        }
    }

    fn read_pcap_record(&mut self) -> Result<Record, CaptureError> {
        let Some(state) = self.state_pcap().copied() else {
            return Ok(Record::End);
        };
        state.read_record(self)
    }

    fn read_pcapng_record(&mut self) -> Result<Record, CaptureError> {
        let mut state = match &mut self.format {
            Format::PcapNg(s) => std::mem::take(s),
            Format::Pcap(_) => return Ok(Record::End),
        };
        let result = state.read_block(self);
        self.format = Format::PcapNg(state);
        result
    }
}

impl std::fmt::Debug for CaptureReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureReader")
            .field("format", &self.format())
            .field("gzip", &self.gzip)
            .field("frames_seen", &self.number)
            .field("bytes_read", &self.bytes_read())
            .field("notes", &self.notes)
            .finish_non_exhaustive()
    }
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

/// Counts the bytes read through it (for [`CaptureReader::bytes_read`]).
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

/// A byte buffer holding the unconsumed part of the input: `buf[start..end]`.
///
/// The bytes live in a reference-counted chunk so that the frames in it can
/// be handed to other threads without a copy ([`CaptureReader::shared_frame`]):
/// a chunk that others still hold is never written again; reading goes on
/// in another chunk (a free one from `spare`, else a new one), into which
/// only the unconsumed bytes (part of one record) are copied, at the same
/// place.
pub(super) struct RecordBuffer {
    buf: Arc<Vec<u8>>,
    start: usize,
    end: usize,
    /// Offset in the stream of `buf[start]`.
    pub offset: u64,
    eof: bool,
    /// Chunks handed out before, reused once nobody else holds them.
    spare: Vec<Arc<Vec<u8>>>,
}

/// Chunks kept for reuse (more are dropped when the threads let go of them).
const SPARE_CHUNKS: usize = 8;

impl RecordBuffer {
    fn new() -> Self {
        RecordBuffer {
            buf: Arc::new(vec![0; INITIAL_BUFFER]),
            start: 0,
            end: 0,
            offset: 0,
            eof: false,
            spare: Vec::new(),
        }
    }

    /// Puts bytes already read (the sniffed magic) at the front.
    fn preload(&mut self, bytes: &[u8]) {
        if let Some(dst) = self.writable().get_mut(..bytes.len()) {
            dst.copy_from_slice(bytes);
            self.start = 0;
            self.end = bytes.len();
        }
    }

    /// The unconsumed bytes.
    pub fn data(&self) -> &[u8] {
        self.buf.get(self.start..self.end).unwrap_or(&[])
    }

    /// The chunk and the absolute range of `data()[from..from + len]`, for
    /// a frame handed to another thread.
    fn share(&self, from: usize, len: usize) -> SharedFrame<'_> {
        SharedFrame {
            chunk: &self.buf,
            start: self.start + from,
            len: len.min(self.end.saturating_sub(self.start + from)),
        }
    }

    /// The buffer to write into: this chunk when nobody else holds it,
    /// else another one holding the unconsumed bytes at the same offsets.
    fn writable(&mut self) -> &mut Vec<u8> {
        if Arc::get_mut(&mut self.buf).is_none() {
            let len = self.buf.len();
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
            if let (Some(dst), Some(src)) = (fresh.get_mut(live.clone()), self.buf.get(live)) {
                dst.copy_from_slice(src);
            }
            let old = std::mem::replace(&mut self.buf, Arc::new(fresh));
            if self.spare.len() < SPARE_CHUNKS {
                self.spare.push(old);
            }
        }
        // unique now: no copy
        Arc::make_mut(&mut self.buf)
    }

    /// Drops `n` bytes from the front (at most what is buffered).
    pub fn consume(&mut self, n: usize) {
        let n = n.min(self.end - self.start);
        self.start += n;
        self.offset += n as u64;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Reads until `need` bytes are buffered or the input ends.
    ///
    /// When the tail is full the buffer doubles up to 1 MiB; beyond that it
    /// is compacted, and grown (doubling, capped at `need`) only when the
    /// unconsumed data fills the whole buffer, so a bogus length field costs
    /// memory only as data arrives.
    fn fill(&mut self, src: &mut dyn Read, need: usize, gzip: bool) -> io::Result<bool> {
        loop {
            if self.end - self.start >= need {
                return Ok(true);
            }
            if self.eof {
                return Ok(false);
            }
            // unique from here on
            self.writable();
            let buf = Arc::make_mut(&mut self.buf);
            if self.end == buf.len() {
                if buf.len() < STEADY_BUFFER {
                    let new_len = (buf.len() * 2).clamp(1, STEADY_BUFFER);
                    buf.resize(new_len, 0);
                } else if self.start > 0 {
                    buf.copy_within(self.start..self.end, 0);
                    self.end -= self.start;
                    self.start = 0;
                } else {
                    let len = buf.len().max(1);
                    let new_len = len.saturating_mul(2).min(need).max(len + 1);
                    buf.resize(new_len, 0);
                }
            }
            let Some(space) = buf.get_mut(self.end..) else {
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
}
