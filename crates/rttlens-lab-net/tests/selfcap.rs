//! `rttlens-live`'s `SelfCapture` on real kernel sockets, each test in a
//! fresh network namespace of this crate's (so no other traffic is on its
//! `lo`), one across the lab's delay link. They need root
//! (CAP_NET_RAW, namespaces) and FAIL (never skip) without it. One at a
//! time (a global lock) so the lab's ±1 ms RTT bound holds on 2 cores.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rttlens_core::capture::{CaptureReader, LinkType};
use rttlens_core::model::ConnReport;
use rttlens_core::pipeline;
use rttlens_core::wire::{decode, Decoded, TcpFlags};
use rttlens_lab_net::netns::Netns;
use rttlens_lab_net::{Host, Lab, LinkConfig};
use rttlens_live::{CaptureLimits, Captured, SelfCapture};

static SERIAL: Mutex<()> = Mutex::new(());
static COUNTER: AtomicU64 = AtomicU64::new(0);

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Fail with a clear message when the tests cannot run here.
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
        "rttlens-selfcap-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    Netns::create(&name).expect("creating a network namespace")
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// A packet decoded for the assertions.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seg {
    ts_ns: u64,
    src: SocketAddr,
    dst: SocketAddr,
    flags: u16,
    payload: Vec<u8>,
    raw: Vec<u8>,
}

impl Seg {
    fn is(&self, f: TcpFlags) -> bool {
        self.flags & f.0 != 0
    }
}

fn segs(c: &Captured) -> Vec<Seg> {
    c.packets
        .iter()
        .map(|p| match decode(LinkType::RAW, &p.data, p.orig_len) {
            Ok(Decoded::Tcp(s)) => Seg {
                ts_ns: p.ts_ns,
                src: SocketAddr::new(s.src, s.src_port),
                dst: SocketAddr::new(s.dst, s.dst_port),
                flags: s.flags.0,
                payload: s.payload.to_vec(),
                raw: p.data.clone(),
            },
            other => panic!("captured a packet that is not TCP: {other:?}"),
        })
        .collect()
}

/// One exchange over a real connection, captured.
struct Exchange {
    captured: Captured,
    /// Wall clock before the capture started and after the last packet.
    t0: u64,
    t1: u64,
    client: SocketAddr,
    server: SocketAddr,
}

/// Server: accept, read "hello", answer "world", read to EOF, close.
fn serve_one(l: TcpListener) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().expect("accept");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut req = [0u8; 5];
        s.read_exact(&mut req).expect("server read");
        assert_eq!(&req, b"hello");
        s.write_all(b"world").expect("server write");
        let mut rest = [0u8; 16];
        assert_eq!(s.read(&mut rest).expect("server read EOF"), 0);
    })
}

/// Client: connect, "hello", read "world", half-close, read to EOF.
fn client_one(server: SocketAddr) -> SocketAddr {
    let mut c = TcpStream::connect_timeout(&server, Duration::from_secs(5)).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.set_nodelay(true).unwrap();
    c.write_all(b"hello").expect("client write");
    let mut resp = [0u8; 5];
    c.read_exact(&mut resp).expect("client read");
    assert_eq!(&resp, b"world");
    c.shutdown(Shutdown::Write).unwrap();
    let mut rest = [0u8; 16];
    assert_eq!(c.read(&mut rest).expect("client read EOF"), 0);
    c.local_addr().unwrap()
}

/// Run in the calling thread's namespace: a listener on `bind`, the
/// capture, one exchange; with `other`, a second exchange on another
/// listener of the same address during the capture.
fn exchange(bind: &str, other: bool) -> Exchange {
    let l = TcpListener::bind(bind).expect("bind");
    let server = l.local_addr().unwrap();
    let other_l = other.then(|| TcpListener::bind(bind).expect("bind the other listener"));
    let cap = SelfCapture::start(server, None).expect("start the capture");
    let t0 = now_ns();
    let srv = serve_one(l);
    let other_srv = other_l.map(|ol| {
        let addr = ol.local_addr().unwrap();
        (serve_one(ol), addr)
    });
    if let Some((_, addr)) = &other_srv {
        client_one(*addr);
    }
    let client = client_one(server);
    srv.join().expect("server thread");
    if let Some((t, _)) = other_srv {
        t.join().expect("other server thread");
    }
    let t1 = now_ns();
    let captured = cap.stop().expect("stop the capture");
    Exchange {
        captured,
        t0,
        t1,
        client,
        server,
    }
}

/// The packets of one clean exchange, each exactly once.
fn check_exchange(x: &Exchange) {
    let s = segs(&x.captured);
    let dump = || {
        s.iter()
            .map(|p| {
                format!(
                    "{} {}→{} {:#x} {}B",
                    p.ts_ns,
                    p.src,
                    p.dst,
                    p.flags,
                    p.payload.len()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (c, srv) = (x.client, x.server);
    for p in &s {
        assert!(
            (p.src == c && p.dst == srv) || (p.src == srv && p.dst == c),
            "a packet of another connection: {}",
            dump()
        );
    }
    let count = |f: &dyn Fn(&Seg) -> bool| s.iter().filter(|p| f(p)).count();
    let syn = TcpFlags::SYN;
    let ack = TcpFlags::ACK;
    let fin = TcpFlags::FIN;
    assert_eq!(
        count(&|p| p.is(syn) && !p.is(ack) && p.src == c),
        1,
        "one SYN:\n{}",
        dump()
    );
    assert_eq!(
        count(&|p| p.is(syn) && p.is(ack) && p.src == srv),
        1,
        "one SYN-ACK:\n{}",
        dump()
    );
    assert_eq!(
        count(&|p| p.payload == b"hello"),
        1,
        "request once:\n{}",
        dump()
    );
    assert_eq!(
        count(&|p| p.payload == b"world"),
        1,
        "response once:\n{}",
        dump()
    );
    assert_eq!(
        count(&|p| p.is(fin) && p.src == c),
        1,
        "one client FIN:\n{}",
        dump()
    );
    assert_eq!(
        count(&|p| p.is(fin) && p.src == srv),
        1,
        "one server FIN:\n{}",
        dump()
    );
    // The ACK of the SYN-ACK and the ACK of the server's FIN.
    let syn_ack_pos = s.iter().position(|p| p.is(syn) && p.is(ack)).unwrap();
    assert!(
        s[syn_ack_pos + 1..]
            .first()
            .is_some_and(|p| p.src == c && p.is(ack) && !p.is(syn) && p.payload.is_empty()),
        "the handshake's ACK follows the SYN-ACK:\n{}",
        dump()
    );
    let last = s.last().unwrap();
    assert!(
        last.src == c && last.is(ack) && !last.is(fin) && last.payload.is_empty(),
        "the capture ends with the ACK of the server's FIN:\n{}",
        dump()
    );
    // No loopback duplicates: no packet twice in a row.
    for w in s.windows(2) {
        assert_ne!(w[0].raw, w[1].raw, "a packet seen twice:\n{}", dump());
    }
    // Kernel timestamps, in order, within the exchange's wall-clock window.
    for w in s.windows(2) {
        assert!(
            w[0].ts_ns <= w[1].ts_ns,
            "timestamps out of order:\n{}",
            dump()
        );
    }
    assert!(
        s.first().unwrap().ts_ns >= x.t0,
        "first packet before the start"
    );
    assert!(last.ts_ns <= x.t1, "last packet after the exchange ended");
    assert_eq!(x.captured.truncated, 0);
    assert_eq!(x.captured.kernel_drops, Some(0));
}

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

#[test]
fn ipv4_loopback_exchange_once_each_in_order() {
    require_root();
    let _g = serial();
    let ns = fresh_netns();
    let x = ns
        .run(|| exchange("127.0.0.1:0", false))
        .expect("enter netns");
    assert_eq!(x.captured.interface, "lo");
    check_exchange(&x);
}

#[test]
fn another_connection_is_filtered_out() {
    require_root();
    let _g = serial();
    let ns = fresh_netns();
    let x = ns
        .run(|| exchange("127.0.0.1:0", true))
        .expect("enter netns");
    // check_exchange fails on any packet outside the one 4-tuple.
    check_exchange(&x);
}

#[test]
fn ipv6_loopback_exchange() {
    require_root();
    let _g = serial();
    let ns = fresh_netns();
    let x = ns.run(|| exchange("[::1]:0", false)).expect("enter netns");
    assert!(x.server.is_ipv6());
    assert_eq!(x.captured.interface, "lo");
    check_exchange(&x);
}

#[test]
fn pipeline_reads_the_capture_as_one_connection() {
    require_root();
    let _g = serial();
    let ns = fresh_netns();
    let x = ns
        .run(|| exchange("127.0.0.1:0", false))
        .expect("enter netns");
    let (conns, _) = analyse(&x.captured, None);
    assert_eq!(conns.len(), 1, "{conns:?}");
    let r = &conns[0];
    assert_eq!(r.client, x.client.to_string());
    assert_eq!(r.server, x.server.to_string());
    assert_eq!(r.frames, x.captured.packets.len() as u64);
    assert_eq!(r.tcp.syn_count, 1);
    assert!(r.tcp.mss_option.iter().all(Option::is_some), "{:?}", r.tcp);
    assert!(r.tcp.sack && r.tcp.timestamps, "{:?}", r.tcp);
    assert_eq!(r.tcp.bytes, [5, 5]);
    assert_eq!(r.tcp.retransmissions, [0, 0]);
    assert!(r.rtt.is_some(), "an RTT");
    // The ladder's connect phase starts at the SYN (frame 1) and ends at
    // the SYN-ACK or the ACK: frame numbers match the capture's order.
    let connect = r
        .ladder
        .iter()
        .find(|p| p.name == "connect")
        .expect("a connect phase");
    assert_eq!(connect.start_frame, 1, "{connect:?}");
    assert!((2..=3).contains(&connect.end_frame), "{connect:?}");
}

#[test]
fn lab_tun_handshake_rtt_from_kernel_timestamps() {
    require_root();
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("this test needs the lab (root, /dev/net/tun, iproute2): {e}");
    }
    let _g = serial();
    let lab = Lab::new(LinkConfig {
        rtt: Duration::from_millis(20),
        ..LinkConfig::default()
    })
    .expect("lab");
    // the delay link is a userspace thread: on a loaded machine it can
    // deliver a packet late, which lengthens the RTT on the wire (the
    // kernel's timestamps say so rightly); never early. Up to three
    // handshakes, the first within the bounds counts.
    let attempt = |port: u16| {
        let server = SocketAddr::new(lab.addr(Host::Server), port);
        let (tx, rx) = std::sync::mpsc::channel();
        let srv = lab.thread_in(Host::Server, move || {
            let l = TcpListener::bind(server).expect("bind in the server namespace");
            tx.send(()).unwrap();
            serve_one(l).join().expect("server");
        });
        rx.recv_timeout(Duration::from_secs(5))
            .expect("server listening");
        let x = lab
            .run_in(Host::Client, move || {
                let cap = SelfCapture::start(server, None).expect("start the capture");
                let t0 = now_ns();
                let client = client_one(server);
                let t1 = now_ns();
                Exchange {
                    captured: cap.stop().expect("stop"),
                    t0,
                    t1,
                    client,
                    server,
                }
            })
            .expect("enter the client namespace");
        srv.join().unwrap().expect("enter the server namespace");
        assert_eq!(x.captured.interface, rttlens_lab_net::TUN_NAME);
        let s = segs(&x.captured);
        assert!(s
            .iter()
            .all(|p| p.ts_ns >= x.t0 && p.ts_ns <= x.t1 + 200_000_000));
        let syn = s
            .iter()
            .find(|p| p.is(TcpFlags::SYN) && !p.is(TcpFlags::ACK))
            .expect("SYN");
        let syn_ack = s
            .iter()
            .find(|p| p.is(TcpFlags::SYN) && p.is(TcpFlags::ACK))
            .expect("SYN-ACK");
        let rtt_us = (syn_ack.ts_ns - syn.ts_ns) / 1000;
        assert!(
            rtt_us >= 19_000,
            "handshake RTT {rtt_us} µs: shorter than the link's 20 ms"
        );
        (x, rtt_us)
    };
    let mut seen = Vec::new();
    let x = loop {
        let (x, rtt_us) = attempt(7788 + seen.len() as u16);
        seen.push(rtt_us);
        if rtt_us <= 21_000 {
            break x;
        }
        assert!(
            seen.len() < 3,
            "handshake RTTs {seen:?} µs, want 20 ms ± 1 ms (the link was late three times)"
        );
    };
    let (conns, _) = analyse(&x.captured, None);
    assert_eq!(conns.len(), 1);
    let rtt = conns[0].rtt.as_ref().expect("an RTT");
    assert!((19.0..=21.0).contains(&rtt.min_ms), "{rtt:?}");
}

#[test]
fn headers_only_past_the_limit_and_no_kernel_drops() {
    require_root();
    let _g = serial();
    let ns = fresh_netns();
    const BODY: usize = 300_000;
    let (captured, server) = ns
        .run(|| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let server = l.local_addr().unwrap();
            // Room for the handshake only.
            let limits = CaptureLimits {
                max_stored_bytes: 200,
            };
            let cap = SelfCapture::start_with(server, None, limits).expect("start");
            let srv = std::thread::spawn(move || {
                let (mut s, _) = l.accept().unwrap();
                s.write_all(&vec![b'x'; BODY]).unwrap();
            });
            let mut c = TcpStream::connect(server).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut got = Vec::new();
            c.read_to_end(&mut got).unwrap();
            assert_eq!(got.len(), BODY);
            srv.join().unwrap();
            drop(c);
            (cap.stop().expect("stop"), server)
        })
        .expect("enter netns");
    let with_payload: Vec<_> = captured
        .packets
        .iter()
        .filter(|p| p.orig_len as usize > p.data.len())
        .collect();
    assert!(!with_payload.is_empty());
    assert_eq!(captured.truncated, with_payload.len() as u64);
    let stored: usize = captured.packets.iter().map(|p| p.data.len()).sum();
    let headers_max = captured.packets.len() * (20 + 60) + 200;
    assert!(stored <= headers_max, "stored {stored} bytes");
    // Every truncated packet still decodes, with its payload length from
    // the IP header and none of its bytes.
    let mut payload_on_wire = 0u64;
    for p in &captured.packets {
        match decode(LinkType::RAW, &p.data, p.orig_len) {
            Ok(Decoded::Tcp(s)) => {
                if s.src_port == server.port() {
                    payload_on_wire += u64::from(s.payload_len);
                }
                if p.orig_len as usize > p.data.len() {
                    assert!(s.payload.is_empty());
                }
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(payload_on_wire, BODY as u64);
    assert_eq!(captured.kernel_drops, Some(0));
    // The cut lengths survive the pcapng round trip.
    let mut file = Vec::new();
    captured.write_pcapng(&mut file, None).unwrap();
    let mut r = CaptureReader::new(Box::new(std::io::Cursor::new(file))).unwrap();
    let mut n = 0;
    while let Some(f) = r.next_frame().unwrap() {
        assert_eq!(f.orig_len, captured.packets[n].orig_len);
        assert_eq!(f.data, &captured.packets[n].data[..]);
        n += 1;
    }
    assert_eq!(n, captured.packets.len());
}

/// Without CAP_NET_RAW `start` says so. Runs this test binary again with
/// CAP_NET_RAW removed from its bounding set (`setpriv`, util-linux), so
/// even as root the child lacks it; the child half is the same test with
/// `RTTLENS_SELFCAP_CHILD` set.
#[test]
fn without_cap_net_raw_start_is_not_permitted() {
    if std::env::var_os("RTTLENS_SELFCAP_CHILD").is_some() {
        match SelfCapture::start("127.0.0.1:9".parse().unwrap(), None) {
            Err(e @ rttlens_live::SelfCaptureError::NotPermitted(_)) => {
                assert!(e.to_string().contains("CAP_NET_RAW"), "{e}");
            }
            Err(e) => panic!("want NotPermitted, got {e:?}"),
            Ok(_) => panic!("a capture started without CAP_NET_RAW"),
        }
        return;
    }
    require_root();
    if let Err(e) = rttlens_lab_net::require_command("setpriv", "util-linux") {
        panic!("{e}");
    }
    let out = Command::new("setpriv")
        .args(["--bounding-set=-net_raw", "--inh-caps=-net_raw", "--"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "without_cap_net_raw_start_is_not_permitted",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RTTLENS_SELFCAP_CHILD", "1")
        .output()
        .expect("running setpriv");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{text}");
    assert!(text.contains("1 passed"), "the child ran the test:\n{text}");
}
