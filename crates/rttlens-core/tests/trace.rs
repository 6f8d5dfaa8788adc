//! Traces (`pipeline::Options::trace`): every packet of a connection kept
//! for the pictures, checked against the analysis of the same capture
//! (`../shared/captures/itts`, real captures).

use std::path::PathBuf;

use rttlens_core::base::side::Side;
use rttlens_core::capture::CaptureReader;
use rttlens_core::model::ConnReport;
use rttlens_core::pipeline::{self, Options};
use rttlens_core::wire::TcpFlags;

fn analyze(name: &str, trace: bool) -> Vec<ConnReport> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/captures/itts")
        .join(name);
    assert!(
        p.exists(),
        "{} is missing: the tests need ../shared/captures",
        p.display()
    );
    let mut reader = CaptureReader::open(&p).expect("open capture");
    let mut conns = Vec::new();
    pipeline::run_with(
        &mut reader,
        &Options {
            trace,
            ..Default::default()
        },
        &mut |c| conns.extend(c.into_tcp()),
        &mut |_| {},
    )
    .expect("analyse");
    conns
}

#[test]
fn a_trace_holds_every_packet_and_changes_no_result() {
    for name in ["pku.cap", "thu.cap"] {
        let plain = analyze(name, false);
        let traced = analyze(name, true);
        assert!(
            plain.iter().all(|c| c.trace.is_none()),
            "{name}: no trace unless asked"
        );
        // the report is the same with and without the trace
        let json = |v: &[ConnReport]| serde_json::to_string(v).expect("json");
        assert_eq!(json(&plain), json(&traced), "{name}");
        let c = &traced[0];
        let t = c.trace.as_deref().expect("trace kept");
        assert_eq!(
            t.packets.len() as u64,
            c.frames,
            "{name}: one entry per packet"
        );
        assert_eq!(t.packets[0].at.frame, c.first_frame);
        assert_eq!(t.packets.last().map(|p| p.at.frame), Some(c.last_frame));
        assert!(t.packets.windows(2).all(|w| w[0].at.frame < w[1].at.frame));
        assert_eq!(t.wscale_known, [true, true], "{name}: both SYNs seen");
        let tr = c.transfer.as_ref().expect("a transfer");
        // the server's data: offsets from ISN + 1, ending at the bytes sent
        let data: Vec<_> = t
            .packets
            .iter()
            .filter(|p| p.side == tr.sender && p.len > 0)
            .collect();
        assert!(data.iter().all(|p| p.seq.is_some()));
        let end = data
            .iter()
            .map(|p| p.seq.unwrap_or(0) + u64::from(p.len))
            .max()
            .unwrap_or(0);
        assert!(
            end >= tr.bytes,
            "{name}: data reaches {end} < {} B",
            tr.bytes
        );
        // the client's ACKs of that data never go back, and the scaled
        // windows are the rounds' rwnd figures
        let acks: Vec<u64> = t
            .packets
            .iter()
            .filter(|p| p.side == Side::Client && !p.flags.contains(TcpFlags::SYN))
            .filter_map(|p| p.ack)
            .collect();
        assert!(
            acks.windows(2).all(|w| w[0] <= w[1]),
            "{name}: ACKs monotonic"
        );
        let windows: Vec<u64> = t
            .packets
            .iter()
            .filter(|p| p.side == Side::Client && !p.flags.contains(TcpFlags::SYN))
            .map(|p| p.window)
            .collect();
        for r in &tr.rounds {
            assert!(
                windows.contains(&r.rwnd),
                "{name}: round rwnd {} among the windows",
                r.rwnd
            );
        }
        // RTT samples: at least those the median was taken from
        assert!(!t.rtt.is_empty());
        // the TLS messages are named on the frames the findings cite
        let ch = t
            .labels
            .iter()
            .find(|l| l.1 == "ClientHello")
            .expect("ClientHello named");
        let tls_phase = c
            .ladder
            .iter()
            .find(|p| p.name == "tls")
            .expect("tls phase");
        assert!(ch.0 > tls_phase.start_frame && ch.0 <= tls_phase.end_frame);
        assert_eq!(t.labels_of(ch.0).next(), Some("ClientHello"));
    }
}
