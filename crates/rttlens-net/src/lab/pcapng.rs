//! A minimal pcapng writer: one Section Header Block, one Interface
//! Description Block (`LINKTYPE_RAW` = 101, `if_tsresol` = 9, i.e.
//! nanoseconds) and one Enhanced Packet Block per packet.
//!
//! Written by hand on purpose: the crates that write pcapng either do not
//! write `if_tsresol` (so readers assume microseconds) or get nanosecond
//! timestamps wrong (DESIGN.md §7 notes pcap-file 2.0 on the reading side),
//! and the three block layouts below are all the link needs. Format:
//! <https://www.ietf.org/archive/id/draft-ietf-opsawg-pcapng-03.html> §4.1
//! (SHB), §4.2 (IDB), §4.3 (EPB); all fields little-endian here, which the
//! byte-order magic in the SHB declares.

use std::io::{self, Write};

/// `LINKTYPE_RAW`: each packet starts with an IPv4 or IPv6 header.
pub const LINKTYPE_RAW: u16 = 101;

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
/// Option code of `if_tsresol` in an IDB.
const IF_TSRESOL: u16 = 9;

/// Writes a pcapng stream with a single raw-IP interface whose timestamps
/// are nanoseconds since the Unix epoch.
#[derive(Debug)]
pub struct PcapngWriter<W: Write> {
    out: W,
    packets: u64,
}

fn pad4(len: usize) -> usize {
    (4 - len % 4) % 4
}

impl<W: Write> PcapngWriter<W> {
    /// Write the section header and the interface description.
    ///
    /// # Errors
    /// Any I/O error from `out`.
    pub fn new(mut out: W) -> io::Result<PcapngWriter<W>> {
        // SHB: type, total length, magic, version 1.0, section length -1
        // (unknown), no options, total length again.
        let mut shb = Vec::with_capacity(28);
        shb.extend_from_slice(&SHB.to_le_bytes());
        shb.extend_from_slice(&28u32.to_le_bytes());
        shb.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
        shb.extend_from_slice(&1u16.to_le_bytes());
        shb.extend_from_slice(&0u16.to_le_bytes());
        shb.extend_from_slice(&(-1i64).to_le_bytes());
        shb.extend_from_slice(&28u32.to_le_bytes());
        out.write_all(&shb)?;
        // IDB: type, length, linktype, reserved, snaplen 0 (no limit),
        // option if_tsresol = 9 (1 byte + 3 padding), opt_endofopt, length.
        let mut idb = Vec::with_capacity(32);
        idb.extend_from_slice(&IDB.to_le_bytes());
        idb.extend_from_slice(&32u32.to_le_bytes());
        idb.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
        idb.extend_from_slice(&0u16.to_le_bytes());
        idb.extend_from_slice(&0u32.to_le_bytes());
        idb.extend_from_slice(&IF_TSRESOL.to_le_bytes());
        idb.extend_from_slice(&1u16.to_le_bytes());
        idb.extend_from_slice(&[9, 0, 0, 0]);
        idb.extend_from_slice(&[0, 0, 0, 0]);
        idb.extend_from_slice(&32u32.to_le_bytes());
        out.write_all(&idb)?;
        Ok(PcapngWriter { out, packets: 0 })
    }

    /// Append one packet (raw IP bytes, not truncated) stamped `ts_ns`
    /// nanoseconds since the Unix epoch.
    ///
    /// # Errors
    /// Any I/O error from the underlying writer; a packet longer than
    /// `u32::MAX` bytes gives `InvalidInput`.
    pub fn write_packet(&mut self, ts_ns: u64, data: &[u8]) -> io::Result<()> {
        let len = u32::try_from(data.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "packet too long"))?;
        let pad = pad4(data.len());
        let total = 32 + data.len() + pad;
        let total = u32::try_from(total)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "packet too long"))?;
        let mut head = [0u8; 28];
        head[0..4].copy_from_slice(&EPB.to_le_bytes());
        head[4..8].copy_from_slice(&total.to_le_bytes());
        // interface id 0
        head[12..16].copy_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
        head[16..20].copy_from_slice(&(ts_ns as u32).to_le_bytes());
        head[20..24].copy_from_slice(&len.to_le_bytes());
        head[24..28].copy_from_slice(&len.to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(data)?;
        self.out.write_all(&[0u8; 3][..pad])?;
        self.out.write_all(&total.to_le_bytes())?;
        self.packets += 1;
        Ok(())
    }

    /// Packets written so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Flush the underlying writer.
    ///
    /// # Errors
    /// Any I/O error from the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flush and give back the underlying writer.
    ///
    /// # Errors
    /// Any I/O error from the flush.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_construct() {
        let mut w = PcapngWriter::new(Vec::new()).unwrap();
        w.write_packet(0x1_0000_0002, &[0x45, 0, 0]).unwrap();
        let b = w.into_inner().unwrap();
        assert_eq!(b.len(), 28 + 32 + 36);
        assert_eq!(&b[0..4], &SHB.to_le_bytes());
        assert_eq!(&b[28..32], &IDB.to_le_bytes());
        // if_tsresol = 9
        assert_eq!(b[28 + 20], 9);
        let epb = &b[60..];
        assert_eq!(&epb[0..4], &EPB.to_le_bytes());
        assert_eq!(u32::from_le_bytes(epb[4..8].try_into().unwrap()), 36);
        assert_eq!(u32::from_le_bytes(epb[12..16].try_into().unwrap()), 1);
        assert_eq!(u32::from_le_bytes(epb[16..20].try_into().unwrap()), 2);
        assert_eq!(&epb[28..32], &[0x45, 0, 0, 0]);
        assert_eq!(u32::from_le_bytes(epb[32..36].try_into().unwrap()), 36);
    }
}
