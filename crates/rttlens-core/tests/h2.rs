//! HTTP/2 per stream on captures nobody here made, checked against tshark:
//! the Wireshark wiki's h2c capture (prior knowledge, six streams, port 3000;
//! `../shared/captures/public/SOURCES.md`) and its `http2-16-ssl` capture
//! (TLS 1.2, ALPN h2-16), decrypted with the `CLIENT_RANDOM` line its
//! capture comment carries. The request and response HEADERS frames of
//! every stream are the frames tshark shows them in.

use std::path::{Path, PathBuf};
use std::process::Command;

use rttlens_core::capture::CaptureReader;
use rttlens_core::model::ConnReport;
use rttlens_core::pipeline;
use rttlens_core::proto::tls::decrypt::DecryptStatus;

fn public(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/captures/public")
        .join(name)
}

fn analyse(path: &Path, keylog: Option<&[u8]>) -> Vec<ConnReport> {
    let mut reader = CaptureReader::open(path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (../shared/captures beside the repository)",
            path.display()
        )
    });
    if let Some(k) = keylog {
        reader.key_store().add(k);
    }
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

/// The `CLIENT_RANDOM` line in the capture's comment.
fn comment_keylog(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    let at = bytes
        .windows(14)
        .position(|w| w == b"CLIENT_RANDOM ")
        .expect("a CLIENT_RANDOM line in the capture comment");
    let end = bytes[at..]
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || b == b' ' || b == b'_'))
        .map_or(bytes.len(), |n| at + n);
    bytes[at..end].to_vec()
}

/// tshark's HEADERS frames: the frame of each `:path` (requests) and of
/// each `:status` (responses), as many times as it holds one.
fn tshark_headers(path: &Path, args: &[&str]) -> Option<(Vec<u64>, Vec<u64>)> {
    if Command::new("tshark").arg("-v").output().is_err() {
        eprintln!("NOTE: tshark is not installed: the frames are not cross-checked");
        return None;
    }
    let out = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(path)
        .args(args)
        .args([
            "-Y",
            "http2.type == 1",
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
        .args(["-e", "http2.headers.path", "-e", "http2.headers.status"])
        .output()
        .expect("tshark");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (mut req, mut resp) = (Vec::new(), Vec::new());
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let frame: u64 = f[0].parse().unwrap();
        let count =
            |s: Option<&&str>| s.map_or(0, |s| s.split(',').filter(|x| !x.is_empty()).count());
        req.extend(std::iter::repeat_n(frame, count(f.get(1))));
        resp.extend(std::iter::repeat_n(frame, count(f.get(2))));
    }
    req.sort_unstable();
    resp.sort_unstable();
    Some((req, resp))
}

fn ours(c: &ConnReport) -> (Vec<u64>, Vec<u64>) {
    let mut req: Vec<u64> = c.requests.iter().filter_map(|r| r.request_frame).collect();
    let mut resp: Vec<u64> = c.requests.iter().filter_map(|r| r.response_frame).collect();
    req.sort_unstable();
    resp.sort_unstable();
    (req, resp)
}

#[test]
fn h2c_by_prior_knowledge_every_stream_as_tshark_frames_it() {
    let path = public("sv_http2-h2c.pcap");
    let conns = analyse(&path, None);
    assert_eq!(conns.len(), 1);
    let c = &conns[0];
    assert_eq!(c.protocol, "h2c");
    let rows = &c.requests;
    let streams: Vec<u64> = rows.iter().filter_map(|r| r.stream).collect();
    assert_eq!(streams, [1, 3, 5, 7, 9, 11]);
    assert!(
        rows.iter()
            .all(|r| r.method.as_deref() == Some("GET") && r.status == Some(200)),
        "{rows:#?}"
    );
    assert_eq!(
        rows[0].target.as_deref(),
        Some("/doc/manual/html/index.html")
    );
    // the wiki's capture carries ~413 KB of HTTP/2 frames, the bodies most of it
    let body: u64 = rows.iter().filter_map(|r| r.response_bytes).sum();
    assert!((390_000..413_000).contains(&body), "{body}");
    if let Some(t) = tshark_headers(&path, &["-d", "tcp.port==3000,http2"]) {
        assert_eq!(
            ours(c),
            t,
            "(request, response) HEADERS frames: ours vs tshark"
        );
    }
}

/// HTTP/1.1 `Upgrade: h2c`, answered `101`, then HTTP/2 (RFC 7540 §3.2):
/// the upgraded request is stream 1 (its request the HTTP/1.1 message, its
/// response an HTTP/2 HEADERS frame), the next request stream 3.
#[test]
fn h2c_by_upgrade_the_upgraded_request_is_stream_1() {
    let path = public("sv_http2-upgrade.pcap");
    let conns = analyse(&path, None);
    assert_eq!(conns.len(), 1);
    let c = &conns[0];
    assert_eq!(c.protocol, "h2c");
    let rows = &c.requests;
    let streams: Vec<u64> = rows.iter().filter_map(|r| r.stream).collect();
    assert_eq!(streams, [1, 3], "{rows:#?}");
    assert_eq!(rows[0].target.as_deref(), Some("/robots.txt"));
    assert_eq!(rows[0].status, Some(200));
    assert_eq!(rows[1].target.as_deref(), Some("/humans.txt"));
    assert_eq!(rows[1].status, Some(404));
    if let Some((req, resp)) = tshark_headers(&path, &[]) {
        let (mut ours_req, ours_resp) = ours(c);
        assert_eq!(ours_resp, resp, "response HEADERS frames: ours vs tshark");
        // stream 1's request is the HTTP/1.1 message, in the first frame
        assert_eq!(rows[0].request_frame, Some(1));
        ours_req.retain(|&f| f != 1);
        assert_eq!(ours_req, req, "request HEADERS frames: ours vs tshark");
    }
}

#[test]
fn h2_inside_tls_decrypted_with_the_capture_comment_key() {
    let path = public("wsnotes_http2-16-ssl.pcapng");
    let key = comment_keylog(&path);
    let conns = analyse(&path, Some(&key));
    let c = conns
        .iter()
        .find(|c| c.protocol == "tls")
        .expect("the TLS connection");
    let tls = c.tls.as_ref().unwrap();
    assert_eq!(tls.info.alpn.as_deref(), Some("h2-16"));
    let d = tls.decryption.as_ref().expect("keys given");
    assert_eq!(d.status, DecryptStatus::Decrypted, "{d:?}");
    assert_eq!(c.requests.len(), 1, "{:#?}", c.requests);
    let r = &c.requests[0];
    assert_eq!(
        (r.stream, r.method.as_deref(), r.target.as_deref()),
        (Some(1), Some("GET"), Some("/"))
    );
    let keyfile =
        std::env::temp_dir().join(format!("rttlens-h2-test-{}.keylog", std::process::id()));
    std::fs::write(&keyfile, &key).unwrap();
    let opt = format!("tls.keylog_file:{}", keyfile.display());
    if let Some((req, resp)) = tshark_headers(&path, &["-o", &opt]) {
        assert_eq!(
            ours(c),
            (req, resp.clone()),
            "HEADERS frames: ours vs tshark"
        );
        assert_eq!(r.status, Some(404), "tshark's :status");
    }
    let _ = std::fs::remove_file(&keyfile);
    // without the key: the connection says how to get it, nothing inside
    let conns = analyse(&path, None);
    let c = conns.iter().find(|c| c.protocol == "tls").unwrap();
    assert!(c.requests.is_empty());
}
