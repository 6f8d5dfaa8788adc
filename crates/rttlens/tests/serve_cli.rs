//! `rttlens serve` as users run it: a bad configuration is one message and
//! exit code 2; and Debian's real Prometheus scrapes `/probe` through the
//! relabelling blackbox_exporter's users write, and the values come back
//! through Prometheus' HTTP query API (issue 26). The Prometheus test needs
//! the `prometheus` program (scripts/packages; FAILS naming it when
//! missing). Every wait is bounded.

mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use common::prom::{self, query, Reaped};
use common::{bin, scratch};
use rttlens_lab_server::builtin::{Server, ServerConfig};

fn write(name: &str, text: &str) -> std::path::PathBuf {
    let p = scratch(name);
    std::fs::write(&p, text).expect("write scratch file");
    p
}

#[test]
fn a_bad_config_is_one_message_and_exit_2() {
    let missing = scratch("no-such-config.yml");
    let cases = [
        (write("bad-yaml.yml", "modules: [\n"), "bad-yaml.yml"),
        (
            write("bad-key.yml", "modules:\n  a:\n    timout: 5s\n"),
            "unknown field `timout`",
        ),
        (
            write("bad-tls.yml", "modules:\n  a:\n    tls_version: \"1.1\"\n"),
            "module 'a': tls_version '1.1'",
        ),
        (write("empty.yml", "modules: {}\n"), "no modules"),
        (missing.clone(), "cannot read"),
    ];
    for (path, want) in cases {
        let o = bin()
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&path)
            .stdin(Stdio::null())
            .output()
            .expect("run rttlens serve");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}: {err}", path.display());
        assert!(err.contains(want), "{}: {err}", path.display());
        assert_eq!(err.trim().lines().count(), 1, "one message: {err}");
    }
}

/// Start `cmd` (`rttlens serve …`, maybe wrapped to run in a namespace):
/// the process, the address its first stderr line says it listens on,
/// and the rest of its stderr (drained on a thread so it never blocks).
fn start_serve(mut cmd: std::process::Command) -> (Reaped, SocketAddr, mpsc::Receiver<String>) {
    let mut serve = Reaped(
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start rttlens serve"),
    );
    let stderr = serve.0.stderr.take().expect("stderr");
    let (ltx, lrx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = ltx.send(line);
        }
    });
    let first = lrx
        .recv_timeout(Duration::from_secs(10))
        .expect("rttlens serve says where it listens");
    let addr: SocketAddr = first
        .split("http://")
        .nth(1)
        .and_then(|s| s.split('/').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no address in `{first}`"));
    (serve, addr, lrx)
}

/// `GET path` from `addr` over HTTP/1.0: the status line and the body.
fn http_get(addr: SocketAddr, path: &str) -> (String, String) {
    try_http_get(addr, path).expect("response")
}

/// [`http_get`], or the error of a connection that failed.
fn try_http_get(addr: SocketAddr, path: &str) -> std::io::Result<(String, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut r = String::new();
    s.read_to_string(&mut r)?;
    let (head, body) = r.split_once("\r\n\r\n").unwrap_or((&r, ""));
    let status = head.lines().next().unwrap_or("").to_string();
    Ok((status, body.to_string()))
}

#[test]
fn without_a_config_serve_starts_with_the_builtin_modules() {
    // a target on loopback: nothing listens on its port, so the probe
    // fails at connect, quickly, and still answers with its series
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let target = closed.local_addr().expect("addr");
    drop(closed);
    let mut cmd = bin();
    cmd.args(["serve", "--listen", "127.0.0.1:0"]);
    let (serve, addr, _log) = start_serve(cmd);
    let (status, index) = http_get(addr, "/");
    assert!(status.contains("200"), "{status}");
    for m in ["http_2xx", "https"] {
        assert!(
            index.contains(m),
            "module {m} missing from the index: {index}"
        );
    }
    // no `module=`: blackbox_exporter's default, http_2xx
    let (status, body) = http_get(addr, &format!("/probe?target=https://{target}/"));
    assert!(status.contains("200"), "{status}: {body}");
    assert!(body.contains("probe_success 0"), "{body}");
    // and a probe that succeeds: the built-in server in cleartext
    let (atx, arx) = mpsc::channel();
    let (stx, srx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let cfg = ServerConfig {
                plain_http: true,
                ..ServerConfig::default()
            };
            let s = Server::bind("127.0.0.1:0".parse().expect("addr"), cfg).expect("bind");
            atx.send(s.local_addr()).expect("send addr");
            s.run_until(async {
                let _ = srx.await;
            })
            .await
            .expect("built-in server");
        });
    });
    let plain = arx
        .recv_timeout(Duration::from_secs(10))
        .expect("built-in server started");
    let (status, body) = http_get(addr, &format!("/probe?target=http://{plain}/size/100"));
    assert!(status.contains("200"), "{status}: {body}");
    assert!(body.contains("probe_success 1"), "{body}");
    assert!(body.contains("probe_http_status_code 200"), "{body}");
    let _ = stx.send(());
    server.join().expect("built-in server thread");
    let (status, body) = http_get(
        addr,
        &format!("/probe?target=https://{target}/&module=nope"),
    );
    assert!(status.contains("400"), "{status}");
    assert!(
        body.contains("http_2xx"),
        "the known modules are named: {body}"
    );
    drop(serve);
}

#[test]
fn prometheus_scrapes_probe_and_reads_the_values_back() {
    prom::require("prometheus", "prometheus");

    // the target: the lab's built-in TLS server (tickets, 0-RTT), in process
    let (atx, arx) = std::sync::mpsc::channel();
    let (stx, srx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let cfg = ServerConfig {
                early_data: 16_384,
                ..ServerConfig::default()
            };
            let s = Server::bind("127.0.0.1:0".parse().expect("addr"), cfg).expect("bind");
            atx.send(s.local_addr()).expect("send addr");
            s.run_until(async {
                let _ = srx.await;
            })
            .await
            .expect("built-in server");
        });
    });
    let target = arx
        .recv_timeout(Duration::from_secs(10))
        .expect("built-in server started");

    // rttlens serve on a free port, told by its first line
    let config = write(
        "serve.yml",
        "modules:\n  resumed:\n    insecure: true\n    resumption: true\n    fail_if_not_verified: true\n",
    );
    let mut cmd = bin();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config);
    let (serve, serve_addr, _log) = start_serve(cmd);

    // Prometheus: blackbox's relabelling, the target URL as a parameter
    let url = format!("https://{target}/size/2000");
    let prom_addr: SocketAddr = format!("127.0.0.1:{}", prom::free_port())
        .parse()
        .expect("addr");
    let dir = scratch("prometheus");
    let prom = prom::start(
        &dir,
        &prom::probe_job("rttlens", "resumed", &[&url], serve_addr, "1s"),
        prom_addr,
        &[],
        |c| c,
    );

    let within = Duration::from_secs(30);
    let (labels, v) = query(prom_addr, "probe_success{job=\"rttlens\"}", within);
    assert_eq!(v, 1.0, "probe_success: {labels}");
    assert_eq!(labels["instance"], url.as_str(), "the relabelled instance");
    let (_, v) = query(
        prom_addr,
        "rttlens_verified{feature=\"resumption\"}",
        within,
    );
    assert_eq!(v, 1.0, "resumption verified");
    let (labels, v) = query(
        prom_addr,
        "rttlens_phase_rtts{step=\"resumed\",phase=\"tls\"}",
        within,
    );
    assert!(
        v >= 0.0,
        "round trips of the resumed handshake: {labels} {v}"
    );
    let (_, v) = query(
        prom_addr,
        "probe_http_duration_seconds{phase=\"connect\"}",
        within,
    );
    assert!((0.0..1.0).contains(&v), "connect phase: {v}");
    let (_, v) = query(prom_addr, "rttlens_rtt_seconds{step=\"full\"}", within);
    assert!(v > 0.0, "the measured RTT: {v}");
    // the expiry alert's expression (docs/prometheus/cert-expiry.rules.yml)
    // over the stored series: the lab's certificate is years from expiry
    let (_, v) = query(
        prom_addr,
        "probe_ssl_earliest_cert_expiry{job=\"rttlens\"} - time()",
        within,
    );
    assert!(
        v > 365.0 * 86400.0,
        "seconds to the certificate's expiry: {v}"
    );

    drop(prom);
    drop(serve);
    let _ = stx.send(());
    let _ = server.join();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The round trips of the lab link in the nginx test.
const LAB_RTT: Duration = Duration::from_millis(40);

/// Issue 26, "done when": Prometheus scrapes `/probe` for nginx in the lab
/// (a 40 ms delay link between two network namespaces) and the series it
/// stored show the round trips and the verified resumption. `rttlens
/// serve` and Prometheus both run in the client namespace; two jobs probe
/// the same nginx, one with a TLS 1.3 module asking for resumption (and
/// not 0-RTT: two connections, no early data), one with TLS 1.2. Each
/// value is read back through `/api/v1/query` and held
/// to the physics: TCP's handshake 1 RTT, TLS 1.3's 1 RTT full and 1 RTT
/// resumed, TLS 1.2's full handshake 2 RTT (each a quarter round trip
/// below, half of one above: processing only adds), the RTT itself within
/// 10 % of the link's. Needs root, /dev/net/tun, iproute2, nginx-light and
/// prometheus (FAILS naming what is missing); about 20 s.
#[test]
fn prometheus_scrapes_probe_of_lab_nginx_and_reads_the_round_trips_back() {
    use rttlens_lab::scenario::ScenarioCtx;
    use rttlens_lab_net::{Host, Lab, LinkConfig};

    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("the Prometheus lab test needs root, /dev/net/tun and iproute2: {e}");
    }
    if let Err(e) = rttlens_lab_net::require_command("nginx", "nginx-light") {
        panic!("{e}");
    }
    prom::require("prometheus", "prometheus");
    let lab = Lab::new(LinkConfig::with_rtt(LAB_RTT)).expect("lab");
    let dir = scratch("prometheus-lab");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch");
    let mut ctx = ScenarioCtx::new(&lab, dir.clone());
    ctx.nginx(443, |n| {
        n.ssl_early_data = true;
        n.files = vec![2000];
    })
    .expect("nginx in the server namespace");
    let url = format!("https://{}/size/2000", Lab::SERVER_V4);

    let config = write(
        "serve-lab.yml",
        "modules:\n  resumed:\n    insecure: true\n    tls_version: \"1.3\"\n    \
         resumption: true\n    fail_if_not_verified: true\n  \
         tls12:\n    insecure: true\n    tls_version: \"1.2\"\n",
    );
    let client = lab.netns(Host::Client);
    let mut cmd = bin();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config);
    let (serve, serve_addr, _log) = start_serve(client.command(&cmd));
    // the client namespace is new: nothing else listens on its loopback
    let prom_addr: SocketAddr = "127.0.0.1:9090".parse().expect("addr");
    let jobs = prom::probe_job("nginx13", "resumed", &[&url], serve_addr, "3s")
        + &prom::probe_job("nginx12", "tls12", &[&url], serve_addr, "3s");
    let prom = prom::start(&dir.join("prometheus"), &jobs, prom_addr, &[], |c| {
        client.command(&c)
    });
    let within = Duration::from_secs(40);
    let q = |query: &str| {
        let query = query.to_string();
        lab.run_in(Host::Client, move || prom::query(prom_addr, &query, within))
            .expect("entering the client namespace")
    };
    // the server's processing and the machine's scheduling only add time:
    // a quarter round trip below, half of one above
    let near = |what: &str, got: f64, want: f64| {
        assert!(
            (want - 0.25..=want + 0.5).contains(&got),
            "{what}: {got:.3} RTT, expected {want} (-0.25, +0.5)"
        );
    };

    let (labels, v) = q("probe_success{job=\"nginx13\"}");
    assert_eq!(v, 1.0, "probe_success: {labels}");
    assert_eq!(labels["instance"], url.as_str(), "the relabelled instance");
    let (labels, v) = q("rttlens_verified{job=\"nginx13\",feature=\"resumption\"}");
    assert_eq!(v, 1.0, "resumption verified: {labels}");
    // resumption alone: no connection sent early data
    let (labels, v) = q("rttlens_attempted{job=\"nginx13\",feature=\"0rtt\"}");
    assert_eq!(v, 0.0, "no 0-RTT attempt without zero_rtt: {labels}");
    let (_, v) = q("count(rttlens_tls_handshake_info{job=\"nginx13\"})");
    assert_eq!(v, 2.0, "a full and a resumed connection, no third");
    let (_, v) = q("rttlens_check_ok{job=\"nginx13\",step=\"resumed\",check=\"resumed\"}");
    assert_eq!(v, 1.0, "the resumed connection's check");
    let (labels, _) = q("rttlens_tls_handshake_info{job=\"nginx13\",step=\"resumed\"}");
    assert_eq!(labels["kind"], "tls13-psk", "{labels}");
    let (labels, v) = q("rttlens_rtt_seconds{job=\"nginx13\",step=\"full\",source=\"capture\"}");
    let rtt = LAB_RTT.as_secs_f64();
    assert!(
        (v - rtt).abs() <= rtt * 0.1,
        "the wire's RTT {v} s, the link's {rtt} s: {labels}"
    );
    for (step, phase, want) in [
        ("full", "connect", 1.0),
        ("full", "tls", 1.0),
        ("resumed", "tls", 1.0),
    ] {
        let (_, v) = q(&format!(
            "rttlens_phase_rtts{{job=\"nginx13\",step=\"{step}\",phase=\"{phase}\"}}"
        ));
        near(&format!("TLS 1.3 {step} {phase}"), v, want);
    }
    let (labels, _) = q("probe_tls_version_info{job=\"nginx12\"}");
    assert_eq!(labels["version"], "TLS 1.2", "{labels}");
    let (_, v) = q("rttlens_phase_rtts{job=\"nginx12\",phase=\"tls\"}");
    near("TLS 1.2 full handshake", v, 2.0);
    let (_, v) = q("rttlens_phase_rtts{job=\"nginx12\",phase=\"connect\"}");
    near("TLS 1.2 connect", v, 1.0);

    drop(prom);
    drop(serve);
    drop(ctx);
    drop(lab);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn allow_target_refuses_a_name_outside_it_and_a_signal_lets_scrapes_finish() {
    // a peer that accepts and never answers: the probe waits out its 2 s
    let peer = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = peer.local_addr().expect("addr").port();
    let config = write(
        "serve-signal.yml",
        "modules:\n  hang:\n    ip_family: ip4\n    timeout: 2s\n    capture: false\n",
    );
    // --allow-target: localhost resolves outside 10.0.0.0/8, so 403
    let mut cmd = bin();
    cmd.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--allow-target",
        "10.0.0.0/8",
    ])
    .arg("--config")
    .arg(&config);
    let (serve, addr, _log) = start_serve(cmd);
    let (status, body) = http_get(
        addr,
        &format!("/probe?target=http://localhost:{port}/&module=hang"),
    );
    assert!(status.contains("403"), "{status}: {body}");
    drop(serve);
    let o = bin()
        .args(["serve", "--allow-target", "10.0.0.0/40"])
        .stdin(Stdio::null())
        .output()
        .expect("run rttlens serve");
    assert_eq!(o.status.code(), Some(2), "a bad --allow-target");

    for signal in [nix::sys::signal::SIGTERM, nix::sys::signal::SIGINT] {
        let (mut serve, held, scrape) = serve_with_a_scrape_in_flight(&config, &peer);
        // as `timeout -s SIG`: to the command, then to its process group,
        // microseconds apart, and once more 0.3 s later: all within a
        // second, so one stop, not a second forcing exit
        signal_as_timeout_does(&serve, signal);
        std::thread::sleep(Duration::from_millis(300));
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(serve.0.id() as i32), signal)
            .expect("signal rttlens serve again");
        let (status, body) = scrape
            .join()
            .expect("scrape")
            .unwrap_or_else(|e| panic!("{signal}: the scrape in flight got no answer: {e}"));
        assert!(status.contains("200"), "{signal}: {status}: {body}");
        assert!(body.contains("probe_success 0"), "{signal}: {body}");
        let exited = wait_exit(&mut serve, Duration::from_secs(5))
            .unwrap_or_else(|| panic!("{signal}: still running 5 s after its scrape"));
        assert_eq!(exited.code(), Some(0), "{signal}");
        drop(held);
    }
}

/// `rttlens serve --config CONFIG` in a process group of its own (as
/// `timeout` runs its command), with a scrape of module `hang` in flight:
/// its probe's connection to `peer` accepted (and held) by the time this
/// returns.
fn serve_with_a_scrape_in_flight(
    config: &std::path::Path,
    peer: &std::net::TcpListener,
) -> (
    Reaped,
    std::net::TcpStream,
    std::thread::JoinHandle<std::io::Result<(String, String)>>,
) {
    use std::os::unix::process::CommandExt;
    let port = peer.local_addr().expect("addr").port();
    let mut cmd = bin();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(config)
        .process_group(0);
    let (serve, addr, _log) = start_serve(cmd);
    let path = format!("/probe?target=http://127.0.0.1:{port}/&module=hang");
    let scrape = std::thread::spawn(move || try_http_get(addr, &path));
    peer.set_nonblocking(false).expect("blocking");
    let (held, _) = peer.accept().expect("the probe connects");
    (serve, held, scrape)
}

/// `signal` as `timeout(1)` sends it: to the process, then to its process
/// group (which the process leads).
fn signal_as_timeout_does(serve: &Reaped, signal: nix::sys::signal::Signal) {
    let pid = nix::unistd::Pid::from_raw(serve.0.id() as i32);
    nix::sys::signal::kill(pid, signal).expect("signal rttlens serve");
    nix::sys::signal::killpg(pid, signal).expect("signal its process group");
}

/// The exit status within `limit`, or `None`.
fn wait_exit(serve: &mut Reaped, limit: Duration) -> Option<std::process::ExitStatus> {
    let until = std::time::Instant::now() + limit;
    while std::time::Instant::now() < until {
        if let Some(s) = serve.0.try_wait().expect("wait") {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn a_second_signal_after_a_second_stops_at_once() {
    // the probe waits 8 s on a peer that never answers; the first SIGINT
    // (twice, as `timeout` sends it) leaves it running, the one 1.5 s
    // later ends the exporter without waiting for it
    let peer = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let config = write(
        "serve-second-signal.yml",
        "modules:\n  hang:\n    ip_family: ip4\n    timeout: 8s\n    capture: false\n",
    );
    let (mut serve, held, scrape) = serve_with_a_scrape_in_flight(&config, &peer);
    signal_as_timeout_does(&serve, nix::sys::signal::SIGINT);
    assert!(
        wait_exit(&mut serve, Duration::from_millis(1500)).is_none(),
        "the first signal waits for the scrape in flight"
    );
    let second = std::time::Instant::now();
    signal_as_timeout_does(&serve, nix::sys::signal::SIGINT);
    let exited = wait_exit(&mut serve, Duration::from_secs(3))
        .expect("a second signal a second after the first ends serve within 3 s");
    assert_eq!(exited.code(), Some(130), "{exited:?}");
    assert!(
        second.elapsed() < Duration::from_secs(3),
        "at once, not at the probe's 8 s"
    );
    // the scrape got no answer: its connection closed with the process
    let answer = scrape.join().expect("scrape");
    assert!(
        !matches!(&answer, Ok((status, _)) if status.contains("200")),
        "{answer:?}"
    );
    drop(held);
}

#[test]
fn the_expiry_alert_rules_pass_promtool() {
    let promtool = prom::require("promtool", "prometheus");
    let rules = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/prometheus/cert-expiry.rules.yml"
    );
    let o = std::process::Command::new(promtool)
        .args(["check", "rules", rules])
        .output()
        .expect("run promtool");
    assert!(
        o.status.success(),
        "promtool check rules: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}
