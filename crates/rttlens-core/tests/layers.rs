//! The crate's imports follow its pipeline (docs/design.md "Architecture"):
//! every top-level module belongs to a layer and imports only from layers
//! before it, and no two files import each other.
//!
//! Read from the source text (`crate::` and `super::` paths outside
//! comments), so an upward import fails here, in `scripts/test`, and in CI.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, in pipeline order. A module may import from its own layer
/// and the layers before it.
const LAYERS: &[&[&str]] = &[
    &["base"],
    &["capture"],
    &["wire"],
    &["filter"],
    &["flow"],
    &["proto"],
    &["quic"],
    &["analysis"],
    &["detect"],
    &["population"],
    &["model"],
    &["pipeline"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Module path of a source file: `src/flow/half.rs` → `["flow", "half"]`,
/// `src/flow/mod.rs` → `["flow"]`, `src/pipeline/parallel.rs` →
/// `["pipeline", "parallel"]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module paths a file's code names: `crate::a::b::…` and
/// `super::…` resolved against the file's own path. Comment lines and
/// trailing comments are skipped (docs may mention any module).
fn imported_paths(text: &str, own: &[String], is_mod_file: bool) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        for (start, _) in code.match_indices("crate::") {
            // not `rttlens_core::` or `some_crate::`
            let before = code[..start].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            out.push(segments(&code[start + "crate::".len()..]));
        }
        for (start, _) in code.match_indices("super::") {
            let before = code[..start].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            // `super` of a file `a/b.rs` is `a`; of `a/b/mod.rs` it is `a` too
            let mut base: Vec<String> = own.to_vec();
            let mut rest = &code[start..];
            if !is_mod_file || base.len() > 1 {
                base.pop();
            }
            rest = &rest["super::".len()..];
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            base.extend(segments(rest));
            out.push(base);
        }
    }
    out
}

/// Leading lower-case path segments (`flow::rounds::Limit` → `flow`, `rounds`).
fn segments(s: &str) -> Vec<String> {
    let mut v = Vec::new();
    for seg in s.split("::") {
        let ident: String = seg
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if ident.is_empty() || !ident.starts_with(|c: char| c.is_lowercase()) {
            break;
        }
        v.push(ident.clone());
        if ident.len() != seg.len() {
            break;
        }
    }
    v
}

struct Crate {
    /// Module path → the module paths of the files it imports from.
    imports: BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
}

fn read_crate(src: &Path) -> Crate {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(src, f)).collect();
    let mut imports = BTreeMap::new();
    for f in &files {
        let own = module_path(src, f);
        let is_mod = f.file_name().is_some_and(|n| n == "mod.rs");
        let text = std::fs::read_to_string(f).unwrap();
        let mut to = BTreeSet::new();
        for mut p in imported_paths(&text, &own, is_mod) {
            // the longest prefix that is a file of the crate
            while !p.is_empty() && !modules.contains(&p) {
                p.pop();
            }
            if !p.is_empty() && p != own {
                to.insert(p);
            }
        }
        imports.insert(own, to);
    }
    Crate { imports }
}

/// Every import that goes up the pipeline: `(file, imported module)`.
fn upward(c: &Crate) -> Vec<String> {
    let mut bad = Vec::new();
    for (from, tos) in &c.imports {
        let Some(top) = from.first() else { continue };
        let Some(l_from) = layer_of(top) else {
            bad.push(format!("{}: module not in any layer", from.join("::")));
            continue;
        };
        for to in tos {
            match layer_of(&to[0]) {
                Some(l_to) if l_to <= l_from => {}
                Some(_) => bad.push(format!(
                    "{} imports {} (a later layer)",
                    from.join("::"),
                    to.join("::")
                )),
                None => bad.push(format!(
                    "{} imports {}: not in any layer",
                    from.join("::"),
                    to.join("::")
                )),
            }
        }
    }
    bad
}

/// Pairs of files that import each other (a parent module file and its own
/// child are exempt: `mod.rs` declaring a child is not an import).
fn circles(c: &Crate) -> Vec<String> {
    let mut bad = Vec::new();
    for (a, tos) in &c.imports {
        for b in tos {
            if a < b
                && c.imports.get(b).is_some_and(|t| t.contains(a))
                && !(b.starts_with(a) || a.starts_with(b))
            {
                bad.push(format!("{} <-> {}", a.join("::"), b.join("::")));
            }
        }
    }
    bad
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn imports_follow_the_pipeline() {
    let c = read_crate(&src_dir());
    assert!(c.imports.len() > 40, "read only {} files", c.imports.len());
    let edges: usize = c.imports.values().map(|t| t.len()).sum();
    assert!(edges > 100, "read only {edges} imports");
    let bad = upward(&c);
    assert!(
        bad.is_empty(),
        "imports against the pipeline ({}):\n{}",
        LAYERS
            .iter()
            .map(|l| l.join("|"))
            .collect::<Vec<_>>()
            .join(" -> "),
        bad.join("\n")
    );
}

#[test]
fn no_two_files_import_each_other() {
    let c = read_crate(&src_dir());
    let bad = circles(&c);
    assert!(bad.is_empty(), "import circles:\n{}", bad.join("\n"));
}

#[test]
fn the_check_sees_an_upward_import_and_a_circle() {
    // the same reading on a made-up crate: flow naming analysis is upward,
    // and two capture files naming each other are a circle
    let dir = std::env::temp_dir().join(format!("rttlens-layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("flow")).unwrap();
    std::fs::create_dir_all(dir.join("capture")).unwrap();
    std::fs::create_dir_all(dir.join("analysis")).unwrap();
    let put = |p: &str, s: &str| std::fs::write(dir.join(p), s).unwrap();
    put(
        "lib.rs",
        "pub mod flow;\npub mod capture;\npub mod analysis;\n",
    );
    put(
        "flow/mod.rs",
        "// crate::analysis in a comment is fine\nuse crate::analysis::rtt::Estimate;\n",
    );
    put("analysis/mod.rs", "pub mod rtt;\n");
    put("analysis/rtt.rs", "use crate::flow::Conn;\n");
    put("capture/mod.rs", "mod a;\nmod b;\n");
    put("capture/a.rs", "use super::b::B;\n");
    put("capture/b.rs", "use super::a::A;\n");
    let c = read_crate(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        upward(&c),
        vec!["flow imports analysis::rtt (a later layer)".to_string()]
    );
    assert_eq!(
        circles(&c),
        vec![
            "analysis::rtt <-> flow".to_string(),
            "capture::a <-> capture::b".to_string()
        ]
    );
}
