//! Decryption with real peers: curl (OpenSSL) writes `SSLKEYLOGFILE` while
//! fetching from nginx over HTTP/2 (TLS 1.3, AES-GCM) and over HTTP/1.1
//! keep-alive (TLS 1.2, ECDHE with AES-128-GCM), through the shared
//! lab's 10 ms delay link. Every record must open, every request must get
//! its row, and the request and response frames must be tshark's with the
//! same key log.
//!
//! Needs root, `/dev/net/tun` and `iproute2 nftables tcpdump nginx-light
//! curl openssl tshark`; fails naming what is missing.

mod support;

use std::path::Path;
use std::process::Command;

use rttlens_core::capture::CaptureReader;
use rttlens_core::model::ConnReport;
use rttlens_core::model::DecryptStatus;
use rttlens_core::pipeline;
use rttlens_lab_net::Host;
use support::{body, TestLab, SERVER_IP};

/// The connections of `capture` analysed with the key log `keylog`.
fn analyse_keyed(capture: &Path, keylog: &Path) -> Vec<ConnReport> {
    let mut reader = CaptureReader::open(capture).expect("open capture");
    reader
        .key_store()
        .add(&std::fs::read(keylog).expect("curl wrote its key log"));
    let mut conns = Vec::new();
    pipeline::run(
        &mut reader,
        &mut |c| conns.extend(c.into_tcp()),
        &mut |_| {},
    )
    .expect("pipeline");
    conns.sort_by_key(|c| c.index);
    conns
}

/// tshark's frames for `filter` with the key log.
fn tshark_frames(capture: &Path, keylog: &Path, filter: &str) -> Vec<u64> {
    let out = Command::new("tshark")
        .args(["-n", "-o"])
        .arg(format!("tls.keylog_file:{}", keylog.display()))
        .arg("-r")
        .arg(capture)
        .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
        .output()
        .expect("tshark (apt-get install tshark)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// `curl ARGS URLS…` in the client namespace with `SSLKEYLOGFILE`.
fn curl_keyed(lab: &TestLab, keylog: &Path, args: &[&str], urls: &[String]) {
    let mut all: Vec<String> = vec![format!("SSLKEYLOGFILE={}", keylog.display()), "curl".into()];
    all.extend(["-sS", "-k", "--max-time", "15"].map(String::from));
    all.extend(args.iter().map(|s| s.to_string()));
    for u in urls {
        all.push(u.clone());
        all.extend(["-o", "/dev/null"].map(String::from));
    }
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let out = lab.run_in(Host::Client, "env", &refs);
    assert!(
        out.status.success(),
        "curl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An HTTP/2 connection inside TLS whose every record opened.
fn decrypted_h2(c: &ConnReport) {
    let tls = c.tls.as_ref().expect("TLS");
    // TLS 1.3 names ALPN's choice in the encrypted EncryptedExtensions
    assert_eq!(tls.info.alpn.as_deref(), Some("h2"));
    let d = tls.decryption.as_ref().expect("keys given");
    assert_eq!(d.status, DecryptStatus::Decrypted, "{d:?}");
    assert_eq!((d.failed, d.cut), (0, 0), "{d:?}");
}

#[test]
fn curl_and_nginx_over_http2_decrypt_with_every_stream_framed_as_tshark_frames_it() {
    let mut lab = TestLab::new("decrypt-h2");
    let files: Vec<(String, Vec<u8>)> = (1..=5)
        .map(|i| (format!("f{i}"), body(20_000 * i)))
        .collect();
    let refs: Vec<(&str, Vec<u8>)> = files.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    lab.nginx_tls(&refs, |c| c.http2 = true);
    let keylog = lab.write("h2.keylog", b"");
    let cap = lab.capture(Host::Client);
    let urls: Vec<String> = (1..=5)
        .map(|i| format!("https://{SERVER_IP}/f{i}"))
        .collect();
    curl_keyed(&lab, &keylog, &["--http2", "--tlsv1.3"], &urls);
    let path = lab.stop(cap);
    let conns = analyse_keyed(&path, &keylog);
    assert_eq!(conns.len(), 1, "one HTTP/2 connection: {conns:#?}");
    let c = &conns[0];
    decrypted_h2(c);
    let rows = &c.requests;
    assert_eq!(rows.len(), 5, "{rows:#?}");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.stream, Some(2 * i as u64 + 1), "{r:?}");
        assert_eq!(r.target.as_deref(), Some(format!("/f{}", i + 1).as_str()));
        assert_eq!(r.status, Some(200));
        assert_eq!(r.response_bytes, Some(20_000 * (i as u64 + 1)), "{r:?}");
        // 10 ms of path: the wait is about one round trip
        let rtts = r.ttfb_rtts.expect("RTT known");
        assert!((0.8..3.0).contains(&rtts), "{r:?}");
    }
    same_headers_frames_as_tshark(&conns, &path, &keylog);
}

/// The frames of the requests' and responses' HEADERS are tshark's with
/// the same key log.
fn same_headers_frames_as_tshark(conns: &[ConnReport], path: &Path, keylog: &Path) {
    let rows: Vec<_> = conns.iter().flat_map(|c| c.requests.iter()).collect();
    let mut ours_req: Vec<u64> = rows.iter().filter_map(|r| r.request_frame).collect();
    let mut ours_resp: Vec<u64> = rows.iter().filter_map(|r| r.response_frame).collect();
    ours_req.sort_unstable();
    ours_resp.sort_unstable();
    let mut t_req = tshark_frames(path, keylog, "http2.headers.method");
    let mut t_resp = tshark_frames(path, keylog, "http2.headers.status");
    t_req.dedup();
    t_resp.dedup();
    ours_req.dedup();
    ours_resp.dedup();
    assert_eq!(ours_req, t_req, "request HEADERS frames: ours vs tshark");
    assert_eq!(ours_resp, t_resp, "response HEADERS frames: ours vs tshark");
}

/// Go's net/http as the second HTTP/2 stack (its own HTTP/2 server, its
/// own flow control and frame sizes): curl asks for 4 files at once over
/// one connection; every record opens and every stream is framed as
/// tshark frames it.
#[test]
fn curl_and_go_net_http_over_http2_decrypt_with_every_stream_framed_as_tshark_frames_it() {
    if let Err(e) = rttlens_lab::go_server::find_go() {
        panic!("{e}");
    }
    let lab = TestLab::new("decrypt-go-h2");
    let keylog = lab.write("go-h2.keylog", b"");
    let dir = keylog.with_file_name("go");
    std::fs::create_dir_all(&dir).expect("scratch");
    let opts = rttlens_lab::go_server::GoOptions {
        http2: true,
        ..Default::default()
    };
    let _go =
        rttlens_lab::go_server::GoServer::start(lab.lab(), &dir, 8443, &opts).expect("Go server");
    let mut lab = lab;
    let cap = lab.capture(Host::Client);
    let urls: Vec<String> = (1..=4)
        .map(|i| format!("https://{SERVER_IP}:8443/size/{}", 30_000 * i))
        .collect();
    curl_keyed(
        &lab,
        &keylog,
        &["--http2", "--tlsv1.3", "--parallel"],
        &urls,
    );
    let path = lab.stop(cap);
    let conns = analyse_keyed(&path, &keylog);
    eprintln!("curl used {} connection(s)", conns.len());
    // Go chose HTTP/2
    conns.iter().for_each(decrypted_h2);
    same_headers_frames_as_tshark(&conns, &path, &keylog);
    let mut sizes: Vec<u64> = conns
        .iter()
        .flat_map(|c| c.requests.iter())
        .inspect(|r| {
            assert_eq!(r.status, Some(200), "{r:?}");
            assert!(r.stream.is_some_and(|s| s % 2 == 1), "{r:?}");
        })
        .filter_map(|r| r.response_bytes)
        .collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [30_000, 60_000, 90_000, 120_000]);
}

#[test]
fn curl_and_nginx_over_tls12_gcm_keep_alive_decrypt_request_by_request() {
    let mut lab = TestLab::new("decrypt-12");
    lab.nginx_tls(&[("a", body(3_000)), ("b", body(40_000))], |_| {});
    let keylog = lab.write("12.keylog", b"");
    let cap = lab.capture(Host::Client);
    let urls: Vec<String> = ["a", "b", "a", "b"]
        .iter()
        .map(|f| format!("https://{SERVER_IP}/{f}"))
        .collect();
    curl_keyed(
        &lab,
        &keylog,
        &[
            "--http1.1",
            "--tlsv1.2",
            "--tls-max",
            "1.2",
            "--ciphers",
            "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256",
        ],
        &urls,
    );
    let path = lab.stop(cap);
    let conns = analyse_keyed(&path, &keylog);
    assert_eq!(conns.len(), 1, "keep-alive: one connection");
    let c = &conns[0];
    let tls = c.tls.as_ref().expect("TLS");
    assert_eq!(tls.info.version, "1.2");
    let d = tls.decryption.as_ref().expect("keys given");
    assert_eq!(d.status, DecryptStatus::Decrypted, "{d:?}");
    assert_eq!((d.failed, d.cut), (0, 0), "{d:?}");
    let rows = &c.requests;
    assert_eq!(rows.len(), 4, "{rows:#?}");
    let sizes: Vec<Option<u64>> = rows.iter().map(|r| r.response_bytes).collect();
    assert_eq!(
        sizes,
        [Some(3_000), Some(40_000), Some(3_000), Some(40_000)]
    );
    let req: Vec<u64> = rows.iter().filter_map(|r| r.request_end_frame).collect();
    let resp: Vec<u64> = rows.iter().filter_map(|r| r.response_end_frame).collect();
    assert_eq!(
        req,
        tshark_frames(&path, &keylog, "http.request"),
        "request frames"
    );
    assert_eq!(
        resp,
        tshark_frames(&path, &keylog, "http.response"),
        "response frames"
    );
}

/// gRPC on grpc-go, server and client, over TLS 1.3 with the client's key
/// log: four health checks at once on one connection, one of a service the
/// server does not know, one the server holds 200 ms. Every record opens;
/// each call is a stream with its gRPC method and `grpc-status` (0, and 5
/// NOT_FOUND in a trailers-only response); the slow one is the server
/// think time named; the HEADERS frames are tshark's.
#[test]
fn grpc_go_calls_decrypt_with_their_methods_status_and_the_slow_one_named() {
    if let Err(e) = rttlens_lab::go_server::find_go() {
        panic!("{e}");
    }
    let mut lab = TestLab::new("decrypt-grpc");
    let keylog = lab.write("grpc.keylog", b"");
    let dir = keylog.with_file_name("grpc");
    let _server = rttlens_lab::go_server::GoServer::grpc(lab.lab(), &dir, 9443)
        .expect("gRPC server (grpc-go from the Go module proxy)");
    let client = rttlens_lab::go_server::build_grpc_peer().expect("gRPC client");
    let cap = lab.capture(Host::Client);
    let addr = format!("{SERVER_IP}:9443");
    let out = lab.run_in(
        Host::Client,
        client.to_str().unwrap(),
        &[
            "-call",
            &addr,
            "-keylog",
            keylog.to_str().unwrap(),
            "-n",
            "4",
            "-slow-ms",
            "200",
        ],
    );
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        said.lines().collect::<Vec<_>>(),
        ["OK", "OK", "OK", "OK", "NotFound", "OK"]
    );
    let path = lab.stop(cap);
    let conns = analyse_keyed(&path, &keylog);
    assert_eq!(conns.len(), 1, "one gRPC channel: {conns:#?}");
    let c = &conns[0];
    decrypted_h2(c);
    let rows = &c.requests;
    assert_eq!(rows.len(), 6, "{rows:#?}");
    assert!(rows.iter().all(|r| r.method.as_deref() == Some("POST")
        && r.target.as_deref() == Some("/grpc.health.v1.Health/Check")
        && r.status == Some(200)));
    let mut grpc: Vec<Option<u32>> = rows.iter().map(|r| r.grpc_status).collect();
    grpc.sort_unstable();
    assert_eq!(grpc, [Some(0), Some(0), Some(0), Some(0), Some(0), Some(5)]);
    let slow = rows.last().expect("rows");
    assert!(slow.server_think_ms.is_some_and(|t| t >= 190.0), "{slow:?}");
    let think = c
        .findings
        .iter()
        .find(|f| f.id == "server-think-time")
        .expect("the slow call's think time");
    assert!(
        rttlens_report::words::title(think).contains(&format!("stream {}", slow.stream.unwrap())),
        "{}",
        rttlens_report::words::title(think)
    );
    same_headers_frames_as_tshark(&conns, &path, &keylog);
}
