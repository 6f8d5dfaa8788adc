//! QUIC without the key log (issue 45): what the Initials, the headers and
//! the timing prove, and nothing the keyed reading contradicts.
//!
//! The spin bit (RFC 9000 §17.4) is read from short headers without keys:
//! on the public QUIC captures it is a spin signal (sv_quic-retry), never
//! set (curl against Google), or set at random (Firefox against
//! Cloudflare, whose flips come faster than the RTT: no RTT is claimed
//! from them). Where it spins, its periods are no shorter than the RTT the
//! ACK frames measured. The Illustrated QUIC capture read with and without
//! its key log: the keyless reading's RTT and findings are the keyed one's
//! or less, never more.

use std::path::PathBuf;

use rttlens_core::capture::CaptureReader;
use rttlens_core::model::{Connection, QuicReport};
use rttlens_core::pipeline;

fn public(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/captures/public")
        .join(name);
    assert!(
        p.exists(),
        "{} is missing: the tests need ../shared/captures",
        p.display()
    );
    p
}

fn quic(name: &str, keylog: Option<&str>) -> Vec<QuicReport> {
    let mut reader = CaptureReader::open(&public(name)).expect("capture");
    if let Some(k) = keylog {
        reader
            .key_store()
            .add(&std::fs::read(public(k)).expect("key log"));
    }
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
fn the_spin_bit_is_a_signal_only_where_it_flips_once_a_round_trip() {
    let signal = |name: &str| -> Vec<&'static str> {
        quic(name, None)
            .iter()
            .map(|q| q.spin.as_ref().map_or("none", |s| s.signal))
            .collect()
    };
    assert_eq!(signal("sv_quic-retry.pcap"), ["spins"]);
    assert_eq!(signal("zeek_quic-curl-http3-google.pcap"), ["off"]);
    assert_eq!(signal("zeek_quic-firefox-cloudflare.pcap"), ["random"]);
    // every QUIC capture: a spin RTT never undercuts the ACK frames' RTT
    // by more than the rule allows, and only a spin signal gives one
    let dir = public("sv_quic-retry.pcap").parent().unwrap().to_path_buf();
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.contains("quic") && n.ends_with(".pcap"))
        .collect();
    names.sort();
    assert!(names.len() >= 5, "{names:?}");
    for name in &names {
        for q in quic(name, None) {
            let Some(s) = &q.spin else { continue };
            if s.signal != "spins" {
                assert!(s.min_ms.is_none() && s.median_ms.is_none(), "{name}: {s:?}");
                continue;
            }
            let rtt = q.rtt.as_ref().expect("checked against an RTT").min_ms;
            let min = s.min_ms.expect("a spin RTT");
            assert!(
                min >= 0.75 * rtt,
                "{name}: spin {min} ms, ACK frames {rtt} ms"
            );
        }
    }
}

#[test]
fn without_the_key_log_nothing_contradicts_the_keyed_reading() {
    let keyed = quic("illustrated_quic.pcap", Some("illustrated_quic.keylog"));
    let keyless = quic("illustrated_quic.pcap", None);
    assert_eq!(keyed.len(), 1);
    assert_eq!(keyless.len(), 1);
    let (k, n) = (&keyed[0], &keyless[0]);
    assert!(k.key_log && !n.key_log);
    assert_eq!(
        (k.packets, k.datagrams, k.bytes),
        (n.packets, n.datagrams, n.bytes)
    );
    // the Initials' ACKs give an RTT without keys; the keyed reading has
    // those samples and more, so its minimum is no larger
    let (rk, rn) = (k.rtt.as_ref().unwrap(), n.rtt.as_ref().unwrap());
    assert!(rn.samples >= 1 && rn.samples <= rk.samples, "{rn:?} {rk:?}");
    assert!(rn.min_ms >= rk.min_ms, "{rn:?} {rk:?}");
    // the spin bit needs no key: the same reading
    assert_eq!(format!("{:?}", k.spin), format!("{:?}", n.spin));
    // findings without keys are among the keyed ones
    for f in &n.findings {
        assert!(
            k.findings.iter().any(|g| g.id == f.id),
            "{} without keys only: {:?}",
            f.id,
            k.findings
        );
    }
    assert_eq!(
        k.handshake.sni, n.handshake.sni,
        "the ClientHello is in an Initial"
    );
}
