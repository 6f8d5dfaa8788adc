//! The capture reader on small hand-built files: the corners of pcap and
//! pcapng that the real captures do not reach, and broken files.

use std::io::{self, Cursor, Read};

use rttlens_core::base::time::Timestamp;
use rttlens_core::capture::{CaptureError, CaptureFormat, CaptureReader, LinkType};

fn u16b(be: bool, v: u16) -> [u8; 2] {
    if be {
        v.to_be_bytes()
    } else {
        v.to_le_bytes()
    }
}

fn u32b(be: bool, v: u32) -> [u8; 4] {
    if be {
        v.to_be_bytes()
    } else {
        v.to_le_bytes()
    }
}

/// A pcapng block: type, length, body padded to 32 bits, length.
fn block(be: bool, block_type: u32, body: &[u8]) -> Vec<u8> {
    let padded = body.len().div_ceil(4) * 4;
    let len = (12 + padded) as u32;
    let mut b = Vec::new();
    b.extend_from_slice(&u32b(be, block_type));
    b.extend_from_slice(&u32b(be, len));
    b.extend_from_slice(body);
    b.resize(8 + padded, 0);
    b.extend_from_slice(&u32b(be, len));
    b
}

fn shb(be: bool) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&u32b(be, 0x1A2B_3C4D));
    body.extend_from_slice(&u16b(be, 1));
    body.extend_from_slice(&u16b(be, 0));
    body.extend_from_slice(&[0xff; 8]);
    block(be, 0x0A0D_0D0A, &body)
}

fn idb(be: bool, link: u16, snaplen: u32, tsresol: Option<u8>) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&u16b(be, link));
    body.extend_from_slice(&u16b(be, 0));
    body.extend_from_slice(&u32b(be, snaplen));
    if let Some(r) = tsresol {
        body.extend_from_slice(&u16b(be, 9));
        body.extend_from_slice(&u16b(be, 1));
        body.extend_from_slice(&[r, 0, 0, 0]);
        body.extend_from_slice(&[0; 4]);
    }
    block(be, 1, &body)
}

fn epb(be: bool, if_id: u32, ticks: u64, data: &[u8], orig_len: u32) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&u32b(be, if_id));
    body.extend_from_slice(&u32b(be, (ticks >> 32) as u32));
    body.extend_from_slice(&u32b(be, ticks as u32));
    body.extend_from_slice(&u32b(be, data.len() as u32));
    body.extend_from_slice(&u32b(be, orig_len));
    body.extend_from_slice(data);
    block(be, 6, &body)
}

fn spb(be: bool, data: &[u8], orig_len: u32) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&u32b(be, orig_len));
    body.extend_from_slice(data);
    block(be, 3, &body)
}

/// The obsolete Packet Block: 16-bit interface id, 16-bit drop count.
fn pb(be: bool, if_id: u16, ticks: u64, data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&u16b(be, if_id));
    body.extend_from_slice(&u16b(be, 0));
    body.extend_from_slice(&u32b(be, (ticks >> 32) as u32));
    body.extend_from_slice(&u32b(be, ticks as u32));
    body.extend_from_slice(&u32b(be, data.len() as u32));
    body.extend_from_slice(&u32b(be, data.len() as u32));
    body.extend_from_slice(data);
    block(be, 2, &body)
}

fn pcap_header(magic: u32, link: u32) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&magic.to_le_bytes());
    h.extend_from_slice(&[2, 0, 4, 0]);
    h.extend_from_slice(&[0; 8]);
    h.extend_from_slice(&65535u32.to_le_bytes());
    h.extend_from_slice(&link.to_le_bytes());
    h
}

fn pcap_record(sec: u32, frac: u32, data: &[u8], orig_len: u32) -> Vec<u8> {
    let mut r = Vec::new();
    r.extend_from_slice(&sec.to_le_bytes());
    r.extend_from_slice(&frac.to_le_bytes());
    r.extend_from_slice(&(data.len() as u32).to_le_bytes());
    r.extend_from_slice(&orig_len.to_le_bytes());
    r.extend_from_slice(data);
    r
}

/// (number, ts, link type, data, orig_len) of every frame, and the error
/// that ended the reading.
type Frames = Vec<(u64, Timestamp, LinkType, Vec<u8>, u32)>;

fn read(parts: &[Vec<u8>]) -> (Frames, Option<CaptureError>, CaptureReader) {
    let mut reader =
        CaptureReader::new(Box::new(Cursor::new(parts.concat()))).expect("a capture header");
    let mut frames = Vec::new();
    let err = loop {
        match reader.next_frame() {
            Ok(Some(f)) => frames.push((f.number, f.ts, f.link_type, f.data.to_vec(), f.orig_len)),
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    (frames, err, reader)
}

fn ts(nanos: i64) -> Timestamp {
    Timestamp::from_nanos(nanos)
}

#[test]
fn simple_packet_block_takes_previous_timestamp_and_snaplen() {
    for be in [false, true] {
        let (frames, err, reader) = read(&[
            shb(be),
            idb(be, 1, 64, None),
            epb(be, 0, 1_000_000, b"first", 5),
            spb(be, &[0xab; 100], 100),
        ]);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[1].0, 2);
        assert_eq!(
            frames[1].1,
            ts(1_000_000_000),
            "the previous frame's timestamp"
        );
        assert_eq!(
            frames[1].3,
            vec![0xab; 64],
            "bounded by the interface snaplen"
        );
        assert_eq!(frames[1].4, 100);
        let notes = reader.notes();
        assert_eq!(notes.missing_timestamp, 1);
        assert_eq!(notes.cut_by_snaplen, 1);
        assert_eq!(reader.snaplen(), Some(64));
    }
}

#[test]
fn packets_on_undescribed_interfaces_are_skipped_but_numbered() {
    let (frames, err, reader) = read(&[
        shb(false),
        idb(false, 1, 0, None),
        epb(false, 0, 1, b"a", 1),
        epb(false, 5, 2, b"b", 1),
        epb(false, 0, 3, b"c", 1),
    ]);
    assert!(err.is_none());
    let numbers: Vec<u64> = frames.iter().map(|f| f.0).collect();
    assert_eq!(numbers, [1, 3]);
    assert_eq!(reader.notes().unknown_interface, 1);
    assert_eq!(reader.frames_seen(), 3);
}

#[test]
fn a_new_section_resets_the_interfaces() {
    let (frames, err, reader) = read(&[
        shb(false),
        idb(false, 1, 0, None),
        idb(false, 1, 0, Some(9)),
        epb(false, 1, 5, b"ns", 2),
        shb(true),
        idb(true, 101, 0, None),
        epb(true, 1, 7, b"gone", 4),
        epb(true, 0, 7, b"raw", 3),
    ]);
    assert!(err.is_none());
    assert_eq!(frames.len(), 2);
    assert_eq!(
        (frames[0].0, frames[0].1, frames[0].2),
        (1, ts(5), LinkType::ETHERNET)
    );
    assert_eq!(
        (frames[1].0, frames[1].1, frames[1].2),
        (3, ts(7_000), LinkType::RAW)
    );
    assert_eq!(reader.notes().unknown_interface, 1);
    assert_eq!(reader.format(), CaptureFormat::PcapNg);
}

#[test]
fn timestamp_resolutions() {
    // 2^-20 s ticks; 10^-3 s ticks; an unusable resolution falls back to µs.
    let (frames, err, reader) = read(&[
        shb(false),
        idb(false, 1, 0, Some(0x80 | 20)),
        idb(false, 1, 0, Some(3)),
        idb(false, 1, 0, Some(42)),
        epb(false, 0, (3 << 20) + (1 << 19), b"x", 1),
        epb(false, 1, 4_250, b"y", 1),
        epb(false, 2, 5_000_001, b"z", 1),
    ]);
    assert!(err.is_none());
    let stamps: Vec<Timestamp> = frames.iter().map(|f| f.1).collect();
    assert_eq!(
        stamps,
        [ts(3_500_000_000), ts(4_250_000_000), ts(5_000_001_000)]
    );
    assert_eq!(reader.notes().bad_ts_resolution, 1);
    assert_eq!(reader.notes().ts_backwards, 0);
}

#[test]
fn obsolete_packet_block_and_skipped_blocks() {
    let (frames, err, _) = read(&[
        shb(false),
        block(false, 4, &[0; 4]),         // name resolution: end only
        block(false, 0x0BAD, b"custom!"), // custom
        idb(false, 1, 0, None),
        block(false, 5, &[0; 12]), // interface statistics
        pb(false, 0, 42, b"old"),
        block(false, 0x8000_0001, b""), // process information, empty
        epb(false, 0, 43, b"new", 3),
    ]);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(frames.len(), 2);
    // The custom block takes frame number 1, as in Wireshark.
    assert_eq!(
        (frames[0].0, frames[0].1, &frames[0].3[..]),
        (2, ts(42_000), &b"old"[..])
    );
    assert_eq!((frames[1].0, &frames[1].3[..]), (3, &b"new"[..]));
}

#[test]
fn broken_block_contents_are_skipped_and_counted() {
    // An EPB whose captured length runs past its block.
    let mut bad = epb(false, 0, 1, b"abcd", 4);
    bad[20..24].copy_from_slice(&1000u32.to_le_bytes());
    // An IDB too short for its fixed fields: interface 1 is unusable.
    let short_idb = block(false, 1, &[1, 0]);
    let (frames, err, reader) = read(&[
        shb(false),
        idb(false, 1, 0, None),
        short_idb,
        bad,
        epb(false, 1, 2, b"on the broken interface", 23),
        epb(false, 0, 3, b"fine", 4),
    ]);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].0, 3);
    assert_eq!(reader.notes().malformed_blocks, 2);
    assert_eq!(reader.notes().unknown_interface, 1);
}

#[test]
fn broken_block_framing_stops_after_the_frames_before_it() {
    let good = [
        shb(false),
        idb(false, 1, 0, None),
        epb(false, 0, 1, b"ok", 2),
    ];
    let offset = good.iter().map(Vec::len).sum::<usize>() as u64;

    let mut not_multiple_of_4 = epb(false, 0, 2, b"abcd", 4);
    not_multiple_of_4[4] += 1;
    let mut trailer = epb(false, 0, 2, b"abcd", 4);
    let n = trailer.len();
    trailer[n - 4] = 0x77;
    let mut huge = epb(false, 0, 2, b"abcd", 4);
    huge[4..8].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    let mut tiny = epb(false, 0, 2, b"abcd", 4);
    tiny[4..8].copy_from_slice(&8u32.to_le_bytes());

    for (broken, what) in [
        (not_multiple_of_4, "multiple of 4"),
        (trailer, "trailing length"),
        (huge, "64 MiB"),
        (tiny, "shorter than 12"),
    ] {
        let mut parts = good.to_vec();
        parts.push(broken);
        parts.push(epb(false, 0, 3, b"never read", 10));
        let (frames, err, _) = read(&parts);
        assert_eq!(frames.len(), 1, "{what}");
        match err {
            Some(CaptureError::Malformed { offset: o, what: w }) => {
                assert_eq!(o, offset, "{what}");
                assert!(w.contains(what), "{w}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

#[test]
fn broken_section_headers() {
    let mut bom = shb(false);
    bom[8..12].copy_from_slice(&[1, 2, 3, 4]);
    let err = CaptureReader::new(Box::new(Cursor::new(bom))).unwrap_err();
    assert!(
        matches!(err, CaptureError::Malformed { offset: 0, what } if what.contains("byte-order")),
        "{err:?}"
    );
    let mut version = shb(true);
    version[12..14].copy_from_slice(&2u16.to_be_bytes());
    let err = CaptureReader::new(Box::new(Cursor::new(version))).unwrap_err();
    assert!(
        matches!(err, CaptureError::Malformed { what, .. } if what.contains("major version")),
        "{err:?}"
    );
    let shb_only = shb(false);
    let err = CaptureReader::new(Box::new(Cursor::new(shb_only[..20].to_vec()))).unwrap_err();
    assert!(
        matches!(err, CaptureError::Truncated { offset: 0 }),
        "{err:?}"
    );
    // A complete section header and nothing else: a capture without frames.
    let (frames, err, _) = read(&[shb(false)]);
    assert!(frames.is_empty() && err.is_none());
}

#[test]
fn pcap_variants() {
    // Nanosecond magic; a record with caplen > orig_len is kept and noted;
    // a timestamp going backwards is noted.
    let (frames, err, reader) = read(&[
        pcap_header(0xa1b2_3c4d, 113),
        pcap_record(10, 999_999_999, b"abc", 3),
        pcap_record(10, 5, b"abcdef", 4),
    ]);
    assert!(err.is_none());
    assert_eq!(frames[0].1, ts(10_999_999_999));
    assert_eq!(frames[1].1, ts(10_000_000_005));
    assert_eq!(frames[0].2, LinkType::LINUX_SLL);
    assert_eq!(reader.notes().caplen_above_orig_len, 1);
    assert_eq!(reader.notes().ts_backwards, 1);
    assert_eq!(
        reader.format(),
        CaptureFormat::Pcap {
            nanos: true,
            big_endian: false
        }
    );

    // The link-type field's upper bits (FCS length) are not the link type.
    let (frames, _, _) = read(&[
        pcap_header(0xa1b2_c3d4, 0x1400_0001),
        pcap_record(1, 1, b"x", 1),
    ]);
    assert_eq!(frames[0].2, LinkType::ETHERNET);

    // Kuznetzov's modified pcap: 24-octet record headers.
    let mut modified = pcap_record(7, 3, b"mod", 3);
    modified.splice(16..16, [0u8; 8]);
    let (frames, err, _) = read(&[pcap_header(0xa1b2_cd34, 1), modified]);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        (frames[0].1, &frames[0].3[..]),
        (ts(7_000_003_000), &b"mod"[..])
    );

    // A header and no records.
    let (frames, err, _) = read(&[pcap_header(0xa1b2_c3d4, 1)]);
    assert!(frames.is_empty() && err.is_none());
}

#[test]
fn pcap_record_longer_than_any_packet_is_malformed() {
    let mut huge = pcap_record(1, 1, b"", 0);
    huge[8..12].copy_from_slice(&(100u32 << 20).to_le_bytes());
    let (frames, err, _) = read(&[
        pcap_header(0xa1b2_c3d4, 1),
        pcap_record(1, 0, b"ok", 2),
        huge,
        vec![0; 1000],
    ]);
    assert_eq!(frames.len(), 1);
    assert!(
        matches!(err, Some(CaptureError::Malformed { offset: 42, .. })),
        "{err:?}"
    );
}

/// Returns `chunk` bytes per read.
struct Chunked(Cursor<Vec<u8>>, usize);

impl Read for Chunked {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.1);
        self.0.read(&mut buf[..n])
    }
}

#[test]
fn a_record_larger_than_the_buffer_grows_it() {
    let big: Vec<u8> = (0..3 << 20).map(|i: u32| (i % 251) as u8).collect();
    let file = [
        pcap_header(0xa1b2_c3d4, 1),
        pcap_record(1, 0, b"before", 6),
        pcap_record(2, 0, &big, big.len() as u32),
        pcap_record(3, 0, b"after", 5),
    ]
    .concat();
    for chunk in [usize::MAX, 4096, 1000] {
        let mut reader =
            CaptureReader::new(Box::new(Chunked(Cursor::new(file.clone()), chunk))).unwrap();
        assert_eq!(reader.next_frame().unwrap().unwrap().data, b"before");
        assert_eq!(reader.next_frame().unwrap().unwrap().data, &big[..]);
        assert_eq!(reader.next_frame().unwrap().unwrap().data, b"after");
        assert!(reader.next_frame().unwrap().is_none());
        assert!(reader.next_frame().unwrap().is_none());
    }
}

/// Fails after `ok` bytes.
struct Failing(Cursor<Vec<u8>>, usize);

impl Read for Failing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.0.position() as usize >= self.1 {
            return Err(io::Error::other("disk on fire"));
        }
        let n = buf.len().min(self.1 - self.0.position() as usize);
        self.0.read(&mut buf[..n])
    }
}

#[test]
fn read_errors_are_io_errors() {
    let file = [
        pcap_header(0xa1b2_c3d4, 1),
        pcap_record(1, 0, b"ok", 2),
        pcap_record(2, 0, b"lost", 4),
    ]
    .concat();
    let mut reader = CaptureReader::new(Box::new(Failing(Cursor::new(file), 24 + 18 + 5))).unwrap();
    assert!(reader.next_frame().unwrap().is_some());
    let err = reader.next_frame().unwrap_err();
    assert!(matches!(err, CaptureError::Io(_)), "{err:?}");
    assert_eq!(err.to_string(), "cannot read the capture: disk on fire");
    assert!(reader.next_frame().unwrap().is_none());
}

#[test]
fn error_messages_say_what_the_file_looked_like() {
    let msg = |bytes: &[u8]| {
        CaptureReader::new(Box::new(Cursor::new(bytes.to_vec())))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        msg(b"PK\x03\x04rest"),
        "not a pcap or pcapng capture: the input starts with 50 4b 03 04, \
         which looks like a zip archive; extract the capture first"
    );
    assert!(msg(b"<html>").contains("markup"));
    assert!(msg(&[0x28, 0xb5, 0x2f, 0xfd, 0]).contains("zstd"));
    assert!(msg(&[0, 1, 2, 3]).contains("00 01 02 03, which looks like an unknown format"));
    assert_eq!(
        msg(b""),
        "the input is empty (0 bytes): not a pcap or pcapng capture"
    );
    let truncated = CaptureError::Truncated { offset: 1234 };
    assert_eq!(
        truncated.to_string(),
        "the capture is truncated: it ends inside the record starting at byte 1234"
    );
}

#[test]
fn frame_numbers_match_wireshark() {
    // One EPB, then each kind of block followed by an EPB. The numbers were
    // read off tshark 4.0.17 for this very file: custom blocks (copyable or
    // not) and systemd journal entries take a frame number, name resolution,
    // statistics, decryption secrets, process information and unknown
    // blocks do not.
    let le = false;
    let epb_n = |i: u64| epb(le, 0, i, &[0; 14], 14);
    let others = [
        block(le, 4, &[0; 4]),                                         // NRB
        block(le, 5, &[0; 12]),                                        // ISB
        block(le, 0x0A, b"KSLT\x04\0\0\0ABCD"),                        // DSB
        block(le, 0x0BAD, &[0xd9, 0x7e, 0, 0, 1, 2, 3, 4]),            // CB
        block(le, 0x4000_0BAD, &[0xd9, 0x7e, 0, 0, 1, 2, 3, 4]),       // DCB
        block(le, 9, b"__REALTIME_TIMESTAMP=1000000\nMESSAGE=hi\n\0"), // SJE
        block(le, 0x8000_0001, &[0xd2, 0x04, 0, 0]),                   // PIB
        block(le, 0x77, b"xxxx"),                                      // unknown
        spb(le, &[0; 14], 14),
        pb(le, 0, 5, &[0; 14]),
    ];
    let mut parts = vec![shb(le), idb(le, 1, 0, None), epb_n(1)];
    for (i, other) in others.into_iter().enumerate() {
        parts.push(other);
        parts.push(epb_n(i as u64 + 2));
    }
    let (frames, err, reader) = read(&parts);
    assert!(err.is_none(), "{err:?}");
    let numbers: Vec<u64> = frames.iter().map(|f| f.0).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15, 16]);
    assert_eq!(reader.frames_seen(), 16);
}

/// A Decryption Secrets Block: `secrets_type`, its length, the secrets.
fn dsb(be: bool, secrets_type: u32, secrets: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&u32b(be, secrets_type));
    body.extend_from_slice(&u32b(be, secrets.len() as u32));
    body.extend_from_slice(secrets);
    block(be, 0x0000_000A, &body)
}

#[test]
fn decryption_secrets_blocks_join_the_key_log_and_take_no_frame_number() {
    use rttlens_core::capture::keylog::SecretLabel;
    let random: [u8; 32] = std::array::from_fn(|i| i as u8);
    let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let tls = format!("CLIENT_TRAFFIC_SECRET_0 {hex} {}\n", "11".repeat(32));
    let tls2 = format!("SERVER_TRAFFIC_SECRET_0 {hex} {}\n", "22".repeat(32));
    for be in [false, true] {
        let (frames, err, reader) = read(&[
            shb(be),
            dsb(be, 0x544C_534B, tls.as_bytes()),
            idb(be, 1, 0, None),
            epb(be, 0, 1, b"a", 1),
            // WireGuard keys are not ours; a second TLS block merges
            dsb(be, 0x5747_4B4C, b"wireguard"),
            dsb(be, 0x544C_534B, tls2.as_bytes()),
            epb(be, 0, 2, b"b", 1),
        ]);
        assert!(err.is_none(), "{err:?}");
        let numbers: Vec<u64> = frames.iter().map(|f| f.0).collect();
        assert_eq!(numbers, [1, 2], "as Wireshark numbers them");
        let log = reader.key_log();
        let s = log.get(&random).expect("the DSBs' secrets");
        assert_eq!(s.get(SecretLabel::ClientTraffic0), Some(&[0x11; 32][..]));
        assert_eq!(s.get(SecretLabel::ServerTraffic0), Some(&[0x22; 32][..]));
        assert_eq!(reader.notes().malformed_blocks, 0);
        // the padding to 32 bits is not a line of the log
        assert_eq!(reader.key_log().notes().malformed_lines, 0);
    }
    // a DSB whose secrets length runs past the block is counted, not fatal
    let mut broken = dsb(false, 0x544C_534B, b"abcd");
    broken[12..16].copy_from_slice(&u32b(false, 4096));
    let (frames, err, reader) = read(&[
        shb(false),
        broken,
        idb(false, 1, 0, None),
        epb(false, 0, 1, b"a", 1),
    ]);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(frames.len(), 1);
    assert_eq!(reader.notes().malformed_blocks, 1);
    assert!(reader.key_log().is_empty());
}
