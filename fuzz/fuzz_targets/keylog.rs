//! TLS key logs (NSS format): any bytes must read without panicking, every
//! line counted once (a secret, malformed, an unknown label, a repeat or a
//! conflict), and reading the same bytes twice adds no secret.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rttlens_core::capture::keylog::KeyLog;

fuzz_target!(|data: &[u8]| {
    let mut log = KeyLog::new();
    log.add(data);
    let first = log.notes();
    assert!(log.len() as u64 <= first.secrets);
    log.add(data);
    let second = log.notes();
    assert_eq!(
        second.secrets, first.secrets,
        "a repeat is not a new secret"
    );
    assert_eq!(second.malformed_lines, 2 * first.malformed_lines);
    assert_eq!(second.unknown_labels, 2 * first.unknown_labels);
});
