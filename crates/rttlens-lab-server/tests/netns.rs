//! The handshake flight on the wire: the built-in server binary, curl and
//! tcpdump in a network namespace this test creates (`ip netns add`), so
//! the capture on its `lo` holds only this test's packets. Needs root,
//! iproute2, tcpdump and curl.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn require(tool: &str, package: &str) {
    let found = Command::new("sh")
        .args([
            "-c",
            &format!("command -v {tool} || test -x /usr/sbin/{tool}"),
        ])
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        found,
        "`{tool}` not found: install it with apt-get install -y {package}"
    );
}

/// A namespace removed on drop.
struct Netns(String);

impl Netns {
    fn new(tag: &str) -> Netns {
        let name = format!("rttl-srv-{}-{tag}", std::process::id());
        let ok = Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .unwrap()
            .success();
        assert!(ok, "ip netns add {name} failed (this test needs root)");
        let ns = Netns(name);
        assert!(ns
            .cmd(&["ip", "link", "set", "lo", "up"])
            .status()
            .unwrap()
            .success());
        ns
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.0]).args(args);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

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

/// One captured segment: (time in s, from the server?, payload length).
fn segments(pcap: &Path, port: u16) -> Vec<(f64, bool, usize)> {
    let out = Command::new("tcpdump")
        .args(["-r"])
        .arg(pcap)
        .args(["-nn", "-tt"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let from_server = format!("127.0.0.1.{port} >");
    text.lines()
        .filter_map(|l| {
            let t: f64 = l.split_whitespace().next()?.parse().ok()?;
            let len: usize = l.rsplit("length ").next()?.trim().parse().ok()?;
            Some((t, l.contains(&from_server), len))
        })
        .collect()
}

fn flight_on_the_wire(nodelay: &str) -> Vec<(f64, bool, usize)> {
    let ns = Netns::new(nodelay);
    let dir = std::env::temp_dir().join(format!("{}-cap", ns.0));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("lo.pcap");
    let mut dump = ns
        .cmd(&[
            "tcpdump",
            "-i",
            "lo",
            "-U",
            // Without it libpcap holds packets in its ring until a 1 s
            // block timeout, and SIGTERM loses them.
            "--immediate-mode",
            "-nn",
            "-w",
            pcap.to_str().unwrap(),
            "tcp",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // tcpdump says "listening on lo" once capturing.
    let mut line = String::new();
    BufReader::new(dump.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("listening"), "tcpdump: {line}");

    let bin = env!("CARGO_BIN_EXE_rttlens-lab-server");
    let mut server = ns
        .cmd(&[
            bin,
            "--listen",
            "127.0.0.1:0",
            "--nodelay",
            nodelay,
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
    let curl = ns
        .cmd(&[
            "curl",
            "-sk",
            "--tlsv1.3",
            "--max-time",
            "10",
            "-o",
            "/dev/null",
            "-w",
            "%{size_download}",
        ])
        .arg(format!("https://127.0.0.1:{port}/size/10"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&curl.stdout), "10");
    stop(&mut server);
    std::thread::sleep(Duration::from_millis(100));
    stop(&mut dump);
    let segs = segments(&pcap, port);
    let _ = std::fs::remove_dir_all(&dir);
    segs
}

#[test]
fn handshake_writes_two_gives_two_segments_and_nagle_waits_for_the_ack() {
    require("ip", "iproute2");
    require("tcpdump", "tcpdump");
    require("curl", "curl");
    for nodelay in ["on", "off"] {
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
        if nodelay == "off" {
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
