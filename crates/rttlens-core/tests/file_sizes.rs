//! Files stay under 700 lines (docs/design.md §3): one that is longer says
//! why on its first line (`// Over 700 lines: …` or `//! Over 700 lines:
//! …`), so the next engineer knows it is on purpose. Every crate of the
//! workspace (`crates/*/src`), read as text.

use std::path::{Path, PathBuf};

/// The most lines a file has without a reason.
const MAX_LINES: usize = 700;

/// Whether `text` (a file's contents) is too long for want of a reason.
fn unexplained(text: &str) -> Option<usize> {
    let lines = text.lines().count();
    let first = text.lines().next().unwrap_or("");
    let reason = ["// Over 700 lines:", "//! Over 700 lines:"]
        .iter()
        .any(|p| first.starts_with(p));
    (lines > MAX_LINES && !reason).then_some(lines)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn long_files_say_why() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for c in std::fs::read_dir(&crates).expect("crates") {
        let src = c.expect("entry").path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    assert!(
        files.len() > 200,
        "the workspace's sources: {}",
        files.len()
    );
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).expect("read");
            unexplained(&text).map(|n| format!("{}: {n} lines", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines without a first-line reason (split the file by what it holds, or say why):\n  {}",
        long.join("\n  ")
    );
}

#[test]
fn the_check_itself() {
    let long = "fn f() {}\n".repeat(MAX_LINES + 1);
    assert_eq!(unexplained(&long), Some(MAX_LINES + 1));
    assert_eq!(
        unexplained(&format!("// Over 700 lines: a table.\n{long}")),
        None
    );
    assert_eq!(
        unexplained(&format!("//! Over 700 lines: a table.\n{long}")),
        None
    );
    // a reason further down does not count
    assert_eq!(
        unexplained(&format!("//! A module.\n// Over 700 lines: late.\n{long}")),
        Some(MAX_LINES + 3)
    );
    assert_eq!(unexplained(&"x\n".repeat(MAX_LINES)), None);
}
