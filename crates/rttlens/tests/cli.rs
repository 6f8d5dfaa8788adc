//! The command line as users drive it: exit codes, the JSON contract,
//! stdin, connection selection.

use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;

mod common;
use common::{bin, capture, scratch};

fn json_of(out: &[u8]) -> serde_json::Value {
    serde_json::from_slice(out)
        .unwrap_or_else(|e| panic!("invalid JSON ({e}): {}", String::from_utf8_lossy(out)))
}

#[test]
fn text_report_names_the_cause() {
    let out = bin()
        .args(["analyze", "--no-progress"])
        .arg(capture("pku.cap"))
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("sender-window-cap"), "{text}");
    assert!(text.contains("vantage client"), "{text}");
    assert!(text.contains("evidence  frame"), "{text}");
}

#[test]
fn json_document_follows_the_schema() {
    let out = bin()
        .args(["analyze", "--format", "json"])
        .arg(capture("thu.cap"))
        .output()
        .expect("run");
    assert!(out.status.success());
    let v = json_of(&out.stdout);
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["capture"]["frames"], 715);
    let conns = v["connections"].as_array().expect("connections");
    assert_eq!(conns.len(), 1);
    let c = &conns[0];
    assert_eq!(c["vantage"], "client");
    assert_eq!(c["transfer"]["initial_window"]["bytes"], 14280);
    for f in c["findings"].as_array().expect("findings") {
        for key in [
            "id",
            "title",
            "cost",
            "evidence",
            "confidence",
            "fix",
            "references",
        ] {
            assert!(!f[key].is_null(), "finding lacks {key}: {f}");
        }
        assert!(f["cost"]["ms"].is_number() && f["cost"]["rtts"].is_number());
        assert!(f["evidence"][0]["frame"].is_u64());
    }
}

#[test]
fn stdin_and_gzip_give_the_same_answer() {
    let raw = std::fs::read(capture("pku-2.cap")).expect("read");
    let gz = scratch("pku-2.cap.gz");
    {
        let f = std::fs::File::create(&gz).expect("create");
        let mut e = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
        e.write_all(&raw).expect("gzip");
        e.finish().expect("gzip");
    }
    let direct = bin()
        .args(["analyze", "--format", "json"])
        .arg(capture("pku-2.cap"))
        .output()
        .expect("run");
    let mut child = bin()
        .args(["analyze", "--format", "json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let feeder = std::thread::spawn(move || stdin.write_all(&raw));
    let piped = child.wait_with_output().expect("wait");
    feeder.join().expect("join").expect("feed stdin");
    let zipped = bin()
        .args(["analyze", "--format", "json"])
        .arg(&gz)
        .output()
        .expect("run");
    let (a, b, c) = (
        json_of(&direct.stdout),
        json_of(&piped.stdout),
        json_of(&zipped.stdout),
    );
    assert_eq!(a["connections"], b["connections"]);
    assert_eq!(a["connections"], c["connections"]);
    assert!(c["capture"]["format"]
        .as_str()
        .unwrap_or("")
        .contains("gzip"));
}

#[test]
fn conn_selects_by_index_and_endpoint() {
    let out = bin()
        .args(["analyze", "--format", "json", "--conn", "7"])
        .arg(capture("pku.cap"))
        .output()
        .expect("run");
    assert!(out.status.success());
    assert_eq!(
        json_of(&out.stdout)["connections"]
            .as_array()
            .map(|a| a.len()),
        Some(0)
    );
    let out = bin()
        .args([
            "analyze",
            "--format",
            "json",
            "--conn",
            "[2001:da8:201:1129::103]:443",
        ])
        .arg(capture("pku.cap"))
        .output()
        .expect("run");
    assert_eq!(
        json_of(&out.stdout)["connections"]
            .as_array()
            .map(|a| a.len()),
        Some(1)
    );
    let bad = bin()
        .args(["analyze", "--conn", "nonsense"])
        .arg(capture("pku.cap"))
        .output()
        .expect("run");
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn unreadable_input_exits_2_with_a_clear_message() {
    let not_capture = scratch("notes.txt");
    std::fs::write(&not_capture, b"this is a text file, not a capture\n").expect("write");
    for path in [not_capture, PathBuf::from("/nonexistent/capture.pcap")] {
        let out = bin().arg("analyze").arg(&path).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{}", path.display());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("rttlens: cannot read"), "{err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn truncated_capture_is_analysed_up_to_the_break() {
    let raw = std::fs::read(capture("thu.cap")).expect("read");
    let cut = scratch("thu-cut.cap");
    std::fs::write(&cut, &raw[..raw.len() / 2 + 7]).expect("write");
    let out = bin()
        .args(["analyze", "--format", "json"])
        .arg(&cut)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_of(&out.stdout);
    assert!(
        v["capture"]["quality"]["truncated"].is_string(),
        "{}",
        v["capture"]["quality"]
    );
    assert!(v["capture"]["frames"].as_u64().unwrap_or(0) > 300);
}

#[test]
fn lab_list_needs_no_root() {
    let out = bin().args(["lab", "--list"]).output().expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for name in ["nagle-handshake", "nagle-response", "nodelay", "tfo"] {
        assert!(text.contains(name), "{name} missing from {text}");
    }
    assert!(
        text.contains("expect nagle-stall|nagle-delayed-ack"),
        "{text}"
    );
}

#[test]
fn lab_unknown_scenario_is_a_usage_error() {
    let out = bin()
        .args(["lab", "no-such-scenario"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown scenario `no-such-scenario`"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn lab_bad_rtt_is_a_usage_error() {
    let out = bin().args(["lab", "--rtt", "fast"]).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
}

/// Not root: a one-line message naming what is missing, exit 2, and no
/// namespace created. Runs the binary as `nobody` through util-linux
/// `setpriv` (root is needed to drop to another user, so this test needs
/// root too, like the lab tests, and fails saying so).
#[test]
fn lab_without_root_says_so_and_leaves_nothing() {
    assert!(
        nix_is_root(),
        "this test drops to `nobody` with setpriv, which needs root"
    );
    let child = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_rttlens"))
        .args(["lab", "clean"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("setpriv (util-linux) runs");
    // setpriv execs rttlens in place: same pid, which lab namespace names carry
    let prefix = format!("rttlens-{}-", child.id());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs root") && err.contains("sudo"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(out.stdout.is_empty());
    let left: Vec<String> = netns_names()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
}

fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

fn netns_names() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("rttlens-"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}
