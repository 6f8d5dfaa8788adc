//! pcapng: block framing, sections, interfaces and packet blocks
//! (draft-ietf-opsawg-pcapng).
//!
//! Blocks are framed here by their lengths (checked against the trailing
//! copy) before any parsing, so a broken block inside a sound frame is
//! skipped and counted, and only a broken frame stops the reading. Section
//! header, interface description and simple packet blocks are parsed with
//! pcap-parser. Enhanced (and obsolete) packet blocks are read here: their
//! fixed fields are five integers, and pcap-parser's EPB parser collects the
//! block's options into a `Vec` — one allocation per packet in files whose
//! writer adds packet options (e.g. macOS tcpdump).

use pcap_parser::{
    parse_decryptionsecretsblock_be, parse_decryptionsecretsblock_le,
    parse_interfacedescriptionblock_be, parse_interfacedescriptionblock_le,
    parse_sectionheaderblock, parse_simplepacketblock_be, parse_simplepacketblock_le,
};

use pcap_parser::traits::PcapNGPacketBlock;

use super::input::{Input, Record, RecordMeta, MAX_RECORD};
use super::keylog::KeyStore;
use super::{CaptureError, CaptureNotes, LinkType};
use crate::base::time::Timestamp;

/// Section Header Block type; a palindrome, so the same in both orders.
pub(super) const NG_SHB_MAGIC: u32 = 0x0A0D_0D0A;
/// Byte-order magic of the section header.
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
/// Interface Description Block.
const IDB: u32 = 0x0000_0001;
/// Packet Block (obsolete, still read by Wireshark).
const PB: u32 = 0x0000_0002;
/// Simple Packet Block.
const SPB: u32 = 0x0000_0003;
/// Decryption Secrets Block (draft-ietf-opsawg-pcapng §4.7).
const DSB: u32 = 0x0000_000A;
/// A DSB's secrets type for a TLS key log in the NSS format (`TLSK`).
const DSB_TLS_KEY_LOG: u32 = 0x544C_534B;
/// Enhanced Packet Block.
const EPB: u32 = 0x0000_0006;
/// Blocks that carry no packet but that Wireshark shows as frames, so they
/// take a frame number: systemd journal export, sysdig events (v1, v2, v2
/// large), and custom blocks (copyable or not). Checked with tshark 4.0.17
/// and Wireshark's `wiretap/pcapng.c`; name resolution, statistics,
/// decryption secrets and unknown blocks take no number.
const NUMBERED_NON_PACKET: [u32; 6] = [
    0x0000_0009,
    0x0000_0204,
    0x0000_0216,
    0x0000_0221,
    0x0000_0BAD,
    0x4000_0BAD,
];

/// Offset of the packet data in an EPB or PB: type, length, interface id,
/// timestamp (2 × 4), captured length, original length.
const EPB_DATA: usize = 28;
/// Offset of the packet data in an SPB: type, length, original length.
const SPB_DATA: usize = 12;
/// More interface descriptions per section than this are ignored, so that a
/// hostile file cannot grow the interface table without bound.
const MAX_INTERFACES: usize = 1 << 16;

/// State of the section being read.
#[derive(Default)]
pub(super) struct NgState {
    big_endian: bool,
    /// Interfaces of the current section by id; `None` for an unreadable
    /// description.
    interfaces: Vec<Option<Interface>>,
}

#[derive(Clone, Copy)]
struct Interface {
    link_type: LinkType,
    snaplen: u32,
    unit: TsUnit,
    /// `if_tsoffset`: seconds added to every timestamp.
    offset_secs: i64,
}

/// How to turn timestamp ticks into nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TsUnit {
    /// Ticks are 10^-k s with k ≤ 9: multiply by 10^(9-k).
    Mul(u64),
    /// Ticks are 10^-k s with 9 < k ≤ 19: divide by 10^(k-9).
    Div(u64),
    /// Ticks are 2^-k s with k ≤ 63: multiply by 10⁹, shift right by k.
    Shift(u32),
}

impl TsUnit {
    const MICROS: TsUnit = TsUnit::Mul(1_000);

    /// The unit of an `if_tsresol` value: the most significant bit says
    /// power of 2 (set) or of 10 (clear), the rest is the negative exponent.
    fn from_tsresol(tsresol: u8) -> Option<TsUnit> {
        let exp = u32::from(tsresol & 0x7f);
        if tsresol & 0x80 == 0 {
            match exp {
                0..=9 => Some(TsUnit::Mul(10u64.pow(9 - exp))),
                10..=19 => Some(TsUnit::Div(10u64.pow(exp - 9))),
                _ => None,
            }
        } else {
            (exp <= 63).then_some(TsUnit::Shift(exp))
        }
    }

    fn timestamp(self, ticks: u64, offset_secs: i64) -> Timestamp {
        // the common case (µs or ns ticks of a date before 2262, no
        // offset) in 64 bits; the general one in 128
        if let (TsUnit::Mul(m), 0) = (self, offset_secs) {
            if let Some(n) = ticks.checked_mul(m).and_then(|n| i64::try_from(n).ok()) {
                return Timestamp::from_nanos(n);
            }
        }
        let nanos: i128 = match self {
            TsUnit::Mul(m) => i128::from(ticks) * i128::from(m),
            TsUnit::Div(d) => i128::from(ticks / d.max(1)),
            TsUnit::Shift(k) => ((u128::from(ticks) * 1_000_000_000) >> k) as i128,
        };
        let nanos = nanos + i128::from(offset_secs) * 1_000_000_000;
        Timestamp::from_nanos(nanos.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
    }
}

/// Reads a `u32` at `at` in the section's byte order (0 when out of range,
/// which the callers' length checks rule out).
fn u32_at(block: &[u8], at: usize, big_endian: bool) -> u32 {
    let bytes = block
        .get(at..)
        .and_then(|b| b.first_chunk::<4>())
        .copied()
        .unwrap_or_default();
    if big_endian {
        u32::from_be_bytes(bytes)
    } else {
        u32::from_le_bytes(bytes)
    }
}

fn u16_at(block: &[u8], at: usize, big_endian: bool) -> u16 {
    let bytes = block
        .get(at..)
        .and_then(|b| b.first_chunk::<2>())
        .copied()
        .unwrap_or_default();
    if big_endian {
        u16::from_be_bytes(bytes)
    } else {
        u16::from_le_bytes(bytes)
    }
}

/// What a block contributes once framed.
enum Parsed {
    Packet {
        if_id: u32,
        /// `None` for a Simple Packet Block.
        ticks: Option<u64>,
        data_start: usize,
        data_len: usize,
        orig_len: u32,
    },
    /// A packet block whose contents are broken.
    BadPacket,
    /// A record Wireshark numbers as a frame but that holds no packet.
    NumberedNonPacket,
    /// A non-packet block (already applied to the state).
    Other,
}

impl NgState {
    /// Reads the block at the front of the input's buffer.
    pub(crate) fn read_block(&mut self, r: &mut Input) -> Result<Record, CaptureError> {
        let offset = r.offset();
        if !r.fill(8)? {
            return if r.buf.data().is_empty() {
                Ok(Record::End)
            } else {
                Err(CaptureError::Truncated { offset })
            };
        }
        let is_shb = u32_at(r.buf.data(), 0, false) == NG_SHB_MAGIC;
        let big_endian = if is_shb {
            // The section's byte order comes from its own header.
            if !r.fill(12)? {
                return Err(CaptureError::Truncated { offset });
            }
            match u32_at(r.buf.data(), 8, false) {
                BYTE_ORDER_MAGIC => false,
                m if m.swap_bytes() == BYTE_ORDER_MAGIC => true,
                _ => {
                    return Err(CaptureError::Malformed {
                        offset,
                        what: "a pcapng section header has an unknown byte-order magic",
                    })
                }
            }
        } else {
            self.big_endian
        };
        let block_type = u32_at(r.buf.data(), 0, big_endian);
        let block_len = u32_at(r.buf.data(), 4, big_endian) as usize;
        if block_len < 12 || block_len % 4 != 0 {
            return Err(CaptureError::Malformed {
                offset,
                what: "a pcapng block length is shorter than 12 bytes or not a multiple of 4",
            });
        }
        if block_len > MAX_RECORD {
            return Err(CaptureError::Malformed {
                offset,
                what: "a pcapng block claims to be longer than 64 MiB (a corrupt length field?)",
            });
        }
        if !r.fill(block_len)? {
            return Err(CaptureError::Truncated { offset });
        }
        let parsed = {
            let block = r.buf.data().get(..block_len).unwrap_or(&[]);
            if u32_at(block, block_len - 4, big_endian) as usize != block_len {
                return Err(CaptureError::Malformed {
                    offset,
                    what: "a pcapng block's trailing length differs from its leading length",
                });
            }
            match block_type {
                NG_SHB_MAGIC => self.section(block, big_endian, offset)?,
                IDB => self.interface(block, big_endian, &mut r.notes),
                EPB => epb(block, big_endian, false),
                PB => epb(block, big_endian, true),
                SPB => spb(block, big_endian),
                DSB => secrets(block, big_endian, &r.key_log, &mut r.notes),
                t if NUMBERED_NON_PACKET.contains(&t) => Parsed::NumberedNonPacket,
                _ => Parsed::Other,
            }
        };
        r.set_pending(block_len);
        match parsed {
            Parsed::Other => Ok(Record::Skipped),
            Parsed::NumberedNonPacket => {
                r.number += 1;
                Ok(Record::Skipped)
            }
            Parsed::BadPacket => {
                r.number += 1;
                r.notes.malformed_blocks += 1;
                Ok(Record::Skipped)
            }
            Parsed::Packet {
                if_id,
                ticks,
                data_start,
                data_len,
                orig_len,
            } => {
                r.number += 1;
                let iface = usize::try_from(if_id)
                    .ok()
                    .and_then(|i| self.interfaces.get(i))
                    .copied()
                    .flatten();
                let Some(iface) = iface else {
                    r.notes.unknown_interface += 1;
                    return Ok(Record::Skipped);
                };
                let ts = match ticks {
                    Some(t) => iface.unit.timestamp(t, iface.offset_secs),
                    None => {
                        r.notes.missing_timestamp += 1;
                        r.last_ts.unwrap_or_default()
                    }
                };
                // An SPB's captured length is bounded by the snapshot length
                // of interface 0 (draft-ietf-opsawg-pcapng §4.4).
                let data_len = if ticks.is_none() && iface.snaplen != 0 {
                    data_len.min(iface.snaplen as usize)
                } else {
                    data_len
                };
                r.last_snaplen = iface.snaplen;
                Ok(Record::Packet(RecordMeta {
                    record_len: block_len,
                    data_start,
                    data_len,
                    ts,
                    link_type: iface.link_type,
                    orig_len,
                }))
            }
        }
    }

    /// A Section Header Block: a new byte order and an empty interface list.
    fn section(
        &mut self,
        block: &[u8],
        big_endian: bool,
        offset: u64,
    ) -> Result<Parsed, CaptureError> {
        match parse_sectionheaderblock(block) {
            Ok((_, shb)) if shb.major_version == 1 => {
                self.big_endian = big_endian;
                self.interfaces.clear();
                Ok(Parsed::Other)
            }
            Ok(_) => Err(CaptureError::Malformed {
                offset,
                what: "a pcapng section header has a major version other than 1",
            }),
            Err(_) => Err(CaptureError::Malformed {
                offset,
                what: "a pcapng section header block is unreadable",
            }),
        }
    }

    /// An Interface Description Block: the next interface id of the section.
    fn interface(&mut self, block: &[u8], big_endian: bool, notes: &mut CaptureNotes) -> Parsed {
        if self.interfaces.len() >= MAX_INTERFACES {
            return Parsed::Other;
        }
        let parsed = if big_endian {
            parse_interfacedescriptionblock_be(block)
        } else {
            parse_interfacedescriptionblock_le(block)
        };
        let iface = match parsed {
            Ok((_, idb)) => {
                let unit = TsUnit::from_tsresol(idb.if_tsresol).unwrap_or_else(|| {
                    notes.bad_ts_resolution += 1;
                    TsUnit::MICROS
                });
                // pcap-parser 0.17 reads `if_tsoffset` as little-endian even
                // in a big-endian section; undo that.
                let offset_secs = if big_endian {
                    idb.if_tsoffset.swap_bytes()
                } else {
                    idb.if_tsoffset
                };
                Some(Interface {
                    link_type: LinkType(u32::from(idb.linktype.0 as u16)),
                    snaplen: idb.snaplen,
                    unit,
                    offset_secs,
                })
            }
            Err(_) => {
                notes.malformed_blocks += 1;
                None
            }
        };
        self.interfaces.push(iface);
        Parsed::Other
    }
}

/// An Enhanced Packet Block, or with `obsolete` a Packet Block (16-bit
/// interface id followed by a 16-bit drop count).
fn epb(block: &[u8], big_endian: bool, obsolete: bool) -> Parsed {
    // Fixed fields, data, trailing length.
    if block.len() < EPB_DATA + 4 {
        return Parsed::BadPacket;
    }
    let if_id = if obsolete {
        u32::from(u16_at(block, 8, big_endian))
    } else {
        u32_at(block, 8, big_endian)
    };
    let ts_high = u32_at(block, 12, big_endian);
    let ts_low = u32_at(block, 16, big_endian);
    let caplen = u32_at(block, 20, big_endian) as usize;
    let orig_len = u32_at(block, 24, big_endian);
    if caplen > block.len() - EPB_DATA - 4 {
        return Parsed::BadPacket;
    }
    Parsed::Packet {
        if_id,
        ticks: Some((u64::from(ts_high) << 32) | u64::from(ts_low)),
        data_start: EPB_DATA,
        data_len: caplen,
        orig_len,
    }
}

/// A Simple Packet Block: interface 0, no timestamp.
/// A Decryption Secrets Block: a TLS key log joins the input's
/// [`KeyStore`]; other secrets (WireGuard, ZigBee, …)
/// are not ours. A broken block is counted, not fatal.
fn secrets(block: &[u8], big_endian: bool, key_log: &KeyStore, notes: &mut CaptureNotes) -> Parsed {
    let parsed = if big_endian {
        parse_decryptionsecretsblock_be(block)
    } else {
        parse_decryptionsecretsblock_le(block)
    };
    match parsed {
        Ok((_, dsb)) if dsb.secrets_type.0 == DSB_TLS_KEY_LOG => {
            // pcap-parser's `data` includes the padding to 32 bits
            let len = usize::try_from(dsb.secrets_len).unwrap_or(usize::MAX);
            key_log.add(dsb.data.get(..len).unwrap_or(dsb.data));
        }
        Ok(_) => {}
        Err(_) => notes.malformed_blocks += 1,
    }
    Parsed::Other
}

fn spb(block: &[u8], big_endian: bool) -> Parsed {
    let parsed = if big_endian {
        parse_simplepacketblock_be(block)
    } else {
        parse_simplepacketblock_le(block)
    };
    match parsed {
        Ok((_, spb)) => Parsed::Packet {
            if_id: 0,
            ticks: None,
            data_start: SPB_DATA,
            data_len: spb.packet_data().len(),
            orig_len: spb.origlen,
        },
        Err(_) => Parsed::BadPacket,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ts_units() {
        assert_eq!(TsUnit::from_tsresol(6), Some(TsUnit::Mul(1_000)));
        assert_eq!(TsUnit::from_tsresol(9), Some(TsUnit::Mul(1)));
        assert_eq!(TsUnit::from_tsresol(0), Some(TsUnit::Mul(1_000_000_000)));
        assert_eq!(TsUnit::from_tsresol(12), Some(TsUnit::Div(1_000)));
        assert_eq!(TsUnit::from_tsresol(19), Some(TsUnit::Div(10_000_000_000)));
        assert_eq!(TsUnit::from_tsresol(20), None);
        assert_eq!(TsUnit::from_tsresol(0x80 | 10), Some(TsUnit::Shift(10)));
        assert_eq!(TsUnit::from_tsresol(0x80 | 64), None);

        let s = 1_558_851_455u64;
        assert_eq!(
            TsUnit::MICROS.timestamp(s * 1_000_000 + 250_000, 0),
            Timestamp::from_nanos(s as i64 * 1_000_000_000 + 250_000_000)
        );
        // 2^-10 s ticks: 1024 ticks are one second, 512 half a second.
        assert_eq!(
            TsUnit::Shift(10).timestamp(1024 * 3 + 512, 0),
            Timestamp::from_nanos(3_500_000_000)
        );
        // picoseconds
        assert_eq!(
            TsUnit::Div(1_000).timestamp(1_000_000_123_456, 0),
            Timestamp::from_nanos(1_000_000_123)
        );
        // if_tsoffset adds seconds; extreme values saturate, never panic.
        assert_eq!(
            TsUnit::Mul(1).timestamp(5, 10),
            Timestamp::from_nanos(10_000_000_005)
        );
        assert_eq!(
            TsUnit::Mul(1_000_000_000).timestamp(u64::MAX, i64::MAX),
            Timestamp::from_nanos(i64::MAX)
        );
        assert_eq!(
            TsUnit::Mul(1).timestamp(0, i64::MIN),
            Timestamp::from_nanos(i64::MIN)
        );
    }
}
