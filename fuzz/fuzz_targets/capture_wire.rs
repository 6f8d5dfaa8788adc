//! Arbitrary bytes as a capture file: read every frame and decode it. Then
//! the same bytes as one frame of each link type. Nothing may panic, and a
//! decoded segment never has more captured payload than its IP length says.
#![no_main]

use std::io::Cursor;

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

fuzz_target!(|data: &[u8]| {
    if let Ok(mut reader) = CaptureReader::new(Box::new(Cursor::new(data.to_vec()))) {
        while let Ok(Some(frame)) = reader.next_frame() {
            check(frame.link_type, frame.data, frame.orig_len);
        }
        let _ = (reader.notes(), reader.bytes_read(), reader.format());
    }
    if let Some((&selector, frame)) = data.split_first() {
        let link = LINK_TYPES[usize::from(selector) % LINK_TYPES.len()];
        check(link, frame, frame.len() as u32);
    }
});
