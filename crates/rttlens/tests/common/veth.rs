//! Two network namespaces joined by a veth pair, a small HTTP server and
//! client on them, and the child-process helpers of the live-capture tests
//! (`tests/live.rs`, `tests/live_on_time.rs`). Needs root and iproute2:
//! [`require_root_and_ip`] FAILS naming what is missing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, ChildStdout};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rttlens_lab_net::netns::{ip, Netns};

/// What the namespace tests need, or a panic naming it.
pub fn require_root_and_ip() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "these tests build network namespaces and capture with AF_PACKET: run them as root"
    );
    if let Err(e) = rttlens_lab_net::require_command("ip", "iproute2") {
        panic!("{e}");
    }
}

/// Two namespaces joined by a veth pair: `a` holds `A_IF` (10.78.0.1/24),
/// `b` holds `B_IF` (10.78.0.2/24). Dropping the namespaces removes the
/// pair.
pub struct Pair {
    /// The client's namespace, holding [`A_IF`].
    pub a: Netns,
    /// The server's namespace, holding [`B_IF`].
    pub b: Netns,
}

pub const A_IF: &str = "lv-a";
pub const B_IF: &str = "lv-b";
pub const SERVER: &str = "10.78.0.2:8080";
/// How long the server thinks before each answer: a `server-think-time`
/// finding on a veth whose RTT is some microseconds.
pub const THINK: Duration = Duration::from_millis(30);

static PAIRS: AtomicU32 = AtomicU32::new(0);

impl Pair {
    pub fn new() -> Pair {
        require_root_and_ip();
        let n = PAIRS.fetch_add(1, Ordering::Relaxed);
        let base = format!("rttl-live-{}-{n}", std::process::id());
        let a = Netns::create(&format!("{base}-a")).unwrap_or_else(|e| panic!("{e}"));
        let b = Netns::create(&format!("{base}-b")).unwrap_or_else(|e| panic!("{e}"));
        let run = |args: &[&str]| {
            ip(args).unwrap_or_else(|e| panic!("{e}"));
        };
        run(&[
            "link",
            "add",
            A_IF,
            "netns",
            a.name(),
            "type",
            "veth",
            "peer",
            "name",
            B_IF,
            "netns",
            b.name(),
        ]);
        run(&["-n", a.name(), "addr", "add", "10.78.0.1/24", "dev", A_IF]);
        run(&["-n", b.name(), "addr", "add", "10.78.0.2/24", "dev", B_IF]);
        // no IPv6 on the pair: its neighbour discovery and router
        // solicitations would be packets on a link the tests keep quiet
        // (a kernel without IPv6 has no such setting, and no such packets)
        for (ns, dev) in [(&a, A_IF), (&b, B_IF)] {
            let _ = ns.set_sysctl(&format!("net/ipv6/conf/{dev}/disable_ipv6"), "1");
        }
        run(&["-n", a.name(), "link", "set", A_IF, "up"]);
        run(&["-n", b.name(), "link", "set", B_IF, "up"]);
        Pair { a, b }
    }

    /// A server in `b` answering `conns` HTTP/1.1 requests, each after
    /// [`THINK`], with 20 kB, then closing. Returns when it listens.
    pub fn serve(&self, conns: usize) -> std::thread::JoinHandle<std::io::Result<()>> {
        let (tx, rx) = mpsc::channel();
        let h = self.b.spawn_thread(move || -> std::io::Result<()> {
            let l = TcpListener::bind(SERVER)?;
            let _ = tx.send(());
            for _ in 0..conns {
                let (mut s, _) = l.accept()?;
                s.set_read_timeout(Some(Duration::from_secs(5)))?;
                let mut req = Vec::new();
                let mut buf = [0u8; 1024];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = s.read(&mut buf)?;
                    if n == 0 {
                        break;
                    }
                    req.extend_from_slice(&buf[..n]);
                }
                std::thread::sleep(THINK);
                let body = vec![b'x'; 20_000];
                write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )?;
                s.write_all(&body)?;
            }
            Ok(())
        });
        rx.recv_timeout(Duration::from_secs(5))
            .expect("the test server did not start listening");
        // flatten the thread's Result<Result<..>>
        std::thread::spawn(move || h.join().expect("server thread").and_then(|r| r))
    }

    /// `n` requests from `a`, one connection each, one after another.
    pub fn clients(&self, n: usize) {
        self.a
            .run(move || -> std::io::Result<()> {
                for _ in 0..n {
                    let addr: SocketAddr = SERVER.parse().expect("addr");
                    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
                    s.set_read_timeout(Some(Duration::from_secs(5)))?;
                    s.write_all(b"GET / HTTP/1.1\r\nHost: lab\r\n\r\n")?;
                    let mut out = Vec::new();
                    s.read_to_end(&mut out)?;
                    assert!(out.starts_with(b"HTTP/1.1 200"), "a response");
                }
                Ok(())
            })
            .expect("enter namespace a")
            .expect("the requests");
    }
}

/// Kills and reaps the child on drop (only the processes this test
/// started).
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The first stderr line of `child` containing `want`, within 10 s; the
/// other lines are kept in `seen`. The rest of stderr keeps draining to a
/// channel returned, so the child never blocks on a full pipe.
pub fn wait_for_line(child: &mut Child, want: &str) -> (String, mpsc::Receiver<String>) {
    let err = child.stderr.take().expect("piped stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if l.contains(want) => return (l, rx),
            Ok(l) => seen.push(l),
            Err(_) => panic!("no '{want}' on stderr within 10 s: {seen:?}"),
        }
    }
}

/// Wait at most `limit` for `child` to exit.
pub fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            return st;
        }
        assert!(Instant::now() < deadline, "did not exit within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Send `sig` to `child`.
pub fn signal(child: &Child, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid")),
        sig,
    )
    .unwrap_or_else(|e| panic!("{sig}: {e}"));
}

/// The lines of `out` (a child's standard output) as they come, read on a
/// thread of their own.
pub fn lines_of(out: ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    rx
}
