//! `--format html` and `--svg` as users drive them, and the page as a real
//! browser draws it: Debian's Chromium, headless, takes a screenshot and
//! dumps the DOM it laid out; the graphs must be there and not empty, the
//! PKU flight per round flat and THU's growing, and the page must not ask
//! the network for anything: the browser's Resource Timing list (every
//! http(s) fetch a page makes, failed ones included) must be empty, which
//! a control page with one remote image shows the check can see. Chromium's
//! proxy is a local listener that answers nothing, so neither the page nor
//! the browser's own background requests leave the machine.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

mod common;
use common::{bin, capture, scratch};

/// Chromium and the lab each want the machine to themselves: a browser
/// drawing beside the lab's server on two cores delays its answers by
/// milliseconds, which the lab's clean control rightly reports as the
/// server's think time.
static HEAVY: Mutex<()> = Mutex::new(());

fn heavy() -> MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

fn report(name: &str, extra: &[&str]) -> PathBuf {
    let out = scratch(&format!("{name}.html"));
    let run = bin()
        .args(["analyze", "--no-progress", "--format", "html", "-o"])
        .arg(&out)
        .args(extra)
        .arg(capture(name))
        .output()
        .expect("run rttlens");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.stdout.is_empty(), "with -o nothing goes to stdout");
    out
}

/// Debian's Chromium, or a clear failure: `scripts/deps test` installs it.
fn chromium() -> PathBuf {
    for p in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!("chromium is missing: `scripts/deps test` installs it (Debian package chromium)");
}

/// A proxy that answers nothing: what Chromium asks for stays here.
struct Trap {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Trap {
    fn new() -> Trap {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind the trap");
        l.set_nonblocking(true).expect("nonblocking");
        let port = l.local_addr().expect("addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            // bounded: the test stops it, and it gives up after 5 minutes
            let started = Instant::now();
            while !s.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(300) {
                // an accepted connection is dropped at once: the request fails
                if l.accept().is_err() {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        });
        Trap {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Trap {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Run headless Chromium on `page` with `args`; killed after 90 s.
fn browse(page: &Path, trap: &Trap, args: &[String]) -> Vec<u8> {
    let profile = scratch(&format!("profile-{}", trap.port));
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-extensions",
            "--disable-sync",
            "--window-size=1280,9000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--proxy-server=http://127.0.0.1:{}", trap.port))
        .arg("--proxy-bypass-list=<-loopback>")
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stdout.read_to_end(&mut v);
        v
    });
    let started = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("chromium did not finish {} within 90 s", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().expect("reader")
}

/// A copy of `page` that, once loaded, writes every resource the browser
/// fetched over the network (Resource Timing) into `data-resources` on the
/// root element, `none` when there was none.
fn with_resource_probe(page: &Path) -> PathBuf {
    let html = std::fs::read_to_string(page).expect("read page");
    let probe = "<script>window.addEventListener('load', function () { document.documentElement.setAttribute('data-resources', performance.getEntriesByType('resource').map(function (e) { return e.name; }).join(' ') || 'none'); });</script>";
    let at = html.rfind("</body>").expect("</body>");
    let out = page.with_extension("probe.html");
    std::fs::write(&out, format!("{}{probe}{}", &html[..at], &html[at..])).expect("write");
    out
}

/// The `data-resources` the probe wrote into a dumped DOM.
fn resources(dom: &str) -> String {
    let i = dom
        .find("data-resources=\"")
        .expect("the resource probe ran")
        + 16;
    dom[i..].split('"').next().unwrap_or("").to_string()
}

/// The elements of one figure in the DOM Chromium built.
fn figure<'a>(dom: &'a str, name: &str) -> &'a str {
    let start = dom
        .find(&format!("data-graph=\"{name}\""))
        .unwrap_or_else(|| panic!("no {name} graph in the page"));
    let rest = &dom[start..];
    &rest[..rest.find("</figure>").unwrap_or(rest.len())]
}

fn count(s: &str, tag: &str) -> usize {
    s.matches(&format!("<{tag} ")).count()
}

/// A numeric attribute of an element's attribute list (`x="96" y=…`).
fn attr(attrs: &str, name: &str) -> Option<f64> {
    let attrs = format!(" {attrs}");
    let i = attrs.find(&format!(" {name}=\""))? + name.len() + 3;
    attrs[i..].split('"').next()?.parse().ok()
}

/// The bars of the flight-per-round graph, left to right, as heights (px):
/// the filled rectangles that are neither the background, the legend box
/// nor a legend swatch.
fn flight_bars(dom: &str) -> Vec<f64> {
    let f = figure(dom, "flight");
    let mut bars: Vec<(f64, f64)> = f
        .split("<rect ")
        .skip(1)
        .map(|r| &r[..r.find('>').unwrap_or(r.len())])
        .filter(|r| !r.contains("fill=\"#FFFFFF\"") && !r.contains("fill=\"none\""))
        .filter_map(|r| Some((attr(r, "x")?, attr(r, "width")?, attr(r, "height")?)))
        .filter(|&(_, w, h)| w > 14.0 && w < 600.0 && h > 12.0)
        .map(|(x, _, h)| (x, h))
        .collect();
    bars.sort_by(|a, b| a.0.total_cmp(&b.0));
    bars.into_iter().map(|b| b.1).collect()
}

/// Share of the screenshot's pixels that are coloured (not white, black
/// or grey): the graphs' series, bands and pins.
fn coloured_share(png_path: &Path) -> f64 {
    let file = std::fs::File::open(png_path).expect("screenshot");
    let mut dec = png::Decoder::new(std::io::BufReader::new(file));
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = dec.read_info().expect("png header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("png data");
    let channels = info.color_type.samples();
    assert!(channels >= 3, "colour screenshot");
    let px = &buf[..info.buffer_size()];
    let n = px.len() / channels;
    let coloured = px
        .chunks(channels)
        .filter(|p| {
            let (mx, mn) = (p[..3].iter().max().copied(), p[..3].iter().min().copied());
            mx.zip(mn).is_some_and(|(a, b)| a - b > 60)
        })
        .count();
    coloured as f64 / n as f64
}

#[test]
fn chromium_draws_the_pku_and_thu_reports_without_the_network() {
    let _heavy = heavy();
    let trap = Trap::new();
    let mut bars = Vec::new();
    for name in ["pku.cap", "thu.cap"] {
        let page = report(name, &[]);
        let shot = scratch(&format!("{name}.png"));
        browse(&page, &trap, &[format!("--screenshot={}", shot.display())]);
        let share = coloured_share(&shot);
        assert!(
            share > 0.01,
            "{name}: {:.2} % coloured pixels",
            100.0 * share
        );
        let probed = with_resource_probe(&page);
        let dom = String::from_utf8(browse(&probed, &trap, &["--dump-dom".to_string()]))
            .expect("utf-8 DOM");
        assert_eq!(
            resources(&dom),
            "none",
            "{name}: the page fetched something"
        );
        assert!(dom.contains("<figure"), "{name}: Chromium dumped no page");
        // every graph is there and has its series
        let ladder = figure(&dom, "ladder");
        assert_eq!(
            count(ladder, "polygon"),
            60,
            "{name}: 60 arrows in the ladder"
        );
        assert!(ladder.contains("ClientHello"), "{name}: TLS messages named");
        assert!(count(ladder, "text") > 100);
        assert!(
            count(figure(&dom, "time-sequence"), "polyline") > 100,
            "{name}"
        );
        assert!(count(figure(&dom, "io"), "polyline") > 20, "{name}");
        assert!(count(figure(&dom, "rtt"), "circle") > 100, "{name}");
        assert!(
            count(figure(&dom, "time-sequence"), "circle") > 0,
            "{name}: findings pinned on the time-sequence graph"
        );
        bars.push(flight_bars(&dom));
        // the script ran: the connections table is sortable
        assert!(dom.contains("class=\"conns sortable\""));
    }
    // PKU's plateau and THU's growth, as a reader sees them
    let (pku, thu) = (&bars[0], &bars[1]);
    assert!(pku.len() >= 8 && thu.len() >= 6, "bars: {pku:?} {thu:?}");
    let plateau = &pku[..pku.len() - 1];
    let (lo, hi) = plateau
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), &b| (l.min(b), h.max(b)));
    assert!(hi / lo < 1.05, "PKU flat: {pku:?}");
    let thu_max = thu.iter().copied().fold(0.0, f64::max);
    assert!(thu_max > 4.0 * thu[0], "THU grows: {thu:?}");
    // the control: one remote image, and the probe sees it
    let control = scratch("control.html");
    std::fs::write(
        &control,
        "<!DOCTYPE html><html><body><img src=\"http://example.invalid/x.png\"></body></html>",
    )
    .expect("write control");
    let dom = String::from_utf8(browse(
        &with_resource_probe(&control),
        &trap,
        &["--dump-dom".to_string()],
    ))
    .expect("utf-8 DOM");
    assert_eq!(resources(&dom), "http://example.invalid/x.png");
}

#[test]
fn svg_files_beside_text_output() {
    let dir = scratch("svg");
    let _ = std::fs::remove_dir_all(&dir);
    let out = bin()
        .args(["analyze", "--no-progress", "--svg"])
        .arg(&dir)
        .arg(capture("pku.cap"))
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // the text report is unchanged by --svg
    let plain = bin()
        .args(["analyze", "--no-progress"])
        .arg(capture("pku.cap"))
        .output()
        .expect("run");
    assert_eq!(out.stdout, plain.stdout);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("svg dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "conn-0-flight.svg",
            "conn-0-io.svg",
            "conn-0-ladder.svg",
            "conn-0-rtt.svg",
            "conn-0-time-sequence.svg"
        ]
    );
    for n in names {
        let svg = std::fs::read_to_string(dir.join(&n)).expect("read");
        assert!(
            svg.starts_with("<svg") && svg.contains("xmlns=\"http://www.w3.org/2000/svg\""),
            "{n}"
        );
        assert!(svg.trim_end().ends_with("</svg>"), "{n}");
    }
}

#[test]
fn bad_io_interval_is_a_usage_error() {
    let out = bin()
        .args(["analyze", "--format", "html", "--io-interval", "soon"])
        .arg(capture("pku.cap"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("io-interval"));
}

#[test]
fn html_to_stdout_and_the_io_interval() {
    let out = bin()
        .args(["analyze", "--format", "html", "--io-interval", "10ms"])
        .arg(capture("thu.cap"))
        .output()
        .expect("run");
    assert!(out.status.success());
    let html = String::from_utf8_lossy(&out.stdout);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("IO graph: packets per 10 ms"));
}

/// `rttlens lab --format html`: one page with the lab's table and a part
/// per scenario, drawn from its capture; the scratch copies are gone after.
/// Needs root and the lab's programs (fails saying so).
#[cfg(feature = "lab")]
#[test]
fn lab_report_in_one_page() {
    let _heavy = heavy();
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("the lab HTML test needs root, /dev/net/tun and iproute2: {e}");
    }
    let page = scratch("lab.html");
    let svg = scratch("lab-svg");
    let _ = std::fs::remove_dir_all(&svg);
    let child = bin()
        .args([
            "lab",
            "clean",
            "server-think",
            "--rtt",
            "20ms",
            "--format",
            "html",
            "-o",
        ])
        .arg(&page)
        .arg("--svg")
        .arg(&svg)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rttlens lab");
    let scratch_dir = std::env::temp_dir().join(format!("rttlens-lab-pictures-{}", child.id()));
    let out = child.wait_with_output().expect("wait");
    // on failure, the lab's table (in the page, not on stderr) says which
    // scenario did not hold and why
    let table = std::fs::read_to_string(&page)
        .ok()
        .and_then(|h| {
            let start = h.find("<pre class=\"preface\">")?;
            let end = h[start..].find("</pre>")? + start;
            Some(h[start..end].to_string())
        })
        .unwrap_or_default();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{table}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!scratch_dir.exists(), "the captures drawn from are removed");
    let html = std::fs::read_to_string(&page).expect("page");
    assert!(html.contains("<pre class=\"preface\">"), "the lab's table");
    for s in ["clean", "server-think"] {
        assert!(
            html.contains(&format!("id=\"{s}-overview\"")),
            "{s}: its part"
        );
        assert!(
            html.contains(&format!("id=\"{s}-conn-0\"")),
            "{s}: its connection"
        );
        assert!(
            svg.join(format!("{s}-conn-0-ladder.svg")).exists(),
            "{s}: SVG files"
        );
    }
    assert!(html.contains("server-think (held)"));
    // the finding is pinned on its frames in the server-think part
    let part = &html[html.find("id=\"server-think-overview\"").expect("part")..];
    assert!(part.contains("data-finding=\"server-think-time\""));
    assert!(part.contains("class=\"pin\""));
}

/// The population view: a storm of 40 connections the test captures at
/// the lab link (`rttlens bench --lab builtin --capture`; no shared capture
/// holds the 20 connections the view needs). The page has the population
/// section, its phase table gives the JSON's connect p50, and the capture
/// over time is drawn. Needs root and the lab's programs (fails saying so).
#[cfg(all(feature = "lab", feature = "bench"))]
#[test]
fn population_section_of_a_captured_storm() {
    let _heavy = heavy();
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("the population HTML test needs root, /dev/net/tun and iproute2: {e}");
    }
    let cap = scratch("population.pcapng");
    let run = bin()
        .args([
            "bench",
            "--lab",
            "builtin",
            "--rtt",
            "5ms",
            "--rate",
            "200",
            "-n",
            "40",
            "--warmup",
            "2",
            "--capture",
        ])
        .arg(&cap)
        .output()
        .expect("run rttlens bench");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let analyze = |format: &str| {
        // (this test needs the lab feature: the helper is named in full)
        let out = common::analyze_ok([
            std::ffi::OsStr::new("--format"),
            std::ffi::OsStr::new(format),
            cap.as_os_str(),
        ]);
        String::from_utf8(out).expect("utf-8")
    };
    let doc: serde_json::Value = serde_json::from_str(&analyze("json")).expect("JSON");
    let connect = doc["capture"]["phases"]
        .as_array()
        .expect("capture.phases")
        .iter()
        .find(|p| p["phase"] == "connect")
        .expect("a connect phase")
        .clone();
    let p50 = connect["ms"]["p50"].as_f64().expect("p50");
    let count = connect["ms"]["count"].as_u64().expect("count");
    assert!(count >= 40, "{connect}");
    let html = analyze("html");
    let at = html
        .find("id=\"population\"")
        .expect("the population section");
    let section = &html[at..];
    assert!(section.contains("<h3>Population</h3>"));
    // the phase table's connect row: its count, and its p50 as the JSON has it
    let row = section
        .split("<tr data-phase=\"connect\">")
        .nth(1)
        .and_then(|r| r.split("</tr>").next())
        .expect("the phase table's connect row");
    let cells: Vec<&str> = row
        .split("</td>")
        .map(|c| c.rsplit('>').next().unwrap_or(""))
        .collect();
    assert_eq!(cells[0], "connect", "{row}");
    assert_eq!(cells[1], count.to_string(), "{row}");
    let shown: f64 = cells[2].parse().expect("p50 in the table");
    assert!(
        (shown - p50).abs() <= 0.005 + 1e-9,
        "table p50 {shown} against JSON {p50}: {row}"
    );
    let v = row
        .split("data-v=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .and_then(|v| v.parse::<f64>().ok())
        .expect("the p50's value");
    assert_eq!(v, p50, "{row}");
    // the capture over time, drawn
    let fig = section
        .split("data-graph=\"over-time\"")
        .nth(1)
        .and_then(|f| f.split("</figure>").next())
        .expect("the over-time graph");
    assert!(fig.contains("<svg") && fig.contains("</svg>"), "an SVG");
    assert!(fig.contains("log scale") && fig.contains("<figcaption>"));
    assert!(
        html.find("id=\"population\"") < html.find("<h3>Connections</h3>"),
        "the population view comes before the connections table"
    );
    let _ = std::fs::remove_file(&cap);
}
