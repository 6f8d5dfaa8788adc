//! Arbitrary bytes as a capture file: read every frame and decode it. Then
//! the same bytes as one frame of each link type. Nothing may panic, and a
//! decoded segment never has more captured payload than its IP length says.
//! The bytes are read twice, as a stream and in place (`from_bytes`, the
//! path of a mapped file): both must give the same frames, notes, byte
//! count and error.
#![no_main]

use std::io::Cursor;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use rttlens_core::capture::{CaptureReader, LinkType};
use rttlens_core::wire::{decode, Decoded};

const LINK_TYPES: [LinkType; 8] = [
    LinkType::ETHERNET,
    LinkType::LINUX_SLL,
    LinkType::LINUX_SLL2,
    LinkType::RAW,
    LinkType::NULL,
    LinkType::LOOP,
    LinkType::IPV6,
    LinkType(4711),
];

fn check(link: LinkType, data: &[u8], orig_len: u32) {
    if let Ok(Decoded::Tcp(seg)) = decode(link, data, orig_len) {
        assert!(seg.payload.len() as u64 <= u64::from(seg.payload_len));
        assert!(seg.options.sack().len() <= 4);
    }
}

/// Every frame, then the error, notes and byte count, as text.
fn read_all(reader: Result<CaptureReader, rttlens_core::capture::CaptureError>) -> Vec<String> {
    let mut reader = match reader {
        Ok(r) => r,
        Err(e) => return vec![e.to_string()],
    };
    let mut out = Vec::new();
    loop {
        match reader.next_shared() {
            Ok(Some((frame, shared))) => {
                assert_eq!(shared.bytes(), frame.data);
                check(frame.link_type, frame.data, frame.orig_len);
                out.push(format!("{frame:?}"));
            }
            Ok(None) => break,
            Err(e) => {
                out.push(e.to_string());
                break;
            }
        }
    }
    out.push(format!(
        "{:?} {} {} {}",
        reader.notes(),
        reader.bytes_read(),
        reader.format(),
        reader.frames_seen()
    ));
    out
}

fuzz_target!(|data: &[u8]| {
    let streamed = read_all(CaptureReader::new(Box::new(Cursor::new(data.to_vec()))));
    let in_place = read_all(CaptureReader::from_bytes(Arc::new(data.to_vec())));
    assert_eq!(streamed, in_place);
    if let Some((&selector, frame)) = data.split_first() {
        let link = LINK_TYPES[usize::from(selector) % LINK_TYPES.len()];
        check(link, frame, frame.len() as u32);
    }
});
