//! The command line as users drive it: exit codes, the JSON contract,
//! stdin, connection selection.

use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;

mod common;
use common::{analyze_ok, bin, capture, scratch};

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
    assert_eq!(v["schema_version"], 3);
    assert_eq!(v["capture"]["frames"], 715);
    let conns = v["connections"].as_array().expect("connections");
    assert_eq!(conns.len(), 1);
    let c = &conns[0];
    assert_eq!(c["vantage"], "client");
    assert_eq!(c["transfer"]["initial_window"]["bytes"], 14280);
    for p in c["ladder"].as_array().expect("ladder") {
        assert!(p["detail"].as_str().is_some_and(|d| !d.is_empty()), "{p}");
        assert!(p["facts"].is_object(), "{p}");
    }
    for f in c["findings"].as_array().expect("findings") {
        for key in [
            "id",
            "title",
            "cost",
            "evidence",
            "confidence",
            "fix",
            "references",
            "facts",
        ] {
            assert!(!f[key].is_null(), "finding lacks {key}: {f}");
        }
        assert!(f["cost"]["ms"].is_number() && f["cost"]["rtts"].is_number());
        assert!(f["evidence"][0]["frame"].is_u64());
        // schema 3: every sentence beside the typed facts it is written from
        assert!(f["title"].as_str().is_some_and(|t| !t.is_empty()), "{f}");
        assert!(f["facts"].is_object(), "{f}");
        for e in f["evidence"].as_array().expect("evidence") {
            assert!(e["what"].as_str().is_some_and(|w| !w.is_empty()), "{e}");
            let facts = e["facts"].as_array().expect("evidence facts");
            assert!(!facts.is_empty(), "{e}");
            for x in facts {
                let kind = x["kind"].as_str().expect("kind");
                assert!(kind.contains('.') && kind != "text", "a typed kind: {x}");
            }
        }
        assert!(f["confidence"]["why"].is_string(), "{f}");
        assert!(f["confidence"]["reasons"].is_array(), "{f}");
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
    let dir = std::env::temp_dir();
    for path in [not_capture, PathBuf::from("/nonexistent/capture.pcap"), dir] {
        let out = bin().arg("analyze").arg(&path).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{}", path.display());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("rttlens: cannot read"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        // the OS's reason once, not again as the error's cause
        assert!(err.matches("(os error").count() <= 1, "{err}");
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

#[cfg(feature = "lab")]
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

#[cfg(feature = "lab")]
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

#[cfg(feature = "lab")]
#[test]
fn lab_bad_rtt_is_a_usage_error() {
    let out = bin().args(["lab", "--rtt", "fast"]).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
}

/// Not root: a one-line message naming what is missing, exit 2, and no
/// namespace created. Runs the binary as `nobody` through util-linux
/// `setpriv` (root is needed to drop to another user, so this test needs
/// root too, like the lab tests, and fails saying so).
#[cfg(feature = "lab")]
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

#[cfg(feature = "lab")]
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

#[cfg(feature = "lab")]
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

/// Built without a product's feature (`--no-default-features`: `rttlens
/// analyze` alone), its subcommand does not exist: clap's usage error,
/// exit 2, naming the subcommand.
#[test]
fn subcommands_without_their_feature_do_not_exist() {
    let off: Vec<&str> = [
        ("lab", cfg!(feature = "lab")),
        ("probe", cfg!(feature = "probe")),
        ("bench", cfg!(feature = "bench")),
    ]
    .into_iter()
    .filter(|(_, on)| !on)
    .map(|(name, _)| name)
    .collect();
    for name in off {
        let out = bin().args([name, "--help"]).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{name}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("unrecognized subcommand '{name}'")),
            "{name}: {err}"
        );
    }
    let help = bin().arg("--help").output().expect("run");
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("analyze"), "{text}");
    for (name, on) in [
        ("lab", cfg!(feature = "lab")),
        ("probe", cfg!(feature = "probe")),
        ("bench", cfg!(feature = "bench")),
    ] {
        let listed = text
            .lines()
            .any(|l| l.split_whitespace().next() == Some(name));
        assert_eq!(listed, on, "`{name}` in --help: {text}");
    }
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

#[test]
fn one_thread_and_many_give_identical_output() {
    let all: Vec<PathBuf> = ["pku.cap", "pku-2.cap", "thu.cap", "thu-2.cap"]
        .into_iter()
        .map(capture)
        .collect();
    // a capture that breaks off (a record claims 4 GiB): the reader gets
    // exactly as far on any number of threads, and says the same
    let mut raw = std::fs::read(&all[1]).expect("read");
    let mut at = 24;
    for _ in 0..100 {
        let incl = u32::from_le_bytes(raw[at + 8..at + 12].try_into().expect("4 bytes"));
        at += 16 + incl as usize;
    }
    raw[at + 8..at + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    let broken = scratch("broken.pcap");
    std::fs::write(&broken, &raw).expect("write");
    let mut inputs: Vec<Vec<&std::ffi::OsStr>> = all.iter().map(|p| vec![p.as_os_str()]).collect();
    inputs.push(vec![broken.as_os_str()]);
    // the four merged: connections from four files, ended by the end
    inputs.push(all.iter().map(|p| p.as_os_str()).collect());
    for files in &inputs {
        for format in ["json", "jsonl", "text"] {
            let run = |threads: &str| {
                let mut a = files.clone();
                a.extend([os("--format"), os(format), os("--threads"), os(threads)]);
                analyze_ok(&a)
            };
            let one = run("1");
            assert!(!one.is_empty());
            for n in ["2", "3", "8"] {
                assert!(
                    one == run(n),
                    "{files:?} --format {format}: --threads {n} differs from --threads 1"
                );
            }
        }
    }
}

#[test]
fn jsonl_has_a_header_a_line_per_connection_and_a_summary() {
    let files = [capture("pku.cap"), capture("thu.cap")];
    let args: Vec<&std::ffi::OsStr> = files.iter().map(|p| p.as_os_str()).collect();
    let mut a = args.clone();
    a.extend([os("--format"), os("jsonl")]);
    let out = String::from_utf8(analyze_ok(&a)).expect("utf-8");
    let lines: Vec<serde_json::Value> = out.lines().map(|l| json_of(l.as_bytes())).collect();
    assert!(lines.len() >= 3, "{out}");
    let (head, rest) = lines.split_first().expect("header");
    let (summary, conns) = rest.split_last().expect("summary");
    assert_eq!(head["type"], "header");
    assert_eq!(head["schema_version"], 3);
    assert_eq!(summary["type"], "summary");
    assert_eq!(
        summary["capture"]["connections"].as_u64(),
        Some(conns.len() as u64)
    );
    // each connection line is the `json` document's connection, with its type
    let mut a = args.clone();
    a.extend([os("--format"), os("json")]);
    let doc = json_of(&analyze_ok(&a));
    let expected = doc["connections"].as_array().expect("connections");
    assert_eq!(expected.len(), conns.len());
    for (line, want) in conns.iter().zip(expected) {
        assert_eq!(line["type"], "connection");
        let mut line = line.clone();
        line.as_object_mut().expect("object").remove("type");
        assert_eq!(&line, want);
    }
    assert_eq!(summary["capture"], doc["capture"]);
}

/// `editcap` (wireshark-common): fails with the package to install.
fn editcap() -> std::process::Command {
    let ok = std::process::Command::new("editcap")
        .arg("-h")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "editcap is missing: apt-get install -y wireshark-common (scripts/packages)"
    );
    std::process::Command::new("editcap")
}

#[test]
fn a_rotated_set_reads_as_the_capture_it_was_cut_from() {
    // `editcap -c` cuts a capture into files of N packets, as `tcpdump -C`
    // rotates: the set, given in any order, must read as the whole file
    let whole = capture("pku.cap");
    let dir = scratch("rotated");
    std::fs::create_dir_all(&dir).expect("dir");
    let st = editcap()
        .args(["-F", "pcap", "-c", "200"])
        .arg(&whole)
        .arg(dir.join("part.pcap"))
        .status()
        .expect("editcap");
    assert!(st.success());
    let mut parts: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .collect();
    assert!(parts.len() >= 3, "{parts:?}");
    parts.sort();
    parts.reverse(); // the merge goes by time, not by the order given
    let conns = |args: Vec<&std::ffi::OsStr>| {
        let mut a = args;
        a.extend([os("--format"), os("json")]);
        let v = json_of(&analyze_ok(&a));
        (v["connections"].clone(), v["capture"]["frames"].clone())
    };
    let (want, frames) = conns(vec![whole.as_os_str()]);
    let (got, set_frames) = conns(parts.iter().map(|p| p.as_os_str()).collect());
    assert_eq!(frames, set_frames);
    assert_eq!(want, got, "the rotated set differs from the whole capture");
    // two different captures merged: the earlier one's frames come first
    let (a, b) = (capture("pku.cap"), capture("thu.cap"));
    let one = json_of(&analyze_ok([a.as_os_str(), os("--format"), os("json")]));
    let two = json_of(&analyze_ok([
        b.as_os_str(),
        a.as_os_str(),
        os("--format"),
        os("json"),
    ]));
    let n = one["capture"]["frames"].as_u64().expect("frames");
    assert!(n > 0);
    let merged = two["connections"].as_array().expect("connections");
    assert_eq!(merged.len(), 2);
    let firsts: Vec<u64> = merged
        .iter()
        .map(|c| c["first_frame"].as_u64().unwrap_or(0))
        .collect();
    assert!(firsts.contains(&1), "{firsts:?}");
    assert!(firsts.iter().any(|&f| f > n), "{firsts:?}");
    // standard input cannot be merged with files: exit 2, one clear line
    let out = bin().arg("analyze").arg(&a).arg("-").output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("standard input (-) can only be read alone"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn filter_keeps_what_matches_and_counts_the_rest() {
    let cap = capture("pku.cap");
    let all = json_of(&analyze_ok([cap.as_os_str(), os("--format"), os("json")]));
    let c = &all["connections"][0];
    let server = c["server"].as_str().expect("server").to_string();
    let (addr, port) = server.rsplit_once(':').expect("addr:port");
    let addr = addr.trim_start_matches('[').trim_end_matches(']');
    let segments = all["capture"]["tcp_segments"].as_u64().expect("segments");
    let run = |f: &str| {
        json_of(&analyze_ok([
            cap.as_os_str(),
            os("--filter"),
            os(f),
            os("--format"),
            os("json"),
        ]))
    };
    let kept = run(&format!("host {addr} and tcp port {port}"));
    assert_eq!(kept["connections"], all["connections"]);
    assert_eq!(kept["capture"]["filtered_out"].as_u64().unwrap_or(0), 0);
    assert_eq!(
        kept["capture"]["filter"],
        format!("host {addr} and tcp port {port}")
    );
    let none = run(&format!("not host {addr}"));
    assert_eq!(none["connections"].as_array().map(Vec::len), Some(0));
    assert_eq!(none["capture"]["filtered_out"].as_u64(), Some(segments));
    // only the server's segments: one direction of the connection
    let one_way = run(&format!("src host {addr}"));
    let out = one_way["capture"]["filtered_out"]
        .as_u64()
        .expect("filtered");
    assert!(out > 0 && out < segments, "{out} of {segments}");
    assert_eq!(one_way["connections"].as_array().map(Vec::len), Some(1));
    // a filter outside the subset: exit 2, naming the column
    let bad = bin()
        .args([
            "analyze",
            "--filter",
            "host 10.0.0.1 and ether host 1:2:3:4:5:6",
        ])
        .arg(&cap)
        .output()
        .expect("run");
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("column 19") && err.contains("ether"), "{err}");
}

/// Schema 3's promise on every shared capture (with its key log where
/// there is one): every sentence of a finding, of its evidence and of a
/// ladder phase is written by a template of the report from typed facts,
/// none is a sentence the engine wrote (`text`), and none fell back to the
/// raw `kind (name=value)` form, which would mean a fact kind without a
/// template.
#[test]
fn every_fact_has_its_template_on_the_shared_captures() {
    let dir = common::public_capture("SOURCES.md");
    let dirs = [
        dir.parent().unwrap().to_path_buf(),
        capture("pku.cap").parent().unwrap().to_path_buf(),
    ];
    let mut files: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| std::fs::read_dir(d).expect("read_dir"))
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x == "pcap" || x == "cap" || x == "pcapng")
        })
        .collect();
    files.sort();
    assert!(files.len() >= 30, "the shared captures: {}", files.len());
    let (mut findings, mut facts) = (0, 0);
    let typed = |x: &serde_json::Value, sentence: &str, at: &str| {
        let kind = x["kind"].as_str().expect("kind");
        assert!(kind != "text" && kind.contains('.'), "{at}: untyped {x}");
        assert!(
            !sentence.is_empty() && !sentence.contains(kind),
            "{at}: no template for {kind}: {sentence:?}"
        );
    };
    for f in &files {
        let mut cmd = bin();
        cmd.args(["analyze", "--no-progress", "--format", "json"])
            .arg(f);
        let keylog = f.with_extension("keylog");
        if keylog.exists() {
            cmd.arg("--keylog").arg(&keylog);
        }
        let out = cmd.output().expect("run");
        let at = f.display().to_string();
        assert!(
            out.status.success(),
            "{at}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v = json_of(&out.stdout);
        let conns = v["connections"].as_array().expect("connections");
        for c in conns {
            // the header every transport shares (docs/json.md)
            for key in ["transport", "index", "client", "server", "community_id"] {
                assert!(!c[key].is_null(), "{at}: a connection without {key}");
            }
            for key in ["first_frame", "last_frame", "start_s", "duration_ms"] {
                assert!(c[key].is_number(), "{at}: {key} of {}", c["index"]);
            }
            assert!(
                c["community_id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("1:") && id.len() == 30),
                "{at}: {}",
                c["community_id"]
            );
            assert!(
                matches!(c["transport"].as_str(), Some("tcp" | "quic")),
                "{at}"
            );
            for p in c["ladder"].as_array().expect("ladder") {
                assert!(
                    p["detail"].as_str().is_some_and(|d| !d.is_empty()),
                    "{at}: {p}"
                );
            }
            for x in c["findings"].as_array().expect("findings") {
                findings += 1;
                for key in ["title", "fix"] {
                    assert!(
                        x[key].as_str().is_some_and(|s| !s.is_empty()),
                        "{at}: {key} of {x}"
                    );
                }
                let why = x["confidence"]["why"].as_str().expect("why");
                for r in x["confidence"]["reasons"].as_array().expect("reasons") {
                    typed(r, why, &at);
                    facts += 1;
                }
                for e in x["evidence"].as_array().expect("evidence") {
                    let what = e["what"].as_str().expect("what");
                    for y in e["facts"].as_array().expect("facts") {
                        typed(y, what, &at);
                        facts += 1;
                    }
                }
            }
        }
    }
    assert!(
        findings >= 100 && facts >= 300,
        "{findings} findings, {facts} facts"
    );
}

/// Every connection's `community_id` is Wireshark's Community ID
/// (`tshark --enable-protocol communityid`, seed 0) of its first frame, on
/// every shared capture, TCP and QUIC. FAILS (never skips) without tshark.
#[test]
fn community_id_is_wiresharks() {
    common::require_tshark();
    let dir = common::public_capture("SOURCES.md");
    let mut checked = 0;
    for d in [
        dir.parent().unwrap().to_path_buf(),
        capture("pku.cap").parent().unwrap().to_path_buf(),
    ] {
        for f in std::fs::read_dir(&d).expect("read_dir") {
            let f = f.expect("entry").path();
            if !f
                .extension()
                .is_some_and(|x| x == "pcap" || x == "cap" || x == "pcapng")
            {
                continue;
            }
            let out = bin()
                .args(["analyze", "--no-progress", "--format", "json"])
                .arg(&f)
                .output()
                .expect("run");
            let v = json_of(&out.stdout);
            let tshark = std::process::Command::new("tshark")
                .arg("-r")
                .arg(&f)
                .args(["--enable-protocol", "communityid"])
                .args(["-T", "fields", "-e", "frame.number", "-e", "communityid"])
                .output()
                .expect("tshark");
            let by_frame: std::collections::HashMap<u64, String> =
                String::from_utf8_lossy(&tshark.stdout)
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
                assert_eq!(
                    c["community_id"].as_str(),
                    Some(want.as_str()),
                    "{}: connection {} {} (frame {first})",
                    f.display(),
                    c["transport"],
                    c["index"]
                );
                checked += 1;
            }
        }
    }
    assert!(
        checked >= 80,
        "{checked} connections checked against tshark"
    );
}
