#!/usr/bin/env bash
# serve-soak.sh: `rttlens serve` held at load and under abuse (issue 46):
# N concurrent scrapers against loopback targets of every kind, slowloris
# clients beside them; the server's RSS, open descriptors, threads and
# /metrics latency sampled throughout.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: bench/serve-soak.sh [--bin PATH] [--seconds N] [--scrapers N]
                           [--slowloris N] [--interval S] [--cooldown S]
                           [--out FILE.csv]

Starts, on loopback, one target of each kind (Python's http.server and raw
sockets, all in one helper process):
  healthy    200 with a 2 KB body
  hanging    accepts, never answers (the probe waits out its timeout)
  refusing   a closed port (RST to the SYN)
  redirect   302 to itself forever (the module follows redirects: the
             probe stops after 10)
  big        200 with a 100 MB body
then `rttlens serve --max-concurrent 64` with one module per kind
(`capture: false`: the server is measured, not the capture), and
--scrapers threads that each scrape /probe in a loop, cycling through the
kinds, while --slowloris clients send a request head one byte every 2 s
(the server closes them after its 10 s head limit). Every --interval s it
records the server's VmRSS, open descriptors and threads (/proc) and how
long GET /metrics took. When the scrapers stop it goes on sampling the
idle server for --cooldown s (what it keeps once the load is gone), then
sends SIGTERM. At the end: a table, the CSV (--out), and the first-minute
vs. last figures.

  --bin PATH      rttlens binary (default target/release/rttlens; nothing is built)
  --seconds N     how long the scrapers run (default 1800: the issue's 30 min)
  --scrapers N    concurrent scrapers (default 200)
  --slowloris N   slow clients (default 50)
  --interval S    seconds between samples (default 10)
  --cooldown S    seconds of samples after the load stops (default 30)
  --out FILE      CSV of the samples (default /tmp/serve-soak.csv)

Needs python3. Runs at the priority it is given (use `nice -n 19` on a
shared machine). Everything it started is stopped on exit and on Ctrl-C.
EOF
}

BIN=target/release/rttlens
SECONDS_RUN=1800
SCRAPERS=200
SLOW=50
INTERVAL=10
COOLDOWN=30
OUT=/tmp/serve-soak.csv

die() { echo "serve-soak.sh: $*" >&2; exit 2; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

while (($#)); do
    case $1 in
        --bin) BIN=${2:?--bin needs a path}; shift 2 ;;
        --seconds) SECONDS_RUN=${2:?--seconds needs a number}; shift 2 ;;
        --scrapers) SCRAPERS=${2:?--scrapers needs a number}; shift 2 ;;
        --slowloris) SLOW=${2:?--slowloris needs a number}; shift 2 ;;
        --interval) INTERVAL=${2:?--interval needs a number}; shift 2 ;;
        --cooldown) COOLDOWN=${2:?--cooldown needs a number}; shift 2 ;;
        --out) OUT=${2:?--out needs a file}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done
for v in SECONDS_RUN SCRAPERS SLOW INTERVAL COOLDOWN; do
    is_uint "${!v}" || die "${v,,}: a whole number, not '${!v}'"
done
((SCRAPERS > 0 && SCRAPERS <= 2000)) || die "--scrapers: 1..2000"
((INTERVAL > 0)) || die "--interval: at least 1"
[[ -x $BIN ]] || die "$BIN: not an executable (build it: cargo build --release -p rttlens)"
command -v python3 >/dev/null || die "python3 is missing (apt-get install -y python3)"

exec python3 -u - "$BIN" "$SECONDS_RUN" "$SCRAPERS" "$SLOW" "$INTERVAL" "$OUT" "$COOLDOWN" <<'PY'
import csv, http.server, os, re, signal, socket, socketserver, subprocess, sys
import tempfile, threading, time, urllib.parse

binary, seconds, scrapers, slow, interval, out, cooldown = sys.argv[1:]
seconds, scrapers, slow, interval = int(seconds), int(scrapers), int(slow), int(interval)
cooldown = int(cooldown)
stop = threading.Event()
BIG = 100 * 1024 * 1024
CHUNK = b"x" * 65536

class Targets(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_GET(self):
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("Location", "/redirect")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path.startswith("/big"):
            self.send_response(200)
            self.send_header("Content-Length", str(BIG))
            self.end_headers()
            try:
                for _ in range(BIG // len(CHUNK)):
                    self.wfile.write(CHUNK)
            except OSError:
                pass
        else:
            body = b"y" * 2000
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 512
    def handle_error(self, request, client_address):
        pass  # a probe that gave up mid-body resets its connection: expected

http_srv = Server(("127.0.0.1", 0), Targets)
threading.Thread(target=http_srv.serve_forever, daemon=True).start()
port = http_srv.server_address[1]

hang = socket.socket(); hang.bind(("127.0.0.1", 0)); hang.listen(1024)
held = []
def hold():
    hang.settimeout(0.5)
    while not stop.is_set():
        try:
            c, _ = hang.accept(); held.append(c)
            if len(held) > 4000:
                held.pop(0).close()
        except OSError:
            pass
threading.Thread(target=hold, daemon=True).start()
closed = socket.socket(); closed.bind(("127.0.0.1", 0)); refused_port = closed.getsockname()[1]; closed.close()

kinds = {
    "healthy": ("plain", f"http://127.0.0.1:{port}/ok"),
    "hanging": ("plain", f"http://127.0.0.1:{hang.getsockname()[1]}/"),
    "refusing": ("plain", f"http://127.0.0.1:{refused_port}/"),
    "redirect": ("follow", f"http://127.0.0.1:{port}/redirect"),
    "big": ("plain", f"http://127.0.0.1:{port}/big"),
}
cfg = tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False)
cfg.write("modules:\n  plain:\n    timeout: 5s\n    capture: false\n"
          "  follow:\n    timeout: 5s\n    capture: false\n    follow_redirects: true\n")
cfg.close()
serve = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--config", cfg.name,
                          "--max-concurrent", "64"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
first = serve.stderr.readline()
m = re.search(r"http://([0-9.]+):(\d+)/", first)
if not m:
    serve.kill(); sys.exit(f"serve-soak.sh: rttlens serve did not start: {first}")
addr = (m.group(1), int(m.group(2)))
# drain the rest of serve's stderr (one line per failed probe)
threading.Thread(target=lambda: [None for _ in serve.stderr], daemon=True).start()

def get(path, timeout=30):
    s = socket.create_connection(addr, timeout=timeout)
    try:
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        return int(data.split(b" ", 2)[1]) if data else 0
    finally:
        s.close()

counts = {}
lock = threading.Lock()
def scraper(i):
    names = list(kinds)
    n = i
    while not stop.is_set():
        kind = names[n % len(names)]; n += 1
        module, url = kinds[kind]
        path = "/probe?module=%s&target=%s" % (module, urllib.parse.quote(url, safe=""))
        try:
            status = get(path)
        except OSError as e:
            status = type(e).__name__
        with lock:
            counts[(kind, status)] = counts.get((kind, status), 0) + 1

def slowloris(i):
    while not stop.is_set():
        try:
            s = socket.create_connection(addr, timeout=5)
            for b in b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100:
                if stop.is_set():
                    break
                s.send(bytes([b]))
                time.sleep(2)
        except OSError:
            with lock:
                counts[("slowloris", "closed by server")] = counts.get(("slowloris", "closed by server"), 0) + 1
        finally:
            try: s.close()
            except Exception: pass

def proc(pid):
    st = open(f"/proc/{pid}/status").read()
    rss = int(re.search(r"VmRSS:\s+(\d+)", st).group(1)) // 1024
    threads = int(re.search(r"Threads:\s+(\d+)", st).group(1))
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return rss, fds, threads

def end(*_):
    stop.set()
signal.signal(signal.SIGINT, end)
signal.signal(signal.SIGTERM, end)

workers = [threading.Thread(target=scraper, args=(i,), daemon=True) for i in range(scrapers)]
workers += [threading.Thread(target=slowloris, args=(i,), daemon=True) for i in range(slow)]
for w in workers:
    w.start()
rows = []
idle_rows = []
t0 = time.time()
print(f"serve-soak: {scrapers} scrapers, {slow} slowloris clients, {seconds} s; rttlens serve pid {serve.pid}")
print(f"{'t (s)':>6} {'RSS MB':>7} {'fds':>5} {'threads':>7} {'/metrics ms':>11}")
def sample(into, idle=""):
    rss, fds, threads = proc(serve.pid)
    m0 = time.time()
    try:
        st = get("/metrics", timeout=10)
    except OSError:
        st = 0
    ms = (time.time() - m0) * 1000 if st == 200 else float("nan")
    row = (round(time.time() - t0), rss, fds, threads, round(ms, 1))
    into.append(row)
    print(f"{row[0]:>6} {rss:>7} {fds:>5} {threads:>7} {row[4]:>11}{idle}")
while not stop.is_set() and time.time() - t0 < seconds:
    stop.wait(interval)
    if serve.poll() is not None:
        print("serve-soak: rttlens serve exited", serve.returncode); break
    sample(rows)
interrupted = stop.is_set()
stop.set()
# the load is gone: what the idle server keeps
t_end = time.time()
while not interrupted and serve.poll() is None and time.time() - t_end < cooldown:
    time.sleep(min(interval, cooldown))
    sample(idle_rows, "  (no load)")
serve.send_signal(signal.SIGTERM)
try:
    code = serve.wait(timeout=30)
except subprocess.TimeoutExpired:
    serve.kill(); code = "killed after 30 s"
with open(out, "w", newline="") as f:
    w = csv.writer(f); w.writerow(["t_s", "rss_mb", "fds", "threads", "metrics_ms", "load"])
    w.writerows([r + ("yes",) for r in rows] + [r + ("no",) for r in idle_rows])
print(f"rttlens serve after SIGTERM: exit {code}")
print("scrapes by target and answer:")
for (kind, status), n in sorted(counts.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
    print(f"  {kind:10} {str(status):18} {n}")
if rows:
    after = [r for r in rows if r[0] >= 60] or rows
    def col(i): return [r[i] for r in after]
    ms = [r[4] for r in rows if r[4] == r[4]]
    print(f"after the first minute: RSS {min(col(1))}..{max(col(1))} MB, fds {min(col(2))}..{max(col(2))}, "
          f"threads {min(col(3))}..{max(col(3))}; /metrics {min(ms) if ms else 'nan'}..{max(ms) if ms else 'nan'} ms")
if idle_rows:
    r = idle_rows[-1]
    print(f"{r[0] - round(t_end - t0)} s after the load stopped: RSS {r[1]} MB, fds {r[2]}, threads {r[3]}")
print(f"samples: {out}")
os.unlink(cfg.name)
PY
