//! Named network namespaces, and running code or processes inside them.
//!
//! Namespaces are created and removed with `ip netns` (iproute2): it makes
//! the bind mount under `/run/netns/NAME` that `ip netns exec`, `tcpdump`
//! wrappers and people debugging a stuck run all expect, which a bare
//! `unshare` would not. iproute2 is installed on every Debian CI image; the
//! shelling out is a handful of calls per lab, far off any hot path.
//! Entering a namespace from a thread uses `nix::sched::setns` (safe).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread::JoinHandle;

use nix::sched::{setns, CloneFlags};

use crate::LabError;

/// Run `ip ARGS…` and turn a failure into an error carrying its stderr.
pub fn ip(args: &[&str]) -> Result<Output, LabError> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| LabError::Io {
            context: format!("running ip {}", args.join(" ")),
            source: e,
        })?;
    if !out.status.success() {
        return Err(LabError::Command {
            command: format!("ip {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out)
}

/// A named network namespace, removed (with every process still inside it
/// killed) when dropped.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Create namespace `name` (`ip netns add`) and bring its `lo` up.
    ///
    /// # Errors
    /// [`LabError::Namespace`] when `ip netns add` fails (name taken, not
    /// root), or when `lo` cannot be brought up (the namespace is removed).
    pub fn create(name: &str) -> Result<Netns, LabError> {
        ip(&["netns", "add", name]).map_err(|e| LabError::Namespace {
            name: name.to_string(),
            reason: e.to_string(),
        })?;
        let ns = Netns {
            name: name.to_string(),
        };
        ip(&["-n", name, "link", "set", "lo", "up"]).map_err(|e| LabError::Namespace {
            name: name.to_string(),
            reason: e.to_string(),
        })?;
        Ok(ns)
    }

    /// The namespace's name, as `ip netns list` shows it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The bind mount that holds the namespace open: `/run/netns/NAME`.
    pub fn path(&self) -> PathBuf {
        Path::new("/run/netns").join(&self.name)
    }

    /// Spawn a thread that joins this namespace (`setns(2)` with
    /// `CLONE_NEWNET`, on this thread only) and then runs `f`. Sockets the
    /// thread opens live in the namespace; other threads are unaffected.
    ///
    /// The handle's result is `Err` when the namespace could not be entered
    /// (then `f` did not run).
    pub fn spawn_thread<F, T>(&self, f: F) -> JoinHandle<io::Result<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let path = self.path();
        std::thread::Builder::new()
            .name(format!("netns-{}", self.name))
            .spawn(move || {
                enter(&path)?;
                Ok(f())
            })
            .expect("spawning a thread")
    }

    /// Run `f` inside the namespace on a helper thread and wait for it.
    ///
    /// # Errors
    /// The namespace could not be entered.
    ///
    /// # Panics
    /// Re-raises a panic from `f`.
    pub fn run<F, T>(&self, f: F) -> io::Result<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        match self.spawn_thread(f).join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// The command `ip netns exec NAME PROGRAM ARGS…` for `cmd` (its program,
    /// arguments, environment and working directory are carried over; its
    /// stdio settings are not, set them on the result).
    pub fn command(&self, cmd: &Command) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]);
        c.arg(cmd.get_program());
        c.args(cmd.get_args());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        if let Some(d) = cmd.get_current_dir() {
            c.current_dir(d);
        }
        c
    }

    /// Spawn `cmd` inside the namespace (through `ip netns exec`, which
    /// `exec`s, so the child's PID is the program's own).
    ///
    /// # Errors
    /// Spawning failed (`ip` missing).
    pub fn spawn(&self, cmd: &Command) -> io::Result<Child> {
        self.command(cmd).spawn()
    }

    /// PIDs of the processes inside the namespace (`ip netns pids`),
    /// excluding this process.
    pub fn pids(&self) -> Vec<i32> {
        pids_in(&self.name)
    }

    /// Write a sysctl under `/proc/sys/` (e.g. `net/ipv4/tcp_fastopen`)
    /// from a thread inside the namespace, so it applies to this namespace
    /// only.
    ///
    /// # Errors
    /// [`LabError::Sysctl`] when the key does not exist or the kernel
    /// refuses the value.
    pub fn set_sysctl(&self, key: &str, value: &str) -> Result<(), LabError> {
        let path = Path::new("/proc/sys").join(key);
        let v = value.to_string();
        let r = self.run(move || std::fs::write(&path, v)).and_then(|r| r);
        r.map_err(|e| LabError::Sysctl {
            key: key.to_string(),
            value: value.to_string(),
            source: e,
        })
    }

    /// Read a sysctl from inside the namespace (trimmed).
    ///
    /// # Errors
    /// [`LabError::Sysctl`] when it cannot be read.
    pub fn sysctl(&self, key: &str) -> Result<String, LabError> {
        let path = Path::new("/proc/sys").join(key);
        let r = self
            .run(move || std::fs::read_to_string(&path))
            .and_then(|r| r);
        r.map(|s| s.trim().to_string())
            .map_err(|e| LabError::Sysctl {
                key: key.to_string(),
                value: String::new(),
                source: e,
            })
    }
}

/// Enter the namespace whose bind mount is `path`, on the calling thread.
fn enter(path: &Path) -> io::Result<()> {
    let f = File::open(path)?;
    setns(&f, CloneFlags::CLONE_NEWNET).map_err(io::Error::from)
}

fn pids_in(name: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    match ip(&["netns", "pids", name]) {
        Ok(out) => String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .filter(|&p| p != me)
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Kill (SIGKILL, by PID) every process inside namespace `name`, then
/// remove it. Errors are ignored: this runs from `Drop` and signal handlers.
pub(crate) fn destroy(name: &str) {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    for _ in 0..3 {
        let pids = pids_in(name);
        if pids.is_empty() {
            break;
        }
        for p in pids {
            let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = ip(&["netns", "del", name]);
}

impl Drop for Netns {
    fn drop(&mut self) {
        destroy(&self.name);
    }
}

/// Names of all namespaces `ip netns list` shows.
///
/// # Errors
/// `ip` failed.
pub fn list() -> Result<Vec<String>, LabError> {
    let out = ip(&["netns", "list"])?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect())
}
