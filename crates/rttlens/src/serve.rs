//! `rttlens serve [--listen ADDR] [--config FILE] [--interface IFACE]
//! [--allow-target HOST|CIDR]…`:
//! loads and checks the modules (without a file, the built-in `http_2xx`
//! and `https`), starts the live analysis of IFACE, then runs the
//! exporter ([`rttlens_serve`]) until Ctrl-C or SIGTERM. Exit codes: 0
//! stopped (the scrapes in flight answered), 130 stopped by a second
//! signal more than a second after the first, 2 a bad configuration file,
//! address or interface (or no CAP_NET_RAW).

use std::process::ExitCode;

use rttlens_serve::server::Stopped;
use rttlens_serve::{Config, ServeOptions};

use crate::args::ServeArgs;

/// A bad configuration file or `--listen` address.
const EXIT_USAGE: u8 = 2;

/// Stopped by a second signal, without waiting for the scrapes in flight
/// (as `rttlens analyze -i` at a second Ctrl-C).
const EXIT_FORCED: u8 = 130;

/// Run `rttlens serve`.
pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    // no file: the built-in modules (`http_2xx`, `https`), as
    // blackbox_exporter starts with its own
    let config = match args.config.as_deref().map(Config::load).transpose() {
        Ok(c) => c.unwrap_or_else(Config::builtin),
        Err(e) => {
            eprintln!("rttlens serve: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let modules: Vec<String> = config.modules.keys().cloned().collect();
    let opts = ServeOptions {
        listen: args.listen,
        config,
        max_concurrent: args.max_concurrent as usize,
        interface: args.interface.clone(),
        allow_targets: args.allow_target.clone(),
    };
    let allowed = if args.allow_target.is_empty() && opts.config.allow_targets.is_empty() {
        "; any target (no --allow-target)".to_string()
    } else {
        let all: Vec<&str> = opts
            .config
            .allow_targets
            .iter()
            .chain(&args.allow_target)
            .map(String::as_str)
            .collect();
        format!("; targets: {}", all.join(", "))
    };
    let live = args
        .interface
        .as_ref()
        .map(|i| format!("; analysing {i} live on /metrics"))
        .unwrap_or_default();
    let served = rttlens_serve::server::serve(opts, |addr| {
        eprintln!(
            "rttlens serve: listening on http://{addr}/ (modules: {}; at most {} probes at once{allowed}{live})",
            if modules.is_empty() { "none".to_string() } else { modules.join(", ") },
            args.max_concurrent
        );
    });
    match served {
        Ok(Stopped::Forced) => {
            eprintln!("rttlens serve: stopped at a second signal, scrapes still in flight");
            Ok(ExitCode::from(EXIT_FORCED))
        }
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("rttlens serve: {e}");
            Ok(ExitCode::from(EXIT_USAGE))
        }
    }
}
