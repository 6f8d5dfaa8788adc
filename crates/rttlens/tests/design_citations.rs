//! Every citation of the design notes points somewhere (issue 20, item 3).
//!
//! Doc comments, tests, the README and `docs/` cite the engine's rules as
//! `docs/design.md §4 "Think time"`, `docs/design.md §4 (round limits)` or
//! just `docs/design.md §6`. They used to cite a design file that lived
//! outside the repository, so nothing they pointed at could be checked.
//! This test walks `crates/` (without `target/`), `README.md`, `docs/`,
//! `bench/`, `fuzz/` and `scripts/` and checks each citation:
//!
//! - the file is `docs/design.md`: any other spelling of a `design.md`
//!   (an upper-case one, a path elsewhere) cites a file not in the
//!   repository;
//! - `§N` is a `## N.` section of `docs/design.md`;
//! - a quoted name after it (`§4 "Think time"`), or a parenthesised one made
//!   of words only (`§4 (round limits)`; a parenthesis holding code or
//!   punctuation, such as ``(`rwnd`: …)``, is commentary and not read as a
//!   name), is a heading (`###` or `####`) inside section N, compared
//!   without regard to case or line breaks;
//! - further sections joined by `,` or `and` (`§2 "Handshake kinds", §4
//!   "TLS without keys"`) are checked the same way.
//!
//! A citation may run over a line break (the comment markers `//!`, `///`,
//! `//`, `#` and `*` starting the next line are skipped). Each failure names
//! the file, the line and the citation. This file is not scanned: its own
//! examples would cite themselves. It reads the repository only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What is scanned, relative to the repository root.
const ROOTS: &[&str] = &["crates", "README.md", "docs", "bench", "fuzz", "scripts"];

/// Directories never scanned: build output, and generated data (fuzz
/// corpora, the benchmark's captures in `bench/data/`).
const SKIP_DIRS: &[&str] = &["target", ".git", "corpus", "artifacts", "coverage", "data"];

/// Files larger than this are captures or other data, not text to scan.
const MAX_FILE: u64 = 4 << 20;

/// The design notes, as cited.
const DESIGN: &str = "docs/design.md";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Sections of the design notes: number → (title, names of the `###` and
/// `####` headings inside, normalised).
type Sections = BTreeMap<u32, (String, Vec<String>)>;

/// Whitespace runs (line breaks included) as one space, trimmed.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A heading or rule name as compared: collapsed and in lower case.
fn normalise(s: &str) -> String {
    collapse(s).to_lowercase()
}

fn sections(design: &str) -> Sections {
    let mut out = Sections::new();
    let mut current: Option<u32> = None;
    let mut fenced = false;
    for line in design.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if let Some(h) = line.strip_prefix("## ") {
            // `## 4. Engine rules`
            let digits: String = h.chars().take_while(char::is_ascii_digit).collect();
            current = match (digits.parse::<u32>(), h[digits.len()..].strip_prefix('.')) {
                (Ok(n), Some(title)) => {
                    out.insert(n, (title.trim().to_string(), Vec::new()));
                    Some(n)
                }
                _ => None,
            };
        } else if line.starts_with("###") {
            let name = line.trim_start_matches('#');
            if let Some((_, names)) = current.and_then(|n| out.get_mut(&n)) {
                names.push(normalise(name));
            }
        }
    }
    out
}

/// Every file under the roots that is scanned.
fn files() -> Vec<PathBuf> {
    fn walk(p: &Path, out: &mut Vec<PathBuf>) {
        if p.is_dir() {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if SKIP_DIRS.contains(&name) {
                return;
            }
            let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
                .map(|e| e.expect("directory entry").path())
                .collect();
            entries.sort();
            for e in entries {
                walk(&e, out);
            }
        } else if p.is_file() {
            out.push(p.to_path_buf());
        }
    }
    let mut out = Vec::new();
    for root in ROOTS {
        let p = repo().join(root);
        assert!(p.exists(), "{} is missing", p.display());
        walk(&p, &mut out);
    }
    let me = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/design_citations.rs")
        .canonicalize()
        .expect("this test's own source");
    out.retain(|p| p.canonicalize().is_ok_and(|c| c != me));
    out
}

/// A text line as the continuation of a citation: without leading blanks
/// and a comment marker.
fn continuation(line: &str) -> &str {
    let t = line.trim_start();
    for marker in ["//!", "///", "//", "#", "*"] {
        if let Some(rest) = t.strip_prefix(marker) {
            return rest.trim_start();
        }
    }
    t
}

/// One `§N` of a citation, with the rule name after it, if any.
#[derive(Debug)]
struct Cited {
    section: Option<u32>,
    name: Option<String>,
}

/// Reads the citation that follows a `design.md` (from `rest`, the text
/// after it with the next lines joined): its sections and rule names, and
/// how many bytes of `rest` it took.
fn parse(rest: &str) -> (Vec<Cited>, usize) {
    let mut cited = Vec::new();
    let mut pos = 0;
    loop {
        let s = &rest[pos..];
        let t = s.trim_start();
        let Some(after) = t.strip_prefix('§') else {
            break;
        };
        let after_ws = after.trim_start();
        let digits: String = after_ws.chars().take_while(char::is_ascii_digit).collect();
        let mut end = pos + (s.len() - after_ws.len()) + digits.len();
        let section = digits.parse::<u32>().ok();
        // a name: "quoted", or (words only)
        let tail = &rest[end..];
        let tail_t = tail.trim_start();
        let skipped = tail.len() - tail_t.len();
        let mut name = None;
        for (open, close) in [('"', '"'), ('“', '”'), ('(', ')')] {
            let Some(inner) = tail_t.strip_prefix(open) else {
                continue;
            };
            let Some(stop) = inner.find(close) else {
                break;
            };
            let text = &inner[..stop];
            let words = text
                .chars()
                .all(|c| c.is_alphanumeric() || c == ' ' || c == '-');
            if open != '(' || (words && !text.trim().is_empty()) {
                name = Some(normalise(text));
                end += skipped + open.len_utf8() + stop + close.len_utf8();
            }
            break;
        }
        cited.push(Cited { section, name });
        pos = end;
        if section.is_none() {
            break;
        }
        // more sections of the same notes: `, §4 …`, ` and §4 …`
        let more = rest[pos..].trim_start();
        let more = more.strip_prefix(',').map(str::trim_start).unwrap_or(more);
        let more = more.strip_prefix("and ").unwrap_or(more).trim_start();
        if !more.starts_with('§') {
            break;
        }
        pos = rest.len() - more.len();
    }
    (cited, pos)
}

/// Problems with the citations in `text` (`rel` names the file).
fn check_text(rel: &str, text: &str, sections: &Sections, found: &mut usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut problems = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let lower = line.to_ascii_lowercase();
        let mut from = 0;
        while let Some(k) = lower[from..].find("design.md") {
            let at = from + k;
            from = at + "design.md".len();
            let start = if line[..at].ends_with("docs/") {
                at - "docs/".len()
            } else {
                at
            };
            let token = &line[start..from];
            // the citation may go on over the next lines
            let mut rest = line[from..].to_string();
            for next in lines.iter().skip(i + 1).take(2) {
                rest.push(' ');
                rest.push_str(continuation(next));
            }
            let (cited, used) = parse(&rest);
            let shown = collapse(&format!("{token}{}", &rest[..used]));
            let here = format!("{rel}:{}: `{shown}`", i + 1);
            *found += 1;
            if token != DESIGN {
                problems.push(format!(
                    "{here} cites a file not in the repository (the design notes are {DESIGN})"
                ));
                continue;
            }
            for c in cited {
                let Some(n) = c.section else {
                    problems.push(format!("{here}: `§` without a section number"));
                    continue;
                };
                let Some((title, names)) = sections.get(&n) else {
                    problems.push(format!("{here}: {DESIGN} has no section `## {n}.`"));
                    continue;
                };
                if let Some(name) = c.name {
                    if !names.contains(&name) {
                        problems.push(format!(
                            "{here}: §{n} ({title}) has no rule \"{name}\" (its headings: {})",
                            names.join(", ")
                        ));
                    }
                }
            }
        }
    }
    problems
}

#[test]
fn every_design_citation_resolves() {
    let design_path = repo().join(DESIGN);
    let design = std::fs::read_to_string(&design_path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", design_path.display()));
    let sections = sections(&design);
    assert!(!sections.is_empty(), "{DESIGN} has no `## N.` sections");
    let mut problems = Vec::new();
    let mut found = 0;
    let mut scanned = 0;
    for path in files() {
        if !std::fs::metadata(&path).is_ok_and(|m| m.len() <= MAX_FILE) {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue; // binary: a capture, an image
        };
        scanned += 1;
        let rel = path
            .strip_prefix(repo())
            .unwrap_or(&path)
            .display()
            .to_string();
        problems.extend(check_text(&rel, &text, &sections, &mut found));
    }
    // the walk must have reached the sources: the engine's rules are cited
    // from dozens of places
    assert!(
        scanned > 100 && found >= 30,
        "only {found} citations in {scanned} files: is the walk looking in the right place ({})?",
        repo().display()
    );
    assert!(
        problems.is_empty(),
        "{} of {found} citations of the design notes do not resolve:\n{}",
        problems.len(),
        problems.join("\n")
    );
    println!("{found} citations of {DESIGN} in {scanned} files: all resolve");
}

/// The section numbers are what citations rely on: they stay as they are.
#[test]
fn design_sections_keep_their_numbers() {
    let design = std::fs::read_to_string(repo().join(DESIGN)).expect("read the design notes");
    let got: Vec<(u32, String)> = sections(&design)
        .into_iter()
        .map(|(n, (title, _))| (n, title))
        .collect();
    let want = [
        "The question it answers",
        "Vocabulary",
        "Pipeline and layout",
        "Engine rules",
        "The finding contract",
        "Probe, lab, bench",
        "Dependencies",
        "Budgets",
        "Bad input",
    ];
    let want: Vec<(u32, String)> = (1..).zip(want.iter().map(|t| t.to_string())).collect();
    assert_eq!(got, want, "{DESIGN}: the `## N. Title` sections");
}

/// The checker itself: what passes and what fails.
#[test]
fn the_checker_catches_bad_citations() {
    let design = "## 2. Vocabulary\n### Handshake kinds\n## 4. Engine rules\n\
                  ### Rounds\n#### Round limits\n### Think time\n";
    let sections = sections(design);
    let check = |text: &str| {
        let mut n = 0;
        check_text("x.rs", text, &sections, &mut n)
    };
    for good in [
        "/// see docs/design.md §4 \"Think time\".",
        "//! (docs/design.md §4\n//! \"Think\n//! time\")",
        "    references: vec![\"docs/design.md §4 (round limits)\"],",
        "(docs/design.md §4 (`rwnd`: flight ≥ rwnd − 2 MSS))",
        "//! (docs/design.md §2\n//! \"Handshake kinds\", §4 \"Rounds\")",
        "docs/design.md §2 and §4 (think time)",
        "the whole of docs/design.md",
    ] {
        assert_eq!(check(good), Vec::<String>::new(), "{good}");
    }
    for (bad, why) in [
        (
            "/// (DESIGN.md §4 \"Think time\")",
            "cites a file not in the repository",
        ),
        (
            "see ../shared/design.md §6",
            "cites a file not in the repository",
        ),
        ("/// (docs/design.md §12)", "has no section `## 12.`"),
        (
            "/// docs/design.md §4 \"Thinking time\"",
            "has no rule \"thinking time\"",
        ),
        (
            "/// docs/design.md §2 (round limits)",
            "has no rule \"round limits\"",
        ),
        (
            "/// docs/design.md §2 \"Handshake kinds\", §4 \"Loss\"",
            "has no rule \"loss\"",
        ),
        ("/// docs/design.md §N", "without a section number"),
    ] {
        let got = check(bad);
        assert!(
            got.len() == 1 && got[0].starts_with("x.rs:1: `") && got[0].contains(why),
            "{bad}: {got:?}"
        );
    }
}
