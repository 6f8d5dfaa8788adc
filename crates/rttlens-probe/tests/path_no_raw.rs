//! `--path` without `CAP_NET_RAW` (issue 44): the probe runs as before
//! and says in one line what it could not do. The test runs itself again
//! under `setpriv` with CAP_NET_RAW dropped from the bounding set (root's
//! capabilities at exec are cut to it), where the inner test probes the
//! built-in server on 127.0.0.1. Needs root and setpriv (util-linux);
//! FAILS (never skips) naming what is missing.

use std::net::SocketAddr;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use rttlens_lab_server::builtin::{Server, ServerConfig};
use rttlens_probe::path::PathOptions;
use rttlens_probe::ProbeConfig;

const INNER: &str = "RTTLENS_PATH_NO_RAW_INNER";

#[test]
fn path_without_cap_net_raw_says_so() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test drops CAP_NET_RAW with setpriv, which needs root"
    );
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new("setpriv")
        .args(["--bounding-set", "-net_raw", "--inh-caps", "-net_raw", "--"])
        .arg(exe)
        .args([
            "--exact",
            "inner_probe_without_raw",
            "--ignored",
            "--nocapture",
        ])
        .env(INNER, "1")
        .output()
        .unwrap_or_else(|e| panic!("setpriv (util-linux) could not run: {e}"));
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the probe without CAP_NET_RAW:\n{text}"
    );
    assert!(
        text.contains("1 passed"),
        "the inner test did not run:\n{text}"
    );
}

/// Run only by the test above, under setpriv.
#[test]
#[ignore = "run by path_without_cap_net_raw_says_so without CAP_NET_RAW"]
fn inner_probe_without_raw() {
    assert!(
        std::env::var_os(INNER).is_some(),
        "run by path_without_cap_net_raw_says_so"
    );
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let cfg = ServerConfig {
                plain_http: true,
                ..ServerConfig::default()
            };
            let srv = Server::bind(SocketAddr::from(([127, 0, 0, 1], 0)), cfg).expect("bind");
            tx.send(srv.local_addr().port()).expect("port");
            let _ = srv.run_until(std::future::pending::<()>()).await;
        });
    });
    let port = rx.recv_timeout(Duration::from_secs(10)).expect("server");
    let mut cfg = ProbeConfig::new(format!("http://127.0.0.1:{port}/"));
    cfg.max_time = Some(Duration::from_secs(10));
    cfg.path = Some(PathOptions {
        rounds: 1,
        udp: false,
        names: false,
    });
    let report = rttlens_probe::run(&cfg).expect("the probe runs as before");
    assert_eq!(report.attempts.len(), 1);
    assert_eq!(report.attempts[0].response.status, 200);
    let path = report.path.as_ref().expect("a path entry");
    assert_eq!(path.status, "not-permitted");
    assert!(path.hops.is_empty());
    let note = path.note.as_deref().unwrap_or_default();
    assert!(note.contains("CAP_NET_RAW"), "{note}");
    let mut text = Vec::new();
    rttlens_report::probe::write_text(&report, &mut text).expect("text");
    let text = String::from_utf8(text).expect("utf-8");
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("path")).collect();
    assert_eq!(lines, [format!("path: {note}")], "{text}");
}
