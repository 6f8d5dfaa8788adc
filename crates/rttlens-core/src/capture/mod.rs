//! Capture input: pcap and pcapng files read as a stream of [`Frame`]s.
//!
//! [`CaptureReader`] reads one record at a time from any [`std::io::Read`]
//! (a file, stdin, a gzip stream) through a fixed-size buffer that grows only
//! to fit one large record, so memory does not depend on the file's size;
//! or, in place, from a capture already in memory ([`CaptureBytes`]: the
//! `rttlens` binary maps regular files), with the same frames, notes and
//! errors and no copy.
//!
//! What the reader handles:
//!
//! - **pcap**: µs and ns magic, both byte orders, the "modified" (Kuznetzov)
//!   variant; records cut by the snapshot length keep their original length.
//! - **pcapng**: several sections (a new section header resets the interface
//!   list), several interfaces each with its own `if_tsresol` (power of 10 or
//!   of 2) and `if_tsoffset`, Enhanced, Simple and the obsolete Packet blocks;
//!   every other block (name resolution, statistics, decryption secrets,
//!   custom, unknown) is skipped by its length.
//! - **gzip**: recognised by its magic bytes `1f 8b` (not by the file name)
//!   and decompressed on the fly.
//!
//! Frames are numbered as Wireshark numbers them: 1-based, counting every
//! packet record (pcap record, EPB, SPB, PB), including records that had to be
//! skipped. Wireshark also gives a number to a few pcapng blocks that carry
//! no packet (custom blocks, systemd journal entries, sysdig events); they
//! take a number here too, so frame numbers can jump, but yield no
//! [`Frame`]. Other pcapng blocks take no number.
//!
//! Problems that do not stop the reading (a packet on an undescribed
//! interface, a Simple Packet Block without timestamp, a frame cut by the
//! snapshot length, …) are counted in [`CaptureNotes`]. Problems that do stop
//! it are a [`CaptureError`]; a truncated tail is reported only after every
//! complete record before it has been returned.

mod input;
pub mod keylog;
mod pcap;
mod pcapng;
mod reader;
mod set;

use std::fmt;

pub use reader::CaptureReader;
pub use set::{CaptureSet, Opener};

/// A stream of frames the pipeline reads: one capture ([`CaptureReader`])
/// or several merged in time order ([`CaptureSet`]).
pub trait FrameSource: Send {
    /// The next frame, `None` at the end. The frame borrows the source
    /// until the next call.
    ///
    /// # Errors
    ///
    /// As [`CaptureReader::next_frame`].
    fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError>;
    /// Bytes read so far from the files (compressed bytes for gzip).
    fn bytes_read(&self) -> u64;
    /// Capture-quality notes counted so far.
    fn notes(&self) -> CaptureNotes;
    /// The container format(s), e.g. `pcapng` or `pcap (µs, little-endian) (gzip)`.
    fn format_name(&self) -> String;
    /// The TLS secrets the source's Decryption Secrets Blocks add to as
    /// they are read (shared: add `--keylog` files to it before reading).
    fn key_store(&self) -> keylog::KeyStore;
    /// [`next_frame`](Self::next_frame), with the frame's bytes also shared
    /// rather than copied when the source can ([`CaptureReader::next_shared`]).
    ///
    /// # Errors
    ///
    /// As [`next_frame`](Self::next_frame).
    #[allow(clippy::type_complexity)]
    fn next_shared(
        &mut self,
    ) -> Result<Option<(Frame<'_>, Option<SharedFrame<'_>>)>, CaptureError> {
        Ok(self.next_frame()?.map(|f| (f, None)))
    }
    /// Files that broke off after their first frame, with the reason (a
    /// single capture reports its break as an error of
    /// [`next_frame`](Self::next_frame) instead).
    fn breaks(&self) -> Vec<String> {
        Vec::new()
    }
    /// Packets the kernel dropped before the source could read them (a
    /// live capture's receive buffer ran full: `tp_drops` of
    /// `PACKET_STATISTICS`, packet(7)); `None` for a file, which cannot
    /// say.
    fn kernel_drops(&self) -> Option<u64> {
        None
    }
    /// Whether the frames come live from an interface (they arrive as the
    /// traffic does): the pipeline then hands connections on by time
    /// rather than after many segments, so each is reported soon after it
    /// ends.
    fn is_live(&self) -> bool {
        false
    }
    /// [`next_frame`](Self::next_frame), or, from a live source that had
    /// no packet for a while, the time of its capture clock then
    /// ([`Next::Idle`]): the pipeline hands on the connections that are
    /// over by then, so a quiet link does not hold them back. A file has
    /// no idle time: its frames alone move its clock.
    ///
    /// # Errors
    ///
    /// As [`next_frame`](Self::next_frame).
    fn next_or_idle(&mut self) -> Result<Option<Next<'_>>, CaptureError> {
        Ok(self.next_frame()?.map(Next::Frame))
    }
}

/// What [`FrameSource::next_or_idle`] read.
#[derive(Debug)]
pub enum Next<'a> {
    /// A frame, as [`FrameSource::next_frame`] returns it.
    Frame(Frame<'a>),
    /// No packet came for a while: the capture's clock is at this time,
    /// and every frame still to come is at this time or later.
    Idle(Timestamp),
}

impl FrameSource for CaptureReader {
    fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        CaptureReader::next_frame(self)
    }
    fn bytes_read(&self) -> u64 {
        CaptureReader::bytes_read(self)
    }
    fn notes(&self) -> CaptureNotes {
        CaptureReader::notes(self)
    }
    fn next_shared(
        &mut self,
    ) -> Result<Option<(Frame<'_>, Option<SharedFrame<'_>>)>, CaptureError> {
        Ok(CaptureReader::next_shared(self)?.map(|(f, s)| (f, Some(s))))
    }
    fn format_name(&self) -> String {
        let mut s = self.format().to_string();
        if self.is_gzip() {
            s.push_str(" (gzip)");
        }
        s
    }
    fn key_store(&self) -> keylog::KeyStore {
        CaptureReader::key_store(self)
    }
}

use crate::base::time::Timestamp;

/// A link-layer header type (the `LINKTYPE_*` values of
/// <https://www.tcpdump.org/linktypes.html>), kept open: an unknown value is
/// data, printed with its number, never a parse failure.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkType(pub u32);

impl LinkType {
    /// `LINKTYPE_NULL` (0): BSD loopback, a 4-byte address family in the
    /// capturing host's byte order.
    pub const NULL: LinkType = LinkType(0);
    /// `LINKTYPE_ETHERNET` (1): Ethernet II / IEEE 802.3.
    pub const ETHERNET: LinkType = LinkType(1);
    /// `LINKTYPE_PPP` (9): PPP in HDLC-like framing.
    pub const PPP: LinkType = LinkType(9);
    /// `LINKTYPE_RAW` (101): raw IPv4 or IPv6, the version nibble decides.
    pub const RAW: LinkType = LinkType(101);
    /// `LINKTYPE_IEEE802_11` (105): 802.11 wireless without radio header.
    pub(crate) const IEEE802_11: LinkType = LinkType(105);
    /// `LINKTYPE_LOOP` (108): OpenBSD loopback, a 4-byte address family in
    /// network byte order.
    pub const LOOP: LinkType = LinkType(108);
    /// `LINKTYPE_LINUX_SLL` (113): Linux "cooked" capture v1 (16-byte header).
    pub const LINUX_SLL: LinkType = LinkType(113);
    /// `LINKTYPE_IEEE802_11_RADIOTAP` (127): 802.11 with a radiotap header.
    pub(crate) const IEEE802_11_RADIOTAP: LinkType = LinkType(127);
    /// `LINKTYPE_IPV4` (228): raw IPv4.
    pub(crate) const IPV4: LinkType = LinkType(228);
    /// `LINKTYPE_IPV6` (229): raw IPv6.
    pub const IPV6: LinkType = LinkType(229);
    /// `LINKTYPE_NFLOG` (239): Linux netfilter log messages.
    pub(crate) const NFLOG: LinkType = LinkType(239);
    /// `LINKTYPE_LINUX_SLL2` (276): Linux "cooked" capture v2 (20-byte header).
    pub const LINUX_SLL2: LinkType = LinkType(276);

    /// The `LINKTYPE_` name without its prefix, or `None` for a value this
    /// crate has no name for.
    pub(crate) fn name(self) -> Option<&'static str> {
        Some(match self {
            LinkType::NULL => "NULL",
            LinkType::ETHERNET => "ETHERNET",
            LinkType::PPP => "PPP",
            LinkType::RAW => "RAW",
            LinkType::IEEE802_11 => "IEEE802_11",
            LinkType::LOOP => "LOOP",
            LinkType::LINUX_SLL => "LINUX_SLL",
            LinkType::IEEE802_11_RADIOTAP => "IEEE802_11_RADIOTAP",
            LinkType::IPV4 => "IPV4",
            LinkType::IPV6 => "IPV6",
            LinkType::NFLOG => "NFLOG",
            LinkType::LINUX_SLL2 => "LINUX_SLL2",
            _ => return None,
        })
    }
}

impl From<u32> for LinkType {
    fn from(value: u32) -> Self {
        LinkType(value)
    }
}

impl From<LinkType> for u32 {
    fn from(value: LinkType) -> Self {
        value.0
    }
}

impl fmt::Display for LinkType {
    /// `ETHERNET (1)` for a known value, `unknown (4711)` otherwise.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name} ({})", self.0),
            None => write!(f, "unknown ({})", self.0),
        }
    }
}

impl fmt::Debug for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "LinkType::{name}"),
            None => write!(f, "LinkType({})", self.0),
        }
    }
}

/// One packet record of a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Wireshark frame number: 1-based, counting every packet record (pcap
    /// record, pcapng EPB, SPB or PB) including skipped ones, and the pcapng
    /// blocks Wireshark shows as frames without a packet in them (custom,
    /// systemd journal export, sysdig event), which yield no `Frame`.
    pub number: u64,
    /// Capture timestamp (pcapng: after the interface's `if_tsoffset`).
    pub ts: Timestamp,
    /// Link-layer header type of the interface the frame was captured on.
    pub link_type: LinkType,
    /// The captured bytes, starting with the link-layer header; shorter than
    /// [`orig_len`](Self::orig_len) when the snapshot length cut the packet.
    pub data: &'a [u8],
    /// Length of the packet on the wire, in octets.
    pub orig_len: u32,
}

/// A whole capture's bytes in memory, read in place by
/// [`CaptureReader::from_bytes`]: a file the caller mapped (the `rttlens`
/// binary maps regular files through `rttlens-sys`, the one crate allowed
/// `unsafe`), or a `Vec<u8>`.
pub trait CaptureBytes: Send + Sync {
    /// The bytes, the same on every call.
    fn bytes(&self) -> &[u8];
    /// The reader is past the bytes before `offset` (the frames it handed
    /// to other threads there may still be read): a mapping may give their
    /// pages back to the system, as long as they read the same again. The
    /// default keeps them.
    fn release_before(&self, offset: usize) {
        let _ = offset;
    }
    /// The reader will soon read the bytes at `offset` (the next record's
    /// header): a mapping may ask the CPU to fetch them into its cache.
    /// The default does nothing.
    fn prefetch(&self, offset: usize) {
        let _ = offset;
    }
}

impl CaptureBytes for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// Bytes a reader shares frames from: one of its buffers, or the whole
/// capture it reads in place. A clone keeps them.
#[derive(Clone)]
pub enum Chunk {
    /// A buffer of a stream's bytes, never written again while anyone else
    /// holds it.
    Buffer(std::sync::Arc<Vec<u8>>),
    /// A whole capture ([`CaptureReader::from_bytes`]).
    Whole(std::sync::Arc<dyn CaptureBytes>),
}

impl Chunk {
    /// All its bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Chunk::Buffer(b) => b,
            Chunk::Whole(w) => w.bytes(),
        }
    }

    /// Whether `self` and `other` are the same bytes (not a copy).
    pub fn same(&self, other: &Chunk) -> bool {
        match (self, other) {
            (Chunk::Buffer(a), Chunk::Buffer(b)) => std::sync::Arc::ptr_eq(a, b),
            (Chunk::Whole(a), Chunk::Whole(b)) => {
                std::ptr::addr_eq(std::sync::Arc::as_ptr(a), std::sync::Arc::as_ptr(b))
            }
            _ => false,
        }
    }
}

impl fmt::Debug for Chunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Chunk::Buffer(b) => write!(f, "Chunk::Buffer({} bytes)", b.len()),
            Chunk::Whole(w) => write!(f, "Chunk::Whole({} bytes)", w.bytes().len()),
        }
    }
}

/// Where a frame's bytes are inside a reader's buffer or whole capture. A
/// clone of `chunk` keeps them.
#[derive(Debug, Clone, Copy)]
pub struct SharedFrame<'a> {
    /// The buffer, or the whole capture.
    pub chunk: &'a Chunk,
    /// Where the frame starts in it (byte offset).
    pub start: usize,
    /// Its captured length (bytes).
    pub len: usize,
}

impl SharedFrame<'_> {
    /// The frame's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.chunk
            .bytes()
            .get(self.start..self.start.saturating_add(self.len))
            .unwrap_or(&[])
    }
}

/// The container format of a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CaptureFormat {
    /// Classic libpcap format.
    Pcap {
        /// Timestamps are in nanoseconds (magic `a1b23c4d`), not microseconds.
        nanos: bool,
        /// The file was written in big-endian byte order.
        big_endian: bool,
    },
    /// pcapng (each section may have its own byte order).
    PcapNg,
}

impl fmt::Display for CaptureFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureFormat::Pcap { nanos, big_endian } => write!(
                f,
                "pcap ({}, {})",
                if *nanos { "ns" } else { "µs" },
                if *big_endian {
                    "big-endian"
                } else {
                    "little-endian"
                }
            ),
            CaptureFormat::PcapNg => write!(f, "pcapng"),
        }
    }
}

/// Capture-quality notes: counts of things in the file that did not stop the
/// reading but that a user should hear about.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CaptureNotes {
    /// Frames whose captured length is shorter than their length on the wire
    /// (cut by the snapshot length).
    pub cut_by_snaplen: u64,
    /// Frames whose captured length exceeds their stated length on the wire
    /// (an inconsistent record; the data is returned as captured).
    pub caplen_above_orig_len: u64,
    /// Simple Packet Blocks: they carry no timestamp, so each got the
    /// previous frame's timestamp (or 0 for the first frame).
    pub missing_timestamp: u64,
    /// Packet records naming an interface that no Interface Description
    /// Block of their section described (or whose description was
    /// unreadable); skipped, though their frame number is still counted.
    pub unknown_interface: u64,
    /// pcapng blocks whose length framing was sound but whose contents were
    /// not (e.g. an EPB whose captured length runs past the block); skipped.
    /// A skipped packet block still counts as a frame number.
    pub malformed_blocks: u64,
    /// Interfaces whose `if_tsresol` cannot be represented (10^-20 s and
    /// finer, or 2^-64 s and finer); microseconds were assumed.
    pub bad_ts_resolution: u64,
    /// Frames whose timestamp is earlier than the previous frame's.
    pub ts_backwards: u64,
}

impl CaptureNotes {
    /// Adds `other`'s counts to these (several files read as one).
    pub fn add(&mut self, other: &CaptureNotes) {
        self.cut_by_snaplen += other.cut_by_snaplen;
        self.caplen_above_orig_len += other.caplen_above_orig_len;
        self.missing_timestamp += other.missing_timestamp;
        self.unknown_interface += other.unknown_interface;
        self.malformed_blocks += other.malformed_blocks;
        self.bad_ts_resolution += other.bad_ts_resolution;
        self.ts_backwards += other.ts_backwards;
    }

    /// The total number of notes.
    pub fn total(&self) -> u64 {
        self.cut_by_snaplen
            + self.caplen_above_orig_len
            + self.missing_timestamp
            + self.unknown_interface
            + self.malformed_blocks
            + self.bad_ts_resolution
            + self.ts_backwards
    }
}

/// Why a capture could not be read (further).
///
/// Offsets are byte offsets in the (decompressed) capture stream, counted
/// from its first byte.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// The input holds no bytes at all.
    #[error("the input is empty (0 bytes): not a pcap or pcapng capture")]
    Empty,
    /// The first bytes are not a pcap, pcapng or gzip magic number. For a
    /// gzip file, `magic` are the first decompressed bytes (zero-padded when
    /// the input is shorter than 4 bytes).
    #[error("not a pcap or pcapng capture: {}", describe_magic(magic))]
    NotACapture {
        /// The first four bytes of the input.
        magic: [u8; 4],
    },
    /// The input ends inside a record (or a file header). Every complete
    /// record before `offset` has been returned; callers usually treat this
    /// as a capture-quality note, unless no frame at all could be read.
    #[error("the capture is truncated: it ends inside the record starting at byte {offset}")]
    Truncated {
        /// Offset of the first byte of the incomplete record.
        offset: u64,
    },
    /// The container structure is broken in a way that makes the rest of
    /// the file unreadable (a bad block length, a record larger than any
    /// real packet, an unknown byte-order magic, …).
    #[error("the capture is malformed at byte {offset}: {what}")]
    Malformed {
        /// Offset of the first byte of the broken record or block.
        offset: u64,
        /// What is wrong, in words.
        what: &'static str,
    },
    /// The input looked like gzip but its compressed data is corrupt.
    // The OS or decompressor error is in the message and is not also the
    // error's `source()`: a chain printer (anyhow's `{:#}`) would print it
    // twice ("… (os error 21): Is a directory (os error 21)").
    #[error("the gzip stream is corrupt after {offset} decompressed bytes: {error}")]
    Gzip {
        /// Decompressed bytes read before the corruption was detected.
        offset: u64,
        /// The decompressor's error.
        error: std::io::Error,
    },
    /// Reading the input failed.
    #[error("cannot read the capture: {0}")]
    Io(std::io::Error),
}

impl From<std::io::Error> for CaptureError {
    fn from(e: std::io::Error) -> Self {
        CaptureError::Io(e)
    }
}

/// A human description of what a file starting with `magic` looks like.
fn describe_magic(magic: &[u8; 4]) -> String {
    let hex = format!(
        "{:02x} {:02x} {:02x} {:02x}",
        magic[0], magic[1], magic[2], magic[3]
    );
    let what = match magic {
        [0x28, 0xb5, 0x2f, 0xfd] => "zstd-compressed data; decompress it first",
        [0xfd, 0x37, 0x7a, 0x58] => "xz-compressed data; decompress it first",
        [b'B', b'Z', b'h', _] => "bzip2-compressed data; decompress it first",
        [0x04, 0x22, 0x4d, 0x18] => "lz4-compressed data; decompress it first",
        [b'P', b'K', 0x03, 0x04] => "a zip archive; extract the capture first",
        [0xa1, 0xb2, 0xcd, 0x34] | [0x34, 0xcd, 0xb2, 0xa1] => {
            "a modified (Kuznetzov) pcap in big-endian order, which is not supported"
        }
        [b'<', ..] => "markup text (HTML or XML?)",
        [b'{', ..] | [b'[', ..] => "text (JSON?)",
        _ if magic
            .iter()
            .all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace()) =>
        {
            "text"
        }
        _ => "an unknown format",
    };
    if magic.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        let text: String = magic.iter().map(|&b| char::from(b)).collect();
        format!("the input starts with {hex} (\"{text}\"), which looks like {what}")
    } else {
        format!("the input starts with {hex}, which looks like {what}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_type_is_open() {
        assert_eq!(LinkType::ETHERNET.to_string(), "ETHERNET (1)");
        assert_eq!(LinkType(4711).to_string(), "unknown (4711)");
        assert_eq!(format!("{:?}", LinkType(4711)), "LinkType(4711)");
        assert_eq!(
            format!("{:?}", LinkType::LINUX_SLL2),
            "LinkType::LINUX_SLL2"
        );
        assert_eq!(u32::from(LinkType::from(276)), 276);
    }

    #[test]
    fn not_a_capture_message() {
        let e = CaptureError::NotACapture { magic: *b"GET " };
        assert_eq!(
            e.to_string(),
            "not a pcap or pcapng capture: the input starts with 47 45 54 20 (\"GET \"), \
             which looks like text"
        );
        let e = CaptureError::NotACapture {
            magic: [0x28, 0xb5, 0x2f, 0xfd],
        };
        assert!(e.to_string().contains("zstd"));
    }
}
