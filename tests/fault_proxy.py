"""A loopback HTTP/1.1 proxy that breaks responses mid-body: the faults a real network has and a store's
emulator (moto, a GCS emulator, a plain HTTP server) never shows.

    with FaultProxy("http://127.0.0.1:PORT") as proxy:     # in front of any plain-HTTP server on loopback
        proxy.inject("reset", after=4096)                  # the next GET whose body is longer than 4096 bytes
        ... point the client at proxy.url ...
        proxy.exchanges                                    # what went through, and which fault hit which

It listens on 127.0.0.1 (a free port) and forwards each client connection to the upstream over a
connection of its own, one request and its response at a time (keep-alive kept, no pipelining: what
botocore, urllib3 and requests do; a request's ``Expect: 100-continue`` is answered by the proxy itself).
An injected fault waits for the next response to a request of its method (``GET`` by default) whose body
is longer than ``after`` bytes (and whose target holds ``target``, where given), lets the status line,
headers and ``after`` bytes of the body through, then:

* ``reset``: closes the client's connection with an RST (SO_LINGER 0): "connection reset by peer";
* ``truncate``: closes it cleanly (FIN): the body ends short of its Content-Length;
* ``stall``: sends nothing more and holds the connection open until the client gives up (closes it) or
  ``stall_seconds`` pass, whichever is first; then closes it;
* ``drip`` (not one of :data:`FAULTS`: nothing breaks, the body is whole but slow): sends the rest of the
  body ``drip_bytes`` at a time, one every ``drip_seconds`` (64 bytes every 0.5 s by default), until it is
  all sent, the client closes, or the proxy stops.

``times`` responses in a row get the fault (a fault that outlasts a client's retries makes it fail).
Everything is bounded: each socket read waits at most ``idle_seconds``, a stall at most ``stall_seconds``,
and ``close()`` (or leaving the ``with``) stops the listener and shuts every connection down at once.
"""

from __future__ import annotations

import itertools
import socket
import struct
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

FAULTS = ("reset", "stall", "truncate")  # the faults that break a response
KINDS = (*FAULTS, "drip")
_HEAD_LIMIT = 1 << 20  # a request's or response's head longer than this is not HTTP: the connection is dropped


@dataclass
class Exchange:
    """One request and its response as they went through: the fault, if one hit it, and where."""

    method: str
    target: str
    headers: dict[str, str]  # the request's, names lower-cased
    status: int | None = None
    body_bytes: int | None = None  # the response body's length (Content-Length), None where not given
    fault: str | None = None
    fault_at: int | None = None  # bytes of the body sent before the fault


@dataclass
class _Fault:
    kind: str
    after: int
    times: int
    method: str
    stall_seconds: float
    target: str
    drip_bytes: int = 64
    drip_seconds: float = 0.5


class _Connection:
    """A socket read by the head (up to the blank line) or by a count of bytes, through one buffer."""

    def __init__(self, sock: socket.socket):
        self.sock, self.buffer = sock, b""

    def head(self) -> bytes | None:
        """The next head, through its blank line; None where the peer closed before sending one."""
        while b"\r\n\r\n" not in self.buffer:
            if len(self.buffer) > _HEAD_LIMIT:
                raise ConnectionError("no end of head")
            chunk = self.sock.recv(65536)
            if not chunk:
                if self.buffer:
                    raise ConnectionError("closed mid-head")
                return None
            self.buffer += chunk
        end = self.buffer.index(b"\r\n\r\n") + 4
        head, self.buffer = self.buffer[:end], self.buffer[end:]
        return head

    def pieces(self, count: int | None):
        """``count`` bytes (None: until the peer closes), as they arrive."""
        while count is None or count > 0:
            if not self.buffer:
                self.buffer = self.sock.recv(65536)
                if not self.buffer:
                    if count is None:
                        return
                    raise ConnectionError("closed mid-body")
            piece = self.buffer if count is None else self.buffer[:count]
            self.buffer = self.buffer[len(piece):]
            if count is not None:
                count -= len(piece)
            yield piece

    def chunked(self):
        """A chunked body, raw (sizes, data, the last chunk and trailers), piece by piece."""
        while True:
            while b"\r\n" not in self.buffer:
                more = self.sock.recv(65536)
                if not more or len(self.buffer) > _HEAD_LIMIT:
                    raise ConnectionError("closed mid-chunk")
                self.buffer += more
            line_end = self.buffer.index(b"\r\n") + 2
            size = int(self.buffer[:line_end].split(b";")[0], 16)
            yield self.buffer[:line_end]
            self.buffer = self.buffer[line_end:]
            if size == 0:  # trailers, up to a blank line
                yield from self._trailers()
                return
            yield from self.pieces(size + 2)

    def _trailers(self):
        while True:
            while b"\r\n" not in self.buffer:
                more = self.sock.recv(65536)
                if not more:
                    raise ConnectionError("closed mid-trailer")
                self.buffer += more
            line_end = self.buffer.index(b"\r\n") + 2
            line, self.buffer = self.buffer[:line_end], self.buffer[line_end:]
            yield line
            if line == b"\r\n":
                return


def _parse(head: bytes) -> tuple[list[str], dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    return lines[0].split(" ", 2), headers


class FaultProxy:
    """See the module's docstring."""

    def __init__(self, upstream: str, *, idle_seconds: float = 30.0):
        parts = urlsplit(upstream)
        if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"{upstream}: the proxy forwards plain HTTP to a loopback server only")
        self._upstream = (parts.hostname, parts.port or 80)
        self.idle_seconds = idle_seconds
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self.exchanges: list[Exchange] = []
        self._faults: list[_Fault] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._sockets: set[socket.socket] = set()
        self._threads = [threading.Thread(target=self._accept, name="fault-proxy", daemon=True)]
        self._threads[0].start()

    def inject(self, kind: str, *, after: int = 1024, times: int = 1, method: str = "GET",
               stall_seconds: float = 10.0, target: str = "", drip_bytes: int = 64, drip_seconds: float = 0.5) -> None:
        """Break (or slow down: ``drip``) the next ``times`` responses to ``method`` requests whose body is longer
        than ``after`` bytes (and whose target holds ``target``: a GCS media download's ``alt=media``, say, and
        not its metadata)."""
        if kind not in KINDS:
            raise ValueError(f"{kind}: not one of {', '.join(KINDS)}")
        with self._lock:
            self._faults.append(_Fault(kind, after, times, method.upper(), stall_seconds, target, drip_bytes,
                                       drip_seconds))

    def clear(self) -> None:
        """Drop the faults not yet used up."""
        with self._lock:
            self._faults.clear()

    def faults_hit(self) -> list[Exchange]:
        """The exchanges a fault broke, in order."""
        with self._lock:
            return [exchange for exchange in self.exchanges if exchange.fault]

    def close(self) -> None:
        self._stopping.set()
        with self._lock:
            for sock in list(self._sockets):
                try:
                    sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked reading it
                except OSError:
                    pass
        for thread in list(self._threads):
            thread.join(timeout=2)
        self._listener.close()

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(client,), name="fault-proxy-connection", daemon=True)
            with self._lock:
                self._threads = [known for known in self._threads if known.is_alive()] + [thread]
            thread.start()

    def _take(self, exchange: Exchange) -> _Fault | None:
        """The fault that hits this response, if any (its count taken down by one)."""
        with self._lock:
            for fault in self._faults:
                if (fault.method == exchange.method and fault.target in exchange.target
                        and (exchange.body_bytes is None or exchange.body_bytes > fault.after)):
                    fault.times -= 1
                    if fault.times <= 0:
                        self._faults.remove(fault)
                    return fault
        return None

    def _serve(self, client_socket: socket.socket) -> None:
        upstream_socket = None
        try:
            upstream_socket = socket.create_connection(self._upstream, timeout=self.idle_seconds)
            client_socket.settimeout(self.idle_seconds)
            with self._lock:
                self._sockets |= {client_socket, upstream_socket}
            client, upstream = _Connection(client_socket), _Connection(upstream_socket)
            while not self._stopping.is_set():
                if not self._exchange(client, upstream):
                    return
        except (OSError, ConnectionError, ValueError):
            return  # a peer went away, timed out, or spoke something else: drop the connection
        finally:
            with self._lock:
                self._sockets -= {client_socket, upstream_socket}
            _close(client_socket)
            if upstream_socket is not None:
                _close(upstream_socket)

    def _exchange(self, client: _Connection, upstream: _Connection) -> bool:
        """Relay one request and its response; False where the connection is to end."""
        head = client.head()
        if head is None:
            return False
        (method, target, *_), headers = _parse(head)
        exchange = Exchange(method.upper(), target, headers)
        with self._lock:
            self.exchanges.append(exchange)
        if headers.get("expect", "").lower() == "100-continue":  # answered here: the upstream sees a plain request
            client.sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            head = b"".join(line for line in head.splitlines(keepends=True)
                            if not line.lower().startswith(b"expect:"))
        upstream.sock.sendall(head)
        if "chunked" in headers.get("transfer-encoding", "").lower():
            request_body = client.chunked()
        else:
            request_body = client.pieces(int(headers.get("content-length", 0)))
        for piece in request_body:
            upstream.sock.sendall(piece)

        response_head = upstream.head()
        if response_head is None:
            return False
        (_, status, *_), response_headers = _parse(response_head)
        exchange.status = int(status)
        bodiless = exchange.method == "HEAD" or exchange.status in (204, 304) or exchange.status < 200
        length = response_headers.get("content-length")
        exchange.body_bytes = 0 if bodiless else int(length) if length is not None else None
        fault = None if bodiless else self._take(exchange)
        client.sock.sendall(response_head)
        if bodiless:
            return True
        if "chunked" in response_headers.get("transfer-encoding", "").lower():
            body = upstream.chunked()
        else:
            body = upstream.pieces(exchange.body_bytes)  # None: until the upstream closes
        sent = 0
        for piece in body:
            if fault is not None and sent + len(piece) >= fault.after:
                client.sock.sendall(piece[:fault.after - sent])
                with self._lock:
                    exchange.fault, exchange.fault_at = fault.kind, fault.after
                if fault.kind == "drip":
                    self._drip(client.sock, itertools.chain([piece[fault.after - sent:]], body), fault)
                    break
                self._break(client.sock, fault)
                return False
            client.sock.sendall(piece)
            sent += len(piece)
        return exchange.body_bytes is not None or "chunked" in response_headers.get("transfer-encoding", "").lower()

    def _drip(self, client: socket.socket, pieces, fault: _Fault) -> None:
        """The rest of a body, ``fault.drip_bytes`` every ``fault.drip_seconds``."""
        for piece in pieces:
            for offset in range(0, len(piece), fault.drip_bytes):
                if self._stopping.wait(fault.drip_seconds):
                    raise ConnectionError("the proxy stops")
                client.sendall(piece[offset:offset + fault.drip_bytes])

    def _break(self, client: socket.socket, fault: _Fault) -> None:
        if fault.kind == "reset":
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif fault.kind == "truncate":
            client.shutdown(socket.SHUT_WR)
        else:  # stall: until the client closes its end, the time is up, or the proxy stops
            client.settimeout(0.2)
            deadline = time.monotonic() + fault.stall_seconds
            while time.monotonic() < deadline and not self._stopping.is_set():
                try:
                    if not client.recv(65536):
                        break
                except TimeoutError:
                    continue
        # the caller's finally closes the socket: with SO_LINGER 0, as an RST


def _close(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass
