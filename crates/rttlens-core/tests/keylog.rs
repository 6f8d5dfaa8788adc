//! The key logs published beside the Illustrated TLS 1.2, TLS 1.3 and QUIC
//! connections (`../shared/captures/public/SOURCES.md`): every line is a
//! secret of the one connection, whose ClientHello random is 00 01 … 1f.

use std::path::PathBuf;

use rttlens_core::capture::keylog::{KeyLog, KeyLogNotes, SecretLabel};

fn public(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/captures/public")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (../shared/captures beside the repository)",
            p.display()
        )
    })
}

fn random() -> [u8; 32] {
    std::array::from_fn(|i| i as u8)
}

#[test]
fn illustrated_tls13_and_quic_logs_hold_five_secrets_of_their_hash() {
    // TLS_AES_256_GCM_SHA384 (the TLS 1.3 connection) and TLS_AES_128_GCM_SHA256
    // (QUIC): HKDF secrets as long as the hash (RFC 8446 §7.1)
    for (name, len) in [
        ("illustrated_tls13.keylog", 48),
        ("illustrated_quic.keylog", 32),
    ] {
        let mut log = KeyLog::new();
        log.add(&public(name));
        assert_eq!(
            log.notes(),
            KeyLogNotes {
                secrets: 5,
                ..KeyLogNotes::default()
            },
            "{name}"
        );
        let s = log.get(&random()).expect("the connection's secrets");
        for l in [
            SecretLabel::ClientHandshakeTraffic,
            SecretLabel::ServerHandshakeTraffic,
            SecretLabel::ClientTraffic0,
            SecretLabel::ServerTraffic0,
            SecretLabel::Exporter,
        ] {
            assert_eq!(
                s.get(l).map(<[u8]>::len),
                Some(len),
                "{name} {}",
                l.as_str()
            );
        }
        assert_eq!(s.get(SecretLabel::MasterSecret), None);
    }
}

#[test]
fn illustrated_tls12_log_holds_the_master_secret_and_merges() {
    let mut log = KeyLog::new();
    log.add(&public("illustrated_tls12.keylog"));
    log.add(&public("illustrated_tls13.keylog"));
    // the same client random in both: one connection's entry, six secrets
    assert_eq!(log.len(), 1);
    assert_eq!(log.notes().secrets, 6);
    let s = log.get(&random()).unwrap();
    assert_eq!(s.get(SecretLabel::MasterSecret).map(<[u8]>::len), Some(48));
    // read twice: nothing new, nothing conflicting
    log.add(&public("illustrated_tls12.keylog"));
    assert_eq!((log.notes().secrets, log.notes().conflicts), (6, 0));
}
