//! The exporter under abuse (issue 46), against real peers on loopback:
//! the allow-list refuses targets outside it with 403 and makes no
//! connection, a name that resolves to a forbidden address included; the
//! certificate expiry series as blackbox_exporter defines them, and its
//! leaf certificate's labels as Go writes them; oversized
//! requests are refused; `/metrics` answers while every probe slot is
//! busy; a stop lets the scrapes in flight finish. Every wait is bounded.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{exporter_with, get, probe_path, samples, target_with, value};
use rttlens_lab_server::builtin::ServerConfig;
use rttlens_lab_server::cert::SelfSigned;

/// A TCP peer that accepts connections, counts them and holds them open
/// without a word (a hanging target), until dropped.
struct Hanging {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Hanging {
    fn start() -> Hanging {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.set_nonblocking(true).expect("nonblocking");
        let addr = l.local_addr().expect("addr");
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, s) = (Arc::clone(&accepted), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            while !s.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((c, _)) => {
                        a.fetch_add(1, Ordering::Relaxed);
                        held.push(c);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Hanging {
            addr,
            accepted,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Hanging {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

const PLAIN: &str = "\
modules:
  plain:
    ip_family: ip4
    timeout: 3s
    capture: false
  any:
    timeout: 3s
    capture: false
";

#[test]
fn the_allow_list_refuses_forbidden_targets_without_connecting() {
    let peer = Hanging::start();
    let port = peer.addr.port();
    let e = exporter_with(PLAIN, 4, &["10.0.0.0/8", "fd00::/8", "example.invalid"]);
    // a name that resolves to loopback, the address itself, its IPv4-mapped
    // IPv6 form and its decimal form (getaddrinfo reads 2130706433 as
    // 127.0.0.1): none is in the list
    let forbidden = [
        format!("http://localhost:{port}/"),
        format!("http://127.0.0.1:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        format!("http://2130706433:{port}/"),
    ];
    for t in &forbidden {
        let (status, body) = get(e.addr, &probe_path(t, "any"));
        assert_eq!(status, 403, "{t}: {body}");
        assert!(body.contains("not in the allow-list"), "{t}: {body}");
    }
    assert_eq!(
        peer.accepted.load(Ordering::Relaxed),
        0,
        "a forbidden target was connected to"
    );
    let (_, m) = get(e.addr, "/metrics");
    assert_eq!(
        value(
            &samples(&m),
            "rttlens_serve_probe_requests_total{module=\"any\",outcome=\"forbidden\"}"
        ),
        forbidden.len() as f64,
        "{m}"
    );
    drop(e);

    // listed: by network, and by name (whatever it resolves to)
    for allow in ["127.0.0.0/8", "localhost"] {
        let e = exporter_with(PLAIN, 4, &[allow]);
        let before = peer.accepted.load(Ordering::Relaxed);
        let (status, body) = get(
            e.addr,
            &probe_path(&format!("http://localhost:{port}/"), "plain"),
        );
        assert_eq!(status, 200, "{allow}: {body}");
        assert!(
            peer.accepted.load(Ordering::Relaxed) > before,
            "{allow}: the allowed target was not connected to"
        );
    }
}

#[test]
fn a_bad_allow_list_entry_is_refused_at_start() {
    let config =
        rttlens_serve::Config::parse(PLAIN, std::path::Path::new("t.yml")).expect("config");
    let e = rttlens_serve::Server::bind(rttlens_serve::ServeOptions {
        listen: "127.0.0.1:0".parse().expect("addr"),
        config,
        max_concurrent: 1,
        interface: None,
        allow_targets: vec!["10.0.0.0/33".into()],
    })
    .expect_err("a bad entry");
    assert!(e.to_string().contains("10.0.0.0/33"), "{e}");
    let e = rttlens_serve::Config::parse(
        &format!("allow_targets: [\"not a host\"]\n{PLAIN}"),
        std::path::Path::new("t.yml"),
    )
    .expect_err("a bad entry");
    assert!(e.to_string().contains("allow_targets"), "{e}");
}

#[test]
fn certificate_expiry_as_blackbox_defines_it() {
    let cert = SelfSigned::generate().expect("certificate");
    let der = cert.cert_der();
    let (_, parsed) = x509_parser::parse_x509_certificate(&der).expect("X.509");
    let not_after = parsed.validity().not_after.timestamp() as f64;
    let dir = std::env::temp_dir().join(format!("rttlens-serve-safety-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, &cert.cert_pem).expect("write the CA file");
    let config = format!(
        "modules:\n  verified:\n    ca_file: {}\n    capture: false\n  insecure:\n    insecure: true\n    capture: false\n",
        ca.display()
    );
    let t = target_with(ServerConfig {
        certificate: Some(cert),
        ..ServerConfig::default()
    });
    let e = exporter_with(&config, 4, &[]);
    let url = format!("https://localhost:{}/size/10", t.addr.port());

    // verified: the presented certificate and the chain to the anchor
    // (the same self-signed certificate) expire together
    let (status, body) = get(
        e.addr,
        &probe_path(&url.replace("localhost", "127.0.0.1"), "verified"),
    );
    assert_eq!(status, 200, "{body}");
    let s = samples(&body);
    assert_eq!(value(&s, "probe_success"), 1.0, "{body}");
    assert_eq!(
        value(&s, "probe_ssl_earliest_cert_expiry"),
        not_after,
        "{body}"
    );
    assert_eq!(
        value(&s, "probe_ssl_last_chain_expiry_timestamp_seconds"),
        not_after,
        "{body}"
    );
    assert!(
        body.contains("# TYPE probe_ssl_earliest_cert_expiry gauge"),
        "{body}"
    );

    // insecure: nothing verified, so no chain series (blackbox leaves it
    // out when Go's VerifiedChains is empty)
    let (status, body) = get(e.addr, &probe_path(&url, "insecure"));
    assert_eq!(status, 200, "{body}");
    let s = samples(&body);
    assert_eq!(
        value(&s, "probe_ssl_earliest_cert_expiry"),
        not_after,
        "{body}"
    );
    assert!(
        !s.contains_key("probe_ssl_last_chain_expiry_timestamp_seconds"),
        "{body}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn leaf_certificate_info_as_blackbox_labels_it() {
    // a certificate with a name of several attributes (one Go does not
    // know by name, a comma to escape), DNS and IP alternative names and
    // a serial number with a leading zero nibble, served by the built-in
    // TLS server
    let mut params = rcgen::CertificateParams::new(vec![
        "localhost".to_string(),
        "lab.test".into(),
        "127.0.0.1".into(),
    ])
    .expect("params");
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::CountryName, "DE");
    dn.push(rcgen::DnType::StateOrProvinceName, "Berlin");
    dn.push(rcgen::DnType::OrganizationName, "rttlens, lab");
    dn.push(rcgen::DnType::OrganizationalUnitName, "probes");
    dn.push(rcgen::DnType::CommonName, "lab.test");
    dn.push(
        rcgen::DnType::CustomDnType(vec![1, 2, 840, 113549, 1, 9, 1]),
        "ops@lab.test",
    );
    params.distinguished_name = dn;
    params.serial_number = Some(rcgen::SerialNumber::from_slice(&[0x0a, 0xbc, 0x00]));
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = params.self_signed(&key).expect("certificate");
    let cert = SelfSigned::from_pem(&cert.pem(), &key.serialize_pem()).expect("PEM");
    let der = cert.cert_der();
    let dir = std::env::temp_dir().join(format!("rttlens-serve-info-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, &cert.cert_pem).expect("write the CA file");
    let t = target_with(ServerConfig {
        certificate: Some(cert),
        ..ServerConfig::default()
    });
    let e = exporter_with(
        &format!(
            "modules:\n  verified:\n    ca_file: {}\n    capture: false\n",
            ca.display()
        ),
        2,
        &[],
    );
    let url = format!("https://localhost:{}/size/10", t.addr.port());
    let (status, body) = get(e.addr, &probe_path(&url, "verified"));
    assert_eq!(status, 200, "{body}");
    assert_eq!(value(&samples(&body), "probe_success"), 1.0, "{body}");
    // what Go's crypto/x509 gives blackbox for this certificate
    // (pkix.Name.String(), DNSNames, SerialNumber.Bytes()): its known
    // attributes last first, the others after them as OID=#DER, `,`
    // escaped; DNS names only; the serial's bytes in hex
    // (checked with Go 1.26's crypto/x509 on this certificate), in the
    // exposition's escaping (`\` as `\\`)
    let name = r"CN=lab.test,OU=probes,O=rttlens\\, lab,ST=Berlin,C=DE,1.2.840.113549.1.9.1=#0c0c6f7073406c61622e74657374";
    let fingerprint: String = ring::digest::digest(&ring::digest::SHA256, &der)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let want = format!(
        "probe_ssl_last_chain_info{{fingerprint_sha256=\"{fingerprint}\",subject=\"{name}\",\
         issuer=\"{name}\",subjectalternative=\"localhost,lab.test\",serialnumber=\"0abc00\"}} 1.0"
    );
    assert!(body.lines().any(|l| l == want), "want\n{want}\nin\n{body}");
    assert!(
        body.contains("# TYPE probe_ssl_last_chain_info gauge"),
        "{body}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Send `raw` and read the answer's status (0: the server closed without
/// one).
fn raw_status(addr: SocketAddr, raw: &[u8]) -> u16 {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    // the server may answer and close before it has read everything
    let _ = s.write_all(raw);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out)
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[test]
fn oversized_requests_are_refused() {
    let e = exporter_with(PLAIN, 1, &[]);
    let long_query = format!(
        "/probe?target=http://a.invalid/&module=plain&x={}",
        "a".repeat(5000)
    );
    let (status, body) = get(e.addr, &long_query);
    assert_eq!(status, 414, "{body}");
    let huge = format!(
        "GET /probe?{} HTTP/1.1\r\nHost: x\r\n\r\n",
        "a".repeat(rttlens_serve::server::MAX_HEAD + 10)
    );
    let status = raw_status(e.addr, huge.as_bytes());
    assert!(
        status == 431 || status == 414 || status == 400 || status == 0,
        "a {} byte request line answered {status}",
        huge.len()
    );
    // and the server still answers
    let (status, _) = get(e.addr, "/metrics");
    assert_eq!(status, 200);
}

#[test]
fn metrics_answer_while_every_probe_slot_is_busy_and_a_stop_lets_scrapes_finish() {
    let peer = Hanging::start();
    let e = exporter_with(PLAIN, 2, &[]);
    let path = probe_path(&format!("http://127.0.0.1:{}/", peer.addr.port()), "plain");
    let addr = e.addr;
    let scrapes: Vec<_> = (0..2)
        .map(|_| {
            let p = path.clone();
            std::thread::spawn(move || get(addr, &p))
        })
        .collect();
    let mut busy = false;
    for _ in 0..200 {
        let (_, m) = get(e.addr, "/metrics");
        if value(&samples(&m), "rttlens_serve_probes_in_flight") >= 2.0 {
            busy = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(busy, "the two probes never both started");
    for what in ["/metrics", "/"] {
        let t0 = Instant::now();
        let (status, _) = get(e.addr, what);
        assert_eq!(status, 200, "{what}");
        assert!(
            t0.elapsed() < Duration::from_secs(1),
            "{what} took {:?} with every slot busy",
            t0.elapsed()
        );
    }
    let (status, _) = get(e.addr, &path);
    assert_eq!(status, 503, "a third probe");

    // stop the exporter now: the two scrapes in flight still get their
    // answer (a timeout after the module's 3 s), then it ends
    let t0 = Instant::now();
    drop(e);
    assert!(
        t0.elapsed() < Duration::from_secs(3 + 5 + 2),
        "the stop took {:?}",
        t0.elapsed()
    );
    for s in scrapes {
        let (status, body) = s.join().expect("scrape");
        assert_eq!(status, 200, "{body}");
        let m = samples(&body);
        assert_eq!(value(&m, "probe_success"), 0.0, "{body}");
        assert!(body.contains("kind=\"timeout\""), "{body}");
    }
}
