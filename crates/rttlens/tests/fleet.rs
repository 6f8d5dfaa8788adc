//! What a fleet's records need (issue 42): the Community ID with a site's
//! own seed, and `--shard K/N`, whose shards together are the whole run.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;

use common::{analyze_ok, capture, public_capture};

/// Every capture of the shared corpus (public and itts), sorted.
fn shared_captures() -> Vec<PathBuf> {
    let mut all = Vec::new();
    for d in [public_capture("SOURCES.md"), capture("pku.cap")] {
        let dir = d.parent().expect("captures directory").to_path_buf();
        for f in std::fs::read_dir(&dir).expect("read_dir") {
            let f = f.expect("entry").path();
            if f.extension()
                .is_some_and(|x| x == "pcap" || x == "cap" || x == "pcapng")
            {
                all.push(f);
            }
        }
    }
    all.sort();
    all
}

/// The capture and its key log, when one lies beside it.
fn args_of(f: &std::path::Path) -> Vec<std::ffi::OsString> {
    let mut v = vec![f.as_os_str().to_owned()];
    let k = f.with_extension("keylog");
    if k.exists() {
        v.push("--keylog".into());
        v.push(k.into_os_string());
    }
    v
}

/// `analyze --format jsonl ARGS…`: its connection lines, and its summary.
fn jsonl(args: &[std::ffi::OsString]) -> (Vec<String>, serde_json::Value) {
    let out = analyze_ok(
        args.iter()
            .cloned()
            .chain(["--format".into(), "jsonl".into()]),
    );
    let text = String::from_utf8(out).expect("utf-8");
    let conns = text
        .lines()
        .filter(|l| l.starts_with("{\"type\":\"connection\""))
        .map(str::to_string)
        .collect();
    let summary = text
        .lines()
        .find(|l| l.starts_with("{\"type\":\"summary\""))
        .map(|l| serde_json::from_str(l).expect("summary"))
        .expect("a summary line");
    (conns, summary)
}

/// `--shard K/N`, K = 1…3, on every shared capture (with its key log), on
/// one thread and on two: the shards' connection lines together are the
/// unsharded run's, line for line once sorted, indexes included (a shard
/// keeps the unsharded index, so shards join); no connection is in two
/// shards; each shard's summary counts the whole capture's packets and
/// peak of open connections, and its own connections.
#[test]
fn shards_together_are_the_whole_run() {
    let mut split = 0;
    let mut total = 0;
    for f in shared_captures() {
        for threads in ["1", "2"] {
            let mut base = args_of(&f);
            base.extend(["--threads".into(), threads.into()]);
            let (mut whole, whole_sum) = jsonl(&base);
            let mut union = Vec::new();
            let mut nonempty = 0;
            for k in 1..=3 {
                let mut a = base.clone();
                a.extend(["--shard".into(), format!("{k}/3").into()]);
                let (lines, sum) = jsonl(&a);
                let (c, w) = (&sum["capture"], &whole_sum["capture"]);
                for key in ["frames", "tcp_segments", "bytes", "peak_open_connections"] {
                    assert_eq!(c[key], w[key], "{}: shard {k}/3 {key}", f.display());
                }
                let tcp = lines
                    .iter()
                    .filter(|l| l.contains("\"transport\":\"tcp\""))
                    .count();
                assert_eq!(c["connections"], tcp, "{}: shard {k}/3", f.display());
                nonempty += usize::from(!lines.is_empty());
                union.extend(lines);
            }
            whole.sort();
            union.sort();
            assert_eq!(
                union.len(),
                whole.len(),
                "{} --threads {threads}",
                f.display()
            );
            for (a, b) in union.iter().zip(&whole) {
                assert_eq!(a, b, "{} --threads {threads}", f.display());
            }
            split += usize::from(nonempty > 1);
            total += whole.len();
        }
    }
    assert!(
        split >= 16 && total >= 150,
        "{split} runs over several shards, {total} connections"
    );
}

/// With `--community-id-seed N`, every connection's `community_id` is
/// Wireshark's with the same seed (`tshark -o communityid.seed:N
/// --enable-protocol communityid`) of its first frame, on every shared
/// capture, TCP and QUIC, and differs from the seed-0 one. FAILS (never
/// skips) without tshark.
#[test]
fn community_id_seed_is_wiresharks() {
    common::require_tshark();
    let seed = 4660u16;
    let mut checked = 0;
    for f in shared_captures() {
        let out = analyze_ok([
            f.as_os_str(),
            "--format".as_ref(),
            "json".as_ref(),
            "--community-id-seed".as_ref(),
            seed.to_string().as_ref(),
        ]);
        let v: serde_json::Value = serde_json::from_slice(&out).expect("json");
        let tshark = std::process::Command::new("tshark")
            .arg("-r")
            .arg(&f)
            .args(["-o", &format!("communityid.seed:{seed}")])
            .args(["--enable-protocol", "communityid"])
            .args(["-T", "fields", "-e", "frame.number", "-e", "communityid"])
            .output()
            .expect("tshark");
        let by_frame: HashMap<u64, String> = String::from_utf8_lossy(&tshark.stdout)
            .lines()
            .filter_map(|l| {
                let (n, id) = l.split_once('\t')?;
                Some((n.parse().ok()?, id.to_string()))
            })
            .collect();
        for c in v["connections"].as_array().expect("connections") {
            let first = c["first_frame"].as_u64().expect("first_frame");
            let Some(want) = by_frame.get(&first).filter(|w| !w.is_empty()) else {
                continue;
            };
            let got = c["community_id"].as_str().expect("community_id");
            assert_eq!(
                got,
                want,
                "{}: connection {} {} (frame {first}), seed {seed}",
                f.display(),
                c["transport"],
                c["index"]
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 80,
        "{checked} connections checked against tshark"
    );
}

/// The text report's header of each connection names its Community ID,
/// the one of the JSON record, with the seed asked for.
#[test]
fn text_header_shows_the_community_id() {
    let f = public_capture("zeek_http-bro-org.pcap");
    for seed in ["0", "1"] {
        let args = [f.as_os_str(), "--community-id-seed".as_ref(), seed.as_ref()];
        let text = String::from_utf8(analyze_ok(args)).expect("utf-8");
        let json: serde_json::Value = serde_json::from_slice(&analyze_ok(
            args.iter()
                .copied()
                .chain(["--format".as_ref(), "json".as_ref()]),
        ))
        .expect("json");
        let conns = json["connections"].as_array().expect("connections");
        assert!(!conns.is_empty());
        let headers: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("connection ") || l.starts_with("QUIC connection "))
            .collect();
        assert!(!headers.is_empty(), "{text}");
        for h in headers {
            let index: u64 = h
                .trim_start_matches("QUIC ")
                .split_whitespace()
                .nth(1)
                .and_then(|i| i.parse().ok())
                .expect("index");
            let c = conns
                .iter()
                .find(|c| c["index"] == index)
                .expect("the connection in JSON");
            let id = c["community_id"].as_str().expect("community_id");
            assert!(h.ends_with(&format!("  community_id {id}")), "{h} / {id}");
        }
    }
}
