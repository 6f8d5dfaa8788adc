//! Arbitrary bytes as the `struct tcp_info` a kernel wrote
//! (`rttlens_sys::TcpInfo::from_bytes`). Nothing may panic; anything
//! shorter than the original 104-byte struct is `None`; a longer buffer
//! never changes a field that a shorter prefix already decoded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rttlens_sys::TcpInfo;

fuzz_target!(|data: &[u8]| {
    let full = TcpInfo::from_bytes(data);
    assert_eq!(full.is_none(), data.len() < 104);
    let Some(full) = full else { return };
    let _ = (
        full.syn_data_acked(),
        full.has_timestamps(),
        full.has_sack(),
        full.has_wscale(),
    );
    assert!(full.fastopen_client_fail.is_none_or(|v| v <= 3));
    // A prefix decodes to the same values where it has them.
    let cut = 104 + usize::from(data[0]) % (data.len() - 103);
    let part = TcpInfo::from_bytes(&data[..cut]).expect("a prefix of ≥ 104 bytes decodes");
    assert_eq!(
        (part.rtt_us, part.snd_mss, part.total_retrans),
        (full.rtt_us, full.snd_mss, full.total_retrans)
    );
    if part.delivery_rate.is_some() {
        assert_eq!(part.delivery_rate, full.delivery_rate);
    }
    if part.snd_wnd.is_some() {
        assert_eq!(part, full);
    }
});
