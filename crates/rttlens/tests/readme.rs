//! The README's commands, run as a newcomer pastes them (issue 20).
//!
//! `cargo run --release -- lab` stopped working the day the workspace got a
//! second binary, and nothing noticed: CI ran `scripts/test`, never the
//! README's first line. These tests read the README, take the `cargo run`
//! part of its set-up line and of its "To analyse a real capture instead"
//! line, and run them far enough to prove they start the right binary and
//! the right job. Each failure message quotes the README line.
//!
//! Two substitutions, both said in the messages: the profile flag is
//! dropped (cargo picks the binary before it builds, the same way in every
//! profile, and the test build has the dev binary already, so the test does
//! not pay for a second full build), and the set-up line's `lab` becomes
//! `lab --list` (the full lab needs root and ~40 s; `--list` proves the lab
//! command of the rttlens binary answered).

use std::path::PathBuf;
use std::process::Command;

mod common;
use common::readme_setup_commands as setup_commands;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn readme() -> String {
    let p = repo().join("README.md");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// The inline command after "To analyse a real capture instead:".
fn analyse_line(readme: &str) -> String {
    let rest = readme
        .split("To analyse a real capture instead:")
        .nth(1)
        .expect("README: the line `To analyse a real capture instead: `cargo run …``");
    let start = rest
        .find('`')
        .expect("README: the analyse command in backticks")
        + 1;
    let len = rest[start..]
        .find('`')
        .expect("README: the analyse command's closing backtick");
    rest[start..start + len].to_string()
}

/// The `cargo run …` words of a shell line (`a && cargo run … -- x`):
/// cargo's own arguments and the program's, split at `--`.
fn cargo_run(line: &str) -> (Vec<String>, Vec<String>) {
    let part = line
        .split("&&")
        .map(str::trim)
        .find(|p| p.starts_with("cargo run"))
        .unwrap_or_else(|| panic!("README line has no `cargo run` part: {line}"));
    let words: Vec<String> = part.split_whitespace().map(str::to_string).collect();
    let split = words.iter().position(|w| w == "--").unwrap_or(words.len());
    let cargo_args = words[1..split].to_vec(); // from `run` on
    let program_args = words.get(split + 1..).unwrap_or_default().to_vec();
    (cargo_args, program_args)
}

/// Runs `cargo <cargo_args without the profile flag> -- <program_args>`
/// from the repository's root, as the README's reader would; returns
/// stdout, or panics with the README line and what cargo said.
fn run_as_readme(line: &str, cargo_args: &[String], program_args: &[&str]) -> String {
    let cargo_args: Vec<&str> = cargo_args
        .iter()
        .map(String::as_str)
        .filter(|a| *a != "--release" && *a != "-r")
        .collect();
    let out = Command::new(env!("CARGO"))
        .current_dir(repo())
        .args(&cargo_args)
        .arg("--quiet")
        .arg("--")
        .args(program_args)
        .output()
        .unwrap_or_else(|e| panic!("cannot start cargo for README line `{line}`: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the README line `{line}` does not run: `cargo {} -- {}` (profile flag dropped) exited {}:\n{stderr}",
        cargo_args.join(" "),
        program_args.join(" "),
        out.status
    );
    stdout
}

#[test]
fn setup_line_starts_the_lab() {
    let readme = readme();
    let commands = setup_commands(&readme);
    assert_eq!(
        commands.len(),
        2,
        "README's set-up gives exactly two commands: {commands:?}"
    );
    let line = &commands[0];
    let (cargo_args, program_args) = cargo_run(line);
    assert_eq!(
        program_args,
        ["lab"],
        "README line `{line}`: the main job is `rttlens lab` on its built-in default"
    );
    let listed = run_as_readme(line, &cargo_args, &["lab", "--list"]);
    // `lab --list` names every scenario with its expected findings; the
    // default run is all of them, so the list must hold the founding case.
    assert!(
        listed.contains("nagle-handshake") && listed.contains("sndbuf"),
        "README line `{line}` with `lab --list` did not list the lab's scenarios:\n{listed}"
    );
    assert_eq!(
        commands[1], "scripts/test",
        "README command 2 is the test suite"
    );
    let test = repo().join("scripts/test");
    let mode = std::fs::metadata(&test)
        .unwrap_or_else(|e| panic!("README command 2 `scripts/test`: {e}"))
        .permissions();
    assert!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o111 != 0,
        "README command 2 `scripts/test` is not executable"
    );
}

#[test]
fn analyse_line_reads_the_capture() {
    let readme = readme();
    let line = analyse_line(&readme);
    let (cargo_args, program_args) = cargo_run(&line);
    assert!(
        program_args.first().map(String::as_str) == Some("analyze") && program_args.len() == 2,
        "README line `{line}`: `analyze FILE`"
    );
    let capture = &program_args[1];
    assert!(
        repo().join(capture).is_file(),
        "README line `{line}`: {capture} is not there (the shared captures sit beside the repository)"
    );
    let args: Vec<&str> = program_args.iter().map(String::as_str).collect();
    let text = run_as_readme(&line, &cargo_args, &args);
    assert!(
        text.starts_with(&format!("capture {capture}: ")) && text.contains("connection 0"),
        "README line `{line}` did not print the analysis of {capture}:\n{text}"
    );
}
