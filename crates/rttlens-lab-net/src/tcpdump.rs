//! Client- and server-vantage captures: `tcpdump` on a TUN device inside a
//! lab namespace, started and stopped by PID.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::netns::Netns;
use crate::LabError;

/// How long to wait for tcpdump's "listening on" line.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long to wait for tcpdump to exit after SIGINT before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// tcpdump's tally at exit (its last lines on stderr); `None` for a line
/// it did not print.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpdumpCounts {
    /// `N packets captured`: written to the file.
    pub captured: Option<u64>,
    /// `N packets received by filter`: Linux counts a packet that reached
    /// the socket after tcpdump's last read, as SIGINT stops it.
    pub received: Option<u64>,
    /// `N packets dropped by kernel`: lost for want of buffer space.
    pub dropped: Option<u64>,
}

/// A running `tcpdump -i DEV -s 0 -B 65536 -U --immediate-mode -w FILE`
/// inside a namespace (a 64 MiB kernel buffer: with the default 2 MiB,
/// bursts of a 2 MB download lost a few segments, which the engine then
/// reported as `capture-drops`). Stopped (SIGINT to its PID, then waited for) by
/// [`Tcpdump::stop`] or on drop.
#[derive(Debug)]
pub struct Tcpdump {
    child: Option<Child>,
    stderr: mpsc::Receiver<String>,
}

impl Tcpdump {
    /// Start capturing `dev` inside `ns` into `file` (pcap, `LINKTYPE_RAW`
    /// on a TUN device) and wait until tcpdump says it is listening, so no
    /// packet sent after this returns is missed.
    ///
    /// # Errors
    /// [`LabError::CommandMissing`] when tcpdump is not installed;
    /// [`LabError::Capture`] when it exits or stays silent for 10 s.
    pub fn start(ns: &Netns, dev: &str, file: &Path) -> Result<Tcpdump, LabError> {
        Tcpdump::start_snaplen(ns, dev, file, 0)
    }

    /// [`Tcpdump::start`] keeping `snaplen` bytes a packet (`-s`; 0 is
    /// tcpdump's whole packet, 262144 B). libpcap sizes every slot of its
    /// ring for the snapshot length, and on a device with GSO/GRO on (TUN
    /// devices by default) cannot bound it by the MTU: at 0 the 64 MiB ring
    /// holds about 250 packets, and a multi-megabyte burst overruns it. A
    /// snapshot length above the MTU (2048 on the lab's 1500) keeps every
    /// packet whole and thousands in the ring.
    ///
    /// # Errors
    /// As [`Tcpdump::start`].
    pub fn start_snaplen(
        ns: &Netns,
        dev: &str,
        file: &Path,
        snaplen: u32,
    ) -> Result<Tcpdump, LabError> {
        crate::require_command("tcpdump", "tcpdump")?;
        let snaplen = snaplen.to_string();
        let mut cmd = Command::new("tcpdump");
        cmd.args([
            "-i",
            dev,
            "-s",
            &snaplen,
            "-B",
            "65536",
            "-U",
            "--immediate-mode",
            "-w",
        ])
        .arg(file);
        let mut child = ns
            .command(&cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| LabError::Io {
                context: "spawning tcpdump".into(),
                source: e,
            })?;
        let err = child.stderr.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("tcpdump-stderr".into())
            .spawn(move || {
                for line in BufReader::new(err).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| LabError::Io {
                context: "spawning a thread".into(),
                source: e,
            })?;
        let mut t = Tcpdump {
            child: Some(child),
            stderr: rx,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match t.stderr.recv_timeout(left) {
                Ok(line) if line.contains("listening on") => return Ok(t),
                Ok(line) => seen.push(line),
                Err(_) => {
                    t.halt();
                    return Err(LabError::Capture(format!(
                        "tcpdump on {dev} in {} did not start: {}",
                        ns.name(),
                        seen.join(" / ")
                    )));
                }
            }
        }
    }

    /// The tcpdump process's PID.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Stop it (SIGINT, so it writes out its buffer) and wait for it to
    /// exit; SIGKILL after 5 s.
    pub fn stop(mut self) {
        self.halt();
    }

    /// Stop it as [`Tcpdump::stop`] does and return the tally it prints
    /// when it exits, for a caller that must know the capture is complete.
    pub fn stop_counted(mut self) -> TcpdumpCounts {
        self.halt();
        let mut counts = TcpdumpCounts::default();
        // the reader thread ends at tcpdump's EOF; bounded by the timeout
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(1)) {
            let n = line
                .split_whitespace()
                .next()
                .and_then(|w| w.parse::<u64>().ok());
            if line.ends_with("packets captured") {
                counts.captured = n;
            } else if line.ends_with("packets received by filter") {
                counts.received = n;
            } else if line.ends_with("packets dropped by kernel") {
                counts.dropped = n;
            }
        }
        counts
    }

    fn halt(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        let pid = Pid::from_raw(child.id() as i32);
        let _ = kill(pid, Signal::SIGINT);
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Tcpdump {
    fn drop(&mut self) {
        self.halt();
    }
}
