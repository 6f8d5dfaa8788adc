//! `rttlens probe --http3` against the built-in QUIC server
//! (`rttlens_lab_server::quic`) in the lab at 40 ms: phases in order,
//! the handshake in round trips (1; 2 with Retry, a HelloRetryRequest or a
//! chain past the anti-amplification limit), resumption and 0-RTT as
//! quinn and rustls tell them, the `--pcap` file's UDP datagrams and key
//! log (checked with tshark), a closed UDP port. Runs the binary inside the
//! lab's client namespace (root, /dev/net/tun, iproute2, tshark; FAILS
//! naming what is missing). Every probe is bounded by `--max-time`.

use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use rttlens_lab::scenario::ScenarioCtx;
use rttlens_lab_net::{Host, Lab, LinkConfig};
use rttlens_lab_server::quic::{KxGroup, QuicConfig};

static ONE_LAB: Mutex<()> = Mutex::new(());

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rttlens"))
}

fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().expect("running rttlens")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn http3_usage_errors_exit_2() {
    for args in [
        vec!["probe", "--http3", "http://example.com/"],
        vec!["probe", "--http3", "--tfo", "https://example.com/"],
        vec!["probe", "--http3", "--http2", "https://example.com/"],
        vec!["probe", "--http3", "--tls", "1.2", "https://example.com/"],
    ] {
        let o = run(bin().args(&args));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).is_empty(), "{args:?} says why");
    }
}

/// A lab at 40 ms; `f` gets the context and a way to run the binary in
/// the client namespace.
fn with_lab(f: impl FnOnce(&mut ScenarioCtx, &dyn Fn(&[&str]) -> Output)) {
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("probe --http3 lab tests need root, /dev/net/tun and iproute2: {e}");
    }
    let _one = ONE_LAB.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::new(LinkConfig::with_rtt(Duration::from_millis(40))).expect("lab");
    let dir = std::env::temp_dir().join(format!("rttlens-probe-h3-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    let mut ctx = ScenarioCtx::new(&lab, dir.clone());
    let probe = |args: &[&str]| -> Output {
        let mut cmd = bin();
        cmd.args([
            "probe",
            "--http3",
            "-k",
            "--max-time",
            "20",
            "--format",
            "json",
        ])
        .args(args);
        run(&mut lab.netns(Host::Client).command(&cmd))
    };
    f(&mut ctx, &probe);
    drop(ctx);
    drop(lab);
    let _ = std::fs::remove_dir_all(dir);
}

/// The probe's JSON, which must have succeeded.
fn doc(o: &Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("JSON")
}

fn url(port: u16, path: &str) -> String {
    format!("https://{}:{port}{path}", Lab::SERVER_V4)
}

/// The checks of an attempt as `what → ok`.
fn check(a: &serde_json::Value, what: &str) -> Option<bool> {
    a["checks"]
        .as_array()?
        .iter()
        .find(|c| c["what"] == what)
        .and_then(|c| c["ok"].as_bool())
}

#[test]
fn http3_probe_against_the_builtin_quic_server() {
    if let Err(e) = rttlens_lab_net::require_command("tshark", "tshark") {
        panic!("this test checks the pcap with tshark: {e}");
    }
    with_lab(|ctx, probe| {
        // --- a plain server: phases, 1-RTT handshake, resumption, capture
        let port = ctx.quic_server(QuicConfig::default()).expect("QUIC server");
        let pcap = ctx.dir().join("h3.pcapng");
        let keylog = ctx.dir().join("keys.txt");
        let (p, k) = (pcap.to_str().unwrap(), keylog.to_str().unwrap());
        let o = probe(&[
            "-n",
            "2",
            "--pcap",
            p,
            "--keylog",
            k,
            &url(port, "/size/5000"),
        ]);
        let v = doc(&o);
        let attempts = v["probe"]["attempts"].as_array().expect("attempts");
        assert_eq!(attempts.len(), 2);
        for a in attempts {
            assert_eq!(a["transport"], "quic", "{a}");
            assert_eq!(a["response"]["status"], 200);
            assert_eq!(a["response"]["version"], "HTTP/3");
            assert_eq!(a["response"]["body_bytes"], 5000);
            assert_eq!(a["tls"]["alpn"], "h3", "{a}");
            let t = &a["timings"];
            let ms = |k: &str| t[k].as_f64().unwrap_or_else(|| panic!("timings.{k}: {t}"));
            // curl's h3 convention: connect and appconnect at handshake end
            assert_eq!(ms("connect_ms"), ms("appconnect_ms"), "{t}");
            let order = [
                "namelookup_ms",
                "connect_ms",
                "pretransfer_ms",
                "starttransfer_ms",
                "total_ms",
            ];
            for w in order.windows(2) {
                assert!(ms(w[0]) <= ms(w[1]), "{} ≤ {}: {t}", w[0], w[1]);
            }
            assert!(ms("connect_ms") > ms("namelookup_ms"), "{t}");
            assert!(ms("starttransfer_ms") > ms("pretransfer_ms"), "{t}");
            // the request waits a round trip at least
            assert!(ms("starttransfer_ms") - ms("pretransfer_ms") >= 35.0, "{t}");
            assert_eq!(a["rtt_source"], "quic", "{a}");
            let rtt = a["rtt_ms"].as_f64().expect("rtt");
            assert!((38.0..60.0).contains(&rtt), "RTT {rtt} ms at a 40 ms link");
            assert!(a["quic"]["srtt_ms"].as_f64().unwrap() >= 38.0, "{a}");
            assert!(a["quic"]["datagrams_in"].as_u64().unwrap() > 3, "{a}");
        }
        let (a0, a1) = (&attempts[0], &attempts[1]);
        assert_eq!(a0["quic"]["handshake_rtts"], 1, "{a0}");
        assert_eq!(a0["quic"]["key_shares"], 1, "{a0}");
        assert_eq!(a0["tls"]["handshake"], "full");
        // -n 2: the second attempt resumed (no certificate verified), and
        // sent no 0-RTT: this server's tickets allow none
        assert_eq!(a1["tls"]["handshake"], "resumed", "{a1}");
        assert_eq!(check(a1, "resumed"), Some(true), "{a1}");
        assert_eq!(a1["tls"]["early_data"], "not-offered", "{a1}");
        assert_eq!(a1["quic"]["handshake_rtts"], 1, "{a1}");
        let cap = &v["probe"]["capture"];
        assert_eq!(cap["status"], "captured", "{cap}");
        assert!(cap["packets"].as_u64().unwrap_or(0) >= 10, "{cap}");
        // the capture read back through the engine with the key log: every
        // packet decrypted, each attempt on its own QUIC connection, and
        // its phases set against the wire's
        assert!(cap["note"].is_null(), "nothing left unread: {cap}");
        let quic: Vec<&serde_json::Value> = v["connections"]
            .as_array()
            .expect("connections")
            .iter()
            .filter(|c| c["transport"] == "quic")
            .collect();
        assert_eq!(quic.len(), 2, "{quic:?}");
        for a in attempts {
            let i = a["quic_connection"].as_u64().expect("quic_connection");
            let q = quic
                .iter()
                .find(|q| q["index"] == i)
                .expect("the attempt's QUIC connection");
            assert_eq!(q["client"], a["local"], "{q}");
            assert!(q["not_decrypted"].is_null(), "{q}");
            assert_eq!(q["decrypted"], q["packets"], "{q}");
            let phases: Vec<&str> = a["wire_vs_app"]
                .as_array()
                .expect("wire_vs_app")
                .iter()
                .filter_map(|g| g["phase"].as_str())
                .collect();
            assert_eq!(
                phases,
                ["quic-handshake", "request", "transfer", "total"],
                "{a}"
            );
        }
        // the key log is in the pcapng (Decryption Secrets Block) with
        // QUIC's labels
        let bytes = std::fs::read(&pcap).expect("pcap");
        let has = |label: &str| bytes.windows(label.len()).any(|w| w == label.as_bytes());
        for label in [
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
            "SERVER_HANDSHAKE_TRAFFIC_SECRET",
            "CLIENT_TRAFFIC_SECRET_0",
            "SERVER_TRAFFIC_SECRET_0",
        ] {
            assert!(has(label), "DSB has {label}");
        }
        // tshark: UDP to the server, QUIC long headers, and the 1-RTT
        // packets opened with the embedded keys (STREAM frames seen)
        let udp_to_server = tshark(
            &pcap,
            port,
            &format!("udp.dstport == {port}"),
            "frame.number",
        );
        assert!(
            udp_to_server.len() >= 5,
            "UDP frames to the server: {udp_to_server:?}"
        );
        let types = tshark(&pcap, port, "quic", "quic.long.packet_type");
        let types: Vec<&str> = types.iter().flat_map(|l| l.split(',')).collect();
        for want in ["0", "2"] {
            assert!(
                types.contains(&want),
                "Initial (0), Handshake (2): {types:?}"
            );
        }
        let streams = tshark(
            &pcap,
            port,
            "quic.frame_type >= 8 && quic.frame_type <= 15",
            "frame.number",
        );
        assert!(!streams.is_empty(), "tshark decrypted STREAM frames");
        let h3 = tshark(&pcap, port, "http3", "frame.number");
        assert!(!h3.is_empty(), "tshark read HTTP/3 frames");

        // the text report: the waterfall and QUIC's own line
        let mut cmd = bin();
        cmd.args(["probe", "--http3", "-k", "--max-time", "20", "--no-capture"])
            .arg(url(port, "/size/5000"));
        let o = run(&mut ctx.lab().netns(Host::Client).command(&cmd));
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout);
        eprintln!("{text}");
        for want in [
            "HTTP/3 200",
            "(quic)",
            "QUIC: rtt",
            "handshake 1 RTT",
            "ALPN h3",
        ] {
            assert!(text.contains(want), "text lacks {want:?}:\n{text}");
        }

        // --- 0-RTT allowed: the second attempt's request rode in 0-RTT
        let port = ctx
            .quic_server(QuicConfig {
                early_data: true,
                ..QuicConfig::default()
            })
            .expect("QUIC server");
        let keylog0 = ctx.dir().join("keys-0rtt.txt");
        let k0 = keylog0.to_str().unwrap();
        let v = doc(&probe(&[
            "-n",
            "2",
            "--keylog",
            k0,
            &url(port, "/size/100"),
        ]));
        let keys = std::fs::read_to_string(&keylog0).expect("key log");
        assert!(
            keys.contains("CLIENT_EARLY_TRAFFIC_SECRET "),
            "the 0-RTT secret is logged:\n{keys}"
        );
        let a1 = &v["probe"]["attempts"][1];
        assert_eq!(a1["tls"]["early_data"], "accepted", "{a1}");
        assert_eq!(check(a1, "early-data-accepted"), Some(true), "{a1}");
        assert_eq!(check(a1, "resumed"), Some(true), "{a1}");
        // 0-RTT: the request went before the handshake completed
        let t = &a1["timings"];
        assert!(
            t["pretransfer_ms"].as_f64() < t["connect_ms"].as_f64(),
            "0-RTT request before the handshake end: {t}"
        );
        let v = doc(&probe(&["--sequence", &url(port, "/")]));
        let steps: Vec<&str> = v["probe"]["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["step"].as_str().unwrap())
            .collect();
        assert_eq!(steps, ["full", "resumed", "0-rtt"]);
        for a in v["probe"]["attempts"].as_array().unwrap() {
            for c in a["checks"].as_array().unwrap() {
                assert_eq!(c["ok"], true, "{a}");
            }
        }

        // --- the plain server again: --sequence's 0-RTT step is not accepted
        let port = ctx.quic_server(QuicConfig::default()).expect("QUIC server");
        let v = doc(&probe(&["--sequence", &url(port, "/")]));
        let z = &v["probe"]["attempts"][2];
        assert_eq!(z["step"], "0-rtt");
        assert_eq!(check(z, "early-data-accepted"), Some(false), "{z}");
        assert_eq!(check(z, "resumed"), Some(true), "{z}");

        // --- Retry: the probe still succeeds, the handshake takes 2 RTT
        let port = ctx
            .quic_server(QuicConfig {
                retry: true,
                ..QuicConfig::default()
            })
            .expect("QUIC server");
        let v = doc(&probe(&[&url(port, "/size/10")]));
        let a = &v["probe"]["attempts"][0];
        assert_eq!(a["response"]["status"], 200);
        assert_eq!(a["quic"]["handshake_rtts"], 2, "Retry: +1 RTT: {a}");

        // --- only secp256r1: a HelloRetryRequest, +1 RTT
        let port = ctx
            .quic_server(QuicConfig {
                kx_groups: vec![KxGroup::Secp256r1],
                ..QuicConfig::default()
            })
            .expect("QUIC server");
        let v = doc(&probe(&[&url(port, "/size/10")]));
        let a = &v["probe"]["attempts"][0];
        assert_eq!(a["tls"]["handshake"], "full-with-hello-retry", "{a}");
        assert_eq!(a["quic"]["key_shares"], 2, "{a}");
        assert_eq!(a["quic"]["handshake_rtts"], 2, "HRR: +1 RTT: {a}");

        // --- a chain past 3x the client's Initial: the server stalls a
        // round trip at the anti-amplification limit (RFC 9000 §8.1)
        let port = ctx
            .quic_server(QuicConfig {
                intermediates: 6,
                cert_padding: 2000,
                ..QuicConfig::default()
            })
            .expect("QUIC server");
        let v = doc(&probe(&[&url(port, "/size/10")]));
        let a = &v["probe"]["attempts"][0];
        assert_eq!(a["quic"]["handshake_rtts"], 2, "amplification: +1 RTT: {a}");
    });
}

#[test]
fn http3_to_a_closed_udp_port_says_udp_may_be_blocked() {
    with_lab(|_ctx, probe| {
        let o = probe(&["--connect-timeout", "2", &url(9, "/")]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("no answer to the QUIC Initial from 10.77.0.2:9 within 2 s")
                && e.contains("try without --http3"),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1, "one clear error: {e}");
    });
}

/// tshark's one field for the frames matching `filter`, one line each.
/// tshark's fields for `filter`, with the server's UDP port decoded as
/// QUIC: the server listens on an ephemeral port, and where that port (or
/// the client's) is one another dissector registers, tshark's QUIC
/// heuristic never runs and the capture reads as that protocol.
fn tshark(pcap: &std::path::Path, port: u16, filter: &str, field: &str) -> Vec<String> {
    let t = run(Command::new("tshark")
        .arg("-n")
        .args(["-d", &format!("udp.port=={port},quic")])
        .arg("-r")
        .arg(pcap)
        .args(["-Y", filter, "-T", "fields", "-e", field]));
    assert!(t.status.success(), "tshark: {}", stderr(&t));
    String::from_utf8_lossy(&t.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}
