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
//! indices.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use tun_rs::SyncDevice;

use crate::pcapng::PcapngWriter;

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

/// A direction through the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// Client to server.
    ClientToServer,
    /// Server to client.
    ServerToClient,
}

impl Direction {
    fn idx(self) -> usize {
        match self {
            Direction::ClientToServer => 0,
            Direction::ServerToClient => 1,
        }
    }
}

/// Where on the path the link's own capture is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapturePoint {
    /// At the client end of the link (a client vantage): client→server
    /// packets as they enter the link (before any drop), server→client
    /// packets as they leave it towards the client.
    Ingress,
    /// At M (see the module doc): each packet stamped when it has waited
    /// its direction's first leg.
    Middle,
    /// At the server end (a server vantage): client→server packets as they
    /// leave towards the server, server→client packets as they enter.
    Egress,
}

/// Loss knobs for one direction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loss {
    /// Drop these payload-carrying TCP segments (1-based indices, see the
    /// module doc).
    pub indices: Vec<u64>,
    /// Drop the first segment with SYN set in this direction (the SYN
    /// client→server, the SYN-ACK server→client).
    pub first_syn: bool,
    /// Drop the first SYN that carries data (a TCP Fast Open attempt).
    pub first_syn_data: bool,
    /// Probability (0.0–1.0) of dropping each payload-carrying segment,
    /// decided by `hash(seed, direction, index)`. Default 0.
    pub probability: f64,
    /// Seed for `probability`.
    pub seed: u64,
    /// A black hole: from the payload segment with this index (1-based) on,
    /// every packet in this direction is dropped, with or without payload
    /// (a peer or path that died mid-transfer).
    pub black_hole_from: Option<u64>,
}

/// The link's knobs. `Default` is a 40 ms RTT split evenly, no rate limit,
/// no loss, no reordering, no jitter, no capture.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// Round-trip time the link adds (client→server + server→client one-way
    /// delays). Default 40 ms.
    pub rtt: Duration,
    /// Share of `rtt` spent client→server (0.0–1.0; the rest is
    /// server→client). Default 0.5 (symmetric).
    pub forward_share: f64,
    /// Where M sits: the share of `rtt` between the client and M
    /// (`h_c / rtt`, 0.0–1.0). Default 0.5.
    pub client_share: f64,
    /// Bottleneck rate in bits per second, each direction; 0 = unlimited
    /// (the default). A packet's serialisation time `len × 8 / rate` is
    /// added before its propagation delay.
    pub rate_bps: u64,
    /// Bytes that may wait for the bottleneck per direction before further
    /// packets are tail-dropped (only with `rate_bps` > 0). Default 256 KiB.
    pub queue_limit_bytes: u64,
    /// Loss client→server.
    pub loss_c2s: Loss,
    /// Loss server→client.
    pub loss_s2c: Loss,
    /// Reorder client→server: segment N (payload index, 1-based) is held and
    /// sent just after the next packet in that direction (or after 200 ms
    /// if none comes).
    pub reorder_c2s: Vec<u64>,
    /// Reorder server→client, as `reorder_c2s`.
    pub reorder_s2c: Vec<u64>,
    /// Jitter: each packet's one-way delay gets a uniform offset in
    /// ±`jitter` drawn from `hash(jitter_seed, direction, packet number)`.
    /// Packets are never reordered by jitter (a packet leaves no earlier
    /// than its predecessor). Default 0.
    pub jitter: Duration,
    /// Seed for `jitter`.
    pub jitter_seed: u64,
    /// Write a pcapng of the forwarded packets to this file (raw IP,
    /// nanosecond timestamps). Default none.
    pub capture: Option<(PathBuf, CapturePoint)>,
    /// A delay spike (a route change, a burst of link-layer retries): once
    /// the payload segment it names passes, every packet of its direction
    /// is held until the spike ends, then released in order. Default none.
    pub spike: Option<Spike>,
}

/// A delay spike on one direction of the link ([`LinkConfig::spike`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spike {
    /// The direction and 1-based payload index of the segment whose
    /// arrival starts the spike.
    pub after: (Direction, u64),
    /// The direction held.
    pub held: Direction,
    /// How long it is held.
    pub hold: Duration,
}

impl Default for LinkConfig {
    fn default() -> LinkConfig {
        LinkConfig {
            rtt: Duration::from_millis(40),
            forward_share: 0.5,
            client_share: 0.5,
            rate_bps: 0,
            queue_limit_bytes: 256 * 1024,
            loss_c2s: Loss::default(),
            loss_s2c: Loss::default(),
            reorder_c2s: Vec::new(),
            reorder_s2c: Vec::new(),
            jitter: Duration::ZERO,
            jitter_seed: 0,
            capture: None,
            spike: None,
        }
    }
}

impl LinkConfig {
    /// The default link with this RTT.
    pub fn with_rtt(rtt: Duration) -> LinkConfig {
        LinkConfig {
            rtt,
            ..LinkConfig::default()
        }
    }

    fn one_way(&self, dir: Direction) -> Duration {
        let f = self.forward_share.clamp(0.0, 1.0);
        match dir {
            Direction::ClientToServer => self.rtt.mul_f64(f),
            Direction::ServerToClient => self.rtt - self.rtt.mul_f64(f),
        }
    }

    /// Fraction of a direction's one-way delay before M.
    fn first_leg(&self, dir: Direction) -> f64 {
        let c = self.client_share.clamp(0.0, 1.0);
        match dir {
            Direction::ClientToServer => c,
            Direction::ServerToClient => 1.0 - c,
        }
    }

    fn loss(&self, dir: Direction) -> &Loss {
        match dir {
            Direction::ClientToServer => &self.loss_c2s,
            Direction::ServerToClient => &self.loss_s2c,
        }
    }

    fn reorder(&self, dir: Direction) -> &[u64] {
        match dir {
            Direction::ClientToServer => &self.reorder_c2s,
            Direction::ServerToClient => &self.reorder_s2c,
        }
    }
}

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

/// Whether seeded random loss drops payload segment `index` (1-based) in
/// `dir`: a pure function of its arguments.
pub fn random_drop(seed: u64, dir: Direction, index: u64, probability: f64) -> bool {
    probability > 0.0 && unit(splitmix(seed ^ ((dir.idx() as u64) << 62) ^ index)) < probability
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Map to [0, 1).
fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// What the link saw, for checks and the bench.
#[derive(Debug, Clone, Default)]
pub struct LinkStats {
    /// Packets written to the far TUN, per direction (`[c2s, s2c]`).
    pub forwarded: [u64; 2],
    /// Packets dropped by the loss knobs: direction and payload index
    /// (0 for a dropped SYN without payload), in the order dropped.
    pub dropped: Vec<(Direction, u64)>,
    /// Payload-carrying TCP segments that entered the link, per direction
    /// (`[c2s, s2c]`): the highest index the loss knobs could have seen.
    pub payload_segments: [u64; 2],
    /// Packets tail-dropped because the rate-limit queue was full.
    pub queue_drops: u64,
    /// Packets the far TUN refused (write error).
    pub write_errors: u64,
    /// Added-delay error per forwarded packet: |time the write to the far
    /// TUN starts − ideal deadline|, where the ideal is arrival + serialisation + one-way
    /// delay (± jitter). Histogram with 1 µs buckets; the last bucket
    /// holds everything ≥ its index.
    pub error_hist_us: Vec<u64>,
    /// Largest error seen (µs).
    pub error_max_us: u64,
    /// Link threads that got real-time priority (of 3).
    pub realtime_threads: u32,
    /// Thread IDs of the link's threads (two readers and the scheduler),
    /// for their CPU time in `/proc/self/task/TID/stat`.
    pub thread_ids: Vec<i32>,
}

impl LinkStats {
    /// The `q`-quantile (0.0–1.0) of the added-delay error, in µs; 0 when
    /// nothing was forwarded.
    pub fn error_quantile_us(&self, q: f64) -> u64 {
        let n: u64 = self.error_hist_us.iter().sum();
        if n == 0 {
            return 0;
        }
        let want = ((n as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (us, c) in self.error_hist_us.iter().enumerate() {
            seen += c;
            if seen >= want {
                return us as u64;
            }
        }
        self.error_max_us
    }
}

const HIST_BUCKETS: usize = 20_000;

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

/// TCP facts the loss and reorder knobs need.
#[derive(Debug, Clone, Copy, Default)]
struct TcpInfo {
    syn: bool,
    payload: bool,
}

/// Parse just enough of an IPv4/IPv6 + TCP packet. `None` when not TCP (or
/// IPv6 with extension headers, which the lab does not produce).
fn tcp_info(p: &[u8]) -> Option<TcpInfo> {
    let (tcp, ip_payload_len) = match p.first()? >> 4 {
        4 => {
            let ihl = usize::from(p.first()? & 0x0f) * 4;
            if *p.get(9)? != 6 || ihl < 20 {
                return None;
            }
            let total = usize::from(u16::from_be_bytes([*p.get(2)?, *p.get(3)?]));
            (p.get(ihl..)?, total.checked_sub(ihl)?)
        }
        6 => {
            if *p.get(6)? != 6 {
                return None;
            }
            let plen = usize::from(u16::from_be_bytes([*p.get(4)?, *p.get(5)?]));
            (p.get(40..)?, plen)
        }
        _ => return None,
    };
    let doff = usize::from(tcp.get(12)? >> 4) * 4;
    let flags = *tcp.get(13)?;
    Some(TcpInfo {
        syn: flags & 0x02 != 0,
        payload: ip_payload_len > doff,
    })
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
        let info = tcp_info(&data);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_drop_is_deterministic() {
        let a: Vec<u64> = (1..1000)
            .filter(|&i| random_drop(7, Direction::ServerToClient, i, 0.1))
            .collect();
        let b: Vec<u64> = (1..1000)
            .filter(|&i| random_drop(7, Direction::ServerToClient, i, 0.1))
            .collect();
        assert_eq!(a, b);
        assert!((60..140).contains(&a.len()), "{}", a.len());
        let c: Vec<u64> = (1..1000)
            .filter(|&i| random_drop(8, Direction::ServerToClient, i, 0.1))
            .collect();
        assert_ne!(a, c);
    }

    #[test]
    fn middle_split() {
        let cfg = LinkConfig {
            rtt: Duration::from_millis(40),
            client_share: 0.25,
            ..LinkConfig::default()
        };
        let c2s = cfg
            .one_way(Direction::ClientToServer)
            .mul_f64(cfg.first_leg(Direction::ClientToServer));
        let s2c = cfg.one_way(Direction::ServerToClient);
        let s2c_after_m = s2c - s2c.mul_f64(cfg.first_leg(Direction::ServerToClient));
        assert_eq!(c2s + s2c_after_m, Duration::from_millis(10));
    }

    #[test]
    fn tcp_info_syn_and_payload() {
        // IPv4 + TCP SYN, no payload
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[3] = 40;
        p[9] = 6;
        p[32] = 0x50;
        p[33] = 0x02;
        let i = tcp_info(&p).unwrap();
        assert!(i.syn && !i.payload);
        p.extend_from_slice(b"hi");
        p[3] = 42;
        p[33] = 0x18;
        let i = tcp_info(&p).unwrap();
        assert!(!i.syn && i.payload);
        p[9] = 17;
        assert!(tcp_info(&p).is_none());
    }
}
