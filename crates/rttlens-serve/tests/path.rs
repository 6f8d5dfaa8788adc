//! A module with `path: true` (issue 44): the exporter in the routed lab's
//! client (client — R1 — 40 ms link — R2 — server) exports each hop as
//! mtr exporters do (`ttl`, `host`, `hop` labels): R2's and the server's
//! medians within 1 ms of 40 ms, R1's within 1 ms of 0, no loss, the step
//! at R2. Needs root, /dev/net/tun and iproute2; FAILS (never skips)
//! naming what is missing.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use rttlens_lab::path::BehindR2;
use rttlens_lab_net::{LinkConfig, Node, RoutedLab};
use rttlens_serve::{Config, ServeOptions, Server};

const CONFIG: &str = "\
modules:
  traced:
    path: true
    path_rounds: 5
    timeout: 15s
";

fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("request");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("response");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a response head");
    assert!(head.contains(" 200"), "{raw}");
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

#[test]
fn path_module_exports_each_hop() {
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("the serve path test needs root, /dev/net/tun and iproute2: {e}");
    }
    let lab = RoutedLab::new(LinkConfig::with_rtt(Duration::from_millis(40))).expect("lab");
    let server = BehindR2::start(&lab).expect("server");
    let config = Config::parse(CONFIG, Path::new("path.yml")).expect("config");
    let path = format!(
        "/probe?target={}&module=traced",
        server.url().replace(':', "%3A").replace('/', "%2F")
    );
    let body = lab
        .run_in(Node::Client, move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            let server = Server::bind(ServeOptions {
                listen: "127.0.0.1:0".parse().expect("addr"),
                config,
                max_concurrent: 1,
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
    drop(server);
    let s = samples(&body);
    let v = |k: &str| {
        *s.get(k)
            .unwrap_or_else(|| panic!("{k} is missing from:\n{body}"))
    };
    assert_eq!(v("probe_success"), 1.0, "{body}");
    assert_eq!(
        v("rttlens_path_info{status=\"traced\",protocol=\"tcp\"}"),
        1.0
    );
    assert_eq!(v("rttlens_path_hops"), 3.0, "{body}");
    assert_eq!(v("rttlens_path_rounds"), 5.0, "{body}");
    let hops = [
        ("1", RoutedLab::R1, "first", 0.0),
        ("2", RoutedLab::R2, "intermediate", 0.040),
        ("3", RoutedLab::SERVER, "last", 0.040),
    ];
    for (ttl, host, place, want) in hops {
        let base = format!("ttl=\"{ttl}\",host=\"{host}\",hop=\"{place}\"");
        assert_eq!(v(&format!("rttlens_path_hop_sent{{{base}}}")), 5.0);
        assert_eq!(v(&format!("rttlens_path_hop_loss_ratio{{{base}}}")), 0.0);
        let p50 = v(&format!(
            "rttlens_path_hop_rtt_seconds{{{base},stat=\"p50\"}}"
        ));
        assert!(
            (p50 - want).abs() <= 0.001,
            "hop {ttl} p50 {p50} s, want {want}"
        );
        let min = v(&format!(
            "rttlens_path_hop_rtt_seconds{{{base},stat=\"min\"}}"
        ));
        let max = v(&format!(
            "rttlens_path_hop_rtt_seconds{{{base},stat=\"max\"}}"
        ));
        assert!(min <= p50 && p50 <= max, "hop {ttl}: {min} {p50} {max}");
    }
    let step = v(&format!(
        "rttlens_path_step_seconds{{ttl=\"2\",host=\"{}\"}}",
        RoutedLab::R2
    ));
    assert!((step - 0.040).abs() <= 0.001, "step {step} s");
}
