//! Shared by the command-line tests: the binary, the real captures and a
// each test file uses part of these helpers
#![allow(dead_code)]
//! scratch directory per test process.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::Command;

pub mod prom;
// veth pairs need the lab's namespaces (rttlens-lab-net, the `lab` feature;
// `--no-default-features` builds these tests without it)
#[cfg(feature = "lab")]
pub mod veth;

/// The `rttlens` binary under test.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rttlens"))
}

/// `rttlens analyze --no-progress ARGS…`, which must succeed: its standard
/// output (the failure names the arguments and shows standard error).
pub fn analyze_ok<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> Vec<u8> {
    let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let out = bin()
        .args(["analyze", "--no-progress"])
        .args(&args)
        .output()
        .expect("run rttlens analyze");
    assert!(
        out.status.success(),
        "analyze {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A capture of `../shared/captures/itts` (fails naming it when missing).
pub fn capture(name: &str) -> PathBuf {
    shared_capture("itts", name)
}

/// A capture of `../shared/captures/public` (fails naming it when missing).
pub fn public_capture(name: &str) -> PathBuf {
    shared_capture("public", name)
}

fn shared_capture(dir: &str, name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/captures")
        .join(dir)
        .join(name);
    assert!(
        p.exists(),
        "{} is missing: the tests need ../shared/captures",
        p.display()
    );
    p
}

/// Fails the test when tshark is missing (the tests that check against it
/// never skip). Not `rttlens_lab_net`'s check: these tests build without the
/// lab feature too.
pub fn require_tshark() {
    let found = Command::new("tshark").arg("--version").output();
    if !found.is_ok_and(|o| o.status.success()) {
        panic!("this test checks against tshark, which is missing: apt-get install -y tshark");
    }
}

/// `name` in this test process's scratch directory.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rttlens-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir.join(name)
}

/// The commands of the README's ```sh block under `## Set-up on a fresh
/// machine`, comments and blank lines left out.
pub fn readme_setup_commands(readme: &str) -> Vec<String> {
    let block = readme
        .split("## Set-up on a fresh machine")
        .nth(1)
        .and_then(|s| s.split("```sh").nth(1))
        .and_then(|s| s.split("```").next())
        .expect("README: a ```sh block under `## Set-up on a fresh machine`");
    block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}
