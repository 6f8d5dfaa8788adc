//! The crate's error type, grouped by whose fault it is: the caller's
//! configuration, the machine (missing tools, ports in use) or I/O.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong starting or running a lab server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A knob has an impossible value (the message names the knob).
    #[error("invalid server configuration: {0}")]
    Config(String),
    /// rustls refused the configuration or the certificate.
    #[error("TLS configuration: {0}")]
    Tls(String),
    /// The self-signed certificate could not be generated (rcgen).
    #[error("self-signed certificate: {0}")]
    Cert(String),
    /// The listening address is taken by another socket.
    #[error("address {addr} is already in use (pick another port, or 0 for any free port)")]
    AddrInUse {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// A socket option could not be set.
    #[error("setting {option}: {source}")]
    SockOpt {
        /// The option, as the kernel names it (`TCP_FASTOPEN`, `SO_SNDBUF`…).
        option: &'static str,
        /// The error from `setsockopt(2)`.
        source: std::io::Error,
    },
    /// The `nginx` binary was not found.
    #[error("nginx not found (looked for {looked_for}): install nginx-light (apt-get install -y nginx-light)")]
    NginxMissing {
        /// Where we looked.
        looked_for: String,
    },
    /// `nginx -t` rejected the generated configuration.
    #[error("nginx -t rejected {conf}:\n{stderr}")]
    NginxConfigTest {
        /// The configuration file tested.
        conf: PathBuf,
        /// nginx's own diagnostics.
        stderr: String,
    },
    /// nginx exited before it was ready.
    #[error("nginx exited during start-up ({status}):\n{log}")]
    NginxExited {
        /// Its exit status.
        status: String,
        /// Its stderr and error log.
        log: String,
    },
    /// nginx did not become ready in time.
    #[error("nginx did not accept connections on {addr} within {waited_ms} ms:\n{log}")]
    NginxNotReady {
        /// The address it should listen on.
        addr: SocketAddr,
        /// How long we waited, in milliseconds.
        waited_ms: u64,
        /// Its error log so far.
        log: String,
    },
    /// Any other I/O error, with what we were doing.
    #[error("{context}: {source}")]
    Io {
        /// What failed (e.g. "writing /tmp/x/nginx.conf").
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl Error {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let context = context.into();
        move |source| Error::Io { context, source }
    }
}
