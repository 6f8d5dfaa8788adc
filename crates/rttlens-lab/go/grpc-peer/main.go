// rttlens-grpc-peer: a gRPC server and client on grpc-go (the real stack
// of most gRPC services), for the lab's tests of HTTP/2 analysis inside
// TLS. The service is grpc-go's own health service; a server interceptor
// thinks for the milliseconds a call's `think-ms` metadata asks.
//
//	rttlens-grpc-peer -serve ADDR -cert cert.pem -key key.pem
//	rttlens-grpc-peer -call ADDR -keylog FILE -n N -slow-ms MS
//
// The client makes N health checks at once on one connection, one check
// of a service the server does not know (NOT_FOUND), then one check that
// the server holds -slow-ms; it writes its TLS secrets to -keylog (NSS key
// log format) and prints each call's status code.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func main() {
	serve := flag.String("serve", "", "serve on this address")
	call := flag.String("call", "", "call the server at this address")
	cert := flag.String("cert", "cert.pem", "certificate chain, PEM (server)")
	key := flag.String("key", "key.pem", "private key, PEM (server)")
	keylog := flag.String("keylog", "", "TLS key log file (client)")
	n := flag.Int("n", 4, "health checks at once (client)")
	slow := flag.Int("slow-ms", 200, "think time asked of the last call (client)")
	flag.Parse()
	switch {
	case *serve != "":
		runServer(*serve, *cert, *key)
	case *call != "":
		runClient(*call, *keylog, *n, *slow)
	default:
		fail("-serve or -call")
	}
}

func think(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get("think-ms"); len(v) > 0 {
			if ms, err := strconv.Atoi(v[0]); err == nil && ms > 0 && ms <= 10000 {
				time.Sleep(time.Duration(ms) * time.Millisecond)
			}
		}
	}
	return next(ctx, req)
}

func runServer(addr, cert, key string) {
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		fail("loading the certificate: %v", err)
	}
	creds := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair}})
	srv := grpc.NewServer(grpc.Creds(creds), grpc.UnaryInterceptor(think))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fail("listening on %s: %v", addr, err)
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	os.Stdout.Sync()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		srv.Stop()
	}()
	if err := srv.Serve(ln); err != nil {
		fail("serving: %v", err)
	}
}

func runClient(addr, keylog string, n, slow int) {
	cfg := &tls.Config{InsecureSkipVerify: true}
	if keylog != "" {
		f, err := os.OpenFile(keylog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			fail("opening %s: %v", keylog, err)
		}
		defer f.Close()
		cfg.KeyLogWriter = f
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		fail("dialing %s: %v", addr, err)
	}
	defer conn.Close()
	c := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	check := func(ctx context.Context, service string) codes.Code {
		_, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		return status.Code(err)
	}
	var wg sync.WaitGroup
	codesSeen := make([]codes.Code, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			codesSeen[i] = check(ctx, "")
		}(i)
	}
	wg.Wait()
	for _, code := range codesSeen {
		fmt.Println(code)
	}
	fmt.Println(check(ctx, "no.such.Service"))
	slowCtx := metadata.AppendToOutgoingContext(ctx, "think-ms", strconv.Itoa(slow))
	fmt.Println(check(slowCtx, ""))
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rttlens-grpc-peer: "+format+"\n", args...)
	os.Exit(1)
}
