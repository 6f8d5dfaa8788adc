//! `analyze --format html` shows each QUIC connection as it shows a TCP
//! one: its endpoints, its ladder (`quic-handshake` in ms and RTTs), its
//! findings and the graphs that apply (the ladder diagram, the IO graph,
//! the RTT samples), checked on public QUIC captures against what tshark
//! shows of them. FAILS (never skips) without tshark or the shared
//! captures.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{analyze_ok, public_capture as public, require_tshark};

/// tshark's `fields` of the frames matching `filter`, one line each.
fn tshark(file: &PathBuf, filter: &str, fields: &[&str]) -> Vec<String> {
    require_tshark();
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(file).args(["-Y", filter, "-T", "fields"]);
    cmd.args(["-E", "separator=|"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("run tshark");
    assert!(
        out.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The public capture `name` and the arguments that give it its key log
/// (none without one).
fn input(name: &str, keylog: Option<&str>) -> (PathBuf, Vec<String>) {
    let args = keylog.map_or_else(Vec::new, |k| {
        vec!["--keylog".to_string(), public(k).display().to_string()]
    });
    (public(name), args)
}

fn html(args: &[String], file: &Path) -> String {
    let mut a: Vec<&OsStr> = vec![OsStr::new("--format"), OsStr::new("html")];
    a.extend(args.iter().map(OsStr::new));
    a.push(file.as_os_str());
    String::from_utf8(analyze_ok(a)).expect("UTF-8 HTML")
}

/// The HTML of QUIC connection `i` (its `<section>`).
fn quic_conn(page: &str, i: usize) -> &str {
    let start = page
        .find(&format!("id=\"quic-{i}\""))
        .unwrap_or_else(|| panic!("no QUIC connection {i} section"));
    let rest = &page[start..];
    &rest[..rest.find("</section>").expect("section end")]
}

#[test]
fn quic_connections_have_their_ladder_and_findings_in_html() {
    for (name, keylog) in [
        ("sv_quic-retry.pcap", None),
        ("illustrated_quic.pcap", Some("illustrated_quic.keylog")),
    ] {
        let (file, args) = input(name, keylog);
        let page = html(&args, &file);
        assert!(page.contains("<h3>QUIC connections</h3>"), "{name}");
        // tshark: one connection, the client's Initial first
        let first = tshark(
            &file,
            "quic && frame.number == 1",
            &["ip.src", "udp.srcport", "ip.dst", "udp.dstport"],
        );
        let f: Vec<&str> = first[0].split('|').collect();
        let s = quic_conn(&page, 0);
        assert!(
            s.contains(&format!("{}:{} → {}:{}", f[0], f[1], f[2], f[3])),
            "{name}: endpoints as tshark's frame 1: {s}"
        );
        // the ladder's handshake row, in ms and RTTs (both captures have
        // ACK frames, so an RTT)
        let row = s
            .split("<tr>")
            .find(|r| r.starts_with("<td>quic-handshake</td>"))
            .unwrap_or_else(|| panic!("{name}: no quic-handshake row: {s}"));
        let cells: Vec<&str> = row
            .split("<td class=\"n\">")
            .skip(1)
            .map(|c| c.split('<').next().unwrap_or(""))
            .collect();
        let ms: f64 = cells[0].parse().expect("ms");
        let rtts: f64 = cells[1].parse().expect("RTTs");
        assert!(ms > 0.0 && rtts >= 1.0, "{name}: {ms} ms, {rtts} RTTs");
        // a Retry packet (tshark's long packet type 3) is named
        let retries = tshark(&file, "quic.long.packet_type == 3", &["frame.number"]);
        assert_eq!(
            s.contains("data-finding=\"quic-retry\""),
            !retries.is_empty(),
            "{name}: quic-retry finding iff tshark sees a Retry {retries:?}"
        );
        // the summary counts the QUIC connection, its datagrams (tshark's
        // UDP frames) and its findings, as it does a TCP connection's
        let udp = tshark(&file, "udp", &["frame.number"]).len();
        assert!(
            page.contains(&format!("TCP segments, {udp} QUIC datagrams")),
            "{name}: {udp} QUIC datagrams in the summary"
        );
        assert!(
            page.contains("0 TCP (at most 0 open at once), 1 QUIC"),
            "{name}"
        );
        assert!(
            page.contains("1 connection; click a heading to sort."),
            "{name}: the connections table counts it"
        );
        assert!(
            page.contains("<a href=\"#quic-0\">q0</a>"),
            "{name}: its row links to its section"
        );
        if !retries.is_empty() {
            assert!(
                !page.contains("No finding: nothing cost more than it should"),
                "{name}: its finding counts"
            );
            assert!(
                page.contains("<tr><td>quic-retry</td><td data-v=\"1\">1</td>"),
                "{name}"
            );
        }
    }
    // no QUIC, no section
    let page = html(&[], &public("zeek_tls13-hrr.pcap"));
    assert!(!page.contains("QUIC connections"));
}

/// Per figure of `section`, its name and the count of each SVG element
/// (as `crates/rttlens-report/tests/html.rs`'s outline counts a TCP
/// connection's).
fn figures(section: &str) -> Vec<(String, Vec<(&'static str, usize)>)> {
    let tags = [
        "svg", "g", "line", "polyline", "polygon", "rect", "circle", "text",
    ];
    section
        .split("<figure class=\"graph\" data-graph=\"")
        .skip(1)
        .map(|f| {
            let name = f[..f.find('"').expect("graph name")].to_string();
            let body = &f[..f.find("</figure>").expect("figure end")];
            let counts = tags
                .iter()
                .map(|t| {
                    let n = body.matches(&format!("<{t} ")).count()
                        + body.matches(&format!("<{t}>")).count();
                    (*t, n)
                })
                .collect();
            (name, counts)
        })
        .collect()
}

/// The figure `name` of `figs`, its count of `tag`.
fn count(figs: &[(String, Vec<(&'static str, usize)>)], name: &str, tag: &str) -> usize {
    let (_, counts) = figs
        .iter()
        .find(|f| f.0 == name)
        .unwrap_or_else(|| panic!("no {name} figure"));
    counts.iter().find(|c| c.0 == tag).map_or(0, |c| c.1)
}

#[test]
fn quic_connections_have_their_graphs() {
    for (name, keylog) in [
        ("illustrated_quic.pcap", Some("illustrated_quic.keylog")),
        ("zeek_quic-interop-zerortt.pcap", None),
        ("sv_quic-retry.pcap", None),
    ] {
        let (file, args) = input(name, keylog);
        let page = html(&args, &file);
        let mut a: Vec<&OsStr> = vec![OsStr::new("--format"), OsStr::new("json")];
        a.extend(args.iter().map(OsStr::new));
        a.push(file.as_os_str());
        let json: serde_json::Value = serde_json::from_slice(&analyze_ok(a)).expect("JSON");
        let quic: Vec<&serde_json::Value> = json["connections"]
            .as_array()
            .expect("connections")
            .iter()
            .filter(|c| c["transport"] == "quic")
            .collect();
        assert!(!quic.is_empty(), "{name}: QUIC connections");
        for (i, q) in quic.iter().enumerate() {
            let s = quic_conn(&page, i);
            let figs = figures(s);
            let names: Vec<&str> = figs.iter().map(|f| f.0.as_str()).collect();
            assert_eq!(names, ["ladder", "io", "rtt"], "{name} q{i}: its graphs");
            for (g, _) in &figs {
                assert_eq!(count(&figs, g, "svg"), 1, "{name} q{i} {g}: one SVG");
            }
            // the ladder: an arrow (a line and its head) per datagram of
            // the connection's UDP 4-tuple as tshark counts them, the
            // first 60 drawn
            let client = q["client"].as_str().expect("client");
            let (ip, port) = client.rsplit_once(':').expect("address:port");
            let datagrams = tshark(
                &file,
                &format!("udp.port == {port} && ip.addr == {ip}"),
                &["frame.number"],
            )
            .len();
            assert_eq!(
                q["datagrams"][0].as_u64().unwrap_or(0) + q["datagrams"][1].as_u64().unwrap_or(0),
                datagrams as u64,
                "{name} q{i}: datagrams as tshark's"
            );
            let arrows = s.matches("<g class=\"packet\"").count();
            assert_eq!(
                arrows,
                datagrams.min(60),
                "{name} q{i}: one arrow a datagram"
            );
            assert_eq!(count(&figs, "ladder", "polygon"), arrows, "{name} q{i}");
            assert!(
                s.contains(&format!("The first {arrows} of {datagrams} datagrams.")),
                "{name} q{i}: the ladder's caption counts them"
            );
            // the client's first Initial is named on the first arrow
            let tip = s
                .split("<g class=\"packet\" data-frame=\"")
                .nth(1)
                .expect("first arrow");
            assert!(
                tip.contains("client → server, Initial"),
                "{name} q{i}: the first datagram is the client's Initial: {}",
                &tip[..tip.find("</title>").unwrap_or(0)]
            );
            // the IO graph: one bar per direction and busy interval
            assert!(count(&figs, "io", "polyline") > 0, "{name} q{i}: IO bars");
            // the RTT graph: a dot per ACK-frame sample, and one per
            // series in the legend
            let samples = q["rtt"]["samples"].as_u64().unwrap_or(0) as usize;
            let series = [&q["rtt"]["client_half_ms"], &q["rtt"]["server_half_ms"]]
                .iter()
                .filter(|h| !h.is_null())
                .count();
            assert!(samples > 0, "{name} q{i}: RTT samples");
            assert_eq!(
                count(&figs, "rtt", "circle"),
                samples + series,
                "{name} q{i}: the RTT samples drawn"
            );
        }
        // the Retry is drawn and the finding pinned to its frames
        let retries = tshark(&file, "quic.long.packet_type == 3", &["frame.number"]);
        for f in &retries {
            let s = quic_conn(&page, 0);
            assert!(
                s.contains(&format!("data-frame=\"{f}\"><title>frame {f} at"))
                    && s.contains(&format!("<text class=\"pin\" data-frame=\"{f}\"")),
                "{name}: the Retry in frame {f} drawn and pinned"
            );
        }
        assert!(
            args.is_empty() || page.contains("HANDSHAKE_DONE"),
            "{name}: with the key log the frames are named"
        );
    }
}
