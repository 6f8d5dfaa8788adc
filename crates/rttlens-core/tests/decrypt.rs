//! Decryption with key logs on the Illustrated TLS 1.2 and TLS 1.3
//! connections (`../shared/captures/public/SOURCES.md`): their pages show
//! each record decrypted — TLS 1.2 (TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA):
//! the client's Finished, "ping" and close_notify, the server's Finished and
//! "pong"; TLS 1.3 (TLS_AES_256_GCM_SHA384): the client's Finished and
//! "ping", the server's EncryptedExtensions, Certificate, CertificateVerify,
//! Finished, two NewSessionTickets and "pong". Wrong, missing and cut keys
//! or bytes are said, never guessed.

use std::path::PathBuf;

use rttlens_core::capture::CaptureReader;
use rttlens_core::model::ConnReport;
use rttlens_core::pipeline;
use rttlens_core::proto::tls::decrypt::{DecryptStatus, Decryption};

fn public(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/captures/public")
        .join(name)
}

fn read(name: &str) -> Vec<u8> {
    let p = public(name);
    std::fs::read(&p).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (../shared/captures beside the repository)",
            p.display()
        )
    })
}

/// The connections of `capture` analysed with `keylog` (none: no key log).
fn analyse(capture: &[u8], keylog: Option<&[u8]>) -> Vec<ConnReport> {
    let mut reader = CaptureReader::new(Box::new(std::io::Cursor::new(capture.to_vec()))).unwrap();
    if let Some(k) = keylog {
        reader.key_store().add(k);
    }
    let mut conns = Vec::new();
    pipeline::run(
        &mut reader,
        &mut |c| conns.extend(c.into_tcp()),
        &mut |_| {},
    )
    .expect("pipeline");
    conns
}

fn decryption(c: &ConnReport) -> Decryption {
    c.tls
        .as_ref()
        .and_then(|t| t.decryption.clone())
        .expect("decryption tried: a key log was given")
}

#[test]
fn illustrated_connections_decrypt_record_for_record() {
    for (name, records) in [("tls12", [3, 2]), ("tls13", [2, 7])] {
        let conns = analyse(
            &read(&format!("illustrated_{name}.pcap")),
            Some(&read(&format!("illustrated_{name}.keylog"))),
        );
        assert_eq!(conns.len(), 1, "{name}");
        let d = decryption(&conns[0]);
        assert_eq!(d.status, DecryptStatus::Decrypted, "{name}: {d:?}");
        assert_eq!(d.records, records, "{name}: records opened per side");
        assert_eq!(d.app_bytes, [4, 4], "{name}: \"ping\" and \"pong\"");
        assert_eq!((d.failed, d.cut, d.first_failure), (0, 0, None), "{name}");
    }
}

#[test]
fn without_a_key_log_nothing_changes_and_nothing_is_said() {
    let conns = analyse(&read("illustrated_tls13.pcap"), None);
    let tls = conns[0].tls.as_ref().expect("TLS");
    assert!(tls.decryption.is_none());
    let json = serde_json::to_string(&conns[0]).unwrap();
    assert!(!json.contains("decryption"), "{json}");
}

#[test]
fn keys_of_another_connection_or_wrong_keys_are_said() {
    // the TLS 1.2 capture with the TLS 1.3 log: the same client random
    // (00 01 … 1f) but no master secret
    let conns = analyse(
        &read("illustrated_tls12.pcap"),
        Some(&read("illustrated_tls13.keylog")),
    );
    assert_eq!(decryption(&conns[0]).status, DecryptStatus::NoKeys);
    // a log for another client random
    let other = String::from_utf8(read("illustrated_tls13.keylog"))
        .unwrap()
        .replace(
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        );
    let conns = analyse(&read("illustrated_tls13.pcap"), Some(other.as_bytes()));
    assert_eq!(decryption(&conns[0]).status, DecryptStatus::NoKeys);
    // the right random, wrong secrets: every record fails
    let wrong: String = String::from_utf8(read("illustrated_tls13.keylog"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut f: Vec<String> = l.split_whitespace().map(str::to_string).collect();
            if f.len() == 3 {
                f[2] = "ab".repeat(f[2].len() / 2);
            }
            f.join(" ") + "\n"
        })
        .collect();
    let conns = analyse(&read("illustrated_tls13.pcap"), Some(wrong.as_bytes()));
    let d = decryption(&conns[0]);
    assert_eq!(d.status, DecryptStatus::WrongKeys, "{d:?}");
    assert_eq!(d.records, [0, 0]);
    assert_eq!(d.failed, 9, "every encrypted record counted: {d:?}");
    assert!(d.first_failure.is_some());
}

/// The same capture with the frames after the server's first flight cut
/// to 96 bytes (frame 9 holds the client's Finished, 13 and 15 the two
/// NewSessionTickets): those three records are counted as cut, none is
/// guessed, and the records after them ("ping", "pong") still open with
/// the keys their sequence numbers call for.
#[test]
fn records_cut_by_the_snapshot_length_are_counted_not_guessed() {
    let whole = read("illustrated_tls13.pcap");
    let cut = snap(&whole, 96, 9);
    let conns = analyse(&cut, Some(&read("illustrated_tls13.keylog")));
    let d = decryption(&conns[0]);
    assert_eq!(d.status, DecryptStatus::Partial, "{d:?}");
    assert_eq!(d.cut, 3, "{d:?}");
    assert_eq!(d.failed, 0, "{d:?}");
    assert_eq!(d.records, [1, 5], "{d:?}");
    assert_eq!(d.app_bytes, [4, 4], "{d:?}");
    assert_eq!(d.first_failure.map(|f| f.frame), Some(9));
}

/// `capture` (classic pcap, little-endian, µs) with every frame from
/// number `from` on cut to `snaplen` bytes, as `editcap -s` writes it.
fn snap(capture: &[u8], snaplen: u32, from: u64) -> Vec<u8> {
    assert_eq!(
        &capture[..4],
        &[0xd4, 0xc3, 0xb2, 0xa1],
        "little-endian pcap"
    );
    let mut out = capture[..24].to_vec();
    let mut at = 24;
    let mut number = 0;
    while at + 16 <= capture.len() {
        number += 1;
        let incl = u32::from_le_bytes(capture[at + 8..at + 12].try_into().unwrap()) as usize;
        let keep = if number >= from {
            incl.min(snaplen as usize)
        } else {
            incl
        };
        let mut head = capture[at..at + 16].to_vec();
        head[8..12].copy_from_slice(&(keep as u32).to_le_bytes());
        out.extend_from_slice(&head);
        out.extend_from_slice(&capture[at + 16..at + 16 + keep]);
        at += 16 + incl;
    }
    out
}
