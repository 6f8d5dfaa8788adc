//! The public corpus (issue 21 item 3): real captures whose answers were
//! written by someone else, checked against `tests/corpus/expect.txt`.
//!
//! For every capture named in expect.txt that is present — the public
//! captures in `../shared/captures/public` (always: the test FAILS when the
//! folder or one of its captures is missing) and the captures
//! `scripts/corpus-fetch` downloads into `../shared/captures/corpus` (or
//! `$RTTLENS_CORPUS_FETCHED`; skipped when absent) — runs the built
//! `rttlens analyze --format json` once, checks each expectation, prints a
//! score table (per capture: held / missed / known-miss / fixed) and the
//! overall score, and fails on an `expect` that does not hold, on a
//! `known-miss` that now holds (promote it: a ratchet), on a non-zero exit
//! status, a panic or invalid JSON. The file format is described at the top
//! of expect.txt and in docs/corpus.md; it is parsed here with std only.
//!
//! `cargo test -p rttlens --test corpus -- --nocapture` shows the table on
//! success too.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;
use common::bin;

/// Where the repository keeps its expectations.
fn expect_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/expect.txt")
}

/// `../shared/captures/public` from the repository root.
fn public_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/captures/public")
}

/// Where `scripts/corpus-fetch` puts what it downloads.
fn fetched_dir() -> PathBuf {
    match std::env::var_os("RTTLENS_CORPUS_FETCHED") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/captures/corpus"),
    }
}

// ------------------------------------------------------------------ format

/// A numeric expectation.
#[derive(Debug, Clone, PartialEq)]
enum Num {
    /// `V`
    Exact(f64),
    /// `V±T`, `V±T%` (as an absolute tolerance), `A..B`
    Range(f64, f64),
    /// `>=V`
    AtLeast(f64),
    /// `<=V`
    AtMost(f64),
}

impl Num {
    fn parse(s: &str) -> Result<Num, String> {
        let f = |t: &str| {
            t.trim()
                .parse::<f64>()
                .map_err(|_| format!("not a number: {t:?} in {s:?}"))
        };
        if let Some(v) = s.strip_prefix(">=") {
            return Ok(Num::AtLeast(f(v)?));
        }
        if let Some(v) = s.strip_prefix("<=") {
            return Ok(Num::AtMost(f(v)?));
        }
        if let Some((a, b)) = s.split_once("..") {
            let (a, b) = (f(a)?, f(b)?);
            if a > b {
                return Err(format!("empty range {s:?}"));
            }
            return Ok(Num::Range(a, b));
        }
        let split = s.split_once('±').or_else(|| s.split_once("+-"));
        if let Some((v, t)) = split {
            let v = f(v)?;
            let tol = match t.strip_suffix('%') {
                Some(p) => v.abs() * f(p)? / 100.0,
                None => f(t)?,
            };
            return Ok(Num::Range(v - tol, v + tol));
        }
        Ok(Num::Exact(f(s)?))
    }

    fn holds(&self, x: f64) -> bool {
        match *self {
            Num::Exact(v) => (x - v).abs() <= 1e-9 * v.abs().max(1.0),
            Num::Range(a, b) => x >= a && x <= b,
            Num::AtLeast(v) => x >= v,
            Num::AtMost(v) => x <= v,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Scope {
    Capture,
    Conn(u64),
    /// The QUIC connection whose `index` is N.
    Quic(u64),
    AnyConn,
}

#[derive(Debug, Clone, PartialEq)]
enum Check {
    Connections(Num),
    Finding(Vec<String>),
    NoFinding(Vec<String>),
    CostMs(Vec<String>, Num),
    RttMs(Num),
    PhaseMs(String, Num),
    Field(String, String),
}

#[derive(Debug, Clone, PartialEq)]
enum Status {
    Expect,
    KnownMiss(String),
}

#[derive(Debug, Clone)]
struct Expectation {
    line: usize,
    /// `public/NAME` or `fetched/NAME`
    capture: String,
    scope: Scope,
    scope_text: String,
    check: Check,
    check_text: String,
    status: Status,
}

/// Blank-separated tokens; `"…"` groups blanks (also after `key=`), the
/// quotes are dropped. The flag says whether the token began with a quote.
fn tokens(line: &str) -> Result<Vec<(String, bool)>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_quote = false;
    let mut quoted = false;
    let mut started = false;
    for c in line.chars() {
        match c {
            '"' => {
                if !started {
                    quoted = true;
                }
                started = true;
                in_quote = !in_quote;
            }
            c if c.is_whitespace() && !in_quote => {
                if started {
                    out.push((std::mem::take(&mut cur), quoted));
                    started = false;
                    quoted = false;
                }
            }
            c => {
                started = true;
                cur.push(c);
            }
        }
    }
    if in_quote {
        return Err("unterminated quote".into());
    }
    if started {
        out.push((cur, quoted));
    }
    Ok(out)
}

fn ids(s: &str) -> Result<Vec<String>, String> {
    let v: Vec<String> = s.split('|').map(str::to_string).collect();
    if v.iter().any(|i| {
        i.is_empty()
            || !i
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '*')
    }) {
        return Err(format!("bad finding id list {s:?}"));
    }
    Ok(v)
}

/// `name[ARG]=VALUE` → (ARG, VALUE).
fn bracketed<'a>(s: &'a str, name: &str) -> Option<(&'a str, &'a str)> {
    let rest = s.strip_prefix(name)?.strip_prefix('[')?;
    let (arg, value) = rest.split_once("]=")?;
    Some((arg, value))
}

fn parse_check(s: &str) -> Result<Check, String> {
    if let Some((a, v)) = bracketed(s, "cost_ms") {
        return Ok(Check::CostMs(ids(a)?, Num::parse(v)?));
    }
    if let Some((a, v)) = bracketed(s, "phase_ms") {
        return Ok(Check::PhaseMs(a.to_string(), Num::parse(v)?));
    }
    if let Some((a, v)) = bracketed(s, "field") {
        if a.is_empty() {
            return Err("empty field path".into());
        }
        return Ok(Check::Field(a.to_string(), v.to_string()));
    }
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("check {s:?} has no '='"))?;
    match k {
        "connections" => Ok(Check::Connections(Num::parse(v)?)),
        "finding" => Ok(Check::Finding(ids(v)?)),
        "no-finding" => Ok(Check::NoFinding(ids(v)?)),
        "rtt_ms" => Ok(Check::RttMs(Num::parse(v)?)),
        _ => Err(format!("unknown check {k:?}")),
    }
}

fn parse_line(line: &str, n: usize) -> Result<Option<Expectation>, String> {
    let t = line.trim();
    if t.is_empty() || t.starts_with('#') {
        return Ok(None);
    }
    let toks = tokens(t)?;
    if toks.len() < 3 {
        return Err("want CAPTURE SCOPE CHECK STATUS from=… source=…".into());
    }
    let capture = toks[0].0.clone();
    let valid_capture = ["public/", "fetched/"].iter().any(|p| {
        capture
            .strip_prefix(p)
            .is_some_and(|n| !n.is_empty() && !n.contains('/'))
    });
    if !valid_capture {
        return Err(format!(
            "capture {capture:?} is neither public/NAME nor fetched/NAME"
        ));
    }
    let scope_text = toks[1].0.clone();
    let scope = match scope_text.as_str() {
        "capture" => Scope::Capture,
        "conn=*" => Scope::AnyConn,
        s => match (
            s.strip_prefix("conn=").map(str::parse::<u64>),
            s.strip_prefix("quic=").map(str::parse::<u64>),
        ) {
            (Some(Ok(i)), _) => Scope::Conn(i),
            (_, Some(Ok(i))) => Scope::Quic(i),
            _ => return Err(format!("bad scope {s:?}")),
        },
    };
    let check_text = toks[2].0.clone();
    let check = parse_check(&check_text)?;
    if matches!(check, Check::Connections(_)) && scope != Scope::Capture {
        return Err("connections= needs the scope `capture`".into());
    }
    if matches!(
        check,
        Check::CostMs(..) | Check::RttMs(_) | Check::PhaseMs(..)
    ) && scope == Scope::Capture
    {
        return Err(format!("{check_text} needs a connection scope"));
    }
    let mut status = None;
    let mut from = None;
    let mut source = None;
    let mut i = 3;
    while i < toks.len() {
        let (tok, _) = &toks[i];
        if tok == "expect" {
            status = Some(Status::Expect);
        } else if tok == "known-miss" {
            match toks.get(i + 1) {
                Some((r, true)) if !r.trim().is_empty() => {
                    status = Some(Status::KnownMiss(r.clone()));
                    i += 1;
                }
                _ => return Err("known-miss needs a \"reason\"".into()),
            }
        } else if let Some(k) = tok.strip_prefix("from=") {
            if !["source", "baseline", "tshark", "timing", "readme", "book"].contains(&k) {
                return Err(format!("unknown from={k}"));
            }
            from = Some(k.to_string());
        } else if let Some(s) = tok.strip_prefix("source=") {
            source = Some(s.to_string());
        } else {
            return Err(format!("unexpected token {tok:?}"));
        }
        i += 1;
    }
    let status = status.ok_or("no status (expect / known-miss \"reason\")")?;
    from.ok_or("no from=")?;
    if source.is_none_or(|s| s.trim().is_empty()) {
        return Err("no source=\"…\"".into());
    }
    Ok(Some(Expectation {
        line: n,
        capture,
        scope,
        scope_text,
        check,
        check_text,
        status,
    }))
}

fn parse_file(text: &str) -> Result<Vec<Expectation>, String> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match parse_line(line, i + 1) {
            Ok(Some(e)) => out.push(e),
            Ok(None) => {}
            Err(e) => errors.push(format!("expect.txt:{}: {e}", i + 1)),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors.join("\n"))
    }
}

// ------------------------------------------------------------- evaluation

/// The connection of `transport` (`tcp`, `quic`) whose index is `index`.
fn connection<'a>(doc: &'a Value, transport: &str, index: u64) -> Option<&'a Value> {
    doc["connections"]
        .as_array()?
        .iter()
        .find(|c| c["transport"] == transport && c["index"].as_u64() == Some(index))
}

fn finding_ids(conn: &Value) -> Vec<String> {
    conn["findings"]
        .as_array()
        .map(|fs| {
            fs.iter()
                .filter_map(|f| f["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn show_ids(conn: &Value) -> String {
    let v = finding_ids(conn);
    if v.is_empty() {
        "no findings".into()
    } else {
        format!("findings [{}]", v.join(", "))
    }
}

fn lookup<'a>(root: &'a Value, path: &str) -> Result<&'a Value, String> {
    let mut v = root;
    let mut walked = String::new();
    for seg in path.split('.') {
        let next = match v {
            Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
            Value::Object(o) => o.get(seg),
            _ => None,
        };
        match next {
            Some(n) => v = n,
            None => {
                return Err(if walked.is_empty() {
                    format!("{seg} absent")
                } else {
                    format!("{seg} absent ({walked} is {})", short(v))
                })
            }
        }
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(seg);
    }
    Ok(v)
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

fn value_matches(v: &Value, want: &str) -> bool {
    match v {
        Value::Null => want == "null",
        Value::Bool(b) => want == if *b { "true" } else { "false" },
        Value::Number(n) => match (n.as_f64(), Num::parse(want)) {
            (Some(x), Ok(num)) => num.holds(x),
            _ => false,
        },
        Value::String(s) => s == want,
        other => *want == *other.to_string(),
    }
}

/// Checks one expectation on one connection (`conn` is the connection for
/// connection checks).
fn check_conn(check: &Check, conn: &Value) -> Result<(), String> {
    match check {
        Check::Connections(_) => unreachable!("capture scope"),
        Check::Finding(want) => {
            let have = finding_ids(conn);
            if want.iter().any(|w| have.contains(w)) {
                Ok(())
            } else {
                Err(show_ids(conn))
            }
        }
        Check::NoFinding(unwanted) => {
            let have = finding_ids(conn);
            let hit: Vec<&String> = unwanted.iter().filter(|w| have.contains(w)).collect();
            if hit.is_empty() {
                Ok(())
            } else {
                let costs: Vec<String> = conn["findings"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|f| hit.iter().any(|h| f["id"].as_str() == Some(h.as_str())))
                    .map(|f| format!("{} {} ms", f["id"].as_str().unwrap_or("?"), f["cost"]["ms"]))
                    .collect();
                Err(format!("has {}", costs.join(", ")))
            }
        }
        Check::CostMs(want, num) => {
            let best = conn["findings"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|f| want.iter().any(|w| f["id"].as_str() == Some(w.as_str())))
                .filter_map(|f| Some((f["id"].as_str()?, f["cost"]["ms"].as_f64()?)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            match best {
                Some((_, ms)) if num.holds(ms) => Ok(()),
                Some((id, ms)) => Err(format!("{id} costs {ms} ms")),
                None => Err(format!("no such finding ({})", show_ids(conn))),
            }
        }
        Check::RttMs(num) => match conn["rtt"]["min_ms"].as_f64() {
            Some(x) if num.holds(x) => Ok(()),
            Some(x) => Err(format!(
                "rtt min {x} ms (median {}, method {})",
                conn["rtt"]["median_ms"], conn["rtt"]["method"]
            )),
            None => Err("RTT unknown (rtt null)".into()),
        },
        Check::PhaseMs(name, num) => {
            let phase = conn["ladder"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["name"].as_str() == Some(name.as_str()));
            match phase.and_then(|p| p["ms"].as_f64()) {
                Some(x) if num.holds(x) => Ok(()),
                Some(x) => Err(format!("{name} {x} ms")),
                None => Err(format!("no {name} phase")),
            }
        }
        Check::Field(path, want) => {
            let v = lookup(conn, path)?;
            if value_matches(v, want) {
                Ok(())
            } else {
                Err(format!("{path} = {}", short(v)))
            }
        }
    }
}

fn evaluate(e: &Expectation, doc: &Value) -> Result<(), String> {
    let conns: Vec<&Value> = doc["connections"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    match (&e.scope, &e.check) {
        (_, Check::Connections(num)) => match doc["capture"]["connections"].as_f64() {
            Some(x) if num.holds(x) => Ok(()),
            Some(x) => Err(format!("{x} connections")),
            None => Err("capture.connections absent".into()),
        },
        (Scope::Capture, Check::Field(path, want)) => {
            let v = lookup(doc, path)?;
            if value_matches(v, want) {
                Ok(())
            } else {
                Err(format!("{path} = {}", short(v)))
            }
        }
        (Scope::Conn(i), check) => match connection(doc, "tcp", *i) {
            Some(c) => check_conn(check, c),
            None => Err(format!("no connection {i} ({} in all)", conns.len())),
        },
        (Scope::Quic(i), check) => match connection(doc, "quic", *i) {
            Some(c) => check_conn(check, c),
            None => Err(format!("no QUIC connection {i} ({} in all)", conns.len())),
        },
        // no-finding over every connection
        (Scope::Capture | Scope::AnyConn, Check::NoFinding(_)) => {
            let bad: Vec<String> = conns
                .iter()
                .filter_map(|c| {
                    check_conn(&e.check, c)
                        .err()
                        .map(|why| format!("conn {}: {why}", c["index"]))
                })
                .collect();
            if bad.is_empty() {
                Ok(())
            } else {
                Err(bad.join("; "))
            }
        }
        // anything else: some connection
        (Scope::Capture | Scope::AnyConn, check) => {
            if conns.iter().any(|c| check_conn(check, c).is_ok()) {
                Ok(())
            } else if conns.is_empty() {
                Err("no connections".into())
            } else {
                let seen: Vec<String> = conns
                    .iter()
                    .take(6)
                    .map(|c| format!("conn {}: {}", c["index"], show_ids(c)))
                    .collect();
                Err(format!("on no connection ({})", seen.join("; ")))
            }
        }
    }
}

// ------------------------------------------------------------------ runs

struct Run {
    doc: Option<Value>,
    /// exit status, panic or JSON problems
    failure: Option<String>,
}

fn analyze(path: &Path) -> Run {
    let out = match bin()
        .args(["analyze", "--format", "json", "--no-progress"])
        .arg(path)
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            return Run {
                doc: None,
                failure: Some(format!("could not run rttlens: {e}")),
            }
        }
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut failure = None;
    if stderr.contains("panicked") {
        failure = Some(format!("panic: {}", stderr.trim()));
    } else if !out.status.success() {
        failure = Some(format!("exit {}: {}", out.status, stderr.trim()));
    }
    let doc = match serde_json::from_slice::<Value>(&out.stdout) {
        Ok(v) => Some(v),
        Err(e) => {
            failure.get_or_insert(format!("invalid JSON: {e}"));
            None
        }
    };
    Run { doc, failure }
}

#[derive(Default)]
struct Score {
    held: usize,
    missed: usize,
    known: usize,
    fixed: usize,
}

impl Score {
    fn add(&mut self, o: &Score) {
        self.held += o.held;
        self.missed += o.missed;
        self.known += o.known;
        self.fixed += o.fixed;
    }
    fn total(&self) -> usize {
        self.held + self.missed + self.known + self.fixed
    }
    /// expectations rttlens meets (a fixed known-miss counts as met)
    fn met(&self) -> usize {
        self.held + self.fixed
    }
}

#[test]
fn public_corpus_meets_its_written_answers() {
    let public = public_dir();
    assert!(
        public.is_dir(),
        "{} is missing: the corpus test needs ../shared/captures/public next to the \
         repository (CI always has it; see docs/corpus.md)",
        public.display()
    );
    let text = std::fs::read_to_string(expect_file())
        .unwrap_or_else(|e| panic!("{}: {e}", expect_file().display()));
    let all = parse_file(&text).unwrap_or_else(|e| panic!("{e}"));
    assert!(!all.is_empty(), "expect.txt holds no expectation");

    let fetched = fetched_dir();
    // captures in file order
    let mut order: Vec<String> = Vec::new();
    let mut by_capture: BTreeMap<String, Vec<&Expectation>> = BTreeMap::new();
    for e in &all {
        if !by_capture.contains_key(&e.capture) {
            order.push(e.capture.clone());
        }
        by_capture.entry(e.capture.clone()).or_default().push(e);
    }

    let mut problems: Vec<String> = Vec::new();
    let mut report = String::new();
    let mut details = String::new();
    let (mut pub_score, mut fetched_score) = (Score::default(), Score::default());
    let (mut absent, mut fetched_run) = (0usize, 0usize);
    let _ = writeln!(
        report,
        "{:<44} {:>5} {:>5} {:>6} {:>6} {:>6}  result",
        "capture", "conns", "held", "missed", "known", "fixed"
    );
    for cap in &order {
        let exps = &by_capture[cap];
        let (is_public, name) = match cap.split_once('/') {
            Some(("public", n)) => (true, n),
            Some((_, n)) => (false, n),
            None => unreachable!("checked by the parser"),
        };
        let path = if is_public {
            public.join(name)
        } else {
            fetched.join(name)
        };
        if !path.is_file() {
            if is_public {
                problems.push(format!("{cap}: {} is missing", path.display()));
                let _ = writeln!(report, "{cap:<44} MISSING");
            } else {
                absent += 1;
                let _ = writeln!(
                    report,
                    "{cap:<44} {:>5} {:>5} {:>6} {:>6} {:>6}  absent (scripts/corpus-fetch)",
                    "-", "-", "-", "-", "-"
                );
            }
            continue;
        }
        if !is_public {
            fetched_run += 1;
        }
        let run = analyze(&path);
        let mut s = Score::default();
        if let Some(f) = &run.failure {
            problems.push(format!("{cap}: {f}"));
        }
        let conns = run
            .doc
            .as_ref()
            .and_then(|d| d["capture"]["connections"].as_u64())
            .map_or("?".to_string(), |n| n.to_string());
        for e in exps {
            let outcome = match &run.doc {
                Some(doc) => evaluate(e, doc),
                None => Err("no output".into()),
            };
            let what = format!("line {:>3}  {} {}", e.line, e.scope_text, e.check_text);
            match (&e.status, outcome) {
                (Status::Expect, Ok(())) => s.held += 1,
                (Status::Expect, Err(got)) => {
                    s.missed += 1;
                    let _ = writeln!(details, "  MISS   {cap}: {what}\n           got: {got}");
                    problems.push(format!(
                        "{cap} line {}: {} {} — got: {got}",
                        e.line, e.scope_text, e.check_text
                    ));
                }
                (Status::KnownMiss(why), Err(got)) => {
                    s.known += 1;
                    let _ = writeln!(
                        details,
                        "  known  {cap}: {what}\n           got: {got}  (known-miss: {why})"
                    );
                }
                (Status::KnownMiss(_), Ok(())) => {
                    s.fixed += 1;
                    let _ = writeln!(
                        details,
                        "  FIXED  {cap}: {what}: now holds, promote it to expect"
                    );
                    problems.push(format!(
                        "{cap} line {}: known-miss {} {} now holds: change its status to expect",
                        e.line, e.scope_text, e.check_text
                    ));
                }
            }
        }
        let result = if run.failure.is_some() {
            "FAILED RUN"
        } else if s.missed > 0 || s.fixed > 0 {
            "FAIL"
        } else {
            "ok"
        };
        let _ = writeln!(
            report,
            "{cap:<44} {conns:>5} {:>5} {:>6} {:>6} {:>6}  {result}",
            s.held, s.missed, s.known, s.fixed
        );
        if is_public {
            pub_score.add(&s);
        } else {
            fetched_score.add(&s);
        }
    }
    let pct = |s: &Score| {
        if s.total() == 0 {
            0.0
        } else {
            100.0 * s.met() as f64 / s.total() as f64
        }
    };
    let _ = writeln!(
        report,
        "\npublic:  {} of {} expectations met ({:.1} %): {} held, {} missed, {} known-miss, {} fixed",
        pub_score.met(),
        pub_score.total(),
        pct(&pub_score),
        pub_score.held,
        pub_score.missed,
        pub_score.known,
        pub_score.fixed
    );
    if fetched_run > 0 {
        let _ = writeln!(
            report,
            "fetched: {} of {} expectations met ({:.1} %) over {fetched_run} captures ({absent} absent)",
            fetched_score.met(),
            fetched_score.total(),
            pct(&fetched_score)
        );
    } else {
        let _ = writeln!(
            report,
            "fetched: none present in {} ({absent} listed; run scripts/corpus-fetch)",
            fetched.display()
        );
    }
    eprintln!("{report}");
    if !details.is_empty() {
        eprintln!("{details}");
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn expectation_format_parses() {
    let e = parse_line(
        r#"public/a.pcap conn=1 cost_ms[rto|tail-loss-probe]=600±20% known-miss "why not" from=timing source="a b""#,
        7,
    )
    .expect("parses")
    .expect("an expectation");
    assert_eq!(e.scope, Scope::Conn(1));
    assert_eq!(e.status, Status::KnownMiss("why not".into()));
    match e.check {
        Check::CostMs(ids, Num::Range(a, b)) => {
            assert_eq!(ids, ["rto", "tail-loss-probe"]);
            assert!((a - 480.0).abs() < 1e-9 && (b - 720.0).abs() < 1e-9);
        }
        other => panic!("{other:?}"),
    }
    for (s, x, ok) in [
        ("370±10%", 400.0, true),
        ("370+-10", 381.0, false),
        ("55..85", 85.0, true),
        (">=800", 799.0, false),
        ("<=1", 0.5, true),
        ("10", 10.0, true),
    ] {
        assert_eq!(Num::parse(s).expect(s).holds(x), ok, "{s} {x}");
    }
    let f = parse_line(
        r#"public/a conn=2 field[server]=[::1]:3000 expect from=tshark source="x""#,
        1,
    )
    .expect("parses")
    .expect("some");
    assert_eq!(f.check, Check::Field("server".into(), "[::1]:3000".into()));
    let q = parse_line(
        r#"public/a quic=1 field[handshake.sni]=x expect from=tshark source="x""#,
        1,
    )
    .expect("parses")
    .expect("some");
    assert_eq!(q.scope, Scope::Quic(1));
    let doc: Value = serde_json::json!({"connections": [
        {"transport": "tcp", "index": 1, "handshake": {"sni": "tcp"}},
        {"transport": "quic", "index": 1, "handshake": {"sni": "x"}},
    ]});
    assert_eq!(
        evaluate(&q, &doc),
        Ok(()),
        "the QUIC connection 1, not the TCP one"
    );
    for bad in [
        r#"public/a conn=1 finding=x expect source="x""#,
        r#"public/a conn=1 finding=x from=tshark source="x""#,
        r#"public/a conn=1 finding=x known-miss from=tshark source="x""#,
        r#"other/a conn=1 finding=x expect from=tshark source="x""#,
        r#"public/a capture rtt_ms=3 expect from=tshark source="x""#,
        r#"public/a conn=x finding=x expect from=tshark source="x""#,
    ] {
        assert!(parse_line(bad, 1).is_err(), "{bad}");
    }
    let doc: Value = serde_json::json!({
        "capture": {"connections": 1},
        "connections": [{"transport": "tcp", "index": 0, "tls": null, "rtt": {"min_ms": 12.0},
            "tcp": {"window_scale": [7, null]},
            "findings": [{"id": "rto", "cost": {"ms": 590.0}}]}]
    });
    let ok = |line: &str| evaluate(&parse_line(line, 1).unwrap().unwrap(), &doc);
    assert!(
        ok(r#"public/a conn=0 field[tcp.window_scale.1]=null expect from=tshark source="x""#)
            .is_ok()
    );
    assert!(ok(r#"public/a conn=0 field[tls]=null expect from=tshark source="x""#).is_ok());
    assert!(ok(r#"public/a conn=0 field[tls.version]=1.3 expect from=tshark source="x""#).is_err());
    assert!(ok(r#"public/a conn=* no-finding=rto expect from=tshark source="x""#).is_err());
    assert!(ok(r#"public/a conn=0 cost_ms[rto]=600±5% expect from=tshark source="x""#).is_ok());
    assert!(ok(r#"public/a conn=1 finding=rto expect from=tshark source="x""#).is_err());
    assert!(ok(r#"public/a capture connections=1 expect from=tshark source="x""#).is_ok());
}
