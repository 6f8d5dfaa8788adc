//! The page around the captures' fragments: its head, its style (one inline
//! sheet, no external font) and the few lines of script that sort the
//! tables.

use std::io::{self, Write};

use super::esc;

/// A whole page: `preface` (HTML, e.g. the lab's table) and then each
/// capture's fragment.
///
/// # Errors
/// Writing failed.
pub fn page(
    w: &mut dyn Write,
    title: &str,
    preface: &str,
    fragments: &[Vec<u8>],
) -> io::Result<()> {
    write!(
        w,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" content=\"rttlens {}\">\n<title>rttlens · {}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<header><h1>rttlens report</h1><p class=\"source\">{}</p></header>\n<main>\n",
        env!("CARGO_PKG_VERSION"),
        esc(title),
        esc(title)
    )?;
    w.write_all(preface.as_bytes())?;
    for f in fragments {
        w.write_all(f)?;
    }
    write!(
        w,
        "</main>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n"
    )
}

const CSS: &str = r#"body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #1d232b; background: #fff; }
header { padding: 12px 24px; background: #1d3557; color: #fff; }
header h1 { margin: 0; font-size: 20px; }
header .source { margin: 2px 0 0; font-family: ui-monospace, monospace; font-size: 13px; opacity: .85; }
main { max-width: 1120px; margin: 0 auto; padding: 8px 24px 48px; }
h2 { border-bottom: 2px solid #1d3557; padding-bottom: 4px; }
h3 { margin-top: 28px; }
h3 .ends { font-weight: normal; font-family: ui-monospace, monospace; font-size: 14px; }
.summary { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; }
.summary dt { font-weight: 600; }
.summary dd { margin: 0; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { padding: 3px 8px; border-bottom: 1px solid #e3e7ed; text-align: left; vertical-align: top; }
td.n, .conns td[data-v], .finding-counts td[data-v] { text-align: right; font-variant-numeric: tabular-nums; }
table.sortable th { cursor: pointer; user-select: none; background: #f4f6f9; }
table.sortable th.asc::after { content: " ▲"; } table.sortable th.desc::after { content: " ▼"; }
.phases td.bar { width: 160px; } .phases td.bar span { display: block; height: 10px; background: #457b9d; min-width: 1px; }
.pop-tail td.bar { width: 160px; } .pop-tail td.bar span { display: block; height: 10px; background: #457b9d; min-width: 1px; }
.population h4 { margin: 18px 0 4px; } .population h4 .count { font-weight: normal; font-size: 13px; color: #666; }
.pop-groups th.ph { text-align: center; border-bottom: none; } th.n { text-align: right; } .population p.tail { font-size: 14px; } .pop-phases th, .pop-groups th, .pop-tail th { background: #f4f6f9; }
.finding.population { border-left-color: #1d3557; background: #f5f7fb; }
.requests td.bar { width: 120px; } .requests td.bar span { display: block; height: 10px; background: #e6550d; min-width: 1px; }
.meta { font-size: 13px; color: #444; } .note { font-size: 13px; color: #666; }
.finding { border-left: 4px solid #e6550d; padding: 2px 12px; margin: 12px 0; background: #fff8f3; }
.finding h4 { margin: 6px 0; } .finding .cost { margin: 2px 0; font-size: 13px; }
.evidence { font-size: 13px; margin: 4px 0; } .evidence .frame { font-family: ui-monospace, monospace; color: #e6550d; }
.fix { font-size: 13px; } .refs { font-size: 12px; color: #666; }
figure.graph { margin: 18px 0; } figure.graph svg { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 12px; color: #555; margin-top: 4px; }
.nograph { font-size: 13px; color: #888; font-style: italic; }
pre.preface { font-size: 12px; overflow-x: auto; background: #f4f6f9; padding: 8px; }
@media print { header { background: none; color: #000; } figure.graph, .finding, tr { break-inside: avoid; } table.sortable th { cursor: auto; } main { max-width: none; } }
"#;

/// Sorts a table by the clicked column (numbers by `data-v`).
const SCRIPT: &str = r#"document.querySelectorAll("table.sortable").forEach(function (t) {
  t.querySelectorAll("th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var num = th.dataset.type === "num";
      var asc = !th.classList.contains("asc");
      t.querySelectorAll("th").forEach(function (h) { h.classList.remove("asc", "desc"); });
      th.classList.add(asc ? "asc" : "desc");
      var body = t.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[col], y = b.cells[col];
        var c = num ? parseFloat(x.dataset.v) - parseFloat(y.dataset.v)
                    : x.textContent.localeCompare(y.textContent);
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"#;
