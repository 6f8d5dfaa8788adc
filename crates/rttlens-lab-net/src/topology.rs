//! The lab: a client and a server network namespace joined by a userspace
//! delay link over TUN devices.
//!
//! ```text
//!  ns CLIENT                     this process                    ns SERVER
//!  10.77.0.1/24 ── rtl0 (TUN) ⇄ [link: delay, rate, loss] ⇄ rtl0 (TUN) ── 10.77.0.2/24
//!  fd77::1/64                     (optional pcapng)                fd77::2/64
//! ```
//!
//! Both TUNs are in one subnet, so each end sees the other as on-link and
//! no routes are needed. Everything is removed when the [`Lab`] drops, on
//! panic (unwinding runs `Drop`) and on SIGINT/SIGTERM (a handler removes
//! the namespaces of every live lab, then exits with status 130).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

pub use crate::error::{require_command, LabError};
use crate::link::{Link, LinkConfig, LinkStats};
use crate::netns::{self, Netns};
use crate::tcpdump::Tcpdump;

/// Name of the TUN device in each namespace.
pub const TUN_NAME: &str = "rtl0";
/// MTU of both TUN devices (bytes).
pub const MTU: u16 = 1500;

/// One end of the lab: the client or the server host (each its own
/// network namespace).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// The client namespace.
    Client,
    /// The server namespace.
    Server,
}

/// Per-namespace TCP sysctls (scenario knobs); `None` leaves the kernel
/// default. Written under `/proc/sys/net/ipv4/` from inside the namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sysctls {
    /// `tcp_fastopen` bit mask (1 = client, 2 = server, 3 = both).
    pub tcp_fastopen: Option<u32>,
    /// `tcp_window_scaling`.
    pub tcp_window_scaling: Option<bool>,
    /// `tcp_rmem`: min, default, max (bytes).
    pub tcp_rmem: Option<[u32; 3]>,
    /// `tcp_wmem`: min, default, max (bytes).
    pub tcp_wmem: Option<[u32; 3]>,
    /// `tcp_early_retrans`: 0 turns tail loss probes off (RFC 8985 §7;
    /// the kernel default 3 sends them).
    pub tcp_early_retrans: Option<u32>,
    /// `tcp_rto_min_us`: the minimum retransmission timeout (µs; kernel
    /// default 200000, Linux 6.11 on).
    pub tcp_rto_min_us: Option<u32>,
}

/// Check what the lab needs: root, `/dev/net/tun`, `ip` (iproute2).
///
/// # Errors
/// The first missing piece.
pub fn check_prerequisites() -> Result<(), LabError> {
    if !nix::unistd::geteuid().is_root() {
        return Err(LabError::NotRoot);
    }
    if !Path::new("/dev/net/tun").exists() {
        return Err(LabError::NoTun);
    }
    require_command("ip", "iproute2")
}

/// Namespaces of live labs, for the signal handler.
static LIVE: Mutex<Vec<String>> = Mutex::new(Vec::new());
static HANDLER: OnceLock<bool> = OnceLock::new();
pub(crate) static COUNTER: AtomicU64 = AtomicU64::new(0);

fn install_signal_handler() {
    HANDLER.get_or_init(|| {
        // `termination` feature: SIGINT, SIGTERM and SIGHUP. Fails when the
        // program already installed a handler; then cleanup on signals is
        // the program's job (call [`cleanup_all`]).
        ctrlc::set_handler(|| {
            cleanup_all();
            std::process::exit(130);
        })
        .is_ok()
    });
}

/// Scratch directories of running scenarios, for the signal handler.
static SCRATCH: Mutex<Vec<std::path::PathBuf>> = Mutex::new(Vec::new());

/// Remove the namespaces of every live lab (killing the processes in them)
/// and the scratch directories of running scenarios. For programs that
/// install their own SIGINT handler.
pub fn cleanup_all() {
    let names: Vec<String> = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner()));
    for n in names {
        netns::destroy(&n);
    }
    let dirs = std::mem::take(&mut *SCRATCH.lock().unwrap_or_else(|e| e.into_inner()));
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// Have [`cleanup_all`] (and so Ctrl-C) remove `dir`.
pub fn register_scratch(dir: &Path) {
    SCRATCH
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(dir.to_path_buf());
}

/// Undo [`register_scratch`] (the directory is removed, or kept on purpose).
pub fn unregister_scratch(dir: &Path) {
    SCRATCH
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|d| d != dir);
}

fn register(name: &str) {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(name.to_string());
}

fn unregister(name: &str) {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|n| n != name);
}

/// A namespace registered for signal cleanup.
#[derive(Debug)]
pub(crate) struct Ns(pub(crate) Netns);

impl Ns {
    pub(crate) fn create(name: &str) -> Result<Ns, LabError> {
        register(name);
        match Netns::create(name) {
            Ok(n) => Ok(Ns(n)),
            Err(e) => {
                unregister(name);
                Err(e)
            }
        }
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        unregister(self.0.name());
    }
}

/// A client and a server namespace joined by a delay link. Drop removes
/// everything: link threads stop, TUN devices close, processes left in the
/// namespaces are killed and the namespaces deleted.
#[derive(Debug)]
pub struct Lab {
    // Field order is drop order: the link (holding the TUN fds) first.
    link: Option<Link>,
    client: Ns,
    server: Ns,
}

impl Lab {
    /// Client address (IPv4).
    pub const CLIENT_V4: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
    /// Server address (IPv4).
    pub const SERVER_V4: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
    /// Client address (IPv6).
    pub const CLIENT_V6: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 1);
    /// Server address (IPv6).
    pub const SERVER_V6: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 2);

    /// Create the namespaces (`rttlens-<pid>-<n>-client` / `-server`), a
    /// TUN device `rtl0` in each (MTU 1500, 10.77.0.1–2/24, fd77::1–2/64)
    /// and start the link.
    ///
    /// # Errors
    /// [`LabError::NotRoot`], [`LabError::NoTun`],
    /// [`LabError::CommandMissing`] (`ip`), [`LabError::Namespace`],
    /// [`LabError::Tun`], [`LabError::Io`] (capture file). Whatever was
    /// created before the failure is removed.
    pub fn new(cfg: LinkConfig) -> Result<Lab, LabError> {
        check_prerequisites()?;
        install_signal_handler();
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let base = format!("rttlens-{}-{n}", std::process::id());
        let client = Ns::create(&format!("{base}-client"))?;
        let server = Ns::create(&format!("{base}-server"))?;
        let ctun = make_tun(&client.0, Lab::CLIENT_V4, Lab::CLIENT_V6)?;
        let stun = make_tun(&server.0, Lab::SERVER_V4, Lab::SERVER_V6)?;
        let link = Link::start(cfg, ctun, stun).map_err(|e| LabError::Io {
            context: "starting the link".into(),
            source: e,
        })?;
        Ok(Lab {
            link: Some(link),
            client,
            server,
        })
    }

    /// The namespace of `host`.
    pub fn netns(&self, host: Host) -> &Netns {
        match host {
            Host::Client => &self.client.0,
            Host::Server => &self.server.0,
        }
    }

    /// The namespace name of `host` (for `ip netns exec`).
    pub fn ns_name(&self, host: Host) -> &str {
        self.netns(host).name()
    }

    /// The command prefix that runs a program inside `host`'s namespace
    /// (`ip netns exec NAME`), for launchers that take one (nginx).
    pub fn exec_prefix(&self, host: Host) -> Vec<String> {
        ["ip", "netns", "exec", self.ns_name(host)]
            .map(String::from)
            .to_vec()
    }

    /// The IPv4 address of `host`.
    pub fn addr_v4(&self, host: Host) -> Ipv4Addr {
        match host {
            Host::Client => Lab::CLIENT_V4,
            Host::Server => Lab::SERVER_V4,
        }
    }

    /// The IPv6 address of `host`.
    pub fn addr_v6(&self, host: Host) -> Ipv6Addr {
        match host {
            Host::Client => Lab::CLIENT_V6,
            Host::Server => Lab::SERVER_V6,
        }
    }

    /// The IPv4 address of `host` as an `IpAddr`.
    pub fn addr(&self, host: Host) -> IpAddr {
        IpAddr::V4(self.addr_v4(host))
    }

    /// Spawn `cmd` inside `host`'s namespace. Killed (by PID) when the lab
    /// drops if still running.
    ///
    /// # Errors
    /// Spawning failed.
    pub fn spawn_in(&self, host: Host, cmd: &Command) -> std::io::Result<Child> {
        self.netns(host).spawn(cmd)
    }

    /// Run `f` on a thread inside `host`'s namespace and wait for it.
    ///
    /// # Errors
    /// The namespace could not be entered.
    pub fn run_in<F, T>(&self, host: Host, f: F) -> std::io::Result<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.netns(host).run(f)
    }

    /// Spawn a thread inside `host`'s namespace running `f`.
    pub fn thread_in<F, T>(&self, host: Host, f: F) -> std::thread::JoinHandle<std::io::Result<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.netns(host).spawn_thread(f)
    }

    /// Apply `sysctls` in `host`'s namespace.
    ///
    /// # Errors
    /// [`LabError::Sysctl`] for the first value the kernel refuses.
    pub fn set_sysctls(&self, host: Host, sysctls: &Sysctls) -> Result<(), LabError> {
        let ns = self.netns(host);
        let mem = |v: [u32; 3]| format!("{} {} {}", v[0], v[1], v[2]);
        if let Some(v) = sysctls.tcp_fastopen {
            ns.set_sysctl("net/ipv4/tcp_fastopen", &v.to_string())?;
        }
        if let Some(v) = sysctls.tcp_window_scaling {
            ns.set_sysctl("net/ipv4/tcp_window_scaling", if v { "1" } else { "0" })?;
        }
        if let Some(v) = sysctls.tcp_rmem {
            ns.set_sysctl("net/ipv4/tcp_rmem", &mem(v))?;
        }
        if let Some(v) = sysctls.tcp_wmem {
            ns.set_sysctl("net/ipv4/tcp_wmem", &mem(v))?;
        }
        if let Some(v) = sysctls.tcp_early_retrans {
            ns.set_sysctl("net/ipv4/tcp_early_retrans", &v.to_string())?;
        }
        if let Some(v) = sysctls.tcp_rto_min_us {
            ns.set_sysctl("net/ipv4/tcp_rto_min_us", &v.to_string())?;
        }
        Ok(())
    }

    /// Start tcpdump on `host`'s TUN device writing `file` (client or
    /// server vantage); returns once it is listening.
    ///
    /// # Errors
    /// See [`Tcpdump::start`].
    pub fn tcpdump(&self, host: Host, file: &Path) -> Result<Tcpdump, LabError> {
        Tcpdump::start(self.netns(host), TUN_NAME, file)
    }

    /// The link's configuration.
    pub fn link_config(&self) -> Option<&LinkConfig> {
        self.link.as_ref().map(Link::config)
    }

    /// Statistics of the link so far.
    pub fn link_stats(&self) -> LinkStats {
        self.link.as_ref().map(Link::stats).unwrap_or_default()
    }

    /// Flush the link's capture file so it can be read while the lab runs.
    ///
    /// # Errors
    /// The flush failed.
    pub fn flush_capture(&self) -> std::io::Result<()> {
        self.link.as_ref().map_or(Ok(()), Link::flush_capture)
    }

    /// Stop the link (the capture file is complete afterwards) and return
    /// its final statistics; the namespaces stay until the lab drops.
    pub fn stop_link(&mut self) -> LinkStats {
        self.link.take().map(Link::stop).unwrap_or_default()
    }
}

/// Create and configure the TUN device inside `ns`: tun-rs creates it and
/// sets MTU and the IPv4 address from a thread inside the namespace (a TUN
/// device is born in the namespace of the thread that creates it). The
/// IPv6 address goes through `ip … nodad` so it is usable at once (tun-rs
/// cannot skip duplicate address detection).
fn make_tun(ns: &Netns, v4: Ipv4Addr, v6: Ipv6Addr) -> Result<tun_rs::SyncDevice, LabError> {
    let dev = ns
        .run(move || {
            tun_rs::DeviceBuilder::new()
                .name(TUN_NAME)
                .mtu(MTU)
                .ipv4(v4, 24, None)
                .build_sync()
        })
        .and_then(|r| r)
        .map_err(|e| LabError::Tun {
            ns: ns.name().to_string(),
            source: e,
        })?;
    let v6 = format!("{v6}/64");
    netns::ip(&[
        "-n",
        ns.name(),
        "-6",
        "addr",
        "add",
        &v6,
        "dev",
        TUN_NAME,
        "nodad",
    ])?;
    netns::ip(&["-n", ns.name(), "link", "set", TUN_NAME, "up"])?;
    Ok(dev)
}
