//! No circle anywhere, and the engine's layers (docs/design.md §3), read
//! from the source text of every crate of the
//! workspace (`crates/*/src`):
//!
//! - **layers** (`rttlens-core` only): every top-level module belongs to a
//!   layer and its files import only from their own layer and the layers
//!   before it;
//! - **detectors apart** (`rttlens-core`'s `detect`): a detector file
//!   (`detect/<x>.rs`, named in the registry of `detect/mod.rs` by its
//!   `<x>::detect`) imports no other detector file; what detectors share
//!   is in `analysis` or in a shared module of `detect`, listed in
//!   `DETECT_SHARED`, and every other file of `detect` is a detector;
//! - **the record's one door** (every crate but `rttlens-core`): outside
//!   the engine, the record's types (findings, phases, request rows, the
//!   population view, traces) are named through `rttlens_core::model`,
//!   never through the module that fills them; the other engine modules a
//!   consumer may name are listed in `DOOR`;
//! - **no circle** (every crate): within each module, its submodules (each
//!   with everything below it) import each other without a circle, of any
//!   length. So no circle among a crate's files either, with one exception
//!   by design: a module's own file (`mod.rs`, `lib.rs`, `a.rs` beside
//!   `a/`) composes its submodules (declares, re-exports and calls them) and
//!   they may use its items, so a circle that passes through that file and
//!   stays inside its module is allowed. Any other circle among files shows
//!   up as a circle of sibling modules at the level of the files' nearest
//!   common module, and is reported with one file import per step.
//!
//! Crates cannot import each other in a circle (cargo refuses), so the
//! graph is per crate. Binaries under `src/bin/` are one-file crates of
//! their own and are left out.
//!
//! **How the text is read** (std only, no parser crate): comments, string,
//! byte-string, raw-string and char literals are blanked first (so docs and
//! messages may name any module), then the tokens are scanned for
//!
//! - `use` declarations, whole trees: groups nested to any depth
//!   (`use crate::{a::{X, Y}, b::Z};`), `self`, `super::super::`, `as`,
//!   globs, over any number of lines, `pub` or not (a re-export is an
//!   import of the file that re-exports);
//! - paths in code (`crate::a::f()`, `super::b::T`, `self::c::K`,
//!   `$crate::…` in macros), and paths that start with a name a `use` of
//!   the file bound (`use crate::flow; … flow::Conn`) or with a child
//!   module (`mod x; … x::f()`);
//! - inline modules (`mod tests { use super::*; }`): `self`/`super` inside
//!   them are resolved against the inline module, so a test module naming
//!   its own file is no import.
//!
//! **Which file a path imports:** the file of the longest prefix of the
//! (absolute) path that is a module with a file of its own; when the next
//! segment is a name that file binds with a `use` (a re-export, or a
//! private `use` its children reach through `super::`), the path is
//! followed through that `use` to the file that declares the item. So
//! `crate::builtin::HandshakeWrites`, re-exported by `builtin.rs` from
//! `flight.rs`, imports `flight.rs`. A glob re-export (`pub use x::*`;
//! there are none today) counts as importing the re-exporting file and
//! every file it globs.
//!
//! Not seen (documented limits): paths written inside string literals
//! (`#[serde(with = "crate::x")]`), paths built by macros from fragments,
//! and `#[path]` attributes (none are used).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// The layers of `rttlens-core`, in pipeline order. A module may import
/// from its own layer and the layers before it.
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

/// The modules of `rttlens-core`'s `detect` that are no detector: what
/// the detectors share (the finding type, the window helpers) and the
/// engine's self-check. The registry is `detect/mod.rs` itself.
const DETECT_SHARED: &[&str] = &["finding", "self_check", "window"];

/// Circles known and accepted for now, as `circles()` names them
/// (`crate: under module: a, b, c`, the members sorted). The test fails on
/// any other circle, and on a listed one that is gone (remove it here).
const KNOWN_CIRCLES: &[&str] = &[];

/// What a crate other than `rttlens-core` may name of it: the record
/// (`model`), how to run the engine (`pipeline`, `capture`, `filter`), the
/// vocabulary (`base`, `wire`), the detector registry (`detect`: its ids
/// and lists, never a type: the finding is `model::finding`), and HTTP/1.1's
/// response parser (`proto::http`, the bench's client reads with it).
const DOOR: &[&[&str]] = &[
    &["model"],
    &["pipeline"],
    &["capture"],
    &["filter"],
    &["base"],
    &["wire"],
    &["detect"],
    &["proto", "http"],
];

type ModPath = Vec<String>;

fn show(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
}

// ---------------------------------------------------------------- text --

/// The source with comments and string/char literals replaced by spaces
/// (newlines kept, so line numbers hold). Lifetimes and loop labels are
/// blanked too (`'static` is no item).
fn strip(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    // a quoted string from the `"` at `i`, escapes honoured
    let string = |out: &mut String, i: &mut usize| {
        blank(out, c[*i]);
        *i += 1;
        while *i < c.len() {
            let ch = c[*i];
            if ch == '\\' && *i + 1 < c.len() {
                blank(out, ch);
                blank(out, c[*i + 1]);
                *i += 2;
                continue;
            }
            blank(out, ch);
            *i += 1;
            if ch == '"' {
                break;
            }
        }
    };
    // a raw string from the `#…#"` or `"` at `i`
    let raw = |out: &mut String, i: &mut usize| {
        let mut hashes = 0;
        while c[*i] == '#' {
            hashes += 1;
            blank(out, '#');
            *i += 1;
        }
        blank(out, '"');
        *i += 1;
        while *i < c.len() {
            if c[*i] == '"' && (1..=hashes).all(|k| c.get(*i + k) == Some(&'#')) {
                for _ in 0..=hashes {
                    blank(out, ' ');
                }
                *i += 1 + hashes;
                break;
            }
            blank(out, c[*i]);
            *i += 1;
        }
    };
    // a char literal or a lifetime from the `'` at `i`
    let quote = |out: &mut String, i: &mut usize| {
        if c.get(*i + 1) == Some(&'\\') {
            // escaped char: '\n', '\'', '\u{1F600}'
            blank(out, '\'');
            blank(out, '\\');
            *i += 2;
            let mut first = true;
            while *i < c.len() && (first || c[*i] != '\'') {
                blank(out, c[*i]);
                *i += 1;
                first = false;
            }
            if *i < c.len() {
                blank(out, '\'');
                *i += 1;
            }
        } else if c.get(*i + 2) == Some(&'\'') {
            for _ in 0..3 {
                blank(out, c[*i]);
                *i += 1;
            }
        } else {
            // lifetime or label
            blank(out, '\'');
            *i += 1;
            while *i < c.len() && (c[*i].is_alphanumeric() || c[*i] == '_') {
                blank(out, c[*i]);
                *i += 1;
            }
        }
    };
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let at = c.get(i).copied();
            let raw_prefix = matches!(word.as_str(), "r" | "br" | "cr");
            if raw_prefix && (at == Some('"') || at == Some('#')) {
                let mut j = i;
                while c.get(j) == Some(&'#') {
                    j += 1;
                }
                if c.get(j) == Some(&'"') {
                    word.chars().for_each(|w| blank(&mut out, w));
                    raw(&mut out, &mut i);
                    continue;
                }
                if word == "r" && at == Some('#') {
                    // raw identifier `r#type`: keep the name
                    out.push_str("  ");
                    i += 1;
                    continue;
                }
            }
            if matches!(word.as_str(), "b" | "c") && at == Some('"') {
                blank(&mut out, ' ');
                string(&mut out, &mut i);
                continue;
            }
            if word == "b" && at == Some('\'') {
                blank(&mut out, ' ');
                quote(&mut out, &mut i);
                continue;
            }
            out.push_str(&word);
        } else if ch == '"' {
            string(&mut out, &mut i);
        } else if ch == '\'' {
            quote(&mut out, &mut i);
        } else {
            out.push(ch);
            i += 1;
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
struct Tok {
    text: String,
    line: usize,
}

/// Identifiers (and `$crate`), `::`, and single punctuation characters.
fn tokens(stripped: &str) -> Vec<Tok> {
    let c: Vec<char> = stripped.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphanumeric() || ch == '_' || (ch == '$' && c.get(i + 1) == Some(&'c')) {
            let start = i;
            i += 1;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Tok {
                text: c[start..i].iter().collect(),
                line,
            });
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push(Tok {
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            out.push(Tok {
                text: ch.to_string(),
                line,
            });
            i += 1;
        }
    }
    out
}

fn is_ident(t: &str) -> bool {
    t.starts_with(|c: char| c.is_alphabetic() || c == '_' || c == '$')
}

// ------------------------------------------------------------- one file --

/// One leaf of a `use` tree.
#[derive(Debug, Clone)]
struct UseLeaf {
    /// The module the `use` is in (the file's, or an inline module's).
    scope: ModPath,
    /// As written: `["crate", "a", "X"]`, `["super", "b"]`, `["x", "Y"]`.
    path: Vec<String>,
    /// The name it binds (`None`: a glob or `as _`).
    name: Option<String>,
    glob: bool,
    is_pub: bool,
    line: usize,
}

/// A path in code: `crate::a::f`, `super::b::T`, `flow::Conn`.
#[derive(Debug, Clone)]
struct CodePath {
    scope: ModPath,
    path: Vec<String>,
    line: usize,
}

#[derive(Debug, Default)]
struct FileInfo {
    /// Path of the file inside `src/`, for messages.
    rel: String,
    uses: Vec<UseLeaf>,
    paths: Vec<CodePath>,
    /// Inline modules (`mod tests { … }`), absolute.
    inline: BTreeSet<ModPath>,
}

/// Parses a use tree at `toks[*i]` with the segments before it in
/// `prefix`; pushes `(path, bound name, glob)` for each leaf.
fn use_tree(
    toks: &[Tok],
    i: &mut usize,
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>, bool)>,
) {
    let at = |i: usize| toks.get(i).map(|t| t.text.as_str()).unwrap_or(";");
    let mut segs = prefix;
    if at(*i) == "::" {
        // `use ::ext::X` (an extern crate) or `{::a}`
        *i += 1;
        if segs.is_empty() {
            segs.push("::".into());
        }
    }
    loop {
        let t = at(*i);
        if t == "{" {
            *i += 1;
            loop {
                match at(*i) {
                    "}" => {
                        *i += 1;
                        return;
                    }
                    ";" => return, // malformed: stop at the end
                    "," => *i += 1,
                    _ => {
                        let before = *i;
                        use_tree(toks, i, segs.clone(), out);
                        if *i == before {
                            *i += 1; // never stall on something odd
                        }
                    }
                }
            }
        } else if t == "*" {
            *i += 1;
            out.push((segs, None, true));
            return;
        } else if is_ident(t) {
            segs.push(t.to_string());
            *i += 1;
            if at(*i) == "::" {
                *i += 1;
                continue;
            }
            let mut name = segs.last().cloned();
            if t == "self" {
                segs.pop();
                name = segs.last().cloned();
            }
            if at(*i) == "as" {
                *i += 1;
                name = Some(at(*i).to_string()).filter(|n| n != "_");
                *i += 1;
            }
            out.push((segs, name, false));
            return;
        } else {
            return;
        }
    }
}

/// Reads one file whose module is `own`.
fn read_file(rel: &str, own: &ModPath, text: &str) -> FileInfo {
    let toks = tokens(&strip(text));
    let at = |i: usize| toks.get(i).map(|t| t.text.as_str()).unwrap_or("");
    let mut info = FileInfo {
        rel: rel.to_string(),
        ..FileInfo::default()
    };
    // inline modules open: (brace depth outside it, its path)
    let mut stack: Vec<(usize, ModPath)> = Vec::new();
    let mut depth = 0usize;
    let mut pending_pub = false;
    let mut i = 0;
    while i < toks.len() {
        let scope = stack.last().map(|s| s.1.clone()).unwrap_or(own.clone());
        let t = at(i);
        match t {
            "{" => {
                depth += 1;
                i += 1;
            }
            "}" => {
                depth = depth.saturating_sub(1);
                if stack.last().is_some_and(|s| s.0 == depth) {
                    stack.pop();
                }
                i += 1;
            }
            "mod" if is_ident(at(i + 1)) && at(i + 2) == "{" => {
                let mut m = scope.clone();
                m.push(at(i + 1).to_string());
                info.inline.insert(m.clone());
                stack.push((depth, m));
                i += 2; // the `{` is counted next
            }
            "pub" => {
                pending_pub = true;
                i += 1;
                if at(i) == "(" {
                    // `pub(crate)`, `pub(in crate::a)`: no import
                    while i < toks.len() && at(i) != ")" {
                        i += 1;
                    }
                    i += 1;
                }
                continue;
            }
            "use" if at(i + 1) != "<" => {
                let line = toks[i].line;
                i += 1;
                let mut leaves = Vec::new();
                use_tree(&toks, &mut i, Vec::new(), &mut leaves);
                if at(i) == ";" {
                    i += 1;
                }
                for (path, name, glob) in leaves {
                    info.uses.push(UseLeaf {
                        scope: scope.clone(),
                        path,
                        name,
                        glob,
                        is_pub: pending_pub,
                        line,
                    });
                }
            }
            _ if is_ident(t) && at(i + 1) == "::" && (i == 0 || at(i - 1) != "::") => {
                let line = toks[i].line;
                let mut path = vec![t.to_string()];
                i += 1;
                while at(i) == "::" && is_ident(at(i + 1)) {
                    path.push(at(i + 1).to_string());
                    i += 2;
                }
                info.paths.push(CodePath { scope, path, line });
            }
            _ => i += 1,
        }
        pending_pub = false;
    }
    info
}

// ------------------------------------------------------------ one crate --

/// A file import: `from` names `what` (on `line`), which is in `to`.
#[derive(Debug, Clone)]
struct Edge {
    from: ModPath,
    to: ModPath,
    line: usize,
    what: String,
}

struct CrateGraph {
    name: String,
    /// Module path → its file.
    files: BTreeMap<ModPath, FileInfo>,
    edges: Vec<Edge>,
}

/// Module path of a file of `src/`: `flow/half.rs` → `flow::half`,
/// `flow/mod.rs` → `flow`, `pipeline/parallel.rs` → `pipeline::parallel`,
/// `lib.rs` and `main.rs` → the crate root.
fn module_path(rel: &str) -> ModPath {
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    let root = parts.is_empty() && (stem == "lib" || stem == "main");
    if stem != "mod" && !root {
        parts.push(stem.to_string());
    }
    parts
}

impl CrateGraph {
    /// `files`: (path inside `src/` with `/`, text).
    fn new(name: &str, files: &[(String, String)]) -> CrateGraph {
        let mut g = CrateGraph {
            name: name.to_string(),
            files: BTreeMap::new(),
            edges: Vec::new(),
        };
        for (rel, text) in files {
            let own = module_path(rel);
            g.files.insert(own.clone(), read_file(rel, &own, text));
        }
        let mut edges = Vec::new();
        for (own, f) in &g.files {
            let named = f
                .uses
                .iter()
                .enumerate()
                .map(|(k, u)| (&u.scope, &u.path, u.line, Some(k)))
                .chain(f.paths.iter().map(|p| (&p.scope, &p.path, p.line, None)));
            for (scope, path, line, exclude) in named {
                let Some(abs) = g.absolute(own, scope, path, exclude, 0) else {
                    continue;
                };
                for to in g.targets(&abs, 0) {
                    if &to != own {
                        edges.push(Edge {
                            from: own.clone(),
                            to,
                            line,
                            what: path.join("::"),
                        });
                    }
                }
            }
        }
        g.edges = edges;
        g
    }

    fn is_module(&self, file: &ModPath, m: &ModPath) -> bool {
        self.files.contains_key(m) || self.files[file].inline.contains(m)
    }

    /// The absolute path (from the crate root) of `path` as written in
    /// `scope` of `file`; `None` for another crate's or a local name.
    /// `exclude`: the `use` being resolved (it does not bind its own
    /// first segment).
    fn absolute(
        &self,
        file: &ModPath,
        scope: &ModPath,
        path: &[String],
        exclude: Option<usize>,
        depth: usize,
    ) -> Option<ModPath> {
        if depth > 16 || path.is_empty() {
            return None;
        }
        let first = path[0].as_str();
        let mut abs: ModPath = match first {
            "crate" | "$crate" => Vec::new(),
            "self" => scope.clone(),
            "super" => {
                let mut base = scope.clone();
                let supers = path.iter().take_while(|s| *s == "super").count();
                for _ in 0..supers {
                    base.pop()?;
                }
                base.extend(path[supers..].iter().cloned());
                return Some(base);
            }
            "::" => return None,
            _ => {
                // a name a `use` binds in this scope or one around it (in
                // the same file; a `use super::*` reaches those)
                let info = &self.files[file];
                let mut s = scope.clone();
                loop {
                    let bound = info.uses.iter().enumerate().find(|(k, u)| {
                        Some(*k) != exclude
                            && u.scope == s
                            && !u.glob
                            && u.name.as_deref() == Some(first)
                    });
                    if let Some((k, u)) = bound {
                        let mut abs = self.absolute(file, &u.scope, &u.path, Some(k), depth + 1)?;
                        abs.extend(path[1..].iter().cloned());
                        return Some(abs);
                    }
                    let mut child = s.clone();
                    child.push(first.to_string());
                    if self.is_module(file, &child) {
                        child.extend(path[1..].iter().cloned());
                        return Some(child);
                    }
                    if s == *file || s.is_empty() {
                        return None;
                    }
                    s.pop();
                }
            }
        };
        abs.extend(path[1..].iter().cloned());
        Some(abs)
    }

    /// The files an absolute path imports: the file of its longest module
    /// prefix, or, through a `use` of that file binding the next segment,
    /// the file that declares the item.
    fn targets(&self, abs: &ModPath, depth: usize) -> Vec<ModPath> {
        let mut n = abs.len();
        while !self.files.contains_key(&abs[..n]) {
            if n == 0 {
                return Vec::new(); // no root file (a self-test tree)
            }
            n -= 1;
        }
        let file: ModPath = abs[..n].to_vec();
        if depth > 16 || n == abs.len() {
            return vec![file];
        }
        // walk down inline modules of that file
        let info = &self.files[&file];
        let mut scope = file.clone();
        let mut k = n;
        while k < abs.len() && info.inline.contains(&[&scope[..], &abs[k..=k]].concat()) {
            scope.push(abs[k].clone());
            k += 1;
        }
        if k == abs.len() {
            return vec![file];
        }
        let name = abs[k].as_str();
        let bound = info
            .uses
            .iter()
            .enumerate()
            .find(|(_, u)| u.scope == scope && !u.glob && u.name.as_deref() == Some(name));
        if let Some((j, u)) = bound {
            return match self.absolute(&file, &scope, &u.path, Some(j), 0) {
                Some(mut next) => {
                    next.extend(abs[k + 1..].iter().cloned());
                    let t = self.targets(&next, depth + 1);
                    if t.is_empty() {
                        vec![file]
                    } else {
                        t
                    }
                }
                None => vec![file], // re-exported from another crate
            };
        }
        let mut out = vec![file.clone()];
        for (j, u) in info.uses.iter().enumerate() {
            if u.scope == scope && u.glob && u.is_pub {
                if let Some(mut next) = self.absolute(&file, &scope, &u.path, Some(j), 0) {
                    next.extend(abs[k..].iter().cloned());
                    out.extend(self.targets(&next, depth + 1));
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

// --------------------------------------------------------------- checks --

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Every import against `LAYERS` (`rttlens-core`): a file of one
/// top-level module naming a file of a later one, or a top-level module in
/// no layer. The crate root's own file is outside the layers.
fn upward(g: &CrateGraph) -> Vec<String> {
    let mut bad = BTreeSet::new();
    for m in g.files.keys() {
        if let Some(top) = m.first() {
            if layer_of(top).is_none() {
                bad.insert(format!("{top}: module not in any layer"));
            }
        }
    }
    for e in &g.edges {
        let (Some(from), Some(to)) = (e.from.first(), e.to.first()) else {
            continue;
        };
        if let (Some(lf), Some(lt)) = (layer_of(from), layer_of(to)) {
            if lt > lf {
                bad.insert(format!(
                    "{} imports {} (a later layer): {}:{} `{}`",
                    show(&e.from),
                    show(&e.to),
                    g.files[&e.from].rel,
                    e.line,
                    e.what
                ));
            }
        }
    }
    bad.into_iter().collect()
}

/// Every import between detectors of `g`'s `detect` module (see the module
/// docs), with a file of `detect` that is neither a detector named in the
/// registry nor listed in `shared`, and a listed module that is missing or
/// is a detector.
fn detectors_importing_detectors(g: &CrateGraph, shared: &[&str]) -> Vec<String> {
    let detect: ModPath = vec!["detect".to_string()];
    let mut bad = BTreeSet::new();
    // the detectors: the files the registry names `<x>::detect` of
    let detectors: BTreeSet<ModPath> = g
        .edges
        .iter()
        .filter(|e| e.from == detect && e.to.len() == 2 && e.what.ends_with("::detect"))
        .map(|e| e.to.clone())
        .collect();
    let detector_of = |m: &ModPath| -> Option<ModPath> {
        (m.len() >= 2 && m[0] == "detect")
            .then(|| m[..2].to_vec())
            .filter(|d| detectors.contains(d))
    };
    for m in g.files.keys().filter(|m| m.len() >= 2 && m[0] == "detect") {
        if detector_of(m).is_none() && !shared.contains(&m[1].as_str()) {
            bad.insert(format!(
                "{}: not a detector named in the registry (`{}::detect` in {}) nor a shared \
                 module listed in DETECT_SHARED",
                g.files[m].rel, m[1], g.files[&detect].rel
            ));
        }
    }
    for name in shared {
        let m = vec!["detect".to_string(), name.to_string()];
        if !g.files.contains_key(&m) {
            bad.insert(format!(
                "DETECT_SHARED lists detect::{name}, which has no file"
            ));
        } else if detectors.contains(&m) {
            bad.insert(format!(
                "DETECT_SHARED lists detect::{name}, which the registry names as a detector"
            ));
        }
    }
    for e in &g.edges {
        if let (Some(from), Some(to)) = (detector_of(&e.from), detector_of(&e.to)) {
            if from != to {
                bad.insert(format!(
                    "detector {} imports detector {}: {}:{} `{}`",
                    show(&from),
                    show(&to),
                    g.files[&e.from].rel,
                    e.line,
                    e.what
                ));
            }
        }
    }
    bad.into_iter().collect()
}

/// Strongly connected components with more than one node (Tarjan).
fn tarjan(n: usize, adj: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct St<'a> {
        adj: &'a [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut St, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on[v] = true;
        for &w in s.adj[v].iter() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on[w] => s.low[v] = s.low[v].min(iw),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = St {
        adj,
        index: vec![None; n],
        low: vec![0; n],
        on: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

/// A shortest circle through `start` inside `comp` (breadth first).
fn shortest_circle(start: usize, comp: &[usize], adj: &[BTreeSet<usize>]) -> Vec<usize> {
    let mut prev: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &w in &adj[v] {
            if !comp.contains(&w) {
                continue;
            }
            if w == start {
                let mut path = vec![v];
                while let Some(&p) = prev.get(path.last().unwrap()) {
                    path.push(p);
                }
                path.reverse();
                return path;
            }
            if let std::collections::btree_map::Entry::Vacant(e) = prev.entry(w) {
                if w != start {
                    e.insert(v);
                    queue.push_back(w);
                }
            }
        }
    }
    vec![start]
}

/// Every circle among the submodules of each module: one line per circle,
/// `crate: under module: a, b, c` (its members, sorted), then one circle
/// through them, each step with a file import that makes it.
fn circles(g: &CrateGraph) -> Vec<(String, String)> {
    // every module that has submodules with files
    let mut parents: BTreeSet<ModPath> = BTreeSet::new();
    for m in g.files.keys() {
        for k in 0..m.len() {
            parents.insert(m[..k].to_vec());
        }
    }
    let mut out = Vec::new();
    for p in &parents {
        let child_of = |m: &ModPath| -> Option<String> {
            (m.len() > p.len() && m.starts_with(p)).then(|| m[p.len()].clone())
        };
        let children: Vec<String> = g
            .files
            .keys()
            .filter_map(child_of)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let idx = |c: &str| children.iter().position(|x| x == c).unwrap();
        let mut adj = vec![BTreeSet::new(); children.len()];
        let mut witness: BTreeMap<(usize, usize), &Edge> = BTreeMap::new();
        for e in &g.edges {
            if let (Some(a), Some(b)) = (child_of(&e.from), child_of(&e.to)) {
                if a != b {
                    let (a, b) = (idx(&a), idx(&b));
                    adj[a].insert(b);
                    witness.entry((a, b)).or_insert(e);
                }
            }
        }
        for comp in tarjan(children.len(), &adj) {
            let names: Vec<&str> = comp.iter().map(|&c| children[c].as_str()).collect();
            let key = format!("{}: under {}: {}", g.name, show(p), names.join(", "));
            let circle = shortest_circle(comp[0], &comp, &adj);
            let mut steps = Vec::new();
            for (k, &a) in circle.iter().enumerate() {
                let b = circle[(k + 1) % circle.len()];
                let e = witness[&(a, b)];
                steps.push(format!(
                    "    {} -> {}: {}:{} `{}` is in {}",
                    children[a],
                    children[b],
                    g.files[&e.from].rel,
                    e.line,
                    e.what,
                    g.files[&e.to].rel
                ));
            }
            out.push((key, steps.join("\n")));
        }
    }
    out
}

// ---------------------------------------------------------- the crates --

fn rust_files(src: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let rel = p
            .strip_prefix(src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if p.is_dir() {
            if rel != "bin" {
                rust_files(src, &p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push((rel, std::fs::read_to_string(&p).unwrap()));
        }
    }
}

/// Every crate of the workspace: `crates/*/src`.
fn workspace() -> Vec<CrateGraph> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&crates)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    dirs.sort();
    dirs.iter()
        .map(|d| {
            let src = d.join("src");
            let mut files = Vec::new();
            rust_files(&src, &src, &mut files);
            if files.iter().any(|(r, _)| r == "lib.rs") {
                // a `main.rs` beside `lib.rs` is a crate of its own
                files.retain(|(r, _)| r != "main.rs");
            }
            let name = d.file_name().unwrap().to_string_lossy().into_owned();
            CrateGraph::new(&name, &files)
        })
        .collect()
}

#[test]
fn core_imports_follow_the_pipeline() {
    let all = workspace();
    let core = all.iter().find(|g| g.name == "rttlens-core").unwrap();
    assert!(
        core.files.len() > 40,
        "read only {} files",
        core.files.len()
    );
    assert!(
        core.edges.len() > 100,
        "read only {} imports",
        core.edges.len()
    );
    let bad = upward(core);
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
fn no_circle_in_any_crate() {
    let all = workspace();
    assert!(all.len() >= 10, "read only {} crates", all.len());
    let files: usize = all.iter().map(|g| g.files.len()).sum();
    let edges: usize = all.iter().map(|g| g.edges.len()).sum();
    assert!(
        files > 150 && edges > 250,
        "read {files} files, {edges} imports"
    );
    let found: Vec<(String, String)> = all.iter().flat_map(circles).collect();
    let new: Vec<String> = found
        .iter()
        .filter(|(k, _)| !KNOWN_CIRCLES.contains(&k.as_str()))
        .map(|(k, s)| format!("{k}\n{s}"))
        .collect();
    let gone: Vec<&&str> = KNOWN_CIRCLES
        .iter()
        .filter(|k| !found.iter().any(|(f, _)| f == *k))
        .collect();
    assert!(new.is_empty(), "import circles:\n{}", new.join("\n"));
    assert!(
        gone.is_empty(),
        "known circles now gone, remove them from KNOWN_CIRCLES: {gone:?}"
    );
}

#[test]
fn detectors_do_not_import_each_other() {
    let all = workspace();
    let core = all.iter().find(|g| g.name == "rttlens-core").unwrap();
    let bad = detectors_importing_detectors(core, DETECT_SHARED);
    assert!(bad.is_empty(), "detectors not apart:\n{}", bad.join("\n"));
    let detectors = core
        .edges
        .iter()
        .filter(|e| e.from == ["detect"] && e.what.ends_with("::detect"))
        .count();
    assert!(detectors > 25, "read only {detectors} registry entries");
}

/// Whether `path` (after `rttlens_core`) goes through the door: it starts
/// with an entry of `DOOR`, and under `detect` names no type and not
/// `finding` (a type's name starts with an upper-case letter followed by a
/// lower-case one; `HEADER_ONLY` and the ids are constants).
fn through_the_door(path: &[String]) -> bool {
    let Some(entry) = DOOR
        .iter()
        .find(|d| path.len() >= d.len() && d.iter().zip(path).all(|(a, b)| a == b))
    else {
        return false;
    };
    if entry[0] != "detect" {
        return true;
    }
    path.iter().skip(1).all(|seg| {
        let mut c = seg.chars();
        let is_type =
            c.next().is_some_and(char::is_uppercase) && c.next().is_some_and(char::is_lowercase);
        seg != "finding" && !is_type
    })
}

/// Every path into `rttlens-core` from another crate's file that does not
/// go [`through_the_door`]: `use` leaves, paths in code, and paths in code
/// that start with a name a `use` of the file bound to an engine module.
fn past_the_door(g: &CrateGraph) -> Vec<String> {
    if g.name == "rttlens-core" {
        return Vec::new();
    }
    let mut bad = Vec::new();
    for f in g.files.values() {
        let bound: BTreeMap<&str, &[String]> = f
            .uses
            .iter()
            .filter(|u| u.path.first().is_some_and(|p| p == "rttlens_core"))
            .filter_map(|u| Some((u.name.as_deref()?, &u.path[1..])))
            .collect();
        let mut check = |path: Vec<String>, line: usize| {
            if !path.is_empty() && !through_the_door(&path) {
                bad.push(format!(
                    "{}: {}:{line} `rttlens_core::{}`",
                    g.name,
                    f.rel,
                    path.join("::")
                ));
            }
        };
        for u in &f.uses {
            if u.path.first().is_some_and(|p| p == "rttlens_core") {
                check(u.path[1..].to_vec(), u.line);
            }
        }
        for p in &f.paths {
            if p.path[0] == "rttlens_core" {
                check(p.path[1..].to_vec(), p.line);
            } else if let Some(base) = bound.get(p.path[0].as_str()) {
                let mut full = base.to_vec();
                full.extend(p.path[1..].iter().cloned());
                check(full, p.line);
            }
        }
    }
    bad
}

#[test]
fn the_record_is_read_through_model() {
    let all = workspace();
    let bad: Vec<String> = all.iter().flat_map(past_the_door).collect();
    assert!(
        bad.is_empty(),
        "engine modules named outside rttlens-core (read the record's types from rttlens_core::model; the door is DOOR):\n{}",
        bad.join("\n")
    );
    let through: usize = all
        .iter()
        .filter(|g| g.name != "rttlens-core")
        .flat_map(|g| g.files.values())
        .flat_map(|f| &f.uses)
        .filter(|u| u.path.len() > 2 && u.path[0] == "rttlens_core" && u.path[1] == "model")
        .count();
    assert!(
        through > 20,
        "read only {through} imports of rttlens_core::model"
    );
}

// ----------------------------------------------------------- self-tests --

fn tree(files: &[(&str, &str)]) -> CrateGraph {
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(r, t)| (r.to_string(), t.to_string()))
        .collect();
    CrateGraph::new("t", &files)
}

fn circle_keys(g: &CrateGraph) -> Vec<String> {
    circles(g).into_iter().map(|(k, _)| k).collect()
}

#[test]
fn the_check_sees_an_upward_import() {
    let g = tree(&[
        ("lib.rs", "pub mod flow;\npub mod analysis;\n"),
        (
            "flow/mod.rs",
            "// crate::analysis in a comment is fine\nuse crate::analysis::rtt::Estimate;\n",
        ),
        ("analysis/mod.rs", "pub mod rtt;\n"),
        ("analysis/rtt.rs", "use crate::flow::Conn;\n"),
    ]);
    assert_eq!(
        upward(&g),
        vec!["flow imports analysis::rtt (a later layer): flow/mod.rs:2 `crate::analysis::rtt::Estimate`"]
    );
}

#[test]
fn the_check_sees_a_grouped_upward_import() {
    // a grouped, nested, multi-line `use`, as imports_granularity=Crate
    // writes it, with a comment and a string inside
    let g = tree(&[
        ("lib.rs", "mod base;\nmod flow;\nmod analysis;\n"),
        ("base.rs", ""),
        (
            "flow/mod.rs",
            "mod half;\nuse crate::{\n    base::Time, // crate::x\n    analysis::{\n        rtt::{Estimate, Kind as K},\n    },\n};\n",
        ),
        (
            "flow/half.rs",
            "use super::super::{base, analysis::Report};\nfn f() { let s = \"crate::model\"; }\n",
        ),
        ("analysis/mod.rs", "pub mod rtt;\n"),
        ("analysis/rtt.rs", ""),
    ]);
    assert_eq!(
        upward(&g),
        vec![
            "flow imports analysis::rtt (a later layer): flow/mod.rs:2 `crate::analysis::rtt::Estimate`",
            "flow imports analysis::rtt (a later layer): flow/mod.rs:2 `crate::analysis::rtt::Kind`",
            "flow::half imports analysis (a later layer): flow/half.rs:1 `super::super::analysis::Report`",
        ]
    );
    // a path in code, through a module a `use` bound, and `self::`
    let g = tree(&[
        ("lib.rs", "mod flow;\nmod analysis;\n"),
        (
            "flow.rs",
            "use crate::analysis as a;\nfn f() -> u32 { let x = 'x'; a::rtt::est(x) }\n",
        ),
        ("analysis/mod.rs", "pub mod rtt;\n"),
        ("analysis/rtt.rs", ""),
    ]);
    assert_eq!(
        upward(&g),
        vec![
            "flow imports analysis (a later layer): flow.rs:1 `crate::analysis`",
            "flow imports analysis::rtt (a later layer): flow.rs:2 `a::rtt::est`",
        ]
    );
}

#[test]
fn the_check_sees_a_circle_of_three_files() {
    let g = tree(&[
        ("lib.rs", "mod capture;\n"),
        ("capture/mod.rs", "mod a;\nmod b;\nmod c;\n"),
        ("capture/a.rs", "use super::b::B;\n"),
        // grouped and multi-line
        ("capture/b.rs", "use super::{\n    c::{C, D},\n};\n"),
        // a path in code, not a `use`
        (
            "capture/c.rs",
            "pub fn f() -> u8 { crate::capture::a::A::new() }\n",
        ),
    ]);
    let found = circles(&g);
    assert_eq!(
        found.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        vec!["t: under capture: a, b, c"]
    );
    assert_eq!(
        found[0].1,
        "    a -> b: capture/a.rs:1 `super::b::B` is in capture/b.rs\n    \
         b -> c: capture/b.rs:1 `super::c::C` is in capture/c.rs\n    \
         c -> a: capture/c.rs:1 `crate::capture::a::A::new` is in capture/a.rs"
    );
    // the same circle between two top-level modules through a file below
    // one of them: `x` names `y::Z`, and `y/deep.rs` names `x::X`
    let g = tree(&[
        ("lib.rs", "mod x;\nmod y;\n"),
        ("x.rs", "use crate::y::Z;\n"),
        ("y/mod.rs", "mod deep;\npub struct Z;\n"),
        ("y/deep.rs", "use crate::x::X;\n"),
    ]);
    assert_eq!(circle_keys(&g), vec!["t: under crate: x, y"]);
}

#[test]
fn the_check_sees_a_circle_through_a_re_export() {
    // `b` names `a::Thing`, which `a/mod.rs` re-exports from `a/x.rs`, and
    // `a/x.rs` names `b`: the files `a/x.rs` and `b.rs` form a circle
    let g = tree(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a/mod.rs", "mod x;\npub use x::Thing;\n"),
        ("a/x.rs", "use crate::b::helper;\npub struct Thing;\n"),
        ("b.rs", "pub fn helper(t: crate::a::Thing) {}\n"),
    ]);
    let found = circles(&g);
    assert_eq!(found.len(), 1);
    assert!(found[0].1.contains("b.rs:1 `crate::a::Thing` is in a/x.rs"));
}

#[test]
fn the_check_sees_a_detector_importing_another() {
    let g = tree(&[
        ("lib.rs", "mod analysis;\nmod detect;\n"),
        ("analysis.rs", "pub fn rise() {}\n"),
        (
            "detect/mod.rs",
            "mod a;\nmod b;\nmod c;\nmod stray;\nmod window;\n\
             const R: &[fn()] = &[a::detect, Tcp(b::detect), c::detect];\n",
        ),
        // shared modules and `analysis` are fine, and so is the registry
        (
            "detect/a.rs",
            "use super::window::cap;\nuse crate::analysis::rise;\npub fn detect() {}\n",
        ),
        // a grouped import of a detector's item, and a path in code
        (
            "detect/b.rs",
            "use super::{a::ID, window};\npub fn detect() { super::kept(); }\n",
        ),
        (
            "detect/c.rs",
            "pub fn detect() { crate::detect::b::helper() }\n",
        ),
        ("detect/stray.rs", ""),
        ("detect/window.rs", ""),
    ]);
    assert_eq!(
        detectors_importing_detectors(&g, &["window", "gone"]),
        vec![
            "DETECT_SHARED lists detect::gone, which has no file",
            "detect/stray.rs: not a detector named in the registry (`stray::detect` in \
             detect/mod.rs) nor a shared module listed in DETECT_SHARED",
            "detector detect::b imports detector detect::a: detect/b.rs:1 `super::a::ID`",
            "detector detect::c imports detector detect::b: detect/c.rs:1 `crate::detect::b::helper`",
        ]
    );
    assert_eq!(
        detectors_importing_detectors(&g, &["window", "a"]),
        vec![
            "DETECT_SHARED lists detect::a, which the registry names as a detector",
            "detect/stray.rs: not a detector named in the registry (`stray::detect` in \
             detect/mod.rs) nor a shared module listed in DETECT_SHARED",
            "detector detect::b imports detector detect::a: detect/b.rs:1 `super::a::ID`",
            "detector detect::c imports detector detect::b: detect/c.rs:1 `crate::detect::b::helper`",
        ]
    );
}

#[test]
fn the_check_passes_what_is_no_circle() {
    let g = tree(&[
        ("lib.rs", "mod a;\nmod b;\npub use a::A;\n"),
        // a module and its submodules (re-exports and `super::` back);
        // a test module naming its own file; comments, strings, chars,
        // lifetimes and raw strings naming anything
        (
            "a/mod.rs",
            "mod x;\nmod y;\npub use self::{x::X, y::Y};\npub struct A;\n\
             /* crate::b::B /* nested */ crate::b::B */\n\
             fn f<'a>(s: &'a str) -> char { let _ = r#\"crate::b\"#; '\"' }\n\
             #[cfg(test)]\nmod tests {\n    use super::*;\n    use super::x::X;\n}\n",
        ),
        ("a/x.rs", "use super::A;\npub struct X;\n"),
        ("a/y.rs", "use super::{x::X, A};\npub struct Y;\n"),
        // `flight`-like: `b` re-exports an item `a` declares; `a` naming it
        // through `b` imports only itself
        ("b.rs", "pub use crate::a::x::X;\nuse other_crate::a::Q;\n"),
    ]);
    assert_eq!(circle_keys(&g), Vec::<String>::new());
    let b_to: Vec<String> = g
        .edges
        .iter()
        .filter(|e| e.from == ["b"])
        .map(|e| show(&e.to))
        .collect();
    assert_eq!(b_to, vec!["a::x"]);
    let g = tree(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "pub enum W { One }\nfn f(w: crate::b::W) {}\n"),
        ("b.rs", "pub use crate::a::W;\nuse crate::a;\n"),
    ]);
    assert_eq!(circle_keys(&g), Vec::<String>::new());
    assert!(g.edges.iter().all(|e| e.from != ["a"]), "{:?}", g.edges);
}

#[test]
fn the_check_sees_a_record_type_named_past_the_door() {
    let files: Vec<(String, String)> = [(
        "lib.rs",
        "use rttlens_core::model::{Connection, finding::Finding};\n\
             use rttlens_core::detect::{finding::Evidence, HEADER_ONLY};\n\
             use rttlens_core::population;\n\
             fn f(c: &rttlens_core::analysis::ladder::Phase) -> population::Stats { make() }\n\
             fn g() -> rttlens_core::detect::Finding { make() }\n\
             const I: &str = rttlens_core::detect::nagle::ID;\n",
    )]
    .iter()
    .map(|(r, t)| (r.to_string(), t.to_string()))
    .collect();
    let g = CrateGraph::new("consumer", &files);
    assert_eq!(
        past_the_door(&g),
        [
            "consumer: lib.rs:2 `rttlens_core::detect::finding::Evidence`",
            "consumer: lib.rs:3 `rttlens_core::population`",
            "consumer: lib.rs:4 `rttlens_core::analysis::ladder::Phase`",
            "consumer: lib.rs:4 `rttlens_core::population::Stats`",
            "consumer: lib.rs:5 `rttlens_core::detect::Finding`",
        ]
    );
}
