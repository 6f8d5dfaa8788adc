//! Live capture as users run it (issue 26 part 2): `rttlens analyze -i
//! IFACE` on one end of a veth pair between two network namespaces while
//! real TCP traffic runs, checked against `rttlens analyze` of a tcpdump
//! file of the same traffic taken at the same time; `rttlens serve
//! --interface` scraped on `/metrics`; a bad interface or a missing
//! capability is one message and exit code 2.
//!
//! The namespace tests need root and iproute2 (and tcpdump for the
//! comparison; scripts/packages): they FAIL naming what is missing. Every
//! wait is bounded; each test makes a handful of connections.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::veth::{require_root_and_ip, wait_exit, wait_for_line, Pair, Reaped, A_IF, SERVER};
use common::{bin, scratch};
use rttlens_lab_net::netns::Netns;
use rttlens_lab_net::Tcpdump;
use serde_json::Value;

/// `(client, server)` → the finding ids of each connection of a jsonl
/// output, and the summary's capture object.
fn connections(jsonl: &str) -> (Vec<(String, String, Vec<String>)>, Value) {
    let mut conns = Vec::new();
    let mut summary = Value::Null;
    for line in jsonl.lines() {
        let v: Value = serde_json::from_str(line).expect("a JSON line");
        match v["type"].as_str() {
            Some("connection") => {
                let mut ids: Vec<String> = v["findings"]
                    .as_array()
                    .expect("findings")
                    .iter()
                    .map(|f| f["id"].as_str().expect("id").to_string())
                    .collect();
                ids.sort();
                conns.push((
                    v["client"].as_str().expect("client").to_string(),
                    v["server"].as_str().expect("server").to_string(),
                    ids,
                ));
            }
            Some("summary") => summary = v["capture"].clone(),
            _ => {}
        }
    }
    conns.sort();
    (conns, summary)
}

#[test]
fn live_capture_names_the_connections_and_findings_of_a_tcpdump_file() {
    let pair = Pair::new();
    let file = scratch("live-veth.pcap");
    let dump = Tcpdump::start(&pair.a, A_IF, &file).unwrap_or_else(|e| panic!("{e}"));
    let mut cmd = bin();
    cmd.args(["analyze", "-i", A_IF, "--format", "jsonl"]);
    let mut live = Reaped(
        pair.a
            .command(&cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run rttlens analyze -i"),
    );
    let (_, _rest) = wait_for_line(&mut live.0, "capturing on");
    let server = pair.serve(4);
    pair.clients(4);
    server.join().expect("server").expect("server ran");
    // let the last FIN/ACKs reach both captures, then Ctrl-C
    std::thread::sleep(Duration::from_millis(300));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(live.0.id()).expect("pid")),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT");
    let status = wait_exit(&mut live.0, Duration::from_secs(10));
    assert!(status.success(), "Ctrl-C ends it cleanly: {status:?}");
    let mut out = String::new();
    live.0
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read stdout");
    dump.stop();

    let (live_conns, live_sum) = connections(&out);
    let o = bin()
        .args(["analyze", "--format", "jsonl"])
        .arg(&file)
        .output()
        .expect("rttlens analyze FILE");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (file_conns, _) = connections(&String::from_utf8_lossy(&o.stdout));

    assert_eq!(live_conns.len(), 4, "the four connections: {live_conns:?}");
    assert_eq!(
        live_conns, file_conns,
        "live and tcpdump name the same connections and findings"
    );
    for (c, s, ids) in &live_conns {
        assert_eq!(s, SERVER, "{c}");
        assert!(
            ids.iter().any(|i| i == "server-think-time"),
            "{c}: the server's 30 ms think time is named: {ids:?}"
        );
    }
    assert_eq!(
        live_sum["quality"]["kernel_drops"],
        Value::from(0u64),
        "kernel drops reported (0): {live_sum}"
    );
    assert!(
        live_sum["format"]
            .as_str()
            .is_some_and(|f| f.starts_with("live AF_PACKET (kernel: ")),
        "{live_sum}"
    );
}

#[test]
fn live_jsonl_streams_each_connection_as_it_ends() {
    let pair = Pair::new();
    let mut cmd = bin();
    cmd.args([
        "analyze",
        "-i",
        A_IF,
        "--format",
        "jsonl",
        "--duration",
        "20s",
    ]);
    let mut live = Reaped(
        pair.a
            .command(&cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run rttlens analyze -i"),
    );
    let (_, _rest) = wait_for_line(&mut live.0, "capturing on");
    let (tx, lines) = mpsc::channel();
    let stdout = live.0.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    // the header at once, before any packet: a watcher of a quiet link
    // sees the stream has begun
    let header = lines
        .recv_timeout(Duration::from_secs(3))
        .expect("the header line before any traffic");
    assert!(header.contains("\"type\":\"header\""), "{header}");
    let server = pair.serve(2);
    pair.clients(1);
    // a connection is handed on once closed and quiet for a second (on
    // the wall clock: tests/live_on_time.rs); the second one comes 1.2 s
    // later
    std::thread::sleep(Duration::from_millis(1_200));
    pair.clients(1);
    server.join().expect("server").expect("server ran");
    let deadline = Instant::now() + Duration::from_secs(5);
    let first_conn = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let l = lines
            .recv_timeout(left)
            .expect("the first connection's line while the capture still runs");
        if l.contains("\"type\":\"connection\"") {
            break l;
        }
    };
    assert!(
        live.0.try_wait().expect("try_wait").is_none(),
        "still capturing"
    );
    assert!(first_conn.contains("\"index\":0"), "{first_conn}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(live.0.id()).expect("pid")),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let status = wait_exit(&mut live.0, Duration::from_secs(10));
    assert!(status.success(), "SIGTERM ends it cleanly: {status:?}");
    let rest: Vec<String> = lines.try_iter().collect();
    assert!(
        rest.iter().any(|l| l.contains("\"type\":\"connection\"")),
        "the second connection at the end: {rest:?}"
    );
    assert!(
        rest.last()
            .is_some_and(|l| l.contains("\"type\":\"summary\"")),
        "the summary last: {rest:?}"
    );
}

/// `GET path` on `addr` from inside `ns`; the body.
fn http_get(ns: &Netns, addr: SocketAddr, path: &str) -> String {
    let path = path.to_string();
    ns.run(move || -> std::io::Result<String> {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )?;
        let mut out = String::new();
        s.read_to_string(&mut out)?;
        Ok(out)
    })
    .expect("enter namespace")
    .expect("scrape")
}

/// The value of the sample `name` (with its labels, as exposed).
fn sample(metrics: &str, name: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

#[test]
fn serve_interface_exposes_the_live_analysis_on_metrics() {
    let pair = Pair::new();
    let mut cmd = bin();
    cmd.args(["serve", "--listen", "10.78.0.1:0", "--interface", A_IF]);
    let mut serve = Reaped(
        pair.a
            .command(&cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run rttlens serve --interface"),
    );
    let (line, _rest) = wait_for_line(&mut serve.0, "listening on http://");
    let addr: SocketAddr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split('/').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("an address in: {line}"));
    let server = pair.serve(4);
    pair.clients(3);
    // the fourth connection, 1.2 s later, hands the first three on
    std::thread::sleep(Duration::from_millis(1_200));
    pair.clients(1);
    server.join().expect("server").expect("server ran");
    std::thread::sleep(Duration::from_millis(200));
    let m = http_get(&pair.a, addr, "/metrics");
    assert!(m.starts_with("HTTP/1.1 200"), "{m}");
    let get = |name: &str| sample(&m, name).unwrap_or_else(|| panic!("no {name} in:\n{m}"));
    assert!(get("rttlens_live_connections_total") >= 3.0, "{m}");
    assert!(
        get("rttlens_live_findings_total{id=\"server-think-time\"}") >= 3.0,
        "{m}"
    );
    let cost = get("rttlens_live_finding_cost_seconds_total{id=\"server-think-time\"}");
    assert!(cost >= 3.0 * 0.025, "three 30 ms thinks: {cost}");
    assert!(
        get("rttlens_live_phase_duration_seconds_count{phase=\"connect\"}") >= 3.0,
        "{m}"
    );
    assert!(
        m.contains("rttlens_live_phase_duration_seconds_bucket{"),
        "classic buckets: {m}"
    );
    assert_eq!(
        get("rttlens_live_kernel_drops_total{interface=\"lv-a\"}"),
        0.0
    );
    assert!(get("rttlens_live_kernel_packets_total{interface=\"lv-a\"}") > 0.0);
    assert!(get("rttlens_live_frames_total{interface=\"lv-a\"}") > 0.0);
    // the scrape's own connection and the fourth request are still open
    assert!(get("rttlens_live_open_connections{interface=\"lv-a\"}") >= 1.0);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(serve.0.id()).expect("pid")),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let status = wait_exit(&mut serve.0, Duration::from_secs(10));
    assert!(status.success(), "SIGTERM ends serve: {status:?}");
}

#[test]
fn a_bad_interface_is_one_message_and_exit_2() {
    let runs: [&[&str]; 2] = [
        &["analyze", "-i", "nosuch-if0"],
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--interface",
            "nosuch-if0",
        ],
    ];
    for args in runs {
        let o = bin()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run rttlens");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("no interface named 'nosuch-if0'"),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "one message: {err}");
    }
}

#[test]
fn without_cap_net_raw_it_says_so_and_exits_2() {
    require_root_and_ip();
    // setpriv (util-linux, in every Debian) drops to nobody with no
    // capabilities
    let probe = Command::new("setpriv").arg("--version").output();
    assert!(
        probe.is_ok_and(|o| o.status.success()),
        "`setpriv` not found: install the Debian package util-linux"
    );
    let o = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(env!("CARGO_BIN_EXE_rttlens"))
        .args(["analyze", "-i", "lo", "--duration", "1s"])
        .stdin(Stdio::null())
        .output()
        .expect("run rttlens as nobody");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("needs CAP_NET_RAW"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one message: {err}");
}

/// One connection of a jsonl output: its ends, its first frame, and its
/// findings as (id, evidence frames), sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Conn {
    client: String,
    server: String,
    first_frame: i64,
    findings: Vec<(String, Vec<i64>)>,
}

/// The connections of a jsonl output in first-packet order, and the
/// summary's capture object.
fn conns_with_evidence(jsonl: &str) -> (Vec<Conn>, Value) {
    let mut conns = Vec::new();
    let mut summary = Value::Null;
    for line in jsonl.lines() {
        let v: Value = serde_json::from_str(line).expect("a JSON line");
        match v["type"].as_str() {
            Some("connection") => {
                let mut findings: Vec<(String, Vec<i64>)> = v["findings"]
                    .as_array()
                    .expect("findings")
                    .iter()
                    .map(|f| {
                        let frames = f["evidence"]
                            .as_array()
                            .expect("evidence")
                            .iter()
                            .map(|e| e["frame"].as_i64().expect("an evidence frame"))
                            .collect();
                        (f["id"].as_str().expect("id").to_string(), frames)
                    })
                    .collect();
                findings.sort();
                conns.push(Conn {
                    client: v["client"].as_str().expect("client").to_string(),
                    server: v["server"].as_str().expect("server").to_string(),
                    first_frame: v["first_frame"].as_i64().expect("first_frame"),
                    findings,
                });
            }
            Some("summary") => summary = v["capture"].clone(),
            _ => {}
        }
    }
    conns.sort_by_key(|c| c.first_frame);
    (conns, summary)
}

/// Issue 26: a live capture over a lab scenario names the same findings as
/// `analyze` of the scenario's file. Each scenario runs in the lab (real
/// nginx and curl, a 20 ms delay link) with `rttlens analyze -i rtl0`
/// running live in the client namespace the whole time, beside the lab's
/// own tcpdump on the same device; the live jsonl must name the same
/// connections, the same finding ids and the same evidence frames as
/// `rttlens analyze` of the tcpdump file. The two captures start a moment
/// apart, so the frame numbers may differ by a constant (the packets one
/// saw before the other started): the test takes it from the first
/// connection's first frame and holds every connection and evidence frame
/// to it. Needs root, /dev/net/tun, iproute2, nginx-light, curl and
/// tcpdump (FAILS naming what is missing); at most about a minute.
#[test]
fn a_live_capture_over_lab_scenarios_names_the_findings_of_their_files() {
    use rttlens_lab::scenario::{self, Beside};
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("the live lab test needs root, /dev/net/tun and iproute2: {e}");
    }
    for (c, p) in [
        ("nginx", "nginx-light"),
        ("curl", "curl"),
        ("tcpdump", "tcpdump"),
    ] {
        if let Err(e) = rttlens_lab_net::require_command(c, p) {
            panic!("{e}");
        }
    }
    let started = Instant::now();
    let keep = scratch("live-lab");
    std::fs::create_dir_all(&keep).expect("scratch");
    // the scenarios and the finding each is about
    for (name, about) in [
        ("nagle-response", &["nagle-stall", "nagle-delayed-ack"][..]),
        ("sndbuf-cap", &["sender-window-cap"][..]),
    ] {
        let s = rttlens_lab::find(name).unwrap_or_else(|| panic!("no scenario {name}"));
        let mut cmd = bin();
        // --duration bounds it should the SIGINT go astray
        cmd.args([
            "analyze",
            "-i",
            rttlens_lab_net::TUN_NAME,
            "--format",
            "jsonl",
            "--duration",
            "90s",
        ]);
        let (outcome, live) = scenario::run_scenario_beside(
            s,
            Duration::from_millis(20),
            Some(&keep),
            Beside {
                host: rttlens_lab_net::Host::Client,
                command: cmd,
                ready: Some("capturing on".into()),
            },
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            outcome.passed(),
            "{name}: the scenario's own expectations on its capture: {:?} (findings {:?})",
            outcome.found,
            outcome.findings
        );
        assert!(
            live.status.is_some_and(|st| st.success()),
            "{name}: `analyze -i` ends cleanly on SIGINT: {:?}, stderr: {}",
            live.status,
            live.stderr
        );
        let (live_conns, live_sum) = conns_with_evidence(&live.stdout);
        let o = bin()
            .args(["analyze", "--format", "jsonl"])
            .arg(&outcome.client_capture)
            .output()
            .expect("rttlens analyze FILE");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let (file_conns, _) = conns_with_evidence(&String::from_utf8_lossy(&o.stdout));

        assert_eq!(
            live_sum["quality"]["kernel_drops"],
            Value::from(0u64),
            "{name}: the live capture lost no packet: {live_sum}"
        );
        assert!(!file_conns.is_empty(), "{name}: connections in the file");
        assert_eq!(
            live_conns.len(),
            file_conns.len(),
            "{name}: the same connections\nlive: {live_conns:?}\nfile: {file_conns:?}"
        );
        let shift = live_conns[0].first_frame - file_conns[0].first_frame;
        eprintln!(
            "{name}: live frame numbers = the file's + {shift}; findings per connection: {:?}",
            live_conns
                .iter()
                .map(|c| c
                    .findings
                    .iter()
                    .map(|(id, _)| id.as_str())
                    .collect::<Vec<_>>())
                .collect::<Vec<_>>()
        );
        for (l, f) in live_conns.iter().zip(&file_conns) {
            let unshifted = Conn {
                first_frame: l.first_frame - shift,
                findings: l
                    .findings
                    .iter()
                    .map(|(id, frames)| (id.clone(), frames.iter().map(|n| n - shift).collect()))
                    .collect(),
                ..l.clone()
            };
            assert_eq!(
                &unshifted, f,
                "{name}: live (frame numbers less {shift}) and file name the same connection, \
                 findings and evidence frames"
            );
        }
        assert!(
            live_conns
                .iter()
                .flat_map(|c| &c.findings)
                .any(|(id, _)| about.contains(&id.as_str())),
            "{name}: the live capture names {about:?}: {live_conns:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&keep);
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "both scenarios within two minutes: {:?}",
        started.elapsed()
    );
}

/// Issue 26: the live analysis' phase histograms are native Prometheus
/// histograms. `rttlens serve --interface` on one end of the veth pair,
/// and Debian's Prometheus started with `--enable-feature=native-histograms`
/// scraping its `/metrics` (both on the namespace's loopback, so the
/// scrapes are not on the captured interface): Prometheus then asks for
/// the protobuf exposition, and stores a native histogram, whose series
/// has no `_bucket` suffix and which `histogram_count` and
/// `histogram_quantile` read directly (a text scrape stores no such
/// series: the queries would find nothing). The server thinks 30 ms
/// before each answer, so the median `request` phase is at least the
/// native bucket holding 30 ms (factor 2^(1/8) ≈ 1.09: from 28.7 ms), and
/// not much more (≤ 50 ms, a busy machine's scheduling on top). Needs
/// root, iproute2 and prometheus (FAILS naming what is missing).
#[test]
fn prometheus_reads_the_live_phase_histograms_as_native_histograms() {
    use common::prom;
    let pair = Pair::new();
    prom::require("prometheus", "prometheus");
    let mut cmd = bin();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--interface", A_IF]);
    let mut serve = Reaped(
        pair.a
            .command(&cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run rttlens serve --interface"),
    );
    let (line, _rest) = wait_for_line(&mut serve.0, "listening on http://");
    let addr: SocketAddr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split('/').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("an address in: {line}"));
    // namespace a is new: nothing else listens on its loopback
    let prom_addr: SocketAddr = "127.0.0.1:9090".parse().expect("addr");
    let dir = scratch("prometheus-native");
    let prometheus = prom::start(
        &dir,
        &format!("  - job_name: live\n    static_configs:\n      - targets: ['{addr}']\n"),
        prom_addr,
        &["--enable-feature=native-histograms"],
        |c| pair.a.command(&c),
    );
    let server = pair.serve(6);
    pair.clients(5);
    // the sixth connection, 1.2 s later, hands the first five on
    std::thread::sleep(Duration::from_millis(1_200));
    pair.clients(1);
    server.join().expect("server").expect("server ran");

    let within = Duration::from_secs(30);
    let (_, n) = pair
        .a
        .run(move || {
            prom::query_until(
                prom_addr,
                "histogram_count(rttlens_live_phase_duration_seconds{phase=\"request\"})",
                within,
                |n| n >= 5.0,
            )
        })
        .expect("enter namespace a");
    assert!(n >= 5.0, "{n}");
    let (labels, p50) = pair
        .a
        .run(move || {
            prom::query(
                prom_addr,
                "histogram_quantile(0.5, rttlens_live_phase_duration_seconds{phase=\"request\"})",
                within,
            )
        })
        .expect("enter namespace a");
    eprintln!("the median request phase from the native histogram: {p50} s");
    // at least the native bucket holding 30 ms (2^(-41/8) = 28.7 ms on);
    // a busy machine adds its scheduling to the think time
    assert!(
        (0.028..=0.050).contains(&p50),
        "the median request phase from the native histogram: {p50} s (the server thinks 30 ms): {labels}"
    );
    let (_, rtts) = pair
        .a
        .run(move || {
            prom::query(
                prom_addr,
                "histogram_count(rttlens_live_phase_rtts{phase=\"connect\"})",
                within,
            )
        })
        .expect("enter namespace a");
    assert!(
        rtts >= 5.0,
        "the round-trip histogram is native too: {rtts}"
    );

    // every query of the dashboard's live panels is PromQL this Prometheus
    // runs, and the connections panel and the native p50 show data
    let dashboard: Value =
        serde_json::from_str(include_str!("../../../docs/grafana/rttlens-probe.json"))
            .expect("the dashboard is JSON");
    let exprs: Vec<String> = dashboard["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["expr"].as_str().map(str::to_string))
        .filter(|e| e.contains("rttlens_live_"))
        .collect();
    assert!(exprs.len() >= 10, "the live panels' queries: {exprs:?}");
    let answers = pair
        .a
        .run(move || {
            // rate() needs two scrapes of each series: two more scrapes
            // than when the histogram was first seen whole
            let scrapes = "count_over_time(rttlens_live_connections_total{job=\"live\"}[5m])";
            let (_, n0) = prom::query(prom_addr, scrapes, within);
            prom::query_until(prom_addr, scrapes, within, |n| n >= n0 + 2.0);
            exprs
                .iter()
                .map(|e| {
                    let q = e.replace("$live_job", "live");
                    let (status, v) = prom::query_once(prom_addr, &q);
                    (q, status, v)
                })
                .collect::<Vec<_>>()
        })
        .expect("enter namespace a");
    for (q, status, v) in &answers {
        assert_eq!(status, &200, "the dashboard's `{q}`: {v}");
        assert_eq!(v["status"], "success", "the dashboard's `{q}`: {v}");
    }
    for want in [
        "rate(rttlens_live_connections_total",
        "histogram_quantile(0.5, sum by (phase) (rate(rttlens_live_phase_duration_seconds{",
    ] {
        let (q, _, v) = answers
            .iter()
            .find(|(q, _, _)| q.contains(want))
            .unwrap_or_else(|| panic!("no dashboard query with `{want}`"));
        assert!(
            v["data"]["result"]
                .as_array()
                .is_some_and(|r| !r.is_empty()),
            "the dashboard's `{q}` shows data: {v}"
        );
    }
    drop(prometheus);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(serve.0.id()).expect("pid")),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let status = wait_exit(&mut serve.0, Duration::from_secs(10));
    assert!(status.success(), "SIGTERM ends serve: {status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
