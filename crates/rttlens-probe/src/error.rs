//! Why a probe failed, and in which phase.

use std::fmt;

/// The phase a probe was in, named as curl's `-w` timings name the event
/// that ends it (`namelookup`, `connect`, `appconnect` = the TLS handshake)
/// plus `http` for the request and response.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ProbePhase {
    /// Parsing the URL and options (before any network activity).
    Setup,
    /// DNS: resolving the host name.
    Namelookup,
    /// The TCP handshake.
    Connect,
    /// The TLS handshake (curl's `appconnect`).
    Tls,
    /// Sending the request and reading the response.
    Http,
}

impl ProbePhase {
    /// The name used in messages and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ProbePhase::Setup => "setup",
            ProbePhase::Namelookup => "namelookup",
            ProbePhase::Connect => "connect",
            ProbePhase::Tls => "tls",
            ProbePhase::Http => "http",
        }
    }
}

impl fmt::Display for ProbePhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What went wrong, grouped by whose fault it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// A URL or option the probe cannot use (exit code 2 in the CLI).
    Usage,
    /// The name did not resolve (or to no address of the wanted family).
    Resolve,
    /// The server refused the connection (RST to the SYN).
    Refused,
    /// `--max-time` or `--connect-timeout` ran out.
    Timeout,
    /// The server sent a TLS alert.
    TlsAlert,
    /// The server's certificate did not verify.
    BadCertificate,
    /// Another TLS failure (protocol, version, ALPN).
    Tls,
    /// The HTTP exchange failed (malformed response, connection closed).
    Http,
    /// Another I/O error (unreachable network, reset, …).
    Io,
    /// The target's address is outside the allow-list
    /// ([`crate::AllowList`], `rttlens serve --allow-target`): no
    /// connection was made.
    Forbidden,
}

/// A failed probe: the phase, the kind and a message a person reads.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProbeError {
    /// Phase the probe was in.
    pub phase: ProbePhase,
    /// Kind of failure.
    pub kind: ErrorKind,
    /// What happened (names the flag or address involved).
    pub message: String,
}

impl ProbeError {
    /// A new error.
    pub fn new(phase: ProbePhase, kind: ErrorKind, message: impl Into<String>) -> ProbeError {
        ProbeError {
            phase,
            kind,
            message: message.into(),
        }
    }

    /// A usage error (bad URL or option).
    pub fn usage(message: impl Into<String>) -> ProbeError {
        ProbeError::new(ProbePhase::Setup, ErrorKind::Usage, message)
    }

    /// An I/O error in `phase`, classified (refused, timeout, TLS alert,
    /// bad certificate) where the error says which.
    pub fn io(phase: ProbePhase, context: &str, e: &std::io::Error) -> ProbeError {
        if let Some(t) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
            return ProbeError::tls(t);
        }
        let kind = match e.kind() {
            std::io::ErrorKind::ConnectionRefused => ErrorKind::Refused,
            std::io::ErrorKind::TimedOut => ErrorKind::Timeout,
            _ if phase == ProbePhase::Http => ErrorKind::Http,
            _ => ErrorKind::Io,
        };
        ProbeError::new(phase, kind, format!("{context}: {e}"))
    }

    /// A rustls error during the handshake.
    pub fn tls(e: &rustls::Error) -> ProbeError {
        let (kind, what) = match e {
            rustls::Error::AlertReceived(a) => {
                (ErrorKind::TlsAlert, format!("the server sent a TLS alert: {a:?}"))
            }
            rustls::Error::InvalidCertificate(c) => (
                ErrorKind::BadCertificate,
                format!(
                    "bad certificate: {c:?} (use --cacert FILE to trust it, or -k to skip verification)"
                ),
            ),
            other => (ErrorKind::Tls, format!("TLS handshake failed: {other}")),
        };
        ProbeError::new(ProbePhase::Tls, kind, what)
    }

    /// The deadline ran out in `phase`.
    pub fn timeout(phase: ProbePhase, flag: &str, after_ms: f64) -> ProbeError {
        ProbeError::new(
            phase,
            ErrorKind::Timeout,
            format!("timed out after {after_ms:.0} ms ({flag})"),
        )
    }
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.phase, self.message)
    }
}

impl std::error::Error for ProbeError {}
