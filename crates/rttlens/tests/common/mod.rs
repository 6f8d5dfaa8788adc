//! Shared by the command-line tests: the binary, the real captures and a
// each test file uses part of these helpers
#![allow(dead_code)]
//! scratch directory per test process.

use std::path::PathBuf;
use std::process::Command;

/// The `rttlens` binary under test.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rttlens"))
}

/// A capture of `../shared/captures/itts` (fails naming it when missing).
pub fn capture(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/captures/itts")
        .join(name);
    assert!(
        p.exists(),
        "{} is missing: the tests need ../shared/captures",
        p.display()
    );
    p
}

/// `name` in this test process's scratch directory.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rttlens-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir.join(name)
}
