//! The lab's error, and the check that a program the lab runs is
//! installed: what [`netns`](crate::netns), [`tcpdump`](crate::tcpdump)
//! and [`topology`](crate::topology) share (here, so that none of them
//! imports another that imports it back).

/// Why the lab could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LabError {
    /// Namespaces and TUN devices need root (CAP_NET_ADMIN, CAP_SYS_ADMIN).
    #[error("the lab needs root (network namespaces and TUN devices): run it with sudo")]
    NotRoot,
    /// `/dev/net/tun` is missing: the `tun` module is not loaded or the
    /// container does not pass the device through.
    #[error("no /dev/net/tun: load the tun module (modprobe tun) or pass --device /dev/net/tun to the container")]
    NoTun,
    /// A program the lab runs is not installed.
    #[error("`{command}` not found in PATH: install the Debian package `{package}`")]
    CommandMissing {
        /// The program.
        command: &'static str,
        /// The Debian package that provides it.
        package: &'static str,
    },
    /// A network namespace could not be created.
    #[error("creating network namespace {name}: {reason}")]
    Namespace {
        /// Its name.
        name: String,
        /// What went wrong.
        reason: String,
    },
    /// A TUN device could not be created or configured.
    #[error("creating TUN device in {ns}: {source}")]
    Tun {
        /// Namespace it was created in.
        ns: String,
        /// The error from tun-rs.
        source: std::io::Error,
    },
    /// A command (`ip …`) exited with an error.
    #[error("`{command}` failed: {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// Its stderr.
        stderr: String,
    },
    /// A sysctl could not be written.
    #[error("sysctl {key}={value}: {source}")]
    Sysctl {
        /// Key under /proc/sys.
        key: String,
        /// Value written.
        value: String,
        /// Error from /proc.
        source: std::io::Error,
    },
    /// A capture could not be started.
    #[error("capture: {0}")]
    Capture(String),
    /// A lab server (nginx or the built-in one) did not start.
    #[error("server: {0}")]
    Server(String),
    /// A client program (curl, openssl) failed.
    #[error("`{command}` failed: {stderr}")]
    Client {
        /// The command.
        command: String,
        /// What it said.
        stderr: String,
    },
    /// The capture could not be analysed.
    #[error("analysing the capture: {0}")]
    Analysis(String),
    /// Another I/O error.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
}

/// Check that `command` is in PATH.
///
/// # Errors
/// [`LabError::CommandMissing`] naming the Debian `package`.
pub fn require_command(command: &'static str, package: &'static str) -> Result<(), LabError> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .any(|d| d.join(command).is_file());
    if found {
        Ok(())
    } else {
        Err(LabError::CommandMissing { command, package })
    }
}
