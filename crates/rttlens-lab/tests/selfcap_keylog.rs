//! The self-capture's key log on real TLS: curl with `SSLKEYLOGFILE`
//! against the lab's built-in rustls server (`rttlens-lab-server`) in a
//! fresh network namespace, captured by `rttlens_live::SelfCapture`; the
//! pcapng with the key log embedded decrypts in tshark without a key file.
//! (Here rather than beside the other self-capture tests in `rttlens-lab-net`:
//! the server's crate depends on that one.) Needs root, iproute2 and curl;
//! tshark for the decryption check.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use rttlens_core::capture::CaptureReader;
use rttlens_core::model::ConnReport;
use rttlens_core::model::DecryptStatus;
use rttlens_core::pipeline;
use rttlens_lab_net::netns::Netns;
use rttlens_live::{Captured, SelfCapture};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Fail with a clear message when the test cannot run here.
fn require_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "selfcap tests need root (CAP_NET_RAW for AF_PACKET, network namespaces): run them as root"
    );
    if let Err(e) = rttlens_lab_net::require_command("ip", "iproute2") {
        panic!("{e}");
    }
}

/// A fresh namespace with only `lo`, up.
fn fresh_netns() -> Netns {
    let name = format!(
        "rttlens-keylog-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    Netns::create(&name).expect("creating a network namespace")
}

/// The capture as pcapng (with `keylog` embedded) and its connections.
fn analyse(c: &Captured, keylog: Option<&[u8]>) -> (Vec<ConnReport>, Vec<u8>) {
    let mut file = Vec::new();
    c.write_pcapng(&mut file, keylog).expect("write pcapng");
    let mut reader = CaptureReader::new(Box::new(std::io::Cursor::new(file.clone()))).unwrap();
    let mut conns = Vec::new();
    pipeline::run(
        &mut reader,
        &mut |r| conns.extend(r.into_tcp()),
        &mut |_| {},
    )
    .expect("pipeline");
    (conns, file)
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rttlens-keylog-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// curl with SSLKEYLOGFILE against the built-in TLS server; the pcapng
/// with the key log embedded decrypts in tshark without a key file.
#[test]
fn tshark_decrypts_with_the_embedded_keylog() {
    require_root();
    if let Err(e) = rttlens_lab_net::require_command("curl", "curl") {
        panic!("{e}");
    }
    if rttlens_lab_net::require_command("tshark", "tshark").is_err() {
        eprintln!(
            "NOTE: tshark is not installed, so this test checks the capture and key log \
             but NOT that Wireshark decrypts it (apt-get install tshark)"
        );
    }
    let ns = fresh_netns();
    let keylog_path = tmp("keylog.txt");
    let kp = keylog_path.clone();
    let captured = ns
        .run(move || {
            use rttlens_lab_server::builtin::{Server, ServerConfig};
            let server = Server::bind("127.0.0.1:0".parse().unwrap(), ServerConfig::default())
                .expect("bind the built-in server");
            let addr = server.local_addr();
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            let srv = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(server.run_until(async {
                    let _ = rx.await;
                }))
            });
            let cap = SelfCapture::start(addr, None).expect("start");
            // A child forked from this thread lives in its namespace.
            let out = Command::new("curl")
                .args(["-sk", "--http1.1", "--max-time", "10", "-o", "/dev/null"])
                .arg(format!("https://127.0.0.1:{}/size/1234", addr.port()))
                .env("SSLKEYLOGFILE", &kp)
                .output()
                .expect("running curl");
            assert!(
                out.status.success(),
                "curl: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let _ = tx.send(());
            srv.join().unwrap().expect("built-in server");
            cap.stop().expect("stop")
        })
        .expect("enter netns");
    let keylog = std::fs::read(&keylog_path).expect("curl wrote SSLKEYLOGFILE");
    assert!(
        String::from_utf8_lossy(&keylog).contains("CLIENT_HANDSHAKE_TRAFFIC_SECRET"),
        "a TLS 1.3 key log"
    );
    let (conns, file) = analyse(&captured, Some(&keylog));
    assert_eq!(conns.len(), 1, "{conns:?}");
    assert_eq!(conns[0].protocol, "tls");
    // rttlens decrypts with the embedded key log: every record opened, the
    // request inside timed
    let d = conns[0].tls.as_ref().and_then(|t| t.decryption.clone());
    let d = d.expect("decryption tried with the DSB's secrets");
    assert_eq!(d.status, DecryptStatus::Decrypted, "{d:?}");
    assert_eq!((d.failed, d.cut), (0, 0), "{d:?}");
    let rows = &conns[0].requests;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].target.as_deref(), Some("/size/1234"));
    assert_eq!(rows[0].status, Some(200));
    assert_eq!(rows[0].response_bytes, Some(1234));
    // rttlens reads the embedded key log back: the same secrets as curl's file
    let mut reader = CaptureReader::new(Box::new(std::io::Cursor::new(file.clone()))).unwrap();
    while reader.next_frame().expect("frames").is_some() {}
    let mut from_file = rttlens_core::capture::keylog::KeyLog::new();
    from_file.add(&keylog);
    let embedded = reader.key_log();
    assert!(from_file.notes().secrets >= 5, "{:?}", from_file.notes());
    assert_eq!(embedded.notes(), from_file.notes());
    assert_eq!(embedded.len(), from_file.len());
    let pcap = tmp("tls.pcapng");
    std::fs::write(&pcap, &file).unwrap();
    if rttlens_lab_net::require_command("tshark", "tshark").is_ok() {
        let run = |filter: &str| {
            let out = Command::new("tshark")
                .args(["-n", "-r"])
                .arg(&pcap)
                .args(["-Y", filter, "-T", "fields", "-e", "http.request.uri"])
                .output()
                .expect("running tshark");
            assert!(
                out.status.success(),
                "tshark: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        assert_eq!(
            run("http.request"),
            "/size/1234",
            "tshark decrypted the request"
        );
        // Without the key log nothing decrypts.
        let (_, plain) = analyse(&captured, None);
        std::fs::write(&pcap, plain).unwrap();
        assert_eq!(
            run("http.request"),
            "",
            "no request visible without the keys"
        );
    }
    let _ = std::fs::remove_file(&pcap);
    let _ = std::fs::remove_file(&keylog_path);
    let _ = std::fs::remove_dir(keylog_path.parent().unwrap());
}

/// The built-in server on one keep-alive connection, TLS 1.2 (AES-GCM) and
/// TLS 1.3: ten requests, the tenth slow (`?think=300`). With curl's key
/// log every record opens, each request gets its row with its own think
/// time, and the request and response frames are tshark's (`http.request`,
/// `http.response` decrypted with the same key log).
#[test]
fn keep_alive_requests_inside_tls_each_get_their_row() {
    require_root();
    if let Err(e) = rttlens_lab_net::require_command("curl", "curl") {
        panic!("{e}");
    }
    use rttlens_probe::TlsVersion;
    for version in [TlsVersion::Tls12, TlsVersion::Tls13] {
        let ns = fresh_netns();
        let keylog_path = tmp(&format!("keylog-{version:?}.txt"));
        let kp = keylog_path.clone();
        let captured = ns
            .run(move || {
                use rttlens_lab_server::builtin::{Server, ServerConfig};
                let cfg = ServerConfig {
                    tls_versions: vec![version],
                    ..ServerConfig::default()
                };
                let server =
                    Server::bind("127.0.0.1:0".parse().unwrap(), cfg).expect("bind the server");
                let addr = server.local_addr();
                let (tx, rx) = tokio::sync::oneshot::channel::<()>();
                let srv = std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap();
                    rt.block_on(server.run_until(async {
                        let _ = rx.await;
                    }))
                });
                let cap = SelfCapture::start(addr, None).expect("start");
                let mut curl = Command::new("curl");
                curl.args(["-sk", "--http1.1", "--max-time", "20"]);
                for i in 1..=10 {
                    let think = if i == 10 { "?think=300" } else { "" };
                    curl.arg(format!(
                        "https://127.0.0.1:{}/size/{}{think}",
                        addr.port(),
                        100 * i
                    ));
                    curl.args(["-o", "/dev/null"]);
                }
                let out = curl.env("SSLKEYLOGFILE", &kp).output().expect("curl");
                assert!(
                    out.status.success(),
                    "curl: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let _ = tx.send(());
                srv.join().unwrap().expect("built-in server");
                cap.stop().expect("stop")
            })
            .expect("enter netns");
        let keylog = std::fs::read(&keylog_path).expect("curl wrote SSLKEYLOGFILE");
        let (conns, file) = analyse(&captured, Some(&keylog));
        assert_eq!(conns.len(), 1, "one keep-alive connection: {conns:?}");
        let c = &conns[0];
        let d = c
            .tls
            .as_ref()
            .and_then(|t| t.decryption.clone())
            .expect("keys");
        assert_eq!(d.status, DecryptStatus::Decrypted, "{version:?}: {d:?}");
        assert_eq!((d.failed, d.cut), (0, 0), "{version:?}: {d:?}");
        let rows = &c.requests;
        assert_eq!(rows.len(), 10, "{version:?}: {rows:#?}");
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(r.status, Some(200), "{r:?}");
            assert_eq!(r.response_bytes, Some(100 * (i as u64 + 1)), "{r:?}");
            let think = r.server_think_ms.expect("RTT known on loopback");
            if i == 9 {
                assert!((295.0..400.0).contains(&think), "slow request: {r:?}");
            } else {
                assert!(think < 100.0, "quick request: {r:?}");
            }
        }
        assert!(
            c.findings.iter().any(|f| f.id == "server-think-time"),
            "{version:?}: the slow tenth request is named: {:#?}",
            c.findings
        );
        if rttlens_lab_net::require_command("tshark", "tshark").is_ok() {
            let pcap = tmp(&format!("keepalive-{version:?}.pcapng"));
            // without the DSB: tshark must use the key log file given
            let mut plain = Vec::new();
            captured.write_pcapng(&mut plain, None).unwrap();
            std::fs::write(&pcap, &plain).unwrap();
            let frames = |filter: &str| -> Vec<u64> {
                let out = Command::new("tshark")
                    .args(["-n", "-o"])
                    .arg(format!("tls.keylog_file:{}", keylog_path.display()))
                    .arg("-r")
                    .arg(&pcap)
                    .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
                    .output()
                    .expect("tshark");
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter_map(|l| l.trim().parse().ok())
                    .collect()
            };
            let ours_req: Vec<u64> = rows.iter().filter_map(|r| r.request_end_frame).collect();
            let ours_resp: Vec<u64> = rows.iter().filter_map(|r| r.response_end_frame).collect();
            assert_eq!(
                frames("http.request"),
                ours_req,
                "{version:?}: request frames"
            );
            assert_eq!(
                frames("http.response"),
                ours_resp,
                "{version:?}: response frames"
            );
            let _ = std::fs::remove_file(&pcap);
        }
        let _ = std::fs::remove_file(&keylog_path);
        drop(file);
    }
}
