//! `analyze --format html` shows each QUIC connection as it shows a TCP
//! one: its endpoints, its ladder (`quic-handshake` in ms and RTTs) and
//! its findings, checked on public QUIC captures against what tshark
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

fn html(args: &[&str], file: &Path) -> String {
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
        let file = public(name);
        let keylog = keylog.map(|k| public(k).display().to_string());
        let args: Vec<&str> = match &keylog {
            Some(k) => vec!["--keylog", k.as_str()],
            None => Vec::new(),
        };
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
