//! The built-in server's handshake flight on the wire: the server
//! (`rttlens-lab-server`'s `builtin`, in-process in the lab's server
//! namespace) with its flight in two writes, curl in the client namespace,
//! tcpdump on the server's TUN device, the shared lab's delay link
//! between them (`rttlens_lab_net::Lab`). Needs root, `/dev/net/tun`,
//! iproute2, tcpdump and curl (fails saying which is missing).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use rttlens_lab::ScenarioCtx;
use rttlens_lab_net::{Host, Lab, LinkConfig};
use rttlens_lab_server::builtin::{HandshakeWrites, ServerConfig};
use rttlens_lab_server::TlsVersion;

fn require(tool: &'static str, package: &'static str) {
    if let Err(e) = rttlens_lab_net::require_command(tool, package) {
        panic!("{e}");
    }
}

/// One captured segment: (time in s, from the server?, payload length).
fn segments(pcap: &Path, port: u16) -> Vec<(f64, bool, usize)> {
    let out = Command::new("tcpdump")
        .args(["-r"])
        .arg(pcap)
        .args(["-nn", "-tt"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let from_server = format!("{}.{port} >", Lab::SERVER_V4);
    text.lines()
        .filter_map(|l| {
            let t: f64 = l.split_whitespace().next()?.parse().ok()?;
            let len: usize = l.rsplit("length ").next()?.trim().parse().ok()?;
            Some((t, l.contains(&from_server), len))
        })
        .collect()
}

/// The server's segments and the client's as the server sees them, for a
/// TLS 1.3 exchange with the flight in two writes and `TCP_NODELAY`
/// `nodelay`.
fn flight_on_the_wire(nodelay: bool) -> Vec<(f64, bool, usize)> {
    let lab = Lab::new(LinkConfig::with_rtt(Duration::from_millis(20)))
        .unwrap_or_else(|e| panic!("the lab: {e}"));
    let dir = std::env::temp_dir().join(format!("rttlens-flight-{}-{nodelay}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("server.pcap");
    let dump = lab
        .tcpdump(Host::Server, &pcap)
        .unwrap_or_else(|e| panic!("tcpdump: {e}"));
    let mut ctx = ScenarioCtx::new(&lab, dir.clone());
    let port = ctx
        .builtin(ServerConfig {
            nodelay,
            handshake_writes: HandshakeWrites::Two,
            tls_versions: vec![TlsVersion::Tls13],
            ..ServerConfig::default()
        })
        .unwrap_or_else(|e| panic!("the built-in server: {e}"));
    let got = ctx
        .curl(&[
            "--tlsv1.3",
            "-w",
            "%{size_download}",
            &format!("https://{}:{port}/size/10", Lab::SERVER_V4),
        ])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got, "10");
    // the close, then the capture
    std::thread::sleep(Duration::from_millis(100));
    drop(ctx);
    dump.stop();
    let segs = segments(&pcap, port);
    let _ = std::fs::remove_dir_all(&dir);
    segs
}

#[test]
fn handshake_writes_two_gives_two_segments_and_nagle_waits_for_the_ack() {
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("{e}");
    }
    require("tcpdump", "tcpdump");
    require("curl", "curl");
    for nodelay in [true, false] {
        let segs = flight_on_the_wire(nodelay);
        eprintln!("nodelay {nodelay}: (time s, from server, payload B) {segs:?}");
        let data: Vec<usize> = segs
            .iter()
            .enumerate()
            .filter(|(_, s)| s.1 && s.2 > 0)
            .map(|(i, _)| i)
            .collect();
        assert!(data.len() >= 2, "{segs:?}");
        let (a, b) = (data[0], data[1]);
        assert_eq!(
            segs[b].2,
            rttlens_lab_server::builtin::SECOND_WRITE_BYTES,
            "{segs:?}"
        );
        if !nodelay {
            // Nagle: the second, small segment leaves only after the
            // client's pure ACK of the first (no client data in between).
            let acks: Vec<_> = segs[a + 1..b].iter().filter(|s| !s.1 && s.2 == 0).collect();
            assert!(
                !acks.is_empty(),
                "no ACK between the two flight segments: {segs:?}"
            );
            assert!(segs[b].0 >= acks[0].0, "{segs:?}");
        }
    }
}
