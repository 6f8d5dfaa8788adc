#!/bin/bash
# Regenerate the TLS fixtures from real openssl handshakes on loopback (needs root for tcpdump,
# openssl 3, tshark). Usage: ./regen.sh (run from this directory). Writes *.txt here.
# Each family runs one s_server process so that session resumption works across its clients.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cd "$work"
port=44330
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout key.pem \
  -out cert.pem -days 3650 -subj /CN=localhost 2>/dev/null
head -c 15000 /dev/urandom | base64 -w 76 | head -c 20000 > big.html
head -c 1500 /dev/urandom | base64 -w 76 | head -c 2000 > small.html
big='printf "GET /big.html HTTP/1.0\r\nHost: localhost\r\n\r\n"'
small='printf "GET /small.html HTTP/1.0\r\nHost: localhost\r\n\r\n"'

# family NAME "server options" < lines "client options|stdin command"
family() {
  local name=$1 srv=$2 i=0
  tcpdump -i lo -s 0 -U -Z root -w "$name.pcap" "tcp port $port" 2>/dev/null &
  local tpid=$!
  sleep 1.5
  openssl s_server -accept $port -cert cert.pem -key key.pem $srv < "${SRVIN:-/dev/null}" \
    > "$name.srv.log" 2>&1 &
  local spid=$!
  sleep 0.7
  while IFS='|' read -r cli in; do
    eval "$in" | timeout 5 openssl s_client -connect 127.0.0.1:$port -servername localhost \
      $cli > "$name.cli$i.log" 2>&1 || true
    i=$((i + 1)); sleep 0.3
  done
  sleep 0.5; kill $spid 2>/dev/null || true; wait $spid 2>/dev/null || true
  sleep 0.5; kill $tpid; wait $tpid 2>/dev/null || true
}

family tls12 "-WWW -tls1_2" <<EOT
-tls1_2 -ign_eof -alpn http/1.1 -sess_out s12.pem|$big
-tls1_2 -ign_eof -alpn http/1.1 -sess_in s12.pem|$small
-tls1_2 -ign_eof -alpn http/1.1 -no_ticket -sess_out s12b.pem|$small
-tls1_2 -ign_eof -alpn http/1.1 -no_ticket -sess_in s12b.pem|$small
EOT
family tls13 "-WWW -tls1_3 -groups X25519 -num_tickets 2" <<EOT
-tls1_3 -ign_eof -alpn http/1.1 -sess_out s13.pem|$big
-tls1_3 -ign_eof -alpn http/1.1 -sess_in s13.pem|$small
-tls1_3 -ign_eof -alpn http/1.1 -ciphersuites TLS_AES_128_GCM_SHA256 -groups P-256:X25519|$small
EOT
mkfifo srvin; (sleep 30 > srvin &)
printf 'GET /small.html HTTP/1.0\r\nHost: localhost\r\n\r\n' > early.txt
SRVIN=srvin family tls13e "-tls1_3 -early_data -num_tickets 2" <<EOT
-tls1_3 -alpn http/1.1 -sess_out s13e.pem|sleep 1
-tls1_3 -alpn http/1.1 -sess_in s13e.pem -early_data early.txt|sleep 1
EOT
grep -hE "^(New|Reused)|Early data" ./*.cli*.log

fx() { "$here/pcap2fixture.py" "$1.pcap" "$2" $port "$3" > "$here/$4.txt"; }
fx tls12 0 "TLS 1.2 full handshake (ECDHE-ECDSA-AES256-GCM-SHA384) issuing a session ticket; openssl s_server -WWW -tls1_2 / s_client -tls1_2 -alpn http/1.1 -sess_out; GET of a 20000-byte file over HTTP/1.0" tls12_full
fx tls12 1 "TLS 1.2 abbreviated handshake resuming tls12_full's session ticket (s_client -sess_in)" tls12_resume_ticket
fx tls12 3 "TLS 1.2 abbreviated handshake by session-id echo (s_client -no_ticket -sess_in)" tls12_resume_session_id
fx tls13 0 "TLS 1.3 full handshake (TLS_AES_256_GCM_SHA384, X25519), 2 NewSessionTickets; s_server -WWW -tls1_3 -groups X25519 -num_tickets 2; GET of a 20000-byte file over HTTP/1.0" tls13_full
fx tls13 1 "TLS 1.3 PSK resumption (s_client -sess_in) of tls13_full's ticket" tls13_psk
fx tls13 2 "TLS 1.3 HelloRetryRequest: client key_share P-256 only, server accepts X25519 only; TLS_AES_128_GCM_SHA256" tls13_hrr
fx tls13e 1 "TLS 1.3 0-RTT accepted: s_server -tls1_3 -early_data (sends no response), s_client -sess_in -early_data with a GET as early data" tls13_0rtt
rm -rf "$work"
