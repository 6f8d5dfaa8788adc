//! One list of Debian packages (`scripts/packages`), read by `scripts/deps`:
//! the README's two set-up commands and `.ci/run` must install through it,
//! and every program the code or the tests look for must be on it, so the
//! next new dependency cannot make the README's commands fail on a fresh
//! machine while CI stays green (issue 8).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(rel: &str) -> String {
    let p = repo().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// `scripts/packages`: program → (package, jobs).
fn package_list() -> BTreeMap<String, (String, Vec<String>)> {
    let mut list = BTreeMap::new();
    for line in read("scripts/packages").lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(program), Some(package)) = (words.next(), words.next()) else {
            panic!("scripts/packages: `{line}` is not `program package job…`");
        };
        let jobs: Vec<String> = words.map(str::to_string).collect();
        assert!(
            !jobs.is_empty() && jobs.iter().all(|j| j == "lab" || j == "test"),
            "scripts/packages: `{line}` must name its jobs (lab, test)"
        );
        let old = list.insert(program.to_string(), (package.to_string(), jobs));
        assert!(old.is_none(), "scripts/packages names `{program}` twice");
    }
    assert!(!list.is_empty(), "scripts/packages lists nothing");
    list
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The two string literals after `needle` (`require_command("nft",
/// "nftables")`), when both are plain literals.
fn literal_pairs<'a>(src: &'a str, needle: &str) -> Vec<(&'a str, &'a str)> {
    fn literal(s: &str) -> Option<(&str, &str)> {
        let s = s.trim_start().strip_prefix('"')?;
        let end = s.find('"')?;
        Some((&s[..end], &s[end + 1..]))
    }
    let mut pairs = Vec::new();
    for (at, _) in src.match_indices(needle) {
        let rest = &src[at + needle.len()..];
        let Some((program, rest)) = literal(rest) else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix(',') else {
            continue;
        };
        if let Some((package, _)) = literal(rest) {
            pairs.push((program, package));
        }
    }
    pairs
}

#[test]
fn every_program_the_code_and_tests_look_for_is_in_the_package_list() {
    let list = package_list();
    let mut files = Vec::new();
    rust_files(&repo().join("crates"), &mut files);
    let mut checked = 0;
    let mut wrong = Vec::new();
    for f in &files {
        let src = std::fs::read_to_string(f).expect("source");
        // the ways the code and the tests ask for a program and name its
        // package: lab::require_command, the tests' require/get helpers
        for needle in ["require_command(", "require(", "get("] {
            for (program, package) in literal_pairs(&src, needle) {
                checked += 1;
                match list.get(program) {
                    Some((p, jobs)) if p == package && jobs.iter().any(|j| j == "test") => {}
                    Some((p, _)) if p != package => wrong.push(format!(
                        "{}: `{program}` from `{package}`, but scripts/packages says `{p}`",
                        f.display()
                    )),
                    _ => wrong.push(format!(
                        "{}: `{program}` (package `{package}`) is not in scripts/packages for `test`",
                        f.display()
                    )),
                }
            }
        }
    }
    assert!(
        checked >= 10,
        "found only {checked} program look-ups in crates/: the scan is broken"
    );
    assert!(
        wrong.is_empty(),
        "package list drift:\n{}",
        wrong.join("\n")
    );
}

#[cfg(feature = "lab")]
#[test]
fn the_lab_s_programs_are_what_scripts_deps_lab_installs() {
    let list = package_list();
    for (program, package) in rttlens_lab::scenario::PROGRAMS
        .iter()
        .chain([&("ip", "iproute2")])
    {
        let (p, jobs) = list
            .get(*program)
            .unwrap_or_else(|| panic!("`rttlens lab` runs `{program}`, not in scripts/packages"));
        assert_eq!(p, package, "`{program}`'s package");
        assert!(
            jobs.iter().any(|j| j == "lab"),
            "`rttlens lab` runs `{program}` but `scripts/deps lab` does not install {package}"
        );
    }
    // the test job is a superset: scripts/test also runs the lab
    for (program, (_, jobs)) in &list {
        assert!(
            !jobs.iter().any(|j| j == "lab") || jobs.iter().any(|j| j == "test"),
            "`{program}` is needed by the lab, so by the tests too"
        );
    }
}

#[test]
fn readme_and_ci_install_through_the_one_list() {
    let readme = read("README.md");
    let commands = common::readme_setup_commands(&readme);
    let setup = commands.join("\n");
    assert_eq!(
        commands.len(),
        2,
        "README's set-up gives exactly two commands: {commands:?}"
    );
    assert!(
        commands[0].starts_with("scripts/deps lab") && commands[0].contains("-- lab"),
        "README command 1 installs through scripts/deps and runs the lab: {}",
        commands[0]
    );
    assert_eq!(commands[1], "scripts/test", "README command 2");

    let ci = read(".ci/run");
    let test = read("scripts/test");
    for (name, text) in [
        ("README set-up", &setup),
        (".ci/run", &ci),
        ("scripts/test", &test),
    ] {
        assert!(
            !text.contains("apt-get install"),
            "{name} installs packages itself: install through scripts/deps (one list)"
        );
    }
    assert!(
        ci.lines().any(|l| l.trim() == "scripts/test"),
        ".ci/run must call the README's test command"
    );
    assert!(
        test.lines().any(|l| l.trim() == "scripts/deps test"),
        "scripts/test must install the test packages before it builds"
    );
    assert!(
        test.contains("--no-fail-fast"),
        "scripts/test runs every test binary even when one fails"
    );
}

#[test]
fn scripts_deps_names_what_is_missing_without_installing() {
    // a PATH holding only the shell's own tools: every listed program is
    // missing (an installed one in /usr/sbin would still count as present,
    // so compare against what `command -v` cannot see)
    let dir = std::env::temp_dir().join(format!("rttlens-deps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    let out = std::process::Command::new("/bin/bash")
        .arg(repo().join("scripts/deps"))
        .args(["--check", "test"])
        .env("PATH", &dir)
        .output()
        .expect("run scripts/deps");
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // tshark, curl and openssl live in /usr/bin, never /usr/sbin: missing here
    assert_eq!(out.status.code(), Some(1), "exit 1 when missing: {stderr}");
    for pkg in ["tshark", "curl", "openssl"] {
        assert!(
            stderr.split_whitespace().any(|w| w == pkg),
            "names {pkg} as missing: {stderr}"
        );
    }
    assert!(stderr.contains("apt-get install -y"), "says how: {stderr}");
}
