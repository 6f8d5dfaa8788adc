//! Lab integration tests: they need root and /dev/net/tun and FAIL (never
//! skip) without them. Each creates its own namespaces; the tests run one
//! at a time (a global lock) so the ±1 ms timing bounds hold on a 2-core
//! machine.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use rttlens_core::capture::CaptureReader;
use rttlens_core::model::ConnReport;
use rttlens_core::pipeline;
use rttlens_lab_net::link::random_drop;
use rttlens_lab_net::netns;
use rttlens_lab_net::{CapturePoint, Direction, Host, Lab, LinkConfig, Loss};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Fail with a clear message when the lab cannot run here.
fn require_lab() {
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("lab tests need root, /dev/net/tun and iproute2: {e}");
    }
}

fn require(cmd: &'static str, pkg: &'static str) {
    if let Err(e) = rttlens_lab_net::require_command(cmd, pkg) {
        panic!("{e}");
    }
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rttlens-lab-net-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Remove a test's capture files; a failing test keeps them for debugging.
fn done(files: &[&Path]) {
    for f in files {
        let _ = std::fs::remove_file(f);
    }
    if let Some(d) = files.first().and_then(|f| f.parent()) {
        let _ = std::fs::remove_dir(d); // only once empty
    }
}

const PORT: u16 = 7777;

/// Server in the server namespace: accept one connection, answer each
/// request line with `reply` bytes, until EOF. Client: connect, send
/// `requests` small requests, read each reply. Bounded by timeouts.
fn exchange(lab: &Lab, requests: usize, reply: usize) {
    let addr = SocketAddr::new(lab.addr(Host::Server), PORT);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let server = lab.thread_in(Host::Server, move || {
        let l = TcpListener::bind(addr).expect("bind in server ns");
        ready_tx.send(()).unwrap();
        let (mut s, _) = l.accept().expect("accept");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_nodelay(true).unwrap();
        let body = vec![b'x'; reply];
        let mut buf = [0u8; 64];
        for _ in 0..requests {
            let n = s.read(&mut buf).expect("server read");
            if n == 0 {
                break;
            }
            s.write_all(&body).expect("server write");
        }
        let _ = s.read(&mut buf);
    });
    ready_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("server listening");
    let client = lab.thread_in(Host::Client, move || {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_nodelay(true).unwrap();
        let mut buf = vec![0u8; 65536];
        for _ in 0..requests {
            s.write_all(b"GET\n").expect("client write");
            let mut got = 0;
            while got < reply {
                let n = s.read(&mut buf).expect("client read");
                assert!(n > 0, "server closed early");
                got += n;
            }
        }
    });
    client.join().unwrap().expect("enter client ns");
    server.join().unwrap().expect("enter server ns");
}

fn analyse(path: &Path) -> Vec<ConnReport> {
    let mut reader = CaptureReader::open(path).expect("open capture");
    let mut conns = Vec::new();
    pipeline::run(
        &mut reader,
        &mut |c| conns.extend(c.into_tcp()),
        &mut |_| {},
    )
    .expect("pipeline");
    conns
}

fn one_conn(path: &Path) -> ConnReport {
    let mut conns = analyse(path);
    assert_eq!(
        conns.len(),
        1,
        "one connection in {}, got: {:?}",
        path.display(),
        conns
            .iter()
            .map(|c| (
                c.index,
                &c.client,
                &c.server,
                c.first_frame,
                c.last_frame,
                c.frames
            ))
            .collect::<Vec<_>>()
    );
    conns.pop().unwrap()
}

/// Handshakes each accuracy test makes; it judges their median, so one
/// late wake-up of a 2-core machine (the bench reports those as jitter)
/// does not decide it.
const HANDSHAKES: usize = 5;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn assert_near(what: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1.0,
        "{what}: {got:.3} ms, want {want:.3} ± 1 ms"
    );
}

fn accuracy(rtt_ms: u64) {
    require_lab();
    require("tcpdump", "tcpdump");
    let _g = serial();
    let link_file = tmp(&format!("ingress-{rtt_ms}.pcapng"));
    let dump_file = tmp(&format!("client-{rtt_ms}.pcap"));
    let mut lab = Lab::new(LinkConfig {
        capture: Some((link_file.clone(), CapturePoint::Ingress)),
        ..LinkConfig::with_rtt(Duration::from_millis(rtt_ms))
    })
    .expect("lab");
    let dump = lab.tcpdump(Host::Client, &dump_file).expect("tcpdump");
    for _ in 0..HANDSHAKES {
        exchange(&lab, 3, 100);
    }
    std::thread::sleep(Duration::from_millis(50));
    dump.stop();
    let stats = lab.stop_link();
    drop(lab);
    let want = rtt_ms as f64;
    for file in [&link_file, &dump_file] {
        let conns = analyse(file);
        assert_eq!(conns.len(), HANDSHAKES, "{}", file.display());
        let mins: Vec<f64> = conns
            .iter()
            .map(|c| c.rtt.as_ref().expect("rtt").min_ms)
            .collect();
        let connects: Vec<f64> = conns
            .iter()
            .map(|c| {
                c.ladder
                    .iter()
                    .find(|p| p.name == "connect")
                    .expect("connect phase")
                    .ms
            })
            .collect();
        eprintln!(
            "rtt {rtt_ms} ms, {}: min {mins:.3?} ms, connect {connects:.3?} ms",
            file.display()
        );
        assert_near(
            &format!("{} rtt.min (median)", file.display()),
            median(mins),
            want,
        );
        assert_near(
            &format!("{} connect (median)", file.display()),
            median(connects),
            want,
        );
    }
    assert_eq!(
        stats.realtime_threads, 3,
        "link threads without RT priority"
    );
    eprintln!(
        "link error p50 {} µs p99 {} µs max {} µs",
        stats.error_quantile_us(0.5),
        stats.error_quantile_us(0.99),
        stats.error_max_us
    );
    if rtt_ms == 40 && rttlens_lab_net::require_command("tshark", "tshark").is_ok() {
        let out = Command::new("tshark")
            .arg("-r")
            .arg(&link_file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tshark: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("TCP"));
    }
    done(&[&link_file, &dump_file]);
}

#[test]
fn rtt_20ms() {
    accuracy(20);
}

#[test]
fn rtt_40ms() {
    accuracy(40);
}

#[test]
fn rtt_100ms() {
    accuracy(100);
}

#[test]
fn middle_split_25_75() {
    require_lab();
    let _g = serial();
    let file = tmp("middle.pcapng");
    let lab = Lab::new(LinkConfig {
        client_share: 0.25,
        capture: Some((file.clone(), CapturePoint::Middle)),
        ..LinkConfig::with_rtt(Duration::from_millis(40))
    })
    .expect("lab");
    for _ in 0..HANDSHAKES {
        exchange(&lab, 3, 100);
    }
    drop(lab);
    let conns = analyse(&file);
    assert_eq!(conns.len(), HANDSHAKES);
    let rtts: Vec<_> = conns.iter().map(|c| c.rtt.clone().expect("rtt")).collect();
    eprintln!("middle: {rtts:?}");
    assert_near(
        "rtt.min (median)",
        median(rtts.iter().map(|r| r.min_ms).collect()),
        40.0,
    );
    assert_near(
        "h_c (median)",
        median(rtts.iter().map(|r| r.h_c_ms).collect()),
        10.0,
    );
    assert_near(
        "h_s (median)",
        median(rtts.iter().map(|r| r.h_s_ms).collect()),
        30.0,
    );
    done(&[&file]);
}

#[test]
fn loss_by_index_shows_retransmission() {
    require_lab();
    let _g = serial();
    // Egress = server end: server→client packets are captured as they
    // enter the link, before the drop, i.e. a sender-side capture.
    let file = tmp("loss.pcapng");
    let mut lab = Lab::new(LinkConfig {
        loss_s2c: Loss {
            indices: vec![2],
            ..Loss::default()
        },
        capture: Some((file.clone(), CapturePoint::Egress)),
        ..LinkConfig::with_rtt(Duration::from_millis(10))
    })
    .expect("lab");
    exchange(&lab, 1, 20_000);
    let stats = lab.stop_link();
    drop(lab);
    assert_eq!(stats.dropped, vec![(Direction::ServerToClient, 2)]);
    let c = one_conn(&file);
    assert!(
        c.tcp.retransmissions[1] >= 1,
        "server retransmission expected: {:?}",
        c.tcp
    );
    done(&[&file]);
}

#[test]
fn first_syn_dropped() {
    require_lab();
    let _g = serial();
    let file = tmp("syn.pcapng");
    let mut lab = Lab::new(LinkConfig {
        loss_c2s: Loss {
            first_syn: true,
            ..Loss::default()
        },
        capture: Some((file.clone(), CapturePoint::Ingress)),
        ..LinkConfig::with_rtt(Duration::from_millis(10))
    })
    .expect("lab");
    exchange(&lab, 1, 100);
    let stats = lab.stop_link();
    drop(lab);
    assert_eq!(stats.dropped, vec![(Direction::ClientToServer, 0)]);
    assert_eq!(one_conn(&file).tcp.syn_count, 2);
    done(&[&file]);
}

#[test]
fn random_loss_is_seeded() {
    require_lab();
    let _g = serial();
    let run = || {
        let mut lab = Lab::new(LinkConfig {
            loss_s2c: Loss {
                probability: 0.05,
                seed: 42,
                ..Loss::default()
            },
            ..LinkConfig::with_rtt(Duration::from_millis(2))
        })
        .expect("lab");
        exchange(&lab, 1, 200_000);
        lab.stop_link()
    };
    let a = run();
    let b = run();
    let n = a.payload_segments[1].min(b.payload_segments[1]);
    let upto = |s: &rttlens_lab_net::LinkStats| -> Vec<u64> {
        s.dropped.iter().map(|d| d.1).filter(|&i| i <= n).collect()
    };
    let expect: Vec<u64> = (1..=n)
        .filter(|&i| random_drop(42, Direction::ServerToClient, i, 0.05))
        .collect();
    assert!(!expect.is_empty(), "no drop expected in {n} segments");
    assert_eq!(upto(&a), expect);
    assert_eq!(upto(&b), expect);
}

#[test]
fn cleanup_on_drop_and_panic() {
    require_lab();
    let _g = serial();
    let lab = Lab::new(LinkConfig::default()).expect("lab");
    let names = [
        lab.ns_name(Host::Client).to_string(),
        lab.ns_name(Host::Server).to_string(),
    ];
    // a process left running inside is killed too
    let mut child = lab
        .spawn_in(Host::Server, Command::new("sleep").arg("30"))
        .expect("spawn sleep");
    assert!(netns::list().unwrap().contains(&names[0]));
    drop(lab);
    let status = child.wait().expect("wait for sleep");
    assert!(!status.success(), "sleep should have been killed");
    let left = netns::list().unwrap();
    assert!(!names.iter().any(|n| left.contains(n)), "left: {left:?}");

    let seen = std::sync::Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let r = std::panic::catch_unwind(move || {
        let lab = Lab::new(LinkConfig::default()).expect("lab");
        s2.lock()
            .unwrap()
            .push(lab.ns_name(Host::Client).to_string());
        s2.lock()
            .unwrap()
            .push(lab.ns_name(Host::Server).to_string());
        panic!("deliberate panic with a live lab");
    });
    assert!(r.is_err());
    let names = seen.lock().unwrap().clone();
    assert_eq!(names.len(), 2);
    let left = netns::list().unwrap();
    assert!(!names.iter().any(|n| left.contains(n)), "left: {left:?}");
}

#[test]
fn sysctls_apply_per_namespace() {
    require_lab();
    let _g = serial();
    let lab = Lab::new(LinkConfig::default()).expect("lab");
    lab.set_sysctls(
        Host::Client,
        &rttlens_lab_net::Sysctls {
            tcp_window_scaling: Some(false),
            tcp_fastopen: Some(3),
            tcp_rmem: Some([4096, 65536, 1_000_000]),
            ..Default::default()
        },
    )
    .expect("sysctls");
    let c = lab.netns(Host::Client);
    let s = lab.netns(Host::Server);
    assert_eq!(c.sysctl("net/ipv4/tcp_window_scaling").unwrap(), "0");
    assert_eq!(s.sysctl("net/ipv4/tcp_window_scaling").unwrap(), "1");
    assert_eq!(c.sysctl("net/ipv4/tcp_fastopen").unwrap(), "3");
    // and through a process in the namespace, not just our thread
    let out = c
        .command(Command::new("cat").arg("/proc/sys/net/ipv4/tcp_rmem"))
        .output()
        .unwrap();
    let got = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(got, "4096 65536 1000000");
}
