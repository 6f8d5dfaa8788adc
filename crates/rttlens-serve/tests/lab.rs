//! A blackbox-style probe of nginx in the lab (RTT 40 ms) through
//! `/probe` agrees with `rttlens probe` on the same target (issue 26, item
//! 3): the same round trips per phase, the same RTT, resumption and 0-RTT
//! verified by both. Needs root, /dev/net/tun, iproute2 and nginx-light;
//! FAILS (never skips) naming what is missing.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use rttlens_lab::scenario::ScenarioCtx;
use rttlens_lab_net::{Host, Lab, LinkConfig};
use rttlens_serve::{Config, ServeOptions, Server};

const RTT: Duration = Duration::from_millis(40);

const CONFIG: &str = "\
modules:
  resumed:
    insecure: true
    resumption: true
    zero_rtt: true
    fail_if_not_verified: true
    timeout: 20s
";

/// `GET path` of the exporter at `addr`, from the calling thread's
/// namespace: the body (status 200 asserted). Bounded by a 60 s read
/// timeout.
fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("request");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("response");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a response head");
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{raw}"
    );
    body.to_string()
}

fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

fn value(s: &BTreeMap<String, f64>, key: &str) -> f64 {
    *s.get(key)
        .unwrap_or_else(|| panic!("{key} is missing from {s:#?}"))
}

#[test]
fn a_probe_of_lab_nginx_through_serve_agrees_with_rttlens_probe() {
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("the serve lab test needs root, /dev/net/tun and iproute2: {e}");
    }
    if let Err(e) = rttlens_lab_net::require_command("nginx", "nginx-light") {
        panic!("{e}");
    }
    let lab = Lab::new(LinkConfig::with_rtt(RTT)).expect("lab");
    let dir = std::env::temp_dir().join(format!("rttlens-serve-lab-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    let mut ctx = ScenarioCtx::new(&lab, dir.clone());
    ctx.nginx(443, |n| {
        n.ssl_early_data = true;
        n.files = vec![2000];
    })
    .expect("nginx");
    let url = format!("https://{}/size/2000", Lab::SERVER_V4);
    let config = Config::parse(CONFIG, Path::new("lab.yml")).expect("config");
    let module = config.modules["resumed"].clone();

    // the exporter in the client namespace, scraped from there
    let path = format!(
        "/probe?target={}&module=resumed",
        url.replace(':', "%3A").replace('/', "%2F")
    );
    let body = lab
        .run_in(Host::Client, move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            let server = Server::bind(ServeOptions {
                listen: "127.0.0.1:0".parse().expect("addr"),
                config,
                max_concurrent: 2,
                interface: None,
                allow_targets: Vec::new(),
            })
            .expect("bind");
            let addr = server.local_addr();
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let serving = rt.spawn(server.run_until(async {
                let _ = stopped.await;
            }));
            let body = get(addr, &path);
            let _ = stop.send(());
            let _ = rt.block_on(serving);
            body
        })
        .expect("entering the client namespace");
    let s = samples(&body);

    // `rttlens probe --sequence -k` on the same target, the same options
    let cfg = module.probe_config(&url, None).expect("probe config");
    let r = lab
        .run_in(Host::Client, move || rttlens_probe::run(&cfg))
        .expect("entering the client namespace")
        .expect("rttlens probe");

    assert_eq!(value(&s, "probe_success"), 1.0, "{body}");
    assert_eq!(
        value(&s, "rttlens_verified{feature=\"resumption\"}"),
        1.0,
        "{body}"
    );
    assert_eq!(
        value(&s, "rttlens_verified{feature=\"0rtt\"}"),
        1.0,
        "{body}"
    );
    assert_eq!(r.attempts.len(), 3);
    for a in &r.attempts {
        // the RTT: both from their own capture, within 10 % of the link's
        let key = format!(
            "rttlens_rtt_seconds{{attempt=\"{}\",step=\"{}\",source=\"capture\"}}",
            a.index, a.step
        );
        let serve_rtt = value(&s, &key);
        let probe_rtt = a.rtt_ms.expect("the probe's RTT") / 1e3;
        for (who, v) in [("serve", serve_rtt), ("probe", probe_rtt)] {
            assert!(
                (v - RTT.as_secs_f64()).abs() <= RTT.as_secs_f64() * 0.1,
                "{who} {}: RTT {v} s",
                a.step
            );
        }
        // each phase in round trips: the same within a quarter round trip
        for phase in ["connect", "tls", "request"] {
            let key = format!(
                "rttlens_phase_rtts{{attempt=\"{}\",step=\"{}\",phase=\"{phase}\"}}",
                a.index, a.step
            );
            let ours = value(&s, &key);
            let theirs = a.phase(phase).and_then(|p| p.rtts).expect("probe's RTTs");
            assert!(
                (ours - theirs).abs() <= 0.25,
                "{} {phase}: serve {ours:.2} RTT, probe {theirs:.2} RTT",
                a.step
            );
        }
    }
    // the physics: TCP 1 RTT, TLS 1.3 full and resumed 1 RTT
    for (step, phase, want) in [
        ("full", "connect", 1.0),
        ("full", "tls", 1.0),
        ("resumed", "tls", 1.0),
    ] {
        let i = r
            .attempts
            .iter()
            .position(|a| a.step == step)
            .expect("step");
        let key =
            format!("rttlens_phase_rtts{{attempt=\"{i}\",step=\"{step}\",phase=\"{phase}\"}}");
        let got = value(&s, &key);
        assert!(
            (got - want).abs() <= 0.25,
            "{step} {phase}: {got:.2} RTT, expected {want}"
        );
    }
    for (i, kind) in [(0, "tls13-full"), (1, "tls13-psk"), (2, "tls13-0rtt")] {
        assert!(
            s.keys().any(|k| k
                .starts_with(&format!("rttlens_tls_handshake_info{{attempt=\"{i}\""))
                && k.contains(&format!("kind=\"{kind}\""))),
            "connection {i} is {kind}: {body}"
        );
    }
    drop(ctx);
    drop(lab);
    let _ = std::fs::remove_dir_all(dir);
}
