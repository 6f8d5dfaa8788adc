//! Classic libpcap files: the 24-byte file header and the records.
//!
//! Parsing is pcap-parser's (`parse_pcap_header`, `parse_pcap_frame*`); this
//! module only frames the records in the input's buffer and converts the
//! timestamps.

use pcap_parser::nom;
use pcap_parser::{
    parse_pcap_frame, parse_pcap_frame_be, parse_pcap_frame_modified, parse_pcap_header,
    LegacyPcapBlock, PcapError,
};

use super::input::{Input, Record, RecordMeta, MAX_RECORD};
use super::{CaptureError, CaptureFormat, LinkType};
use crate::base::time::Timestamp;

/// Length of the file header.
const FILE_HEADER_LEN: usize = 24;

type ParseFn = fn(&[u8]) -> nom::IResult<&[u8], LegacyPcapBlock<'_>, PcapError<&[u8]>>;

/// What the file header said.
#[derive(Clone, Copy)]
pub(super) struct PcapState {
    nanos: bool,
    big_endian: bool,
    /// Kuznetzov's "modified" format: 24-byte record headers.
    modified: bool,
    link_type: LinkType,
    pub(crate) snaplen: u32,
}

impl PcapState {
    /// Recognises the pcap magic numbers (µs and ns, both byte orders, and
    /// the little-endian modified format).
    pub(crate) fn from_magic(magic: [u8; 4]) -> Option<PcapState> {
        let (nanos, big_endian, modified) = match u32::from_le_bytes(magic) {
            0xa1b2_c3d4 => (false, false, false),
            0xd4c3_b2a1 => (false, true, false),
            0xa1b2_3c4d => (true, false, false),
            0x4d3c_b2a1 => (true, true, false),
            0xa1b2_cd34 => (false, false, true),
            _ => return None,
        };
        Some(PcapState {
            nanos,
            big_endian,
            modified,
            link_type: LinkType::ETHERNET,
            snaplen: 0,
        })
    }

    /// Length of the file header.
    pub(crate) fn header_len(&self) -> usize {
        FILE_HEADER_LEN
    }

    /// Reads the link type and snapshot length from the file header at the
    /// start of `data`.
    pub(crate) fn read_header(mut self, data: &[u8]) -> Result<PcapState, CaptureError> {
        match parse_pcap_header(data) {
            Ok((_, header)) => {
                // The link-type field's upper 16 bits may carry FCS
                // information (draft-ietf-opsawg-pcap §4); the type is the
                // lower 16.
                self.link_type = LinkType((header.network.0 as u32) & 0xffff);
                self.snaplen = header.snaplen;
                Ok(self)
            }
            Err(nom::Err::Incomplete(_)) => Err(CaptureError::Truncated { offset: 0 }),
            Err(_) => Err(CaptureError::Malformed {
                offset: 0,
                what: "unreadable pcap file header",
            }),
        }
    }

    /// The format as reported to users.
    pub(crate) fn format(&self) -> CaptureFormat {
        CaptureFormat::Pcap {
            nanos: self.nanos,
            big_endian: self.big_endian,
        }
    }

    fn record_header_len(&self) -> usize {
        if self.modified {
            24
        } else {
            16
        }
    }

    fn parse_fn(&self) -> ParseFn {
        if self.modified {
            parse_pcap_frame_modified
        } else if self.big_endian {
            parse_pcap_frame_be
        } else {
            parse_pcap_frame
        }
    }

    fn timestamp(&self, ts_sec: u32, ts_frac: u32) -> Timestamp {
        // u32 seconds × 10⁹ + u32 fraction × 10³ stays below i64::MAX.
        let frac = if self.nanos {
            i64::from(ts_frac)
        } else {
            i64::from(ts_frac) * 1_000
        };
        Timestamp::from_nanos(i64::from(ts_sec) * 1_000_000_000 + frac)
    }

    /// Reads the record at the front of the input's buffer.
    pub(crate) fn read_record(self, r: &mut Input) -> Result<Record, CaptureError> {
        let offset = r.offset();
        let header_len = self.record_header_len();
        if !r.fill(header_len)? {
            return if r.buf.data().is_empty() {
                Ok(Record::End)
            } else {
                Err(CaptureError::Truncated { offset })
            };
        }
        let parse = self.parse_fn();
        loop {
            let more = match parse(r.buf.data()) {
                Ok((_, block)) => {
                    let data_len = block.data.len();
                    let meta = RecordMeta {
                        record_len: header_len + data_len,
                        data_start: header_len,
                        data_len,
                        ts: self.timestamp(block.ts_sec, block.ts_usec),
                        link_type: self.link_type,
                        orig_len: block.origlen,
                    };
                    r.number += 1;
                    r.last_snaplen = self.snaplen;
                    r.set_pending(meta.record_len);
                    return Ok(Record::Packet(meta));
                }
                Err(nom::Err::Incomplete(nom::Needed::Size(n))) => n.get(),
                Err(nom::Err::Incomplete(nom::Needed::Unknown)) => 1,
                Err(_) => {
                    return Err(CaptureError::Malformed {
                        offset,
                        what: "unreadable pcap record header",
                    })
                }
            };
            let need = r.buf.data().len().saturating_add(more);
            if need > MAX_RECORD {
                return Err(CaptureError::Malformed {
                    offset,
                    what: "a record header claims more than 64 MiB of packet data \
                           (a corrupt length field?)",
                });
            }
            if !r.fill(need)? {
                return Err(CaptureError::Truncated { offset });
            }
        }
    }
}
