//! nginx for the lab: a complete `nginx.conf` generated from a [`Config`],
//! and an [`Instance`] that runs it and stops it on drop.
//!
//! Everything lives in one directory `dir`: `nginx.conf`, `cert.pem` and
//! `key.pem` (self-signed, [`crate::cert`]), `docroot/` (`index.html` and
//! `size/N` files of N bytes, so the URLs match the built-in server's),
//! `nginx.pid`, `error.log`, `access.log` and the `*_temp` directories.
//! nginx runs in the foreground as one process (`daemon off;
//! master_process off;`), so its PID is the one we started.
//!
//! Directives (nginx 1.22 docs, `ngx_http_core_module`, `ngx_http_ssl_module`):
//! `tcp_nodelay`, `ssl_buffer_size`, `ssl_early_data`, `ssl_session_tickets`,
//! `ssl_session_cache`, `ssl_protocols`, `listen … http2 fastopen= sndbuf=
//! backlog=` (`http2`: `ngx_http_v2_module`).

use std::fmt::Write as _;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant as Clock};

use crate::cert::SelfSigned;
use crate::{Error, Result, TlsVersion};

/// What to put in the generated `nginx.conf`. `Config::new(addr)` gives
/// nginx's own defaults for every knob, over TLS 1.2 and 1.3.
#[derive(Clone, Debug)]
pub struct Config {
    /// The `listen` address.
    pub listen: SocketAddr,
    /// TLS (`listen … ssl`) or cleartext HTTP. Default `true`.
    pub tls: bool,
    /// `tcp_nodelay on|off`. nginx default: on.
    pub tcp_nodelay: bool,
    /// `ssl_buffer_size` in bytes: the TLS record size nginx writes
    /// application data with. `None` = nginx default 16k.
    pub ssl_buffer_size: Option<usize>,
    /// `ssl_early_data on|off` (0-RTT, RFC 8446 §4.2.10). nginx default: off.
    pub ssl_early_data: bool,
    /// `ssl_session_tickets on|off` (RFC 5077 / RFC 8446 §4.6.1). nginx
    /// default: on.
    pub ssl_session_tickets: bool,
    /// `ssl_session_cache` value, e.g. `shared:SSL:1m` or `none`. `None` =
    /// nginx default (`none`: no server-side cache; tickets still work).
    pub ssl_session_cache: Option<String>,
    /// `ssl_session_ticket_key FILE`: the key tickets are sealed with (80
    /// random bytes). Servers given the same file resume each other's
    /// sessions, as a fleet behind a load balancer does. `None` = nginx
    /// default (a random key per start).
    pub ssl_session_ticket_key: Option<std::path::PathBuf>,
    /// `ssl_protocols`. Default both TLS 1.2 and 1.3.
    pub ssl_protocols: Vec<TlsVersion>,
    /// `listen … fastopen=N`: TCP Fast Open queue length. Default `None`.
    pub fastopen: Option<u32>,
    /// `listen … sndbuf=N`: SO_SNDBUF in bytes. Default `None` (kernel).
    pub sndbuf: Option<usize>,
    /// `listen … backlog=N`. Default `None` (nginx: 511).
    pub backlog: Option<u32>,
    /// Sizes in bytes of the files served as `/size/N`. Default 100000.
    pub files: Vec<usize>,
    /// `keepalive_timeout` in seconds. Default `None` (nginx: 75 s).
    pub keepalive_timeout_s: Option<u32>,
    /// HTTP/2 over TLS (ALPN `h2`): `listen … ssl http2`, the syntax every
    /// nginx with `ngx_http_v2_module` accepts (1.25.1 deprecates it for
    /// `http2 on;` with a warning); without TLS, HTTP/2 in clear by prior
    /// knowledge (h2c, RFC 9113 §3.3). Default `false`.
    pub http2: bool,
    /// `http2_max_concurrent_streams`: the streams a client may have open
    /// at once (nginx counts the requests it is processing; it announces
    /// the value in SETTINGS_MAX_CONCURRENT_STREAMS). Default `None`
    /// (nginx: 128).
    pub http2_max_concurrent_streams: Option<u32>,
    /// `worker_connections`: connections the one worker holds at once
    /// (nginx counts its listening sockets too). Default 1024.
    pub worker_connections: u32,
    /// `access_log`: one line per request in `access.log`. Default `true`;
    /// load tests turn it off (`access_log off;`) so the disk is not
    /// measured.
    pub access_log: bool,
    /// Directives added to the `http` block as they are, one per line
    /// (`limit_req_zone …;`). Default none.
    pub extra_http: Vec<String>,
    /// Directives added to `location /` as they are, one per line
    /// (`proxy_pass …;`, `add_header Server-Timing "…";`, `add_trailer …;`).
    /// Default none: files from the docroot.
    pub extra_location: Vec<String>,
}

impl Config {
    /// nginx's defaults, listening on `listen` with TLS.
    pub fn new(listen: SocketAddr) -> Config {
        Config {
            listen,
            tls: true,
            tcp_nodelay: true,
            ssl_buffer_size: None,
            ssl_early_data: false,
            ssl_session_tickets: true,
            ssl_session_cache: None,
            ssl_session_ticket_key: None,
            ssl_protocols: TlsVersion::ALL.to_vec(),
            fastopen: None,
            sndbuf: None,
            backlog: None,
            files: vec![100_000],
            keepalive_timeout_s: None,
            http2: false,
            http2_max_concurrent_streams: None,
            worker_connections: 1024,
            access_log: true,
            extra_http: Vec::new(),
            extra_location: Vec::new(),
        }
    }

    /// The `nginx.conf` text for a prefix directory `dir` (pure: writes
    /// nothing; see [`Config::write`]).
    pub fn render(&self, dir: &Path) -> String {
        let d = dir.display();
        let on = |b: bool| if b { "on" } else { "off" };
        let mut c = String::new();
        let _ = writeln!(c, "# generated by rttlens-lab-server");
        let _ = writeln!(c, "daemon off;\nmaster_process off;\nworker_processes 1;");
        let _ = writeln!(c, "pid {d}/nginx.pid;\nerror_log {d}/error.log info;");
        // the worker needs a descriptor per connection (two while proxying)
        let _ = writeln!(c, "worker_rlimit_nofile {};", self.worker_connections * 2);
        let _ = writeln!(
            c,
            "events {{\n    worker_connections {};\n}}",
            self.worker_connections
        );
        let _ = writeln!(c, "http {{");
        if self.access_log {
            let _ = writeln!(c, "    access_log {d}/access.log;");
        } else {
            let _ = writeln!(c, "    access_log off;");
        }
        for t in ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"] {
            let _ = writeln!(c, "    {t}_temp_path {d}/{t}_temp;");
        }
        let _ = writeln!(c, "    default_type application/octet-stream;");
        let _ = writeln!(c, "    sendfile on;");
        let _ = writeln!(c, "    tcp_nodelay {};", on(self.tcp_nodelay));
        if let Some(s) = self.keepalive_timeout_s {
            let _ = writeln!(c, "    keepalive_timeout {s};");
        }
        for d in &self.extra_http {
            let _ = writeln!(c, "    {d}");
        }
        let mut listen = self.listen.to_string();
        if self.tls {
            listen.push_str(" ssl");
        }
        if self.http2 {
            listen.push_str(" http2");
        }
        if let Some(n) = self.fastopen {
            let _ = write!(listen, " fastopen={n}");
        }
        if let Some(n) = self.sndbuf {
            let _ = write!(listen, " sndbuf={n}");
        }
        if let Some(n) = self.backlog {
            let _ = write!(listen, " backlog={n}");
        }
        let _ = writeln!(c, "    server {{");
        let _ = writeln!(c, "        listen {listen};");
        let _ = writeln!(c, "        server_name localhost;");
        let _ = writeln!(c, "        root {d}/docroot;");
        if let Some(n) = self.http2_max_concurrent_streams.filter(|_| self.http2) {
            let _ = writeln!(c, "        http2_max_concurrent_streams {n};");
        }
        if self.tls {
            let _ = writeln!(c, "        ssl_certificate {d}/cert.pem;");
            let _ = writeln!(c, "        ssl_certificate_key {d}/key.pem;");
            let protos: Vec<&str> = self.ssl_protocols.iter().map(|v| v.name()).collect();
            let _ = writeln!(c, "        ssl_protocols {};", protos.join(" "));
            if let Some(n) = self.ssl_buffer_size {
                let _ = writeln!(c, "        ssl_buffer_size {n};");
            }
            let _ = writeln!(c, "        ssl_early_data {};", on(self.ssl_early_data));
            let _ = writeln!(
                c,
                "        ssl_session_tickets {};",
                on(self.ssl_session_tickets)
            );
            if let Some(cache) = &self.ssl_session_cache {
                let _ = writeln!(c, "        ssl_session_cache {cache};");
            }
            if let Some(key) = &self.ssl_session_ticket_key {
                let _ = writeln!(c, "        ssl_session_ticket_key {};", key.display());
            }
        }
        let _ = writeln!(c, "        location / {{");
        for d in &self.extra_location {
            let _ = writeln!(c, "            {d}");
        }
        let _ = writeln!(c, "        }}");
        let _ = writeln!(c, "    }}\n}}");
        c
    }

    /// Writes `nginx.conf`, a self-signed `cert.pem`/`key.pem` (fresh
    /// unless `dir` already holds both), the docroot and the temp
    /// directories into `dir` (created if missing).
    /// Returns the path of `nginx.conf`.
    ///
    /// # Errors
    /// [`Error::Io`] naming the path, [`Error::Cert`].
    pub fn write(&self, dir: &Path) -> Result<PathBuf> {
        let mkdir = |p: &Path| {
            std::fs::create_dir_all(p).map_err(Error::io(format!("creating {}", p.display())))
        };
        let write = |p: &Path, data: &[u8]| {
            std::fs::write(p, data).map_err(Error::io(format!("writing {}", p.display())))
        };
        mkdir(dir)?;
        let dir = std::fs::canonicalize(dir)
            .map_err(Error::io(format!("resolving {}", dir.display())))?;
        mkdir(&dir.join("docroot/size"))?;
        for t in ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"] {
            mkdir(&dir.join(format!("{t}_temp")))?;
        }
        // a restart in the same directory keeps its certificate: nginx
        // derives the TLS session id context from it
        // (`ngx_ssl_session_id_context`), so a new one would make every
        // ticket unusable
        let keep = dir.join("cert.pem").is_file() && dir.join("key.pem").is_file();
        if self.tls && !keep {
            let cert = SelfSigned::generate()?;
            write(&dir.join("cert.pem"), cert.cert_pem.as_bytes())?;
            write(&dir.join("key.pem"), cert.key_pem.as_bytes())?;
        }
        write(
            &dir.join("docroot/index.html"),
            b"<!doctype html><title>rttlens lab</title><p>rttlens lab nginx: GET /size/N for N bytes.\n",
        )?;
        for &n in &self.files {
            write(&dir.join(format!("docroot/size/{n}")), &vec![b'x'; n])?;
        }
        let conf = dir.join("nginx.conf");
        write(&conf, self.render(&dir).as_bytes())?;
        Ok(conf)
    }
}

/// How to launch nginx: the binary and an optional command prefix.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The nginx binary. Default: `nginx` on `PATH`, else `/usr/sbin/nginx`.
    pub nginx: Option<PathBuf>,
    /// A command run in front of nginx, e.g. `["ip", "netns", "exec", "srv"]`
    /// (it must `exec` nginx so the PID stays nginx's). Default empty.
    pub prefix: Vec<String>,
    /// How long to wait for nginx to accept connections. Default 5 s.
    pub ready_timeout: Duration,
}

impl Default for Launch {
    fn default() -> Self {
        Launch {
            nginx: None,
            prefix: Vec::new(),
            ready_timeout: Duration::from_secs(5),
        }
    }
}

/// Finds the nginx binary: `PATH`, then `/usr/sbin/nginx`.
///
/// # Errors
/// [`Error::NginxMissing`] with the apt-get line to fix it.
pub fn find_nginx() -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    dirs.push(PathBuf::from("/usr/sbin"));
    for d in &dirs {
        let p = d.join("nginx");
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(Error::NginxMissing {
        looked_for: "nginx on PATH and /usr/sbin/nginx".into(),
    })
}

/// A running nginx, stopped (SIGQUIT, then SIGTERM, then SIGKILL, by PID)
/// and reaped on drop.
#[derive(Debug)]
pub struct Instance {
    child: Option<Child>,
    dir: PathBuf,
    addr: SocketAddr,
}

impl Instance {
    /// [`Instance::start_with`] with the default [`Launch`].
    ///
    /// # Errors
    /// See [`Instance::start_with`].
    pub fn start(dir: &Path, config: &Config) -> Result<Instance> {
        Instance::start_with(dir, config, &Launch::default())
    }

    /// Writes the configuration into `dir`, checks it with `nginx -t`,
    /// starts nginx (`nginx -p DIR -c DIR/nginx.conf -e DIR/error.log`,
    /// behind `launch.prefix`) and waits until it is ready: nginx has written
    /// its pid file, which it does after opening its listening sockets
    /// (`ngx_create_pidfile` after `ngx_init_cycle`, `src/core/nginx.c`),
    /// and, without a prefix, the port accepts a TCP connection. Without a
    /// prefix a taken port is detected up front by binding it.
    ///
    /// # Errors
    /// [`Error::NginxMissing`], [`Error::NginxConfigTest`] (with nginx's
    /// stderr), [`Error::AddrInUse`], [`Error::NginxExited`],
    /// [`Error::NginxNotReady`], [`Error::Io`].
    pub fn start_with(dir: &Path, config: &Config, launch: &Launch) -> Result<Instance> {
        let nginx = match &launch.nginx {
            Some(p) => p.clone(),
            None => find_nginx()?,
        };
        let conf = config.write(dir)?;
        let dir = conf.parent().map(Path::to_path_buf).unwrap_or_default();
        let log = dir.join("error.log");
        let args = |test: bool| {
            let mut a = vec![
                "-p".to_string(),
                format!("{}/", dir.display()),
                "-c".into(),
                conf.display().to_string(),
                "-e".into(),
                log.display().to_string(),
            ];
            if test {
                a.push("-t".into());
            }
            a
        };
        // behind the prefix too: `nginx -t` binds the listen address, which
        // may exist only inside the namespace the prefix enters
        let prefixed = || match launch.prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(&nginx);
                c
            }
            None => Command::new(&nginx),
        };
        let out = prefixed()
            .args(args(true))
            .output()
            .map_err(Error::io(format!("running {} -t", nginx.display())))?;
        if !out.status.success() {
            return Err(Error::NginxConfigTest {
                conf,
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        let pidfile = dir.join("nginx.pid");
        let _ = std::fs::remove_file(&pidfile);
        // In our own namespace, a taken port is told apart before starting
        // (a connect would otherwise reach the other listener).
        if launch.prefix.is_empty() && config.listen.port() != 0 {
            if let Err(e) = std::net::TcpListener::bind(config.listen) {
                if e.kind() == std::io::ErrorKind::AddrInUse {
                    return Err(Error::AddrInUse {
                        addr: config.listen,
                    });
                }
            }
        }
        let child = prefixed()
            .args(args(false))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(Error::io(format!("starting {}", nginx.display())))?;
        let mut inst = Instance {
            child: Some(child),
            dir,
            addr: config.listen,
        };
        let deadline = Clock::now() + launch.ready_timeout;
        // Bounded by `ready_timeout`, 10 ms per iteration.
        loop {
            if let Some(child) = inst.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    inst.child = None;
                    let log = inst.error_log();
                    if log.contains("Address already in use") {
                        return Err(Error::AddrInUse {
                            addr: config.listen,
                        });
                    }
                    return Err(Error::NginxExited {
                        status: status.to_string(),
                        log,
                    });
                }
            }
            let ready = pidfile.is_file()
                && (!launch.prefix.is_empty()
                    || TcpStream::connect_timeout(&config.listen, Duration::from_millis(100))
                        .is_ok());
            if ready {
                return Ok(inst);
            }
            if Clock::now() >= deadline {
                return Err(Error::NginxNotReady {
                    addr: config.listen,
                    waited_ms: launch.ready_timeout.as_millis() as u64,
                    log: inst.error_log(),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// nginx's PID (`None` once stopped).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The address nginx listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The prefix directory (configuration, logs, docroot).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The error log so far (empty if unreadable).
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }

    /// Stops nginx: SIGQUIT (graceful shutdown), then SIGTERM after 2 s,
    /// then SIGKILL after 2 more; waits for it. Idempotent.
    pub fn stop(&mut self) {
        use nix::sys::signal::{kill, Signal};
        use nix::unistd::Pid;
        let Some(mut child) = self.child.take() else {
            return;
        };
        let Ok(raw) = i32::try_from(child.id()) else {
            return;
        };
        for sig in [Signal::SIGQUIT, Signal::SIGTERM] {
            let _ = kill(Pid::from_raw(raw), sig);
            let deadline = Clock::now() + Duration::from_secs(2);
            // Bounded: 2 s per signal.
            while Clock::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.stop();
    }
}
