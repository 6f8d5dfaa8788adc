// rttlens-go-tls-server: a small HTTPS server on Go's crypto/tls and
// net/http, the lab target of `rttlens bench --lab go` (the Go
// handshake-storm case). Standard library only: rttlens builds it with the
// machine's Go (`go build`), no module download; Go 1.19 (Debian 12's
// golang-go) or later.
//
// With -h2, HTTP/2 too (net/http's own, chosen by ALPN).
//
// Routes as the other lab servers: GET /size/N returns N bytes of 'x';
// anything else a small page. Prints "listening on ADDR" once bound and
// serves until SIGTERM or SIGINT.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const maxBody = 1 << 30

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	cert := flag.String("cert", "cert.pem", "certificate chain, PEM")
	key := flag.String("key", "key.pem", "private key, PEM")
	procs := flag.Int("procs", 0, "GOMAXPROCS (0: Go's default, one per core)")
	versions := flag.String("tls", "1.2,1.3", "TLS versions, comma-separated")
	tickets := flag.Bool("tickets", true, "session tickets (resumption)")
	h2 := flag.Bool("h2", false, "offer HTTP/2 first in ALPN (net/http serves it; Go picks the server's first protocol the client offers)")
	flag.Parse()
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	pair, err := tls.LoadX509KeyPair(*cert, *key)
	if err != nil {
		fail("loading the certificate: %v", err)
	}
	cfg := &tls.Config{
		Certificates:           []tls.Certificate{pair},
		SessionTicketsDisabled: !*tickets,
		NextProtos:             []string{"http/1.1"},
		MinVersion:             tls.VersionTLS13,
		MaxVersion:             tls.VersionTLS12,
	}
	if *h2 {
		cfg.NextProtos = []string{"h2", "http/1.1"}
	}
	for _, v := range strings.Split(*versions, ",") {
		var n uint16
		switch strings.TrimSpace(v) {
		case "1.2":
			n = tls.VersionTLS12
		case "1.3":
			n = tls.VersionTLS13
		default:
			fail("-tls %q: expected 1.2 and/or 1.3", v)
		}
		if n < cfg.MinVersion {
			cfg.MinVersion = n
		}
		if n > cfg.MaxVersion {
			cfg.MaxVersion = n
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/size/") {
			size, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/size/"))
			if err != nil || size < 0 || size > maxBody {
				http.Error(w, "size must be an integer up to 1 GiB", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Length", strconv.Itoa(size))
			chunk := []byte(strings.Repeat("x", 64*1024))
			for size > 0 {
				k := len(chunk)
				if size < k {
					k = size
				}
				if _, err := w.Write(chunk[:k]); err != nil {
					return
				}
				size -= k
			}
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><title>rttlens lab</title><p>rttlens lab Go server: GET /size/N for N bytes.\n")
	})
	srv := &http.Server{
		Handler:           mux,
		TLSConfig:         cfg,
		ReadHeaderTimeout: 10 * time.Second,
		// crypto/tls and net/http log handshake errors here; a load test
		// makes many, and they are the client's to count
		ErrorLog: nil,
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fail("listening on %s: %v", *listen, err)
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	os.Stdout.Sync()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		srv.Close()
	}()
	if err := srv.ServeTLS(ln, "", ""); err != nil && err != http.ErrServerClosed {
		fail("serving: %v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rttlens-go-tls-server: "+format+"\n", args...)
	os.Exit(1)
}
