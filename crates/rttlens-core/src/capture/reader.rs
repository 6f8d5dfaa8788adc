//! [`CaptureReader`]: format detection and the frame loop.
//!
//! pcap-parser's own `PcapNGReader`/`LegacyPcapReader` are not used: their
//! constructor needs the whole file header from a single `read()` call (a
//! pipe or a gzip stream may return less), their errors borrow the buffer,
//! and an `Incomplete` from *inside* a complete pcapng block is
//! indistinguishable from "read more". The format modules frame records
//! themselves (block lengths, pcap record headers) in the [`Input`]'s
//! buffer and hand each complete record to pcap-parser's parsing functions;
//! this module owns the input and the format state and dispatches.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

use super::input::{Input, Record, RecordMeta};
use super::keylog::{KeyLog, KeyStore};
use super::pcap::PcapState;
use super::pcapng::{NgState, NG_SHB_MAGIC};
use super::{CaptureBytes, CaptureError, CaptureFormat, CaptureNotes, Frame, SharedFrame};
use crate::base::time::Timestamp;

/// Reads frames from a pcap or pcapng capture, optionally gzip'd.
///
/// Memory is bounded: one buffer of 1 MiB (starting at 64 KiB) that grows
/// further only when a single record does not fit (up to 64 MiB; a longer
/// record is [`CaptureError::Malformed`]). A capture already in memory
/// ([`from_bytes`](Self::from_bytes): a mapped file) is read in place,
/// without that buffer or a copy.
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
    /// The byte source, its buffer and the per-record bookkeeping.
    input: Input,
    format: Format,
    /// An error or the end of input was reported: return `None` from now on.
    finished: bool,
    /// A record read ahead by [`peek_ts`](Self::peek_ts), not yet returned.
    loaded: Option<RecordMeta>,
    /// The record of the frame returned last (its bytes are at the front
    /// of `input.buf.data()` until the next call).
    last: Option<RecordMeta>,
}

/// The container format and the state its reading needs.
enum Format {
    /// Classic pcap, with what its file header said.
    Pcap(PcapState),
    /// pcapng, with the current section's state.
    PcapNg(NgState),
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
        CaptureReader::start(Input::new(reader)?)
    }

    /// Starts reading a whole capture in memory, in place: the frames are
    /// the bytes of `bytes` (no copy), and they and every error, note and
    /// [`bytes_read`](Self::bytes_read) are those [`new`](Self::new) gives
    /// for the same bytes. A gzip'd capture is decompressed as a stream.
    ///
    /// # Errors
    ///
    /// As [`CaptureReader::new`].
    pub fn from_bytes(bytes: Arc<dyn CaptureBytes>) -> Result<CaptureReader, CaptureError> {
        CaptureReader::start(Input::from_bytes(bytes)?)
    }

    fn start(input: Input) -> Result<CaptureReader, CaptureError> {
        let mut reader = CaptureReader {
            input,
            format: Format::PcapNg(NgState::default()),
            finished: false,
            loaded: None,
            last: None,
        };
        reader.detect()?;
        Ok(reader)
    }

    /// Reads the magic number and the file header.
    fn detect(&mut self) -> Result<(), CaptureError> {
        if !self.input.fill(4)? {
            let avail = self.input.buf.data();
            if avail.is_empty() {
                return Err(CaptureError::Empty);
            }
            let mut magic = [0u8; 4];
            for (m, b) in magic.iter_mut().zip(avail) {
                *m = *b;
            }
            return Err(CaptureError::NotACapture { magic });
        }
        let magic = match self.input.buf.data().first_chunk::<4>() {
            Some(m) => *m,
            None => return Err(CaptureError::Truncated { offset: 0 }),
        };
        if u32::from_le_bytes(magic) == NG_SHB_MAGIC {
            self.format = Format::PcapNg(NgState::default());
            // The first block must be a section header; read it now so that
            // a broken one is reported by `new`.
            match self.read_pcapng_record()? {
                Record::Skipped => {
                    self.input.consume_pending();
                    Ok(())
                }
                Record::Packet(_) | Record::End => Err(CaptureError::Truncated { offset: 0 }),
            }
        } else if let Some(state) = PcapState::from_magic(magic) {
            let header_len = state.header_len();
            if !self.input.fill(header_len)? {
                return Err(CaptureError::Truncated { offset: 0 });
            }
            let state = state.read_header(self.input.buf.data())?;
            self.input.last_snaplen = state.snaplen;
            self.input.buf.consume(header_len);
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
        let data = self
            .input
            .buf
            .data()
            .get(meta.data_start..end)
            .unwrap_or(&[]);
        Some(Frame {
            number: self.input.number,
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
        Some(self.input.buf.share(meta.data_start, meta.data_len))
    }

    /// The timestamp of the frame the next [`next_frame`](Self::next_frame)
    /// will return, `None` at the end: reads that record ahead (it is then
    /// returned, not read again), so several captures can be merged in time
    /// order.
    ///
    /// # Errors
    ///
    /// As [`next_frame`](Self::next_frame).
    pub(crate) fn peek_ts(&mut self) -> Result<Option<Timestamp>, CaptureError> {
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
        self.input.consume_pending();
        let meta = loop {
            let record = match &self.format {
                Format::Pcap(_) => self.read_pcap_record(),
                Format::PcapNg(_) => self.read_pcapng_record(),
            };
            match record {
                Ok(Record::Packet(meta)) => break meta,
                Ok(Record::Skipped) => self.input.consume_pending(),
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
        if let Some(last) = self.input.last_ts {
            if meta.ts < last {
                self.input.notes.ts_backwards += 1;
            }
        }
        self.input.last_ts = Some(meta.ts);
        if (meta.data_len as u64) < u64::from(meta.orig_len) {
            self.input.notes.cut_by_snaplen += 1;
        } else if (meta.data_len as u64) > u64::from(meta.orig_len) {
            self.input.notes.caplen_above_orig_len += 1;
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
        self.input.is_gzip()
    }

    /// Whether the frames are read in place from a capture in memory
    /// ([`from_bytes`](Self::from_bytes), not gzip'd).
    pub fn in_place(&self) -> bool {
        self.input.is_whole()
    }

    /// Bytes consumed so far from the underlying input (compressed bytes for
    /// a gzip file), for a progress bar. Runs ahead of the frames returned by
    /// up to one buffer.
    pub fn bytes_read(&self) -> u64 {
        self.input.bytes_read()
    }

    /// The last frame number given out so far (counting skipped records and
    /// the non-packet blocks Wireshark numbers).
    pub fn frames_seen(&self) -> u64 {
        self.input.number
    }

    /// Snapshot length that applied to the last frame returned (pcap: the
    /// file header's; pcapng: its interface's), `None` when unknown or 0.
    pub fn snaplen(&self) -> Option<u32> {
        (self.input.last_snaplen != 0).then_some(self.input.last_snaplen)
    }

    /// Capture-quality notes counted so far.
    pub fn notes(&self) -> CaptureNotes {
        self.input.notes
    }

    /// The TLS secrets of the Decryption Secrets Blocks read so far (pcapng;
    /// a writer puts them before the packets they decrypt).
    pub fn key_log(&self) -> KeyLog {
        self.input.key_log.snapshot()
    }

    /// The store this reader adds its Decryption Secrets Blocks to (shared:
    /// what is added later shows through).
    pub fn key_store(&self) -> KeyStore {
        self.input.key_log.clone()
    }

    /// Adds this reader's Decryption Secrets Blocks to `store` from now on
    /// (those read so far are copied into it), so that several files and
    /// `--keylog` files share one store.
    pub fn share_key_store(&mut self, store: &KeyStore) {
        if !self.input.key_log.same(store) {
            let mine = std::mem::replace(&mut self.input.key_log, store.clone());
            store.merge(&mine.snapshot());
        }
    }

    fn read_pcap_record(&mut self) -> Result<Record, CaptureError> {
        match &self.format {
            Format::Pcap(state) => state.read_record(&mut self.input),
            Format::PcapNg(_) => Ok(Record::End),
        }
    }

    fn read_pcapng_record(&mut self) -> Result<Record, CaptureError> {
        match &mut self.format {
            Format::PcapNg(state) => state.read_block(&mut self.input),
            Format::Pcap(_) => Ok(Record::End),
        }
    }
}

impl std::fmt::Debug for CaptureReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureReader")
            .field("format", &self.format())
            .field("gzip", &self.input.is_gzip())
            .field("in_place", &self.input.is_whole())
            .field("frames_seen", &self.input.number)
            .field("bytes_read", &self.bytes_read())
            .field("notes", &self.input.notes)
            .finish_non_exhaustive()
    }
}
