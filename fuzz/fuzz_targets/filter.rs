//! `--filter` expressions: parsing arbitrary text must never panic, and a
//! filter that parses must match segments without panicking; `not F`
//! must match exactly the segments `F` does not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rttlens_core::base::seq::SeqNumber;
use rttlens_core::filter::Filter;
use rttlens_core::wire::{TcpFlags, TcpOptions, TcpSegment};

fn seg(src: &str, sp: u16, dst: &str, dp: u16) -> TcpSegment<'static> {
    TcpSegment {
        src: src.parse().expect("address"),
        dst: dst.parse().expect("address"),
        src_port: sp,
        dst_port: dp,
        seq: SeqNumber(1),
        ack: SeqNumber(0),
        flags: TcpFlags::ACK,
        window: 100,
        options: TcpOptions::default(),
        payload: &[],
        payload_len: 0,
        ip_id: 0,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(f) = Filter::parse(text) else {
        return;
    };
    let segs = [
        seg("10.0.0.1", 40000, "192.168.1.9", 443),
        seg("fd00::1", 80, "fd00::2", 8080),
        seg("0.0.0.0", 0, "255.255.255.255", 65535),
    ];
    let not = Filter::parse(&format!("not ({text})")).expect("not (F) parses when F does");
    for s in &segs {
        assert_ne!(f.matches(s), not.matches(s), "{text}");
    }
});
