//! A minimal pcapng writer: one Section Header Block, one Interface
//! Description Block (`LINKTYPE_RAW` = 101, `if_tsresol` = 9, i.e.
//! nanoseconds), optionally Decryption Secrets Blocks (TLS key logs), and
//! one Enhanced Packet Block per packet (whole or cut short).
//!
//! Written by hand on purpose: the crates that write pcapng either do not
//! write `if_tsresol` (so readers assume microseconds) or get nanosecond
//! timestamps wrong (docs/design.md §7 notes pcap-file 2.0 on the reading
//! side), and the three block layouts below are all the link needs. Format:
//! <https://www.ietf.org/archive/id/draft-ietf-opsawg-pcapng-03.html> §4.1
//! (SHB), §4.2 (IDB), §4.3 (EPB), §4.7 (DSB); all fields little-endian
//! here, which the byte-order magic in the SHB declares.

use std::io::{self, Write};

/// `LINKTYPE_RAW`: each packet starts with an IPv4 or IPv6 header.
pub const LINKTYPE_RAW: u16 = 101;

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
const DSB: u32 = 0x0000_000A;
/// Secrets type of a Decryption Secrets Block holding an NSS key log
/// (`SSLKEYLOGFILE` text): "TLSK" (draft-ietf-opsawg-pcapng §4.7).
pub const SECRETS_TLS_KEY_LOG: u32 = 0x544C_534B;
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
        self.write_packet_cut(ts_ns, data, len)
    }

    /// Append one packet of which only the first `data.len()` of
    /// `orig_len` bytes were kept (EPB "Captured Packet Length" <
    /// "Original Packet Length", §4.3), stamped `ts_ns` nanoseconds since
    /// the Unix epoch.
    ///
    /// # Errors
    /// Any I/O error from the underlying writer; `InvalidInput` when
    /// `data` is longer than `orig_len` or than `u32::MAX` bytes.
    pub fn write_packet_cut(&mut self, ts_ns: u64, data: &[u8], orig_len: u32) -> io::Result<()> {
        let len = u32::try_from(data.len())
            .ok()
            .filter(|&l| l <= orig_len)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "captured length above the original length",
                )
            })?;
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
        head[24..28].copy_from_slice(&orig_len.to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(data)?;
        self.out.write_all(&[0u8; 3][..pad])?;
        self.out.write_all(&total.to_le_bytes())?;
        self.packets += 1;
        Ok(())
    }

    /// Append a Decryption Secrets Block (§4.7): `secrets_type` (e.g.
    /// [`SECRETS_TLS_KEY_LOG`]) and the secrets, padded to 4 bytes, no
    /// options. Write it before the packets it decrypts; Wireshark and
    /// tshark then need no separate key file.
    ///
    /// # Errors
    /// Any I/O error from the underlying writer; `InvalidInput` when `data`
    /// is too long for one block.
    pub fn write_decryption_secrets(&mut self, secrets_type: u32, data: &[u8]) -> io::Result<()> {
        let too_long = || io::Error::new(io::ErrorKind::InvalidInput, "secrets too long");
        let len = u32::try_from(data.len()).map_err(|_| too_long())?;
        let pad = pad4(data.len());
        let total = u32::try_from(20 + data.len() + pad).map_err(|_| too_long())?;
        let mut head = [0u8; 16];
        head[0..4].copy_from_slice(&DSB.to_le_bytes());
        head[4..8].copy_from_slice(&total.to_le_bytes());
        head[8..12].copy_from_slice(&secrets_type.to_le_bytes());
        head[12..16].copy_from_slice(&len.to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(data)?;
        self.out.write_all(&[0u8; 3][..pad])?;
        self.out.write_all(&total.to_le_bytes())
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

    #[test]
    fn test_construct_cut_packet() {
        let mut w = PcapngWriter::new(Vec::new()).unwrap();
        w.write_packet_cut(7, &[0x45, 0, 0, 40, 1], 1500).unwrap();
        assert!(w.write_packet_cut(7, &[0; 5], 4).is_err());
        let b = w.into_inner().unwrap();
        let epb = &b[60..];
        assert_eq!(u32::from_le_bytes(epb[4..8].try_into().unwrap()), 40);
        assert_eq!(u32::from_le_bytes(epb[20..24].try_into().unwrap()), 5);
        assert_eq!(u32::from_le_bytes(epb[24..28].try_into().unwrap()), 1500);
        assert_eq!(&epb[28..36], &[0x45, 0, 0, 40, 1, 0, 0, 0]);
        assert_eq!(epb.len(), 40);
    }

    #[test]
    fn test_construct_dsb() {
        let mut w = PcapngWriter::new(Vec::new()).unwrap();
        w.write_decryption_secrets(SECRETS_TLS_KEY_LOG, b"CLIENT_RANDOM a b\n")
            .unwrap();
        let b = w.into_inner().unwrap();
        let dsb = &b[60..];
        // 20 bytes of framing + 18 bytes of secrets + 2 padding
        assert_eq!(dsb.len(), 40);
        assert_eq!(&dsb[0..4], &0x0Au32.to_le_bytes());
        assert_eq!(u32::from_le_bytes(dsb[4..8].try_into().unwrap()), 40);
        assert_eq!(&dsb[8..12], b"KSLT", "0x544c534b little-endian");
        assert_eq!(u32::from_le_bytes(dsb[12..16].try_into().unwrap()), 18);
        assert_eq!(&dsb[16..34], b"CLIENT_RANDOM a b\n");
        assert_eq!(&dsb[34..36], &[0, 0]);
        assert_eq!(u32::from_le_bytes(dsb[36..40].try_into().unwrap()), 40);
    }

    /// Our own reader skips the DSB (no frame number, as in Wireshark) and
    /// keeps the original length of a cut packet.
    #[test]
    fn rttlens_core_reads_dsb_and_cut_packets() {
        use rttlens_core::capture::{CaptureReader, LinkType};
        let mut w = PcapngWriter::new(Vec::new()).unwrap();
        w.write_decryption_secrets(SECRETS_TLS_KEY_LOG, b"CLIENT_RANDOM 00 11\n")
            .unwrap();
        w.write_packet(1_000_000_001, &[0x45; 20]).unwrap();
        w.write_packet_cut(2_000_000_002, &[0x60; 40], 1240)
            .unwrap();
        let b = w.into_inner().unwrap();
        let mut r = CaptureReader::new(Box::new(std::io::Cursor::new(b))).unwrap();
        let f = r.next_frame().unwrap().unwrap();
        assert_eq!((f.number, f.ts.nanos, f.orig_len), (1, 1_000_000_001, 20));
        assert_eq!(f.link_type, LinkType::RAW);
        let f = r.next_frame().unwrap().unwrap();
        assert_eq!((f.number, f.ts.nanos, f.orig_len), (2, 2_000_000_002, 1240));
        assert_eq!(f.data, &[0x60; 40]);
        assert!(r.next_frame().unwrap().is_none());
    }
}
