"""An aioquic HTTP/3 server and client over loopback, each writing its own
qlog, the client its TLS secrets (SSLKEYLOGFILE format): the peer of
crates/rttlens/tests/qlog.rs, which captures the connection and compares
the qlog rttlens writes from the capture with these two.

    python3 qlog_pair.py DIR PORT BODY_BYTES

Writes DIR/client.qlog, DIR/server.qlog (qlog 0.3, JSON) and DIR/keys.log;
one GET of / answered with BODY_BYTES bytes, then the client closes.
"""

import asyncio
import datetime
import json
import os
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from aioquic.asyncio import QuicConnectionProtocol, connect, serve
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ProtocolNegotiated
from aioquic.quic.logger import QuicLogger


def certificate(dir):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = os.path.join(dir, "cert.pem"), os.path.join(dir, "key.pem")
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return cert_path, key_path


class Server(QuicConnectionProtocol):
    body = b""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = None

    def quic_event_received(self, event):
        if isinstance(event, ProtocolNegotiated):
            self.h3 = H3Connection(self._quic)
        if self.h3 is None:
            return
        for e in self.h3.handle_event(event):
            if isinstance(e, HeadersReceived) and e.stream_ended:
                self.h3.send_headers(
                    e.stream_id,
                    [(b":status", b"200"), (b"content-length", str(len(self.body)).encode())],
                )
                self.h3.send_data(e.stream_id, self.body, end_stream=True)
                self.transmit()


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.done = asyncio.get_event_loop().create_future()
        self.received = 0

    def quic_event_received(self, event):
        for e in self.h3.handle_event(event):
            if isinstance(e, DataReceived):
                self.received += len(e.data)
                if e.stream_ended and not self.done.done():
                    self.done.set_result(self.received)

    async def get(self):
        sid = self._quic.get_next_available_stream_id()
        self.h3.send_headers(
            sid,
            [
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", b"localhost"),
                (b":path", b"/"),
            ],
            end_stream=True,
        )
        self.transmit()
        return await asyncio.wait_for(self.done, 20)


def dump(logger, path):
    with open(path, "w") as f:
        json.dump(logger.to_dict(), f)


async def main(dir, port, body):
    cert, key = certificate(dir)
    server_log, client_log = QuicLogger(), QuicLogger()
    sconf = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN, quic_logger=server_log)
    sconf.load_cert_chain(cert, key)
    Server.body = b"x" * body
    server = await serve("127.0.0.1", port, configuration=sconf, create_protocol=Server)
    with open(os.path.join(dir, "keys.log"), "w") as keys:
        cconf = QuicConfiguration(
            is_client=True,
            alpn_protocols=H3_ALPN,
            quic_logger=client_log,
            secrets_log_file=keys,
            server_name="localhost",
        )
        cconf.load_verify_locations(cert)
        async with connect("127.0.0.1", port, configuration=cconf, create_protocol=Client) as c:
            got = await c.get()
            assert got == body, (got, body)
            c.close()
            await c.wait_closed()
    # the server reads the close
    await asyncio.sleep(0.2)
    server.close()
    dump(client_log, os.path.join(dir, "client.qlog"))
    dump(server_log, os.path.join(dir, "server.qlog"))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
