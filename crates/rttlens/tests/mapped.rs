//! `rttlens analyze FILE` maps a regular file and reads it in place;
//! `RTTLENS_NO_MMAP=1`, stdin, FIFOs and gzip'd files take the stream
//! path. Both give the same output byte for byte: on every shared capture,
//! on several merged, and on a capture cut mid-record; a FIFO and stdin
//! still work.

mod common;

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{bin, scratch};

fn shared_captures() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/captures");
    let mut out = Vec::new();
    for dir in ["itts", "public"] {
        for e in std::fs::read_dir(root.join(dir)).expect("../shared/captures") {
            let p = e.expect("entry").path();
            if p.extension()
                .is_some_and(|x| ["pcap", "cap", "pcapng"].iter().any(|c| x == *c))
            {
                out.push(p);
            }
        }
    }
    out.sort();
    assert!(out.len() >= 30, "only {} shared captures", out.len());
    out
}

/// `rttlens analyze ARGS`, mapped or not: its exit code, stdout and stderr.
fn analyze<S: AsRef<OsStr>>(mapped: bool, args: &[S]) -> (Option<i32>, Vec<u8>, Vec<u8>) {
    let mut cmd = bin();
    cmd.args(["analyze", "--no-progress"]).args(args);
    if mapped {
        cmd.env_remove("RTTLENS_NO_MMAP");
    } else {
        cmd.env("RTTLENS_NO_MMAP", "1");
    }
    let out = cmd.output().expect("run rttlens analyze");
    (out.status.code(), out.stdout, out.stderr)
}

fn same_both_ways(args: &[&OsStr], what: &str) -> Vec<u8> {
    let a = analyze(false, args);
    let b = analyze(true, args);
    assert_eq!(a.0, Some(0), "{what}: {}", String::from_utf8_lossy(&a.2));
    assert!(a == b, "{what}: mapped output differs from read output");
    a.1
}

#[test]
fn every_shared_capture_gives_the_same_output_mapped() {
    for path in shared_captures() {
        let keylog = path.with_extension("keylog");
        let mut args = vec![path.as_os_str()];
        if keylog.exists() {
            args.extend([OsStr::new("--keylog"), keylog.as_os_str()]);
        }
        let what = path.display().to_string();
        for extra in [
            &["--threads", "1"][..],
            &["--threads", "2", "--format", "json"],
        ] {
            let mut a = args.clone();
            a.extend(extra.iter().map(OsStr::new));
            same_both_ways(&a, &what);
        }
    }
}

#[test]
fn merged_files_give_the_same_output_mapped() {
    let all = shared_captures();
    let files: Vec<&Path> = all
        .iter()
        .filter(|p| p.to_string_lossy().contains("itts"))
        .chain(
            all.iter()
                .filter(|p| p.extension().is_some_and(|x| x == "pcapng"))
                .take(1),
        )
        .map(PathBuf::as_path)
        .collect();
    assert!(files.len() >= 3);
    for threads in ["1", "2"] {
        let mut args: Vec<&OsStr> = files.iter().map(|p| p.as_os_str()).collect();
        args.extend(["--format", "json", "--threads", threads].map(OsStr::new));
        same_both_ways(&args, "merged");
    }
}

#[test]
fn a_file_cut_mid_record_gives_the_same_note_mapped() {
    let all = shared_captures();
    for name in ["thu.cap", "ws_tcp-netcat.pcapng"] {
        let path = all.iter().find(|p| p.ends_with(name)).expect(name);
        let raw = std::fs::read(path).expect("read");
        let cut = scratch(&format!("cut-{name}"));
        std::fs::write(&cut, &raw[..raw.len() / 2 + 7]).expect("write");
        let args = [cut.as_os_str(), OsStr::new("--format"), OsStr::new("json")];
        let out = same_both_ways(&args, name);
        let v: serde_json::Value = serde_json::from_slice(&out).expect("json");
        assert!(
            v["capture"]["quality"]["truncated"].is_string(),
            "{name}: {}",
            v["capture"]["quality"]
        );
        // and the text report says it too
        let text = same_both_ways(&[cut.as_os_str()], name);
        assert!(
            String::from_utf8_lossy(&text).contains("truncated"),
            "{name}"
        );
    }
}

/// `rttlens analyze --format json INPUT` fed `raw` through a pipe: the
/// FIFO at `input`, or stdin when `input` is `-`.
fn through_a_pipe(input: &Path, raw: Vec<u8>) -> Vec<u8> {
    let mut child = bin()
        .args(["analyze", "--no-progress", "--format", "json"])
        .arg(input)
        .env_remove("RTTLENS_NO_MMAP")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let fifo = (input != Path::new("-")).then(|| input.to_path_buf());
    let feeder = std::thread::spawn(move || match fifo {
        // opening a FIFO for writing waits for its reader
        Some(p) => std::fs::OpenOptions::new()
            .write(true)
            .open(p)
            .and_then(|mut f| f.write_all(&raw)),
        None => stdin.write_all(&raw),
    });
    let out = child.wait_with_output().expect("wait");
    feeder.join().expect("join").expect("feed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn a_fifo_and_stdin_are_still_read() {
    let all = shared_captures();
    let path = all
        .iter()
        .find(|p| p.ends_with("pku-2.cap"))
        .expect("pku-2.cap");
    let raw = std::fs::read(path).expect("read");
    let direct = analyze(
        true,
        &[path.as_os_str(), OsStr::new("--format"), OsStr::new("json")],
    );
    let fifo = scratch("capture.fifo");
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let json = |b: &[u8]| -> serde_json::Value { serde_json::from_slice(b).expect("json") };
    let want = json(&direct.1);
    for input in [fifo.as_path(), Path::new("-")] {
        let got = json(&through_a_pipe(input, raw.clone()));
        assert_eq!(
            got["connections"],
            want["connections"],
            "{}",
            input.display()
        );
        assert_eq!(got["capture"]["bytes"], want["capture"]["bytes"]);
    }
    std::fs::remove_file(&fifo).expect("rm fifo");
}
