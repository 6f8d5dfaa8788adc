//! The userspace delay link: packets read from one TUN device are written
//! to the other after a configured delay, with optional rate limit, loss,
//! reordering and jitter, and an optional pcapng of what passes.
//!
//! # Model
//! The path is client ⇄ M ⇄ server, where M is the *middle* vantage.
//! Each direction has a one-way delay (`rtt × forward_share` for
//! client→server, the rest for server→client). M sits at
//! [`LinkConfig::client_share`] of the way: a client→server packet reaches M
//! after `client_share` of its one-way delay, a server→client packet after
//! `1 − client_share` of its. So a capture at M sees
//! `h_c = client_share × rtt` (M→client→M) and `h_s = rtt − h_c`,
//! whatever `forward_share` is.
//!
//! A packet's life: it is read from the source TUN (*arrival*); loss and the
//! rate limit apply here, at the link's entry; then it waits in one sorted
//! queue (a binary heap keyed by absolute deadline) that a single scheduler
//! thread serves, sleeping on a condvar until `SPIN` before the head's
//! deadline and spinning the rest, then writes it to the other TUN.
//!
//! # Packet indices
//! Loss and reordering by index count, per direction and 1-based, the TCP
//! segments **that carry payload** (SYNs, pure ACKs, FINs without data and
//! non-TCP packets such as IPv6 neighbour discovery are not counted). This
//! makes an index mean the same thing whatever the ACK timing was: "drop the
//! 5th server→client data segment". Seeded random loss draws per index from
//! `hash(seed, direction, index)`, so the same seed always drops the same
//! indices. UDP datagrams have their own count
//! ([`Loss::udp_indices`]): every UDP datagram in a direction, 1-based (a
//! QUIC client's first Initial is client→server datagram 1).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use tun_rs::SyncDevice;

use rttlens_live::pcapng::PcapngWriter;

mod config;
mod segment;
mod stats;

pub use config::{random_drop, CapturePoint, Direction, LinkConfig, Loss, Spike};
pub use stats::LinkStats;

use config::{splitmix, unit};
use segment::segment_facts;
use stats::HIST_BUCKETS;

/// How long before a deadline the scheduler stops sleeping and spins. The
/// kernel's timer slack plus a condvar wake-up is ~50–100 µs on an idle
/// machine and more on a busy one; 200 µs keeps the error well under the
/// ±1 ms the lab promises at a bounded CPU cost.
const SPIN: Duration = Duration::from_micros(200);
/// How often the reader threads check the stop flag (ms).
const POLL_MS: u16 = 20;
/// How long a packet held for reordering waits for its successor before it
/// is sent anyway.
const REORDER_HOLD: Duration = Duration::from_millis(200);
/// Real-time (SCHED_FIFO) priority asked for the link's threads.
const RT_PRIORITY: &str = "10";
/// Buffer size for one packet: MTU 1500 plus slack.
const BUF: usize = 2048;

/// Give the calling thread real-time priority (SCHED_FIFO 10) so a busy
/// machine cannot delay it by milliseconds: a late wake-up of a reader
/// shifts that packet's arrival, and of the scheduler its departure, both
/// straight into the RTT the lab promises to ±1 ms. Done with `chrt` from
/// util-linux (present on every Debian system) on this thread's TID, which
/// keeps the crate free of `unsafe` (nix has no `sched_setscheduler`).
/// The kernel's RT throttling (`sched_rt_runtime_us`, 95 % by default)
/// still leaves the other threads CPU time. `false` when refused.
fn realtime() -> bool {
    let tid = nix::unistd::gettid().to_string();
    std::process::Command::new("chrt")
        .args(["-f", "-p", RT_PRIORITY, &tid])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Converts `Instant`s to nanoseconds since the Unix epoch, from one
/// reference pair taken at start, so capture timestamps are monotonic.
#[derive(Debug, Clone, Copy)]
struct Clock {
    base: Instant,
    base_ns: u64,
}

impl Clock {
    fn new() -> Clock {
        let base = Instant::now();
        let base_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Clock { base, base_ns }
    }
    fn ns(&self, t: Instant) -> u64 {
        self.base_ns + t.saturating_duration_since(self.base).as_nanos() as u64
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Reaches M (only with a Middle capture).
    Middle,
    /// Leaves the link.
    Out,
}

#[derive(Debug)]
struct Event {
    at: Instant,
    seq: u64,
    dir: Direction,
    stage: Stage,
    out_at: Instant,
    data: Vec<u8>,
}

impl PartialEq for Event {
    fn eq(&self, o: &Event) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Event) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Event {
    fn cmp(&self, o: &Event) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

#[derive(Debug, Default)]
struct Queue {
    heap: BinaryHeap<Reverse<Event>>,
    seq: u64,
}

struct Shared {
    cfg: LinkConfig,
    clock: Clock,
    stop: AtomicBool,
    queue: Mutex<Queue>,
    cv: Condvar,
    capture: Option<(Mutex<PcapngWriter<BufWriter<File>>>, CapturePoint)>,
    stats: Mutex<LinkStats>,
    /// `[client TUN, server TUN]`
    devs: [Arc<SyncDevice>; 2],
    /// When the configured [`Spike`] ends, once it started.
    spike_until: Mutex<Option<Instant>>,
}

impl Shared {
    /// Record a packet in the capture if `point` is the configured one;
    /// the timestamp is taken under the lock so the file is in time order.
    fn record(&self, point: CapturePoint, data: &[u8]) {
        if let Some((w, at)) = &self.capture {
            if *at == point {
                let mut w = w.lock().unwrap_or_else(|e| e.into_inner());
                let ts = self.clock.ns(Instant::now());
                let _ = w.write_packet(ts, data);
            }
        }
    }

    fn push(&self, dir: Direction, stage: Stage, at: Instant, out_at: Instant, data: Vec<u8>) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.seq += 1;
        let seq = q.seq;
        q.heap.push(Reverse(Event {
            at,
            seq,
            dir,
            stage,
            out_at,
            data,
        }));
        drop(q);
        self.cv.notify_one();
    }
}

/// A running link. Dropping it stops the threads (within ~20 ms), flushes
/// the capture and drops the TUN devices.
pub struct Link {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("cfg", &self.shared.cfg)
            .finish()
    }
}

impl Link {
    /// Start forwarding between `client` and `server` (TUN devices already
    /// configured and up).
    ///
    /// # Errors
    /// The capture file cannot be created, or a thread cannot be spawned.
    pub fn start(cfg: LinkConfig, client: SyncDevice, server: SyncDevice) -> io::Result<Link> {
        let capture = match &cfg.capture {
            Some((path, at)) => {
                let w = PcapngWriter::new(BufWriter::with_capacity(1 << 16, File::create(path)?))?;
                Some((Mutex::new(w), *at))
            }
            None => None,
        };
        let shared = Arc::new(Shared {
            cfg,
            clock: Clock::new(),
            stop: AtomicBool::new(false),
            queue: Mutex::new(Queue::default()),
            cv: Condvar::new(),
            capture,
            stats: Mutex::new(LinkStats {
                error_hist_us: vec![0; HIST_BUCKETS],
                ..LinkStats::default()
            }),
            devs: [Arc::new(client), Arc::new(server)],
            spike_until: Mutex::new(None),
        });
        // Each thread reports once it has its real-time priority; `start`
        // returns only then, so the first packets of a fresh lab do not wait
        // for `chrt` to run (that cost the first SYN 1–4 ms).
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
        let mut link = Link {
            shared,
            threads: Vec::new(),
        };
        for dir in [Direction::ClientToServer, Direction::ServerToClient] {
            let s = Arc::clone(&link.shared);
            let ready = ready_tx.clone();
            link.threads.push(
                std::thread::Builder::new()
                    .name(format!("link-read-{}", dir.idx()))
                    .spawn(move || reader(&s, dir, &ready))?,
            );
        }
        let s = Arc::clone(&link.shared);
        link.threads.push(
            std::thread::Builder::new()
                .name("link-sched".into())
                .spawn(move || scheduler(&s, &ready_tx))?,
        );
        for _ in 0..link.threads.len() {
            // bounded: a thread that cannot get its priority still reports
            if ready_rx.recv_timeout(READY_TIMEOUT).is_err() {
                break;
            }
        }
        Ok(link)
    }

    /// The configuration in use.
    pub fn config(&self) -> &LinkConfig {
        &self.shared.cfg
    }

    /// A snapshot of the statistics so far.
    pub fn stats(&self) -> LinkStats {
        self.shared
            .stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Flush the capture file so far (readers can open it meanwhile).
    ///
    /// # Errors
    /// The flush failed.
    pub fn flush_capture(&self) -> io::Result<()> {
        if let Some((w, _)) = &self.shared.capture {
            w.lock().unwrap_or_else(|e| e.into_inner()).flush()?;
        }
        Ok(())
    }

    /// Stop the threads, flush the capture and return the final stats.
    pub fn stop(mut self) -> LinkStats {
        self.halt();
        self.stats()
    }

    fn halt(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.cv.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let _ = self.flush_capture();
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Per-direction state kept by its reader thread.
struct DirState {
    payload_index: u64,
    udp_index: u64,
    packets: u64,
    syn_dropped: bool,
    syn_data_dropped: bool,
    /// When the bottleneck is free again (rate limit).
    free_at: Instant,
    /// Latest deadline given, so jitter never reorders.
    last_out: Instant,
    held: Option<(Instant, Vec<u8>)>,
}

/// How long [`Link::start`] waits for its threads to report ready.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// Raise the calling link thread to real-time priority (counted in the
/// stats), then tell [`Link::start`] it is ready.
fn get_ready(s: &Shared, ready: &std::sync::mpsc::Sender<()>) {
    let rt = realtime();
    let mut stats = s.stats.lock().unwrap_or_else(|e| e.into_inner());
    stats.realtime_threads += u32::from(rt);
    stats.thread_ids.push(nix::unistd::gettid().as_raw());
    drop(stats);
    let _ = ready.send(());
}

fn reader(s: &Shared, dir: Direction, ready: &std::sync::mpsc::Sender<()>) {
    get_ready(s, ready);
    let src = &s.devs[dir.idx()];
    let (entry_point, _) = match dir {
        Direction::ClientToServer => (CapturePoint::Ingress, CapturePoint::Egress),
        Direction::ServerToClient => (CapturePoint::Egress, CapturePoint::Ingress),
    };
    let now = Instant::now();
    let mut st = DirState {
        payload_index: 0,
        udp_index: 0,
        packets: 0,
        syn_dropped: false,
        syn_data_dropped: false,
        free_at: now,
        last_out: now,
        held: None,
    };
    let mut buf = vec![0u8; BUF];
    while !s.stop.load(Ordering::Relaxed) {
        let ready = {
            let mut fds = [PollFd::new(src.as_fd(), PollFlags::POLLIN)];
            poll(&mut fds, PollTimeout::from(POLL_MS)).unwrap_or(0)
        };
        if let Some((since, _)) = &st.held {
            if since.elapsed() > REORDER_HOLD {
                let (_, data) = st.held.take().expect("checked");
                schedule(s, dir, &mut st, Instant::now(), data);
            }
        }
        if ready <= 0 {
            continue;
        }
        let n = match src.recv(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(_) => break,
        };
        let arrival = Instant::now();
        let data = buf[..n].to_vec();
        s.record(entry_point, &data);
        let info = segment_facts(&data);
        let mut index = 0;
        if let Some(i) = info {
            if i.payload {
                st.payload_index += 1;
                index = st.payload_index;
                s.stats
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .payload_segments[dir.idx()] = index;
            }
        }
        if let Some(sp) = s
            .cfg
            .spike
            .filter(|sp| sp.after == (dir, index) && index > 0)
        {
            let mut until = s.spike_until.lock().unwrap_or_else(|e| e.into_inner());
            until.get_or_insert(arrival + sp.hold);
        }
        let loss = s.cfg.loss(dir);
        if segment::is_udp(&data) {
            st.udp_index += 1;
            let mut stats = s.stats.lock().unwrap_or_else(|e| e.into_inner());
            stats.udp_datagrams[dir.idx()] = st.udp_index;
            if loss.udp_indices.contains(&st.udp_index) {
                stats.udp_dropped.push((dir, st.udp_index));
                continue;
            }
        }
        let drop_syn = loss.first_syn && !st.syn_dropped && info.is_some_and(|i| i.syn);
        let drop_syn_data =
            loss.first_syn_data && !st.syn_data_dropped && info.is_some_and(|i| i.syn && i.payload);
        let drop_idx = index > 0
            && (loss.indices.contains(&index)
                || random_drop(loss.seed, dir, index, loss.probability));
        let black_hole = loss
            .black_hole_from
            .is_some_and(|from| st.payload_index >= from);
        if drop_syn || drop_syn_data || drop_idx || black_hole {
            st.syn_dropped |= drop_syn;
            st.syn_data_dropped |= drop_syn_data;
            let mut stats = s.stats.lock().unwrap_or_else(|e| e.into_inner());
            stats.dropped.push((dir, index));
            continue;
        }
        if index > 0 && s.cfg.reorder(dir).contains(&index) && st.held.is_none() {
            st.held = Some((arrival, data));
            continue;
        }
        if !schedule(s, dir, &mut st, arrival, data) {
            continue;
        }
        if let Some((_, held)) = st.held.take() {
            schedule(s, dir, &mut st, arrival, held);
        }
    }
}

/// Compute the deadlines of one packet and queue it. `false` when the
/// rate-limit queue was full and it was dropped.
fn schedule(
    s: &Shared,
    dir: Direction,
    st: &mut DirState,
    arrival: Instant,
    data: Vec<u8>,
) -> bool {
    let cfg = &s.cfg;
    st.packets += 1;
    let mut base = arrival;
    if cfg.spike.is_some_and(|sp| sp.held == dir) {
        // held until the spike ends (packets before it started pass)
        if let Some(until) = *s.spike_until.lock().unwrap_or_else(|e| e.into_inner()) {
            base = base.max(until);
        }
    }
    if cfg.rate_bps > 0 {
        let start = st.free_at.max(arrival);
        let backlog =
            start.saturating_duration_since(arrival).as_secs_f64() * cfg.rate_bps as f64 / 8.0;
        if backlog + data.len() as f64 > cfg.queue_limit_bytes as f64 {
            s.stats
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .queue_drops += 1;
            return false;
        }
        let tx = Duration::from_secs_f64(data.len() as f64 * 8.0 / cfg.rate_bps as f64);
        st.free_at = start + tx;
        base = st.free_at;
    }
    let mut delay = cfg.one_way(dir);
    if !cfg.syn_lead.is_zero() && segment_facts(&data).is_some_and(|f| f.syn) {
        delay = delay.saturating_sub(cfg.syn_lead);
    }
    if !cfg.jitter.is_zero() {
        let r = unit(splitmix(
            cfg.jitter_seed ^ ((dir.idx() as u64) << 62) ^ st.packets,
        ));
        let off = cfg.jitter.as_secs_f64() * (2.0 * r - 1.0);
        delay = Duration::from_secs_f64((delay.as_secs_f64() + off).max(0.0));
    }
    let out = (base + delay).max(st.last_out);
    st.last_out = out;
    let middle = matches!(&s.capture, Some((_, CapturePoint::Middle)));
    if middle {
        let mid = (base + delay.mul_f64(cfg.first_leg(dir))).min(out);
        s.push(dir, Stage::Middle, mid, out, data);
    } else {
        s.push(dir, Stage::Out, out, out, data);
    }
    true
}

fn scheduler(s: &Shared, ready: &std::sync::mpsc::Sender<()>) {
    get_ready(s, ready);
    loop {
        let ev = {
            let mut q = s.queue.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if s.stop.load(Ordering::Relaxed) {
                    return;
                }
                let now = Instant::now();
                match q.heap.peek() {
                    None => {
                        q =
                            s.cv.wait_timeout(q, Duration::from_millis(50))
                                .unwrap_or_else(|e| e.into_inner())
                                .0;
                    }
                    Some(Reverse(head)) if head.at > now + SPIN => {
                        let wait = head.at - now - SPIN;
                        q =
                            s.cv.wait_timeout(q, wait)
                                .unwrap_or_else(|e| e.into_inner())
                                .0;
                    }
                    Some(_) => break q.heap.pop().expect("peeked").0,
                }
            }
        };
        while Instant::now() < ev.at {
            std::hint::spin_loop();
        }
        match ev.stage {
            Stage::Middle => {
                s.record(CapturePoint::Middle, &ev.data);
                s.push(ev.dir, Stage::Out, ev.out_at, ev.out_at, ev.data);
            }
            Stage::Out => {
                let dst = &s.devs[1 - ev.dir.idx()];
                // the departure time: the write below also runs the
                // receiving stack (softirq) on this thread, which is the
                // far host's time, not the link's
                let sent = Instant::now();
                let ok = dst.send(&ev.data).is_ok();
                let exit_point = match ev.dir {
                    Direction::ClientToServer => CapturePoint::Egress,
                    Direction::ServerToClient => CapturePoint::Ingress,
                };
                s.record(exit_point, &ev.data);
                let err_us = if sent >= ev.out_at {
                    (sent - ev.out_at).as_micros() as u64
                } else {
                    (ev.out_at - sent).as_micros() as u64
                };
                let mut st = s.stats.lock().unwrap_or_else(|e| e.into_inner());
                if ok {
                    st.forwarded[ev.dir.idx()] += 1;
                    let b = (err_us as usize).min(HIST_BUCKETS - 1);
                    st.error_hist_us[b] += 1;
                    st.error_max_us = st.error_max_us.max(err_us);
                } else {
                    st.write_errors += 1;
                }
            }
        }
    }
}
