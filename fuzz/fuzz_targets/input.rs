//! Shared by the pipeline-level targets: the fuzzer's bytes as a capture.

/// pcap, µs, little-endian, snaplen 262144, Ethernet.
const PCAP_HEADER: [u8; 24] = [
    0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 1, 0, 0, 0,
];

/// `data` with a pcap header prepended half of the time (first byte odd),
/// so the fuzzer reaches the flow and analysis layers quickly.
pub fn capture(data: &[u8]) -> Vec<u8> {
    let mut input = Vec::with_capacity(data.len() + 24);
    if data.first().is_some_and(|b| b & 1 == 1) {
        input.extend_from_slice(&PCAP_HEADER);
        input.extend_from_slice(&data[1..]);
    } else {
        input.extend_from_slice(data);
    }
    input
}
