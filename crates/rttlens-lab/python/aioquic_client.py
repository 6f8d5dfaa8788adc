"""aioquic (PyPI) as an HTTP/3 client of the lab, for what the project's
probe (quinn) does not do:

- upload without saying it is blocked: aioquic honours its peer's
  flow-control limits (RFC 9000 section 4.1) but sends neither DATA_BLOCKED
  nor STREAM_DATA_BLOCKED, which the RFC only recommends, so the engine
  must infer the stall from the limits and the bytes sent (scenario
  quic-flow-control-inferred);
- open many connections at once, as a reconnect burst does (scenario
  quic-handshake-burst).

    python3 aioquic_client.py URL KEYLOG [--post BYTES] [--connections N]

Each of N connections (default 1, all started at once) sends one request
to URL (https://HOST:PORT/PATH, any certificate accepted): a GET, or with
--post a POST of BYTES bytes of 'u'. The TLS secrets are appended to
KEYLOG (SSLKEYLOGFILE format). Prints one line per connection (its status
and the bytes sent) and exits 0 when every request got a 200; 1 on any
failure or when 20 s pass without every answer.
"""

import argparse
import asyncio
import ssl
import sys
from urllib.parse import urlparse

from aioquic.asyncio import QuicConnectionProtocol, connect
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ProtocolNegotiated


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = None
        self.status = None
        self.done = asyncio.get_event_loop().create_future()

    def quic_event_received(self, event):
        if isinstance(event, ProtocolNegotiated):
            self.h3 = H3Connection(self._quic)
        if self.h3 is None:
            return
        for e in self.h3.handle_event(event):
            if isinstance(e, HeadersReceived):
                for k, v in e.headers:
                    if k == b":status":
                        self.status = int(v)
            if isinstance(e, (HeadersReceived, DataReceived)) and e.stream_ended:
                if not self.done.done():
                    self.done.set_result(self.status)

    def request(self, authority, path, body):
        stream = self._quic.get_next_available_stream_id()
        headers = [
            (b":method", b"GET" if body is None else b"POST"),
            (b":scheme", b"https"),
            (b":authority", authority.encode()),
            (b":path", path.encode()),
        ]
        if body is not None:
            headers.append((b"content-length", str(len(body)).encode()))
        self.h3.send_headers(stream, headers, end_stream=body is None)
        if body is not None:
            self.h3.send_data(stream, body, end_stream=True)
        self.transmit()


async def one(i, u, keylog, body):
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=ssl.CERT_NONE)
    config.secrets_log_file = keylog
    async with connect(u.hostname, u.port or 443, configuration=config, create_protocol=Client) as c:
        await c.wait_connected()
        # the ProtocolNegotiated event has made the H3 connection by now
        c.request(u.netloc, u.path or "/", body)
        status = await c.done
    sent = 0 if body is None else len(body)
    print(f"conn {i}: status {status}, sent {sent} bytes", flush=True)
    return status


async def main(a):
    u = urlparse(a.url)
    body = None if a.post is None else b"u" * a.post
    with open(a.keylog, "a") as keylog:
        statuses = await asyncio.wait_for(
            asyncio.gather(*(one(i, u, keylog, body) for i in range(a.connections))), 20
        )
    return 0 if all(s == 200 for s in statuses) else 1


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("url")
    p.add_argument("keylog")
    p.add_argument("--post", type=int, default=None, metavar="BYTES")
    p.add_argument("--connections", type=int, default=1, metavar="N")
    a = p.parse_args()
    if not 1 <= a.connections <= 64:
        p.error("--connections: 1 to 64")
    sys.exit(asyncio.run(main(a)))
