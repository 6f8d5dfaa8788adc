//! A QUIC handshake started again after Version Negotiation (RFC 9000
//! §6.2) is read as the handshake that happened: the lab's
//! `quic-version-negotiation` scenario, cut to its first 16 frames — the
//! quic-go client offers v2 (its ClientHello over two Initials), the
//! v1-only quinn server answers Version Negotiation to each, and the client
//! starts again in v1 with a new ClientHello (a new random, under which its
//! key log holds the secrets), then sends GET /size/20000.

use rttlens_core::capture::CaptureReader;
use rttlens_core::model::{Connection, QuicReport};
use rttlens_core::pipeline;

fn quic(name: &str) -> Vec<QuicReport> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testdata");
    let mut reader = CaptureReader::open(&dir.join(format!("{name}.pcapng"))).expect("capture");
    let keylog = std::fs::read(dir.join(format!("{name}.keylog"))).expect("key log");
    reader.key_store().add(&keylog);
    let mut quic = Vec::new();
    let on_conn = &mut |c| {
        if let Connection::Quic(q) = c {
            quic.push(*q);
        }
    };
    pipeline::run(&mut reader, on_conn, &mut |_| {}).expect("analysis");
    quic
}

#[test]
fn the_handshake_after_version_negotiation_is_decrypted_and_nothing_is_lost() {
    let q = quic("quic-vn-v2-then-v1");
    assert_eq!(q.len(), 1, "one connection across the change of version");
    let c = &q[0];
    assert!(
        c.key_log,
        "the key log's secrets are the second ClientHello's"
    );
    assert!(
        c.not_decrypted.is_empty(),
        "every packet opens: {:?}",
        c.not_decrypted
    );
    // the v2 Initials the server discarded are not lost
    assert_eq!(c.lost, [0, 0]);
    assert_eq!(c.streams.len(), 1, "the GET decoded from HTTP/3");
    let vn: Vec<_> = c
        .findings
        .iter()
        .filter(|f| f.id == "quic-version-negotiation")
        .collect();
    assert_eq!(vn.len(), 1, "{:?}", c.findings);
    let frames: Vec<u64> = vn[0].evidence.iter().map(|e| e.frame).collect();
    // the v2 Initial, the Version Negotiation, the v1 Initial (the
    // second v2 Initial's Version Negotiation comes after it, frame 6)
    assert_eq!(frames, [1, 3, 4]);
    let rtts = vn[0].cost.rtts.expect("an RTT");
    assert!((0.9..1.1).contains(&rtts), "about one round trip: {rtts}");
    assert_eq!(c.findings.len(), 1, "{:?}", c.findings);
}
