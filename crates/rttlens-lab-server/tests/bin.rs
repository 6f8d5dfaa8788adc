//! The `rttlens-lab-server` binary: its flags reach the server, which
//! prints its address and serves. (The flight those flags shape is checked
//! on the wire in the lab: `crates/rttlens-lab/tests/handshake_flight.rs`.)
//! Needs curl.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// SIGTERM by PID, then wait (bounded: SIGKILL after 3 s).
fn stop(child: &mut Child) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn the_binary_serves_with_its_flags() {
    let curl_found = Command::new("sh")
        .args(["-c", "command -v curl"])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        curl_found,
        "`curl` not found: install it with apt-get install -y curl"
    );
    let bin = env!("CARGO_BIN_EXE_rttlens-lab-server");
    let mut server = Command::new(bin)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--nodelay",
            "off",
            "--handshake-writes",
            "two",
            "--tls-versions",
            "1.3",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(server.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let port: u16 = first.trim().rsplit(':').next().unwrap().parse().unwrap();
    let curl = |version: &str| {
        Command::new("curl")
            .args(["-sk", version, "--max-time", "10", "-o", "/dev/null"])
            .args(["-w", "%{size_download}"])
            .arg(format!("https://127.0.0.1:{port}/size/10"))
            .output()
            .unwrap()
    };
    let tls13 = curl("--tlsv1.3");
    // TLS 1.2 only: refused, the server offers 1.3 alone
    let tls12 = Command::new("curl")
        .args(["-sk", "--tlsv1.2", "--tls-max", "1.2", "--max-time", "10"])
        .args(["-o", "/dev/null"])
        .arg(format!("https://127.0.0.1:{port}/size/10"))
        .output()
        .unwrap();
    stop(&mut server);
    assert_eq!(String::from_utf8_lossy(&tls13.stdout), "10");
    assert!(!tls12.status.success(), "TLS 1.2 was refused");
}
