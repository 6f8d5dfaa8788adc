//! `rttlens analyze` on inputs that are not captures it can read (issue
//! 46): a directory, a missing file, a file it may not read, a FIFO nobody
//! writes to, a FIFO closed without a byte, and `/dev/zero`. Each is one clear line on
//! stderr and the README's exit code (2; a FIFO that never gives data is
//! waited on, with one line saying so, until Ctrl-C). Every wait is
//! bounded.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{bin, capture, scratch};

/// Run `cmd`, killed after 30 s (a hang fails the test, never blocks it).
fn bounded(mut cmd: Command) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rttlens");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(o) => o.expect("output"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("rttlens analyze hung for 30 s");
        }
    }
}

/// One line on stderr naming `path` and containing `why`, exit code 2,
/// nothing on stdout.
fn one_line_exit_2(o: &Output, path: &Path, why: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}: {err}", path.display());
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(
        err.starts_with(&format!("rttlens: cannot read {}", path.display())),
        "{err}"
    );
    assert!(
        err.contains(why),
        "{}: expected `{why}` in {err}",
        path.display()
    );
    // the OS's reason once, not again as its cause
    assert!(err.matches("(os error").count() <= 1, "{err}");
    assert!(o.stdout.is_empty(), "nothing on stdout");
}

#[test]
fn a_directory() {
    let dir = scratch("a-directory");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let mut cmd = bin();
    cmd.arg("analyze").arg(&dir);
    one_line_exit_2(&bounded(cmd), &dir, "Is a directory (os error 21)");
}

#[test]
fn a_missing_file() {
    let missing = scratch("no-such-capture.pcap");
    let _ = std::fs::remove_file(&missing);
    let mut cmd = bin();
    cmd.arg("analyze").arg(&missing);
    one_line_exit_2(
        &bounded(cmd),
        &missing,
        "No such file or directory (os error 2)",
    );
}

#[test]
fn a_file_without_read_permission() {
    // a real capture, readable by nobody; root reads any file whatever
    // its mode (CAP_DAC_OVERRIDE), so as root rttlens runs as `nobody`
    // (setpriv drops the user, group and capabilities)
    let dir = scratch("unreadable");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod dir");
    let file = dir.join("capture.pcap");
    std::fs::copy(capture("pku.cap"), &file).expect("copy a capture");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).expect("chmod 000");
    let root = nix::unistd::geteuid().is_root();
    let cmd = if root {
        let found = Command::new("setpriv").arg("--version").output();
        assert!(
            found.is_ok_and(|o| o.status.success()),
            "as root this test drops to `nobody` with setpriv, which is missing: \
             apt-get install -y util-linux"
        );
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_rttlens"))
            .arg("analyze")
            .arg(&file);
        c
    } else {
        let mut c = bin();
        c.arg("analyze").arg(&file);
        c
    };
    let o = bounded(cmd);
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("cannot execute"),
        "the binary must be executable by nobody: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    one_line_exit_2(&o, &file, "Permission denied (os error 13)");
}

/// A FIFO in the scratch directory.
fn fifo(name: &str) -> std::path::PathBuf {
    let p = scratch(name);
    let _ = std::fs::remove_file(&p);
    nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    p
}

/// Does this process ignore SIGINT (`SigIgn` in /proc/self/status, bit 1)?
fn sigint_ignored() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let hex = s
                .lines()
                .find_map(|l| l.strip_prefix("SigIgn:"))?
                .trim()
                .to_string();
            u64::from_str_radix(&hex, 16).ok()
        })
        .is_some_and(|mask| mask & (1 << (nix::sys::signal::Signal::SIGINT as u32 - 1)) != 0)
}

#[test]
fn a_fifo_nobody_writes_to_says_it_waits_and_ctrl_c_stops_it() {
    let p = fifo("silent.fifo");
    let mut child = bin()
        .arg("analyze")
        .arg(&p)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rttlens");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let t0 = Instant::now();
    let line = rx.recv_timeout(Duration::from_secs(15));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::SIGINT);
    // bounded: a child that outlives its SIGINT by 10 s is killed, and
    // the failure says whether this process ignores SIGINT (a child
    // inherits that: a shell without job control starts its background
    // jobs so, and rttlens blocked opening the FIFO keeps SIGINT's
    // disposition, as programs do)
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "rttlens was still waiting for the FIFO 10 s after SIGINT{}",
                if sigint_ignored() {
                    ": this test process ignores SIGINT (started in the background by a \
                     shell without job control?), and the child inherited that; run the \
                     tests with SIGINT at its default"
                } else {
                    ""
                }
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let line = line.unwrap_or_else(|_| panic!("15 s of silence on a FIFO nobody writes to"));
    assert!(
        line.contains(&format!("waiting for {}", p.display())) && line.contains("no data after"),
        "{line}"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "the notice came after {:?}",
        t0.elapsed()
    );
    // Ctrl-C: killed by SIGINT, the shell's exit code 130
    assert_eq!(status.signal(), Some(2), "{status:?}");
    assert!(rx.try_recv().is_err(), "one line only");
}

#[test]
fn a_fifo_closed_without_a_byte_is_empty() {
    let p = fifo("closed.fifo");
    let writer = {
        let p = p.clone();
        std::thread::spawn(move || {
            // opens (rttlens' open returns), then closes at once
            drop(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(p)
                    .expect("open the FIFO"),
            );
        })
    };
    let mut cmd = bin();
    cmd.arg("analyze").arg(&p);
    let o = bounded(cmd);
    writer.join().expect("writer");
    one_line_exit_2(&o, &p, "the input is empty (0 bytes)");
}

#[test]
fn dev_zero_is_not_a_capture() {
    let p = Path::new("/dev/zero");
    let mut cmd = bin();
    cmd.arg("analyze").arg(p);
    let t0 = Instant::now();
    let o = bounded(cmd);
    one_line_exit_2(&o, p, "starts with 00 00 00 00");
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
}
