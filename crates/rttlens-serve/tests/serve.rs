//! The exporter as Prometheus uses it, against real peers: the built-in
//! rustls server of the lab (`rttlens-lab-server`, with tickets and 0-RTT)
//! on a loopback port, probed through `/probe` by the real probe (no mock);
//! a closed port; bad requests; the concurrency limit; `/metrics` (text,
//! and protobuf when the scrape prefers it).
//! Every wait is bounded.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::{exporter, get, probe_path, samples, target, target_with, value};

#[test]
fn a_probe_of_a_real_tls_server() {
    let t = target(Duration::ZERO);
    let e = exporter(4);
    let url = format!("https://{}/size/3000", t.addr);
    let (status, body) = get(e.addr, &probe_path(&url, "https"));
    assert_eq!(status, 200, "{body}");
    let s = samples(&body);
    assert_eq!(value(&s, "probe_success"), 1.0, "{body}");
    assert!(value(&s, "probe_duration_seconds") > 0.0);
    for phase in ["resolve", "connect", "tls", "processing", "transfer"] {
        let v = value(
            &s,
            &format!("probe_http_duration_seconds{{phase=\"{phase}\"}}"),
        );
        assert!((0.0..10.0).contains(&v), "{phase}: {v}");
    }
    assert_eq!(value(&s, "probe_http_status_code"), 200.0);
    assert_eq!(value(&s, "probe_http_version"), 1.1);
    assert_eq!(
        value(&s, "probe_http_uncompressed_body_length_bytes"),
        3000.0
    );
    assert!(
        s.keys()
            .any(|k| k.starts_with("probe_tls_version_info{version=\"TLS 1.")),
        "{body}"
    );
    for phase in ["namelookup", "connect", "tls", "request", "transfer"] {
        let key = format!(
            "rttlens_phase_duration_seconds{{attempt=\"0\",step=\"single\",phase=\"{phase}\"}}"
        );
        value(&s, &key);
    }
    assert!(
        s.keys()
            .any(|k| k.starts_with("rttlens_rtt_seconds{attempt=\"0\"")),
        "the RTT: {body}"
    );
    assert!(
        s.keys()
            .any(|k| k
                .starts_with("rttlens_phase_rtts{attempt=\"0\",step=\"single\",phase=\"tls\"}")),
        "RTTs per phase: {body}"
    );
    assert!(
        s.keys()
            .any(|k| k.starts_with("rttlens_tls_handshake_info{")
                && k.contains("kind=\"tls13-full\"")),
        "{body}"
    );
    assert_eq!(value(&s, "rttlens_attempted{feature=\"resumption\"}"), 0.0);
    value(&s, "rttlens_findings");
    assert!(body.ends_with("# EOF\n"), "OpenMetrics ends with # EOF");

    // the module asks for resumption and 0-RTT: the probe's sequence, each
    // verified
    let (status, body) = get(e.addr, &probe_path(&url, "resumed"));
    assert_eq!(status, 200, "{body}");
    let s = samples(&body);
    assert_eq!(value(&s, "probe_success"), 1.0, "{body}");
    for f in ["resumption", "0rtt"] {
        assert_eq!(
            value(&s, &format!("rttlens_attempted{{feature=\"{f}\"}}")),
            1.0
        );
        assert_eq!(
            value(&s, &format!("rttlens_verified{{feature=\"{f}\"}}")),
            1.0,
            "{body}"
        );
    }
    assert_eq!(value(&s, "rttlens_verified{feature=\"tfo\"}"), 0.0);
    assert_eq!(
        value(
            &s,
            "rttlens_check_ok{attempt=\"1\",step=\"resumed\",check=\"resumed\"}"
        ),
        1.0
    );
    assert!(
        s.keys().any(|k| k
            .starts_with("rttlens_tls_handshake_info{attempt=\"1\",step=\"resumed\"")
            && k.contains("kind=\"tls13-psk\"")),
        "{body}"
    );
    assert!(
        s.keys().any(
            |k| k.starts_with("rttlens_tls_handshake_info{attempt=\"2\",step=\"0-rtt\"")
                && k.contains("early_data=\"accepted\"")
        ),
        "{body}"
    );

    // ?debug=true: the probe's report
    let (status, body) = get(e.addr, &format!("{}&debug=true", probe_path(&url, "https")));
    assert_eq!(status, 200);
    assert!(body.contains(&format!("probe {url}")), "{body}");
    assert!(
        body.contains("Metrics that would have been returned:"),
        "{body}"
    );

    // the exporter counted them
    let (status, body) = get(e.addr, "/metrics");
    assert_eq!(status, 200);
    let s = samples(&body);
    assert_eq!(
        value(
            &s,
            "rttlens_serve_probe_requests_total{module=\"https\",outcome=\"success\"}"
        ),
        2.0,
        "{body}"
    );
    assert_eq!(
        value(
            &s,
            "rttlens_serve_probe_duration_seconds_count{module=\"resumed\"}"
        ),
        1.0
    );
    assert_eq!(value(&s, "rttlens_serve_probes_in_flight"), 0.0);
    assert_eq!(value(&s, "rttlens_serve_max_concurrent"), 4.0);

    let (status, body) = get(e.addr, "/");
    assert_eq!(status, 200);
    assert!(
        body.contains("resumed") && body.contains("/metrics"),
        "{body}"
    );
}

#[test]
fn the_servers_own_server_timing_beside_the_wire() {
    // the built-in server (cleartext HTTP/1.1: the probe reads its capture
    // without keys) takes 40 ms in its handler and says so
    // (`Server-Timing: app;dur=…`); on loopback the wire's think time is
    // that and the scheduler's few milliseconds
    let t = target_with(rttlens_lab_server::builtin::ServerConfig {
        think: Duration::from_millis(40),
        server_timing: true,
        plain_http: true,
        ..Default::default()
    });
    let e = exporter(4);
    let url = format!("http://{}/size/1000", t.addr);
    let (status, body) = get(e.addr, &probe_path(&url, "https"));
    assert_eq!(status, 200, "{body}");
    let s = samples(&body);
    assert_eq!(value(&s, "probe_success"), 1.0, "{body}");
    let app = value(&s, "rttlens_server_timing_seconds{metric=\"app\"}");
    assert!((0.039..0.5).contains(&app), "app {app}: {body}");
    let unaccounted = value(&s, "rttlens_server_timing_unaccounted_seconds");
    assert!(
        unaccounted.abs() < 0.025,
        "unaccounted {unaccounted}: {body}"
    );
    // over https with no key log: the probe decrypts its own capture with
    // the secrets it kept in memory (HTTP/1.1 and HTTP/2 by ALPN)
    let t = target_with(rttlens_lab_server::builtin::ServerConfig {
        think: Duration::from_millis(40),
        server_timing: true,
        http2: true,
        ..Default::default()
    });
    let config = format!(
        "{}  h2:\n    insecure: true\n    http_version: \"2\"\n",
        common::CONFIG
    );
    let e = common::exporter_with(&config, 4, &[]);
    for module in ["https", "h2"] {
        let url = format!("https://{}/size/1000", t.addr);
        let (status, body) = get(e.addr, &probe_path(&url, module));
        assert_eq!(status, 200, "{body}");
        let s = samples(&body);
        assert_eq!(value(&s, "probe_success"), 1.0, "{module}: {body}");
        let app = value(&s, "rttlens_server_timing_seconds{metric=\"app\"}");
        assert!((0.039..0.5).contains(&app), "{module}: app {app}: {body}");
    }
    // a server that sends none: no series
    let t = target(Duration::ZERO);
    let (_, body) = get(
        e.addr,
        &probe_path(&format!("https://{}/size/1000", t.addr), "https"),
    );
    assert!(!body.contains("rttlens_server_timing"), "{body}");
}

#[test]
fn a_closed_port_fails_in_connect() {
    // a port that was free a moment ago: bind, note it, close
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let e = exporter(4);
    let (status, body) = get(
        e.addr,
        &probe_path(&format!("https://127.0.0.1:{port}/"), "https"),
    );
    assert_eq!(status, 200, "a failed probe is still a scrape: {body}");
    let s = samples(&body);
    assert_eq!(value(&s, "probe_success"), 0.0, "{body}");
    assert_eq!(
        value(
            &s,
            "rttlens_probe_failed_phase_info{phase=\"connect\",kind=\"refused\"}"
        ),
        1.0,
        "{body}"
    );
    let (_, m) = get(e.addr, "/metrics");
    assert_eq!(
        value(
            &samples(&m),
            "rttlens_serve_probe_requests_total{module=\"https\",outcome=\"failure\"}"
        ),
        1.0
    );
}

#[test]
fn bad_requests_are_400_with_a_reason() {
    let e = exporter(4);
    for (path, want) in [
        (
            "/probe?target=https%3A%2F%2F127.0.0.1%2F&module=nope",
            "unknown module 'nope'",
        ),
        ("/probe?module=https", "target parameter is missing"),
        (
            "/probe?target=https%3A%2F%2F127.0.0.1%2F",
            "module parameter is missing",
        ),
        (
            "/probe?target=ftp%3A%2F%2Fx%2F&module=https",
            "scheme 'ftp'",
        ),
        ("/probe?target=%zz&module=https", "bad %-encoding"),
        ("/probe?target=https%3A%2F%2F%2F&module=https", "target"),
    ] {
        let (status, body) = get(e.addr, path);
        assert_eq!(status, 400, "{path}: {body}");
        assert!(body.contains(want), "{path}: {body}");
    }
    let (status, _) = get(e.addr, "/nowhere");
    assert_eq!(status, 404);
    let (_, m) = get(e.addr, "/metrics");
    assert_eq!(
        value(
            &samples(&m),
            "rttlens_serve_probe_requests_total{module=\"\",outcome=\"bad_request\"}"
        ),
        4.0,
        "{m}"
    );
}

#[test]
fn over_the_limit_is_503_and_a_slow_target_times_out() {
    // the server thinks 3 s before each response; the module's limit is 1 s
    let t = target(Duration::from_secs(3));
    let e = exporter(1);
    let url = format!("https://{}/size/10", t.addr);
    let addr = e.addr;
    let path = probe_path(&url, "quick");
    let slow = std::thread::spawn(move || get(addr, &path));
    // wait (bounded) until the first probe holds the only place
    let mut busy = false;
    for _ in 0..100 {
        let (_, m) = get(e.addr, "/metrics");
        if value(&samples(&m), "rttlens_serve_probes_in_flight") >= 1.0 {
            busy = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(busy, "the first probe never started");
    let (status, body) = get(e.addr, &probe_path(&url, "https"));
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("--max-concurrent 1"), "{body}");

    let (status, body) = slow.join().expect("first probe");
    assert_eq!(status, 200);
    let s = samples(&body);
    assert_eq!(value(&s, "probe_success"), 0.0, "{body}");
    assert!(
        s.keys()
            .any(|k| k
                .starts_with("rttlens_probe_failed_phase_info{phase=\"http\",kind=\"timeout\"")),
        "{body}"
    );
    assert!(
        value(&s, "probe_duration_seconds") < 3.0,
        "the 1 s limit held: {body}"
    );
}

/// `GET /metrics` with `accept`: (Content-Type, body bytes).
fn get_metrics(addr: SocketAddr, accept: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("response");
    let at = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&raw[..at]).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(!head.contains("transfer-encoding: chunked"), "{head}");
    let ct = head
        .lines()
        .find_map(|l| l.strip_prefix("content-type:"))
        .expect("a Content-Type")
        .trim()
        .to_string();
    (ct, raw[at + 4..].to_vec())
}

/// `/metrics` answers Prometheus' protobuf exposition when the scrape's
/// `Accept` prefers it (as Prometheus does with native histograms on), and
/// text otherwise; the protobuf decodes into the same families.
#[test]
fn metrics_in_protobuf_when_the_scrape_prefers_it() {
    use prometheus_client::encoding::prometheus_protobuf::prometheus_data_model::{
        MetricFamily, MetricType,
    };
    use prost::Message;
    let e = exporter(3);
    // one bad request, counted
    assert_eq!(get(e.addr, "/probe?target=https://a.test/").0, 400);
    let (ct, body) = get_metrics(
        e.addr,
        "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
         encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
    );
    // (the head was lowercased)
    assert_eq!(
        ct,
        rttlens_serve::exporter::PROTOBUF_CONTENT_TYPE.to_ascii_lowercase()
    );
    let mut buf = &body[..];
    let mut families = Vec::new();
    while !buf.is_empty() {
        families.push(MetricFamily::decode_length_delimited(&mut buf).expect("a MetricFamily"));
    }
    let family = |name: &str| {
        families
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("no family {name} in {families:#?}"))
    };
    let limit = family("rttlens_serve_max_concurrent");
    assert_eq!(limit.r#type, MetricType::Gauge as i32);
    assert_eq!(limit.metric[0].gauge.as_ref().map(|g| g.value), Some(3.0));
    let requests = family("rttlens_serve_probe_requests_total");
    assert_eq!(requests.r#type, MetricType::Counter as i32);
    assert_eq!(
        requests.metric[0].counter.as_ref().map(|c| c.value),
        Some(1.0),
        "{requests:?}"
    );
    // without the protobuf type first: text, as before
    let (ct, body) = get_metrics(e.addr, "text/plain;version=0.0.4;q=0.3,*/*;q=0.2");
    assert!(ct.starts_with("application/openmetrics-text"), "{ct}");
    let text = String::from_utf8(body).expect("text");
    assert!(text.contains("rttlens_serve_max_concurrent 3"), "{text}");
}
