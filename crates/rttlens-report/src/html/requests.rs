//! The requests table of a connection: one row per HTTP request or
//! HTTP/2 stream, with the server's `Server-Timing` beside its think time
//! when a response had one.

use std::io::{self, Write};

use rttlens_core::model::{ConnReport, ServerTimingRow};

use super::esc;

/// Every HTTP request or HTTP/2 stream as a row, with a bar for its wait
/// (its share of the longest).
pub(super) fn requests(w: &mut dyn Write, c: &ConnReport) -> io::Result<()> {
    if c.requests.is_empty() {
        return Ok(());
    }
    let longest = c
        .requests
        .iter()
        .filter_map(|r| r.ttfb_ms)
        .fold(1e-9, f64::max);
    let opt = |v: Option<f64>| v.map_or_else(|| "–".to_string(), |x| format!("{x:.2}"));
    // the server's own account, beside its think time, only when a
    // response had one (the table is unchanged otherwise)
    let timed = c.requests.iter().any(|r| r.server_timing.is_some());
    let st_head = if timed {
        "<th data-type=\"num\">Server-Timing ms</th><th data-type=\"num\">unaccounted ms</th>"
    } else {
        ""
    };
    writeln!(
        w,
        "<table class=\"requests sortable\"><thead><tr><th data-type=\"num\">#</th><th data-type=\"num\">stream</th><th>request</th><th data-type=\"num\">status</th><th data-type=\"num\">sent ms</th><th data-type=\"num\">TTFB ms</th><th data-type=\"num\">RTTs</th><th data-type=\"num\">server think ms</th>{st_head}<th data-type=\"num\">behind ms</th><th data-type=\"num\">transfer ms</th><th data-type=\"num\">bytes</th><th>frames</th><th class=\"bar\"></th></tr></thead><tbody>"
    )?;
    for r in &c.requests {
        let request = match (&r.method, &r.target) {
            (Some(m), Some(t)) => format!("{m} {t}"),
            _ => "(request not seen)".to_string(),
        };
        let num = |v: Option<f64>| v.map_or(String::new(), |x| format!(" data-v=\"{x}\""));
        writeln!(
            w,
            "<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\"{}>{}</td><td class=\"n\"{}>{}</td><td class=\"n\">{}</td><td class=\"n\"{}>{}</td>{}<td class=\"n\">{:.2}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}→{}</td><td class=\"bar\"><span style=\"width:{:.1}%\"></span></td></tr>",
            r.index,
            r.stream.map_or_else(String::new, |s| s.to_string()),
            esc(&request),
            r.status.map_or_else(|| "–".to_string(), |s| s.to_string()),
            num(r.sent_ms),
            opt(r.sent_ms),
            num(r.ttfb_ms),
            opt(r.ttfb_ms),
            opt(r.ttfb_rtts),
            num(r.server_think_ms),
            opt(r.server_think_ms),
            if timed {
                server_timing_cells(r.server_timing.as_ref())
            } else {
                String::new()
            },
            r.behind_ms,
            opt(r.transfer_ms),
            r.response_bytes.map_or_else(|| "–".to_string(), |b| b.to_string()),
            r.request_frame.map_or_else(|| "?".to_string(), |f| f.to_string()),
            r.response_end_frame
                .or(r.response_frame)
                .map_or_else(|| "?".to_string(), |f| f.to_string()),
            100.0 * r.ttfb_ms.unwrap_or(0.0) / longest,
        )?;
    }
    writeln!(w, "</tbody></table>")
}

/// The two cells of a row's `Server-Timing`: the reported total (its
/// metrics and frame in the cell's title) and the think time it leaves
/// unaccounted.
fn server_timing_cells(st: Option<&ServerTimingRow>) -> String {
    let Some(st) = st else {
        return "<td class=\"n\">–</td><td class=\"n\">–</td>".into();
    };
    let metrics: Vec<String> = st
        .metrics
        .iter()
        .map(|m| match m.dur_ms {
            Some(d) => format!("{} {d:.1} ms", m.name),
            None => m.name.clone(),
        })
        .collect();
    let title = format!(
        "{} · frame {}{}",
        metrics.join(", "),
        st.frame,
        if st.trailer { " (trailers)" } else { "" }
    );
    let cell = |v: Option<f64>| match v {
        Some(x) => format!(
            "<td class=\"n\" data-v=\"{x}\" title=\"{}\">{x:.2}</td>",
            esc(&title)
        ),
        None => format!("<td class=\"n\" title=\"{}\">–</td>", esc(&title)),
    };
    format!("{}{}", cell(st.total_ms), cell(st.unaccounted_ms))
}
