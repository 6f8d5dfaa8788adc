//! The configuration file's tests: modules, blackbox's layout, errors.

use super::*;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new("test.yml"))
}

#[test]
fn durations() {
    assert_eq!(duration("10s").unwrap(), Duration::from_secs(10));
    assert_eq!(duration("500ms").unwrap(), Duration::from_millis(500));
    assert_eq!(duration("1m").unwrap(), Duration::from_secs(60));
    assert_eq!(duration("2.5").unwrap(), Duration::from_millis(2500));
    for bad in ["0", "-1s", "2h", "x", "", "61m"] {
        assert!(duration(bad).is_err(), "{bad}");
    }
}

#[test]
fn modules_map_onto_the_probe() {
    let c = parse(
        "modules:\n  r:\n    timeout: 3s\n    tls_version: \"1.3\"\n    resumption: true\n    \
         headers: {X-A: b}\n    resolve: [\"a.test:443:127.0.0.1\"]\n    ip_family: ip4\n    \
         insecure: true\n  h2:\n    http_version: \"2\"\n    capture: false\n",
    )
    .expect("valid");
    let r = &c.modules["r"];
    let p = r.probe_config("https://a.test/", None).unwrap();
    assert_eq!(p.max_time, Some(Duration::from_secs(3)));
    assert_eq!(p.tls.version, Some(TlsVersion::Tls13));
    assert!(p.sequence && !p.tfo && p.capture && p.tls.insecure);
    // resumption alone: no 0-RTT step
    assert!(!p.sequence_zero_rtt);
    assert_eq!(p.request.headers, [("X-A".to_string(), "b".to_string())]);
    assert_eq!(p.resolve.len(), 1);
    assert_eq!(p.family, Family::V4);
    let h2 = c.modules["h2"]
        .probe_config("https://a.test/", None)
        .unwrap();
    assert_eq!(h2.tls.alpn, ["h2", "http/1.1"]);
    assert!(!h2.capture && !h2.sequence);
    assert_eq!(h2.max_time, Some(DEFAULT_TIMEOUT));
    assert!(r.status_ok(204) && !r.status_ok(301));
}

#[test]
fn blackbox_layout_is_read() {
    let c = parse(
        "modules:\n  http_2xx:\n    prober: http\n    timeout: 5s\n    http:\n      \
         valid_status_codes: [200, 204]\n      method: HEAD\n      headers: {X-A: b}\n      \
         follow_redirects: true\n      preferred_ip_protocol: ip4\n      \
         ip_protocol_fallback: false\n      tls_config:\n        insecure_skip_verify: true\n        \
         min_version: TLS13\n  h2:\n    http:\n      enable_http2: true\n      \
         preferred_ip_protocol: ip6\n",
    )
    .expect("blackbox's layout");
    let m = &c.modules["http_2xx"];
    assert!(m.http.is_none(), "folded");
    let p = m.probe_config("https://a.test/", None).unwrap();
    assert_eq!(p.max_time, Some(Duration::from_secs(5)));
    assert_eq!(p.request.method.as_deref(), Some("HEAD"));
    assert_eq!(p.request.headers, [("X-A".to_string(), "b".to_string())]);
    assert!(p.follow && p.tls.insecure);
    assert_eq!(p.family, Family::V4);
    assert_eq!(p.tls.version, Some(TlsVersion::Tls13));
    assert!(m.status_ok(204) && !m.status_ok(201));
    let h2 = c.modules["h2"]
        .probe_config("https://a.test/", None)
        .unwrap();
    assert_eq!(h2.tls.alpn, ["h2", "http/1.1"]);
    // with blackbox's fallback, whichever family the resolver gives
    assert_eq!(h2.family, Family::Any);
}

#[test]
fn bad_files_name_what_is_wrong() {
    for (text, want) in [
        (
            "modules:\n  a:\n    timeout: never\n",
            "module 'a': timeout 'never'",
        ),
        (
            "modules:\n  a:\n    tls_version: \"1.4\"\n",
            "tls_version '1.4'",
        ),
        ("modules:\n  a:\n    resolve: [\"x\"]\n", "resolve 'x'"),
        (
            "modules:\n  a:\n    colour: red\n",
            "unknown field `colour`",
        ),
        ("modules:\n  a:\n    http_version: \"3\"\n", "http_version"),
        ("modules:\n  a:\n    prober: icmp\n", "prober 'icmp'"),
        ("modules: {}\n", "no modules"),
        ("modules: [\n", "test.yml"),
        (
            "modules:\n  a:\n    ca_file: /nonexistent/ca.pem\n",
            "/nonexistent/ca.pem",
        ),
        (
            "modules:\n  a:\n    http_version: \"2\"\n    resumption: true\n",
            "HTTP/1.1",
        ),
        (
            "modules:\n  a:\n    method: GET\n    http:\n      method: POST\n",
            "method is given both at the top and under http:",
        ),
        (
            "modules:\n  a:\n    http:\n      proxy_url: http://p:3128\n",
            "unknown field `proxy_url`",
        ),
        (
            "modules:\n  a:\n    http:\n      tls_config:\n        max_version: TLS11\n",
            "TLS 1.2 and 1.3 only",
        ),
        (
            "modules:\n  a:\n    http:\n      tls_config:\n        min_version: SSL3\n",
            "min_version 'SSL3'",
        ),
    ] {
        let e = parse(text).expect_err(text).to_string();
        assert!(e.contains(want), "{text:?}: {e}");
    }
}
