//! The configuration file: named modules, each a set of probe options
//! (docs/serve.md "Configuration").
//!
//! ```yaml
//! modules:
//!   https:
//!     timeout: 10s
//!   https_resumed:
//!     tls_version: "1.3"
//!     resumption: true
//!     zero_rtt: true
//!     fail_if_not_verified: true
//! ```
//!
//! blackbox_exporter's layout, with the HTTP options nested under the
//! prober's name, is read too ([`BlackboxHttp`]):
//!
//! ```yaml
//! modules:
//!   http_2xx:
//!     prober: http
//!     timeout: 5s
//!     http:
//!       valid_status_codes: [200]
//!       method: GET
//!       tls_config:
//!         insecure_skip_verify: true
//! ```
//!
//! Each module maps onto the probe's own options
//! ([`rttlens_probe::ProbeConfig`], [`rttlens_probe::TlsOptions`],
//! [`rttlens_probe::ResolveOverride`]); [`Config::load`] checks every
//! module (versions, durations, `resolve` entries, the CA file, cipher
//! names) so a bad file is one error at start, never a failed scrape.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rttlens_probe::{Family, ProbeConfig, ResolveOverride, TlsOptions, TlsVersion};

/// The default timeout of a module (its probe's `--max-time`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the configuration file cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not YAML of the expected shape (the message names the
    /// line and column).
    #[error("{path}: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// What the YAML parser said.
        message: String,
    },
    /// A module's option has a value the probe cannot use.
    #[error("{path}: module '{module}': {message}")]
    Module {
        /// The file.
        path: PathBuf,
        /// The module.
        module: String,
        /// What is wrong, naming the option.
        message: String,
    },
    /// The file names no module.
    #[error("{path}: no modules (expected `modules:` with at least one module)")]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

/// The module `/probe` runs when the request names none (blackbox_exporter's
/// default, `http_2xx`).
pub const DEFAULT_MODULE: &str = "http_2xx";

/// The whole file.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Modules by name (the `module=` of `/probe`).
    #[serde(default)]
    pub modules: BTreeMap<String, Module>,
    /// The targets `/probe` may connect to (`--allow-target`'s
    /// equivalent, the two lists joined): host names (`example.com`,
    /// `*.example.com`), addresses and CIDR networks (`10.0.0.0/8`),
    /// checked after resolution ([`rttlens_probe::AllowList`]). Empty:
    /// any target.
    #[serde(default)]
    pub allow_targets: Vec<String>,
}

/// The HTTP version a module speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
pub enum HttpVersion {
    /// HTTP/1.1 (ALPN `http/1.1`; the default).
    #[default]
    #[serde(rename = "1.1")]
    Http11,
    /// HTTP/2 when the server agrees (ALPN `h2, http/1.1`, as curl's
    /// `--http2`); https only.
    #[serde(rename = "2")]
    Http2,
}

/// The address family (the probe's `-4` / `-6`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IpFamily {
    /// Whatever the resolver gives first (the default).
    #[default]
    Any,
    /// IPv4 only.
    Ip4,
    /// IPv6 only.
    Ip6,
}

/// One module: how to probe a target. Every field is optional.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Module {
    /// blackbox_exporter's `prober`; only `http` (the default) is known.
    #[serde(default)]
    pub prober: Option<String>,
    /// The whole probe's time limit (`10s`, `500ms`; a bare number is
    /// seconds). Default 10 s; lowered to Prometheus' scrape timeout less
    /// 0.5 s when the scrape says it (`X-Prometheus-Scrape-Timeout-Seconds`).
    #[serde(default)]
    pub timeout: Option<String>,
    /// `"1.1"` (default) or `"2"`.
    #[serde(default)]
    pub http_version: HttpVersion,
    /// `"1.2"` or `"1.3"`; absent: both (the probe's `--tls`).
    #[serde(default)]
    pub tls_version: Option<String>,
    /// Resume the session of a first, full handshake on a second
    /// connection, and verify it (rustls' `handshake_kind()`). Alone, it
    /// sends no early data.
    #[serde(default)]
    pub resumption: bool,
    /// Send the request as TLS 1.3 early data on a third connection,
    /// resumed, and verify the server accepted it (the first two are a
    /// full and a resumed handshake, as with `resumption`).
    #[serde(default)]
    pub zero_rtt: bool,
    /// TCP Fast Open: ask for a cookie, then send the request in the SYN,
    /// and verify the SYN's data was acknowledged.
    #[serde(default)]
    pub tfo: bool,
    /// With `resumption`, `zero_rtt` or `tfo`: `probe_success` is 0 unless
    /// each one asked for was verified. Default `false` (the verdicts are
    /// still exported).
    #[serde(default)]
    pub fail_if_not_verified: bool,
    /// Request method (default `GET`, or `POST` with a `body`).
    #[serde(default)]
    pub method: Option<String>,
    /// Extra request headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Request body.
    #[serde(default)]
    pub body: Option<String>,
    /// `host:port:address` entries (curl's `--resolve`).
    #[serde(default)]
    pub resolve: Vec<String>,
    /// `any` (default), `ip4` or `ip6`.
    #[serde(default)]
    pub ip_family: IpFamily,
    /// Skip certificate verification (the handshake signature still is).
    #[serde(default)]
    pub insecure: bool,
    /// PEM file of the CA certificates to trust instead of the system's.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// Cipher suites to offer, in order (IANA names).
    #[serde(default)]
    pub ciphers: Vec<String>,
    /// Follow redirects (at most [`rttlens_probe::MAX_REDIRECTS`]).
    /// Default `false`.
    #[serde(default)]
    pub follow_redirects: bool,
    /// Status codes that count as success; empty (default): any 2xx.
    #[serde(default)]
    pub valid_status_codes: Vec<u16>,
    /// Capture the probe's own packets to explain them (findings, the
    /// wire's RTT and handshake kind); needs CAP_NET_RAW. Default `true`.
    #[serde(default = "yes")]
    pub capture: bool,
    /// After the connections, trace the path to the target hop by hop
    /// (the probe's `--path`: TCP SYNs to its port, ICMP answers on a raw
    /// socket, which needs CAP_NET_RAW) and export each hop's loss and RTT
    /// (`rttlens_path_*`, docs/serve.md). Default `false`.
    #[serde(default)]
    pub path: bool,
    /// Rounds of `path` (one a second at most; default 10), never more
    /// than the probe's time limit leaves after the connections.
    #[serde(default)]
    pub path_rounds: Option<u32>,
    /// blackbox_exporter's nested `http:` block: its options under its
    /// names, folded into the ones above when the file is loaded
    /// ([`Config::parse`]); an option given both ways is an error.
    #[serde(default)]
    pub http: Option<BlackboxHttp>,
}

/// blackbox_exporter's `http:` block of a module (its `HTTPProbe`), for
/// configurations written for blackbox: the options the probe can honour,
/// under blackbox's names. Defaults stay rttlens' (no redirects followed,
/// HTTP/1.1) where blackbox's differ; any other blackbox option is an
/// error naming it (unknown field).
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlackboxHttp {
    /// `valid_status_codes`.
    #[serde(default)]
    pub valid_status_codes: Vec<u16>,
    /// `method`.
    #[serde(default)]
    pub method: Option<String>,
    /// `headers`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `body`.
    #[serde(default)]
    pub body: Option<String>,
    /// `follow_redirects`.
    #[serde(default)]
    pub follow_redirects: Option<bool>,
    /// `enable_http2`: `true` is `http_version: "2"`, `false` `"1.1"`.
    #[serde(default)]
    pub enable_http2: Option<bool>,
    /// `preferred_ip_protocol` (`ip4`, `ip6`): with `ip_protocol_fallback:
    /// false` it is `ip_family`; with the fallback (blackbox's default) the
    /// probe takes whichever family the resolver gives first.
    #[serde(default)]
    pub preferred_ip_protocol: Option<IpFamily>,
    /// `ip_protocol_fallback` (default `true`, as blackbox's).
    #[serde(default)]
    pub ip_protocol_fallback: Option<bool>,
    /// `tls_config`.
    #[serde(default)]
    pub tls_config: Option<BlackboxTls>,
}

/// The `tls_config:` of a blackbox `http:` block (Prometheus' common
/// `TLSConfig`), as far as the probe honours it.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlackboxTls {
    /// `insecure_skip_verify`: `insecure`.
    #[serde(default)]
    pub insecure_skip_verify: bool,
    /// `ca_file`.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// `min_version`: `TLS10` … `TLS13`; `TLS13` is `tls_version: "1.3"`
    /// (the probe speaks TLS 1.2 and 1.3 only).
    #[serde(default)]
    pub min_version: Option<String>,
    /// `max_version`: `TLS12` is `tls_version: "1.2"`; `TLS10` and
    /// `TLS11` are refused.
    #[serde(default)]
    pub max_version: Option<String>,
}

/// `TLS10` … `TLS13` as the minor number of TLS 1.x (0 … 3).
fn blackbox_tls_version(v: &str, option: &str) -> Result<u8, String> {
    match v {
        "TLS10" => Ok(0),
        "TLS11" => Ok(1),
        "TLS12" => Ok(2),
        "TLS13" => Ok(3),
        _ => Err(format!(
            "http.tls_config.{option} '{v}': expected TLS10, TLS11, TLS12 or TLS13"
        )),
    }
}

fn yes() -> bool {
    true
}

impl Config {
    /// Read and check `path`.
    ///
    /// # Errors
    /// The file cannot be read, is not YAML of this shape (unknown keys
    /// included), names no module, or a module has a value the probe
    /// cannot use (the message names the module and the option).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::parse(&text, path)
    }

    /// The modules `rttlens serve` starts with when no `--config` is
    /// given, as blackbox_exporter ships its own: `http_2xx` (blackbox's
    /// name, the module `/probe` takes when none is named) and `https`,
    /// both the probe's defaults (HTTPS GET, the certificate verified,
    /// 10 s).
    pub fn builtin() -> Config {
        Config {
            modules: [DEFAULT_MODULE, "https"]
                .into_iter()
                .map(|n| (n.to_string(), Module::default()))
                .collect(),
            allow_targets: Vec::new(),
        }
    }

    /// Parse and check `text` (`path` only names it in errors).
    ///
    /// # Errors
    /// As [`Config::load`].
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let cfg: Config = serde_norway::from_str(text).map_err(|e| ConfigError::Syntax {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        if cfg.modules.is_empty() {
            return Err(ConfigError::Empty {
                path: path.to_path_buf(),
            });
        }
        if let Err(message) = rttlens_probe::AllowList::new(&cfg.allow_targets) {
            return Err(ConfigError::Syntax {
                path: path.to_path_buf(),
                message: format!("allow_targets: {message}"),
            });
        }
        let mut cfg = cfg;
        for (name, m) in &mut cfg.modules {
            m.fold_blackbox()
                .and_then(|()| m.check())
                .map_err(|message| ConfigError::Module {
                    path: path.to_path_buf(),
                    module: name.clone(),
                    message,
                })?;
        }
        Ok(cfg)
    }
}

impl Module {
    /// The module's time limit.
    ///
    /// # Errors
    /// `timeout` is not a duration above 0 and at most an hour.
    pub fn timeout(&self) -> Result<Duration, String> {
        match &self.timeout {
            None => Ok(DEFAULT_TIMEOUT),
            Some(s) => duration(s).map_err(|e| format!("timeout '{s}': {e}")),
        }
    }

    /// Fold a blackbox `http:` block into the module's own options.
    ///
    /// # Errors
    /// An option given both at the top and under `http:`, or a blackbox
    /// value the probe cannot honour (TLS below 1.2).
    fn fold_blackbox(&mut self) -> Result<(), String> {
        let Some(h) = self.http.take() else {
            return Ok(());
        };
        let twice = |o: &str| {
            format!(
                "{o} is given both at the top and under http: (blackbox's layout); give it once"
            )
        };
        if !h.valid_status_codes.is_empty() {
            if !self.valid_status_codes.is_empty() {
                return Err(twice("valid_status_codes"));
            }
            self.valid_status_codes = h.valid_status_codes;
        }
        if let Some(m) = h.method {
            if self.method.is_some() {
                return Err(twice("method"));
            }
            self.method = Some(m);
        }
        if !h.headers.is_empty() {
            if !self.headers.is_empty() {
                return Err(twice("headers"));
            }
            self.headers = h.headers;
        }
        if let Some(b) = h.body {
            if self.body.is_some() {
                return Err(twice("body"));
            }
            self.body = Some(b);
        }
        if let Some(f) = h.follow_redirects {
            if self.follow_redirects {
                return Err(twice("follow_redirects"));
            }
            self.follow_redirects = f;
        }
        if let Some(h2) = h.enable_http2 {
            if self.http_version != HttpVersion::default() {
                return Err(twice("http_version (enable_http2)"));
            }
            self.http_version = if h2 {
                HttpVersion::Http2
            } else {
                HttpVersion::Http11
            };
        }
        if let Some(p) = h.preferred_ip_protocol {
            if self.ip_family != IpFamily::Any {
                return Err(twice("ip_family (preferred_ip_protocol)"));
            }
            if h.ip_protocol_fallback == Some(false) {
                self.ip_family = p;
            }
        }
        if let Some(t) = h.tls_config {
            if t.insecure_skip_verify {
                if self.insecure {
                    return Err(twice("insecure (tls_config.insecure_skip_verify)"));
                }
                self.insecure = true;
            }
            if let Some(ca) = t.ca_file {
                if self.ca_file.is_some() {
                    return Err(twice("ca_file (tls_config.ca_file)"));
                }
                self.ca_file = Some(ca);
            }
            let min = t
                .min_version
                .as_deref()
                .map(|v| blackbox_tls_version(v, "min_version"))
                .transpose()?;
            let max = t
                .max_version
                .as_deref()
                .map(|v| blackbox_tls_version(v, "max_version"))
                .transpose()?;
            if max.is_some_and(|m| m < 2) {
                return Err(
                    "http.tls_config.max_version: the probe speaks TLS 1.2 and 1.3 only".into(),
                );
            }
            let version = match (min, max) {
                (Some(3), _) => Some("1.3"),
                (_, Some(2)) => Some("1.2"),
                _ => None,
            };
            if let Some(v) = version {
                if self.tls_version.is_some() {
                    return Err(twice("tls_version (tls_config.min_version/max_version)"));
                }
                self.tls_version = Some(v.to_string());
            }
        }
        Ok(())
    }

    /// Every option checked, as at start: the probe's TLS configuration is
    /// built once (CA file, ciphers, version).
    fn check(&self) -> Result<(), String> {
        if let Some(p) = self.prober.as_deref().filter(|p| *p != "http") {
            return Err(format!("prober '{p}': only http is known"));
        }
        self.timeout()?;
        let cfg = self.probe_config("https://module.check/", None)?;
        if self.http_version == HttpVersion::Http2 && self.sequence() {
            return Err(
                "http_version \"2\" with resumption, zero_rtt or tfo: the probe's \
                 sequence speaks HTTP/1.1 (its 0-RTT step cannot wait for ALPN)"
                    .into(),
            );
        }
        rttlens_probe::tls::TlsClient::new(&cfg.tls, None).map_err(|e| e.message)?;
        Ok(())
    }

    /// The module asks for the probe's sequence (full → resumed → 0-RTT
    /// handshakes, TFO cookie → TFO data).
    pub fn sequence(&self) -> bool {
        self.resumption || self.zero_rtt || self.tfo
    }

    /// The probe's configuration for `target` under this module, with
    /// `limit` (when given) in place of the module's timeout.
    ///
    /// Options map one to one onto the probe's (`rttlens probe` flags in
    /// brackets): `timeout` (`--max-time`), `http_version` (`--http1.1`,
    /// `--http2`), `tls_version` (`--tls`), `resumption` / `zero_rtt` /
    /// `tfo` (`--sequence`, with `--tfo` for `tfo`: a first connection
    /// with a full handshake, asking for a TFO cookie, then a resumed one
    /// and, with `zero_rtt` only, a 0-RTT one, each verified), `method`
    /// (`-X`), `headers` (`-H`),
    /// `body` (`-d`), `resolve` (`--resolve`), `ip_family` (`-4`/`-6`),
    /// `insecure` (`-k`), `ca_file` (`--cacert`), `ciphers`,
    /// `follow_redirects` (`-L`), `capture` (`--no-capture` when false),
    /// `path` and `path_rounds` (`--path`, `--path-rounds`).
    ///
    /// # Errors
    /// An option the probe cannot use, named.
    pub fn probe_config(
        &self,
        target: &str,
        limit: Option<Duration>,
    ) -> Result<ProbeConfig, String> {
        let mut c = ProbeConfig::new(target);
        c.max_time = Some(match limit {
            Some(l) => l,
            None => self.timeout()?,
        });
        c.tls = TlsOptions {
            version: self
                .tls_version
                .as_deref()
                .map(|v| {
                    v.parse::<TlsVersion>()
                        .map_err(|_| format!("tls_version '{v}': expected \"1.2\" or \"1.3\""))
                })
                .transpose()?,
            alpn: match self.http_version {
                HttpVersion::Http11 => vec!["http/1.1".into()],
                HttpVersion::Http2 => vec!["h2".into(), "http/1.1".into()],
            },
            cacert: self.ca_file.clone(),
            insecure: self.insecure,
            // never the environment's SSLKEYLOGFILE: an exporter keeps no
            // secrets on disk
            keylog: None,
            ciphers: self.ciphers.clone(),
        };
        c.sequence = self.sequence();
        // early data (replayable by whoever records it) only when asked for
        c.sequence_zero_rtt = self.zero_rtt;
        c.tfo = self.tfo;
        c.resolve = self
            .resolve
            .iter()
            .map(|r| {
                r.parse::<ResolveOverride>()
                    .map_err(|_| format!("resolve '{r}': expected host:port:address"))
            })
            .collect::<Result<_, _>>()?;
        c.family = match self.ip_family {
            IpFamily::Any => Family::Any,
            IpFamily::Ip4 => Family::V4,
            IpFamily::Ip6 => Family::V6,
        };
        c.request.method = self.method.clone();
        c.request.headers = self
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        c.request.body = self.body.as_ref().map(|b| b.as_bytes().to_vec());
        c.follow = self.follow_redirects;
        c.capture = self.capture;
        c.path = self.path.then(|| rttlens_probe::path::PathOptions {
            rounds: self.path_rounds.unwrap_or(10).max(1),
            udp: false,
            // the series are labelled by address (as `mtr -n`): no lookups
            names: false,
        });
        Ok(c)
    }

    /// `status` counts as success under this module.
    pub fn status_ok(&self, status: u16) -> bool {
        if self.valid_status_codes.is_empty() {
            (200..300).contains(&status)
        } else {
            self.valid_status_codes.contains(&status)
        }
    }
}

/// `10s`, `500ms`, `1m`, `2.5` (seconds): above 0, at most an hour.
///
/// # Errors
/// Not such a duration.
pub fn duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| "expected a duration such as 10s or 500ms".to_string())?;
    let secs = v * scale;
    if !(secs > 0.0 && secs <= 3600.0) {
        return Err("must be above 0 and at most an hour".into());
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests;
