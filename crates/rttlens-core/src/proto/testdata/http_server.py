import http.server, socketserver, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_HEAD(self): self.do_GET(body=False)
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0")); self.rfile.read(n)
        self.send_response(201); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"ok")
    def do_GET(self, body=True):
        if self.path == "/chunked":
            self.send_response(200); self.send_header("Transfer-Encoding", "chunked"); self.send_header("Trailer", "X-Checksum"); self.end_headers()
            if body:
                for part in [b"hello ", b"chunked ", b"world" * 300]:
                    self.wfile.write(b"%x;ext=1\r\n" % len(part) + part + b"\r\n")
                self.wfile.write(b"0\r\nX-Checksum: abc\r\n\r\n")
        elif self.path == "/close":
            self.send_response(200); self.send_header("Content-Type", "text/plain"); self.end_headers()
            self.close_connection = True
            if body:
                for i in range(3): self.wfile.write(b"line %d\n" % i * 100)
        elif self.path == "/notmod":
            self.send_response(304); self.send_header("ETag", '"x"'); self.end_headers()
        else:
            data = b"x" * 3000
            self.send_response(200); self.send_header("Content-Length", str(len(data))); self.end_headers()
            if body: self.wfile.write(data)
socketserver.TCPServer.allow_reuse_address = True
with socketserver.TCPServer(("127.0.0.1", 48080), H) as s:
    s.timeout = 5
    for _ in range(int(sys.argv[1])): s.handle_request()
