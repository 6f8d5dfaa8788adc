//! Command-line arguments (clap derive). Only what the user typed is checked
//! here; opening files and choosing renderers happens in `main.rs`.

use std::path::PathBuf;
use std::str::FromStr;

use clap::{Parser, Subcommand, ValueEnum};

/// Where the time went, counted in round trips, and why.
#[derive(Debug, Parser)]
#[command(name = "rttlens", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Analyse a packet capture (pcap or pcapng, optionally gzip'd; `-` reads stdin).
    Analyze(AnalyzeArgs),
    /// Reproduce each cause in network namespaces (needs root) and check
    /// the findings: `rttlens lab --list`, `rttlens lab [SCENARIO…]`.
    Lab(LabArgs),
}

/// `rttlens lab` arguments.
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
    /// Keep each scenario's captures and server files in DIR/SCENARIO/.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Output formats.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// For people.
    Text,
    /// Versioned JSON document (docs/json.md).
    Json,
}

/// `rttlens analyze` arguments.
#[derive(Debug, clap::Args)]
pub struct AnalyzeArgs {
    /// Capture file (pcap, pcapng, .gz of either); `-` for stdin.
    pub file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Only these connections: an index (as in `tcp.stream`) or an endpoint
    /// `address:port` (IPv6 as `[addr]:port`). Repeat or separate with commas.
    #[arg(long, value_delimiter = ',')]
    pub conn: Vec<ConnSelector>,
    /// With many connections, how many to show in full (text).
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Print the table of rounds for every connection shown (text).
    #[arg(long)]
    pub rounds: bool,
    /// Show progress: a bar on a terminal (the default there), plain lines
    /// on stderr about once a second otherwise.
    #[arg(long, conflicts_with = "no_progress")]
    pub progress: bool,
    /// Never show a progress bar.
    #[arg(long)]
    pub no_progress: bool,
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
