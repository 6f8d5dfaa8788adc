#!/bin/bash
# Regenerate the HTTP fixtures: curl against http_server.py (Python's http.server) on loopback
# (needs root for tcpdump, python3, curl, tshark). Usage: ./regen_http.sh from this directory.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cd "$work"
port=48080
u=http://127.0.0.1:$port
tcpdump -i lo -s 0 -U -n -w http.pcap "tcp port $port" 2>/dev/null &
tpid=$!
python3 "$here/http_server.py" 2 &
spid=$!
trap 'kill -INT $tpid $spid 2>/dev/null || true' EXIT
sleep 2
for _ in $(seq 50); do ss -ltn | grep -q ":$port " && break; sleep 0.2; done
# One keep-alive connection: Content-Length, chunked with trailers, HEAD, 304,
# POST with Expect: 100-continue.
curl -s -o /dev/null $u/file --next -s -o /dev/null $u/chunked --next -s -I -o /dev/null $u/file \
  --next -s -o /dev/null $u/notmod \
  --next -s -o /dev/null -d 'a=1&b=2' -H 'Expect: 100-continue' $u/post
sleep 0.3
# HTTP/1.0 request, response without length: body until the server closes.
curl -s --http1.0 -o /dev/null $u/close
wait $spid
sleep 1
kill -INT $tpid
wait $tpid || true
"$here/pcap2fixture.py" http.pcap 0 $port "HTTP/1.1 keep-alive (curl 7.88 -> Python http.server): GET Content-Length, GET chunked with extensions and trailer, HEAD, 304, POST with Expect: 100-continue" > "$here/http11_keepalive.txt"
"$here/pcap2fixture.py" http.pcap 1 $port "HTTP/1.0 GET answered without Content-Length: body until the server closes" > "$here/http10_close.txt"
rm -rf "$work"
