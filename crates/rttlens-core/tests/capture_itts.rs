//! The capture reader and wire decoder over the real ITTS captures
//! (`shared/captures/itts`, see its README), the same frames rewritten as
//! pcapng / big-endian / nanosecond pcap and gzip'd, cut mid-record, and
//! mutated at random.

use std::io::{self, Cursor, Read, Write};
use std::path::PathBuf;

use flate2::write::GzEncoder;
use flate2::Compression;
use proptest::prelude::*;
use rttlens_core::base::seq::SeqNumber;
use rttlens_core::base::time::Timestamp;
use rttlens_core::capture::{CaptureError, CaptureFormat, CaptureReader, Frame, LinkType};
use rttlens_core::wire::{decode, Decoded, TcpFlags};

const CAPTURES: [(&str, u64); 4] = [
    ("pku.cap", 887),
    ("thu.cap", 715),
    ("pku-2.cap", 885),
    ("thu-2.cap", 704),
];

fn capture_path(name: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/captures/itts/"
    ))
    .join(name)
}

fn capture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(capture_path(name)).expect("the ITTS captures are in ../shared/captures")
}

/// A frame copied out of the reader's buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owned {
    number: u64,
    ts: Timestamp,
    link_type: LinkType,
    data: Vec<u8>,
    orig_len: u32,
}

impl From<Frame<'_>> for Owned {
    fn from(f: Frame<'_>) -> Self {
        Owned {
            number: f.number,
            ts: f.ts,
            link_type: f.link_type,
            data: f.data.to_vec(),
            orig_len: f.orig_len,
        }
    }
}

fn reader_over(bytes: Vec<u8>) -> CaptureReader {
    CaptureReader::new(Box::new(Cursor::new(bytes))).expect("a capture")
}

/// Every frame, then the error that ended the reading (if any).
fn read_all(mut reader: CaptureReader) -> (Vec<Owned>, Option<CaptureError>) {
    let mut frames = Vec::new();
    loop {
        match reader.next_frame() {
            Ok(Some(f)) => frames.push(Owned::from(f)),
            Ok(None) => return (frames, None),
            Err(e) => {
                // After an error the reader is finished.
                assert!(matches!(reader.next_frame(), Ok(None)));
                return (frames, Some(e));
            }
        }
    }
}

fn read_ok(bytes: Vec<u8>) -> Vec<Owned> {
    let (frames, err) = read_all(reader_over(bytes));
    assert!(err.is_none(), "{err:?}");
    frames
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

#[test]
fn itts_facts() {
    for (name, packets) in CAPTURES {
        let mut reader = CaptureReader::open(&capture_path(name)).unwrap();
        assert_eq!(
            reader.format(),
            CaptureFormat::Pcap {
                nanos: false,
                big_endian: false
            }
        );
        assert!(!reader.is_gzip());
        assert_eq!(reader.snaplen(), Some(262_144));
        let mut n = 0;
        while let Some(frame) = reader.next_frame().unwrap() {
            n += 1;
            assert_eq!(frame.number, n);
            assert_eq!(frame.link_type, LinkType::ETHERNET);
            let Ok(Decoded::Tcp(seg)) = decode(frame.link_type, frame.data, frame.orig_len) else {
                panic!("{name} frame {n} is not TCP");
            };
            assert!(seg.src.is_ipv6() && seg.dst.is_ipv6());
            assert!(!seg.options.malformed, "{name} frame {n}");
            assert!(!seg.is_cut());
            if n == 1 {
                assert_eq!(seg.flags, TcpFlags::SYN | TcpFlags::ECE | TcpFlags::CWR);
                assert_eq!(seg.options.mss, Some(1440));
                assert_eq!(seg.options.window_scale, Some(6));
                assert!(seg.options.sack_permitted);
                assert_eq!(seg.dst_port, 443);
            }
        }
        assert_eq!(n, packets, "{name}");
        assert_eq!(reader.frames_seen(), packets);
        assert_eq!(reader.notes().total(), 0, "{name}: {:?}", reader.notes());
        assert_eq!(
            reader.bytes_read(),
            std::fs::metadata(capture_path(name)).unwrap().len()
        );
    }
}

#[test]
fn pku_details() {
    let frames = read_ok(capture_bytes("pku.cap"));
    // Checked with tshark: frame 1 at 1558851455.252806, frame 18 is the
    // first response data, 108.201 ms after frame 1, carrying one 1408-octet
    // TLS record with its 5-octet header.
    assert_eq!(
        frames[0].ts,
        Timestamp::from_nanos(1_558_851_455_252_806_000)
    );
    assert_eq!(frames[17].ts.nanos - frames[0].ts.nanos, 108_201_000);
    let Ok(Decoded::Tcp(seg)) = decode(frames[17].link_type, &frames[17].data, frames[17].orig_len)
    else {
        panic!("frame 18 is TCP")
    };
    assert_eq!(seg.src_port, 443);
    assert_eq!(seg.payload_len, 1413);
    assert_eq!(seg.payload.len(), 1413);
    assert_eq!(seg.payload.first(), Some(&23)); // TLS application data
                                                // Frame 2 is the SYN-ACK: server window scale 2 (README).
    let Ok(Decoded::Tcp(synack)) = decode(frames[1].link_type, &frames[1].data, frames[1].orig_len)
    else {
        panic!("frame 2 is TCP")
    };
    assert!(synack.flags.contains(TcpFlags::SYN | TcpFlags::ACK));
    assert_eq!(synack.options.window_scale, Some(2));
    assert_eq!(synack.options.mss, Some(1440));
}

// --- Writers for the other formats -------------------------------------

/// Writes a classic pcap file.
fn write_pcap(frames: &[Owned], big_endian: bool, nanos: bool) -> Vec<u8> {
    let u32b = |v: u32| {
        if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let u16b = |v: u16| {
        if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut out = Vec::new();
    out.extend_from_slice(&u32b(if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 }));
    out.extend_from_slice(&u16b(2));
    out.extend_from_slice(&u16b(4));
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&u32b(262_144));
    out.extend_from_slice(&u32b(1));
    for f in frames {
        let secs = f.ts.nanos.div_euclid(1_000_000_000) as u32;
        let sub = f.ts.nanos.rem_euclid(1_000_000_000) as u32;
        out.extend_from_slice(&u32b(secs));
        out.extend_from_slice(&u32b(if nanos { sub } else { sub / 1_000 }));
        out.extend_from_slice(&u32b(f.data.len() as u32));
        out.extend_from_slice(&u32b(f.orig_len));
        out.extend_from_slice(&f.data);
    }
    out
}

/// A minimal pcapng writer: blocks in one byte order per section.
struct NgWriter {
    out: Vec<u8>,
    big_endian: bool,
}

impl NgWriter {
    fn u16(&self, v: u16) -> [u8; 2] {
        if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    fn u32(&self, v: u32) -> [u8; 4] {
        if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    fn block(&mut self, block_type: u32, body: &[u8]) {
        let padded = body.len().div_ceil(4) * 4;
        let len = (12 + padded) as u32;
        let (t, l) = (self.u32(block_type), self.u32(len));
        self.out.extend_from_slice(&t);
        self.out.extend_from_slice(&l);
        self.out.extend_from_slice(body);
        self.out.resize(self.out.len() + padded - body.len(), 0);
        self.out.extend_from_slice(&l);
    }

    fn section(&mut self, big_endian: bool) {
        self.big_endian = big_endian;
        let mut body = Vec::new();
        body.extend_from_slice(&self.u32(0x1A2B_3C4D));
        body.extend_from_slice(&self.u16(1));
        body.extend_from_slice(&self.u16(0));
        body.extend_from_slice(&[0xff; 8]); // section length unknown
                                            // shb_userappl
        body.extend_from_slice(&self.u16(4));
        body.extend_from_slice(&self.u16(7));
        body.extend_from_slice(b"rttlens\0");
        body.extend_from_slice(&[0; 4]); // opt_endofopt
        self.block(0x0A0D_0D0A, &body);
    }

    fn interface(&mut self, link: u16, tsresol: Option<u8>, tsoffset: Option<i64>) {
        let mut body = Vec::new();
        body.extend_from_slice(&self.u16(link));
        body.extend_from_slice(&self.u16(0));
        body.extend_from_slice(&self.u32(262_144));
        if let Some(r) = tsresol {
            body.extend_from_slice(&self.u16(9));
            body.extend_from_slice(&self.u16(1));
            body.extend_from_slice(&[r, 0, 0, 0]);
        }
        if let Some(o) = tsoffset {
            body.extend_from_slice(&self.u16(14));
            body.extend_from_slice(&self.u16(8));
            let v = if self.big_endian {
                o.to_be_bytes()
            } else {
                o.to_le_bytes()
            };
            body.extend_from_slice(&v);
        }
        body.extend_from_slice(&[0; 4]);
        self.block(1, &body);
    }

    fn epb(&mut self, if_id: u32, ticks: u64, data: &[u8], orig_len: u32) {
        let mut body = Vec::new();
        body.extend_from_slice(&self.u32(if_id));
        body.extend_from_slice(&self.u32((ticks >> 32) as u32));
        body.extend_from_slice(&self.u32(ticks as u32));
        body.extend_from_slice(&self.u32(data.len() as u32));
        body.extend_from_slice(&self.u32(orig_len));
        body.extend_from_slice(data);
        body.resize(body.len().div_ceil(4) * 4, 0);
        // epb_flags option: inbound; the reader must not need it.
        body.extend_from_slice(&self.u16(2));
        body.extend_from_slice(&self.u16(4));
        body.extend_from_slice(&self.u32(1));
        body.extend_from_slice(&[0; 4]);
        self.block(6, &body);
    }

    /// Blocks the reader must skip without giving them a frame number:
    /// name resolution, interface statistics, decryption secrets, unknown.
    /// (Custom blocks take a frame number, as in Wireshark: see
    /// `capture_formats.rs`.)
    fn noise(&mut self) {
        let mut nrb = Vec::new();
        nrb.extend_from_slice(&self.u16(1)); // nrb_record_ipv4
        nrb.extend_from_slice(&self.u16(13));
        nrb.extend_from_slice(&[10, 0, 0, 1]);
        nrb.extend_from_slice(b"host.lan\0");
        nrb.resize(nrb.len().div_ceil(4) * 4, 0);
        nrb.extend_from_slice(&[0; 4]); // nrb_record_end
        self.block(4, &nrb);
        let mut isb = Vec::new();
        isb.extend_from_slice(&self.u32(0));
        isb.extend_from_slice(&[0; 8]);
        self.block(5, &isb);
        let mut dsb = Vec::new();
        dsb.extend_from_slice(&self.u32(0x544c_534b)); // TLS key log
        dsb.extend_from_slice(&self.u32(5));
        dsb.extend_from_slice(b"CLNT\n");
        self.block(0x0000_000A, &dsb);
        self.block(0x4242_4242, b"unknown block type");
    }
}

/// The first half of the frames in a little-endian section (interface 1, ns
/// resolution, behind an unused raw-IP interface 0), the rest in a
/// big-endian section (interface 0, µs resolution relative to an
/// `if_tsoffset` of 1.5e9 s), with skippable blocks in between.
fn write_pcapng(frames: &[Owned]) -> Vec<u8> {
    const OFFSET_S: i64 = 1_500_000_000;
    let mut w = NgWriter {
        out: Vec::new(),
        big_endian: false,
    };
    let half = frames.len() / 2;
    w.section(false);
    w.interface(101, None, None);
    w.noise();
    w.interface(1, Some(9), None);
    for (i, f) in frames[..half].iter().enumerate() {
        w.epb(1, f.ts.nanos as u64, &f.data, f.orig_len);
        if i % 100 == 0 {
            w.noise();
        }
    }
    w.section(true);
    w.noise();
    w.interface(1, Some(6), Some(OFFSET_S));
    for f in &frames[half..] {
        let ticks = (f.ts.nanos - OFFSET_S * 1_000_000_000) / 1_000;
        w.epb(0, ticks as u64, &f.data, f.orig_len);
    }
    w.noise();
    w.out
}

/// A reader that returns a few bytes per call and is sometimes interrupted,
/// to exercise every refill path.
struct Trickle {
    inner: Cursor<Vec<u8>>,
    calls: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.calls += 1;
        if self.calls % 5 == 0 {
            return Err(io::Error::from(io::ErrorKind::Interrupted));
        }
        let n = buf.len().min(self.calls % 13 + 1);
        self.inner.read(&mut buf[..n])
    }
}

fn same_frames_and_segments(expected: &[Owned], got: &[Owned], what: &str) {
    assert_eq!(expected.len(), got.len(), "{what}: frame count");
    for (e, g) in expected.iter().zip(got) {
        assert_eq!(e, g, "{what}: frame {}", e.number);
        assert_eq!(
            decode(e.link_type, &e.data, e.orig_len),
            decode(g.link_type, &g.data, g.orig_len),
            "{what}: frame {}",
            e.number
        );
    }
}

#[test]
fn other_formats_give_the_same_frames() {
    for (name, packets) in CAPTURES {
        let original = capture_bytes(name);
        let expected = read_ok(original.clone());
        assert_eq!(expected.len() as u64, packets);
        let variants = [
            (
                "pcap",
                original.clone(),
                CaptureFormat::Pcap {
                    nanos: false,
                    big_endian: false,
                },
            ),
            (
                "big-endian pcap",
                write_pcap(&expected, true, false),
                CaptureFormat::Pcap {
                    nanos: false,
                    big_endian: true,
                },
            ),
            (
                "ns pcap",
                write_pcap(&expected, false, true),
                CaptureFormat::Pcap {
                    nanos: true,
                    big_endian: false,
                },
            ),
            (
                "big-endian ns pcap",
                write_pcap(&expected, true, true),
                CaptureFormat::Pcap {
                    nanos: true,
                    big_endian: true,
                },
            ),
            ("pcapng", write_pcapng(&expected), CaptureFormat::PcapNg),
        ];
        for (what, bytes, format) in variants {
            let what = format!("{name} as {what}");
            for gz in [false, true] {
                let input = if gz { gzip(&bytes) } else { bytes.clone() };
                let input_len = input.len() as u64;
                let reader = reader_over(input);
                assert_eq!(reader.format(), format, "{what}");
                assert_eq!(reader.is_gzip(), gz, "{what}");
                let mut reader = reader;
                let mut got = Vec::new();
                while let Some(f) = reader.next_frame().unwrap() {
                    got.push(Owned::from(f));
                }
                assert_eq!(reader.bytes_read(), input_len, "{what}");
                assert_eq!(reader.notes().total(), 0, "{what}: {:?}", reader.notes());
                same_frames_and_segments(&expected, &got, &format!("{what} gz={gz}"));
            }
            // Through a reader that returns a few bytes at a time.
            let trickle = Trickle {
                inner: Cursor::new(gzip(&bytes)),
                calls: 0,
            };
            let (got, err) = read_all(CaptureReader::new(Box::new(trickle)).unwrap());
            assert!(err.is_none(), "{what}: {err:?}");
            same_frames_and_segments(&expected, &got, &format!("{what} trickled"));
        }
    }
}

#[test]
fn open_reads_gzip_files_by_content() {
    let dir = std::env::temp_dir().join(format!("rttlens-capture-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A gzip'd capture whose name says nothing about gzip.
    let path = dir.join("pku.cap");
    let gz = gzip(&capture_bytes("pku.cap"));
    std::fs::write(&path, &gz).unwrap();
    let mut reader = CaptureReader::open(&path).unwrap();
    assert!(reader.is_gzip());
    let mut n = 0;
    while reader.next_frame().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 887);
    assert_eq!(reader.bytes_read(), gz.len() as u64);
    std::fs::remove_dir_all(&dir).unwrap();

    let missing = CaptureReader::open(&dir.join("missing.pcap")).unwrap_err();
    assert!(matches!(missing, CaptureError::Io(_)), "{missing:?}");
}

/// Offsets of the record starts in a classic pcap file.
fn pcap_record_offsets(bytes: &[u8]) -> Vec<usize> {
    let mut offsets = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        offsets.push(at);
        let caplen = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + caplen;
    }
    offsets
}

#[test]
fn truncated_capture_yields_frames_then_truncated() {
    let original = capture_bytes("pku.cap");
    let expected = read_ok(original.clone());
    let offsets = pcap_record_offsets(&original);
    assert_eq!(offsets.len(), 887);
    // Cut inside record 100's header, then inside its data.
    for cut in [offsets[99] + 7, offsets[99] + 16 + 30] {
        let bytes = original[..cut].to_vec();
        for gz in [false, true] {
            let input = if gz { gzip(&bytes) } else { bytes.clone() };
            let (frames, err) = read_all(reader_over(input));
            assert_eq!(frames.len(), 99, "cut at {cut}");
            assert_eq!(frames[..], expected[..99]);
            match err {
                Some(CaptureError::Truncated { offset }) => {
                    assert_eq!(offset, offsets[99] as u64)
                }
                other => panic!("cut at {cut}, gz {gz}: {other:?}"),
            }
        }
    }
    // A gzip stream whose compressed bytes are cut short: a truncated
    // capture too, not a corrupt one.
    let gz = gzip(&original);
    let (frames, err) = read_all(reader_over(gz[..gz.len() / 2].to_vec()));
    assert!(!frames.is_empty() && frames.len() < 887);
    assert_eq!(frames[..], expected[..frames.len()]);
    assert!(
        matches!(err, Some(CaptureError::Truncated { .. })),
        "{err:?}"
    );

    // pcapng cut mid-block.
    let ng = write_pcapng(&expected);
    let (frames, err) = read_all(reader_over(ng[..ng.len() / 3].to_vec()));
    assert!(!frames.is_empty());
    assert_eq!(frames[..], expected[..frames.len()]);
    assert!(
        matches!(err, Some(CaptureError::Truncated { .. })),
        "{err:?}"
    );

    // Cut inside the file header: nothing to read at all.
    let err = CaptureReader::new(Box::new(Cursor::new(original[..20].to_vec()))).unwrap_err();
    assert!(
        matches!(err, CaptureError::Truncated { offset: 0 }),
        "{err:?}"
    );
}

#[test]
fn not_a_capture() {
    let text = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    let err = CaptureReader::new(Box::new(Cursor::new(text.clone()))).unwrap_err();
    match &err {
        CaptureError::NotACapture { magic } => assert_eq!(magic, b"[pac"),
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("\"[pac\""), "{err}");
    assert!(err.to_string().contains("text"), "{err}");
    // gzip'd text: the decompressed bytes are what is described.
    let err = CaptureReader::new(Box::new(Cursor::new(gzip(&text)))).unwrap_err();
    assert!(matches!(err, CaptureError::NotACapture { magic } if &magic == b"[pac"));
    // Short and empty inputs.
    let err = CaptureReader::new(Box::new(Cursor::new(b"ab".to_vec()))).unwrap_err();
    assert!(matches!(
        err,
        CaptureError::NotACapture {
            magic: [b'a', b'b', 0, 0]
        }
    ));
    let err = CaptureReader::new(Box::new(Cursor::new(Vec::new()))).unwrap_err();
    assert!(matches!(err, CaptureError::Empty), "{err:?}");
    let err = CaptureReader::new(Box::new(Cursor::new(gzip(b"")))).unwrap_err();
    assert!(matches!(err, CaptureError::Empty), "{err:?}");
    // Corrupt deflate data after a valid gzip header.
    let mut bad = gzip(&capture_bytes("pku.cap"));
    for b in &mut bad[20..200] {
        *b = 0xff;
    }
    let err = CaptureReader::new(Box::new(Cursor::new(bad))).unwrap_err();
    assert!(matches!(err, CaptureError::Gzip { .. }), "{err:?}");
}

/// Reads every frame and decodes it; must never panic.
fn read_and_decode(bytes: Vec<u8>) -> u64 {
    let Ok(mut reader) = CaptureReader::new(Box::new(Cursor::new(bytes))) else {
        return 0;
    };
    let mut tcp = 0;
    while let Ok(Some(frame)) = reader.next_frame() {
        if let Ok(Decoded::Tcp(seg)) = decode(frame.link_type, frame.data, frame.orig_len) {
            tcp += 1;
            // Touch what a flow tracker reads.
            let _ = seg.seq.add(seg.seq_len()) > SeqNumber(0);
            let _ = seg.options.sack().len() + seg.payload.len();
        }
    }
    tcp
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, bit: u8 },
    Overwrite { at: usize, value: u8 },
    Put32 { at: usize, value: u32 },
    Truncate { at: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    // Positions are fractions of the file, scaled when applied; a third
    // of them land in the first 2 KiB, where the headers are dense.
    let pos = prop_oneof![0usize..2048, 0usize..1_000_000];
    prop_oneof![
        (pos.clone(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        (pos.clone(), any::<u8>()).prop_map(|(at, value)| Mutation::Overwrite { at, value }),
        (
            pos.clone(),
            prop_oneof![Just(0u32), Just(u32::MAX), Just(0x8000_0000), any::<u32>()]
        )
            .prop_map(|(at, value)| Mutation::Put32 { at, value }),
        pos.prop_map(|at| Mutation::Truncate { at }),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let len = bytes.len().max(1);
    match *m {
        Mutation::Flip { at, bit } => {
            if let Some(b) = bytes.get_mut(at % len) {
                *b ^= 1 << bit;
            }
        }
        Mutation::Overwrite { at, value } => {
            if let Some(b) = bytes.get_mut(at % len) {
                *b = value;
            }
        }
        Mutation::Put32 { at, value } => {
            let at = at % len;
            for (i, b) in value.to_le_bytes().into_iter().enumerate() {
                if let Some(slot) = bytes.get_mut(at + i) {
                    *slot = b;
                }
            }
        }
        Mutation::Truncate { at } => bytes.truncate(at % len),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn mutated_captures_never_panic(
        pcapng in any::<bool>(),
        mutations in prop::collection::vec(mutation(), 1..12),
    ) {
        let original = capture_bytes("pku.cap");
        let mut bytes = if pcapng {
            write_pcapng(&read_ok(original))
        } else {
            original
        };
        for m in &mutations {
            apply(&mut bytes, m);
        }
        read_and_decode(bytes);
    }
}
