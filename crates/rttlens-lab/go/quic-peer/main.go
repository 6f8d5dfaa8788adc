// rttlens-quic-peer: an HTTP/3 server and client on quic-go, the lab's
// second QUIC stack beside the built-in quinn server (issue 25), so the
// engine's findings are shown on a stack it was not written against.
//
//	rttlens-quic-peer -serve ADDR [-intermediates N] [-cert-padding B]
//	    [-retry] [-stream-window B] [-max-stream-window B] [-conn-window B]
//	    [-0rtt] [-ticket-key HEX] [-versions v1,v2] [-curves p256]
//	    [-keylog FILE] [-qlog DIR]
//	rttlens-quic-peer -get URL [-n N] [-0rtt] [-pause] [-versions v2,v1]
//	    [-put N] [-keylog FILE] [-qlog DIR]
//
// -qlog DIR makes quic-go write each connection's qlog into DIR, as
// ODCID_server.sqlog or ODCID_client.sqlog (ODCID: the client's first
// Destination Connection ID in hex; quic-go's qlog package as its
// DefaultConnectionTracer names them under QLOGDIR, JSON-SEQ). The files
// are complete when the program exits: the client waits for them after
// its last connection (at most 2 s), the server on SIGTERM after closing
// its connections (at most 1 s).
//
// The server answers GET /size/N with N bytes of 'x', a POST (to any
// path) by reading its whole body and saying how many bytes it read
// ("read N bytes"), and anything else with a short page. -curves is the
// list of key-exchange groups it accepts (crypto/tls CurvePreferences:
// p256, p384, p521, x25519, x25519mlkem768; empty: Go's default): with
// p256 alone, a client whose ClientHello carries only X25519 (and
// X25519MLKEM768) key shares gets a HelloRetryRequest for secp256r1.
// -stream-window is the window a stream starts with; quic-go widens it
// as the application reads (auto-tuning) up to -max-stream-window (0: 6
// MB): a -max-stream-window equal to -stream-window keeps it fixed. Its certificate chain is generated at start (ECDSA
// P-256: a root, -intermediates CAs and a leaf carrying -cert-padding
// bytes of padding), as the quinn server's is. -ticket-key (64 hex
// digits) fixes the session ticket key, so that a restarted server
// decrypts the tickets of the one before it: with smaller windows than
// the ticket remembers it then rejects 0-RTT (quic-go compares the
// transport parameters the ticket carries, RFC 9000 §7.4.1). It prints
// "listening on ADDR" on stdout once the socket is bound.
//
// The client makes -n connections one after the other, sharing one TLS
// session cache; with -0rtt every connection after the first sends its
// request as 0-RTT (http3.MethodGet0RTT) when it holds a ticket that
// allows it, and sends it again over 1-RTT when the server rejects it.
// With -pause it prints "paused" after the first connection and waits for
// a line on stdin (the lab restarts the server meanwhile). -versions is
// the list of QUIC versions offered, the first one in the first Initial.
// With -put N each connection POSTs N bytes of 'x' instead of its GET
// (never as 0-RTT) and its line adds the server's answer. It prints one
// line per connection: its outcome, the version spoken, whether it
// resumed and whether 0-RTT was used.
package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/qlogwriter"
)

func main() {
	serve := flag.String("serve", "", "serve HTTP/3 on this UDP address (server)")
	get := flag.String("get", "", "fetch this https:// URL over HTTP/3 (client)")
	intermediates := flag.Int("intermediates", 0, "intermediate CAs in the chain (server)")
	padding := flag.Int("cert-padding", 0, "bytes of padding in the leaf certificate (server)")
	retry := flag.Bool("retry", false, "a Retry to every address not yet validated (server)")
	streamWindow := flag.Uint64("stream-window", 0, "initial_max_stream_data_*, bytes; 0: quic-go's (server)")
	maxStreamWindow := flag.Uint64("max-stream-window", 0, "the most auto-tuning widens a stream's window to, bytes; 0: 6 MB (server)")
	connWindow := flag.Uint64("conn-window", 0, "initial_max_data, bytes; 0: quic-go's (server)")
	zeroRTT := flag.Bool("0rtt", false, "server: accept 0-RTT; client: send 0-RTT with a ticket that allows it")
	ticketKey := flag.String("ticket-key", "", "session ticket key, 64 hex digits; empty: a random one (server)")
	versions := flag.String("versions", "v1", "QUIC versions, in order of preference: v1, v2")
	curves := flag.String("curves", "", "key-exchange groups accepted, e.g. p256; empty: Go's default (server)")
	put := flag.Int("put", 0, "POST this many bytes of 'x' instead of a GET; 0: GET (client)")
	keylog := flag.String("keylog", "", "append TLS secrets here (NSS key log format)")
	qlogDir := flag.String("qlog", "", "write each connection's qlog into this directory (quic-go's qlog)")
	n := flag.Int("n", 1, "connections, one after the other, sharing a session cache (client)")
	pause := flag.Bool("pause", false, "after the first connection print \"paused\" and wait for a line on stdin (client)")
	flag.Parse()
	vs, err := parseVersions(*versions)
	if err != nil {
		fail(err)
	}
	var kl io.Writer
	if *keylog != "" {
		f, err := os.OpenFile(*keylog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			fail(err)
		}
		defer f.Close()
		kl = f
	}
	switch {
	case *serve != "":
		tlsConf, err := serverTLS(*intermediates, *padding, *ticketKey)
		if err != nil {
			fail(err)
		}
		if tlsConf.CurvePreferences, err = parseCurves(*curves); err != nil {
			fail(err)
		}
		tlsConf.KeyLogWriter = kl
		qc := &quic.Config{
			Versions:                       vs,
			Allow0RTT:                      *zeroRTT,
			InitialStreamReceiveWindow:     *streamWindow,
			MaxStreamReceiveWindow:         maxWindow(*streamWindow, *maxStreamWindow),
			InitialConnectionReceiveWindow: *connWindow,
			MaxConnectionReceiveWindow:     max(*connWindow, 15<<20),
			Tracer:                         qlogTracer(*qlogDir),
		}
		if err := runServer(*serve, tlsConf, qc, *retry); err != nil {
			fail(err)
		}
	case *get != "":
		if *put < 0 || *put > 64<<20 {
			fail(fmt.Errorf("-put: %d is not within 0..%d", *put, 64<<20))
		}
		err := runClient(*get, vs, kl, *n, *zeroRTT, *pause, *put, qlogTracer(*qlogDir))
		waitQlogs(2 * time.Second)
		if err != nil {
			fail(err)
		}
	default:
		fail(errors.New("give -serve ADDR or -get URL"))
	}
}

// qlogs counts the qlog files open: each is closed (flushed) when quic-go
// closes its trace, after its connection's last event.
var qlogs sync.WaitGroup

// qlogTracer: a quic.Config.Tracer writing each connection's qlog into
// dir as quic-go's qlog.DefaultConnectionTracer does into $QLOGDIR
// (qlogwriter.NewConnectionFileSeq, ODCID_PERSPECTIVE.sqlog), its files
// counted in qlogs; nil (no qlog) for "".
func qlogTracer(dir string) func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fail(fmt.Errorf("-qlog: %w", err))
	}
	return func(_ context.Context, isClient bool, odcid quic.ConnectionID) qlogwriter.Trace {
		who := "server"
		if isClient {
			who = "client"
		}
		path := filepath.Join(dir, fmt.Sprintf("%s_%s.sqlog", odcid, who))
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rttlens-quic-peer: qlog:", err)
			return nil
		}
		qlogs.Add(1)
		trace := qlogwriter.NewConnectionFileSeq(&qlogFile{w: bufio.NewWriter(f), f: f}, isClient, odcid)
		go trace.Run()
		return trace
	}
}

// qlogFile: a qlog file written through a buffer, flushed and counted
// out of qlogs on Close.
type qlogFile struct {
	w *bufio.Writer
	f *os.File
}

func (q *qlogFile) Write(b []byte) (int, error) { return q.w.Write(b) }

func (q *qlogFile) Close() error {
	defer qlogs.Done()
	err := q.w.Flush()
	if cerr := q.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// waitQlogs waits at most limit for the qlog files open to be closed.
func waitQlogs(limit time.Duration) {
	done := make(chan struct{})
	go func() {
		qlogs.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
		fmt.Fprintln(os.Stderr, "rttlens-quic-peer: qlog: files still open after", limit)
	}
}

// maxWindow: the stream window's ceiling, at least the window it starts
// with; 0: 6 MB (quic-go's default).
func maxWindow(start, most uint64) uint64 {
	if most == 0 {
		most = 6 << 20
	}
	return max(start, most)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "rttlens-quic-peer:", err)
	os.Exit(1)
}

func parseVersions(s string) ([]quic.Version, error) {
	var vs []quic.Version
	for _, v := range strings.Split(s, ",") {
		switch strings.TrimSpace(strings.ToLower(v)) {
		case "v1", "1":
			vs = append(vs, quic.Version1)
		case "v2", "2":
			vs = append(vs, quic.Version2)
		default:
			return nil, fmt.Errorf("-versions: %q is not v1 or v2", v)
		}
	}
	return vs, nil
}

// parseCurves: the key-exchange groups of -curves, in order; none for "".
func parseCurves(s string) ([]tls.CurveID, error) {
	var cs []tls.CurveID
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, c := range strings.Split(s, ",") {
		switch strings.TrimSpace(strings.ToLower(c)) {
		case "p256", "secp256r1":
			cs = append(cs, tls.CurveP256)
		case "p384", "secp384r1":
			cs = append(cs, tls.CurveP384)
		case "p521", "secp521r1":
			cs = append(cs, tls.CurveP521)
		case "x25519":
			cs = append(cs, tls.X25519)
		case "x25519mlkem768":
			cs = append(cs, tls.X25519MLKEM768)
		default:
			return nil, fmt.Errorf("-curves: %q is not p256, p384, p521, x25519 or x25519mlkem768", c)
		}
	}
	return cs, nil
}

// serverTLS: a fresh chain and, with key, a fixed session ticket key.
func serverTLS(intermediates, padding int, key string) (*tls.Config, error) {
	cert, err := chain(intermediates, padding)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
	if key != "" {
		b, err := hex.DecodeString(key)
		if err != nil || len(b) != 32 {
			return nil, fmt.Errorf("-ticket-key: 64 hex digits, not %q", key)
		}
		var k [32]byte
		copy(k[:], b)
		c.SetSessionTicketKeys([][32]byte{k})
	}
	return c, nil
}

// The documentation OID (RFC 5612) of the quinn server's padding extension.
var paddingOID = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 32473, 1}

// chain: a root, n intermediates each signed by the one before, and a leaf
// for the lab's addresses; the leaf first and the root left out, as sent.
func chain(n, padding int) (tls.Certificate, error) {
	var out tls.Certificate
	now := time.Now()
	serial := int64(1)
	template := func(cn string, ca bool) *x509.Certificate {
		serial++
		t := &x509.Certificate{
			SerialNumber:          big.NewInt(serial),
			Subject:               pkix.Name{CommonName: cn},
			NotBefore:             now.Add(-time.Hour),
			NotAfter:              now.Add(24 * time.Hour),
			BasicConstraintsValid: true,
			IsCA:                  ca,
		}
		if ca {
			t.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
		} else {
			t.KeyUsage = x509.KeyUsageDigitalSignature
			t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		}
		return t
	}
	issuerKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return out, err
	}
	issuer := template("rttlens lab root CA", true)
	var sent [][]byte
	for i := 0; i < n; i++ {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return out, err
		}
		t := template(fmt.Sprintf("rttlens lab intermediate CA %d", i+1), true)
		der, err := x509.CreateCertificate(rand.Reader, t, issuer, &key.PublicKey, issuerKey)
		if err != nil {
			return out, err
		}
		sent = append([][]byte{der}, sent...)
		issuer, issuerKey = t, key
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return out, err
	}
	leaf := template("rttlens lab server", false)
	leaf.DNSNames = []string{"localhost"}
	for _, a := range []string{"127.0.0.1", "::1", "10.77.0.2", "fd77::2"} {
		leaf.IPAddresses = append(leaf.IPAddresses, net.ParseIP(a))
	}
	if padding > 0 {
		pad, err := asn1.Marshal(make([]byte, padding))
		if err != nil {
			return out, err
		}
		leaf.ExtraExtensions = []pkix.Extension{{Id: paddingOID, Value: pad}}
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, issuer, &leafKey.PublicKey, issuerKey)
	if err != nil {
		return out, err
	}
	out.Certificate = append([][]byte{der}, sent...)
	out.PrivateKey = leafKey
	return out, nil
}

func runServer(addr string, tlsConf *tls.Config, qc *quic.Config, retry bool) error {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return err
	}
	udp, err := net.ListenUDP("udp", ua)
	if err != nil {
		return err
	}
	tr := &quic.Transport{Conn: udp}
	if retry {
		tr.VerifySourceAddress = func(net.Addr) bool { return true }
	}
	ln, err := tr.ListenEarly(http3.ConfigureTLSConfig(tlsConf), qc)
	if err != nil {
		return err
	}
	srv := &http3.Server{Handler: http.HandlerFunc(handle), QUICConfig: qc}
	fmt.Printf("listening on %s\n", udp.LocalAddr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	stopping := make(chan struct{})
	go func() {
		<-sig
		close(stopping)
		srv.Close()
		ln.Close()
		tr.Close()
		waitQlogs(time.Second)
		os.Exit(0)
	}()
	err = srv.ServeListener(ln)
	select {
	case <-stopping:
		// closed by the signal: its goroutine exits once the qlog files
		// are written
		select {}
	default:
		return err
	}
}

func handle(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		// the whole body, read as it comes: the stream's window is
		// raised as the server reads
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = fmt.Fprintf(w, "read %d bytes\n", n)
		return
	}
	if n, ok := strings.CutPrefix(r.URL.Path, "/size/"); ok {
		size, err := strconv.Atoi(n)
		if err != nil || size < 0 || size > 64<<20 {
			http.Error(w, "bad size", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(size))
		buf := []byte(strings.Repeat("x", 16384))
		for size > 0 {
			k := min(size, len(buf))
			if _, err := w.Write(buf[:k]); err != nil {
				return
			}
			size -= k
		}
		return
	}
	_, _ = io.WriteString(w, "rttlens quic-go peer\n")
}

func runClient(raw string, vs []quic.Version, kl io.Writer, n int, zeroRTT, pause bool, put int,
	tracer func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "443")
	}
	tlsConf := &tls.Config{
		InsecureSkipVerify: true,
		ServerName:         u.Hostname(),
		NextProtos:         []string{http3.NextProtoH3},
		ClientSessionCache: tls.NewLRUClientSessionCache(8),
		KeyLogWriter:       kl,
	}
	qc := &quic.Config{Versions: vs, HandshakeIdleTimeout: 10 * time.Second, Tracer: tracer}
	stdin := bufio.NewReader(os.Stdin)
	for i := 0; i < n; i++ {
		if i == 1 && pause {
			fmt.Println("paused")
			if _, err := stdin.ReadString('\n'); err != nil {
				return fmt.Errorf("waiting on stdin: %w", err)
			}
		}
		line, err := fetch(u, host, tlsConf, qc, zeroRTT && i > 0, put)
		if err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		fmt.Printf("conn %d: %s\n", i, line)
	}
	return nil
}

// fetch: one connection, one request (as 0-RTT when early and the ticket
// allows it; again over 1-RTT when the server rejects it).
// With put > 0 the request is a POST of put bytes of 'x' (never early).
func fetch(u *url.URL, host string, tlsConf *tls.Config, qc *quic.Config, early bool, put int) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn, err := quic.DialAddrEarly(ctx, host, tlsConf, qc)
	if err != nil {
		return "", err
	}
	defer conn.CloseWithError(0, "")
	tr := &http3.Transport{}
	method := http.MethodGet
	if put > 0 {
		method = http.MethodPost
		early = false
	} else if early {
		method = http3.MethodGet0RTT
	}
	rsp, body, err := request(ctx, tr.NewClientConn(conn), u, method, put)
	rejected := false
	if err != nil && early {
		fmt.Fprintf(os.Stderr, "early request: %v\n", err)
		// 0-RTT rejected: the streams opened in 0-RTT are gone; the
		// request goes again on the connection after the handshake
		next, nerr := conn.NextConnection(ctx)
		if nerr != nil {
			return "", fmt.Errorf("%w (then %v)", err, nerr)
		}
		rejected = true
		conn = next
		// the early request's stream ID (0) is free again after the reset,
		// but the request that failed still resets it (RESET_STREAM with
		// its final size, sent in 1-RTT): hold that ID, silent, so the
		// request goes again on the next one
		if _, serr := conn.OpenStream(); serr != nil {
			return "", serr
		}
		rsp, body, err = request(ctx, tr.NewClientConn(conn), u, http.MethodGet, 0)
	}
	if err != nil {
		return "", err
	}
	select {
	case <-conn.HandshakeComplete():
	case <-ctx.Done():
		return "", ctx.Err()
	}
	st := conn.ConnectionState()
	line := fmt.Sprintf("status %d, %d bytes, version %s, resumed %t, 0-RTT used %t, 0-RTT rejected %t",
		rsp.StatusCode, body.n, st.Version, st.TLS.DidResume, st.Used0RTT, rejected)
	if put > 0 {
		line += fmt.Sprintf(", put %d bytes, answer %q", put, strings.TrimSpace(body.head))
	}
	return line, nil
}

// received: a response body's length and its first bytes (at most 256).
type received struct {
	n    int64
	head string
}

// request: one request (a POST of put bytes of 'x' when put > 0), its
// response and what of its body came.
func request(ctx context.Context, cc *http3.ClientConn, u *url.URL, method string, put int) (*http.Response, received, error) {
	var got received
	var body io.Reader
	if put > 0 {
		body = strings.NewReader(strings.Repeat("x", put))
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, got, err
	}
	rsp, err := cc.RoundTrip(req)
	if err != nil {
		return nil, got, err
	}
	defer rsp.Body.Close()
	head := make([]byte, 256)
	k, err := io.ReadFull(rsp.Body, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return rsp, got, err
	}
	got.head = string(head[:k])
	rest, err := io.Copy(io.Discard, rsp.Body)
	got.n = int64(k) + rest
	return rsp, got, err
}
