//! The lab's Go target: `go/tls-server.go` (Go's `crypto/tls` and
//! `net/http`, standard library only), built with the machine's Go on
//! first use and run in the server namespace. The case behind it: Go
//! HTTPS servers under TLS handshake storms. Beside it two Go modules whose
//! dependencies the Go module proxy serves: the gRPC peer (`go/grpc-peer`,
//! grpc-go) and the QUIC peer (`go/quic-peer`, quic-go: an HTTP/3 server
//! and client, the lab's second QUIC stack).
//!
//! The source is compiled into rttlens (`include_str!`), so the binary is
//! built from the same text wherever rttlens runs; it is cached in the
//! temporary directory under a name that carries a hash of the source.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rttlens_lab_net::{Host, Lab, LabError};

/// The server's source.
pub const SOURCE: &str = include_str!("../go/tls-server.go");

/// How long `go build` may take (a cold build cache compiles net/http).
const BUILD_TIMEOUT: Duration = Duration::from_secs(300);
/// How long the server may take to print its address.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// The `go` program: `PATH`, then the official tarball's `/usr/local/go/bin`.
///
/// # Errors
/// [`LabError::CommandMissing`] naming Debian's `golang-go`.
pub fn find_go() -> Result<PathBuf, LabError> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([
            PathBuf::from("/usr/local/go/bin"),
            PathBuf::from("/usr/lib/go/bin"),
        ])
        .map(|d| d.join("go"))
        .find(|p| p.is_file())
        .ok_or(LabError::CommandMissing {
            command: "go",
            package: "golang-go",
        })
}

/// Build the server (or find it built) and return the binary's path.
///
/// # Errors
/// [`LabError::CommandMissing`] without Go, [`LabError::Server`] with the
/// compiler's output when the build fails or takes over 5 minutes.
pub fn build() -> Result<PathBuf, LabError> {
    build_program("rttlens-go-tls-server", &[("tls-server.go", SOURCE)])
}

/// Build the Go program made of `files` (name, text; a `go.mod` and
/// `go.sum` among them make it a module whose dependencies the Go module
/// proxy serves) as `name`, or find it built: it is cached in the
/// temporary directory under a name carrying a hash of the files.
///
/// # Errors
/// As [`build`].
pub fn build_program(name: &str, files: &[(&str, &str)]) -> Result<PathBuf, LabError> {
    let go = find_go()?;
    let mut h = DefaultHasher::new();
    files.hash(&mut h);
    let dir = std::env::temp_dir().join(format!("{name}-{:016x}", h.finish()));
    let bin = dir.join(name);
    if bin.is_file() {
        return Ok(bin);
    }
    let io = |context: String| move |source| LabError::Io { context, source };
    std::fs::create_dir_all(&dir).map_err(io(format!("creating {}", dir.display())))?;
    for (file, text) in files {
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(io(format!("writing {}", path.display())))?;
    }
    // build under another name and rename: a build cut short leaves no
    // binary that looks finished
    let partial = dir.join(format!("partial-{}", std::process::id()));
    let module = files.iter().any(|(f, _)| *f == "go.mod");
    let mut cmd = Command::new(&go);
    cmd.current_dir(&dir)
        .args(["build", "-o"])
        .arg(&partial)
        // a module as a package; one file by its name
        .args(if module {
            vec!["."]
        } else {
            files.iter().map(|(f, _)| *f).collect()
        })
        // the machine's Go, never a toolchain download
        .env("GOTOOLCHAIN", "local")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if std::env::var_os("GOCACHE").is_none() && std::env::var_os("HOME").is_none() {
        cmd.env("GOCACHE", dir.join("cache"));
    }
    let child = cmd
        .spawn()
        .map_err(io(format!("running {} build", go.display())))?;
    let out = wait_bounded(child, BUILD_TIMEOUT)
        .map_err(|e| LabError::Server(format!("go build: {e}")))?;
    if !out.status.success() {
        return Err(LabError::Server(format!(
            "go build of {} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    std::fs::rename(&partial, &bin).map_err(io(format!("renaming to {}", bin.display())))?;
    Ok(bin)
}

/// Wait for `child` at most `limit`; kill it after.
pub(crate) fn wait_bounded(
    mut child: Child,
    limit: Duration,
) -> Result<std::process::Output, String> {
    let start = std::time::Instant::now();
    // bounded by `limit`
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return child.wait_with_output().map_err(|e| e.to_string()),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("took longer than {} s", limit.as_secs()));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// A running Go server, stopped (SIGTERM, then SIGKILL) on drop.
#[derive(Debug)]
pub struct GoServer {
    child: Option<Child>,
    port: u16,
}

/// The Go server's knobs.
#[derive(Debug, Clone)]
pub struct GoOptions {
    /// `GOMAXPROCS` (0: Go's default, one per core).
    pub procs: u32,
    /// TLS versions, as `-tls` takes them (`1.2,1.3`).
    pub tls: String,
    /// Session tickets.
    pub tickets: bool,
    /// Certificate and key; `None`: a fresh self-signed ECDSA P-256 pair.
    pub certificate: Option<rttlens_lab_server::cert::SelfSigned>,
    /// Offer HTTP/2 (ALPN `h2` before `http/1.1`): net/http's HTTP/2.
    pub http2: bool,
}

impl Default for GoOptions {
    fn default() -> GoOptions {
        GoOptions {
            procs: 0,
            tls: "1.2,1.3".into(),
            tickets: true,
            certificate: None,
            http2: false,
        }
    }
}

/// Write `cert` (or a fresh self-signed ECDSA P-256 pair) to `dir` as
/// `cert.pem` and `key.pem`.
fn write_cert(
    dir: &Path,
    cert: Option<&rttlens_lab_server::cert::SelfSigned>,
) -> Result<(PathBuf, PathBuf), LabError> {
    let io = |context: String| move |source| LabError::Io { context, source };
    std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    let cert = match cert {
        Some(c) => c.clone(),
        None => rttlens_lab_server::cert::SelfSigned::generate()
            .map_err(|e| LabError::Server(format!("certificate: {e}")))?,
    };
    let (cert_pem, key_pem) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_pem, &cert.cert_pem).map_err(io("writing cert.pem".into()))?;
    std::fs::write(&key_pem, &cert.key_pem).map_err(io("writing key.pem".into()))?;
    Ok((cert_pem, key_pem))
}

/// The gRPC peer's module (`go/grpc-peer`): grpc-go's server and client,
/// fetched from the Go module proxy on first build.
const GRPC_PEER: [(&str, &str); 3] = [
    ("go.mod", include_str!("../go/grpc-peer/go.mod")),
    ("go.sum", include_str!("../go/grpc-peer/go.sum")),
    ("main.go", include_str!("../go/grpc-peer/main.go")),
];

/// Build `rttlens-grpc-peer` (or find it built): `-serve ADDR` serves
/// grpc-go's health service over TLS, thinking as long as a call's
/// `think-ms` metadata asks; `-call ADDR -keylog FILE` makes parallel
/// health checks on one connection, one of an unknown service
/// (`NOT_FOUND`) and one slow one, writing its TLS keys.
///
/// # Errors
/// As [`build`]; the first build needs the Go module proxy.
pub fn build_grpc_peer() -> Result<PathBuf, LabError> {
    build_program("rttlens-grpc-peer", &GRPC_PEER)
}

/// The QUIC peer's module (`go/quic-peer`): quic-go and its HTTP/3,
/// fetched from the Go module proxy on first build.
const QUIC_PEER: [(&str, &str); 3] = [
    ("go.mod", include_str!("../go/quic-peer/go.mod")),
    ("go.sum", include_str!("../go/quic-peer/go.sum")),
    ("main.go", include_str!("../go/quic-peer/main.go")),
];

/// Build `rttlens-quic-peer` (or find it built): quic-go's HTTP/3 server
/// (`-serve ADDR`, knobs as [`QuicGoOptions`]) and client (`-get URL`: `-n`
/// connections sharing a session cache, `-0rtt` on the later ones,
/// `-pause` between the first and the second, `-versions` offered in
/// order, `-put N` to POST N bytes instead of the GET, `-keylog FILE`); either
/// writes quic-go's qlog of each connection with `-qlog DIR`. The lab's second QUIC stack beside the quinn
/// server of [`rttlens_lab_server::quic`].
///
/// # Errors
/// As [`build`]; the first build needs the Go module proxy.
pub fn build_quic_peer() -> Result<PathBuf, LabError> {
    build_program("rttlens-quic-peer", &QUIC_PEER)
}

/// The knobs of the quic-go server ([`GoServer::quic`]), as the quinn
/// server's ([`rttlens_lab_server::quic::QuicConfig`]) where both have one.
/// `Default`: a one-certificate chain, no Retry, quic-go's windows, no
/// 0-RTT, a random ticket key, QUIC v1 only, Go's key-exchange groups.
#[derive(Debug, Clone)]
pub struct QuicGoOptions {
    /// Intermediate CAs between the leaf and the root, all sent (ECDSA
    /// P-256, ≈ 400 B of DER each).
    pub intermediates: usize,
    /// Bytes of padding in the leaf certificate (an extension under the
    /// documentation OID, as the quinn server's).
    pub cert_padding: usize,
    /// A Retry to every address not yet validated (quic-go
    /// `Transport::VerifySourceAddress`, RFC 9000 §8.1.2).
    pub retry: bool,
    /// `initial_max_stream_data_*` in bytes (quic-go
    /// `InitialStreamReceiveWindow`); `None`: quic-go's (512 KB).
    pub stream_window: Option<u64>,
    /// The most quic-go's auto-tuning widens a stream's window to as the
    /// application reads (quic-go `MaxStreamReceiveWindow`, at least
    /// `stream_window`); `None`: quic-go's (6 MB). Equal to
    /// `stream_window`: a fixed window, as the quinn server's.
    pub max_stream_window: Option<u64>,
    /// `initial_max_data` in bytes (quic-go
    /// `InitialConnectionReceiveWindow`); `None`: quic-go's (768 KB).
    pub conn_window: Option<u64>,
    /// 0-RTT accepted (quic-go `Config::Allow0RTT`, RFC 9001 §4.6).
    pub zero_rtt: bool,
    /// The session ticket key (crypto/tls `SetSessionTicketKeys`): a server
    /// restarted with the same key resumes the sessions of the one before;
    /// `None`: a random key at each start.
    pub ticket_key: Option<[u8; 32]>,
    /// QUIC versions spoken, as `-versions` takes them (`v1`, `v1,v2`).
    pub versions: String,
    /// The key-exchange groups accepted, as `-curves` takes them (`p256`:
    /// crypto/tls `CurvePreferences`); empty: Go's default (X25519MLKEM768
    /// and X25519 first). With `p256` alone a client whose key shares are
    /// X25519's and X25519MLKEM768's gets a HelloRetryRequest for
    /// secp256r1 (RFC 8446 §4.1.4).
    pub curves: String,
}

impl Default for QuicGoOptions {
    fn default() -> QuicGoOptions {
        QuicGoOptions {
            intermediates: 0,
            cert_padding: 0,
            retry: false,
            stream_window: None,
            max_stream_window: None,
            conn_window: None,
            zero_rtt: false,
            ticket_key: None,
            versions: "v1".into(),
            curves: String::new(),
        }
    }
}

impl GoServer {
    /// Build if needed and start the server in `lab`'s server namespace on
    /// `SERVER_V4:port` with the certificate of `o` written to `dir`
    /// (`cert.pem`, `key.pem`); its stderr goes to `dir/go-server.log`.
    ///
    /// # Errors
    /// See [`build`]; [`LabError::Server`] when it exits or prints no
    /// address within 10 s.
    pub fn start(lab: &Lab, dir: &Path, port: u16, o: &GoOptions) -> Result<GoServer, LabError> {
        let bin = build()?;
        let (cert_pem, key_pem) = write_cert(dir, o.certificate.as_ref())?;
        let mut cmd = Command::new(&bin);
        cmd.arg("-listen")
            .arg(format!("{}:{port}", Lab::SERVER_V4))
            .arg("-cert")
            .arg(&cert_pem)
            .arg("-key")
            .arg(&key_pem)
            .arg("-procs")
            .arg(o.procs.to_string())
            .arg("-tls")
            .arg(&o.tls)
            .arg(format!("-tickets={}", o.tickets))
            .arg(format!("-h2={}", o.http2));
        GoServer::spawn(lab, dir, port, cmd)
    }

    /// The gRPC peer ([`build_grpc_peer`]) serving grpc-go's health service
    /// over TLS in `lab`'s server namespace on `SERVER_V4:port`, with a
    /// fresh certificate in `dir`.
    ///
    /// # Errors
    /// As [`GoServer::start`].
    pub fn grpc(lab: &Lab, dir: &Path, port: u16) -> Result<GoServer, LabError> {
        let bin = build_grpc_peer()?;
        let (cert_pem, key_pem) = write_cert(dir, None)?;
        let mut cmd = Command::new(&bin);
        cmd.arg("-serve")
            .arg(format!("{}:{port}", Lab::SERVER_V4))
            .arg("-cert")
            .arg(&cert_pem)
            .arg("-key")
            .arg(&key_pem);
        GoServer::spawn(lab, dir, port, cmd)
    }

    /// The QUIC peer ([`build_quic_peer`]) serving HTTP/3 on quic-go in
    /// `lab`'s server namespace on UDP `SERVER_V4:port` with the knobs of
    /// `o` (its log in `dir`).
    ///
    /// # Errors
    /// As [`GoServer::start`].
    pub fn quic(lab: &Lab, dir: &Path, port: u16, o: &QuicGoOptions) -> Result<GoServer, LabError> {
        let bin = build_quic_peer()?;
        std::fs::create_dir_all(dir).map_err(|source| LabError::Io {
            context: format!("creating {}", dir.display()),
            source,
        })?;
        let mut cmd = Command::new(&bin);
        cmd.arg("-serve")
            .arg(format!("{}:{port}", Lab::SERVER_V4))
            .arg(format!("-intermediates={}", o.intermediates))
            .arg(format!("-cert-padding={}", o.cert_padding))
            .arg(format!("-retry={}", o.retry))
            .arg(format!("-stream-window={}", o.stream_window.unwrap_or(0)))
            .arg(format!(
                "-max-stream-window={}",
                o.max_stream_window.unwrap_or(0)
            ))
            .arg(format!("-conn-window={}", o.conn_window.unwrap_or(0)))
            .arg(format!("-0rtt={}", o.zero_rtt))
            .arg(format!("-versions={}", o.versions))
            .arg(format!("-curves={}", o.curves));
        if let Some(k) = o.ticket_key {
            let hex: String = k.iter().map(|b| format!("{b:02x}")).collect();
            cmd.arg(format!("-ticket-key={hex}"));
        }
        GoServer::spawn(lab, dir, port, cmd)
    }

    /// Run `cmd` in the server namespace until it prints its address.
    fn spawn(lab: &Lab, dir: &Path, port: u16, cmd: Command) -> Result<GoServer, LabError> {
        let io = |context: String| move |source| LabError::Io { context, source };
        let bin = std::path::PathBuf::from(cmd.get_program());
        let log_path = dir.join("go-server.log");
        let log = std::fs::File::create(&log_path)
            .map_err(io(format!("creating {}", log_path.display())))?;
        let mut child = lab
            .netns(Host::Server)
            .command(&cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(io(format!("starting {}", bin.display())))?;
        let stdout = child.stdout.take();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            if let Some(out) = stdout {
                let _ = BufReader::new(out).read_line(&mut line);
            }
            let _ = tx.send(line);
        });
        let mut server = GoServer {
            child: Some(child),
            port,
        };
        let line = rx.recv_timeout(READY_TIMEOUT).unwrap_or_default();
        if !line.starts_with("listening on") {
            server.stop();
            let said = std::fs::read_to_string(&log_path).unwrap_or_default();
            return Err(LabError::Server(format!(
                "the Go server did not start: {}",
                said.trim()
            )));
        }
        Ok(server)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its PID (`ip netns exec` execs the server, so the PID is its own).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Stop it: SIGTERM, SIGKILL after 2 s. Idempotent.
    pub fn stop(&mut self) {
        use nix::sys::signal::{kill, Signal};
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Ok(pid) = i32::try_from(child.id()) {
            let _ = kill(nix::unistd::Pid::from_raw(pid), Signal::SIGTERM);
        }
        let start = std::time::Instant::now();
        // bounded: 2 s
        while start.elapsed() < Duration::from_secs(2) {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for GoServer {
    fn drop(&mut self) {
        self.stop();
    }
}
