//! `rttlens probe` as users drive it: exit codes (0 ok, 1 the target
//! failed naming the phase, 2 usage), the JSON document, the text
//! waterfall. Usage errors need nothing; the rest runs the binary inside
//! the lab's client namespace (root, /dev/net/tun, iproute2; FAILS naming
//! what is missing).

use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use rttlens_lab::scenario::ScenarioCtx;
use rttlens_lab_net::LinkConfig;
use rttlens_lab_net::{Host, Lab};
use rttlens_lab_server::builtin::ServerConfig;

static ONE_LAB: Mutex<()> = Mutex::new(());

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rttlens"))
}

fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().expect("running rttlens")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec!["probe", "ftp://example.com/"],
        vec!["probe", "--tls", "1.4", "https://example.com/"],
        vec!["probe", "--sequence", "http://example.com/"],
        vec!["probe", "--max-time", "3h", "https://example.com/"],
        vec!["probe", "-H", "no-colon", "https://example.com/"],
        vec!["probe", "--alpn", "spdy/3", "https://example.com/"],
        vec!["probe", "--http2", "http://example.com/"],
        vec!["probe", "--http2", "--sequence", "https://example.com/"],
        vec!["probe", "--http2", "--http1.1", "https://example.com/"],
        vec![
            "probe",
            "--pcap",
            "/tmp/x.pcapng",
            "--no-capture",
            "https://example.com/",
        ],
    ] {
        let o = run(bin().args(&args));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).is_empty(), "{args:?} says why");
    }
}

/// A lab at 40 ms with the built-in server; `f` gets the context, the
/// server's port and a way to run the binary in the client namespace.
fn with_lab(f: impl FnOnce(&mut ScenarioCtx, u16, &dyn Fn(&[&str]) -> Output)) {
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("probe CLI lab tests need root, /dev/net/tun and iproute2: {e}");
    }
    let _one = ONE_LAB.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::new(LinkConfig::with_rtt(Duration::from_millis(40))).expect("lab");
    let dir = std::env::temp_dir().join(format!("rttlens-probe-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    let mut ctx = ScenarioCtx::new(&lab, dir.clone());
    let port = ctx
        .builtin(ServerConfig::default())
        .expect("built-in server");
    let probe = |args: &[&str]| -> Output {
        let mut cmd = bin();
        cmd.arg("probe").args(args);
        run(&mut lab.netns(Host::Client).command(&cmd))
    };
    f(&mut ctx, port, &probe);
    drop(ctx);
    drop(lab);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn lab_json_text_and_failures() {
    with_lab(|_ctx, port, probe| {
        let url = format!("https://{}:{port}/size/5000", Lab::SERVER_V4);
        let o = probe(&["-k", "--format", "json", "--max-time", "10", &url]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        assert_eq!(v["schema_version"], 3);
        assert_eq!(v["source"], url.as_str());
        assert!(v["connections"].is_array());
        let a = &v["probe"]["attempts"][0];
        for k in [
            "namelookup_ms",
            "connect_ms",
            "appconnect_ms",
            "pretransfer_ms",
            "starttransfer_ms",
            "first_decrypted_byte_ms",
            "total_ms",
        ] {
            assert!(a["timings"][k].is_f64(), "timings.{k}: {a}");
        }
        assert_eq!(a["response"]["status"], 200);
        assert_eq!(a["response"]["body_bytes"], 5000);
        assert_eq!(a["tls"]["handshake"], "full");
        assert!(a["phases"].as_array().is_some_and(|p| p.len() == 5), "{a}");
        assert!(v["probe"]["capture"]["status"].is_string());

        // --http2 against a server that only speaks HTTP/1.1: ALPN falls back
        let o = probe(&["-k", "--http2", "--format", "json", &url]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        let a = &v["probe"]["attempts"][0];
        assert_eq!(a["tls"]["alpn"], "http/1.1", "{a}");
        assert_eq!(a["response"]["version"], "HTTP/1.1");

        let o = probe(&["-k", "-n", "3", &url]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout);
        for want in ["connection 2", "tls", "starttransfer", "median", "p90"] {
            assert!(text.contains(want), "text lacks {want:?}:\n{text}");
        }

        let cases: [(Vec<String>, &str); 4] = [
            (vec!["https://nowhere.invalid/".into()], "namelookup failed"),
            (
                vec![format!("https://{}:9/", Lab::SERVER_V4)],
                "connect failed",
            ),
            (vec![url.clone()], "tls failed: bad certificate"),
            (
                vec![
                    "-k".into(),
                    "--tls".into(),
                    "1.2".into(),
                    "--max-time".into(),
                    "0.001".into(),
                    url.clone(),
                ],
                "failed: timed out",
            ),
        ];
        for (args, want) in cases {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = probe(&args);
            assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
            assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        }
    });
}

#[test]
fn lab_html_report_of_the_probe() {
    with_lab(|ctx, port, probe| {
        let url = format!("https://{}:{port}/size/50000", Lab::SERVER_V4);
        let page = ctx.dir().join("probe.html");
        let svg = ctx.dir().join("svg");
        let (p, s) = (page.to_string_lossy(), svg.to_string_lossy());
        let o = probe(&["-k", "--format", "html", "-o", &p, "--svg", &s, &url]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(o.stdout.is_empty(), "the page goes to -o");
        let html = std::fs::read_to_string(&page).expect("page");
        assert!(html.starts_with("<!DOCTYPE html>"));
        // the probe's own report, then its connection drawn from its capture
        assert!(
            html.contains("<pre class=\"preface\">probe https://"),
            "preface"
        );
        for g in ["ladder", "time-sequence", "flight", "io", "rtt"] {
            assert!(html.contains(&format!("data-graph=\"{g}\"")), "{g} graph");
        }
        assert!(
            html.contains("ClientHello"),
            "TLS messages named in the ladder"
        );
        assert!(svg.join("conn-0-ladder.svg").exists(), "--svg files");
        // the JSON and text outputs keep no trace (and are unchanged)
        let o = probe(&["-k", "--format", "json", &url]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    });
}

/// The finding ids per connection in a JSON document (`analyze` or
/// `probe`: the same `connections` array).
fn finding_ids(doc: &serde_json::Value) -> Vec<Vec<String>> {
    doc["connections"]
        .as_array()
        .expect("connections")
        .iter()
        .map(|c| {
            let mut ids: Vec<String> = c["findings"]
                .as_array()
                .expect("findings")
                .iter()
                .map(|f| f["id"].as_str().unwrap_or_default().to_string())
                .collect();
            ids.sort();
            ids
        })
        .collect()
}

/// `--pcap --keylog` against the lab: the file is the probe's own capture
/// with the key log embedded (tshark decrypts the HTTP request with no key
/// file), and `rttlens analyze` on it finds what the probe reported.
#[test]
fn pcap_with_keylog_decrypts_in_tshark_and_analyzes_the_same() {
    if let Err(e) = rttlens_lab_net::require_command("tshark", "tshark") {
        panic!("this test checks the pcap with tshark: {e}");
    }
    with_lab(|ctx, port, probe| {
        let pcap = ctx.dir().join("probe.pcapng");
        let keylog = ctx.dir().join("keys.txt");
        let url = format!("https://{}:{port}/size/3000", Lab::SERVER_V4);
        let o = probe_keyed(probe, &[], &pcap, &keylog, &url);
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        let cap = &doc["probe"]["capture"];
        assert_eq!(cap["status"], "captured", "{cap}");
        assert_eq!(cap["pcap"], pcap.to_str().unwrap());
        assert!(cap["packets"].as_u64().unwrap_or(0) >= 10, "{cap}");
        for a in doc["probe"]["attempts"].as_array().expect("attempts") {
            assert!(
                a["connection"].is_u64(),
                "attempt found in the capture: {a}"
            );
            assert_eq!(a["rtt_source"], "capture");
            assert!(a["tcp_info"]["at_end"]["min_rtt_us"].is_u64(), "{a}");
        }
        let t = run(Command::new("tshark").args([
            "-n",
            "-r",
            pcap.to_str().unwrap(),
            "-Y",
            "http.request",
            "-T",
            "fields",
            "-e",
            "http.request.uri",
        ]));
        assert!(t.status.success(), "tshark: {}", stderr(&t));
        let uris: Vec<String> = String::from_utf8_lossy(&t.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(
            uris,
            ["/size/3000", "/size/3000"],
            "tshark decrypted both requests"
        );
        let a = run(bin().args(["analyze", "--format", "json", pcap.to_str().unwrap()]));
        assert_eq!(a.status.code(), Some(0), "{}", stderr(&a));
        let analyzed: serde_json::Value = serde_json::from_slice(&a.stdout).expect("JSON");
        eprintln!("findings per connection: {:?}", finding_ids(&doc));
        assert_eq!(finding_ids(&analyzed), finding_ids(&doc));
        assert_eq!(finding_ids(&doc).len(), 2);
        // the same ladders too (phase names and durations)
        let ladders = |d: &serde_json::Value| -> Vec<String> {
            d["connections"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c["ladder"].to_string())
                .collect()
        };
        assert_eq!(ladders(&analyzed), ladders(&doc));
        // the keys in the file open every record, and each request's
        // frames are the ones tshark decrypts as HTTP
        let t = tshark_fields(
            &pcap,
            "http.request || http.response",
            &["frame.number", "http.request.uri", "http.response.code"],
        );
        let frames = |col: usize| -> Vec<u64> {
            t.iter()
                .filter(|f| !f[col].is_empty())
                .map(|f| f[0].parse().unwrap())
                .collect()
        };
        let rows = request_rows(&analyzed);
        assert_eq!(rows.len(), 2, "{analyzed}");
        let ours = |k: &str| -> Vec<u64> { rows.iter().map(|r| r[k].as_u64().unwrap()).collect() };
        assert_eq!(ours("request_frame"), frames(1), "requests: ours vs tshark");
        assert_eq!(
            ours("response_frame"),
            frames(2),
            "responses: ours vs tshark"
        );
        assert!(rows.iter().all(|r| r["target"] == "/size/3000"
            && r["status"] == 200
            && r["response_bytes"] == 3000));
        eprintln!("{}", String::from_utf8_lossy(&o.stdout));
    });
}

/// `rttlens probe -k -n 2 --format json --pcap PCAP --keylog KEYLOG EXTRA… URL`,
/// which must succeed.
fn probe_keyed(
    probe: &dyn Fn(&[&str]) -> Output,
    extra: &[&str],
    pcap: &std::path::Path,
    keylog: &std::path::Path,
    url: &str,
) -> Output {
    let mut args = vec!["-k", "-n", "2", "--format", "json", "--pcap"];
    args.push(pcap.to_str().unwrap());
    args.push("--keylog");
    args.push(keylog.to_str().unwrap());
    args.extend_from_slice(extra);
    args.push(url);
    let o = probe(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    o
}

/// Each connection's decryption opened every record; its request rows.
fn request_rows(doc: &serde_json::Value) -> Vec<serde_json::Value> {
    let mut rows = Vec::new();
    for c in doc["connections"].as_array().expect("connections") {
        let d = &c["tls"]["decryption"];
        assert_eq!(d["status"], "decrypted", "{d}");
        assert_eq!(d["failed"], 0, "{d}");
        assert_eq!(d["cut"], 0, "{d}");
        rows.extend(c["requests"].as_array().cloned().unwrap_or_default());
    }
    rows
}

/// tshark's `fields` for the frames matching `filter` (one row per frame).
fn tshark_fields(pcap: &std::path::Path, filter: &str, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-n")
        .arg("-r")
        .arg(pcap)
        .args(["-Y", filter, "-T", "fields"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let t = run(&mut cmd);
    assert!(t.status.success(), "tshark: {}", stderr(&t));
    String::from_utf8_lossy(&t.stdout)
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// `--http2 --pcap` against nginx over TLS 1.3 with HTTP/2: the probe's
/// own capture, its keys embedded, decrypts with no failed record, and
/// every stream's HEADERS frames are tshark's.
#[test]
fn pcap_over_http2_decrypts_and_its_streams_are_tsharks() {
    if let Err(e) = rttlens_lab_net::require_command("tshark", "tshark") {
        panic!("this test checks the pcap with tshark: {e}");
    }
    if let Err(e) = rttlens_lab_net::require_command("nginx", "nginx-light") {
        panic!("{e}");
    }
    with_lab(|ctx, _, probe| {
        ctx.nginx(443, |n| {
            n.http2 = true;
            n.files = vec![30_000];
        })
        .expect("nginx");
        let pcap = ctx.dir().join("probe-h2.pcapng");
        // --keylog: the keys go to the file and into the pcapng (its
        // Decryption Secrets Block); analyze reads them from there
        let keylog = ctx.dir().join("keys-h2.txt");
        let url = format!("https://{}:443/size/30000", Lab::SERVER_V4);
        probe_keyed(probe, &["--http2"], &pcap, &keylog, &url);
        let a = run(bin().args(["analyze", "--format", "json", pcap.to_str().unwrap()]));
        assert_eq!(a.status.code(), Some(0), "{}", stderr(&a));
        let analyzed: serde_json::Value = serde_json::from_slice(&a.stdout).expect("JSON");
        let rows = request_rows(&analyzed);
        assert_eq!(rows.len(), 2, "one stream per connection: {analyzed}");
        assert!(
            rows.iter().all(|r| r["stream"] == 1
                && r["method"] == "GET"
                && r["target"] == "/size/30000"
                && r["status"] == 200
                && r["response_bytes"] == 30_000),
            "{rows:?}"
        );
        let t = tshark_fields(
            &pcap,
            "http2.type == 1",
            &["frame.number", "http2.headers.path", "http2.headers.status"],
        );
        let frames = |col: usize| -> Vec<u64> {
            t.iter()
                .filter(|f| f.get(col).is_some_and(|v| !v.is_empty()))
                .map(|f| f[0].parse().unwrap())
                .collect()
        };
        let ours = |k: &str| -> Vec<u64> { rows.iter().map(|r| r[k].as_u64().unwrap()).collect() };
        assert_eq!(
            ours("request_frame"),
            frames(1),
            "HEADERS of requests: ours vs tshark"
        );
        assert_eq!(
            ours("response_frame"),
            frames(2),
            "HEADERS of responses: ours vs tshark"
        );
    });
}

/// Over https with no key log given (no `--keylog`, no `SSLKEYLOGFILE`):
/// the probe decrypts its own capture with the secrets it kept in memory,
/// so the built-in server's `Server-Timing` (a 30 ms handler) is read over
/// HTTP/1.1 and HTTP/2 (ALPN); `--pcap` alone carries no secrets, and
/// `--keylog FILE` still gets them written.
#[test]
fn https_server_timing_without_a_key_log() {
    with_lab(|ctx, _, _| {
        let port = ctx
            .builtin(ServerConfig {
                server_timing: true,
                http2: true,
                think: Duration::from_millis(30),
                ..ServerConfig::default()
            })
            .expect("built-in server");
        let url = format!("https://{}:{port}/size/20000", Lab::SERVER_V4);
        let probe = |args: &[&str]| -> Output {
            let mut cmd = bin();
            cmd.env_remove("SSLKEYLOGFILE")
                .args(["probe", "-k", "--max-time", "20"])
                .args(args)
                .arg(&url);
            let o = run(&mut ctx.lab().netns(Host::Client).command(&cmd));
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            o
        };
        for (flag, alpn, version) in [
            ("--http1.1", "http/1.1", "HTTP/1.1"),
            ("--http2", "h2", "HTTP/2.0"),
        ] {
            let o = probe(&[flag, "--format", "json"]);
            let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
            let a = &doc["probe"]["attempts"][0];
            assert_eq!(a["tls"]["alpn"], alpn, "{a}");
            assert_eq!(a["response"]["version"], version, "{a}");
            let rows = request_rows(&doc);
            assert_eq!(rows.len(), 1, "{flag}: {doc}");
            let st = &rows[0]["server_timing"];
            let app = &st["metrics"][0];
            assert_eq!(app["name"], "app", "{flag}: {st}");
            let dur = app["dur_ms"].as_f64().expect("dur_ms");
            assert!(
                (30.0..1000.0).contains(&dur),
                "{flag}: the 30 ms handler: {st}"
            );
            assert_eq!(st["frame"], rows[0]["response_frame"], "{flag}: {st}");
            let text = String::from_utf8_lossy(&probe(&[flag]).stdout).into_owned();
            assert!(
                text.contains("server-timing") && text.contains("(app "),
                "{flag}:\n{text}"
            );
        }
        // --pcap alone: the in-memory secrets stay out of the file
        let pcap = ctx.dir().join("no-keys.pcapng");
        probe(&["--pcap", pcap.to_str().unwrap()]);
        let a = run(bin().args(["analyze", "--format", "json", pcap.to_str().unwrap()]));
        assert_eq!(a.status.code(), Some(0), "{}", stderr(&a));
        let analyzed: serde_json::Value = serde_json::from_slice(&a.stdout).expect("JSON");
        let d = &analyzed["connections"][0]["tls"]["decryption"];
        assert!(d.is_null(), "no secrets in the pcap: {d}");
        // --keylog FILE: written as before, and the report decrypted
        let keylog = ctx.dir().join("asked.keylog");
        let o = probe(&["--keylog", keylog.to_str().unwrap(), "--format", "json"]);
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        assert_eq!(request_rows(&doc).len(), 1, "{doc}");
        let keys = std::fs::read_to_string(&keylog).expect("the key log written");
        for label in ["CLIENT_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0"] {
            assert!(keys.contains(label), "{label} in {keys}");
        }
    });
}

/// Without CAP_NET_RAW (as `nobody`, through util-linux `setpriv`, which
/// needs root to drop to) the probe still works and says what it could
/// not see; `--pcap` then is a usage error.
#[test]
fn without_the_capture_privilege_the_probe_says_what_it_cannot_see() {
    with_lab(|ctx, port, _| {
        let url = format!("https://{}:{port}/size/1000", Lab::SERVER_V4);
        let nobody = |extra: &[&str]| {
            let mut cmd = Command::new("setpriv");
            cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(env!("CARGO_BIN_EXE_rttlens"))
                .args(["probe", "-k", "--max-time", "10"])
                .args(extra)
                .arg(&url);
            run(&mut ctx.lab().netns(Host::Client).command(&cmd))
        };
        let o = nobody(&["--format", "json"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        let cap = &doc["probe"]["capture"];
        assert_eq!(cap["status"], "not-permitted", "{cap}");
        let note = cap["note"].as_str().unwrap_or_default();
        assert!(
            note.contains("CAP_NET_RAW") && note.contains("no wire ladder"),
            "{note}"
        );
        let a = &doc["probe"]["attempts"][0];
        assert_eq!(a["rtt_source"], "tcp_info", "the kernel's RTT instead: {a}");
        assert!(a["connection"].is_null());
        let o = nobody(&[]);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("capture: not-permitted"), "{text}");
        assert!(text.contains("TCP_INFO: rtt"), "{text}");
        let o = nobody(&["--pcap", "/tmp/rttlens-never.pcapng"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("CAP_NET_RAW"), "{}", stderr(&o));
    });
}
