"""tests/fault_proxy.py on its own, in front of a plain HTTP/1.1 server on 127.0.0.1: what goes through is
unchanged (fixed-length and chunked bodies, HEAD, an upload that expects a 100 Continue, keep-alive), and
each fault breaks a body where it is told."""

from __future__ import annotations

import http.client
import http.server
import threading

import pytest

from fault_proxy import FAULTS, FaultProxy

BODY = bytes(range(256)) * 40  # 10,240 bytes


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and chunked bodies

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()

    def do_GET(self):
        self.send_response(200)
        if self.path == "/chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for start in range(0, len(BODY), 3000):
                piece = BODY[start:start + 3000]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)

    def do_PUT(self):  # echoes the body
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


def _connect(proxy: FaultProxy, timeout: float = 5) -> http.client.HTTPConnection:
    return http.client.HTTPConnection(proxy.url.removeprefix("http://"), timeout=timeout)


def test_bodies_heads_and_keep_alive_go_through_unchanged(server):
    with FaultProxy(server) as proxy:
        connection = _connect(proxy)
        for method, path in (("HEAD", "/"), ("GET", "/fixed"), ("GET", "/chunked"), ("GET", "/fixed")):
            connection.request(method, path, headers={"Range": "bytes=0-"})
            response = connection.getresponse()
            assert (response.status, response.read()) == (200, b"" if method == "HEAD" else BODY)
        connection.putrequest("PUT", "/upload")  # as botocore uploads: the body after a 100 Continue
        connection.putheader("Content-Length", str(len(BODY)))
        connection.putheader("Expect", "100-continue")
        connection.endheaders()
        assert connection.sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        connection.send(BODY)
        response = connection.getresponse()
        assert (response.status, response.read()) == (200, BODY)
        connection.close()
        assert [(exchange.method, exchange.target, exchange.headers.get("range"), exchange.body_bytes, exchange.fault)
                for exchange in proxy.exchanges] == [("HEAD", "/", "bytes=0-", 0, None),
                                                     ("GET", "/fixed", "bytes=0-", len(BODY), None),
                                                     ("GET", "/chunked", "bytes=0-", None, None),
                                                     ("GET", "/fixed", "bytes=0-", len(BODY), None),
                                                     ("PUT", "/upload", None, len(BODY), None)]


BROKEN = {"reset": ConnectionResetError, "truncate": http.client.IncompleteRead, "stall": TimeoutError}


@pytest.mark.parametrize("path", ["/fixed", "/chunked"])
@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_breaks_the_next_long_enough_body_after_the_bytes_it_lets_through(server, fault, path):
    with FaultProxy(server) as proxy:
        proxy.inject(fault, after=4000, method="GET")
        connection = _connect(proxy, timeout=0.5)
        connection.request("HEAD", "/")  # not a GET: untouched, the fault waits
        assert connection.getresponse().read() == b""
        connection.request("GET", path)
        response = connection.getresponse()
        received = b""
        with pytest.raises((BROKEN[fault], http.client.IncompleteRead, ConnectionError)) as broken:
            while chunk := response.read1(1024) if path == "/fixed" else response.read(1024):
                received += chunk
            raise http.client.IncompleteRead(received)  # a body that simply ended short
        if fault != "reset":  # a reset may throw away what had arrived but was not yet read
            assert BODY.startswith(received) and len(received) < len(BODY)
        assert fault != "stall" or isinstance(broken.value, TimeoutError)
        connection.close()
        assert [(hit.target, hit.fault) for hit in proxy.faults_hit()] == [(path, fault)]
        again = _connect(proxy)  # the fault is used up: the next GET goes through whole
        again.request("GET", path)
        assert again.getresponse().read() == BODY
        again.close()


def test_a_fault_with_a_target_breaks_only_a_get_whose_target_holds_it(server):
    with FaultProxy(server) as proxy:
        proxy.inject("truncate", after=100, target="alt=media")
        connection = _connect(proxy)
        connection.request("GET", "/fixed?meta")  # a metadata GET, say: untouched, the fault waits
        assert connection.getresponse().read() == BODY
        connection.request("GET", "/fixed?alt=media")
        with pytest.raises(http.client.IncompleteRead):
            connection.getresponse().read()
        connection.close()
        assert [(hit.target, hit.fault, hit.fault_at) for hit in proxy.faults_hit()] == [
            ("/fixed?alt=media", "truncate", 100)]


@pytest.mark.parametrize("path", ["/fixed", "/chunked"])
def test_a_drip_sends_the_whole_body_a_few_bytes_at_a_time_then_keeps_the_connection(server, path):
    import time

    with FaultProxy(server) as proxy:
        proxy.inject("drip", after=len(BODY) - 400, drip_bytes=100, drip_seconds=0.05)
        connection = _connect(proxy)
        started = time.monotonic()  # (before the request: the fast part may come with the headers)
        connection.request("GET", path)
        response = connection.getresponse()
        arrivals, received = [], b""
        while chunk := response.read1(65536):
            received += chunk
            arrivals.append((len(received), time.monotonic() - started))
        assert received == BODY and response.read() == b""  # whole, only slow (read: the response is done)
        dripped = [seconds for length, seconds in arrivals if length > len(BODY) - 400]
        # four waits of 0.05 s before the last drip; a busy reader may take two drips in one read, never all
        assert len(dripped) >= 2 and dripped[-1] >= 0.2
        connection.request("GET", "/fixed")  # the same connection, the fault used up: at full speed
        assert connection.getresponse().read() == BODY
        connection.close()
        assert [(hit.target, hit.fault, hit.fault_at) for hit in proxy.faults_hit()] == [
            (path, "drip", len(BODY) - 400)]
