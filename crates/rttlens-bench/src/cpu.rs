//! CPU time of threads and processes, from `/proc` (proc(5): `utime` and
//! `stime`, fields 14 and 15 of `stat`, in clock ticks): the generator's
//! own threads (its tokio workers, the scheduler, the collector), so the
//! figure leaves out the lab's link and servers running in the same
//! process; and a server's process by PID.

use std::path::Path;
use std::sync::Mutex;

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
fn ticks_per_second() -> f64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(t)) if t > 0 => t as f64,
        _ => 100.0,
    }
}

/// `utime + stime` of a `stat` file, in seconds.
fn stat_seconds(path: &Path) -> Option<f64> {
    let s = std::fs::read_to_string(path).ok()?;
    // the command name (field 2) is in parentheses and may hold spaces
    let rest = &s[s.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state): utime is field 14, stime field 15
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / ticks_per_second())
}

/// CPU seconds of `id`: a thread of this process when it is one (its own
/// time, from `/proc/self/task/ID/stat`; `/proc/ID/stat` would give the
/// whole process's), else process `id` with all its threads. `None` when
/// neither exists.
pub fn process_seconds(id: u32) -> Option<f64> {
    let own = format!("/proc/self/task/{id}/stat");
    if id != std::process::id() && Path::new(&own).exists() {
        return stat_seconds(Path::new(&own));
    }
    stat_seconds(Path::new(&format!("/proc/{id}/stat")))
}

/// The threads whose CPU time counts as the generator's.
#[derive(Debug, Default)]
pub(crate) struct Threads {
    tids: Mutex<Vec<i32>>,
}

impl Threads {
    /// Count the calling thread.
    pub fn register_current(&self) {
        let tid = nix::unistd::gettid().as_raw();
        if let Ok(mut t) = self.tids.lock() {
            t.push(tid);
        }
    }

    /// CPU seconds of the counted threads that are still alive.
    pub fn seconds(&self) -> f64 {
        let tids = self.tids.lock().map(|t| t.clone()).unwrap_or_default();
        tids.iter()
            .filter_map(|t| stat_seconds(Path::new(&format!("/proc/self/task/{t}/stat"))))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_thread_burns_cpu() {
        let threads = Threads::default();
        threads.register_current();
        let before = threads.seconds();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        // a fixed amount of work (not a fixed time: the test must hold on
        // a loaded machine), some tenths of a second
        for _ in 0..30_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let wall = start.elapsed().as_secs_f64();
        let used = threads.seconds() - before;
        // at least a few clock ticks, and never more than the wall time
        // (one thread), give or take a tick
        assert!(
            used >= 0.03 && used <= wall + 0.02,
            "{used} CPU-s in {wall} s"
        );
        assert!(process_seconds(std::process::id()).is_some_and(|s| s >= used));
        assert!(process_seconds(u32::MAX).is_none());
        // another thread of this process: its own time, not the process's
        let idle = std::thread::spawn(|| {
            let tid = u32::try_from(nix::unistd::gettid().as_raw()).expect("tid");
            std::thread::sleep(std::time::Duration::from_millis(50));
            process_seconds(tid)
        })
        .join()
        .expect("thread");
        assert!(idle.is_some_and(|s| s < used / 2.0), "{idle:?} vs {used}");
    }
}
