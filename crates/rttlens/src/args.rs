//! Command-line arguments (clap derive). Only what the user typed is checked
//! here; opening files and choosing renderers happens in `main.rs`.

use std::path::PathBuf;
use std::str::FromStr;

use clap::{Parser, Subcommand, ValueEnum};
use rttlens_core::filter::Filter;

/// Where the time went, counted in round trips, and why.
#[derive(Debug, Parser)]
#[command(name = "rttlens", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
// parsed once per run: the size of the largest variant does not matter
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Analyse a packet capture (pcap or pcapng, optionally gzip'd; `-` reads stdin).
    Analyze(AnalyzeArgs),
    /// Reproduce each cause in network namespaces (needs root) and check
    /// the findings: `rttlens lab --list`, `rttlens lab [SCENARIO…]`.
    #[cfg(feature = "lab")]
    Lab(LabArgs),
    /// Time a live URL step by step (DNS, TCP, TLS, HTTP) in round trips,
    /// verify resumption, 0-RTT and TCP Fast Open, and explain it from the
    /// probe's own packets.
    #[cfg(feature = "probe")]
    Probe(ProbeArgs),
    /// Load a TLS server with handshakes: open loop (`--rate`, latency from
    /// each connection's intended start) or closed loop (`-c`), a mix of
    /// full, resumed and 0-RTT handshakes, percentiles per phase.
    #[cfg(feature = "bench")]
    Bench(BenchArgs),
    /// A Prometheus exporter of probes (blackbox_exporter's multi-target
    /// pattern): `GET /probe?target=URL&module=NAME` runs one probe with
    /// the module's options and answers its metrics (docs/serve.md).
    #[cfg(feature = "serve")]
    Serve(ServeArgs),
}

/// `rttlens serve` arguments.
#[cfg(feature = "serve")]
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (`127.0.0.1:9115`; port 0 picks a free one,
    /// printed on stderr).
    #[arg(long, default_value = "127.0.0.1:9115", value_name = "ADDR")]
    pub listen: std::net::SocketAddr,
    /// The modules (YAML, docs/serve.md). Without it, the built-in
    /// `http_2xx` (the module `/probe` takes when none is named) and
    /// `https`: the probe's defaults.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Also analyse this interface's traffic live in the background
    /// (`rttlens analyze -i`) and show it on `/metrics`: connections,
    /// finding counts and costs, phase histograms, kernel drops. Needs
    /// CAP_NET_RAW.
    #[arg(long, value_name = "IFACE")]
    pub interface: Option<String>,
    /// At most N probes at once; more get 503.
    #[arg(long, default_value_t = 8, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub max_concurrent: u32,
    /// Probe only targets this permits (repeatable; with the config's
    /// `allow_targets`): a host name (`example.com`, `*.example.com`), an
    /// address or a network (`10.0.0.0/8`), checked after the name is
    /// resolved. Others get 403 and no connection. Without any: every
    /// target (docs/serve.md "Safety").
    #[arg(long = "allow-target", value_name = "HOST|CIDR", value_parser = parse_allow_target)]
    pub allow_target: Vec<String>,
}

/// `--allow-target`: one entry of the allow-list.
#[cfg(feature = "serve")]
fn parse_allow_target(s: &str) -> Result<String, String> {
    rttlens_serve::AllowList::new(&[s]).map(|_| s.to_string())
}

/// `rttlens bench` arguments.
#[cfg(feature = "bench")]
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// `https://` URL of a server you run (loopback, unless
    /// --allow-remote); with --lab, only its path is used.
    #[arg(required_unless_present_any = ["lab", "compare"])]
    pub url: Option<String>,
    /// Open loop: start this many connections per second on a fixed
    /// schedule; latency counts from each one's intended start (the
    /// default, at 100/s).
    #[arg(long, value_name = "PER_SECOND", conflicts_with = "concurrency")]
    pub rate: Option<f64>,
    /// Closed loop: keep N connections at a time (measures capacity; hides
    /// stalls).
    #[arg(short = 'c', long = "concurrency", value_name = "N")]
    pub concurrency: Option<u32>,
    /// Stop starting connections after this long (e.g. 10s, 500ms; the
    /// default is 10s).
    #[arg(long, value_name = "DURATION", conflicts_with = "connections")]
    pub duration: Option<String>,
    /// Make N connections, then stop.
    #[arg(short = 'n', long = "connections", value_name = "N")]
    pub connections: Option<u64>,
    /// Share of each handshake kind: full, resumed (a ticket from an
    /// earlier connection), 0rtt (resumed, the request as early data).
    #[arg(long, default_value = "full=100", value_name = "KIND=WEIGHT,…")]
    pub mix: rttlens_bench::Mix,
    /// Only this TLS version.
    #[arg(long, value_name = "1.2|1.3", value_parser = parse_tls)]
    pub tls: Option<rttlens_probe::TlsVersion>,
    /// Cipher suites to offer, in order (IANA names, e.g.
    /// TLS_AES_128_GCM_SHA256); default rustls' order, AES-256-GCM first.
    #[arg(long, value_delimiter = ',', value_name = "SUITE,…")]
    pub ciphers: Vec<String>,
    /// Send one GET of the URL's path on each connection (`Connection:
    /// close`) and time its first byte. Implied by 0-RTT in the mix.
    #[arg(long)]
    pub request: bool,
    /// Send N requests on each connection, keep-alive between them.
    #[arg(long, value_name = "N")]
    pub requests: Option<u32>,
    /// Give up on a connection after this long (e.g. 10s).
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub timeout: String,
    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Open loop: at most this many connections open at once; later
    /// arrivals are counted as `not-started`.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub max_in_flight: usize,
    /// Unmeasured full connections before the run (default: 16, or with
    /// resumed or 0-RTT in the mix, enough to hold a ticket for each of
    /// them).
    #[arg(long, value_name = "N")]
    pub warmup: Option<u32>,
    /// Also report this server process's CPU time (repeatable).
    #[arg(long = "server-pid", value_name = "PID")]
    pub server_pid: Vec<u32>,
    /// Use ADDR for HOST:PORT instead of resolving it (curl's syntax).
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    pub resolve: Vec<rttlens_probe::ResolveOverride>,
    /// Trust the CA certificates in this PEM file instead of the system's.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Do not verify the server's certificate (the handshake signature
    /// still is).
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// Allow a target that is not on loopback: only a server you run.
    #[arg(long)]
    pub allow_remote: bool,
    /// Start a server in the lab (needs root) and load it across the lab's
    /// delay link: nginx, go (Go's crypto/tls, built with the machine's Go)
    /// or builtin (rustls).
    #[arg(long, value_name = "SERVER", conflicts_with_all = ["allow_remote", "resolve", "server_pid"])]
    pub lab: Option<rttlens_bench::lab::LabServer>,
    /// Round-trip time of the lab link (with --lab).
    #[arg(
        long,
        default_value = "10ms",
        value_name = "DURATION",
        requires = "lab"
    )]
    pub rtt: String,
    /// The lab server's certificate key (with --lab): p256 (ECDSA) or
    /// rsa2048 (a full handshake costs the server an RSA signature).
    #[arg(long, default_value = "p256", value_name = "KEY", requires = "lab")]
    pub lab_cert: rttlens_bench::lab::LabCert,
    /// The lab server's listen backlog (with --lab; default 4096). nginx:
    /// `listen … backlog=N`; builtin: listen(2); Go: the server
    /// namespace's net.core.somaxconn (Go's net.Listen backlog).
    #[arg(long, value_name = "N", requires = "lab",
          value_parser = clap::value_parser!(u32).range(1..=65_535))]
    pub lab_backlog: Option<u32>,
    /// The server namespace's net.ipv4.tcp_syncookies (with --lab): 0
    /// never, 1 when the SYN queue overflows (the kernel's default), 2
    /// always.
    #[arg(long, value_name = "0|1|2", requires = "lab",
          value_parser = clap::value_parser!(u8).range(0..=2))]
    pub lab_syncookies: Option<u8>,
    /// TCP timestamps in the client namespace (with --lab):
    /// net.ipv4.tcp_timestamps on or off (default: the kernel's, on).
    #[arg(long, value_name = "on|off", requires = "lab",
          value_parser = parse_on_off)]
    pub lab_client_timestamps: Option<bool>,
    /// Keep the lab server's files and logs in DIR (with --lab).
    #[arg(long, value_name = "DIR", requires = "lab")]
    pub keep: Option<PathBuf>,
    /// Write every packet of the run to FILE (pcapng, as the client end of
    /// the lab link sees them; with --lab), for `rttlens analyze`.
    #[arg(long, value_name = "FILE", requires = "lab")]
    pub capture: Option<PathBuf>,
    /// Compare two JSON results (`--format json` of earlier runs).
    #[arg(long, num_args = 2, value_names = ["A.json", "B.json"],
          conflicts_with_all = ["url", "lab"])]
    pub compare: Option<Vec<PathBuf>>,
    /// Output format: text, or JSON (docs/bench.md).
    #[arg(long, value_enum, default_value_t = BenchFormat::Text)]
    pub format: BenchFormat,
    /// Write the result to FILE instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Show progress: a bar on a terminal (the default there), plain lines
    /// on stderr about once a second otherwise.
    #[arg(long, conflicts_with = "no_progress")]
    pub progress: bool,
    /// Never show progress.
    #[arg(long)]
    pub no_progress: bool,
}

/// `rttlens bench` output formats.
#[cfg(feature = "bench")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchFormat {
    /// For people.
    Text,
    /// The `rttlens-bench/1` document.
    Json,
}

/// `rttlens probe` arguments (curl's names where curl has the option).
#[cfg(feature = "probe")]
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// `http://` or `https://` URL.
    pub url: String,
    /// Use ADDR for HOST:PORT instead of resolving it (curl's syntax
    /// `host:port:addr`; repeatable).
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    pub resolve: Vec<rttlens_probe::ResolveOverride>,
    /// IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// TCP Fast Open (TCP_FASTOPEN_CONNECT; the client namespace needs
    /// net.ipv4.tcp_fastopen with bit 1).
    #[arg(long)]
    pub tfo: bool,
    /// Only this TLS version.
    #[arg(long, value_name = "1.2|1.3", value_parser = parse_tls)]
    pub tls: Option<rttlens_probe::TlsVersion>,
    /// ALPN protocols to offer, in order: `h2` and `http/1.1` (the one the
    /// server picks is spoken).
    #[arg(long, value_delimiter = ',', default_value = "http/1.1")]
    pub alpn: Vec<String>,
    /// Offer HTTP/2 (ALPN `h2, http/1.1`, as curl's --http2) and speak it
    /// when the server agrees; https:// only, not with --sequence.
    #[arg(long, conflicts_with_all = ["http1_1", "alpn"])]
    pub http2: bool,
    /// HTTP/1.1 only (ALPN `http/1.1`; the default).
    #[arg(long = "http1.1", conflicts_with = "alpn")]
    pub http1_1: bool,
    /// HTTP/3 over QUIC (UDP, ALPN `h3`, TLS 1.3), as curl's --http3-only;
    /// https:// only. -n N resumes after the first attempt and sends 0-RTT
    /// when the ticket allows; --pcap keeps the UDP datagrams.
    #[arg(long, conflicts_with_all = ["http2", "http1_1", "alpn", "tfo"])]
    pub http3: bool,
    /// Trust the CA certificates in this PEM file instead of the system's.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Do not verify the server's certificate.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// Append TLS secrets to FILE (NSS key log format; default
    /// $SSLKEYLOGFILE); with --pcap they are embedded in the pcapng.
    #[arg(long, value_name = "FILE")]
    pub keylog: Option<PathBuf>,
    /// Request method.
    #[arg(short = 'X', long = "request", value_name = "METHOD")]
    pub method: Option<String>,
    /// Extra header `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Request body (POST unless -X says otherwise); `@FILE` reads a file.
    #[arg(short = 'd', long = "data", value_name = "DATA")]
    pub data: Option<String>,
    /// Follow redirects (at most 10).
    #[arg(short = 'L', long)]
    pub location: bool,
    /// Repeat N times and print min / median / p90 / max per phase.
    #[arg(short = 'n', long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub count: u32,
    /// Full handshake → resumed → 0-RTT (with --tfo: TFO cookie → TFO
    /// data), each outcome verified.
    #[arg(long, conflicts_with = "count")]
    pub sequence: bool,
    /// Give up after this long in all (e.g. 5s, 500ms).
    #[arg(long, value_name = "DURATION")]
    pub max_time: Option<String>,
    /// Give up on a connection not established (name lookup, TCP, TLS)
    /// within this long.
    #[arg(long, value_name = "DURATION")]
    pub connect_timeout: Option<String>,
    /// Keep the probe's own capture in FILE (pcapng).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Do not capture the probe's packets (app-level timings only).
    #[arg(long, conflicts_with = "pcap")]
    pub no_capture: bool,
    /// After the connections, trace the path to the target hop by hop
    /// (TCP SYNs to its port, UDP with --http3; needs CAP_NET_RAW): per
    /// hop loss and RTT min/p50/p90/max, the hop where the RTT steps up.
    #[arg(long)]
    pub path: bool,
    /// Rounds of --path (one a second at most).
    #[arg(long, default_value_t = 10, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub path_rounds: u32,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Output file, SVG files, IO graph interval.
    #[command(flatten)]
    pub pictures: PictureArgs,
}

/// `rttlens lab` arguments.
#[cfg(feature = "lab")]
#[derive(Debug, clap::Args)]
pub struct LabArgs {
    /// Scenarios to run (default: all).
    pub scenarios: Vec<String>,
    /// List the scenarios and what each must produce.
    #[arg(long)]
    pub list: bool,
    /// Round-trip time of the lab link (e.g. 40ms, 0.1s).
    #[arg(long, default_value = "40ms")]
    pub rtt: String,
    /// Keep each scenario's captures and server files in DIR/SCENARIO/
    /// (with --verify-fix, the last runs', the fixed one in
    /// DIR/SCENARIO-fixed/).
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Run each scenario that has a fix as it is and with the fix its
    /// finding names applied by the lab, and set the finding's predicted
    /// cost against the saving measured on the ladder (docs/lab.md).
    #[arg(long, conflicts_with = "list")]
    pub verify_fix: bool,
    /// Runs of each variant with --verify-fix: the medians are compared.
    #[arg(long, value_name = "N", default_value_t = 5, requires = "verify_fix",
          value_parser = clap::value_parser!(u32).range(1..=20))]
    pub repeat: u32,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Output file, SVG files, IO graph interval.
    #[command(flatten)]
    pub pictures: PictureArgs,
}

/// Output formats.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// For people.
    Text,
    /// Versioned JSON document (docs/json.md).
    Json,
    /// One self-contained HTML page with the graphs (inline SVG, no
    /// network): use with `-o report.html`.
    Html,
}

/// `rttlens analyze` output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AnalyzeFormat {
    /// For people.
    Text,
    /// Versioned JSON document (docs/json.md).
    Json,
    /// JSON Lines: a header line, one line per connection as it ends, a
    /// summary line (docs/json.md).
    Jsonl,
    /// One self-contained HTML page with the graphs (inline SVG, no
    /// network): use with `-o report.html`.
    Html,
    /// qlog 0.3 (JSON-SEQ) in the directory `-o DIR`: one
    /// `quic-INDEX.sqlog` per QUIC connection, for qvis (docs/quic.md).
    Qlog,
    /// The columnar tables as Parquet files in the directory `-o DIR`:
    /// `connections.parquet`, `findings.parquet`, `requests.parquet`
    /// (docs/schema.md).
    #[cfg(feature = "parquet")]
    Parquet,
    /// The same three tables as Arrow IPC streams, one after the other,
    /// on standard output (or `-o FILE`), for pipes (docs/schema.md).
    #[cfg(feature = "parquet")]
    Arrow,
}

impl AnalyzeFormat {
    /// The format of the pictures' settings (`jsonl` draws as `json`).
    pub fn pictures(self) -> Format {
        match self {
            AnalyzeFormat::Text => Format::Text,
            AnalyzeFormat::Json | AnalyzeFormat::Jsonl | AnalyzeFormat::Qlog => Format::Json,
            AnalyzeFormat::Html => Format::Html,
            #[cfg(feature = "parquet")]
            AnalyzeFormat::Parquet | AnalyzeFormat::Arrow => Format::Json,
        }
    }
}

/// `--tls 1.2|1.3` (also `tls1.3`, `TLSv1.2`).
#[cfg(any(feature = "probe", feature = "bench"))]
fn parse_tls(s: &str) -> Result<rttlens_probe::TlsVersion, String> {
    s.parse()
        .map_err(|_| format!("--tls '{s}': expected 1.2 or 1.3"))
}

/// `on` or `off`.
#[cfg(feature = "bench")]
fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("'{s}': on or off")),
    }
}

fn parse_filter(s: &str) -> Result<Filter, String> {
    Filter::parse(s).map_err(|e| format!("column {}: {}", e.column, e.message))
}

/// Options of the pictures (`--format html`, `--svg`), shared by the
/// subcommands.
#[derive(Debug, Clone, clap::Args)]
pub struct PictureArgs {
    /// Write the report to FILE instead of standard output (`--format
    /// parquet`: the directory of its three files).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write each graph of the connections shown as its own SVG file
    /// in DIR (`conn-INDEX-GRAPH.svg`, a QUIC connection's `quic-INDEX-GRAPH.svg`;
    /// created if missing).
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// Interval of the IO graph (e.g. 1ms, 10ms, 0.5ms).
    #[arg(long, default_value = "1ms", value_name = "DURATION",
          value_parser = parse_interval)]
    pub io_interval: f64,
}

/// A duration as users type it (`5`, `2.5s`, `500ms`, `250us`) in
/// milliseconds; a bare number is in `bare` units (`"s"` as curl's
/// `--max-time`, `"ms"` for RTTs and intervals). Each caller checks its
/// own bounds.
///
/// # Errors
/// Not a number, or a unit other than `us`, `µs`, `ms`, `s`.
pub fn duration_ms(s: &str, bare: &str) -> Result<f64, String> {
    let (num, unit) = s
        .find(|c: char| c.is_alphabetic())
        .map_or((s, bare), |i| s.split_at(i));
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (e.g. 500ms, 2.5s)"))?;
    let ms = match unit.trim() {
        "ms" => v,
        "us" | "µs" => v / 1000.0,
        "s" => v * 1000.0,
        u => return Err(format!("unknown unit `{u}` (us, ms or s)")),
    };
    if ms.is_finite() {
        Ok(ms)
    } else {
        Err(format!("'{s}' is not a duration"))
    }
}

/// `--io-interval`: `1ms`, `0.5ms`, `250us` → milliseconds, at least 1 µs.
fn parse_interval(s: &str) -> Result<f64, String> {
    let ms = duration_ms(s, "ms")?;
    if ms >= 0.001 {
        Ok(ms)
    } else {
        Err(format!("'{s}': the interval must be at least 1us"))
    }
}

/// `--interval` (analyze): `100ms`, `1s`, `60s` → whole milliseconds, at
/// least 1.
fn parse_population_interval(s: &str) -> Result<u64, String> {
    let ms = duration_ms(s, "ms")?;
    if (1.0..=86_400_000.0).contains(&ms) {
        Ok(ms.round() as u64)
    } else {
        Err(format!("'{s}': the interval must be from 1ms to 24h"))
    }
}

/// `--duration` (analyze -i): `30s`, `500ms`, `10m`, `2h`, a bare number
/// is seconds; above 0, at most a year.
#[cfg(feature = "live")]
fn parse_live_duration(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix('m') {
        (n, 60_000.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3_600_000.0)
    } else {
        (t, 1.0)
    };
    let ms = if mult > 1.0 {
        num.trim()
            .parse::<f64>()
            .map_err(|_| format!("'{s}' is not a duration (e.g. 30s, 500ms, 10m)"))?
            * mult
    } else {
        duration_ms(num, "s")?
    };
    if ms > 0.0 && ms <= 365.0 * 86_400_000.0 {
        Ok(std::time::Duration::from_secs_f64(ms / 1000.0))
    } else {
        Err(format!(
            "'{s}': the duration must be above 0 and at most a year"
        ))
    }
}

/// `rttlens analyze` arguments.
#[derive(Debug, clap::Args)]
pub struct AnalyzeArgs {
    /// Capture files (pcap, pcapng, .gz of either); `-` for stdin. Several
    /// files (a rotated `tcpdump -C/-W/-G` set, captures of several
    /// interfaces) are merged in time order and numbered as one.
    #[cfg_attr(feature = "live", arg(required_unless_present = "interface", num_args = 1..))]
    #[cfg_attr(not(feature = "live"), arg(required = true, num_args = 1..))]
    pub files: Vec<PathBuf>,
    /// Read packets live from this interface instead of files (`eth0`;
    /// `any`: every interface), until Ctrl-C, SIGTERM or `--duration`.
    /// Needs CAP_NET_RAW (root). With `--format jsonl`, each connection's
    /// line is written as it ends.
    #[cfg(feature = "live")]
    #[arg(short = 'i', long, value_name = "IFACE", conflicts_with = "files")]
    pub interface: Option<String>,
    /// With `-i`: stop after this long (`30s`, `500ms`, `10m`; a bare
    /// number is seconds) and print the summary.
    #[cfg(feature = "live")]
    #[arg(long, value_name = "DURATION", requires = "interface",
          value_parser = parse_live_duration)]
    pub duration: Option<std::time::Duration>,
    /// Output format (jsonl: one line per connection as it ends, for jq,
    /// DuckDB, ClickHouse).
    #[arg(long, value_enum, default_value_t = AnalyzeFormat::Text)]
    pub format: AnalyzeFormat,
    /// With `--format parquet`: a series of closed files instead of one of
    /// each, `DIR/connections/STAMP.parquet`, `DIR/findings/…`,
    /// `DIR/requests/…`, new ones every period of wall-clock time (`30s`,
    /// `5m`, `1h`: on its multiples since the epoch, even on a quiet link)
    /// or once they hold a size (`500MB`, `1GB`); each written under a
    /// hidden `.partial` name and renamed when complete (docs/fleet.md).
    #[cfg(feature = "parquet")]
    #[arg(long, value_name = "PERIOD|SIZE")]
    pub rotate: Option<rttlens_columnar::Rotate>,
    /// Only TCP segments matching this capture filter, in tcpdump's syntax
    /// (host, net, port, portrange with src/dst; tcp, ip, ip6; and, or,
    /// not, parentheses), e.g. 'host 10.0.0.1 and port 443'.
    #[arg(long, value_parser = parse_filter)]
    pub filter: Option<Filter>,
    /// The seed of every connection's Community ID (v1; 0 to 65535): the
    /// same seed as the Zeek, Suricata or Arkime records to join with
    /// (Zeek's `CommunityID::seed`, Suricata's `community-id-seed`).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub community_id_seed: u16,
    /// Analyse only shard K of N (1 ≤ K ≤ N): the connections whose
    /// Community ID hash falls in it, each whole (QUIC by its first
    /// 4-tuple). N workers each reading the whole capture with K = 1…N
    /// together give the unsharded run's records, with its connection
    /// indexes; the capture summary's packet counts stay the whole
    /// capture's (docs/schema.md "Shards").
    #[arg(long, value_name = "K/N")]
    pub shard: Option<rttlens_core::pipeline::Shard>,
    /// TLS key log (NSS format, as `SSLKEYLOGFILE` writes it: curl, Firefox,
    /// Chrome, Go's KeyLogWriter, rustls' KeyLogFile): TLS 1.2 and 1.3
    /// records are decrypted and every HTTP request inside is timed.
    /// Repeat for several files; the Decryption Secrets Blocks of a pcapng
    /// (`rttlens probe --pcap`, `editcap --inject-secrets`) are read too.
    #[arg(long, value_name = "FILE")]
    pub keylog: Vec<PathBuf>,
    /// Threads (default: the cores available): one reads the capture, and
    /// each has a share of the connections to analyse; 1 does everything on
    /// one thread. The output is the same for any number. With `-i` the
    /// default is 1: more threads hand frames on in batches, so at low
    /// packet rates connections are reported late.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
    /// The population view's interval over time (`100ms`, `1s`, `60s`; at
    /// least 1ms); default: automatic, at most 60 intervals over the
    /// capture.
    #[arg(long, value_name = "DURATION", value_parser = parse_population_interval)]
    pub interval: Option<u64>,
    /// Only these connections: an index (as in `tcp.stream`) or an endpoint
    /// `address:port` (IPv6 as `[addr]:port`). Repeat or separate with commas.
    #[arg(long, value_delimiter = ',')]
    pub conn: Vec<ConnSelector>,
    /// With many connections, how many to show in full (text; HTML and
    /// `--svg`: how many to draw).
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Print the table of rounds for every connection shown (text).
    #[arg(long)]
    pub rounds: bool,
    /// Also write each QUIC connection as qlog 0.3 (JSON-SEQ) in DIR: one
    /// `quic-INDEX.sqlog` per connection, for qvis (docs/quic.md; created
    /// if missing). Beside any format; `--format qlog -o DIR` writes only
    /// these.
    #[arg(long, value_name = "DIR")]
    pub qlog: Option<PathBuf>,
    /// Show progress: a bar on a terminal (the default there), plain lines
    /// on stderr about once a second otherwise.
    #[arg(long, conflicts_with = "no_progress")]
    pub progress: bool,
    /// Never show a progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// Output file, SVG files, IO graph interval.
    #[command(flatten)]
    pub pictures: PictureArgs,
}

/// A `--conn` value.
#[derive(Debug, Clone)]
pub enum ConnSelector {
    /// Connection index.
    Index(u64),
    /// `address:port` of either end.
    Endpoint(String),
}

impl FromStr for ConnSelector {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Ok(i) = s.parse::<u64>() {
            return Ok(ConnSelector::Index(i));
        }
        match s.parse::<std::net::SocketAddr>() {
            Ok(a) => Ok(ConnSelector::Endpoint(a.to_string())),
            Err(_) => Err(format!(
                "'{s}' is neither a connection index nor address:port (IPv6: [addr]:port)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_interval;

    #[test]
    fn io_intervals() {
        assert_eq!(parse_interval("1ms"), Ok(1.0));
        assert_eq!(parse_interval("10"), Ok(10.0));
        assert_eq!(parse_interval("250us"), Ok(0.25));
        assert_eq!(parse_interval("0.5s"), Ok(500.0));
        assert!(parse_interval("0ms").is_err());
        assert!(parse_interval("fast").is_err());
        assert!(parse_interval("3 parsecs").is_err());
        assert_eq!(super::duration_ms("5", "s"), Ok(5000.0));
        assert_eq!(super::duration_ms("40", "ms"), Ok(40.0));
        assert!(super::duration_ms("3h", "s").is_err());
    }

    #[cfg(feature = "live")]
    #[test]
    fn live_durations() {
        use super::parse_live_duration as d;
        use std::time::Duration;
        assert_eq!(d("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(d("5"), Ok(Duration::from_secs(5)));
        assert_eq!(d("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(d("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(d("2h"), Ok(Duration::from_secs(7200)));
        assert!(d("0s").is_err());
        assert!(d("-1").is_err());
        assert!(d("soon").is_err());
    }
}
