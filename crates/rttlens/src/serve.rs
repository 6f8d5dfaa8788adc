//! `rttlens serve --listen ADDR --config FILE`: loads and checks the
//! modules, then runs the exporter ([`rttlens_serve`]) until Ctrl-C.
//! Exit codes: 0 stopped, 2 a bad configuration file or address.

use std::process::ExitCode;

use rttlens_serve::{Config, ServeOptions};

use crate::args::ServeArgs;

/// A bad configuration file or `--listen` address.
const EXIT_USAGE: u8 = 2;

/// Run `rttlens serve`.
pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let config = match Config::load(&args.config) {
        Ok(c) => c,
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
    };
    let served = rttlens_serve::server::serve(opts, |addr| {
        eprintln!(
            "rttlens serve: listening on http://{addr}/ (modules: {}; at most {} probes at once)",
            modules.join(", "),
            args.max_concurrent
        );
    });
    match served {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("rttlens serve: {e}");
            Ok(ExitCode::from(EXIT_USAGE))
        }
    }
}
