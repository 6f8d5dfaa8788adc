//! The HTML report's structure, pinned by a snapshot (insta) for a small
//! real capture (`../shared/captures/itts/pku.cap`: one TLS 1.2 connection
//! of 887 packets whose server holds 65535 B in flight), and the reduction
//! that keeps a long connection's graphs small.

use std::path::PathBuf;

use rttlens_core::capture::CaptureReader;
use rttlens_core::pipeline::{self, Options};
use rttlens_report::html::{HtmlOptions, HtmlRenderer};
use rttlens_report::{Renderer, Source};

fn capture(name: &str) -> PathBuf {
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

fn render(name: &str, opts: HtmlOptions) -> String {
    let mut reader = CaptureReader::open(&capture(name)).expect("open");
    let mut r = HtmlRenderer::new(opts);
    let mut out = Vec::new();
    r.begin(&mut out, &Source { name: name.into() })
        .expect("begin");
    let sum = pipeline::run_with(
        &mut reader,
        &Options {
            trace: true,
            ..Default::default()
        },
        &mut |c| r.connection(&mut std::io::sink(), c).expect("connection"),
        &mut |_| {},
    )
    .expect("analyse");
    r.end(&mut out, &sum).expect("end");
    String::from_utf8(out).expect("utf-8")
}

/// The page's outline: sections, headings, findings, and per figure the
/// count of each SVG element, one line each.
fn outline(html: &str) -> String {
    let mut out = Vec::new();
    let tags = [
        "svg", "g", "line", "polyline", "polygon", "rect", "circle", "text",
    ];
    let mut rest = html;
    let opens = [
        "<section",
        "<h2",
        "<h3",
        "<table",
        "<article",
        "<figure",
        "<p class=\"nograph\"",
    ];
    loop {
        let next = opens
            .iter()
            .filter_map(|o| rest.find(o).map(|i| (i, *o)))
            .min_by_key(|x| x.0);
        let Some((i, open)) = next else { break };
        rest = &rest[i..];
        let tag_end = rest.find('>').unwrap_or(rest.len());
        let tag = &rest[..tag_end];
        let attr = |name: &str| {
            tag.find(&format!("{name}=\""))
                .map(|a| {
                    let v = &tag[a + name.len() + 2..];
                    v[..v.find('"').unwrap_or(v.len())].to_string()
                })
                .unwrap_or_default()
        };
        match open {
            "<figure" => {
                let end = rest.find("</figure>").unwrap_or(rest.len());
                let body = &rest[..end];
                let counts: Vec<String> = tags
                    .iter()
                    .map(|t| {
                        format!(
                            "{t}={}",
                            body.matches(&format!("<{t} ")).count()
                                + body.matches(&format!("<{t}>")).count()
                        )
                    })
                    .collect();
                out.push(format!(
                    "  figure {}: {}",
                    attr("data-graph"),
                    counts.join(" ")
                ));
                rest = &rest[end..];
            }
            "<article" => out.push(format!("  finding {}", attr("data-finding"))),
            "<table" => out.push(format!("  table {}", attr("class"))),
            "<section" => out.push(format!("section {}", attr("id"))),
            "<p class=\"nograph\"" => out.push(format!("  no graph {}", attr("data-graph"))),
            _ => {
                let close = if open == "<h2" { "</h2>" } else { "</h3>" };
                let end = rest.find(close).unwrap_or(rest.len());
                let text = &rest[tag_end + 1..end];
                let text: String = text.split('<').next().unwrap_or("").trim().to_string();
                out.push(format!("  {} {text}", &open[1..]));
            }
        }
        rest = &rest[1..];
    }
    out.join("\n")
}

#[test]
fn report_structure_of_a_small_capture() {
    let html = render("pku.cap", HtmlOptions::default());
    assert!(html.starts_with("<!DOCTYPE html>"));
    insta::assert_snapshot!("pku_outline", outline(&html));
}

#[test]
fn the_page_is_self_contained() {
    let html = render("thu.cap", HtmlOptions::default());
    // nothing the browser would fetch: no src, no external href, no url()
    for bad in [
        "src=",
        "href=\"http",
        "href=\"//",
        "url(",
        "@import",
        "<link",
        "<iframe",
        "<img",
    ] {
        assert!(!html.contains(bad), "the page contains {bad}");
    }
    // links only to its own sections
    for (i, _) in html.match_indices("href=\"") {
        let target = &html[i + 6..];
        assert!(
            target.starts_with('#'),
            "link to {}",
            &target[..target.len().min(40)]
        );
        let id = &target[1..target.find('"').unwrap_or(1)];
        assert!(
            html.contains(&format!("id=\"{id}\"")),
            "link to a missing #{id}"
        );
    }
}

#[test]
fn a_long_connection_draws_a_bounded_page() {
    // the IO graph at 1 µs has ~350 k intervals: reduced per pixel column
    let opts = HtmlOptions {
        io_interval_ms: 0.001,
        ..HtmlOptions::default()
    };
    let html = render("thu.cap", opts);
    let io = &html[html.find("data-graph=\"io\"").expect("io graph")..];
    let io = &io[..io.find("</figure>").unwrap_or(io.len())];
    let lines = io.matches("<polyline").count() + io.matches("<line").count();
    assert!(
        lines < 4 * rttlens_report::html::plot::COLUMNS,
        "{lines} elements"
    );
    assert!(io.contains("busiest"), "the reduction is said");
}
