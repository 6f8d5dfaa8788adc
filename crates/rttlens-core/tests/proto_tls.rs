//! TLS tracker over real handshakes captured on loopback with openssl
//! (fixtures in `src/proto/testdata/`, made by `regen.sh` there).

use rttlens_core::proto::tls::{HandshakeKind, TlsSummary, TlsTracker};
use rttlens_core::side::{Mark, Side};
use rttlens_core::time::Timestamp;

/// One payload segment of a fixture.
struct Segment {
    mark: Mark,
    side: Side,
    offset: u64,
    data: Vec<u8>,
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

fn load(text: &str) -> Vec<Segment> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Segment {
                mark: Mark {
                    frame: f[0].parse().unwrap(),
                    ts: Timestamp::from_nanos(f[1].parse().unwrap()),
                },
                side: if f[2] == "c" {
                    Side::Client
                } else {
                    Side::Server
                },
                offset: f[3].parse().unwrap(),
                data: unhex(f[4]),
            }
        })
        .collect()
}

fn run(text: &str) -> TlsSummary {
    let mut t = TlsTracker::new();
    for s in load(text) {
        t.push(s.side, s.offset, &s.data, s.mark);
    }
    assert_eq!(t.is_tls(), Some(true));
    t.into_summary()
}

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!("../src/proto/testdata/", $name, ".txt"))
    };
}

#[test]
fn dump_all() {
    for text in [
        fixture!("tls12_full"),
        fixture!("tls12_resume_ticket"),
        fixture!("tls12_resume_session_id"),
        fixture!("tls13_full"),
        fixture!("tls13_psk"),
        fixture!("tls13_hrr"),
        fixture!("tls13_0rtt"),
    ] {
        let s = run(text);
        println!("{}", text.lines().next().unwrap());
        let st = |x: &Option<rttlens_core::proto::tls::Step>| {
            x.as_ref()
                .map(|s| {
                    format!(
                        "{:?}#{} len={} f={} c={:?}",
                        s.side,
                        s.record,
                        s.length,
                        s.first.frame,
                        s.complete.map(|m| m.frame)
                    )
                })
                .unwrap_or("-".into())
        };
        if let Some(h) = s.handshake() {
            println!(
                " kind={} v={:x} hrr={} rtt={} res_off={} res_acc={} early={:?}/{}/{}B acc={:?}",
                h.kind.as_str(),
                h.version,
                h.hello_retry,
                h.round_trips,
                h.resumption_offered,
                h.resumption_accepted,
                h.early_data.offered,
                h.early_data.records,
                h.early_data.bytes,
                h.early_data.accepted
            );
            println!(
                " CH={} SH={} HRR={} CH2={}",
                st(&Some(h.client_hello.clone())),
                st(&Some(h.server_hello.clone())),
                st(&h.hello_retry_request),
                st(&h.second_client_hello)
            );
            println!(
                " flight_end={} cfin={} sfin={}",
                st(&h.server_flight_end),
                st(&h.client_finished),
                st(&h.server_finished)
            );
            println!(
                " nst={:?}",
                h.new_session_tickets
                    .iter()
                    .map(|s| (s.record, s.length, s.first.frame))
                    .collect::<Vec<_>>()
            );
            println!(
                " capp={} sapp={}",
                st(&h.client_first_app_data),
                st(&h.server_first_app_data)
            );
            println!(
                " sni={:?} alpn={:?}/{:?} suite={:?}",
                s.sni(),
                s.alpn_offered(),
                s.alpn_selected(),
                s.cipher_suite()
            );
        } else {
            println!("NO HANDSHAKE");
        }
        for d in [&s.client, &s.server] {
            for r in &d.records {
                println!(
                    "  {:?} #{} off={} ct={} len={} first={} complete={:?} opaque={}",
                    d.side,
                    r.index,
                    r.offset,
                    r.content_type.0,
                    r.length,
                    r.first.frame,
                    r.complete.map(|m| m.frame),
                    r.opaque
                );
            }
            println!("  notes {:?}", d.notes);
        }
    }
    let _ = HandshakeKind::Tls12Full;
}
